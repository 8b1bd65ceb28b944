//! One decode step of a Llama-style layer written with builtins only
//! (tests/kernels/llama.yaml; the README shows `decode_step`): RMS norm,
//! the q/k/v projections, the new token's keys and values appended to a
//! paged KV cache, attention of each request's new token against its cache
//! (4 query heads over 2 KV heads of 64), the output projection, the
//! residual add fused with the MLP's RMS norm, and the SwiGLU MLP. Checked
//! against plain Rust at cache lengths 1, 7, 64 and 300, batch 1 and 3, and
//! a batch whose requests' caches differ in length.
//!
//! The reference computes in f64 and rounds to fp16 wherever the step
//! stores a tensor, as the kernels do. The kernels compute in fp32, so now
//! and then an intermediate rounds to the neighbouring fp16 value, and the
//! MLP amplifies that (a gate of 10 has an fp16 spacing of 0.0078): over
//! these cases the step's output is within 1.2e-3 of its largest magnitude
//! of the reference, and the test allows 4e-3 of it. A reference that
//! attends with the wrong KV head, or leaves the new token out, fails all
//! three tests by 20 or more times the tolerance.

use half::f16;
use pypto_rt::{Const, Device, Error, Tensor};
use pypto_tests::{data, kernels};

const HIDDEN: usize = 256;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const HEAD: usize = 64;
const KV: usize = KV_HEADS * HEAD;
const MLP: usize = 512;
const BLOCK: usize = 128;

type Rows<const W: usize> = (usize, Const<W>);

/// A layer's weights, fp16; projections stored [in, out], as
/// `builtin/matmul` takes them.
struct Layer {
    attn_norm: Tensor<f16, (Const<HIDDEN>,)>,
    wq: Tensor<f16, (usize, usize)>,
    wk: Tensor<f16, (usize, usize)>,
    wv: Tensor<f16, (usize, usize)>,
    wo: Tensor<f16, (usize, usize)>,
    mlp_norm: Tensor<f16, (Const<HIDDEN>,)>,
    /// [HIDDEN, 2·MLP]: the gate's columns, then the up projection's.
    w_gate_up: Tensor<f16, (usize, usize)>,
    w_down: Tensor<f16, (usize, usize)>,
}

/// A paged KV cache: row `block·128 + i` holds token `i` of cache block
/// `block` (both KV heads); request `r`'s blocks are `table[r]`.
struct Cache {
    k: Tensor<f16, Rows<KV>>,
    v: Tensor<f16, Rows<KV>>,
    table: Vec<i32>,
    blocks_per_request: usize,
}

impl Cache {
    /// The cache row of request `r`'s token `pos`.
    fn slot(&self, r: usize, pos: usize) -> usize {
        self.table[r * self.blocks_per_request + pos / BLOCK] as usize * BLOCK + pos % BLOCK
    }
}

/// One decode step: `x` holds each request's new token, `cached[r]` how
/// many of request r's tokens the cache already holds. Appends the new
/// keys and values to the cache and returns the layer's output.
/// `x` as a [rows, HIDDEN] matrix for builtin/matmul, whose sizes are all
/// DYNAMIC.
fn flat(
    x: &Tensor<f16, Rows<HIDDEN>>,
) -> Result<pypto_rt::TensorView<'_, f16, (usize, usize)>, Error> {
    x.view().reshape((x.sizes()[0], HIDDEN))
}

fn decode_step(
    dev: &Device,
    layer: &Layer,
    cache: &mut Cache,
    x: &Tensor<f16, Rows<HIDDEN>>,
    cached: &[i32],
) -> Result<Tensor<f16, Rows<HIDDEN>>, Error> {
    let t = cached.len();

    // Attention block: RMS norm, projections.
    let mut h = dev.zeros((t, Const::<HIDDEN>))?;
    kernels::llama_rms_norm(x, &layer.attn_norm, 1e-6, &mut h)?;
    let mut q = dev.zeros((t, HEADS * HEAD))?;
    let mut k = dev.zeros((t, KV))?;
    let mut v = dev.zeros((t, KV))?;
    kernels::llama_matmul(flat(&h)?, &layer.wq, &mut q)?;
    kernels::llama_matmul(flat(&h)?, &layer.wk, &mut k)?;
    kernels::llama_matmul(flat(&h)?, &layer.wv, &mut v)?;

    // The new token's keys and values go to the next free row of each
    // request's cache.
    let k = k.reshape((t, Const::<KV>))?;
    let v = v.reshape((t, Const::<KV>))?;
    for (r, &len) in cached.iter().enumerate() {
        let slot = cache.slot(r, len as usize);
        cache.k.slice_mut(slot..=slot)?.copy_from(k.slice(r..=r)?)?;
        cache.v.slice_mut(slot..=slot)?.copy_from(v.slice(r..=r)?)?;
    }

    // Each request's new token against its cache (grouped-query heads).
    let blocks = cache.k.sizes()[0] / BLOCK;
    let table = dev.tensor_from(&cache.table, (t, cache.blocks_per_request))?;
    let seq_lens: Vec<i32> = cached.iter().map(|len| len + 1).collect();
    let seq_lens = dev.tensor_from(&seq_lens, (t,))?;
    let mut attn = dev.zeros((t, Const::<1>, Const::<{ HEADS * HEAD }>))?;
    kernels::llama_attention(
        q.view()
            .reshape((t, Const::<1>, Const::<{ HEADS * HEAD }>))?,
        cache
            .k
            .view()
            .reshape((blocks, Const::<BLOCK>, Const::<KV>))?,
        cache
            .v
            .view()
            .reshape((blocks, Const::<BLOCK>, Const::<KV>))?,
        &table,
        &seq_lens,
        &mut attn,
    )?;
    let mut o = dev.zeros((t, HIDDEN))?;
    kernels::llama_matmul(attn.view().reshape((t, HEADS * HEAD))?, &layer.wo, &mut o)?;

    // Residual add fused with the MLP's RMS norm, then SwiGLU.
    let mut residual = dev.zeros((t, Const::<HIDDEN>))?;
    let mut h2 = dev.zeros((t, Const::<HIDDEN>))?;
    kernels::llama_add_rms_norm(
        x,
        o.view().reshape((t, Const::<HIDDEN>))?,
        &layer.mlp_norm,
        1e-6,
        &mut residual,
        &mut h2,
    )?;
    let mut gate_up = dev.zeros((t, 2 * MLP))?;
    kernels::llama_matmul(flat(&h2)?, &layer.w_gate_up, &mut gate_up)?;
    let mut act = dev.zeros((t, Const::<MLP>))?;
    kernels::llama_swiglu(gate_up.view().reshape((t, Const::<{ 2 * MLP }>))?, &mut act)?;
    let mut down = dev.zeros((t, HIDDEN))?;
    kernels::llama_matmul(act.view().reshape((t, MLP))?, &layer.w_down, &mut down)?;
    let mut out = dev.zeros((t, Const::<HIDDEN>))?;
    kernels::llama_add(
        &residual,
        down.view().reshape((t, Const::<HIDDEN>))?,
        &mut out,
    )?;
    Ok(out)
}

// ---- the plain-Rust reference ---------------------------------------------

fn round(x: f64) -> f64 {
    f64::from(f16::from_f64(x))
}

fn widen(v: &[f16]) -> Vec<f64> {
    v.iter().map(|x| f64::from(x.to_f32())).collect()
}

fn rms_norm(x: &[f64], w: &[f64]) -> Vec<f64> {
    x.chunks(w.len())
        .flat_map(|row| {
            let scale =
                1.0 / (row.iter().map(|v| v * v).sum::<f64>() / row.len() as f64 + 1e-6).sqrt();
            row.iter().zip(w).map(move |(v, w)| round(v * scale * w))
        })
        .collect()
}

/// [rows, k] x [k, n], rounded.
fn matmul(a: &[f64], b: &[f64], k: usize, n: usize) -> Vec<f64> {
    a.chunks(k)
        .flat_map(|row| (0..n).map(move |j| round((0..k).map(|i| row[i] * b[i * n + j]).sum())))
        .collect()
}

/// The reference weights and cache, widened.
struct Plain {
    attn_norm: Vec<f64>,
    wq: Vec<f64>,
    wk: Vec<f64>,
    wv: Vec<f64>,
    wo: Vec<f64>,
    mlp_norm: Vec<f64>,
    w_gate_up: Vec<f64>,
    w_down: Vec<f64>,
    /// Per request, its cached keys and values, [tokens, KV].
    keys: Vec<Vec<f64>>,
    values: Vec<Vec<f64>>,
}

fn reference(p: &Plain, x: &[f64]) -> Vec<f64> {
    let t = p.keys.len();
    let h = rms_norm(x, &p.attn_norm);
    let q = matmul(&h, &p.wq, HIDDEN, HEADS * HEAD);
    let k = matmul(&h, &p.wk, HIDDEN, KV);
    let v = matmul(&h, &p.wv, HIDDEN, KV);
    let mut attn = vec![0.0; t * HEADS * HEAD];
    for r in 0..t {
        let keys: Vec<&[f64]> = p.keys[r].chunks(KV).chain([&k[r * KV..][..KV]]).collect();
        let values: Vec<&[f64]> = p.values[r].chunks(KV).chain([&v[r * KV..][..KV]]).collect();
        for head in 0..HEADS {
            let kvh = head / (HEADS / KV_HEADS);
            let qh = &q[(r * HEADS + head) * HEAD..][..HEAD];
            let scores: Vec<f64> = keys
                .iter()
                .map(|key| {
                    let kh = &key[kvh * HEAD..][..HEAD];
                    qh.iter().zip(kh).map(|(a, b)| a * b).sum::<f64>() / (HEAD as f64).sqrt()
                })
                .collect();
            let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            let out = &mut attn[(r * HEADS + head) * HEAD..][..HEAD];
            for (w, value) in weights.iter().zip(&values) {
                for (o, x) in out.iter_mut().zip(&value[kvh * HEAD..][..HEAD]) {
                    *o += w / total * x;
                }
            }
            out.iter_mut().for_each(|o| *o = round(*o));
        }
    }
    let o = matmul(&attn, &p.wo, HEADS * HEAD, HIDDEN);
    let sum: Vec<f64> = x.iter().zip(&o).map(|(a, b)| a + b).collect();
    let residual: Vec<f64> = sum.iter().map(|s| round(*s)).collect();
    let h2 = rms_norm(&sum, &p.mlp_norm);
    let gate_up = matmul(&h2, &p.w_gate_up, HIDDEN, 2 * MLP);
    let act: Vec<f64> = gate_up
        .chunks(2 * MLP)
        .flat_map(|row| {
            (0..MLP).map(move |j| {
                let (a, b) = (row[j], row[MLP + j]);
                round(a / (1.0 + (-a).exp()) * b)
            })
        })
        .collect();
    let down = matmul(&act, &p.w_down, MLP, HIDDEN);
    residual
        .iter()
        .zip(&down)
        .map(|(a, b)| round(a + b))
        .collect()
}

// ---- the test ----------------------------------------------------------------

/// fp16 values in [-scale, scale), from `seed`.
fn values(n: usize, seed: u64, scale: f32) -> Vec<f16> {
    data(n, seed)
        .iter()
        .map(|x| f16::from_f32(x * scale))
        .collect()
}

fn run(cached: &[i32]) {
    let dev = Device::host();
    let t = cached.len();
    let weight = |rows: usize, cols: usize, seed: u64| {
        let w = values(rows * cols, seed, 1.0 / (rows as f32).sqrt());
        (dev.tensor_from(&w, (rows, cols)).unwrap(), widen(&w))
    };
    let norm = |seed: u64| {
        let w: Vec<f16> = data(HIDDEN, seed)
            .iter()
            .map(|x| f16::from_f32(1.0 + x / 4.0))
            .collect();
        (dev.tensor_from(&w, (Const::<HIDDEN>,)).unwrap(), widen(&w))
    };
    let (attn_norm, p_attn_norm) = norm(1);
    let (wq, p_wq) = weight(HIDDEN, HEADS * HEAD, 2);
    let (wk, p_wk) = weight(HIDDEN, KV, 3);
    let (wv, p_wv) = weight(HIDDEN, KV, 4);
    let (wo, p_wo) = weight(HEADS * HEAD, HIDDEN, 5);
    let (mlp_norm, p_mlp_norm) = norm(6);
    let (w_gate_up, p_w_gate_up) = weight(HIDDEN, 2 * MLP, 7);
    let (w_down, p_w_down) = weight(MLP, HIDDEN, 8);
    let layer = Layer {
        attn_norm,
        wq,
        wk,
        wv,
        wo,
        mlp_norm,
        w_gate_up,
        w_down,
    };

    // Room for 301 tokens a request (3 blocks), the blocks dealt out of
    // order (block 3r + j of the table is cache block (5·(3r + j) + 2) mod
    // 3t), as an allocator that has run a while leaves them.
    let per = 3;
    let total = per * t;
    let table: Vec<i32> = (0..total).map(|i| ((5 * i + 2) % total) as i32).collect();
    let rows = total * BLOCK;
    let k_init = values(rows * KV, 9, 1.0);
    let v_init = values(rows * KV, 10, 1.0);
    let mut cache = Cache {
        k: dev.tensor_from(&k_init, (rows, Const::<KV>)).unwrap(),
        v: dev.tensor_from(&v_init, (rows, Const::<KV>)).unwrap(),
        table,
        blocks_per_request: per,
    };
    // What the reference sees of each request's cache: its first `cached`
    // tokens (rows past them are stale and must not be read).
    let cached_rows = |init: &[f16], r: usize| -> Vec<f64> {
        (0..cached[r] as usize)
            .flat_map(|pos| widen(&init[cache.slot(r, pos) * KV..][..KV]))
            .collect()
    };
    let plain = Plain {
        attn_norm: p_attn_norm,
        wq: p_wq,
        wk: p_wk,
        wv: p_wv,
        wo: p_wo,
        mlp_norm: p_mlp_norm,
        w_gate_up: p_w_gate_up,
        w_down: p_w_down,
        keys: (0..t).map(|r| cached_rows(&k_init, r)).collect(),
        values: (0..t).map(|r| cached_rows(&v_init, r)).collect(),
    };

    let x = values(t * HIDDEN, 11 + t as u64, 1.0);
    let want = reference(&plain, &widen(&x));
    let x = dev.tensor_from(&x, (t, Const::<HIDDEN>)).unwrap();
    let got = decode_step(&dev, &layer, &mut cache, &x, cached).unwrap();
    let got = widen(&got.to_vec().unwrap());
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 4e-3 * scale,
            "cached {cached:?}: output {i} (request {}) is {g}, the reference {w} (tolerance \
             {:.4}: 4e-3 of the largest output)",
            i / HIDDEN,
            4e-3 * scale
        );
    }
    // The new keys were appended where the next step will read them.
    let keys = widen(&cache.k.to_vec().unwrap());
    let new_keys = matmul(
        &rms_norm(&widen(&x.to_vec().unwrap()), &plain.attn_norm),
        &plain.wk,
        HIDDEN,
        KV,
    );
    for (r, &len) in cached.iter().enumerate() {
        let slot = cache.slot(r, len as usize);
        for j in 0..KV {
            let (g, w) = (keys[slot * KV + j], new_keys[r * KV + j]);
            assert!(
                (g - w).abs() <= 1e-3 + 1e-3 * w.abs(),
                "request {r}: key {j} is {g}, want {w}"
            );
        }
    }
}

#[test]
fn one_request_at_cache_lengths_1_7_64_and_300() {
    for len in [1, 7, 64, 300] {
        run(&[len]);
    }
}

#[test]
fn three_requests_at_cache_lengths_1_7_64_and_300() {
    for len in [1, 7, 64, 300] {
        run(&[len; 3]);
    }
}

#[test]
fn three_requests_whose_caches_differ_in_length() {
    run(&[300, 1, 64]);
}
