//! Streams and events: ordered queues of device work.
//!
//! A launch on an NPU is queued on a stream and returns; the device runs a
//! stream's work in order. Nothing waits for the device until the host
//! needs a result: [`crate::Tensor::to_vec`] and the other copies wait for
//! the work that uses their tensor, and [`Stream::synchronize`] and
//! [`Event::synchronize`] wait explicitly.
//!
//! What keeps this sound, without lifetimes on launches:
//! - **Memory in use is never freed early.** Each device buffer records the
//!   queued launches that use it (stream and position in the stream). A
//!   buffer dropped while one is pending is not freed: its memory is handed
//!   to that stream and freed once the stream is seen to have passed it.
//! - **The host never reads or writes memory in use.** Host copies first
//!   wait for the streams with pending work on the buffer.
//! - **Two streams are ordered automatically.** A launch whose tensor has
//!   pending work on another stream makes its stream wait for that work
//!   (an event recorded there), so data flows between streams without
//!   explicit events; explicit events ([`Stream::record`], [`Stream::wait`])
//!   are for ordering that does not go through a tensor.
//!
//! On the host backend launches run when they are called; streams and
//! events exist so that code is written once, and their operations return
//! at once.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::acl::{self, Acl};
use crate::device::{Device, TilingCache, enter};
use crate::error::Error;
use crate::sync;

/// The variable that makes every NPU launch wait for its kernel
/// (`PYPTO_LAUNCH_BLOCKING=1`), so that a failing kernel is reported by
/// the call that launched it rather than by a later read.
pub const LAUNCH_BLOCKING_VAR: &str = "PYPTO_LAUNCH_BLOCKING";

/// Deferred frees a stream holds before it synchronises to release them.
const MAX_DEFERRED: usize = 256;

/// A queue of device work on one device. Work queued on one stream runs in
/// order; work on different streams may overlap.
///
/// Every device has a default stream ([`Device::default_stream`]); kernel
/// calls go to it unless [`with_stream`] names another. Cloning is cheap:
/// clones are the same stream. A stream made by [`Device::new_stream`] is
/// destroyed when its last clone is dropped, after its work has finished.
#[derive(Clone)]
pub struct Stream {
    device: Device,
    /// `None` on the host backend.
    state: Option<Arc<StreamState>>,
}

/// An NPU stream and what pypto-rt knows of its progress.
pub(crate) struct StreamState {
    pub(crate) acl: &'static Acl,
    pub(crate) device: i32,
    pub(crate) raw: acl::Stream,
    /// Destroyed by us when dropped (not the default stream, not imported).
    owned: bool,
    /// The number of launches and copies queued so far.
    submitted: AtomicU64,
    /// All work up to this number has finished (the last synchronisation).
    completed: AtomicU64,
    /// Held while queuing work and synchronising: ACL does not document
    /// streams as safe to use from two threads at once.
    inner: Mutex<Deferred>,
}

/// What waits for the stream to pass its queued work before it can be
/// released, and what its launches read under its lock.
#[derive(Default)]
struct Deferred {
    /// Device memory whose owner was dropped while work used it.
    frees: Vec<usize>,
    /// Events the queued work records or waits for.
    events: Vec<Arc<EventRaw>>,
    /// The device's tiling copies this stream's launches used (see
    /// [`Queue::tilings`]).
    tilings: TilingCache,
}

/// What work queued under a stream's lock is given.
pub(crate) struct Queue<'a> {
    /// The stream's handle.
    pub(crate) raw: acl::Stream,
    /// The copies of the device's tiling cache ([`crate::device::Npu`]'s)
    /// that this stream's launches used before, by kernel and content: a
    /// launch finds its tiling here under the lock it holds anyway to
    /// queue, and locks the device's cache only the first time this stream
    /// launches a kernel with those words. The pointers are the device
    /// cache's, freed only when the process ends, and a stream belongs to
    /// one device, so none is ever stale or another device's.
    pub(crate) tilings: &'a mut TilingCache,
    frees: &'a mut Vec<usize>,
}

impl Queue<'_> {
    /// Frees `ptr` once the stream has passed the work queued so far,
    /// including the work this queues.
    pub(crate) fn free_later(&mut self, ptr: *mut c_void) {
        self.frees.push(ptr as usize);
    }
}

/// An ACL event, destroyed when the last stream that records or waits for
/// it has passed it and its [`Event`] is gone (each holds a reference).
pub(crate) struct EventRaw {
    acl: &'static Acl,
    device: i32,
    raw: usize,
}

impl EventRaw {
    fn new(acl: &'static Acl, device: i32) -> Result<Arc<EventRaw>, Error> {
        let raw = acl.create_event()? as usize;
        Ok(Arc::new(EventRaw { acl, device, raw }))
    }

    fn handle(&self) -> acl::Event {
        self.raw as acl::Event
    }
}

impl Drop for EventRaw {
    fn drop(&mut self) {
        if enter(self.acl, self.device).is_ok() {
            // SAFETY: every stream that recorded or waited for the event
            // held a reference until it passed it; this was the last one.
            let _ = unsafe { self.acl.destroy_event(self.handle()) };
        }
    }
}

// SAFETY: the raw stream is an opaque runtime token; every ACL call on it is
// made while `inner` is held, by one thread at a time, after that thread
// made the stream's device current. The deferred pointers are device
// addresses owned by this stream until it frees them.
unsafe impl Send for StreamState {}
// SAFETY: as for `Send`; shared access goes through `inner` or atomics.
unsafe impl Sync for StreamState {}

impl StreamState {
    pub(crate) fn new(acl: &'static Acl, device: i32, raw: acl::Stream, owned: bool) -> Self {
        StreamState {
            acl,
            device,
            raw,
            owned,
            submitted: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            inner: Mutex::new(Deferred::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Deferred> {
        sync::lock(&self.inner)
    }

    /// Whether work number `seq` may still be running.
    fn pending(&self, seq: u64) -> bool {
        seq > self.completed.load(Ordering::Acquire)
    }

    /// Waits for everything queued so far, then releases what was deferred.
    pub(crate) fn synchronize(&self) -> Result<(), Error> {
        let mut deferred = self.lock();
        self.synchronize_locked(&mut deferred)
    }

    fn synchronize_locked(&self, deferred: &mut Deferred) -> Result<(), Error> {
        enter(self.acl, self.device)?;
        let target = self.submitted.load(Ordering::Acquire);
        let result = self.acl.synchronize(self.raw);
        // Even a failed synchronisation (a kernel's exception) means the
        // stream has stopped running what was queued.
        self.completed.fetch_max(target, Ordering::AcqRel);
        let mut freed = Ok(());
        for ptr in deferred.frees.drain(..) {
            // SAFETY: the memory was handed to this stream by its owner's
            // drop and no work is queued on it any more.
            let r = unsafe { self.acl.free(ptr as *mut c_void) };
            freed = freed.and(r);
        }
        deferred.events.clear();
        result.and(freed)
    }

    /// Queues work with `queue` under the stream's lock, after making the
    /// stream's device current, and returns its number.
    pub(crate) fn submit(
        &self,
        waits: Vec<Arc<EventRaw>>,
        queue: impl FnOnce(&mut Queue<'_>) -> Result<(), Error>,
    ) -> Result<u64, Error> {
        let mut deferred = self.lock();
        enter(self.acl, self.device)?;
        self.submit_locked(&mut deferred, waits, queue)
    }

    /// [`StreamState::submit`] for a caller that has made the stream's
    /// device current on this thread itself, with no call since that could
    /// change it: the runtime is not asked again (a launch asks once).
    pub(crate) fn submit_entered(
        &self,
        waits: Vec<Arc<EventRaw>>,
        queue: impl FnOnce(&mut Queue<'_>) -> Result<(), Error>,
    ) -> Result<u64, Error> {
        let mut deferred = self.lock();
        self.submit_locked(&mut deferred, waits, queue)
    }

    fn submit_locked(
        &self,
        deferred: &mut Deferred,
        waits: Vec<Arc<EventRaw>>,
        queue: impl FnOnce(&mut Queue<'_>) -> Result<(), Error>,
    ) -> Result<u64, Error> {
        for event in waits {
            // SAFETY: both handles are live on this device; the event is
            // kept alive until this stream has passed the wait.
            unsafe { self.acl.stream_wait_event(self.raw, event.handle())? };
            deferred.events.push(event);
        }
        queue(&mut Queue {
            raw: self.raw,
            tilings: &mut deferred.tilings,
            frees: &mut deferred.frees,
        })?;
        let seq = self.submitted.fetch_add(1, Ordering::AcqRel) + 1;
        if launch_blocking() || deferred.frees.len() + deferred.events.len() > MAX_DEFERRED {
            self.synchronize_locked(deferred)?;
        }
        Ok(seq)
    }

    /// Records a new event after the work queued so far.
    pub(crate) fn record(&self) -> Result<Arc<EventRaw>, Error> {
        let mut deferred = self.lock();
        enter(self.acl, self.device)?;
        let event = EventRaw::new(self.acl, self.device)?;
        // SAFETY: both handles are live on this device.
        unsafe { self.acl.record_event(event.handle(), self.raw)? };
        deferred.events.push(event.clone());
        Ok(event)
    }

    /// Frees `ptr` once the stream has passed its current work.
    fn free_later(&self, ptr: *mut c_void) {
        self.lock().frees.push(ptr as usize);
    }
}

impl Drop for StreamState {
    fn drop(&mut self) {
        // Waits for the work, then frees what was deferred; a failure
        // cannot be reported from drop.
        let mut deferred = std::mem::take(&mut *self.lock());
        let _ = self.synchronize_locked(&mut deferred);
        if self.owned {
            // SAFETY: created by `Device::new_stream`, finished, and
            // referenced by nothing else (this is its last owner).
            let _ = unsafe { self.acl.destroy_stream(self.raw) };
        }
    }
}

fn launch_blocking() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var(LAUNCH_BLOCKING_VAR).is_ok_and(|v| !v.is_empty() && v != "0"))
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Stream");
        d.field("device", &self.device);
        if let Some(state) = &self.state {
            d.field("raw", &state.raw);
        }
        d.finish()
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Self) -> bool {
        match (&self.state, &other.state) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => self.device == other.device,
            _ => false,
        }
    }
}

impl Stream {
    pub(crate) fn from_state(device: Device, state: Option<Arc<StreamState>>) -> Self {
        Stream { device, state }
    }

    pub(crate) fn state(&self) -> Option<&Arc<StreamState>> {
        self.state.as_ref()
    }

    /// The device whose work this stream queues.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Waits until all work queued on this stream has finished. An error
    /// of a kernel launched on it since the last synchronisation is
    /// reported here.
    pub fn synchronize(&self) -> Result<(), Error> {
        match &self.state {
            Some(state) => state.synchronize(),
            None => Ok(()),
        }
    }

    /// An event that completes when the work queued on this stream so far
    /// has finished.
    pub fn record(&self) -> Result<Event, Error> {
        let Some(state) = &self.state else {
            return Ok(Event { recorded: None });
        };
        Ok(Event {
            recorded: Some((self.device.clone(), state.record()?)),
        })
    }

    /// Makes work queued on this stream from now on wait for `event`.
    ///
    /// An event of another device is [`Error::WrongStream`].
    pub fn wait(&self, event: &Event) -> Result<(), Error> {
        let (state, (device, raw)) = match (&self.state, &event.recorded) {
            (Some(state), Some(recorded)) => (state, recorded),
            // The host runs calls when they are made: it waits now.
            (None, Some(_)) => return event.synchronize(),
            // A host event has completed.
            (_, None) => return Ok(()),
        };
        if raw.device != state.device {
            return Err(Error::WrongStream {
                what: "Stream::wait(event)".to_owned(),
                actual: device.to_string(),
                stream: self.device.to_string(),
            });
        }
        state.submit(vec![raw.clone()], |_| Ok(())).map(|_| ())
    }

    /// The raw `aclrtStream`, for passing to other ACL users (aclnn,
    /// torch_npu); null on the host backend. It stays valid while this
    /// stream (or a clone) is alive.
    pub fn as_raw(&self) -> *mut c_void {
        self.state.as_ref().map_or(std::ptr::null_mut(), |s| s.raw)
    }

    /// A stream of `device` made from a raw `aclrtStream` created by other
    /// code (torch_npu's current stream, say). pypto-rt queues work on it
    /// and synchronises it, but never destroys it.
    ///
    /// # Safety
    /// `raw` is a live `aclrtStream` of `device`, created through the same
    /// CANN runtime pypto-rt loaded, and stays alive until every clone of
    /// the returned stream is dropped. Other code may queue work on it
    /// concurrently only if the runtime allows it.
    pub unsafe fn from_raw(device: &Device, raw: *mut c_void) -> Result<Stream, Error> {
        let Some(npu) = device.as_npu() else {
            return Err(Error::DeviceUnavailable {
                device: device.to_string(),
                reason: "a raw ACL stream belongs to an NPU, not to the host backend".to_owned(),
            });
        };
        if raw.is_null() {
            return Err(Error::DeviceUnavailable {
                device: device.to_string(),
                reason: "the raw ACL stream is null".to_owned(),
            });
        }
        Ok(Stream {
            device: device.clone(),
            state: Some(Arc::new(StreamState::new(npu.acl, npu.index, raw, false))),
        })
    }
}

/// A point in a stream's work: completes when the work queued before it
/// has finished. Made by [`Stream::record`]; dropping it is fine at any
/// time (the streams using it keep it until they pass it).
pub struct Event {
    /// The device and the event; `None` on the host backend.
    recorded: Option<(Device, Arc<EventRaw>)>,
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("device", &self.recorded.as_ref().map(|(d, _)| d))
            .finish()
    }
}

impl Event {
    /// Waits until the event has completed.
    pub fn synchronize(&self) -> Result<(), Error> {
        let Some((_, raw)) = &self.recorded else {
            return Ok(());
        };
        enter(raw.acl, raw.device)?;
        // SAFETY: a live event of this device.
        unsafe { raw.acl.synchronize_event(raw.handle()) }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Stream>> = const { RefCell::new(None) };
    /// Whether `CURRENT` holds a stream: what a host launch looks at, with
    /// no borrow and no destructor's registration.
    static STREAM_SET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with kernel calls on this thread queued on `stream` instead of
/// their device's default stream. Calls whose tensors are on another device
/// than the stream's are [`Error::WrongStream`].
///
/// ```no_run
/// # fn demo() -> Result<(), pypto_rt::Error> {
/// let dev = pypto_rt::Device::default();
/// let stream = dev.new_stream()?;
/// pypto_rt::with_stream(&stream, || {
///     // kernels::add_bias(&x, &bias, &mut out)?; … queued on `stream`
///     Ok::<(), pypto_rt::Error>(())
/// })?;
/// stream.synchronize()?;
/// # Ok(()) }
/// ```
pub fn with_stream<R>(stream: &Stream, f: impl FnOnce() -> R) -> R {
    let previous = CURRENT.with(|c| c.replace(Some(stream.clone())));
    STREAM_SET.with(|s| s.set(true));
    struct Restore(Option<Stream>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            STREAM_SET.with(|s| s.set(previous.is_some()));
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(previous);
    f()
}

/// The stream [`with_stream`] set on this thread, if any.
pub(crate) fn current() -> Option<Stream> {
    CURRENT.with(|c| c.borrow().clone())
}

/// `f` of the stream [`with_stream`] set on this thread, if any, without
/// cloning it (a host launch only looks at it).
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&Stream>) -> R) -> R {
    if !STREAM_SET.with(Cell::get) {
        return f(None);
    }
    CURRENT.with(|c| f(c.borrow().as_ref()))
}

/// Streams a buffer notes without a lock. Most buffers are used by one
/// stream in their life, a few by two (a copy stream and a compute
/// stream); a third and later streams are noted behind a lock.
const USE_SLOTS: usize = 2;

/// The queued work that uses one device buffer: which streams, up to which
/// work number. Kept per buffer so that host access, frees and launches on
/// other streams can wait for exactly that work.
///
/// A launch reads and updates it on every tensor it is given, so the
/// common case takes no lock (issue 29): the first [`USE_SLOTS`] streams to
/// use the buffer each get a slot, set once by their first launch on it (a
/// `OnceLock`, no mutex), whose number only grows (an atomic maximum).
/// Only the streams after those are noted in `more`, behind its mutex,
/// which readers lock only once `spilled` is set. A slot keeps its stream
/// alive while the buffer lives, finished or not (an entry of `more` only
/// while its work is pending); a stream's drop still waits for its work.
#[derive(Default)]
pub(crate) struct Uses {
    slots: [UseSlot; USE_SLOTS],
    /// Set before the first push to `more`.
    spilled: AtomicBool,
    more: Mutex<Vec<(Arc<StreamState>, u64)>>,
}

/// One stream's use of a buffer: the stream (set by its first launch on
/// the buffer) and the number of its latest work on it.
#[derive(Default)]
struct UseSlot {
    stream: OnceLock<Arc<StreamState>>,
    seq: AtomicU64,
}

impl Uses {
    /// Calls `f` with each stream that has pending work on the buffer (each
    /// stream once).
    fn each_pending(&self, mut f: impl FnMut(&Arc<StreamState>)) {
        for slot in &self.slots {
            if let Some(s) = slot.stream.get()
                && s.pending(slot.seq.load(Ordering::Acquire))
            {
                f(s);
            }
        }
        if self.spilled.load(Ordering::Acquire) {
            let mut more = sync::lock(&self.more);
            more.retain(|(s, seq)| s.pending(*seq));
            for (s, _) in more.iter() {
                f(s);
            }
        }
    }

    /// The streams with pending work on the buffer.
    fn pending_streams(&self) -> Vec<Arc<StreamState>> {
        let mut pending = Vec::new();
        self.each_pending(|s| pending.push(s.clone()));
        pending
    }

    /// Waits until no queued work uses the buffer.
    pub(crate) fn wait_idle(&self) -> Result<(), Error> {
        for stream in self.pending_streams() {
            stream.synchronize()?;
        }
        Ok(())
    }

    /// Adds to `others` each stream other than `stream` with pending work
    /// on the buffer (once each).
    pub(crate) fn pending_elsewhere(
        &self,
        stream: &Arc<StreamState>,
        others: &mut Vec<Arc<StreamState>>,
    ) {
        self.each_pending(|s| {
            if !Arc::ptr_eq(s, stream) && !others.iter().any(|o| Arc::ptr_eq(o, s)) {
                others.push(s.clone());
            }
        });
    }

    /// Notes work number `seq` of `stream` as using the buffer.
    pub(crate) fn used_by(&self, stream: &Arc<StreamState>, seq: u64) {
        for slot in &self.slots {
            // A slot, once set, names one stream for good: the first slot
            // naming `stream` is the only one that does.
            let holder = slot.stream.get_or_init(|| stream.clone());
            if Arc::ptr_eq(holder, stream) {
                slot.seq.fetch_max(seq, Ordering::AcqRel);
                return;
            }
        }
        self.spilled.store(true, Ordering::Release);
        let mut more = sync::lock(&self.more);
        more.retain(|(s, n)| s.pending(*n) && !Arc::ptr_eq(s, stream));
        more.push((stream.clone(), seq));
    }

    /// For the buffer's drop: hands `ptr` to a stream still using it, to be
    /// freed when that stream has passed its work; `false` when nothing
    /// uses it and the caller may free it now. With pending work on several
    /// streams, all but the last are waited for.
    pub(crate) fn free_when_idle(&self, ptr: *mut c_void) -> bool {
        let mut pending = self.pending_streams();
        let Some(last) = pending.pop() else {
            return false;
        };
        for stream in pending {
            let _ = stream.synchronize();
        }
        last.free_later(ptr);
        true
    }
}
