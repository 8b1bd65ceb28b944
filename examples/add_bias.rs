//! PyPTO's example 1: `add_bias` with a dynamic batch. One compiled kernel
//! serves batch 2 and batch 8; nothing is rebuilt between the calls.
//!
//! Run with `cargo run --example add_bias`.

use anyhow::{Context, ensure};
use pypto_rt::{Const, Device};

// `mod kernels`: the typed wrappers examples/build.rs generated.
pypto_rt::include_kernels!();

const HIDDEN_SIZE: usize = 128;

/// The plain-Rust reference: out[r][c] = x[r][c] + bias[c].
fn reference(x: &[f32], bias: &[f32]) -> Vec<f32> {
    x.chunks(bias.len())
        .flat_map(|row| row.iter().zip(bias).map(|(a, b)| a + b))
        .collect()
}

fn main() -> anyhow::Result<()> {
    let dev = Device::default();
    println!("device: {dev}");
    let bias_data: Vec<f32> = (0..HIDDEN_SIZE).map(|c| c as f32 * 0.5).collect();
    let bias = dev.tensor_from(&bias_data, (Const::<HIDDEN_SIZE>,))?;

    for batch in [2usize, 8] {
        let x_data: Vec<f32> = (0..batch * HIDDEN_SIZE)
            .map(|i| (i as f32 * 0.37).sin())
            .collect();
        let x = dev.tensor_from(&x_data, (batch, Const::<HIDDEN_SIZE>))?;
        let mut out = dev.zeros((batch, Const::<HIDDEN_SIZE>))?;
        kernels::add_bias(&x, &bias, &mut out).context("add_bias failed")?;

        let got = out.to_vec()?;
        let want = reference(&x_data, &bias_data);
        // Each element is one fp32 addition, as in the reference: exact.
        ensure!(got == want, "batch {batch}: kernel and reference differ");
        println!(
            "batch {batch}: out is {:?}, matches the plain-Rust reference; out[0][..4] = {:?}, out[{}][124..] = {:?}",
            out.sizes(),
            &got[..4],
            batch - 1,
            &got[got.len() - 4..]
        );
    }
    println!("one compiled kernel served both batch sizes");
    Ok(())
}
