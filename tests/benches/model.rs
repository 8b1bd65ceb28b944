//! The modelled NPU against published onboard measurements
//! (shared NPU-PERF-FACTS.md): one line per measured row,
//! `ROW: modelled X us, measured Y us, ratio R`, with the model's pipe
//! busy ratios beside the measured ones where published, each row marked
//! `fit` (the constants were chosen with it in view) or `held out`.
//! Large shapes run timing-only (instructions costed, nothing computed).
//!
//! Run with `cargo bench -p pypto-tests --bench model`.

use pypto_rt::{Device, ModelArch, Profiler};
use pypto_tests::kernels;

/// NPU-PERF-FACTS §1: A3, fp16 in, fp32 out, m = k = n; busy ratios of
/// Mmad, LoadData (MTE1), MTE2 and Fixpipe; time in ms.
const GEMM: [(usize, [f64; 4], f64, bool); 4] = [
    (1536, [54.5, 42.2, 72.2, 7.7], 0.0388, false),
    (3072, [79.0, 62.0, 90.9, 5.8], 0.2067, true),
    (6144, [86.7, 68.1, 95.2, 3.1], 1.5060, true),
    (7680, [80.6, 63.0, 98.4, 2.4], 3.1680, false),
];

fn main() {
    let dev = Device::host();
    let mut worst_fit: f64 = 1.0;
    let mut worst_held: f64 = 1.0;
    for (size, ratios, ms, fit) in GEMM {
        let a = dev.zeros::<half::f16, _>((size, size)).expect("a");
        let b = dev.zeros::<half::f16, _>((size, size)).expect("b");
        let mut out = dev.zeros::<f32, _>((size, size)).expect("out");
        let started = std::time::Instant::now();
        let (result, profile) = Profiler::new(ModelArch::AtlasA3)
            .trace(false)
            .timing_only(true)
            .run(|| kernels::gemm_a3(&a, &b, &mut out));
        result.expect("gemm_a3");
        let launch = &profile.launches[0];
        let modelled = profile.micros();
        let measured = ms * 1000.0;
        let ratio = modelled / measured;
        let busy = launch.busy_fraction();
        // pipe_t: S V M MTE1 MTE2 MTE3 ALL FIX
        let pipes = [(2, "Mmad"), (3, "LoadData"), (4, "MTE2"), (7, "Fixpipe")];
        let mut line = format!(
            "gemm {size}: modelled {modelled:.1} us, measured {measured:.1} us, ratio {ratio:.3} [{}]",
            if fit { "fit" } else { "held out" }
        );
        for ((p, name), want) in pipes.iter().zip(ratios) {
            line.push_str(&format!(
                "  {name} {:.1}% (measured {want:.1}%)",
                busy[*p] * 100.0
            ));
        }
        line.push_str(&format!("  [{:.1} s to model]", started.elapsed().as_secs_f64()));
        println!("{line}");
        let err = if ratio > 1.0 { ratio } else { 1.0 / ratio };
        if fit {
            worst_fit = worst_fit.max(err);
        } else {
            worst_held = worst_held.max(err);
        }
    }
    println!(
        "gemm: worst error {:.1} % on the fitted rows, {:.1} % on the held-out rows (modelled, not measured)",
        (worst_fit - 1.0) * 100.0,
        (worst_held - 1.0) * 100.0
    );
}
