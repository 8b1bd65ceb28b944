//! The data movement and layout instructions of the host emulation
//! (`pypto_emu/copy.h`, `pypto_emu/layout.h`), through the kernel of
//! `tests/kernels/api_data.yaml`, against plain-Rust models: strided
//! `DataCopy` with gaps on either side (GM <-> UB, UB -> UB), `DataCopyPad`
//! with padding on both sides and its fill rules (paddingValue, SetPadValue,
//! unspecified, the first-element tail), slices, Nd2Nz and Nz2Nd, Gather,
//! Gatherb, Transpose, CreateVecIndex, and the errors for broken limits.
//! Every element of the output is compared bit for bit.

use pypto_rt::{Const, Device, Error};
use pypto_tests::{data, kernel_message, kernels};

const SENTINEL: f32 = -7.0;

fn input() -> Vec<f32> {
    data(1024, 21)
}

fn run(which: i32) -> Result<Vec<f32>, Error> {
    let dev = Device::host();
    let x = dev.tensor_from(&input(), (Const::<1024>,)).unwrap();
    let mut out = dev
        .tensor_from(&[SENTINEL; 1024], (Const::<1024>,))
        .unwrap();
    kernels::copy_f32(&x, which, &mut out)?;
    Ok(out.to_vec().unwrap())
}

/// Runs scenario `which` and compares every element, bit for bit, with
/// `model` applied to an output of sentinels.
fn check(which: i32, model: impl Fn(&[f32], &mut [f32])) {
    let got = run(which).unwrap_or_else(|e| panic!("scenario {which}: {e}"));
    let x = input();
    let mut want = vec![SENTINEL; 1024];
    model(&x, &mut want);
    assert_ne!(
        want,
        vec![SENTINEL; 1024],
        "scenario {which}: the model writes something"
    );
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "scenario {which}: out[{i}] = {g}, want {w}"
        );
    }
}

/// `count` blocks of `len` elements, the source blocks `src_step` elements
/// apart from `src_at`, the destination blocks `dst_step` apart from `dst_at`.
#[allow(clippy::too_many_arguments)]
fn blocks(
    x: &[f32],
    out: &mut [f32],
    count: usize,
    len: usize,
    src_at: usize,
    src_step: usize,
    dst_at: usize,
    dst_step: usize,
) {
    for i in 0..count {
        for k in 0..len {
            out[dst_at + i * dst_step + k] = x[src_at + i * src_step + k];
        }
    }
}

/// DataCopyPad GM -> UB as documented: each block is `left` fill
/// elements, `len` data elements, `right` fill elements and a tail up to a
/// multiple of 8 floats (32 bytes); `fill` None: the tail repeats the
/// block's first element (no padding asked for).
#[allow(clippy::too_many_arguments)]
fn pad_blocks(
    x: &[f32],
    out: &mut [f32],
    count: usize,
    len: usize,
    src_at: usize,
    src_step: usize,
    dst_step_extra: usize,
    left: usize,
    right: usize,
    fill: Option<f32>,
) {
    let padded = (left + len + right).div_ceil(8) * 8;
    let dst_step = padded + dst_step_extra;
    for i in 0..count {
        let src = &x[src_at + i * src_step..][..len];
        let dst = &mut out[i * dst_step..][..padded];
        let f = fill.unwrap_or(src[0]);
        for (j, d) in dst.iter_mut().enumerate() {
            *d = if j >= left && j < left + len {
                src[j - left]
            } else {
                f
            };
        }
    }
}

#[test]
fn data_copy_params_gaps_count_32_byte_blocks_on_both_sides() {
    // GM -> UB: 3 blocks of 2 x 32 bytes, srcGap 1 block, dstGap 2 blocks.
    check(0, |x, o| blocks(x, o, 3, 16, 0, 24, 0, 32));
    // UB -> GM: srcGap 2, dstGap 1.
    check(1, |x, o| blocks(x, o, 3, 16, 0, 32, 0, 24));
    // UB -> UB: 4 blocks of one block, srcGap 3, dstGap 1.
    check(2, |x, o| blocks(x, o, 4, 8, 0, 32, 0, 16));
}

#[test]
fn data_copy_pad_pads_both_sides_and_fills_as_documented() {
    // isPad: paddingValue left, right and in the tail; srcStride 12 bytes,
    // dstStride 1 block.
    check(3, |x, o| pad_blocks(x, o, 3, 7, 0, 10, 8, 2, 1, Some(-1.5)));
    // isPad false after SetPadValue(3.25f): the SetPadValue value.
    check(4, |x, o| pad_blocks(x, o, 2, 6, 5, 7, 0, 1, 2, Some(3.25)));
    // isPad false, no SetPadValue: unspecified (every bit set on the host).
    check(5, |x, o| {
        pad_blocks(x, o, 2, 4, 0, 4, 16, 0, 3, Some(f32::from_bits(u32::MAX)))
    });
    // No padding asked for, 5 floats: the tail repeats the first element
    // even with isPad.
    check(6, |x, o| pad_blocks(x, o, 3, 5, 3, 7, 0, 0, 0, None));
    // The older DataCopyParams/DataCopyPadParams form: the pad value is the
    // low bits of paddingValue (0x40000000 = 2.0f).
    check(19, |x, o| pad_blocks(x, o, 2, 3, 0, 4, 8, 1, 0, Some(2.0)));
}

#[test]
fn data_copy_pad_to_global_moves_exactly_block_len_bytes() {
    // srcStride 1 block after each 32-byte-rounded UB block; dstStride 8
    // bytes; to out[1..].
    check(7, |x, o| blocks(x, o, 3, 5, 0, 16, 1, 7));
}

#[test]
fn slices_select_bursts_of_every_dimension() {
    // Rows 0 and 2 of a 3 x 87 source, bursts of 24 floats at 16 and 47,
    // into a dense 2 x 48 destination; then the way back.
    let pairs = |f: &mut dyn FnMut(usize, usize)| {
        for (ri, row) in [0usize, 2].into_iter().enumerate() {
            for (bi, start) in [16usize, 47].into_iter().enumerate() {
                for k in 0..24 {
                    f(48 * ri + 24 * bi + k, 87 * row + start + k);
                }
            }
        }
    };
    check(8, |x, o| pairs(&mut |d, s| o[d] = x[s]));
    check(9, |x, o| pairs(&mut |d, s| o[s] = x[d]));
}

#[test]
fn nd2nz_and_nz2nd_follow_their_strides() {
    // Nd2NzParams(2, 3, 12, 100, 20, 4, 1, 128): 8-float column blocks,
    // the tail of the second block zero-filled.
    check(10, |x, o| {
        for nd in 0..2 {
            for r in 0..3 {
                for b in 0..2 {
                    for c in 0..8 {
                        let col = b * 8 + c;
                        o[nd * 128 + (b * 4 + r) * 8 + c] = if col < 12 {
                            x[nd * 100 + r * 20 + col]
                        } else {
                            0.0
                        };
                    }
                }
            }
        }
    });
    // Nz2NdParamsFull(2, 3, 32, 1, 4, 40, 150): 16-column blocks.
    check(11, |x, o| {
        for m in 0..2 {
            for r in 0..3 {
                for c in 0..32 {
                    o[m * 150 + r * 40 + c] = x[m * 256 + (c / 16) * 64 + r * 16 + c % 16];
                }
            }
        }
    });
}

#[test]
fn gather_offsets_are_bytes_from_the_base() {
    // Count form: srcBaseAddr 64 bytes (16 floats), offsets (37 i mod 256) * 4.
    check(12, |x, o| {
        for (i, v) in o.iter_mut().take(200).enumerate() {
            *v = x[16 + (i * 37) % 256];
        }
    });
    // Mask form: the first 50 of each 64-element repeat, 3 repeats, dst
    // repeats 10 blocks (80 floats) apart.
    check(13, |x, o| {
        for r in 0..3 {
            for e in 0..50 {
                let k = r * 64 + e;
                o[r * 80 + e] = x[(k * 37) % 256];
            }
        }
    });
    // Gatherb: block k from byte offset ((5k mod 32) * 32); dst blocks 2
    // apart, repeats 20 blocks apart.
    check(14, |x, o| {
        for k in 0..16 {
            let src = (k * 5) % 32 * 8;
            let dst = (k / 8) * 20 * 8 + (k % 8) * 2 * 8;
            o[dst..dst + 8].copy_from_slice(&x[src..src + 8]);
        }
    });
}

#[test]
fn transpose_and_vec_index() {
    // 16 x 16 of the 16-bit halves of the first 128 floats (little endian).
    check(15, |x, o| {
        let h: Vec<u16> = x[..128]
            .iter()
            .flat_map(|v| {
                let b = v.to_bits();
                [b as u16, (b >> 16) as u16]
            })
            .collect();
        let mut t = [0u16; 256];
        for r in 0..16 {
            for c in 0..16 {
                t[c * 16 + r] = h[r * 16 + c];
            }
        }
        for (v, pair) in o.iter_mut().zip(t.chunks(2)) {
            *v = f32::from_bits(u32::from(pair[0]) | (u32::from(pair[1]) << 16));
        }
    });
    // n 2, c 3, h * w 8.
    check(16, |x, o| {
        for n in 0..2 {
            for c in 0..3 {
                for k in 0..8 {
                    o[(n * 8 + k) * 3 + c] = x[(n * 3 + c) * 8 + k];
                }
            }
        }
    });
    check(17, |x, o| {
        for n in 0..2 {
            for c in 0..3 {
                for k in 0..8 {
                    o[(n * 3 + c) * 8 + k] = x[(n * 8 + k) * 3 + c];
                }
            }
        }
    });
    check(18, |_, o| {
        for (i, v) in o.iter_mut().take(64).enumerate() {
            *v = 2.5 + i as f32;
        }
    });
}

#[test]
fn broken_limits_are_errors_naming_the_rule() {
    let cases = [
        (
            100,
            "DataCopy(GM->local, DataCopyParams): blockCount 4096 exceeds 4095",
        ),
        (
            101,
            "DataCopyPad(GM->local): leftPadding 9 elements are 36 bytes; leftPadding and \
             rightPadding may each cover at most 32 bytes",
        ),
        (
            102,
            "Gather: srcOffset[7] = 30 plus srcBaseAddr 0 is byte 30, not on a 4-byte element \
             boundary (the hardware would read misaligned data)",
        ),
        (
            103,
            "DataCopyPad(GM->local): isPad is false, so the padding takes the SetPadValue value, \
             but that value is half and the copy moves float elements; call SetPadValue with the \
             copied type",
        ),
        (
            104,
            "Gatherb: offset[3] = 48 is not a multiple of 32 (blocks are gathered from 32-byte \
             boundaries)",
        ),
        (
            105,
            "DataCopy(GM->local, SliceInfo): the source slice has 2 bursts and the destination \
             slice 3; both must select the same number of elements",
        ),
        (
            106,
            "Transpose(TransposeParamsExt): sharedTmpBuffer has 2048 bytes; TRANSPOSE_NHWC2NCHW \
             with cSize 3 needs 3584",
        ),
        (
            107,
            "DataCopy(local->GM, DataCopyParams): elements [0, 1600) are outside the \
             GlobalTensor's 1024 elements",
        ),
    ];
    for (which, want) in cases {
        let err = run(which).expect_err("an error");
        assert_eq!(kernel_message(err), want, "scenario {which}");
    }
}
