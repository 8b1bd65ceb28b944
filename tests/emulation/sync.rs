//! Ascend C written the way vendor engineers write it for Atlas A2/A3
//! (tests/kernels/api_sync/): global `PIPE_`/`EVENT_ID` names,
//! `InitSocState`, static tensors from `LocalMemAllocator`, event IDs from
//! the `TPipe`, `SetFlag`/`WaitFlag`, `SetAtomicAdd` accumulation from
//! several blocks, `printf` with the block index, a mixed kernel's cube
//! core handing off to default-mode `CrossCoreWaitFlag`s, a second `TPipe`
//! reusing the buffers of one `Destroy`ed, and the errors the emulation
//! reports when a documented rule is broken.

use pypto_rt::{Const, Device, Error, last_launch, with_host_blocks};
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

/// Small whole numbers as half: every product and sum of the matmul is
/// exact in f32, whatever the order.
fn small_halves(n: usize, seed: u64) -> Vec<half::f16> {
    data(n, seed)
        .iter()
        .map(|v| half::f16::from_f32(v.round()))
        .collect()
}

#[test]
fn a_cube_cores_mode_2_set_satisfies_default_mode_waits() {
    // The vendor samples' hand-off: CrossCoreSetFlag<0x2, PIPE_FIX> on the
    // cube core, CrossCoreWaitFlag(id) (mode 0 by default, which Atlas
    // A2/A3 ignore) on the vector cores, and back; blocks: 2 in the spec,
    // then one, three and four.
    let dev = Device::host();
    for (m, k, n, blocks) in [
        (32usize, 16usize, 16usize, None),
        (64, 32, 48, None),
        (256, 128, 128, None),
        (16, 16, 32, Some(1)),
        (48, 64, 16, Some(3)),
        (128, 32, 64, Some(4)),
    ] {
        let (a, b) = (small_halves(m * k, 1), small_halves(k * n, 2));
        let mut want_c = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                want_c[i * n + j] = (0..k)
                    .map(|t| a[i * k + t].to_f32() * b[t * n + j].to_f32())
                    .sum();
            }
        }
        let want_out: Vec<f32> = want_c
            .iter()
            .map(|&v| if v >= 0.0 { v } else { v * 0.25 })
            .collect();
        let at = dev.tensor_from(&a, (m, k)).unwrap();
        let bt = dev.tensor_from(&b, (k, n)).unwrap();
        let mut c = dev.zeros((m, n)).unwrap();
        let mut out = dev.zeros((m, n)).unwrap();
        let mut run = || kernels::cube_leaky(&at, &bt, &mut c, &mut out, 0.25);
        match blocks {
            None => run().unwrap(),
            Some(blocks) => with_host_blocks(blocks, run).unwrap().unwrap(),
        };
        let what = format!("{m}x{k}x{n}, {blocks:?} blocks");
        assert_eq!(last_launch().unwrap().blocks, blocks.unwrap_or(2), "{what}");
        assert_eq!(c.to_vec().unwrap(), want_c, "c, {what}");
        assert_eq!(out.to_vec().unwrap(), want_out, "out, {what}");
        assert!(
            want_out.iter().any(|v| *v < 0.0),
            "{what}: no negative value tried"
        );
    }
}

/// two_pipes scenario `which` on n elements (`blocks` host blocks, or the
/// spec's 2): the result, and whether y is exactly 2x + 1.
fn two_pipes(n: usize, which: i32, blocks: Option<u32>) -> (Result<(), Error>, bool) {
    let dev = Device::host();
    let a = data(n, 4);
    let x = dev.tensor_from(&a, (n,)).unwrap();
    let mut y = dev.zeros((n,)).unwrap();
    let result = match blocks {
        None => kernels::two_pipes(&x, &mut y, which).map(|_| ()),
        Some(blocks) => with_host_blocks(blocks, || kernels::two_pipes(&x, &mut y, which))
            .unwrap()
            .map(|_| ()),
    };
    let want: Vec<f32> = a.iter().map(|v| 2.0 * v + 1.0).collect();
    (result, y.to_vec().unwrap() == want)
}

#[test]
fn tpipe_destroy_orders_a_second_pipes_reuse_of_its_buffers() {
    // 0: Destroy; 2: DestroyWithoutPipeAll plus PipeBarrier<PIPE_ALL> by
    // hand; 3: the first pipe's destructor. One tile, a tail, tiles dealt
    // to both blocks (the second stage reads back what the first wrote).
    for which in [0, 2, 3] {
        for (n, blocks) in [(8, None), (256, Some(1)), (1000, Some(1)), (3000, None)] {
            let (result, exact) = two_pipes(n, which, blocks);
            result.unwrap_or_else(|e| panic!("which {which}, n {n}: {e}"));
            assert!(exact, "which {which}, n {n}");
        }
    }
    // DestroyWithoutPipeAll alone leaves the pipes unordered, as its page
    // says: the second pipe's first copy in overwrites bytes the first
    // pipe's last Muls (its 232-element tail tile) still reads.
    match two_pipes(1000, 1, Some(1)).0 {
        Err(Error::Kernel { block, message, .. }) => {
            assert_eq!(block, 0);
            assert_eq!(
                message,
                "racecheck: MTE2 writes UB bytes [0, 928) (DataCopy(GM->local), \
                 two_pipes.cpp:66), still being read by V (Muls, two_pipes.cpp:38) with no \
                 synchronisation between them; insert SetFlag<HardEvent::V_MTE2>(id) after the \
                 Muls and WaitFlag<HardEvent::V_MTE2>(id) before the DataCopy(GM->local), or let \
                 a TQue order it (FreeTensor after the Muls, AllocTensor before the \
                 DataCopy(GM->local))"
            );
        }
        other => panic!("expected a racecheck error, got {other:?}"),
    }
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
        "CrossCoreSetFlag<2>(3): signals the other core kind of a mixed kernel, but this kernel \
         runs one core kind; declare it `cores: mixed` (its spec or template contract) so that \
         its cube and vector cores run paired"
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
    pypto_tests::child::enter("sync::child_scenario");
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
    let child = pypto_tests::child::run("sync::child_scenario", &[]);
    assert!(child.passed(), "{child:#?}");
    let lines: Vec<&str> = child.stderr.lines().collect();
    let (first, rest) = lines.split_first().unwrap();
    let (last, printed) = rest.split_last().unwrap();
    assert_eq!(
        (*first, *last),
        (
            "pypto-tests child: entered sync::child_scenario",
            "child done"
        ),
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
