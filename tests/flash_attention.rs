//! builtin/flash_attention, flash_attention_varlen and paged_attention
//! (tests/kernels/flash.yaml) against an f64 plain-Rust reference:
//! grouped-query heads at 4:1 and 8:1, head sizes 64 and 128, causal or not,
//! decode (S_q = 1) and prefill, S_q ≠ S_kv, key counts per request (with
//! rows that see no key), a paged cache whose blocks are scattered and
//! shared between requests, and the errors for a block or key count out of
//! range.
//!
//! Tolerances: the reference walks the keys in the kernel's tiles of 128
//! and rounds each tile's probabilities to the input type before they weigh
//! the values, as the kernel does for the cube's P·V; what is left is fp32
//! arithmetic, a probability rounded the other way now and then (2⁻¹¹ of
//! it for fp16, 2⁻⁸ for bf16), and the output's rounding: one unit in the
//! last place of the output plus 1e-3 (fp16) or 1.5e-3 (bf16). Masking one
//! key too few, which adds a zero key to the softmax, fails every case that
//! has a partial tile.

use pypto_rt::{Const, Device, Error, Tensor};
use pypto_tests::{Float, data, kernel_message, kernels, same_bits_at_block_counts, ulp};

/// The shape of one call and what each request sees.
#[derive(Clone, Debug)]
struct Case {
    batch: usize,
    sq: usize,
    skv: usize,
    heads: usize,
    kv_heads: usize,
    d: usize,
    causal: bool,
    /// Keys per request (`seq_lens`); `None`: all `skv`.
    lens: Option<Vec<i32>>,
}

/// out[b, s, h] in f64: softmax over the keys row (b, s) sees of
/// q·kᵀ/√D, times v. `row_of(b, j)` is the row of k (or v) holding key `j`
/// of request `b` (all KV heads). As the kernel does, keys go in tiles of
/// 128 with a running maximum, and each tile's probabilities are rounded
/// by `round` (to the input type) before they weigh the values, while
/// their sum is taken unrounded.
fn reference(
    c: &Case,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    row_of: impl Fn(usize, usize) -> usize,
    round: fn(f64) -> f64,
) -> Vec<f64> {
    let (h, hkv, d) = (c.heads, c.kv_heads, c.d);
    let group = h / hkv;
    let scale = 1.0 / (d as f64).sqrt();
    let mut out = vec![0.0f64; c.batch * c.sq * h * d];
    for b in 0..c.batch {
        let keys = c.lens.as_ref().map_or(c.skv as i64, |l| i64::from(l[b]));
        for s in 0..c.sq {
            let seen = if c.causal {
                (s as i64 + keys - c.sq as i64 + 1).clamp(0, keys)
            } else {
                keys
            } as usize;
            for head in 0..h {
                let kvh = head / group;
                let qrow = &q[((b * c.sq + s) * h + head) * d..][..d];
                let scores: Vec<f64> = (0..seen)
                    .map(|j| {
                        let krow = &k[(row_of(b, j) * hkv + kvh) * d..][..d];
                        qrow.iter()
                            .zip(krow)
                            .map(|(x, y)| f64::from(*x) * f64::from(*y))
                            .sum::<f64>()
                            * scale
                    })
                    .collect();
                let o = &mut out[((b * c.sq + s) * h + head) * d..][..d];
                let (mut max, mut total) = (f64::NEG_INFINITY, 0.0);
                for (t, tile) in scores.chunks(128).enumerate() {
                    let new_max = tile.iter().copied().fold(max, f64::max);
                    let alpha = (max - new_max).exp();
                    total *= alpha;
                    o.iter_mut().for_each(|x| *x *= alpha);
                    for (i, score) in tile.iter().enumerate() {
                        let p = (score - new_max).exp();
                        total += p;
                        let vrow = &v[(row_of(b, t * 128 + i) * hkv + kvh) * d..][..d];
                        for (x, y) in o.iter_mut().zip(vrow) {
                            *x += round(p) * f64::from(*y);
                        }
                    }
                    max = new_max;
                }
                if total > 0.0 {
                    o.iter_mut().for_each(|x| *x /= total);
                }
            }
        }
    }
    out
}

fn inputs<T: Float>(n: usize, seed: u64) -> (Vec<T>, Vec<f32>) {
    let t: Vec<T> = data(n, seed).iter().map(|x| T::from_f32(*x)).collect();
    let f = t.iter().map(|x| x.to_f32()).collect();
    (t, f)
}

/// Each element within `tol` plus the final rounding to `T`.
fn check<T: Float>(what: &str, got: &[T], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    let mut worst = 0.0f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = f64::from(g.to_f32());
        let allowed = tol + ulp::<T>(*w);
        assert!(
            (g - w).abs() <= allowed,
            "{what}: element {i} is {g}, the reference {w} (tolerance {allowed})"
        );
        worst = worst.max((g - w).abs() - ulp::<T>(*w));
    }
    eprintln!("{what}: worst {worst:e}");
}

/// A probability as the kernel hands it to the cube: computed in fp32,
/// rounded to `T`.
fn round_to<T: Float>(p: f64) -> f64 {
    f64::from(T::from_f32(p as f32).to_f32())
}

type Q<const W: usize> = (usize, usize, Const<W>);

/// A `builtin/flash_attention` kernel at q width QW and k width KW.
type Flash<T, const QW: usize, const KW: usize> = fn(
    &Tensor<T, Q<QW>>,
    &Tensor<T, Q<KW>>,
    &Tensor<T, Q<KW>>,
    &mut Tensor<T, Q<QW>>,
) -> Result<(), Error>;

/// Runs a flash_attention kernel on `c` and returns its output bits (NaN
/// first, so that rows no block wrote show) and the reference.
fn run_flash<T: Float, const QW: usize, const KW: usize>(
    kernel: Flash<T, QW, KW>,
    c: &Case,
) -> (Vec<T>, Vec<f64>) {
    let dev = Device::host();
    let seed = (c.batch * 1000 + c.sq * 10 + c.skv) as u64;
    let (q, qf) = inputs::<T>(c.batch * c.sq * QW, seed);
    let (k, kf) = inputs::<T>(c.batch * c.skv * KW, seed + 1);
    let (v, vf) = inputs::<T>(c.batch * c.skv * KW, seed + 2);
    let q = dev.tensor_from(&q, (c.batch, c.sq, Const::<QW>)).unwrap();
    let k = dev.tensor_from(&k, (c.batch, c.skv, Const::<KW>)).unwrap();
    let v = dev.tensor_from(&v, (c.batch, c.skv, Const::<KW>)).unwrap();
    let nan = vec![T::from_f32(f32::NAN); c.batch * c.sq * QW];
    let mut out = dev.tensor_from(&nan, (c.batch, c.sq, Const::<QW>)).unwrap();
    kernel(&q, &k, &v, &mut out).unwrap();
    let want = reference(c, &qf, &kf, &vf, |b, j| b * c.skv + j, round_to::<T>);
    (out.to_vec().unwrap(), want)
}

fn case(
    batch: usize,
    sq: usize,
    skv: usize,
    heads: usize,
    kv_heads: usize,
    d: usize,
    causal: bool,
) -> Case {
    Case {
        batch,
        sq,
        skv,
        heads,
        kv_heads,
        d,
        causal,
        lens: None,
    }
}

#[test]
fn gqa_4_to_1_head_128_causal_fp16_decode_and_prefill() {
    // Decode (S_q = 1), S_q = S_kv, S_q ≠ S_kv, and 33 positions × 4 heads =
    // 132 rows (two query blocks); S_kv across tile edges.
    for (batch, sq, skv) in [
        (1, 1, 1),
        (3, 1, 300),
        (2, 7, 7),
        (1, 40, 300),
        (2, 33, 33),
        (1, 5, 128),
    ] {
        let c = case(batch, sq, skv, 8, 2, 128, true);
        let (got, want) = run_flash::<half::f16, 1024, 256>(
            |a, b, c, d| kernels::flash_gqa4_d128_causal_f16(a, b, c, d),
            &c,
        );
        check(&format!("{c:?}"), &got, &want, 1e-3);
        // Tiles of 256 keys: two base blocks per exchange.
        let (got, want) = run_flash::<half::f16, 1024, 256>(
            |a, b, c, d| kernels::flash_gqa4_t256_causal_f16(a, b, c, d),
            &c,
        );
        check(&format!("tile 256 {c:?}"), &got, &want, 1e-3);
    }
}

#[test]
fn gqa_8_to_1_head_64_bf16_not_causal() {
    for (batch, sq, skv) in [(2, 1, 129), (1, 20, 77), (1, 17, 256), (2, 3, 5)] {
        let c = case(batch, sq, skv, 8, 1, 64, false);
        let (got, want) = run_flash::<half::bf16, 512, 64>(
            |a, b, c, d| kernels::flash_gqa8_d64_bf16(a, b, c, d),
            &c,
        );
        check(&format!("{c:?}"), &got, &want, 1.5e-3);
    }
}

#[test]
fn one_query_head_per_kv_head_head_64_causal_fp16() {
    // 130 positions: a full query block of 128 rows and a second of 2.
    for (batch, sq, skv) in [(1, 130, 130), (2, 5, 200)] {
        let c = case(batch, sq, skv, 2, 2, 64, true);
        let (got, want) = run_flash::<half::f16, 128, 128>(
            |a, b, c, d| kernels::flash_mha_d64_causal_f16(a, b, c, d),
            &c,
        );
        check(&format!("{c:?}"), &got, &want, 1e-3);
    }
}

#[test]
fn decode_pairs_kv_heads_and_gives_the_same_bits_at_every_distinct_block_count() {
    // One token per request: both KV heads' rows fit one fractal row, so a
    // unit takes the two KV heads together (5 requests, 5 units).
    let c = case(5, 1, 300, 8, 2, 128, true);
    let mut want = Vec::new();
    let got = same_bits_at_block_counts("paired decode", &[1, 2, 4, 5, 6, 48], || {
        let (got, w) = run_flash::<half::f16, 1024, 256>(
            |a, b, c, d| kernels::flash_gqa4_d128_causal_f16(a, b, c, d),
            &c,
        );
        want = w;
        got
    });
    check(&format!("{c:?}"), &got, &want, 1e-3);
}

#[test]
fn the_same_bits_at_every_distinct_block_count() {
    // 2 requests × 2 KV heads × 2 query blocks = 8 units.
    let c = case(2, 33, 140, 8, 2, 128, true);
    let mut want = Vec::new();
    same_bits_at_block_counts(
        "flash_gqa4_d128_causal_f16",
        &[1, 2, 3, 5, 8, 9, 24, 48],
        || {
            let (got, w) = run_flash::<half::f16, 1024, 256>(
                |a, b, c, d| kernels::flash_gqa4_d128_causal_f16(a, b, c, d),
                &c,
            );
            want = w;
            got
        },
    );
}

/// Runs flash_attention_varlen with `lens` keys per request.
fn run_varlen(c: &Case) -> Result<(Vec<half::f16>, Vec<f64>), Error> {
    let dev = Device::host();
    let lens = c.lens.clone().unwrap();
    let (q, qf) = inputs::<half::f16>(c.batch * c.sq * 1024, 71);
    let (k, kf) = inputs::<half::f16>(c.batch * c.skv * 256, 72);
    let (v, vf) = inputs::<half::f16>(c.batch * c.skv * 256, 73);
    let q = dev.tensor_from(&q, (c.batch, c.sq, Const::<1024>))?;
    let k = dev.tensor_from(&k, (c.batch, c.skv, Const::<256>))?;
    let v = dev.tensor_from(&v, (c.batch, c.skv, Const::<256>))?;
    let l = dev.tensor_from(&lens, (c.batch,))?;
    let mut out = dev.zeros((c.batch, c.sq, Const::<1024>))?;
    kernels::flash_varlen_gqa4_causal_f16(&q, &k, &v, &l, &mut out)?;
    let want = reference(
        c,
        &qf,
        &kf,
        &vf,
        |b, j| b * c.skv + j,
        round_to::<half::f16>,
    );
    Ok((out.to_vec()?, want))
}

#[test]
fn requests_of_different_lengths_in_one_launch() {
    // Request 1 sees 7 keys, request 2 all 300, request 0 none; with 3
    // positions, request 3's 2 keys leave its first row none (zeros).
    for sq in [1, 3] {
        let mut c = case(4, sq, 300, 8, 2, 128, true);
        c.lens = Some(vec![0, 7, 300, 2]);
        let (got, want) = run_varlen(&c).unwrap();
        check(&format!("{c:?}"), &got, &want, 1e-3);
    }
}

#[test]
fn a_key_count_past_the_keys_is_an_error() {
    let mut c = case(2, 1, 64, 8, 2, 128, true);
    c.lens = Some(vec![5, 65]);
    let message = kernel_message(run_varlen(&c).unwrap_err());
    assert!(
        message.contains(
            "flash_varlen_gqa4_causal_f16: seq_lens[1] = 65 is not a key count from 0 to 64"
        ),
        "{message}"
    );
}

/// Runs paged_attention: `table[b]` lists request b's cache blocks.
fn run_paged(
    c: &Case,
    cache_blocks: usize,
    table: &[i32],
    tile_256: bool,
) -> Result<(Vec<half::f16>, Vec<f64>), Error> {
    let dev = Device::host();
    let lens = c.lens.clone().unwrap();
    let max_blocks = table.len() / c.batch;
    let (q, qf) = inputs::<half::f16>(c.batch * c.sq * 1024, 81);
    let (k, kf) = inputs::<half::f16>(cache_blocks * 128 * 256, 82);
    let (v, vf) = inputs::<half::f16>(cache_blocks * 128 * 256, 83);
    let q = dev.tensor_from(&q, (c.batch, c.sq, Const::<1024>))?;
    let k = dev.tensor_from(&k, (cache_blocks, Const::<128>, Const::<256>))?;
    let v = dev.tensor_from(&v, (cache_blocks, Const::<128>, Const::<256>))?;
    let t = dev.tensor_from(table, (c.batch, max_blocks))?;
    let l = dev.tensor_from(&lens, (c.batch,))?;
    let mut out = dev.zeros((c.batch, c.sq, Const::<1024>))?;
    if tile_256 {
        kernels::paged_gqa4_t256_f16(&q, &k, &v, &t, &l, &mut out)?;
    } else {
        kernels::paged_gqa4_f16(&q, &k, &v, &t, &l, &mut out)?;
    }
    let want = reference(
        c,
        &qf,
        &kf,
        &vf,
        |b, j| table[b * max_blocks + j / 128] as usize * 128 + j % 128,
        round_to::<half::f16>,
    );
    Ok((out.to_vec()?, want))
}

#[test]
fn a_paged_cache_with_scattered_and_shared_blocks() {
    // 8 cache blocks; request 0 (1 key) in block 5; request 1 (200 keys) in
    // blocks 2 and 7; request 2 (300 keys) in 7, 0 and 4, sharing block 7
    // with request 1 as a shared prefix would. Entries past a request's
    // keys are -1 and never read.
    let table = [5, -1, -1, 2, 7, -1, 7, 0, 4];
    for (sq, tile_256) in [(1, false), (2, false), (1, true), (3, true)] {
        let mut c = case(3, sq, 384, 8, 2, 128, true);
        c.lens = Some(vec![1, 200, 300]);
        let (got, want) = run_paged(&c, 8, &table, tile_256).unwrap();
        check(
            &format!("paged, tile 256 {tile_256}, {c:?}"),
            &got,
            &want,
            1e-3,
        );
    }
}

#[test]
fn a_block_outside_the_cache_is_an_error_naming_the_request_and_position() {
    let mut c = case(2, 1, 256, 8, 2, 128, true);
    c.lens = Some(vec![100, 200]);
    for bad in [8, -3] {
        let table = [1, -1, 3, bad];
        for (tile_256, kernel) in [(false, "paged_gqa4_f16"), (true, "paged_gqa4_t256_f16")] {
            let message = kernel_message(run_paged(&c, 8, &table, tile_256).unwrap_err());
            let want = format!(
                "{kernel}: request 1, key block 1: block_table[1][1] = {bad} is outside the cache's 8 blocks"
            );
            assert!(message.contains(&want), "{message}");
        }
    }
}

/// Runs `flash_gqa4_any_width_f16` (q and k widths DYNAMIC) with q `qw`
/// and k `kw` wide.
fn run_any_width(c: &Case, qw: usize, kw: usize) -> Result<(Vec<half::f16>, Vec<f64>), Error> {
    let dev = Device::host();
    let (q, qf) = inputs::<half::f16>(c.batch * c.sq * qw, 11);
    let (k, kf) = inputs::<half::f16>(c.batch * c.skv * kw, 12);
    let (v, vf) = inputs::<half::f16>(c.batch * c.skv * kw, 13);
    let q = dev.tensor_from(&q, (c.batch, c.sq, qw))?;
    let k = dev.tensor_from(&k, (c.batch, c.skv, kw))?;
    let v = dev.tensor_from(&v, (c.batch, c.skv, kw))?;
    let mut out = dev.zeros((c.batch, c.sq, qw))?;
    kernels::flash_gqa4_any_width_f16(&q, &k, &v, &mut out)?;
    let want = reference(
        c,
        &qf,
        &kf,
        &vf,
        |b, j| b * c.skv + j,
        round_to::<half::f16>,
    );
    Ok((out.to_vec()?, want))
}

#[test]
fn head_sizes_that_disagree_are_an_error_before_the_launch() {
    // The contract's `equals: "q.last / heads == k.last / kv_heads"` on
    // widths that arrive at run time: 4 heads of 64 over 2 of 64 run.
    let c = case(2, 3, 5, 4, 2, 64, false);
    let (got, want) = run_any_width(&c, 256, 128).unwrap();
    check(&format!("{c:?}"), &got, &want, 1e-3);
    // k of 2 heads of 96 beside q's heads of 64: the wrapper refuses the
    // call, naming the sizes, the relation and where the template writes it.
    let err = run_any_width(&c, 256, 192).unwrap_err();
    assert!(matches!(err, Error::NotEqual { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "kernel `flash_gqa4_any_width_f16`: `q.2` is 256 and `k.2` is 192, but \
         builtin/flash_attention needs `q.last / heads == k.last / kv_heads` with heads = 4 and \
         kv_heads = 2 (builtin/flash_attention.hbs:14:5): the left side is 64, the right 96"
    );
    // A width the heads do not divide is the `divisible_by` relation's
    // error, which the launch checks first.
    assert_eq!(
        run_any_width(&c, 250, 128).unwrap_err().to_string(),
        "kernel `flash_gqa4_any_width_f16`: `q.2` is 250, not a multiple of 4 (heads = 4: query \
         heads; q's last axis holds heads of D = 64 or 128)"
    );
}
