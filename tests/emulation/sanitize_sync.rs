//! The sanitizer's synccheck and memcheck (tests/kernels/sanitize_sync/):
//! an unpaired `SetFlag`, an event ID never released, a queue buffer never
//! freed and two blocks writing the same output bytes are each reported
//! with their exact message and block; the same kernel with the bug fixed
//! gives exact results; with the checks off the bugs go unreported.

use pypto_rt::{Const, Device, Error, Sanitize, with_sanitize};
use pypto_tests::{data, kernels};

const COLS: usize = 64;

/// Whole numbers, so sums are exact in any order.
fn whole(n: usize, seed: u64) -> Vec<f32> {
    data(n, seed).iter().map(|v| (v * 16.0).round()).collect()
}

/// Runs `which` on `rows` rows of x (y starts at zero): x, y and the result.
fn run(rows: usize, which: i32) -> (Vec<f32>, Vec<f32>, Result<(), Error>) {
    let dev = Device::host();
    let a = whole(rows * COLS, rows as u64 + 7);
    let x = dev.tensor_from(&a, (rows, Const::<64>)).unwrap();
    let mut y = dev.zeros((rows, Const::<64>)).unwrap();
    let result = kernels::sanitize_sync(&x, which, &mut y).map(|_| ());
    (a, y.to_vec().unwrap(), result)
}

fn doubled(a: &[f32]) -> Vec<f32> {
    a.iter().map(|v| v * 2.0).collect()
}

/// The error of `which`, asserting its block.
fn error(rows: usize, which: i32, want_block: u32) -> String {
    match run(rows, which).2 {
        Err(Error::Kernel { block, message, .. }) => {
            assert_eq!(block, want_block, "which {which}, {rows} rows: {message}");
            message
        }
        other => panic!("which {which}, {rows} rows: expected a kernel error, got {other:?}"),
    }
}

const UNPAIRED: &str = "synccheck: SetFlag<HardEvent::MTE2_V>(1) was never waited for when the \
                        block ended; add WaitFlag<HardEvent::MTE2_V>(1) before its consumer, or \
                        remove the SetFlag";
const UNRELEASED: &str = "synccheck: TPipe::AllocEventID<HardEvent::V_MTE3> handed out ID 0, \
                          which was never released when the block ended; call \
                          ReleaseEventID<HardEvent::V_MTE3>(0) once the ID's last WaitFlag is \
                          done";
const UNFREED: &str = "synccheck: a buffer of TQue<VECOUT> was dequeued but never freed when the \
                       block ended; call FreeTensor after its last use";
const OVERLAP: &str = "memcheck: blocks 0 and 1 both write bytes [128, 256) of `y` without an \
                       atomic mode, so the result depends on which block writes last; give each \
                       block its own part of the output, or accumulate with SetAtomicAdd";

#[test]
fn synccheck_reports_each_leak_at_the_end_of_the_block() {
    for rows in [1, 2, 5] {
        assert_eq!(error(rows, 1, 0), UNPAIRED, "{rows} rows");
        assert_eq!(error(rows, 2, 0), UNRELEASED, "{rows} rows");
        assert_eq!(error(rows, 3, 0), UNFREED, "{rows} rows");
    }
}

#[test]
fn fixed_kernels_run_clean_with_exact_results() {
    for rows in [1, 2, 5, 50] {
        for which in [0, -1, -2, -3, -4] {
            let (a, y, result) = run(rows, which);
            result.unwrap_or_else(|e| panic!("which {which}, {rows} rows: {e}"));
            assert_eq!(y, doubled(&a), "which {which}, {rows} rows");
        }
    }
}

#[test]
fn memcheck_reports_overlapping_blocks_by_the_higher_one() {
    for rows in [2, 3, 5] {
        assert_eq!(error(rows, 4, 1), OVERLAP, "{rows} rows");
    }
    // One block overlaps nothing.
    let (a, y, result) = run(1, 4);
    result.unwrap();
    assert_eq!(y, doubled(&a));
}

const CROSS_READ: &str = "memcheck: block 0 reads bytes [256, 512) of `y`, which block 1 writes \
                          in the same launch; blocks run in no set order, so what it reads \
                          depends on timing; read only what this block writes, or split the \
                          work into two launches";

#[test]
fn memcheck_reports_a_block_reading_what_another_writes() {
    for rows in [2, 5] {
        assert_eq!(error(rows, 6, 0), CROSS_READ, "{rows} rows");
        // Reading back its own row is fine.
        let (a, y, result) = run(rows, -6);
        result.unwrap_or_else(|e| panic!("{rows} rows: {e}"));
        assert_eq!(y, doubled(&a), "{rows} rows");
    }
    // One block reads only what it writes; without memcheck nothing is said.
    run(1, 6).2.unwrap();
    with_sanitize(Sanitize::SYNC, || run(3, 6).2.unwrap());
}

#[test]
fn atomic_writes_to_the_same_bytes_are_not_overlaps() {
    for rows in [2, 5, 50] {
        let (a, y, result) = run(rows, 5);
        result.unwrap_or_else(|e| panic!("{rows} rows: {e}"));
        let mut want = vec![0.0f32; rows * COLS];
        for r in 0..rows {
            for c in 0..COLS {
                want[c] += 2.0 * a[r * COLS + c];
            }
        }
        assert_eq!(y, want, "{rows} rows");
    }
}

#[test]
fn checks_off_leave_the_bugs_unreported() {
    with_sanitize(Sanitize::OFF, || {
        for which in [1, 2, 3] {
            let (a, y, result) = run(3, which);
            result.unwrap_or_else(|e| panic!("which {which}: {e}"));
            assert_eq!(y, doubled(&a), "which {which}");
        }
        run(3, 4).2.unwrap();
    });
    // Each check on its own: sync finds no overlap, mem no leak.
    with_sanitize(Sanitize::SYNC, || {
        run(3, 4).2.unwrap();
        assert!(matches!(run(3, 1).2, Err(Error::Kernel { .. })));
    });
    with_sanitize(Sanitize::MEM, || {
        run(3, 1).2.unwrap();
        run(3, 3).2.unwrap();
        assert!(matches!(run(3, 4).2, Err(Error::Kernel { block: 1, .. })));
    });
}
