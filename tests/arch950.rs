//! Kernels built for the Ascend 950 alone (tests/kernels/arch950.yaml,
//! `targets: [950PR]`). On the host pypto-build defines `PYPTO_TARGET_950`
//! for them, so they compile against the Ascend 950 row of the emulation's
//! architecture table (templates/include/pypto_emu/arch.h) while every other
//! test kernel uses the Atlas A2/A3 row. The builtins must compute what they
//! compute on A2/A3, against plain Rust; the probe kernel uses what only the
//! 950 row has (it would not compile against the A2/A3 row) and reports it.

use pypto_rt::testing::Sweep;
use pypto_rt::{Device, Tensor};
use pypto_tests::{
    Float, U, add_bias_reference, data, data_as, kernels, same_bits_at_every_block_count, within,
};

type Matrix<T> = Tensor<T, (usize, usize)>;
type Vector<T> = Tensor<T, (usize,)>;
type BiasKernel<T> = fn(&Matrix<T>, &Vector<T>, &mut Matrix<T>) -> Result<(), pypto_rt::Error>;
type RowKernel<T> = fn(&Matrix<T>, &mut Matrix<T>) -> Result<(), pypto_rt::Error>;

/// The (B, H) shapes the sweep of the 950 kernels' sizes chooses (B and H
/// alike for all four), and empty ones.
fn shapes() -> Vec<(usize, usize)> {
    let mut out = vec![(0, 5), (3, 0)];
    out.extend(
        Sweep::new(&kernels::add_bias_950_f32::SIZES)
            .max_elements(1 << 17)
            .cases()
            .iter()
            .map(|c| (c.dim("B"), c.dim("H"))),
    );
    out
}

fn run_add_bias<T: Float>(
    kernel: BiasKernel<T>,
    b: usize,
    h: usize,
    seed: u64,
) -> (Vec<T>, Vec<T>) {
    let dev = Device::host();
    let x: Vec<T> = data_as(b * h, seed);
    let bias: Vec<T> = data_as(h, seed + 1);
    let mut out = dev.zeros((b, h)).unwrap();
    kernel(
        &dev.tensor_from(&x, (b, h)).unwrap(),
        &dev.tensor_from(&bias, (h,)).unwrap(),
        &mut out,
    )
    .unwrap();
    (out.to_vec().unwrap(), add_bias_reference(&x, &bias))
}

fn check_add_bias<T: Float>(kernel: BiasKernel<T>) {
    for (i, (b, h)) in shapes().into_iter().enumerate() {
        let (got, want) = run_add_bias(kernel, b, h, 100 + i as u64);
        let bits = |v: &[T]| v.iter().map(|x| x.bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&got),
            bits(&want),
            "add_bias {} {b}x{h} on the 950 row",
            T::NAME
        );
    }
}

#[test]
fn add_bias_built_for_the_950_adds_exactly() {
    check_add_bias::<f32>(|a0, a1, a2| kernels::add_bias_950_f32(a0, a1, a2));
    check_add_bias::<half::bf16>(|a0, a1, a2| kernels::add_bias_950_bf16(a0, a1, a2));
}

#[test]
fn add_bias_built_for_the_950_has_the_same_bits_at_every_block_count() {
    let dev = Device::host();
    let (b, h) = (37, 300);
    let x = dev.tensor_from(&data(b * h, 7), (b, h)).unwrap();
    let bias = dev.tensor_from(&data(h, 8), (h,)).unwrap();
    let got = same_bits_at_every_block_count("add_bias_950_f32 37x300", || {
        let mut out = dev.zeros((b, h)).unwrap();
        kernels::add_bias_950_f32(&x, &bias, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want = add_bias_reference(&data(b * h, 7), &data(h, 8));
    assert_eq!(got, want);
}

/// softmax of each row of `cols` in f64.
fn softmax_f64(x: &[f64], cols: usize) -> Vec<f64> {
    let mut want = Vec::with_capacity(x.len());
    for row in x.chunks(cols.max(1)) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        want.extend(row.iter().map(|v| (v - max).exp() / sum));
    }
    want
}

/// The 950 build against the f64 softmax (within 2⁹ fp32 roundings of
/// each probability: the kernel's fp32 exp, sum and division, as
/// tests/rows.rs bounds them in detail) and bit for bit against the same
/// builtin built for A2/A3 (tests/kernels/rows.yaml), which nothing in the
/// two rows should tell apart.
fn check_softmax<T: Float>(on_950: RowKernel<T>, on_a2: RowKernel<T>) {
    let dev = Device::host();
    for (i, (r, c)) in shapes().into_iter().enumerate() {
        let x: Vec<T> = data_as(r * c, 300 + i as u64);
        let input = dev.tensor_from(&x, (r, c)).unwrap();
        let mut out = dev.zeros((r, c)).unwrap();
        on_950(&input, &mut out).unwrap();
        let got: Vec<T> = out.to_vec().unwrap();
        let mut out = dev.zeros((r, c)).unwrap();
        on_a2(&input, &mut out).unwrap();
        let a2: Vec<T> = out.to_vec().unwrap();
        let what = format!("softmax {} {r}x{c}", T::NAME);
        let bits = |v: &[T]| v.iter().map(|x| x.bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&got),
            bits(&a2),
            "{what}: the 950 build against the A2/A3 build"
        );
        let wide: Vec<f64> = x.iter().map(|v| f64::from(v.to_f32())).collect();
        let want = softmax_f64(&wide, c);
        within(&got, &want, |i| 512.0 * U * want[i], &what).unwrap();
    }
}

#[test]
fn softmax_built_for_the_950_matches_plain_rust_and_the_a2_build() {
    check_softmax::<f32>(
        |a0, a1| kernels::softmax_950_f32(a0, a1),
        |a0, a1| kernels::softmax_f32(a0, a1),
    );
    check_softmax::<half::f16>(
        |a0, a1| kernels::softmax_950_f16(a0, a1),
        |a0, a1| kernels::softmax_f16(a0, a1),
    );
}

#[test]
fn the_probe_sees_the_950_row() {
    let dev = Device::host();
    for n in [1usize, 7, 1000] {
        let x = data(n, 40 + n as u64);
        let mut y = dev.zeros((n + 2,)).unwrap();
        kernels::arch950_probe(&dev.tensor_from(&x, (n,)).unwrap(), &mut y).unwrap();
        let y: Vec<i64> = y.to_vec().unwrap();
        // __NPU_ARCH__ of the 950; QF322FP8_PRE follows the nine A2/A3 modes.
        assert_eq!(&y[..2], &[3510, 9], "n = {n}");
        let bits: Vec<i64> = x.iter().map(|v| i64::from(v.to_bits())).collect();
        assert_eq!(&y[2..], &bits[..], "n = {n}");
    }
}

/// Both rows in one binary: the same template takes 200 KiB of the Unified
/// Buffer, which the Ascend 950's row has room for and Atlas A2/A3's does
/// not. Each build keeps its own row's limits, in either order on one
/// thread (the emulation's namespaces carry the row, so no inline function
/// of one row stands in for the other's).
#[test]
fn each_row_keeps_its_own_limits_in_one_binary() {
    let dev = Device::host();
    let x = dev.tensor_from(&[0f32; 4], (4,)).unwrap();
    let mut y = dev.zeros::<i64, _>((4,)).unwrap();
    for _ in 0..2 {
        kernels::ub_200k_950(&x, &mut y).unwrap();
        assert_eq!(y.to_vec().unwrap()[0], 1);
        y = dev.zeros::<i64, _>((4,)).unwrap();
        let err = kernels::ub_200k_a2(&x, &mut y).unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel `ub_200k_a2`, block 0: TPipe::InitBuffer: 1 buffer of 204800 bytes need \
             204800 bytes of the Unified Buffer, but 0 of its 188160 usable bytes are taken \
             (196608 bytes, 192 KiB less the 256 B framework and 8 KiB API reserves)"
        );
        assert_eq!(y.to_vec().unwrap()[0], 0);
    }
}
