//! `CastDequant` in the host emulation (`pypto_emu/compound.h`): its
//! int32_t -> half form, dst = src times the `SetDeqScale(half)` scale
//! rounded to half, in the count form and the mask forms (continuous and
//! bitwise masks counting int32_t elements, half destination repeats 4
//! blocks apart), through the kernel of `tests/kernels/api_deq.yaml`,
//! against plain Rust; every element of the output is compared, masked-off
//! ones included. The reference rounds as the emulation's `Cast` int32_t ->
//! half does (the product in f64, to f32, to half). Then the errors.

use half::f16;
use pypto_rt::{Const, Device, Error};
use pypto_tests::kernel_message;
use pypto_tests::kernels;
use pypto_tests::mask_model::{Plan, at};

fn input() -> Vec<i32> {
    let mut x: u32 = 99;
    (0..256)
        .map(|i| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            match i {
                0 => 0,
                1 => i32::MAX,
                2 => i32::MIN,
                3 => 70_000,
                _ => ((x >> 8) % 60_001) as i32 - 30_000,
            }
        })
        .collect()
}

fn initial() -> Vec<f16> {
    (0..512)
        .map(|i| f16::from_f32(i as f32 * 0.5 - 9.0))
        .collect()
}

fn run(which: i32) -> Result<Vec<f16>, Error> {
    let dev = Device::host();
    let a = dev.tensor_from(&input(), (Const::<256>,)).unwrap();
    let mut out = dev.tensor_from(&initial(), (Const::<512>,)).unwrap();
    kernels::cast_dequant(&a, which, &mut out)?;
    Ok(out.to_vec().unwrap())
}

fn deq(v: i32, scale: f32) -> f16 {
    let s = f16::from_f32(scale).to_f32();
    f16::from_f32((f64::from(v) * f64::from(s)) as f32)
}

fn check(which: i32, want: &[f16]) {
    let got = run(which).unwrap();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "scenario {which}: element {i} is {g}, want {w}"
        );
    }
}

#[test]
fn count_form() {
    let x = input();
    let mut want = initial();
    for i in 0..256 {
        want[i] = deq(x[i], 0.01);
    }
    check(0, &want);
    // i32::MAX * 0.01 is about 2.1e7: beyond half, inf.
    assert!(want[1].is_infinite() && want[2].is_infinite());
    check(3, &initial());
}

#[test]
fn mask_forms() {
    let x = input();
    for (which, plan, scale) in [
        (1, Plan::first(4, 4, 40), -0.37),
        (2, Plan::bits(4, 4, [0x00FF_00FF_0F0F_3C3C, 0]), 3.0),
    ] {
        let mut want = initial();
        for r in 0..plan.repeats {
            for e in 0..plan.per_repeat {
                if plan.active(r, e) {
                    want[at(2, (1, 4), r, e)] = deq(x[at(4, (1, 8), r, e)], scale);
                }
            }
        }
        check(which, &want);
    }
}

#[test]
fn broken_limits_are_errors() {
    let msg = kernel_message(run(100).unwrap_err());
    assert!(
        msg.contains("CastDequant: int32_t -> half scales by the DEQSCALE register; call SetDeqScale(half) first"),
        "{msg}"
    );
    let msg = kernel_message(run(101).unwrap_err());
    assert!(
        msg.contains("CastDequant: mask 65 exceeds the 64 elements of one repeat"),
        "{msg}"
    );
}
