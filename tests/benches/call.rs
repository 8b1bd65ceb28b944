//! Call overhead on the host backend: a typed wrapper call (run-time checks,
//! tiling, dispatch) of a one-block, one-tile `add` against calling the
//! compiled host entry of the same kernel directly with a prepared record
//! (the baseline, measured in the same run).
//!
//! Run with `cargo bench -p pypto-tests --bench call`. Prints ns per call and the ratio,
//! for `add_f32` (one DYNAMIC dim) and `add_fixed` (only fixed axes: its
//! wrapper has no run-time sizes to check).

use std::ffi::c_void;

use pypto_rt::__private::v3::{
    BlockRule, DimDesc, Entries, HostLaunch, KernelDesc, input, launch, output,
};
use pypto_rt::{Const, Device};
use pypto_tests::bench::compare;
use pypto_tests::kernels;

// The host entries of package `pypto-tests` 0.1.0's kernels `add_f32` and
// `add_fixed` (see `pypto_build::unstable::codegen::SymbolScope::base`).
unsafe extern "C" {
    #[link_name = "pypto_p13_pypto_2dtestsv9_0_2e1_2e0k9_add_5ff32_host_s0"]
    fn add_f32_host_s0(launch: *mut HostLaunch) -> i32;
    #[link_name = "pypto_p13_pypto_2dtestsv9_0_2e1_2e0k11_add_5ffixed_host_s0"]
    fn add_fixed_host_s0(launch: *mut HostLaunch) -> i32;
}

/// `add_f32`'s description, as its generated wrapper states it.
static ADD_F32_DESC: KernelDesc = KernelDesc {
    name: "add_f32",
    params: &["a", "b", "out"],
    dims: &[DimDesc {
        axes: &[(0, 0), (1, 0), (2, 0)],
        why: "they are the dim `N`",
    }],
    blocks: BlockRule::Elements {
        param: 0,
        per_block: 8192,
    },
    multiples: &[],
    halves: &[],
};

/// A host entry that returns at once: launching it measures the launch
/// path alone (the checks, argument lists, watchdog and guard checks).
unsafe extern "C" fn returns_at_once(_: *mut HostLaunch) -> i32 {
    0
}

const N: usize = 1024;
const ROUNDS: usize = 5;
const RUNS: usize = 11;
const ITERS: usize = 20_000;

/// Calls `entry` as pypto-rt's host launch would for one block, with every
/// argument prepared once outside the timed loop.
fn direct(
    entry: unsafe extern "C" fn(*mut HostLaunch) -> i32,
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
) -> impl FnMut() {
    let pointers: Vec<*mut c_void> = vec![
        a.as_ptr() as *mut c_void,
        b.as_ptr() as *mut c_void,
        out.as_mut_ptr().cast(),
    ];
    let bytes = [(N * 4) as u64; 3];
    let tiling = [N as u32, 0];
    let mut err = vec![0u8; 1024];
    move || {
        let mut record = HostLaunch {
            block_idx: 0,
            block_num: 1,
            args: pointers.as_ptr(),
            arg_bytes: bytes.as_ptr(),
            num_args: 3,
            tiling: tiling.as_ptr().cast(),
            tiling_bytes: 4,
            err: err.as_mut_ptr().cast(),
            err_len: err.len() as u64,
            ub_peak: 0,
            // No guard pages, names, launch id, watchdog or sanitizer
            // checks: the bare entry.
            arg_info: std::ptr::null(),
            kernel: std::ptr::null(),
            kernel_len: 0,
            launch_id: 0,
            cancel: std::ptr::null(),
            timeout_ms: 0,
            sanitize: 0,
            fail_block: 0,
            model: std::ptr::null(),
        };
        // SAFETY: the entry of `add` over N floats; the pointers are valid
        // for N elements each and `out` aliases nothing.
        let status = unsafe { entry(&mut record) };
        assert_eq!(status, 0);
    }
}

fn main() -> anyhow::Result<()> {
    let dev = Device::host();
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| 0.5 * i as f32).collect();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();

    // Dynamic: `add_f32` over [N] with N DYNAMIC.
    let (ta, tb) = (dev.tensor_from(&a, (N,))?, dev.tensor_from(&b, (N,))?);
    let mut tout = dev.zeros((N,))?;
    // Fixed: `add_fixed` over [1024].
    let (fa, fb) = (
        dev.tensor_from(&a, (Const::<N>,))?,
        dev.tensor_from(&b, (Const::<N>,))?,
    );
    let mut fout = dev.zeros((Const::<N>,))?;
    let (mut raw_a, mut raw_b) = (vec![0f32; N], vec![0f32; N]);

    let mut wrapper_dyn = || kernels::add_f32(&ta, &tb, &mut tout).expect("add_f32");
    let mut wrapper_fixed = || kernels::add_fixed(&fa, &fb, &mut fout).expect("add_fixed");
    let mut direct_dyn = direct(add_f32_host_s0, &a, &b, &mut raw_a);
    let mut direct_fixed = direct(add_fixed_host_s0, &a, &b, &mut raw_b);
    let (pa, pb) = (dev.tensor_from(&a, (N,))?, dev.tensor_from(&b, (N,))?);
    let mut pout = dev.zeros::<f32, _>((N,))?;
    let mut path_only = || {
        let entries = Entries {
            host: returns_at_once,
            npu: &[],
        };
        // The wrapper takes its tensors as `impl AsInput`/`AsOutput`.
        let (a, b, mut out) = (&pa, &pb, &mut pout);
        // SAFETY: the entry touches no memory.
        unsafe {
            launch(
                &ADD_F32_DESC,
                entries,
                &[input(&a), input(&b), output(&mut out)],
            )
        }
        .expect("launch");
    };
    let [wd, dd, wf, df, path] = compare(
        ROUNDS,
        RUNS,
        ITERS,
        &mut [
            &mut wrapper_dyn,
            &mut direct_dyn,
            &mut wrapper_fixed,
            &mut direct_fixed,
            &mut path_only,
        ],
    );
    drop((direct_dyn, direct_fixed));
    // The timed calls computed the right thing.
    assert_eq!(tout.to_vec()?, want);
    assert_eq!(fout.to_vec()?, want);
    assert_eq!(raw_a, want);
    assert_eq!(raw_b, want);

    println!(
        "call overhead, host backend: `add` over {N} fp32 (one block, one tile); \
         best of {ROUNDS} rounds of the median of {RUNS} runs x {ITERS} calls"
    );
    for (name, w, d) in [
        ("add_f32   (N DYNAMIC)", wd, dd),
        ("add_fixed (all fixed)", wf, df),
    ] {
        println!(
            "  {name}: wrapper {:8.1} ns (spread {:.0}%)   direct entry (baseline) {:8.1} ns (spread {:.0}%)   \
             overhead {:6.1} ns   ratio {:.3}x",
            w.nanos(),
            w.spread_percent,
            d.nanos(),
            d.spread_percent,
            w.nanos() - d.nanos(),
            w.nanos() / d.nanos()
        );
    }
    println!(
        "  the launch path alone (add_f32's checks and argument lists, an entry that returns at once): {:8.1} ns (spread {:.0}%)",
        path.nanos(),
        path.spread_percent
    );
    Ok(())
}
