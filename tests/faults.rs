//! A kernel cannot reach undefined behaviour from safe Rust on the host
//! backend: writes to inputs, raw out-of-bounds accesses, stale global
//! tensors, invalid `bool`s and integer division by zero are errors naming
//! the kernel, block and param; a fault that cannot be recovered from (a
//! null store) and a kernel that never ends are reported on stderr before
//! the process ends. Those last run in a child process: this test binary,
//! started again to run the ignored `child_scenario` with
//! `PYPTO_FAULT_CHILD` naming the scenario.

use pypto_rt::{Const, Device, Error};
use pypto_tests::{data, kernels};

type Vector = pypto_rt::Tensor<f32, (usize,)>;

/// Runs `kernel` on x = 8 elements, y = 8 zeros; returns the error.
fn run(kernel: fn(&Vector, &mut Vector) -> Result<(), Error>) -> (Error, Vec<f32>, Vec<f32>) {
    let dev = Device::host();
    let x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
    let mut y = dev.zeros((8,)).unwrap();
    let err = kernel(&x, &mut y).unwrap_err();
    (err, x.to_vec().unwrap(), y.to_vec().unwrap())
}

fn kernel_message(err: Error) -> String {
    match err {
        Error::Kernel { block, message, .. } => {
            assert_eq!(block, 0);
            message
        }
        other => panic!("expected a kernel error, got {other:?}"),
    }
}

#[test]
fn writing_an_input_through_the_api_is_an_error() {
    let (err, x, _) = run(|a0, a1| kernels::writes_input(a0, a1));
    assert_eq!(
        kernel_message(err),
        "GlobalTensor::SetValue: writes 4 bytes at byte offset 4 of input `x`; inputs are \
         read-only to a kernel (make the param an output with `output: true` to write it)"
    );
    assert_eq!(x, data(8, 1), "the input is unchanged");
}

#[test]
fn writing_an_input_through_a_raw_pointer_is_an_error() {
    if pypto_tests::child::ran_with_read_only_inputs(
        "writing_an_input_through_a_raw_pointer_is_an_error",
    ) {
        return;
    }
    let (err, x, _) = run(|a0, a1| kernels::writes_input_raw(a0, a1));
    let first = err.clone();
    assert_eq!(
        kernel_message(err),
        "writes input `x` at byte offset 8 through a raw pointer; inputs are read-only to a \
         kernel (make the param an output with `output: true` to write it)"
    );
    assert_eq!(x, data(8, 1), "the input is unchanged");
    // The input is writable again from Rust once the launch is over.
    let dev = Device::host();
    let mut x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
    let mut y = dev.zeros((8,)).unwrap();
    // A second fault is reported the same way.
    assert_eq!(kernels::writes_input_raw(&x, &mut y).unwrap_err(), first);
    kernels::relu_f32(&y, &mut x).unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![0.0; 8]);
}

#[test]
fn raw_accesses_past_the_end_hit_the_guard_page() {
    let (err, _, y) = run(|a0, a1| kernels::raw_overrun(a0, a1));
    assert_eq!(
        kernel_message(err),
        "accesses `y` at byte offset 32 through a raw pointer, past its end (32 bytes); the \
         guard page after the tensor stopped it"
    );
    assert_eq!(y, vec![0.0; 8]);
    // A read past the end of an input is caught too (x and y of one element).
    let dev = Device::host();
    let x = dev.tensor_from(&[3.0f32], (1,)).unwrap();
    let mut y = dev.zeros((1,)).unwrap();
    let err = kernels::raw_overrun(&x, &mut y).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `raw_overrun`, block 0: accesses `x` at byte offset 4 through a raw pointer, \
         past its end (4 bytes); the guard page after the tensor stopped it"
    );
}

#[test]
fn raw_writes_before_the_start_are_found_after_the_launch() {
    let (err, _, _) = run(|a0, a1| kernels::raw_underrun(a0, a1));
    assert_eq!(
        err,
        Error::OutOfBounds {
            kernel: "raw_underrun",
            param: "y",
            before: 4
        }
    );
    assert_eq!(
        err.to_string(),
        "kernel `raw_underrun`: the bytes 4 before the start of `y` were written (a raw GM_ADDR \
         write out of bounds); check the kernel's offsets"
    );
}

#[test]
fn a_global_tensor_kept_from_an_earlier_launch_is_rejected() {
    let dev = Device::host();
    let x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
    let mut first = dev.zeros((8,)).unwrap();
    kernels::keeps_global(&x, &mut first).unwrap();
    assert_eq!(first.to_vec().unwrap()[0], 1.0);
    drop(first);
    let mut second = dev.zeros((8,)).unwrap();
    let err = kernels::keeps_global(&x, &mut second).unwrap_err();
    assert_eq!(
        kernel_message(err),
        "GlobalTensor::SetValue: the GlobalTensor was set up by an earlier launch, whose memory \
         is gone; call SetGlobalBuffer in every launch"
    );
    assert_eq!(second.to_vec().unwrap(), vec![0.0; 8]);
}

#[test]
fn a_bool_output_never_holds_an_invalid_bool() {
    let dev = Device::host();
    let x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
    let mut flags = dev.tensor_from(&[true; 4], (Const::<4>,)).unwrap();
    let err = kernels::bad_bool(&x, &mut flags).unwrap_err();
    assert_eq!(
        err,
        Error::InvalidBool {
            kernel: Some("bad_bool"),
            param: "flags",
            index: 1,
            value: 2
        }
    );
    assert_eq!(
        err.to_string(),
        "kernel `bad_bool`: `flags` element 1 holds byte 2, which is not a DT_BOOL (0 or 1); \
         the tensor was reset to false"
    );
    assert_eq!(flags.to_vec().unwrap(), vec![false; 4]);
}

#[test]
fn integer_division_by_zero_is_an_error() {
    let (err, _, y) = run(|a0, a1| kernels::divide_by_zero(a0, a1));
    let message = kernel_message(err);
    assert!(
        message.starts_with("integer division by zero or overflow (SIGFPE) at instruction 0x"),
        "{message}"
    );
    assert_eq!(y, vec![0.0; 8]);
}

#[test]
fn impossible_allocations_are_errors() {
    let dev = Device::host();
    let err = dev
        .zeros::<f32, _>((65536usize, 65536usize, 65536usize))
        .unwrap_err();
    assert!(
        matches!(err, Error::OutOfMemory { bytes, .. } if bytes == 1 << 50),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("could not allocate 1125899906842624 bytes: "),
        "{err}"
    );
    let err = dev.zeros::<f32, _>((1usize << 62,)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "size overflow: 4611686018427387904 elements of 4 bytes are more than memory can address"
    );
    let err = dev.zeros::<u8, _>((usize::MAX / 2,)).unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
}

/// Runs [`child_scenario`] in a child process with the scenario `name`;
/// returns its exit code and stderr.
fn child(name: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut env = env.to_vec();
    env.push(("PYPTO_FAULT_CHILD", name));
    let child = pypto_tests::child::run("child_scenario", &env);
    (child.code, child.stderr)
}

/// The scenarios, run only as a child of the tests below.
#[test]
#[ignore = "a child process of the fault tests below"]
fn child_scenario() {
    pypto_tests::child::enter("child_scenario");
    let name = std::env::var("PYPTO_FAULT_CHILD").expect("a scenario");
    let dev = Device::host();
    let one = dev.tensor_from(&[1.0f32], (1,)).unwrap();
    let x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
    let mut y = dev.zeros((8,)).unwrap();
    let result = match name.as_str() {
        "null_store" => kernels::null_store(&x, &mut y),
        "spins_polling" => kernels::spins(&one, &mut y),
        "spins_silent" => kernels::spins(&x, &mut y),
        other => panic!("no scenario {other}"),
    };
    eprintln!("child result: {result:?}");
}

/// What the child prints first, on entering its scenario.
const ENTERED: &str = "pypto-tests child: entered child_scenario\n";

#[test]
fn a_null_store_is_reported_before_the_process_ends() {
    let (code, stderr) = child("null_store", &[]);
    assert_eq!(code, None, "killed by a signal: {stderr}");
    assert_eq!(
        stderr,
        format!(
            "{ENTERED}pypto-rt: kernel `null_store`, block 0: fatal SIGSEGV (invalid memory \
             access) at address 0x0 (a null pointer), outside every tensor of the launch; a raw \
             GM_ADDR or pointer went astray. The process cannot continue.\n"
        )
    );
}

#[test]
fn a_kernel_past_its_timeout_is_stopped_at_its_next_api_call() {
    let (code, stderr) = child("spins_polling", &[("PYPTO_KERNEL_TIMEOUT", "0.5")]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "{ENTERED}child result: Err(Kernel {{ kernel: \"spins\", block: 0, message: \
             \"GlobalTensor::GetValue: the launch did not finish within 500 ms \
             (PYPTO_KERNEL_TIMEOUT); this block was stopped here\" }})\n"
        )
    );
}

#[test]
fn a_kernel_that_cannot_be_stopped_ends_the_process_with_its_name() {
    let (code, stderr) = child("spins_silent", &[("PYPTO_KERNEL_TIMEOUT", "0.5")]);
    assert_eq!(code, None, "aborted: {stderr}");
    assert_eq!(
        stderr,
        format!(
            "{ENTERED}pypto-rt: kernel `spins` did not finish within 500 ms \
             (PYPTO_KERNEL_TIMEOUT); block 0 did not stop when asked, so it makes no Ascend C \
             API call (an endless loop?); ending the process\n"
        )
    );
}
