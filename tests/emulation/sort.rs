//! Sorting and compaction in the host emulation (`pypto_emu/sort.h`):
//! `Sort32`, `MrgSort` (`MrgSortSrcList`, `MrgSort4Info`),
//! `GetMrgSortResult` and `GatherMask` (user bit patterns and the built-in
//! patterns 1..7, normal and counter mode), through the kernels of
//! `tests/kernels/api_sort.yaml`, for float and half, against plain Rust:
//! a stable descending sort, a four-way merge and a pattern filter. Every
//! byte of the output is compared, bytes the instruction must leave alone
//! included; then the errors for broken limits.

use half::f16;
use pypto_rt::{Const, Device, Error};
use pypto_tests::{kernel_message, kernels};

/// The output's initial bytes (never a NaN as float or half).
fn initial() -> Vec<u8> {
    (0..4096)
        .map(|i| ((i * 37 + 11) % 256) as u8 & 0x3F)
        .collect()
}
const RES0: i32 = -3;

/// An element type of the kernels: its size and the raw bytes of a score.
trait Score: Copy {
    const SIZE: usize;
    fn of(v: f32) -> Self;
    fn value(self) -> f32;
    fn bytes(self) -> Vec<u8>;
    fn run(a: &[Self], idx: &[u32], pat: &[u32], which: i32) -> Result<(Vec<u8>, Vec<i32>), Error>;
}

impl Score for f32 {
    const SIZE: usize = 4;
    fn of(v: f32) -> Self {
        v
    }
    fn value(self) -> f32 {
        self
    }
    fn bytes(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn run(a: &[f32], idx: &[u32], pat: &[u32], which: i32) -> Result<(Vec<u8>, Vec<i32>), Error> {
        let dev = Device::host();
        let init: Vec<f32> = initial()
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let a = dev.tensor_from(a, (Const::<512>,)).unwrap();
        let idx = dev.tensor_from(idx, (Const::<512>,)).unwrap();
        let pat = dev.tensor_from(pat, (Const::<64>,)).unwrap();
        let mut out = dev.tensor_from(&init, (Const::<1024>,)).unwrap();
        let mut res = dev.tensor_from(&[RES0; 8], (Const::<8>,)).unwrap();
        kernels::sort_f32(&a, &idx, &pat, which, &mut out, &mut res)?;
        let out: Vec<f32> = out.to_vec().unwrap();
        Ok((
            out.iter().flat_map(|v| v.to_le_bytes()).collect(),
            res.to_vec().unwrap(),
        ))
    }
}

impl Score for f16 {
    const SIZE: usize = 2;
    fn of(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn value(self) -> f32 {
        self.to_f32()
    }
    fn bytes(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn run(a: &[f16], idx: &[u32], pat: &[u32], which: i32) -> Result<(Vec<u8>, Vec<i32>), Error> {
        let dev = Device::host();
        let init: Vec<f16> = initial()
            .chunks(2)
            .map(|c| f16::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let a = dev.tensor_from(a, (Const::<512>,)).unwrap();
        let idx = dev.tensor_from(idx, (Const::<512>,)).unwrap();
        let pat = dev.tensor_from(pat, (Const::<64>,)).unwrap();
        let mut out = dev.tensor_from(&init, (Const::<2048>,)).unwrap();
        let mut res = dev.tensor_from(&[RES0; 8], (Const::<8>,)).unwrap();
        kernels::sort_f16(&a, &idx, &pat, which, &mut out, &mut res)?;
        let out: Vec<f16> = out.to_vec().unwrap();
        Ok((
            out.iter().flat_map(|v| v.to_le_bytes()).collect(),
            res.to_vec().unwrap(),
        ))
    }
}

/// A (score, index) proposal.
#[derive(Clone, Copy)]
struct Proposal<T> {
    score: T,
    index: u32,
}

impl<T: Score> Proposal<T> {
    /// Its 8 bytes: the score, zeros up to byte 4, the index.
    fn bytes(self) -> Vec<u8> {
        let mut b = self.score.bytes();
        b.resize(4, 0);
        b.extend(self.index.to_le_bytes());
        b
    }
}

/// Whether score a goes before b: descending, NaN first.
fn before(a: f32, b: f32) -> bool {
    if a.is_nan() { !b.is_nan() } else { a > b }
}

/// A stable descending sort: equal scores keep their order.
fn sorted<T: Score>(v: &[Proposal<T>]) -> Vec<Proposal<T>> {
    let mut v = v.to_vec();
    v.sort_by(|x, y| {
        let (a, b) = (x.score.value(), y.score.value());
        if before(a, b) {
            std::cmp::Ordering::Less
        } else if before(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    v
}

/// The merge of descending lists: the best head each time, the lower list
/// on ties; with `stop`, until the first list runs out. The proposals
/// taken from each list too.
fn merge<T: Score>(lists: &[&[Proposal<T>]], stop: bool) -> (Vec<Proposal<T>>, Vec<usize>) {
    let mut taken = vec![0; lists.len()];
    let mut out = Vec::new();
    loop {
        let mut best: Option<usize> = None;
        let mut exhausted = false;
        for (q, l) in lists.iter().enumerate() {
            if taken[q] == l.len() {
                exhausted = true;
                continue;
            }
            let s = l[taken[q]].score.value();
            if best.is_none_or(|b| before(s, lists[b][taken[b]].score.value())) {
                best = Some(q);
            }
        }
        match best {
            Some(b) if !(exhausted && stop) => {
                out.push(lists[b][taken[b]]);
                taken[b] += 1;
            }
            _ => return (out, taken),
        }
    }
}

/// The scores: ties (multiples of 0.25 in [-4, 4]), both zeros and, in
/// the fifth group, a NaN; indices 1000 + 3i.
fn scores<T: Score>() -> (Vec<T>, Vec<u32>) {
    let mut x: u32 = 0x1234_5678;
    let v: Vec<T> = (0..512)
        .map(|i| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let q = ((x >> 16) % 33) as f32 * 0.25 - 4.0;
            T::of(match i {
                3 => -0.0,
                4 => 0.0,
                137 => f32::NAN,
                _ => q,
            })
        })
        .collect();
    let idx = (0..512).map(|i| 1000 + 3 * i).collect();
    (v, idx)
}

fn proposals<T: Score>(v: &[T], idx: &[u32]) -> Vec<Proposal<T>> {
    v.iter()
        .zip(idx)
        .map(|(&score, &index)| Proposal { score, index })
        .collect()
}

/// The output after writing `p` from its start.
fn written<T: Score>(p: &[Proposal<T>]) -> Vec<u8> {
    let mut out = initial();
    let b: Vec<u8> = p.iter().flat_map(|x| x.bytes()).collect();
    out[..b.len()].copy_from_slice(&b);
    out
}

fn check_bytes(what: &str, got: &[u8], want: &[u8]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            g,
            w,
            "{what}: byte {i} (proposal {}, byte {}) is {g:#04x}, want {w:#04x}",
            i / 8,
            i % 8
        );
    }
}

fn sort_scenarios<T: Score>(name: &str) {
    let (v, idx) = scores::<T>();
    let all = proposals(&v, &idx);
    let groups: Vec<Vec<Proposal<T>>> = all.chunks(32).map(sorted).collect();
    let run = |which| T::run(&v, &idx, &[0; 64], which).unwrap();

    // Sort32: every group of 32 sorted on its own.
    let (out, res) = run(0);
    check_bytes(&format!("{name} Sort32"), &out, &written(&groups.concat()));
    assert_eq!(res, [RES0; 8]);

    // MrgSort, four repeats of four lists of 32.
    let want: Vec<Proposal<T>> = groups
        .chunks(4)
        .flat_map(|g| merge(&[&g[0][..], &g[1][..], &g[2][..], &g[3][..]], false).0)
        .collect();
    check_bytes(&format!("{name} MrgSort x4"), &run(1).0, &written(&want));

    // All 512 through Sort32 and two rounds of MrgSort: the full stable sort.
    let full = sorted(&all);
    check_bytes(&format!("{name} full sort"), &run(2).0, &written(&full));
    assert!(full[0].score.value().is_nan(), "NaN sorts first");
    assert_eq!(full[0].index, 1000 + 3 * 137);
    // The top 16 as a top-k: the largest scores, ties by index.
    let mut top: Vec<(f32, u32)> = v[..]
        .iter()
        .zip(&idx)
        .filter(|(s, _)| !s.value().is_nan())
        .map(|(s, &i)| (s.value(), i))
        .collect();
    top.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
    let got: Vec<(f32, u32)> = full[1..17]
        .iter()
        .map(|p| (p.score.value(), p.index))
        .collect();
    assert_eq!(got, top[..16], "{name}: top 16");

    // Three lists of 32, 20 and 7 (validBit 7): 59 proposals.
    let (want, _) = merge(
        &[&groups[0][..32], &groups[1][..20], &groups[2][..7]],
        false,
    );
    assert_eq!(want.len(), 59);
    check_bytes(
        &format!("{name} MrgSort 32/20/7"),
        &run(3).0,
        &written(&want),
    );

    // Suspension: the merge stops when the first list runs out.
    let (want, taken) = merge(
        &[
            &groups[0][..],
            &groups[1][..],
            &groups[2][..],
            &groups[3][..],
        ],
        true,
    );
    let (out, res) = run(4);
    check_bytes(&format!("{name} MrgSort suspended"), &out, &written(&want));
    let taken: Vec<i32> = taken.iter().map(|&t| t as i32).collect();
    assert_eq!(&res[..4], &taken[..], "{name}: GetMrgSortResult");
    assert!(
        taken.contains(&32) && taken.iter().sum::<i32>() < 128,
        "{taken:?}"
    );
    assert_eq!(&res[4..], &[RES0; 4]);

    // Two lists of 10 and 32 (validBit 3), suspension.
    let (want, taken) = merge(&[&groups[0][..10], &groups[1][..]], true);
    let (out, res) = run(5);
    check_bytes(
        &format!("{name} MrgSort 10/32 suspended"),
        &out,
        &written(&want),
    );
    assert_eq!(
        res[..4],
        [taken[0] as i32, taken[1] as i32, 0, 0],
        "{name}: GetMrgSortResult"
    );
    assert!(taken[0] == 10 || taken[1] == 32, "{taken:?}");

    // repeatTime / repeatTimes 0: no-ops.
    check_bytes(&format!("{name} repeat 0"), &run(6).0, &initial());
}

#[test]
fn sort32_and_mrgsort_float() {
    sort_scenarios::<f32>("float");
}

#[test]
fn sort32_and_mrgsort_half() {
    sort_scenarios::<f16>("half");
}

/// The GatherMask model: repeat r takes `per` elements, element e from
/// block e / (32 / size) of the repeat; `keep(r, e)` selects.
fn gathered<T: Score>(
    v: &[T],
    per: usize,
    (blk, repeats, rep): (usize, usize, usize),
    keep: impl Fn(usize, usize) -> bool,
) -> Vec<T> {
    let per_block = 32 / T::SIZE;
    let mut out = Vec::new();
    for r in 0..repeats {
        for e in 0..per {
            if keep(r, e) {
                let byte = (r * rep + (e / per_block) * blk) * 32 + (e % per_block) * T::SIZE;
                out.push(v[byte / T::SIZE]);
            }
        }
    }
    out
}

fn gather_scenarios<T: Score>(name: &str) {
    let v: Vec<T> = (0..512).map(|i| T::of(i as f32 + 0.5)).collect();
    let idx = vec![0u32; 512];
    // Pattern words: arbitrary bits, as uint32_t or (for half) uint16_t.
    let pat: Vec<u32> = (0..64u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x9999_9999)
        .collect();
    let pat_bytes: Vec<u8> = pat.iter().flat_map(|w| w.to_le_bytes()).collect();
    // Bit e of the pattern words starting at byte `at` (words of T's width,
    // little-endian: the same as bit e % 8 of byte e / 8).
    let bit = |at: usize, e: usize| (pat_bytes[at + e / 8] >> (e % 8)) & 1 == 1;
    let per_repeat = 256 / T::SIZE;
    let check = |which: i32, kept: Vec<T>| {
        let (out, res) = T::run(&v, &idx, &pat, which).unwrap();
        let mut want = initial();
        let b: Vec<u8> = kept.iter().flat_map(|x| x.bytes()).collect();
        want[..b.len()].copy_from_slice(&b);
        check_bytes(&format!("{name} GatherMask {which}"), &out, &want);
        assert_eq!(res[..2], [kept.len() as i32, 0], "{name} {which}: rsvdCnt");
        assert_eq!(res[2..], [RES0; 6]);
        kept.len()
    };
    // A user pattern, normal mode, three repeats, patterns a block apart.
    check(
        10,
        gathered(&v, per_repeat, (1, 3, 8), |r, e| bit(r * 32, e)),
    );
    // Counter mode: 70 elements a repeat, repeats 4 blocks apart, the same
    // pattern for both (src1RepeatStride 0), the documented example.
    check(11, gathered(&v, 70, (1, 2, 4), |_, e| bit(0, e)));
    // Counter mode, every other block, patterns 2 blocks apart.
    check(12, gathered(&v, 40, (2, 3, 6), |r, e| bit(r * 64, e)));
    // The built-in patterns, two dense repeats.
    let builtin = |k: usize, e: usize| match k {
        1 => e.is_multiple_of(2),
        2 => e % 2 == 1,
        7 => true,
        _ => e % 4 == k - 3,
    };
    for k in 1..=7 {
        let n = check(
            20 + k as i32,
            gathered(&v, per_repeat, (1, 2, 8), |_, e| builtin(k, e)),
        );
        let want = match k {
            1 | 2 => per_repeat,
            7 => 2 * per_repeat,
            _ => per_repeat / 2,
        };
        assert_eq!(n, want, "pattern {k}");
    }
    check(28, gathered(&v, 40, (2, 2, 16), |_, e| builtin(3, e)));
    // In place (dst = src0), then copied: the odd elements of 2 repeats,
    // followed by what src0 held there.
    let (out, res) = T::run(&v, &idx, &pat, 29).unwrap();
    let kept = gathered(&v, per_repeat, (1, 2, 8), |_, e| e % 2 == 1);
    let mut after = v.clone();
    after[..kept.len()].copy_from_slice(&kept);
    let mut want = initial();
    let b: Vec<u8> = after.iter().flat_map(|x| x.bytes()).collect();
    want[..b.len()].copy_from_slice(&b);
    check_bytes(&format!("{name} GatherMask in place"), &out, &want);
    assert_eq!(res[0], per_repeat as i32);
}

#[test]
fn gather_mask_float() {
    gather_scenarios::<f32>("float");
}

#[test]
fn gather_mask_half() {
    gather_scenarios::<f16>("half");
}

fn errors<T: Score>(name: &str) {
    let (v, idx) = scores::<T>();
    let cases: [(i32, String); 11] = [
        (100, "Sort32: repeatTime 256 is outside 0..255".into()),
        (
            101,
            // src0 on 128 bytes (float) / 64 (half) for each repeat
            format!(
                "Sort32: src0 starts at Unified Buffer byte 32, not on a {}-byte boundary",
                32 * T::SIZE
            ),
        ),
        (102, "Sort32: dst needs 4352 bytes; it has 4096".into()),
        (
            103,
            "MrgSort: validBit 5 is not 3, 7 or 15 (the first 2, 3 or 4 lists)".into(),
        ),
        (
            104,
            "MrgSort: elementLengths[1] = 4096 is outside 0..4095".into(),
        ),
        (
            105,
            "MrgSort: dst overlaps src.src4; the source and destination must be apart".into(),
        ),
        (
            106,
            "GetMrgSortResult: no MrgSort with ifExhaustedSuspension = true has run in this block"
                .into(),
        ),
        (
            107,
            "MrgSort: repeatTimes 2 needs validBit 15, four lists of one length stored one after \
             another and ifExhaustedSuspension false"
                .into(),
        ),
        (
            108,
            "GatherMask: src1Pattern 8 is not a built-in pattern (1..7)".into(),
        ),
        (
            109,
            format!(
                "GatherMask: repeat {} reads up to byte {} of src0, which has {} bytes",
                512 * T::SIZE / 256,
                512 * T::SIZE + 256,
                512 * T::SIZE
            ),
        ),
        (
            110,
            "GatherMask: dst overlaps src0 without starting at it".into(),
        ),
    ];
    for (which, want) in cases {
        let msg = kernel_message(T::run(&v, &idx, &[0; 64], which).unwrap_err());
        assert!(msg.contains(&want), "{name} scenario {which}: {msg}");
    }
}

#[test]
fn broken_limits_are_errors() {
    errors::<f32>("float");
    errors::<f16>("half");
}
