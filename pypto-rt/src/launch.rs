//! The call path of generated wrappers: check what types cannot (dims that
//! must agree, sizes a kernel argument can carry, one device), build the
//! tiling data, and launch on the tensors' device.
//!
//! Generated code describes each kernel with a [`KernelDesc`] and calls
//! [`launch`] (both reach it through `crate::__private::v3`, `v2` and `v1`); of this
//! module, only [`with_host_blocks`], [`BLOCKS_VAR`], [`MAX_BLOCKS`] and
//! [`last_launch`] are for hand-written code.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, OnceLock};

use smallvec::SmallVec;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::acl::CopyKind;
use crate::device::MAX_TILINGS;
use crate::device::{Device, Npu};
use crate::error::{AxisSize, Error};
use crate::host_mem::{HostBuffer, ReadOnly};
use crate::npu_lib::NpuStub;
use crate::shape::Sizes;
use crate::stream::{StreamState, Uses};
use crate::watchdog;

/// Per-call lists stay on the stack for kernels of up to 8 tensors or dims,
/// so that a small launch does not allocate.
type Small<T> = SmallVec<[T; 8]>;

/// Most blocks a launch uses: the vector cores of an Atlas A2 (24 AI cores,
/// two vector units each). Kernels split their work over `GetBlockNum()`.
pub const MAX_BLOCKS: u32 = 48;

/// Forces the block count of every host launch of the process:
/// `PYPTO_BLOCKS=N`, `N` a whole number from 1 to [`MAX_BLOCKS`]. Read once,
/// at the first host launch; unset or empty, each launch uses the count its
/// kernel's block rule gives. Any other value makes every host launch fail
/// with [`Error::BlockCount`]. [`with_host_blocks`] overrides it on one
/// thread. NPU launches ignore it.
pub const BLOCKS_VAR: &str = "PYPTO_BLOCKS";

thread_local! {
    /// The block count [`with_host_blocks`] forces on this thread.
    static FORCED_BLOCKS: Cell<Option<u32>> = const { Cell::new(None) };
}

/// A forced block count, checked to be from 1 to [`MAX_BLOCKS`].
fn checked_blocks(setting: &'static str, value: &str) -> Result<u32, Error> {
    value
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_BLOCKS).contains(n))
        .ok_or_else(|| Error::BlockCount {
            setting,
            value: value.to_owned(),
        })
}

/// `PYPTO_BLOCKS` as a block count (`None`: unset or empty).
pub(crate) fn parse_blocks(value: Option<&str>) -> Result<Option<u32>, Error> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => checked_blocks(BLOCKS_VAR, v).map(Some),
    }
}

/// The block count a host launch is forced to, if any: this thread's
/// [`with_host_blocks`], else `PYPTO_BLOCKS`.
fn forced_host_blocks() -> Result<Option<u32>, Error> {
    if let Some(n) = FORCED_BLOCKS.with(Cell::get) {
        return Ok(Some(n));
    }
    static FROM_ENV: OnceLock<Result<Option<u32>, Error>> = OnceLock::new();
    FROM_ENV
        .get_or_init(|| {
            let value = std::env::var_os(BLOCKS_VAR);
            parse_blocks(value.as_deref().map(|v| v.to_string_lossy()).as_deref())
        })
        .clone()
}

/// Runs `f` with every host launch made on this thread forced to `blocks`
/// blocks, from 1 to [`MAX_BLOCKS`], whatever the kernel's block rule
/// would give; returns what `f` returns. For tests: kernels split their
/// work over `GetBlockNum()`, so every count must give the same numbers,
/// and blocks left with no work must do nothing.
///
/// - The override takes precedence over [`BLOCKS_VAR`] (`PYPTO_BLOCKS`),
///   and ends when `f` returns or unwinds; calls nest, the innermost wins.
/// - It applies to launches made on the calling thread only (not to
///   threads `f` starts), so parallel tests do not see each other's counts.
/// - A launch with no work (a zero-size axis) still launches nothing.
/// - NPU launches ignore it and use their kernel's count;
///   [`crate::last_launch`] reports the count a launch used.
///
/// # Errors
/// [`Error::BlockCount`] for a count outside 1 to [`MAX_BLOCKS`]; `f` is
/// not run then.
///
/// ```
/// let out = pypto_rt::with_host_blocks(3, || 42).unwrap();
/// assert_eq!(out, 42);
/// assert_eq!(
///     pypto_rt::with_host_blocks(0, || ()).unwrap_err().to_string(),
///     "pypto_rt::with_host_blocks: `0` is not a block count; use a whole number from 1 to 48"
/// );
/// ```
pub fn with_host_blocks<R>(blocks: u32, f: impl FnOnce() -> R) -> Result<R, Error> {
    let blocks = checked_blocks("pypto_rt::with_host_blocks", &blocks.to_string())?;
    /// Puts back the count that was forced before, even if `f` unwinds.
    struct Restore(Option<u32>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED_BLOCKS.with(|f| f.set(self.0));
        }
    }
    let _restore = Restore(FORCED_BLOCKS.with(|f| f.replace(Some(blocks))));
    Ok(f())
}

/// One argument of a call, in the kernel's param order.
pub enum Arg<'a> {
    /// A tensor.
    Tensor {
        /// Its sizes, checked against the kernel's dims.
        sizes: Sizes,
        /// Its memory, lent for the launch.
        memory: Memory<'a>,
        /// The device it lives on; every tensor of a call must share one.
        device: &'a Device,
    },
    /// A scalar's bits (see [`crate::DType::scalar_bits`]).
    Scalar(u64),
    /// A scalar the spec binds to a size of the call's tensors (`value:
    /// x.numel`): computed at launch, after the sizes are checked, and
    /// refused when it exceeds `max`, the largest value of its type
    /// `dtype` (a spec dtype name, for the message).
    Sized {
        /// Which size.
        of: SizeOf,
        /// Its type's largest value.
        max: u64,
        /// Its type's spec dtype name.
        dtype: &'static str,
    },
}

/// A size of a call's tensors, as a spec's size expressions name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeOf {
    /// `param.numel`: the element count of tensor param `param`.
    Numel {
        /// The param's index in call order.
        param: u8,
    },
    /// `param.N` (or `param.last`): the size of one axis.
    Axis {
        /// The param's index in call order.
        param: u8,
        /// The axis, counted from 0.
        axis: u8,
    },
}

/// Most blocks one launch may have when the spec sets the count (`blocks:`
/// of a `source:` kernel): the largest block dimension the NPU runtime
/// accepts.
pub const MAX_LAUNCH_BLOCKS: u32 = 65535;

/// A tensor argument's memory, as [`crate::Tensor`] lends it to a launch.
pub struct Memory<'a>(MemoryKind<'a>);

pub(crate) enum MemoryKind<'a> {
    /// A host input (bytes `offset..offset + bytes` of `buffer`, which
    /// views may share): read-only to the kernel; with its dtype's check
    /// for invalid bytes (`bool`), run after the launch in case the kernel
    /// wrote it all the same (read-only pages are off in release builds,
    /// and cover only a view's whole pages).
    HostInput {
        buffer: &'a HostBuffer,
        offset: usize,
        bytes: usize,
        first_invalid: fn(&[u8]) -> Option<(usize, u8)>,
    },
    /// A host output, with its dtype's check for invalid bytes (`bool`).
    /// Lent from `&mut`, so nothing else sees those bytes during the
    /// launch; the kernel and the checks after it write through its raw
    /// pointer.
    HostOutput {
        buffer: &'a HostBuffer,
        offset: usize,
        bytes: usize,
        first_invalid: fn(&[u8]) -> Option<(usize, u8)>,
    },
    /// Device memory on an NPU, or adopted host memory (no guard pages);
    /// carries its dtype's check for invalid bytes, run after a host
    /// launch (on inputs too: nothing keeps a kernel from writing adopted
    /// memory).
    Raw {
        ptr: *mut u8,
        bytes: u64,
        writable: bool,
        first_invalid: fn(&[u8]) -> Option<(usize, u8)>,
        /// Device memory: the queued work that uses it.
        uses: Option<&'a Uses>,
    },
}

impl<'a> Memory<'a> {
    pub(crate) fn host_input(
        buffer: &'a HostBuffer,
        offset: usize,
        bytes: usize,
        first_invalid: fn(&[u8]) -> Option<(usize, u8)>,
    ) -> Self {
        Memory(MemoryKind::HostInput {
            buffer,
            offset,
            bytes,
            first_invalid,
        })
    }

    /// The caller holds these bytes exclusively for the memory's life.
    pub(crate) fn host_output(
        buffer: &'a HostBuffer,
        offset: usize,
        bytes: usize,
        first_invalid: fn(&[u8]) -> Option<(usize, u8)>,
    ) -> Self {
        Memory(MemoryKind::HostOutput {
            buffer,
            offset,
            bytes,
            first_invalid,
        })
    }

    /// Device memory (with the queued work that uses it), or adopted host
    /// memory (an output is held exclusively by the caller for the
    /// memory's life).
    pub(crate) fn raw(
        ptr: *mut u8,
        bytes: u64,
        writable: bool,
        first_invalid: fn(&[u8]) -> Option<(usize, u8)>,
        uses: Option<&'a Uses>,
    ) -> Self {
        Memory(MemoryKind::Raw {
            ptr,
            bytes,
            writable,
            first_invalid,
            uses,
        })
    }

    fn address(&self) -> (*mut u8, u64) {
        match &self.0 {
            MemoryKind::HostInput {
                buffer,
                offset,
                bytes,
                ..
            }
            | MemoryKind::HostOutput {
                buffer,
                offset,
                bytes,
                ..
            } => (buffer.as_ptr().wrapping_add(*offset), *bytes as u64),
            MemoryKind::Raw { ptr, bytes, .. } => (*ptr, *bytes),
        }
    }
}

/// A kernel as the generated wrapper describes it.
#[derive(Debug)]
pub struct KernelDesc {
    /// The kernel's name in the spec.
    pub name: &'static str,
    /// Param names, in call order (tensors and scalars).
    pub params: &'static [&'static str],
    /// The dims: sets of axes that must agree.
    pub dims: &'static [DimDesc],
    /// How the call's sizes set the block count.
    pub blocks: BlockRule,
    /// Axes whose size must be a multiple of a number (e.g. attention's
    /// hidden size of its heads), when the type does not fix the size.
    pub multiples: &'static [Multiple],
    /// Pairs of axes where one must be twice the other.
    pub halves: &'static [Halves],
}

/// `big` must be exactly twice `small` (a split into two halves).
#[derive(Debug)]
pub struct Halves {
    /// (param index, axis) of the larger axis.
    pub big: (u8, u8),
    /// (param index, axis) of the axis `big` is twice.
    pub small: (u8, u8),
    /// Why, for the error message.
    pub why: &'static str,
}

/// `axis` must be a multiple of `of`.
#[derive(Debug)]
pub struct Multiple {
    /// (param index, axis) of the axis.
    pub axis: (u8, u8),
    /// The number its size must be a multiple of.
    pub of: u32,
    /// Why, for the error message.
    pub why: &'static str,
}

/// A set of axes that must have one size.
#[derive(Debug)]
pub struct DimDesc {
    /// (param index, axis) of every axis in the dim.
    pub axes: &'static [(u8, u8)],
    /// Why the axes agree, for error messages.
    pub why: &'static str,
}

/// How many blocks a launch uses, from the call's sizes; capped at
/// [`MAX_BLOCKS`]. Zero blocks means there is no work: nothing is launched.
/// On the host backend, [`with_host_blocks`] and [`BLOCKS_VAR`] can force
/// another count (1 to [`MAX_BLOCKS`]) for launches with work.
#[derive(Debug, Clone, Copy)]
pub enum BlockRule {
    /// One block per row: the product of all but the last axis of a param.
    Rows {
        /// The param's index in call order.
        param: u8,
    },
    /// One block per `per_block` elements of a param, rounded up.
    Elements {
        /// The param's index in call order.
        param: u8,
        /// Elements each block handles.
        per_block: u32,
    },
    /// `factor` blocks per index of the leading `axes` axes of a param.
    Leading {
        /// The param's index in call order.
        param: u8,
        /// How many leading axes.
        axes: u8,
        /// Blocks per index.
        factor: u32,
    },
    /// Exactly this many blocks (`blocks: 8` in a spec), not capped.
    Count(u32),
    /// As many blocks as a size of the call (`blocks: x.0`), up to
    /// [`MAX_LAUNCH_BLOCKS`]; not capped at [`MAX_BLOCKS`].
    Size(SizeOf),
}

/// One block's call record for a host entry; the C++ side declares the same
/// struct (`pypto_emu::HostLaunch` in `templates/include/pypto_emu/core.h`,
/// which asserts the same size and offsets).
#[repr(C)]
#[derive(Debug)]
pub struct HostLaunch {
    /// This block's index, from 0.
    pub block_idx: u32,
    /// The launch's block count.
    pub block_num: u32,
    /// Per tensor argument, in param order: its address.
    pub args: *const *mut c_void,
    /// Per tensor argument: its size in bytes.
    pub arg_bytes: *const u64,
    /// The number of tensor arguments (the length of `args` and `arg_bytes`).
    pub num_args: u32,
    /// The tiling data the kernel reads: the call's dim sizes, then its
    /// scalars.
    pub tiling: *const u8,
    /// The tiling's size in bytes.
    pub tiling_bytes: u64,
    /// Out: a buffer for the block's error message (NUL-terminated).
    pub err: *mut c_char,
    /// The size of `err` in bytes.
    pub err_len: u64,
    /// Written by the entry: the block's Unified Buffer high-water mark.
    pub ub_peak: u64,
    /// Per tensor argument: its mapping, name and writability.
    pub arg_info: *const HostArg,
    /// The kernel's name (not NUL-terminated), for fault reports.
    pub kernel: *const u8,
    /// The length of `kernel` in bytes.
    pub kernel_len: u64,
    /// Distinct for every launch of the process, so that the emulation
    /// can reject a `GlobalTensor` kept from an earlier one.
    pub launch_id: u64,
    /// Set non-zero when the launch has run past its timeout.
    pub cancel: *const AtomicU32,
    /// The launch's timeout in milliseconds; 0 for none.
    pub timeout_ms: u64,
    /// The sanitizer checks to run ([`crate::Sanitize::bits`]).
    pub sanitize: u32,
    /// Out: non-zero when the failure is block `fail_block - 1`'s (a
    /// memcheck overlap found by the launch's last block names the higher
    /// of the two blocks).
    pub fail_block: u32,
    /// The modelled NPU's cost table and receiver (null: not modelled).
    pub model: *const crate::model::ModelSink,
}

/// What the emulation knows of one tensor argument's memory
/// (`pypto_emu::HostArg`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HostArg {
    /// The tensor's whole mapping, guard pages included (0, 0 if none).
    pub map_begin: u64,
    pub map_end: u64,
    /// The param's name (not NUL-terminated).
    pub name: *const u8,
    pub name_len: u64,
    /// Non-zero for outputs.
    pub writable: u32,
    pub reserved: u32,
}

/// Asserts a record's size and the offset of every field at compile time,
/// each failure naming the field; a field left out of the list fails to
/// compile too. Also records the numbers in
/// [`LAYOUT`], which a unit test compares with `pypto_emu/core.h`'s
/// `static_assert`s.
macro_rules! layout {
    ($($ty:ident ($size:literal) { $($field:ident: $offset:literal),* $(,)? })*) => {
        $(
            const _: () = {
                assert!(
                    std::mem::size_of::<$ty>() == $size,
                    concat!(stringify!($ty), " is not ", stringify!($size),
                        " bytes; launch.rs and pypto_emu/core.h must agree on it")
                );
                $(assert!(
                    std::mem::offset_of!($ty, $field) == $offset,
                    concat!(stringify!($ty), "::", stringify!($field), " is not at byte ",
                        stringify!($offset), "; launch.rs and pypto_emu/core.h must agree on it")
                );)*
                // Every field is listed: rustc names one left out ("missing
                // field `…` in initializer").
                #[allow(unreachable_code)]
                let _ = || $ty { $($field: unreachable!()),* };
            };
        )*
        /// (struct, field or `sizeof`, bytes), as asserted above.
        #[cfg(test)]
        const LAYOUT: &[(&str, &str, usize)] = &[
            $(
                (stringify!($ty), "sizeof", $size),
                $((stringify!($ty), stringify!($field), $offset),)*
            )*
        ];
    };
}

// The layout `pypto_emu/core.h` asserts too, with the same numbers.
layout! {
    HostArg (40) {
        map_begin: 0,
        map_end: 8,
        name: 16,
        name_len: 24,
        writable: 32,
        reserved: 36,
    }
    HostLaunch (136) {
        block_idx: 0,
        block_num: 4,
        args: 8,
        arg_bytes: 16,
        num_args: 24,
        tiling: 32,
        tiling_bytes: 40,
        err: 48,
        err_len: 56,
        ub_peak: 64,
        arg_info: 72,
        kernel: 80,
        kernel_len: 88,
        launch_id: 96,
        cancel: 104,
        timeout_ms: 112,
        sanitize: 120,
        fail_block: 124,
        model: 128,
    }
}

/// The host entry of one compiled specialisation: runs one block; returns
/// 0, or non-zero with a message in `err`.
pub type HostEntry = unsafe extern "C" fn(launch: *mut HostLaunch) -> i32;

/// What a launch stub returns when a value of a `source:` kernel's
/// `tiling:` struct does not fit its field (pypto-build writes the same
/// number into the stub).
const TILING_RANGE_STATUS: u32 = 0x7074_0001;

/// The NPU launch stub of one compiled specialisation for one architecture
/// (compiled by bisheng): enqueues `kernel<<<block_num, nullptr, stream>>>`
/// with `args` (each tensor's device address, then the tiling's, then the
/// tiling's host copy, from which stubs of `source:` kernels take the
/// scalars they pass by value); returns 0.
pub type NpuEntry =
    unsafe extern "C" fn(block_num: u32, stream: *mut c_void, args: *mut *mut c_void) -> i32;

/// Everything compiled for one specialisation: the host entry, and one NPU
/// stub per architecture when the crate was built with CANN.
#[derive(Debug, Clone, Copy)]
pub struct Entries {
    /// The host entry, compiled with the Ascend C emulation.
    pub host: HostEntry,
    /// One launch stub per NPU architecture built for, each in the shared
    /// library of its architecture that the binary embeds (loaded on first
    /// use); empty without CANN.
    pub npu: &'static [NpuStub],
}

/// What the last launch on this thread did, for tests and tuning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchStats {
    /// Blocks launched (0 when there was no work).
    pub blocks: u32,
    /// The largest Unified Buffer high-water mark of any block, in bytes
    /// (host backend; the emulation measures it).
    pub ub_peak_bytes: u64,
    /// The variant a kernel with `variants:` chose for the call, by the
    /// name its spec gives it; `None` for other kernels.
    pub variant: Option<&'static str>,
}

thread_local! {
    static LAST_LAUNCH: Cell<Option<LaunchStats>> = const { Cell::new(None) };
}

/// The statistics of the last kernel launched from this thread.
pub fn last_launch() -> Option<LaunchStats> {
    LAST_LAUNCH.with(Cell::get)
}

/// Records which variant the launch just made on this thread was.
pub(crate) fn note_last_variant(variant: &'static str) {
    LAST_LAUNCH.with(|l| {
        if let Some(stats) = l.get() {
            l.set(Some(LaunchStats {
                variant: Some(variant),
                ..stats
            }));
        }
    });
}

/// What a launch checks of a call before anything else, in this order:
/// one device, the dims' axes agree, then the template's halvings and
/// multiples. Returns the device and the dims' sizes.
pub(crate) fn check_call<'a>(
    desc: &KernelDesc,
    args: &[Arg<'a>],
) -> Result<(&'a Device, Small<u32>), Error> {
    let device = one_device(desc, args)?;
    let dims = agreed_dims(desc, args)?;
    for h in desc.halves {
        let (big, small) = (axis_size(desc, args, h.big), axis_size(desc, args, h.small));
        if Some(big.size) != small.size.checked_mul(2) {
            return Err(Error::NotTwice {
                kernel: desc.name,
                big,
                small,
                why: h.why.to_owned(),
            });
        }
    }
    for m in desc.multiples {
        let axis = axis_size(desc, args, m.axis);
        if !axis.size.is_multiple_of(m.of as usize) {
            return Err(Error::NotMultiple {
                kernel: desc.name,
                axis,
                of: m.of,
                why: m.why.to_owned(),
            });
        }
    }
    Ok((device, dims))
}

/// Checks a call and runs it.
///
/// # Safety
/// `entry` must be the compiled kernel described by `desc`, taking the
/// tensors of `args` in order; each tensor pointer must be valid for its
/// sizes, and output tensors must not alias any other argument.
pub unsafe fn launch(desc: &KernelDesc, entries: Entries, args: &[Arg<'_>]) -> Result<(), Error> {
    let (device, dims) = check_call(desc, args)?;
    let blocks = block_count(desc, args)?;
    let scalars = scalar_words(desc, args)?;
    // A forced count is checked on every host launch, so that a bad
    // `PYPTO_BLOCKS` is reported even by launches with no work.
    let blocks = match device.as_npu() {
        None => match forced_host_blocks()? {
            Some(forced) if blocks > 0 => forced,
            _ => blocks,
        },
        Some(_) => blocks,
    };
    if blocks == 0 {
        check_outputs_written(desc, args)?;
        LAST_LAUNCH.with(|l| {
            l.set(Some(LaunchStats {
                blocks: 0,
                ub_peak_bytes: 0,
                variant: None,
            }))
        });
        return Ok(());
    }
    let tiling = tiling_words(&dims, &scalars);
    let (pointers, bytes): (Small<*mut c_void>, Small<u64>) = args
        .iter()
        .filter_map(|a| match a {
            Arg::Tensor { memory, .. } => {
                let (ptr, bytes) = memory.address();
                Some((ptr.cast::<c_void>(), bytes))
            }
            Arg::Scalar(_) | Arg::Sized { .. } => None,
        })
        .unzip();
    let tensors = Tensors {
        pointers: &pointers,
        bytes: &bytes,
        tiling: &tiling,
        tiling_bytes: tiling_len(&dims, &scalars),
    };
    let (result, ub_peak_bytes) = match device.as_npu() {
        None => {
            // A stream of an NPU named for host tensors is a mistake to
            // report, not to ignore.
            if let Some(stream) = crate::stream::current()
                && !stream.device().is_host()
            {
                return Err(wrong_stream(desc, device, &stream));
            }
            // SAFETY: forwarded from this function's contract.
            unsafe { run_on_host(desc, entries.host, blocks, &tensors, args) }
        }
        Some(npu) => {
            let entry = npu_entry(desc, entries, device, npu)?;
            let stream = launch_stream(desc, device, npu)?;
            let uses: Small<&Uses> = args
                .iter()
                .filter_map(|a| match a {
                    Arg::Tensor {
                        memory: Memory(MemoryKind::Raw { uses, .. }),
                        ..
                    } => *uses,
                    _ => None,
                })
                .collect();
            // SAFETY: forwarded from this function's contract; the tensors'
            // pointers are device addresses on `npu`.
            (
                unsafe { run_on_npu(npu, &stream, entry, blocks, &tensors, &uses) },
                0,
            )
        }
    };
    LAST_LAUNCH.with(|l| {
        l.set(Some(LaunchStats {
            blocks,
            ub_peak_bytes,
            variant: None,
        }))
    });
    result
}

/// Checks a call and runs it with a workspace: `workspace_bytes` of zeroed
/// scratch on the call's device, passed after the tensors of `args` (the
/// last name of `desc.params` is its). Kernels whose cube and vector cores
/// exchange tiles through GM take one, as Ascend C operators take theirs
/// from the framework.
///
/// # Safety
/// As [`launch`], for `args` followed by the workspace: `entries` must take
/// it as its last tensor.
pub unsafe fn launch_with_workspace<'a>(
    desc: &KernelDesc,
    entries: Entries,
    args: impl IntoIterator<Item = Arg<'a>>,
    workspace_bytes: u64,
) -> Result<(), Error> {
    let no_memory = || Error::OutOfMemory {
        bytes: std::mem::size_of::<Arg<'_>>(),
        reason: "no memory for a launch's arguments".to_owned(),
    };
    let mut given: Small<Arg<'a>> = Small::new();
    for arg in args {
        given.try_reserve(1).map_err(|_| no_memory())?;
        given.push(arg);
    }
    let device = one_device(desc, &given)?;
    let bytes = usize::try_from(workspace_bytes).map_err(|_| Error::OutOfMemory {
        bytes: usize::MAX,
        reason: format!("a workspace of {workspace_bytes} bytes is larger than the address space"),
    })?;
    let mut workspace = device.zeros::<u8, (usize,)>((bytes,))?;
    let mut all: Small<Arg<'_>> = Small::new();
    all.try_reserve(given.len() + 1).map_err(|_| no_memory())?;
    for arg in given {
        all.push(arg);
    }
    all.push(workspace.output_arg());
    // SAFETY: forwarded from this function's contract; the workspace is
    // this call's own, so it aliases nothing.
    unsafe { launch(desc, entries, &all) }
}

fn one_device<'a>(desc: &KernelDesc, args: &[Arg<'a>]) -> Result<&'a Device, Error> {
    let mut first: Option<&Device> = None;
    for (i, arg) in args.iter().enumerate() {
        if let Arg::Tensor { device, .. } = arg {
            match first {
                None => first = Some(device),
                Some(d) if d != *device => {
                    return Err(Error::WrongDevice {
                        kernel: desc.name,
                        param: desc.params[i],
                        expected: d.to_string(),
                        actual: device.to_string(),
                    });
                }
                Some(_) => {}
            }
        }
    }
    first.ok_or_else(|| Error::Backend(format!("kernel `{}` has no tensor arguments", desc.name)))
}

pub(crate) fn axis_size(desc: &KernelDesc, args: &[Arg<'_>], (param, axis): (u8, u8)) -> AxisSize {
    let size = match &args[usize::from(param)] {
        Arg::Tensor { sizes, .. } => sizes[usize::from(axis)],
        Arg::Scalar(_) | Arg::Sized { .. } => 0,
    };
    AxisSize {
        param: desc.params[usize::from(param)],
        axis: usize::from(axis),
        size,
    }
}

/// The size of every dim, after checking that its axes agree and that it
/// fits the `uint32_t` the kernel receives.
fn agreed_dims(desc: &KernelDesc, args: &[Arg<'_>]) -> Result<Small<u32>, Error> {
    desc.dims
        .iter()
        .map(|dim| {
            let first = axis_size(desc, args, dim.axes[0]);
            for &axis in &dim.axes[1..] {
                let other = axis_size(desc, args, axis);
                if other.size != first.size {
                    return Err(Error::DimDisagreement {
                        kernel: desc.name,
                        why: dim.why.to_owned(),
                        first,
                        second: other,
                    });
                }
            }
            u32::try_from(first.size).map_err(|_| Error::SizeOverflow {
                kernel: Some(desc.name),
                detail: format!(
                    "{first}, more than the {} a kernel's `uint32_t` size argument carries",
                    u32::MAX
                ),
            })
        })
        .collect()
}

/// The sizes of tensor param `param` (none for a scalar).
fn sizes_of(args: &[Arg<'_>], param: u8) -> Sizes {
    match args.get(usize::from(param)) {
        Some(Arg::Tensor { sizes, .. }) => *sizes,
        _ => Sizes::new(&[]).expect("empty sizes"),
    }
}

/// The value of a size expression for this call. Element counts already
/// passed the check made when their tensors were created, so they fit
/// `usize`.
fn size_of(args: &[Arg<'_>], of: SizeOf) -> u64 {
    match of {
        SizeOf::Numel { param } => sizes_of(args, param).iter().product::<usize>() as u64,
        SizeOf::Axis { param, axis } => sizes_of(args, param)
            .get(usize::from(axis))
            .map_or(0, |&n| n as u64),
    }
}

/// `x.numel` or `x.1`, as the spec wrote it.
fn describe_size(desc: &KernelDesc, of: SizeOf) -> String {
    match of {
        SizeOf::Numel { param } => format!("{}.numel", desc.params[usize::from(param)]),
        SizeOf::Axis { param, axis } => format!("{}.{axis}", desc.params[usize::from(param)]),
    }
}

/// The product of `sizes`, or `None` when it overflows `u64`.
fn product(sizes: &[usize]) -> Option<u64> {
    sizes
        .iter()
        .try_fold(1u64, |acc, &s| acc.checked_mul(s as u64))
}

/// The kernel's block rule, as a phrase for messages.
fn describe_rule(desc: &KernelDesc) -> String {
    let name = |param: u8| desc.params.get(usize::from(param)).copied().unwrap_or("?");
    match desc.blocks {
        BlockRule::Rows { param } => format!("one block per row of `{}`", name(param)),
        BlockRule::Elements { param, per_block } => {
            format!("one block per {per_block} elements of `{}`", name(param))
        }
        BlockRule::Leading {
            param,
            axes,
            factor,
        } => {
            let axes = if axes == 1 {
                "axis".to_owned()
            } else {
                format!("{axes} axes")
            };
            let times = if factor == 1 {
                String::new()
            } else {
                format!(", times {factor}")
            };
            format!(
                "one block per index of the leading {axes} of `{}`{times}",
                name(param)
            )
        }
        BlockRule::Count(n) => format!("`blocks: {n}`"),
        BlockRule::Size(of) => format!("`blocks: {}`", describe_size(desc, of)),
    }
}

/// The launch's block count from its rule, capped at [`MAX_BLOCKS`] (or,
/// for `blocks:` of a spec, at [`MAX_LAUNCH_BLOCKS`]); 0 when the rule's
/// param has no elements. Every product is checked: a count that would
/// overflow is an error naming the kernel and its rule, in every build.
fn block_count(desc: &KernelDesc, args: &[Arg<'_>]) -> Result<u32, Error> {
    let sizes = |param: u8| sizes_of(args, param);
    let too_many = |what: String| Error::SizeOverflow {
        kernel: Some(desc.name),
        detail: format!(
            "its block rule ({}) asks for {what} blocks, more than a launch can count",
            describe_rule(desc)
        ),
    };
    let work: u64 = match desc.blocks {
        BlockRule::Rows { param } => {
            let s = sizes(param);
            match s.split_last() {
                Some((_, rows)) if !s.contains(&0) => {
                    product(rows).ok_or_else(|| too_many(format!("the product of {rows:?}")))?
                }
                _ => 0,
            }
        }
        BlockRule::Elements { param, per_block } => {
            if per_block == 0 {
                return Err(Error::Backend(format!(
                    "kernel `{}`: its block rule ({}) divides by 0",
                    desc.name,
                    describe_rule(desc)
                )));
            }
            let s = sizes(param);
            product(&s)
                .ok_or_else(|| too_many(format!("the product of {:?} / {per_block}", &*s)))?
                .div_ceil(u64::from(per_block))
        }
        BlockRule::Leading {
            param,
            axes,
            factor,
        } => {
            let s = sizes(param);
            let Some(leading) = s.get(..usize::from(axes)) else {
                return Err(Error::Backend(format!(
                    "kernel `{}`: its block rule ({}) names more axes than `{}` has ({})",
                    desc.name,
                    describe_rule(desc),
                    desc.params[usize::from(param)],
                    s.len()
                )));
            };
            if s.contains(&0) {
                0
            } else {
                product(leading)
                    .and_then(|lead| lead.checked_mul(u64::from(factor)))
                    .ok_or_else(|| too_many(format!("{} × {factor}", leading_text(leading))))?
            }
        }
        BlockRule::Count(n) => return Ok(n),
        BlockRule::Size(of) => {
            let n = size_of(args, of);
            return u32::try_from(n)
                .ok()
                .filter(|&n| n <= MAX_LAUNCH_BLOCKS)
                .ok_or_else(|| Error::SizeOverflow {
                    kernel: Some(desc.name),
                    detail: format!(
                        "`blocks: {}` asks for {n} blocks; a launch has at most \
                         {MAX_LAUNCH_BLOCKS}",
                        describe_size(desc, of)
                    ),
                });
        }
    };
    Ok(u32::try_from(work).unwrap_or(u32::MAX).min(MAX_BLOCKS))
}

/// Leading sizes as a product for messages: `8589934592` or `4 × 3`.
fn leading_text(leading: &[usize]) -> String {
    match product(leading) {
        Some(n) if leading.len() == 1 => n.to_string(),
        _ => leading
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(" × "),
    }
}

/// A launch with no blocks writes no output: refused when an output has
/// elements, which would come back unwritten.
fn check_outputs_written(desc: &KernelDesc, args: &[Arg<'_>]) -> Result<(), Error> {
    for (i, arg) in args.iter().enumerate() {
        let Arg::Tensor { sizes, memory, .. } = arg else {
            continue;
        };
        let output = matches!(
            memory.0,
            MemoryKind::HostOutput { .. } | MemoryKind::Raw { writable: true, .. }
        );
        let elements = sizes.num_elements().unwrap_or(usize::MAX);
        if output && elements > 0 {
            return Err(Error::NoBlocks {
                kernel: desc.name,
                rule: describe_rule(desc),
                output: desc.params[i],
                elements,
            });
        }
    }
    Ok(())
}

/// Every scalar argument's bits, in param order; sizes bound to scalars
/// are computed here and must fit their type.
fn scalar_words(desc: &KernelDesc, args: &[Arg<'_>]) -> Result<Small<u64>, Error> {
    let mut words = Small::new();
    for (i, arg) in args.iter().enumerate() {
        match *arg {
            Arg::Tensor { .. } => {}
            Arg::Scalar(bits) => words.push(bits),
            Arg::Sized { of, max, dtype } => {
                let value = size_of(args, of);
                if value > max {
                    return Err(Error::SizeOverflow {
                        kernel: Some(desc.name),
                        detail: format!(
                            "`{}` = `{}` = {value}, more than its {dtype} holds ({max})",
                            desc.params[i],
                            describe_size(desc, of)
                        ),
                    });
                }
                words.push(value);
            }
        }
    }
    Ok(words)
}

/// The tiling data a kernel reads: `uint32_t dim[N]` then, 8-aligned,
/// `uint64_t scalar[M]`, native-endian, as the generated C++ struct lays it
/// out. Held in `u64` words so that the kernel's reads are aligned.
fn tiling_words(dims: &[u32], scalars: &[u64]) -> Small<u64> {
    let mut words: Small<u64> = dims
        .chunks(2)
        .map(|pair| {
            let mut bytes = [0u8; 8];
            for (i, d) in pair.iter().enumerate() {
                bytes[4 * i..4 * i + 4].copy_from_slice(&d.to_ne_bytes());
            }
            u64::from_ne_bytes(bytes)
        })
        .collect();
    words.extend_from_slice(scalars);
    words
}

/// The size of the C++ tiling struct: no padding after the dims when there
/// are no scalars.
fn tiling_len(dims: &[u32], scalars: &[u64]) -> u64 {
    let dim_bytes = 4 * dims.len() as u64;
    if scalars.is_empty() {
        dim_bytes
    } else {
        dim_bytes.next_multiple_of(8) + 8 * scalars.len() as u64
    }
}

/// The launch's memory, shared with the block threads.
struct Tensors<'a> {
    pointers: &'a [*mut c_void],
    bytes: &'a [u64],
    tiling: &'a [u64],
    tiling_bytes: u64,
}

/// What every block of one host launch shares besides the tensors.
struct HostCall<'a> {
    tensors: &'a Tensors<'a>,
    /// The launch's own copy of the tiling, lent to its blocks through
    /// this pointer (and nothing else) for the launch.
    tiling: *mut u64,
    info: &'a [HostArg],
    kernel: &'static str,
    launch_id: u64,
    watch: &'a watchdog::Watch,
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
/// As for [`launch`].
unsafe fn run_block(
    entry: HostEntry,
    block: u32,
    blocks: u32,
    call: &HostCall<'_>,
) -> (Option<(u32, String)>, u64) {
    // Written by the entry only on failure, so it is not zeroed per launch.
    let mut message = std::mem::MaybeUninit::<[u8; 1024]>::uninit();
    let tensors = call.tensors;
    let mut record = HostLaunch {
        block_idx: block,
        block_num: blocks,
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
        cancel: call.watch.cancel_flag(),
        timeout_ms: call.watch.timeout_ms(),
        sanitize: call.sanitize.bits(),
        fail_block: 0,
        model: call.model,
    };
    call.watch.block_started(block);
    // SAFETY: `entry` is the compiled kernel for these arguments (the
    // caller's contract); the record's pointers are valid for the lengths
    // it states.
    let status = unsafe { entry(&mut record) };
    call.watch.block_finished(block);
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

/// Launch ids: every launch of the process gets its own, from 1.
static LAUNCHES: AtomicU64 = AtomicU64::new(1);

/// Runs every block on a pool of host threads; returns the result and the
/// largest Unified Buffer high-water mark of any block. Inputs are
/// read-only while it runs; afterwards, every tensor's front guard bytes
/// and every `bool` output's values are checked.
///
/// # Safety
/// As for [`launch`].
unsafe fn run_on_host(
    desc: &KernelDesc,
    entry: HostEntry,
    blocks: u32,
    tensors: &Tensors<'_>,
    args: &[Arg<'_>],
) -> (Result<(), Error>, u64) {
    let sanitize = match crate::sanitize::current() {
        // A timing-only profile computes nothing for the checks to watch.
        Ok(_) if crate::model::timing_only() => crate::Sanitize::OFF,
        Ok(checks) => checks,
        Err(e) => return (Err(e), 0),
    };
    let watch = match watchdog::watch(desc.name) {
        Ok(watch) => watch,
        Err(e) => return (Err(e), 0),
    };
    let mut info: Small<HostArg> = Small::new();
    let mut read_only: Small<ReadOnly<'_>> = Small::new();
    // The inputs' bytes: the modelled NPU reads them from HBM the first time.
    let mut input_bytes = 0u64;
    for (i, arg) in args.iter().enumerate() {
        let Arg::Tensor { memory, .. } = arg else {
            continue;
        };
        let name = desc.params[i];
        let (buffer, writable) = match &memory.0 {
            MemoryKind::HostInput {
                buffer,
                offset,
                bytes,
                ..
            } => {
                read_only.push(buffer.read_only(*offset, *bytes));
                input_bytes = input_bytes.saturating_add(*bytes as u64);
                (Some(*buffer), 0)
            }
            MemoryKind::HostOutput { buffer, .. } => (Some(*buffer), 1),
            MemoryKind::Raw {
                writable, bytes, ..
            } => {
                if !*writable {
                    input_bytes = input_bytes.saturating_add(*bytes);
                }
                (None, u32::from(*writable))
            }
        };
        let (map_begin, map_end) = buffer.map_or((0, 0), HostBuffer::mapping);
        info.push(HostArg {
            map_begin: map_begin as u64,
            map_end: map_end as u64,
            name: name.as_ptr(),
            name_len: name.len() as u64,
            writable,
            reserved: 0,
        });
    }
    // The blocks read a copy of the tiling made for this launch: one that
    // writes it (a raw `GM_ADDR` store) is found when the launch is over.
    let mut tiling: Small<u64> = tensors.tiling.iter().copied().collect();
    let model = match crate::model::begin(blocks, input_bytes) {
        Ok(model) => model,
        Err(e) => return (Err(e), 0),
    };
    let call = HostCall {
        tensors,
        tiling: tiling.as_mut_ptr(),
        info: &info,
        kernel: desc.name,
        launch_id: LAUNCHES.fetch_add(1, Ordering::Relaxed),
        watch: &watch,
        sanitize,
        model: model.as_ref().map_or(std::ptr::null(), |m| m.sink()),
    };
    // SAFETY: forwarded from this function's contract.
    let (mut result, peak) = unsafe { run_blocks(desc.name, entry, blocks, &call) };
    if let Some(model) = model
        && result.is_ok()
        && let Err(e) = crate::model::finish(model, desc.name, blocks)
    {
        result = Err(e);
    }
    drop(read_only);
    drop(watch);
    if result.is_ok() && tiling[..] != *tensors.tiling {
        result = Err(Error::TilingWritten { kernel: desc.name });
    }
    // What no guard page could stop: writes just before a tensor's start,
    // and bytes that are not a `bool` in a bool tensor (an output, or an
    // input the kernel wrote all the same). Checked even after a failed
    // launch, so that no tensor is left holding them.
    for (i, arg) in args.iter().enumerate() {
        let Arg::Tensor { memory, .. } = arg else {
            continue;
        };
        let param = desc.params[i];
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
            } => (*buffer, *offset, *bytes, Some(*first_invalid)),
            MemoryKind::Raw {
                ptr,
                bytes,
                first_invalid,
                ..
            } => {
                // Adopted host memory: no guard pages, but no invalid
                // `bool` either.
                let bytes = *bytes as usize;
                if bytes == 0 {
                    continue;
                }
                // SAFETY: host memory of `bytes` lent to this launch, which
                // has ended; an output is held exclusively, and an input's
                // bytes are changed only when the kernel already changed
                // them during the launch (the check reads, and writes only
                // invalid `bool`s back to `false`).
                unsafe {
                    check_output_bytes(*ptr, bytes, *first_invalid, desc, param, &mut result)
                };
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
                result = Err(Error::OutOfBounds {
                    kernel: desc.name,
                    param,
                    before,
                });
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
                    param,
                    &mut result,
                )
            };
        }
    }
    (result, peak)
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
            *result = Err(Error::InvalidBool {
                kernel: Some(desc.name),
                param,
                index,
                value,
            });
        }
    }
}

/// The blocks of one launch, on the calling thread and as many pool
/// threads as help (fewer when the process cannot start threads).
///
/// # Safety
/// As for [`launch`].
unsafe fn run_blocks(
    kernel: &'static str,
    entry: HostEntry,
    blocks: u32,
    call: &HostCall<'_>,
) -> (Result<(), Error>, u64) {
    let next = AtomicU32::new(0);
    let failures: Mutex<Small<(u32, String)>> = Mutex::new(Small::new());
    let peak = AtomicU64::new(0);
    let workers = host_threads().min(blocks as usize);
    let work = || {
        loop {
            let block = next.fetch_add(1, Ordering::Relaxed);
            if block >= blocks {
                break;
            }
            // SAFETY: forwarded from this function's contract.
            let (message, ub_peak) = unsafe { run_block(entry, block, blocks, call) };
            peak.fetch_max(ub_peak, Ordering::Relaxed);
            if let Some(failure) = message {
                failures
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(failure);
            }
        }
    };
    if workers <= 1 {
        work();
    } else {
        std::thread::scope(|s| {
            // The calling thread is one of the workers. A thread that cannot
            // be started (a process at its thread limit) leaves its blocks
            // to the others.
            for _ in 1..workers {
                if std::thread::Builder::new().spawn_scoped(s, work).is_err() {
                    break;
                }
            }
            work();
        });
    }
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    // Report the lowest failing block, so a failure reads the same each run.
    failures.sort();
    let result = match failures.into_iter().next() {
        None => Ok(()),
        Some((block, message)) => Err(Error::Kernel {
            kernel,
            block,
            message,
        }),
    };
    (result, peak.into_inner())
}

/// The stub compiled for the architecture of `npu`.
fn npu_entry(
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
fn launch_stream(desc: &KernelDesc, device: &Device, npu: &Npu) -> Result<Arc<StreamState>, Error> {
    let Some(stream) = crate::stream::current() else {
        return Ok(npu.default_stream.clone());
    };
    match stream.state() {
        Some(state) if state.device == npu.index => Ok(state.clone()),
        _ => Err(wrong_stream(desc, device, &stream)),
    }
}

/// A call on `device` inside `with_stream` of a stream of another device.
fn wrong_stream(desc: &KernelDesc, device: &Device, stream: &crate::Stream) -> Error {
    Error::WrongStream {
        what: format!("kernel `{}`", desc.name),
        actual: device.to_string(),
        stream: stream.device().to_string(),
    }
}

/// The device copy of `tiling` for the kernel whose launch stub is
/// `entry`: from the device's cache when this kernel was launched with
/// these words before, else copied once and kept. Copies are per kernel, so
/// a kernel that writes its tiling changes no other kernel's (see
/// `TilingCache`). Past [`MAX_TILINGS`] copies, a copy for this launch
/// alone, to be freed by `stream` when it has passed the launch (the
/// second value).
fn device_tiling(
    npu: &Npu,
    entry: NpuEntry,
    tiling: &[u64],
    bytes: usize,
) -> Result<(*mut c_void, bool), Error> {
    let kernel = entry as usize;
    let mut cache = npu.tilings.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&ptr) = cache.entries.get(&kernel).and_then(|k| k.get(tiling)) {
        return Ok((ptr as *mut c_void, false));
    }
    let ptr = npu.acl.malloc(bytes)?;
    if !tiling.is_empty() {
        // SAFETY: `ptr` holds `bytes` of fresh device memory, at least the
        // size of the words copied; no queued work uses it yet.
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
    if cache.count >= MAX_TILINGS {
        return Ok((ptr, true));
    }
    let mut key = Vec::new();
    if key.try_reserve_exact(tiling.len()).is_ok() {
        key.extend_from_slice(tiling);
        cache
            .entries
            .entry(kernel)
            .or_default()
            .insert(key.into_boxed_slice(), ptr as usize);
        cache.count += 1;
        Ok((ptr, false))
    } else {
        Ok((ptr, true))
    }
}

/// Queues the kernel on `stream` and returns: the tiling comes from the
/// device's cache, the stream waits (through events) for work on other
/// streams that uses the same tensors, and each tensor notes the launch.
///
/// # Safety
/// As for [`launch`], with device addresses on `npu`.
unsafe fn run_on_npu(
    npu: &Npu,
    stream: &Arc<StreamState>,
    entry: NpuEntry,
    blocks: u32,
    tensors: &Tensors<'_>,
    uses: &[&Uses],
) -> Result<(), Error> {
    npu.enter()?;
    // A launch with no dims and no scalars still passes a (1-word) tiling.
    let tiling_bytes = std::mem::size_of_val(tensors.tiling).max(8);
    let (tiling, own_tiling) = device_tiling(npu, entry, tensors.tiling, tiling_bytes)?;
    // One event per other stream with queued work on these tensors.
    let mut others = Vec::new();
    for u in uses {
        u.pending_elsewhere(stream, &mut others);
    }
    let waits = others
        .iter()
        .map(|other| other.record())
        .collect::<Result<Vec<_>, Error>>()?;
    let mut args: Small<*mut c_void> = tensors.pointers.iter().copied().collect();
    args.push(tiling);
    // Read by the stub on the host, before it returns.
    args.push(tensors.tiling.as_ptr().cast_mut().cast());
    let queued = stream.submit(waits, |raw| {
        // SAFETY: `entry` is the stub compiled for this kernel and this
        // device's architecture (the caller's contract); `args` holds one
        // device address per tensor param, then the tiling's; the memory
        // stays allocated until the stream has passed the launch (each
        // tensor notes it below, and the tiling is cached or freed later).
        let status = unsafe { entry(blocks, raw, args.as_mut_ptr()) };
        if status != 0 {
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
        Ok(())
    });
    let seq = match queued {
        Ok(seq) => seq,
        Err(e) => {
            if own_tiling {
                // SAFETY: not queued, so nothing uses it.
                let _ = unsafe { npu.acl.free(tiling) };
            }
            return Err(e);
        }
    };
    for u in uses {
        u.used_by(stream, seq);
    }
    if own_tiling {
        let once = Uses::default();
        once.used_by(stream, seq);
        once.free_when_idle(tiling);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn sizes_bound_to_scalars_must_fit_their_type() {
        let host = Device::host();
        let tensor = |sizes: &[usize]| Arg::Tensor {
            sizes: Sizes::new(sizes).unwrap(),
            memory: Memory::raw(std::ptr::null_mut(), 0, false, |_| None, None),
            device: &host,
        };
        let desc = KernelDesc {
            name: "k",
            params: &["x", "n", "s"],
            dims: &[],
            blocks: BlockRule::Size(SizeOf::Axis { param: 0, axis: 1 }),
            multiples: &[],
            halves: &[],
        };
        let sized = |max| Arg::Sized {
            of: SizeOf::Numel { param: 0 },
            max,
            dtype: "DT_UINT8",
        };
        let args = [tensor(&[3, 85]), sized(255), Arg::Scalar(7)];
        assert_eq!(scalar_words(&desc, &args).unwrap().as_slice(), &[255, 7]);
        assert_eq!(block_count(&desc, &args), Ok(85));
        let args = [tensor(&[4, 64]), sized(255), Arg::Scalar(7)];
        assert_eq!(
            scalar_words(&desc, &args).unwrap_err().to_string(),
            "kernel `k`: size overflow: `n` = `x.numel` = 256, more than its DT_UINT8 holds (255)"
        );
    }

    /// A tensor argument of these sizes whose memory is never touched (the
    /// checks before a launch do not read it).
    fn unread<'a>(host: &'a Device, sizes: &[usize], output: bool) -> Arg<'a> {
        Arg::Tensor {
            sizes: Sizes::new(sizes).unwrap(),
            memory: Memory::raw(std::ptr::null_mut(), 0, output, |_| None, None),
            device: host,
        }
    }

    fn spread(blocks: BlockRule) -> KernelDesc {
        KernelDesc {
            name: "spread",
            params: &["x", "out"],
            dims: &[],
            blocks,
            multiples: &[],
            halves: &[],
        }
    }

    // Plain assertions on the counts: nothing here relies on a debug
    // build's overflow panic, so release builds check the same.
    #[test]
    fn block_rules_that_overflow_are_errors_in_every_build() {
        let host = Device::host();
        let times_max = spread(BlockRule::Leading {
            param: 0,
            axes: 1,
            factor: u32::MAX,
        });
        // 2^33 × (2^32 - 1) wraps to 2^64 - 2^33 unchecked (48 blocks).
        let args = [
            unread(&host, &[1 << 33, 1], false),
            unread(&host, &[4], true),
        ];
        assert_eq!(
            block_count(&times_max, &args).unwrap_err().to_string(),
            "kernel `spread`: size overflow: its block rule (one block per index of the leading \
             axis of `x`, times 4294967295) asks for 8589934592 × 4294967295 blocks, more than a \
             launch can count"
        );
        // 2^17 · 2^17 × 2^30 wraps to exactly 0 unchecked: a launch of no
        // blocks that returned Ok with `out` never written.
        let wraps = spread(BlockRule::Leading {
            param: 0,
            axes: 2,
            factor: 1 << 30,
        });
        let args = [
            unread(&host, &[1 << 17, 1 << 17, 3], false),
            unread(&host, &[4], true),
        ];
        assert_eq!(
            block_count(&wraps, &args).unwrap_err(),
            Error::SizeOverflow {
                kernel: Some("spread"),
                detail: "its block rule (one block per index of the leading 2 axes of `x`, \
                         times 1073741824) asks for 131072 × 131072 × 1073741824 blocks, more \
                         than a launch can count"
                    .to_owned()
            }
        );
        // The launch reports it before anything runs.
        // SAFETY: the call fails before any memory is used.
        let err = unsafe { launch(&wraps, entries(), &args) }.unwrap_err();
        assert!(matches!(err, Error::SizeOverflow { .. }), "{err:?}");
        assert!(!RAN.load(Ordering::SeqCst));
        // Counts that fit: capped at the cores, 0 for an empty param.
        let small =
            |sizes: &[usize], rule| block_count(&spread(rule), &[unread(&host, sizes, false)]);
        let leading = |axes, factor| BlockRule::Leading {
            param: 0,
            axes,
            factor,
        };
        assert_eq!(small(&[5, 1], leading(1, u32::MAX)), Ok(MAX_BLOCKS));
        assert_eq!(small(&[2, 7], leading(1, 3)), Ok(6));
        assert_eq!(small(&[2, 7, 1], leading(2, 3)), Ok(42));
        assert_eq!(small(&[1 << 33, 0], leading(1, u32::MAX)), Ok(0));
        let rows = BlockRule::Rows { param: 0 };
        assert_eq!(small(&[3, 5, 7], rows), Ok(15));
        assert_eq!(small(&[3, 0], rows), Ok(0));
        let per_4 = BlockRule::Elements {
            param: 0,
            per_block: 4,
        };
        assert_eq!(small(&[3, 3], per_4), Ok(3));
        assert_eq!(small(&[usize::MAX, 0], per_4), Ok(0));
    }

    static RAN: AtomicBool = AtomicBool::new(false);

    /// A host entry that records that it ran.
    unsafe extern "C" fn records_run(_: *mut HostLaunch) -> i32 {
        RAN.store(true, Ordering::SeqCst);
        0
    }

    fn entries() -> Entries {
        Entries {
            host: records_run,
            npu: &[],
        }
    }

    #[test]
    fn no_launch_of_zero_blocks_leaves_an_output_unwritten() {
        let host = Device::host();
        let rows = spread(BlockRule::Rows { param: 0 });
        // `x` has no rows' worth of work, but `out` has 3 elements.
        let args = [unread(&host, &[3, 0], false), unread(&host, &[3], true)];
        // SAFETY: the call fails before any memory is used.
        let err = unsafe { launch(&rows, entries(), &args) }.unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel `spread`: its block rule (one block per row of `x`) gives 0 blocks for \
             these sizes, but output `out` has 3 elements, which no block would write"
        );
        assert_eq!(
            err,
            Error::NoBlocks {
                kernel: "spread",
                rule: "one block per row of `x`".to_owned(),
                output: "out",
                elements: 3
            }
        );
        // The same with a count forced on the host, and with a spec's
        // `blocks: x.0`.
        // SAFETY (both): as above.
        let forced = with_host_blocks(4, || unsafe { launch(&rows, entries(), &args) }).unwrap();
        assert_eq!(forced.unwrap_err(), err);
        let by_size = spread(BlockRule::Size(SizeOf::Axis { param: 0, axis: 1 }));
        assert_eq!(
            unsafe { launch(&by_size, entries(), &args) }
                .unwrap_err()
                .to_string(),
            "kernel `spread`: its block rule (`blocks: x.1`) gives 0 blocks for these sizes, but \
             output `out` has 3 elements, which no block would write"
        );
        // No work and no output elements: nothing to launch, and Ok.
        let empty = [unread(&host, &[0, 4], false), unread(&host, &[0], true)];
        // SAFETY: nothing is launched.
        assert_eq!(unsafe { launch(&rows, entries(), &empty) }, Ok(()));
        assert_eq!(last_launch().unwrap().blocks, 0);
        assert!(!RAN.load(Ordering::SeqCst));
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
            memory: Memory::raw(out.as_mut_ptr().cast(), 12, true, |_| None, None),
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

    #[test]
    fn block_counts_parse() {
        assert_eq!(parse_blocks(None), Ok(None));
        assert_eq!(parse_blocks(Some(" ")), Ok(None));
        assert_eq!(parse_blocks(Some("1")), Ok(Some(1)));
        assert_eq!(parse_blocks(Some(" 48 ")), Ok(Some(48)));
        for bad in ["0", "49", "-1", "3.0", "many", "4294967296"] {
            let err = parse_blocks(Some(bad)).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "PYPTO_BLOCKS: `{bad}` is not a block count; use a whole number from 1 to 48"
                )
            );
        }
    }

    #[test]
    fn forced_counts_nest_and_end_with_their_scope() {
        let forced = || FORCED_BLOCKS.with(Cell::get);
        assert_eq!(forced(), None);
        let inner = with_host_blocks(5, || {
            let nested = with_host_blocks(48, forced).unwrap();
            (nested, forced())
        });
        assert_eq!(inner, Ok((Some(48), Some(5))));
        assert_eq!(forced(), None);
        let unwound = std::panic::catch_unwind(|| with_host_blocks(2, || panic!("in f")));
        assert!(unwound.is_err());
        assert_eq!(forced(), None);
        for bad in [0, 49, u32::MAX] {
            let mut ran = false;
            let err = with_host_blocks(bad, || ran = true).unwrap_err();
            assert!(!ran);
            assert_eq!(
                err,
                Error::BlockCount {
                    setting: "pypto_rt::with_host_blocks",
                    value: bad.to_string()
                }
            );
        }
    }

    /// The C++ twin asserts the same layout: `PYPTO_EMU_SIZE(T, n)` and
    /// `PYPTO_EMU_FIELD(T, field, n)` lines in `pypto_emu/core.h`.
    #[test]
    fn cpp_asserts_the_same_layout() {
        let header = include_str!("../../templates/include/pypto_emu/core.h");
        let mut cpp = Vec::new();
        for line in header.lines() {
            let (kind, rest) = if let Some(rest) = line.strip_prefix("PYPTO_EMU_SIZE(") {
                ("size", rest)
            } else if let Some(rest) = line.strip_prefix("PYPTO_EMU_FIELD(") {
                ("field", rest)
            } else {
                continue;
            };
            let parts: Vec<&str> = rest
                .trim_end_matches(");")
                .split(',')
                .map(str::trim)
                .collect();
            let bytes: usize = parts[parts.len() - 1].parse().unwrap();
            let field = if kind == "size" { "sizeof" } else { parts[1] };
            cpp.push((parts[0], field, bytes));
        }
        assert_eq!(cpp, LAYOUT);
    }
}
