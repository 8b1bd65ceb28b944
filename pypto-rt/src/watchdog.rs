//! The host backend's kernel timeout.
//!
//! A host launch runs its blocks to completion; a kernel that never ends
//! would hang its caller forever. Each launch registers here; one watchdog
//! thread, started with the first launch, notices launches that run past
//! `PYPTO_KERNEL_TIMEOUT`. It first raises the launch's cancel flag, which
//! every Ascend C call of the emulation polls: such a block stops with
//! `Error::Kernel` ("did not finish within …"). A block that makes no API
//! call cannot be stopped from outside (a thread cannot be killed safely
//! while it borrows the caller's tensors), so after a grace period the
//! watchdog names the kernel and the blocks still running on stderr and
//! ends the process.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::error::Error;

/// Seconds a host launch may run: a number from 0.001 (kept to the
/// millisecond, e.g. `60`, `2.5`, `0.25`), or `off`, `0`, `0.0` (any
/// spelling of zero) for no limit; default 300.
pub const TIMEOUT_VAR: &str = "PYPTO_KERNEL_TIMEOUT";

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a cancelled launch has to notice before the process ends.
const GRACE: Duration = Duration::from_secs(2);

/// `PYPTO_KERNEL_TIMEOUT` as a duration (`None`: no limit): seconds,
/// rounded to the millisecond; zero (`0`, `0.0`, `0e0`) and `off` are no
/// limit; anything else below a millisecond is refused, not rounded to
/// zero.
pub(crate) fn parse_timeout(value: Option<&str>) -> Result<Option<Duration>, String> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(Some(DEFAULT_TIMEOUT));
    };
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let seconds = value.parse::<f64>().ok().filter(|s| s.is_finite());
    if seconds == Some(0.0) {
        return Ok(None);
    }
    seconds
        .filter(|s| (0.001..1e9).contains(s))
        .map(|s| Some(Duration::from_millis((s * 1000.0).round() as u64)))
        .ok_or_else(|| {
            format!(
                "{TIMEOUT_VAR}=`{}` is not a timeout; use a number of seconds from 0.001 \
                 (e.g. `60` or `0.25`), or `0` or `off` for no limit",
                value.escape_debug()
            )
        })
}

/// A timeout for messages: whole milliseconds below a second (`250 ms`),
/// seconds from one (`2.5 s`, `300 s`); the emulation's `timeout_text`
/// words it the same way.
pub(crate) fn describe(timeout: Duration) -> String {
    let ms = timeout.as_millis();
    if ms < 1000 {
        return format!("{ms} ms");
    }
    let mut text = (ms / 1000).to_string();
    if !ms.is_multiple_of(1000) {
        let frac = format!("{:03}", ms % 1000);
        text.push('.');
        text.push_str(frac.trim_end_matches('0'));
    }
    text + " s"
}

fn timeout() -> Result<Option<Duration>, Error> {
    static TIMEOUT: OnceLock<Result<Option<Duration>, String>> = OnceLock::new();
    TIMEOUT
        .get_or_init(|| parse_timeout(std::env::var(TIMEOUT_VAR).ok().as_deref()))
        .clone()
        .map_err(Error::Backend)
}

/// One launch, as the watchdog and the blocks share it.
struct Launch {
    kernel: &'static str,
    timeout: Duration,
    /// Read by the emulation (`HostLaunch::cancel`).
    cancel: AtomicU32,
    /// Bit `b` set while block `b` runs.
    running: AtomicU64,
}

struct Entry {
    id: u64,
    deadline: Instant,
    cancelled_at: Option<Instant>,
    launch: Arc<Launch>,
}

struct Watchdog {
    state: Mutex<State>,
    wake: Condvar,
}

/// What the watchdog and the launches share, under its mutex.
struct State {
    entries: Vec<Entry>,
    /// When the waiting watchdog next wakes by itself: `None` while it is
    /// parked (no deadline) or has not waited yet. A launch whose deadline
    /// comes first wakes it; others leave it alone, since waking it on
    /// every launch would cost a context switch per call.
    sleeps_until: Option<Instant>,
}

/// How long an idle watchdog keeps ticking before it parks, and the longest
/// it sleeps between checks while launches run.
const TICK: Duration = Duration::from_secs(1);

/// The watchdog, started once; `None` when no thread could be started (the
/// timeout is then not enforced, and that is said once on stderr).
fn watchdog() -> Option<&'static Watchdog> {
    static DOG: OnceLock<Option<&'static Watchdog>> = OnceLock::new();
    *DOG.get_or_init(|| {
        let dog: &'static Watchdog = Box::leak(Box::new(Watchdog {
            state: Mutex::new(State {
                entries: Vec::new(),
                sleeps_until: None,
            }),
            wake: Condvar::new(),
        }));
        match std::thread::Builder::new()
            .name("pypto-watchdog".to_owned())
            .spawn(move || watch_forever(dog))
        {
            Ok(_) => Some(dog),
            Err(e) => {
                eprintln!("pypto-rt: no watchdog thread ({e}); {TIMEOUT_VAR} is not enforced");
                None
            }
        }
    })
}

fn watch_forever(dog: &Watchdog) {
    let mut state = dog.state.lock().unwrap_or_else(|e| e.into_inner());
    let mut idle_ticks = 0u32;
    loop {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        for entry in state.entries.iter_mut() {
            let wake_at = match entry.cancelled_at {
                None if now >= entry.deadline => {
                    entry.launch.cancel.store(1, Ordering::Relaxed);
                    entry.cancelled_at = Some(now);
                    now + GRACE
                }
                None => entry.deadline,
                Some(at) if now >= at + GRACE => give_up(&entry.launch),
                Some(at) => at + GRACE,
            };
            next = Some(next.map_or(wake_at, |n| n.min(wake_at)));
        }
        // Idle: tick once more (launches often come back to back), then park.
        if next.is_none() && idle_ticks == 0 {
            idle_ticks = 1;
            next = Some(now + TICK);
        } else if next.is_some() {
            idle_ticks = 0;
        }
        state.sleeps_until = next;
        state = match next {
            None => {
                let guard = dog.wake.wait(state).unwrap_or_else(|e| e.into_inner());
                idle_ticks = 0;
                guard
            }
            Some(at) => {
                dog.wake
                    .wait_timeout(state, at.saturating_duration_since(now))
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
        state.sleeps_until = None;
    }
}

/// Ends the process: a block that ignores its cancel flag still runs on
/// memory its caller may free the moment the launch returns.
fn give_up(launch: &Launch) -> ! {
    let running = launch.running.load(Ordering::Relaxed);
    let blocks: Vec<String> = (0..64)
        .filter(|b| running & (1u64 << b) != 0)
        .map(|b: u32| b.to_string())
        .collect();
    eprintln!(
        "pypto-rt: kernel `{}` did not finish within {} ({TIMEOUT_VAR}); block{} {} did not \
         stop when asked, so {} no Ascend C API call (an endless loop?); ending the process",
        launch.kernel,
        describe(launch.timeout),
        if blocks.len() == 1 { "" } else { "s" },
        if blocks.is_empty() {
            "?".to_owned()
        } else {
            blocks.join(", ")
        },
        if blocks.len() == 1 {
            "it makes"
        } else {
            "they make"
        },
    );
    std::process::abort()
}

/// A launch's registration; dropping it ends the watch.
pub(crate) struct Watch {
    launch: Arc<Launch>,
    id: Option<u64>,
}

/// Registers a launch of `kernel` with the watchdog.
pub(crate) fn watch(kernel: &'static str) -> Result<Watch, Error> {
    Ok(watch_for(kernel, timeout()?))
}

/// Registers a launch of `kernel` that may run for `timeout` (`None`: no
/// limit).
fn watch_for(kernel: &'static str, timeout: Option<Duration>) -> Watch {
    static IDS: AtomicU64 = AtomicU64::new(0);
    let launch = Arc::new(Launch {
        kernel,
        timeout: timeout.unwrap_or(Duration::ZERO),
        cancel: AtomicU32::new(0),
        running: AtomicU64::new(0),
    });
    let mut id = None;
    if let Some(timeout) = timeout
        && let Some(dog) = watchdog()
    {
        let entry_id = IDS.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + timeout;
        let mut state = dog.state.lock().unwrap_or_else(|e| e.into_inner());
        state.entries.push(Entry {
            id: entry_id,
            deadline,
            cancelled_at: None,
            launch: launch.clone(),
        });
        // A watchdog that would sleep past this deadline (parked, or in its
        // idle tick of a second while the timeout is shorter) is woken; one
        // that wakes before it rechecks every entry then. It waits under
        // this lock, so it cannot miss the entry.
        if state.sleeps_until.is_none_or(|at| deadline < at) {
            dog.wake.notify_one();
        }
        id = Some(entry_id);
    }
    Watch { launch, id }
}

impl Watch {
    pub(crate) fn cancel_flag(&self) -> *const AtomicU32 {
        &self.launch.cancel
    }

    pub(crate) fn timeout_ms(&self) -> u64 {
        u64::try_from(self.launch.timeout.as_millis()).unwrap_or(u64::MAX)
    }

    pub(crate) fn block_started(&self, block: u32) {
        if block < 64 {
            self.launch.running.fetch_or(1 << block, Ordering::Relaxed);
        }
    }

    pub(crate) fn block_finished(&self, block: u32) {
        if block < 64 {
            self.launch
                .running
                .fetch_and(!(1 << block), Ordering::Relaxed);
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let (Some(id), Some(dog)) = (self.id, watchdog()) else {
            return;
        };
        let mut state = dog.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = state.entries.iter().position(|e| e.id == id) {
            state.entries.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse() {
        assert_eq!(parse_timeout(None), Ok(Some(DEFAULT_TIMEOUT)));
        assert_eq!(parse_timeout(Some(" ")), Ok(Some(DEFAULT_TIMEOUT)));
        // Every spelling of zero means no limit, as `off` does.
        for off in ["0", "0.0", "0e0", "-0", "00.000", "OFF", "off"] {
            assert_eq!(parse_timeout(Some(off)), Ok(None), "{off}");
        }
        for (value, ms) in [
            ("2.5", 2500),
            ("300", 300_000),
            ("0.25", 250),
            ("0.001", 1),
            ("1e-3", 1),
            ("0.0015", 2),
            (" 0.5 ", 500),
        ] {
            assert_eq!(
                parse_timeout(Some(value)),
                Ok(Some(Duration::from_millis(ms))),
                "{value}"
            );
        }
        for bad in [
            "-1", "abc", "inf", "NaN", "1e12", "0.0001", "0.0009", "-0.5", "1 s",
        ] {
            assert_eq!(
                parse_timeout(Some(bad)),
                Err(format!(
                    "PYPTO_KERNEL_TIMEOUT=`{bad}` is not a timeout; use a number of seconds from \
                     0.001 (e.g. `60` or `0.25`), or `0` or `off` for no limit"
                ))
            );
        }
    }

    #[test]
    fn timeouts_read_in_milliseconds_below_a_second() {
        for (ms, text) in [
            (1, "1 ms"),
            (250, "250 ms"),
            (999, "999 ms"),
            (1000, "1 s"),
            (1001, "1.001 s"),
            (1250, "1.25 s"),
            (2500, "2.5 s"),
            (300_000, "300 s"),
        ] {
            assert_eq!(describe(Duration::from_millis(ms)), text);
        }
        // The emulation's words for the same numbers.
        let header = include_str!("../../templates/include/pypto_emu/core.h");
        assert!(header.contains("inline std::string timeout_text(uint64_t ms)"));
    }

    /// Registers launches with a short timeout and measures when each is
    /// cancelled: the first of the process (the watchdog thread starting),
    /// one right after another (the watchdog sleeping out its grace period
    /// and idle tick), and one in the middle of an idle tick.
    #[test]
    fn short_timeouts_fire_within_50_ms_of_their_value() {
        let timeout = Duration::from_millis(150);
        let mut took = Vec::new();
        for round in 0..4 {
            if round == 3 {
                std::thread::sleep(Duration::from_millis(300));
            }
            let start = Instant::now();
            let watch = watch_for("short", Some(timeout));
            while watch.launch.cancel.load(Ordering::Relaxed) == 0 {
                assert!(
                    start.elapsed() < Duration::from_secs(5),
                    "round {round}: not cancelled after 5 s"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            took.push(start.elapsed());
            drop(watch);
        }
        for (round, one) in took.iter().enumerate() {
            assert!(
                *one >= timeout && *one < timeout + Duration::from_millis(50),
                "round {round}: cancelled after {one:?}, not within 50 ms of {timeout:?} \
                 (all rounds: {took:?})"
            );
        }
        // No limit: never registered, never cancelled.
        let free = watch_for("free", None);
        assert!(free.id.is_none());
        assert_eq!(free.timeout_ms(), 0);
    }
}
