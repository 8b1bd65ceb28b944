//! The NPU path: a launch's stub for the device's architecture, the stream
//! it goes to, its tiling's device copy, and the launch queued on the
//! stream after the work on other streams that uses the same tensors.

use std::ffi::c_void;
use std::sync::Arc;

use crate::abi::{Arg, Entries, KernelDesc, MemoryKind, NpuEntry};
use crate::acl::CopyKind;
use crate::device::{Device, Npu, TilingCache};
use crate::error::Error;
use crate::stream::{StreamState, Uses};

use super::{Small, Tensors, Tiling};

/// What a launch stub returns when a value of a `source:` kernel's
/// `tiling:` struct does not fit its field (pypto-build writes the same
/// number into the stub).
const TILING_RANGE_STATUS: u32 = 0x7074_0001;

/// The stub compiled for the architecture of `npu`.
pub(super) fn npu_entry(
    desc: &KernelDesc,
    entries: Entries,
    device: &Device,
    npu: &Npu,
) -> Result<NpuEntry, Error> {
    let not_built = |reason: String| Error::NotBuiltFor {
        kernel: desc.name,
        device: device.to_string(),
        reason,
    };
    let Some(arch) = npu.arch else {
        return Err(not_built(format!(
            "pypto-rs does not know the architecture of SoC `{}`",
            npu.soc
        )));
    };
    let stub = entries
        .npu
        .iter()
        .find(|stub| stub.arch() == arch)
        .ok_or_else(|| {
            // Named only on failure: a launch should not format strings.
            let built: Vec<String> = entries.npu.iter().map(|s| s.arch().to_string()).collect();
            not_built(if built.is_empty() {
                "the crate was built without a CANN toolkit (host backend only); use \
                 `Device::host()` or set PYPTO_DEVICE=host"
                    .to_owned()
            } else {
                format!(
                    "its device is {arch}, and it was built for {}",
                    built.join(", ")
                )
            })
        })?;
    // The runtime the library links against is loaded: `npu` is open.
    stub.entry(desc.name)
}

/// The stream a launch on `device` goes to: the one [`crate::with_stream`]
/// set on this thread, else the device's default stream.
pub(super) fn launch_stream(
    desc: &KernelDesc,
    device: &Device,
    npu: &Npu,
) -> Result<Arc<StreamState>, Error> {
    let Some(stream) = crate::stream::current() else {
        return Ok(npu.default_stream.clone());
    };
    match stream.state() {
        Some(state) if state.device == npu.index => Ok(state.clone()),
        _ => Err(wrong_stream(desc, device, &stream)),
    }
}

/// A call on `device` inside `with_stream` of a stream of another device.
pub(super) fn wrong_stream(desc: &KernelDesc, device: &Device, stream: &crate::Stream) -> Error {
    Error::WrongStream {
        what: format!("kernel `{}`", desc.name),
        actual: device.to_string(),
        stream: stream.device().to_string(),
    }
}

/// The device copy of `tiling` for the kernel whose launch stub is
/// `entry`: from `seen` (the launching stream's copies, read under the
/// stream's lock the caller holds) when this stream launched this kernel
/// with these words before; else from the device's cache, or copied once
/// and kept there. Copies are per kernel, so a kernel that writes its
/// tiling changes no other kernel's (see `TilingCache`). Past
/// [`MAX_TILINGS`](crate::device::MAX_TILINGS) copies, a copy for this launch alone, for the stream to
/// free when it has passed the launch (the second value). The device must
/// be current on this thread.
fn device_tiling(
    npu: &Npu,
    seen: &mut TilingCache,
    entry: NpuEntry,
    tiling: &[u64],
    bytes: usize,
) -> Result<(*mut c_void, bool), Error> {
    let kernel = entry as usize;
    if let Some(ptr) = seen.get(kernel, tiling) {
        return Ok((ptr as *mut c_void, false));
    }
    let mut cache = crate::sync::lock(&npu.tilings);
    let ptr = match cache.get(kernel, tiling) {
        Some(ptr) => ptr as *mut c_void,
        None => {
            let ptr = npu.acl.malloc(bytes)?;
            if !tiling.is_empty() {
                // SAFETY: `ptr` holds `bytes` of fresh device memory, at
                // least the size of the words copied; no queued work uses
                // it yet.
                let copied = unsafe {
                    npu.acl.memcpy(
                        ptr,
                        tiling.as_ptr().cast(),
                        std::mem::size_of_val(tiling),
                        CopyKind::HostToDevice,
                    )
                };
                if let Err(e) = copied {
                    // SAFETY: allocated just above and used by nothing.
                    let _ = unsafe { npu.acl.free(ptr) };
                    return Err(e);
                }
            }
            if !cache.insert(kernel, tiling, ptr as usize) {
                return Ok((ptr, true));
            }
            ptr
        }
    };
    drop(cache);
    // A stream that cannot keep it asks the device's cache again next time.
    seen.insert(kernel, tiling, ptr as usize);
    Ok((ptr, false))
}

/// An NPU launch once its call is checked: its entry and stream, the
/// tensors' addresses, sizes and queued uses, then the queued launch. Out
/// of line, so that the host launch's code stays together.
///
/// # Safety
/// As for [`launch`](super::launch); the tensors are on `npu`.
#[inline(never)]
pub(super) unsafe fn launch_on_npu(
    desc: &KernelDesc,
    entries: Entries,
    device: &Device,
    npu: &Npu,
    blocks: u32,
    tiling: &Tiling,
    args: &[Arg<'_>],
) -> Result<(), Error> {
    let entry = npu_entry(desc, entries, device, npu)?;
    let stream = launch_stream(desc, device, npu)?;
    let mut pointers: Small<*mut c_void> = Small::new();
    let mut bytes: Small<u64> = Small::new();
    let mut uses: Small<&Uses> = Small::new();
    for arg in args {
        if let Arg::Tensor { memory, .. } = arg {
            let (ptr, len) = memory.address();
            pointers.push(ptr.cast::<c_void>());
            bytes.push(len);
            if let MemoryKind::Raw {
                uses: Some(used), ..
            } = memory.0
            {
                uses.push(used);
            }
        }
    }
    let tensors = Tensors {
        pointers: &pointers,
        bytes: &bytes,
        tiling: tiling.words(),
        tiling_bytes: tiling.bytes(),
    };
    // SAFETY: forwarded from this function's contract; the tensors'
    // pointers are device addresses on `npu`.
    unsafe { run_on_npu(npu, &stream, entry, blocks, &tensors, &uses) }
}

/// Queues the kernel on `stream` and returns: the stream waits (through
/// events) for work on other streams that uses the same tensors, the
/// tiling comes from the stream's or the device's cache, and each tensor
/// notes the launch. In steady state (the tiling used on this stream
/// before, the tensors used by this stream alone or by none) that is one
/// question to the runtime (which device is current), one lock (the
/// stream's, which orders its queue) and the launch (issue 29).
///
/// # Safety
/// As for [`launch`](super::launch), with device addresses on `npu`.
pub(super) unsafe fn run_on_npu(
    npu: &Npu,
    stream: &Arc<StreamState>,
    entry: NpuEntry,
    blocks: u32,
    tensors: &Tensors<'_>,
    uses: &[&Uses],
) -> Result<(), Error> {
    npu.enter()?;
    // One event per other stream with queued work on these tensors.
    let mut others = Vec::new();
    for u in uses {
        u.pending_elsewhere(stream, &mut others);
    }
    let waits = others
        .iter()
        .map(|other| other.record())
        .collect::<Result<Vec<_>, Error>>()?;
    if !waits.is_empty() {
        // Recording made each other stream's device current: the same as
        // the launch's (a tensor is used only by streams of its device),
        // but asked again rather than assumed.
        npu.enter()?;
    }
    // A launch with no dims and no scalars still passes a (1-word) tiling.
    let tiling_bytes = std::mem::size_of_val(tensors.tiling).max(8);
    let mut args: Small<*mut c_void> = tensors.pointers.iter().copied().collect();
    // The device's tiling (below), then the host's, read by the stub on the
    // host before it returns.
    args.push(std::ptr::null_mut());
    args.push(tensors.tiling.as_ptr().cast_mut().cast());
    let tiling_at = args.len() - 2;
    // The device is current on this thread: entered above, and nothing
    // since makes another device current.
    let seq = stream.submit_entered(waits, |queue| {
        let (tiling, own_tiling) =
            device_tiling(npu, queue.tilings, entry, tensors.tiling, tiling_bytes)?;
        args[tiling_at] = tiling;
        // SAFETY: `entry` is the stub compiled for this kernel and this
        // device's architecture (the caller's contract); `args` holds one
        // device address per tensor param, then the tiling's; the memory
        // stays allocated until the stream has passed the launch (each
        // tensor notes it below, and the tiling is cached or freed later).
        let status = unsafe { entry(blocks, queue.raw, args.as_mut_ptr()) };
        if status != 0 {
            if own_tiling {
                // SAFETY: the launch was not queued, so nothing uses it.
                let _ = unsafe { npu.acl.free(tiling) };
            }
            let message = if status as u32 == TILING_RANGE_STATUS {
                "a `tiling:` field's value does not fit its type in the struct (the host \
                 backend's error names the field)"
            } else {
                ""
            };
            return Err(Error::Acl {
                call: "kernel launch",
                code: status,
                message: message.to_owned(),
            });
        }
        if own_tiling {
            queue.free_later(tiling);
        }
        Ok(())
    })?;
    for u in uses {
        u.used_by(stream, seq);
    }
    Ok(())
}
