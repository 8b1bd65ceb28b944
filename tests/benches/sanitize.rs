//! What the host emulation's sanitizer checks cost, measured in the same run:
//! the same launches with every check off (`Sanitize::OFF`), each check on
//! its own, and all of them (`Sanitize::ALL`, the default), interleaved so
//! that drifts of the machine favour no setting. Workloads: add_bias,
//! softmax and rms_norm over [16384, 1024] fp32 (vector kernels),
//! matmul_f16 [4096, 200] x [200, 144] (a cube kernel), and the decode
//! shapes: a [1, 256] x [256, 1024] matmul and attention at S = 1. Each
//! workload also runs traced under `pypto_rt::profile` on top of every
//! check, against every check alone: what the modelled NPU costs.
//!
//! Run with `cargo bench -p pypto-tests --bench sanitize` (append `-- TEXT`
//! to run only the workloads whose name contains TEXT). Each result is checked against
//! the result with the checks off, so every setting computes the same thing.

use pypto_rt::{Const, Device, ModelArch, Sanitize, profile, with_sanitize};
use pypto_tests::bench::{Sample, compare};
use pypto_tests::{data, kernels};

const ROWS: usize = 16384;
const COLS: usize = 1024;
const RUNS: usize = 5;
const ROUNDS: usize = 2;

const SETTINGS: [(&str, Sanitize); 6] = [
    ("off", Sanitize::OFF),
    ("race only", Sanitize::RACE),
    ("init only", Sanitize::INIT),
    ("sync only", Sanitize::SYNC),
    ("mem only", Sanitize::MEM),
    ("all (the default)", Sanitize::ALL),
];

/// A half tensor's values as bits (NaNs compare equal to themselves).
fn half_bits<S: pypto_rt::Shape>(t: &pypto_rt::Tensor<half::f16, S>) -> Vec<u16> {
    t.to_vec().unwrap().iter().map(|v| v.to_bits()).collect()
}

/// Whether the workload `name` runs: every one, or those whose name
/// contains the bench's first argument that is not a flag
/// (`cargo bench -p pypto-tests --bench sanitize -- "[33, 7]"`).
fn selected(name: &str) -> bool {
    match std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        Some(filter) => name.contains(&filter),
        None => true,
    }
}

/// Times `launch` under every setting, interleaved (`iters` launches per
/// run: many for the small shapes, whose launches take microseconds);
/// prints each time and its ratio to the time with the checks off, and
/// checks that every setting's `result` matches the first's.
fn workload<T: PartialEq + std::fmt::Debug>(
    name: &str,
    iters: usize,
    mut launch: impl FnMut(),
    mut result: impl FnMut() -> Vec<T>,
) {
    if !selected(name) {
        return;
    }
    let mut want = None;
    for (label, checks) in SETTINGS {
        with_sanitize(checks, &mut launch);
        let got = result();
        match &want {
            None => want = Some(got),
            Some(w) => assert!(*w == got, "{name}: `{label}` computes something else"),
        }
    }
    let launch = std::cell::RefCell::new(launch);
    let mut runs: Vec<Box<dyn FnMut()>> = SETTINGS
        .iter()
        .map(|&(_, checks)| {
            let launch = &launch;
            Box::new(move || with_sanitize(checks, &mut *launch.borrow_mut())) as Box<dyn FnMut()>
        })
        .collect();
    let [a, b, c, d, e, f] = &mut runs[..] else {
        unreachable!()
    };
    let samples: [Sample; 6] = compare(
        ROUNDS,
        RUNS,
        iters,
        &mut [&mut **a, &mut **b, &mut **c, &mut **d, &mut **e, &mut **f],
    );
    let off = samples[0].secs();
    println!("{name}:");
    for ((label, _), s) in SETTINGS.iter().zip(samples) {
        println!(
            "  {label:<20} {:8.3} ms  (spread {:3.0}%)  on / off {:.2}x",
            s.secs() * 1e3,
            s.spread_percent,
            s.secs() / off
        );
    }
    // The modelled NPU on top of every check (a traced profile), against
    // every check alone: what `pypto_rt::profile` costs.
    let mut all = || with_sanitize(Sanitize::ALL, &mut *launch.borrow_mut());
    let mut profiled = || {
        let ((), p) = profile(ModelArch::AtlasA3, || {
            with_sanitize(Sanitize::ALL, &mut *launch.borrow_mut())
        });
        assert!(!p.launches.is_empty(), "{name}: nothing was modelled");
    };
    let [a, p]: [Sample; 2] = compare(ROUNDS, RUNS, iters, &mut [&mut all, &mut profiled]);
    println!(
        "  {:<20} {:8.3} ms  (spread {:3.0}%)  profiled / all {:.2}x",
        "all + profile",
        p.secs() * 1e3,
        p.spread_percent,
        p.secs() / a.secs()
    );
}

fn main() -> anyhow::Result<()> {
    let dev = Device::host();
    let n = ROWS * COLS;
    println!(
        "sanitizer cost on the host backend, {} threads; best of {ROUNDS} rounds of the median of \
         {RUNS} runs; `on / off` is the time with the setting over the time with every check off",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let x = data(n, 1);
    let bias = data(COLS, 2);
    let w = data(COLS, 3);
    let tx = dev.tensor_from(&x, (ROWS, COLS))?;
    let tbias = dev.tensor_from(&bias, (COLS,))?;
    let tw = dev.tensor_from(&w, (COLS,))?;
    let out = std::cell::RefCell::new(dev.zeros((ROWS, COLS))?);

    workload(
        "add_bias [16384, 1024] + [1024]",
        1,
        || kernels::add_bias_f32(&tx, &tbias, &mut *out.borrow_mut()).expect("add_bias"),
        || out.borrow().to_vec().unwrap(),
    );
    workload(
        "softmax over rows of [16384, 1024]",
        1,
        || kernels::softmax_f32(&tx, &mut *out.borrow_mut()).expect("softmax"),
        || out.borrow().to_vec().unwrap(),
    );
    workload(
        "rms_norm over rows of [16384, 1024]",
        1,
        || kernels::rms_norm_f32(&tx, &tw, 1e-6, &mut *out.borrow_mut()).expect("rms_norm"),
        || out.borrow().to_vec().unwrap(),
    );
    drop((tx, out));

    let (m, k, nn) = (4096usize, 200usize, 144usize);
    let to_half = |v: Vec<f32>| -> Vec<half::f16> {
        v.iter().map(|&f| half::f16::from_f32(f / 4.0)).collect()
    };
    let a = dev.tensor_from(&to_half(data(m * k, 7)), (m, Const::<200>))?;
    let b = dev.tensor_from(&to_half(data(k * nn, 8)), (Const::<200>, Const::<144>))?;
    let c = std::cell::RefCell::new(dev.zeros((m, Const::<144>))?);
    workload(
        "matmul_f16 [4096, 200] x [200, 144] (cube)",
        1,
        || kernels::matmul_f16(&a, &b, &mut *c.borrow_mut()).expect("matmul"),
        || half_bits(&c.borrow()),
    );
    drop((a, b, c));

    // Decode shapes (issue 24): a one-token projection and one-token attention.
    let (m, k, nn) = (1usize, 256usize, 1024usize);
    let a = dev.tensor_from(&to_half(data(m * k, 9)), (m, k))?;
    let b = dev.tensor_from(&to_half(data(k * nn, 10)), (k, nn))?;
    let c = std::cell::RefCell::new(dev.zeros((m, nn))?);
    workload(
        "matmul [1, 256] x [256, 1024] fp16 (decode, cube)",
        1,
        || kernels::profile_matmul(&a, &b, &mut *c.borrow_mut()).expect("matmul"),
        || half_bits(&c.borrow()),
    );
    let q = dev.tensor_from(&data(4 * 768, 11), (4usize, 1usize, Const::<768>))?;
    let kv = dev.tensor_from(&data(4 * 768, 12), (4usize, 1usize, Const::<768>))?;
    let o = std::cell::RefCell::new(dev.zeros((4usize, 1usize, Const::<768>))?);
    workload(
        "attention (B, S) = (4, 1), hidden 768 (decode)",
        20,
        || kernels::attention_kernel(&q, &kv, &kv, &mut *o.borrow_mut()).expect("attention"),
        || o.borrow().to_vec().unwrap(),
    );
    drop((q, kv, o));

    // The smallest shapes the tests use: one-row matmuls, a batched matmul
    // of one row, attention of one token, and rows of 1 to 33 values (one
    // launch is microseconds, so per-launch costs of the checks show).
    let a = dev.tensor_from(&to_half(data(200, 13)), (1usize, Const::<200>))?;
    let b = dev.tensor_from(&to_half(data(200 * 144, 14)), (Const::<200>, Const::<144>))?;
    let c = std::cell::RefCell::new(dev.zeros((1usize, Const::<144>))?);
    workload(
        "matmul_f16 [1, 200] x [200, 144] (cube)",
        20,
        || kernels::matmul_f16(&a, &b, &mut *c.borrow_mut()).expect("matmul"),
        || half_bits(&c.borrow()),
    );
    let a = dev.tensor_from(&to_half(data(40, 15)), (1usize, 1usize, Const::<40>))?;
    let b = dev.tensor_from(
        &to_half(data(40 * 32, 16)),
        (1usize, Const::<40>, Const::<32>),
    )?;
    let c = std::cell::RefCell::new(dev.zeros((1usize, 1usize, Const::<32>))?);
    workload(
        "batch_matmul_f16 [1, 1, 40] x [1, 40, 32] (cube)",
        50,
        || kernels::batch_matmul_f16(&a, &b, &mut *c.borrow_mut()).expect("batch_matmul"),
        || half_bits(&c.borrow()),
    );
    let q = dev.tensor_from(&data(64, 17), (1usize, 1usize, Const::<64>))?;
    let o = std::cell::RefCell::new(dev.zeros((1usize, 1usize, Const::<64>))?);
    workload(
        "attn_f32 (B, S) = (1, 1), hidden 64, 2 heads",
        50,
        || kernels::attn_f32(&q, &q, &q, &mut *o.borrow_mut()).expect("attention"),
        || o.borrow().to_vec().unwrap(),
    );
    for (rows, cols) in [(1usize, 1usize), (1, 32), (33, 7)] {
        let x = dev.tensor_from(&data(rows * cols, 18), (rows, cols))?;
        let w = dev.tensor_from(&data(cols, 19), (cols,))?;
        let out = std::cell::RefCell::new(dev.zeros((rows, cols))?);
        workload(
            &format!("softmax [{rows}, {cols}]"),
            50,
            || kernels::softmax_f32(&x, &mut *out.borrow_mut()).expect("softmax"),
            || out.borrow().to_vec().unwrap(),
        );
        workload(
            &format!("rms_norm [{rows}, {cols}]"),
            50,
            || kernels::rms_norm_f32(&x, &w, 1e-6, &mut *out.borrow_mut()).expect("rms_norm"),
            || out.borrow().to_vec().unwrap(),
        );
        workload(
            &format!("layer_norm [{rows}, {cols}]"),
            50,
            || {
                kernels::layer_norm_f32(&x, &w, &w, 1e-6, &mut *out.borrow_mut())
                    .expect("layer_norm")
            },
            || out.borrow().to_vec().unwrap(),
        );
    }
    Ok(())
}
