//! softmax, rms_norm, layer_norm (over the last axis), gelu and silu
//! against plain-Rust f64 references, at row counts and lengths around
//! tiles (2048) and 32-byte boundaries, in each dtype.
//!
//! Tolerances, `|got - want| <= abs + rel·|want|`; references use the same
//! dtype-rounded inputs, so the budget is the kernel's fp32 arithmetic plus
//! one final rounding to the output dtype:
//! - fp32: rel 1e-5 (a handful of fp32 operations and a sum over up to 4097
//!   terms), abs 1e-6 for results near zero.
//! - fp16: rel 1e-3, one rounding to fp16 (spacing 2⁻¹⁰ relative), plus fp32
//!   noise; abs 1e-4 for the fp16 subnormal range.
//! - bf16: rel 8e-3, one rounding to bf16 (2⁻⁷ relative); abs 1e-3.

use pypto_rt::{Device, Error, Tensor};
use pypto_tests::{
    Float, Tolerance, assert_close, data_as, kernels, same_bits_at_every_block_count,
};

fn tol<T: Float>() -> Tolerance {
    match T::NAME {
        "f32" => Tolerance {
            abs: 1e-6,
            rel: 1e-5,
        },
        "f16" => Tolerance {
            abs: 1e-4,
            rel: 1e-3,
        },
        _ => Tolerance {
            abs: 1e-3,
            rel: 8e-3,
        },
    }
}

/// (rows, cols) pairs: a sampled grid over rows and row lengths.
fn grid() -> Vec<(usize, usize)> {
    let rows = [0usize, 1, 2, 7, 33];
    let cols = [1usize, 2, 7, 31, 32, 33, 127, 1000, 2049, 4097];
    let mut out = vec![(3, 0)];
    for (i, &r) in rows.iter().enumerate() {
        for (j, &c) in cols.iter().enumerate() {
            if r <= 2 || (i + j) % 3 == 0 {
                out.push((r, c));
            }
        }
    }
    out
}

fn widen<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| f64::from(x.to_f32())).collect()
}

fn softmax_ref(x: &[f64], cols: usize) -> Vec<f64> {
    x.chunks(cols.max(1))
        .flat_map(|row| {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
            row.iter()
                .map(move |v| (v - max).exp() / sum)
                .collect::<Vec<_>>()
        })
        .collect()
}

type Matrix<T> = Tensor<T, (usize, usize)>;
type Vector<T> = Tensor<T, (usize,)>;

fn check_softmax<T: Float>(kernel: fn(&Matrix<T>, &mut Matrix<T>) -> Result<(), Error>) {
    let dev = Device::host();
    for (r, c) in grid() {
        // Scaled inputs give peaked rows, where max subtraction matters.
        let x: Vec<T> = data_as::<f32>(r * c, (r * 31 + c) as u64)
            .iter()
            .map(|v| T::from_f32(v * 8.0))
            .collect();
        let mut out = dev.zeros((r, c)).unwrap();
        kernel(&dev.tensor_from(&x, (r, c)).unwrap(), &mut out).unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        assert_close(
            &got,
            &softmax_ref(&widen(&x), c),
            tol::<T>(),
            &format!("softmax {} {r}x{c}", T::NAME),
        );
    }
}

#[test]
fn softmax_in_every_dtype() {
    check_softmax::<f32>(|a0, a1| kernels::softmax_f32(a0, a1));
    check_softmax::<half::f16>(|a0, a1| kernels::softmax_f16(a0, a1));
    check_softmax::<half::bf16>(|a0, a1| kernels::softmax_bf16(a0, a1));
}

#[test]
fn softmax_over_leading_axes() {
    let dev = Device::host();
    let (a, b, c) = (3usize, 5usize, 40usize);
    let x = data_as::<f32>(a * b * c, 4);
    let mut out = dev.zeros((a, b, c)).unwrap();
    kernels::softmax_3d(&dev.tensor_from(&x, (a, b, c)).unwrap(), &mut out).unwrap();
    assert_close(
        &out.to_vec().unwrap(),
        &softmax_ref(&widen(&x), c),
        tol::<f32>(),
        "softmax 3x5x40",
    );
}

fn rms_ref(x: &[f64], w: &[f64], eps: f64) -> Vec<f64> {
    x.chunks(w.len().max(1))
        .flat_map(|row| {
            let ms = row.iter().map(|v| v * v).sum::<f64>() / row.len() as f64;
            let r = 1.0 / (ms + eps).sqrt();
            row.iter()
                .zip(w)
                .map(move |(v, w)| v * r * w)
                .collect::<Vec<_>>()
        })
        .collect()
}

type RmsNorm<T> = fn(&Matrix<T>, &Vector<T>, f32, &mut Matrix<T>) -> Result<(), Error>;

fn check_rms<T: Float>(kernel: RmsNorm<T>) {
    let dev = Device::host();
    let eps = 1e-5f32;
    for (r, c) in grid() {
        let x = data_as::<T>(r * c, (r * 7 + c) as u64);
        let w = data_as::<T>(c, c as u64 + 100);
        let mut out = dev.zeros((r, c)).unwrap();
        kernel(
            &dev.tensor_from(&x, (r, c)).unwrap(),
            &dev.tensor_from(&w, (c,)).unwrap(),
            eps,
            &mut out,
        )
        .unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        let want = rms_ref(&widen(&x), &widen(&w), f64::from(eps));
        assert_close(
            &got,
            &want,
            tol::<T>(),
            &format!("rms_norm {} {r}x{c}", T::NAME),
        );
    }
}

#[test]
fn rms_norm_in_every_dtype() {
    check_rms::<f32>(|a0, a1, a2, a3| kernels::rms_norm_f32(a0, a1, a2, a3));
    check_rms::<half::f16>(|a0, a1, a2, a3| kernels::rms_norm_f16(a0, a1, a2, a3));
    check_rms::<half::bf16>(|a0, a1, a2, a3| kernels::rms_norm_bf16(a0, a1, a2, a3));
}

fn layer_ref(x: &[f64], w: &[f64], b: &[f64], eps: f64) -> Vec<f64> {
    x.chunks(w.len().max(1))
        .flat_map(|row| {
            let n = row.len() as f64;
            let mean = row.iter().sum::<f64>() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            let r = 1.0 / (var + eps).sqrt();
            row.iter()
                .zip(w.iter().zip(b))
                .map(move |(v, (w, b))| (v - mean) * r * w + b)
                .collect::<Vec<_>>()
        })
        .collect()
}

type LayerNorm<T> =
    fn(&Matrix<T>, &Vector<T>, &Vector<T>, f32, &mut Matrix<T>) -> Result<(), Error>;

fn check_layer<T: Float>(kernel: LayerNorm<T>) {
    let dev = Device::host();
    let eps = 1e-5f32;
    for (r, c) in grid() {
        // A large offset: the mean must not swamp the variance.
        let x: Vec<T> = data_as::<f32>(r * c, (r * 3 + c) as u64)
            .iter()
            .map(|v| T::from_f32(v + 100.0))
            .collect();
        let w = data_as::<T>(c, 7);
        let b = data_as::<T>(c, 8);
        let mut out = dev.zeros((r, c)).unwrap();
        kernel(
            &dev.tensor_from(&x, (r, c)).unwrap(),
            &dev.tensor_from(&w, (c,)).unwrap(),
            &dev.tensor_from(&b, (c,)).unwrap(),
            eps,
            &mut out,
        )
        .unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        let want = layer_ref(&widen(&x), &widen(&w), &widen(&b), f64::from(eps));
        // Normalised values carry the input's rounding relative to its
        // spread: with |mean| ≈ 100 and spread ≈ 2, fp32 keeps ~1e-5 of it.
        let t = match T::NAME {
            "f32" => Tolerance {
                abs: 1e-4,
                rel: 1e-4,
            },
            _ => tol::<T>(),
        };
        assert_close(&got, &want, t, &format!("layer_norm {} {r}x{c}", T::NAME));
    }
}

#[test]
fn layer_norm_in_every_dtype() {
    check_layer::<f32>(|a0, a1, a2, a3, a4| kernels::layer_norm_f32(a0, a1, a2, a3, a4));
    check_layer::<half::f16>(|a0, a1, a2, a3, a4| kernels::layer_norm_f16(a0, a1, a2, a3, a4));
    check_layer::<half::bf16>(|a0, a1, a2, a3, a4| kernels::layer_norm_bf16(a0, a1, a2, a3, a4));
}

fn check_unary<T: Float>(
    name: &str,
    kernel: fn(&Vector<T>, &mut Vector<T>) -> Result<(), Error>,
    f: fn(f64) -> f64,
) {
    let dev = Device::host();
    for n in [0usize, 1, 2, 7, 31, 32, 33, 127, 1000, 4097, 20000] {
        // [-12, 12): reaches both tails, where exp overflows or vanishes.
        let x: Vec<T> = data_as::<f32>(n, n as u64)
            .iter()
            .map(|v| T::from_f32(v * 3.0))
            .collect();
        let mut out = dev.zeros((n,)).unwrap();
        kernel(&dev.tensor_from(&x, (n,)).unwrap(), &mut out).unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        let want: Vec<f64> = widen(&x).into_iter().map(f).collect();
        assert_close(
            &got,
            &want,
            tol::<T>(),
            &format!("{name} {} n={n}", T::NAME),
        );
    }
}

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

#[test]
fn gelu_and_silu_in_every_dtype() {
    check_unary::<f32>("gelu", |a0, a1| kernels::gelu_f32(a0, a1), gelu);
    check_unary::<half::f16>("gelu", |a0, a1| kernels::gelu_f16(a0, a1), gelu);
    check_unary::<half::bf16>("gelu", |a0, a1| kernels::gelu_bf16(a0, a1), gelu);
    check_unary::<f32>("silu", |a0, a1| kernels::silu_f32(a0, a1), silu);
    check_unary::<half::f16>("silu", |a0, a1| kernels::silu_f16(a0, a1), silu);
    check_unary::<half::bf16>("silu", |a0, a1| kernels::silu_bf16(a0, a1), silu);
}

/// silu(a) · b for rows [a, b] of two halves of `half` elements.
fn swiglu_ref(x: &[f64], half: usize) -> Vec<f64> {
    x.chunks(2 * half.max(1))
        .flat_map(|row| {
            let (a, b) = row.split_at(half);
            a.iter()
                .zip(b)
                .map(|(a, b)| silu(*a) * b)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn check_swiglu<T: Float>(kernel: fn(&Matrix<T>, &mut Matrix<T>) -> Result<(), Error>) {
    let dev = Device::host();
    for (r, h) in grid() {
        let x: Vec<T> = data_as::<f32>(r * 2 * h, (r + h) as u64)
            .iter()
            .map(|v| T::from_f32(v * 2.0))
            .collect();
        let mut out = dev.zeros((r, h)).unwrap();
        kernel(&dev.tensor_from(&x, (r, 2 * h)).unwrap(), &mut out).unwrap();
        let want = swiglu_ref(&widen(&x), h);
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        assert_close(
            &got,
            &want,
            tol::<T>(),
            &format!("swiglu {} {r}x{h}", T::NAME),
        );
    }
}

#[test]
fn swiglu_in_every_dtype() {
    check_swiglu::<f32>(|a0, a1| kernels::swiglu_f32(a0, a1));
    check_swiglu::<half::f16>(|a0, a1| kernels::swiglu_f16(a0, a1));
    check_swiglu::<half::bf16>(|a0, a1| kernels::swiglu_bf16(a0, a1));
}

#[test]
fn swiglu_halves_are_checked() {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((2, 10)).unwrap();
    let mut out = dev.zeros((2, 6)).unwrap();
    assert_eq!(
        kernels::swiglu_f32(&x, &mut out).unwrap_err().to_string(),
        "kernel `swiglu_f32`: `x.1` is 10, but it must be twice `out.1` (6) because \
         builtin/swiglu splits it into two halves"
    );
    // Fixed halves: [3, 2048] into [3, 1024].
    let input = data_as::<f32>(3 * 2048, 1);
    let x = dev
        .tensor_from(&input, (3, pypto_rt::Const::<2048>))
        .unwrap();
    let mut out = dev
        .tensor_from(&[f32::NAN; 3 * 1024], (3, pypto_rt::Const::<1024>))
        .unwrap();
    kernels::swiglu_fixed(&x, &mut out).unwrap();
    assert_close(
        &out.to_vec().unwrap(),
        &swiglu_ref(&widen(&input), 1024),
        tol::<f32>(),
        "swiglu_fixed 3x1024",
    );
}

/// Every row kernel at every block count 1 to 48: 7 rows of 33 (7 blocks
/// naturally, so up to 41 blocks have no row), and 20000 elements for gelu
/// and silu (3 blocks naturally); bit-identical to the natural count, and
/// within tolerance of the references.
fn every_count_rows<T: Float>(
    softmax: fn(&Matrix<T>, &mut Matrix<T>) -> Result<(), Error>,
    rms_norm: RmsNorm<T>,
    layer_norm: LayerNorm<T>,
    swiglu: fn(&Matrix<T>, &mut Matrix<T>) -> Result<(), Error>,
) {
    let dev = Device::host();
    let (r, c) = (7, 33);
    let nan = |len: usize| vec![T::from_f32(f32::NAN); len];
    let matrix = |v: &[T], cols: usize| dev.tensor_from(v, (r, cols)).unwrap();
    let vector = |v: &[T]| dev.tensor_from(v, (v.len(),)).unwrap();
    let to_f32 = |v: Vec<T>| -> Vec<f32> { v.iter().map(|x| x.to_f32()).collect() };
    let x = data_as::<T>(r * c, 5);
    let w = data_as::<T>(c, 6);
    let b = data_as::<T>(c, 7);
    let (x_t, w_t, b_t) = (matrix(&x, c), vector(&w), vector(&b));
    let eps = 1e-5f32;
    let what = |k: &str| format!("{k} {}", T::NAME);

    let got = same_bits_at_every_block_count(&what("softmax"), || {
        let mut out = matrix(&nan(r * c), c);
        softmax(&x_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want = softmax_ref(&widen(&x), c);
    assert_close(&to_f32(got), &want, tol::<T>(), &what("softmax"));

    let got = same_bits_at_every_block_count(&what("rms_norm"), || {
        let mut out = matrix(&nan(r * c), c);
        rms_norm(&x_t, &w_t, eps, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want = rms_ref(&widen(&x), &widen(&w), f64::from(eps));
    assert_close(&to_f32(got), &want, tol::<T>(), &what("rms_norm"));

    let got = same_bits_at_every_block_count(&what("layer_norm"), || {
        let mut out = matrix(&nan(r * c), c);
        layer_norm(&x_t, &w_t, &b_t, eps, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want = layer_ref(&widen(&x), &widen(&w), &widen(&b), f64::from(eps));
    assert_close(&to_f32(got), &want, tol::<T>(), &what("layer_norm"));

    let h = 20;
    let xs = data_as::<T>(r * 2 * h, 8);
    let xs_t = matrix(&xs, 2 * h);
    let got = same_bits_at_every_block_count(&what("swiglu"), || {
        let mut out = matrix(&nan(r * h), h);
        swiglu(&xs_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want = swiglu_ref(&widen(&xs), h);
    assert_close(&to_f32(got), &want, tol::<T>(), &what("swiglu"));
}

fn every_count_unary<T: Float>(
    name: &str,
    kernel: fn(&Vector<T>, &mut Vector<T>) -> Result<(), Error>,
    f: fn(f64) -> f64,
) {
    let dev = Device::host();
    let n = 20_000;
    let x: Vec<T> = data_as::<f32>(n, 9)
        .iter()
        .map(|v| T::from_f32(v * 3.0))
        .collect();
    let x_t = dev.tensor_from(&x, (n,)).unwrap();
    let what = format!("{name} {}", T::NAME);
    let got = same_bits_at_every_block_count(&what, || {
        let mut out = dev
            .tensor_from(&vec![T::from_f32(f32::NAN); n], (n,))
            .unwrap();
        kernel(&x_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let got: Vec<f32> = got.iter().map(|v| v.to_f32()).collect();
    let want: Vec<f64> = widen(&x).into_iter().map(f).collect();
    assert_close(&got, &want, tol::<T>(), &what);
}

#[test]
fn every_block_count_gives_the_same_numbers() {
    every_count_rows::<f32>(
        |a0, a1| kernels::softmax_f32(a0, a1),
        |a0, a1, a2, a3| kernels::rms_norm_f32(a0, a1, a2, a3),
        |a0, a1, a2, a3, a4| kernels::layer_norm_f32(a0, a1, a2, a3, a4),
        |a0, a1| kernels::swiglu_f32(a0, a1),
    );
    every_count_rows::<half::f16>(
        |a0, a1| kernels::softmax_f16(a0, a1),
        |a0, a1, a2, a3| kernels::rms_norm_f16(a0, a1, a2, a3),
        |a0, a1, a2, a3, a4| kernels::layer_norm_f16(a0, a1, a2, a3, a4),
        |a0, a1| kernels::swiglu_f16(a0, a1),
    );
    every_count_rows::<half::bf16>(
        |a0, a1| kernels::softmax_bf16(a0, a1),
        |a0, a1, a2, a3| kernels::rms_norm_bf16(a0, a1, a2, a3),
        |a0, a1, a2, a3, a4| kernels::layer_norm_bf16(a0, a1, a2, a3, a4),
        |a0, a1| kernels::swiglu_bf16(a0, a1),
    );
    every_count_unary::<f32>("gelu", |a0, a1| kernels::gelu_f32(a0, a1), gelu);
    every_count_unary::<half::f16>("gelu", |a0, a1| kernels::gelu_f16(a0, a1), gelu);
    every_count_unary::<half::bf16>("gelu", |a0, a1| kernels::gelu_bf16(a0, a1), gelu);
    every_count_unary::<f32>("silu", |a0, a1| kernels::silu_f32(a0, a1), silu);
    every_count_unary::<half::f16>("silu", |a0, a1| kernels::silu_f16(a0, a1), silu);
    every_count_unary::<half::bf16>("silu", |a0, a1| kernels::silu_bf16(a0, a1), silu);
}
