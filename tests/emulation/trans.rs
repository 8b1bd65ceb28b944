//! `TransDataTo5HD` in the host emulation (`pypto_emu/layout.h`), through
//! the kernel of `tests/kernels/api_trans.yaml`, against plain Rust index
//! arithmetic: a 16 x 16 half transpose (tensor lists and addresses held
//! in a Unified Buffer tensor), NCHW -> NC1HWC0 for half, float and int8_t
//! (the documented use: C0 = 16 for 16- and 32-bit types, 32 for 8-bit,
//! the 8-bit one through the high/low halves), the documented offset of a
//! single repeat with strides, no repeats, and the errors for broken
//! limits. Every byte of the output is compared.

use pypto_rt::{Const, Device, Error};
use pypto_tests::{kernel_message, kernels};

/// The input: distinct bytes in every position that matters.
fn input() -> Vec<u8> {
    (0..4096).map(|i| ((i * 7 + i / 256) % 251) as u8).collect()
}

/// The output's initial bytes.
fn initial() -> Vec<u8> {
    (0..4096)
        .map(|i| ((i * 37 + 11) % 256) as u8 & 0x3F)
        .collect()
}

fn run(which: i32) -> Result<Vec<u8>, Error> {
    let dev = Device::host();
    let x = dev.tensor_from(&input(), (Const::<4096>,)).unwrap();
    let mut out = dev.tensor_from(&initial(), (Const::<4096>,)).unwrap();
    kernels::trans_5hd(&x, which, &mut out)?;
    Ok(out.to_vec().unwrap())
}

/// The expected output: element `to` (of `size` bytes) of out takes
/// element `from` of x, for each pair; the rest keeps its initial bytes.
fn moved(size: usize, pairs: impl IntoIterator<Item = (usize, usize)>) -> Vec<u8> {
    let x = input();
    let mut out = initial();
    for (to, from) in pairs {
        out[to * size..(to + 1) * size].copy_from_slice(&x[from * size..(from + 1) * size]);
    }
    out
}

fn check(which: i32, want: Vec<u8>) {
    let got = run(which).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g, w,
            "scenario {which}: byte {i} is {g:#04x}, want {w:#04x}"
        );
    }
}

fn grid(a: usize, b: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..a).flat_map(move |i| (0..b).map(move |j| (i, j)))
}

#[test]
fn a_16_by_16_half_transpose() {
    let want = moved(2, grid(16, 16).map(|(i, j)| (i * 16 + j, j * 16 + i)));
    check(0, want.clone());
    // The same with the 32 addresses in a Unified Buffer tensor.
    check(4, want);
}

#[test]
fn nchw_to_nc1hwc0_for_half_float_and_int8() {
    // half: C = 16, HW = 64: out[hw][c] = x[c][hw].
    check(
        1,
        moved(2, grid(64, 16).map(|(hw, c)| (hw * 16 + c, c * 64 + hw))),
    );
    // float: C = 16, HW = 32, C0 = 16: two blocks per position.
    check(
        2,
        moved(4, grid(32, 16).map(|(hw, c)| (hw * 16 + c, c * 32 + hw))),
    );
    // int8_t: C = 32, HW = 32, C0 = 32: halves of blocks.
    check(
        3,
        moved(1, grid(32, 32).map(|(p, c)| (p * 32 + c, c * 32 + p))),
    );
}

#[test]
fn repeat_offsets_and_no_repeats() {
    // One repeat with strides 16: the lists plus one stride (documented).
    check(
        5,
        moved(
            2,
            grid(16, 16).map(|(i, j)| (256 + i * 16 + j, 256 + j * 16 + i)),
        ),
    );
    check(6, initial());
}

#[test]
fn broken_limits_are_errors() {
    let cases = [
        (
            100,
            "TransDataTo5HD: dstList[3] is Unified Buffer byte",
            "not on a 32-byte boundary",
        ),
        (
            101,
            "TransDataTo5HD: repeat 0 writes dst block 15 at Unified Buffer bytes",
            "past its operand's end",
        ),
        (
            102,
            "TransDataTo5HD: repeat 0 reads src block 0 at Unified Buffer bytes",
            "past its operand's end",
        ),
    ];
    for (which, a, b) in cases {
        let msg = kernel_message(run(which).unwrap_err());
        assert!(
            msg.contains(a) && msg.contains(b),
            "scenario {which}: {msg}"
        );
    }
}
