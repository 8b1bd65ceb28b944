//! Ascend C written the way vendor engineers write it for Atlas A2/A3
//! (tests/kernels/api_sync/): global `PIPE_`/`EVENT_ID` names,
//! `InitSocState`, static tensors from `LocalMemAllocator`, event IDs from
//! the `TPipe`, `SetFlag`/`WaitFlag`, `SetAtomicAdd` accumulation from
//! several blocks, `printf` with the block index, and the errors the
//! emulation reports when a documented rule is broken.

use pypto_rt::{Const, Device, Error, last_launch};
use pypto_tests::{data, kernels};

#[test]
fn static_tensors_and_hand_written_flags_add() {
    let dev = Device::host();
    for n in [8, 256, 1000, 3080, 20_000] {
        let (a, b) = (data(n, 1), data(n, 2));
        let x = dev.tensor_from(&a, (n,)).unwrap();
        let y = dev.tensor_from(&b, (n,)).unwrap();
        let mut z = dev.zeros((n,)).unwrap();
        kernels::vendor_add(&x, &y, &mut z).unwrap();
        let want: Vec<f32> = a.iter().zip(&b).map(|(p, q)| p + q).collect();
        assert_eq!(z.to_vec().unwrap(), want, "n = {n}");
        // Three 256-float tiles from the allocator, back to back.
        assert_eq!(last_launch().unwrap().ub_peak_bytes, 3 * 1024, "n = {n}");
    }
}

#[test]
fn tpipe_event_ids_scale() {
    let dev = Device::host();
    for n in [8, 512, 1000, 4104] {
        let a = data(n, 3);
        let x = dev.tensor_from(&a, (n,)).unwrap();
        let mut y = dev.zeros((n,)).unwrap();
        kernels::vendor_scale(&x, 1.5, &mut y).unwrap();
        let want: Vec<f32> = a.iter().map(|v| v * 1.5).collect();
        assert_eq!(y.to_vec().unwrap(), want, "n = {n}");
    }
}

/// y0 plus the sum of the rows of x, in i64 (the values keep every
/// partial sum exact in each element type).
fn row_sums(x: &[i64], y0: &[i64], rows: usize) -> Vec<i64> {
    let cols = y0.len();
    (0..cols)
        .map(|c| y0[c] + (0..rows).map(|r| x[r * cols + c]).sum::<i64>())
        .collect()
}

fn values(n: usize, seed: i64, modulus: i64) -> Vec<i64> {
    (0..n as i64)
        .map(|i| (i * 7 + seed * 13) % modulus - modulus / 2)
        .collect()
}

#[test]
fn atomic_add_accumulates_rows_from_every_block() {
    let dev = Device::host();
    // 50 rows: more than the 48 cores, so some blocks add two rows; 2064
    // columns: two full 1024-element tiles and a tail.
    for (rows, cols) in [(1, 16), (3, 32), (8, 1040), (50, 2064)] {
        let x = values(rows * cols, 1, 29);
        let y0 = values(cols, 2, 11);
        let want = row_sums(&x, &y0, rows);

        let xf: Vec<f32> = x.iter().map(|v| *v as f32).collect();
        let mut y = dev
            .tensor_from(&y0.iter().map(|v| *v as f32).collect::<Vec<_>>(), (cols,))
            .unwrap();
        kernels::atomic_sum_f32(&dev.tensor_from(&xf, (rows, cols)).unwrap(), &mut y).unwrap();
        let got: Vec<i64> = y.to_vec().unwrap().iter().map(|v| *v as i64).collect();
        assert_eq!(got, want, "f32 {rows}x{cols}");
        assert_eq!(last_launch().unwrap().blocks, rows.min(48) as u32);

        let xi: Vec<i32> = x.iter().map(|v| *v as i32).collect();
        let mut y = dev
            .tensor_from(&y0.iter().map(|v| *v as i32).collect::<Vec<_>>(), (cols,))
            .unwrap();
        kernels::atomic_sum_i32(&dev.tensor_from(&xi, (rows, cols)).unwrap(), &mut y).unwrap();
        let got: Vec<i64> = y.to_vec().unwrap().iter().map(|v| i64::from(*v)).collect();
        assert_eq!(got, want, "i32 {rows}x{cols}");

        let xh: Vec<half::f16> = x.iter().map(|v| half::f16::from_f32(*v as f32)).collect();
        let yh: Vec<half::f16> = y0.iter().map(|v| half::f16::from_f32(*v as f32)).collect();
        let mut y = dev.tensor_from(&yh, (cols,)).unwrap();
        kernels::atomic_sum_f16(&dev.tensor_from(&xh, (rows, cols)).unwrap(), &mut y).unwrap();
        let got: Vec<i64> = y
            .to_vec()
            .unwrap()
            .iter()
            .map(|v| v.to_f32() as i64)
            .collect();
        assert_eq!(got, want, "f16 {rows}x{cols}");
    }
}

#[test]
fn half_atomic_add_rounds_each_addition() {
    // 2048 + 1 is not a half (spacing 2 there): each atomic addition rounds
    // to nearest even in half, so four blocks adding 1 to 2048 leave 2048.
    let dev = Device::host();
    let x = [half::f16::from_f32(1.0); 4 * 16];
    let mut y = dev
        .tensor_from(&[half::f16::from_f32(2048.0); 16], (16,))
        .unwrap();
    kernels::atomic_sum_f16(&dev.tensor_from(&x, (4, 16)).unwrap(), &mut y).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![half::f16::from_f32(2048.0); 16]);
}

fn misuse(which: i32) -> String {
    let dev = Device::host();
    let x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
    let mut y = dev.zeros((8,)).unwrap();
    match kernels::sync_misuse(&x, which, &mut y) {
        Err(Error::Kernel { block, message, .. }) => {
            assert_eq!(block, 0);
            message
        }
        other => panic!("case {which}: expected a kernel error, got {other:?}"),
    }
}

#[test]
fn broken_rules_are_errors_with_their_reason() {
    let dev = Device::host();
    let x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
    let mut y = dev.zeros((8,)).unwrap();
    kernels::sync_misuse(&x, 0, &mut y).unwrap();

    assert_eq!(
        misuse(1),
        "LocalMemAllocator<UB>::Alloc: 32768 elements of 4 bytes (131072 bytes) at address \
         131072 run past the 196608 bytes of the Unified Buffer (65536 are free)"
    );
    assert_eq!(
        misuse(2),
        "WaitFlag<HardEvent::MTE2_V>(0): no SetFlag with this event and ID is pending; on the \
         NPU the pipe would wait for ever"
    );
    assert_eq!(
        misuse(3),
        "SetFlag<HardEvent::V_S>(8): event IDs are 0 to 7 (EVENT_ID0..EVENT_ID7)"
    );
    assert_eq!(
        misuse(4),
        "TPipe::AllocEventID<HardEvent::V_MTE3>: all 8 event IDs are allocated; ReleaseEventID \
         one first"
    );
    assert_eq!(
        misuse(5),
        "LocalTensor(VECCALC, 16, 8): address 16 of the Unified Buffer is not 32-byte aligned"
    );
    let assert_message = misuse(6);
    assert!(
        assert_message.starts_with("assert(which == 0) failed: which is 6 (")
            && assert_message.contains("sync_misuse")
            && assert_message.ends_with(')'),
        "{assert_message}"
    );
    assert_eq!(
        misuse(7),
        "DataCopy(local->GM): SetAtomicAdd<half> is in effect but the copy moves 4-byte elements \
         of another type (float); set the atomic type of the data moved"
    );
    assert_eq!(
        misuse(8),
        "CrossCoreWaitFlag<2>(3): waits for the other core kind of a mixed kernel, but this \
         kernel runs one core kind; declare it `cores: mixed` (its spec or template contract) so \
         that its cube and vector cores run paired"
    );
    assert_eq!(
        misuse(9),
        "GetTPipePtr: no TPipe is alive in this block; create one first"
    );
    // A failed block leaves no state behind: the next launch runs clean.
    kernels::sync_misuse(&x, 0, &mut y).unwrap();
}

/// The printf scenario, run only as a child of
/// [`printf_lines_carry_the_block_index`].
#[test]
#[ignore = "a child process of printf_lines_carry_the_block_index"]
fn child_scenario() {
    pypto_tests::child::enter("child_scenario");
    let dev = Device::host();
    let x = dev.zeros((3, Const::<8>)).unwrap();
    let mut y = dev.zeros((3, Const::<8>)).unwrap();
    kernels::block_printf(&x, &mut y).unwrap();
    let y = y.to_vec().unwrap();
    for block in 0..3 {
        assert_eq!(&y[block * 8..block * 8 + 3], &[block as f32, 3.0, 1.0]);
    }
    eprintln!("child done");
}

#[test]
fn printf_lines_carry_the_block_index() {
    let child = pypto_tests::child::run("child_scenario", &[]);
    assert!(child.passed(), "{child:#?}");
    let lines: Vec<&str> = child.stderr.lines().collect();
    let (first, rest) = lines.split_first().unwrap();
    let (last, printed) = rest.split_last().unwrap();
    assert_eq!(
        (*first, *last),
        ("pypto-tests child: entered child_scenario", "child done"),
        "{lines:#?}"
    );
    // One write per call: lines of blocks running at once do not mix, and
    // each block's lines come in its order.
    let mut want = Vec::new();
    for block in 0..3 {
        let line = format!("[block {block}] block {block} of 3, half {block}.5");
        let done = format!("[block {block}] done");
        let at = |l: &str| printed.iter().position(|p| *p == l);
        assert!(at(&line) < at(&done), "{lines:#?}");
        want.extend([line, done]);
    }
    let mut sorted = printed.to_vec();
    sorted.sort_unstable();
    assert_eq!(sorted, want, "{lines:#?}");
}
