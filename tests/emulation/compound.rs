//! The compound vector instructions of the host emulation
//! (`pypto_emu/compound.h`), through the kernel of
//! `tests/kernels/api_compound.yaml`, against a plain-Rust model: every
//! byte of the output is compared exactly (half through the `half` crate),
//! masked-off and untouched elements included, for the count forms and the
//! mask/repeat forms (bitwise, continuous, counter mode, strides, mixed
//! element widths), and the errors for broken limits.

use half::f16;
use pypto_rt::{Const, Device, Error};
use pypto_tests::mask_model::{Plan, at};
use pypto_tests::{data, kernel_message, kernels};

/// An element type of the scenarios, read from and written to bytes.
trait El: Copy {
    const SIZE: usize;
    fn get(b: &[u8], i: usize) -> Self;
    fn put(self, b: &mut [u8], i: usize);
}

macro_rules! el {
    ($t:ty, $n:expr) => {
        impl El for $t {
            const SIZE: usize = $n;
            fn get(b: &[u8], i: usize) -> Self {
                <$t>::from_le_bytes(b[i * $n..(i + 1) * $n].try_into().unwrap())
            }
            fn put(self, b: &mut [u8], i: usize) {
                b[i * $n..(i + 1) * $n].copy_from_slice(&self.to_le_bytes());
            }
        }
    };
}
el!(f16, 2);
el!(f32, 4);
el!(i16, 2);
el!(i32, 4);
el!(i8, 1);
el!(u8, 1);

fn bytes<T: El>(v: &[T]) -> Vec<u8> {
    let mut b = vec![0u8; v.len() * T::SIZE];
    for (i, x) in v.iter().enumerate() {
        x.put(&mut b, i);
    }
    b
}

fn halves(seed: u64, scale: f32) -> Vec<u8> {
    let v: Vec<f16> = data(512, seed)
        .iter()
        .map(|x| f16::from_f32(x * scale))
        .collect();
    bytes(&v)
}
fn floats(seed: u64) -> Vec<u8> {
    bytes(&data(256, seed))
}
fn shorts(seed: u64) -> Vec<u8> {
    let v: Vec<i16> = data(512, seed)
        .iter()
        .map(|x| (x * 9000.0) as i16)
        .collect();
    bytes(&v)
}
fn ints(seed: u64) -> Vec<u8> {
    let v: Vec<i32> = data(256, seed)
        .iter()
        .map(|x| (x * 5000.0) as i32)
        .collect();
    bytes(&v)
}
/// The initial output: arbitrary bytes, valid as any type (no NaN halves
/// or floats: the exponent bits are never all ones).
fn initial() -> Vec<u8> {
    (0..1024)
        .map(|i| ((i * 37 + 11) % 256) as u8 & 0x3F)
        .collect()
}

fn compound(a: &[u8], b: &[u8], which: i32) -> Result<Vec<u8>, Error> {
    let dev = Device::host();
    let a = dev.tensor_from(a, (Const::<1024>,)).unwrap();
    let b = dev.tensor_from(b, (Const::<1024>,)).unwrap();
    let mut out = dev.tensor_from(&initial(), (Const::<1024>,)).unwrap();
    kernels::compound(&a, &b, which, &mut out)?;
    Ok(out.to_vec().unwrap())
}

const DENSE: (usize, usize) = (1, 8);

/// The expected output of a mask form: `f(r, e, old dst)` for the active
/// elements, the initial bytes elsewhere.
fn masked<D: El>(plan: &Plan, dst: (usize, usize), f: impl Fn(usize, usize, D) -> D) -> Vec<u8> {
    let mut out = initial();
    for r in 0..plan.repeats {
        let vals: Vec<Option<D>> = (0..plan.per_repeat)
            .map(|e| {
                plan.active(r, e)
                    .then(|| f(r, e, D::get(&out, at(D::SIZE, dst, r, e))))
            })
            .collect();
        for (e, v) in vals.into_iter().enumerate() {
            if let Some(v) = v {
                v.put(&mut out, at(D::SIZE, dst, r, e));
            }
        }
    }
    out
}

/// The expected output of a count form.
fn counted<D: El>(n: usize, f: impl Fn(usize, D) -> D) -> Vec<u8> {
    let mut out = initial();
    for i in 0..n {
        f(i, D::get(&out, i)).put(&mut out, i);
    }
    out
}

fn check(which: i32, a: &[u8], b: &[u8], want: Vec<u8>) {
    let got = compound(a, b, which).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g, w,
            "scenario {which}: byte {i} is {g:#04x}, want {w:#04x}"
        );
    }
}

fn relu_h(v: f16) -> f16 {
    if v.to_f32() > 0.0 { v } else { f16::ZERO }
}
fn relu_f(v: f32) -> f32 {
    if v > 0.0 { v } else { 0.0 }
}
/// The half nearest to `x` (ties to even), found by comparing neighbours,
/// since `f16::from_f64` may round through f32 (twice).
fn f16_nearest(x: f64) -> f16 {
    if x.abs() >= 65520.0 {
        return if x > 0.0 {
            f16::INFINITY
        } else {
            f16::NEG_INFINITY
        };
    }
    let c = f16::from_f64(x);
    let mut best = c;
    let mut best_d = (f64::from(c) - x).abs();
    for bits in [c.to_bits().wrapping_sub(1), c.to_bits().wrapping_add(1)] {
        let v = f16::from_bits(bits);
        if !v.is_finite() {
            continue;
        }
        let d = (f64::from(v) - x).abs();
        if d < best_d || (d == best_d && bits & 1 == 0) {
            best = v;
            best_d = d;
        }
    }
    best
}
/// a * b + c rounded once to half.
fn fma_h(a: f16, b: f16, c: f16) -> f16 {
    f16_nearest(f64::from(a).mul_add(f64::from(b), f64::from(c)))
}
/// The CAST_NONE/CAST_RINT rule to a saturated integer.
fn to_int(v: f32, lo: f32, hi: f32) -> f32 {
    v.round_ties_even().clamp(lo, hi)
}

#[test]
fn add_and_sub_relu() {
    let (ha, hb) = (halves(1, 1.0), halves(2, 1.0));
    let (fa, fb) = (floats(3), floats(4));
    let (sa, sb) = (shorts(5), shorts(6));
    let h = |b: &[u8], i| f16::get(b, i);
    let f = |b: &[u8], i| f32::get(b, i);
    let s = |b: &[u8], i| i16::get(b, i);
    let want = counted::<f16>(512, |i, _| {
        relu_h(f16::from_f32(h(&ha, i).to_f32() + h(&hb, i).to_f32()))
    });
    check(0, &ha, &hb, want);
    let plan = Plan::bits(4, 4, [0x00FF_00FF_0F0F_3C3C, 0]);
    let d = |r, e| at(4, DENSE, r, e);
    let want = masked::<f32>(&plan, DENSE, |r, e, _| {
        relu_f(f(&fa, d(r, e)) + f(&fb, d(r, e)))
    });
    check(1, &fa, &fb, want);
    // int16_t wraps, src0 read every other block, repeats 16 blocks apart.
    let plan = Plan::first(2, 2, 100);
    let want = masked::<i16>(&plan, DENSE, |r, e, _| {
        s(&sa, at(2, (2, 16), r, e))
            .wrapping_add(s(&sb, at(2, DENSE, r, e)))
            .max(0)
    });
    check(2, &sa, &sb, want);
    let want = counted::<f16>(300, |i, _| {
        relu_h(f16::from_f32(h(&ha, i).to_f32() - h(&hb, i).to_f32()))
    });
    check(3, &ha, &hb, want);
    let want = counted::<i16>(512, |i, _| s(&sa, i).wrapping_sub(s(&sb, i)).max(0));
    check(4, &sa, &sb, want);
}

#[test]
fn multiply_adds_round_once() {
    let (ha, hb) = (halves(7, 1.0), halves(8, 1.0));
    let (fa, fb) = (floats(9), floats(10));
    let h = |b: &[u8], i| f16::get(b, i);
    let f = |b: &[u8], i| f32::get(b, i);
    // FusedMulAdd: dst = src0 * dst + src1.
    let plan = Plan::bits(2, 4, [0xF0F0_F0F0_0F0F_0F0F, 0x1234_5678_9ABC_DEF0]);
    let d = |r, e| at(2, DENSE, r, e);
    let want = masked::<f16>(&plan, DENSE, |r, e, o| {
        fma_h(h(&ha, d(r, e)), o, h(&hb, d(r, e)))
    });
    check(5, &ha, &hb, want);
    let want = counted::<f32>(256, |i, o| f(&fa, i).mul_add(o, f(&fb, i)));
    check(6, &fa, &fb, want);
    let want = counted::<f16>(512, |i, o| relu_h(fma_h(h(&ha, i), o, h(&hb, i))));
    check(7, &ha, &hb, want);
    // MulAddRelu in counter mode: 150 floats (mask from SetVectorMask).
    let plan = Plan::counter(4, 150);
    let d4 = |r, e| at(4, DENSE, r, e);
    let want = masked::<f32>(&plan, DENSE, |r, e, o| {
        relu_f(f(&fa, d4(r, e)).mul_add(o, f(&fb, d4(r, e))))
    });
    check(8, &fa, &fb, want);
    // MulAddDst: dst = src0 * src1 + dst.
    let want = counted::<f16>(512, |i, o| fma_h(h(&ha, i), h(&hb, i), o));
    check(9, &ha, &hb, want);
    // half sources, float dst: 64 elements a repeat, sources 4 blocks apart.
    let plan = Plan::first(4, 4, 64);
    let s = |r, e| at(2, (1, 4), r, e);
    let want = masked::<f32>(&plan, DENSE, |r, e, o| {
        h(&ha, s(r, e))
            .to_f32()
            .mul_add(h(&hb, s(r, e)).to_f32(), o)
    });
    check(10, &ha, &hb, want);
    // Axpy: dst = scalar * src + dst.
    let k = f16::from_f32(1.5);
    let want = counted::<f16>(512, |i, o| fma_h(k, h(&ha, i), o));
    check(11, &ha, &hb, want);
    let k = f16::from_f32(-0.75).to_f32();
    let want = counted::<f32>(256, |i, o| k.mul_add(h(&ha, i).to_f32(), o));
    check(12, &ha, &hb, want);
    let plan = Plan::bits(4, 4, [0x00FF_00FF_0F0F_3C3C, 0]);
    let want = masked::<f32>(&plan, DENSE, |r, e, o| 0.3f32.mul_add(f(&fa, d4(r, e)), o));
    check(13, &fa, &fb, want);
}

#[test]
fn relu_casts_mul_cast_and_dequantisation() {
    let (ha, hb) = (halves(11, 40.0), halves(12, 40.0));
    let (fa, fb) = (floats(13), floats(14));
    let (sa, sb) = (shorts(15), shorts(16));
    let (ia, ib) = (ints(17), ints(18));
    let h = |b: &[u8], i| f16::get(b, i);
    let f = |b: &[u8], i| f32::get(b, i);
    let s = |b: &[u8], i| i16::get(b, i);
    let add_h = |i: usize, j: usize, sub: bool| {
        let (x, y) = (h(&ha, i).to_f32(), h(&hb, j).to_f32());
        relu_h(f16::from_f32(if sub { x - y } else { x + y }))
    };
    let want = counted::<i8>(512, |i, _| {
        to_int(add_h(i, i, false).to_f32(), -128.0, 127.0) as i8
    });
    check(14, &ha, &hb, want);
    // float -> half: 64 elements a repeat, dst 4 blocks apart.
    let plan = Plan::first(4, 4, 64);
    let want = masked::<f16>(&plan, (1, 4), |r, e, _| {
        let j = at(4, DENSE, r, e);
        f16::from_f32(relu_f(f(&fa, j) + f(&fb, j)))
    });
    check(15, &fa, &fb, want);
    let want = counted::<i8>(512, |i, _| {
        s(&sa, i).wrapping_add(s(&sb, i)).clamp(0, 127) as i8
    });
    check(16, &sa, &sb, want);
    let plan = Plan::bits(2, 4, [0xF0F0_F0F0_0F0F_0F0F, 0x1234_5678_9ABC_DEF0]);
    let want = masked::<i8>(&plan, (1, 4), |r, e, _| {
        let j = at(2, DENSE, r, e);
        to_int(add_h(j, j, true).to_f32(), -128.0, 127.0) as i8
    });
    check(17, &ha, &hb, want);
    let want = counted::<f16>(256, |i, _| f16::from_f32(relu_f(f(&fa, i) - f(&fb, i))));
    check(18, &fa, &fb, want);
    // MulCast: the product rounded to half, then to the integer.
    let mul = |j: usize| f16::from_f32(h(&ha, j).to_f32() * h(&hb, j).to_f32()).to_f32();
    let want = counted::<i8>(512, |i, _| to_int(mul(i), -128.0, 127.0) as i8);
    check(19, &ha, &hb, want);
    let plan = Plan::first(2, 4, 128);
    let want = masked::<u8>(&plan, (1, 4), |r, e, _| {
        to_int(mul(at(2, DENSE, r, e)), 0.0, 255.0) as u8
    });
    check(20, &ha, &hb, want);
    // AddDeqRelu: the int32_t sum times the half scale, to half, Relu.
    let i = |b: &[u8], j| i32::get(b, j);
    let deq = |j: usize, scale: f32| {
        let sum = i(&ia, j).wrapping_add(i(&ib, j));
        relu_h(f16::from_f32(
            (f64::from(sum) * f64::from(f16::from_f32(scale).to_f32())) as f32,
        ))
    };
    let want = counted::<f16>(256, |j, _| deq(j, 0.01));
    check(21, &ia, &ib, want);
    let plan = Plan::first(4, 4, 40);
    let want = masked::<f16>(&plan, (1, 4), |r, e, _| deq(at(4, DENSE, r, e), -0.37));
    check(22, &ia, &ib, want);
}

#[test]
fn broken_limits_are_errors_naming_the_rule() {
    let (ha, hb) = (halves(1, 1.0), halves(2, 1.0));
    let cases = [
        (
            100,
            "AddDeqRelu: the int32_t sum is scaled by the DEQSCALE register; call SetDeqScale(half) first",
        ),
        (
            101,
            "Axpy: dst and src overlap; with half sources and a float destination the operands must not overlap",
        ),
        (
            102,
            "Axpy: mask 128 exceeds the 64 elements of one repeat of 32-bit elements (normal mode takes a \
             mask of 0..64)",
        ),
    ];
    for (which, want) in cases {
        let err = compound(&ha, &hb, which).expect_err("an error");
        assert_eq!(kernel_message(err), want, "scenario {which}");
    }
}
