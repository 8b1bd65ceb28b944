//! The system-level names of `pypto_emu/system.h` (kernels in
//! tests/kernels/api_system/): scalar bit operations and uncached
//! global-memory access against a plain-Rust model, the values the
//! configuration calls report, an atomic add configured with
//! `SetStoreAtomicConfig`, and the errors for broken documented rules and
//! for waits across blocks, which the host cannot honour.

use pypto_rt::{Const, Device, Error};
use pypto_tests::kernels;

/// CountLeadingZero, CountBitsCntSameAsSignBit, GetBitCount<1>,
/// GetBitCount<0>, GetSFFValue<1>, GetSFFValue<0> as documented.
fn bits_model(v: u64) -> [i64; 6] {
    let s = v as i64;
    let same_as_sign = if s == 0 || s == -1 {
        -1
    } else {
        let magnitude = if s < 0 { !s } else { s };
        i64::from(magnitude.leading_zeros()) - 1
    };
    let first = |bits: u64| {
        if bits == 0 {
            -1
        } else {
            i64::from(bits.trailing_zeros())
        }
    };
    [
        i64::from(v.leading_zeros()),
        same_as_sign,
        i64::from(v.count_ones()),
        i64::from(v.count_zeros()),
        first(v),
        first(!v),
    ]
}

#[test]
fn scalar_bit_operations_match_the_documented_examples_and_a_model() {
    // The documented examples first.
    assert_eq!(bits_model(0x0100_0000_0000_0020)[0], 7);
    assert_eq!(bits_model(0x0100_0000_0000_0020)[1], 6);
    assert_eq!(bits_model(0x00F0_0000_0000_0000)[1], 7);
    assert_eq!(bits_model(1)[1], 62);
    assert_eq!(bits_model(0x1000_0000_0000_0100)[4], 8);

    let mut values: Vec<u64> = vec![
        0,
        u64::MAX,
        1,
        0x8000_0000_0000_0000,
        0x7FFF_FFFF_FFFF_FFFF,
        0x0100_0000_0000_0020,
        0x00F0_0000_0000_0000,
        0x1000_0000_0000_0100,
        0xFF00,
        0x00FF,
        0xFFFF,
        0xFFFF_FFFF_FFFF_FFFE,
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..52 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        values.push(state >> (state % 64));
    }
    let dev = Device::host();
    let n = values.len();
    let x = dev.tensor_from(&values, (n,)).unwrap();
    let mut y = dev.zeros((6 * n,)).unwrap();
    kernels::system_bits(&x, &mut y).unwrap();
    let got: Vec<i64> = y.to_vec().unwrap();
    let want: Vec<i64> = values.iter().flat_map(|v| bits_model(*v)).collect();
    assert_eq!(got, want);
    assert_eq!(
        &got[..18],
        &[
            64, -1, 0, 64, -1, 0, 0, -1, 64, 0, 0, -1, 63, 62, 1, 63, 0, 1
        ]
    );
}

#[test]
fn configuration_calls_report_documented_values() {
    let dev = Device::host();
    let mut y = dev.zeros((1, Const::<8192>)).unwrap();
    let mut z = dev.tensor_from(&[0.25f32; 8], (Const::<8>,)).unwrap();
    kernels::system_calls(0, &mut y, &mut z).unwrap();
    let y: Vec<i64> = y.to_vec().unwrap();
    // ICache status; F16 code and sum; BF16 code; SetAtomicMax<int8_t>:
    // int8 code and max; none; Async hits; DataBlock bytes; program
    // counters; KERNEL_TYPE_MIX_AIC_1_2.
    assert_eq!(&y[..12], &[0, 2, 0, 6, 5, 1, 0, 5, 32, 1, 5, 0]);
    // SetStoreAtomicConfig<ATOMIC_F32, ATOMIC_SUM> made the copy an add.
    assert_eq!(z.to_vec().unwrap(), vec![1.75f32; 8]);
}

fn broken(which: i32, rows: usize) -> (u32, String) {
    let dev = Device::host();
    let mut y = dev.zeros((rows, Const::<8192>)).unwrap();
    let mut z = dev.zeros((Const::<8>,)).unwrap();
    match kernels::system_calls(which, &mut y, &mut z) {
        Err(Error::Kernel { block, message, .. }) => (block, message),
        other => panic!("case {which}: expected a kernel error, got {other:?}"),
    }
}

fn one_block(which: i32) -> String {
    let (block, message) = broken(which, 1);
    assert_eq!(block, 0, "case {which}");
    message
}

#[test]
fn broken_rules_are_errors_with_their_reason() {
    assert_eq!(
        one_block(1),
        "ICachePreLoad(8): the length counts 2 KB units and must be less than 8 (the 16 KB \
         instruction cache of a vector core)"
    );
    assert_eq!(
        one_block(2),
        "Trap: the kernel called Trap(); the core stopped here"
    );
    let assert_message = one_block(3);
    assert!(
        assert_message.starts_with("ascendc_assert(which == 0) failed: which is 3 (")
            && assert_message.contains("calls.hbs")
            && assert_message.ends_with(')'),
        "{assert_message}"
    );
    assert_eq!(
        one_block(4),
        "SetNextTaskStart: called a second time; each core may call it once"
    );
    assert_eq!(
        one_block(5),
        "WaitPreTaskEnd: called a second time; each core may call it once"
    );
    assert_eq!(
        one_block(6),
        "IBWait(blockIdx 0, eventID 2): no IBSet with these arguments came first; on the NPU \
         the core would wait for ever"
    );
    assert_eq!(
        one_block(7),
        "IBSet: blockIdx 1 is not a core of the launch (0 to 0)"
    );
    assert_eq!(
        one_block(8),
        "SyncAll: usedCores is 2; it must be 0 (all) to GetBlockNum() (1)"
    );
    assert_eq!(
        one_block(9),
        "SyncAll: ubWorkspace holds 28 bytes; it needs at least 32 (GetBlockNum() * 32 bytes)"
    );
    assert_eq!(
        one_block(10),
        "SyncAll: gmWorkspace holds 16 bytes; it needs at least 32 (GetBlockNum() * 32 bytes)"
    );
    assert_eq!(
        one_block(11),
        "WaitPreBlock: no NotifyNextBlock came since the last WaitPreBlock; on the NPU the core \
         would wait for ever"
    );
    assert_eq!(
        one_block(12),
        "NotifyNextBlock: call InitDetermineComputeWorkspace first"
    );
    assert_eq!(
        one_block(13),
        "WaitFlag<HardEvent::S_MTE3>(2): no SetFlag with this event and ID is pending; on the \
         NPU the pipe would wait for ever"
    );
    assert_eq!(
        one_block(14),
        "SyncAll<false>: a barrier across the cube and vector cores of every block is not \
         emulated on the host"
    );
    // A failed block leaves no state behind: the next launch runs clean
    // (SetNextTaskStart/WaitPreTaskEnd once more, the IBSet flag gone).
    configuration_calls_report_documented_values();
    assert_eq!(
        one_block(6),
        "IBWait(blockIdx 0, eventID 2): no IBSet with these arguments came first; on the NPU \
         the core would wait for ever"
    );
}

#[test]
fn waits_across_blocks_are_errors() {
    let (block, message) = broken(20, 2);
    assert!(block < 2);
    assert_eq!(
        message,
        "SyncAll: waits for all 2 blocks; a barrier across blocks is not emulated on the host"
    );
    let (block, message) = broken(21, 2);
    assert!(block < 2);
    assert_eq!(
        message,
        "SyncAll: waits for 2 blocks; a barrier across blocks is not emulated on the host"
    );
    assert_eq!(
        broken(22, 2),
        (
            1,
            "IBWait(blockIdx 0, eventID 0): waits for an IBSet of another block; a wait across \
             blocks is not emulated on the host"
                .to_owned()
        )
    );
    // Block 0 goes first; block 1 would wait for it.
    assert_eq!(
        broken(23, 2),
        (
            1,
            "WaitPreBlock: waits for block 0; a wait across blocks is not emulated on the host"
                .to_owned()
        )
    );
}
