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

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::error::Error;

/// Seconds a host launch may run (`0` or `off`: no limit; default 300).
pub const TIMEOUT_VAR: &str = "PYPTO_KERNEL_TIMEOUT";

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a cancelled launch has to notice before the process ends.
const GRACE: Duration = Duration::from_secs(2);

/// `PYPTO_KERNEL_TIMEOUT` as a duration (`None`: no limit).
pub(crate) fn parse_timeout(value: Option<&str>) -> Result<Option<Duration>, String> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(Some(DEFAULT_TIMEOUT));
    };
    if value == "0" || value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(|s| Some(Duration::from_secs_f64(s)))
        .ok_or_else(|| {
            format!(
                "{TIMEOUT_VAR}=`{}` is not a number of seconds; use e.g. `60`, `0.5`, or `off`",
                value.escape_debug()
            )
        })
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
    entries: Mutex<Vec<Entry>>,
    wake: Condvar,
    /// Set while the watchdog waits with no deadline: only then does a new
    /// launch need to wake it. Waking it on every launch would cost a
    /// context switch per call.
    parked: AtomicBool,
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
            entries: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            parked: AtomicBool::new(false),
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
    let mut entries = dog.entries.lock().unwrap_or_else(|e| e.into_inner());
    let mut idle_ticks = 0u32;
    loop {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        for entry in entries.iter_mut() {
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
        entries = match next {
            None => {
                dog.parked.store(true, Ordering::SeqCst);
                let guard = dog.wake.wait(entries).unwrap_or_else(|e| e.into_inner());
                dog.parked.store(false, Ordering::SeqCst);
                idle_ticks = 0;
                guard
            }
            Some(at) => {
                dog.wake
                    .wait_timeout(entries, at.saturating_duration_since(now))
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
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
        "pypto-rt: kernel `{}` did not finish within {} s ({TIMEOUT_VAR}); block{} {} did not \
         stop when asked, so {} no Ascend C API call (an endless loop?); ending the process",
        launch.kernel,
        launch.timeout.as_secs_f64(),
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
    static IDS: AtomicU64 = AtomicU64::new(0);
    let timeout = timeout()?;
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
        let mut entries = dog.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.push(Entry {
            id: entry_id,
            deadline: Instant::now() + timeout,
            cancelled_at: None,
            launch: launch.clone(),
        });
        // Deadlines only grow (one timeout per process), so a ticking
        // watchdog already wakes early enough for the new entry; a parked
        // one (it parks under this lock) must be woken.
        if dog.parked.load(Ordering::SeqCst) {
            dog.wake.notify_one();
        }
        id = Some(entry_id);
    }
    Ok(Watch { launch, id })
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
        let mut entries = dog.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = entries.iter().position(|e| e.id == id) {
            entries.swap_remove(i);
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
        assert_eq!(parse_timeout(Some("0")), Ok(None));
        assert_eq!(parse_timeout(Some("OFF")), Ok(None));
        assert_eq!(
            parse_timeout(Some("2.5")),
            Ok(Some(Duration::from_millis(2500)))
        );
        for bad in ["-1", "abc", "inf", "NaN", "1e12"] {
            assert_eq!(
                parse_timeout(Some(bad)),
                Err(format!(
                    "PYPTO_KERNEL_TIMEOUT=`{bad}` is not a number of seconds; use e.g. `60`, `0.5`, or `off`"
                ))
            );
        }
    }
}
