//! builtin/topk_topp_sample (issue 28; kernels in tests/kernels/sample.yaml)
//! against a plain-Rust model of its documented algorithm: the same
//! candidates (descending logits, ties to the lower index), the same fp32
//! weights in the same order, the same splitmix64 draw of each row's seed,
//! so every token must match exactly. Sizes come from the sweep of each
//! kernel's `SIZES` (B and V varied) with temperature, top-k, top-p and
//! seed varied per row (greedy, top-k off and above its cap, top-p off and
//! at 0); every block count; the draws' distribution against the
//! probabilities they sample; a token that does not depend on the row's
//! place in the batch; the errors; and a broken copy
//! (tests/support/mutants.rs) that the checks catch.

use std::cmp::Ordering;

use pypto_rt::testing::{KernelSizes, Sweep, SweepFailure, Tolerance};
use pypto_rt::{Const, Device, Error, Tensor};
use pypto_tests::{Float, data, kernels, same_bits_at_every_block_count};

type Matrix<T> = Tensor<T, (usize, usize)>;
type Col<T> = Tensor<T, (usize,)>;
type SampleFn<T, S> =
    fn(&Matrix<T>, &Col<f32>, &Col<i32>, &Col<f32>, &Col<S>, &mut Col<i32>) -> Result<(), Error>;

/// The kernel's cap on candidates (`kMaxCandidates`).
const MAX_CANDIDATES: usize = 256;

/// Per-row settings of a call.
#[derive(Clone, Copy, Debug)]
struct Settings {
    temperature: f32,
    top_k: i32,
    top_p: f32,
    seed: i64,
}

/// splitmix64's finaliser, as the kernel documents it.
fn mix(seed: i64) -> u64 {
    let mut z = (seed as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// NaN first, then descending (a stable sort keeps equal values in index
/// order, as k rounds of ReduceMax pick them).
fn order(a: f32, b: f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => b.partial_cmp(&a).unwrap(),
    }
}

/// The kernel's algorithm for one row, in plain Rust: also returns the
/// nucleus (the candidates the draw may pick) for the distribution checks.
fn sample_row(x: &[f32], s: Settings) -> (i32, Vec<i32>, Vec<f32>) {
    let v = x.len();
    let mut ids: Vec<usize> = (0..v).collect();
    ids.sort_by(|&a, &b| order(x[a], x[b]));
    // Greedy unless the temperature is above 0 (0, negative, NaN: greedy).
    let above_zero = s.temperature.partial_cmp(&0.0) == Some(Ordering::Greater);
    if !above_zero || s.top_k == 1 {
        return (ids[0] as i32, vec![ids[0] as i32], vec![1.0]);
    }
    let k = if s.top_k <= 0 || s.top_k as usize > v {
        v
    } else {
        s.top_k as usize
    };
    let cand = &ids[..k.min(MAX_CANDIDATES)];
    let max = x[cand[0]];
    let inv = 1.0f32 / s.temperature;
    let e: Vec<f32> = cand.iter().map(|&i| ((x[i] - max) * inv).exp()).collect();
    let total = e.iter().fold(0.0f32, |a, &b| a + b);
    let (mut n, mut kept) = (e.len(), total);
    if s.top_p < 1.0 {
        let threshold = s.top_p * total;
        let mut sum = 0.0f32;
        for (j, &w) in e.iter().enumerate() {
            sum += w;
            if sum >= threshold {
                (n, kept) = (j + 1, sum);
                break;
            }
        }
    }
    let u = (mix(s.seed) >> 40) as f32 * (1.0 / 16_777_216.0);
    let target = u * kept;
    let mut sum = 0.0f32;
    let mut pick = cand[n - 1];
    for j in 0..n {
        sum += e[j];
        if sum > target {
            pick = cand[j];
            break;
        }
    }
    let nucleus = cand[..n].iter().map(|&i| i as i32).collect();
    (
        pick as i32,
        nucleus,
        e[..n].iter().map(|w| w / kept).collect(),
    )
}

fn sample_reference<T: Float>(x: &[T], v: usize, settings: &[Settings]) -> Vec<i32> {
    settings
        .iter()
        .enumerate()
        .map(|(b, &s)| {
            let row: Vec<f32> = x[b * v..(b + 1) * v].iter().map(|t| t.to_f32()).collect();
            sample_row(&row, s).0
        })
        .collect()
}

/// Settings for `b` rows from a seed: every mix of greedy (temperature 0,
/// negative, NaN, top-k 1), temperatures below and above 1, top-k off (0, -1),
/// small, above the cap and above V, top-p off (1, 1.5), 0.9, 0.5 and 0;
/// seeds anywhere in i64.
fn settings(b: usize, seed: u64) -> Vec<Settings> {
    const T: [f32; 7] = [1.0, 0.0, 0.7, 1.6, -1.0, 0.05, f32::NAN];
    const K: [i32; 7] = [0, 1, 5, 40, -1, 300, 100_000];
    const P: [f32; 5] = [1.0, 0.9, 0.5, 0.0, 1.5];
    (0..b)
        .map(|i| Settings {
            temperature: T[i % T.len()],
            top_k: K[(i / 2) % K.len()],
            top_p: P[(i / 3) % P.len()],
            seed: mix((seed as i64).wrapping_mul(1_000_003).wrapping_add(i as i64)) as i64,
        })
        .collect()
}

/// Logits from a seed, spread as a model's are (a few large values), every
/// fifth row on a grid of halves so that values tie.
fn logits<T: Float>(b: usize, v: usize, seed: u64) -> Vec<T> {
    let mut x = data(b * v, seed);
    for (r, row) in x.chunks_mut(v.max(1)).enumerate() {
        for y in row.iter_mut() {
            *y *= 2.0;
            if r % 5 == 0 {
                *y = (*y * 2.0).round() / 2.0;
            }
        }
    }
    x.into_iter().map(T::from_f32).collect()
}

fn run_sample<T: Float, S: pypto_rt::DType + Copy>(
    f: SampleFn<T, S>,
    x: &[T],
    v: usize,
    settings: &[Settings],
    seed: impl Fn(i64) -> S,
) -> Result<Vec<i32>, Error> {
    let dev = Device::host();
    let b = settings.len();
    let col = |f: &dyn Fn(&Settings) -> f32| -> Result<Col<f32>, Error> {
        dev.tensor_from(&settings.iter().map(f).collect::<Vec<_>>(), (b,))
    };
    let top_k: Vec<i32> = settings.iter().map(|s| s.top_k).collect();
    let seeds: Vec<S> = settings.iter().map(|s| seed(s.seed)).collect();
    let mut out = dev.tensor_from(&vec![-7; b], (b,))?;
    f(
        &dev.tensor_from(x, (b, v))?,
        &col(&|s| s.temperature)?,
        &dev.tensor_from(&top_k, (b,))?,
        &col(&|s| s.top_p)?,
        &dev.tensor_from(&seeds, (b,))?,
        &mut out,
    )?;
    out.to_vec()
}

/// A sampling kernel over the sweep of its sizes (B and V varied): every
/// token exactly the reference's. Returns the cases run and how many tokens
/// were not their row's argmax (so that the draws were tried, not only
/// greedy rows).
fn check_sample<T: Float>(
    f: SampleFn<T, i64>,
    sizes: &KernelSizes,
) -> Result<(usize, usize), SweepFailure> {
    let mut drawn = 0;
    let cases =
        Sweep::new(sizes)
            .max_size(8193)
            .max_elements(1 << 19)
            .run(Tolerance::exact(), |case| {
                let (b, v) = (case.dim("B"), case.dim("V"));
                let x: Vec<T> = logits(b, v, case.seed());
                let s = settings(b, case.seed());
                let got = run_sample(f, &x, v, &s, |s| s)?;
                let want = sample_reference(&x, v, &s);
                let greedy: Vec<Settings> = s.iter().map(|r| Settings { top_k: 1, ..*r }).collect();
                let argmax = sample_reference(&x, v, &greedy);
                drawn += want.iter().zip(&argmax).filter(|(a, b)| a != b).count();
                Ok((
                    got.iter().map(|&i| f64::from(i)).collect(),
                    want.iter().map(|&i| f64::from(i)).collect(),
                ))
            })?;
    Ok((cases, drawn))
}

#[test]
fn sampling_matches_the_documented_algorithm_in_every_dtype() {
    let (cases, drawn) = check_sample::<f32>(
        |a, b, c, d, e, o| kernels::sample_f32(a, b, c, d, e, o),
        &kernels::sample_f32::SIZES,
    )
    .unwrap();
    assert!(cases >= 30, "{cases} cases");
    assert!(drawn > 500, "{drawn} tokens other than the argmax");
    check_sample::<half::f16>(
        |a, b, c, d, e, o| kernels::sample_f16(a, b, c, d, e, o),
        &kernels::sample_f16::SIZES,
    )
    .unwrap();
    check_sample::<half::bf16>(
        |a, b, c, d, e, o| kernels::sample_bf16(a, b, c, d, e, o),
        &kernels::sample_bf16::SIZES,
    )
    .unwrap();
}

#[test]
fn temperature_zero_or_top_k_one_is_argmax() {
    let (b, v) = (40, 1000);
    let x: Vec<f32> = logits(b, v, 5);
    let mut s = settings(b, 6);
    for (i, row) in s.iter_mut().enumerate() {
        if i % 2 == 0 {
            row.temperature = 0.0;
        } else {
            row.top_k = 1;
            row.temperature = 1.3;
        }
    }
    let got = run_sample(
        |a, b, c, d, e, o| kernels::sample_f32(a, b, c, d, e, o),
        &x,
        v,
        &s,
        |s| s,
    )
    .unwrap();
    // builtin/argmax on the same rows.
    let dev = Device::host();
    let mut ids = dev.zeros((b,)).unwrap();
    kernels::argmax_f32(&dev.tensor_from(&x, (b, v)).unwrap(), &mut ids).unwrap();
    assert_eq!(got, ids.to_vec().unwrap());
}

#[test]
fn the_draws_follow_the_nucleus_probabilities() {
    // One row of logits, sampled with 6000 seeds at once: each token's
    // share of the draws within 4.5 standard deviations of its probability
    // in the nucleus, and no token outside it.
    let v = 50;
    let row: Vec<f32> = (0..v)
        .map(|i| -0.15 * i as f32 + (i % 3) as f32 * 0.1)
        .collect();
    for (temperature, top_k, top_p) in
        [(1.0, 0, 1.0), (0.8, 10, 1.0), (1.5, 0, 0.7), (1.0, 20, 0.5)]
    {
        let n = 6000;
        let s: Vec<Settings> = (0..n)
            .map(|i| Settings {
                temperature,
                top_k,
                top_p,
                seed: i as i64 * 7919 - 3_000_000,
            })
            .collect();
        let x: Vec<f32> = (0..n).flat_map(|_| row.iter().copied()).collect();
        let got = run_sample(
            |a, b, c, d, e, o| kernels::sample_f32(a, b, c, d, e, o),
            &x,
            v,
            &s,
            |s| s,
        )
        .unwrap();
        let (_, nucleus, probs) = sample_row(&row, s[0]);
        let mut counts = vec![0usize; v];
        for &t in &got {
            assert!(
                nucleus.contains(&t),
                "token {t} outside the nucleus {nucleus:?}"
            );
            counts[t as usize] += 1;
        }
        for (&t, &p) in nucleus.iter().zip(&probs) {
            let p = f64::from(p);
            let expected = p * n as f64;
            let sd = (n as f64 * p * (1.0 - p)).sqrt().max(1.0);
            let got = counts[t as usize] as f64;
            assert!(
                (got - expected).abs() <= 4.5 * sd,
                "T = {temperature}, top_k = {top_k}, top_p = {top_p}: token {t} drawn {got} times, \
                 expected {expected:.1} ± {sd:.1}"
            );
        }
        if top_k > 0 {
            assert!(nucleus.len() <= top_k as usize);
        }
    }
}

#[test]
fn a_token_depends_on_its_seed_not_its_place_in_the_batch() {
    let v = 300;
    let row: Vec<half::f16> = logits(1, v, 9);
    let one = Settings {
        temperature: 1.0,
        top_k: 0,
        top_p: 0.95,
        seed: -123_456_789_012,
    };
    let f: SampleFn<half::f16, i64> = |a, b, c, d, e, o| kernels::sample_f16(a, b, c, d, e, o);
    let alone = run_sample(f, &row, v, &[one], |s| s).unwrap()[0];
    let mut s = settings(30, 10);
    s[17] = one;
    let mut x: Vec<half::f16> = logits(30, v, 11);
    x[17 * v..18 * v].copy_from_slice(&row);
    let batch = run_sample(f, &x, v, &s, |s| s).unwrap();
    assert_eq!(batch[17], alone);
    assert_eq!(batch, sample_reference(&x, v, &s));
    // int32 seeds draw as int64 seeds of the same value (sign-extended).
    let s: Vec<Settings> = settings(64, 12)
        .into_iter()
        .enumerate()
        .map(|(i, s)| Settings {
            seed: i64::from(s.seed as i32) - if i % 2 == 0 { 0 } else { 1 << 31 },
            ..s
        })
        .filter(|s| i32::try_from(s.seed).is_ok())
        .collect();
    assert!(s.len() > 20);
    let x: Vec<f32> = logits(s.len(), 77, 13);
    let wide = run_sample(
        |a, b, c, d, e, o| kernels::sample_f32(a, b, c, d, e, o),
        &x,
        77,
        &s,
        |s| s,
    )
    .unwrap();
    let narrow = run_sample(
        |a, b, c, d, e, o| kernels::sample_f32_seed32(a, b, c, d, e, o),
        &x,
        77,
        &s,
        |s| s as i32,
    )
    .unwrap();
    assert_eq!(wide, narrow);
    assert_eq!(wide, sample_reference(&x, 77, &s));
}

#[test]
fn sampling_gives_the_same_tokens_at_every_block_count() {
    let (b, v) = (100, 513);
    let x: Vec<half::bf16> = logits(b, v, 20);
    let s = settings(b, 21);
    let got = same_bits_at_every_block_count("topk_topp_sample", || {
        run_sample(
            |a, b, c, d, e, o| kernels::sample_bf16(a, b, c, d, e, o),
            &x,
            v,
            &s,
            |s| s,
        )
        .unwrap()
        .into_iter()
        .map(|i| f32::from_bits(i as u32))
        .collect()
    });
    let got: Vec<i32> = got.iter().map(|f| f.to_bits() as i32).collect();
    assert_eq!(got, sample_reference(&x, v, &s));
}

#[test]
fn a_decode_steps_sampling_over_a_fixed_vocabulary() {
    let b = 4;
    let x: Vec<half::f16> = logits(b, 4096, 30);
    let s = settings(b, 31);
    let dev = Device::host();
    let col = |f: &dyn Fn(&Settings) -> f32| {
        dev.tensor_from(&s.iter().map(f).collect::<Vec<_>>(), (b,))
            .unwrap()
    };
    let mut next = dev.zeros((b,)).unwrap();
    kernels::sample_vocab(
        &dev.tensor_from(&x, (b, Const::<4096>)).unwrap(),
        &col(&|s| s.temperature),
        &dev.tensor_from(&s.iter().map(|s| s.top_k).collect::<Vec<_>>(), (b,))
            .unwrap(),
        &col(&|s| s.top_p),
        &dev.tensor_from(&s.iter().map(|s| s.seed).collect::<Vec<_>>(), (b,))
            .unwrap(),
        &mut next,
    )
    .unwrap();
    assert_eq!(next.to_vec().unwrap(), sample_reference(&x, 4096, &s));
}

#[test]
fn sampling_refuses_empty_rows_and_checks_its_shapes() {
    let f: SampleFn<f32, i64> = |a, b, c, d, e, o| kernels::sample_f32(a, b, c, d, e, o);
    let s = settings(2, 40);
    let err = run_sample(f, &[], 0, &s, |s| s).unwrap_err();
    assert!(matches!(err, Error::NoBlocks { .. }), "{err:?}");
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((3, 10)).unwrap();
    let t = dev.zeros((3,)).unwrap();
    let k = dev.zeros((3,)).unwrap();
    let seed = dev.zeros((2,)).unwrap();
    let mut out = dev.zeros((3,)).unwrap();
    let err = kernels::sample_f32(&x, &t, &k, &t, &seed, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `sample_f32`: `seed.0` is 2 but `logits.0` is 3; they must be equal because they \
         are the dim `B`"
    );
}

#[test]
fn a_large_vocabulary_is_read_in_tiles_and_merged() {
    // 128 256 logits (Llama 3's vocabulary): 32 tiles of 4096 merged into
    // the candidates, with top-k off (256 candidates from every tile),
    // small and large, greedy; the row's largest values placed in the last
    // tile, spread over several, or tied across tiles.
    let v = 128_256;
    let b = 8;
    let mut x: Vec<half::bf16> = logits(b, v, 50);
    let big = half::bf16::from_f32(9.0);
    x[v - 1] = big; // row 0: its maximum in the last tile's last value
    for t in 0..32 {
        x[v + t * 4096 + 7] = big; // row 1: ties in every tile
    }
    let s: Vec<Settings> = (0..b)
        .map(|i| Settings {
            temperature: [1.0, 0.9, 0.0, 1.2][i % 4],
            top_k: [0, 300, 1, 50, 256, -1, 2, 7][i],
            top_p: [1.0, 0.95, 0.5, 1.0][i % 4],
            seed: 1000 + i as i64,
        })
        .collect();
    let got = run_sample(
        |a, b, c, d, e, o| kernels::sample_bf16(a, b, c, d, e, o),
        &x,
        v,
        &s,
        |s| s,
    )
    .unwrap();
    assert_eq!(got, sample_reference(&x, v, &s));
    // Greedy rows: the ties across tiles go to the first.
    let greedy: Vec<Settings> = s.iter().map(|r| Settings { top_k: 1, ..*r }).collect();
    let got = run_sample(
        |a, b, c, d, e, o| kernels::sample_bf16(a, b, c, d, e, o),
        &x,
        v,
        &greedy,
        |s| s,
    )
    .unwrap();
    assert_eq!(got[..2], [v as i32 - 1, 7]);
    assert_eq!(got, sample_reference(&x, v, &greedy));
}

/// The broken copy of tests/support/mutants.rs fails the checks the
/// builtin passes (tests/rows.rs leaves it to this file).
#[test]
fn broken_sampling_fails_the_checks() {
    let failure = check_sample::<f32>(
        |a, b, c, d, e, o| kernels::broken_topk_topp_sample_short_nucleus_f32(a, b, c, d, e, o),
        &kernels::sample_f32::SIZES,
    )
    .unwrap_err();
    assert!(failure.problem.starts_with("element "), "{failure}");
    let names: Vec<&str> = pypto_tests::mutants::MUTANTS
        .iter()
        .filter(|m| m.builtin == "topk_topp_sample")
        .map(|m| m.name)
        .collect();
    assert_eq!(
        names,
        ["broken_topk_topp_sample_short_nucleus_f32"],
        "every sampling mutant is checked here"
    );
}
