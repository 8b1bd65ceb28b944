//! A small Llama-style model served end to end with builtins only: 2
//! layers, hidden 512, 8 query heads over 2 KV heads of 64, SwiGLU 1408, a
//! vocabulary of 4096, weights from a fixed seed. Five requests of
//! different prompt lengths, four at a time: each prompt is prefilled
//! (RoPE at each token's position, its keys and values written into a
//! paged KV cache by reshape_and_cache at slots from a small block
//! allocator), then every running request decodes a token a step with
//! greedy argmax; requests stop at different lengths, their blocks are
//! freed and taken by the next request. The kernels are
//! examples/kernels/llama_decode.yaml, the model, its plain-Rust reference
//! and the serving loop examples/common/llama.rs.
//!
//! Each model is checked token by token against the reference
//! (`Precision::tolerance`): in fp32 (the attention in fp16, as the
//! attention builtins take) the logits within 0.01 of the reference's and
//! every generated token the reference's; in fp16 the logits within 0.02
//! and the tokens the same wherever the reference's two largest logits are
//! further apart than that; w8a8 the same within 0.25. Any mismatch exits
//! with an error (status 1). Then one decode step is modelled on an Atlas
//! A2 at batch 4 and 16: each kernel's modelled time, the step's, and the
//! modelled tokens per second.
//!
//! Run with `cargo run --example llama_decode` (fp32 and fp16). Choose the
//! models with `--fp32`, `--fp16` and `--w8a8` (the model with w8a8 linear
//! layers, checked against a plain-Rust model of the same quantisation);
//! `--small` for a smaller model (one layer, hidden 128, vocabulary 512),
//! `--no-profile` to skip the modelled decode step. In debug all three
//! models at full size take about 20 s (CI runs them).

use anyhow::{Context, bail};
use half::f16;
use pypto_rt::{Device, ModelArch, Profiler};

// `mod kernels`: the typed wrappers examples/build.rs generated.
pypto_rt::include_kernels!();

#[path = "common/llama.rs"]
mod llama;

use llama::{Attend, Config, DeviceModel, Precision, Served, Weights};

fn print_served(p: Precision, served: &Served) {
    let tol = p.tolerance();
    for e in &served.events {
        println!("  {e}");
    }
    for (id, tokens) in served.generated.iter().enumerate() {
        println!("  request {id}: {tokens:?}");
    }
    let c = &served.comparison;
    match p.exact_tokens() {
        true => println!(
            "  {}: {} sampled tokens over {} decode steps, every one the reference's; \
             logits within {:.1e} of the reference's (tolerance {tol}); its two largest never closer than {:.4}{}",
            p.name(),
            c.tokens,
            served.decode_steps,
            c.max_logit_diff,
            c.min_gap,
            c.closest
                .as_ref()
                .map(|c| format!(
                    " (request {}, {}: token {} at {:.4}, token {} at {:.4})",
                    c.request, c.at, c.best.0, c.best.1, c.second.0, c.second.1
                ))
                .unwrap_or_default()
        ),
        false => println!(
            "  {}: {} sampled tokens over {} decode steps; logits within {:.4} of the reference's \
             (tolerance {tol}); {} steps where the reference's two largest were within the tolerance \
             ({} of them chose another token), every other token the reference's",
            p.name(),
            c.tokens,
            served.decode_steps,
            c.max_logit_diff,
            c.close,
            c.close_differ
        ),
    }
}

/// One decode step of the fp16 (or w8a8) model at `batch` requests, each
/// with `cached` tokens in its blocks, modelled on an Atlas A2: per kernel,
/// its launches and modelled time; returns the step's modelled time in us.
fn profile_step(
    cfg: &Config,
    precision: Precision,
    batch: usize,
    cached: usize,
) -> anyhow::Result<f64> {
    let dev = Device::host();
    let blocks_each = (cached + 1).div_ceil(llama::BLOCK);
    let cfg = Config {
        cache_blocks: batch * blocks_each,
        max_batch: batch,
        ..cfg.clone()
    };
    let w = Weights::new(&cfg, precision);
    let mut model = DeviceModel::<f16>::new(&dev, &w)?;
    let tokens: Vec<i32> = (0..batch as i32)
        .map(|b| b * 7 % cfg.vocab as i32)
        .collect();
    let positions = vec![cached as i32; batch];
    let table: Vec<i32> = (0..(batch * blocks_each) as i32).collect();
    let slots: Vec<i32> = (0..batch)
        .map(|b| (b * blocks_each * llama::BLOCK + cached) as i32)
        .collect();
    let seq_lens = vec![cached as i32 + 1; batch];
    let attend = Attend::Decode {
        table: &table,
        width: blocks_each,
        seq_lens: &seq_lens,
    };
    let (r, profile) = Profiler::new(ModelArch::AtlasA2)
        .trace(false)
        .run(|| model.forward(&tokens, &positions, &slots, &attend));
    r?;
    // Per kernel: launches and modelled time, in the order first launched.
    let mut rows: Vec<(&str, usize, u64)> = Vec::new();
    for l in &profile.launches {
        match rows.iter_mut().find(|r| r.0 == l.kernel) {
            Some(r) => {
                r.1 += 1;
                r.2 += l.cycles;
            }
            None => rows.push((l.kernel, 1, l.cycles)),
        }
    }
    let arch = profile.arch;
    println!(
        "one decode step at batch {batch}, {cached} tokens cached per request, {} model, modelled on {arch} \
         (a model, not a measurement):",
        precision.name()
    );
    println!("  {:<24} {:>8} {:>10}", "kernel", "launches", "us");
    for (kernel, n, cycles) in &rows {
        println!("  {kernel:<24} {n:>8} {:>10.2}", arch.micros(*cycles));
    }
    let total = profile.micros();
    println!(
        "  {:<24} {:>8} {total:>10.2}   modelled: {:.0} tokens/s",
        "step",
        profile.launches.len(),
        batch as f64 / total * 1e6
    );
    Ok(total)
}

fn main() -> anyhow::Result<()> {
    let mut small = false;
    let mut models = Vec::new();
    let mut profile = true;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--small" => small = true,
            "--fp32" => models.push(Precision::Fp32),
            "--fp16" => models.push(Precision::Fp16),
            "--w8a8" => models.push(Precision::W8a8),
            "--no-profile" => profile = false,
            other => bail!(
                "unknown argument {other:?}: expected --small, --fp32, --fp16, --w8a8 or --no-profile"
            ),
        }
    }
    if models.is_empty() {
        models = vec![Precision::Fp32, Precision::Fp16];
    }
    let cfg = if small {
        Config::small()
    } else {
        Config::full()
    };
    let dev = Device::default();
    println!("device: {dev}");
    println!(
        "model: {} layers, hidden {}, {} query heads over {} KV heads of {}, SwiGLU {}, vocabulary {}; \
         KV cache of {} blocks of {} tokens; {} requests (prompt, new tokens) {:?}, at most {} at once",
        cfg.layers,
        cfg.hidden,
        llama::HEADS,
        llama::KV_HEADS,
        llama::HEAD,
        cfg.ffn,
        cfg.vocab,
        cfg.cache_blocks,
        llama::BLOCK,
        cfg.requests.len(),
        cfg.requests,
        cfg.max_batch
    );
    for &p in &models {
        let w = Weights::new(&cfg, p);
        println!("{} model:", p.name());
        let served = llama::serve(&dev, &w).with_context(|| format!("the {} model", p.name()))?;
        print_served(p, &served);
    }
    println!("tokens match the reference");
    if profile {
        // The fp16 model's step, and the w8a8 model's if it ran.
        for p in [Precision::Fp16, Precision::W8a8] {
            if p == Precision::Fp16 || models.contains(&p) {
                for batch in [4, 16] {
                    profile_step(&cfg, p, batch, 64)?;
                }
            }
        }
    }
    Ok(())
}
