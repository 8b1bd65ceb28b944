//! Shape-conditioned computation: one matmul kernel with three variants
//! (examples/kernels/dispatch.yaml): `decode` for a few rows, `static_k`
//! for the K sizes built ahead of time, `tiled` for the rest. One wrapper,
//! `kernels::mm_dispatch`, picks per call from the call's sizes; the first
//! variant whose condition holds runs, and `pypto_rt::last_launch()` says
//! which. Each product is checked against plain Rust.
//!
//! Run with `cargo run --example dispatch`.

use anyhow::{Context, ensure};
use pypto_rt::{Const, Device, f16, last_launch};

// Only its test data is used here.
#[allow(dead_code)]
#[path = "common/reference.rs"]
mod reference;

// `mod kernels`: the typed wrappers examples/build.rs generated.
pypto_rt::include_kernels!();

const N: usize = 256;

/// out[i][j] = Σ_p a[i][p] · b[p][j], in f64.
fn matmul_reference(a: &[f16], b: &[f16], m: usize, k: usize) -> Vec<f64> {
    let mut out = vec![0f64; m * N];
    for i in 0..m {
        for p in 0..k {
            let x = f64::from(a[i * k + p].to_f32());
            for j in 0..N {
                out[i * N + j] += x * f64::from(b[p * N + j].to_f32());
            }
        }
    }
    out
}

fn main() -> anyhow::Result<()> {
    let dev = Device::default();
    println!("device: {dev}");
    // (M, K, the variant expected to run)
    let calls = [
        (1, 512, "decode"),    // M <= 16 wins, though K = 512 is built too
        (16, 700, "decode"),   // any K
        (64, 512, "static_k"), // K built ahead of time
        (200, 1024, "static_k"),
        (64, 700, "tiled"), // K not built: the general kernel
        (130, 96, "tiled"),
    ];
    for (m, k, expected) in calls {
        let a: Vec<f16> = reference::data(m * k, (m * 7 + k) as u64)
            .into_iter()
            .map(|v| f16::from_f32(v / 8.0))
            .collect();
        let b: Vec<f16> = reference::data(k * N, k as u64)
            .into_iter()
            .map(|v| f16::from_f32(v / 8.0))
            .collect();
        let mut out = dev.zeros((m, Const::<N>))?;
        kernels::mm_dispatch(
            &dev.tensor_from(&a, (m, k))?,
            &dev.tensor_from(&b, (k, Const::<N>))?,
            &mut out,
        )
        .with_context(|| format!("mm_dispatch at M = {m}, K = {k}"))?;
        let ran = last_launch().and_then(|l| l.variant).unwrap_or("?");
        ensure!(
            ran == expected,
            "M = {m}, K = {k}: ran `{ran}`, expected `{expected}`"
        );
        let want = matmul_reference(&a, &b, m, k);
        // Products of fp16 values are exact in fp32 and summed in fp32, then
        // rounded once to fp16: within fp16's relative spacing, 2⁻¹⁰.
        let mut worst = 0f64;
        for (got, want) in out.to_vec()?.iter().zip(&want) {
            let err = (f64::from(got.to_f32()) - want).abs();
            ensure!(
                err <= 1e-3 + 1e-3 * want.abs(),
                "M = {m}, K = {k}: {got} against {want}"
            );
            worst = worst.max(err);
        }
        println!(
            "M = {m:>3}, K = {k:>4}: variant `{ran}` ran; out matches the plain-Rust reference (largest difference {worst:.1e})"
        );
    }
    println!("one wrapper chose among three compiled variants at run time");
    Ok(())
}
