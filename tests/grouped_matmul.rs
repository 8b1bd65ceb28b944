//! builtin/grouped_matmul (issue 28; kernels in tests/kernels/grouped.yaml)
//! against a plain-Rust reference: the rows of x in groups of
//! group_list[e] rows, each group times its own expert's weight ([E, K, N],
//! or [E, N, K] with transpose_b), in f64. Every sweep case (the sweep of
//! each kernel's `SIZES`: M, and E and K where DYNAMIC) runs four splits
//! of the rows: uneven groups with empty ones, every row in one group (a
//! middle one), every row in the last group, and groups of 129 rows (a
//! 128-row tile and a one-row tile each) as far as the rows go. Then every
//! block count, K = 0, M = 0, and the errors word for word; the broken copy
//! of tests/support/mutants.rs fails the same checks.
//!
//! Tolerances as tests/matmul.rs's: 16-bit products are exact in fp32 and
//! summed in fp32, then rounded once to the output type: fp16 rel and abs
//! 1e-3, bf16 8e-3; fp32 inputs or output 1e-5.

use pypto_rt::testing::{Case, KernelSizes, Sweep, SweepFailure, Tolerance};
use pypto_rt::{Const, Device, Error};
use pypto_tests::{Float, data, kernel_message, kernels, same_bits_at_every_block_count};

/// The sizes of one call: rows, experts, K, N, and the weight's layout.
#[derive(Clone, Copy, Debug)]
struct Dims {
    m: usize,
    e: usize,
    k: usize,
    n: usize,
    transpose_b: bool,
}

/// A kernel's wrapper, taking its inputs as slices: x, weight, group_list.
/// Returns the output, which starts as NaN everywhere.
type Run<T, O> = fn(&[T], &[T], &[i32], Dims) -> Result<Vec<O>, Error>;

/// A `Run` for kernel `$kernel`, from the shapes of its four params.
macro_rules! runner {
    ($name:ident, $kernel:ident, $t:ty, $o:ty, |$d:ident| $x:expr, $w:expr, $g:expr, $out:expr) => {
        fn $name(x: &[$t], w: &[$t], g: &[i32], $d: Dims) -> Result<Vec<$o>, Error> {
            let dev = Device::host();
            let mut out =
                dev.tensor_from(&vec![<$o as Float>::from_f32(f32::NAN); $d.m * $d.n], $out)?;
            kernels::$kernel(
                &dev.tensor_from(x, $x)?,
                &dev.tensor_from(w, $w)?,
                &dev.tensor_from(g, $g)?,
                &mut out,
            )?;
            out.to_vec()
        }
    };
}

type F16 = half::f16;
type Bf16 = half::bf16;

runner!(
    gmm_f16_e8,
    gmm_f16_e8,
    F16,
    F16,
    |d| (d.m, Const::<200>),
    (Const::<8>, Const::<200>, Const::<272>),
    (Const::<8>,),
    (d.m, Const::<272>)
);
runner!(
    gmm_bf16_e8,
    gmm_bf16_e8,
    Bf16,
    Bf16,
    |d| (d.m, Const::<200>),
    (Const::<8>, Const::<200>, Const::<272>),
    (Const::<8>,),
    (d.m, Const::<272>)
);
runner!(
    gmm_f16_e8_bt,
    gmm_f16_e8_bt,
    F16,
    F16,
    |d| (d.m, Const::<200>),
    (Const::<8>, Const::<272>, Const::<200>),
    (Const::<8>,),
    (d.m, Const::<272>)
);
runner!(
    gmm_bf16_any_bt,
    gmm_bf16_any_bt,
    Bf16,
    Bf16,
    |d| (d.m, Const::<200>),
    (d.e, Const::<272>, Const::<200>),
    (d.e,),
    (d.m, Const::<272>)
);
runner!(
    gmm_f32_any,
    gmm_f32_any,
    f32,
    f32,
    |d| (d.m, d.k),
    (d.e, d.k, Const::<48>),
    (d.e,),
    (d.m, Const::<48>)
);
runner!(
    gmm_f16_e8_to_f32,
    gmm_f16_e8_to_f32,
    F16,
    f32,
    |d| (d.m, Const::<200>),
    (Const::<8>, Const::<200>, Const::<272>),
    (Const::<8>,),
    (d.m, Const::<272>)
);
runner!(
    broken_gmm,
    broken_grouped_matmul_floor_tiles_f32,
    f32,
    f32,
    |d| (d.m, d.k),
    (Const::<8>, d.k, Const::<32>),
    (Const::<8>,),
    (d.m, Const::<32>)
);

/// The tolerance for inputs `T` and output `O`.
fn tol<T: Float, O: Float>() -> Tolerance {
    match (T::NAME, O::NAME) {
        (_, "f32") => Tolerance {
            abs: 1e-5,
            rel: 1e-5,
        },
        (_, "f16") => Tolerance {
            abs: 1e-3,
            rel: 1e-3,
        },
        _ => Tolerance {
            abs: 8e-3,
            rel: 8e-3,
        },
    }
}

/// `n` values in [-1, 1) rounded to `T`, from a seed.
fn values<T: Float>(n: usize, seed: u64) -> Vec<T> {
    data(n, seed)
        .into_iter()
        .map(|v| T::from_f32(v / 4.0))
        .collect()
}

/// The four splits of `m` rows into `e` groups (see the file's doc):
/// uneven with empty groups, all in a middle group, all in the last, and
/// groups of 129 from the first on.
fn splits(m: usize, e: usize, seed: u64) -> Vec<Vec<i32>> {
    if e == 0 {
        return vec![];
    }
    // Uneven: weights from the seed, every third group empty (the last one
    // takes what rounding leaves, so the counts sum to m).
    let w: Vec<f32> = data(e, seed)
        .into_iter()
        .enumerate()
        .map(|(i, v)| if i % 3 == 1 { 0.0 } else { v + 4.5 })
        .collect();
    let total: f32 = w.iter().sum();
    let mut left = m as i32;
    let mut uneven: Vec<i32> = w
        .iter()
        .map(|v| {
            let c = ((v / total * m as f32).floor() as i32).min(left);
            left -= c;
            c
        })
        .collect();
    uneven[e - 1] += left;
    let mut middle = vec![0; e];
    middle[e / 2] = m as i32;
    let mut last = vec![0; e];
    last[e - 1] = m as i32;
    let mut tiles = vec![0; e];
    let mut left = m as i32;
    for c in tiles.iter_mut() {
        *c = left.min(129);
        left -= *c;
    }
    tiles[e - 1] += left;
    vec![uneven, middle, last, tiles]
}

/// out[r] = x[r] · weight[e] in f64 for every row r of group e.
fn reference<T: Float>(x: &[T], w: &[T], groups: &[i32], d: Dims) -> Vec<f64> {
    let mut out = Vec::with_capacity(d.m * d.n);
    let mut row = 0;
    for (e, &count) in groups.iter().enumerate() {
        for r in row..row + count as usize {
            for n in 0..d.n {
                out.push(
                    (0..d.k)
                        .map(|k| {
                            let at = if d.transpose_b {
                                (e * d.n + n) * d.k + k
                            } else {
                                (e * d.k + k) * d.n + n
                            };
                            f64::from(x[r * d.k + k].to_f32()) * f64::from(w[at].to_f32())
                        })
                        .sum(),
                );
            }
        }
        row += count as usize;
    }
    assert_eq!(row, d.m, "the split covers the rows");
    out
}

/// Runs `f` on inputs from `seed` with `groups`; returns the output and
/// the reference's, as f64.
fn run<T: Float, O: Float>(
    f: Run<T, O>,
    d: Dims,
    groups: &[i32],
    seed: u64,
) -> Result<(Vec<f64>, Vec<f64>), Error> {
    let x: Vec<T> = values(d.m * d.k, seed);
    let w: Vec<T> = values(d.e * d.k * d.n, seed + 1);
    let got = f(&x, &w, groups, d)?;
    let got = got.iter().map(|v| f64::from(v.to_f32())).collect();
    Ok((got, reference(&x, &w, groups, d)))
}

/// The case's sizes: M, and E and K where the kernel has them DYNAMIC.
fn dims_of(case: &Case, e: Option<usize>, k: Option<usize>, n: usize, transpose_b: bool) -> Dims {
    Dims {
        m: case.dim("M"),
        e: e.unwrap_or_else(|| case.dim("E")),
        k: k.unwrap_or_else(|| case.dim("K")),
        n,
        transpose_b,
    }
}

/// `f` over the sweep of its sizes (M up to 1025), each case at the four
/// splits of [`splits`], every output element compared.
fn check<T: Float, O: Float>(
    f: Run<T, O>,
    sizes: &KernelSizes,
    dims: impl Fn(&Case) -> Dims,
) -> Result<usize, SweepFailure> {
    Sweep::new(sizes)
        .max_size(1025)
        .max_elements(1 << 19)
        .run(tol::<T, O>(), |case| {
            let d = dims(case);
            let mut got = Vec::new();
            let mut want = Vec::new();
            for (i, groups) in splits(d.m, d.e, case.seed()).iter().enumerate() {
                let (g, w) = run(f, d, groups, case.seed() + 10 * i as u64)?;
                got.extend(g);
                want.extend(w);
            }
            Ok((got, want))
        })
}

#[test]
fn grouped_matmul_matches_the_reference_in_every_dtype_and_layout() {
    let cases = check(gmm_f16_e8, &kernels::gmm_f16_e8::SIZES, |c| {
        dims_of(c, Some(8), Some(200), 272, false)
    })
    .unwrap();
    assert!(cases > 15, "{cases} cases");
    check(gmm_bf16_e8, &kernels::gmm_bf16_e8::SIZES, |c| {
        dims_of(c, Some(8), Some(200), 272, false)
    })
    .unwrap();
    check(gmm_f16_e8_bt, &kernels::gmm_f16_e8_bt::SIZES, |c| {
        dims_of(c, Some(8), Some(200), 272, true)
    })
    .unwrap();
    check(gmm_f16_e8_to_f32, &kernels::gmm_f16_e8_to_f32::SIZES, |c| {
        dims_of(c, Some(8), Some(200), 272, false)
    })
    .unwrap();
}

#[test]
fn grouped_matmul_takes_any_number_of_experts() {
    let cases = check(gmm_bf16_any_bt, &kernels::gmm_bf16_any_bt::SIZES, |c| {
        dims_of(c, None, Some(200), 272, true)
    })
    .unwrap();
    assert!(cases > 20, "{cases} cases");
    let cases = check(gmm_f32_any, &kernels::gmm_f32_any::SIZES, |c| {
        dims_of(c, None, None, 48, false)
    })
    .unwrap();
    assert!(cases > 40, "{cases} cases");
}

#[test]
fn grouped_matmul_with_k_0_writes_zeros_and_with_m_0_nothing() {
    let d = Dims {
        m: 40,
        e: 3,
        k: 0,
        n: 48,
        transpose_b: false,
    };
    let (got, want) = run(gmm_f32_any, d, &[25, 0, 15], 1).unwrap();
    assert!(want.iter().all(|&v| v == 0.0));
    assert_eq!(got, want);
    // No row: every group empty, one expert or none.
    for e in [0, 1, 5] {
        let d = Dims {
            m: 0,
            e,
            k: 16,
            ..d
        };
        let (got, want) = run(gmm_f32_any, d, &vec![0; e], 2).unwrap();
        assert!(got.is_empty() && want.is_empty());
    }
}

#[test]
fn grouped_matmul_gives_the_same_bits_at_every_block_count() {
    let d = Dims {
        m: 300,
        e: 8,
        k: 200,
        n: 272,
        transpose_b: false,
    };
    let groups = [40, 0, 129, 1, 0, 0, 100, 30];
    let mut want = Vec::new();
    let got = same_bits_at_every_block_count("grouped_matmul", || {
        let (got, w) = run(gmm_bf16_e8, d, &groups, 3).unwrap();
        want = w;
        got.into_iter().map(|v| v as f32).collect::<Vec<f32>>()
    });
    let within = tol::<Bf16, Bf16>();
    for (g, w) in got.iter().zip(&want) {
        let g = f64::from(*g);
        assert!(
            (g - w).abs() <= within.abs + within.rel * w.abs(),
            "{g} vs {w}"
        );
    }
}

/// Calls gmm_f16_e8 with `groups` for 20 rows, at `blocks` blocks (or the
/// kernel's own 24); returns the kernel error's message.
fn refused(groups: [i32; 8], blocks: Option<u32>) -> String {
    let d = Dims {
        m: 20,
        e: 8,
        k: 200,
        n: 272,
        transpose_b: false,
    };
    let call = || run(gmm_f16_e8, d, &groups, 4);
    let err = match blocks {
        Some(n) => pypto_rt::with_host_blocks(n, call).unwrap(),
        None => call(),
    }
    .unwrap_err();
    let Error::Kernel { kernel, .. } = &err else {
        panic!("expected a kernel error, got {err:?}");
    };
    assert_eq!(*kernel, "gmm_f16_e8");
    kernel_message(err)
}

#[test]
fn counts_that_do_not_sum_to_the_rows_or_a_negative_count_are_errors() {
    for blocks in [None, Some(1), Some(7), Some(48)] {
        let message = refused([5, 0, 5, 5, 0, 0, 0, 4], blocks);
        let want = "gmm_f16_e8: group_list counts 19 rows in all, but x has 20";
        assert!(message.contains(want), "{message}");
        let message = refused([5, 0, 5, 5, 0, 0, 0, 6], blocks);
        let want = "gmm_f16_e8: group_list counts 21 rows in all, but x has 20";
        assert!(message.contains(want), "{message}");
        // A negative count, even where the counts still sum to M.
        let message = refused([5, 0, 7, -2, 0, 0, 5, 5], blocks);
        let want = "gmm_f16_e8: group_list[3] = -2 is a negative row count";
        assert!(message.contains(want), "{message}");
        let message = refused([i32::MIN, 0, 0, 0, 0, 0, 0, 20], blocks);
        let want = "gmm_f16_e8: group_list[0] = -2147483648 is a negative row count";
        assert!(message.contains(want), "{message}");
    }
    // Counts past what 32 bits hold in all: summed in 64 bits.
    let message = refused([i32::MAX, i32::MAX, 0, 0, 0, 0, 0, 0], None);
    assert!(
        message.contains("gmm_f16_e8: group_list counts 4294967294 rows in all, but x has 20"),
        "{message}"
    );
}

#[test]
fn grouped_matmul_checks_its_shapes_before_launching() {
    let dev = Device::host();
    let x = dev.zeros::<f32, _>((5, 16)).unwrap();
    let w = dev.zeros((3, 16, Const::<48>)).unwrap();
    let g = dev.zeros((4,)).unwrap();
    let mut out = dev.zeros((5, Const::<48>)).unwrap();
    let err = kernels::gmm_f32_any(&x, &w, &g, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `gmm_f32_any`: `group_list.0` is 4 but `weight.0` is 3; they must be equal \
         because they are the dim `E`"
    );
    let w = dev.zeros((4, 17, Const::<48>)).unwrap();
    let err = kernels::gmm_f32_any(&x, &w, &g, &mut out).unwrap_err();
    assert!(err.to_string().contains("`weight.1` is 17"), "{err}");
}

// ---- broken builtins ------------------------------------------------------------

/// The grouped_matmul mutant of tests/support/mutants.rs fails the checks
/// the builtin passes (tests/rows.rs leaves it to this file).
#[test]
fn broken_grouped_matmul_fails_the_checks() {
    let failure = check(
        broken_gmm,
        &kernels::broken_grouped_matmul_floor_tiles_f32::SIZES,
        |c| Dims {
            m: c.dim("R"),
            e: 8,
            k: c.dim("C"),
            n: 32,
            transpose_b: false,
        },
    )
    .unwrap_err();
    // Rows past a group's last whole tile are never written: NaN.
    assert!(failure.problem.contains("is NaN"), "{failure}");
    let mutants: Vec<&str> = pypto_tests::mutants::MUTANTS
        .iter()
        .filter(|m| m.builtin == "grouped_matmul")
        .map(|m| m.name)
        .collect();
    assert_eq!(
        mutants,
        ["broken_grouped_matmul_floor_tiles_f32"],
        "every grouped_matmul mutant is checked here"
    );
}
