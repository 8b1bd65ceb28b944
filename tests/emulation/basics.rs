//! The host emulation's own semantics, through small user-template kernels:
//! strided copies, and fp16/bf16 rounding against the `half` crate.

use pypto_rt::{Const, Device};
use pypto_tests::{data, kernels};

#[test]
fn strided_datacopy_gathers_and_scatters_blocks() {
    let dev = Device::host();
    let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let mut y = dev.zeros((Const::<64>,)).unwrap();
    kernels::strided_copy(&dev.tensor_from(&x, (Const::<64>,)).unwrap(), &mut y).unwrap();
    let want: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, v)| if (i / 8) % 2 == 0 { *v } else { 0.0 })
        .collect();
    assert_eq!(y.to_vec().unwrap(), want);
}

#[test]
fn narrow_float_rounding_matches_the_half_crate() {
    let dev = Device::host();
    // Ordinary values, ties, subnormals of both types, overflow, infinities, NaN.
    let mut x: Vec<f32> = data(2000, 3).iter().map(|v| v * 1000.0).collect();
    x.extend([
        0.0,
        -0.0,
        1.0,
        1.0 + f32::EPSILON,
        65504.0,
        65519.0,
        65520.0,
        1e6,
        -1e6,
        6.0e-8,
        2.9e-8,
        3.0e-8,
        1e-30,
        // Ties: halfway between fp16 (spacing 2⁻¹⁰) or bf16 (2⁻⁷) neighbours at 1.
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        1.0 + 2f32.powi(-8),
        1.0 + 3.0 * 2f32.powi(-8),
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-40,
        3.3895314e38,
    ]);
    x.push(f32::NAN);
    let n = x.len();
    let mut y = dev.zeros((n,)).unwrap();
    let mut z = dev.zeros((n,)).unwrap();
    kernels::to_half_and_back(&dev.tensor_from(&x, (n,)).unwrap(), &mut y, &mut z).unwrap();
    let (y, z) = (y.to_vec().unwrap(), z.to_vec().unwrap());
    for (i, v) in x.iter().enumerate() {
        let h = half::f16::from_f32(*v).to_f32();
        let b = half::bf16::from_f32(*v).to_f32();
        assert!(
            y[i].to_bits() == h.to_bits() || (h.is_nan() && y[i].is_nan()),
            "half({v}) = {}, want {h}",
            y[i]
        );
        assert!(
            z[i].to_bits() == b.to_bits() || (b.is_nan() && z[i].is_nan()),
            "bf16({v}) = {}, want {b}",
            z[i]
        );
    }
}
