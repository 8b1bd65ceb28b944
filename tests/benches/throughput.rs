//! Host-backend throughput against plain Rust and the memory-bandwidth
//! limit, all measured in the same run:
//! - add_bias, softmax, rms_norm and layer_norm over 16 Mi fp32 elements ([16384, 1024])
//!   versus a plain-Rust loop on one thread and on every thread, and versus
//!   copying the same bytes (`copy_from_slice`, on one and on every thread);
//! - attention at (B, S, HIDDEN) = (4, 512, 768) versus the plain-Rust
//!   reference the tests use (f64 accumulation, one thread).
//!
//! Run with `cargo bench -p pypto-tests --bench throughput`. Bytes are counted as the
//! kernel's logical traffic: its input read once and its output written once.

use pypto_rt::{Const, Device};
use pypto_tests::bench::{Sample, compare, measure};
use pypto_tests::{attention_reference, data, kernels};

const ROWS: usize = 16384;
const COLS: usize = 1024;
const RUNS: usize = 5;
const ROUNDS: usize = 2;

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `row_op` over row chunks of (`x`, `out`) on every thread.
fn parallel_rows(x: &[f32], out: &mut [f32], row_op: impl Fn(&[f32], &mut [f32]) + Sync) {
    let rows_per = ROWS.div_ceil(threads());
    std::thread::scope(|s| {
        for (xc, oc) in x
            .chunks(rows_per * COLS)
            .zip(out.chunks_mut(rows_per * COLS))
        {
            let row_op = &row_op;
            s.spawn(move || {
                for (xr, or) in xc.chunks(COLS).zip(oc.chunks_mut(COLS)) {
                    row_op(xr, or);
                }
            });
        }
    });
}

fn serial_rows(x: &[f32], out: &mut [f32], row_op: impl Fn(&[f32], &mut [f32])) {
    for (xr, or) in x.chunks(COLS).zip(out.chunks_mut(COLS)) {
        row_op(xr, or);
    }
}

fn softmax_row(x: &[f32], out: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for (o, v) in out.iter_mut().zip(x) {
        *o = (v - max).exp();
        sum += *o;
    }
    let inv = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= inv;
    }
}

fn gbps(bytes: f64, s: Sample) -> f64 {
    bytes / s.secs() / 1e9
}

fn report(name: &str, bytes: f64, rows: &[(&str, Sample)]) {
    let kernel = rows[0].1;
    println!("{name}:");
    for (label, s) in rows {
        println!(
            "  {label:<34} {:8.2} ms  {:6.2} GB/s  (spread {:3.0}%)  kernel speed / this {:.2}x",
            s.secs() * 1e3,
            gbps(bytes, *s),
            s.spread_percent,
            s.secs() / kernel.secs()
        );
    }
}

/// Times `kernel` against `row_op` applied to every row of `x` on one and on
/// every thread, reports them next to the `copies`, and returns what
/// `row_op` computed (after checking both plain-Rust runs agree).
fn row_workload(
    name: &str,
    mut kernel: impl FnMut(),
    x: &[f32],
    row_op: impl Fn(&[f32], &mut [f32]) + Sync,
    copies: &[(&str, Sample); 2],
) -> Vec<f32> {
    let (mut serial, mut parallel) = (vec![0f32; x.len()], vec![0f32; x.len()]);
    let [k, s1, sa] = compare(
        ROUNDS,
        RUNS,
        1,
        &mut [
            &mut kernel,
            &mut || serial_rows(x, &mut serial, &row_op),
            &mut || parallel_rows(x, &mut parallel, &row_op),
        ],
    );
    assert_eq!(serial, parallel, "{name}: one thread and all threads agree");
    report(
        name,
        (2 * x.len() * 4) as f64,
        &[
            ("kernel (host backend)", k),
            ("plain Rust, 1 thread", s1),
            ("plain Rust, all threads", sa),
            copies[0],
            copies[1],
        ],
    );
    serial
}

fn check_close(name: &str, got: &[f32], want: &[f32], tolerance: f32) {
    let worst = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(
        got.len() == want.len() && worst <= tolerance,
        "{name}: kernel and plain Rust differ by {worst}"
    );
}

fn main() -> anyhow::Result<()> {
    let dev = Device::host();
    let n = ROWS * COLS;
    println!(
        "host throughput: {ROWS} x {COLS} fp32 ({} MiB per tensor), {} threads; best of {ROUNDS} rounds of \
         the median of {RUNS} runs; GB/s counts one read of the input and one write of the output. \
         `kernel speed / this` is that row's time over the kernel's: below 1, the row is faster",
        (n * 4) >> 20,
        threads()
    );
    let x = data(n, 1);
    let bias = data(COLS, 2);
    let w = data(COLS, 3);
    let tx = dev.tensor_from(&x, (ROWS, COLS))?;
    let tbias = dev.tensor_from(&bias, (COLS,))?;
    let tw = dev.tensor_from(&w, (COLS,))?;
    let mut tout = dev.zeros((ROWS, COLS))?;
    let mut out = vec![0f32; n];

    // Memory-bandwidth limit: moving the same bytes.
    let copies = {
        let one = compare(ROUNDS, RUNS, 1, &mut [&mut || out.copy_from_slice(&x)])[0];
        let all = compare(
            ROUNDS,
            RUNS,
            1,
            &mut [&mut || parallel_rows(&x, &mut out, |a, b| b.copy_from_slice(a))],
        )[0];
        [("memcpy, 1 thread", one), ("memcpy, all threads", all)]
    };

    let add_bias_row = |xr: &[f32], or: &mut [f32]| {
        for ((o, v), b) in or.iter_mut().zip(xr).zip(&bias) {
            *o = v + b;
        }
    };
    let want = row_workload(
        "add_bias [16384, 1024] + [1024]",
        || kernels::add_bias_f32(&tx, &tbias, &mut tout).expect("add_bias"),
        &x,
        add_bias_row,
        &copies,
    );
    check_close("add_bias", &tout.to_vec()?, &want, 0.0);

    let want = row_workload(
        "softmax over rows of [16384, 1024]",
        || kernels::softmax_f32(&tx, &mut tout).expect("softmax"),
        &x,
        softmax_row,
        &copies,
    );
    check_close("softmax", &tout.to_vec()?, &want, 1e-5);

    let eps = 1e-6f32;
    let rms_row = |xr: &[f32], or: &mut [f32]| {
        let mean = xr.iter().map(|v| v * v).sum::<f32>() / COLS as f32;
        let inv = 1.0 / (mean + eps).sqrt();
        for ((o, v), g) in or.iter_mut().zip(xr).zip(&w) {
            *o = v * inv * g;
        }
    };
    let want = row_workload(
        "rms_norm over rows of [16384, 1024]",
        || kernels::rms_norm_f32(&tx, &tw, eps, &mut tout).expect("rms_norm"),
        &x,
        rms_row,
        &copies,
    );
    check_close("rms_norm", &tout.to_vec()?, &want, 1e-4);

    let tb = dev.tensor_from(&bias, (COLS,))?;
    let layer_row = |xr: &[f32], or: &mut [f32]| {
        let mean = xr.iter().sum::<f32>() / COLS as f32;
        let var = xr.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / COLS as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for (((o, v), g), b) in or.iter_mut().zip(xr).zip(&w).zip(&bias) {
            *o = (v - mean) * inv * g + b;
        }
    };
    let want = row_workload(
        "layer_norm over rows of [16384, 1024]",
        || kernels::layer_norm_f32(&tx, &tw, &tb, eps, &mut tout).expect("layer_norm"),
        &x,
        layer_row,
        &copies,
    );
    check_close("layer_norm", &tout.to_vec()?, &want, 1e-4);
    drop((tx, tout));

    // Attention, PyPTO's example 2 at a longer sequence.
    let (b, s, h) = (4usize, 512usize, 768usize);
    let (q, kk, v) = (data(b * s * h, 4), data(b * s * h, 5), data(b * s * h, 6));
    let shape = (b, s, Const::<768>);
    let (tq, tk, tv) = (
        dev.tensor_from(&q, shape)?,
        dev.tensor_from(&kk, shape)?,
        dev.tensor_from(&v, shape)?,
    );
    let mut tout = dev.zeros(shape)?;
    let kernel = measure(RUNS, 1, || {
        kernels::attention_kernel(&tq, &tk, &tv, &mut tout).expect("attention")
    });
    let mut reference = Vec::new();
    let plain = measure(RUNS, 1, || {
        reference = attention_reference(&q, &kk, &v, (b, s, h), 1, false)
    });
    let worst = tout
        .to_vec()?
        .iter()
        .zip(&reference)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(
        worst < 1e-4,
        "attention kernel and reference differ by {worst}"
    );
    let tokens = (b * s) as f64;
    println!("attention (B, S, HIDDEN) = (4, 512, 768), 1 head:");
    for (label, t) in [
        ("kernel (host backend)", kernel),
        ("plain-Rust reference, 1 thread", plain),
    ] {
        println!(
            "  {label:<34} {:8.2} ms  {:8.0} tokens/s  (spread {:3.0}%)  kernel speed / this {:.2}x",
            t.secs() * 1e3,
            tokens / t.secs(),
            t.spread_percent,
            t.secs() / kernel.secs()
        );
    }
    Ok(())
}
