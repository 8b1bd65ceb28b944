//! The tensor and resource-management side of the host emulation
//! (`pypto_emu/memory.h`, `types.h`, `vector.h`, `mask.h`), through the
//! kernels of `tests/kernels/api_tensor.yaml`, against plain-Rust models:
//! in-place (depth 0) queues, TQueBind VECIN -> VECOUT with user tags,
//! ReinterpretCast round trips, TBufPool sharing, TPipe::Reset, int4b_t
//! tensors cast to and from half (count and mask forms), the Cast pairs of
//! the Atlas A2/A3 table, and the errors for broken limits.

use half::f16;
use pypto_rt::{Const, Device, Error};
use pypto_tests::{data, kernel_message, kernels};

// ---- queues and buffers ------------------------------------------------------

fn queue(which: i32) -> Result<(Vec<f32>, Vec<f32>), Error> {
    let dev = Device::host();
    let x = data(1024, 21);
    let xt = dev.tensor_from(&x, (Const::<1024>,)).unwrap();
    let mut out = dev.tensor_from(&[-9.0f32; 1024], (Const::<1024>,)).unwrap();
    kernels::tensor_queue(&xt, which, &mut out)?;
    Ok((x, out.to_vec().unwrap()))
}

#[test]
fn queues_pools_and_reinterpret_cast_compute_every_element() {
    type Model = fn(usize, f32) -> f32;
    let models: [(i32, Model); 5] = [
        (0, |_, v| (v + 1.0) * 2.0),
        (1, |_, v| v * 3.0),
        (2, |_, v| -v),
        (3, |i, v| if i < 512 { v + 1.0 } else { v * 2.0 }),
        (4, |_, v| v - 5.0),
    ];
    for (which, model) in models {
        let (x, out) = queue(which).unwrap();
        for (i, (&v, &g)) in x.iter().zip(&out).enumerate() {
            let want = model(i, v);
            assert_eq!(
                g.to_bits(),
                want.to_bits(),
                "scenario {which}: out[{i}] = {g}, want {want} (x = {v})"
            );
        }
    }
}

#[test]
fn queue_and_tensor_misuse_are_errors_naming_the_rule() {
    let cases = [
        (
            100,
            "TQue<VECIN>::DeQue: the tensor is not in the queue; EnQue it first",
        ),
        (
            101,
            "TQue<VECIN>::AllocTensor: the queue's buffers were released by TPipe::Reset or Destroy \
             (or belong to an earlier TPipe); call InitBuffer again",
        ),
        (
            102,
            "LocalTensor::GetShapeInfo: the tensor has no shape information; SetShapeInfo first (a \
             shape has no default)",
        ),
        (
            103,
            "TBufPool::InitBuffer: 2048 bytes exceed the 1024 bytes left in the pool (1024 bytes)",
        ),
        (
            104,
            "LocalTensor::SetSize: 65536 elements from byte 0 end at byte 262144, past the 196608 \
             bytes of the Unified Buffer",
        ),
        (
            105,
            "TQue<VECIN>::DeQue<VECOUT, GM>: the tensor at the head was enqueued as GM -> VECIN",
        ),
    ];
    for (which, want) in cases {
        let err = queue(which).expect_err("an error");
        assert_eq!(kernel_message(err), want, "scenario {which}");
    }
}

// ---- int4b_t -----------------------------------------------------------------

fn nibble(bytes: &[u8], i: usize) -> i32 {
    let n = if i.is_multiple_of(2) {
        bytes[i / 2] & 0xf
    } else {
        bytes[i / 2] >> 4
    };
    ((n << 4) as i8 >> 4) as i32
}

fn set_nibble(bytes: &mut [u8], i: usize, v: i32) {
    let n = (v as u8) & 0xf;
    let b = &mut bytes[i / 2];
    *b = if i.is_multiple_of(2) {
        (*b & 0xf0) | n
    } else {
        (*b & 0x0f) | (n << 4)
    };
}

/// Rounds to an integer with RoundMode `mode` (0 NONE and 1 RINT: ties to
/// even; 4 ROUND: ties away from zero).
fn round_mode(x: f64, mode: i32) -> f64 {
    match mode {
        0 | 1 => x.round_ties_even(),
        2 => x.floor(),
        3 => x.ceil(),
        4 => x.round(),
        5 => x.trunc(),
        _ => unreachable!(),
    }
}

fn saturate(x: f64, lo: f64, hi: f64) -> f64 {
    x.clamp(lo, hi)
}

fn int4(which: i32, mode: i32, packed: &[u8]) -> Result<(Vec<f16>, Vec<u8>), Error> {
    let dev = Device::host();
    let p = dev.tensor_from(packed, (Const::<64>,)).unwrap();
    let mut h = dev
        .tensor_from(&[f16::from_f32(99.0); 128], (Const::<128>,))
        .unwrap();
    let mut back = dev.tensor_from(&[0x77u8; 64], (Const::<64>,)).unwrap();
    kernels::tensor_int4(&p, which, mode, &mut h, &mut back)?;
    Ok((h.to_vec().unwrap(), back.to_vec().unwrap()))
}

#[test]
fn int4_tensors_cast_to_half_and_back_with_every_round_mode() {
    // Every nibble value appears, in both halves of a byte.
    let packed: Vec<u8> = (0..64).map(|i| (i * 37 + 11) as u8).collect();
    for which in [0, 1] {
        for mode in 0..=5 {
            let (h, back) = int4(which, mode, &packed).unwrap();
            let mut want_back = vec![0x77u8; 64];
            for (i, hi) in h.iter().enumerate() {
                let active = which == 0 || (i % 8) < 4;
                let v = nibble(&packed, i);
                let want_h = if active { v as f32 } else { -7.0 };
                assert_eq!(
                    hi.to_f32(),
                    want_h,
                    "scenario {which} mode {mode}: h[{i}] (int4 {v})"
                );
                if active {
                    let q = saturate(round_mode(v as f64 * 1.5, mode), -8.0, 7.0) as i32;
                    set_nibble(&mut want_back, i, q);
                }
            }
            assert_eq!(
                back, want_back,
                "scenario {which} mode {mode}: packed result"
            );
        }
    }
}

#[test]
fn int4_limits_are_errors_naming_the_rule() {
    let packed = vec![0u8; 64];
    let cases = [
        (
            100,
            "Cast: count 127 is odd; with an int4b_t operand it must be even",
        ),
        (
            101,
            "Cast: mask 7 is odd; with an int4b_t operand the mask must be even",
        ),
        (
            102,
            "Cast: mask bits 0 and 1 differ; with an int4b_t operand each pair of bits (2k, 2k + 1) \
             must be alike",
        ),
        (
            103,
            "LocalTensor::operator[]: offset 3 of an int4b_t tensor is odd; two int4b_t share a \
             byte, so an offset must be even",
        ),
        (
            104,
            "Cast: half -> int4b_t takes CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, \
             CAST_TRUNC, not CAST_ODD (Atlas A2/A3)",
        ),
    ];
    for (which, want) in cases {
        let err = int4(which, 1, &packed).expect_err("an error");
        assert_eq!(kernel_message(err), want, "scenario {which}");
    }
}

// ---- the Cast table ----------------------------------------------------------

fn cast(which: i32, mode: i32, raw: &[u8]) -> Result<Vec<u8>, Error> {
    let dev = Device::host();
    let mut r = vec![0u8; 2048];
    r[..raw.len()].copy_from_slice(raw);
    let rt = dev.tensor_from(&r, (Const::<2048>,)).unwrap();
    let mut out = dev.tensor_from(&[0xEEu8; 2048], (Const::<2048>,)).unwrap();
    kernels::tensor_cast(&rt, which, mode, &mut out)?;
    Ok(out.to_vec().unwrap())
}

fn f16_next(h: f16, up: bool) -> f16 {
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

/// x (exact in f64) to half with RoundMode `mode`.
fn to_f16(x: f64, mode: i32) -> f16 {
    let n = f16::from_f64(x);
    let nf = n.to_f64();
    if nf == x || n.is_infinite() || mode <= 1 {
        return n;
    }
    let (lo, hi) = if nf < x {
        (n, f16_next(n, true))
    } else {
        (f16_next(n, false), n)
    };
    match mode {
        2 => lo,
        3 => hi,
        4 => {
            let (dl, dh) = (x - lo.to_f64(), hi.to_f64() - x);
            if dl == dh {
                if x > 0.0 { hi } else { lo }
            } else if dl < dh {
                lo
            } else {
                hi
            }
        }
        5 => {
            if x > 0.0 {
                lo
            } else {
                hi
            }
        }
        _ => unreachable!(),
    }
}

/// An integer (exact in f64 or i128) to f32 with RoundMode `mode`.
fn int_to_f32(v: i64, mode: i32) -> f32 {
    let n = v as f32; // nearest, ties to even
    let (nv, vv) = (n as f64 as i128, v as i128);
    if nv == vv || mode <= 1 {
        return n;
    }
    let (lo, hi) = if nv < vv {
        (n, n.next_up())
    } else {
        (n.next_down(), n)
    };
    let (dl, dh) = (vv - lo as f64 as i128, hi as f64 as i128 - vv);
    match mode {
        2 => lo,
        3 => hi,
        4 => {
            if dl == dh {
                if v > 0 { hi } else { lo }
            } else if dl < dh {
                lo
            } else {
                hi
            }
        }
        5 => {
            if v > 0 {
                lo
            } else {
                hi
            }
        }
        _ => unreachable!(),
    }
}

/// Runs scenario `which` on `src` (raw source bytes) and compares the first
/// `n * dst_size` result bytes with `want`, the rest with the sentinel.
fn check_cast(which: i32, mode: i32, src: &[u8], want: &[u8]) {
    let out = cast(which, mode, src).unwrap();
    for (i, (&g, &w)) in out.iter().zip(want).enumerate() {
        assert_eq!(g, w, "scenario {which} mode {mode}: result byte {i}");
    }
    assert!(
        out[want.len()..].iter().all(|&b| b == 0xEE),
        "scenario {which}: bytes past the result untouched"
    );
}

#[test]
fn cast_pairs_of_the_a2_a3_table() {
    let floats: Vec<f32> = data(256, 31)
        .iter()
        .enumerate()
        .map(|(i, v)| v * 300.0 + (i % 4) as f32 * 0.25)
        .collect();
    let halves: Vec<f16> = floats.iter().map(|&v| f16::from_f32(v * 0.5)).collect();
    let i16s: Vec<i16> = (0..256)
        .map(|i| ((i * 2654435761u64 as i64) % 65536 - 32768) as i16)
        .collect();
    let i32s: Vec<i32> = (0..256)
        .map(|i: i32| (i - 128).wrapping_mul(16_777_259) + i * 3)
        .collect();
    let small_i32s: Vec<i32> = (0..256).map(|i: i32| (i - 128) * 467).collect();
    let i64s: Vec<i64> = (0..256)
        .map(|i| (i as i64 - 128).wrapping_mul(72_057_594_037_927_941) + i as i64)
        .collect();
    let bytes_of_f32 = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let bytes_of_f16 = |v: &[f16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let bytes_of_i16 = |v: &[i16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let bytes_of_i32 = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let bytes_of_i64 = |v: &[i64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let modes_six = [0, 1, 2, 3, 4, 5];
    let modes_five = [1, 2, 3, 4, 5];
    for mode in modes_six {
        // int16_t -> half
        let want: Vec<f16> = i16s.iter().map(|&v| to_f16(v as f64, mode)).collect();
        check_cast(0, mode, &bytes_of_i16(&i16s), &bytes_of_f16(&want));
        // half -> int8_t / uint8_t (saturating; negatives to 0)
        let want: Vec<u8> = halves
            .iter()
            .map(|h| saturate(round_mode(h.to_f64(), mode), -128.0, 127.0) as i8 as u8)
            .collect();
        check_cast(1, mode, &bytes_of_f16(&halves), &want);
        let want: Vec<u8> = halves
            .iter()
            .map(|h| saturate(round_mode(h.to_f64(), mode), 0.0, 255.0) as u8)
            .collect();
        check_cast(2, mode, &bytes_of_f16(&halves), &want);
        // int32_t -> float
        let want: Vec<f32> = i32s.iter().map(|&v| int_to_f32(v as i64, mode)).collect();
        check_cast(5, mode, &bytes_of_i32(&i32s), &bytes_of_f32(&want));
        // half -> int8_t, mask form
        let want: Vec<u8> = halves
            .iter()
            .map(|h| saturate(round_mode(h.to_f64(), mode), -128.0, 127.0) as i8 as u8)
            .collect();
        check_cast(16, mode, &bytes_of_f16(&halves), &want);
    }
    for mode in modes_five {
        let want: Vec<i16> = floats
            .iter()
            .map(|&v| saturate(round_mode(v as f64 * 200.0, mode), -32768.0, 32767.0) as i16)
            .collect();
        let scaled: Vec<f32> = floats.iter().map(|&v| v * 200.0).collect();
        check_cast(3, mode, &bytes_of_f32(&scaled), &bytes_of_i16(&want));
        let want: Vec<f32> = floats
            .iter()
            .map(|&v| round_mode(v as f64, mode) as f32)
            .collect();
        check_cast(4, mode, &bytes_of_f32(&floats), &bytes_of_f32(&want));
        let want: Vec<f32> = i64s.iter().map(|&v| int_to_f32(v, mode)).collect();
        check_cast(6, mode, &bytes_of_i64(&i64s), &bytes_of_f32(&want));
        let big: Vec<f32> = floats
            .iter()
            .enumerate()
            .map(|(i, &v)| if i % 2 == 0 { v * 1e12 } else { v })
            .collect();
        let want: Vec<i64> = big
            .iter()
            .map(|&v| round_mode(v as f64, mode) as i64)
            .collect();

        check_cast(
            14,
            mode,
            &bytes_of_f32(&big),
            &want
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect::<Vec<u8>>(),
        );
        let want: Vec<i16> = halves
            .iter()
            .map(|h| saturate(round_mode(h.to_f64(), mode), -32768.0, 32767.0) as i16)
            .collect();
        check_cast(15, mode, &bytes_of_f16(&halves), &bytes_of_i16(&want));
    }
    // Exact or saturating conversions (CAST_NONE).
    let want: Vec<i32> = i64s
        .iter()
        .map(|&v| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
        .collect();
    check_cast(7, 0, &bytes_of_i64(&i64s), &bytes_of_i32(&want));
    let want: Vec<i16> = i32s
        .iter()
        .map(|&v| v.clamp(-32768, 32767) as i16)
        .collect();
    check_cast(8, 0, &bytes_of_i32(&i32s), &bytes_of_i16(&want));
    let want: Vec<f16> = small_i32s
        .iter()
        .map(|&v| f16::from_f64(v as f64 * 0.5))
        .collect();
    check_cast(9, 0, &bytes_of_i32(&small_i32s), &bytes_of_f16(&want));
    let i8s: Vec<u8> = (0..256).map(|i| (i * 7 + 3) as u8).collect();
    let want: Vec<f16> = i8s.iter().map(|&b| f16::from_f32(b as i8 as f32)).collect();
    check_cast(10, 0, &i8s, &bytes_of_f16(&want));
    let want: Vec<f16> = i8s.iter().map(|&b| f16::from_f32(b as f32)).collect();
    check_cast(11, 0, &i8s, &bytes_of_f16(&want));
    let want: Vec<f32> = i16s.iter().map(|&v| v as f32).collect();
    check_cast(12, 0, &bytes_of_i16(&i16s), &bytes_of_f32(&want));
    let want: Vec<i64> = i32s.iter().map(|&v| v as i64).collect();
    check_cast(13, 0, &bytes_of_i32(&i32s), &bytes_of_i64(&want));
}

#[test]
fn cast_limits_are_errors_naming_the_rule() {
    let err = cast(100, 1, &[]).expect_err("an error");
    assert_eq!(
        kernel_message(err),
        "Cast: float -> int16_t takes CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, not \
         CAST_NONE (Atlas A2/A3)"
    );
    let err = cast(101, 0, &[]).expect_err("an error");
    assert_eq!(
        kernel_message(err),
        "Cast: int32_t -> half scales by the DEQSCALE register; call SetDeqScale(half) first"
    );
}
