//! The reductions of the host emulation (`pypto_emu/reduce.h`), through the
//! kernels of `tests/kernels/api_reduce.yaml`, for float and half, against a
//! plain-Rust model: per-repeat (`ReduceRepeat`, `WholeReduce*`,
//! `RepeatReduceSum`) with all four `ReduceOrder`s, per-block
//! (`ReduceDataBlock`, `BlockReduce*`), pairwise (`ReducePairElem`,
//! `PairReduceSum`), `ReduceSum`/`ReduceMax`/`ReduceMin` in their count and
//! mask forms, the result registers, bitwise and continuous masks, counter
//! mode, block and repeat strides, indices stored in the bits of the element
//! type, and the errors for broken limits. Every byte of the outputs is
//! compared; float sums follow the emulation's documented order (a pairwise
//! tree within a repeat), so the comparisons are exact.

use half::f16;
use pypto_rt::{Const, Device, Error};
use pypto_tests::mask_model::first_bits;
use pypto_tests::{Float, data, kernel_message, kernels};

const SENTINEL: f32 = -7.0;

trait E: Float + Copy {
    const SIZE: usize;
    fn from_raw(bits: u32) -> Self;
    fn run(x: &[Self], which: i32) -> Result<(Vec<Self>, Vec<Self>), Error>;
}

impl E for f32 {
    const SIZE: usize = 4;
    fn from_raw(bits: u32) -> Self {
        f32::from_bits(bits)
    }
    fn run(x: &[f32], which: i32) -> Result<(Vec<f32>, Vec<f32>), Error> {
        let dev = Device::host();
        let x = dev.tensor_from(x, (Const::<2048>,)).unwrap();
        let mut out = dev
            .tensor_from(&[SENTINEL; 2048], (Const::<2048>,))
            .unwrap();
        let mut regs = dev.tensor_from(&[SENTINEL; 16], (Const::<16>,)).unwrap();
        kernels::reduce_f32(&x, which, &mut out, &mut regs)?;
        Ok((out.to_vec().unwrap(), regs.to_vec().unwrap()))
    }
}

impl E for f16 {
    const SIZE: usize = 2;
    fn from_raw(bits: u32) -> Self {
        f16::from_bits(bits as u16)
    }
    fn run(x: &[f16], which: i32) -> Result<(Vec<f16>, Vec<f16>), Error> {
        let dev = Device::host();
        let s = f16::from_f32(SENTINEL);
        let x = dev.tensor_from(x, (Const::<2048>,)).unwrap();
        let mut out = dev.tensor_from(&[s; 2048], (Const::<2048>,)).unwrap();
        let mut regs = dev.tensor_from(&[s; 16], (Const::<16>,)).unwrap();
        kernels::reduce_f16(&x, which, &mut out, &mut regs)?;
        Ok((out.to_vec().unwrap(), regs.to_vec().unwrap()))
    }
}

/// A little-endian byte image of an output, written as the hardware does.
struct Image(Vec<u8>);

impl Image {
    fn new<T: E>(n: usize) -> Image {
        Image((0..n).flat_map(|_| raw(T::from_f32(SENTINEL))).collect())
    }
    fn of<T: E>(v: &[T]) -> Image {
        Image(v.iter().flat_map(|&x| raw(x)).collect())
    }
    fn put<T: E>(&mut self, byte: usize, v: T) {
        self.0[byte..byte + T::SIZE].copy_from_slice(&raw(v));
    }
    fn put_u32(&mut self, byte: usize, v: u32) {
        self.0[byte..byte + 4].copy_from_slice(&v.to_le_bytes());
    }
}

fn raw<T: E>(v: T) -> Vec<u8> {
    v.bits().to_le_bytes()[..T::SIZE].to_vec()
}

#[derive(Clone, Copy)]
enum Mask {
    /// Normal mode: the same bits in every repeat.
    Bits([u64; 2]),
    /// Counter mode: this many elements over all repeats.
    Counter(usize),
}

struct Plan {
    per: usize,
    repeats: usize,
    mask: Mask,
}

impl Plan {
    fn bits<T: E>(repeats: usize, bits: [u64; 2]) -> Plan {
        Plan {
            per: 256 / T::SIZE,
            repeats,
            mask: Mask::Bits(bits),
        }
    }
    fn first<T: E>(repeats: usize, n: usize) -> Plan {
        Plan::bits::<T>(repeats, first_bits(n))
    }
    fn counter<T: E>(total: usize) -> Plan {
        let per = 256 / T::SIZE;
        Plan {
            per,
            repeats: total.div_ceil(per),
            mask: Mask::Counter(total),
        }
    }
    fn active(&self, r: usize, e: usize) -> bool {
        match self.mask {
            Mask::Bits(b) => (b[e / 64] >> (e % 64)) & 1 == 1,
            Mask::Counter(n) => r * self.per + e < n,
        }
    }
}

/// Element index of element `e` of repeat `r` with block stride `blk` and
/// repeat stride `rep` (32-byte blocks).
fn at(size: usize, blk: usize, rep: usize, r: usize, e: usize) -> usize {
    let b = e * size;
    (r * rep * 32 + (b / 32) * blk * 32 + b % 32) / size
}

fn slots<T: E>(x: &[T], p: &Plan, blk: usize, rep: usize, r: usize) -> Vec<Option<T>> {
    (0..p.per)
        .map(|e| p.active(r, e).then(|| x[at(T::SIZE, blk, rep, r, e)]))
        .collect()
}

fn add<T: E>(a: T, b: T) -> T {
    T::from_f32(a.to_f32() + b.to_f32())
}

/// Pairwise tree: level by level, 2i with 2i + 1; a missing partner passes
/// the other up.
fn tree<T: E>(mut v: Vec<Option<T>>) -> Option<T> {
    while v.len() > 1 {
        v = v
            .chunks(2)
            .map(|c| match (c[0], c.get(1).copied().flatten()) {
                (Some(a), Some(b)) => Some(add(a, b)),
                (a, b) => a.or(b),
            })
            .collect();
    }
    v.first().copied().flatten()
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Sum,
    Max,
    Min,
}

fn beats<T: E>(kind: Kind, cand: T, best: T) -> bool {
    let (c, b) = (cand.to_f32(), best.to_f32());
    if b.is_nan() {
        false
    } else if c.is_nan() {
        true
    } else if kind == Kind::Max {
        c > b
    } else {
        c < b
    }
}

fn best<T: E>(kind: Kind, v: &[Option<T>]) -> Option<(T, usize)> {
    let mut found: Option<(T, usize)> = None;
    for (i, s) in v.iter().enumerate() {
        if let Some(c) = *s
            && found.is_none_or(|(b, _)| beats(kind, c, b))
        {
            found = Some((c, i));
        }
    }
    found
}

#[derive(Clone, Copy)]
enum Order {
    ValueIndex,
    IndexValue,
    OnlyValue,
    OnlyIndex,
}

/// ReduceRepeat; returns the best over all repeats (value, index counted
/// from the first repeat) for the max/min register.
#[allow(clippy::too_many_arguments)]
fn reduce_repeat<T: E>(
    o: &mut Image,
    x: &[T],
    kind: Kind,
    p: &Plan,
    drep: usize,
    sblk: usize,
    srep: usize,
    order: Order,
) -> Option<(T, usize)> {
    let s = T::SIZE;
    let unit = match (kind, order) {
        (Kind::Sum, _) | (_, Order::OnlyValue) => s,
        (_, Order::ValueIndex | Order::IndexValue) => 2 * s,
        (_, Order::OnlyIndex) => 4,
    };
    let mut overall: Option<(T, usize)> = None;
    for r in 0..p.repeats {
        let v = slots(x, p, sblk, srep, r);
        let d = r * drep * unit;
        if kind == Kind::Sum {
            if let Some(sum) = tree(v) {
                o.put(d, sum);
            }
            continue;
        }
        let Some((val, idx)) = best(kind, &v) else {
            continue;
        };
        let iv = T::from_raw(idx as u32);
        match order {
            Order::ValueIndex => {
                o.put(d, val);
                o.put(d + s, iv);
            }
            Order::IndexValue => {
                o.put(d, iv);
                o.put(d + s, val);
            }
            Order::OnlyValue => o.put(d, val),
            Order::OnlyIndex => o.put_u32(d, idx as u32),
        }
        if overall.is_none_or(|(b, _)| beats(kind, val, b)) {
            overall = Some((val, r * p.per + idx));
        }
    }
    overall
}

#[allow(clippy::too_many_arguments)]
fn data_block<T: E>(
    o: &mut Image,
    x: &[T],
    kind: Kind,
    p: &Plan,
    drep: usize,
    sblk: usize,
    srep: usize,
    dst: usize,
) {
    let pb = 32 / T::SIZE;
    for r in 0..p.repeats {
        let v = slots(x, p, sblk, srep, r);
        for j in 0..8 {
            let b = v[j * pb..(j + 1) * pb].to_vec();
            let res = match kind {
                Kind::Sum => tree(b),
                _ => best(kind, &b).map(|(v, _)| v),
            };
            if let Some(res) = res {
                o.put((dst + r * drep * 8 + j) * T::SIZE, res);
            }
        }
    }
}

fn pair<T: E>(o: &mut Image, x: &[T], p: &Plan, drep: usize, sblk: usize, srep: usize) {
    let pairs = p.per / 2;
    for r in 0..p.repeats {
        let v = slots(x, p, sblk, srep, r);
        for k in 0..pairs {
            if let Some(s) = tree(vec![v[2 * k], v[2 * k + 1]]) {
                o.put((r * drep * pairs + k) * T::SIZE, s);
            }
        }
    }
}

/// Count-form ReduceSum: a tree per repeat, repeat results added in order.
fn sum_count<T: E>(x: &[T], n: usize) -> T {
    let per = 256 / T::SIZE;
    let parts: Vec<T> = x[..n]
        .chunks(per)
        .map(|c| tree(c.iter().map(|&v| Some(v)).collect()).unwrap())
        .collect();
    parts[1..].iter().fold(parts[0], |a, &b| add(a, b))
}

/// Mask-form ReduceSum: a tree per repeat, then trees over the repeat
/// results, a repeat's worth at a time, until one is left.
fn sum_mask<T: E>(x: &[T], p: &Plan, srep: usize) -> T {
    let mut level: Vec<Option<T>> = (0..p.repeats)
        .map(|r| tree(slots(x, p, 1, srep, r)))
        .collect();
    while level.len() > 1 {
        level = level.chunks(p.per).map(|c| tree(c.to_vec())).collect();
    }
    level[0].unwrap()
}

fn maxmin_all<T: E>(x: &[T], kind: Kind, p: &Plan, srep: usize) -> (T, usize) {
    let mut found: Option<(T, usize)> = None;
    for r in 0..p.repeats {
        for (e, s) in slots(x, p, 1, srep, r).into_iter().enumerate() {
            if let Some(c) = s
                && found.is_none_or(|(b, _)| beats(kind, c, b))
            {
                found = Some((c, r * p.per + e));
            }
        }
    }
    found.unwrap()
}

/// The input of a scenario: random values for sums, values with many ties
/// for maxima and minima (scenario 1 also has a NaN at element 200).
fn input<T: E>(which: i32) -> Vec<T> {
    let v = data(2048, 40 + which as u64);
    match which {
        1..=4 | 6 | 7 | 13 | 14 | 18 => v
            .iter()
            .enumerate()
            .map(|(i, &f)| {
                if which == 1 && i == 200 {
                    T::from_f32(f32::NAN)
                } else {
                    T::from_f32((f * 2.0).round() / 2.0)
                }
            })
            .collect(),
        _ => v.iter().map(|&f| T::from_f32(f)).collect(),
    }
}

fn masks<T: E>() -> ([u64; 2], [u64; 2], [u64; 2]) {
    let wide = T::SIZE == 2;
    (
        [
            0xF0F0F0F00000FFFF,
            if wide { 0x0123456789ABCDEF } else { 0 },
        ],
        [
            0x00FF00000000FFFF,
            if wide { 0xFFFF0000000000FF } else { 0 },
        ],
        [
            0x5A5A5A5A5A5A5A5B,
            if wide { 0x5A5A5A5A5A5A5A5A } else { 0 },
        ],
    )
}

/// The model of scenario `which`: the images of out and regs.
fn expect<T: E>(which: i32, x: &[T]) -> (Image, Image) {
    let mut o = Image::new::<T>(2048);
    let mut g = Image::new::<T>(16);
    let (m0, m1, m2) = masks::<T>();
    let pr = 256 / T::SIZE;
    let rr = 2048 / pr - 2;
    let s = T::SIZE;
    let ones = if s == 2 { 0xFFFF } else { 0xFFFF_FFFF };
    match which {
        0 => {
            reduce_repeat(
                &mut o,
                x,
                Kind::Sum,
                &Plan::bits::<T>(3, m0),
                2,
                2,
                16,
                Order::ValueIndex,
            );
        }
        1 => {
            let p = Plan::first::<T>(4, pr - 5);
            let (v, i) =
                reduce_repeat(&mut o, x, Kind::Max, &p, 1, 1, 8, Order::ValueIndex).unwrap();
            g.put(0, v);
            g.put(s, T::from_raw(i as u32));
        }
        2 => {
            reduce_repeat(
                &mut o,
                x,
                Kind::Min,
                &Plan::first::<T>(3, 40),
                3,
                1,
                8,
                Order::IndexValue,
            );
        }
        3 => {
            reduce_repeat(
                &mut o,
                x,
                Kind::Min,
                &Plan::bits::<T>(2, m0),
                1,
                1,
                4,
                Order::OnlyValue,
            );
        }
        4 => {
            reduce_repeat(
                &mut o,
                x,
                Kind::Max,
                &Plan::first::<T>(5, pr),
                1,
                1,
                8,
                Order::OnlyIndex,
            );
        }
        5 => data_block(&mut o, x, Kind::Sum, &Plan::bits::<T>(2, m1), 2, 1, 8, 0),
        6 => data_block(&mut o, x, Kind::Max, &Plan::first::<T>(3, 20), 1, 2, 8, 0),
        7 => data_block(&mut o, x, Kind::Min, &Plan::bits::<T>(2, m0), 1, 1, 8, 0),
        8 => pair(&mut o, x, &Plan::bits::<T>(2, m2), 1, 1, 8),
        9 => pair(&mut o, x, &Plan::first::<T>(3, 37), 2, 1, 8),
        10 => {
            reduce_repeat(
                &mut o,
                x,
                Kind::Sum,
                &Plan::first::<T>(4, 50),
                1,
                1,
                8,
                Order::ValueIndex,
            );
        }
        11 => {
            let v = sum_count(x, 1000);
            o.put(0, v);
            g.put(0, v);
        }
        12 => {
            o.put(0, sum_mask(x, &Plan::bits::<T>(300, m0), 0));
            o.put(16 * s, sum_mask(x, &Plan::first::<T>(rr, pr), 8));
        }
        13 => {
            let (v, i) = maxmin_all(x, Kind::Max, &Plan::bits::<T>(rr, m0), 8);
            o.put(0, v);
            o.put(s, T::from_raw(i as u32));
            g.put(0, v);
            g.put(s, T::from_raw(ones));
        }
        14 => {
            let (v, i) = maxmin_all(x, Kind::Min, &Plan::counter::<T>(1000), 8);
            o.put(0, v);
            o.put(s, T::from_raw(i as u32));
            let (v, _) = maxmin_all(x, Kind::Max, &Plan::counter::<T>(999), 8);
            o.put(4 * s, v);
        }
        15 => {
            let p = Plan::counter::<T>(150);
            reduce_repeat(&mut o, x, Kind::Sum, &p, 1, 1, 8, Order::ValueIndex);
            data_block(&mut o, x, Kind::Max, &p, 1, 1, 8, 32);
        }
        16 => o.put(0, sum_count(x, 300)),
        17 => {}
        18 => {
            let p = Plan::bits::<T>(2, [0xFFFF0000FFFF, 0]);
            reduce_repeat(&mut o, x, Kind::Max, &p, 1, 1, 8, Order::ValueIndex);
        }
        _ => unreachable!(),
    }
    (o, g)
}

fn check<T: E>(which: i32) {
    let x = input::<T>(which);
    let (out, regs) = T::run(&x, which).unwrap();
    let (want_o, want_g) = expect(which, &x);
    let name = if T::SIZE == 2 { "half" } else { "float" };
    let got_o = Image::of(&out);
    for (i, (g, w)) in got_o
        .0
        .chunks(T::SIZE)
        .zip(want_o.0.chunks(T::SIZE))
        .enumerate()
    {
        assert_eq!(
            g, w,
            "{name} scenario {which}: out[{i}] bytes {g:02x?}, want {w:02x?}"
        );
    }
    assert_eq!(
        Image::of(&regs).0,
        want_g.0,
        "{name} scenario {which}: regs"
    );
}

#[test]
fn per_repeat_reductions_with_every_order_and_the_register() {
    for which in [0, 1, 2, 3, 4, 10, 15, 18] {
        check::<f32>(which);
        check::<f16>(which);
    }
}

#[test]
fn per_block_and_pairwise_reductions_leave_masked_off_results_alone() {
    for which in [5, 6, 7, 8, 9] {
        check::<f32>(which);
        check::<f16>(which);
    }
}

#[test]
fn whole_tensor_reductions_count_and_mask_forms() {
    for which in [11, 12, 13, 14, 16, 17] {
        check::<f32>(which);
        check::<f16>(which);
    }
}

#[test]
fn the_summation_order_is_visible_in_float() {
    // The model's tree order gives another float sum than a plain loop for
    // these inputs, so the exact comparisons above do test the order.
    let x = input::<f32>(11);
    let plain = x[..1000].iter().fold(0.0f32, |a, &b| a + b);
    assert_ne!(sum_count(&x, 1000).to_bits(), plain.to_bits());
    let (out, _) = f32::run(&x, 11).unwrap();
    assert_eq!(out[0].to_bits(), sum_count(&x, 1000).to_bits());
}

#[test]
fn broken_limits_are_errors_naming_the_rule() {
    let cases = [
        (
            100,
            "ReduceRepeat: repeatTime 256 exceeds 255 (the hardware's 8-bit repeat count)",
        ),
        (
            101,
            "ReduceMax: sharedTmpBuffer has 8 elements; 30 repeats with the index need 72",
        ),
        (
            102,
            "ReduceRepeat: dst starts at Unified Buffer byte 8196, which is not a multiple of 8 \
             (the size of one MAX result with ORDER_VALUE_INDEX)",
        ),
        (
            103,
            "GetReduceRepeatMaxMinSpr: the last ReduceRepeat has no result here: its source was \
             not contiguous (srcBlkStride 1, srcRepStride 8)",
        ),
        (
            104,
            "ReduceDataBlock: repeat 2 writes up to byte 96 of dst, which has 64 bytes \
             (dstRepStride 1, in units of 32 bytes); accesses must stay inside the operands",
        ),
        (
            105,
            "ReduceSum: with isSetMask = false the element count comes from the mask register in \
             counter mode (SetMaskCount, then SetVectorMask), but it is in normal mode",
        ),
        (
            106,
            "WholeReduceSum: srcBlkStride 70000 is outside 0..65535",
        ),
        (107, "ReduceMin: count 2049 exceeds src's 2048 elements"),
    ];
    let x = input::<f32>(0);
    for (which, want) in cases {
        let err = f32::run(&x, which).expect_err("an error");
        assert_eq!(kernel_message(err), want, "scenario {which}");
    }
    let err = f16::run(&input::<f16>(0), 101).expect_err("an error");
    assert_eq!(
        kernel_message(err),
        "ReduceMax: sharedTmpBuffer has 8 elements; 14 repeats with the index need 48"
    );
}
