//! Test data and plain-Rust references shared by the examples and the
//! workspace tests (`tests/support` includes this file), so that both check
//! kernels against one reference.

/// Deterministic test data in [-4, 4): a linear congruential sequence, so
/// failures reproduce without a random-number crate.
pub fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0
        })
        .collect()
}

/// Plain-Rust attention over `[batch, seq, hidden]` row-major data with
/// `heads` heads, in f64: out = softmax(q·kᵀ/√d)·v per batch and head,
/// optionally causal.
pub fn attention_reference(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    (batch, seq, hidden): (usize, usize, usize),
    heads: usize,
    causal: bool,
) -> Vec<f32> {
    let d = hidden / heads;
    let scale = 1.0 / (d as f64).sqrt();
    let mut out = vec![0f32; batch * seq * hidden];
    let mut scores = vec![0f64; seq];
    for b in 0..batch {
        for h in 0..heads {
            let at = |i: usize| (b * seq + i) * hidden + h * d;
            for i in 0..seq {
                let keys = if causal { i + 1 } else { seq };
                let qi = &q[at(i)..at(i) + d];
                let mut max = f64::NEG_INFINITY;
                for (j, s) in scores[..keys].iter_mut().enumerate() {
                    let kj = &k[at(j)..at(j) + d];
                    *s = qi
                        .iter()
                        .zip(kj)
                        .map(|(a, c)| *a as f64 * *c as f64)
                        .sum::<f64>()
                        * scale;
                    max = max.max(*s);
                }
                let mut sum = 0.0;
                for s in &mut scores[..keys] {
                    *s = (*s - max).exp();
                    sum += *s;
                }
                let o = &mut out[at(i)..at(i) + d];
                let mut acc = vec![0f64; d];
                for (j, p) in scores[..keys].iter().enumerate() {
                    for (a, x) in acc.iter_mut().zip(&v[at(j)..at(j) + d]) {
                        *a += p * *x as f64;
                    }
                }
                for (o, a) in o.iter_mut().zip(&acc) {
                    *o = (a / sum) as f32;
                }
            }
        }
    }
    out
}

/// The largest absolute difference between two equally long slices.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}
