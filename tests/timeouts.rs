//! `PYPTO_KERNEL_TIMEOUT` end to end on the host backend: a timeout below a
//! second stops every launch within 50 ms of its value (the first of the
//! process, and launches back to back), its messages read in milliseconds,
//! and values the grammar refuses are errors, not silently other timeouts.
//!
//! The variable is read once per process, so each test runs itself again
//! as a child with the variable set; the parent checks that the child ran
//! and what it printed.

use std::process::Command;
use std::time::{Duration, Instant};

use pypto_rt::{Device, TIMEOUT_VAR};
use pypto_tests::{data, kernels};

const CHILD_VAR: &str = "PYPTO_TIMEOUT_CHILD";

/// In the child: the scenario to run.
fn scenario() -> Option<String> {
    std::env::var(CHILD_VAR).ok()
}

/// Runs test `test` of this binary again as a child with `timeout` in
/// `PYPTO_KERNEL_TIMEOUT`; returns the lines it printed with `child: `,
/// after checking that it exited cleanly and finished its scenario.
fn child(test: &str, timeout: &str) -> Vec<String> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, test)
        .env(TIMEOUT_VAR, timeout)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    // libtest writes `test … ` before the test's own first line.
    let lines: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.split_once("child: "))
        .map(|(_, line)| line.to_owned())
        .collect();
    assert_eq!(
        lines.last().map(String::as_str),
        Some("done"),
        "the child did not finish its scenario:\n{stdout}\n{stderr}"
    );
    lines
}

/// A kernel that never ends but polls the API: stopped at the timeout.
fn spin() -> (Duration, String) {
    let dev = Device::host();
    let one = dev.tensor_from(&[1.0f32], (1,)).unwrap();
    let mut y = dev.zeros((8,)).unwrap();
    let start = Instant::now();
    let result = kernels::spins(&one, &mut y);
    let took = start.elapsed();
    (took, format!("{result:?}"))
}

#[test]
fn sub_second_timeouts_stop_each_launch_within_50_ms() {
    const TEST: &str = "sub_second_timeouts_stop_each_launch_within_50_ms";
    if scenario().is_some() {
        // The first launch of the process, two right after it (while the
        // watchdog sleeps out its grace period, then its idle tick), and
        // one after a pause.
        for round in 0..4 {
            if round == 3 {
                std::thread::sleep(Duration::from_millis(400));
            }
            let (took, result) = spin();
            println!("child: {} ms: {result}", took.as_millis());
        }
        println!("child: done");
        return;
    }
    let lines = child(TEST, "0.2");
    assert_eq!(lines.len(), 5, "{lines:#?}");
    for line in &lines[..4] {
        let (ms, result) = line.split_once(" ms: ").unwrap();
        let ms: u64 = ms.parse().unwrap();
        assert!(
            (200..250).contains(&ms),
            "a launch was stopped after {ms} ms, not within 50 ms of 200 ms: {lines:#?}"
        );
        assert_eq!(
            result,
            "Err(Kernel { kernel: \"spins\", block: 0, message: \"GlobalTensor::GetValue: the \
             launch did not finish within 200 ms (PYPTO_KERNEL_TIMEOUT); this block was stopped \
             here\" })"
        );
    }
}

#[test]
fn timeouts_below_a_millisecond_are_refused() {
    const TEST: &str = "timeouts_below_a_millisecond_are_refused";
    if scenario().is_some() {
        let (_, result) = spin();
        println!("child: {result}");
        println!("child: done");
        return;
    }
    assert_eq!(
        child(TEST, "0.0001"),
        [
            "Err(Backend(\"PYPTO_KERNEL_TIMEOUT=`0.0001` is not a timeout; use a number of \
             seconds from 0.001 (e.g. `60` or `0.25`), or `0` or `off` for no limit\"))",
            "done"
        ]
    );
}

#[test]
fn zero_written_either_way_means_no_limit() {
    const TEST: &str = "zero_written_either_way_means_no_limit";
    if scenario().is_some() {
        let dev = Device::host();
        let x = dev.tensor_from(&data(8, 1), (8,)).unwrap();
        let mut y = dev.zeros((8,)).unwrap();
        let result = kernels::relu_f32(&x, &mut y);
        println!("child: {result:?}");
        println!("child: done");
        return;
    }
    for zero in ["0", "0.0"] {
        assert_eq!(child(TEST, zero), ["Ok(())", "done"], "{zero}");
    }
}
