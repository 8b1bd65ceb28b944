//! The modelled NPU: how long an Atlas A2/A3 would take to run a host
//! launch, from a per-core, per-pipe timeline the emulation builds while it
//! runs the kernel (`pypto_emu/model/`). Every figure here is **modelled**,
//! not measured on hardware.
//!
//! ```no_run
//! # fn matmul() -> Result<(), pypto_rt::Error> { Ok(()) }
//! let (result, profile) = pypto_rt::profile(pypto_rt::ModelArch::AtlasA3, || matmul());
//! result?;
//! println!("{profile}");
//! # Ok::<(), pypto_rt::Error>(())
//! ```

mod abi;
mod arch;
mod env;
mod report;
mod trace;

pub use trace::{chrome_trace, svg};

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::sync::{Arc, Mutex};

use crate::Error;

pub(crate) use abi::ModelSink;
use abi::{ModelCore, ModelEvent, ModelFlow, ModelParams};
pub use arch::ModelArch;
pub use env::{PROFILE_ARCH_VAR, PROFILE_VAR};

/// The pipes of an AI core, as the emulation numbers them (`pipe_t`).
pub const PIPES: [&str; 8] = ["S", "V", "M", "MTE1", "MTE2", "MTE3", "ALL", "FIX"];

/// The memories an instruction reads and writes, as the emulation numbers
/// them (`pypto_emu::Memory`): bit `1 << i` of [`Slice::reads`] and
/// [`Slice::writes`] is `MEMORIES[i]`.
pub const MEMORIES: [&str; 8] = ["GM", "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"];

/// The names of the memories in `mask` (bits as in [`MEMORIES`]), in that order.
pub fn memory_names(mask: u8) -> Vec<&'static str> {
    MEMORIES
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, m)| *m)
        .collect()
}

/// Which core of a block a timeline belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum CoreKind {
    /// The one core of a vector kernel's block (AIV).
    Vector,
    /// The one core of a cube kernel's block (AIC).
    Cube,
    /// A mixed kernel's cube core.
    MixedCube,
    /// A mixed kernel's first vector core.
    MixedVector0,
    /// A mixed kernel's second vector core.
    MixedVector1,
}

impl CoreKind {
    fn from_raw(raw: u32) -> Option<CoreKind> {
        Some(match raw {
            0 => CoreKind::Vector,
            1 => CoreKind::Cube,
            2 => CoreKind::MixedCube,
            3 => CoreKind::MixedVector0,
            4 => CoreKind::MixedVector1,
            _ => return None,
        })
    }

    /// `AIV`, `AIC`, `AIC`, `AIV0`, `AIV1`.
    pub fn label(self) -> &'static str {
        match self {
            CoreKind::Vector => "AIV",
            CoreKind::Cube | CoreKind::MixedCube => "AIC",
            CoreKind::MixedVector0 => "AIV0",
            CoreKind::MixedVector1 => "AIV1",
        }
    }

    /// The index of the core within its block (flows name cores by it).
    pub fn index(self) -> u8 {
        match self {
            CoreKind::MixedVector0 => 1,
            CoreKind::MixedVector1 => 2,
            _ => 0,
        }
    }

    /// Whether it is a vector core (AIV).
    pub fn is_vector(self) -> bool {
        matches!(
            self,
            CoreKind::Vector | CoreKind::MixedVector0 | CoreKind::MixedVector1
        )
    }
}

/// One instruction of a core's modelled timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// The pipe (an index of [`PIPES`]).
    pub pipe: u8,
    /// First and last-plus-one cycle, from the block's start.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// The instruction (shared by every slice of the same instruction).
    pub name: Arc<str>,
    /// Where the kernel called it (`file:line`), when known.
    pub site: Option<Arc<str>>,
    /// Bytes moved or processed.
    pub bytes: u64,
    /// False when the cost table has no figure for it (costed as one cycle).
    pub modelled: bool,
    /// The memories it read, one bit each as in [`MEMORIES`] (filled when
    /// the run is traced or sanitized; see [`memory_names`]).
    pub reads: u8,
    /// The memories it wrote, as `reads`.
    pub writes: u8,
}

/// A flag from one pipe to another, possibly of another core of the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// The cycle it was set, on `from_pipe` of core `from_core`.
    pub set: u64,
    /// The cycle the waiting pipe went on.
    pub wait: u64,
    /// Pipes, as indices of [`PIPES`].
    pub from_pipe: u8,
    /// See `from_pipe`.
    pub to_pipe: u8,
    /// Cores, as [`CoreKind::index`].
    pub from_core: u8,
    /// See `from_core`.
    pub to_core: u8,
}

/// One core of one block: its totals, and its timeline when traced.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreProfile {
    /// The block.
    pub block: u32,
    /// Which core of the block.
    pub core: CoreKind,
    /// The cycle its last pipe finished, from the block's start.
    pub cycles: u64,
    /// Busy cycles per pipe (indices of [`PIPES`]).
    pub busy: [u64; 8],
    /// Global-memory bytes read and written.
    pub gm_read: u64,
    /// See `gm_read`.
    pub gm_write: u64,
    /// Bytes of `gm_read` charged as first reads of the launch's inputs,
    /// from HBM (the rest hit L2).
    pub gm_cold: u64,
    /// Instructions issued.
    pub instructions: u64,
    /// Instructions the cost table has no figure for.
    pub unmodelled: u64,
    /// The instructions, when the profile records a trace.
    pub slices: Vec<Slice>,
    /// The flags waited for, when the profile records a trace.
    pub flows: Vec<Flow>,
}

/// One launch: its cores and when each block ran.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchProfile {
    /// The kernel.
    pub kernel: &'static str,
    /// Its block count.
    pub blocks: u32,
    /// Every core of every block, in block order.
    pub cores: Vec<CoreProfile>,
    /// Per block, the cycle it starts (blocks beyond the chip's cores run
    /// in waves) and the modelled core it runs on.
    pub schedule: Vec<(u64, u32)>,
    /// Modelled cycles from the launch's start to its last block's end,
    /// the launch overhead and `gm_stall` included.
    pub cycles: u64,
    /// Cycles the chip's shared L2 bandwidth added: the most global-memory
    /// traffic the cores asked for beyond what the L2 serves, at any point
    /// of the launch, at the L2's rate (0 when it never binds).
    pub gm_stall: u64,
    /// Timelines left out because memory for them ran short.
    pub truncated: bool,
}

/// What [`profile`] returns: every host launch the closure made, as the
/// modelled NPU would run it.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The architecture modelled.
    pub arch: ModelArch,
    /// Whether the kernels ran for timing only (their outputs unspecified).
    pub timing_only: bool,
    /// The launches, in order.
    pub launches: Vec<LaunchProfile>,
}

/// Collects the cores of one launch (the emulation calls back from each
/// block's thread).
struct Collect {
    cores: Vec<CoreProfile>,
    /// Per core (block, kind), its global-memory bytes read and written
    /// per `abi::GM_BIN` cycles.
    bins: Vec<report::GmBins>,
    trace: bool,
    truncated: bool,
    /// Instruction names and call sites as text, each converted once per
    /// launch: keyed by the emulation's pointers (literals of the kernel
    /// library, alive while it runs) and the site's line.
    texts: AddrMap<Option<Arc<str>>>,
}

/// The profiler active on this thread: launches from it are modelled.
struct Active {
    profiler: Profiler,
    launches: Vec<LaunchProfile>,
}

thread_local! {
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
    /// `ACTIVE`'s profiler, which every host launch looks at: a `Cell` of
    /// a `Copy` type needs neither a borrow nor a destructor's registration.
    static PROFILER: Cell<Option<Profiler>> = const { Cell::new(None) };
}

/// Runs `f`, modelling every host launch it makes on this thread on `arch`
/// with a full trace; returns `f`'s value and the [`Profile`]. The kernels
/// compute what they would without the profile. See [`Profiler`] for the
/// options.
pub fn profile<R>(arch: ModelArch, f: impl FnOnce() -> R) -> (R, Profile) {
    Profiler::new(arch).run(f)
}

/// How to model the launches of a closure: the architecture, whether to
/// keep every instruction (a trace) or only each core's totals, and
/// whether the kernels compute at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profiler {
    arch: ModelArch,
    trace: bool,
    timing_only: bool,
}

impl Profiler {
    /// A profiler for `arch` that traces and computes.
    pub fn new(arch: ModelArch) -> Profiler {
        Profiler {
            arch,
            trace: true,
            timing_only: false,
        }
    }

    /// Whether to keep every instruction and flag (on by default); off,
    /// each core keeps its totals only, for long runs.
    pub fn trace(mut self, on: bool) -> Profiler {
        self.trace = on;
        self
    }

    /// Timing only (off by default): instructions are checked and costed
    /// but compute nothing, so large shapes model in seconds. The outputs
    /// are left unspecified, the sanitizer checks are off, and a kernel
    /// whose control flow depends on data (not on sizes) is modelled on
    /// whatever the unwritten buffers hold: the mode's documented limit.
    pub fn timing_only(mut self, on: bool) -> Profiler {
        self.timing_only = on;
        self
    }

    /// Runs `f`, modelling every host launch it makes on this thread;
    /// returns `f`'s value and the [`Profile`]. Launches from other
    /// threads, and NPU launches, are not modelled. A profile inside
    /// another collects its own launches; the outer one resumes after.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> (R, Profile) {
        let outer = ACTIVE.with(|a| {
            a.borrow_mut().replace(Active {
                profiler: *self,
                launches: Vec::new(),
            })
        });
        PROFILER.with(|p| p.set(Some(*self)));
        /// Puts back the outer profile, if any.
        fn resume(outer: Option<Active>) {
            PROFILER.with(|p| p.set(outer.as_ref().map(|o| o.profiler)));
            ACTIVE.with(|a| *a.borrow_mut() = outer);
        }
        // Restores the outer profiler even if `f` panics.
        struct Restore(Option<Option<Active>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                if let Some(outer) = self.0.take() {
                    resume(outer);
                }
            }
        }
        let mut restore = Restore(Some(outer));
        let value = f();
        let mine = ACTIVE.with(|a| a.borrow_mut().take());
        if let Some(outer) = restore.0.take() {
            resume(outer);
        }
        let launches = mine.map(|m| m.launches).unwrap_or_default();
        (
            value,
            Profile {
                arch: self.arch,
                timing_only: self.timing_only,
                launches,
            },
        )
    }
}

/// Whether a profile active on this thread runs kernels for timing only
/// (the launch then runs no sanitizer checks).
#[inline]
pub(crate) fn timing_only() -> bool {
    PROFILER.with(Cell::get).is_some_and(|p| p.timing_only)
}

/// A launch being modelled: owns what the sink points at.
pub(crate) struct Modelled {
    arch: ModelArch,
    params: Box<ModelParams>,
    collect: Box<Mutex<Collect>>,
    sink: Box<ModelSink>,
    /// The run-wide profile it joins, when `PYPTO_PROFILE` started it.
    env: Option<&'static env::EnvProfile>,
}

impl Modelled {
    /// The sink to pass in every block's `HostLaunch`.
    pub(crate) fn sink(&self) -> *const ModelSink {
        &*self.sink
    }
}

/// A model for a launch of `blocks` blocks, given `input_bytes` of
/// read-only global memory (its inputs, read first from HBM), when a
/// profiler is active on this thread, or `PYPTO_PROFILE` asks for every
/// launch.
#[inline]
pub(crate) fn begin(blocks: u32, input_bytes: u64) -> Result<Option<Modelled>, Error> {
    // The common case, inline: no profiler, and none asked for.
    if PROFILER.with(Cell::get).is_none() && env::known_off() {
        return Ok(None);
    }
    begin_model(blocks, input_bytes)
}

/// [`begin`] when a profile may be active.
#[inline(never)]
fn begin_model(blocks: u32, input_bytes: u64) -> Result<Option<Modelled>, Error> {
    let active = PROFILER.with(Cell::get);
    let (profiler, env) = match active {
        Some(p) => (p, None),
        None => match env::env_profile()? {
            Some(e) => (Profiler::new(e.arch), Some(e)),
            None => return Ok(None),
        },
    };
    let (arch, trace) = (profiler.arch, profiler.trace);
    let params = Box::new(arch.params());
    let collect = Box::new(Mutex::new(Collect {
        cores: Vec::new(),
        bins: Vec::new(),
        trace,
        truncated: false,
        texts: AddrMap::default(),
    }));
    let sink = Box::new(ModelSink {
        params: &*params,
        ctx: (&*collect as *const Mutex<Collect>).cast_mut().cast(),
        core_done,
        trace: u32::from(trace),
        blocks,
        ai_cores: arch.ai_cores(),
        timing_only: u32::from(profiler.timing_only),
        input_bytes,
    });
    Ok(Some(Modelled {
        arch,
        params,
        collect,
        sink,
        env,
    }))
}

/// Ends a modelled launch: its blocks are scheduled on the chip's cores
/// and the launch joins the active profile (or `PYPTO_PROFILE`'s file).
pub(crate) fn finish(model: Modelled, kernel: &'static str, blocks: u32) -> Result<(), Error> {
    let Modelled {
        arch,
        params,
        collect,
        sink,
        env,
    } = model;
    drop(sink);
    drop(params);
    let collect = (*collect).into_inner().unwrap_or_else(|e| e.into_inner());
    let mut cores = collect.cores;
    cores.sort_by_key(|c| (c.block, c.core));
    let mut bins = collect.bins;
    bins.sort_by_key(|b| (b.block, b.core));
    let launch = report::schedule(arch, kernel, blocks, cores, &bins, collect.truncated);
    if let Some(env) = env {
        return env.record(launch);
    }
    ACTIVE.with(|a| {
        if let Some(active) = a.borrow_mut().as_mut() {
            active.launches.push(launch);
        }
    });
    Ok(())
}

/// A C string the kernel library holds (a literal), as text.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn text(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The key of an instruction name in `Collect::texts` (sites use their line).
const NAME: u32 = u32::MAX;

/// Hashes the emulation's addresses (and lines): a multiply and a rotate
/// per word, where the standard hasher's SipHash was a tenth of a traced
/// tiny launch. Keys are addresses of the kernel library, not input.
#[derive(Default)]
struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(26) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type AddrMap<V> = HashMap<(usize, u32), V, std::hash::BuildHasherDefault<AddrHasher>>;

/// What [`intern_texts`] returns.
struct Interned {
    texts: Vec<Option<Arc<str>>>,
    /// Per event, the index in `texts` of its name and of its call site.
    per_event: Vec<[u32; 2]>,
}

/// The texts of `events`' names and call sites, and per event the index
/// of its name's and its site's text; each distinct one is taken from the
/// launch's table (converted from its C string the first time the launch
/// sees it). None when memory ran out.
///
/// # Safety
/// Names and files of `events` are null or NUL-terminated.
unsafe fn intern_texts(collect: &Mutex<Collect>, events: &[ModelEvent]) -> Option<Interned> {
    // The distinct keys first, without the lock: a block has a few dozen.
    let mut index: AddrMap<u32> = AddrMap::default();
    let mut keys: Vec<(*const c_char, u32)> = Vec::new();
    // Room for a typical block's keys at once (growing rehashes).
    index.try_reserve(64).ok()?;
    keys.try_reserve(64).ok()?;
    let mut per_event = Vec::new();
    per_event.try_reserve_exact(events.len()).ok()?;
    for e in events {
        let mut pair = [0u32; 2];
        for (slot, key) in pair.iter_mut().zip([(e.name, NAME), (e.file, e.line)]) {
            index.try_reserve(1).ok()?;
            keys.try_reserve(1).ok()?;
            *slot = *index.entry((key.0.addr(), key.1)).or_insert_with(|| {
                keys.push(key);
                u32::try_from(keys.len() - 1).unwrap_or(u32::MAX)
            });
        }
        per_event.push(pair);
    }
    let mut texts = Vec::new();
    texts.try_reserve_exact(keys.len()).ok()?;
    let mut guard = collect.lock().unwrap_or_else(|e| e.into_inner());
    guard.texts.try_reserve(keys.len()).ok()?;
    for key in keys {
        let text = guard.texts.entry((key.0.addr(), key.1)).or_insert_with(|| {
            // SAFETY: the caller's contract.
            let raw = unsafe { text(key.0) }?;
            Some(Arc::from(if key.1 == NAME {
                raw
            } else {
                let short = raw.rsplit('/').next().unwrap_or(&raw);
                format!("{short}:{}", key.1)
            }))
        });
        texts.push(text.clone());
    }
    Some(Interned { texts, per_event })
}

/// Called by the emulation when a core finishes (from the block's thread).
///
/// # Safety
/// `ctx` is the `Mutex<Collect>` of a live [`Modelled`]; the pointers are
/// valid for the counts given; names and files are NUL-terminated.
unsafe extern "C" fn core_done(
    ctx: *mut c_void,
    block: u32,
    core: u32,
    summary: *const ModelCore,
    events: *const ModelEvent,
    n_events: u64,
    flows: *const ModelFlow,
    n_flows: u64,
) {
    // SAFETY: the contract above.
    let collect = unsafe { &*ctx.cast_const().cast::<Mutex<Collect>>() };
    let Some(kind) = CoreKind::from_raw(core) else {
        return;
    };
    if summary.is_null() {
        return;
    }
    // SAFETY: non-null, and valid for the call (the contract above).
    let s = unsafe { *summary };
    // The trace is converted without the lock (the block's other cores
    // finish meanwhile), each distinct name and call site once.
    let (trace, truncated) = {
        let guard = collect.lock().unwrap_or_else(|e| e.into_inner());
        (guard.trace, guard.truncated)
    };
    let mut slices = Vec::new();
    let mut flow_list = Vec::new();
    let mut failed = false;
    if trace && !truncated {
        let n_events = usize::try_from(n_events).unwrap_or(usize::MAX);
        let n_flows = usize::try_from(n_flows).unwrap_or(usize::MAX);
        if slices.try_reserve_exact(n_events).is_err()
            || flow_list.try_reserve_exact(n_flows).is_err()
        {
            failed = true;
        } else {
            let events = if n_events == 0 || events.is_null() {
                &[][..] // a core that ran no instruction may pass null
            } else {
                // SAFETY: `events` holds `n_events` records.
                unsafe { std::slice::from_raw_parts(events, n_events) }
            };
            // SAFETY: names and files are literals of the kernel library, or null.
            match unsafe { intern_texts(collect, events) } {
                Some(Interned { texts, per_event }) => {
                    for (e, [name, site]) in events.iter().zip(per_event) {
                        let text = |i: u32| texts.get(i as usize).cloned().flatten();
                        slices.push(Slice {
                            pipe: e.pipe,
                            start: e.start,
                            end: e.end,
                            name: text(name).unwrap_or_else(|| Arc::from("")),
                            site: text(site),
                            bytes: e.bytes,
                            modelled: e.modelled != 0,
                            reads: e.reads,
                            writes: e.writes,
                        });
                    }
                }
                None => failed = true,
            }
            for i in 0..n_flows {
                // SAFETY: `flows` holds `n_flows` records.
                let f = unsafe { *flows.add(i) };
                flow_list.push(Flow {
                    set: f.set,
                    wait: f.wait,
                    from_pipe: f.from_pipe,
                    to_pipe: f.to_pipe,
                    from_core: f.from_core,
                    to_core: f.to_core,
                });
            }
        }
    }
    let mut guard = collect.lock().unwrap_or_else(|e| e.into_inner());
    if failed {
        guard.truncated = true;
    }
    if guard.truncated && !truncated {
        // Another core's trace did not fit meanwhile: this one is dropped too.
        slices.clear();
        flow_list.clear();
    }
    let n_bins = usize::try_from(s.n_gm_bins).unwrap_or(usize::MAX);
    let mut bins = Vec::new();
    if guard.cores.try_reserve(1).is_err()
        || guard.bins.try_reserve(1).is_err()
        || (n_bins > 0 && bins.try_reserve_exact(n_bins).is_err())
    {
        guard.truncated = true;
        return;
    }
    if n_bins > 0 && !s.gm_read_bins.is_null() && !s.gm_write_bins.is_null() {
        // SAFETY: both hold `n_gm_bins` values (the contract above).
        let (read, write) = unsafe {
            (
                std::slice::from_raw_parts(s.gm_read_bins, n_bins),
                std::slice::from_raw_parts(s.gm_write_bins, n_bins),
            )
        };
        bins.extend(read.iter().copied().zip(write.iter().copied()));
    }
    guard.bins.push(report::GmBins {
        block,
        core: kind,
        bins,
    });
    guard.cores.push(CoreProfile {
        block,
        core: kind,
        cycles: s.end,
        busy: s.busy,
        gm_read: s.gm_read,
        gm_write: s.gm_write,
        gm_cold: s.gm_cold,
        instructions: s.instructions,
        unmodelled: s.unmodelled,
        slices,
        flows: flow_list,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_nest_and_restore() {
        let ((), outer) = profile(ModelArch::AtlasA3, || {
            let ((), inner) = profile(ModelArch::AtlasA2, || ());
            assert_eq!(inner.arch, ModelArch::AtlasA2);
            assert!(
                begin(1, 0)
                    .unwrap()
                    .is_some_and(|m| m.arch == ModelArch::AtlasA3)
            );
        });
        assert!(outer.launches.is_empty());
        assert!(ACTIVE.with(|a| a.borrow().is_none()));
    }
}
