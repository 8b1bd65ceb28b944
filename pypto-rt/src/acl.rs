//! The CANN ACL runtime (`libascendcl`), loaded when first needed.
//!
//! Loaded at run time with `libloading` rather than linked, so that a crate
//! built without CANN (host backend only) has no link-time dependency on it,
//! and a binary built with CANN still starts — and falls back to the host —
//! on a machine whose runtime or NPU is missing. Signatures are those of the
//! public ACL headers (`acl/acl_rt.h`, `acl/acl_base_rt.h`).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use crate::error::Error;

pub(crate) type AclError = c_int;
pub(crate) type Stream = *mut c_void;
pub(crate) type Event = *mut c_void;

pub(crate) const ACL_SUCCESS: AclError = 0;
/// `aclInit` was already called in this process (by us or by other code).
const ACL_ERROR_REPEAT_INITIALIZE: AclError = 100_002;
/// `aclrtMemMallocPolicy::ACL_MEM_MALLOC_HUGE_FIRST`.
const ACL_MEM_MALLOC_HUGE_FIRST: c_int = 0;

/// `aclrtMemcpyKind`.
#[derive(Clone, Copy, Debug)]
#[repr(i32)]
pub(crate) enum CopyKind {
    HostToDevice = 1,
    DeviceToHost = 2,
    DeviceToDevice = 3,
}

/// The variable naming the runtime library explicitly, before any search.
pub const LIBRARY_VAR: &str = "PYPTO_ACL_LIBRARY";
const LIBRARY: &str = "libascendcl.so";

/// The ACL entry points pypto-rt uses.
pub(crate) struct Acl {
    _library: libloading::Library,
    /// Where it was loaded from, for messages.
    pub(crate) path: String,
    finalize: unsafe extern "C" fn() -> AclError,
    set_device: unsafe extern "C" fn(i32) -> AclError,
    get_device: unsafe extern "C" fn(*mut i32) -> AclError,
    reset_device: unsafe extern "C" fn(i32) -> AclError,
    destroy_stream: unsafe extern "C" fn(Stream) -> AclError,
    get_device_count: unsafe extern "C" fn(*mut u32) -> AclError,
    create_stream: unsafe extern "C" fn(*mut Stream) -> AclError,
    synchronize_stream: unsafe extern "C" fn(Stream) -> AclError,
    malloc: unsafe extern "C" fn(*mut *mut c_void, usize, c_int) -> AclError,
    free: unsafe extern "C" fn(*mut c_void) -> AclError,
    memcpy: unsafe extern "C" fn(*mut c_void, usize, *const c_void, usize, c_int) -> AclError,
    create_event: unsafe extern "C" fn(*mut Event) -> AclError,
    destroy_event: unsafe extern "C" fn(Event) -> AclError,
    record_event: unsafe extern "C" fn(Event, Stream) -> AclError,
    stream_wait_event: unsafe extern "C" fn(Stream, Event) -> AclError,
    synchronize_event: unsafe extern "C" fn(Event) -> AclError,
    recent_error: unsafe extern "C" fn() -> *const c_char,
    soc_name: unsafe extern "C" fn() -> *const c_char,
    /// Whether this process's `aclInit` was ours: only then is
    /// `aclFinalize` ours to call. A guest (ACL initialised by torch_npu or
    /// another component first) leaves it to the owner.
    owns_init: bool,
    /// What this process opened, released at exit in reverse: streams
    /// (with their device), then devices.
    opened: Mutex<Opened>,
}

#[derive(Default)]
struct Opened {
    devices: Vec<i32>,
    streams: Vec<(i32, usize)>,
}

static ACL: OnceLock<Result<Acl, String>> = OnceLock::new();

/// The runtime, loaded and initialised (`aclInit`) once per process; the
/// error says why it is unavailable.
pub(crate) fn get() -> Result<&'static Acl, String> {
    ACL.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Where to look for the library, in order: `PYPTO_ACL_LIBRARY`, the
/// dynamic loader's own search (an already-loaded copy, `LD_LIBRARY_PATH`,
/// the binary's run path), then `lib64/` of each CANN home pypto-build
/// looks in.
fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(path) = std::env::var_os(LIBRARY_VAR).filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(path));
    }
    out.push(PathBuf::from(LIBRARY));
    for var in ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"] {
        if let Some(home) = std::env::var_os(var).filter(|p| !p.is_empty()) {
            out.push(PathBuf::from(home).join("lib64").join(LIBRARY));
        }
    }
    for home in [
        "/usr/local/Ascend/cann",
        "/usr/local/Ascend/ascend-toolkit/latest",
    ] {
        out.push(PathBuf::from(home).join("lib64").join(LIBRARY));
    }
    out
}

fn load() -> Result<Acl, String> {
    let mut tried = Vec::new();
    for path in candidates() {
        // SAFETY: loading the ACL runtime runs its initialisers; it is the
        // vendor library this crate exists to call.
        match unsafe { libloading::Library::new(&path) } {
            Ok(library) => return bind(library, path.display().to_string()),
            Err(e) => tried.push(format!("{} ({e})", path.display())),
        }
    }
    Err(format!(
        "the CANN runtime library could not be loaded; tried {}",
        tried.join("; ")
    ))
}

fn bind(library: libloading::Library, path: String) -> Result<Acl, String> {
    macro_rules! symbol {
        ($name:literal) => {
            // SAFETY: the symbol is declared with its signature from the
            // public ACL headers; the pointer is only used while `library`
            // is alive (both are held by `Acl`, which lives in a static).
            *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{path} has no `{}`: {e}", $name))?
        };
    }
    let init: unsafe extern "C" fn(*const c_char) -> AclError = symbol!("aclInit");
    let acl = Acl {
        path: path.clone(),
        finalize: symbol!("aclFinalize"),
        set_device: symbol!("aclrtSetDevice"),
        get_device: symbol!("aclrtGetDevice"),
        reset_device: symbol!("aclrtResetDevice"),
        destroy_stream: symbol!("aclrtDestroyStream"),
        get_device_count: symbol!("aclrtGetDeviceCount"),
        create_stream: symbol!("aclrtCreateStream"),
        synchronize_stream: symbol!("aclrtSynchronizeStream"),
        malloc: symbol!("aclrtMalloc"),
        free: symbol!("aclrtFree"),
        memcpy: symbol!("aclrtMemcpy"),
        create_event: symbol!("aclrtCreateEvent"),
        destroy_event: symbol!("aclrtDestroyEvent"),
        record_event: symbol!("aclrtRecordEvent"),
        stream_wait_event: symbol!("aclrtStreamWaitEvent"),
        synchronize_event: symbol!("aclrtSynchronizeEvent"),
        recent_error: symbol!("aclGetRecentErrMsg"),
        soc_name: symbol!("aclrtGetSocName"),
        owns_init: false,
        opened: Mutex::new(Opened::default()),
        _library: library,
    };
    // SAFETY: aclInit accepts a null config path (no configuration file).
    let code = unsafe { init(std::ptr::null()) };
    if code != ACL_SUCCESS && code != ACL_ERROR_REPEAT_INITIALIZE {
        return Err(acl.error("aclInit", code).to_string());
    }
    register_shutdown();
    Ok(Acl {
        owns_init: code == ACL_SUCCESS,
        ..acl
    })
}

/// Releases what this process opened when it exits (Rust runs no
/// destructors for statics): streams, then devices, then — only if our
/// `aclInit` was the one that initialised ACL — `aclFinalize`.
fn register_shutdown() {
    unsafe extern "C" {
        fn atexit(callback: extern "C" fn()) -> c_int;
    }
    extern "C" fn shutdown() {
        if let Some(Ok(acl)) = ACL.get() {
            acl.shutdown();
        }
    }
    // SAFETY: registers a plain function with the C library's exit handlers.
    unsafe { atexit(shutdown) };
}

impl Acl {
    /// The typed error for a failed call, with the runtime's own message.
    pub(crate) fn error(&self, call: &'static str, code: AclError) -> Error {
        // SAFETY: aclGetRecentErrMsg takes no arguments and returns null or
        // a NUL-terminated string owned by the runtime, copied at once.
        let message = unsafe {
            let text = (self.recent_error)();
            if text.is_null() {
                String::new()
            } else {
                CStr::from_ptr(text).to_string_lossy().trim().to_owned()
            }
        };
        Error::Acl {
            call,
            code,
            message,
        }
    }

    fn check(&self, call: &'static str, code: AclError) -> Result<(), Error> {
        if code == ACL_SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, code))
        }
    }

    pub(crate) fn device_count(&self) -> Result<u32, Error> {
        let mut count = 0u32;
        // SAFETY: writes one u32 through a valid pointer.
        let code = unsafe { (self.get_device_count)(&mut count) };
        self.check("aclrtGetDeviceCount", code)?;
        Ok(count)
    }

    /// The calling thread's current device, or `None` when none is set.
    pub(crate) fn current_device(&self) -> Option<i32> {
        let mut index = -1i32;
        // SAFETY: writes one i32 through a valid pointer.
        let code = unsafe { (self.get_device)(&mut index) };
        (code == ACL_SUCCESS).then_some(index)
    }

    /// Makes `index` the calling thread's device (ACL keeps the current
    /// device per thread).
    pub(crate) fn set_device(&self, index: i32) -> Result<(), Error> {
        // SAFETY: plain value argument.
        let code = unsafe { (self.set_device)(index) };
        self.check("aclrtSetDevice", code)?;
        let mut opened = crate::sync::lock(&self.opened);
        if !opened.devices.contains(&index) {
            opened.devices.push(index);
        }
        Ok(())
    }

    /// At exit: destroys this process's streams, resets its devices, and
    /// finalises ACL if this process initialised it. Failures are ignored:
    /// the process is ending and has no one to tell.
    fn shutdown(&self) {
        let opened = std::mem::take(&mut *crate::sync::lock(&self.opened));
        for &(device, stream) in opened.streams.iter().rev() {
            // SAFETY: the stream came from aclrtCreateStream on `device` and
            // is destroyed once; no launch runs during exit handlers.
            unsafe {
                (self.set_device)(device);
                (self.destroy_stream)(stream as Stream);
            }
        }
        for &device in opened.devices.iter().rev() {
            // SAFETY: plain value argument; this process set the device.
            unsafe { (self.reset_device)(device) };
        }
        if self.owns_init {
            // SAFETY: this process's aclInit initialised ACL; nothing of
            // ours uses it after exit handlers.
            unsafe { (self.finalize)() };
        }
    }

    /// The SoC name of the current device, e.g. `Ascend910B3`.
    pub(crate) fn soc_name(&self) -> Option<String> {
        // SAFETY: returns null or a NUL-terminated string owned by the runtime.
        unsafe {
            let text = (self.soc_name)();
            (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned())
        }
    }

    /// A stream on `device`, which must be current on this thread.
    pub(crate) fn create_stream(&self, device: i32) -> Result<Stream, Error> {
        let mut stream: Stream = std::ptr::null_mut();
        // SAFETY: writes one stream handle through a valid pointer.
        let code = unsafe { (self.create_stream)(&mut stream) };
        self.check("aclrtCreateStream", code)?;
        crate::sync::lock(&self.opened)
            .streams
            .push((device, stream as usize));
        Ok(stream)
    }

    /// Destroys a stream [`Acl::create_stream`] made, once its work is done.
    ///
    /// # Safety
    /// `stream` came from [`Acl::create_stream`] and is not used afterwards.
    pub(crate) unsafe fn destroy_stream(&self, stream: Stream) -> Result<(), Error> {
        crate::sync::lock(&self.opened)
            .streams
            .retain(|&(_, s)| s != stream as usize);
        // SAFETY: forwarded from this function's contract.
        let code = unsafe { (self.destroy_stream)(stream) };
        self.check("aclrtDestroyStream", code)
    }

    pub(crate) fn create_event(&self) -> Result<Event, Error> {
        let mut event: Event = std::ptr::null_mut();
        // SAFETY: writes one event handle through a valid pointer.
        let code = unsafe { (self.create_event)(&mut event) };
        self.check("aclrtCreateEvent", code)?;
        Ok(event)
    }

    /// # Safety
    /// `event` came from [`Acl::create_event`], every stream that records or
    /// waits for it has passed it, and it is not used afterwards.
    pub(crate) unsafe fn destroy_event(&self, event: Event) -> Result<(), Error> {
        // SAFETY: forwarded from this function's contract.
        let code = unsafe { (self.destroy_event)(event) };
        self.check("aclrtDestroyEvent", code)
    }

    /// # Safety
    /// `event` and `stream` are live handles of the current device.
    pub(crate) unsafe fn record_event(&self, event: Event, stream: Stream) -> Result<(), Error> {
        // SAFETY: forwarded from this function's contract.
        let code = unsafe { (self.record_event)(event, stream) };
        self.check("aclrtRecordEvent", code)
    }

    /// # Safety
    /// `event` and `stream` are live handles of the current device.
    pub(crate) unsafe fn stream_wait_event(
        &self,
        stream: Stream,
        event: Event,
    ) -> Result<(), Error> {
        // SAFETY: forwarded from this function's contract.
        let code = unsafe { (self.stream_wait_event)(stream, event) };
        self.check("aclrtStreamWaitEvent", code)
    }

    /// # Safety
    /// `event` is a live event handle.
    pub(crate) unsafe fn synchronize_event(&self, event: Event) -> Result<(), Error> {
        // SAFETY: forwarded from this function's contract.
        let code = unsafe { (self.synchronize_event)(event) };
        self.check("aclrtSynchronizeEvent", code)
    }

    pub(crate) fn synchronize(&self, stream: Stream) -> Result<(), Error> {
        // SAFETY: `stream` came from aclrtCreateStream and is not destroyed.
        let code = unsafe { (self.synchronize_stream)(stream) };
        self.check("aclrtSynchronizeStream", code)
    }

    /// Device memory of `bytes` (> 0) on the current device.
    pub(crate) fn malloc(&self, bytes: usize) -> Result<*mut c_void, Error> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: writes one pointer through a valid pointer.
        let code = unsafe { (self.malloc)(&mut ptr, bytes, ACL_MEM_MALLOC_HUGE_FIRST) };
        self.check("aclrtMalloc", code)?;
        Ok(ptr)
    }

    /// # Safety
    /// `ptr` came from [`Acl::malloc`] and is not used afterwards.
    pub(crate) unsafe fn free(&self, ptr: *mut c_void) -> Result<(), Error> {
        // SAFETY: forwarded from this function's contract.
        let code = unsafe { (self.free)(ptr) };
        self.check("aclrtFree", code)
    }

    /// # Safety
    /// `dst` and `src` are valid for `bytes` on the sides `kind` names.
    pub(crate) unsafe fn memcpy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        kind: CopyKind,
    ) -> Result<(), Error> {
        // SAFETY: forwarded from this function's contract.
        let code = unsafe { (self.memcpy)(dst, bytes, src, bytes, kind as c_int) };
        self.check("aclrtMemcpy", code)
    }
}
