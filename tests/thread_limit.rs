//! A process that cannot start threads still runs multi-block kernels: the
//! calling thread runs every block (no "failed to spawn thread" panic).
//!
//! Without a harness: the check starts this binary again with
//! `RUST_MIN_STACK` far beyond the address space, so that every thread
//! spawn fails, and checks what the child printed.

use std::process::Command;

use pypto_rt::Device;
use pypto_tests::{data, kernels};

fn main() {
    if std::env::var_os("PYPTO_THREAD_LIMIT_CHILD").is_some() {
        child();
        return;
    }
    // The control: a thread spawn in this environment fails.
    let out = Command::new(std::env::current_exe().unwrap())
        .env("PYPTO_THREAD_LIMIT_CHILD", "1")
        .env("RUST_MIN_STACK", "1000000000000000")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert_eq!(
        stdout, "spawn fails: true\nblocks 48, matches the reference: true\n",
        "{stderr}"
    );
    println!("thread_limit: a kernel of 48 blocks ran with no thread to spare ... ok");
}

fn child() {
    let spawn_fails = std::thread::Builder::new().spawn(|| {}).is_err();
    println!("spawn fails: {spawn_fails}");
    let dev = Device::host();
    let n = 48 * 8192;
    let a = data(n, 1);
    let b = data(n, 2);
    let x = dev.tensor_from(&a, (n,)).unwrap();
    let y = dev.tensor_from(&b, (n,)).unwrap();
    let mut out = dev.zeros((n,)).unwrap();
    kernels::add_f32(&x, &y, &mut out).unwrap();
    let expected: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a + b).collect();
    println!(
        "blocks {}, matches the reference: {}",
        pypto_rt::last_launch().unwrap().blocks,
        out.to_vec().unwrap() == expected
    );
}
