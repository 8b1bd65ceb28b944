//! PyPTO's example 2: attention with a dynamic batch and sequence length.
//! One compiled kernel serves (B, S) = (4, 128) and then (2, 256).
//!
//! Run with `cargo run --release --example attention`.

use std::time::Instant;

use anyhow::{Context, ensure};
use pypto_rt::{Const, Device};

#[path = "common/reference.rs"]
mod reference;
use reference::{attention_reference, data, max_abs_diff};

// `mod kernels`: the typed wrappers examples/build.rs generated.
pypto_rt::include_kernels!();

const HIDDEN: usize = 768;

fn main() -> anyhow::Result<()> {
    let dev = Device::default();
    println!("device: {dev}");
    for (batch, seq) in [(4usize, 128usize), (2, 256)] {
        let n = batch * seq * HIDDEN;
        // Inputs in [-1, 1): realistic activations.
        let [q, k, v] =
            [1u64, 2, 3].map(|seed| data(n, seed).iter().map(|x| x / 4.0).collect::<Vec<f32>>());
        let shape = (batch, seq, Const::<HIDDEN>);
        let (tq, tk, tv) = (
            dev.tensor_from(&q, shape)?,
            dev.tensor_from(&k, shape)?,
            dev.tensor_from(&v, shape)?,
        );
        let mut out = dev.zeros(shape)?;

        let started = Instant::now();
        kernels::attention_kernel(&tq, &tk, &tv, &mut out).context("attention_kernel failed")?;
        let elapsed = started.elapsed();

        let want = attention_reference(&q, &k, &v, (batch, seq, HIDDEN), 1, false);
        let err = max_abs_diff(&out.to_vec()?, &want);
        // fp32 arithmetic against an f64 reference, outputs of magnitude < 1.
        ensure!(
            err < 1e-4,
            "(B, S) = ({batch}, {seq}): error {err} is too large"
        );
        println!(
            "(B, S) = ({batch}, {seq}): max |kernel - reference| = {err:.2e}, call took {:.1} ms",
            elapsed.as_secs_f64() * 1e3
        );
    }
    println!("one compiled kernel served both shapes");
    Ok(())
}
