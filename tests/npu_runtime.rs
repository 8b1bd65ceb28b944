//! pypto-rt's NPU device in this (host-only) build, against the FAKE ACL
//! runtime of tests/fake_cann/: device selection, device memory and copies,
//! and the errors of calls that cannot run. Kernels compiled for the NPU are
//! exercised by tests/npu_fake.rs.

use std::path::Path;

use pypto_rt::{Const, Device, Error, NpuArch, Tensor};
use pypto_tests::fake_cann::{FakeCann, FakeVersion};
use pypto_tests::kernels;

fn assert_send_sync<T: Send + Sync>() {}

// One test: the runtime is loaded once per process, from the variable set
// here before any thread uses pypto-rt.
#[test]
fn npu_device_over_the_fake_runtime() {
    assert_send_sync::<Device>();
    assert_send_sync::<Tensor<f32, (usize, Const<4>)>>();

    let fake = FakeCann::assemble(
        &Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-cann-runtime"),
        FakeVersion::Cann85,
    )
    .unwrap();
    // SAFETY: set before pypto-rt first reads it, while this test is the
    // only one in its process.
    unsafe { std::env::set_var(pypto_rt::LIBRARY_VAR, fake.libascendcl()) };

    let npu = Device::npu(0).unwrap();
    assert_eq!(npu.to_string(), "npu:0 (Ascend910B3)");
    assert_eq!(npu.npu_index(), Some(0));
    assert_eq!(npu.npu_arch(), Some(NpuArch::Dav2201));
    assert_eq!(Device::parse("npu").unwrap(), npu);
    assert_eq!(
        Device::parse("npu:1").unwrap().to_string(),
        "npu:1 (Ascend910B3)"
    );
    assert_ne!(Device::parse("npu:1").unwrap(), npu);
    assert!(Device::parse("host").unwrap().is_host());
    assert_eq!(
        Device::parse("npu:x").unwrap_err().to_string(),
        "`npu:x` is not a device; expected `host`, `npu` or `npu:N`"
    );
    let missing = Device::npu(9).unwrap_err();
    assert_eq!(
        missing.to_string(),
        format!(
            "npu:9 is not available: the runtime ({}) reports 2 NPUs",
            fake.libascendcl().display()
        )
    );

    // Device memory round trips, including empty tensors and copies.
    let data: Vec<f32> = (0..40).map(|i| i as f32 * 0.5 - 3.0).collect();
    let t = npu.tensor_from(&data, (10, Const::<4>)).unwrap();
    assert_eq!(t.device(), &npu);
    assert_eq!(t.len(), 40);
    assert_eq!(t.to_vec().unwrap(), data);
    assert_eq!(t.try_clone().unwrap().to_vec().unwrap(), data);
    let back = t.to_device(&Device::host()).unwrap();
    assert!(back.device().is_host());
    assert_eq!(back.to_vec().unwrap(), data);
    let empty = npu.zeros::<f32, _>((0, Const::<4>)).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.to_vec().unwrap(), Vec::<f32>::new());
    assert_eq!(
        npu.tensor_from(&data, (11, Const::<4>)).unwrap_err(),
        Error::LengthMismatch {
            expected: 44,
            actual: 40
        }
    );
    // Tensors move between threads; the worker sets the device itself.
    let from_thread = std::thread::spawn(move || t.to_vec().unwrap())
        .join()
        .unwrap();
    assert_eq!(from_thread, data);

    // This crate was built without CANN: its kernels have no NPU binary.
    let x = npu.tensor_from(&[1.0f32; 8], (2, 4)).unwrap();
    let bias = npu.tensor_from(&[1.0f32; 4], (4,)).unwrap();
    let mut out = npu.zeros((2, 4)).unwrap();
    let err = kernels::add_bias_f32(&x, &bias, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `add_bias_f32` was not built for npu:0 (Ascend910B3): the crate was built \
         without a CANN toolkit (host backend only); use `Device::host()` or set PYPTO_DEVICE=host"
    );
    // A forced host block count changes nothing on an NPU launch (here, the
    // same error).
    let forced = pypto_rt::with_host_blocks(7, || kernels::add_bias_f32(&x, &bias, &mut out));
    assert_eq!(forced.unwrap().unwrap_err(), err);
    // Mixing devices is reported before anything runs.
    let host_bias = Device::host().tensor_from(&[1.0f32; 4], (4,)).unwrap();
    let err = kernels::add_bias_f32(&x, &host_bias, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `add_bias_f32`: param `bias` is on the host (CPU), but the call runs on npu:0 (Ascend910B3)"
    );
}

/// Runs this binary again as the ACL lifecycle scenario `name` over the
/// fake runtime; returns the fake's call log.
fn lifecycle(name: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-cann-{name}"));
    let fake = FakeCann::assemble(&dir, FakeVersion::Cann85).unwrap();
    let log = dir.join("acl.log");
    let _ = std::fs::remove_file(&log);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "lifecycle_scenario",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PYPTO_LIFECYCLE", name)
        .env(pypto_rt::LIBRARY_VAR, fake.libascendcl())
        .env("PYPTO_FAKE_ACL_LOG", &log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&log).unwrap()
}

/// The child side of [`lifecycle`]; a no-op in the normal test run.
#[test]
fn lifecycle_scenario() {
    let Ok(name) = std::env::var("PYPTO_LIFECYCLE") else {
        return;
    };
    if name == "guest" {
        // Another component (think torch_npu) initialised ACL first and
        // finalises it at exit, after pypto-rt is done.
        static FINALIZE: std::sync::OnceLock<unsafe extern "C" fn() -> i32> =
            std::sync::OnceLock::new();
        unsafe extern "C" {
            fn atexit(callback: extern "C" fn()) -> i32;
        }
        extern "C" fn owner_exit() {
            // SAFETY: the fake's aclFinalize takes nothing.
            let code = unsafe { FINALIZE.get().unwrap()() };
            eprintln!("owner aclFinalize: {code}");
        }
        let path = std::env::var_os(pypto_rt::LIBRARY_VAR).unwrap();
        // SAFETY: the fake runtime; kept loaded for the process's life.
        let library = Box::leak(Box::new(unsafe { libloading::Library::new(path) }.unwrap()));
        // SAFETY: signatures of the ACL headers.
        unsafe {
            let init: libloading::Symbol<unsafe extern "C" fn(*const i8) -> i32> =
                library.get(b"aclInit\0").unwrap();
            assert_eq!(init(std::ptr::null()), 0);
            let finalize: libloading::Symbol<unsafe extern "C" fn() -> i32> =
                library.get(b"aclFinalize\0").unwrap();
            let _ = FINALIZE.set(*finalize);
            atexit(owner_exit);
        }
    }
    let npu = Device::npu(0).unwrap();
    let other = Device::npu(1).unwrap();
    let t = npu.tensor_from(&[1.0f32, 2.0], (2,)).unwrap();
    let u = other.tensor_from(&[3.0f32], (1,)).unwrap();
    assert_eq!(t.to_vec().unwrap(), [1.0, 2.0]);
    assert_eq!(u.to_vec().unwrap(), [3.0]);
}

#[test]
fn acl_owner_releases_streams_and_devices_then_finalizes() {
    assert_eq!(
        lifecycle("owner"),
        "aclInit 0 -> 0\naclrtCreateStream 0 -> 0\naclrtCreateStream 1 -> 0\n\
         aclrtDestroyStream 1 -> 0\naclrtDestroyStream 0 -> 0\n\
         aclrtResetDevice 1 -> 0\naclrtResetDevice 0 -> 0\naclFinalize 0 -> 0\n"
    );
}

#[test]
fn acl_guest_releases_its_own_and_leaves_finalize_to_the_owner() {
    assert_eq!(
        lifecycle("guest"),
        "aclInit 0 -> 0\naclInit 0 -> 100002\naclrtCreateStream 0 -> 0\n\
         aclrtCreateStream 1 -> 0\naclrtDestroyStream 1 -> 0\naclrtDestroyStream 0 -> 0\n\
         aclrtResetDevice 1 -> 0\naclrtResetDevice 0 -> 0\naclFinalize 0 -> 0\n"
    );
}
