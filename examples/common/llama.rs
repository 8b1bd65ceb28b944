//! A small Llama-style model served with builtins only, and a plain-Rust
//! reference model that runs the same requests: the code behind
//! `cargo run --example llama_decode` (examples/llama_decode.rs), also
//! run by tests/llama_serve.rs. The kernels are examples/kernels/llama_decode.yaml;
//! `crate::kernels` is their generated module.
//!
//! The model: token embeddings, `layers` decoder layers (RMS norm, q/k/v
//! projections, NeoX RoPE, grouped-query attention of 8 query heads over
//! 2 KV heads of 64, the output projection, the residual add fused with
//! the MLP's RMS norm, a SwiGLU MLP), a final RMS norm, an LM head and
//! greedy sampling. Weights come from a fixed seed.
//!
//! Serving: requests wait in a queue; at most `max_batch` run at once.
//! Each admitted request's prompt is prefilled (all admitted prompts in one
//! pass: the tokens packed, the attention over each prompt padded to the
//! longest by gather_rows), its keys and values written into a paged KV
//! cache of 128-token blocks by reshape_and_cache at slots from a small
//! block allocator; then every running request decodes one token a step
//! (paged_attention over its blocks). A request that has its `max_new`
//! tokens leaves, its blocks go back to the allocator, and the next request
//! waiting takes its place (and, the allocator being last in first out,
//! its blocks).
//!
//! The check: the reference model computes in f64 and rounds to the
//! model's dtype wherever the device stores a tensor (the w8a8 model's
//! quantisation modelled exactly: per-token int8 by the casts
//! dynamic_quant documents, exact int32 sums, the fp32 dequantisation in
//! quant_matmul's order). It is fed the tokens the device chose, so one
//! close call does not make the rest incomparable. At every sampled token
//! it compares the logits; the device's argmax must be the host's argmax of
//! the device's logits; and the device's token must be the reference's
//! wherever the reference's two largest logits are further apart than the
//! tolerance (in fp32: everywhere).

use std::collections::VecDeque;

use anyhow::{Context, Result, bail, ensure};
use half::f16;
use pypto_rt::{Const, DType, Device, Error, Tensor};

use crate::kernels;

/// Query heads, KV heads and the head size: fixed by the attention
/// kernels' options.
pub const HEADS: usize = 8;
pub const KV_HEADS: usize = 2;
pub const HEAD: usize = 64;
/// One token's query heads and its key (or value) heads.
pub const Q_WIDTH: usize = HEADS * HEAD;
pub const KV_WIDTH: usize = KV_HEADS * HEAD;
/// Tokens per KV-cache block (paged_attention's).
pub const BLOCK: usize = 128;
const EPS: f32 = 1e-5;
const ROPE_THETA: f64 = 10000.0;

/// The model's sizes and the requests it serves.
#[derive(Debug, Clone)]
pub struct Config {
    pub layers: usize,
    pub hidden: usize,
    /// SwiGLU's intermediate size (a multiple of 16: matmul's columns).
    pub ffn: usize,
    pub vocab: usize,
    /// Blocks of 128 tokens in the KV cache (each layer's).
    pub cache_blocks: usize,
    /// Requests that run at once.
    pub max_batch: usize,
    /// Positions the RoPE table holds.
    pub max_pos: usize,
    /// Each request's prompt length and how many tokens it generates.
    pub requests: Vec<(usize, usize)>,
    pub seed: u64,
}

impl Config {
    /// The example's model: 2 layers, hidden 512, SwiGLU 1408, a vocabulary
    /// of 4096. Five requests, four at once: request 1's prompt of 120
    /// tokens grows into a second cache block while it decodes, request 2
    /// stops after 12 tokens and request 4 (waiting until then) takes its
    /// block. Five blocks in all, so the cache is full at times.
    pub fn full() -> Config {
        Config {
            layers: 2,
            hidden: 512,
            ffn: 1408,
            vocab: 4096,
            cache_blocks: 5,
            max_batch: 4,
            max_pos: 256,
            requests: vec![(13, 32), (120, 32), (37, 12), (5, 32), (64, 20)],
            seed: 2026,
        }
    }

    /// A quicker model for tests: one layer, hidden 128, SwiGLU 256, a
    /// vocabulary of 512, shorter runs; the same serving pattern.
    pub fn small() -> Config {
        Config {
            layers: 1,
            hidden: 128,
            ffn: 256,
            vocab: 512,
            cache_blocks: 5,
            max_batch: 4,
            max_pos: 256,
            requests: vec![(9, 8), (124, 10), (21, 3), (4, 8), (30, 6)],
            seed: 7,
        }
    }

    pub fn check(&self) -> Result<()> {
        ensure!(self.layers > 0, "the model needs a layer");
        for (name, v) in [
            ("hidden", self.hidden),
            ("ffn", self.ffn),
            ("vocab", self.vocab),
        ] {
            ensure!(
                v > 0 && v % 16 == 0,
                "{name} is {v}: matmul's output columns must be a positive multiple of 16"
            );
        }
        ensure!(self.max_batch > 0, "max_batch is 0: no request could run");
        for (i, &(prompt, max_new)) in self.requests.iter().enumerate() {
            ensure!(
                prompt > 0 && max_new > 0,
                "request {i}: a prompt of {prompt} tokens generating {max_new}: both must be at least 1"
            );
            ensure!(
                prompt + max_new <= self.max_pos,
                "request {i}: {prompt} prompt tokens and {max_new} new ones pass the {} positions of the RoPE table",
                self.max_pos
            );
        }
        Ok(())
    }
}

/// The model's dtype: fp32 (the attention in fp16: the attention builtins
/// take fp16 or bf16 only), fp16, or fp16 with w8a8 linear layers (the
/// embeddings and the LM head stay fp16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    Fp32,
    Fp16,
    W8a8,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::W8a8 => "w8a8",
        }
    }

    /// How far the device's logits may be from the reference's. fp32:
    /// 0.01 (its differences come from the fp16 attention only: 2e-3 at
    /// most in the example). fp16: 0.02 (the logits, about 2 wide, differ
    /// by up to 8e-3 in the example, 2 fp16 steps at 4). w8a8: 0.25
    /// (dynamic_quant turns an input one fp16 step off that sits near a
    /// rounding boundary into an int8 value one step, 1/127 of the row's
    /// largest, off: up to 0.16 in the example).
    pub fn tolerance(self) -> f64 {
        match self {
            Precision::Fp32 => 0.01,
            Precision::Fp16 => 0.02,
            Precision::W8a8 => 0.25,
        }
    }

    /// Whether every token must be the reference's, however close its two
    /// largest logits (fp32), or only where they are further apart than
    /// the tolerance.
    pub fn exact_tokens(self) -> bool {
        self == Precision::Fp32
    }

    /// Rounds to the dtype the model keeps its activations in.
    fn round(self, v: f64) -> f64 {
        match self {
            Precision::Fp32 => v as f32 as f64,
            _ => half_round(v),
        }
    }
}

fn half_round(v: f64) -> f64 {
    f64::from(f16::from_f64(v))
}

// ---- the weights -------------------------------------------------------------

/// Deterministic values in [-1, 1) (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    fn values(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| self.next() * scale).collect()
    }
}

/// A linear layer `[k] -> [j]`: dense weights `[k, j]` (as matmul takes
/// them), or int8 weights `[j, k]` with a scale per output channel (as
/// quant_matmul takes them).
#[derive(Debug, Clone)]
pub enum Linear {
    Dense {
        w: Vec<f64>,
        k: usize,
        j: usize,
    },
    Quant {
        w: Vec<i8>,
        scale: Vec<f32>,
        k: usize,
        j: usize,
    },
}

impl Linear {
    /// Symmetric per-channel int8: scale = max |w| / 127 over the
    /// channel, w / scale rounded to nearest, ties to even.
    pub fn quantise(w: &[f64], k: usize, j: usize) -> Linear {
        let mut q = vec![0i8; j * k];
        let mut scale = vec![0f32; j];
        for c in 0..j {
            let m = (0..k).fold(0f32, |m, r| m.max(w[r * j + c].abs() as f32));
            scale[c] = m / 127.0;
            for r in 0..k {
                let v = if m > 0.0 {
                    w[r * j + c] as f32 / scale[c]
                } else {
                    0.0
                };
                q[c * k + r] = v.round_ties_even().clamp(-127.0, 127.0) as i8;
            }
        }
        Linear::Quant { w: q, scale, k, j }
    }

    /// `x` `[k]` through the layer, before the output's rounding.
    pub fn apply(&self, x: &[f64]) -> Vec<f64> {
        match self {
            Linear::Dense { w, k, j } => {
                let mut out = vec![0f64; *j];
                for (r, &xv) in x.iter().enumerate().take(*k) {
                    for (o, wv) in out.iter_mut().zip(&w[r * j..(r + 1) * j]) {
                        *o += xv * wv;
                    }
                }
                out
            }
            Linear::Quant { w, scale, k, .. } => {
                let (q, s) = quantise_row(x);
                w.chunks(*k)
                    .zip(scale)
                    .map(|(row, &ws)| {
                        let acc: i32 = row
                            .iter()
                            .zip(&q)
                            .map(|(&a, &b)| i32::from(a) * i32::from(b))
                            .sum();
                        f64::from(acc as f32 * s * ws)
                    })
                    .collect()
            }
        }
    }
}

/// dynamic_quant on one row (fp16 values): m = max |x|, q = x · (127 / m)
/// in fp32 rounded to nearest even (the documented casts round the product
/// once), scale = m / 127.
pub fn quantise_row(x: &[f64]) -> (Vec<i8>, f32) {
    let m = x.iter().fold(0f32, |m, &v| m.max((v as f32).abs()));
    let factor = if m > 0.0 && m.is_finite() {
        127.0 / m
    } else {
        0.0
    };
    let q = x
        .iter()
        .map(|&v| ((v as f32) * factor).round_ties_even() as i8)
        .collect();
    (q, m / 127.0)
}

/// One decoder layer's weights, rounded to the model's dtype, widened.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub attn_norm: Vec<f64>,
    pub wq: Linear,
    pub wk: Linear,
    pub wv: Linear,
    /// fp16 in every model (it takes the attention's fp16 output).
    pub wo: Linear,
    pub mlp_norm: Vec<f64>,
    /// `[hidden, 2·ffn]`: the gate's columns, then the up projection's.
    pub w_gate_up: Linear,
    pub w_down: Linear,
}

/// Every weight, each value representable in the dtype the device holds
/// it in, so that device and reference start from the same numbers.
#[derive(Debug, Clone)]
pub struct Weights {
    pub precision: Precision,
    pub cfg: Config,
    pub embed: Vec<f64>,
    pub layers: Vec<LayerWeights>,
    pub final_norm: Vec<f64>,
    /// `[hidden, vocab]`, dense in every model.
    pub lm_head: Vec<f64>,
    /// RoPE's table `[max_pos, 64]` (fp32): the cos of each position's 32
    /// angles, then their sin.
    pub cos_sin: Vec<f32>,
}

impl Weights {
    pub fn new(cfg: &Config, precision: Precision) -> Weights {
        let mut rng = Rng(cfg.seed);
        let (h, f) = (cfg.hidden, cfg.ffn);
        let act = |v: Vec<f64>| -> Vec<f64> { v.into_iter().map(|x| precision.round(x)).collect() };
        // Uniform in ±√(3/k): outputs of about unit variance.
        let linear = |rng: &mut Rng, k: usize, j: usize, fp16: bool| {
            let w: Vec<f64> = rng
                .values(k * j, (3.0 / k as f64).sqrt())
                .into_iter()
                .map(|x| {
                    if fp16 {
                        half_round(x)
                    } else {
                        precision.round(x)
                    }
                })
                .collect();
            if precision == Precision::W8a8 {
                Linear::quantise(&w, k, j)
            } else {
                Linear::Dense { w, k, j }
            }
        };
        let norm = |rng: &mut Rng| act(rng.values(h, 0.2).iter().map(|x| 1.0 + x).collect());
        let embed = act(rng.values(cfg.vocab * h, 1.7));
        let layers = (0..cfg.layers)
            .map(|_| LayerWeights {
                attn_norm: norm(&mut rng),
                wq: linear(&mut rng, h, Q_WIDTH, false),
                wk: linear(&mut rng, h, KV_WIDTH, false),
                wv: linear(&mut rng, h, KV_WIDTH, false),
                wo: linear(&mut rng, Q_WIDTH, h, true),
                mlp_norm: norm(&mut rng),
                w_gate_up: linear(&mut rng, h, 2 * f, false),
                w_down: linear(&mut rng, f, h, false),
            })
            .collect();
        let final_norm = norm(&mut rng);
        // Logits of about 2 standard deviations' spread.
        let lm_head = act(rng.values(h * cfg.vocab, 2.0 * (3.0 / h as f64).sqrt()));
        let half = HEAD / 2;
        let mut cos_sin = vec![0f32; cfg.max_pos * HEAD];
        for p in 0..cfg.max_pos {
            for i in 0..half {
                let angle = p as f64 * ROPE_THETA.powf(-2.0 * i as f64 / HEAD as f64);
                cos_sin[p * HEAD + i] = angle.cos() as f32;
                cos_sin[p * HEAD + half + i] = angle.sin() as f32;
            }
        }
        Weights {
            precision,
            cfg: cfg.clone(),
            embed,
            layers,
            final_norm,
            lm_head,
            cos_sin,
        }
    }
}

// ---- the reference model ------------------------------------------------------

/// One request's state in the reference: its keys and values per layer,
/// `[tokens, KV_WIDTH]` each.
#[derive(Debug, Clone, Default)]
pub struct RefSeq {
    keys: Vec<Vec<f64>>,
    values: Vec<Vec<f64>>,
}

fn rms_norm(x: &[f64], w: &[f64], round: impl Fn(f64) -> f64) -> Vec<f64> {
    let mean = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let scale = 1.0 / (mean + f64::from(EPS)).sqrt();
    x.iter().zip(w).map(|(v, w)| round(v * scale * w)).collect()
}

/// NeoX RoPE on each head of 64 of `x` at `pos`, rounded to fp16.
fn rope(x: &[f64], pos: usize, table: &[f32]) -> Vec<f64> {
    let half = HEAD / 2;
    let row = &table[pos * HEAD..(pos + 1) * HEAD];
    let mut out = x.to_vec();
    for head in x.chunks(HEAD).zip(out.chunks_mut(HEAD)) {
        let (x, out) = head;
        for i in 0..half {
            let (c, s) = (f64::from(row[i]), f64::from(row[half + i]));
            out[i] = half_round(x[i] * c - x[half + i] * s);
            out[half + i] = half_round(x[half + i] * c + x[i] * s);
        }
    }
    out
}

impl Weights {
    /// The reference model on `tokens` at positions `start..`, appending
    /// their keys and values to `seq`; the logits after the last token.
    pub fn reference(&self, seq: &mut RefSeq, tokens: &[i32], start: usize) -> Vec<f64> {
        let (h, f) = (self.cfg.hidden, self.cfg.ffn);
        let p = self.precision;
        let r = |v: f64| p.round(v);
        if seq.keys.is_empty() {
            seq.keys = vec![Vec::new(); self.cfg.layers];
            seq.values = vec![Vec::new(); self.cfg.layers];
        }
        let mut logits = Vec::new();
        for (i, &token) in tokens.iter().enumerate() {
            let pos = start + i;
            let t = token as usize;
            let mut residual = self.embed[t * h..(t + 1) * h].to_vec();
            // The value the next norm adds to the residual (none before
            // the first layer).
            let mut pending: Option<Vec<f64>> = None;
            for (l, w) in self.layers.iter().enumerate() {
                let normed = match pending.take() {
                    None => rms_norm(&residual, &w.attn_norm, r),
                    Some(add) => {
                        let sum: Vec<f64> = residual.iter().zip(&add).map(|(a, b)| a + b).collect();
                        residual = sum.iter().map(|&v| r(v)).collect();
                        rms_norm(&sum, &w.attn_norm, r)
                    }
                };
                let q: Vec<f64> = w.wq.apply(&normed).into_iter().map(half_round).collect();
                let k: Vec<f64> = w.wk.apply(&normed).into_iter().map(half_round).collect();
                let v: Vec<f64> = w.wv.apply(&normed).into_iter().map(half_round).collect();
                let q = rope(&q, pos, &self.cos_sin);
                seq.keys[l].extend(rope(&k, pos, &self.cos_sin));
                seq.values[l].extend(v);
                let attn = attention(&q, &seq.keys[l], &seq.values[l]);
                let o = w.wo.apply(&attn);
                let sum: Vec<f64> = residual.iter().zip(&o).map(|(a, b)| a + r(*b)).collect();
                residual = sum.iter().map(|&v| r(v)).collect();
                let normed = rms_norm(&sum, &w.mlp_norm, r);
                let gate_up: Vec<f64> = w.w_gate_up.apply(&normed).into_iter().map(r).collect();
                let act: Vec<f64> = (0..f)
                    .map(|j| {
                        let (a, b) = (gate_up[j], gate_up[f + j]);
                        r(a / (1.0 + (-a).exp()) * b)
                    })
                    .collect();
                pending = Some(w.w_down.apply(&act).into_iter().map(r).collect());
            }
            if i + 1 == tokens.len() {
                let add = pending.expect("a layer");
                let sum: Vec<f64> = residual.iter().zip(&add).map(|(a, b)| a + b).collect();
                let normed = rms_norm(&sum, &self.final_norm, r);
                let head = Linear::Dense {
                    w: self.lm_head.clone(),
                    k: h,
                    j: self.cfg.vocab,
                };
                logits = head.apply(&normed).into_iter().map(r).collect();
            }
        }
        logits
    }
}

/// One token's query heads against every cached key and value (grouped:
/// query head `i` reads KV head `i / 4`), in f64, rounded to fp16.
fn attention(q: &[f64], keys: &[f64], values: &[f64]) -> Vec<f64> {
    let n = keys.len() / KV_WIDTH;
    let mut out = vec![0f64; Q_WIDTH];
    for head in 0..HEADS {
        let kv = head / (HEADS / KV_HEADS) * HEAD;
        let qh = &q[head * HEAD..(head + 1) * HEAD];
        let scores: Vec<f64> = (0..n)
            .map(|j| {
                let kh = &keys[j * KV_WIDTH + kv..j * KV_WIDTH + kv + HEAD];
                qh.iter().zip(kh).map(|(a, b)| a * b).sum::<f64>() / (HEAD as f64).sqrt()
            })
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
        let total: f64 = e.iter().sum();
        let o = &mut out[head * HEAD..(head + 1) * HEAD];
        for (j, ej) in e.iter().enumerate() {
            let vh = &values[j * KV_WIDTH + kv..j * KV_WIDTH + kv + HEAD];
            for (o, v) in o.iter_mut().zip(vh) {
                *o += ej / total * v;
            }
        }
        o.iter_mut().for_each(|v| *v = half_round(*v));
    }
    out
}

// ---- the device model ------------------------------------------------------------

pub type Mat<T> = Tensor<T, (usize, usize)>;
pub type Row<T> = Tensor<T, (usize,)>;
type Cache = Tensor<f16, (usize, Const<BLOCK>, Const<KV_WIDTH>)>;

/// The dtype the model keeps its activations in, and its kernels.
pub trait Act: DType {
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn gather(x: &Mat<Self>, index: &Row<i32>, out: &mut Mat<Self>) -> Result<(), Error>;
    fn rms_norm(x: &Mat<Self>, w: &Row<Self>, out: &mut Mat<Self>) -> Result<(), Error>;
    fn add_rms_norm(
        x: &Mat<Self>,
        residual: &Mat<Self>,
        w: &Row<Self>,
        sum: &mut Mat<Self>,
        out: &mut Mat<Self>,
    ) -> Result<(), Error>;
    fn matmul(a: &Mat<Self>, b: &Mat<Self>, out: &mut Mat<Self>) -> Result<(), Error>;
    /// The q, k and v projections: out in fp16 for the attention.
    fn matmul_to_f16(a: &Mat<Self>, b: &Mat<Self>, out: &mut Mat<f16>) -> Result<(), Error>;
    /// The output projection: the attention's fp16 output, fp16 weights.
    fn matmul_from_f16(a: &Mat<f16>, b: &Mat<f16>, out: &mut Mat<Self>) -> Result<(), Error>;
    fn swiglu(x: &Mat<Self>, out: &mut Mat<Self>) -> Result<(), Error>;
    fn argmax(x: &Mat<Self>, out: &mut Row<i32>) -> Result<(), Error>;
    /// The activations as fp16 (for w8a8), if they are.
    fn as_f16(x: &Mat<Self>) -> Option<&Mat<f16>>;
    fn as_f16_mut(x: &mut Mat<Self>) -> Option<&mut Mat<f16>>;
}

impl Act for f32 {
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn gather(x: &Mat<f32>, index: &Row<i32>, out: &mut Mat<f32>) -> Result<(), Error> {
        kernels::ld_gather_f32(x, index, out)
    }
    fn rms_norm(x: &Mat<f32>, w: &Row<f32>, out: &mut Mat<f32>) -> Result<(), Error> {
        kernels::ld_rms_norm_f32(x, w, EPS, out)
    }
    fn add_rms_norm(
        x: &Mat<f32>,
        residual: &Mat<f32>,
        w: &Row<f32>,
        sum: &mut Mat<f32>,
        out: &mut Mat<f32>,
    ) -> Result<(), Error> {
        kernels::ld_add_rms_norm_f32(x, residual, w, EPS, sum, out)
    }
    fn matmul(a: &Mat<f32>, b: &Mat<f32>, out: &mut Mat<f32>) -> Result<(), Error> {
        kernels::ld_matmul_f32(a, b, out)
    }
    fn matmul_to_f16(a: &Mat<f32>, b: &Mat<f32>, out: &mut Mat<f16>) -> Result<(), Error> {
        kernels::ld_matmul_f32_to_f16(a, b, out)
    }
    fn matmul_from_f16(a: &Mat<f16>, b: &Mat<f16>, out: &mut Mat<f32>) -> Result<(), Error> {
        kernels::ld_matmul_f16_to_f32(a, b, out)
    }
    fn swiglu(x: &Mat<f32>, out: &mut Mat<f32>) -> Result<(), Error> {
        kernels::ld_swiglu_f32(x, out)
    }
    fn argmax(x: &Mat<f32>, out: &mut Row<i32>) -> Result<(), Error> {
        kernels::ld_argmax_f32(x, out)
    }
    fn as_f16(_: &Mat<f32>) -> Option<&Mat<f16>> {
        None
    }
    fn as_f16_mut(_: &mut Mat<f32>) -> Option<&mut Mat<f16>> {
        None
    }
}

impl Act for f16 {
    fn from_f64(v: f64) -> f16 {
        f16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn gather(x: &Mat<f16>, index: &Row<i32>, out: &mut Mat<f16>) -> Result<(), Error> {
        kernels::ld_gather_f16(x, index, out)
    }
    fn rms_norm(x: &Mat<f16>, w: &Row<f16>, out: &mut Mat<f16>) -> Result<(), Error> {
        kernels::ld_rms_norm_f16(x, w, EPS, out)
    }
    fn add_rms_norm(
        x: &Mat<f16>,
        residual: &Mat<f16>,
        w: &Row<f16>,
        sum: &mut Mat<f16>,
        out: &mut Mat<f16>,
    ) -> Result<(), Error> {
        kernels::ld_add_rms_norm_f16(x, residual, w, EPS, sum, out)
    }
    fn matmul(a: &Mat<f16>, b: &Mat<f16>, out: &mut Mat<f16>) -> Result<(), Error> {
        kernels::ld_matmul_f16(a, b, out)
    }
    fn matmul_to_f16(a: &Mat<f16>, b: &Mat<f16>, out: &mut Mat<f16>) -> Result<(), Error> {
        kernels::ld_matmul_f16(a, b, out)
    }
    fn matmul_from_f16(a: &Mat<f16>, b: &Mat<f16>, out: &mut Mat<f16>) -> Result<(), Error> {
        kernels::ld_matmul_f16(a, b, out)
    }
    fn swiglu(x: &Mat<f16>, out: &mut Mat<f16>) -> Result<(), Error> {
        kernels::ld_swiglu_f16(x, out)
    }
    fn argmax(x: &Mat<f16>, out: &mut Row<i32>) -> Result<(), Error> {
        kernels::ld_argmax_f16(x, out)
    }
    fn as_f16(x: &Mat<f16>) -> Option<&Mat<f16>> {
        Some(x)
    }
    fn as_f16_mut(x: &mut Mat<f16>) -> Option<&mut Mat<f16>> {
        Some(x)
    }
}

/// A linear layer on the device.
enum Proj<T: DType> {
    Dense(Mat<T>),
    Quant { w: Mat<i8>, scale: Row<f32> },
}

impl<T: Act> Proj<T> {
    fn upload(dev: &Device, l: &Linear) -> Result<Proj<T>> {
        Ok(match l {
            Linear::Dense { w, k, j } => {
                let w: Vec<T> = w.iter().map(|&v| T::from_f64(v)).collect();
                Proj::Dense(dev.tensor_from(&w, (*k, *j))?)
            }
            Linear::Quant { w, scale, k, j } => Proj::Quant {
                w: dev.tensor_from(w, (*j, *k))?,
                scale: dev.tensor_from(scale, (*j,))?,
            },
        })
    }

    fn out_features(&self) -> usize {
        match self {
            Proj::Dense(w) => w.sizes()[1],
            Proj::Quant { w, .. } => w.sizes()[0],
        }
    }
}

/// Activations quantised per token: int8 values and a scale per row.
struct Quantised {
    q: Mat<i8>,
    scale: Row<f32>,
}

fn quantise(x: &Mat<f16>) -> Result<Quantised> {
    let dev = x.device();
    let (t, k) = (x.sizes()[0], x.sizes()[1]);
    let mut q = dev.zeros((t, k))?;
    let mut scale = dev.zeros((t,))?;
    kernels::ld_quant(x, &mut q, &mut scale).context("dynamic_quant")?;
    Ok(Quantised { q, scale })
}

/// A w8a8 layer: `x` quantised per token, then int8 × int8 on the cube.
pub fn w8a8(x: &Mat<f16>, w: &Mat<i8>, scale: &Row<f32>, out: &mut Mat<f16>) -> Result<()> {
    let x = quantise(x)?;
    kernels::ld_quant_matmul(&x.q, w, &x.scale, scale, out).context("quant_matmul")?;
    Ok(())
}

const W8A8_FP16: &str = "w8a8 layers take fp16 activations";

struct DevLayer<A: Act> {
    attn_norm: Row<A>,
    wq: Proj<A>,
    wk: Proj<A>,
    wv: Proj<A>,
    wo: Proj<f16>,
    mlp_norm: Row<A>,
    w_gate_up: Proj<A>,
    w_down: Proj<A>,
    k_cache: Cache,
    v_cache: Cache,
}

/// The model on the device, with its KV caches.
pub struct DeviceModel<A: Act> {
    dev: Device,
    embed: Mat<A>,
    layers: Vec<DevLayer<A>>,
    final_norm: Row<A>,
    lm_head: Mat<A>,
    cos_sin: Tensor<f32, (usize, Const<HEAD>)>,
}

/// What a forward pass attends to.
pub enum Attend<'a> {
    /// Prompts packed one after another, `lens[b]` tokens each.
    Prefill { lens: &'a [usize] },
    /// One token per request, against its blocks (`table`, `[B, width]`)
    /// and its first `seq_lens[b]` cached tokens (the new one included).
    Decode {
        table: &'a [i32],
        width: usize,
        seq_lens: &'a [i32],
    },
}

impl<A: Act> DeviceModel<A> {
    pub fn new(dev: &Device, w: &Weights) -> Result<DeviceModel<A>> {
        let cfg = &w.cfg;
        let row = |v: &[f64]| -> Result<Row<A>> {
            let v: Vec<A> = v.iter().map(|&x| A::from_f64(x)).collect();
            Ok(dev.tensor_from(&v, (v.len(),))?)
        };
        let mat = |v: &[f64], k: usize, j: usize| -> Result<Mat<A>> {
            let v: Vec<A> = v.iter().map(|&x| A::from_f64(x)).collect();
            Ok(dev.tensor_from(&v, (k, j))?)
        };
        let cache = || dev.zeros((cfg.cache_blocks, Const::<BLOCK>, Const::<KV_WIDTH>));
        let layers = w
            .layers
            .iter()
            .map(|l| {
                Ok(DevLayer {
                    attn_norm: row(&l.attn_norm)?,
                    wq: Proj::upload(dev, &l.wq)?,
                    wk: Proj::upload(dev, &l.wk)?,
                    wv: Proj::upload(dev, &l.wv)?,
                    wo: Proj::upload(dev, &l.wo)?,
                    mlp_norm: row(&l.mlp_norm)?,
                    w_gate_up: Proj::upload(dev, &l.w_gate_up)?,
                    w_down: Proj::upload(dev, &l.w_down)?,
                    k_cache: cache()?,
                    v_cache: cache()?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(DeviceModel {
            dev: dev.clone(),
            embed: mat(&w.embed, cfg.vocab, cfg.hidden)?,
            layers,
            final_norm: row(&w.final_norm)?,
            lm_head: mat(&w.lm_head, cfg.hidden, cfg.vocab)?,
            cos_sin: dev.tensor_from(&w.cos_sin, (cfg.max_pos, Const::<HEAD>))?,
        })
    }

    fn index(&self, v: &[i32]) -> Result<Row<i32>> {
        Ok(self.dev.tensor_from(v, (v.len(),))?)
    }

    /// `x` through a projection whose output the attention takes (fp16).
    /// `x` through projections whose outputs the attention takes (fp16);
    /// w8a8 ones share one quantisation of `x`.
    fn to_f16<const N: usize>(&self, x: &Mat<A>, projs: [&Proj<A>; N]) -> Result<[Mat<f16>; N]> {
        let mut quantised: Option<Quantised> = None;
        let mut outs = Vec::with_capacity(N);
        for p in projs {
            let mut out = self.dev.zeros((x.sizes()[0], p.out_features()))?;
            match p {
                Proj::Dense(w) => A::matmul_to_f16(x, w, &mut out).context("matmul")?,
                Proj::Quant { w, scale } => {
                    if quantised.is_none() {
                        quantised = Some(quantise(A::as_f16(x).context(W8A8_FP16)?)?);
                    }
                    let x = quantised.as_ref().expect("quantised");
                    kernels::ld_quant_matmul(&x.q, w, &x.scale, scale, &mut out)
                        .context("quant_matmul")?;
                }
            }
            outs.push(out);
        }
        Ok(outs
            .try_into()
            .unwrap_or_else(|_| unreachable!("one output per projection")))
    }

    fn project(&self, x: &Mat<A>, p: &Proj<A>) -> Result<Mat<A>> {
        let mut out = self.dev.zeros((x.sizes()[0], p.out_features()))?;
        match p {
            Proj::Dense(w) => A::matmul(x, w, &mut out).context("matmul")?,
            Proj::Quant { w, scale } => w8a8(
                A::as_f16(x).context(W8A8_FP16)?,
                w,
                scale,
                A::as_f16_mut(&mut out).context(W8A8_FP16)?,
            )?,
        }
        Ok(out)
    }

    /// A forward pass over `tokens` at `positions`, their keys and values
    /// written at `slots`; returns the logits `[B, vocab]` after each
    /// request's last token and the tokens the device samples from them.
    pub fn forward(
        &mut self,
        tokens: &[i32],
        positions: &[i32],
        slots: &[i32],
        attend: &Attend,
    ) -> Result<(Vec<f64>, Vec<i32>)> {
        let dev = self.dev.clone();
        let t = tokens.len();
        let h = self.embed.sizes()[1];
        let positions = self.index(positions)?;
        let slots = self.index(slots)?;
        let mut x = dev.zeros((t, h))?;
        A::gather(&self.embed, &self.index(tokens)?, &mut x).context("gather_rows (embeddings)")?;

        // What the prefill's attention needs: each prompt's queries padded
        // at the front to the longest prompt (causal attention aligns the
        // queries to the end of the keys a request has), its keys and
        // values at the back; and where each token's output comes back from.
        let prefill = match attend {
            Attend::Prefill { lens } => {
                let s = *lens.iter().max().context("an empty prefill")?;
                let (mut q_idx, mut kv_idx, mut back) = (Vec::new(), Vec::new(), Vec::new());
                let mut first = 0;
                for (b, &len) in lens.iter().enumerate() {
                    for i in 0..s {
                        let pad = s - len;
                        q_idx.push((first + i.saturating_sub(pad)) as i32);
                        kv_idx.push((first + i.min(len - 1)) as i32);
                    }
                    back.extend((0..len).map(|i| (b * s + s - len + i) as i32));
                    first += len;
                }
                let lens32: Vec<i32> = lens.iter().map(|&l| l as i32).collect();
                Some((
                    s,
                    self.index(&q_idx)?,
                    self.index(&kv_idx)?,
                    self.index(&back)?,
                    self.index(&lens32)?,
                ))
            }
            Attend::Decode { .. } => None,
        };
        let decode = match attend {
            Attend::Decode {
                table,
                width,
                seq_lens,
            } => Some((
                dev.tensor_from(table, (seq_lens.len(), *width))?,
                self.index(seq_lens)?,
            )),
            Attend::Prefill { .. } => None,
        };

        let mut residual = x;
        let mut pending: Option<Mat<A>> = None;
        for l in 0..self.layers.len() {
            let layer = &self.layers[l];
            let mut normed = dev.zeros((t, h))?;
            match pending.take() {
                None => {
                    A::rms_norm(&residual, &layer.attn_norm, &mut normed).context("rms_norm")?
                }
                Some(add) => {
                    let mut sum = dev.zeros((t, h))?;
                    A::add_rms_norm(&add, &residual, &layer.attn_norm, &mut sum, &mut normed)
                        .context("add_rms_norm")?;
                    residual = sum;
                }
            }
            let [q, k, v] = self.to_f16(&normed, [&layer.wq, &layer.wk, &layer.wv])?;
            let mut q_rot = dev.zeros((t, Q_WIDTH))?;
            kernels::ld_rope(&q, &positions, &self.cos_sin, &mut q_rot).context("rope (q)")?;
            let mut k_rot = dev.zeros((t, KV_WIDTH))?;
            kernels::ld_rope(&k, &positions, &self.cos_sin, &mut k_rot).context("rope (k)")?;
            let layer = &mut self.layers[l];
            kernels::ld_cache(
                k_rot.view().reshape((t, Const::<KV_WIDTH>))?,
                v.view().reshape((t, Const::<KV_WIDTH>))?,
                &slots,
                &mut layer.k_cache,
                &mut layer.v_cache,
            )
            .context("reshape_and_cache")?;

            let attn: Mat<f16> = if let Some((s, q_idx, kv_idx, back, lens)) = &prefill {
                let b = lens.sizes()[0];
                let mut qp = dev.zeros((b * s, Q_WIDTH))?;
                kernels::ld_gather_f16(&q_rot, q_idx, &mut qp).context("gather_rows (q)")?;
                let mut kp = dev.zeros((b * s, KV_WIDTH))?;
                kernels::ld_gather_f16(&k_rot, kv_idx, &mut kp).context("gather_rows (k)")?;
                let mut vp = dev.zeros((b * s, KV_WIDTH))?;
                kernels::ld_gather_f16(&v, kv_idx, &mut vp).context("gather_rows (v)")?;
                let mut out = dev.zeros((b, *s, Const::<Q_WIDTH>))?;
                kernels::ld_prefill_attention(
                    qp.view().reshape((b, *s, Const::<Q_WIDTH>))?,
                    kp.view().reshape((b, *s, Const::<KV_WIDTH>))?,
                    vp.view().reshape((b, *s, Const::<KV_WIDTH>))?,
                    lens,
                    &mut out,
                )
                .context("flash_attention_varlen")?;
                let out = out.reshape((b * s, Q_WIDTH))?;
                let mut attn = dev.zeros((t, Q_WIDTH))?;
                kernels::ld_gather_f16(&out, back, &mut attn).context("gather_rows (back)")?;
                attn
            } else {
                let (table, seq_lens) = decode.as_ref().expect("a decode step");
                let mut out = dev.zeros((t, Const::<1>, Const::<Q_WIDTH>))?;
                kernels::ld_decode_attention(
                    q_rot.view().reshape((t, Const::<1>, Const::<Q_WIDTH>))?,
                    &layer.k_cache,
                    &layer.v_cache,
                    table,
                    seq_lens,
                    &mut out,
                )
                .context("paged_attention")?;
                out.reshape((t, Q_WIDTH))?
            };
            let layer = &self.layers[l];
            let mut o = dev.zeros((t, h))?;
            match &layer.wo {
                Proj::Dense(w) => A::matmul_from_f16(&attn, w, &mut o).context("matmul (wo)")?,
                Proj::Quant { w, scale } => {
                    w8a8(&attn, w, scale, A::as_f16_mut(&mut o).context(W8A8_FP16)?)?
                }
            }
            let mut sum = dev.zeros((t, h))?;
            let mut normed = dev.zeros((t, h))?;
            A::add_rms_norm(&o, &residual, &layer.mlp_norm, &mut sum, &mut normed)
                .context("add_rms_norm")?;
            residual = sum;
            let gate_up = self.project(&normed, &layer.w_gate_up)?;
            let f = gate_up.sizes()[1] / 2;
            let mut act = dev.zeros((t, f))?;
            A::swiglu(&gate_up, &mut act).context("swiglu")?;
            pending = Some(self.project(&act, &layer.w_down)?);
        }
        let mut sum = dev.zeros((t, h))?;
        let mut normed = dev.zeros((t, h))?;
        A::add_rms_norm(
            &pending.context("a layer")?,
            &residual,
            &self.final_norm,
            &mut sum,
            &mut normed,
        )
        .context("add_rms_norm")?;
        if let Attend::Prefill { lens } = attend {
            // Each prompt's last token.
            let last: Vec<i32> = lens
                .iter()
                .scan(0, |end, &len| {
                    *end += len;
                    Some(*end as i32 - 1)
                })
                .collect();
            let mut picked = dev.zeros((last.len(), h))?;
            A::gather(&normed, &self.index(&last)?, &mut picked).context("gather_rows (last)")?;
            normed = picked;
        }
        let b = normed.sizes()[0];
        let mut logits = dev.zeros((b, self.lm_head.sizes()[1]))?;
        A::matmul(&normed, &self.lm_head, &mut logits).context("matmul (lm head)")?;
        let mut next = dev.zeros((b,))?;
        A::argmax(&logits, &mut next).context("argmax")?;
        let logits = logits.to_vec()?.into_iter().map(A::to_f64).collect();
        Ok((logits, next.to_vec()?))
    }
}

// ---- serving -------------------------------------------------------------------------

/// A last-in-first-out allocator of KV-cache blocks.
#[derive(Debug)]
pub struct Blocks {
    free: Vec<i32>,
    total: usize,
}

impl Blocks {
    pub fn new(total: usize) -> Blocks {
        Blocks {
            free: (0..total as i32).rev().collect(),
            total,
        }
    }

    pub fn available(&self) -> usize {
        self.free.len()
    }

    pub fn alloc(&mut self) -> Result<i32> {
        self.free.pop().with_context(|| {
            format!(
                "the KV cache is out of blocks: all {} are held by running requests",
                self.total
            )
        })
    }

    pub fn release(&mut self, blocks: &[i32]) {
        self.free.extend(blocks.iter().rev());
    }
}

/// How the device's logits compared with the reference's.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    /// Sampled tokens compared.
    pub tokens: usize,
    /// The largest |device − reference| over every logit compared.
    pub max_logit_diff: f64,
    /// Steps where the reference's two largest logits were within the
    /// tolerance (a token choice the tolerance cannot decide).
    pub close: usize,
    /// Of those, the steps where the device chose another token.
    pub close_differ: usize,
    /// The smallest gap between the reference's two largest logits.
    pub min_gap: f64,
    /// Where that was: the request, the step, the reference's two largest
    /// tokens and their logits.
    pub closest: Option<Closest>,
}

/// A sampled token whose reference logits were close.
#[derive(Debug, Clone)]
pub struct Closest {
    pub request: usize,
    pub at: String,
    pub best: (usize, f64),
    pub second: (usize, f64),
}

/// What serving produced.
#[derive(Debug, Clone)]
pub struct Served {
    /// Each request's generated tokens.
    pub generated: Vec<Vec<i32>>,
    pub decode_steps: usize,
    pub comparison: Comparison,
    /// What happened, step by step (admissions, blocks, finishes).
    pub events: Vec<String>,
}

/// The index of the largest value (the first of equals).
fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

struct Running {
    id: usize,
    prompt: usize,
    /// The prompt, then the tokens generated.
    tokens: Vec<i32>,
    max_new: usize,
    blocks: Vec<i32>,
    reference: RefSeq,
}

impl Running {
    fn slot(&self, pos: usize) -> i32 {
        self.blocks[pos / BLOCK] * BLOCK as i32 + (pos % BLOCK) as i32
    }
}

/// Each request's prompt: tokens from the seed.
pub fn prompts(cfg: &Config) -> Vec<Vec<i32>> {
    let mut rng = Rng(cfg.seed ^ 0x5EED);
    cfg.requests
        .iter()
        .map(|&(len, _)| {
            (0..len)
                .map(|_| {
                    (((rng.next() + 1.0) / 2.0 * cfg.vocab as f64) as usize).min(cfg.vocab - 1)
                        as i32
                })
                .collect()
        })
        .collect()
}

/// Serves the configuration's requests on `dev` with the model `w`,
/// checking every sampled token against the reference (see the module's
/// documentation and [`Precision::tolerance`]).
pub fn serve(dev: &Device, w: &Weights) -> Result<Served> {
    serve_against(dev, w, w)
}

/// [`serve`] with the reference running `reference`'s weights: the
/// tests' way to show that the check notices a model other than the
/// device's.
pub fn serve_against(dev: &Device, w: &Weights, reference: &Weights) -> Result<Served> {
    match w.precision {
        Precision::Fp32 => serve_as::<f32>(dev, w, reference),
        Precision::Fp16 | Precision::W8a8 => serve_as::<f16>(dev, w, reference),
    }
}

fn serve_as<A: Act>(dev: &Device, w: &Weights, reference: &Weights) -> Result<Served> {
    let (exact, tolerance) = (w.precision.exact_tokens(), w.precision.tolerance());
    let cfg = &w.cfg;
    cfg.check()?;
    let mut model = DeviceModel::<A>::new(dev, w)?;
    let prompts = prompts(cfg);
    let mut waiting: VecDeque<usize> = (0..cfg.requests.len()).collect();
    let mut blocks = Blocks::new(cfg.cache_blocks);
    let mut running: Vec<Running> = Vec::new();
    let mut generated = vec![Vec::new(); cfg.requests.len()];
    let mut cmp = Comparison {
        min_gap: f64::INFINITY,
        ..Comparison::default()
    };
    let mut events = Vec::new();
    let mut step = 0;
    let vocab = cfg.vocab;

    // Compares one request's logits and sampled token with the reference's.
    let check = |cmp: &mut Comparison,
                 id: usize,
                 at: &str,
                 got: &[f64],
                 token: i32,
                 want: &[f64]|
     -> Result<()> {
        cmp.tokens += 1;
        let diff = got
            .iter()
            .zip(want)
            .map(|(g, w)| (g - w).abs())
            .fold(0f64, f64::max);
        cmp.max_logit_diff = cmp.max_logit_diff.max(diff);
        ensure!(
            token as usize == argmax(got),
            "request {id}, {at}: argmax sampled token {token}, but the largest of its logits is token {}",
            argmax(got)
        );
        let best = argmax(want);
        let second =
            (0..want.len())
                .filter(|&i| i != best)
                .fold(if best == 0 { 1 } else { 0 }, |s, i| {
                    if want[i] > want[s] { i } else { s }
                });
        let gap = want[best] - want[second];
        if gap < cmp.min_gap {
            cmp.min_gap = gap;
            cmp.closest = Some(Closest {
                request: id,
                at: at.to_owned(),
                best: (best, want[best]),
                second: (second, want[second]),
            });
        }
        ensure!(
            diff <= tolerance,
            "request {id}, {at}: logits differ from the reference's by up to {diff:.4}, more than the tolerance {tolerance}"
        );
        let close = !exact && gap <= tolerance;
        if close {
            cmp.close += 1;
        }
        if token as usize != best {
            ensure!(
                close,
                "request {id}, {at}: the device chose token {token}, the reference token {best} \
                 (its two largest logits {gap:.4} apart; the device's logits within {diff:.4})"
            );
            cmp.close_differ += 1;
        }
        Ok(())
    };

    while !waiting.is_empty() || !running.is_empty() {
        // Admit what fits: a batch slot, and blocks for the whole prompt.
        let mut admitted: Vec<Running> = Vec::new();
        while running.len() + admitted.len() < cfg.max_batch {
            let Some(&id) = waiting.front() else { break };
            let (prompt, max_new) = cfg.requests[id];
            let need = prompt.div_ceil(BLOCK);
            if blocks.available() < need {
                ensure!(
                    need <= cfg.cache_blocks,
                    "request {id}: its prompt of {prompt} tokens needs {need} cache blocks, the cache has {}",
                    cfg.cache_blocks
                );
                break;
            }
            waiting.pop_front();
            let held = (0..need)
                .map(|_| blocks.alloc())
                .collect::<Result<Vec<_>>>()?;
            admitted.push(Running {
                id,
                prompt,
                tokens: prompts[id].clone(),
                max_new,
                blocks: held,
                reference: RefSeq::default(),
            });
        }
        if !admitted.is_empty() {
            let lens: Vec<usize> = admitted.iter().map(|r| r.prompt).collect();
            let tokens: Vec<i32> = admitted.iter().flat_map(|r| r.tokens.clone()).collect();
            let positions: Vec<i32> = lens.iter().flat_map(|&l| 0..l as i32).collect();
            let slots: Vec<i32> = admitted
                .iter()
                .flat_map(|r| (0..r.prompt).map(|p| r.slot(p)))
                .collect();
            let (logits, next) = model
                .forward(
                    &tokens,
                    &positions,
                    &slots,
                    &Attend::Prefill { lens: &lens },
                )
                .with_context(|| format!("prefill before step {step}"))?;
            for (b, r) in admitted.iter_mut().enumerate() {
                events.push(format!(
                    "step {step}: request {} admitted: prefill of {} tokens into block(s) {:?}",
                    r.id, r.prompt, r.blocks
                ));
                let want = reference.reference(&mut r.reference, &r.tokens, 0);
                check(
                    &mut cmp,
                    r.id,
                    "prefill",
                    &logits[b * vocab..(b + 1) * vocab],
                    next[b],
                    &want,
                )?;
                r.tokens.push(next[b]);
            }
            running.extend(admitted);
        }
        retire(&mut running, &mut blocks, &mut generated, &mut events, step);
        if running.is_empty() {
            if let Some(&id) = waiting.front() {
                bail!(
                    "request {id} cannot start: no request runs and the cache has too few free blocks"
                );
            }
            break;
        }

        // One decode step: every running request's last token.
        step += 1;
        let mut slots = Vec::new();
        for r in &mut running {
            let pos = r.tokens.len() - 1;
            if pos / BLOCK == r.blocks.len() {
                let b = blocks.alloc().with_context(|| {
                    format!(
                        "step {step}: request {} needs a block for token {pos}",
                        r.id
                    )
                })?;
                r.blocks.push(b);
                events.push(format!(
                    "step {step}: request {} reached {pos} tokens and took block {b}",
                    r.id
                ));
            }
            slots.push(r.slot(pos));
        }
        let tokens: Vec<i32> = running
            .iter()
            .map(|r| *r.tokens.last().expect("a token"))
            .collect();
        let positions: Vec<i32> = running.iter().map(|r| r.tokens.len() as i32 - 1).collect();
        let seq_lens: Vec<i32> = running.iter().map(|r| r.tokens.len() as i32).collect();
        let width = running
            .iter()
            .map(|r| r.blocks.len())
            .max()
            .expect("a request");
        let table: Vec<i32> = running
            .iter()
            .flat_map(|r| (0..width).map(|i| r.blocks.get(i).copied().unwrap_or(0)))
            .collect();
        let (logits, next) = model
            .forward(
                &tokens,
                &positions,
                &slots,
                &Attend::Decode {
                    table: &table,
                    width,
                    seq_lens: &seq_lens,
                },
            )
            .with_context(|| format!("decode step {step}"))?;
        for (b, r) in running.iter_mut().enumerate() {
            let pos = r.tokens.len() - 1;
            let last = r.tokens[pos];
            let want = reference.reference(&mut r.reference, &[last], pos);
            let at = format!("decode step {step}");
            check(
                &mut cmp,
                r.id,
                &at,
                &logits[b * vocab..(b + 1) * vocab],
                next[b],
                &want,
            )?;
            r.tokens.push(next[b]);
        }
        retire(&mut running, &mut blocks, &mut generated, &mut events, step);
    }
    Ok(Served {
        generated,
        decode_steps: step,
        comparison: cmp,
        events,
    })
}

/// Requests with all their tokens leave; their blocks go back.
fn retire(
    running: &mut Vec<Running>,
    blocks: &mut Blocks,
    generated: &mut [Vec<i32>],
    events: &mut Vec<String>,
    step: usize,
) {
    running.retain(|r| {
        let done = r.tokens.len() - r.prompt >= r.max_new;
        if done {
            blocks.release(&r.blocks);
            generated[r.id] = r.tokens[r.prompt..].to_vec();
            events.push(format!(
                "step {step}: request {} finished ({} tokens), block(s) {:?} freed",
                r.id, r.max_new, r.blocks
            ));
        }
        !done
    });
}
