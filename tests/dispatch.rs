//! Kernels with variants (tests/kernels/dispatch.yaml): one wrapper picks
//! the variant per call from the call's sizes, `last_launch()` names it,
//! and a call no variant accepts is `Error::NoVariant` naming the sizes and
//! why each variant refused. Numbers against a plain-Rust reference.

use pypto_rt::{Const, Device, Error, last_launch};
use pypto_tests::{Tolerance, assert_close, data_as, kernels};

/// fp32 products summed in fp32 over K up to 128 (relative error about
/// K·2⁻²⁴ of the sum of magnitudes, which cancellation can make larger
/// than the result's).
const TOL: Tolerance = Tolerance {
    abs: 1e-4,
    rel: 1e-4,
};

fn reference(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k)
                .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                .sum();
        }
    }
    out
}

/// Runs `mm_variants` at M × K and returns the variant that ran, after
/// checking the product.
fn mm_variants(m: usize, k: usize) -> Result<&'static str, Error> {
    let dev = Device::host();
    let a = data_as::<f32>(m * k, (m * 31 + k) as u64);
    let b = data_as::<f32>(k * 32, k as u64);
    let mut out = dev.zeros((m, Const::<32>))?;
    kernels::mm_variants(
        &dev.tensor_from(&a, (m, k))?,
        &dev.tensor_from(&b, (k, Const::<32>))?,
        &mut out,
    )?;
    assert_close(
        &out.to_vec()?,
        &reference(&a, &b, m, k, 32),
        TOL,
        &format!("mm_variants {m}x{k}x32"),
    );
    Ok(last_launch()
        .and_then(|l| l.variant)
        .expect("a variant ran"))
}

#[test]
fn each_call_runs_the_first_variant_that_accepts_its_sizes() {
    // M <= 16 takes `small_m` whatever K is, even a K `fast_k` was built for.
    assert_eq!(mm_variants(1, 40).unwrap(), "small_m");
    assert_eq!(mm_variants(16, 64).unwrap(), "small_m");
    // Then a K built for `fast_k` takes it, whatever M is.
    assert_eq!(mm_variants(17, 64).unwrap(), "fast_k");
    assert_eq!(mm_variants(40, 128).unwrap(), "fast_k");
    // Else `tiled`, when M is a multiple of 16 or above 100.
    assert_eq!(mm_variants(32, 40).unwrap(), "tiled");
    assert_eq!(mm_variants(101, 3).unwrap(), "tiled");
}

#[test]
fn a_call_no_variant_accepts_is_an_error_naming_its_sizes() {
    let err = mm_variants(17, 40).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `mm_variants` cannot run M = 17, K = 40: variant `small_m` needs `M <= 16`; \
         variant `fast_k` was built for K = 64 or 128; variant `tiled` needs \
         `M % 16 == 0 || M > 100`"
    );
    assert!(matches!(
        err,
        Error::NoVariant {
            kernel: "mm_variants",
            ..
        }
    ));
}

#[test]
fn a_fast_path_falls_back_to_the_general_variant() {
    let dev = Device::host();
    for (m, k, want) in [(5, 64, "fast_k"), (5, 63, "general"), (70, 65, "general")] {
        let a = data_as::<f32>(m * k, k as u64);
        let b = data_as::<f32>(k * 32, m as u64);
        let mut out = dev.zeros((m, Const::<32>)).unwrap();
        kernels::mm_total(
            &dev.tensor_from(&a, (m, k)).unwrap(),
            &dev.tensor_from(&b, (k, Const::<32>)).unwrap(),
            &mut out,
        )
        .unwrap();
        assert_close(
            &out.to_vec().unwrap(),
            &reference(&a, &b, m, k, 32),
            TOL,
            &format!("mm_total {m}x{k}"),
        );
        assert_eq!(last_launch().unwrap().variant, Some(want), "{m}x{k}");
    }
}

#[test]
fn a_static_fast_path_still_checks_that_its_axes_agree() {
    let dev = Device::host();
    let a = dev.zeros((4, 64)).unwrap();
    let b = dev.zeros((63, Const::<32>)).unwrap();
    let mut out = dev.zeros((4, Const::<32>)).unwrap();
    let err = kernels::mm_total(&a, &b, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `mm_total`: `b.0` is 63 but `a.1` is 64; they must be equal because they are \
         the dim `K`"
    );
}

#[test]
fn runtime_dispatch_runs_the_static_size_built_and_refuses_others() {
    let dev = Device::host();
    for width in [7usize, 64] {
        let rows = 3;
        let x: Vec<f32> = (0..rows * width).map(|i| i as f32 - 40.0).collect();
        let mut y = dev.zeros((rows, width)).unwrap();
        kernels::relu_runtime(&dev.tensor_from(&x, (rows, width)).unwrap(), &mut y).unwrap();
        let want: Vec<f64> = x.iter().map(|&v| f64::from(v.max(0.0))).collect();
        assert_close(
            &y.to_vec().unwrap(),
            &want,
            TOL,
            &format!("relu width {width}"),
        );
        assert_eq!(last_launch().unwrap().variant, Some("relu_runtime"));
    }
    let x = dev.zeros((2, 5)).unwrap();
    let mut y = dev.zeros((2, 5)).unwrap();
    let err = kernels::relu_runtime(&x, &mut y).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `relu_runtime` cannot run x.1 = 5: it was built for x.1 = 7 or 64"
    );
}

#[test]
fn variants_of_a_kernel_with_a_workspace_each_get_theirs() {
    let dev = Device::host();
    for (batch, seq, want) in [
        (2usize, 5usize, "short"),
        (1, 64, "short"),
        (1, 130, "long"),
    ] {
        let n = batch * seq * 128;
        let round = |v: Vec<f32>| -> Vec<half::f16> {
            v.into_iter()
                .map(|x| half::f16::from_f32(x / 4.0))
                .collect()
        };
        let (q, k, v) = (
            round(pypto_tests::data(n, 1)),
            round(pypto_tests::data(n, 2)),
            round(pypto_tests::data(n, 3)),
        );
        let shape = (batch, seq, Const::<128>);
        let mut out = dev.zeros(shape).unwrap();
        kernels::flash_by_length(
            &dev.tensor_from(&q, shape).unwrap(),
            &dev.tensor_from(&k, shape).unwrap(),
            &dev.tensor_from(&v, shape).unwrap(),
            &mut out,
        )
        .unwrap();
        assert_eq!(last_launch().unwrap().variant, Some(want), "S = {seq}");
        let f32s = |x: &[half::f16]| -> Vec<f32> { x.iter().map(|v| v.to_f32()).collect() };
        let want_out = pypto_tests::attention_reference(
            &f32s(&q),
            &f32s(&k),
            &f32s(&v),
            (batch, seq, 128),
            2,
            false,
        );
        let got = f32s(&out.to_vec().unwrap());
        // fp16 probabilities and output: within a few fp16 spacings.
        let diff = pypto_tests::max_abs_diff(&got, &want_out);
        assert!(diff < 5e-3, "S = {seq}: largest difference {diff}");
    }
}
