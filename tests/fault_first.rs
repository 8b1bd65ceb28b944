//! A raw write to an input as the process's very first kernel error, and
//! the alternate signal stack the emulation gives each thread for it.
//!
//! The emulation turns such a fault into a C++ exception thrown from the
//! signal handler. The first throw of a process is the deepest (the
//! unwinder sets itself up), and it once overflowed the small alternate
//! signal stack Rust gives its threads: a crash instead of an error. This
//! binary holds one test so that nothing has thrown before it, and so that
//! no other test maps memory while it counts mappings.

use pypto_rt::{Device, Error};
use pypto_tests::{data, kernels};

/// The emulation's alternate signal stack (`FAULT_STACK_BYTES` in core.h).
const FAULT_STACK_BYTES: usize = 256 * 1024;

#[test]
fn the_first_fault_of_a_process_is_an_error_not_a_crash() {
    // In release builds read-only inputs are off: the test runs in a child
    // process that turns them on, where this is as well the first fault.
    if pypto_tests::child::ran_with_read_only_inputs(
        "the_first_fault_of_a_process_is_an_error_not_a_crash",
    ) {
        return;
    }
    let (_, rust_size, _) = alternate_stack();
    assert!(
        rust_size < FAULT_STACK_BYTES,
        "Rust's own alternate stack ({rust_size} bytes) is the small one this guards against"
    );
    let dev = Device::host();
    let x = dev.tensor_from(&data(1024, 1), (1024,)).unwrap();
    let mut y = dev.zeros::<f32, _>((1024,)).unwrap();
    let first = kernels::writes_input_raw(&x, &mut y).unwrap_err();
    assert_eq!(
        first,
        Error::Kernel {
            kernel: "writes_input_raw",
            block: 0,
            message: "writes input `x` at byte offset 8 through a raw pointer; inputs are \
                      read-only to a kernel (make the param an output with `output: true` to \
                      write it)"
                .into(),
        }
    );
    // The thread keeps the emulation's stack, enabled, and a second fault is
    // reported the same way.
    let ours = alternate_stack();
    assert_eq!((ours.1, ours.2), (FAULT_STACK_BYTES, 0));
    assert_eq!(kernels::writes_input_raw(&x, &mut y).unwrap_err(), first);
    assert_eq!(alternate_stack(), ours);
    assert_eq!(x.to_vec().unwrap(), data(1024, 1));

    // Threads that launch and end give their stacks back: 64 of them leave
    // as many mappings of the stack's size as there were, give or take the
    // last thread. A thread gives its stack back as it exits, after its
    // join returned, so on a busy machine a few may still be exiting when
    // the loop ends: they are given 5 s.
    let launch_on_a_thread = || {
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut z = dev.zeros::<f32, _>((1024,)).unwrap();
                kernels::relu_f32(&x, &mut z).unwrap();
                assert_eq!(alternate_stack().1, FAULT_STACK_BYTES);
            });
        });
    };
    let before = stack_sized_mappings();
    for _ in 0..64 {
        launch_on_a_thread();
    }
    let mut after = stack_sized_mappings();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while after > before + 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
        after = stack_sized_mappings();
    }
    assert!(
        after <= before + 1,
        "{before} mappings of {FAULT_STACK_BYTES} bytes before 64 launching threads, {after} after"
    );
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

/// How many of the process's private read-write anonymous mappings are
/// exactly the size of the emulation's alternate stack.
fn stack_sized_mappings() -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .filter(|line| {
            let mut fields = line.split_whitespace();
            let (Some(range), Some("rw-p"), None) = (fields.next(), fields.next(), fields.nth(3))
            else {
                return false;
            };
            let Some((begin, end)) = range.split_once('-') else {
                return false;
            };
            let size = |hex| usize::from_str_radix(hex, 16).unwrap();
            size(end) - size(begin) == FAULT_STACK_BYTES
        })
        .count()
}
