//! builtin/matmul and builtin/batch_matmul (the cube path) against an f64
//! plain-Rust reference, over M from 0 to 7000 (several M tiles per block),
//! K across K tiles (up to 200) and N across N tiles (up to 144).
//!
//! Tolerances: 16-bit products are exact in fp32 and summed in fp32
//! (relative error about K·2⁻²⁴, negligible here), then rounded once to the
//! output type: fp16 rel 1e-3 (spacing 2⁻¹⁰), bf16 rel 8e-3 (2⁻⁷), with an
//! absolute floor of the same size for sums that cancel to near zero. fp32
//! inputs: products and sums rounded in fp32, rel and abs 1e-5.

use pypto_rt::{Const, Device};
use pypto_rt::{Error, Tensor};
use pypto_tests::{
    Float, Tolerance, assert_close, data_as, kernels, same_bits_at_block_counts,
    same_bits_at_every_block_count,
};

fn tol<T: Float>() -> Tolerance {
    match T::NAME {
        // fp32 sums of up to 200 products: relative error around K·2⁻²⁴.
        "f32" => Tolerance {
            abs: 1e-5,
            rel: 1e-5,
        },
        "f16" => Tolerance {
            abs: 1e-3,
            rel: 1e-3,
        },
        _ => Tolerance {
            abs: 8e-3,
            rel: 8e-3,
        },
    }
}

/// out[b][m][n] = Σ_k a[b][m][k] · b[b][k][n], in f64.
fn reference<T: Float>(a: &[T], b: &[T], dims: (usize, usize, usize, usize)) -> Vec<f64> {
    reference_with(a, b, dims, |bi, p, j, (_, _, k, n)| (bi * k + p) * n + j)
}

/// Σ_k a[b][m][k] · B(b, k, n) in f64, where `b_at(b, k, n, dims)` is the
/// index in `b` of B's element.
fn reference_with<T: Float>(
    a: &[T],
    b: &[T],
    dims: (usize, usize, usize, usize),
    b_at: impl Fn(usize, usize, usize, (usize, usize, usize, usize)) -> usize,
) -> Vec<f64> {
    let (batch, m, k, n) = dims;
    let mut out = vec![0f64; batch * m * n];
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                out[(bi * m + i) * n + j] = (0..k)
                    .map(|p| {
                        f64::from(a[(bi * m + i) * k + p].to_f32())
                            * f64::from(b[b_at(bi, p, j, dims)].to_f32())
                    })
                    .sum();
            }
        }
    }
    out
}

fn inputs<T: Float>(len: usize, seed: u64) -> Vec<T> {
    data_as::<f32>(len, seed)
        .iter()
        .map(|v| T::from_f32(v / 4.0))
        .collect()
}

/// M sizes: the sweep of the kernel's `SIZES` varying M (1, around 32
/// bytes, repeats and 128-row tiles, up to 1025), an empty M, and 4097
/// (many 128-row tiles per block), as the hand-picked list had.
fn sweep_ms(sizes: &'static pypto_rt::testing::KernelSizes) -> Vec<usize> {
    let mut ms = vec![0usize];
    ms.extend(
        pypto_rt::testing::Sweep::new(sizes)
            .max_size(1025)
            .cases()
            .iter()
            .filter(|c| c.varied() == Some("M"))
            .map(|c| c.dim("M")),
    );
    ms.push(4097);
    ms
}

fn check_f16<const K: usize, const N: usize>(ms: &[usize])
where
    Const<K>: kernels::matmul_f16::AAxis1,
    Const<N>: kernels::matmul_f16::BAxis1,
{
    let dev = Device::host();
    for &m in ms {
        let a = inputs::<half::f16>(m * K, (m + K) as u64);
        let b = inputs::<half::f16>(K * N, N as u64);
        let mut out = dev.zeros((m, Const::<N>)).unwrap();
        kernels::matmul_f16(
            &dev.tensor_from(&a, (m, Const::<K>)).unwrap(),
            &dev.tensor_from(&b, (Const::<K>, Const::<N>)).unwrap(),
            &mut out,
        )
        .unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        assert_close(
            &got,
            &reference(&a, &b, (1, m, K, N)),
            tol::<half::f16>(),
            &format!("matmul f16 {m}x{K}x{N}"),
        );
    }
}

#[test]
fn fp16_matmul_over_m_k_and_n_tiles() {
    let ms = sweep_ms(&kernels::matmul_f16::SIZES);
    check_f16::<1, 16>(&ms);
    check_f16::<7, 48>(&ms);
    check_f16::<64, 144>(&ms);
    check_f16::<200, 16>(&ms);
    // 7000 rows: about 146 per block, so two M tiles in each.
    check_f16::<64, 48>(&[7000]);
}

fn check_f32<const K: usize, const N: usize>(ms: &[usize])
where
    Const<K>: kernels::matmul_f32::AAxis1,
    Const<N>: kernels::matmul_f32::BAxis1,
{
    let dev = Device::host();
    for &m in ms {
        let a = inputs::<f32>(m * K, (m + K) as u64);
        let b = inputs::<f32>(K * N, N as u64);
        let mut out = dev.zeros((m, Const::<N>)).unwrap();
        kernels::matmul_f32(
            &dev.tensor_from(&a, (m, Const::<K>)).unwrap(),
            &dev.tensor_from(&b, (Const::<K>, Const::<N>)).unwrap(),
            &mut out,
        )
        .unwrap();
        assert_close(
            &out.to_vec().unwrap(),
            &reference(&a, &b, (1, m, K, N)),
            tol::<f32>(),
            &format!("matmul f32 {m}x{K}x{N}"),
        );
    }
}

#[test]
fn fp32_matmul_through_load_data_with_transpose() {
    let ms = sweep_ms(&kernels::matmul_f32::SIZES);
    check_f32::<1, 16>(&ms);
    check_f32::<7, 144>(&ms);
    check_f32::<70, 16>(&ms);
    check_f32::<200, 144>(&ms);
}

#[test]
fn bf16_matmul() {
    let dev = Device::host();
    for m in [1usize, 33, 300] {
        let a = inputs::<half::bf16>(m * 96, m as u64);
        let b = inputs::<half::bf16>(96 * 32, 5);
        let mut out = dev.zeros((m, Const::<32>)).unwrap();
        kernels::matmul_bf16(
            &dev.tensor_from(&a, (m, Const::<96>)).unwrap(),
            &dev.tensor_from(&b, (Const::<96>, Const::<32>)).unwrap(),
            &mut out,
        )
        .unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        assert_close(
            &got,
            &reference(&a, &b, (1, m, 96, 32)),
            tol::<half::bf16>(),
            &format!("matmul bf16 m={m}"),
        );
    }
}

#[test]
fn batched_matmul() {
    let dev = Device::host();
    for (batch, m) in [(1usize, 1usize), (3, 7), (2, 200), (0, 5), (4, 0)] {
        let a = inputs::<half::f16>(batch * m * 40, 1);
        let b = inputs::<half::f16>(batch * 40 * 32, 2);
        let mut out = dev.zeros((batch, m, Const::<32>)).unwrap();
        kernels::batch_matmul_f16(
            &dev.tensor_from(&a, (batch, m, Const::<40>)).unwrap(),
            &dev.tensor_from(&b, (batch, Const::<40>, Const::<32>))
                .unwrap(),
            &mut out,
        )
        .unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        assert_close(
            &got,
            &reference(&a, &b, (batch, m, 40, 32)),
            tol::<half::f16>(),
            &format!("batch_matmul {batch}x{m}"),
        );
    }
}

#[test]
fn batched_matmul_batches_must_agree() {
    let dev = Device::host();
    let a = dev.zeros::<half::f16, _>((2, 3, Const::<40>)).unwrap();
    let b = dev
        .zeros::<half::f16, _>((3, Const::<40>, Const::<32>))
        .unwrap();
    let mut out = dev.zeros((2, 3, Const::<32>)).unwrap();
    assert_eq!(
        kernels::batch_matmul_f16(&a, &b, &mut out)
            .unwrap_err()
            .to_string(),
        "kernel `batch_matmul_f16`: `b.0` is 3 but `a.0` is 2; they must be equal because \
         builtin/batch_matmul ties these axes together"
    );
}

/// Every cube kernel at every block count 1 to 48, on 33 rows (33 blocks
/// naturally, one row each) or 3 batches of 7: bit-identical to the natural
/// count, and within tolerance of the reference.
#[test]
fn every_block_count_gives_the_same_numbers() {
    let dev = Device::host();
    let m = 33;
    let to_f32 = |v: Vec<_>| -> Vec<f32> { v.iter().map(|x: &half::f16| x.to_f32()).collect() };

    let a = inputs::<half::f16>(m * 64, 1);
    let b = inputs::<half::f16>(64 * 48, 2);
    let (a_t, b_t) = (
        dev.tensor_from(&a, (m, Const::<64>)).unwrap(),
        dev.tensor_from(&b, (Const::<64>, Const::<48>)).unwrap(),
    );
    let got = same_bits_at_every_block_count("matmul f16", || {
        let nan = vec![half::f16::NAN; m * 48];
        let mut out = dev.tensor_from(&nan, (m, Const::<48>)).unwrap();
        kernels::matmul_f16(&a_t, &b_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want = reference(&a, &b, (1, m, 64, 48));
    assert_close(&to_f32(got), &want, tol::<half::f16>(), "matmul f16");

    let a = inputs::<f32>(m * 70, 3);
    let b = inputs::<f32>(70 * 16, 4);
    let (a_t, b_t) = (
        dev.tensor_from(&a, (m, Const::<70>)).unwrap(),
        dev.tensor_from(&b, (Const::<70>, Const::<16>)).unwrap(),
    );
    let got = same_bits_at_every_block_count("matmul f32", || {
        let nan = vec![f32::NAN; m * 16];
        let mut out = dev.tensor_from(&nan, (m, Const::<16>)).unwrap();
        kernels::matmul_f32(&a_t, &b_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want = reference(&a, &b, (1, m, 70, 16));
    assert_close(&got, &want, tol::<f32>(), "matmul f32");

    let a = inputs::<half::bf16>(m * 96, 5);
    let b = inputs::<half::bf16>(96 * 32, 6);
    let (a_t, b_t) = (
        dev.tensor_from(&a, (m, Const::<96>)).unwrap(),
        dev.tensor_from(&b, (Const::<96>, Const::<32>)).unwrap(),
    );
    let got = same_bits_at_every_block_count("matmul bf16", || {
        let nan = vec![half::bf16::NAN; m * 32];
        let mut out = dev.tensor_from(&nan, (m, Const::<32>)).unwrap();
        kernels::matmul_bf16(&a_t, &b_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let got: Vec<f32> = got.iter().map(|v| v.to_f32()).collect();
    let want = reference(&a, &b, (1, m, 96, 32));
    assert_close(&got, &want, tol::<half::bf16>(), "matmul bf16");

    let (batch, m) = (3, 7);
    let a = inputs::<half::f16>(batch * m * 40, 7);
    let b = inputs::<half::f16>(batch * 40 * 32, 8);
    let (a_t, b_t) = (
        dev.tensor_from(&a, (batch, m, Const::<40>)).unwrap(),
        dev.tensor_from(&b, (batch, Const::<40>, Const::<32>))
            .unwrap(),
    );
    let got = same_bits_at_every_block_count("batch_matmul f16", || {
        let nan = vec![half::f16::NAN; batch * m * 32];
        let mut out = dev.tensor_from(&nan, (batch, m, Const::<32>)).unwrap();
        kernels::batch_matmul_f16(&a_t, &b_t, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    let want = reference(&a, &b, (batch, m, 40, 32));
    assert_close(&to_f32(got), &want, tol::<half::f16>(), "batch_matmul f16");
}

type Matmul<T> = fn(
    &Tensor<T, (usize, Const<200>)>,
    &Tensor<T, (Const<200>, Const<144>)>,
    &mut Tensor<T, (usize, Const<144>)>,
) -> Result<(), Error>;
type BatchMatmul<T> = fn(
    &Tensor<T, (usize, usize, Const<200>)>,
    &Tensor<T, (usize, Const<200>, Const<144>)>,
    &mut Tensor<T, (usize, usize, Const<144>)>,
) -> Result<(), Error>;

/// Block counts for the cube kernels' larger shapes, whose rows outnumber
/// the blocks at every count: one block (M tiles of 128 and a partial
/// one), two and three (a block's rows cross a batch), counts that split
/// the rows unevenly, and the maximum.
const CUBE_COUNTS: [u32; 7] = [1, 2, 3, 5, 16, 47, 48];

/// matmul and batch_matmul in every dtype on every tiling path of
/// builtin/partials/cube_matmul.hbs: K = 200 (K tiles of 128 and 72, a
/// partial 16-row slab for fp32's B), N = 144 (N tiles of 128 and 16), and
/// 130 rows (M tiles of 128 and 2 when one block has them all);
/// batch_matmul over 2 batches of 70 rows, so that a block's rows cross
/// from one batch to the next. Bit-identical at each count of [`CUBE_COUNTS`], and within
/// tolerance of the reference.
#[test]
fn every_block_count_over_m_k_and_n_tiles_in_every_dtype() {
    fn matmul<T: Float>(kernel: Matmul<T>) {
        let dev = Device::host();
        let m = 130;
        let a = inputs::<T>(m * 200, 9);
        let b = inputs::<T>(200 * 144, 10);
        let (a_t, b_t) = (
            dev.tensor_from(&a, (m, Const::<200>)).unwrap(),
            dev.tensor_from(&b, (Const::<200>, Const::<144>)).unwrap(),
        );
        let what = format!("matmul {} {m}x200x144", T::NAME);
        let got = same_bits_at_block_counts(&what, &CUBE_COUNTS, || {
            let nan = vec![T::from_f32(f32::NAN); m * 144];
            let mut out = dev.tensor_from(&nan, (m, Const::<144>)).unwrap();
            kernel(&a_t, &b_t, &mut out).unwrap();
            out.to_vec().unwrap()
        });
        let got: Vec<f32> = got.iter().map(|v| v.to_f32()).collect();
        assert_close(
            &got,
            &reference(&a, &b, (1, m, 200, 144)),
            tol::<T>(),
            &what,
        );
    }
    fn batch_matmul<T: Float>(kernel: BatchMatmul<T>) {
        let dev = Device::host();
        let (batch, m) = (2, 70);
        let a = inputs::<T>(batch * m * 200, 11);
        let b = inputs::<T>(batch * 200 * 144, 12);
        let (a_t, b_t) = (
            dev.tensor_from(&a, (batch, m, Const::<200>)).unwrap(),
            dev.tensor_from(&b, (batch, Const::<200>, Const::<144>))
                .unwrap(),
        );
        let what = format!("batch_matmul {} {batch}x{m}x200x144", T::NAME);
        let got = same_bits_at_block_counts(&what, &CUBE_COUNTS, || {
            let nan = vec![T::from_f32(f32::NAN); batch * m * 144];
            let mut out = dev.tensor_from(&nan, (batch, m, Const::<144>)).unwrap();
            kernel(&a_t, &b_t, &mut out).unwrap();
            out.to_vec().unwrap()
        });
        let got: Vec<f32> = got.iter().map(|v| v.to_f32()).collect();
        assert_close(
            &got,
            &reference(&a, &b, (batch, m, 200, 144)),
            tol::<T>(),
            &what,
        );
    }
    matmul::<f32>(|a0, a1, a2| kernels::matmul_f32(a0, a1, a2));
    matmul::<half::f16>(|a0, a1, a2| kernels::matmul_f16(a0, a1, a2));
    matmul::<half::bf16>(|a0, a1, a2| kernels::matmul_bf16_tiles(a0, a1, a2));
    batch_matmul::<f32>(|a0, a1, a2| kernels::batch_matmul_f32_tiles(a0, a1, a2));
    batch_matmul::<half::f16>(|a0, a1, a2| kernels::batch_matmul_f16_tiles(a0, a1, a2));
    batch_matmul::<half::bf16>(|a0, a1, a2| kernels::batch_matmul_bf16_tiles(a0, a1, a2));
}

/// Panics at the first element where `got` and `want` differ (the whole
/// vectors are too long to print).
fn first_difference<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: element {i} is {:?}, expected {:?}",
            got[i], want[i]
        );
    }
}

/// Row pitches past what one Nd2NzParams copy can say (its source pitch
/// and slab stride are 16 bits): fp32 B with N > 4095 (16 rows of N per
/// slab), fp16 B with N > 65535 (an LM head's vocabulary), fp16 A with
/// K > 65535. Exact against plain Rust (whole numbers: fp32 sums exact,
/// fp16 outputs the same sums rounded).
#[test]
fn pitches_past_sixteen_bits_are_copied_row_by_row() {
    let dev = Device::host();
    let exact = |m: usize, k: usize, n: usize| -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let a: Vec<f32> = (0..m * k).map(|i| (i % 5) as f32 - 2.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 3) as f32 - 1.0).collect();
        let mut c = vec![0.0f32; m * n];
        for i in 0..m {
            for p in 0..k {
                let av = a[i * k + p];
                for j in 0..n {
                    c[i * n + j] += av * b[p * n + j];
                }
            }
        }
        (a, b, c)
    };
    let (m, k, n) = (3, 40, 4112);
    let (a, b, want) = exact(m, k, n);
    let mut out = dev.zeros((m, n)).unwrap();
    kernels::matmul_f32_dyn(
        &dev.tensor_from(&a, (m, k)).unwrap(),
        &dev.tensor_from(&b, (k, n)).unwrap(),
        &mut out,
    )
    .unwrap();
    first_difference(
        &out.to_vec().unwrap(),
        &want,
        &format!("fp32 [{m}, {k}] x [{k}, {n}]"),
    );
    let half =
        |v: &[f32]| -> Vec<half::f16> { v.iter().map(|&x| half::f16::from_f32(x)).collect() };
    for (m, k, n) in [(2, 16, 65552), (2, 65552, 16)] {
        let (a, b, want) = exact(m, k, n);
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_f16_dyn(
            &dev.tensor_from(&half(&a), (m, k)).unwrap(),
            &dev.tensor_from(&half(&b), (k, n)).unwrap(),
            &mut out,
        )
        .unwrap();
        // fp32 sums of whole numbers are exact; the output rounds them to fp16.
        let want: Vec<half::f16> = half(&want);
        let got: Vec<half::f16> = out.to_vec().unwrap();
        first_difference(&got, &want, &format!("fp16 [{m}, {k}] x [{k}, {n}]"));
    }
}

/// out = a · bᵀ in f64 for b stored [n, k].
fn reference_bt<T: Float>(a: &[T], b: &[T], dims: (usize, usize, usize, usize)) -> Vec<f64> {
    reference_with(a, b, dims, |bi, p, j, (_, _, k, n)| (bi * n + j) * k + p)
}

/// `transpose_b`: B stored [N, K] (a checkpoint's linear layer) read as it
/// is, in every dtype, over M, K and N tiles and tails, batched, and past
/// the 16-bit pitch (K > 65535, copied row by row).
#[test]
fn transpose_b_reads_b_stored_n_by_k() {
    let dev = Device::host();
    for (m, k, n) in [
        (1, 64, 48),
        (7, 200, 144),
        (130, 96, 272),
        (3, 7, 16),
        (0, 16, 32),
    ] {
        let a = inputs::<f32>(m * k, (m + k) as u64);
        let b = inputs::<f32>(n * k, n as u64);
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_bt_f32_dyn(
            &dev.tensor_from(&a, (m, k)).unwrap(),
            &dev.tensor_from(&b, (n, k)).unwrap(),
            &mut out,
        )
        .unwrap();
        let what = format!("matmul_bt f32 {m}x{k}x{n}");
        assert_close(
            &out.to_vec().unwrap(),
            &reference_bt(&a, &b, (1, m, k, n)),
            tol::<f32>(),
            &what,
        );

        let a = inputs::<half::f16>(m * k, (m + k) as u64);
        let b = inputs::<half::f16>(n * k, n as u64);
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_bt_f16_dyn(
            &dev.tensor_from(&a, (m, k)).unwrap(),
            &dev.tensor_from(&b, (n, k)).unwrap(),
            &mut out,
        )
        .unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        let what = format!("matmul_bt f16 {m}x{k}x{n}");
        assert_close(
            &got,
            &reference_bt(&a, &b, (1, m, k, n)),
            tol::<half::f16>(),
            &what,
        );
    }
    for m in [1, 33, 300] {
        let a = inputs::<half::bf16>(m * 200, m as u64);
        let b = inputs::<half::bf16>(144 * 200, 9);
        let mut out = dev.zeros((m, Const::<144>)).unwrap();
        kernels::matmul_bt_bf16(
            &dev.tensor_from(&a, (m, Const::<200>)).unwrap(),
            &dev.tensor_from(&b, (Const::<144>, Const::<200>)).unwrap(),
            &mut out,
        )
        .unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        let what = format!("matmul_bt bf16 {m}x200x144");
        assert_close(
            &got,
            &reference_bt(&a, &b, (1, m, 200, 144)),
            tol::<half::bf16>(),
            &what,
        );
    }
    let (batch, m, k, n) = (3, 20, 40, 48);
    let a = inputs::<half::f16>(batch * m * k, 5);
    let b = inputs::<half::f16>(batch * n * k, 6);
    let mut out = dev.zeros((batch, m, n)).unwrap();
    kernels::batch_matmul_bt_f16(
        &dev.tensor_from(&a, (batch, m, k)).unwrap(),
        &dev.tensor_from(&b, (batch, n, k)).unwrap(),
        &mut out,
    )
    .unwrap();
    let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
    assert_close(
        &got,
        &reference_bt(&a, &b, (batch, m, k, n)),
        tol::<half::f16>(),
        "batch_matmul_bt f16",
    );
    // K = 65552: Bᵀ's rows are further apart than Nd2NzParams can say.
    let (m, k, n) = (2, 65552, 16);
    let a: Vec<half::f16> = (0..m * k)
        .map(|i| half::f16::from_f32((i % 5) as f32 - 2.0))
        .collect();
    let b: Vec<half::f16> = (0..n * k)
        .map(|i| half::f16::from_f32((i % 3) as f32 - 1.0))
        .collect();
    let mut out = dev.zeros((m, n)).unwrap();
    kernels::matmul_bt_f16_dyn(
        &dev.tensor_from(&a, (m, k)).unwrap(),
        &dev.tensor_from(&b, (n, k)).unwrap(),
        &mut out,
    )
    .unwrap();
    // Whole numbers: the fp32 sums are exact, the output rounds them.
    let want: Vec<half::f16> = reference_bt(&a, &b, (1, m, k, n))
        .iter()
        .map(|&v| half::f16::from_f64(v))
        .collect();
    first_difference(&out.to_vec().unwrap(), &want, "matmul_bt f16 2x65552x16");
}

#[test]
fn transpose_b_gives_the_same_bits_at_every_distinct_block_count() {
    let dev = Device::host();
    let (m, k, n) = (300, 200, 272);
    let a = dev
        .tensor_from(&inputs::<half::f16>(m * k, 1), (m, k))
        .unwrap();
    let b = dev
        .tensor_from(&inputs::<half::f16>(n * k, 2), (n, k))
        .unwrap();
    // 3 x 2 output tiles of 128 x 256.
    same_bits_at_block_counts("matmul_bt_f16_dyn", &[1, 2, 3, 5, 6, 7, 24, 48], || {
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_bt_f16_dyn(&a, &b, &mut out).unwrap();
        out.to_vec().unwrap()
    });
}

/// int8 × int8 → int32 (b stored [N, K]): exact against plain Rust, over
/// M, K and N tiles and tails (K not a multiple of the 32-value int8
/// fractal), the extreme values (-128 · -128 summed K times), and block
/// counts.
#[test]
fn int8_products_accumulate_exactly_in_int32() {
    let dev = Device::host();
    let run = |m: usize, k: usize, n: usize, a: &[i8], b: &[i8]| -> Vec<i32> {
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_int8(
            &dev.tensor_from(a, (m, k)).unwrap(),
            &dev.tensor_from(b, (n, k)).unwrap(),
            &mut out,
        )
        .unwrap();
        out.to_vec().unwrap()
    };
    let reference = |m: usize, k: usize, n: usize, a: &[i8], b: &[i8]| -> Vec<i32> {
        let mut out = vec![0i32; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k)
                    .map(|p| i32::from(a[i * k + p]) * i32::from(b[j * k + p]))
                    .sum();
            }
        }
        out
    };
    let values = |len: usize, seed: u64| -> Vec<i8> {
        data_as::<f32>(len, seed)
            .iter()
            .map(|v| (v * 127.0) as i8)
            .collect()
    };
    for (m, k, n) in [
        (1, 32, 16),
        (7, 200, 144),
        (130, 96, 272),
        (3, 7, 16),
        (2, 1000, 48),
        (0, 64, 32),
    ] {
        let (a, b) = (values(m * k, (m + k) as u64), values(n * k, n as u64));
        first_difference(
            &run(m, k, n, &a, &b),
            &reference(m, k, n, &a, &b),
            &format!("int8 {m}x{k}x{n}"),
        );
    }
    // The extremes: every product 16384, summed over K = 4096.
    let (m, k, n) = (2, 4096, 16);
    let (a, b) = (vec![-128i8; m * k], vec![-128i8; n * k]);
    let got = run(m, k, n, &a, &b);
    assert!(got.iter().all(|&v| v == 16384 * 4096), "{:?}", &got[..4]);
    // K = 0: zeros.
    assert_eq!(run(3, 0, 16, &[], &[]), vec![0; 48]);
    // 3 x 2 output tiles over every distinct block count.
    let (m, k, n) = (300, 200, 272);
    let (a, b) = (values(m * k, 1), values(n * k, 2));
    let want = reference(m, k, n, &a, &b);
    let (at, bt) = (
        dev.tensor_from(&a, (m, k)).unwrap(),
        dev.tensor_from(&b, (n, k)).unwrap(),
    );
    let got = same_bits_at_block_counts_i32(&[1, 2, 5, 6, 7, 24, 48], || {
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_int8(&at, &bt, &mut out).unwrap();
        out.to_vec().unwrap()
    });
    first_difference(&got, &want, "int8 300x200x272");
}

/// [`same_bits_at_block_counts`] for int32 outputs (exact, so equal).
fn same_bits_at_block_counts_i32(counts: &[u32], mut run: impl FnMut() -> Vec<i32>) -> Vec<i32> {
    let natural = run();
    for &n in counts {
        let got = pypto_rt::with_host_blocks(n, &mut run).unwrap();
        assert_eq!(pypto_rt::last_launch().unwrap().blocks, n);
        first_difference(&got, &natural, &format!("{n} blocks"));
    }
    natural
}

/// Σ_k a·B + bias[n] in f64, for the reference of `bias`.
fn plus_bias(mut want: Vec<f64>, bias: &[f32]) -> Vec<f64> {
    let n = bias.len();
    for (i, v) in want.iter_mut().enumerate() {
        *v += f64::from(bias[i % n]);
    }
    want
}

/// `bias`: an fp32 [N] added to every row through the BiasTable, over M,
/// K and N tiles and tails (N = 272: a second tile of 16 columns, whose
/// bias starts 256 values in), K = 0 (the output is the bias), transposed
/// B with bf16 inputs and an fp32 output, and batches.
#[test]
fn bias_is_added_to_every_row() {
    let dev = Device::host();
    for (m, k, n) in [
        (1, 64, 48),
        (7, 200, 272),
        (130, 96, 272),
        (3, 7, 16),
        (0, 16, 32),
        (5, 0, 32),
    ] {
        let a = inputs::<half::f16>(m * k, (m + k) as u64);
        let b = inputs::<half::f16>(k * n, n as u64);
        let bias: Vec<f32> = inputs::<f32>(n, 3 + n as u64)
            .iter()
            .map(|v| v * 8.0)
            .collect();
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_bias_f16(
            &dev.tensor_from(&a, (m, k)).unwrap(),
            &dev.tensor_from(&b, (k, n)).unwrap(),
            &dev.tensor_from(&bias, (n,)).unwrap(),
            &mut out,
        )
        .unwrap();
        let got: Vec<f32> = out.to_vec().unwrap().iter().map(|v| v.to_f32()).collect();
        let want = plus_bias(reference(&a, &b, (1, m, k, n)), &bias);
        let what = format!("matmul_bias f16 {m}x{k}x{n}");
        assert_close(&got, &want, tol::<half::f16>(), &what);

        let a = inputs::<half::bf16>(m * k, (m + k) as u64);
        let b = inputs::<half::bf16>(n * k, n as u64);
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_bias_bt_bf16_f32(
            &dev.tensor_from(&a, (m, k)).unwrap(),
            &dev.tensor_from(&b, (n, k)).unwrap(),
            &dev.tensor_from(&bias, (n,)).unwrap(),
            &mut out,
        )
        .unwrap();
        let want = plus_bias(reference_bt(&a, &b, (1, m, k, n)), &bias);
        let what = format!("matmul_bias_bt bf16 -> f32 {m}x{k}x{n}");
        assert_close(&out.to_vec().unwrap(), &want, tol::<f32>(), &what);
    }
    let (batch, m, k, n) = (3, 20, 40, 48);
    let a = inputs::<f32>(batch * m * k, 5);
    let b = inputs::<f32>(batch * k * n, 6);
    let bias = inputs::<f32>(n, 7);
    let mut out = dev.zeros((batch, m, n)).unwrap();
    kernels::batch_matmul_bias_f32(
        &dev.tensor_from(&a, (batch, m, k)).unwrap(),
        &dev.tensor_from(&b, (batch, k, n)).unwrap(),
        &dev.tensor_from(&bias, (n,)).unwrap(),
        &mut out,
    )
    .unwrap();
    let want = plus_bias(reference(&a, &b, (batch, m, k, n)), &bias);
    assert_close(
        &out.to_vec().unwrap(),
        &want,
        tol::<f32>(),
        "batch_matmul_bias f32",
    );
}

#[test]
fn bias_gives_the_same_bits_at_every_distinct_block_count() {
    let dev = Device::host();
    let (m, k, n) = (300, 200, 272);
    let a = dev
        .tensor_from(&inputs::<half::f16>(m * k, 1), (m, k))
        .unwrap();
    let b = dev
        .tensor_from(&inputs::<half::f16>(k * n, 2), (k, n))
        .unwrap();
    let bias = dev.tensor_from(&inputs::<f32>(n, 3), (n,)).unwrap();
    same_bits_at_block_counts("matmul_bias_f16", &[1, 2, 3, 5, 6, 7, 24], || {
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_bias_f16(&a, &b, &bias, &mut out).unwrap();
        out.to_vec().unwrap()
    });
}

/// The bias's length is N's: another length is refused before launch.
#[test]
fn a_bias_of_another_length_is_refused() {
    let dev = Device::host();
    let a = dev
        .tensor_from(&inputs::<half::f16>(4 * 8, 1), (4, 8))
        .unwrap();
    let b = dev
        .tensor_from(&inputs::<half::f16>(8 * 32, 2), (8, 32))
        .unwrap();
    let bias = dev.tensor_from(&inputs::<f32>(16, 3), (16,)).unwrap();
    let mut out = dev.zeros((4, 32)).unwrap();
    let err = kernels::matmul_bias_f16(&a, &b, &bias, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `matmul_bias_f16`: `bias.0` is 16 but `b.1` is 32; they must be equal because \
         builtin/matmul ties these axes together"
    );
}

/// The output in another dtype than the inputs: L0C's fp32 sums leave
/// through Fixpipe as fp32 (no rounding past fp32's) or rounded to bf16.
#[test]
fn the_output_may_be_fp32_or_bf16_from_fp16_inputs() {
    let dev = Device::host();
    for (m, k, n) in [(1, 64, 48), (130, 200, 272), (3, 7, 16)] {
        let a = inputs::<half::f16>(m * k, (m + k) as u64);
        let b = inputs::<half::f16>(k * n, n as u64);
        let at = dev.tensor_from(&a, (m, k)).unwrap();
        let bt = dev.tensor_from(&b, (k, n)).unwrap();
        let want = reference(&a, &b, (1, m, k, n));
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_f16_f32(&at, &bt, &mut out).unwrap();
        let what = format!("matmul f16 -> f32 {m}x{k}x{n}");
        assert_close(&out.to_vec().unwrap(), &want, tol::<f32>(), &what);
        let mut out = dev.zeros((m, n)).unwrap();
        kernels::matmul_f16_bf16(&at, &bt, &mut out).unwrap();
        let got: Vec<f32> = out
            .to_vec()
            .unwrap()
            .iter()
            .map(|v: &half::bf16| v.to_f32())
            .collect();
        let what = format!("matmul f16 -> bf16 {m}x{k}x{n}");
        assert_close(&got, &want, tol::<half::bf16>(), &what);
    }
}

/// Decode shapes (M <= 16), and shapes with fewer wide output tiles than
/// cores, split N over every block, in tiles as wide as the block count
/// makes them: the numbers, and the same bits at every block count,
/// whatever the tile width (1024 columns over 24 blocks are 22 tiles of
/// 48; over 2 blocks, 4 of 256).
#[test]
fn decode_shapes_split_n_over_every_block_with_the_same_bits() {
    let dev = Device::host();
    for (m, k, n) in [
        (1, 200, 1024),
        (16, 72, 272),
        (5, 64, 16),
        (100, 72, 272),
        (300, 40, 272),
    ] {
        let a = inputs::<half::f16>(m * k, (m + k) as u64);
        let b = inputs::<half::f16>(k * n, n as u64);
        let at = dev.tensor_from(&a, (m, k)).unwrap();
        let bt = dev.tensor_from(&b, (k, n)).unwrap();
        let got = same_bits_at_block_counts("matmul_f16_dyn", &[1, 2, 3, 7, 22, 24], || {
            let mut out = dev.zeros((m, n)).unwrap();
            kernels::matmul_f16_dyn(&at, &bt, &mut out).unwrap();
            out.to_vec().unwrap()
        });
        let got: Vec<f32> = got.iter().map(|v| v.to_f32()).collect();
        let what = format!("decode f16 {m}x{k}x{n}");
        assert_close(
            &got,
            &reference(&a, &b, (1, m, k, n)),
            tol::<half::f16>(),
            &what,
        );
    }
}
