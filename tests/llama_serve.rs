//! The served model of `cargo run --example llama_decode`
//! (examples/common/llama.rs, kernels in examples/kernels/llama_decode.yaml)
//! at its smaller size: every request served as the plain-Rust reference
//! serves it in fp32, fp16 and w8a8; the w8a8 linear layer exactly the
//! reference's; the check failing when the reference is not the model the
//! device runs; the block allocator and the configuration's errors.

#[allow(dead_code)]
#[path = "../examples/common/llama.rs"]
mod llama;

use half::f16;
use llama::{Blocks, Config, Linear, Precision, Weights};
use pypto_rt::Device;
use pypto_tests::{data, kernels};

/// dynamic_quant then quant_matmul on the device give, bit for bit, what
/// the reference's w8a8 layer (per-token int8 by the casts, exact int32
/// sums, fp32 dequantisation) rounded to fp16 gives, at several token
/// counts.
#[test]
fn the_w8a8_layer_is_the_reference_s_bit_for_bit() {
    let dev = Device::host();
    let (k, j) = (192, 144);
    let w: Vec<f64> = data(k * j, 3)
        .iter()
        .map(|&v| f64::from(f16::from_f32(v / 16.0)))
        .collect();
    let layer = Linear::quantise(&w, k, j);
    let Linear::Quant { w: q, scale, .. } = &layer else {
        panic!("quantise gives int8 weights")
    };
    let wq = dev.tensor_from(q, (j, k)).unwrap();
    let ws = dev.tensor_from(scale, (j,)).unwrap();
    for t in [1, 4, 37] {
        let x: Vec<f16> = data(t * k, 10 + t as u64)
            .iter()
            .map(|&v| f16::from_f32(v))
            .collect();
        let xd = dev.tensor_from(&x, (t, k)).unwrap();
        let mut out = dev.zeros((t, j)).unwrap();
        llama::w8a8(&xd, &wq, &ws, &mut out).unwrap();
        let got = out.to_vec().unwrap();
        for r in 0..t {
            let row: Vec<f64> = x[r * k..(r + 1) * k]
                .iter()
                .map(|v| f64::from(*v))
                .collect();
            let want = layer.apply(&row);
            for c in 0..j {
                assert_eq!(
                    got[r * j + c].to_bits(),
                    f16::from_f64(want[c]).to_bits(),
                    "T = {t}: row {r}, column {c}: {} against the reference's {}",
                    got[r * j + c],
                    want[c]
                );
            }
        }
    }
}

/// The small model, its requests served as in the example: `max_new`
/// tokens each, request 1 growing into a second block, request 4 waiting
/// for request 2's block.
fn serve_small(p: Precision) -> llama::Served {
    let cfg = Config::small();
    let w = Weights::new(&cfg, p);
    let served =
        llama::serve(&Device::host(), &w).unwrap_or_else(|e| panic!("{}: {e:#}", p.name()));
    for (id, tokens) in served.generated.iter().enumerate() {
        assert_eq!(
            tokens.len(),
            cfg.requests[id].1,
            "{}: request {id}",
            p.name()
        );
        assert!(tokens.iter().all(|&t| (0..cfg.vocab as i32).contains(&t)));
    }
    assert_eq!(served.comparison.tokens, 35);
    assert_eq!(served.decode_steps, 9);
    let events = served.events.join("\n");
    for e in [
        "step 0: request 3 admitted: prefill of 4 tokens into block(s) [3]",
        "step 2: request 2 finished (3 tokens), block(s) [2] freed",
        "step 2: request 4 admitted: prefill of 30 tokens into block(s) [2]",
        "step 5: request 1 reached 128 tokens and took block 4",
        "step 9: request 1 finished (10 tokens), block(s) [1, 4] freed",
    ] {
        assert!(events.contains(e), "{}: no `{e}` in\n{events}", p.name());
    }
    served
}

/// fp32: every token the reference's, at every step (the served model
/// checks that), the logits within 2e-3 (the fp16 attention's share).
#[test]
fn the_fp32_model_generates_the_reference_s_tokens() {
    let served = serve_small(Precision::Fp32);
    let c = &served.comparison;
    assert_eq!((c.close, c.close_differ), (0, 0));
    assert!(c.max_logit_diff <= 2e-3, "{c:?}");
}

/// fp16 and w8a8: logits within the tolerance, every token whose choice
/// the tolerance decides the reference's. The fp32 model's tokens are the
/// ones fp16 generates too.
#[test]
fn the_fp16_and_w8a8_models_stay_within_their_tolerances() {
    let fp32 = serve_small(Precision::Fp32);
    for p in [Precision::Fp16, Precision::W8a8] {
        let served = serve_small(p);
        let c = &served.comparison;
        assert!(c.max_logit_diff <= p.tolerance(), "{}: {c:?}", p.name());
        assert!(
            c.max_logit_diff > 0.0,
            "{}: no rounding at all? {c:?}",
            p.name()
        );
        if p == Precision::Fp16 {
            assert_eq!(served.generated, fp32.generated);
        }
    }
}

/// The check notices a reference that is not the device's model: RoPE one
/// position late (the table shifted) by the logits at the first prefill;
/// and in fp32 a token choice the reference makes the other way while every
/// logit stays within the tolerance.
#[test]
fn the_check_fails_against_another_model() {
    let dev = Device::host();
    let cfg = Config::small();
    for p in [Precision::Fp16, Precision::Fp32] {
        let w = Weights::new(&cfg, p);
        let mut late = w.clone();
        late.cos_sin.rotate_right(llama::HEAD);
        let e = format!("{:#}", llama::serve_against(&dev, &w, &late).unwrap_err());
        assert!(
            e.starts_with("request 0, prefill: logits differ from the reference's by up to ")
                && e.ends_with(&format!(", more than the tolerance {}", p.tolerance())),
            "{}: {e}",
            p.name()
        );
    }
    // fp32 checks every token: a reference whose LM head makes the
    // closest call of the run go the other way, by twice its gap, and moves
    // no logit by more than the tolerance, is caught there.
    let w = Weights::new(&cfg, Precision::Fp32);
    let served = llama::serve(&dev, &w).unwrap();
    let c = served.comparison.closest.unwrap();
    let gap = c.best.1 - c.second.1;
    assert!(gap < 1e-3, "{c:?}");
    let mut other = w.clone();
    for r in 0..cfg.hidden {
        other.lm_head[r * cfg.vocab + c.second.0] *= 1.0 + 2.0 * gap / c.second.1;
    }
    let e = format!("{:#}", llama::serve_against(&dev, &w, &other).unwrap_err());
    let want = format!(
        "request {}, {}: the device chose token {}, the reference token {} (its two largest logits ",
        c.request, c.at, c.best.0, c.second.0
    );
    assert!(e.starts_with(&want), "{e}\nwant {want}");
}

#[test]
fn blocks_come_back_last_in_first_out_and_run_out_with_an_error() {
    let mut blocks = Blocks::new(3);
    let got: Vec<i32> = (0..3).map(|_| blocks.alloc().unwrap()).collect();
    assert_eq!(got, [0, 1, 2]);
    assert_eq!(
        blocks.alloc().unwrap_err().to_string(),
        "the KV cache is out of blocks: all 3 are held by running requests"
    );
    blocks.release(&[2, 0]);
    assert_eq!(blocks.available(), 2);
    assert_eq!((blocks.alloc().unwrap(), blocks.alloc().unwrap()), (2, 0));
}

#[test]
fn a_configuration_the_model_cannot_serve_is_refused() {
    let dev = Device::host();
    let refused = |cfg: Config| {
        let w = Weights::new(&cfg, Precision::Fp16);
        format!("{:#}", llama::serve(&dev, &w).unwrap_err())
    };
    let mut cfg = Config::small();
    cfg.ffn = 100;
    assert_eq!(
        refused(cfg),
        "ffn is 100: matmul's output columns must be a positive multiple of 16"
    );
    let mut cfg = Config::small();
    cfg.requests[2] = (250, 7);
    assert_eq!(
        refused(cfg),
        "request 2: 250 prompt tokens and 7 new ones pass the 256 positions of the RoPE table"
    );
    let mut cfg = Config::small();
    cfg.max_pos = 1024;
    cfg.requests[0] = (700, 2);
    assert_eq!(
        refused(cfg),
        "request 0: its prompt of 700 tokens needs 6 cache blocks, the cache has 5"
    );
}
