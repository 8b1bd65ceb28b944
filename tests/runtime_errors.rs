//! What types cannot check is checked at run time, with errors a user can
//! act on; and what the hardware enforces, the host emulation reports.

use pypto_rt::{AxisSize, Const, Device, Error};
use pypto_tests::{data, kernels};

#[test]
fn named_dynamic_dim_must_agree() {
    let dev = Device::host();
    let a = dev.tensor_from(&data(4, 1), (4,)).unwrap();
    let b = dev.tensor_from(&data(5, 2), (5,)).unwrap();
    let mut out = dev.zeros((4,)).unwrap();
    let err = kernels::add_f32(&a, &b, &mut out).unwrap_err();
    assert_eq!(
        err,
        Error::DimDisagreement {
            kernel: "add_f32",
            why: "they are the dim `N`".into(),
            first: AxisSize {
                param: "a",
                axis: 0,
                size: 4
            },
            second: AxisSize {
                param: "b",
                axis: 0,
                size: 5
            },
        }
    );
    assert_eq!(
        err.to_string(),
        "kernel `add_f32`: `b.0` is 5 but `a.0` is 4; they must be equal because they are the dim `N`"
    );
}

#[test]
fn template_relations_are_checked() {
    let dev = Device::host();
    // PyPTO's add_bias: out must have x's batch.
    let x = dev
        .tensor_from(&data(2 * 128, 1), (2, Const::<128>))
        .unwrap();
    let bias = dev.tensor_from(&data(128, 2), (Const::<128>,)).unwrap();
    let mut out = dev.zeros((8, Const::<128>)).unwrap();
    assert_eq!(
        kernels::add_bias(&x, &bias, &mut out)
            .unwrap_err()
            .to_string(),
        "kernel `add_bias`: `out.0` is 8 but `x.0` is 2; they must be equal because \
         builtin/add_bias ties these axes together"
    );
    // bias.0 is x's last axis.
    let x = dev.tensor_from(&data(3 * 4, 1), (3, 4)).unwrap();
    let bias = dev.tensor_from(&data(5, 2), (5,)).unwrap();
    let mut out = dev.zeros((3, 4)).unwrap();
    assert_eq!(
        kernels::add_bias_f32(&x, &bias, &mut out)
            .unwrap_err()
            .to_string(),
        "kernel `add_bias_f32`: `bias.0` is 5 but `x.1` is 4; they must be equal because \
         they are the dim `H`"
    );
}

#[test]
fn sizes_beyond_u32_are_an_error_not_a_wrap() {
    let dev = Device::host();
    // Zero elements, so nothing is allocated, but axis 0 is 5e9.
    let big = 5_000_000_000usize;
    let x = dev
        .tensor_from(&[] as &[f32], (big, 0, Const::<33>))
        .unwrap();
    let bias = dev.tensor_from(&data(33, 1), (Const::<33>,)).unwrap();
    let mut out = dev.zeros((big, 0, Const::<33>)).unwrap();
    let err = kernels::add_bias_3d(&x, &bias, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `add_bias_3d`: size overflow: `x.0` is 5000000000, more than the 4294967295 \
         a kernel's `uint32_t` size argument carries"
    );
}

#[test]
fn runtime_sizes_are_checked_once_when_typed() {
    let dev = Device::host();
    let err = dev
        .tensor_from_sizes::<f32, (usize, Const<128>)>(&data(2 * 64, 1), &[2, 64])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "axis 1 has size 64, but the shape's type fixes it at 128"
    );
    let err = dev
        .tensor_from_sizes::<f32, (usize, Const<128>)>(&data(128, 1), &[128])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the shape's type has rank 2, but 1 sizes were given"
    );
    let err = dev.tensor_from(&data(10, 1), (3, Const::<4>)).unwrap_err();
    assert_eq!(
        err,
        Error::LengthMismatch {
            expected: 12,
            actual: 10
        }
    );
    let ok = dev
        .tensor_from_sizes::<f32, (usize, Const<128>)>(&data(3 * 128, 1), &[3, 128])
        .unwrap();
    assert_eq!(ok.shape(), (3, Const::<128>));
}

type Vector = pypto_rt::Tensor<f32, (usize,)>;

/// Runs a fault kernel on 8 floats and returns its error's message.
fn fault(kernel: fn(&Vector, &mut Vector) -> Result<(), Error>) -> String {
    let dev = Device::host();
    let x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
    let mut y = dev.zeros((8,)).unwrap();
    match kernel(&x, &mut y) {
        Err(Error::Kernel { block, message, .. }) => {
            assert_eq!(block, 0);
            message
        }
        other => panic!("expected a kernel error, got {other:?}"),
    }
}

#[test]
fn unified_buffer_overflow_is_reported() {
    assert_eq!(
        fault(|x, y| kernels::ub_overflow(x, y)),
        "TPipe::InitBuffer: 2 buffers of 100000 bytes need 200000 bytes of the Unified Buffer, \
         but 0 of its 188160 usable bytes are taken (196608 bytes, 192 KiB less the 256 B \
         framework and 8 KiB API reserves)"
    );
}

#[test]
fn misaligned_vector_operand_is_reported() {
    assert_eq!(
        fault(|x, y| kernels::misaligned(x, y)),
        "Adds: an operand starts at Unified Buffer byte 4, not on a 32-byte boundary"
    );
}

#[test]
fn datacopy_of_a_short_length_is_reported() {
    assert_eq!(
        fault(|x, y| kernels::short_copy(x, y)),
        "DataCopy(GM->local): 7 elements are 28 bytes, not a multiple of 32; the hardware \
         would move only 0 bytes and drop the rest. Use DataCopyPad for lengths that are not \
         32-byte multiples"
    );
}

#[test]
fn queue_misuse_is_reported() {
    assert_eq!(
        fault(|x, y| kernels::empty_deque(x, y)),
        "TQue<VECOUT>::DeQue: the queue is empty; EnQue a tensor first"
    );
    assert_eq!(
        fault(|x, y| kernels::double_free(x, y)),
        "TQue<VECIN>::FreeTensor: the buffer is already free (freed twice)"
    );
}

#[test]
fn global_memory_out_of_bounds_is_reported() {
    assert_eq!(
        fault(|x, y| kernels::out_of_bounds(x, y)),
        "GlobalTensor::SetValue: 4 bytes at byte offset 32 of `y` run past its \
         end (32 bytes)"
    );
}

#[test]
fn a_failing_kernel_names_itself_and_the_block() {
    let dev = Device::host();
    let x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
    let mut y = dev.zeros((8,)).unwrap();
    let err = kernels::double_free(&x, &mut y).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `double_free`, block 0: TQue<VECIN>::FreeTensor: the buffer is already free \
         (freed twice)"
    );
}
