//! How fast would these kernels be on an Atlas A3? Every host launch runs
//! through the emulation, which also builds a modelled per-core, per-pipe
//! timeline of the NPU (`pypto_rt::profile`). This example profiles
//! add_bias, softmax, matmul, attention and flash attention at two sizes
//! each, prints each
//! table and writes the timelines of the last launch of each kernel to
//! `target/profile/` as Chrome traces and SVG swimlanes.
//!
//! Every figure it prints is *modelled*, not measured: see the README,
//! "How fast on an NPU?", for the model's measured error.
//!
//! Run with `cargo run --release --example profile`.

use anyhow::{Context, ensure};
use pypto_rt::model::{chrome_trace, svg};
use pypto_rt::{Const, Device, ModelArch, Profile, profile};

pypto_rt::include_kernels!();

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0
        })
        .collect()
}

fn halves(n: usize, seed: u32) -> Vec<half::f16> {
    values(n, seed)
        .into_iter()
        .map(half::f16::from_f32)
        .collect()
}

fn save(name: &str, profile: &Profile) -> anyhow::Result<()> {
    let dir = std::path::Path::new("target/profile");
    std::fs::create_dir_all(dir).context("creating target/profile")?;
    std::fs::write(dir.join(format!("{name}.json")), chrome_trace(profile))?;
    std::fs::write(dir.join(format!("{name}.svg")), svg(profile))?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let dev = Device::host();
    let arch = ModelArch::AtlasA3;

    for batch in [8usize, 4096] {
        let x = dev.tensor_from(&values(batch * 128, 1), (batch, Const::<128>))?;
        let bias = dev.tensor_from(&values(128, 2), (Const::<128>,))?;
        let mut out = dev.zeros((batch, Const::<128>))?;
        let (r, p) = profile(arch, || kernels::add_bias(&x, &bias, &mut out));
        r?;
        println!("add_bias [{batch}, 128]\n{p}");
        save("add_bias", &p)?;
    }

    for (rows, cols) in [(16usize, 1024usize), (1024, 4096)] {
        let x = dev.tensor_from(&halves(rows * cols, 3), (rows, cols))?;
        let mut out = dev.zeros((rows, cols))?;
        let (r, p) = profile(arch, || kernels::profile_softmax(&x, &mut out));
        r?;
        let got = out.to_vec()?;
        let first: f32 = got[..cols].iter().map(|v| v.to_f32()).sum();
        ensure!((first - 1.0).abs() < 0.02, "softmax row sums to {first}");
        println!("softmax [{rows}, {cols}] fp16\n{p}");
        save("softmax", &p)?;
    }

    // A decode-shaped projection (one token) and a prefill-shaped one.
    for (m, k, n) in [(1usize, 4096usize, 4096usize), (512, 1024, 1024)] {
        let a = dev.tensor_from(&halves(m * k, 4), (m, k))?;
        let b = dev.tensor_from(&halves(k * n, 5), (k, n))?;
        let mut out = dev.zeros((m, n))?;
        let (r, p) = profile(arch, || kernels::profile_matmul(&a, &b, &mut out));
        r?;
        println!("matmul [{m}, {k}] x [{k}, {n}] fp16\n{p}");
        save("matmul", &p)?;
    }

    for (batch, seq) in [(1usize, 64usize), (2, 256)] {
        let n = batch * seq * 768;
        let q = dev.tensor_from(&values(n, 6), (batch, seq, Const::<768>))?;
        let k = dev.tensor_from(&values(n, 7), (batch, seq, Const::<768>))?;
        let v = dev.tensor_from(&values(n, 8), (batch, seq, Const::<768>))?;
        let mut out = dev.zeros((batch, seq, Const::<768>))?;
        let (r, p) = profile(arch, || kernels::attention_kernel(&q, &k, &v, &mut out));
        r?;
        println!("attention (B, S) = ({batch}, {seq}), hidden 768, fp32\n{p}");
        save("attention", &p)?;
    }
    // Flash attention on the cube and vector cores: a causal prefill, and a
    // decode step (one token per request against 2,048 cached keys), whose
    // timeline is the one saved.
    for (batch, sq, skv) in [(1usize, 512usize, 512usize), (4, 1, 2048)] {
        let q = dev.tensor_from(&halves(batch * sq * 1024, 9), (batch, sq, Const::<1024>))?;
        let k = dev.tensor_from(&halves(batch * skv * 256, 10), (batch, skv, Const::<256>))?;
        let v = dev.tensor_from(&halves(batch * skv * 256, 11), (batch, skv, Const::<256>))?;
        let mut out = dev.zeros((batch, sq, Const::<1024>))?;
        let (r, p) = profile(arch, || {
            kernels::profile_flash_attention(&q, &k, &v, &mut out)
        });
        r?;
        println!(
            "flash attention (B, S_q, S_kv) = ({batch}, {sq}, {skv}), 8 heads over 2 KV heads of 128, fp16\n{p}"
        );
        save("flash_attention", &p)?;
    }
    println!(
        "timelines of each kernel's larger run: target/profile/*.json (Perfetto, chrome://tracing) and *.svg"
    );
    Ok(())
}
