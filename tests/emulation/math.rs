//! The high-level elementwise math of the host emulation
//! (`pypto_emu/math.h`): Sin, Cos, Tan, Tanh, Sinh, Cosh, Asin, Acos, Atan,
//! Asinh, Acosh, Atanh, Erf, Erfc, Sigmoid, Log, Log2, Log10, the
//! high-level Exp, Power, Fmod, Floor, Ceil, Round, Trunc, Frac and Sign, through the kernels of
//! `tests/kernels/api_math.yaml`, for float and half (Power also int32_t),
//! against plain Rust. The emulation computes each function in f32 with the
//! C library, as Rust's f32 methods do (and `erff` through the same
//! library), so the comparison is exact: bit for bit, any NaN matching any
//! NaN; half rounds the f32 result once. Inputs take the documented edge
//! cases (±0, ±65504 for Sin/Cos, large magnitudes, infinities, NaN, Log
//! of 0 and of negatives, Power with negative bases and zero exponents).
//! Elements past calCount must keep the output's initial values. Then the
//! errors for broken limits, and the modelled cost.

use half::f16;
use pypto_rt::{Const, Device, Error, ModelArch, profile};
use pypto_tests::{kernel_message, kernels};

unsafe extern "C" {
    /// The C library's erf for float (Rust's `f32::erf` is unstable).
    safe fn erff(x: f32) -> f32;
    // The C library's float functions the emulation calls (Rust's own
    // asinh, acosh and atanh are computed differently).
    safe fn tanf(x: f32) -> f32;
    safe fn sinhf(x: f32) -> f32;
    safe fn coshf(x: f32) -> f32;
    safe fn asinf(x: f32) -> f32;
    safe fn acosf(x: f32) -> f32;
    safe fn erfcf(x: f32) -> f32;
    safe fn atanhf(x: f32) -> f32;
    safe fn asinhf(x: f32) -> f32;
    safe fn acoshf(x: f32) -> f32;
}

const N: usize = 1024;
/// What `out` holds before a scenario: elements past calCount keep it.
const INITIAL: f32 = -7.25;

/// The float inputs of a scenario: the edge cases first, then a spread
/// of ordinary values over `[-span, span]`.
fn inputs(edges: &[f32], span: f32, seed: u32) -> Vec<f32> {
    let mut v = edges.to_vec();
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    while v.len() < N {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let u = f64::from(x >> 8) / f64::from(1u32 << 24); // [0, 1)
        v.push(((u * 2.0 - 1.0) * f64::from(span)) as f32);
    }
    v
}

fn run_f32(a: &[f32], b: &[f32], which: i32) -> Result<Vec<f32>, Error> {
    let dev = Device::host();
    let a = dev.tensor_from(a, (Const::<N>,)).unwrap();
    let b = dev.tensor_from(b, (Const::<N>,)).unwrap();
    let mut out = dev.tensor_from(&[INITIAL; N], (Const::<N>,)).unwrap();
    kernels::math_f32(&a, &b, which, &mut out)?;
    Ok(out.to_vec().unwrap())
}

fn run_f16(a: &[f32], b: &[f32], which: i32) -> Result<Vec<f16>, Error> {
    let dev = Device::host();
    let h = |v: &[f32]| v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
    let a = dev.tensor_from(&h(a), (Const::<N>,)).unwrap();
    let b = dev.tensor_from(&h(b), (Const::<N>,)).unwrap();
    let mut out = dev
        .tensor_from(&[f16::from_f32(INITIAL); N], (Const::<N>,))
        .unwrap();
    kernels::math_f16(&a, &b, which, &mut out)?;
    Ok(out.to_vec().unwrap())
}

fn same(g: f32, w: f32) -> bool {
    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
}

/// Checks scenario `which` for float and half: `f(a[i], b[i])` for the
/// first `count` elements, the initial value after them. Half inputs are
/// the floats rounded to half; half results the f32 result rounded once.
fn check(which: i32, a: &[f32], b: &[f32], count: usize, f: impl Fn(f32, f32) -> f32) {
    let got = run_f32(a, b, which).unwrap();
    for i in 0..N {
        let want = if i < count { f(a[i], b[i]) } else { INITIAL };
        assert!(
            same(got[i], want),
            "float scenario {which}: element {i} of f({}, {}) is {}, want {want}",
            a[i],
            b[i],
            got[i]
        );
    }
    let got = run_f16(a, b, which).unwrap();
    for i in 0..N {
        let (x, y) = (f16::from_f32(a[i]).to_f32(), f16::from_f32(b[i]).to_f32());
        let want = if i < count {
            f16::from_f32(f(x, y))
        } else {
            f16::from_f32(INITIAL)
        };
        assert!(
            same(got[i].to_f32(), want.to_f32()),
            "half scenario {which}: element {i} of f({x}, {y}) is {}, want {want}",
            got[i]
        );
    }
}

const COMMON: &[f32] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    std::f32::consts::PI,
    -std::f32::consts::FRAC_PI_2,
    1e-30,
    -3.0e-5,
    10.0,
    -10.0,
    88.0,
    -88.0,
    100.0,
    -100.0,
    65504.0,
    -65504.0,
];

fn with_specials(edges: &[f32]) -> Vec<f32> {
    let mut v = edges.to_vec();
    v.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e30, -1e30]);
    v
}

#[test]
fn sin_and_cos_over_the_documented_range() {
    // [-65504, 65504] on A2/A3: the ends, NaN, ordinary values and large
    // ones inside the range.
    let mut edges = COMMON.to_vec();
    edges.extend([f32::NAN, 40000.0, -12345.678]);
    let a = inputs(&edges, 20.0, 1);
    let b = vec![0.0; N];
    check(0, &a, &b, 1000, |x, _| x.sin());
    check(1, &a, &b, N, |x, _| x.sin());
    check(2, &a, &b, 1000, |x, _| x.cos());
    check(3, &a, &b, 1000, |x, _| x.cos());
}

#[test]
fn tanh_erf_atan_and_sigmoid() {
    let a = inputs(&with_specials(COMMON), 6.0, 2);
    let b = vec![0.0; N];
    check(4, &a, &b, N, |x, _| x.tanh());
    check(5, &a, &b, 1000, |x, _| erff(x));
    check(6, &a, &b, 1000, |x, _| x.atan());
    let sigmoid = |x: f32, _| 1.0 / (1.0 + (-x).exp());
    check(7, &a, &b, 1000, sigmoid);
    check(8, &a, &b, N, sigmoid);
    // Spot values of the functions themselves, so that a wrong function
    // with the same edge behaviour would still fail.
    let near = |g: f32, w: f64| (f64::from(g) - w).abs() < 1e-6;
    let got = run_f32(&a, &b, 8).unwrap();
    assert_eq!(got[0], 0.5);
    assert!(near(got[2], 0.731_058_578_6), "Sigmoid(1) = {}", got[2]);
    let got = run_f32(&a, &b, 5).unwrap();
    assert_eq!(got[0], 0.0);
    assert!(near(got[2], 0.842_700_792_9), "Erf(1) = {}", got[2]);
    assert!(near(got[3], -0.842_700_792_9), "Erf(-1) = {}", got[3]);
}

#[test]
fn the_other_trigonometric_and_hyperbolic_functions() {
    let b = vec![0.0; N];
    // Tan on (-65504, 65504), Sinh and Cosh anywhere, Erfc anywhere.
    let mut edges = COMMON[..16].to_vec();
    edges.extend([65000.0, -65000.0, f32::NAN, std::f32::consts::FRAC_PI_2]);
    let a = inputs(&edges, 4.0, 9);
    check(30, &a, &b, 1000, |x, _| tanf(x));
    let a = inputs(&with_specials(COMMON), 12.0, 10);
    check(31, &a, &b, 1000, |x, _| sinhf(x));
    check(32, &a, &b, N, |x, _| coshf(x));
    check(35, &a, &b, 1000, |x, _| erfcf(x));
    // Asin and Acos on [-1, 1].
    let edges = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, f32::NAN, 0.999_999];
    let a = inputs(&edges, 1.0, 11);
    check(33, &a, &b, 1000, |x, _| asinf(x));
    check(34, &a, &b, 1000, |x, _| acosf(x));
    // Atanh on (-0.99, -0.001) and (0.001, 0.99); Asinh on [-65504,
    // 65504]; Acosh on [1, 65504].
    let edges = [0.5, -0.5, 0.0011, -0.0011, 0.989, -0.989, f32::NAN];
    let a: Vec<f32> = inputs(&edges, 0.98, 12)
        .into_iter()
        .map(|x| if x.abs() <= 0.002 { 0.25 } else { x })
        .collect();
    check(36, &a, &b, 1000, |x, _| atanhf(x));
    let a = inputs(COMMON, 1000.0, 13);
    check(37, &a, &b, 1000, |x, _| asinhf(x));
    let edges = [1.0, 1.5, 2.0, 65504.0, 1000.0, f32::NAN];
    let a: Vec<f32> = inputs(&edges, 300.0, 14)
        .into_iter()
        .map(|x| if x.is_nan() { x } else { x.abs().max(1.0) })
        .collect();
    check(38, &a, &b, 1000, |x, _| acoshf(x));
    // Spot values.
    let got = run_f32(&a, &b, 38).unwrap();
    assert_eq!(got[0], 0.0, "Acosh(1)");
    let a = inputs(&[0.5], 0.5, 15);
    let got = run_f32(&a, &b, 36).unwrap();
    assert!(
        (f64::from(got[0]) - 0.549_306_144_3).abs() < 1e-6,
        "Atanh(0.5) = {}",
        got[0]
    );
}

#[test]
fn fmod_follows_the_documented_formula() {
    // src0 - Trunc(src0 / src1) * src1, each step in f32; the documented
    // examples, a zero divisor, and ordinary values.
    let mut a = vec![2.0, -3.0, 5.0, -7.5, 0.0, 100.0, f32::NAN];
    let mut b = vec![1.5, 1.1, 0.0, 2.0, 3.0, -7.0, 1.0];
    a.extend(inputs(&[], 100.0, 17).into_iter().take(N - a.len()));
    b.extend(
        inputs(&[], 10.0, 18)
            .into_iter()
            .map(|x| if x.abs() < 0.01 { 0.5 } else { x })
            .take(N - b.len()),
    );
    let fmod = |x: f32, y: f32| {
        let q = (x / y).trunc();
        x - q * y
    };
    check(50, &a, &b, 1000, fmod);
    check(51, &a, &b, N, fmod);
    let got = run_f32(&a, &b, 50).unwrap();
    assert_eq!(got[0], 0.5, "Fmod(2, 1.5)");
    assert!((got[1] + 0.8).abs() < 1e-6, "Fmod(-3, 1.1) = {}", got[1]);
    assert!(got[2].is_nan(), "Fmod(5, 0)");
    assert_eq!(got[3], -1.5, "Fmod(-7.5, 2)");
}

#[test]
fn rounding_to_integral_values() {
    let b = vec![0.0; N];
    let edges = [
        0.5,
        -0.5,
        1.5,
        -1.5,
        2.5,
        -2.5,
        3.9,
        -3.9,
        -0.0,
        0.0,
        8_388_609.0,
        -258.418_88,
        5592.625,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e30,
        -1e-30,
    ];
    let a = inputs(&edges, 100.0, 16);
    check(40, &a, &b, 1000, |x, _| x.floor());
    check(41, &a, &b, 1000, |x, _| x.ceil());
    check(42, &a, &b, 1000, |x, _| x.round_ties_even());
    check(43, &a, &b, N, |x, _| x.trunc());
    check(44, &a, &b, N, |x, _| x - x.trunc());
    let sign = |x: f32, _| {
        if x > 0.0 {
            1.0
        } else if x < 0.0 {
            -1.0
        } else {
            0.0
        }
    };
    check(45, &a, &b, 1000, sign);
    // Documented examples.
    let got = run_f32(&a, &b, 42).unwrap();
    assert_eq!(
        &got[..6],
        &[0.0, -0.0, 2.0, -2.0, 2.0, -2.0],
        "ties to even"
    );
    let got = run_f32(&a, &b, 44).unwrap();
    assert_eq!(got[12], 0.625, "Frac(5592.625)");
    assert!(
        (got[11] + 0.418_88).abs() < 1e-4,
        "Frac(-258.41888) = {}",
        got[11]
    );
    // Trunc in place and Round with dst 16 elements before src: every
    // result from the source as it was.
    let got = run_f32(&a, &b, 46).unwrap();
    for i in 0..N {
        let w = if i < 1000 { a[i].trunc() } else { a[i] };
        assert!(
            same(got[i], w),
            "Trunc in place: element {i} is {}, want {w}",
            got[i]
        );
    }
    let got = run_f32(&a, &b, 47).unwrap();
    for i in 0..N {
        let w = if i < 1000 {
            a[i + 16].round_ties_even()
        } else {
            a[i]
        };
        assert!(
            same(got[i], w),
            "Round shifted: element {i} is {}, want {w}",
            got[i]
        );
    }
}

#[test]
fn inputs_outside_the_documented_ranges_are_errors() {
    let b = vec![0.0; N];
    for (which, bad, want) in [
        (
            33,
            1.5,
            "Asin: src[3] = 1.5 is outside [-1, 1], the documented input range",
        ),
        (34, -2.0, "Acos: src[3] = -2 is outside [-1, 1]"),
        (
            36,
            0.0,
            "Atanh: src[3] = 0 is outside (-0.99, -0.001) or (0.001, 0.99)",
        ),
        (36, 0.995, "Atanh: src[3] = 0.995 is outside"),
        (38, 0.5, "Acosh: src[3] = 0.5 is outside [1, 65504]"),
        (
            30,
            65504.0,
            "Tan: src[3] = 65504 is outside (-65504, 65504)",
        ),
    ] {
        let mut a = vec![0.5; N];
        if which == 38 {
            a = vec![2.0; N];
        }
        a[3] = bad;
        let msg = kernel_message(run_f32(&a, &b, which).unwrap_err());
        assert!(msg.contains(want), "scenario {which}: {msg}");
    }
    // Asinh beyond 65504: float only (half has no such finite value).
    let mut a = vec![0.5; N];
    a[7] = -70000.0;
    let msg = kernel_message(run_f32(&a, &b, 37).unwrap_err());
    assert!(
        msg.contains("Asinh: src[7] = -70000 is outside [-65504, 65504]"),
        "{msg}"
    );
}

#[test]
fn logarithms_of_zero_negatives_and_infinity() {
    let mut edges = with_specials(COMMON);
    edges.extend([f32::MIN_POSITIVE, 1e-45, 2.0, 8.0, 1000.0, -2.0]);
    let a: Vec<f32> = inputs(&edges, 50.0, 3)
        .into_iter()
        .enumerate()
        .map(|(i, x)| if i >= edges.len() { x.abs() } else { x })
        .collect();
    let b = vec![0.0; N];
    check(9, &a, &b, 1000, |x, _| x.ln());
    check(10, &a, &b, 1000, |x, _| x.log2());
    check(11, &a, &b, N, |x, _| x.log2());
    check(12, &a, &b, 1000, |x, _| x.log10());
    let got = run_f32(&a, &b, 9).unwrap();
    assert_eq!(got[0], f32::NEG_INFINITY, "Log(0)");
    assert!(got[3].is_nan(), "Log(-1)");
    let got = run_f32(&a, &b, 10).unwrap();
    assert_eq!(got[edges.len() - 3], 3.0, "Log2(8)");
}

#[test]
fn exp_high_level_form_at_every_taylor_level() {
    let a = inputs(&with_specials(COMMON), 12.0, 4);
    let b = vec![0.0; N];
    check(13, &a, &b, 1000, |x, _| x.exp());
    check(14, &a, &b, 1000, |x, _| x.exp());
}

#[test]
fn power_in_its_three_operand_forms() {
    let mut bases = vec![
        -2.0,
        -2.0,
        -2.0,
        0.0,
        0.0,
        0.0,
        2.0,
        1.0,
        -1.0,
        f32::NAN,
        4.0,
        10.0,
        -0.5,
        1e-3,
    ];
    let mut exps = vec![
        3.0,
        0.5,
        0.0,
        -1.0,
        0.0,
        2.0,
        -2.0,
        f32::NAN,
        f32::INFINITY,
        0.0,
        0.5,
        40.0,
        -3.0,
        -20.0,
    ];
    bases.extend(inputs(&[], 4.0, 5).into_iter().take(N - bases.len()));
    exps.extend(inputs(&[], 3.0, 6).into_iter().take(N - exps.len()));
    check(20, &bases, &exps, 1000, |x, y| x.powf(y));
    check(21, &bases, &exps, N, |x, y| x.powf(y));
    check(22, &bases, &exps, 1000, |x, _| x.powf(3.0));
    check(23, &bases, &exps, 1000, |x, _| x.powf(0.0));
    check(24, &bases, &exps, N, |_, y| 2f32.powf(y));
    check(25, &bases, &exps, 1000, |_, y| (-2f32).powf(y));
    let got = run_f32(&bases, &exps, 20).unwrap();
    assert_eq!((got[0], got[2], got[3]), (-8.0, 1.0, f32::INFINITY));
    assert!(got[1].is_nan(), "(-2)^0.5");
}

#[test]
fn int32_power_wraps_and_truncates() {
    let mut bases: Vec<i32> = vec![2, -3, 0, 0, 1, -1, -1, 7, 2, 5, 3, -2];
    let mut exps: Vec<i32> = vec![10, 3, 0, -2, -5, -3, 4, 0, 31, -1, 25, 33];
    for i in bases.len()..N {
        bases.push((i as i32 % 13) - 6);
        exps.push((i as i32 * 7) % 12);
    }
    let want = |x: i32, y: i32| -> i32 {
        if y >= 0 {
            x.wrapping_pow(y as u32)
        } else if x == 1 {
            1
        } else if x == -1 {
            if y % 2 == 0 { 1 } else { -1 }
        } else {
            0
        }
    };
    let dev = Device::host();
    let run = |which: i32| -> Vec<i32> {
        let a = dev.tensor_from(&bases, (Const::<N>,)).unwrap();
        let b = dev.tensor_from(&exps, (Const::<N>,)).unwrap();
        let mut out = dev.tensor_from(&[-7; N], (Const::<N>,)).unwrap();
        kernels::math_i32(&a, &b, which, &mut out).unwrap();
        out.to_vec().unwrap()
    };
    type Case<'a> = (i32, usize, &'a dyn Fn(i32, i32) -> i32);
    let cases: [Case; 6] = [
        (20, 1000, &want),
        (21, N, &want),
        (22, 1000, &|x, _| want(x, 3)),
        (23, 1000, &|x, _| want(x, 0)),
        (24, N, &|_, y| want(2, y)),
        (25, 1000, &|_, y| want(-2, y)),
    ];
    for (which, count, f) in cases {
        let got = run(which);
        for i in 0..N {
            let w = if i < count { f(bases[i], exps[i]) } else { -7 };
            assert_eq!(
                got[i], w,
                "int32 scenario {which}: element {i}, {}^{}",
                bases[i], exps[i]
            );
        }
    }
    assert_eq!(&run(20)[..3], &[1024, -27, 1]);
}

#[test]
fn broken_limits_are_errors() {
    let a = inputs(COMMON, 2.0, 7);
    let b = vec![1.0; N];
    let cases: [(i32, &str); 6] = [
        (
            100,
            "Sin: src and dst overlap; the source and destination must be apart",
        ),
        (
            102,
            "Tanh: sharedTmpBuffer overlaps src; the temporary buffer must be apart from the operands",
        ),
        (
            103,
            "Sigmoid: count 1025 exceeds an operand's 1024 elements",
        ),
        (104, "not on a 32-byte boundary"),
        (
            106,
            "Log: src and dst overlap; the source and destination must be apart",
        ),
        (
            120,
            "Power: src1 and dst overlap; the source and destination must be apart",
        ),
    ];
    for (which, want) in cases {
        let err = run_f32(&a, &b, which).unwrap_err();
        let msg = kernel_message(err);
        assert!(msg.contains(want), "scenario {which}: {msg}");
        let err = run_f16(&a, &b, which).unwrap_err();
        let msg = kernel_message(err);
        assert!(msg.contains(want), "half scenario {which}: {msg}");
    }
    // Sin and Cos inputs beyond 65504 (documented for A2/A3): float only,
    // since half cannot hold such a finite value; inf for both.
    let mut big = a.clone();
    big[5] = 70000.0;
    let msg = kernel_message(run_f32(&big, &b, 105).unwrap_err());
    assert!(
        msg.contains("Sin: src[5] = 70000 is outside [-65504, 65504], the documented input range"),
        "{msg}"
    );
    big[5] = f32::NEG_INFINITY;
    let msg = kernel_message(run_f16(&big, &b, 105).unwrap_err());
    assert!(msg.contains("Sin: src[5] = -inf is outside"), "{msg}");
}

#[test]
fn the_model_costs_them_on_the_vector_pipe() {
    // Inputs inside every function's documented range.
    let a = inputs(&[0.5], 0.9, 8);
    let b = vec![1.0; N];
    let ((), prof) = profile(ModelArch::AtlasA3, || {
        for which in [0, 4, 5, 6, 7, 9, 10, 12, 13, 20, 30, 31, 33, 35, 37, 50] {
            run_f32(&a, &b, which).unwrap();
        }
    });
    let slices: Vec<_> = prof
        .launches
        .iter()
        .flat_map(|l| &l.cores)
        .flat_map(|c| &c.slices)
        .collect();
    for name in [
        "Sin", "Tanh", "Erf", "Atan", "Sigmoid", "Log", "Log2", "Log10", "Exp", "Power", "Tan",
        "Sinh", "Asin", "Erfc", "Asinh", "Fmod",
    ] {
        let s: Vec<_> = slices.iter().filter(|s| &*s.name == name).collect();
        assert_eq!(s.len(), 1, "{name}: one slice\n{prof}");
        let s = s[0];
        assert!(s.modelled, "{name} is not costed\n{prof}");
        assert_eq!(
            pypto_rt::model::PIPES[usize::from(s.pipe)],
            "V",
            "{name} runs on the vector pipe"
        );
        assert_eq!(
            s.bytes,
            16 * 256,
            "{name}: 1000 floats are 16 repeats of 256 bytes"
        );
        assert!(s.end > s.start, "{name} takes time");
    }
}
