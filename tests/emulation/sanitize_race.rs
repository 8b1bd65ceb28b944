//! The sanitizer's racecheck (tests/kernels/sanitize_race/): kernels that
//! synchronise their pipes by hand, each with one synchronisation left out,
//! are reported with the exact message naming both pipes, both
//! instructions with their source lines, the bytes and the fix; with every synchronisation in place
//! they give exact results; with racecheck off the races go unreported (the
//! host runs in program order, so the numbers are right anyway: exactly what
//! makes these bugs invisible without the check).

use half::f16;
use pypto_rt::{Const, Device, Error, Sanitize, with_sanitize};
use pypto_tests::kernels;

const COLS: usize = 64;

/// Runs race_rows scenario `which` on `rows` rows: the error, if any, and
/// whether y is exactly 2x + 1.
fn rows(rows: usize, which: i32) -> (Result<(), Error>, bool) {
    let dev = Device::host();
    let x: Vec<f32> = (0..rows * COLS).map(|i| (i % 97) as f32 - 40.0).collect();
    let xt = dev.tensor_from(&x, (rows, Const::<64>)).unwrap();
    let mut y = dev.zeros((rows, Const::<64>)).unwrap();
    let result = kernels::race_rows(&xt, &mut y, which).map(|_| ());
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v + 1.0).collect();
    (result, y.to_vec().unwrap() == want)
}

/// Runs race_matmul scenario `which` on [m, k] x [k, n]: the error, if any,
/// and whether c equals a plain-Rust product (exact: small whole numbers).
fn matmul(m: usize, k: usize, n: usize, which: i32) -> (Result<(), Error>, bool) {
    let dev = Device::host();
    let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 - 2.0).collect();
    let ah: Vec<f16> = a.iter().map(|&v| f16::from_f32(v)).collect();
    let bh: Vec<f16> = b.iter().map(|&v| f16::from_f32(v)).collect();
    let at = dev.tensor_from(&ah, (m, k)).unwrap();
    let bt = dev.tensor_from(&bh, (k, n)).unwrap();
    let mut c = dev.zeros((m, n)).unwrap();
    let result = kernels::race_matmul(&at, &bt, &mut c, which).map(|_| ());
    let mut want = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    (result, c.to_vec().unwrap() == want)
}

/// Runs race_compound scenario `which`: the error, if any, and y.
fn compound(which: i32) -> (Result<(), Error>, Vec<f32>) {
    let dev = Device::host();
    let x: Vec<f32> = (0..COLS).map(|i| (i % 13) as f32 - 6.0).collect();
    let w: Vec<f32> = (0..COLS).map(|i| (i % 7) as f32 - 3.0).collect();
    let xt = dev.tensor_from(&x, (Const::<64>,)).unwrap();
    let wt = dev.tensor_from(&w, (Const::<64>,)).unwrap();
    let mut y = dev.zeros((Const::<64>,)).unwrap();
    let result = kernels::race_compound(&xt, &wt, &mut y, which).map(|_| ());
    (result, y.to_vec().unwrap())
}

/// What race_compound computes with every synchronisation in place:
/// relu(x + w) (0) or x * 2 + w (2), exact in f32 for these small whole numbers.
fn compound_reference(which: i32) -> Vec<f32> {
    (0..COLS)
        .map(|i| {
            let x = (i % 13) as f32 - 6.0;
            let w = (i % 7) as f32 - 3.0;
            if which == 2 {
                x * 2.0 + w
            } else {
                (x + w).max(0.0)
            }
        })
        .collect()
}

fn message(result: Result<(), Error>, what: &str) -> String {
    match result {
        Err(Error::Kernel {
            block: 0, message, ..
        }) => message,
        other => panic!("{what}: expected a kernel error in block 0, got {other:?}"),
    }
}

const MTE2_V: &str = "racecheck: V reads UB bytes [0, 256) (Muls, rows.cpp:63), written by MTE2 \
    (DataCopy(GM->local), rows.cpp:55) with no synchronisation between them; insert \
    SetFlag<HardEvent::MTE2_V>(id) after the DataCopy(GM->local) and \
    WaitFlag<HardEvent::MTE2_V>(id) before the Muls, or pass the buffer through a TQue \
    (EnQue after the DataCopy(GM->local), DeQue before the Muls)";
const V_MTE3: &str = "racecheck: MTE3 reads UB bytes [256, 512) (DataCopy(local->GM), \
    rows.cpp:75), written by V (Adds, rows.cpp:67) with no synchronisation between them; insert \
    SetFlag<HardEvent::V_MTE3>(id) after the Adds and WaitFlag<HardEvent::V_MTE3>(id) before \
    the DataCopy(local->GM), or pass the buffer through a TQue (EnQue after the Adds, DeQue \
    before the DataCopy(local->GM))";
const V_MTE2: &str = "racecheck: MTE2 writes UB bytes [0, 256) (DataCopy(GM->local), \
    rows.cpp:55), still being read by V (Muls, rows.cpp:63) with no synchronisation between them; insert \
    SetFlag<HardEvent::V_MTE2>(id) after the Muls and WaitFlag<HardEvent::V_MTE2>(id) before \
    the DataCopy(GM->local), or let a TQue order it (FreeTensor after the Muls, AllocTensor \
    before the DataCopy(GM->local))";
const V_MTE2_SCATTERED: &str = "racecheck: MTE2 writes UB bytes [3008, 3040) (DataCopy(GM->local), \
    rows.cpp:43), also written by V (Duplicate, rows.cpp:37) with no synchronisation between them; \
    insert SetFlag<HardEvent::V_MTE2>(id) after the Duplicate and WaitFlag<HardEvent::V_MTE2>(id) \
    before the DataCopy(GM->local), or pass the buffer through a TQue (EnQue after the Duplicate, \
    DeQue before the DataCopy(GM->local))";
const MTE2_MTE2: &str = "racecheck: MTE2 writes UB bytes [0, 128) (DataCopy(GM->local), \
    rows.cpp:55), also written by MTE2 (DataCopy(GM->local), rows.cpp:50) with no synchronisation between them; copies \
    on one MTE2 pipe into overlapping bytes are not ordered: insert PipeBarrier<PIPE_MTE2>() \
    between them";
const MTE2_MTE1: &str = "racecheck: MTE1 reads L1 bytes [0, 512) (LoadData, matmul.cpp:49), written \
    by MTE2 (DataCopy(GM->L1, Nd2NzParams), matmul.cpp:39) with no synchronisation between them; insert \
    SetFlag<HardEvent::MTE2_MTE1>(id) after the DataCopy(GM->L1, Nd2NzParams) and \
    WaitFlag<HardEvent::MTE2_MTE1>(id) before the LoadData, or pass the buffer through a TQue \
    (EnQue after the DataCopy(GM->L1, Nd2NzParams), DeQue before the LoadData)";
const MTE1_M: &str = "racecheck: M reads L0A bytes [0, 32) (Mmad, matmul.cpp:58), written by \
    MTE1 (LoadData, matmul.cpp:49) with no synchronisation between them; insert SetFlag<HardEvent::MTE1_M>(id) after the \
    LoadData and WaitFlag<HardEvent::MTE1_M>(id) before the Mmad, or pass the buffer through a \
    TQue (EnQue after the LoadData, DeQue before the Mmad)";
const M_FIX: &str = "racecheck: FIX reads L0C bytes [0, 64) (Fixpipe, matmul.cpp:65), written \
    by M (Mmad, matmul.cpp:58) with no synchronisation between them; insert SetFlag<HardEvent::M_FIX>(id) after the Mmad \
    and WaitFlag<HardEvent::M_FIX>(id) before the Fixpipe, or pass the buffer through a TQue \
    (EnQue after the Mmad, DeQue before the Fixpipe)";

const M_MTE1: &str = "racecheck: MTE1 writes L0A bytes [0, 512) (LoadData, matmul.cpp:70), still \
    being read by M (Mmad, matmul.cpp:58) with no synchronisation between them; insert \
    SetFlag<HardEvent::M_MTE1>(id) after the Mmad and WaitFlag<HardEvent::M_MTE1>(id) before the \
    LoadData, or let a TQue order it (FreeTensor after the Mmad, AllocTensor before the LoadData)";
const MTE1_MTE2: &str = "racecheck: MTE2 writes L1 bytes [0, 32) (DataCopy(GM->L1, Nd2NzParams), \
    matmul.cpp:73), still being read by MTE1 (LoadData, matmul.cpp:49) with no synchronisation \
    between them; insert SetFlag<HardEvent::MTE1_MTE2>(id) after the LoadData and \
    WaitFlag<HardEvent::MTE1_MTE2>(id) before the DataCopy(GM->L1, Nd2NzParams), or let a TQue \
    order it (FreeTensor after the LoadData, AllocTensor before the DataCopy(GM->L1, Nd2NzParams))";

#[test]
fn each_missing_vector_pipe_flag_is_reported_with_its_fix() {
    for n in [1, 3] {
        assert_eq!(message(rows(n, 1).0, "MTE2 -> V"), MTE2_V, "{n} rows");
        assert_eq!(message(rows(n, 2).0, "V -> MTE3"), V_MTE3, "{n} rows");
        assert_eq!(message(rows(n, 4).0, "MTE2 -> MTE2"), MTE2_MTE2, "{n} rows");
    }
    // Zeroing every other 32-byte block leaves more ranges than racecheck keeps in
    // its small array: the copy over them is still checked against each.
    assert_eq!(
        message(rows(2, 7).0, "V -> MTE2 over scattered writes"),
        V_MTE2_SCATTERED
    );
    let (ordered, exact) = rows(2, 8);
    ordered.unwrap();
    assert!(exact);
    // The input is overwritten only from the second row on.
    assert_eq!(message(rows(3, 3).0, "V -> MTE2"), V_MTE2);
    let (one_row, exact) = rows(1, 3);
    one_row.unwrap();
    assert!(exact);
}

/// The MTE2 -> V race of race_compound's `w` copy (compound.cpp:31) with
/// the count-form instruction `what` at `line`.
fn compound_race(what: &str, line: u32) -> String {
    format!(
        "racecheck: V reads UB bytes [256, 512) ({what}, compound.cpp:{line}), written by MTE2 \
         (DataCopy(GM->local), compound.cpp:31) with no synchronisation between them; insert \
         SetFlag<HardEvent::MTE2_V>(id) after the DataCopy(GM->local) and \
         WaitFlag<HardEvent::MTE2_V>(id) before the {what}, or pass the buffer through a TQue \
         (EnQue after the DataCopy(GM->local), DeQue before the {what})"
    )
}

#[test]
fn count_form_compound_instructions_racing_a_copy_are_reported() {
    assert_eq!(
        message(compound(1).0, "AddRelu"),
        compound_race("AddRelu", 43)
    );
    assert_eq!(
        message(compound(3).0, "FusedMulAdd"),
        compound_race("FusedMulAdd", 38)
    );
    assert_eq!(
        message(compound(4).0, "ReduceSum"),
        compound_race("ReduceSum", 41)
    );
    for which in [0, 2] {
        let (result, y) = compound(which);
        result.unwrap_or_else(|e| panic!("which {which}: {e}"));
        assert_eq!(y, compound_reference(which), "which {which}");
    }
    with_sanitize(Sanitize::OFF, || {
        for which in [1, 3] {
            let (result, y) = compound(which);
            result.unwrap_or_else(|e| panic!("off, which {which}: {e}"));
            assert_eq!(y, compound_reference(which - 1), "off, which {which}");
        }
    });
}

#[test]
fn each_missing_cube_pipe_flag_is_reported_with_its_fix() {
    for (m, k, n) in [(16, 16, 16), (32, 48, 16)] {
        assert_eq!(message(matmul(m, k, n, 1).0, "MTE2 -> MTE1"), MTE2_MTE1);
        assert_eq!(message(matmul(m, k, n, 2).0, "MTE1 -> M"), MTE1_M);
        assert_eq!(message(matmul(m, k, n, 3).0, "M -> FIX"), M_FIX);
    }
}

/// Overwriting a buffer another pipe still reads: the reads were recorded
/// by Mmad and LoadData all at once (their ranges merged), and are found
/// all the same, with the bytes of the first overwrite that hits them.
#[test]
fn overwrites_of_what_the_cube_still_reads_are_reported() {
    for (m, k, n) in [(16, 16, 16), (32, 48, 16)] {
        assert_eq!(message(matmul(m, k, n, 4).0, "M -> MTE1"), M_MTE1);
        assert_eq!(message(matmul(m, k, n, 5).0, "MTE1 -> MTE2"), MTE1_MTE2);
    }
}

#[test]
fn synchronised_kernels_run_clean_with_exact_results() {
    // 5: two copies into one buffer with PipeBarrier<PIPE_MTE2> between
    // them; 6: scalar reads and writes, ordered by the compiler.
    for n in [1, 2, 7] {
        for which in [0, 5, 6] {
            let (result, exact) = rows(n, which);
            result.unwrap_or_else(|e| panic!("which {which}, {n} rows: {e}"));
            assert!(exact, "which {which}, {n} rows");
        }
    }
    for (m, k, n) in [(16, 16, 16), (32, 48, 16), (64, 32, 48)] {
        let (result, exact) = matmul(m, k, n, 0);
        result.unwrap_or_else(|e| panic!("{m}x{k}x{n}: {e}"));
        assert!(exact, "{m}x{k}x{n}");
    }
}

#[test]
fn racecheck_off_leaves_the_races_unreported() {
    let others = Sanitize::INIT | Sanitize::SYNC | Sanitize::MEM;
    for checks in [Sanitize::OFF, others] {
        with_sanitize(checks, || {
            for which in 1..=4 {
                let (result, exact) = rows(3, which);
                result.unwrap_or_else(|e| panic!("which {which}: {e}"));
                assert!(exact, "which {which}");
            }
            for which in 1..=3 {
                let (result, exact) = matmul(32, 48, 16, which);
                result.unwrap_or_else(|e| panic!("which {which}: {e}"));
                assert!(exact, "which {which}");
            }
        });
    }
    with_sanitize(Sanitize::RACE, || {
        assert_eq!(message(rows(3, 1).0, "RACE alone"), MTE2_V);
    });
}

/// Instructions run by a builtin partial's helper (CopyToLocal in
/// builtin/partials/common.hbs) are reported at the line of the user's
/// template that called the helper, never at the partial's.
#[test]
fn helpers_of_a_partial_are_reported_at_the_callers_line() {
    let dev = Device::host();
    let x: Vec<f32> = (0..64).map(|i| i as f32 - 20.0).collect();
    let xt = dev.tensor_from(&x, (64,)).unwrap();
    let mut y = dev.zeros((64,)).unwrap();
    let result = kernels::race_helpers(&xt, &mut y, 1).map(|_| ());
    assert_eq!(
        message(result, "race_helpers 1"),
        "racecheck: V reads UB bytes [0, 256) (Muls, helpers.hbs:33), written by MTE2 \
         (DataCopy(GM->local), helpers.hbs:28) with no synchronisation between them; insert \
         SetFlag<HardEvent::MTE2_V>(id) after the DataCopy(GM->local) and \
         WaitFlag<HardEvent::MTE2_V>(id) before the Muls, or pass the buffer through a TQue \
         (EnQue after the DataCopy(GM->local), DeQue before the Muls)"
    );
    let mut y = dev.zeros((64,)).unwrap();
    kernels::race_helpers(&xt, &mut y, 0).unwrap();
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    assert_eq!(y.to_vec().unwrap(), want);
}

/// Runs race_bias scenario `which` on [m, k] x [k, n] + bias: the error,
/// if any, and whether c equals a plain-Rust a · b + bias (exact: small
/// whole numbers).
fn bias_matmul(m: usize, k: usize, n: usize, which: i32) -> (Result<(), Error>, bool) {
    let dev = Device::host();
    let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 - 2.0).collect();
    let bias: Vec<f32> = (0..n).map(|j| (j % 11) as f32 * 4.0 - 20.0).collect();
    let ah: Vec<f16> = a.iter().map(|&v| f16::from_f32(v)).collect();
    let bh: Vec<f16> = b.iter().map(|&v| f16::from_f32(v)).collect();
    let at = dev.tensor_from(&ah, (m, k)).unwrap();
    let bt = dev.tensor_from(&bh, (k, n)).unwrap();
    let biast = dev.tensor_from(&bias, (n,)).unwrap();
    let mut c = dev.zeros((m, n)).unwrap();
    let result = kernels::race_bias(&at, &bt, &biast, &mut c, which).map(|_| ());
    let mut want = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = bias[j] + (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum::<f32>();
        }
    }
    (result, c.to_vec().unwrap() == want)
}

/// The BiasTable: L1 -> BiasTable copies and Mmad's bias operand give
/// exact results when synchronised; a missing MTE1 -> M flag, a bias off
/// its 128-byte placement, a bias beside cmatrixInitVal true and a copy
/// past the table's tensor are each reported.
#[test]
fn the_bias_table_is_checked_like_the_other_cube_buffers() {
    for (m, k, n) in [(16, 16, 16), (32, 48, 64), (64, 32, 128)] {
        let (result, exact) = bias_matmul(m, k, n, 0);
        result.unwrap_or_else(|e| panic!("{m}x{k}x{n}: {e}"));
        assert!(exact, "{m}x{k}x{n}");
    }
    let got: Vec<String> = (1..=5)
        .map(|which| message(bias_matmul(32, 48, 64, which).0, "bias"))
        .collect();
    assert_eq!(
        got,
        [
            "racecheck: M reads BT bytes [0, 256) (Mmad(bias), bias.cpp:74), written by MTE1 \
             (DataCopy(L1->BiasTable, DataCopyParams), bias.cpp:69) with no synchronisation \
             between them; insert SetFlag<HardEvent::MTE1_M>(id) after the DataCopy(L1->BiasTable, \
             DataCopyParams) and WaitFlag<HardEvent::MTE1_M>(id) before the Mmad(bias), or pass \
             the buffer through a TQue (EnQue after the DataCopy(L1->BiasTable, DataCopyParams), \
             DeQue before the Mmad(bias))",
            "Mmad(bias): the bias starts at byte 64 of the BiasTable, not on a 128-byte boundary",
            "Mmad(bias): cmatrixInitVal is true, which starts C at zero and would drop the bias; \
             set it false",
            "DataCopy(L1->BiasTable, DataCopyParams): 1088 bytes do not fit the LocalTensor's 256 \
             elements (1024 bytes)",
            "Fixpipe: ndNum 2 (several ND matrices in one move) is not emulated; move them one by one",
        ]
    );
}
