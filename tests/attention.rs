//! builtin/attention against an f64 plain-Rust reference, over sequence
//! lengths from 1 to 4096, several head counts, the causal mask, and each
//! dtype.
//!
//! Tolerances (inputs in [-1, 1), so outputs lie in [-1, 1]):
//! - fp32: 1e-4. The kernel accumulates up to 4096 fp32 terms per output
//!   (error grows like √S·ε ≈ 4e-6 typically, S·ε ≈ 2.4e-4 at worst).
//! - fp16: 2e-3. Computed in fp32 and rounded once to fp16, whose spacing
//!   near 1 is 9.8e-4; the reference sees the same fp16-rounded inputs.
//! - bf16: 1.6e-2. As fp16, with bf16's spacing near 1 of 7.8e-3.

use pypto_rt::{Const, Device, Error, Tensor};
use pypto_tests::{
    Float, attention_reference, data, distinct_splits, kernels, max_abs_diff,
    same_bits_at_block_counts, same_bits_at_every_block_count,
};

type Shape<const H: usize> = (usize, usize, Const<H>);
type Attention<T, const H: usize> = fn(
    &Tensor<T, Shape<H>>,
    &Tensor<T, Shape<H>>,
    &Tensor<T, Shape<H>>,
    &mut Tensor<T, Shape<H>>,
) -> Result<(), Error>;

/// Runs one attention kernel at (batch, seq) and returns its max error and
/// the launch's Unified Buffer high-water mark.
fn run<T: Float, const H: usize>(
    kernel: Attention<T, H>,
    (batch, seq): (usize, usize),
    heads: usize,
    causal: bool,
) -> (f32, u64) {
    let dev = Device::host();
    let n = batch * seq * H;
    let inputs: Vec<Vec<T>> = [11u64, 12, 13]
        .iter()
        .map(|&s| {
            data(n, s + seq as u64)
                .iter()
                .map(|x| T::from_f32(x / 4.0))
                .collect()
        })
        .collect();
    let shape = (batch, seq, Const::<H>);
    let t: Vec<Tensor<T, Shape<H>>> = inputs
        .iter()
        .map(|v| dev.tensor_from(v, shape).unwrap())
        .collect();
    let mut out = dev.zeros(shape).unwrap();
    kernel(&t[0], &t[1], &t[2], &mut out).unwrap();
    let widened: Vec<Vec<f32>> = inputs
        .iter()
        .map(|v| v.iter().map(|x| x.to_f32()).collect())
        .collect();
    let want = attention_reference(
        &widened[0],
        &widened[1],
        &widened[2],
        (batch, seq, H),
        heads,
        causal,
    );
    let got: Vec<f32> = out.to_vec().unwrap().iter().map(|x| x.to_f32()).collect();
    let stats = pypto_rt::last_launch().unwrap();
    (max_abs_diff(&got, &want), stats.ub_peak_bytes)
}

#[test]
fn fp32_two_heads_over_a_grid_of_batch_and_sequence() {
    // The sweep of the kernel's SIZES (B and S; attention's work grows as
    // S², so S at most 257), each dim varied with the other at 3, then both.
    let cases = pypto_rt::testing::Sweep::new(&kernels::attn_f32::SIZES)
        .max_size(257)
        .cases();
    assert!(cases.len() > 40, "{} cases", cases.len());
    for case in cases {
        let (batch, seq) = (case.dim("B"), case.dim("S"));
        let (err, _) = run::<f32, 64>(
            |a0, a1, a2, a3| kernels::attn_f32(a0, a1, a2, a3),
            (batch, seq),
            2,
            false,
        );
        assert!(err < 1e-4, "B={batch} S={seq}: error {err}");
    }
}

#[test]
fn causal_fp32_up_to_4096_with_constant_unified_buffer_use() {
    let mut peaks = Vec::new();
    for seq in [1usize, 7, 64, 1000, 4096] {
        let (err, peak) = run::<f32, 32>(
            |a0, a1, a2, a3| kernels::attn_causal_f32(a0, a1, a2, a3),
            (1, seq),
            1,
            true,
        );
        assert!(err < 1e-4, "S={seq}: error {err}");
        peaks.push((seq, peak));
    }
    // The keys stream through fixed tiles: UB use does not grow with S.
    let at = |s: usize| peaks.iter().find(|(seq, _)| *seq == s).unwrap().1;
    assert_eq!(at(64), at(4096), "{peaks:?}");
    assert!(at(64) > 0 && at(64) < 188_160, "{peaks:?}");
}

#[test]
fn fp16_four_heads() {
    for (batch, seq) in [(1usize, 1usize), (2, 33), (3, 127)] {
        let (err, _) = run::<half::f16, 64>(
            |a0, a1, a2, a3| kernels::attn_f16(a0, a1, a2, a3),
            (batch, seq),
            4,
            false,
        );
        assert!(err < 2e-3, "B={batch} S={seq}: error {err}");
    }
}

#[test]
fn bf16_four_heads_causal() {
    for (batch, seq) in [(1usize, 1usize), (2, 33), (3, 127)] {
        let (err, _) = run::<half::bf16, 64>(
            |a0, a1, a2, a3| kernels::attn_bf16(a0, a1, a2, a3),
            (batch, seq),
            4,
            true,
        );
        assert!(err < 1.6e-2, "B={batch} S={seq}: error {err}");
    }
}

#[test]
fn zero_batch_or_sequence_launches_nothing() {
    let dev = Device::host();
    for (batch, seq) in [(0usize, 5usize), (3, 0)] {
        let shape = (batch, seq, Const::<64>);
        let q = dev.zeros::<f32, _>(shape).unwrap();
        let mut out = dev.zeros(shape).unwrap();
        kernels::attn_f32(&q, &q, &q, &mut out).unwrap();
        assert_eq!(pypto_rt::last_launch().unwrap().blocks, 0);
    }
}

#[test]
fn disagreeing_batch_is_a_run_time_error_naming_the_params() {
    let dev = Device::host();
    let q = dev.zeros::<f32, _>((2, 8, Const::<64>)).unwrap();
    let k = dev.zeros::<f32, _>((3, 8, Const::<64>)).unwrap();
    let mut out = dev.zeros((2, 8, Const::<64>)).unwrap();
    assert_eq!(
        kernels::attn_f32(&q, &k, &q, &mut out)
            .unwrap_err()
            .to_string(),
        "kernel `attn_f32`: `k.0` is 3 but `q.0` is 2; they must be equal because they are the dim `B`"
    );
}

#[test]
fn dynamic_hidden_must_split_into_the_heads() {
    let dev = Device::host();
    let q = dev.tensor_from(&data(2 * 3 * 33, 1), (2, 3, 33)).unwrap();
    let mut out = dev.zeros((2, 3, 33)).unwrap();
    kernels::attn_dyn_hidden(&q, &q, &q, &mut out).unwrap();
    let want = attention_reference(
        &q.to_vec().unwrap(),
        &q.to_vec().unwrap(),
        &q.to_vec().unwrap(),
        (2, 3, 33),
        3,
        false,
    );
    assert!(max_abs_diff(&out.to_vec().unwrap(), &want) < 1e-4);

    let q = dev.zeros::<f32, _>((2, 3, 32)).unwrap();
    let mut out = dev.zeros((2, 3, 32)).unwrap();
    assert_eq!(
        kernels::attn_dyn_hidden(&q, &q, &q, &mut out)
            .unwrap_err()
            .to_string(),
        "kernel `attn_dyn_hidden`: `q.2` is 32, not a multiple of 3 (heads = 3: attention \
         heads; the hidden size is split into heads of hidden/heads)"
    );
}

/// Attention at every block count 1 to 48: 3 batches of 2 heads (6 blocks
/// naturally) and 4 batches of 4 heads, causal, in bf16 (16 blocks);
/// bit-identical to the natural count, and within tolerance of the
/// reference.
#[test]
fn every_block_count_gives_the_same_numbers() {
    fn check<T: Float, const H: usize>(
        name: &str,
        kernel: Attention<T, H>,
        (batch, seq): (usize, usize),
        heads: usize,
        causal: bool,
        tolerance: f32,
    ) {
        let dev = Device::host();
        let shape = (batch, seq, Const::<H>);
        let n = batch * seq * H;
        let inputs: Vec<Vec<T>> = [21u64, 22, 23]
            .iter()
            .map(|&s| data(n, s).iter().map(|x| T::from_f32(x / 4.0)).collect())
            .collect();
        let t: Vec<Tensor<T, Shape<H>>> = inputs
            .iter()
            .map(|v| dev.tensor_from(v, shape).unwrap())
            .collect();
        let got = same_bits_at_every_block_count(name, || {
            let nan = vec![T::from_f32(f32::NAN); n];
            let mut out = dev.tensor_from(&nan, shape).unwrap();
            kernel(&t[0], &t[1], &t[2], &mut out).unwrap();
            out.to_vec().unwrap()
        });
        let wide: Vec<Vec<f32>> = inputs
            .iter()
            .map(|v| v.iter().map(|x| x.to_f32()).collect())
            .collect();
        let want =
            attention_reference(&wide[0], &wide[1], &wide[2], (batch, seq, H), heads, causal);
        let got: Vec<f32> = got.iter().map(|x| x.to_f32()).collect();
        let err = max_abs_diff(&got, &want);
        assert!(err <= tolerance, "{name}: max error {err}");
    }
    check::<f32, 64>(
        "attention f32",
        |a0, a1, a2, a3| kernels::attn_f32(a0, a1, a2, a3),
        (3, 9),
        2,
        false,
        1e-4,
    );
    check::<half::bf16, 64>(
        "attention bf16 causal",
        |a0, a1, a2, a3| kernels::attn_bf16(a0, a1, a2, a3),
        (4, 5),
        4,
        true,
        1.6e-2,
    );
}

type Dynamic = (usize, usize, usize);
type AnyHidden<T> = fn(
    &Tensor<T, Dynamic>,
    &Tensor<T, Dynamic>,
    &Tensor<T, Dynamic>,
    &mut Tensor<T, Dynamic>,
) -> Result<(), Error>;

/// Attention in every dtype, causal or not (two heads, any hidden size), at
/// every block count that splits its (batch, head) pairs differently
/// (`distinct_splits`), on the key-tile paths of builtin/attention: keys
/// stream through tiles of at most 64 (`kMaxKeyTile`), fewer when two tiles
/// of rows would pass the 96 KiB budget (`kKeyValueBudget`).
/// - 2 x 70, heads of 24: key tiles of 64 and 6, rows padded to 32 bytes in
///   fp16 and bf16 (24 elements, 48 bytes).
/// - 1 x 50, heads of 520: tiles of 23 keys in fp32 (23, 23, 4) and 46 in
///   fp16 and bf16 (46, 4).
///
/// Bit-identical to the natural count, and within the tolerances above of
/// the reference.
#[test]
fn every_block_count_on_every_key_tile_path_in_every_dtype() {
    fn check<T: Float>(name: &str, kernel: AnyHidden<T>, causal: bool, tolerance: f32) {
        let dev = Device::host();
        let heads = 2;
        for (batch, seq, d) in [(2usize, 70usize, 24usize), (1, 50, 520)] {
            let shape = (batch, seq, heads * d);
            let n = batch * seq * heads * d;
            let inputs: Vec<Vec<T>> = [31u64, 32, 33]
                .iter()
                .map(|&s| data(n, s).iter().map(|x| T::from_f32(x / 4.0)).collect())
                .collect();
            let t: Vec<Tensor<T, Dynamic>> = inputs
                .iter()
                .map(|v| dev.tensor_from(v, shape).unwrap())
                .collect();
            let what = format!("{name} {batch}x{seq}, heads of {d}");
            let counts = distinct_splits(batch * heads);
            let got = same_bits_at_block_counts(&what, &counts, || {
                let nan = vec![T::from_f32(f32::NAN); n];
                let mut out = dev.tensor_from(&nan, shape).unwrap();
                kernel(&t[0], &t[1], &t[2], &mut out).unwrap();
                out.to_vec().unwrap()
            });
            let wide: Vec<Vec<f32>> = inputs
                .iter()
                .map(|v| v.iter().map(|x| x.to_f32()).collect())
                .collect();
            let want = attention_reference(
                &wide[0],
                &wide[1],
                &wide[2],
                (batch, seq, heads * d),
                heads,
                causal,
            );
            let got: Vec<f32> = got.iter().map(|x| x.to_f32()).collect();
            let err = max_abs_diff(&got, &want);
            assert!(err <= tolerance, "{what}: max error {err}");
        }
    }
    check::<f32>(
        "attention f32",
        |a0, a1, a2, a3| kernels::attn_heads2_f32(a0, a1, a2, a3),
        false,
        1e-4,
    );
    check::<f32>(
        "attention f32 causal",
        |a0, a1, a2, a3| kernels::attn_heads2_causal_f32(a0, a1, a2, a3),
        true,
        1e-4,
    );
    check::<half::f16>(
        "attention f16",
        |a0, a1, a2, a3| kernels::attn_heads2_f16(a0, a1, a2, a3),
        false,
        2e-3,
    );
    check::<half::f16>(
        "attention f16 causal",
        |a0, a1, a2, a3| kernels::attn_heads2_causal_f16(a0, a1, a2, a3),
        true,
        2e-3,
    );
    check::<half::bf16>(
        "attention bf16",
        |a0, a1, a2, a3| kernels::attn_heads2_bf16(a0, a1, a2, a3),
        false,
        1.6e-2,
    );
    check::<half::bf16>(
        "attention bf16 causal",
        |a0, a1, a2, a3| kernels::attn_heads2_causal_bf16(a0, a1, a2, a3),
        true,
        1.6e-2,
    );
}
