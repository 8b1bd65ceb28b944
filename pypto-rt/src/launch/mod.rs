//! The call path of generated wrappers: check what types cannot (dims that
//! must agree, sizes a kernel argument can carry, one device), build the
//! tiling data, and launch on the tensors' device.
//!
//! Generated code describes each kernel with a [`KernelDesc`] and calls
//! [`launch`] (both reach it through `crate::__private::v3`, `v2` and `v1`); of this
//! module, only [`with_host_blocks`], [`BLOCKS_VAR`], [`MAX_BLOCKS`] and
//! [`last_launch`] are for hand-written code.
//!
//! What a launch checks first is [`check`]; the host backend runs the
//! blocks in [`host`], the NPU path queues them in [`npu`]. The types a
//! launch is described with are [`crate::abi`]'s.

mod check;
mod host;
mod npu;
mod pool;

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::OnceLock;

use smallvec::SmallVec;

use crate::abi::{Arg, Entries, KernelDesc, MAX_BLOCKS};
use crate::error::Error;

pub(crate) use check::{Tiling, agreed_axis, check_call};
use check::{block_count, check_outputs_written, one_device, scalar_words};

/// Builds a launch's error out of line, so that the code formatting it
/// does not share the instruction cache with the checks every call passes
/// (a call to a cold function also marks its branch unlikely).
#[cold]
#[inline(never)]
pub(crate) fn cold<T>(make: impl FnOnce() -> T) -> T {
    make()
}

/// Per-call lists stay on the stack for kernels of up to 8 tensors or dims,
/// so that a small launch does not allocate.
type Small<T> = SmallVec<[T; 8]>;

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
    // Copied, not cloned: every host launch asks.
    match FROM_ENV.get_or_init(|| {
        let value = std::env::var_os(BLOCKS_VAR);
        parse_blocks(value.as_deref().map(|v| v.to_string_lossy()).as_deref())
    }) {
        Ok(blocks) => Ok(*blocks),
        Err(e) => Err(e.clone()),
    }
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

/// Checks a call and runs it.
///
/// # Safety
/// `entry` must be the compiled kernel described by `desc`, taking the
/// tensors of `args` in order; each tensor pointer must be valid for its
/// sizes, and output tensors must not alias any other argument.
pub unsafe fn launch(desc: &KernelDesc, entries: Entries, args: &[Arg<'_>]) -> Result<(), Error> {
    let mut tiling = Tiling::default();
    let device = check_call(desc, args, &mut tiling)?;
    let blocks = block_count(desc, args)?;
    scalar_words(desc, args, &mut tiling)?;
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
    let mut ub_peak_bytes = 0;
    let result = match device.as_npu() {
        None => {
            // A stream of an NPU named for host tensors is a mistake to
            // report, not to ignore.
            let wrong = crate::stream::with_current(|stream| {
                stream
                    .filter(|s| !s.device().is_host())
                    .map(|s| npu::wrong_stream(desc, device, s))
            });
            if let Some(e) = wrong {
                return Err(e);
            }
            // SAFETY: forwarded from this function's contract.
            unsafe {
                host::run_on_host(
                    desc,
                    entries.host,
                    blocks,
                    &tiling,
                    args,
                    &mut ub_peak_bytes,
                )
            }
        }
        // SAFETY: forwarded from this function's contract.
        Some(npu) => unsafe {
            npu::launch_on_npu(desc, entries, device, npu, blocks, &tiling, args)
        },
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

/// The launch's memory, shared with the block threads.
struct Tensors<'a> {
    pointers: &'a [*mut c_void],
    bytes: &'a [u64],
    tiling: &'a [u64],
    tiling_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;
    use crate::abi::{BlockRule, HostLaunch, Memory, SizeOf};
    use crate::shape::Sizes;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A tensor argument of these sizes whose memory is never touched (the
    /// checks before a launch do not read it).
    pub(super) fn unread<'a>(host: &'a Device, sizes: &[usize], output: bool) -> Arg<'a> {
        Arg::Tensor {
            sizes: Sizes::new(sizes).unwrap(),
            memory: Memory::raw(std::ptr::null_mut(), 0, output, None, None),
            device: host,
        }
    }

    pub(super) fn spread(blocks: BlockRule) -> KernelDesc {
        KernelDesc {
            name: "spread",
            params: &["x", "out"],
            dims: &[],
            blocks,
            multiples: &[],
            halves: &[],
        }
    }

    pub(super) static RAN: AtomicBool = AtomicBool::new(false);

    /// A host entry that records that it ran.
    unsafe extern "C" fn records_run(_: *mut HostLaunch) -> i32 {
        RAN.store(true, Ordering::SeqCst);
        0
    }

    pub(super) fn entries() -> Entries {
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
}
