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

    views_and_copies_on_the_npu(&npu);
    adopted_device_memory(&npu, &fake.libascendcl());

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

/// Slices and reshapes of NPU tensors are views (device addresses into the
/// same allocation); copies go between every pair of devices, into views.
/// (Kernel launches on NPU views run in tests/npu_fake.rs, whose crate has
/// NPU kernels.)
fn views_and_copies_on_the_npu(npu: &Device) {
    let host = Device::host();
    let other = Device::npu(1).unwrap();
    let data: Vec<f32> = (0..40).map(|i| i as f32 - 7.5).collect();
    let t = npu.tensor_from(&data, (10, Const::<4>)).unwrap();
    let rows = t.slice(3..7).unwrap();
    assert_eq!(rows.device(), npu);
    assert_eq!(rows.as_ptr(), t.as_ptr().wrapping_add(12));
    assert_eq!(rows.to_vec().unwrap(), data[12..28]);
    let cube = rows.reshape((2usize, 2usize, Const::<4>)).unwrap();
    assert_eq!(cube.slice(1..).unwrap().to_vec().unwrap(), data[20..28]);
    assert_eq!(
        t.slice(9..).unwrap().to_tensor().unwrap().to_vec().unwrap(),
        data[36..]
    );

    // host -> npu:0 -> npu:1 -> npu:0 (into views) -> npu:0 -> host -> host.
    let h = host.tensor_from(&data, (10, Const::<4>)).unwrap();
    let mut a = npu.zeros::<f32, _>((10, Const::<4>)).unwrap();
    a.copy_from(&h).unwrap();
    assert_eq!(a.to_vec().unwrap(), data);
    let mut b = other.zeros::<f32, _>((10, Const::<4>)).unwrap();
    a.copy_to(&mut b).unwrap();
    assert_eq!(b.to_vec().unwrap(), data);
    let mut c = npu.zeros::<f32, _>((10, Const::<4>)).unwrap();
    c.slice_mut(..5)
        .unwrap()
        .copy_from(b.slice(5..).unwrap())
        .unwrap();
    a.slice(..5)
        .unwrap()
        .copy_to(c.slice_mut(5..).unwrap())
        .unwrap();
    let swapped: Vec<f32> = data[20..].iter().chain(&data[..20]).copied().collect();
    assert_eq!(c.to_vec().unwrap(), swapped);
    let mut back = host.zeros::<f32, _>((10, Const::<4>)).unwrap();
    c.copy_to(&mut back).unwrap();
    let mut again = host.zeros::<f32, _>((10, Const::<4>)).unwrap();
    again.copy_from(&back).unwrap();
    assert_eq!(again.to_vec().unwrap(), swapped);
    // npu:1 <- host, into a view.
    b.slice_mut(9..)
        .unwrap()
        .copy_from(h.slice(..1).unwrap())
        .unwrap();
    assert_eq!(&b.to_vec().unwrap()[36..], &data[..4]);
    assert_eq!(
        c.copy_from(&host.zeros::<f32, _>((9, Const::<4>)).unwrap())
            .unwrap_err()
            .to_string(),
        "cannot copy a tensor of sizes [9, 4] into one of sizes [10, 4]; copies need equal \
         sizes (reshape one of them)"
    );
}

/// Memory allocated straight through ACL (as torch_npu or aclnn would) is
/// adopted without a copy, used through pypto-rt, and never freed by it.
fn adopted_device_memory(npu: &Device, library: &Path) {
    type SetDevice = unsafe extern "C" fn(i32) -> i32;
    type Malloc = unsafe extern "C" fn(*mut *mut std::ffi::c_void, usize, i32) -> i32;
    type Memcpy = unsafe extern "C" fn(
        *mut std::ffi::c_void,
        usize,
        *const std::ffi::c_void,
        usize,
        i32,
    ) -> i32;
    type Free = unsafe extern "C" fn(*mut std::ffi::c_void) -> i32;
    // Another component on this thread makes npu:1 current behind
    // pypto-rt's back: pypto-rt asks the runtime which device is current,
    // so its next call still goes to npu:0 (the fake rejects a copy of
    // another device's memory).
    let twos = npu.tensor_from(&[2.0f32; 8], (2, Const::<4>)).unwrap();
    // SAFETY: the fake runtime pypto-rt already loaded (the same handle);
    // the signature is that of the ACL headers.
    unsafe {
        let lib = libloading::Library::new(library).unwrap();
        let set_device: libloading::Symbol<SetDevice> = lib.get(b"aclrtSetDevice\0").unwrap();
        assert_eq!(set_device(1), 0);
    }
    assert_eq!(twos.to_vec().unwrap(), [2.0; 8]);

    // Adopting a raw stream: a null handle or the host backend is an error.
    // SAFETY: both calls are rejected before the handle is used.
    let null = unsafe { pypto_rt::Stream::from_raw(npu, std::ptr::null_mut()) };
    assert_eq!(
        null.unwrap_err().to_string(),
        "npu:0 (Ascend910B3) is not available: the raw ACL stream is null"
    );
    let not_null = std::ptr::NonNull::<u8>::dangling().as_ptr().cast();
    // SAFETY: as above.
    let host = unsafe { pypto_rt::Stream::from_raw(&Device::host(), not_null) };
    assert_eq!(
        host.unwrap_err().to_string(),
        "the host (CPU) is not available: a raw ACL stream belongs to an NPU, not to the host \
         backend"
    );
    assert!(Device::host().default_stream().as_raw().is_null());

    let npu = npu.clone();
    let library = library.to_owned();
    std::thread::spawn(move || {
        // SAFETY: the fake runtime pypto-rt already loaded (the same handle);
        // the signatures are those of the ACL headers.
        unsafe {
            let lib = libloading::Library::new(library).unwrap();
            let set_device: libloading::Symbol<SetDevice> = lib.get(b"aclrtSetDevice\0").unwrap();
            let malloc: libloading::Symbol<Malloc> = lib.get(b"aclrtMalloc\0").unwrap();
            let memcpy: libloading::Symbol<Memcpy> = lib.get(b"aclrtMemcpy\0").unwrap();
            let free: libloading::Symbol<Free> = lib.get(b"aclrtFree\0").unwrap();
            assert_eq!(set_device(0), 0);
            let mut ptr = std::ptr::null_mut();
            assert_eq!(malloc(&mut ptr, 64 * 4, 0), 0);
            let data: Vec<f32> = (0..64).map(|i| i as f32 * 0.25).collect();
            assert_eq!(memcpy(ptr, 256, data.as_ptr().cast(), 256, 1), 0);

            let mut t =
                Tensor::from_raw_parts(ptr.cast::<f32>(), 64, (16usize, Const::<4>), &npu).unwrap();
            assert_eq!(t.as_ptr(), ptr.cast::<f32>().cast_const());
            assert_eq!(t.as_mut_ptr(), ptr.cast::<f32>());
            assert_eq!(t.to_vec().unwrap(), data);
            assert_eq!(t.slice(15..).unwrap().to_vec().unwrap(), data[60..]);
            let ones = npu.tensor_from(&[1.0f32; 8], (2, Const::<4>)).unwrap();
            t.slice_mut(..2).unwrap().copy_from(&ones).unwrap();
            // Kernels take it like any tensor; this crate has no NPU build.
            let bias = npu.tensor_from(&[0.0f32; 4], (4,)).unwrap();
            let mut out = npu.zeros((16, 4)).unwrap();
            let err = kernels::add_bias_f32(
                t.view().reshape((16usize, 4usize)).unwrap(),
                &bias,
                &mut out,
            )
            .unwrap_err();
            assert!(matches!(err, Error::NotBuiltFor { .. }), "{err}");
            drop(t);
            // The owner reads its memory back and frees it: pypto-rt did not.
            let mut host = vec![0.0f32; 64];
            assert_eq!(memcpy(host.as_mut_ptr().cast(), 256, ptr, 256, 2), 0);
            assert_eq!(&host[..8], &[1.0; 8]);
            assert_eq!(&host[8..], &data[8..]);
            assert_eq!(free(ptr), 0);
        }
    })
    .join()
    .unwrap();
}

/// Runs [`lifecycle_scenario`] in a child process as the ACL lifecycle
/// scenario `name` over the fake runtime; returns the fake's call log and
/// the child's stderr.
fn lifecycle(name: &str) -> (String, String) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-cann-{name}"));
    let fake = FakeCann::assemble(&dir, FakeVersion::Cann85).unwrap();
    let log = dir.join("acl.log");
    let _ = std::fs::remove_file(&log);
    let library = fake.libascendcl();
    let child = pypto_tests::child::run(
        "lifecycle_scenario",
        &[
            ("PYPTO_LIFECYCLE", name),
            (pypto_rt::LIBRARY_VAR, library.to_str().unwrap()),
            ("PYPTO_FAKE_ACL_LOG", log.to_str().unwrap()),
        ],
    );
    assert!(child.passed(), "{child:#?}");
    (std::fs::read_to_string(&log).unwrap(), child.stderr)
}

/// The child side of [`lifecycle`].
#[test]
#[ignore = "a child process of the acl_* lifecycle tests"]
fn lifecycle_scenario() {
    pypto_tests::child::enter("lifecycle_scenario");
    let name = std::env::var("PYPTO_LIFECYCLE").expect("a scenario");
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
    let (log, stderr) = lifecycle("owner");
    assert_eq!(
        log,
        "aclInit 0 -> 0\naclrtCreateStream 0 -> 0\naclrtCreateStream 1 -> 0\n\
         aclrtDestroyStream 1 -> 0\naclrtDestroyStream 0 -> 0\n\
         aclrtResetDevice 1 -> 0\naclrtResetDevice 0 -> 0\naclFinalize 0 -> 0\n"
    );
    assert_eq!(stderr, "pypto-tests child: entered lifecycle_scenario\n");
}

#[test]
fn acl_guest_releases_its_own_and_leaves_finalize_to_the_owner() {
    let (log, stderr) = lifecycle("guest");
    assert_eq!(
        log,
        "aclInit 0 -> 0\naclInit 0 -> 100002\naclrtCreateStream 0 -> 0\n\
         aclrtCreateStream 1 -> 0\naclrtDestroyStream 1 -> 0\naclrtDestroyStream 0 -> 0\n\
         aclrtResetDevice 1 -> 0\naclrtResetDevice 0 -> 0\naclFinalize 0 -> 0\n"
    );
    // The owner's own finalize, at exit after pypto-rt's release, succeeded.
    assert_eq!(
        stderr,
        "pypto-tests child: entered lifecycle_scenario\nowner aclFinalize: 0\n"
    );
}
