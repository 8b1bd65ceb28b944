//! The host backend's kernel timeout.
//!
//! A host launch runs its blocks to completion; a kernel that never ends
//! would hang its caller forever. Each launch registers here; one watchdog
//! thread, started with the first launch, notices launches that run past
//! `PYPTO_KERNEL_TIMEOUT`. It first writes the launch's id to its cancel
//! word, which every Ascend C call of the emulation polls: such a block
//! stops with `Error::Kernel` ("did not finish within …"). A block that
//! makes no API call cannot be stopped from outside (a thread cannot be
//! killed safely while it borrows the caller's tensors), so after a grace
//! period the watchdog names the kernel and the blocks still running on
//! stderr and ends the process.

use std::sync::atomic::{AtomicU64, Ordering};
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
    // Copied, not cloned: every host launch asks.
    match TIMEOUT.get_or_init(|| parse_timeout(std::env::var(TIMEOUT_VAR).ok().as_deref())) {
        Ok(timeout) => Ok(*timeout),
        Err(e) => Err(Error::Backend(e.clone())),
    }
}

/// One launch, as the watchdog and the blocks share it: a thread's
/// [`Slot`] holds one for each of its launches in turn; a launch made while
/// another runs on the same thread gets its own.
struct Launch {
    /// The kernel that runs, for the message that ends the process; a
    /// thread's slot writes it only when its launches change kernel.
    kernel: Mutex<&'static str>,
    /// The launch's timeout in milliseconds, written before the launch is
    /// marked running (a slot's epoch made odd).
    timeout_ms: AtomicU64,
    /// The id of the launch it holds (a slot's changes with each launch),
    /// written with `Release` before the launch is marked running.
    id: AtomicU64,
    /// The id of the launch the watchdog cancelled, read by the emulation
    /// (`HostLaunch::cancel`), which stops the launch of that id. An id, not
    /// a flag: a cancel written just as a slot's launch ends names that
    /// launch, so it cannot stop the next one. Set to 0 as each launch
    /// starts, for kernels built before interface v7, which stop at any
    /// value but 0.
    cancel: AtomicU64,
    /// Bit `b` set while block `b` runs.
    running: AtomicU64,
}

impl Launch {
    fn new(kernel: &'static str, timeout: Duration, id: u64) -> Launch {
        Launch {
            kernel: Mutex::new(kernel),
            timeout_ms: AtomicU64::new(millis(timeout)),
            id: AtomicU64::new(id),
            cancel: AtomicU64::new(0),
            running: AtomicU64::new(0),
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.load(Ordering::Relaxed))
    }

    fn kernel(&self) -> &'static str {
        *self.kernel.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A launching thread's record, reused by each of its launches, so that a
/// launch registers with stores to memory the watchdog reads rather than
/// with a lock and an allocation.
struct Slot {
    launch: Launch,
    /// Odd while one of the thread's launches runs: each launch adds one
    /// when it starts and one when it ends, so the watchdog tells one
    /// launch from the next by the number. Only the thread writes it: a
    /// launch starts and ends with a plain store.
    epoch: AtomicU64,
}

/// What the watchdog knows of a slot.
struct Watched {
    slot: Arc<Slot>,
    /// The odd epoch it last saw running, since when, and whether (when)
    /// it cancelled that launch.
    epoch: u64,
    since: Instant,
    cancelled_at: Option<Instant>,
}

/// A launch made while another ran on its thread (not expected: a kernel
/// cannot launch one; kept so that such a launch is still watched).
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
    slots: Vec<Watched>,
    entries: Vec<Entry>,
}

/// The longest the watchdog sleeps between checks while launches run; it
/// checks at least eight times per timeout of the launches it has seen.
const TICK: Duration = Duration::from_secs(1);

/// The longest the watchdog sleeps when no launch runs. A launch whose
/// timeout is at least eight of these (the default, 300 s, is) therefore
/// needs no wake-up and no fence: the watchdog looks within an eighth of its
/// timeout whatever it was doing. An idle process pays one wake-up per
/// this.
const IDLE_SLEEP: Duration = Duration::from_secs(30);

/// Milliseconds within which the watchdog next looks at every slot; a
/// launch whose timeout is shorter than eight of these wakes it. Written
/// with `SeqCst` before the watchdog rechecks the slots, read with `SeqCst`
/// after such a launch marks its slot, so that one of the two always sees
/// the other.
static LOOKS_WITHIN_MS: AtomicU64 = AtomicU64::new(u64::MAX);

/// The watchdog, started once; `None` when no thread could be started (the
/// timeout is then not enforced, and that is said once on stderr).
fn watchdog() -> Option<&'static Watchdog> {
    static DOG: OnceLock<Option<&'static Watchdog>> = OnceLock::new();
    *DOG.get_or_init(|| {
        let dog: &'static Watchdog = Box::leak(Box::new(Watchdog {
            state: Mutex::new(State {
                slots: Vec::new(),
                entries: Vec::new(),
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

/// Cancels the launch of `slot` whose epoch is `epoch` (read with
/// `SeqCst`): writes that launch's id to the cancel word. The id is read
/// between two reads of the epoch, as a seqlock's reader does: a launch
/// writes its id with `Release` after the store that ended the launch
/// before it, so an id read here that belongs to a later launch makes the
/// second read see a later epoch. Once the launch has ended, the id it
/// writes stops nothing.
fn cancel_slot(slot: &Slot, epoch: u64) {
    let id = slot.launch.id.load(Ordering::Acquire);
    if slot.epoch.load(Ordering::Relaxed) == epoch {
        slot.launch.cancel.store(id, Ordering::Relaxed);
    }
}

/// One look at every launch: cancels those past their timeout, ends the
/// process for those past their grace; returns when to look next (`None`:
/// nothing runs) and the shortest timeout seen.
fn look(state: &mut State, now: Instant) -> (Option<Instant>, Option<Duration>) {
    let mut next: Option<Instant> = None;
    let mut shortest: Option<Duration> = None;
    let mut at = |t: Instant| next = Some(next.map_or(t, |n| n.min(t)));
    for w in state.slots.iter_mut() {
        let epoch = w.slot.epoch.load(Ordering::SeqCst);
        if epoch % 2 == 0 {
            continue;
        }
        if epoch != w.epoch {
            // A launch it has not seen: it started at `now` or before.
            (w.epoch, w.since, w.cancelled_at) = (epoch, now, None);
        }
        let timeout = w.slot.launch.timeout();
        shortest = Some(shortest.map_or(timeout, |s| s.min(timeout)));
        match w.cancelled_at {
            None if now >= w.since + timeout => {
                cancel_slot(&w.slot, epoch);
                w.cancelled_at = Some(now);
                at(now + GRACE);
            }
            None => at(w.since + timeout),
            Some(c) if now >= c + GRACE => give_up(&w.slot.launch),
            Some(c) => at(c + GRACE),
        }
    }
    for entry in state.entries.iter_mut() {
        let timeout = entry.launch.timeout();
        shortest = Some(shortest.map_or(timeout, |s| s.min(timeout)));
        match entry.cancelled_at {
            None if now >= entry.deadline => {
                let id = entry.launch.id.load(Ordering::Relaxed);
                entry.launch.cancel.store(id, Ordering::Relaxed);
                entry.cancelled_at = Some(now);
                at(now + GRACE);
            }
            None => at(entry.deadline),
            Some(c) if now >= c + GRACE => give_up(&entry.launch),
            Some(c) => at(c + GRACE),
        }
    }
    (next, shortest)
}

fn watch_forever(dog: &Watchdog) {
    let mut state = dog.state.lock().unwrap_or_else(|e| e.into_inner());
    let mut idle_ticks = 0u32;
    loop {
        let now = Instant::now();
        let (next, shortest) = look(&mut state, now);
        let tick = shortest.map_or(TICK, |s| (s / 8).clamp(Duration::from_millis(1), TICK));
        let wake_at = match next {
            Some(n) => {
                idle_ticks = 0;
                n.min(now + tick)
            }
            // Idle: tick once more (launches often come back to back),
            // then sleep longer.
            None if idle_ticks == 0 => {
                idle_ticks = 1;
                now + TICK
            }
            None => now + IDLE_SLEEP,
        };
        let within =
            u64::try_from(wake_at.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX);
        LOOKS_WITHIN_MS.store(within, Ordering::SeqCst);
        // A launch that marked its slot before the store above is seen
        // here; one after it reads the store and wakes this thread if it
        // needs to (under the state lock, which is held until the wait).
        let missed = state.slots.iter().any(|w| {
            let epoch = w.slot.epoch.load(Ordering::SeqCst);
            epoch % 2 == 1 && epoch != w.epoch
        });
        if missed {
            continue;
        }
        state = dog
            .wake
            .wait_timeout(state, wake_at.saturating_duration_since(now))
            .unwrap_or_else(|e| e.into_inner())
            .0;
        LOOKS_WITHIN_MS.store(0, Ordering::SeqCst);
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
        launch.kernel(),
        describe(launch.timeout()),
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

/// This thread's slot, registered with the watchdog on first use and
/// unregistered when the thread ends, and the kernel name last written to
/// it.
struct SlotHandle {
    slot: Arc<Slot>,
    kernel: std::cell::Cell<&'static str>,
}

impl Drop for SlotHandle {
    fn drop(&mut self) {
        if let Some(dog) = watchdog() {
            let mut state = dog.state.lock().unwrap_or_else(|e| e.into_inner());
            state.slots.retain(|w| !Arc::ptr_eq(&w.slot, &self.slot));
        }
    }
}

thread_local! {
    static SLOT: std::cell::OnceCell<SlotHandle> = const { std::cell::OnceCell::new() };
}

/// A launch's registration, lent to the launch while it runs; dropping it
/// ends the watch.
pub(crate) struct Watch<'a> {
    how: How<'a>,
    /// The launch's record, which its blocks report to (a field, not
    /// matched from `how` at each report).
    launch: &'a Launch,
    /// The launch's timeout (0: none), for the emulation's messages.
    timeout_ms: u64,
}

enum How<'a> {
    /// No limit, or no watchdog: a launch record nobody watches.
    Unwatched,
    /// The thread's slot, its epoch made odd; borrowed from the thread's
    /// own handle, so a launch registers with no reference count.
    Slot(&'a Slot),
    /// A launch nested in another on its thread: an entry of its own,
    /// with this id.
    Entry(u64),
}

/// The timeout of host launches, [`TIMEOUT_VAR`] read once (`None`: no
/// limit); what [`watch_for`] takes.
pub(crate) fn launch_timeout() -> Result<Option<Duration>, Error> {
    timeout()
}

/// Runs `f` with launch `id` of `kernel` registered with the watchdog,
/// which may run for `timeout` (`None`: no limit). `id` is the launch's
/// own: no other launch of the process has it.
pub(crate) fn watch_for<R>(
    kernel: &'static str,
    timeout: Option<Duration>,
    id: u64,
    f: impl FnOnce(&Watch<'_>) -> R,
) -> R {
    let (Some(timeout), Some(dog)) = (timeout, watchdog()) else {
        let unwatched = Launch::new(kernel, timeout.unwrap_or(Duration::ZERO), id);
        return f(&Watch {
            how: How::Unwatched,
            launch: &unwatched,
            timeout_ms: timeout.map_or(0, millis),
        });
    };
    SLOT.with(|cell| {
        let handle = cell.get_or_init(|| new_slot(dog, kernel, timeout, id));
        let slot: &Slot = &handle.slot;
        let epoch = slot.epoch.load(Ordering::Relaxed);
        if epoch % 2 == 1 {
            let launch = nested(dog, kernel, timeout, id);
            return f(&Watch {
                how: How::Entry(id),
                launch: &launch,
                timeout_ms: millis(timeout),
            });
        }
        // Launches of one kernel in a row leave its name as it is, with no
        // lock taken.
        let last = handle.kernel.get();
        if !(std::ptr::eq(last.as_ptr(), kernel.as_ptr()) && last.len() == kernel.len()) {
            *slot.launch.kernel.lock().unwrap_or_else(|e| e.into_inner()) = kernel;
            handle.kernel.set(kernel);
        }
        let timeout_ms = millis(timeout);
        slot.launch.timeout_ms.store(timeout_ms, Ordering::Relaxed);
        slot.launch.cancel.store(0, Ordering::Relaxed);
        slot.launch.running.store(0, Ordering::Relaxed);
        // Release: see `cancel_slot`.
        slot.launch.id.store(id, Ordering::Release);
        if timeout >= 8 * IDLE_SLEEP {
            // The watchdog looks within an eighth of the timeout anyway.
            slot.epoch.store(epoch + 1, Ordering::Release);
        } else {
            slot.epoch.store(epoch + 1, Ordering::SeqCst);
            // A watchdog that would not look again within an eighth of this
            // timeout (sleeping while idle, or ticking for longer
            // timeouts) is woken.
            let within = LOOKS_WITHIN_MS.load(Ordering::SeqCst);
            if u128::from(within) > timeout.as_millis() / 8 {
                let _state = dog.state.lock().unwrap_or_else(|e| e.into_inner());
                dog.wake.notify_one();
            }
        }
        f(&Watch {
            how: How::Slot(slot),
            launch: &slot.launch,
            timeout_ms,
        })
    })
}

/// This thread's slot, registered with the watchdog at its first launch.
/// Out of line: the launches after it only arm the slot.
#[cold]
#[inline(never)]
fn new_slot(dog: &Watchdog, kernel: &'static str, timeout: Duration, id: u64) -> SlotHandle {
    let slot = Arc::new(Slot {
        launch: Launch::new(kernel, timeout, id),
        epoch: AtomicU64::new(0),
    });
    let mut state = dog.state.lock().unwrap_or_else(|e| e.into_inner());
    state.slots.push(Watched {
        slot: slot.clone(),
        epoch: 0,
        since: Instant::now(),
        cancelled_at: None,
    });
    SlotHandle {
        slot,
        kernel: std::cell::Cell::new(kernel),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Registers a launch made while another runs on the same thread; the
/// [`Watch`] that borrows the record removes the entry.
#[cold]
#[inline(never)]
fn nested(dog: &Watchdog, kernel: &'static str, timeout: Duration, id: u64) -> Arc<Launch> {
    let launch = Arc::new(Launch::new(kernel, timeout, id));
    let mut state = dog.state.lock().unwrap_or_else(|e| e.into_inner());
    state.entries.push(Entry {
        id,
        deadline: Instant::now() + timeout,
        cancelled_at: None,
        launch: launch.clone(),
    });
    dog.wake.notify_one();
    launch
}

impl Watch<'_> {
    pub(crate) fn cancel_word(&self) -> *const AtomicU64 {
        &self.launch.cancel
    }

    /// Whether the watchdog cancelled this launch.
    #[cfg(test)]
    fn cancelled(&self) -> bool {
        let launch = self.launch;
        launch.cancel.load(Ordering::Relaxed) == launch.id.load(Ordering::Relaxed)
    }

    pub(crate) fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    /// Notes that `block` runs; `alone` when the launch's blocks run in
    /// turn on this thread, which then needs no read-modify-write.
    pub(crate) fn block_started(&self, block: u32, alone: bool) {
        let running = &self.launch.running;
        if block >= 64 {
        } else if alone {
            running.store(1 << block, Ordering::Relaxed);
        } else {
            running.fetch_or(1 << block, Ordering::Relaxed);
        }
    }

    /// Notes that `block` ended (`alone` as for [`Watch::block_started`]).
    pub(crate) fn block_finished(&self, block: u32, alone: bool) {
        let running = &self.launch.running;
        if block >= 64 {
        } else if alone {
            running.store(0, Ordering::Relaxed);
        } else {
            running.fetch_and(!(1 << block), Ordering::Relaxed);
        }
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        match &self.how {
            How::Unwatched => {}
            How::Slot(slot) => {
                // Only this thread writes the epoch.
                let epoch = slot.epoch.load(Ordering::Relaxed);
                slot.epoch.store(epoch + 1, Ordering::Release);
            }
            How::Entry(id) => {
                if let Some(dog) = watchdog() {
                    let mut state = dog.state.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(i) = state.entries.iter().position(|e| e.id == *id) {
                        state.entries.swap_remove(i);
                    }
                }
            }
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
            watch_for("short", Some(timeout), 1, |watch| {
                while !watch.cancelled() {
                    assert!(
                        start.elapsed() < Duration::from_secs(5),
                        "round {round}: not cancelled after 5 s"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            took.push(start.elapsed());
        }
        for (round, one) in took.iter().enumerate() {
            assert!(
                *one >= timeout && *one < timeout + Duration::from_millis(50),
                "round {round}: cancelled after {one:?}, not within 50 ms of {timeout:?} \
                 (all rounds: {took:?})"
            );
        }
        // No limit: never registered, never cancelled.
        watch_for("free", None, 2, |free| {
            assert!(matches!(free.how, How::Unwatched));
            assert_eq!(free.timeout_ms(), 0);
        });
    }

    /// Waits until `watch` is cancelled; panics after 5 s.
    fn until_cancelled(watch: &Watch) -> Duration {
        let start = Instant::now();
        while !watch.cancelled() {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "not cancelled after 5 s"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        start.elapsed()
    }

    /// A thread's launches share its slot: the one after a cancelled launch
    /// starts uncancelled and is not cancelled for its predecessor, and a
    /// launch nested in another is watched on its own.
    #[test]
    fn each_launch_on_a_thread_is_watched_for_itself() {
        let short = Duration::from_millis(60);
        watch_for("first", Some(short), 3, |first| {
            assert!(matches!(first.how, How::Slot(_)));
            assert!(until_cancelled(first) >= short);
        });
        watch_for("second", Some(Duration::from_secs(30)), 4, |second| {
            std::thread::sleep(short * 3);
            assert!(!second.cancelled());
            assert_eq!(second.timeout_ms(), 30_000);
            watch_for("nested", Some(short), 5, |nested| {
                assert!(matches!(nested.how, How::Entry(..)));
                assert!(until_cancelled(nested) >= short);
            });
            assert!(!second.cancelled());
        });
    }

    /// A launch with the default timeout marks its slot with a plain store
    /// and wakes nobody: the watchdog, even asleep while idle, looks again
    /// within an eighth of that timeout.
    #[test]
    fn long_timeouts_need_no_wake_up() {
        assert!(8 * IDLE_SLEEP <= DEFAULT_TIMEOUT);
        let epoch = || SLOT.with(|cell| cell.get().map(|h| h.slot.epoch.load(Ordering::SeqCst)));
        watch_for("long", Some(DEFAULT_TIMEOUT), 6, |watch| {
            assert!(matches!(watch.how, How::Slot(_)));
            assert_eq!(epoch().map(|e| e % 2), Some(1), "running");
        });
        assert_eq!(epoch().map(|e| e % 2), Some(0), "ended");
    }

    /// A thread's slot leaves the watchdog's list when the thread ends.
    #[test]
    fn a_finished_threads_slot_is_unregistered() {
        let listed = |slot: &Arc<Slot>| {
            let dog = watchdog().expect("a watchdog thread");
            let state = dog.state.lock().unwrap();
            state.slots.iter().any(|w| Arc::ptr_eq(&w.slot, slot))
        };
        let slot = std::thread::spawn(move || {
            watch_for("thread", Some(Duration::from_secs(30)), 7, |watch| {
                assert!(matches!(watch.how, How::Slot(_)));
            });
            let slot = SLOT.with(|cell| cell.get().expect("the thread's slot").slot.clone());
            assert!(listed(&slot));
            slot
        })
        .join()
        .unwrap();
        assert!(!listed(&slot));
    }
}
