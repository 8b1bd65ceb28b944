//! The sanitizer's initcheck (tests/kernels/sanitize_init/): a vector input
//! never copied in, a copy that fills only half of the tile the Add reads,
//! an Mmad accumulating into an L0C nothing initialised, and an Mmad over
//! A rows nothing copied in are each reported with their exact message and
//! block; the same kernels with the bug fixed give exact results;
//! DataCopyPad's padding and Duplicate count as writes, and LoadData moving
//! a fractal's unwritten rows is no read; with initcheck off the bugs go
//! unreported.

use pypto_rt::{Const, Device, Error, Sanitize, with_sanitize};
use pypto_tests::{data, kernels};

const COLS: usize = 64;

/// Whole numbers, so sums are exact.
fn whole(n: usize, seed: u64) -> Vec<f32> {
    data(n, seed).iter().map(|v| (v * 16.0).round()).collect()
}

/// The vector kernel's inputs for `rows` rows: x and w.
fn vector_inputs(rows: usize) -> (Vec<f32>, Vec<f32>) {
    (
        whole(rows * COLS, rows as u64 + 3),
        whole(rows * COLS, rows as u64 + 101),
    )
}

/// Runs vector scenario `which` on `rows` rows: y, or the launch's error.
fn run_vector(rows: usize, which: i32) -> Result<Vec<f32>, Error> {
    let dev = Device::host();
    let (a, b) = vector_inputs(rows);
    let x = dev.tensor_from(&a, (rows, Const::<64>)).unwrap();
    let w = dev.tensor_from(&b, (rows, Const::<64>)).unwrap();
    let mut y = dev.zeros((rows, Const::<64>)).unwrap();
    kernels::sanitize_init_vector(&x, &w, which, &mut y)?;
    Ok(y.to_vec().unwrap())
}

/// What vector scenario `which` computes, element by element.
fn vector_reference(rows: usize, which: i32) -> Vec<f32> {
    let (x, w) = vector_inputs(rows);
    (0..rows * COLS)
        .map(|i| {
            // 2: x's last 4 columns are DataCopyPad's padding, 1.0.
            let xv = if which == 2 && i % COLS >= COLS - 4 {
                1.0
            } else {
                x[i]
            };
            // 3: w's buffer is Duplicate'd to 1.0.
            let wv = if which == 3 { 1.0 } else { w[i] };
            match which {
                -5 => (xv + wv).max(0.0),
                -6 => xv * 2.0 + wv,
                _ => xv + wv,
            }
        })
        .collect()
}

const BATCH_M: usize = 16;
const BATCH_K: usize = 32;
const BATCH_N: usize = 16;

/// Small whole numbers: half holds them exactly and fp32 sums them exactly.
fn small(n: usize, seed: u64) -> Vec<f32> {
    data(n, seed).iter().map(|v| (v * 4.0).round()).collect()
}

fn cube_inputs(batch: usize) -> (Vec<f32>, Vec<f32>) {
    (
        small(batch * BATCH_M * BATCH_K, batch as u64 + 11),
        small(BATCH_K * BATCH_N, 5),
    )
}

/// Runs cube scenario `which` on `batch` batches: c, or the launch's error.
fn run_cube(batch: usize, which: i32) -> Result<Vec<f32>, Error> {
    let dev = Device::host();
    let (a, w) = cube_inputs(batch);
    let to_half =
        |v: &[f32]| -> Vec<half::f16> { v.iter().map(|&f| half::f16::from_f32(f)).collect() };
    let a = dev
        .tensor_from(&to_half(&a), (batch, Const::<16>, Const::<32>))
        .unwrap();
    let w = dev
        .tensor_from(&to_half(&w), (Const::<32>, Const::<16>))
        .unwrap();
    let mut c = dev.zeros((batch, Const::<16>, Const::<16>)).unwrap();
    kernels::sanitize_init_cube(&a, &w, which, &mut c)?;
    Ok(c.to_vec().unwrap())
}

/// c[b] = a[b] · w, in plain Rust; with `which` 2 only a's first 7 rows
/// (c's other rows stay zero).
fn cube_reference(batch: usize, which: i32) -> Vec<f32> {
    let (a, w) = cube_inputs(batch);
    let rows = if which == 2 { 7 } else { BATCH_M };
    let mut c = vec![0f32; batch * BATCH_M * BATCH_N];
    for b in 0..batch {
        for m in 0..rows {
            for n in 0..BATCH_N {
                c[(b * BATCH_M + m) * BATCH_N + n] = (0..BATCH_K)
                    .map(|k| a[(b * BATCH_M + m) * BATCH_K + k] * w[k * BATCH_N + n])
                    .sum();
            }
        }
    }
    c
}

/// The message of a kernel error, asserting its block.
fn kernel_error(result: Result<Vec<f32>, Error>, want_block: u32, what: &str) -> String {
    match result {
        Err(Error::Kernel { block, message, .. }) => {
            assert_eq!(block, want_block, "{what}: {message}");
            message
        }
        other => panic!("{what}: expected a kernel error, got {other:?}"),
    }
}

const NEVER_COPIED: &str = "initcheck: Add reads bytes [0, 256) of src1 (a VECIN tensor at byte \
                            256 of the Unified Buffer) but byte 0 of it (byte 256 of the Unified \
                            Buffer) was never written in this block; copy data in \
                            (DataCopy/DataCopyPad) or write it (Duplicate, a vector instruction, \
                            SetValue) before reading it";
const HALF_COPIED: &str = "initcheck: Add reads bytes [0, 256) of src1 (a VECIN tensor at byte \
                           256 of the Unified Buffer) but byte 128 of it (byte 384 of the \
                           Unified Buffer) was never written in this block; copy data in \
                           (DataCopy/DataCopyPad) or write it (Duplicate, a vector instruction, \
                           SetValue) before reading it";
const L0C_NEVER_INITIALISED: &str = "initcheck: Mmad reads bytes [0, 64) of the C matrix (dst, \
                                     accumulated into) (a CO1 tensor at byte 0 of the L0C \
                                     buffer) but byte 0 of it (byte 0 of the L0C buffer) was \
                                     never written in this block; start the accumulation with \
                                     an Mmad that initialises C (cmatrixInitVal true) before \
                                     accumulating into it or moving it out";
const A_ROWS_MISSING: &str = "initcheck: Mmad reads bytes [224, 256) of the A matrix (fm) (an A2 \
                              tensor at byte 0 of the L0A buffer) but byte 224 of it (byte 224 of \
                              the L0A buffer) was never written in this block; LoadData it from \
                              L1 bytes that DataCopy wrote before the Mmad reads it";

#[test]
fn a_vector_input_never_copied_in_is_reported() {
    for rows in [1, 2, 5] {
        let what = format!("which 1, {rows} rows");
        assert_eq!(kernel_error(run_vector(rows, 1), 0, &what), NEVER_COPIED);
    }
}

const COMPOUND_NEVER_COPIED: &str = "initcheck: AddRelu reads bytes [0, 256) of src1 (a VECIN \
                                     tensor at byte 256 of the Unified Buffer) but byte 0 of it \
                                     (byte 256 of the Unified Buffer) was never written in this \
                                     block; copy data in (DataCopy/DataCopyPad) or write it \
                                     (Duplicate, a vector instruction, SetValue) before reading it";
const COMPOUND_DST_UNWRITTEN: &str = "initcheck: FusedMulAdd reads bytes [0, 256) of dst (a \
                                      VECOUT tensor at byte 512 of the Unified Buffer) but byte \
                                      0 of it (byte 512 of the Unified Buffer) was never written \
                                      in this block; copy data in (DataCopy/DataCopyPad) or \
                                      write it (Duplicate, a vector instruction, SetValue) before \
                                      reading it";

#[test]
fn count_form_compound_instructions_reading_unwritten_bytes_are_reported() {
    for rows in [1, 2, 5] {
        let what = format!("which 5, {rows} rows");
        assert_eq!(
            kernel_error(run_vector(rows, 5), 0, &what),
            COMPOUND_NEVER_COPIED
        );
        let what = format!("which 6, {rows} rows");
        assert_eq!(
            kernel_error(run_vector(rows, 6), 0, &what),
            COMPOUND_DST_UNWRITTEN
        );
        for which in [-5, -6] {
            let y = run_vector(rows, which)
                .unwrap_or_else(|e| panic!("which {which}, {rows} rows: {e}"));
            assert_eq!(
                y,
                vector_reference(rows, which),
                "which {which}, {rows} rows"
            );
        }
    }
    with_sanitize(Sanitize::OFF, || {
        run_vector(2, 5).unwrap();
        run_vector(2, 6).unwrap();
    });
}

#[test]
fn a_partial_copy_is_reported_at_its_first_unwritten_byte() {
    // Only row 1 (block 1) copies half of w's row.
    for rows in [2, 3, 5] {
        let what = format!("which 4, {rows} rows");
        assert_eq!(kernel_error(run_vector(rows, 4), 1, &what), HALF_COPIED);
    }
    // One row: block 1 does not exist, so nothing is missing.
    assert_eq!(run_vector(1, 4).unwrap(), vector_reference(1, 4));
}

#[test]
fn an_mmad_accumulating_into_an_uninitialised_l0c_is_reported() {
    for batch in [1, 2, 3] {
        let what = format!("cube which 1, batch {batch}");
        assert_eq!(
            kernel_error(run_cube(batch, 1), 0, &what),
            L0C_NEVER_INITIALISED
        );
    }
}

#[test]
fn an_mmad_over_rows_nothing_copied_in_is_reported() {
    // LoadData moves the unwritten rows 7-15 of a's fractal to L0A without
    // complaint (scenario 2 uses only rows 0-6); the Mmad over 16 rows
    // reads them.
    for batch in [1, 2, 3] {
        let what = format!("cube which 3, batch {batch}");
        assert_eq!(kernel_error(run_cube(batch, 3), 0, &what), A_ROWS_MISSING);
    }
}

#[test]
fn fixed_kernels_run_clean_with_exact_results() {
    for rows in [1, 2, 5, 50] {
        for which in [0, -1, -4] {
            let y = run_vector(rows, which)
                .unwrap_or_else(|e| panic!("which {which}, {rows} rows: {e}"));
            assert_eq!(
                y,
                vector_reference(rows, which),
                "which {which}, {rows} rows"
            );
        }
    }
    for batch in [1, 2, 3, 50] {
        for which in [0, -1, 2] {
            let c = run_cube(batch, which)
                .unwrap_or_else(|e| panic!("cube which {which}, batch {batch}: {e}"));
            assert_eq!(
                c,
                cube_reference(batch, which),
                "cube which {which}, batch {batch}"
            );
        }
    }
}

#[test]
fn padding_and_duplicate_count_as_writes() {
    for rows in [1, 2, 5, 50] {
        for which in [2, 3] {
            let y = run_vector(rows, which)
                .unwrap_or_else(|e| panic!("which {which}, {rows} rows: {e}"));
            assert_eq!(
                y,
                vector_reference(rows, which),
                "which {which}, {rows} rows"
            );
        }
    }
}

#[test]
fn without_initcheck_the_bugs_go_unreported() {
    let others = Sanitize::RACE | Sanitize::SYNC | Sanitize::MEM;
    for checks in [Sanitize::OFF, others] {
        with_sanitize(checks, || {
            for which in [1, 4] {
                run_vector(3, which).unwrap_or_else(|e| panic!("{checks}, which {which}: {e}"));
            }
            for which in [1, 3] {
                run_cube(2, which).unwrap_or_else(|e| panic!("{checks}, cube which {which}: {e}"));
            }
        });
    }
    // initcheck on its own finds them.
    with_sanitize(Sanitize::INIT, || {
        assert_eq!(kernel_error(run_vector(3, 1), 0, "init only"), NEVER_COPIED);
        assert_eq!(kernel_error(run_vector(3, 4), 1, "init only"), HALF_COPIED);
        assert_eq!(
            kernel_error(run_cube(2, 1), 0, "init only"),
            L0C_NEVER_INITIALISED
        );
        assert_eq!(kernel_error(run_cube(2, 3), 0, "init only"), A_ROWS_MISSING);
    });
}
