//! The host backend: a launch's blocks run as calls of the kernel's host
//! entry (compiled with the Ascend C emulation) on a pool of host threads,
//! with inputs read-only meanwhile, and the checks after it (guard bytes,
//! `bool` values, a tiling left as it was).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::abi::{Arg, HostArg, HostEntry, HostLaunch, KernelDesc, MemoryKind};
use crate::error::Error;
use crate::host_mem::{HostBuffer, ReadOnly};
use crate::watchdog;

use super::{Small, Tensors, Tiling, cold, pool};

/// What every block of one host launch shares besides the tensors and the
/// watchdog's registration.
struct HostCall<'a> {
    kernel: &'static str,
    entry: HostEntry,
    blocks: u32,
    tensors: &'a Tensors<'a>,
    /// The launch's own copy of the tiling, lent to its blocks through
    /// this pointer (and nothing else) for the launch.
    tiling: *mut u64,
    info: &'a [HostArg],
    launch_id: u64,
    sanitize: crate::Sanitize,
    /// The modelled NPU's sink when a profile is active (else null).
    model: *const crate::model::ModelSink,
}

// SAFETY: the pointers are only dereferenced by the kernel, whose blocks
// write disjoint parts of the outputs (the kernel's contract); the tensors
// they point into are borrowed for the whole launch.
unsafe impl Sync for HostCall<'_> {}

/// Runs block `block` of `blocks`; returns the kernel's message if it
/// failed, and the block's Unified Buffer high-water mark.
///
/// # Safety
/// As for [`launch`](super::launch).
unsafe fn run_block(
    block: u32,
    call: &HostCall<'_>,
    watch: &watchdog::Watch<'_>,
    in_turn: bool,
) -> (Option<(u32, String)>, u64) {
    // Written by the entry only on failure, so it is not zeroed per launch.
    let mut message = std::mem::MaybeUninit::<[u8; 1024]>::uninit();
    let tensors = call.tensors;
    let mut record = HostLaunch {
        block_idx: block,
        block_num: call.blocks,
        args: tensors.pointers.as_ptr(),
        arg_bytes: tensors.bytes.as_ptr(),
        num_args: tensors.pointers.len() as u32,
        tiling: call.tiling.cast_const().cast(),
        tiling_bytes: tensors.tiling_bytes,
        err: message.as_mut_ptr().cast(),
        err_len: 1024,
        ub_peak: 0,
        arg_info: call.info.as_ptr(),
        kernel: call.kernel.as_ptr(),
        kernel_len: call.kernel.len() as u64,
        launch_id: call.launch_id,
        cancel: watch.cancel_word(),
        timeout_ms: watch.timeout_ms(),
        sanitize: call.sanitize.bits(),
        fail_block: 0,
        model: call.model,
    };
    watch.block_started(block, in_turn);
    // SAFETY: `entry` is the compiled kernel for these arguments (the
    // caller's contract); the record's pointers are valid for the lengths
    // it states.
    let status = unsafe { (call.entry)(&mut record) };
    watch.block_finished(block, in_turn);
    if status == 0 {
        return (None, record.ub_peak);
    }
    // SAFETY: a failing entry writes a NUL-terminated message of at most
    // `err_len` bytes (pypto_emu::write_message).
    let text = unsafe { std::ffi::CStr::from_ptr(message.as_ptr().cast()) };
    let owner = record.fail_block.checked_sub(1).unwrap_or(block);
    (
        Some((owner, text.to_string_lossy().into_owned())),
        record.ub_peak,
    )
}

/// The host's hardware threads, asked once: the standard library reads
/// cgroup files to answer, which costs microseconds per call.
fn host_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Launch ids: every launch of the process gets its own, from 1. Threads
/// take them [`LAUNCH_ID_BATCH`] at a time, so a launch takes no atomic.
static LAUNCHES: AtomicU64 = AtomicU64::new(1);

const LAUNCH_ID_BATCH: u64 = 1024;

/// A launch id no other launch of the process has (the emulation tells
/// launches apart by it; ids need not grow with time). Never one whose low
/// 32 bits are all 0: kernels built before interface v7 read the cancel
/// word, which holds a cancelled launch's id, as a `uint32_t` flag (its
/// low half, on the little-endian hosts they run on).
fn next_launch_id() -> u64 {
    thread_local! {
        /// The next id of this thread's batch, and the batch's end.
        static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }
    IDS.with(|ids| {
        let (mut next, mut end) = ids.get();
        // At most three turns: a new batch, then a skip that may end it.
        loop {
            if next == end {
                next = LAUNCHES.fetch_add(LAUNCH_ID_BATCH, Ordering::Relaxed);
                end = next + LAUNCH_ID_BATCH;
            } else if next as u32 == 0 {
                next += 1;
            } else {
                ids.set((next + 1, end));
                return next;
            }
        }
    })
}

/// Runs every block on a pool of host threads; returns the result, and
/// sets `ub_peak` to the largest Unified Buffer high-water mark of any
/// block. Inputs are
/// read-only while it runs; afterwards, every tensor's front guard bytes
/// and every `bool` output's values are checked.
///
/// # Safety
/// As for [`launch`](super::launch).
pub(super) unsafe fn run_on_host(
    desc: &KernelDesc,
    entry: HostEntry,
    blocks: u32,
    tiling: &Tiling,
    args: &[Arg<'_>],
    ub_peak: &mut u64,
) -> Result<(), Error> {
    let sanitize = match crate::sanitize::current()? {
        // A timing-only profile computes nothing for the checks to watch.
        _ if crate::model::timing_only() => crate::Sanitize::OFF,
        checks => checks,
    };
    let timeout = watchdog::launch_timeout()?;
    // Every list the blocks read, in one pass over the arguments.
    let mut pointers: Small<*mut c_void> = Small::new();
    let mut bytes: Small<u64> = Small::new();
    let mut info: Small<HostArg> = Small::new();
    // Made only when inputs are protected (debug builds by default).
    let mut read_only: Option<Small<ReadOnly<'_>>> = None;
    // The inputs' bytes: the modelled NPU reads them from HBM the first time.
    let mut input_bytes = 0u64;
    for (i, arg) in args.iter().enumerate() {
        let Arg::Tensor { memory, .. } = arg else {
            continue;
        };
        let (ptr, len) = memory.address();
        pointers.push(ptr.cast::<c_void>());
        bytes.push(len);
        let (buffer, writable) = match &memory.0 {
            MemoryKind::HostInput {
                buffer,
                offset,
                bytes,
                ..
            } => {
                if let Some(guard) = buffer.read_only(*offset, *bytes) {
                    read_only.get_or_insert_with(Small::new).push(guard);
                }
                input_bytes = input_bytes.saturating_add(*bytes as u64);
                (Some(*buffer), 0)
            }
            MemoryKind::HostOutput { buffer, .. } => (Some(*buffer), 1),
            MemoryKind::Raw { writable, .. } => {
                if !*writable {
                    input_bytes = input_bytes.saturating_add(len);
                }
                (None, u32::from(*writable))
            }
        };
        let (map_begin, map_end) = buffer.map_or((0, 0), HostBuffer::mapping);
        let name = desc.params[i];
        info.push(HostArg {
            map_begin: map_begin as u64,
            map_end: map_end as u64,
            name: name.as_ptr(),
            name_len: name.len() as u64,
            writable,
            reserved: 0,
        });
    }
    let tensors = Tensors {
        pointers: &pointers,
        bytes: &bytes,
        tiling: tiling.words(),
        tiling_bytes: tiling.bytes(),
    };
    let tensors = &tensors;
    // The blocks read a copy of the tiling made for this launch: one that
    // writes it (a raw `GM_ADDR` store) is found when the launch is over.
    let mut tiling: Small<u64> = Small::from_slice(tensors.tiling);
    let model = crate::model::begin(blocks, input_bytes)?;
    let model_sink = model.as_ref().map_or(std::ptr::null(), |m| m.sink());
    let tiling_ptr = tiling.as_mut_ptr();
    let launch_id = next_launch_id();
    let call = HostCall {
        kernel: desc.name,
        entry,
        blocks,
        tensors,
        tiling: tiling_ptr,
        info: &info,
        launch_id,
        sanitize,
        model: model_sink,
    };
    let mut result = Ok(());
    // The closure holds one pointer: a larger one is copied into the
    // watchdog's thread-local closure with wide loads of words just stored,
    // which stall (about 6 ns a launch, seen in perf).
    let mut job = (&call, &mut result);
    let job = &mut job;
    *ub_peak = watchdog::watch_for(desc.name, timeout, launch_id, move |watch| {
        // SAFETY: forwarded from this function's contract.
        unsafe { run_blocks(job.0, watch, job.1) }
    });
    if let Some(model) = model
        && result.is_ok()
        && let Err(e) = crate::model::finish(model, desc.name, blocks)
    {
        result = Err(e);
    }
    // The inputs writable again, the guards dropped in place: moving the
    // list out (`drop(read_only)`) would copy it whole with `memcpy`.
    if let Some(guards) = read_only.as_mut() {
        guards.clear();
    }
    // Word by word: a slice comparison calls `memcmp`, which costs more
    // than the few words a tiling has.
    if result.is_ok() && tiling.iter().zip(tensors.tiling).any(|(a, b)| a != b) {
        result = Err(cold(|| Error::TilingWritten { kernel: desc.name }));
    }
    // What no guard page could stop: writes just before a tensor's start,
    // and bytes that are not a `bool` in a bool tensor (an output, or an
    // input the kernel wrote all the same). Checked even after a failed
    // launch, so that no tensor is left holding them.
    for (i, arg) in args.iter().enumerate() {
        let Arg::Tensor { memory, .. } = arg else {
            continue;
        };
        // Named only when there is something to report.
        let param = || desc.params[i];
        let (buffer, offset, bytes, first_invalid) = match &memory.0 {
            MemoryKind::HostInput {
                buffer,
                offset,
                bytes,
                first_invalid,
            }
            | MemoryKind::HostOutput {
                buffer,
                offset,
                bytes,
                first_invalid,
            } => (*buffer, *offset, *bytes, *first_invalid),
            MemoryKind::Raw {
                ptr,
                bytes,
                first_invalid,
                ..
            } => {
                // Adopted host memory: no guard pages, but no invalid
                // `bool` either.
                let bytes = *bytes as usize;
                if let Some(check) = *first_invalid
                    && bytes != 0
                {
                    // SAFETY: host memory of `bytes` lent to this launch,
                    // which has ended; an output is held exclusively, and
                    // an input's bytes are changed only when the kernel
                    // already changed them during the launch (the check
                    // reads, and writes only invalid `bool`s back to
                    // `false`).
                    unsafe { check_output_bytes(*ptr, bytes, check, desc, param(), &mut result) };
                }
                continue;
            }
        };
        // The front slack lies before the buffer's first byte: only a view
        // that starts there borders it.
        if offset == 0
            && let Some(before) = buffer.slack_damage()
        {
            buffer.repair_slack();
            if result.is_ok() {
                result = Err(cold(|| Error::OutOfBounds {
                    kernel: desc.name,
                    param: param(),
                    before,
                }));
            }
        }
        if let Some(check) = first_invalid {
            // SAFETY: the argument's bytes lie inside the buffer and were
            // lent to this launch, which has ended: an output's exclusively
            // (other views of the buffer hold other bytes); an input's are
            // written only when the kernel wrote invalid `bool`s into them
            // during the launch, and then back to `false`.
            unsafe {
                check_output_bytes(
                    buffer.as_ptr().add(offset),
                    bytes,
                    check,
                    desc,
                    param(),
                    &mut result,
                )
            };
        }
    }
    result
}

/// After a host launch: a tensor's bytes that are not a valid value of its
/// dtype (a `bool` other than 0 or 1) are zeroed, and the first one found
/// becomes the launch's error unless it already has one.
///
/// # Safety
/// `ptr` is valid for reads and writes of `bytes` bytes, and nothing else
/// reads or writes them meanwhile.
unsafe fn check_output_bytes(
    ptr: *mut u8,
    bytes: usize,
    first_invalid: fn(&[u8]) -> Option<(usize, u8)>,
    desc: &KernelDesc,
    param: &'static str,
    result: &mut Result<(), Error>,
) {
    // SAFETY: this function's contract.
    let own = unsafe { std::slice::from_raw_parts(ptr, bytes) };
    if let Some((index, value)) = first_invalid(own) {
        // SAFETY: as above; zero bytes are `false`.
        unsafe { std::ptr::write_bytes(ptr, 0, bytes) };
        if result.is_ok() {
            *result = Err(cold(|| Error::InvalidBool {
                kernel: Some(desc.name),
                param,
                index,
                value,
            }));
        }
    }
}

/// The blocks of one launch in turn on this thread, with nothing shared (no
/// lock or atomic per block); as with a pool, every block runs and the
/// failure reported is the lowest block's.
///
/// # Safety
/// As for [`launch`](super::launch).
unsafe fn run_blocks_in_turn(
    call: &HostCall<'_>,
    watch: &watchdog::Watch<'_>,
    result: &mut Result<(), Error>,
) -> u64 {
    let mut peak = 0;
    let mut first: Option<(u32, String)> = None;
    for block in 0..call.blocks {
        // SAFETY: forwarded from this function's contract.
        let (message, ub_peak) = unsafe { run_block(block, call, watch, true) };
        peak = peak.max(ub_peak);
        if let Some(failure) = message
            && first.as_ref().is_none_or(|f| failure < *f)
        {
            first = Some(failure);
        }
    }
    if let Some(first) = first {
        *result = Err(launch_error(call.kernel, first));
    }
    peak
}

/// A launch's error from its lowest failing block, with its message.
fn launch_error(kernel: &'static str, (block, message): (u32, String)) -> Error {
    Error::Kernel {
        kernel,
        block,
        message,
    }
}

/// The blocks of one launch, shared by the threads that run them.
struct Blocks<'a> {
    call: &'a HostCall<'a>,
    watch: &'a watchdog::Watch<'a>,
    next: AtomicU32,
    failures: Mutex<Small<(u32, String)>>,
    peak: AtomicU64,
}

/// Runs blocks of `job` until none is left.
fn run_some_blocks(job: &Blocks<'_>) {
    loop {
        let block = job.next.fetch_add(1, Ordering::Relaxed);
        if block >= job.call.blocks {
            break;
        }
        // SAFETY: a `Blocks` is made only by `run_blocks`, under the
        // contract of `launch`, and lives until every thread has left it.
        let (message, ub_peak) = unsafe { run_block(block, job.call, job.watch, false) };
        job.peak.fetch_max(ub_peak, Ordering::Relaxed);
        if let Some(failure) = message {
            job.failures
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(failure);
        }
    }
}

/// The blocks of one launch, on the calling thread and as many of the
/// pool's workers as help (fewer when the process cannot start threads);
/// returns the largest Unified Buffer high-water mark of any block, and
/// sets `result` to the lowest failing block's error, if any. (Out-params,
/// not a returned `Result`: every launch would copy the error's space.)
///
/// # Safety
/// As for [`launch`](super::launch).
unsafe fn run_blocks(
    call: &HostCall<'_>,
    watch: &watchdog::Watch<'_>,
    result: &mut Result<(), Error>,
) -> u64 {
    let workers = host_threads().min(call.blocks as usize);
    if workers <= 1 {
        // SAFETY: forwarded from this function's contract.
        return unsafe { run_blocks_in_turn(call, watch, result) };
    }
    let job = Blocks {
        call,
        watch,
        next: AtomicU32::new(0),
        failures: Mutex::new(Small::new()),
        peak: AtomicU64::new(0),
    };
    // The calling thread is one of the workers.
    pool::run(&job, workers - 1, run_some_blocks);
    let failures = job.failures.into_inner().unwrap_or_else(|e| e.into_inner());
    // The lowest failing block, so a failure reads the same each run.
    if let Some(lowest) = failures.into_iter().min() {
        *result = Err(launch_error(call.kernel, lowest));
    }
    job.peak.into_inner()
}

#[cfg(test)]
mod tests {
    use crate::Device;
    use crate::abi::{Arg, BlockRule, DimDesc, Entries, HostLaunch, KernelDesc, Memory};
    use crate::launch::launch;
    use crate::shape::Sizes;

    /// Kernels built before interface v7 read the cancel word's low half
    /// as a flag, so no launch id may have it zero. Moves the process's
    /// ids forward to a batch that would end on a multiple of 2^32 and
    /// takes it on a fresh thread (retrying past batches other tests'
    /// threads take meanwhile).
    #[test]
    fn no_launch_id_has_a_zero_low_half() {
        use super::{LAUNCH_ID_BATCH, LAUNCHES, next_launch_id};
        use std::sync::atomic::Ordering;
        for k in 1..=64u64 {
            let start = (k << 32) - (LAUNCH_ID_BATCH - 1);
            if LAUNCHES.fetch_max(start, Ordering::Relaxed) > start {
                continue;
            }
            let ids: Vec<u64> =
                std::thread::spawn(|| (0..=LAUNCH_ID_BATCH).map(|_| next_launch_id()).collect())
                    .join()
                    .unwrap();
            assert!(ids.iter().all(|&id| id as u32 != 0), "{ids:?}");
            if ids[0] == start {
                // The batch's last id was skipped: the next comes from a
                // new batch.
                assert_eq!(ids[LAUNCH_ID_BATCH as usize - 2], (k << 32) - 1);
                assert_ne!(ids[LAUNCH_ID_BATCH as usize - 1], k << 32);
                return;
            }
        }
        panic!("no batch ending on a multiple of 2^32 was taken");
    }

    /// A host entry that writes 0 over the first word of its tiling.
    unsafe extern "C" fn writes_its_tiling(launch: *mut HostLaunch) -> i32 {
        // SAFETY: pypto-rt passes a record whose tiling holds
        // `tiling_bytes` bytes, lent to the blocks of this launch.
        unsafe {
            if (*launch).tiling_bytes >= 4 {
                (*launch).tiling.cast_mut().cast::<u32>().write(0);
            }
        }
        0
    }

    #[test]
    fn a_host_kernel_that_writes_its_tiling_is_an_error() {
        let host = Device::host();
        let mut out = [0.0f32; 3];
        let desc = KernelDesc {
            name: "scribbler",
            params: &["out"],
            dims: &[DimDesc {
                axes: &[(0, 0)],
                why: "the dim `N`",
            }],
            blocks: BlockRule::Count(1),
            multiples: &[],
            halves: &[],
        };
        let args = [Arg::Tensor {
            sizes: Sizes::new(&[3]).unwrap(),
            memory: Memory::raw(out.as_mut_ptr().cast(), 12, true, None, None),
            device: &host,
        }];
        let scribbler = Entries {
            host: writes_its_tiling,
            npu: &[],
        };
        // SAFETY: the entry writes only its tiling; `out` is 3 floats.
        let err = unsafe { launch(&desc, scribbler, &args) }.unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel `scribbler`: it wrote its tiling (the sizes and scalars pypto-rt passes it), \
             which a kernel may only read; on an NPU that write would change the tiling of its \
             later launches with the same sizes"
        );
        // A kernel that leaves it alone runs clean.
        unsafe extern "C" fn does_nothing(_: *mut HostLaunch) -> i32 {
            0
        }
        let quiet = Entries {
            host: does_nothing,
            npu: &[],
        };
        // SAFETY: the entry touches nothing.
        assert_eq!(unsafe { launch(&desc, quiet, &args) }, Ok(()));
    }

    /// Blocks that ran, a bit each.
    static RAN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// A host entry whose blocks 1 and 2 fail, each naming itself.
    unsafe extern "C" fn fails_in_blocks_1_and_2(launch: *mut HostLaunch) -> i32 {
        // SAFETY: pypto-rt passes a valid record whose `err` holds
        // `err_len` (1024) bytes.
        unsafe {
            let block = (*launch).block_idx;
            RAN.fetch_or(1 << block, std::sync::atomic::Ordering::SeqCst);
            (*launch).ub_peak = u64::from(block) * 100;
            if block == 1 || block == 2 {
                let text = format!("block {block} failed\0");
                std::ptr::copy_nonoverlapping(text.as_ptr(), (*launch).err.cast(), text.len());
                return 1;
            }
        }
        0
    }

    #[test]
    fn blocks_in_turn_all_run_and_the_lowest_failure_is_reported() {
        let tiling = [0u64; 1];
        let tensors = super::Tensors {
            pointers: &[],
            bytes: &[],
            tiling: &tiling,
            tiling_bytes: 0,
        };
        let mut copy = tiling;
        let timeout = crate::watchdog::launch_timeout().unwrap();
        let mut result = Ok(());
        let call = super::HostCall {
            kernel: "in_turn",
            entry: fails_in_blocks_1_and_2,
            blocks: 4,
            tensors: &tensors,
            tiling: copy.as_mut_ptr(),
            info: &[],
            launch_id: 1,
            sanitize: crate::Sanitize::OFF,
            model: std::ptr::null(),
        };
        let peak = crate::watchdog::watch_for("in_turn", timeout, 1, |watch| {
            // SAFETY: the entry reads nothing of the record but its block
            // and writes only its message buffer and UB peak.
            unsafe { super::run_blocks_in_turn(&call, watch, &mut result) }
        });
        assert_eq!(RAN.load(std::sync::atomic::Ordering::SeqCst), 0b1111);
        assert_eq!(peak, 300);
        assert_eq!(
            result,
            Err(crate::Error::Kernel {
                kernel: "in_turn",
                block: 1,
                message: "block 1 failed".to_owned()
            })
        );
    }
}
