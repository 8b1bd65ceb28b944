//! The mask/repeat ("high-dimensional") forms of the vector instructions in
//! the host emulation (`pypto_emu/mask.h`), through the kernels of
//! `tests/kernels/api_mask.yaml`, against a plain-Rust model of repeats,
//! strides and masks: bitwise and continuous masks, normal and counter mode,
//! repeat 0 and 255, block and repeat strides of 0 and more than one block,
//! masked-off elements left alone, Compare + Select, Cast round modes, and
//! the errors for broken limits.

use half::f16;
use pypto_rt::{Const, Device, Error};
use pypto_tests::mask_model::{Plan, at};
use pypto_tests::{data, kernel_message, kernels};

const SENTINEL: f32 = -7.0;

/// Runs `plan` on `out` as the hardware does: per repeat, every active
/// element is computed, then stored; the others keep their values.
fn run<T: Copy>(out: &mut [T], plan: &Plan, dst: (usize, usize), f: impl Fn(usize, usize) -> T) {
    let elem = std::mem::size_of::<T>();
    for r in 0..plan.repeats {
        let vals: Vec<Option<T>> = (0..plan.per_repeat)
            .map(|e| plan.active(r, e).then(|| f(r, e)))
            .collect();
        for (e, v) in vals.into_iter().enumerate() {
            if let Some(v) = v {
                out[at(elem, dst, r, e)] = v;
            }
        }
    }
}

const DENSE: (usize, usize) = (1, 8);

struct F32Run {
    out: Vec<f32>,
    bits: Vec<u8>,
}

fn inputs() -> (Vec<f32>, Vec<f32>) {
    (data(2048, 11), data(2048, 12))
}

fn mask_f32(which: i32) -> Result<F32Run, Error> {
    let dev = Device::host();
    let (x, y) = inputs();
    let x = dev.tensor_from(&x, (Const::<2048>,)).unwrap();
    let y = dev.tensor_from(&y, (Const::<2048>,)).unwrap();
    let mut out = dev
        .tensor_from(&[SENTINEL; 2048], (Const::<2048>,))
        .unwrap();
    let mut bits = dev.tensor_from(&[0xA5u8; 32], (Const::<32>,)).unwrap();
    kernels::mask_f32(&x, &y, which, &mut out, &mut bits)?;
    Ok(F32Run {
        out: out.to_vec().unwrap(),
        bits: bits.to_vec().unwrap(),
    })
}

/// Runs float scenario `which` and checks `out` against the model; `bits`
/// must be untouched.
fn check_f32(which: i32, plan: Plan, dst: (usize, usize), f: impl Fn(usize, usize) -> f32) {
    let got = mask_f32(which).unwrap();
    let mut want = vec![SENTINEL; 2048];
    run(&mut want, &plan, dst, f);
    for (i, (g, w)) in got.out.iter().zip(&want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits() || (g - w).abs() <= 1e-6 * w.abs(),
            "scenario {which}: out[{i}] = {g}, want {w}"
        );
    }
    assert_eq!(
        got.bits,
        vec![0xA5u8; 32],
        "scenario {which}: bits untouched"
    );
}

#[test]
fn bitwise_and_continuous_masks_leave_masked_off_elements_alone() {
    let (x, y) = inputs();
    let d = |r, e| at(4, DENSE, r, e);
    // Add, bitwise mask over three repeats.
    let plan = Plan::bits(4, 3, [0xF0F0_F0F0_0000_FFFF, 0]);
    check_f32(0, plan, DENSE, |r, e| x[d(r, e)] + y[d(r, e)]);
    // Sub, the first 20 elements of two repeats.
    check_f32(1, Plan::first(4, 2, 20), DENSE, |r, e| {
        x[d(r, e)] - y[d(r, e)]
    });
    // Div with the mask set by SetVectorMask (isSetMask = false).
    let plan = Plan::bits(4, 2, [0x00FF_00FF_00FF_00FF, 0]);
    check_f32(8, plan, DENSE, |r, e| x[d(r, e)] / y[d(r, e)]);
    // Exp, bitwise, src read every other block.
    let plan = Plan::bits(4, 2, [0xAAAA_AAAA_AAAA_AAAA, 0]);
    check_f32(9, plan, DENSE, |r, e| x[at(4, (2, 16), r, e)].exp());
    // LeakyRelu, continuous.
    check_f32(10, Plan::first(4, 2, 64), DENSE, |r, e| {
        let v = x[d(r, e)];
        if v >= 0.0 { v } else { v * 0.25 }
    });
    // Duplicate: 10 elements per repeat, every other block, repeats 16 apart.
    check_f32(11, Plan::first(4, 3, 10), (2, 16), |_, _| 3.5);
    // Copy (UB -> UB): 40 elements per repeat, dst blocks spread out.
    check_f32(13, Plan::first(4, 2, 40), (2, 16), |r, e| {
        x[at(4, DENSE, r, e)]
    });
}

#[test]
fn counter_mode_counts_elements_across_repeats() {
    let (x, y) = inputs();
    let d = |r, e| at(4, DENSE, r, e);
    // 150 floats: two full repeats and 22 elements of a third, from
    // SetVectorMask (Mul<float, false>) and from the instruction's mask (Adds).
    check_f32(2, Plan::counter(4, 150), DENSE, |r, e| {
        x[d(r, e)] * y[d(r, e)]
    });
    check_f32(3, Plan::counter(4, 150), DENSE, |r, e| x[d(r, e)] + 2.0);
}

#[test]
fn repeat_counts_and_strides() {
    let (x, y) = inputs();
    // Repeat 0 does nothing.
    check_f32(4, Plan::first(4, 0, 64), DENSE, |_, _| unreachable!());
    // 255 repeats of the same block range (repeat stride 0), in place: +255.
    let got = mask_f32(5).unwrap().out;
    let mut want = vec![SENTINEL; 2048];
    want[..64].fill(SENTINEL + 255.0);
    assert_eq!(got, want);
    // Block stride 2, repeat stride 16 on every operand.
    check_f32(6, Plan::first(4, 2, 64), (2, 16), |r, e| {
        x[at(4, (2, 16), r, e)].max(y[at(4, (2, 16), r, e)])
    });
    // src1 with block stride 0 (its first block over and over) and repeat
    // stride 1; dst repeats 9 blocks apart.
    check_f32(7, Plan::first(4, 3, 48), (1, 9), |r, e| {
        x[at(4, DENSE, r, e)].min(y[at(4, (0, 1), r, e)])
    });
    // Brcb: block j of repeat r holds x[8 r + j].
    let got = mask_f32(12).unwrap().out;
    let mut want = vec![SENTINEL; 2048];
    for (i, w) in want[..128].iter_mut().enumerate() {
        *w = x[i / 8];
    }
    assert_eq!(got, want);
}

/// The dense forms the emulation runs as ranges (every element active, dst
/// and src0 dense, src1 dense or one re-read block, dst either an operand
/// or apart from it) give what the per-repeat model gives, and an overlap
/// that is neither still runs repeat by repeat.
#[test]
fn dense_forms_match_the_per_repeat_model() {
    let (x, y) = inputs();
    check_f32(17, Plan::first(4, 32, 64), DENSE, |r, e| {
        x[at(4, DENSE, r, e)] - y[at(4, DENSE, r, e) % 8]
    });
    let got = mask_f32(18).unwrap().out;
    for (i, g) in got.iter().enumerate() {
        let want = x[i] / y[i];
        assert!(
            (g - want).abs() <= 1e-6 * want.abs(),
            "out[{i}] = {g}, want {want}"
        );
    }
    // dst = src0 + 8 elements: each repeat reads its 64 values, then writes.
    let mut model = x.clone();
    for r in 0..4 {
        let vals: Vec<f32> = (0..64).map(|e| model[r * 64 + e] + y[r * 64 + e]).collect();
        model[8 + r * 64..8 + r * 64 + 64].copy_from_slice(&vals);
    }
    assert_eq!(mask_f32(19).unwrap().out, model);
}

fn bit(bits: &[u8], i: usize) -> bool {
    (bits[i / 8] >> (i % 8)) & 1 == 1
}

#[test]
fn compare_then_select() {
    let (x, y) = inputs();
    // Compare (repeat form, 4 repeats) into bits, Select mode 2: min(x, y).
    let got = mask_f32(14).unwrap();
    for i in 0..256 {
        assert_eq!(bit(&got.bits, i), x[i] < y[i], "bit {i}");
        assert_eq!(
            got.out[i],
            if x[i] < y[i] { x[i] } else { y[i] },
            "out[{i}]"
        );
    }
    assert!(got.out[256..].iter().all(|v| *v == SENTINEL));
    // Compares and Select mode 1 (tensor and scalar), count forms: relu.
    let got = mask_f32(15).unwrap();
    for (i, v) in x.iter().enumerate().take(256) {
        assert_eq!(bit(&got.bits, i), *v > 0.0, "bit {i}");
        assert_eq!(got.out[i], v.max(0.0), "out[{i}]");
    }
    assert!(got.out[256..].iter().all(|v| *v == SENTINEL));
    // Select mode 0: every repeat selects by the first 64 bits.
    let got = mask_f32(16).unwrap();
    for r in 0..2 {
        for e in 0..64 {
            let i = r * 64 + e;
            let want = if x[e] >= y[e] { x[i] } else { y[i] };
            assert_eq!(got.out[i], want, "out[{i}]");
        }
    }
    assert!(got.out[128..].iter().all(|v| *v == SENTINEL));
}

/// The inputs a and b and the output of an int16 scenario.
type I16Run = (Vec<i16>, Vec<i16>, Vec<i16>);

fn mask_i16(which: i32) -> Result<I16Run, Error> {
    let dev = Device::host();
    let a: Vec<i16> = (0..256)
        .map(|i| (i as i16).wrapping_mul(2741) ^ 0x5a5a)
        .collect();
    let b: Vec<i16> = (0..256)
        .map(|i| (i as i16).wrapping_mul(-1237) ^ 0x3c3c)
        .collect();
    let at_ = dev.tensor_from(&a, (Const::<256>,)).unwrap();
    let bt = dev.tensor_from(&b, (Const::<256>,)).unwrap();
    let mut out = dev.tensor_from(&[-7i16; 256], (Const::<256>,)).unwrap();
    kernels::mask_i16(&at_, &bt, which, &mut out)?;
    Ok((a, b, out.to_vec().unwrap()))
}

#[test]
fn logical_and_shift_instructions() {
    let check = |which: i32, plan: Plan, f: &dyn Fn(i16, i16) -> i16| {
        let (a, b, got) = mask_i16(which).unwrap();
        let mut want = vec![-7i16; 256];
        run(&mut want, &plan, DENSE, |r, e| {
            let i = at(2, DENSE, r, e);
            f(a[i], b[i])
        });
        assert_eq!(got, want, "scenario {which}");
    };
    check(0, Plan::bits(2, 2, [u64::MAX, 0xF]), &|a, b| a & b);
    check(1, Plan::first(2, 2, 100), &|a, b| a | b);
    check(2, Plan::first(2, 2, 128).count(200), &|a, _| !a);
    check(3, Plan::first(2, 2, 128), &|a, _| ((a as u16) << 3) as i16);
    check(4, Plan::first(2, 2, 128), &|a, _| (a >> 2) + ((a >> 1) & 1));
    check(5, Plan::first(2, 2, 128), &|a, _| {
        if a < 0 { -1 } else { 0 }
    });
    check(6, Plan::first(2, 2, 128), &|a, b| a & b);
    check(7, Plan::first(2, 2, 128), &|a, b| a | b);
    let plan = Plan::bits(2, 2, [0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210]);
    check(8, plan, &|a, _| !a);
}

fn f16_neighbour(h: f16, up: bool) -> f16 {
    let f = h.to_f32();
    if f == 0.0 {
        return f16::from_bits(if up { 0x0001 } else { 0x8001 });
    }
    let away = (f > 0.0) == up;
    f16::from_bits(if away {
        h.to_bits() + 1
    } else {
        h.to_bits() - 1
    })
}

/// float -> half with RoundMode `mode` (0 NONE .. 6 ODD), as float.
fn to_f16(x: f32, mode: i32) -> f32 {
    let n = f16::from_f32(x);
    let nf = n.to_f32();
    if nf == x || nf.is_infinite() || mode <= 1 {
        return nf;
    }
    let (lo, hi) = if nf < x {
        (n, f16_neighbour(n, true))
    } else {
        (f16_neighbour(n, false), n)
    };
    let pick = match mode {
        2 => lo,
        3 => hi,
        4 => {
            let (dl, dh) = (x - lo.to_f32(), hi.to_f32() - x);
            if dl == dh {
                if x > 0.0 { hi } else { lo }
            } else {
                n
            }
        }
        5 => {
            if x > 0.0 {
                lo
            } else {
                hi
            }
        }
        6 => {
            if lo.to_bits() & 1 == 1 {
                lo
            } else {
                hi
            }
        }
        _ => unreachable!(),
    };
    pick.to_f32()
}

fn to_i32(x: f32, mode: i32) -> i32 {
    (match mode {
        1 => x.round_ties_even(),
        2 => x.floor(),
        3 => x.ceil(),
        4 => x.round(),
        5 => x.trunc(),
        _ => unreachable!(),
    }) as i32
}

#[test]
fn cast_round_modes_to_half_and_int32() {
    let dev = Device::host();
    let ulp = 2f32.powi(-10);
    let mut x: Vec<f32> = vec![
        1.0 + ulp / 2.0,
        1.0 + 3.0 * ulp / 2.0,
        -(1.0 + ulp / 2.0),
        -(1.0 + 3.0 * ulp / 2.0),
        1.0 + ulp / 4.0,
        -(1.0 + ulp / 4.0),
        2.5,
        -2.5,
        0.5,
        -0.5,
        1.5,
        3.0,
        0.0,
        1e-3,
        -1e-3,
        1000.7,
    ];
    x.extend(data(256 - x.len(), 5).iter().map(|v| v * 100.0 + 1.0 / 3.0));
    let xt = dev.tensor_from(&x, (Const::<256>,)).unwrap();
    for mode in 0..=6 {
        let mut h = dev.zeros((Const::<256>,)).unwrap();
        let mut i = dev.tensor_from(&[-7i32; 256], (Const::<256>,)).unwrap();
        kernels::mask_cast(&xt, mode, &mut h, &mut i).unwrap();
        let (h, i) = (h.to_vec().unwrap(), i.to_vec().unwrap());
        for (k, v) in x.iter().enumerate() {
            assert_eq!(h[k], to_f16(*v, mode), "mode {mode}: half({v})");
            let want = if mode == 0 || mode == 6 {
                -7
            } else {
                to_i32(*v, mode)
            };
            assert_eq!(i[k], want, "mode {mode}: int32({v})");
        }
    }
}

#[test]
fn broken_limits_are_errors_naming_the_rule() {
    let cases = [
        (
            100,
            "Add: repeatTime 256 exceeds 255 (the hardware's 8-bit repeat count)",
        ),
        (
            101,
            "Add: mask 65 exceeds the 64 elements of one repeat of 32-bit elements (normal mode \
             takes a mask of 0..64)",
        ),
        (
            102,
            "Add: repeat 39 reaches byte 10240 of dst, which has 8448 bytes (block stride 1, repeat \
             stride 8, in 32-byte blocks); accesses must stay inside the operands",
        ),
        (
            103,
            "Compare: count 32 elements are 128 bytes, not a multiple of 256 (the instruction \
             compares whole 256-byte repeats)",
        ),
        (
            104,
            "Add: dst's block stride is 0; the destination block stride must be at least 1 (0 is \
             undefined on the hardware)",
        ),
        (
            105,
            "SetVectorMask: maskHigh is 0xabcdef; a repeat of 32-bit elements has 64 of them, so \
             maskHigh must be 0",
        ),
    ];
    for (which, want) in cases {
        let err = mask_f32(which).err().expect("an error");
        assert_eq!(kernel_message(err), want, "scenario {which}");
    }
    let err = mask_i16(100).expect_err("an error");
    assert_eq!(
        kernel_message(err),
        "ShiftLeft: shift distance 17 is outside 0..16 for 16-bit elements"
    );
}
