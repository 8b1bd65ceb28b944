//! builtin/weight_quant_matmul (w8a16, issue 28; kernels in
//! tests/kernels/wquant.yaml) against plain Rust, bit for bit: fp16 or bf16
//! activations [T, 1152] times int8 weights [272, 1152] dequantised per
//! channel or per group (32, 64, 128 values of K), with and without bias.
//! The reference models each rounding the kernel makes: the weight
//! `T(float(w) · scale)` (one fp32 multiply, rounded to nearest even, then
//! once to T), the cube's products exact in fp32 and summed in order over
//! each Mmad's K slice (64 values; 128 in the narrow base block) from zero,
//! the slices' sums added to the tile's (the first to the bias), and the
//! fp32 sum rounded once to T.
//! Token counts from the sweep of each kernel's `SIZES`, every block count,
//! the errors word for word, and the broken copy of tests/support/mutants.rs
//! fails the same checks.

use pypto_rt::testing::{Sweep, SweepFailure, Tolerance};
use pypto_rt::{Const, Device, Error, Tensor};
use pypto_tests::{Float, data, data_as, kernels, same_bits_at_every_block_count};

const K: usize = 1152;
const N: usize = 272;
/// K values per Mmad for 16-bit data: 128 bytes in the wide and split-N
/// base blocks, 256 in the narrow one (N <= 128, more than 16 rows, and at
/// least as many 128-row tiles as the kernel's 24 cores).
fn slice(m: usize, n: usize) -> usize {
    if m > 16 && m.div_ceil(128) * n.div_ceil(256) >= 24 && n <= 128 {
        128
    } else {
        64
    }
}

type A<T> = Tensor<T, (usize, Const<1152>)>;
type B = Tensor<i8, (Const<272>, Const<1152>)>;
type Cols = Tensor<f32, (Const<272>,)>;
type Out<T> = Tensor<T, (usize, Const<272>)>;

/// A call of one kernel on (device, a, b, scales, bias, out).
type Run<T> = fn(&Device, &A<T>, &B, &[f32], &Cols, &mut Out<T>) -> Result<(), Error>;

/// One kernel: its group size (0 per channel), whether it takes a bias,
/// and a call on plain slices (a, M, b, scales, bias) that returns `out`.
struct Case<T: Float> {
    name: &'static str,
    group: usize,
    bias: bool,
    run: Run<T>,
}

/// Int8 weights over the whole range, -128 and 127 included, from a seed.
fn int8s(n: usize, seed: u64) -> Vec<i8> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            match i % 37 {
                0 => -128,
                1 => 127,
                _ => (s >> 56) as u8 as i8,
            }
        })
        .collect()
}

/// Positive scales of the size a symmetric int8 quantisation gives
/// (max|w| / 127), from a seed.
fn scales(n: usize, seed: u64) -> Vec<f32> {
    data(n, seed)
        .into_iter()
        .map(|v| (v.abs() + 0.01) / 127.0)
        .collect()
}

/// The dequantised weights [N, K]: `T(float(w) · s)`, s the scale of the
/// weight's column and (with `group` > 0) its group of K values.
fn dequantise<T: Float>(b: &[i8], scales: &[f32], group: usize, (k, n): (usize, usize)) -> Vec<T> {
    let group = if group == 0 { k } else { group };
    (0..n * k)
        .map(|i| T::from_f32(f32::from(b[i]) * scales[i % k / group * n + i / k]))
        .collect()
}

/// What the cube gives for a · wᵀ (+ bias): per output value, each K slice
/// of `slice(m, n)` values summed in order from zero in fp32 (the products are
/// exact), the slices' sums added in order, the first to the bias; the
/// total rounded to T.
fn matmul_reference<T: Float>(
    a: &[T],
    w: &[T],
    bias: Option<&[f32]>,
    (m, k, n): (usize, usize, usize),
) -> Vec<T> {
    let mut out = Vec::with_capacity(m * n);
    for r in 0..m {
        let row = &a[r * k..(r + 1) * k];
        for j in 0..n {
            let col = &w[j * k..(j + 1) * k];
            let mut c = 0.0f32;
            for (s, (xs, ws)) in row
                .chunks(slice(m, n))
                .zip(col.chunks(slice(m, n)))
                .enumerate()
            {
                let mut acc = 0.0f32;
                for (x, y) in xs.iter().zip(ws) {
                    acc += x.to_f32() * y.to_f32();
                }
                c = match (s, bias) {
                    (0, Some(bias)) => bias[j] + acc,
                    (0, None) => acc,
                    _ => c + acc,
                };
            }
            out.push(T::from_f32(c));
        }
    }
    out
}

fn bits<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| f64::from(x.bits())).collect()
}

/// Runs `case` on M rows from `seed`; returns the output and the reference's.
fn run<T: Float>(case: &Case<T>, m: usize, seed: u64) -> Result<(Vec<T>, Vec<T>), Error> {
    let dev = Device::host();
    let a = data_as::<T>(m * K, seed);
    let b = int8s(N * K, seed + 1);
    let groups = K.checked_div(case.group).unwrap_or(1);
    let s = scales(groups * N, seed + 2);
    let bias = data(N, seed + 3);
    let mut out = dev.tensor_from(&vec![T::from_f32(f32::NAN); m * N], (m, Const::<272>))?;
    (case.run)(
        &dev,
        &dev.tensor_from(&a, (m, Const::<1152>))?,
        &dev.tensor_from(&b, (Const::<272>, Const::<1152>))?,
        &s,
        &dev.tensor_from(&bias, (Const::<272>,))?,
        &mut out,
    )?;
    let w = dequantise::<T>(&b, &s, case.group, (K, N));
    let want = matmul_reference(&a, &w, case.bias.then_some(&bias[..]), (m, K, N));
    Ok((out.to_vec()?, want))
}

/// `case` over the sweep of its token count, bit for bit.
fn check<T: Float>(
    case: &Case<T>,
    sizes: &pypto_rt::testing::KernelSizes,
) -> Result<usize, SweepFailure> {
    Sweep::new(sizes).run(Tolerance::exact(), |c| {
        let (got, want) = run(case, c.dim("T"), c.seed())?;
        Ok((bits(&got), bits(&want)))
    })
}

fn per_channel(dev: &Device, s: &[f32]) -> Result<Cols, Error> {
    dev.tensor_from(s, (Const::<272>,))
}

const WQ_F16: Case<half::f16> = Case {
    name: "wq_f16",
    group: 0,
    bias: false,
    run: |d, a, b, s, _, o| kernels::wq_f16(a, b, &per_channel(d, s)?, o),
};
const WQ_BF16: Case<half::bf16> = Case {
    name: "wq_bf16",
    group: 0,
    bias: false,
    run: |d, a, b, s, _, o| kernels::wq_bf16(a, b, &per_channel(d, s)?, o),
};
const WQ_F16_BIAS: Case<half::f16> = Case {
    name: "wq_f16_bias",
    group: 0,
    bias: true,
    run: |d, a, b, s, c, o| kernels::wq_f16_bias(a, b, &per_channel(d, s)?, c, o),
};
const WQ_BF16_BIAS: Case<half::bf16> = Case {
    name: "wq_bf16_bias",
    group: 0,
    bias: true,
    run: |d, a, b, s, c, o| kernels::wq_bf16_bias(a, b, &per_channel(d, s)?, c, o),
};
const WQ_G128_F16: Case<half::f16> = Case {
    name: "wq_g128_f16",
    group: 128,
    bias: false,
    run: |d, a, b, s, _, o| {
        kernels::wq_g128_f16(a, b, &d.tensor_from(s, (Const::<9>, Const::<272>))?, o)
    },
};
const WQ_G64_BF16_BIAS: Case<half::bf16> = Case {
    name: "wq_g64_bf16_bias",
    group: 64,
    bias: true,
    run: |d, a, b, s, c, o| {
        kernels::wq_g64_bf16_bias(a, b, &d.tensor_from(s, (Const::<18>, Const::<272>))?, c, o)
    },
};
const WQ_G32_F16_BIAS: Case<half::f16> = Case {
    name: "wq_g32_f16_bias",
    group: 32,
    bias: true,
    run: |d, a, b, s, c, o| {
        kernels::wq_g32_f16_bias(a, b, &d.tensor_from(s, (Const::<36>, Const::<272>))?, c, o)
    },
};

#[test]
fn per_channel_weights_dequantise_exactly_with_and_without_bias_in_fp16_and_bf16() {
    let cases = check(&WQ_F16, &kernels::wq_f16::SIZES).unwrap();
    assert!(cases > 5, "{cases} cases");
    check(&WQ_BF16, &kernels::wq_bf16::SIZES).unwrap();
    check(&WQ_F16_BIAS, &kernels::wq_f16_bias::SIZES).unwrap();
    check(&WQ_BF16_BIAS, &kernels::wq_bf16_bias::SIZES).unwrap();
}

#[test]
fn per_group_weights_dequantise_exactly_with_groups_of_32_64_and_128() {
    let cases = check(&WQ_G128_F16, &kernels::wq_g128_f16::SIZES).unwrap();
    assert!(cases > 5, "{cases} cases");
    check(&WQ_G64_BF16_BIAS, &kernels::wq_g64_bf16_bias::SIZES).unwrap();
    check(&WQ_G32_F16_BIAS, &kernels::wq_g32_f16_bias::SIZES).unwrap();
}

/// Token counts at the kernel's own boundaries: one row; 16 and 17 (the
/// split-N tiles of 16 rows, then 128); 129 (a second row tile); 1409 and
/// 1410 (wide 256-column tiles from 12 row tiles on, K slabs of 320
/// values, not 1024 or 832).
#[test]
fn token_counts_around_the_tiles_give_exact_results() {
    for m in [1, 2, 15, 16, 17, 127, 129, 1409] {
        let (got, want) = run(&WQ_F16_BIAS, m, m as u64).unwrap();
        assert_eq!(bits(&got), bits(&want), "{} at M = {m}", WQ_F16_BIAS.name);
        let (got, want) = run(&WQ_G128_F16, m, m as u64 + 7).unwrap();
        assert_eq!(bits(&got), bits(&want), "{} at M = {m}", WQ_G128_F16.name);
    }
}

#[test]
fn per_group_gives_the_same_bits_at_every_block_count() {
    let mut want = Vec::new();
    let got = same_bits_at_every_block_count("weight_quant_matmul", || {
        let (got, w) = run(&WQ_G64_BF16_BIAS, 40, 5).unwrap();
        want = w;
        got
    });
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn per_channel_gives_the_same_bits_at_every_block_count() {
    let mut want = Vec::new();
    let got = same_bits_at_every_block_count("weight_quant_matmul", || {
        let (got, w) = run(&WQ_F16, 3, 6).unwrap();
        want = w;
        got
    });
    assert_eq!(bits(&got), bits(&want));
}

/// The scale is applied before the product, per weight: a per-group scale
/// that differs between the two halves of a row changes the result from
/// what one scale per column gives (so the groups are not ignored).
#[test]
fn each_group_takes_its_own_scale() {
    let dev = Device::host();
    let m = 2;
    let a = vec![half::f16::ONE; m * K];
    let b = vec![1i8; N * K];
    // Groups of 128: scale 1 for the first 4 groups, 2 for the other 5.
    let s: Vec<f32> = (0..9 * N)
        .map(|i| if i / N < 4 { 1.0 } else { 2.0 })
        .collect();
    let mut out = dev.zeros((m, Const::<272>)).unwrap();
    kernels::wq_g128_f16(
        &dev.tensor_from(&a, (m, Const::<1152>)).unwrap(),
        &dev.tensor_from(&b, (Const::<272>, Const::<1152>)).unwrap(),
        &dev.tensor_from(&s, (Const::<9>, Const::<272>)).unwrap(),
        &mut out,
    )
    .unwrap();
    // 4·128·1 + 5·128·2 = 1792.
    assert_eq!(
        out.to_vec().unwrap(),
        vec![half::f16::from_f32(1792.0); m * N]
    );
}

#[test]
fn rows_of_a_and_out_must_agree() {
    let dev = Device::host();
    let a = dev.zeros::<half::f16, _>((3, Const::<1152>)).unwrap();
    let b = dev.zeros::<i8, _>((Const::<272>, Const::<1152>)).unwrap();
    let s = dev.zeros::<f32, _>((Const::<272>,)).unwrap();
    let mut out = dev.zeros::<half::f16, _>((4, Const::<272>)).unwrap();
    let err = kernels::wq_f16(&a, &b, &s, &mut out).unwrap_err();
    assert!(matches!(err, Error::DimDisagreement { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "kernel `wq_f16`: `out.0` is 4 but `a.0` is 3; they must be equal because they are the dim `T`"
    );
}

/// Other K and N (every axis DYNAMIC), per channel in fp16 and per group
/// of 64 in bf16: one K slice of 32 values (K below a slice), N = 16
/// (one fractal of columns), and K = 4160 (five slabs of 832, 64-value
/// groups; with M = 1, four of 1024 and one of 64), and 3000 rows of 48
/// columns: the narrow base block, whose Mmads take K slices of 128.
#[test]
fn other_k_and_n_give_exact_results() {
    let dev = Device::host();
    for (m, k, n) in [
        (1, 64, 16),
        (5, 64, 48),
        (1, 4160, 32),
        (33, 4160, 16),
        (7, 192, 528),
        (3000, 320, 48),
    ] {
        let a = data_as::<half::f16>(m * k, 1);
        let b = int8s(n * k, 2);
        let s = scales(n, 3);
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::wq_any_f16(
            &dev.tensor_from(&a, (m, k)).unwrap(),
            &dev.tensor_from(&b, (n, k)).unwrap(),
            &dev.tensor_from(&s, (n,)).unwrap(),
            &mut out,
        )
        .unwrap();
        let want = matmul_reference(&a, &dequantise(&b, &s, 0, (k, n)), None, (m, k, n));
        assert_eq!(
            bits(&out.to_vec().unwrap()),
            bits(&want),
            "fp16 per channel {m} x {k} x {n}"
        );
        let a = data_as::<half::bf16>(m * k, 4);
        let s = scales(k / 64 * n, 5);
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::wq_any_g64_bf16(
            &dev.tensor_from(&a, (m, k)).unwrap(),
            &dev.tensor_from(&b, (n, k)).unwrap(),
            &dev.tensor_from(&s, (k / 64, n)).unwrap(),
            &mut out,
        )
        .unwrap();
        let want = matmul_reference(&a, &dequantise(&b, &s, 64, (k, n)), None, (m, k, n));
        assert_eq!(
            bits(&out.to_vec().unwrap()),
            bits(&want),
            "bf16 groups of 64 {m} x {k} x {n}"
        );
    }
}

/// The contract's shape rules, checked before the launch, word for word.
#[test]
fn shapes_the_kernel_cannot_take_are_refused() {
    let dev = Device::host();
    let f16s = |r: usize, c: usize| dev.zeros::<half::f16, _>((r, c)).unwrap();
    let int8s = |r: usize, c: usize| dev.zeros::<i8, _>((r, c)).unwrap();
    let cols = |n: usize| dev.zeros::<f32, _>((n,)).unwrap();
    let message = |err: Error| err.to_string();
    // K not a multiple of 32.
    let got = message(
        kernels::wq_any_f16(&f16s(2, 48), &int8s(16, 48), &cols(16), &mut f16s(2, 16)).unwrap_err(),
    );
    assert_eq!(
        got,
        "kernel `wq_any_f16`: `a.1` is 48, not a multiple of 32 (the vector cores move weight rows in 32-byte blocks)"
    );
    // N not a multiple of 16.
    let got = message(
        kernels::wq_any_f16(&f16s(2, 64), &int8s(24, 64), &cols(24), &mut f16s(2, 24)).unwrap_err(),
    );
    assert_eq!(
        got,
        "kernel `wq_any_f16`: `out.1` is 24, not a multiple of 16 (the cube writes output columns in 16-wide fractals)"
    );
    // A scale per column of another N.
    let got = message(
        kernels::wq_any_f16(&f16s(2, 64), &int8s(16, 64), &cols(32), &mut f16s(2, 16)).unwrap_err(),
    );
    assert_eq!(
        got,
        "kernel `wq_any_f16`: `scale.0` is 32 but `b.0` is 16; they must be equal because builtin/weight_quant_matmul ties these axes together"
    );
    // Per-group scales for groups of another size (K = 128: two groups of 64).
    let bf16s = |r: usize, c: usize| dev.zeros::<half::bf16, _>((r, c)).unwrap();
    let got = message(
        kernels::wq_any_g64_bf16(
            &bf16s(2, 128),
            &int8s(16, 128),
            &dev.zeros::<f32, _>((4, 16)).unwrap(),
            &mut bf16s(2, 16),
        )
        .unwrap_err(),
    );
    assert_eq!(
        got,
        "kernel `wq_any_g64_bf16`: `scale.0` is 4 and `a.1` is 128, but builtin/weight_quant_matmul needs `group_scale.0 * group_size == a.1` with group_size = 64 (builtin/weight_quant_matmul.hbs:16:5): the left side is 256, the right 128"
    );
}

/// The broken copy of tests/support/mutants.rs (the dequantised weight
/// truncated to T, not rounded to nearest) fails the check the builtin
/// passes.
#[test]
fn broken_weight_quant_matmul_fails_the_checks() {
    let broken: Case<half::f16> = Case {
        name: "broken_weight_quant_matmul_truncates_f16",
        group: 0,
        bias: false,
        run: |d, a, b, s, _, o| {
            let a = d.tensor_from(&a.to_vec()?, (a.shape().0, 1152))?;
            let b = d.tensor_from(&b.to_vec()?, (272, 1152))?;
            let s = d.tensor_from(s, (272,))?;
            let mut out = d.tensor_from(&o.to_vec()?, (o.shape().0, 272))?;
            kernels::broken_weight_quant_matmul_truncates_f16(&a, &b, &s, &mut out)?;
            *o = d.tensor_from(&out.to_vec()?, (out.shape().0, Const::<272>))?;
            Ok(())
        },
    };
    let failure = check(&broken, &kernels::wq_f16::SIZES).unwrap_err();
    assert!(failure.problem.starts_with("element "), "{failure}");
    let names: Vec<&str> = pypto_tests::mutants::MUTANTS
        .iter()
        .filter(|m| m.builtin == "weight_quant_matmul")
        .map(|m| m.name)
        .collect();
    assert_eq!(
        names,
        [broken.name],
        "every weight_quant_matmul mutant is checked here"
    );
}
