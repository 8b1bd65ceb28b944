//! The NPU path end to end against FAKE CANN toolkits (tests/fake_cann/):
//! a user crate built with `ASCEND_HOME_PATH` pointing at a fake install
//! compiles its kernels with the fake bisheng (which checks and records the
//! flags), links them per architecture into a shared library the binary
//! embeds (the binary itself links no CANN library), and runs on the fake
//! "NPU" through pypto-rt's ACL FFI, and on the host once the toolkit is
//! gone. This proves pypto-rs's side of the contract only;
//! nothing here has run on Ascend hardware.

use std::path::{Path, PathBuf};
use std::process::Command;

use pypto_tests::fake_cann::{FakeCann, FakeVersion};

fn workspace() -> &'static Path {
    pypto_tests::workspace_root()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn target_dir() -> PathBuf {
    workspace().join("target/scratch")
}

/// The test's own kernel object cache, emptied at its start.
fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-npu-cache")
}

/// Runs cargo in `dir`, offline; returns (success, stdout, stderr).
fn cargo(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> (bool, String, String) {
    pypto_tests::scratch_cargo(dir, Some(&cache_dir()), args, env.iter().copied())
}

fn binary() -> PathBuf {
    target_dir().join("debug/scratch-npu")
}

/// Runs the built scratch binary with `mode` and extra environment, with
/// the runtime library of the toolkit at `home` on `LD_LIBRARY_PATH` (as
/// CANN's `set_env.sh` puts it; the binary has no run path to it), or no
/// toolkit at all; returns (success, stdout, stderr).
fn run_in(home: Option<&Path>, mode: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let mut command = Command::new(binary());
    command
        .arg(mode)
        .env_remove("PYPTO_DEVICE")
        .env_remove("PYPTO_ACL_LIBRARY")
        .env_remove("ASCEND_HOME_PATH")
        .env_remove("ASCEND_TOOLKIT_HOME")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("PYPTO_FAKE_ACL_FAIL")
        .env_remove("PYPTO_FAKE_SOC");
    if let Some(home) = home {
        command.env("LD_LIBRARY_PATH", home.join("lib64"));
    }
    pypto_tests::outcome(
        command
            .envs(env.iter().copied())
            .output()
            .expect("scratch binary runs"),
    )
}

const SPEC: &str = r#"dims:
  HIDDEN: 64
kernels:
  add_bias:
    template: builtin/add_bias
    params:
      x:    { dtype: DT_FP32, shape: [DYNAMIC, HIDDEN] }
      bias: { dtype: DT_FP32, shape: [HIDDEN] }
      out:  { dtype: DT_FP32, shape: [DYNAMIC, HIDDEN], output: true }
  attention:
    template: builtin/attention
    targets: [A2, A3]
    params:
      q:   { dtype: DT_FP32, shape: [DYNAMIC, DYNAMIC, HIDDEN] }
      k:   { dtype: DT_FP32, shape: [DYNAMIC, DYNAMIC, HIDDEN] }
      v:   { dtype: DT_FP32, shape: [DYNAMIC, DYNAMIC, HIDDEN] }
      out: { dtype: DT_FP32, shape: [DYNAMIC, DYNAMIC, HIDDEN], output: true }
  matmul:
    template: builtin/matmul
    targets: [A2]
    params:
      a:   { dtype: DT_FP32, shape: [DYNAMIC, 32] }
      b:   { dtype: DT_FP32, shape: [32, 16] }
      out: { dtype: DT_FP32, shape: [DYNAMIC, 16], output: true }
"#;

const MAIN: &str = r#"pypto_rt::include_kernels!();

use pypto_rt::{Const, Device};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Small integers over 8: sums and products are exact in f32.
fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((s >> 24) % 17) as f32 / 8.0 - 1.0
        })
        .collect()
}

fn add_bias(dev: &Device, rows: usize) -> Result<()> {
    let x = data(rows * 64, rows as u32);
    let bias = data(64, 7);
    let mut out = dev.zeros((rows, Const::<64>))?;
    kernels::add_bias(
        &dev.tensor_from(&x, (rows, Const::<64>))?,
        &dev.tensor_from(&bias, (Const::<64>,))?,
        &mut out,
    )?;
    let want: Vec<f32> = x.iter().enumerate().map(|(i, v)| v + bias[i % 64]).collect();
    if out.to_vec()? != want {
        return Err(format!("add_bias rows={rows}: wrong numbers").into());
    }
    Ok(())
}

fn attention(dev: &Device) -> Result<()> {
    let (b, s, h) = (2usize, 24usize, 64usize);
    let (q, k, v) = (data(b * s * h, 1), data(b * s * h, 2), data(b * s * h, 3));
    let mut out = dev.zeros((b, s, Const::<64>))?;
    kernels::attention(
        &dev.tensor_from(&q, (b, s, Const::<64>))?,
        &dev.tensor_from(&k, (b, s, Const::<64>))?,
        &dev.tensor_from(&v, (b, s, Const::<64>))?,
        &mut out,
    )?;
    let got = out.to_vec()?;
    let scale = 1.0 / (h as f64).sqrt();
    let mut worst = 0.0f64;
    for bi in 0..b {
        for i in 0..s {
            let row = |t: &[f32], j: usize| (bi * s + j) * h;
            let scores: Vec<f64> = (0..s)
                .map(|j| (0..h).map(|d| q[row(&q, i) + d] as f64 * k[row(&k, j) + d] as f64).sum::<f64>() * scale)
                .collect();
            let max = scores.iter().cloned().fold(f64::MIN, f64::max);
            let weights: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            for d in 0..h {
                let want: f64 = (0..s).map(|j| weights[j] * v[row(&v, j) + d] as f64).sum::<f64>() / total;
                worst = worst.max((got[row(&q, i) + d] as f64 - want).abs());
            }
        }
    }
    if worst > 1e-5 {
        return Err(format!("attention: max |error| {worst}").into());
    }
    Ok(())
}

fn matmul(dev: &Device) -> Result<()> {
    let m = 40usize;
    let (a, b) = (data(m * 32, 4), data(32 * 16, 5));
    let mut out = dev.zeros((m, Const::<16>))?;
    kernels::matmul(
        &dev.tensor_from(&a, (m, Const::<32>))?,
        &dev.tensor_from(&b, (Const::<32>, Const::<16>))?,
        &mut out,
    )?;
    let got = out.to_vec()?;
    for i in 0..m {
        for j in 0..16 {
            let want: f32 = (0..32).map(|t| a[i * 32 + t] * b[t * 16 + j]).sum();
            if (got[i * 16 + j] - want).abs() > 1e-3 {
                return Err(format!("matmul ({i}, {j}): {} vs {want}", got[i * 16 + j]).into());
            }
        }
    }
    Ok(())
}

/// Views and adopted memory as kernel arguments on the NPU.
fn views() -> Result<()> {
    let dev = Device::npu(0)?;
    // Rows 2..5 of an input into rows 10..13 of a bigger output.
    let (x, bias) = (data(8 * 64, 11), data(64, 12));
    let tx = dev.tensor_from(&x, (8, Const::<64>))?;
    let tb = dev.tensor_from(&bias, (Const::<64>,))?;
    let mut out = dev.zeros((16, Const::<64>))?;
    kernels::add_bias(tx.slice(2..5)?, &tb, out.slice_mut(10..13)?)?;
    let got = out.to_vec()?;
    for (i, v) in got.iter().enumerate() {
        let (row, col) = (i / 64, i % 64);
        let want = if (10..13).contains(&row) { x[(row - 8) * 64 + col] + bias[col] } else { 0.0 };
        if *v != want {
            return Err(format!("views: row {row} col {col}: {v} vs {want}").into());
        }
    }
    println!("slices ok");

    // `[T, 64]` rows typed as `[B, S, 64]` with sizes known at run time.
    let (b, s) = (2usize, 24usize);
    let (q, k, v) = (data(b * s * 64, 1), data(b * s * 64, 2), data(b * s * 64, 3));
    let rows = |d: &[f32]| dev.tensor_from(d, (b * s, Const::<64>));
    let (q2, k2, v2) = (rows(&q)?, rows(&k)?, rows(&v)?);
    let mut out2 = dev.zeros((b * s, Const::<64>))?;
    let shape = (b, s, Const::<64>);
    kernels::attention(
        q2.view().reshape(shape)?,
        k2.view().reshape(shape)?,
        v2.view().reshape(shape)?,
        out2.view_mut().reshape(shape)?,
    )?;
    let mut out3 = dev.zeros(shape)?;
    kernels::attention(
        &dev.tensor_from(&q, shape)?,
        &dev.tensor_from(&k, shape)?,
        &dev.tensor_from(&v, shape)?,
        &mut out3,
    )?;
    if out2.to_vec()? != out3.to_vec()? {
        return Err("attention on reshaped views differs".into());
    }
    println!("reshape ok");

    // Memory another framework allocated through ACL, adopted in place.
    type Malloc = unsafe extern "C" fn(*mut *mut std::ffi::c_void, usize, i32) -> i32;
    type Memcpy = unsafe extern "C" fn(*mut std::ffi::c_void, usize, *const std::ffi::c_void, usize, i32) -> i32;
    type Free = unsafe extern "C" fn(*mut std::ffi::c_void) -> i32;
    // SAFETY: the runtime pypto-rt loaded (the same handle); signatures of
    // the ACL headers; device 0 is current on this thread (pypto-rt made
    // it so above).
    unsafe {
        let lib = libloading::Library::new("libascendcl.so")?;
        let malloc: libloading::Symbol<Malloc> = lib.get(b"aclrtMalloc\0")?;
        let memcpy: libloading::Symbol<Memcpy> = lib.get(b"aclrtMemcpy\0")?;
        let free: libloading::Symbol<Free> = lib.get(b"aclrtFree\0")?;
        let bytes = 4 * 64 * 4;
        let (mut px, mut py) = (std::ptr::null_mut(), std::ptr::null_mut());
        if malloc(&mut px, bytes, 0) != 0 || malloc(&mut py, bytes, 0) != 0 {
            return Err("aclrtMalloc failed".into());
        }
        let xs = data(4 * 64, 21);
        if memcpy(px, bytes, xs.as_ptr().cast(), bytes, 1) != 0 {
            return Err("aclrtMemcpy failed".into());
        }
        let ax = pypto_rt::Tensor::from_raw_parts(px.cast::<f32>(), 256, (4usize, Const::<64>), &dev)?;
        let mut ay = pypto_rt::Tensor::from_raw_parts(py.cast::<f32>(), 256, (4usize, Const::<64>), &dev)?;
        kernels::add_bias(&ax, &tb, &mut ay)?;
        drop((ax, ay));
        let mut ys = vec![0f32; 256];
        if memcpy(ys.as_mut_ptr().cast(), bytes, py, bytes, 2) != 0 {
            return Err("aclrtMemcpy failed".into());
        }
        let want: Vec<f32> = xs.iter().enumerate().map(|(i, v)| v + bias[i % 64]).collect();
        if ys != want {
            return Err("add_bias on adopted memory: wrong numbers".into());
        }
        // pypto-rt did not free them: the owner does.
        if free(px) != 0 || free(py) != 0 {
            return Err("aclrtFree of adopted memory failed".into());
        }
    }
    println!("adopted ok");
    Ok(())
}

/// Counts every heap allocation of the process, for `launch-cost`.
struct Counting;

static ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; the count is an
// atomic, which allocates nothing.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The host-side cost of an NPU launch in steady state (the tiling cached,
/// the device current, nothing pending on other streams): heap allocations,
/// pypto-rt's mutexes locked on this thread, and fake-ACL calls per launch
/// of `add_bias`, over 100 launches.
fn launch_cost() -> Result<()> {
    type Counter = unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_long;
    let dev = Device::npu(0)?;
    let x = dev.tensor_from(&data(8 * 64, 1), (8, Const::<64>))?;
    let bias = dev.tensor_from(&data(64, 2), (Const::<64>,))?;
    let mut out = dev.zeros((8, Const::<64>))?;
    for _ in 0..3 {
        kernels::add_bias(&x, &bias, &mut out)?;
    }
    // SAFETY: the runtime pypto-rt loaded (the same handle); the fake's
    // counter takes a NUL-terminated name.
    let lib = unsafe { libloading::Library::new("libascendcl.so")? };
    let counter: libloading::Symbol<Counter> = unsafe { lib.get(b"pypto_fake_acl_counter\0")? };
    let names = ["launch", "aclrtGetDevice", "aclrtMalloc", "aclrtMemcpy", "aclrtRecordEvent", "aclrtStreamWaitEvent", "aclrtSynchronizeStream"];
    let read = |name: &str| -> Result<i64> {
        let name = std::ffi::CString::new(name)?;
        // SAFETY: as above.
        Ok(i64::from(unsafe { counter(name.as_ptr()) }))
    };
    let before: Vec<i64> = names.iter().map(|n| read(n)).collect::<Result<_>>()?;
    let launches = 100;
    let allocations = ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed);
    let locks = pypto_rt::testing::locks_taken();
    for _ in 0..launches {
        kernels::add_bias(&x, &bias, &mut out)?;
    }
    let locks = pypto_rt::testing::locks_taken() - locks;
    let allocations = ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed) - allocations;
    println!("allocations per launch: {}", allocations as f64 / launches as f64);
    println!("locks per launch: {}", locks as f64 / launches as f64);
    for (name, was) in names.iter().zip(before) {
        println!("{name} per launch: {}", (read(name)? - was) as f64 / launches as f64);
    }
    // Wait for the queued launches before the process ends: the fake
    // runtime's stream thread still running kernels while the process
    // exits crashes it now and then.
    out.to_vec()?;
    Ok(())
}

fn run(mode: &str) -> Result<()> {
    match mode {
        "run" => {
            let dev = Device::from_env()?;
            println!("device: {dev}");
            for rows in [1, 5, 300] {
                add_bias(&dev, rows)?;
            }
            println!("add_bias ok");
            attention(&dev)?;
            println!("attention ok");
            matmul(&dev)?;
            println!("matmul ok");
        }
        "default" => println!("device: {}", Device::default()),
        // Which of the embedded NPU libraries this process loaded.
        "loaded" => {
            let dev = Device::from_env()?;
            println!("device: {dev}");
            add_bias(&dev, 3)?;
            let maps = std::fs::read_to_string("/proc/self/maps")?;
            let mut loaded: Vec<&str> = maps
                .lines()
                .filter_map(|l| l.split_whitespace().nth(5))
                .filter(|name| name.contains("_kernels_dav"))
                .collect();
            loaded.dedup();
            for name in loaded {
                println!("loaded {name}");
            }
        }
        "mixed" => {
            let (a, b) = (Device::npu(0)?, Device::npu(1)?);
            let x = a.tensor_from(&data(64, 1), (1, Const::<64>))?;
            let bias = b.tensor_from(&data(64, 2), (Const::<64>,))?;
            let mut out = a.zeros((1, Const::<64>))?;
            let err = kernels::add_bias(&x, &bias, &mut out).expect_err("devices differ");
            println!("{err}");
            // Moved to the right device, the call works.
            kernels::add_bias(&x, &bias.to_device(&a)?, &mut out)?;
            println!("after to_device ok");
        }
        "threads" => {
            let dev = Device::npu(0)?;
            std::thread::scope(|s| {
                let workers: Vec<_> = (0..4)
                    .map(|t| {
                        let dev = dev.clone();
                        s.spawn(move || -> std::result::Result<(), String> {
                            for i in 0..20 {
                                add_bias(&dev, 1 + (t * 20 + i) % 9).map_err(|e| e.to_string())?;
                            }
                            Ok(())
                        })
                    })
                    .collect();
                workers.into_iter().try_for_each(|w| w.join().expect("no panic"))
            })?;
            println!("threads ok");
        }
        "views" => views()?,
        "launch-cost" => launch_cost()?,
        other => return Err(format!("unknown mode {other}").into()),
    }
    Ok(())
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "run".to_owned());
    if let Err(e) = run(&mode) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
"#;

fn scratch_crate() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-npu");
    // The test counts compiles: a rerun starts from a cold build, not from
    // the objects the previous run left in the shared target directory.
    let _ = std::fs::remove_dir_all(cache_dir());
    if let Ok(entries) = std::fs::read_dir(target_dir().join("debug/build")) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with("scratch-npu-")
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    // libloading: the `views` mode allocates through ACL itself.
    pypto_tests::user_crate(
        &dir,
        "scratch-npu",
        "[dependencies.libloading]\nversion = \"0.8\"\n\n",
    )
    .unwrap();
    write(&dir.join("kernels/model.yaml"), SPEC);
    write(&dir.join("src/main.rs"), MAIN);
    dir
}

fn count(log: &[String], needle: &str) -> usize {
    log.iter().filter(|l| l.contains(needle)).count()
}

// One test: the builds share a target dir and must run in order.
#[test]
fn user_crate_builds_links_and_runs_through_fake_toolkits() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = scratch_crate();

    // ---- CANN 8.5: -x asc --npu-arch ----
    let fake = FakeCann::assemble(&tmp.join("fake-cann-8.5"), FakeVersion::Cann85).unwrap();
    let home = fake.home.display().to_string();
    let (ok, _, stderr) = cargo(&dir, &["build"], &[("ASCEND_HOME_PATH", &fake.home)]);
    assert!(ok, "NPU build failed:\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "; building kernels for the NPU with CANN 8.5.0 at {home} (found by \
             ASCEND_HOME_PATH), compiler {home}/compiler/ccec_compiler/bin/bisheng, architectures: \
             dav-2201 (Atlas A2/A3), dav-3510 (Ascend 950); the host backend is built in too"
        )),
        "{stderr}"
    );
    let (links, log) = links_and_compiles(fake.bisheng_log());
    // add_bias for both architectures, attention and matmul for A2/A3 only.
    assert_eq!(log.len(), 4, "{log:#?}");
    // One shared library per architecture, linked by bisheng with the CANN
    // libraries and the toolkit's run path.
    assert_eq!(links.len(), 2, "{links:#?}");
    for (link, arch, objects) in [(&links[0], "dav-2201", 3), (&links[1], "dav-3510", 1)] {
        assert!(
            link.starts_with(&format!("-shared -fPIC --npu-arch={arch} ")),
            "{link}"
        );
        assert_eq!(link.matches(".o ").count(), objects, "{link}");
        assert!(
            link.contains(&format!("_kernels_{}.so.tmp", arch.replace('-', ""))),
            "{link}"
        );
        assert!(
            link.ends_with(&format!(
                " -L{home}/lib64 -lascendcl -lruntime -lascendc_runtime -lprofapi -lunified_dlog \
                 -lmmpa -lascend_dump -lc_sec -lerror_manager -Wl,-rpath,{home}/lib64"
            )),
            "{link}"
        );
    }
    // The binary links no CANN library and has no run path into the
    // toolkit; the libraries it embeds do, and reach the runtime by soname.
    let (needed, paths) = dynamic_section(&binary());
    for lib in pypto_build::unstable::toolchain::cann::RUNTIME_LIBS {
        let name = format!("lib{lib}.so");
        assert!(
            !needed.contains(&name),
            "the binary needs {name}: {needed:?}"
        );
    }
    assert!(
        paths.iter().all(|p| !p.contains("fake-cann")),
        "the binary's run path: {paths:?}"
    );
    let (lib_needed, lib_paths) = dynamic_section(&npu_library("dav2201"));
    assert!(
        lib_needed.contains(&"libascendcl.so".to_owned()),
        "{lib_needed:?}"
    );
    assert_eq!(lib_paths, [format!("{home}/lib64")]);
    for line in &log {
        for flag in [
            "-x asc",
            "-std=c++17",
            "-O2",
            "-fPIC",
            "-Wno-unused-parameter",
            " -c ",
        ] {
            assert!(line.contains(flag), "`{flag}` missing: {line}");
        }
        for flag in [
            "-xcce",
            "--cce-aicore-arch",
            "--target",
            "PYPTO_HOST_BACKEND",
        ] {
            assert!(!line.contains(flag), "`{flag}` sent: {line}");
        }
    }
    assert_eq!(count(&log, "--npu-arch=dav-2201"), 3);
    assert_eq!(count(&log, "--npu-arch=dav-3510"), 1);
    assert!(
        log.iter().any(
            |l| l.contains("--npu-arch=dav-3510") && l.contains("/npu-dav3510/add_bias_s0.cpp")
        )
    );

    let run = |mode: &str, env: &[(&str, &str)]| run_in(Some(&fake.home), mode, env);
    let report = tmp.join("fake-acl-report.txt");
    let (ok, stdout, stderr) = run(
        "run",
        &[("PYPTO_FAKE_ACL_REPORT", report.to_str().unwrap())],
    );
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "device: npu:0 (Ascend910B3)\nadd_bias ok\nattention ok\nmatmul ok\n"
    );
    // Every tensor went back to the runtime; the device keeps one tiling per
    // distinct launch (add_bias at 1, 5 and 300 rows, attention, matmul).
    let report = std::fs::read_to_string(&report).unwrap();
    let field = |name: &str| -> u64 {
        report
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap()
    };
    assert!(field("mallocs") >= 15, "{report}");
    assert_eq!(field("mallocs") - field("frees"), 5, "{report}");
    assert_eq!(field("live"), 5, "{report}");

    // An NPU launch in steady state allocates nothing on the host, locks
    // one mutex (its stream's, which orders the queue; the tiling is found
    // under it, and the tensors note the launch without a lock), and makes
    // two runtime calls: which device is current, and the launch.
    let (ok, stdout, stderr) = run("launch-cost", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "allocations per launch: 0\nlocks per launch: 1\nlaunch per launch: 1\n\
         aclrtGetDevice per launch: 1\naclrtMalloc per launch: 0\n\
         aclrtMemcpy per launch: 0\naclrtRecordEvent per launch: 0\n\
         aclrtStreamWaitEvent per launch: 0\naclrtSynchronizeStream per launch: 0\n"
    );

    // PYPTO_DEVICE picks the device at run time; the host is built in.
    let (ok, stdout, stderr) = run("run", &[("PYPTO_DEVICE", "host")]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("device: the host (CPU)\n"), "{stdout}");
    let (ok, stdout, stderr) = run("run", &[("PYPTO_DEVICE", "npu:1")]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.starts_with("device: npu:1 (Ascend910B3)\n"),
        "{stdout}"
    );
    let (ok, _, stderr) = run("run", &[("PYPTO_DEVICE", "npu:2")]);
    assert!(!ok);
    assert_eq!(
        stderr,
        "error: npu:2 is not available: the runtime (libascendcl.so) reports 2 NPUs\n"
    );
    let (ok, _, stderr) = run("run", &[("PYPTO_DEVICE", "gpu")]);
    assert!(!ok);
    assert_eq!(
        stderr,
        "error: `gpu` is not a device; expected `host`, `npu` or `npu:N`\n"
    );

    // The SoC name picks the architecture's binary; a kernel not built for
    // it is a typed error, not a crash.
    let (ok, stdout, stderr) = run("run", &[("PYPTO_FAKE_SOC", "Ascend950PR_9599")]);
    assert!(!ok);
    assert_eq!(stdout, "device: npu:0 (Ascend950PR_9599)\nadd_bias ok\n");
    assert_eq!(
        stderr,
        "error: kernel `attention` was not built for npu:0 (Ascend950PR_9599): its device is \
         dav-3510 (Ascend 950), and it was built for dav-2201 (Atlas A2/A3)\n"
    );

    // Injected runtime failures come back as typed errors naming the call.
    let (ok, _, stderr) = run("run", &[("PYPTO_FAKE_ACL_FAIL", "aclrtMalloc@3")]);
    assert!(!ok);
    assert_eq!(
        stderr,
        "error: `aclrtMalloc` failed with ACL error 207001: fake ACL: out of device memory (injected)\n"
    );
    let (ok, stdout, stderr) = run("run", &[("PYPTO_FAKE_ACL_FAIL", "launch@2")]);
    assert!(!ok);
    assert_eq!(stdout, "device: npu:0 (Ascend910B3)\n");
    assert_eq!(
        stderr,
        "error: `aclrtSynchronizeStream` failed with ACL error 507015: fake ACL: AI core exception \
         (injected launch failure)\n"
    );
    let (ok, _, stderr) = run("run", &[("PYPTO_FAKE_ACL_FAIL", "aclrtMemcpy")]);
    assert!(!ok);
    assert_eq!(
        stderr,
        "error: `aclrtMemcpy` failed with ACL error 507000: fake ACL: aclrtMemcpy failed (injected)\n"
    );
    // A runtime that fails to initialise leaves Device::default() on the host.
    let (ok, stdout, stderr) = run("default", &[("PYPTO_FAKE_ACL_FAIL", "aclInit")]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "device: the host (CPU)\n");

    // Tensors of two devices in one call: an error; threads on one device: safe.
    let (ok, stdout, stderr) = run("mixed", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "kernel `add_bias`: param `bias` is on npu:1 (Ascend910B3), but the call runs on npu:0 \
         (Ascend910B3)\nafter to_device ok\n"
    );
    let (ok, stdout, stderr) = run("threads", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "threads ok\n");
    // Views as inputs and outputs, typed reshapes, adopted ACL memory.
    let (ok, stdout, stderr) = run("views", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "slices ok\nreshape ok\nadopted ok\n");

    // The library of the device's architecture is loaded, and only it;
    // host launches load none.
    let lib = |arch: &str| {
        format!("loaded /memfd:libpypto_p13_scratch_2dnpuv9_0_2e1_2e0_kernels_{arch}.so\n")
    };
    let (ok, stdout, stderr) = run("loaded", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        format!("device: npu:0 (Ascend910B3)\n{}", lib("dav2201"))
    );
    let (ok, stdout, stderr) = run("loaded", &[("PYPTO_FAKE_SOC", "Ascend950PR_9599")]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        format!("device: npu:0 (Ascend950PR_9599)\n{}", lib("dav3510"))
    );
    let (ok, stdout, stderr) = run("loaded", &[("PYPTO_DEVICE", "host")]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "device: the host (CPU)\n");

    // The same binary on a machine without CANN: the toolkit gone, no
    // library path. It starts, chooses the host, and runs every call there.
    let before = std::fs::read(binary()).unwrap();
    let moved = tmp.join("fake-cann-8.5.removed");
    let _ = std::fs::remove_dir_all(&moved);
    std::fs::rename(&fake.home, &moved).unwrap();
    let (ok, stdout, stderr) = run_in(None, "run", &[]);
    let (loaded_ok, loaded, _) = run_in(None, "loaded", &[]);
    std::fs::rename(&moved, &fake.home).unwrap();
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "device: the host (CPU)\nadd_bias ok\nattention ok\nmatmul ok\n"
    );
    assert!(loaded_ok);
    assert_eq!(loaded, "device: the host (CPU)\n");
    assert!(
        std::fs::read(binary()).unwrap() == before,
        "the binary changed"
    );

    // Nothing changed: no build script, no compiler.
    fake.clear_log();
    let (ok, _, stderr) = cargo(&dir, &["build", "-v"], &[("ASCEND_HOME_PATH", &fake.home)]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("Fresh scratch-npu"), "{stderr}");
    assert!(fake.bisheng_log().is_empty());

    // A spec touched, the same kernels: the build script runs, but nothing
    // is compiled or linked, and the libraries are not rewritten.
    let library = npu_library("dav2201");
    let modified = std::fs::metadata(&library).unwrap().modified().unwrap();
    let spec = dir.join("kernels/model.yaml");
    std::fs::File::options()
        .append(true)
        .open(&spec)
        .unwrap()
        .set_modified(std::time::SystemTime::now())
        .unwrap();
    let (ok, _, stderr) = cargo(&dir, &["build"], &[("ASCEND_HOME_PATH", &fake.home)]);
    assert!(ok, "{stderr}");
    assert!(fake.bisheng_log().is_empty(), "{:#?}", fake.bisheng_log());
    assert_eq!(
        std::fs::metadata(&library).unwrap().modified().unwrap(),
        modified
    );

    // Library bytes the loader rejects: a typed error, not a crash.
    let good = std::fs::read(&library).unwrap();
    std::fs::write(&library, b"not a shared library").unwrap();
    let (ok, _, stderr) = cargo(&dir, &["build"], &[("ASCEND_HOME_PATH", &fake.home)]);
    assert!(ok, "{stderr}");
    let (ok, stdout, stderr) = run("run", &[]);
    std::fs::write(&library, &good).unwrap();
    assert!(!ok);
    assert_eq!(stdout, "device: npu:0 (Ascend910B3)\n");
    assert_eq!(
        stderr,
        "error: kernel `add_bias`: its NPU library \
         libpypto_p13_scratch_2dnpuv9_0_2e1_2e0_kernels_dav2201.so, embedded in this binary, \
         could not be loaded: libpypto_p13_scratch_2dnpuv9_0_2e1_2e0_kernels_dav2201.so: file \
         too short\n"
    );

    // A link bisheng fails: the build fails with its words, naming the
    // architecture and the library.
    std::fs::remove_file(&library).unwrap();
    std::fs::File::options()
        .append(true)
        .open(&spec)
        .unwrap()
        .set_modified(std::time::SystemTime::now())
        .unwrap();
    let (ok, _, stderr) = cargo(
        &dir,
        &["build"],
        &[
            ("ASCEND_HOME_PATH", &fake.home),
            ("PYPTO_FAKE_BISHENG_FAIL_LINK", Path::new("1")),
        ],
    );
    assert!(!ok, "a failed link must fail the build");
    assert!(
        stderr.contains(&format!(
            "Error: compiling kernels failed:\n  bisheng could not link the NPU kernels for \
             dav-2201 (Atlas A2/A3) into {}:\n  fake bisheng: error: cannot link dav-2201 \
             (injected)\n",
            library.display()
        )),
        "{stderr}"
    );

    // A kernel that compiles for the host but not for the NPU: the build
    // fails with bisheng's message, the rendered source, and its origin.
    write(
        &dir.join("kernels/npu_only.yaml"),
        "kernels:\n  copy:\n    template: copy.hbs\n    params:\n      \
         x: { dtype: DT_FP32, shape: [DYNAMIC] }\n      \
         y: { dtype: DT_FP32, shape: [DYNAMIC], output: true }\n",
    );
    write(
        &dir.join("kernels/copy.hbs"),
        "#if !defined(PYPTO_HOST_BACKEND)\nstatic_assert(false, \"copy is not ported to the NPU yet\");\n#endif\n\
         extern \"C\" __global__ __aicore__ void {{symbol}}({{entry_params}}) {}\n",
    );
    let (ok, _, stderr) = cargo(&dir, &["build"], &[("ASCEND_HOME_PATH", &fake.home)]);
    assert!(!ok, "a kernel bisheng rejects must fail the build");
    assert!(
        stderr.contains("kernels/copy.hbs:2:15: error: static assertion failed: copy is not ported to the NPU yet"),
        "{stderr}"
    );
    assert!(
        stderr.contains("/out/pypto/src/npu-dav2201/copy_s0.cpp, rendered from kernel `copy` from kernels/npu_only.yaml:2:3 (template kernels/copy.hbs)"),
        "{stderr}"
    );
    std::fs::remove_file(dir.join("kernels/npu_only.yaml")).unwrap();
    std::fs::remove_file(dir.join("kernels/copy.hbs")).unwrap();

    // ---- CANN 8.0: -xcce --cce-aicore-arch with the tikcpp include dirs ----
    let old = FakeCann::assemble(&tmp.join("fake-cann-8.0"), FakeVersion::Cann80).unwrap();
    let old_home = old.home.display().to_string();
    let (ok, _, stderr) = cargo(&dir, &["build"], &[("ASCEND_HOME_PATH", &old.home)]);
    assert!(ok, "NPU build (CANN 8.0) failed:\n{stderr}");
    let arch = std::env::consts::ARCH;
    assert!(
        stderr.contains(&format!(
            "; building kernels for the NPU with CANN 8.0.RC3 at {old_home} (found by \
             ASCEND_HOME_PATH), compiler {old_home}/{arch}-linux/ccec_compiler/bin/bisheng"
        )),
        "{stderr}"
    );
    let (links, log) = links_and_compiles(old.bisheng_log());
    assert_eq!(log.len(), 4, "{log:#?}");
    // Before 8.5 no architecture flag on the link line: vector and cube
    // objects share one library.
    assert_eq!(links.len(), 2, "{links:#?}");
    assert!(
        links.iter().all(|l| l.starts_with("-shared -fPIC /")),
        "{links:#?}"
    );
    for line in &log {
        assert!(line.contains("-xcce"), "{line}");
        assert!(
            !line.contains("-x asc") && !line.contains("--npu-arch"),
            "{line}"
        );
        for dir in ["", "/impl", "/interface"] {
            let flag = format!("-I{old_home}/compiler/tikcpp/tikcfw{dir} ");
            assert!(line.contains(&flag), "`{flag}` missing: {line}");
        }
    }
    assert_eq!(count(&log, "--cce-aicore-arch=dav-c220-vec"), 2);
    assert_eq!(count(&log, "--cce-aicore-arch=dav-c310-vec"), 1);
    assert_eq!(count(&log, "--cce-aicore-arch=dav-c220-cube"), 1);
    assert!(
        log.iter()
            .any(|l| l.contains("dav-c220-cube") && l.contains("/matmul_s0.cpp"))
    );
    let (ok, stdout, stderr) = run_in(Some(&old.home), "run", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "device: npu:0 (Ascend910B3)\nadd_bias ok\nattention ok\nmatmul ok\n"
    );
}

/// The fake bisheng's log split into its `-shared` link lines and its
/// compile lines.
fn links_and_compiles(log: Vec<String>) -> (Vec<String>, Vec<String>) {
    log.into_iter().partition(|l| l.starts_with("-shared "))
}

/// The scratch crate's NPU library for `arch` (`dav2201`), where its build
/// script linked it.
fn npu_library(arch: &str) -> PathBuf {
    let build = target_dir().join("debug/build");
    let name = format!("libpypto_p13_scratch_2dnpuv9_0_2e1_2e0_kernels_{arch}.so");
    std::fs::read_dir(&build)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("out/pypto/npu").join(&name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no {name} under {}", build.display()))
}

/// The NEEDED entries and the run paths (RPATH, RUNPATH) of the ELF file at
/// `path`, read from its dynamic section (64-bit little-endian ELF only;
/// `readelf` need not be installed).
fn dynamic_section(path: &Path) -> (Vec<String>, Vec<String>) {
    let elf = std::fs::read(path).unwrap();
    assert!(
        elf.starts_with(b"\x7fELF\x02\x01"),
        "{} is not a 64-bit little-endian ELF file",
        path.display()
    );
    let u16_at = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
    // (type, file offset, address, size in the file) of each program header.
    let segments: Vec<(u32, u64, u64, u64)> = (0..u16_at(0x38))
        .map(|i| {
            let at = u64_at(0x20) as usize + i * u16_at(0x36);
            let kind = u32::from_le_bytes(elf[at..at + 4].try_into().unwrap());
            (kind, u64_at(at + 8), u64_at(at + 16), u64_at(at + 32))
        })
        .collect();
    let Some(&(_, dynamic, _, size)) = segments.iter().find(|s| s.0 == 2) else {
        return (Vec::new(), Vec::new());
    };
    let entries: Vec<(u64, u64)> = (0..size as usize / 16)
        .map(|i| {
            let at = dynamic as usize + i * 16;
            (u64_at(at), u64_at(at + 8))
        })
        .take_while(|&(tag, _)| tag != 0)
        .collect();
    let strtab = entries.iter().find(|e| e.0 == 5).expect("DT_STRTAB").1;
    // The string table's address, as an offset in the file.
    let (_, offset, address, _) = segments
        .iter()
        .find(|&&(kind, _, address, filesz)| {
            kind == 1 && (address..address + filesz).contains(&strtab)
        })
        .expect("a PT_LOAD segment holds the string table");
    let base = (strtab - address + offset) as usize;
    let string = |at: u64| {
        let start = base + at as usize;
        let end = start + elf[start..].iter().position(|&b| b == 0).unwrap();
        String::from_utf8_lossy(&elf[start..end]).into_owned()
    };
    let with_tag = |tags: &[u64]| -> Vec<String> {
        entries
            .iter()
            .filter(|e| tags.contains(&e.0))
            .map(|e| string(e.1))
            .collect()
    };
    // DT_NEEDED; DT_RPATH and DT_RUNPATH.
    (with_tag(&[1]), with_tag(&[15, 29]))
}

/// Runs a fake toolkit's bisheng on a trivial source with `flags`; returns
/// (success, stderr).
fn fake_bisheng(fake: &FakeCann, bin: &str, flags: &[&str]) -> (bool, String) {
    let dir = fake.home.join("probe");
    write(
        &dir.join("k.cpp"),
        "extern \"C\" int probe() { return 1; }\n",
    );
    let out = Command::new(fake.home.join(bin))
        .args(flags)
        .arg("-c")
        .arg(dir.join("k.cpp"))
        .arg("-o")
        .arg(dir.join("k.o"))
        .output()
        .expect("fake bisheng runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

// The fake compiler is strict: were pypto-build to send a wrong flag set,
// the end-to-end test above would fail rather than pass by accident.
#[test]
fn the_fake_bisheng_rejects_flag_sets_pypto_build_must_never_send() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let new = FakeCann::assemble(&tmp.join("fake-cann-strict-8.5"), FakeVersion::Cann85).unwrap();
    let bin = "compiler/ccec_compiler/bin/bisheng";
    let (ok, stderr) = fake_bisheng(
        &new,
        bin,
        &["-x", "asc", "--npu-arch=dav-2201", "--cce-auto-sync"],
    );
    assert!(ok, "{stderr}");
    for (flags, message) in [
        (
            &["-x", "asc", "--npu-arch=dav-2201"][..],
            "missing --cce-auto-sync",
        ),
        (
            &["--npu-arch=dav-2201"][..],
            "CANN 8.5+ compiles Ascend C with -x asc, got 'no -x'",
        ),
        (&["-x", "asc"], "missing --npu-arch"),
        (
            &["-x", "asc", "--npu-arch=dav-2202"],
            "unknown --npu-arch=dav-2202 (expected dav-2201 or dav-3510)",
        ),
        (
            &["-xcce", "--cce-aicore-arch=dav-c220-vec"],
            "CANN 8.5+ compiles Ascend C with -x asc, got 'cce'",
        ),
        (
            &["-x", "asc", "--npu-arch=dav-2201", "-DPYPTO_HOST_BACKEND=1"],
            "the host backend's PYPTO_HOST_BACKEND reached the NPU compiler",
        ),
    ] {
        let (ok, stderr) = fake_bisheng(&new, bin, flags);
        assert!(!ok, "{flags:?} accepted");
        assert_eq!(
            stderr,
            format!("fake bisheng: error: {message}\n"),
            "{flags:?}"
        );
    }

    // The `-shared` link of NPU objects into a kernel library.
    let link = |fake: &FakeCann, bin: &str, flags: &[&str]| -> (bool, String) {
        let (ok, stderr) = fake_bisheng(
            fake,
            bin,
            &[
                "-x",
                "asc",
                "--npu-arch=dav-2201",
                "--cce-auto-sync",
                "-fPIC",
            ],
        );
        assert!(ok, "{stderr}");
        let probe = fake.home.join("probe");
        let out = Command::new(fake.home.join(bin))
            .args(flags)
            .arg(probe.join("k.o"))
            .arg("-o")
            .arg(probe.join("libk.so"))
            .arg(format!("-L{}/lib64", fake.home.display()))
            .arg("-lascendcl")
            .output()
            .expect("fake bisheng runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stderr) = link(&new, bin, &["-shared", "-fPIC", "--npu-arch=dav-3510"]);
    assert!(ok, "{stderr}");
    for (flags, message) in [
        (&["-shared", "-fPIC"][..], "missing --npu-arch"),
        (&["-shared", "--npu-arch=dav-2201"], "-shared without -fPIC"),
        (
            &["-shared", "-fPIC", "-x", "asc", "--npu-arch=dav-2201"],
            "-x asc before the objects of a link would compile them as source",
        ),
        (
            &["-shared", "-fPIC", "--cce-aicore-arch=dav-c220-vec"],
            "--cce-aicore-arch does not belong on a link line",
        ),
    ] {
        let (ok, stderr) = link(&new, bin, flags);
        assert!(!ok, "{flags:?} accepted");
        assert_eq!(
            stderr,
            format!("fake bisheng: error: {message}\n"),
            "{flags:?}"
        );
    }

    let old = FakeCann::assemble(&tmp.join("fake-cann-strict-8.0"), FakeVersion::Cann80).unwrap();
    let bin = format!("{}-linux/ccec_compiler/bin/bisheng", std::env::consts::ARCH);
    let tikcfw = old
        .home
        .join("compiler/tikcpp/tikcfw")
        .display()
        .to_string();
    let includes = [
        format!("-I{tikcfw}"),
        format!("-I{tikcfw}/impl"),
        format!("-I{tikcfw}/interface"),
    ];
    let with_includes = |flags: &[&str]| -> Vec<String> {
        flags
            .iter()
            .map(|f| f.to_string())
            .chain(includes.iter().cloned())
            .collect()
    };
    let run = |flags: Vec<String>| {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        fake_bisheng(&old, &bin, &flags)
    };
    assert!(
        run(with_includes(&[
            "-xcce",
            "--cce-aicore-arch=dav-c220-cube",
            "--cce-auto-sync"
        ]))
        .0
    );
    let (ok, stderr) = run(vec![
        "-xcce".into(),
        "--cce-aicore-arch=dav-c220-vec".into(),
        "--cce-auto-sync".into(),
        includes[0].clone(),
    ]);
    assert!(!ok);
    assert_eq!(
        stderr,
        format!("fake bisheng: error: missing include dir -I{tikcfw}/impl\n")
    );
    let (ok, stderr) = run(with_includes(&["-x", "asc", "--npu-arch=dav-2201"]));
    assert!(!ok);
    assert_eq!(
        stderr,
        "fake bisheng: error: toolkits before CANN 8.5 compile Ascend C with -xcce, got 'asc'\n"
    );
    let (ok, stderr) = run(with_includes(&["-xcce", "--cce-aicore-arch=dav-c220"]));
    assert!(!ok);
    assert_eq!(
        stderr,
        "fake bisheng: error: unknown --cce-aicore-arch=dav-c220\n"
    );
}
