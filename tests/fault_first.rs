//! A raw write to an input as the process's very first kernel error.
//!
//! The emulation turns such a fault into a C++ exception thrown from the
//! signal handler. The first throw of a process is the deepest (the
//! unwinder sets itself up), and it once overflowed the small alternate
//! signal stack Rust gives its threads: a crash instead of an error. This
//! binary holds one test so that nothing has thrown before it.

use pypto_rt::{Device, Error};
use pypto_tests::{data, kernels};

#[test]
fn the_first_fault_of_a_process_is_an_error_not_a_crash() {
    let on =
        std::env::var(pypto_rt::READONLY_INPUTS_VAR).map_or(cfg!(debug_assertions), |v| v == "1");
    if !on {
        eprintln!("skipped: read-only inputs are off in this build");
        return;
    }
    let before = alternate_stack();
    let dev = Device::host();
    let x = dev.tensor_from(&data(1024, 1), (1024,)).unwrap();
    let mut y = dev.zeros::<f32, _>((1024,)).unwrap();
    match kernels::writes_input_raw(&x, &mut y).unwrap_err() {
        Error::Kernel { message, .. } => assert_eq!(
            message,
            "writes input `x` at byte offset 8 through a raw pointer; inputs are read-only to a \
             kernel (make the param an output with `output: true` to write it)"
        ),
        other => panic!("expected a kernel error, got {other:?}"),
    }
    // The launch put back the thread's own alternate stack, and a second
    // fault is reported the same way.
    assert_eq!(alternate_stack(), before);
    assert!(kernels::writes_input_raw(&x, &mut y).is_err());
    assert_eq!(alternate_stack(), before);
    assert_eq!(x.to_vec().unwrap(), data(1024, 1));
}

/// This thread's alternate signal stack: (start, size, flags).
fn alternate_stack() -> (usize, usize, i32) {
    // SAFETY: a null new stack only queries; `old` is written by the call.
    let old = unsafe {
        let mut old: libc::stack_t = std::mem::zeroed();
        assert_eq!(libc::sigaltstack(std::ptr::null(), &mut old), 0);
        old
    };
    (old.ss_sp as usize, old.ss_size, old.ss_flags)
}
