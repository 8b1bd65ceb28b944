//! The MoE routing builtins of issue 28 (kernels in tests/kernels/moe.yaml)
//! against plain Rust: builtin/moe_gating_topk (softmax over each token's
//! expert logits, top-k, renormalised weights), builtin/moe_init_routing
//! (each token's row copied once per chosen expert, sorted stably by
//! expert), builtin/moe_finalize_routing (the weighted sum back per token).
//! The references follow the kernels' fp32 operation order, so every check
//! is bit for bit: the expert ids, the weights, the permutation, the counts
//! and the combined rows. Sizes come from the sweep of each kernel's
//! `SIZES` (T and H varied), with E in {8, 64, 131} and k in {1, 2, 8};
//! every block count; the errors word for word; one broken copy per
//! builtin (tests/support/mutants.rs); and a whole MoE layer chained
//! through the three kernels and builtin/grouped_matmul (the experts'
//! matmul, tests/kernels/grouped.yaml) against a plain-Rust MoE layer.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use pypto_rt::testing::{KernelSizes, Sweep, SweepFailure, Tolerance};
use pypto_rt::{Const, Device, Error, Tensor};
use pypto_tests::{Float, data, kernel_message, kernels, same_bits_at_every_block_count};

type Matrix<T> = Tensor<T, (usize, usize)>;
type Rows<T, const K: usize> = Tensor<T, (usize, Const<K>)>;
type Index = Tensor<i32, (usize,)>;

fn f64s<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| f64::from(x.bits())).collect()
}

fn ints(v: &[i32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

// ---- moe_gating_topk -----------------------------------------------------------

type Gate<T, const E: usize, const K: usize> =
    fn(&Rows<T, E>, &mut Rows<i32, K>, &mut Rows<f32, K>) -> Result<(), Error>;

/// Does `a` come before `b` in the gating's order (a NaN first, then
/// descending; equal values keep their expert order)?
fn gate_order(a: f32, b: f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => b.partial_cmp(&a).unwrap(),
    }
}

/// The gating of one token's logits `x` (already fp32): the k expert ids,
/// descending by logit with ties to the lower id, and their weights:
/// `e[i] = exp(x[i] - max)`, divided by the sum of the chosen `e` in
/// choice order (`renormalize`) or of every `e` in expert order, in fp32.
fn gate_row(x: &[f32], k: usize, renormalize: bool) -> (Vec<i32>, Vec<f32>) {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| gate_order(x[a], x[b])); // stable: ties keep the lower id first
    let max = x[order[0]];
    let e: Vec<f32> = x.iter().map(|&v| (v - max).exp()).collect();
    let ids = &order[..k];
    let sum = if renormalize {
        ids.iter().fold(0.0f32, |s, &i| s + e[i])
    } else {
        e.iter().fold(0.0f32, |s, &v| s + v)
    };
    (
        ids.iter().map(|&i| i as i32).collect(),
        ids.iter().map(|&i| e[i] / sum).collect(),
    )
}

fn gate_reference<T: Float>(
    logits: &[T],
    experts: usize,
    k: usize,
    renormalize: bool,
) -> (Vec<i32>, Vec<f32>) {
    let mut ids = Vec::new();
    let mut weights = Vec::new();
    for row in logits.chunks(experts) {
        let x: Vec<f32> = row.iter().map(|v| v.to_f32()).collect();
        let (i, w) = gate_row(&x, k, renormalize);
        ids.extend(i);
        weights.extend(w);
    }
    (ids, weights)
}

/// Logits for `t` tokens of `e` experts, from a seed: every other row on a
/// coarse grid of quarters (so that logits tie, and the lower id must win),
/// every seventh row a third of its experts at -inf, every eleventh row
/// all but one expert at -inf (so that fewer than k logits are finite and
/// the -inf ones are chosen lowest id first, never one chosen before:
/// the one left is expert 0 in the first such row), every thirteenth
/// row all -inf (ids 0, 1, …; NaN weights, as exp(-inf - -inf) is NaN).
fn logits<T: Float>(t: usize, e: usize, seed: u64) -> Vec<T> {
    let mut v = data(t * e, seed);
    for (r, row) in v.chunks_mut(e.max(1)).enumerate() {
        if r % 2 == 0 {
            for x in row.iter_mut() {
                *x = (*x * 4.0).round() / 4.0;
            }
        }
        if r % 7 == 3 {
            for x in row.iter_mut().step_by(3) {
                *x = f32::NEG_INFINITY;
            }
        }
        if r % 13 == 6 {
            row.fill(f32::NEG_INFINITY);
        }
        if r % 11 == 5 {
            let left = (r / 11 * 5) % e;
            for (i, x) in row.iter_mut().enumerate() {
                if i != left {
                    *x = f32::NEG_INFINITY;
                }
            }
        }
    }
    v.into_iter().map(T::from_f32).collect()
}

/// Runs a gating kernel on `x`; its ids and weights, with NaN-filled
/// outputs beforehand (so that anything no block wrote shows).
fn run_gate<T: Float, const E: usize, const K: usize>(
    f: Gate<T, E, K>,
    x: &[T],
) -> Result<(Vec<i32>, Vec<f32>), Error> {
    let dev = Device::host();
    let t = x.len() / E;
    let mut ids = dev.tensor_from(&vec![-7; t * K], (t, Const::<K>))?;
    let mut w = dev.tensor_from(&vec![f32::NAN; t * K], (t, Const::<K>))?;
    f(&dev.tensor_from(x, (t, Const::<E>))?, &mut ids, &mut w)?;
    Ok((ids.to_vec()?, w.to_vec()?))
}

/// Rows whose k-th and (k+1)-th weights (of the reference's full order) are
/// within 1e-6 relative of each other: where a top-k over rounded
/// probabilities could pick either. The kernel picks on the logits, so its
/// ids match the reference's there too; the count shows such rows were
/// tried.
fn near_ties<T: Float>(x: &[T], experts: usize, k: usize) -> usize {
    if k >= experts {
        return 0;
    }
    x.chunks(experts)
        .filter(|row| {
            let f: Vec<f32> = row.iter().map(|v| v.to_f32()).collect();
            let (_, w) = gate_row(&f, k + 1, false);
            let (a, b) = (w[k - 1], w[k]);
            (a - b).abs() <= 1e-6 * a.abs()
        })
        .count()
}

/// A gating kernel over the sweep of its sizes (T varied): ids and weights
/// bit for bit. Returns the cases run and the near ties met.
fn check_gate<T: Float, const E: usize, const K: usize>(
    f: Gate<T, E, K>,
    renormalize: bool,
    sizes: &KernelSizes,
) -> Result<(usize, usize), SweepFailure> {
    let mut ties = 0;
    let cases = Sweep::new(sizes)
        .max_elements(1 << 20)
        .run(Tolerance::exact(), |case| {
            let t = case.dim("T");
            let x: Vec<T> = logits(t, E, case.seed());
            let (ids, w) = run_gate(f, &x)?;
            let (want_ids, want_w) = gate_reference(&x, E, K, renormalize);
            ties += near_ties(&x, E, K);
            let mut got = ints(&ids);
            got.extend(f64s(&w));
            let mut want = ints(&want_ids);
            want.extend(f64s(&want_w));
            Ok((got, want))
        })?;
    Ok((cases, ties))
}

#[test]
fn gating_picks_the_top_k_and_renormalises_in_every_dtype() {
    let mut ties = 0;
    let mut run = |r: Result<(usize, usize), SweepFailure>| {
        let (cases, t) = r.unwrap();
        assert!(cases >= 20, "{cases} cases");
        ties += t;
    };
    run(check_gate::<f32, 8, 2>(
        |a, b, c| kernels::moe_gate_f32_e8_k2(a, b, c),
        true,
        &kernels::moe_gate_f32_e8_k2::SIZES,
    ));
    run(check_gate::<f32, 131, 8>(
        |a, b, c| kernels::moe_gate_f32_e131_k8(a, b, c),
        true,
        &kernels::moe_gate_f32_e131_k8::SIZES,
    ));
    run(check_gate::<half::f16, 64, 8>(
        |a, b, c| kernels::moe_gate_f16_e64_k8(a, b, c),
        true,
        &kernels::moe_gate_f16_e64_k8::SIZES,
    ));
    run(check_gate::<half::f16, 8, 8>(
        |a, b, c| kernels::moe_gate_f16_e8_k8(a, b, c),
        true,
        &kernels::moe_gate_f16_e8_k8::SIZES,
    ));
    run(check_gate::<half::bf16, 131, 1>(
        |a, b, c| kernels::moe_gate_bf16_e131_k1(a, b, c),
        true,
        &kernels::moe_gate_bf16_e131_k1::SIZES,
    ));
    run(check_gate::<half::bf16, 64, 2>(
        |a, b, c| kernels::moe_gate_bf16_e64_k2_softmax(a, b, c),
        false,
        &kernels::moe_gate_bf16_e64_k2_softmax::SIZES,
    ));
    // The coarse rows tie often at the k-th choice; ids matched there too.
    assert!(ties > 100, "{ties} near ties");
}

#[test]
fn gating_ties_go_to_the_lower_expert_and_minus_infinity_comes_last() {
    let inf = f32::NEG_INFINITY;
    let rows: [[f32; 8]; 4] = [
        [1.0, 3.0, 3.0, 0.5, 3.0, -2.0, 0.0, 0.0],
        [inf, inf, inf, inf, inf, inf, 2.0, inf],
        [-0.0, 0.0, -0.0, 0.0, -1.0, 0.0, -0.0, -0.0],
        [100.0, -100.0, 99.0, 88.0, -88.0, 0.0, 100.0, 1e-30],
    ];
    let x: Vec<f32> = rows.concat();
    let (ids, w) =
        run_gate::<f32, 8, 2>(|a, b, c| kernels::moe_gate_f32_e8_k2(a, b, c), &x).unwrap();
    assert_eq!(ids, [1, 2, 6, 0, 0, 1, 0, 6]);
    assert_eq!(w, [0.5, 0.5, 1.0, 0.0, 0.5, 0.5, 0.5, 0.5]);
    // k = E: every expert, in order, weights a softmax summing to about 1.
    let x: Vec<half::f16> = [0.0f32, 1.0, 2.0, 3.0, 3.0, 2.0, 1.0, 0.0]
        .iter()
        .map(|&v| half::f16::from_f32(v))
        .collect();
    let (ids, w) =
        run_gate::<half::f16, 8, 8>(|a, b, c| kernels::moe_gate_f16_e8_k8(a, b, c), &x).unwrap();
    assert_eq!(ids, [3, 4, 2, 5, 1, 6, 0, 7]);
    let sum: f32 = w.iter().sum();
    assert!((sum - 1.0).abs() < 1e-6, "{sum}");
    assert_eq!(w, gate_reference(&x, 8, 8, true).1);
    // A NaN logit is chosen first (as argmax counts it) and makes its
    // row's weights NaN; the next row is unaffected.
    let mut x = vec![0.25f32; 16];
    x[3] = f32::NAN;
    x[5] = 2.0;
    x[8 + 6] = 1.0;
    let (ids, w) =
        run_gate::<f32, 8, 2>(|a, b, c| kernels::moe_gate_f32_e8_k2(a, b, c), &x).unwrap();
    assert_eq!(ids, [3, 5, 6, 0]);
    assert!(w[0].is_nan() && w[1].is_nan(), "{w:?}");
    assert_eq!(w[2..], gate_reference(&x[8..], 8, 2, true).1[..]);
}

#[test]
fn gating_gives_the_same_bits_at_every_block_count() {
    let x: Vec<half::f16> = logits(200, 64, 17);
    let got = same_bits_at_every_block_count("moe_gating_topk", || {
        let (ids, w) =
            run_gate::<half::f16, 64, 8>(|a, b, c| kernels::moe_gate_f16_e64_k8(a, b, c), &x)
                .unwrap();
        let mut v: Vec<f32> = ids.iter().map(|&i| f32::from_bits(i as u32)).collect();
        v.extend(w);
        v
    });
    let (ids, w) = gate_reference(&x, 64, 8, true);
    let mut want: Vec<f32> = ids.iter().map(|&i| f32::from_bits(i as u32)).collect();
    want.extend(w);
    assert_eq!(f64s(&got), f64s(&want));
}

#[test]
fn gating_errors_name_the_kernel_and_the_sizes() {
    let dev = Device::host();
    let run = |e: usize| {
        let x = dev.tensor_from(&vec![0.5f32; 3 * e], (3, e)).unwrap();
        let mut ids = dev.zeros((3, Const::<2>)).unwrap();
        let mut w = dev.zeros((3, Const::<2>)).unwrap();
        kernels::moe_gate_any_experts(&x, &mut ids, &mut w)
    };
    // No expert at all: no block has work, and the outputs are not empty.
    assert!(matches!(run(0), Err(Error::NoBlocks { .. })));
    // Any E from 2 to 4096 works.
    run(2).unwrap();
    run(4096).unwrap();
    let message = kernel_message(run(1).unwrap_err());
    assert!(
        message.contains(
            "moe_gate_any_experts: k = 2 experts chosen per token, but logits has only 1"
        ),
        "{message}"
    );
    let message = kernel_message(run(4097).unwrap_err());
    assert!(
        message.contains(
            "moe_gate_any_experts: 4097 experts per token, more than the 4096 one row of logits may hold"
        ),
        "{message}"
    );
    // k is the width of the outputs: a wrong one does not type-check with
    // a fixed width, and the dims T must agree.
    let x = dev.zeros::<f32, _>((3, Const::<8>)).unwrap();
    let mut ids = dev.zeros((4, Const::<2>)).unwrap();
    let mut w = dev.zeros((3, Const::<2>)).unwrap();
    let err = kernels::moe_gate_f32_e8_k2(&x, &mut ids, &mut w).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `moe_gate_f32_e8_k2`: `expert_ids.0` is 4 but `logits.0` is 3; they must be equal \
         because they are the dim `T`"
    );
}

// ---- moe_init_routing ----------------------------------------------------------

type InitRouting<T, const K: usize, const E: usize> = fn(
    &Matrix<T>,
    &Rows<i32, K>,
    &mut Matrix<T>,
    &mut Index,
    &mut Tensor<i32, (Const<E>,)>,
) -> Result<(), Error>;

/// What moe_init_routing computes: the pairs f = t·k + j sorted stably by
/// expert; `expanded[r]` = x's row of the pair at sorted position r,
/// `row_idx[f]` = the position of pair f, `counts[e]` = pairs of expert e.
fn init_reference<T: Copy>(
    x: &[T],
    ids: &[i32],
    k: usize,
    h: usize,
    experts: usize,
) -> (Vec<T>, Vec<i32>, Vec<i32>) {
    let mut pairs: Vec<usize> = (0..ids.len()).collect();
    pairs.sort_by_key(|&f| ids[f]); // stable
    let mut expanded = Vec::with_capacity(ids.len() * h);
    let mut row_idx = vec![0; ids.len()];
    for (r, &f) in pairs.iter().enumerate() {
        expanded.extend_from_slice(&x[f / k * h..(f / k + 1) * h]);
        row_idx[f] = r as i32;
    }
    let mut counts = vec![0; experts];
    for &e in ids {
        counts[e as usize] += 1;
    }
    (expanded, row_idx, counts)
}

/// Expert ids for `t` tokens choosing `k` of `e`, from a seed: skewed (a
/// third of the choices go to expert 0, some to the last expert), others
/// anywhere; some experts get none; a token may name one expert twice.
fn expert_ids(t: usize, k: usize, e: usize, seed: u64) -> Vec<i32> {
    data(t * k, seed)
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let r = (v + 4.0) / 8.0;
            match i % 6 {
                0 | 3 => 0,
                5 => e as i32 - 1,
                _ => ((r * r * e as f32) as usize).min(e - 1) as i32,
            }
        })
        .collect()
}

struct Routed<T> {
    expanded: Vec<T>,
    row_idx: Vec<i32>,
    counts: Vec<i32>,
}

fn run_init<T: Float, const K: usize, const E: usize>(
    f: InitRouting<T, K, E>,
    x: &[T],
    ids: &[i32],
    h: usize,
) -> Result<Routed<T>, Error> {
    let dev = Device::host();
    let t = ids.len() / K;
    let nan = T::from_f32(f32::NAN);
    let mut expanded = dev.tensor_from(&vec![nan; t * K * h], (t * K, h))?;
    let mut row_idx = dev.tensor_from(&vec![-7; t * K], (t * K,))?;
    let mut counts = dev.tensor_from(&[-7; E], (Const::<E>,))?;
    f(
        &dev.tensor_from(x, (t, h))?,
        &dev.tensor_from(ids, (t, Const::<K>))?,
        &mut expanded,
        &mut row_idx,
        &mut counts,
    )?;
    Ok(Routed {
        expanded: expanded.to_vec()?,
        row_idx: row_idx.to_vec()?,
        counts: counts.to_vec()?,
    })
}

fn routed_f64<T: Float>(r: &Routed<T>) -> Vec<f64> {
    let mut v = f64s(&r.expanded);
    v.extend(ints(&r.row_idx));
    v.extend(ints(&r.counts));
    v
}

/// The distinct (T, H) of a kernel's sweep (TK follows from T), within a
/// budget of elements.
fn token_sizes(sizes: &KernelSizes, k: usize) -> Vec<(usize, usize, u64)> {
    let mut seen = BTreeSet::new();
    Sweep::new(sizes)
        .cases()
        .into_iter()
        .map(|c| (c.dim("T"), c.dim("H"), c.seed()))
        .filter(|&(t, h, _)| t * k * h.max(1) <= 1 << 19 && seen.insert((t, h)))
        .collect()
}

fn check_init<T: Float, const K: usize, const E: usize>(
    f: InitRouting<T, K, E>,
    sizes: &KernelSizes,
) -> Result<usize, SweepFailure> {
    let runs = token_sizes(sizes, K);
    for &(t, h, seed) in &runs {
        let fail = |problem: String| SweepFailure {
            kernel: sizes.kernel,
            case: format!("T = {t}, H = {h}"),
            problem,
        };
        let x: Vec<T> = data(t * h, seed).into_iter().map(T::from_f32).collect();
        let ids = expert_ids(t, K, E, seed + 1);
        let got = run_init(f, &x, &ids, h).map_err(|e| fail(format!("the call failed: {e}")))?;
        let (expanded, row_idx, counts) = init_reference(&x, &ids, K, h, E);
        let want = Routed {
            expanded,
            row_idx,
            counts,
        };
        let (got, want) = (routed_f64(&got), routed_f64(&want));
        if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
            return Err(fail(format!("element {i} differs")));
        }
    }
    Ok(runs.len())
}

#[test]
fn init_routing_sorts_rows_by_expert_stably_in_every_dtype() {
    let cases = check_init::<f32, 2, 8>(
        |a, b, c, d, e| kernels::moe_init_f32_e8_k2(a, b, c, d, e),
        &kernels::moe_init_f32_e8_k2::SIZES,
    )
    .unwrap();
    assert!(cases >= 30, "{cases} cases");
    check_init::<half::f16, 8, 64>(
        |a, b, c, d, e| kernels::moe_init_f16_e64_k8(a, b, c, d, e),
        &kernels::moe_init_f16_e64_k8::SIZES,
    )
    .unwrap();
    check_init::<half::bf16, 1, 131>(
        |a, b, c, d, e| kernels::moe_init_bf16_e131_k1(a, b, c, d, e),
        &kernels::moe_init_bf16_e131_k1::SIZES,
    )
    .unwrap();
}

#[test]
fn init_routing_at_a_small_size_by_hand() {
    // 3 tokens choosing 2 of 8: pairs (t, j) in order 0..6 with experts
    // 5, 1 | 1, 5 | 7, 1: expert 1 gets pairs 1, 2, 5, expert 5 pairs 0, 3,
    // expert 7 pair 4.
    let x: Vec<f32> = vec![10.0, 11.0, 20.0, 21.0, 30.0, 31.0];
    let r = run_init::<f32, 2, 8>(
        |a, b, c, d, e| kernels::moe_init_f32_e8_k2(a, b, c, d, e),
        &x,
        &[5, 1, 1, 5, 7, 1],
        2,
    )
    .unwrap();
    assert_eq!(
        r.expanded,
        [
            10.0, 11.0, 20.0, 21.0, 30.0, 31.0, 10.0, 11.0, 20.0, 21.0, 30.0, 31.0
        ]
    );
    assert_eq!(r.row_idx, [3, 0, 1, 4, 5, 2]);
    assert_eq!(r.counts, [0, 3, 0, 0, 0, 2, 0, 1]);
}

#[test]
fn init_routing_gives_the_same_bits_at_every_block_count() {
    let (t, h) = (37, 24);
    let x: Vec<half::f16> = data(t * h, 40)
        .into_iter()
        .map(half::f16::from_f32)
        .collect();
    let ids = expert_ids(t, 8, 64, 41);
    let got = same_bits_at_every_block_count("moe_init_routing", || {
        let r = run_init::<half::f16, 8, 64>(
            |a, b, c, d, e| kernels::moe_init_f16_e64_k8(a, b, c, d, e),
            &x,
            &ids,
            h,
        )
        .unwrap();
        routed_f64(&r).into_iter().map(|v| v as f32).collect()
    });
    let (expanded, row_idx, counts) = init_reference(&x, &ids, 8, h, 64);
    let want = routed_f64(&Routed {
        expanded,
        row_idx,
        counts,
    });
    assert_eq!(got.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(), want);
}

#[test]
fn an_expert_id_outside_the_experts_is_an_error_naming_the_token() {
    let f: InitRouting<f32, 2, 8> = |a, b, c, d, e| kernels::moe_init_f32_e8_k2(a, b, c, d, e);
    for (bad, blocks) in [
        (8, None),
        (-1, Some(1)),
        (i32::MAX, Some(48)),
        (100, Some(5)),
    ] {
        let mut ids = expert_ids(9, 2, 8, 50);
        ids[13] = bad;
        let x = vec![1.0f32; 9 * 4];
        let run = || run_init(f, &x, &ids, 4).map(|_| ());
        let err = match blocks {
            Some(n) => pypto_rt::with_host_blocks(n, run).unwrap(),
            None => run(),
        }
        .unwrap_err();
        let message = kernel_message(err);
        let want = format!(
            "moe_init_f32_e8_k2: token 6: expert_ids[6][1] = {bad} is outside the 8 experts of expert_tokens"
        );
        assert!(message.contains(&want), "{message}");
    }
    // Any k and E at run time, and their limit.
    let dev = Device::host();
    let x = dev.tensor_from(&[1.0f32; 2 * 3], (2, 3)).unwrap();
    let ids = dev.tensor_from(&[0, 2, 1, 2, 0, 0], (2, 3)).unwrap();
    let mut expanded = dev.zeros((6, 3)).unwrap();
    let mut row_idx = dev.zeros((6,)).unwrap();
    let mut counts = dev.zeros((3,)).unwrap();
    kernels::moe_init_any(&x, &ids, &mut expanded, &mut row_idx, &mut counts).unwrap();
    assert_eq!(counts.to_vec().unwrap(), [3, 1, 2]);
    assert_eq!(row_idx.to_vec().unwrap(), [0, 4, 3, 5, 1, 2]);
    let mut counts = dev.zeros((16385,)).unwrap();
    let message = kernel_message(
        kernels::moe_init_any(&x, &ids, &mut expanded, &mut row_idx, &mut counts).unwrap_err(),
    );
    assert!(
        message
            .contains("moe_init_any: 16385 experts, more than the 16384 expert_tokens may count"),
        "{message}"
    );
    // The expanded rows must be T·k.
    let mut counts = dev.zeros((3,)).unwrap();
    let mut expanded = dev.zeros((5, 3)).unwrap();
    let mut row_idx = dev.zeros((5,)).unwrap();
    let err =
        kernels::moe_init_any(&x, &ids, &mut expanded, &mut row_idx, &mut counts).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `moe_init_any`: `expanded_x.0` is 5, `x.0` is 2 and `expert_ids.1` is 3, but \
         builtin/moe_init_routing needs `expanded_x.0 == x.0 * expert_ids.last` \
         (builtin/moe_init_routing.hbs:13:5): the left side is 5, the right 6"
    );
}

/// moe_init_any swept through its own `SIZES`, any k and E: the template's
/// `expanded_x.0 == x.0 * expert_ids.last` makes the sweep compute TK from
/// T and k in every case (never varied itself), so each case is one the
/// wrapper takes, and TK ranges as T and k do.
#[test]
fn init_routing_with_any_k_swept_with_tk_following_t_and_k() {
    let dev = Device::host();
    let mut tks = BTreeSet::new();
    let cases = Sweep::new(&kernels::moe_init_any::SIZES)
        // expert_tokens counts at most 16384 experts.
        .max_size(4096)
        .max_elements(1 << 16)
        .run(Tolerance::exact(), |case| {
            let (t, h, k, e) = (
                case.dim("T"),
                case.dim("H"),
                case.dim("expert_ids.1"),
                case.dim("expert_tokens.0"),
            );
            let tk = case.dim("TK");
            assert_eq!(tk, t * k, "{case}");
            assert_ne!(case.varied(), Some("TK"), "{case}");
            tks.insert(tk);
            let x = data(t * h, case.seed());
            let ids = expert_ids(t, k, e, case.seed() + 1);
            let mut expanded = dev.tensor_from(&vec![f32::NAN; tk * h], (tk, h))?;
            let mut row_idx = dev.tensor_from(&vec![-7; tk], (tk,))?;
            let mut counts = dev.tensor_from(&vec![-7; e], (e,))?;
            kernels::moe_init_any(
                &dev.tensor_from(&x, (t, h))?,
                &dev.tensor_from(&ids, (t, k))?,
                &mut expanded,
                &mut row_idx,
                &mut counts,
            )?;
            let got = Routed {
                expanded: expanded.to_vec()?,
                row_idx: row_idx.to_vec()?,
                counts: counts.to_vec()?,
            };
            let (expanded, row_idx, counts) = init_reference(&x, &ids, k, h, e);
            let want = Routed {
                expanded,
                row_idx,
                counts,
            };
            Ok((routed_f64(&got), routed_f64(&want)))
        })
        .unwrap();
    assert!(cases >= 100, "{cases} cases");
    assert!(tks.len() >= 30, "TK took {tks:?}");
}

// ---- moe_finalize_routing ------------------------------------------------------

type Finalize<T, const K: usize> =
    fn(&Matrix<T>, &Index, &Rows<f32, K>, Option<&Matrix<T>>, &mut Matrix<T>) -> Result<(), Error>;

/// What moe_finalize_routing computes: per token and column, in fp32,
/// `acc = w0·y[r0]`, then `acc + wj·y[rj]` for j = 1.., then `+ residual`,
/// rounded once.
fn finalize_reference<T: Float>(
    y: &[T],
    row_idx: &[i32],
    weights: &[f32],
    residual: Option<&[T]>,
    k: usize,
    h: usize,
) -> Vec<T> {
    let t = weights.len() / k;
    let mut out = Vec::with_capacity(t * h);
    for tok in 0..t {
        for c in 0..h {
            let mut acc = 0.0f32;
            for j in 0..k {
                let r = row_idx[tok * k + j] as usize;
                let term = weights[tok * k + j] * y[r * h + c].to_f32();
                acc = if j == 0 { term } else { acc + term };
            }
            if let Some(res) = residual {
                acc += res[tok * h + c].to_f32();
            }
            out.push(T::from_f32(acc));
        }
    }
    out
}

/// A permutation of `n` rows from a seed.
fn permutation(n: usize, seed: u64) -> Vec<i32> {
    let keys = data(n, seed);
    let mut p: Vec<i32> = (0..n as i32).collect();
    p.sort_by(|&a, &b| keys[a as usize].total_cmp(&keys[b as usize]));
    p
}

/// Weights as gating gives them: positive, each token's summing to about 1.
fn gate_weights(t: usize, k: usize, seed: u64) -> Vec<f32> {
    let raw: Vec<f32> = data(t * k, seed).iter().map(|v| (v + 4.25) / 8.0).collect();
    raw.chunks(k.max(1))
        .flat_map(|row| {
            let s: f32 = row.iter().sum();
            row.iter().map(move |v| v / s).collect::<Vec<_>>()
        })
        .collect()
}

fn run_finalize<T: Float, const K: usize>(
    f: Finalize<T, K>,
    y: &[T],
    row_idx: &[i32],
    weights: &[f32],
    residual: Option<&[T]>,
    h: usize,
) -> Result<Vec<T>, Error> {
    let dev = Device::host();
    let t = weights.len() / K;
    let res = match residual {
        Some(r) => Some(dev.tensor_from(r, (t, h))?),
        None => None,
    };
    let mut out = dev.tensor_from(&vec![T::from_f32(f32::NAN); t * h], (t, h))?;
    f(
        &dev.tensor_from(y, (t * K, h))?,
        &dev.tensor_from(row_idx, (t * K,))?,
        &dev.tensor_from(weights, (t, Const::<K>))?,
        res.as_ref(),
        &mut out,
    )?;
    out.to_vec()
}

fn check_finalize<T: Float, const K: usize>(
    f: Finalize<T, K>,
    residual: bool,
    sizes: &KernelSizes,
) -> Result<usize, SweepFailure> {
    let runs = token_sizes(sizes, K);
    for &(t, h, seed) in &runs {
        let fail = |problem: String| SweepFailure {
            kernel: sizes.kernel,
            case: format!("T = {t}, H = {h}"),
            problem,
        };
        let y: Vec<T> = data(t * K * h, seed).into_iter().map(T::from_f32).collect();
        let row_idx = permutation(t * K, seed + 1);
        let w = gate_weights(t, K, seed + 2);
        let res: Option<Vec<T>> =
            residual.then(|| data(t * h, seed + 3).into_iter().map(T::from_f32).collect());
        let got = run_finalize(f, &y, &row_idx, &w, res.as_deref(), h)
            .map_err(|e| fail(format!("the call failed: {e}")))?;
        let want = finalize_reference(&y, &row_idx, &w, res.as_deref(), K, h);
        if let Some(i) = (0..got.len().max(want.len()))
            .find(|&i| got.get(i).map(|v| v.bits()) != want.get(i).map(|v| v.bits()))
        {
            return Err(fail(format!("element {i} differs")));
        }
    }
    Ok(runs.len())
}

#[test]
fn finalize_routing_sums_each_tokens_choices_in_order_in_every_dtype() {
    let cases = check_finalize::<f32, 2>(
        |a, b, c, _, e| kernels::moe_finalize_f32_k2(a, b, c, e),
        false,
        &kernels::moe_finalize_f32_k2::SIZES,
    )
    .unwrap();
    assert!(cases >= 30, "{cases} cases");
    check_finalize::<half::f16, 8>(
        |a, b, c, d, e| kernels::moe_finalize_f16_k8_residual(a, b, c, d.unwrap(), e),
        true,
        &kernels::moe_finalize_f16_k8_residual::SIZES,
    )
    .unwrap();
    check_finalize::<half::bf16, 1>(
        |a, b, c, _, e| kernels::moe_finalize_bf16_k1(a, b, c, e),
        false,
        &kernels::moe_finalize_bf16_k1::SIZES,
    )
    .unwrap();
    check_finalize::<half::bf16, 2>(
        |a, b, c, d, e| kernels::moe_finalize_bf16_k2_residual(a, b, c, d.unwrap(), e),
        true,
        &kernels::moe_finalize_bf16_k2_residual::SIZES,
    )
    .unwrap();
}

#[test]
fn finalize_routing_sums_in_choice_order_and_rounds_once() {
    // 2^24 + 1 is not an fp32: (1·2^24 + 1·1) + 1·1 rounds to 2^24 twice,
    // while 2^24 + (1 + 1) would be exact. In choice order the kernel gets 2^24.
    let y = [16_777_216.0f32, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let got = run_finalize::<f32, 2>(
        |a, b, c, _, e| kernels::moe_finalize_f32_k2(a, b, c, e),
        &y,
        &[0, 1, 2, 3],
        &[1.0, 1.0, 1.0, 1.0],
        None,
        2,
    );
    // token 0: rows 0 and 1 ([2^24, 1] + [1, 0]); token 1: rows 2, 3.
    assert_eq!(got.unwrap(), [16_777_216.0, 1.0, 0.0, 0.0]);
    // bf16 with a residual: the fp32 sum is rounded once at the end.
    let one = half::bf16::from_f32(1.0);
    let tiny = half::bf16::from_f32(1.0 / 256.0); // below bf16's half-ulp at 1 alone
    let y = [one, tiny];
    let got = run_finalize::<half::bf16, 2>(
        |a, b, c, d, e| kernels::moe_finalize_bf16_k2_residual(a, b, c, d.unwrap(), e),
        &y,
        &[0, 1],
        &[1.0, 1.0],
        Some(&[tiny]),
        1,
    )
    .unwrap();
    // 1 + 2^-8 + 2^-8 = 1 + 2^-7: a bf16 exactly; rounding each sum would give 1.
    assert_eq!(got[0].to_f32(), 1.0 + 1.0 / 128.0);
}

#[test]
fn finalize_routing_gives_the_same_bits_at_every_block_count() {
    // 53 tokens of 400 values: 6 blocks of work units (a token each).
    let (t, h) = (53, 400);
    let y: Vec<half::f16> = data(t * 8 * h, 60)
        .into_iter()
        .map(half::f16::from_f32)
        .collect();
    let res: Vec<half::f16> = data(t * h, 61)
        .into_iter()
        .map(half::f16::from_f32)
        .collect();
    let row_idx = permutation(t * 8, 62);
    let w = gate_weights(t, 8, 63);
    let got = same_bits_at_every_block_count("moe_finalize_routing", || {
        run_finalize::<half::f16, 8>(
            |a, b, c, d, e| kernels::moe_finalize_f16_k8_residual(a, b, c, d.unwrap(), e),
            &y,
            &row_idx,
            &w,
            Some(&res),
            h,
        )
        .unwrap()
    });
    assert_eq!(got, finalize_reference(&y, &row_idx, &w, Some(&res), 8, h));
}

#[test]
fn a_row_index_outside_the_expanded_rows_is_an_error_naming_the_token() {
    let f: Finalize<f32, 2> = |a, b, c, _, e| kernels::moe_finalize_f32_k2(a, b, c, e);
    for (bad, blocks) in [
        (10, None),
        (-1, Some(1)),
        (i32::MIN, Some(48)),
        (99, Some(3)),
    ] {
        let mut row_idx = permutation(10, 70);
        row_idx[7] = bad;
        let y = vec![1.0f32; 10 * 4];
        let run = || run_finalize(f, &y, &row_idx, &gate_weights(5, 2, 71), None, 4);
        let err = match blocks {
            Some(n) => pypto_rt::with_host_blocks(n, run).unwrap(),
            None => run(),
        }
        .unwrap_err();
        let message = kernel_message(err);
        let want = format!(
            "moe_finalize_f32_k2: token 3: expanded_row_idx[7] = {bad} (choice 1) is outside the 10 rows of y"
        );
        assert!(message.contains(&want), "{message}");
    }
    // y must have T·k rows.
    let dev = Device::host();
    let y = dev.zeros::<f32, _>((5, 4)).unwrap();
    let row_idx = dev.zeros((5,)).unwrap();
    let w = dev.zeros((3, Const::<2>)).unwrap();
    let mut out = dev.zeros((3, 4)).unwrap();
    let err = kernels::moe_finalize_f32_k2(&y, &row_idx, &w, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `moe_finalize_f32_k2`: `y.0` is 5, `out.0` is 3 and `weights.1` is 2, but \
         builtin/moe_finalize_routing needs `y.0 == out.0 * weights.last` \
         (builtin/moe_finalize_routing.hbs:13:5): the left side is 5, the right 6"
    );
}

// ---- a whole MoE layer -----------------------------------------------------------

/// `x` (one token, h values) times expert `e`'s weight `[h, h]`, fp32
/// dot products in column order, rounded to T: the plain-Rust model of
/// builtin/grouped_matmul for one row (with K = 32, one K slice: the
/// cube's fp32 sum in k order, bit for bit).
fn expert_ffn<T: Float>(x: &[T], w: &[T], h: usize) -> Vec<T> {
    (0..h)
        .map(|n| {
            let acc = (0..h).fold(0.0f32, |acc, c| acc + x[c].to_f32() * w[c * h + n].to_f32());
            T::from_f32(acc)
        })
        .collect()
}

/// The hidden size of the layer's grouped_matmul kernels
/// (tests/kernels/grouped.yaml).
const LAYER_H: usize = 32;

/// builtin/grouped_matmul for the layer: expanded rows `[M, 32]`, the
/// experts' weights `[E, 32, 32]`, the counts per expert.
type Grouped<T, const E: usize> = fn(
    &Rows<T, LAYER_H>,
    &Tensor<T, (Const<E>, Const<LAYER_H>, Const<LAYER_H>)>,
    &Tensor<i32, (Const<E>,)>,
    &mut Rows<T, LAYER_H>,
) -> Result<(), Error>;

/// gating → init_routing → grouped_matmul over each expert's group of
/// rows (by the counts init_routing wrote) → finalize_routing, every step
/// on the device, against a plain-Rust MoE layer that routes no rows: each
/// token's top-k experts applied to it directly, weighted, summed and added
/// to the residual. Returns the layer's output and the reference's.
#[allow(clippy::too_many_arguments)]
fn moe_layer<T: Float, const E: usize, const K: usize>(
    gate: Gate<T, E, K>,
    init: InitRouting<T, K, E>,
    grouped: Grouped<T, E>,
    finalize: Finalize<T, K>,
    residual: bool,
    t: usize,
    seed: u64,
) -> (Vec<T>, Vec<T>) {
    let h = LAYER_H;
    let x: Vec<T> = data(t * h, seed).into_iter().map(T::from_f32).collect();
    let logits: Vec<T> = logits(t, E, seed + 1);
    let experts: Vec<Vec<T>> = (0..E)
        .map(|e| {
            data(h * h, seed + 10 + e as u64)
                .iter()
                .map(|v| T::from_f32(v / h as f32))
                .collect()
        })
        .collect();
    let res: Option<Vec<T>> = residual.then(|| x.clone());
    // Through the kernels.
    let dev = Device::host();
    let (ids, weights) = run_gate(gate, &logits).unwrap();
    let routed = run_init(init, &x, &ids, h).unwrap();
    assert_eq!(routed.counts.iter().sum::<i32>() as usize, t * K);
    let mut y = dev
        .tensor_from(
            &vec![T::from_f32(f32::NAN); t * K * h],
            (t * K, Const::<LAYER_H>),
        )
        .unwrap();
    grouped(
        &dev.tensor_from(&routed.expanded, (t * K, Const::<LAYER_H>))
            .unwrap(),
        &dev.tensor_from(
            &experts.concat(),
            (Const::<E>, Const::<LAYER_H>, Const::<LAYER_H>),
        )
        .unwrap(),
        &dev.tensor_from(&routed.counts, (Const::<E>,)).unwrap(),
        &mut y,
    )
    .unwrap();
    let y = y.to_vec().unwrap();
    let got = run_finalize(finalize, &y, &routed.row_idx, &weights, res.as_deref(), h).unwrap();
    // The plain-Rust layer.
    let mut want = Vec::with_capacity(t * h);
    for tok in 0..t {
        let row: Vec<f32> = logits[tok * E..(tok + 1) * E]
            .iter()
            .map(|v| v.to_f32())
            .collect();
        let (ids, w) = gate_row(&row, K, true);
        let xs = &x[tok * h..(tok + 1) * h];
        let outs: Vec<Vec<T>> = ids
            .iter()
            .map(|&e| expert_ffn(xs, &experts[e as usize], h))
            .collect();
        for c in 0..h {
            let mut acc = 0.0f32;
            for j in 0..K {
                let term = w[j] * outs[j][c].to_f32();
                acc = if j == 0 { term } else { acc + term };
            }
            if let Some(r) = &res {
                acc += r[tok * h + c].to_f32();
            }
            want.push(T::from_f32(acc));
        }
    }
    (got, want)
}

#[test]
fn a_moe_layer_through_the_four_kernels_matches_a_plain_rust_layer() {
    for t in [1, 3, 17, 64, 200] {
        let (got, want) = moe_layer::<f32, 8, 2>(
            |a, b, c| kernels::moe_gate_f32_e8_k2(a, b, c),
            |a, b, c, d, e| kernels::moe_init_f32_e8_k2(a, b, c, d, e),
            |a, b, c, d| kernels::gmm_moe_f32_e8(a, b, c, d),
            |a, b, c, _, e| kernels::moe_finalize_f32_k2(a, b, c, e),
            false,
            t,
            80 + t as u64,
        );
        assert_eq!(f64s(&got), f64s(&want), "fp32, T = {t}");
        let (got, want) = moe_layer::<half::f16, 64, 8>(
            |a, b, c| kernels::moe_gate_f16_e64_k8(a, b, c),
            |a, b, c, d, e| kernels::moe_init_f16_e64_k8(a, b, c, d, e),
            |a, b, c, d| kernels::gmm_moe_f16_e64(a, b, c, d),
            |a, b, c, d, e| kernels::moe_finalize_f16_k8_residual(a, b, c, d.unwrap(), e),
            true,
            t,
            90 + t as u64,
        );
        assert_eq!(f64s(&got), f64s(&want), "fp16, T = {t}");
    }
}

// ---- broken builtins ------------------------------------------------------------

/// Each MoE mutant of tests/support/mutants.rs fails the checks its builtin
/// passes (tests/rows.rs leaves them to this file).
#[test]
fn broken_moe_builtins_fail_the_checks() {
    let failure = check_gate::<f32, 8, 2>(
        |a, b, c| kernels::broken_moe_gating_topk_no_fallback_f32(a, b, c),
        true,
        &kernels::moe_gate_f32_e8_k2::SIZES,
    )
    .unwrap_err();
    assert!(failure.problem.starts_with("element "), "{failure}");
    let failure = check_init::<f32, 2, 8>(
        |a, b, c, d, e| kernels::broken_moe_init_routing_late_share_f32(a, b, c, d, e),
        &kernels::moe_init_f32_e8_k2::SIZES,
    )
    .unwrap_err();
    // Two blocks place a pair on one row: the host backend's memcheck stops
    // the launch before the rows are compared (which two depends on the
    // case's expert ids, seeded from its sizes, TK among them).
    assert!(
        failure.problem.contains("memcheck: blocks 0 and ")
            && failure.problem.contains(" both write bytes"),
        "{failure}"
    );
    let failure = check_finalize::<f32, 2>(
        |a, b, c, _, e| kernels::broken_moe_finalize_routing_first_weight_f32(a, b, c, e),
        false,
        &kernels::moe_finalize_f32_k2::SIZES,
    )
    .unwrap_err();
    assert!(failure.problem.starts_with("element "), "{failure}");
    let mut moe: Vec<&str> = pypto_tests::mutants::MUTANTS
        .iter()
        .filter(|m| m.builtin.starts_with("moe_"))
        .map(|m| m.name)
        .collect();
    moe.sort_unstable();
    assert_eq!(
        moe,
        [
            "broken_moe_finalize_routing_first_weight_f32",
            "broken_moe_gating_topk_no_fallback_f32",
            "broken_moe_init_routing_late_share_f32",
        ],
        "every MoE mutant is checked here"
    );
}

#[test]
fn empty_sizes_launch_or_are_refused_as_documented() {
    let dev = Device::host();
    // No token: gating and finalize have nothing to write.
    let x = dev.zeros::<f32, _>((0, Const::<8>)).unwrap();
    let mut ids = dev.zeros((0, Const::<2>)).unwrap();
    let mut w = dev.zeros((0, Const::<2>)).unwrap();
    kernels::moe_gate_f32_e8_k2(&x, &mut ids, &mut w).unwrap();
    let y = dev.zeros::<f32, _>((0, 4)).unwrap();
    let none = dev.zeros((0,)).unwrap();
    let w = dev.zeros((0, Const::<2>)).unwrap();
    let mut out = dev.zeros((0, 4)).unwrap();
    kernels::moe_finalize_f32_k2(&y, &none, &w, &mut out).unwrap();
    // init_routing with no token still has expert_tokens to write: refused.
    let x = dev.zeros::<f32, _>((0, 4)).unwrap();
    let ids = dev.zeros((0, Const::<2>)).unwrap();
    let mut expanded = dev.zeros((0, 4)).unwrap();
    let mut row_idx = dev.zeros((0,)).unwrap();
    let mut counts = dev.tensor_from(&[-1; 8], (Const::<8>,)).unwrap();
    let err = kernels::moe_init_f32_e8_k2(&x, &ids, &mut expanded, &mut row_idx, &mut counts)
        .unwrap_err();
    assert!(matches!(err, Error::NoBlocks { .. }), "{err:?}");
    // Rows of no values (H = 0): the permutation and counts all the same.
    let x = dev.zeros::<f32, _>((3, 0)).unwrap();
    let ids = dev
        .tensor_from(&[1, 2, 3, 1, 5, 6], (3, Const::<2>))
        .unwrap();
    let mut expanded = dev.zeros((6, 0)).unwrap();
    let mut row_idx = dev.zeros((6,)).unwrap();
    kernels::moe_init_f32_e8_k2(&x, &ids, &mut expanded, &mut row_idx, &mut counts).unwrap();
    assert_eq!(counts.to_vec().unwrap(), [0, 2, 1, 1, 0, 1, 1, 0]);
    assert_eq!(row_idx.to_vec().unwrap(), [0, 2, 3, 1, 4, 5]);
}
