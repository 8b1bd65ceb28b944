//! softmax, rms_norm, layer_norm (over the last axis), swiglu, gelu and silu
//! against plain-Rust f64 references, at the row counts and lengths
//! `pypto_rt::testing::Sweep` chooses from the kernels' `SIZES` (around
//! tiles of 4096, 32-byte and repeat boundaries, block counts), in each dtype, on inputs chosen to
//! break the ways such kernels go wrong: rows whose exp overflows fp32
//! unless the maximum is subtracted, rows where every element counts in the
//! sum, rows where the mean swamps the variance or eps matters as much as
//! the variance, and elementwise inputs past exp's overflow.
//!
//! Tolerances are per element, in units in the last place (ulps) of the
//! output dtype at the expected value (`pypto_tests::within`): each check
//! bounds the error its kernel's fp32 arithmetic may make at each element,
//! in units of U = 2⁻²⁴ relative to the element's own scale, from the
//! operations the kernel does (an fp32 operation contributes U; exp, which
//! is within one fp32 ulp, 2U; a sum, U per addition on the longest path of
//! its tree; an argument of exp rounded by U·|z| makes exp(z) off by U·|z|
//! relative). Narrow dtypes add the final rounding, one ulp of the dtype.
//! References use the same dtype-rounded inputs.
//!
//! Every check returns its failures rather than panicking, and runs as is on
//! the deliberately broken builtins of tests/support/mutants.rs (no max
//! subtraction, an off-by-one tile, a wrong epsilon, a dropped tail...):
//! `broken_builtins_fail_the_checks` shows each fails, and on which inputs.

use pypto_rt::testing::Sweep;
use pypto_rt::{Device, Error, Tensor};
use pypto_tests::{Float, U, data, kernels, same_bits_at_every_block_count, within};

type Matrix<T> = Tensor<T, (usize, usize)>;
type Vector<T> = Tensor<T, (usize,)>;
type Rows<T> = fn(&Matrix<T>, &mut Matrix<T>) -> Result<(), Error>;
type RmsNorm<T> = fn(&Matrix<T>, &Vector<T>, f32, &mut Matrix<T>) -> Result<(), Error>;
type LayerNorm<T> =
    fn(&Matrix<T>, &Vector<T>, &Vector<T>, f32, &mut Matrix<T>) -> Result<(), Error>;
type Unary<T> = fn(&Vector<T>, &mut Vector<T>) -> Result<(), Error>;
type AddRmsNorm<T> = fn(
    &Matrix<T>,
    &Matrix<T>,
    &Vector<T>,
    f32,
    &mut Matrix<T>,
    &mut Matrix<T>,
) -> Result<(), Error>;

/// Columns of the row builtins' column tiles (`kTile` in
/// builtin/partials/row_io.hbs and builtin/swiglu.hbs).
const TILE: usize = 4096;

/// (rows, cols) pairs: the sweep of the row kernels' sizes
/// (`kernels::softmax_f32::SIZES`: R and C, alike for every row builtin),
/// which crosses one, two (a partial second) and three column tiles, the
/// 32-byte and repeat boundaries, and the row counts where blocks run out;
/// and empty inputs, which the sweep does not try.
fn grid() -> Vec<(usize, usize)> {
    let mut out = vec![(3, 0), (0, 7)];
    out.extend(
        Sweep::new(&kernels::softmax_f32::SIZES)
            .max_elements(1 << 17)
            .cases()
            .iter()
            .map(|c| (c.dim("R"), c.dim("C"))),
    );
    out
}

/// How one input set makes an element from a sample of `data` ([-4, 4)).
type Scale = fn(f32) -> f32;

fn widen<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| f64::from(x.to_f32())).collect()
}

/// `n` inputs of one set, rounded to `T`.
fn inputs<T: Float>(n: usize, seed: u64, scale: Scale) -> Vec<T> {
    data(n, seed)
        .into_iter()
        .map(|v| T::from_f32(scale(v)))
        .collect()
}

/// The failures of one check: the input set and, per failing shape, the
/// first element out of tolerance (or the launch's error).
#[derive(Debug, Default)]
struct Failures(Vec<(&'static str, String)>);

impl Failures {
    /// Records `got` against `want` within `err`.
    fn compare<T: Float>(
        &mut self,
        set: &'static str,
        what: String,
        got: Result<Vec<T>, Error>,
        want: &[f64],
        err: &[f64],
    ) {
        let result = got
            .map_err(|e| format!("{what}: {e}"))
            .and_then(|got| within(&got, want, |i| err[i], &what));
        if let Err(message) = result {
            self.0.push((set, message));
        }
    }

    fn into_result(self) -> Result<(), Failures> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }

    /// The input sets with a failure, in order.
    fn sets(&self) -> Vec<&'static str> {
        let mut sets: Vec<&'static str> = self.0.iter().map(|(s, _)| *s).collect();
        sets.dedup();
        sets
    }
}

impl std::fmt::Display for Failures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (set, message) in &self.0 {
            writeln!(f, "[{set}] {message}")?;
        }
        Ok(())
    }
}

/// Panics with every failure.
fn passes(result: Result<(), Failures>) {
    if let Err(failures) = result {
        panic!("{} failures:\n{failures}", failures.0.len());
    }
}

/// A launch's output: the kernel runs on an output of NaNs, so that
/// elements it does not write show.
fn launch<T: Float>(
    dev: &Device,
    (r, c): (usize, usize),
    run: impl FnOnce(&mut Matrix<T>) -> Result<(), Error>,
) -> Result<Vec<T>, Error> {
    let mut out = dev.tensor_from(&vec![T::from_f32(f32::NAN); r * c], (r, c))?;
    run(&mut out)?;
    out.to_vec()
}

/// Additions on the longest path of a ReduceSum over `len` fp32 values: a
/// pairwise tree within each 64-element repeat, then the repeats in order
/// (builtin emulation, templates/include/pypto_emu/reduce.h).
fn reduce_depth(len: usize) -> f64 {
    (6 + len.div_ceil(64).saturating_sub(1)) as f64
}

/// A row's column tiles: (tiles, the first tile's length).
fn tiles(cols: usize) -> (f64, usize) {
    (cols.div_ceil(TILE).max(1) as f64, cols.min(TILE))
}

/// softmax of each row of `cols`, and each element's error bound.
///
/// The kernel: d = fl(x - max) off by U·|d|, so exp(d) is off by U·|d| + 2U
/// relative; the sum (its terms' weighted error, plus one U per addition on
/// its longest path and four per merge of column tiles: a rescale by exp
/// and an addition); 1/sum and the product, U each.
fn softmax_expected(x: &[f64], cols: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut want, mut err) = (Vec::new(), Vec::new());
    let (tiles, tile) = tiles(cols);
    let sum_depth = reduce_depth(tile) + 4.0 * (tiles - 1.0);
    for row in x.chunks(cols.max(1)) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        let p: Vec<f64> = row.iter().map(|v| (v - max).exp() / sum).collect();
        let terms: f64 = row.iter().zip(&p).map(|(v, p)| p * (max - v)).sum::<f64>() + 2.0;
        for (v, p) in row.iter().zip(&p) {
            want.push(*p);
            err.push(U * p * ((max - v) + 2.0 + terms + sum_depth + 2.0));
        }
    }
    (want, err)
}

/// softmax's input sets.
const SOFTMAX_INPUTS: &[(&str, Scale)] = &[
    // [-4, 4): every element counts in the sum.
    ("spread", |v| v),
    // [-32, 32): peaked rows.
    ("peaked", |v| v * 8.0),
    // [-200, 200): exp overflows fp32 past 88.7 without the max subtracted.
    ("overflow", |v| v * 50.0),
    // [996, 1004): every exp overflows without it.
    ("offset", |v| v + 1000.0),
];

fn check_softmax<T: Float>(kernel: Rows<T>) -> Result<(), Failures> {
    let dev = Device::host();
    let mut failures = Failures::default();
    for &(set, scale) in SOFTMAX_INPUTS {
        for (r, c) in grid() {
            let x: Vec<T> = inputs(r * c, (r * 31 + c) as u64, scale);
            let got = launch(&dev, (r, c), |out| {
                kernel(&dev.tensor_from(&x, (r, c))?, out)
            });
            let (want, err) = softmax_expected(&widen(&x), c);
            failures.compare(
                set,
                format!("softmax {} {r}x{c}", T::NAME),
                got,
                &want,
                &err,
            );
        }
    }
    failures.into_result()
}

#[test]
fn softmax_in_every_dtype() {
    passes(check_softmax::<f32>(|a0, a1| kernels::softmax_f32(a0, a1)));
    passes(check_softmax::<half::f16>(|a0, a1| {
        kernels::softmax_f16(a0, a1)
    }));
    passes(check_softmax::<half::bf16>(|a0, a1| {
        kernels::softmax_bf16(a0, a1)
    }));
}

#[test]
fn softmax_over_leading_axes() {
    let dev = Device::host();
    let (a, b, c) = (3usize, 5usize, 40usize);
    let x = data(a * b * c, 4);
    let mut out = dev.zeros((a, b, c)).unwrap();
    kernels::softmax_3d(&dev.tensor_from(&x, (a, b, c)).unwrap(), &mut out).unwrap();
    let (want, err) = softmax_expected(&widen(&x), c);
    within(&out.to_vec().unwrap(), &want, |i| err[i], "softmax 3x5x40").unwrap();
}

const EPS: f32 = 1e-5;

/// rms_norm of each row, and each element's error bound.
///
/// The kernel: the mean of squares (a square and the sum, one U per
/// addition on its longest path and one per column tile; the division and
/// eps, U each) goes through sqrt, which halves its error and adds U, and
/// a reciprocal; then two products.
fn rms_expected(x: &[f64], w: &[f64], eps: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut want, mut err) = (Vec::new(), Vec::new());
    let (tiles, tile) = tiles(w.len());
    let mean_square = 1.0 + reduce_depth(tile) + (tiles - 1.0) + 2.0;
    let units = mean_square / 2.0 + 1.0 + 1.0 + 2.0;
    for row in x.chunks(w.len().max(1)) {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / row.len() as f64;
        let scale = 1.0 / (ms + eps).sqrt();
        for (v, w) in row.iter().zip(w) {
            want.push(v * scale * w);
            err.push(U * units * (v * scale * w).abs());
        }
    }
    (want, err)
}

/// rms_norm's and layer_norm's input sets.
const NORM_INPUTS: &[(&str, Scale)] = &[
    ("unit", |v| v),
    // Mean squares around 5e-6, as large as eps.
    ("small", |v| v * 1e-3),
    // [-4000, 4000).
    ("large", |v| v * 1e3),
    // [96, 104): the mean swamps the variance.
    ("offset", |v| v + 100.0),
];

fn check_rms<T: Float>(kernel: RmsNorm<T>) -> Result<(), Failures> {
    let dev = Device::host();
    let mut failures = Failures::default();
    for &(set, scale) in NORM_INPUTS {
        for (r, c) in grid() {
            let x: Vec<T> = inputs(r * c, (r * 7 + c) as u64, scale);
            let w: Vec<T> = inputs(c, c as u64 + 100, |v| v);
            let got = launch(&dev, (r, c), |out| {
                kernel(
                    &dev.tensor_from(&x, (r, c))?,
                    &dev.tensor_from(&w, (c,))?,
                    EPS,
                    out,
                )
            });
            let (want, err) = rms_expected(&widen(&x), &widen(&w), f64::from(EPS));
            failures.compare(
                set,
                format!("rms_norm {} {r}x{c}", T::NAME),
                got,
                &want,
                &err,
            );
        }
    }
    failures.into_result()
}

#[test]
fn rms_norm_in_every_dtype() {
    passes(check_rms::<f32>(|a0, a1, a2, a3| {
        kernels::rms_norm_f32(a0, a1, a2, a3)
    }));
    passes(check_rms::<half::f16>(|a0, a1, a2, a3| {
        kernels::rms_norm_f16(a0, a1, a2, a3)
    }));
    passes(check_rms::<half::bf16>(|a0, a1, a2, a3| {
        kernels::rms_norm_bf16(a0, a1, a2, a3)
    }));
}

/// add_rms_norm's sum, as the kernel forms it: x + residual in fp32.
fn fp32_sum<T: Float>(x: &[T], r: &[T]) -> Vec<f32> {
    x.iter()
        .zip(r)
        .map(|(a, b)| a.to_f32() + b.to_f32())
        .collect()
}

/// add_rms_norm on the grid, in every input set: `sum` exactly the fp32 sum
/// rounded to T (to nearest even), `out` rms_norm's reference over that
/// fp32 sum (the kernel normalises the sum before rounding it).
fn check_add_rms<T: Float>(kernel: AddRmsNorm<T>) -> Result<(), Failures> {
    let dev = Device::host();
    let mut failures = Failures::default();
    for &(set, scale) in NORM_INPUTS {
        for (r, c) in grid() {
            let x: Vec<T> = inputs(r * c, (r * 7 + c) as u64, scale);
            let res: Vec<T> = inputs(r * c, (r * 5 + c) as u64 + 50, scale);
            let w: Vec<T> = inputs(c, c as u64 + 100, |v| v);
            let nan = vec![T::from_f32(f32::NAN); r * c];
            let run = || -> Result<(Vec<T>, Vec<T>), Error> {
                let mut sum = dev.tensor_from(&nan, (r, c))?;
                let mut out = dev.tensor_from(&nan, (r, c))?;
                kernel(
                    &dev.tensor_from(&x, (r, c))?,
                    &dev.tensor_from(&res, (r, c))?,
                    &dev.tensor_from(&w, (c,))?,
                    EPS,
                    &mut sum,
                    &mut out,
                )?;
                Ok((sum.to_vec()?, out.to_vec()?))
            };
            let what = format!("add_rms_norm {} {r}x{c}", T::NAME);
            let exact = fp32_sum(&x, &res);
            let (sum, out) = match run() {
                Ok((sum, out)) => (Ok(sum), Ok(out)),
                Err(e) => (Err(e.clone()), Err(e)),
            };
            let want_sum: Vec<f64> = exact
                .iter()
                .map(|&v| f64::from(T::from_f32(v).to_f32()))
                .collect();
            failures.compare(
                set,
                format!("{what} sum"),
                sum,
                &want_sum,
                &vec![0.0; r * c],
            );
            let sum64: Vec<f64> = exact.iter().map(|&v| f64::from(v)).collect();
            let (want, err) = rms_expected(&sum64, &widen(&w), f64::from(EPS));
            failures.compare(set, format!("{what} out"), out, &want, &err);
        }
    }
    failures.into_result()
}

#[test]
fn add_rms_norm_in_every_dtype() {
    passes(check_add_rms::<f32>(|a0, a1, a2, a3, a4, a5| {
        kernels::add_rms_norm_f32(a0, a1, a2, a3, a4, a5)
    }));
    passes(check_add_rms::<half::f16>(|a0, a1, a2, a3, a4, a5| {
        kernels::add_rms_norm_f16(a0, a1, a2, a3, a4, a5)
    }));
    passes(check_add_rms::<half::bf16>(|a0, a1, a2, a3, a4, a5| {
        kernels::add_rms_norm_bf16(a0, a1, a2, a3, a4, a5)
    }));
}

/// add_rms_norm at every block count 1 to 48 gives the same bits, in rows
/// of one column tile (kept in the Unified Buffer between the passes) and
/// of two (5 x 4100, where the weight is loaded per tile and the sum formed
/// twice).
#[test]
fn add_rms_norm_at_every_block_count() {
    let dev = Device::host();
    for (r, c) in [(7, 33), (5, 4100)] {
        let x: Vec<f32> = inputs(r * c, 5, |v| v);
        let res: Vec<f32> = inputs(r * c, 9, |v| v);
        let w: Vec<f32> = inputs(c, 6, |v| v);
        let (x_t, res_t) = (
            dev.tensor_from(&x, (r, c)).unwrap(),
            dev.tensor_from(&res, (r, c)).unwrap(),
        );
        let w_t = dev.tensor_from(&w, (c,)).unwrap();
        let got = same_bits_at_every_block_count(&format!("add_rms_norm {r}x{c}"), || {
            let mut sum = dev.zeros((r, c)).unwrap();
            let mut out = dev.zeros((r, c)).unwrap();
            kernels::add_rms_norm_f32(&x_t, &res_t, &w_t, EPS, &mut sum, &mut out).unwrap();
            let mut both = sum.to_vec().unwrap();
            both.extend(out.to_vec().unwrap());
            both
        });
        let exact = fp32_sum(&x, &res);
        assert_eq!(got[..r * c], exact[..], "add_rms_norm {r}x{c} sum");
        let sum64: Vec<f64> = exact.iter().map(|&v| f64::from(v)).collect();
        let (want, err) = rms_expected(&sum64, &widen(&w), f64::from(EPS));
        within(
            &got[r * c..],
            &want,
            |i| err[i],
            &format!("add_rms_norm {r}x{c}"),
        )
        .unwrap();
    }
}

/// layer_norm of each row, and each element's error bound.
///
/// The kernel merges each column tile's mean and sum of squared deviations
/// (Chan et al.). The mean is off by at most U·mean|x| times the tile sum's
/// depth, the division and seven per merge; the deviations' sum of squares
/// relative by its depth, three (a difference, its square) and five per
/// merge; the scale 1/sqrt(m2/n + eps) by half of that plus two more for
/// the division, eps, sqrt and reciprocal. Each output,
/// `(x - mean)·scale·w + b`, carries the mean's error times scale·|w|, three
/// more roundings of `(x - mean)·scale·w`, and one of the sum.
fn layer_expected(x: &[f64], w: &[f64], b: &[f64], eps: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut want, mut err) = (Vec::new(), Vec::new());
    let (tiles, tile) = tiles(w.len());
    let depth = reduce_depth(tile);
    let mean_units = depth + 1.0 + 7.0 * tiles;
    let scale_units = (depth + 3.0 + 5.0 * tiles + 2.0) / 2.0 + 2.0;
    for row in x.chunks(w.len().max(1)) {
        let n = row.len() as f64;
        let mean = row.iter().sum::<f64>() / n;
        let magnitude = row.iter().map(|v| v.abs()).sum::<f64>() / n;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        let scale = 1.0 / (var + eps).sqrt();
        for (v, (w, b)) in row.iter().zip(w.iter().zip(b)) {
            let out = (v - mean) * scale * w + b;
            want.push(out);
            err.push(
                scale
                    * w.abs()
                    * (U * mean_units * magnitude + U * (scale_units + 3.0) * (v - mean).abs())
                    + U * out.abs(),
            );
        }
    }
    (want, err)
}

fn check_layer<T: Float>(kernel: LayerNorm<T>) -> Result<(), Failures> {
    let dev = Device::host();
    let mut failures = Failures::default();
    for &(set, scale) in NORM_INPUTS {
        for (r, c) in grid() {
            let x: Vec<T> = inputs(r * c, (r * 3 + c) as u64, scale);
            let w: Vec<T> = inputs(c, 7, |v| v);
            let b: Vec<T> = inputs(c, 8, |v| v);
            let got = launch(&dev, (r, c), |out| {
                kernel(
                    &dev.tensor_from(&x, (r, c))?,
                    &dev.tensor_from(&w, (c,))?,
                    &dev.tensor_from(&b, (c,))?,
                    EPS,
                    out,
                )
            });
            let (want, err) = layer_expected(&widen(&x), &widen(&w), &widen(&b), f64::from(EPS));
            let what = format!("layer_norm {} {r}x{c}", T::NAME);
            failures.compare(set, what, got, &want, &err);
        }
    }
    failures.into_result()
}

#[test]
fn layer_norm_in_every_dtype() {
    passes(check_layer::<f32>(|a0, a1, a2, a3, a4| {
        kernels::layer_norm_f32(a0, a1, a2, a3, a4)
    }));
    passes(check_layer::<half::f16>(|a0, a1, a2, a3, a4| {
        kernels::layer_norm_f16(a0, a1, a2, a3, a4)
    }));
    passes(check_layer::<half::bf16>(|a0, a1, a2, a3, a4| {
        kernels::layer_norm_bf16(a0, a1, a2, a3, a4)
    }));
}

/// 1 / (1 + exp(z)), without overflow.
fn logistic(z: f64) -> f64 {
    if z > 0.0 {
        (-z).exp() / (1.0 + (-z).exp())
    } else {
        1.0 / (1.0 + z.exp())
    }
}

/// gelu, tanh form, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), written as
/// x / (1 + exp(-z)) with z = 2·√(2/π)·(x + 0.044715·x³), the same function
/// (f64's tanh near -1 would lose what the kernel keeps); and its error
/// bound. The kernel computes z in seven roundings, so exp(-z) is off by
/// 7U·|z| + 2U relative, and 1 + exp(-z) by that times the share of exp(-z)
/// in it, plus U; the division adds U.
fn gelu(x: f64) -> (f64, f64) {
    let z = 2.0 * (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    let share = logistic(z);
    let want = x * logistic(-z);
    (want, U * want.abs() * (share * (7.0 * z.abs() + 2.0) + 2.0))
}

/// silu, x / (1 + exp(-x)); exp is off by 2U, the sum and division by U.
fn silu(x: f64) -> (f64, f64) {
    let want = x * logistic(-x);
    (want, U * want.abs() * (logistic(x) * 2.0 + 2.0))
}

/// The elementwise builtins' input sets.
const UNARY_INPUTS: &[(&str, Scale)] = &[
    ("moderate", |v| v * 3.0),
    // [-120, 120): exp(-x) overflows fp32 below x = -88.7, exp(x) above.
    ("overflow", |v| v * 30.0),
];

fn check_unary<T: Float>(
    name: &str,
    kernel: Unary<T>,
    f: fn(f64) -> (f64, f64),
) -> Result<(), Failures> {
    let dev = Device::host();
    let mut failures = Failures::default();
    for &(set, scale) in UNARY_INPUTS {
        for n in [0usize, 1, 2, 7, 31, 32, 33, 127, 1000, 4097, 20000] {
            let x: Vec<T> = inputs(n, n as u64, scale);
            let got = (|| {
                let mut out = dev.tensor_from(&vec![T::from_f32(f32::NAN); n], (n,))?;
                kernel(&dev.tensor_from(&x, (n,))?, &mut out)?;
                out.to_vec()
            })();
            let (want, err): (Vec<f64>, Vec<f64>) = widen(&x).into_iter().map(f).unzip();
            failures.compare(set, format!("{name} {} n={n}", T::NAME), got, &want, &err);
        }
    }
    failures.into_result()
}

#[test]
fn gelu_and_silu_in_every_dtype() {
    passes(check_unary::<f32>(
        "gelu",
        |a0, a1| kernels::gelu_f32(a0, a1),
        gelu,
    ));
    passes(check_unary::<half::f16>(
        "gelu",
        |a0, a1| kernels::gelu_f16(a0, a1),
        gelu,
    ));
    passes(check_unary::<half::bf16>(
        "gelu",
        |a0, a1| kernels::gelu_bf16(a0, a1),
        gelu,
    ));
    passes(check_unary::<f32>(
        "silu",
        |a0, a1| kernels::silu_f32(a0, a1),
        silu,
    ));
    passes(check_unary::<half::f16>(
        "silu",
        |a0, a1| kernels::silu_f16(a0, a1),
        silu,
    ));
    passes(check_unary::<half::bf16>(
        "silu",
        |a0, a1| kernels::silu_bf16(a0, a1),
        silu,
    ));
}

/// silu(a) · b for rows [a, b] of two halves of `half` elements, and each
/// element's error bound: silu's, and the product a·b, U.
fn swiglu_expected(x: &[f64], half: usize) -> (Vec<f64>, Vec<f64>) {
    x.chunks(2 * half.max(1))
        .flat_map(|row| {
            let (a, b) = row.split_at(half);
            a.iter()
                .zip(b)
                .map(|(a, b)| {
                    let (s, err) = silu(*a);
                    (s * b, (err + U * s.abs()) * b.abs())
                })
                .collect::<Vec<_>>()
        })
        .unzip()
}

/// swiglu's input sets: [-8, 8) and [-40, 40) (exp(-a) up to e^40).
const SWIGLU_INPUTS: &[(&str, Scale)] = &[("moderate", |v| v * 2.0), ("wide", |v| v * 10.0)];

/// swiglu's (rows, half) shapes: the sweep of its sizes
/// (`kernels::swiglu_f32::SIZES`, the same for every dtype), and empty
/// inputs, which the sweep does not try.
fn swiglu_shapes() -> Vec<(usize, usize)> {
    let mut out = vec![(3, 0), (0, 7)];
    out.extend(
        Sweep::new(&kernels::swiglu_f32::SIZES)
            .max_elements(1 << 17)
            .cases()
            .iter()
            .map(|c| (c.dim("R"), c.dim("out.1"))),
    );
    out
}

fn check_swiglu<T: Float>(kernel: Rows<T>) -> Result<(), Failures> {
    let dev = Device::host();
    let mut failures = Failures::default();
    for &(set, scale) in SWIGLU_INPUTS {
        for (r, h) in swiglu_shapes() {
            let x: Vec<T> = inputs(r * 2 * h, (r + h) as u64, scale);
            let got = launch(&dev, (r, h), |out| {
                kernel(&dev.tensor_from(&x, (r, 2 * h))?, out)
            });
            let (want, err) = swiglu_expected(&widen(&x), h);
            failures.compare(set, format!("swiglu {} {r}x{h}", T::NAME), got, &want, &err);
        }
    }
    failures.into_result()
}

#[test]
fn swiglu_in_every_dtype() {
    passes(check_swiglu::<f32>(|a0, a1| kernels::swiglu_f32(a0, a1)));
    passes(check_swiglu::<half::f16>(|a0, a1| {
        kernels::swiglu_f16(a0, a1)
    }));
    passes(check_swiglu::<half::bf16>(|a0, a1| {
        kernels::swiglu_bf16(a0, a1)
    }));
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
    let input = data(3 * 2048, 1);
    let x = dev
        .tensor_from(&input, (3, pypto_rt::Const::<2048>))
        .unwrap();
    let mut out = dev
        .tensor_from(&[f32::NAN; 3 * 1024], (3, pypto_rt::Const::<1024>))
        .unwrap();
    kernels::swiglu_fixed(&x, &mut out).unwrap();
    let (want, err) = swiglu_expected(&widen(&input), 1024);
    within(
        &out.to_vec().unwrap(),
        &want,
        |i| err[i],
        "swiglu_fixed 3x1024",
    )
    .unwrap();
}

/// Each broken builtin of tests/support/mutants.rs fails the checks its
/// builtin passes, and on the input sets that target its defect.
#[test]
fn broken_builtins_fail_the_checks() {
    let mut checked = Vec::new();
    let mut fails = |name: &'static str, result: Result<(), Failures>, sets: &[&str]| {
        let failures = result
            .err()
            .unwrap_or_else(|| panic!("{name} passes the checks"));
        assert_eq!(failures.sets(), sets, "{name}:\n{failures}");
        checked.push(name);
    };
    fails(
        "broken_softmax_no_max_f32",
        check_softmax::<f32>(|a0, a1| kernels::broken_softmax_no_max_f32(a0, a1)),
        &["overflow", "offset"],
    );
    fails(
        "broken_softmax_no_max_f16",
        check_softmax::<half::f16>(|a0, a1| kernels::broken_softmax_no_max_f16(a0, a1)),
        &["overflow", "offset"],
    );
    fails(
        "broken_softmax_last_tile_f32",
        check_softmax::<f32>(|a0, a1| kernels::broken_softmax_last_tile_f32(a0, a1)),
        &["spread", "peaked", "overflow", "offset"],
    );
    fails(
        "broken_rms_norm_eps_outside_f32",
        check_rms::<f32>(|a0, a1, a2, a3| kernels::broken_rms_norm_eps_outside_f32(a0, a1, a2, a3)),
        &["unit", "small"],
    );
    fails(
        "broken_rms_norm_two_tiles_f32",
        check_rms::<f32>(|a0, a1, a2, a3| kernels::broken_rms_norm_two_tiles_f32(a0, a1, a2, a3)),
        &["unit", "small", "large", "offset"],
    );
    fails(
        "broken_layer_norm_eps_f32",
        check_layer::<f32>(|a0, a1, a2, a3, a4| {
            kernels::broken_layer_norm_eps_f32(a0, a1, a2, a3, a4)
        }),
        // "offset" too since the checks take their sizes from the sweep,
        // which tries more row lengths than the grid it replaced.
        &["unit", "small", "offset"],
    );
    fails(
        "broken_layer_norm_full_tiles_f32",
        check_layer::<f32>(|a0, a1, a2, a3, a4| {
            kernels::broken_layer_norm_full_tiles_f32(a0, a1, a2, a3, a4)
        }),
        &["unit", "small", "large", "offset"],
    );
    fails(
        "broken_swiglu_dropped_tail_f32",
        check_swiglu::<f32>(|a0, a1| kernels::broken_swiglu_dropped_tail_f32(a0, a1)),
        &["moderate", "wide"],
    );
    // Caught by the sweep's halves of whole tiles (4096), which the grid
    // this check used before did not have (tests/sweep.rs shows it).
    fails(
        "broken_swiglu_whole_tiles_f32",
        check_swiglu::<f32>(|a0, a1| kernels::broken_swiglu_whole_tiles_f32(a0, a1)),
        &["moderate", "wide"],
    );
    fails(
        "broken_gelu_constant_f32",
        check_unary::<f32>(
            "gelu",
            |a0, a1| kernels::broken_gelu_constant_f32(a0, a1),
            gelu,
        ),
        &["moderate", "overflow"],
    );
    fails(
        "broken_silu_overflows_f32",
        check_unary::<f32>(
            "silu",
            |a0, a1| kernels::broken_silu_overflows_f32(a0, a1),
            silu,
        ),
        // Past 88.7 as NaN; below, by the one rounding more than silu's
        // three that x · exp(x) costs.
        &["moderate", "overflow"],
    );
    // What the checks this replaced let through: an all-zero softmax, and
    // one off by 1e-5 relative (their fp32 tolerance).
    let fails_all = ["spread", "peaked", "overflow", "offset"];
    let zeros = check_softmax::<f32>(|_, out| out.copy_from(&Device::host().zeros(out.shape())?));
    assert_eq!(zeros.unwrap_err().sets(), fails_all);
    let off = check_softmax::<f32>(|x, out| {
        kernels::softmax_f32(x, &mut *out)?;
        let v: Vec<f32> = out.to_vec()?.iter().map(|v| v * (1.0 + 1e-5)).collect();
        out.copy_from(&Device::host().tensor_from(&v, out.shape())?)
    });
    assert_eq!(off.unwrap_err().sets(), fails_all);
    // The graph builtins' mutants are tests/graph.rs's, the serving
    // builtins' tests/serving.rs's, the MoE builtins' tests/moe.rs's,
    // topk_topp_sample's tests/sample.rs's, grouped_matmul's
    // tests/grouped_matmul.rs's.
    let graph = [
        "gather_rows",
        "scatter_add",
        "segment_mean",
        "reshape_and_cache",
        "rope",
        "argmax",
        "dynamic_quant",
        "moe_gating_topk",
        "moe_init_routing",
        "moe_finalize_routing",
        "topk_topp_sample",
        "grouped_matmul",
        "weight_quant_matmul",
    ];
    let mut all: Vec<&str> = pypto_tests::mutants::MUTANTS
        .iter()
        .filter(|m| !graph.contains(&m.builtin))
        .map(|m| m.name)
        .collect();
    all.sort_unstable();
    checked.sort_unstable();
    assert_eq!(checked, all, "every mutant is checked");
}

/// Every row kernel at every block count 1 to 48, in rows of one column
/// tile (7 x 33: 7 blocks naturally, so up to 41 blocks have no row; 50 x 40:
/// more rows than blocks, so every count splits them differently) and of
/// two (5 x 4100: 4096 + 4 columns, where rms_norm and layer_norm
/// load their weights per tile and softmax rescales its running sum);
/// swiglu on halves of one tile (20, 40) and of two (2100 = 2048 + 52).
/// Bit-identical to the natural count, and within tolerance of the
/// references.
fn every_count_rows<T: Float>(
    softmax: Rows<T>,
    rms_norm: RmsNorm<T>,
    layer_norm: LayerNorm<T>,
    swiglu: Rows<T>,
) {
    let dev = Device::host();
    let nan = |len: usize| vec![T::from_f32(f32::NAN); len];
    for (r, c) in [(7, 33), (50, 40), (5, 4100)] {
        let matrix = |v: &[T], cols: usize| dev.tensor_from(v, (r, cols)).unwrap();
        let vector = |v: &[T]| dev.tensor_from(v, (v.len(),)).unwrap();
        let x: Vec<T> = inputs(r * c, 5, |v| v);
        let w: Vec<T> = inputs(c, 6, |v| v);
        let b: Vec<T> = inputs(c, 7, |v| v);
        let (x_t, w_t, b_t) = (matrix(&x, c), vector(&w), vector(&b));
        let what = |k: &str| format!("{k} {} {r}x{c}", T::NAME);

        let got = same_bits_at_every_block_count(&what("softmax"), || {
            let mut out = matrix(&nan(r * c), c);
            softmax(&x_t, &mut out).unwrap();
            out.to_vec().unwrap()
        });
        let (want, err) = softmax_expected(&widen(&x), c);
        within(&got, &want, |i| err[i], &what("softmax")).unwrap();

        let got = same_bits_at_every_block_count(&what("rms_norm"), || {
            let mut out = matrix(&nan(r * c), c);
            rms_norm(&x_t, &w_t, EPS, &mut out).unwrap();
            out.to_vec().unwrap()
        });
        let (want, err) = rms_expected(&widen(&x), &widen(&w), f64::from(EPS));
        within(&got, &want, |i| err[i], &what("rms_norm")).unwrap();

        let got = same_bits_at_every_block_count(&what("layer_norm"), || {
            let mut out = matrix(&nan(r * c), c);
            layer_norm(&x_t, &w_t, &b_t, EPS, &mut out).unwrap();
            out.to_vec().unwrap()
        });
        let (want, err) = layer_expected(&widen(&x), &widen(&w), &widen(&b), f64::from(EPS));
        within(&got, &want, |i| err[i], &what("layer_norm")).unwrap();

        let h = match c {
            33 => 20,
            40 => 40,
            _ => 2100,
        };
        let xs: Vec<T> = inputs(r * 2 * h, 8, |v| v);
        let xs_t = matrix(&xs, 2 * h);
        let what = format!("swiglu {} {r}x{h}", T::NAME);
        let got = same_bits_at_every_block_count(&what, || {
            let mut out = matrix(&nan(r * h), h);
            swiglu(&xs_t, &mut out).unwrap();
            out.to_vec().unwrap()
        });
        let (want, err) = swiglu_expected(&widen(&xs), h);
        within(&got, &want, |i| err[i], &what).unwrap();
    }
}

/// gelu and silu at every block count, on 20000 elements: 3 blocks of
/// 8192 naturally, tiles of 4096 (one block: 4 whole and a partial one;
/// 48 blocks: 416 or 417 elements each, one partial tile).
fn every_count_unary<T: Float>(name: &str, kernel: Unary<T>, f: fn(f64) -> (f64, f64)) {
    let dev = Device::host();
    let n = 20_000;
    let x: Vec<T> = inputs(n, 9, |v| v * 3.0);
    let x_t = dev.tensor_from(&x, (n,)).unwrap();
    let what = format!("{name} {}", T::NAME);
    let got = same_bits_at_every_block_count(&what, || {
        let mut out = dev
            .tensor_from(&vec![T::from_f32(f32::NAN); n], (n,))
            .unwrap();
        kernel(&x_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let (want, err): (Vec<f64>, Vec<f64>) = widen(&x).into_iter().map(f).unzip();
    within(&got, &want, |i| err[i], &what).unwrap();
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
