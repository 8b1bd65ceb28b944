//! The GEMM with the tiling of the onboard Atlas A3 measurement (shared
//! NPU-PERF-FACTS §1; template tests/kernels/model/gemm.hbs, spec
//! tests/kernels/model.yaml): out[m, n] = a[m, k] · b[n, k]ᵀ, fp16 in, fp32
//! out, against a plain-Rust fp32-accumulation reference, on the 4 × 6 grid
//! (24 blocks) and on smaller grids that walk several base blocks per core;
//! and the sizes its tiling cannot take, refused with their exact messages.
//!
//! Tolerance: fp16 × fp16 products are exact in fp32 (11-bit significands
//! make at most 22 bits), so the kernel and the reference sum the same k
//! exact terms in fp32, only in different orders (the cube adds 64-term
//! partial sums into L0C; the reference adds term by term). Any fp32
//! summation of k terms is within γ_k·Σ|terms| of the exact sum, γ_k =
//! k·u / (1 − k·u), u = 2⁻²⁴ (Higham, Accuracy and Stability of Numerical
//! Algorithms, §4.2), so the two differ by at most 2·γ_k·Σ_p |a[i,p]·b[j,p]|
//! per element. With inputs in [-1, 1) and k = 512 that is about 0.008
//! against sums of typical size 7: a wrong or missing term fails it.

use pypto_rt::{Device, Error, Tensor, last_launch, with_host_blocks};
use pypto_tests::{U, data, kernels};

/// Inputs in [-1, 1), rounded to fp16.
fn inputs(len: usize, seed: u64) -> Vec<half::f16> {
    data(len, seed)
        .iter()
        .map(|v| half::f16::from_f32(v / 4.0))
        .collect()
}

/// out[i][j] = Σ_p a[i][p] · b[j][p], summed in fp32 in order of p; and
/// Σ_p |a[i][p] · b[j][p]| (in f64), which bounds the rounding error.
fn reference(
    a: &[half::f16],
    b: &[half::f16],
    (m, n, k): (usize, usize, usize),
) -> (Vec<f32>, Vec<f64>) {
    let a: Vec<f32> = a.iter().map(|v| v.to_f32()).collect();
    let b: Vec<f32> = b.iter().map(|v| v.to_f32()).collect();
    let mut out = vec![0f32; m * n];
    let mut magnitude = vec![0f64; m * n];
    for i in 0..m {
        let row = &a[i * k..(i + 1) * k];
        for j in 0..n {
            let col = &b[j * k..(j + 1) * k];
            let mut acc = 0f32;
            let mut abs = 0f64;
            for (x, y) in row.iter().zip(col) {
                acc += x * y;
                abs += f64::from((x * y).abs());
            }
            out[i * n + j] = acc;
            magnitude[i * n + j] = abs;
        }
    }
    (out, magnitude)
}

type Input = Tensor<half::f16, (usize, usize)>;
type Output = Tensor<f32, (usize, usize)>;
type Gemm = fn(&Input, &Input, &mut Output) -> Result<(), Error>;

// The wrappers are generic over how tensors are passed; these fix one way.
fn gemm_a3(a: &Input, b: &Input, out: &mut Output) -> Result<(), Error> {
    kernels::gemm_a3(a, b, out)
}
fn gemm_a3_2x3(a: &Input, b: &Input, out: &mut Output) -> Result<(), Error> {
    kernels::gemm_a3_2x3(a, b, out)
}
fn gemm_a3_1x1(a: &Input, b: &Input, out: &mut Output) -> Result<(), Error> {
    kernels::gemm_a3_1x1(a, b, out)
}

/// Runs `gemm` on inputs seeded by the shape; the output starts as NaN so
/// that an element the kernel does not write fails.
fn run(gemm: Gemm, (m, n, k): (usize, usize, usize)) -> (Vec<f32>, Vec<half::f16>, Vec<half::f16>) {
    let dev = Device::host();
    let a = inputs(m * k, (m * 7 + k) as u64);
    let b = inputs(n * k, (n * 13 + k) as u64);
    let mut out = dev.tensor_from(&vec![f32::NAN; m * n], (m, n)).unwrap();
    gemm(
        &dev.tensor_from(&a, (m, k)).unwrap(),
        &dev.tensor_from(&b, (n, k)).unwrap(),
        &mut out,
    )
    .unwrap();
    (out.to_vec().unwrap(), a, b)
}

fn check(gemm: Gemm, what: &str, shape: (usize, usize, usize)) {
    let (m, n, k) = shape;
    let (got, a, b) = run(gemm, shape);
    let (want, magnitude) = reference(&a, &b, shape);
    let gamma = k as f64 * U / (1.0 - k as f64 * U);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let allowed = 2.0 * gamma * magnitude[i];
        let off = (f64::from(*g) - f64::from(*w)).abs();
        // A NaN (an element never written) fails too.
        assert!(
            off <= allowed,
            "{what} {m}x{n}x{k}: out[{}][{}] is {g}, the fp32 reference {w}: off by {off:e}, \
             {allowed:e} allowed",
            i / n,
            i % n
        );
    }
}

#[test]
fn matches_the_reference_on_the_a3_grid_of_24_cores() {
    // One base block per core, two K transfers (k = 2 · 256).
    check(gemm_a3, "gemm_a3", (512, 1536, 512));
    assert_eq!(last_launch().unwrap().blocks, 24);
}

#[test]
fn walks_several_base_blocks_per_core() {
    // 2 × 3 grid: each core's 256 × 512 region is 2 × 2 base blocks, each
    // over two K transfers.
    check(gemm_a3_2x3, "gemm_a3_2x3", (512, 1536, 512));
    assert_eq!(last_launch().unwrap().blocks, 6);
    // One core: 2 × 2 base blocks of three K transfers each, so the L1
    // buffer a base block starts in alternates.
    check(gemm_a3_1x1, "gemm_a3_1x1", (256, 512, 768));
    assert_eq!(last_launch().unwrap().blocks, 1);
}

#[test]
fn any_block_count_gives_the_same_numbers() {
    // Block b takes grid cells b, b + blocks, …: fewer blocks than cells
    // take several, more leave some idle.
    let shape = (256, 768, 256);
    let (want, _, _) = run(gemm_a3_2x3, shape);
    assert_eq!(last_launch().unwrap().blocks, 6);
    for blocks in [1, 4, 7] {
        let (got, _, _) = with_host_blocks(blocks, || run(gemm_a3_2x3, shape)).unwrap();
        assert_eq!(last_launch().unwrap().blocks, blocks);
        let same = got
            .iter()
            .zip(&want)
            .all(|(g, w)| g.to_bits() == w.to_bits());
        assert!(same, "{blocks} blocks give other numbers than 6");
    }
}

#[test]
fn an_empty_k_gives_zeros() {
    for (gemm, what, shape) in [
        (gemm_a3 as Gemm, "gemm_a3", (512, 1536, 0)),
        (gemm_a3_1x1, "gemm_a3_1x1", (256, 512, 0)),
    ] {
        let (got, _, _) = run(gemm, shape);
        assert!(got.iter().all(|v| v.to_bits() == 0), "{what}: not all +0.0");
    }
}

#[test]
fn sizes_the_tiling_cannot_take_are_refused() {
    let dev = Device::host();
    let call = |gemm: Gemm, (m, n, k): (usize, usize, usize)| {
        let a = dev.zeros::<half::f16, _>((m, k)).unwrap();
        let b = dev.zeros::<half::f16, _>((n, k)).unwrap();
        let mut out = dev.zeros::<f32, _>((m, n)).unwrap();
        gemm(&a, &b, &mut out).unwrap_err().to_string()
    };
    // m = 256 is two base blocks, but the 4 core rows need 128 each.
    assert_eq!(
        call(gemm_a3, (256, 1536, 512)),
        "kernel `gemm_a3`: `a.0` is 256, not a multiple of 512 (128 times split_m = 4: each of \
         the split_m parts of m is walked in whole base blocks of baseM = 128 rows)"
    );
    assert_eq!(
        call(gemm_a3, (512, 1024, 512)),
        "kernel `gemm_a3`: `b.0` is 1024, not a multiple of 1536 (256 times split_n = 6: each of \
         the split_n parts of n is walked in whole base blocks of baseN = 256 columns)"
    );
    assert_eq!(
        call(gemm_a3_2x3, (256, 768, 320)),
        "kernel `gemm_a3_2x3`: `a.1` is 320, not a multiple of 256 (each GM->L1 transfer brings \
         stepK = 4 slices of baseK = 64)"
    );
    // The smaller grids have their own multiples.
    assert_eq!(
        call(gemm_a3_2x3, (128, 768, 256)),
        "kernel `gemm_a3_2x3`: `a.0` is 128, not a multiple of 256 (128 times split_m = 2: each of \
         the split_m parts of m is walked in whole base blocks of baseM = 128 rows)"
    );
    // b's k must be a's.
    let a = dev.zeros::<half::f16, _>((128, 256)).unwrap();
    let b = dev.zeros::<half::f16, _>((256, 512)).unwrap();
    let mut out = dev.zeros::<f32, _>((128, 256)).unwrap();
    assert_eq!(
        gemm_a3_1x1(&a, &b, &mut out).unwrap_err().to_string(),
        "kernel `gemm_a3_1x1`: `b.1` is 512 but `a.1` is 256; they must be equal because they are \
         the dim `K`"
    );
}

#[test]
fn a_k_past_the_16_bit_row_pitch_is_copied_row_by_row() {
    // Nd2NzParams::srcDValue holds a GM row pitch of at most 65535
    // elements; k = 65536 takes the kernel's copy of one row at a time.
    check(gemm_a3_1x1, "gemm_a3_1x1", (128, 256, 65536));
}
