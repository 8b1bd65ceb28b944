//! PyPTO's second practice for dynamic dims, test several values of each:
//! every kernel's `SIZES` (what its spec and contract accept) and
//! `pypto_rt::testing::Sweep`, which runs a kernel at sizes chosen from
//! them and reports the first that fails with every param's shape. The
//! proof that it finds what hand-picked sizes miss: a swiglu whose loop
//! loses the last tile of a half that is a whole number of tiles passes at
//! every size of the old hand-picked grid, and the sweep finds it at 4096.

use pypto_rt::testing::{DimKind, Sweep, Tolerance};
use pypto_rt::{Device, Error};
use pypto_tests::{data, kernels};

type Vector = pypto_rt::Tensor<f32, (usize,)>;

fn relu_sweep(
    kernel: fn(&Vector, &mut Vector) -> Result<(), Error>,
) -> Result<usize, pypto_rt::testing::SweepFailure> {
    let dev = Device::host();
    Sweep::new(&kernels::relu_f32::SIZES)
        .max_elements(1 << 18)
        .run(Tolerance::exact(), |case| {
            let n = case.dim("N");
            let x = data(n, case.seed());
            let mut y = dev.zeros((n,))?;
            kernel(&dev.tensor_from(&x, (n,))?, &mut y)?;
            let want = x.iter().map(|&v| f64::from(v.max(0.0))).collect();
            Ok((y.to_vec()?.into_iter().map(f64::from).collect(), want))
        })
}

#[test]
fn sizes_describe_what_the_spec_and_contract_accept() {
    let s = &kernels::relu_f32::SIZES;
    assert_eq!(s.kernel, "relu_f32");
    assert_eq!(s.dims.len(), 1);
    assert_eq!(s.dims[0].label, "N");
    assert!(matches!(s.dims[0].kind, DimKind::Dynamic));
    let params: Vec<(&str, &[u8])> = s.params.iter().map(|p| (p.name, p.dims)).collect();
    assert_eq!(params, [("x", &[0u8][..]), ("y", &[0u8][..])]);
    // A STATIC axis lists what was built; a halving names the dim it doubles.
    let rows = &kernels::relu_rows::SIZES;
    assert!(matches!(rows.dims[1].kind, DimKind::Static(&[7, 64, 100])));
    let swiglu = &kernels::swiglu_f32::SIZES;
    let doubled: Vec<Option<u8>> = swiglu.dims.iter().map(|d| d.twice).collect();
    assert_eq!(doubled, [None, Some(2), None], "{swiglu:?}");
}

#[test]
fn the_sweep_tries_one_boundaries_and_block_counts() {
    let cases = Sweep::new(&kernels::relu_f32::SIZES)
        .max_size(1 << 20)
        .cases();
    let sizes: Vec<usize> = cases.iter().map(|c| c.dim("N")).collect();
    // 1, around 32 bytes and 256-byte repeats, tiles, one block's 8192
    // elements to two, and the 48-block cap (48 · 8192 = 393216).
    for n in [
        1, 7, 8, 9, 63, 64, 65, 4095, 4096, 4097, 8191, 8192, 8193, 16385, 393215, 393217, 65537,
    ] {
        assert!(sizes.contains(&n), "{n} not in {sizes:?}");
    }
    assert_eq!(cases[0].to_string(), "N = 3 (x: [3], y: [3])");
}

#[test]
fn relu_passes_the_sweep() {
    let cases = relu_sweep(|a, b| kernels::relu_f32(a, b)).unwrap();
    assert!(cases > 30, "{cases} cases");
}

#[test]
fn a_failure_names_the_first_size_and_every_shape() {
    let dev = Device::host();
    let err = Sweep::new(&kernels::relu_f32::SIZES)
        .run(Tolerance::exact(), |case| {
            let n = case.dim("N");
            let x = vec![1.0f32; n];
            let mut y = dev.zeros((n,))?;
            kernels::relu_f32(&dev.tensor_from(&x, (n,))?, &mut y)?;
            // A reference that is wrong from 8 elements on.
            let want = (0..n).map(|i| if i < 8 { 1.0 } else { 2.0 }).collect();
            Ok((y.to_vec()?.into_iter().map(f64::from).collect(), want))
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "sweep of kernel `relu_f32` failed at N = 9 (x: [9], y: [9]): element 8 is 1, the \
         reference 2 (tolerance abs 0, rel 0)"
    );
}

/// swiglu over `[rows, 2·half]`: out = a · b / (1 + exp(-a)) per row, a the
/// first half and b the second, in f64.
fn swiglu_reference(x: &[f32], rows: usize, half: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(rows * half);
    for r in 0..rows {
        for c in 0..half {
            let a = f64::from(x[r * 2 * half + c]);
            let b = f64::from(x[r * 2 * half + half + c]);
            out.push(a * b / (1.0 + (-a).exp()));
        }
    }
    out
}

type Rows = fn(
    &pypto_rt::Tensor<f32, (usize, usize)>,
    &mut pypto_rt::Tensor<f32, (usize, usize)>,
) -> Result<(), Error>;

/// fp32 swiglu: a few fp32 roundings (the product, exp within 2 ulps, the
/// sum and the quotient) of values in [-4, 4).
const SWIGLU_TOL: Tolerance = Tolerance {
    abs: 1e-6,
    rel: 1e-5,
};

fn swiglu_at(
    dev: &Device,
    kernel: Rows,
    rows: usize,
    half: usize,
) -> Result<(Vec<f64>, Vec<f64>), Error> {
    let x = data(rows * 2 * half, (rows * 31 + half) as u64);
    let mut out = dev.zeros((rows, half))?;
    kernel(&dev.tensor_from(&x, (rows, 2 * half))?, &mut out)?;
    Ok((
        out.to_vec()?.into_iter().map(f64::from).collect(),
        swiglu_reference(&x, rows, half),
    ))
}

#[test]
fn the_sweep_finds_a_wrong_tail_the_hand_picked_sizes_missed() {
    let dev = Device::host();
    let broken: Rows = |a, b| kernels::broken_swiglu_whole_tiles_f32(a, b);
    // The grid tests/rows.rs used before the sweep: every size passes.
    for rows in [1usize, 2, 7] {
        for half in [1usize, 2, 7, 31, 32, 33, 127, 1000, 2049, 4097, 7000, 8193] {
            let (got, want) = swiglu_at(&dev, broken, rows, half).unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() <= SWIGLU_TOL.abs + SWIGLU_TOL.rel * w.abs(),
                    "{rows}x{half}"
                );
            }
        }
    }
    // The sweep: the real builtin passes, the broken one fails at a half of
    // one whole tile.
    let sweep = |kernel: Rows| {
        Sweep::new(&kernels::swiglu_f32::SIZES)
            .max_elements(1 << 17)
            .run(SWIGLU_TOL, |case| {
                swiglu_at(&dev, kernel, case.dim("R"), case.dim("out.1"))
            })
    };
    sweep(|a, b| kernels::swiglu_f32(a, b)).unwrap();
    let err = sweep(broken).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "sweep of kernel `swiglu_f32` failed at R = 3, x.1 = 8192, out.1 = 4096 (x: [3, 8192], out: [3, 4096]): element "
        ),
        "{err}"
    );
}

#[test]
fn a_proptest_strategy_draws_valid_shapes() {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;
    let dev = Device::host();
    let strategy = Sweep::new(&kernels::swiglu_f32::SIZES)
        .max_elements(1 << 16)
        .strategy();
    let mut runner = TestRunner::deterministic();
    for _ in 0..24 {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let (rows, half) = (case.dim("R"), case.dim("out.1"));
        // The halving holds, and the case is under the cap.
        assert_eq!(case.dim("x.1"), 2 * half, "{case}");
        assert!(rows * half * 3 <= 1 << 16, "{case}");
        let (got, want) = swiglu_at(&dev, |a, b| kernels::swiglu_f32(a, b), rows, half).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= SWIGLU_TOL.abs + SWIGLU_TOL.rel * w.abs(),
                "{case}: element {i} is {g}, expected {w}"
            );
        }
    }
}
