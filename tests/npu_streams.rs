//! Streams and asynchronous launches on the FAKE NPU (tests/fake_cann/):
//! the fake runtime runs each stream's work on a worker thread of its own,
//! asynchronously from the caller, rejects host copies and frees of memory
//! that queued work still uses, and counts what it is asked to do. A user
//! crate built against the fake CANN 8.5 runs chains of launches on it and
//! prints the counters; the same program runs on the host backend.

use std::path::{Path, PathBuf};
use std::process::Command;

use pypto_tests::fake_cann::{FakeCann, FakeVersion};

fn target_dir() -> PathBuf {
    pypto_tests::workspace_root().join("target/scratch")
}

fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-streams-cache")
}

const SPEC: &str = r#"kernels:
  add_bias:
    template: builtin/add_bias
    targets: [A2]
    params:
      x:    { dtype: DT_FP32, shape: [DYNAMIC, 64] }
      bias: { dtype: DT_FP32, shape: [64] }
      out:  { dtype: DT_FP32, shape: [DYNAMIC, 64], output: true }
"#;

const MAIN: &str = r#"pypto_rt::include_kernels!();

use std::ffi::{c_char, c_int, c_void, CString};

use pypto_rt::{with_stream, Const, Device, Error, Stream};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}

/// A counter of the fake runtime (tests/fake_cann/acl.c), 0 on the host.
fn counter(name: &str) -> i64 {
    let Some(path) = std::env::var_os("PYPTO_ACL_LIBRARY") else { return 0 };
    let path = CString::new(path.to_string_lossy().as_bytes()).unwrap();
    let name = CString::new(name).unwrap();
    // SAFETY: the fake library is already loaded by pypto-rt; dlopen only
    // returns its handle, and the symbol has this signature.
    unsafe {
        let lib = dlopen(path.as_ptr(), 2);
        let f = dlsym(lib, c"pypto_fake_acl_counter".as_ptr());
        if f.is_null() {
            return -1;
        }
        let f: unsafe extern "C" fn(*const c_char) -> i64 = std::mem::transmute(f);
        f(name.as_ptr())
    }
}

const COUNTERS: [&str; 6] = [
    "launch",
    "aclrtMemcpy",
    "aclrtSynchronizeStream",
    "aclrtMalloc",
    "aclrtRecordEvent",
    "aclrtStreamWaitEvent",
];

fn snapshot() -> Vec<i64> {
    COUNTERS.iter().map(|c| counter(c)).collect()
}

fn report(what: &str, before: &[i64]) {
    let now = snapshot();
    let parts: Vec<String> = COUNTERS
        .iter()
        .zip(now.iter().zip(before))
        .map(|(name, (n, b))| format!("{name} {}", n - b))
        .collect();
    println!("{what}: {}", parts.join(", "));
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| ((i as u32 * 7 + seed) % 13) as f32 / 4.0 - 1.0).collect()
}

/// a <- a + bias, `n` times, ping-ponging through b: each launch reads what
/// the one before wrote.
fn chain(dev: &Device, n: usize) -> Result<()> {
    let rows = 3;
    let x = data(rows * 64, 1);
    let bias = data(64, 2);
    let bias_t = dev.tensor_from(&bias, (Const::<64>,))?;
    let mut a = dev.tensor_from(&x, (rows, Const::<64>))?;
    let mut b = dev.zeros((rows, Const::<64>))?;
    let before = snapshot();
    for i in 0..n {
        if i % 2 == 0 {
            kernels::add_bias(&a, &bias_t, &mut b)?;
        } else {
            kernels::add_bias(&b, &bias_t, &mut a)?;
        }
    }
    report(&format!("{n} launches queued"), &before);
    let last = if n % 2 == 0 { &a } else { &b };
    let got = last.to_vec()?;
    report("after reading the result", &before);
    let want: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, v)| (0..n).fold(*v, |acc, _| acc + bias[i % 64]))
        .collect();
    if got != want {
        return Err("chain: wrong numbers".into());
    }
    println!("chain ok");
    Ok(())
}

/// b = a + bias on one stream, c = b + bias on another: ordered through b.
fn two_streams(dev: &Device) -> Result<()> {
    let (s1, s2) = (dev.new_stream()?, dev.new_stream()?);
    let x = data(5 * 64, 3);
    let bias = data(64, 4);
    let bias_t = dev.tensor_from(&bias, (Const::<64>,))?;
    let a = dev.tensor_from(&x, (5, Const::<64>))?;
    let mut b = dev.zeros((5, Const::<64>))?;
    let mut c = dev.zeros((5, Const::<64>))?;
    let before = snapshot();
    with_stream(&s1, || kernels::add_bias(&a, &bias_t, &mut b))?;
    with_stream(&s2, || kernels::add_bias(&b, &bias_t, &mut c))?;
    report("two streams", &before);
    let want: Vec<f32> = x.iter().enumerate().map(|(i, v)| v + 2.0 * bias[i % 64]).collect();
    if c.to_vec()? != want {
        return Err("two streams: wrong numbers".into());
    }
    // Explicit events: s2 waits for everything s1 queued so far.
    let event = s1.record()?;
    s2.wait(&event)?;
    drop(event);
    s2.synchronize()?;
    println!("two streams ok");
    Ok(())
}

/// Outputs dropped while their launch is queued are freed later.
fn drops(dev: &Device) -> Result<()> {
    let bias = dev.tensor_from(&data(64, 5), (Const::<64>,))?;
    let x = dev.tensor_from(&data(64 * 4, 6), (4, Const::<64>))?;
    for _ in 0..50 {
        let mut out = dev.zeros((4, Const::<64>))?;
        kernels::add_bias(&x, &bias, &mut out)?;
    }
    dev.default_stream().synchronize()?;
    println!("drops ok");
    Ok(())
}

/// Runs one launch and prints the mutexes of pypto-rt it locked on this
/// thread and the runtime calls it made.
fn cost(what: &str, launch: impl FnOnce() -> std::result::Result<(), Error>) -> Result<()> {
    let locks = pypto_rt::testing::locks_taken();
    let before = snapshot();
    launch()?;
    let locks = pypto_rt::testing::locks_taken() - locks;
    let now = snapshot();
    let parts: Vec<String> = COUNTERS
        .iter()
        .zip(now.iter().zip(&before))
        .map(|(name, (n, b))| format!("{name} {}", n - b))
        .collect();
    println!("{what}: locks {locks}, {}", parts.join(", "));
    Ok(())
}

/// What a launch locks, by what its tensors and its stream saw before.
fn locks(dev: &Device) -> Result<()> {
    let (s1, s2, s3) = (dev.new_stream()?, dev.new_stream()?, dev.new_stream()?);
    let d = dev.default_stream();
    let bias = data(64, 9);
    let x = data(2 * 64, 10);
    let bias_t = dev.tensor_from(&bias, (Const::<64>,))?;
    let mut a = dev.tensor_from(&x, (2, Const::<64>))?;
    let mut b = dev.zeros((2, Const::<64>))?;
    // b = a + bias, a = b + bias, ...: each launch adds bias once.
    let mut adds = 0;
    let mut step = |what: &str, stream: &Stream, a: &mut pypto_rt::Tensor<f32, (usize, Const<64>)>, b: &mut pypto_rt::Tensor<f32, (usize, Const<64>)>| -> Result<()> {
        cost(what, || with_stream(stream, || kernels::add_bias(&*a, &bias_t, &mut *b)))?;
        std::mem::swap(a, b);
        adds += 1;
        Ok(())
    };
    step("first launch of its sizes", &d, &mut a, &mut b)?;
    step("the same kernel and sizes again", &d, &mut a, &mut b)?;
    let mut fresh = dev.zeros((2, Const::<64>))?;
    step("into a tensor no launch used", &d, &mut a, &mut fresh)?;
    step("on a second stream, the default's work pending", &s1, &mut a, &mut b)?;
    d.synchronize()?;
    s1.synchronize()?;
    step("the second stream again, nothing pending elsewhere", &s1, &mut a, &mut b)?;
    s1.synchronize()?;
    step("a third stream", &s2, &mut a, &mut b)?;
    step("the third again", &s2, &mut a, &mut b)?;
    step("a fourth stream, the third's work pending", &s3, &mut a, &mut b)?;
    step("the default stream, the fourth's work pending", &d, &mut a, &mut b)?;
    let want: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, v)| (0..adds).fold(*v, |acc, _| acc + bias[i % 64]))
        .collect();
    if a.to_vec()? != want {
        return Err("locks: wrong numbers".into());
    }
    println!("locks ok");
    // A tensor dropped while launches on four streams use it: three are
    // waited for, and the last frees it once it has passed its launch.
    let shared = dev.tensor_from(&bias, (Const::<64>,))?;
    let mut outs = Vec::new();
    for stream in [&d, &s1, &s2, &s3] {
        let mut out = dev.zeros((2, Const::<64>))?;
        with_stream(stream, || kernels::add_bias(&a, &shared, &mut out))?;
        outs.push(out);
    }
    let before = snapshot();
    drop(shared);
    report("dropped with work on four streams", &before);
    let want: Vec<f32> = want.iter().enumerate().map(|(i, v)| v + bias[i % 64]).collect();
    for out in outs {
        if out.to_vec()? != want {
            return Err("dropped while used: wrong numbers".into());
        }
    }
    println!("dropped ok");
    Ok(())
}

/// Four threads, a stream each, launching on two shared inputs at once
/// (their first two streams take the inputs' slots, the others their
/// locked list, in whatever order the threads get there), into outputs
/// dropped while queued every other time.
fn threads(dev: &Device) -> Result<()> {
    let bias = data(64, 13);
    let x = data(3 * 64, 14);
    let bias_t = dev.tensor_from(&bias, (Const::<64>,))?;
    let xt = dev.tensor_from(&x, (3, Const::<64>))?;
    let want: Vec<f32> = x.iter().enumerate().map(|(i, v)| v + bias[i % 64]).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (bias_t, xt, want) = (&bias_t, &xt, &want);
                scope.spawn(move || -> std::result::Result<(), String> {
                    let stream = dev.new_stream().map_err(|e| e.to_string())?;
                    for i in 0..40 {
                        let mut out = dev.zeros((3, Const::<64>)).map_err(|e| e.to_string())?;
                        with_stream(&stream, || kernels::add_bias(xt, bias_t, &mut out))
                            .map_err(|e| e.to_string())?;
                        if i % 2 == 0 && out.to_vec().map_err(|e| e.to_string())? != *want {
                            return Err("threads: wrong numbers".into());
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| w.join().expect("no panic"))
    })?;
    println!("threads ok");
    Ok(())
}

/// More distinct tilings than a device keeps (4096): add_bias on the
/// first 1 to 4100 rows of one tensor. Past the cap a launch copies a
/// tiling of its own, which its stream frees once it has passed the launch.
fn past_the_cap(dev: &Device) -> Result<()> {
    let rows = 4100;
    let bias = data(64, 11);
    let x = data(rows * 64, 12);
    let bias_t = dev.tensor_from(&bias, (Const::<64>,))?;
    let xt = dev.tensor_from(&x, (rows, Const::<64>))?;
    let mut out = dev.zeros((rows, Const::<64>))?;
    let before = snapshot();
    for n in 1..=4096 {
        kernels::add_bias(xt.slice(..n)?, &bias_t, out.slice_mut(..n)?)?;
    }
    report("4096 sizes", &before);
    for n in 4097..=4100 {
        cost(&format!("{n} rows"), || kernels::add_bias(xt.slice(..n)?, &bias_t, out.slice_mut(..n)?))?;
    }
    cost("4100 rows again", || kernels::add_bias(xt.slice(..)?, &bias_t, out.slice_mut(..)?))?;
    cost("4096 rows again", || kernels::add_bias(xt.slice(..4096)?, &bias_t, out.slice_mut(..4096)?))?;
    let want: Vec<f32> = x.iter().enumerate().map(|(i, v)| v + bias[i % 64]).collect();
    if out.to_vec()? != want {
        return Err("past the cap: wrong numbers".into());
    }
    println!("past the cap ok");
    Ok(())
}

fn wrong_stream() -> Result<()> {
    let (a, b) = (Device::npu(0)?, Device::npu(1)?);
    let stream = b.new_stream()?;
    let x = a.tensor_from(&data(64, 1), (1, Const::<64>))?;
    let bias = a.tensor_from(&data(64, 2), (Const::<64>,))?;
    let mut out = a.zeros((1, Const::<64>))?;
    let err = with_stream(&stream, || kernels::add_bias(&x, &bias, &mut out)).expect_err("devices differ");
    println!("{err}");
    let event = a.default_stream().record()?;
    println!("{}", stream.wait(&event).expect_err("devices differ"));
    let host = Device::host();
    let hx = host.tensor_from(&data(64, 1), (1, Const::<64>))?;
    let hb = host.tensor_from(&data(64, 2), (Const::<64>,))?;
    let mut ho = host.zeros((1, Const::<64>))?;
    let err = with_stream(&stream, || kernels::add_bias(&hx, &hb, &mut ho)).expect_err("host tensors");
    println!("{err}");
    // A host stream waits for an NPU event at once.
    host.default_stream().wait(&event)?;
    Ok(())
}

/// A stream created by other code, adopted, used and handed back.
fn adopted(dev: &Device) -> Result<()> {
    let path = CString::new(std::env::var("PYPTO_ACL_LIBRARY")?)?;
    // SAFETY: the fake runtime pypto-rt loaded; aclrtCreateStream writes one
    // handle; the device was made current by pypto-rt on this thread.
    let raw = unsafe {
        let lib = dlopen(path.as_ptr(), 2);
        let f = dlsym(lib, c"aclrtCreateStream".as_ptr());
        let create: unsafe extern "C" fn(*mut *mut c_void) -> c_int = std::mem::transmute(f);
        let mut raw = std::ptr::null_mut();
        let rc = create(&mut raw);
        if rc != 0 {
            return Err(format!("aclrtCreateStream: {rc}").into());
        }
        raw
    };
    // SAFETY: a live stream of this device's runtime, kept for the process.
    let stream = unsafe { Stream::from_raw(dev, raw)? };
    assert_eq!(stream.as_raw(), raw);
    let x = data(2 * 64, 7);
    let bias = data(64, 8);
    let mut out = dev.zeros((2, Const::<64>))?;
    with_stream(&stream, || {
        kernels::add_bias(
            &dev.tensor_from(&x, (2, Const::<64>))?,
            &dev.tensor_from(&bias, (Const::<64>,))?,
            &mut out,
        )
    })?;
    stream.synchronize()?;
    let want: Vec<f32> = x.iter().enumerate().map(|(i, v)| v + bias[i % 64]).collect();
    if out.to_vec()? != want {
        return Err("adopted stream: wrong numbers".into());
    }
    println!("adopted ok");
    Ok(())
}

fn run(mode: &str) -> Result<()> {
    let dev = Device::from_env()?;
    match mode {
        "chain" => {
            println!("device: {dev}");
            chain(&dev, 1000)?;
        }
        "all" => {
            println!("device: {dev}");
            chain(&dev, 7)?;
            two_streams(&dev)?;
            drops(&dev)?;
            if !dev.is_host() {
                adopted(&dev)?;
            }
        }
        "wrong" => wrong_stream()?,
        "locks" => locks(&dev)?,
        "past-the-cap" => past_the_cap(&dev)?,
        "threads" => threads(&dev)?,
        "failing" => {
            let x = dev.tensor_from(&data(64, 1), (1, Const::<64>))?;
            let bias = dev.tensor_from(&data(64, 2), (Const::<64>,))?;
            let mut out = dev.zeros((1, Const::<64>))?;
            match kernels::add_bias(&x, &bias, &mut out) {
                Ok(()) => println!("launch returned"),
                Err(e) => println!("launch: {e}"),
            }
            match out.to_vec() {
                Ok(_) => println!("read ok"),
                Err(Error::Acl { call, .. }) => println!("read: {call} failed"),
                Err(e) => println!("read: {e}"),
            }
        }
        other => return Err(format!("unknown mode {other}").into()),
    }
    Ok(())
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "all".to_owned());
    if let Err(e) = run(&mode) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
"#;

fn run(fake: &FakeCann, mode: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    pypto_tests::outcome(
        Command::new(target_dir().join("debug/scratch-streams"))
            .arg(mode)
            .env("PYPTO_ACL_LIBRARY", fake.libascendcl())
            .env_remove("PYPTO_DEVICE")
            .env_remove("PYPTO_FAKE_ACL_FAIL")
            .env_remove("PYPTO_LAUNCH_BLOCKING")
            .envs(env.iter().copied())
            .output()
            .expect("scratch binary runs"),
    )
}

/// A counter of the fake runtime's report (`name value` lines).
fn report_field(report: &str, name: &str) -> i64 {
    report
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `{name}` in the fake runtime's report:\n{report}"))
}

#[test]
fn launches_are_queued_on_streams_and_reads_wait_for_them() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join("scratch-streams");
    pypto_tests::user_crate(&dir, "scratch-streams", "").unwrap();
    std::fs::create_dir_all(dir.join("kernels")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("kernels/model.yaml"), SPEC).unwrap();
    std::fs::write(dir.join("src/main.rs"), MAIN).unwrap();
    let fake = FakeCann::assemble(&tmp.join("fake-cann-streams"), FakeVersion::Cann85).unwrap();
    let (ok, _, stderr) = pypto_tests::scratch_cargo(
        &dir,
        Some(&cache_dir()),
        &["build"],
        [("ASCEND_HOME_PATH", &fake.home)],
    );
    assert!(ok, "{stderr}");

    // 1,000 dependent launches: queued without a single copy or
    // synchronisation (the tiling is copied once, by the first launch of
    // these sizes), and the read waits for all of them.
    let (ok, stdout, stderr) = run(&fake, "chain", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "device: npu:0 (Ascend910B3)\n\
         1000 launches queued: launch 1000, aclrtMemcpy 1, aclrtSynchronizeStream 0, aclrtMalloc 1, \
         aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         after reading the result: launch 1000, aclrtMemcpy 2, aclrtSynchronizeStream 1, \
         aclrtMalloc 1, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         chain ok\n"
    );

    // Two streams ordered through a tensor, explicit events, outputs
    // dropped while queued, an adopted stream; every allocation is freed.
    let report = tmp.join("fake-acl-streams-report.txt");
    let (ok, stdout, stderr) = run(
        &fake,
        "all",
        &[("PYPTO_FAKE_ACL_REPORT", report.to_str().unwrap())],
    );
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "device: npu:0 (Ascend910B3)\n\
         7 launches queued: launch 7, aclrtMemcpy 1, aclrtSynchronizeStream 0, aclrtMalloc 1, \
         aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         after reading the result: launch 7, aclrtMemcpy 2, aclrtSynchronizeStream 1, \
         aclrtMalloc 1, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         chain ok\n\
         two streams: launch 2, aclrtMemcpy 1, aclrtSynchronizeStream 0, aclrtMalloc 1, \
         aclrtRecordEvent 1, aclrtStreamWaitEvent 1\n\
         two streams ok\n\
         drops ok\n\
         adopted ok\n"
    );
    let counts = std::fs::read_to_string(&report).unwrap();
    let field = |name: &str| report_field(&counts, name);
    // The cached tilings (one per size launched: 3, 5, 4 and 2 rows) are
    // the only memory kept until exit.
    assert_eq!(field("live"), 4, "{counts}");
    assert_eq!(field("mallocs") - field("frees"), 4, "{counts}");

    // What a launch locks on its thread (issue 29): its stream, always; the
    // device's tiling cache the first time its stream launches a kernel
    // with those sizes; each other stream with pending work on its tensors,
    // to record the event it waits for; and, for each tensor that more than
    // two streams have used, that tensor's list of the later ones, once to
    // read it and once to note the launch. In steady state: one.
    let report = tmp.join("fake-acl-locks-report.txt");
    let (ok, stdout, stderr) = run(
        &fake,
        "locks",
        &[("PYPTO_FAKE_ACL_REPORT", report.to_str().unwrap())],
    );
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "\
         first launch of its sizes: locks 2, launch 1, aclrtMemcpy 1, aclrtSynchronizeStream 0, \
         aclrtMalloc 1, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         the same kernel and sizes again: locks 1, launch 1, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
         aclrtMalloc 0, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         into a tensor no launch used: locks 1, launch 1, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
         aclrtMalloc 0, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         on a second stream, the default's work pending: locks 3, launch 1, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
         aclrtMalloc 0, aclrtRecordEvent 1, aclrtStreamWaitEvent 1\n\
         the second stream again, nothing pending elsewhere: locks 1, launch 1, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
         aclrtMalloc 0, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         a third stream: locks 5, launch 1, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
         aclrtMalloc 0, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         the third again: locks 7, launch 1, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
         aclrtMalloc 0, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         a fourth stream, the third's work pending: locks 9, launch 1, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
         aclrtMalloc 0, aclrtRecordEvent 1, aclrtStreamWaitEvent 1\n\
         the default stream, the fourth's work pending: locks 6, launch 1, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
         aclrtMalloc 0, aclrtRecordEvent 2, aclrtStreamWaitEvent 2\n\
         locks ok\n\
         dropped with work on four streams: launch 0, aclrtMemcpy 0, aclrtSynchronizeStream 3, \
         aclrtMalloc 0, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         dropped ok\n"
    );
    // Every tensor was freed (the fake refuses to free memory queued work
    // uses); the one tiling stays.
    let counts = std::fs::read_to_string(&report).unwrap();
    let field = |name: &str| report_field(&counts, name);
    assert_eq!(field("live"), 1, "{counts}");
    assert_eq!(field("mallocs") - field("frees"), 1, "{counts}");

    // Launches from four threads on four streams sharing two inputs.
    let report = tmp.join("fake-acl-threads-report.txt");
    let (ok, stdout, stderr) = run(
        &fake,
        "threads",
        &[("PYPTO_FAKE_ACL_REPORT", report.to_str().unwrap())],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "threads ok\n");
    let counts = std::fs::read_to_string(&report).unwrap();
    assert_eq!(report_field(&counts, "live"), 1, "{counts}");

    // Past the device's 4096 tilings, each launch of a new size copies its
    // own (and locks the device's cache to look first), which its stream
    // frees once it has passed the launch: at exit only the 4096 cached
    // copies are left.
    let report = tmp.join("fake-acl-cap-report.txt");
    let (ok, stdout, stderr) = run(
        &fake,
        "past-the-cap",
        &[("PYPTO_FAKE_ACL_REPORT", report.to_str().unwrap())],
    );
    assert!(ok, "{stderr}");
    let past = |what: &str| {
        format!(
            "{what}: locks 2, launch 1, aclrtMemcpy 1, aclrtSynchronizeStream 0, aclrtMalloc 1, \
             aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n"
        )
    };
    assert_eq!(
        stdout,
        format!(
            "4096 sizes: launch 4096, aclrtMemcpy 4096, aclrtSynchronizeStream 0, \
             aclrtMalloc 4096, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
             {}{}{}{}{}\
             4096 rows again: locks 1, launch 1, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
             aclrtMalloc 0, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
             past the cap ok\n",
            past("4097 rows"),
            past("4098 rows"),
            past("4099 rows"),
            past("4100 rows"),
            past("4100 rows again"),
        )
    );
    let counts = std::fs::read_to_string(&report).unwrap();
    let field = |name: &str| report_field(&counts, name);
    assert_eq!(field("live"), 4096, "{counts}");
    assert_eq!(field("mallocs") - field("frees"), 4096, "{counts}");

    // Streams and events belong to one device.
    let (ok, stdout, stderr) = run(&fake, "wrong", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "kernel `add_bias`: on npu:0 (Ascend910B3), but the stream is on npu:1 (Ascend910B3); use a \
         stream of the same device\n\
         Stream::wait(event): on npu:0 (Ascend910B3), but the stream is on npu:1 (Ascend910B3); use \
         a stream of the same device\n\
         kernel `add_bias`: on the host (CPU), but the stream is on npu:1 (Ascend910B3); use a \
         stream of the same device\n"
    );

    // A kernel that fails is reported when its result is read, or by the
    // call itself with PYPTO_LAUNCH_BLOCKING=1.
    let fail = [("PYPTO_FAKE_ACL_FAIL", "launch")];
    let (ok, stdout, stderr) = run(&fake, "failing", &fail);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "launch returned\nread: aclrtSynchronizeStream failed\n"
    );
    let (ok, stdout, stderr) = run(&fake, "failing", &[fail[0], ("PYPTO_LAUNCH_BLOCKING", "1")]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "launch: `aclrtSynchronizeStream` failed with ACL error 507015: fake ACL: AI core exception \
         (injected launch failure)\nread ok\n"
    );

    // The same program on the host backend: streams and events accepted,
    // launches run at once.
    let (ok, stdout, stderr) = run(&fake, "all", &[("PYPTO_DEVICE", "host")]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "device: the host (CPU)\n\
         7 launches queued: launch 0, aclrtMemcpy 0, aclrtSynchronizeStream 0, aclrtMalloc 0, \
         aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         after reading the result: launch 0, aclrtMemcpy 0, aclrtSynchronizeStream 0, \
         aclrtMalloc 0, aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         chain ok\n\
         two streams: launch 0, aclrtMemcpy 0, aclrtSynchronizeStream 0, aclrtMalloc 0, \
         aclrtRecordEvent 0, aclrtStreamWaitEvent 0\n\
         two streams ok\n\
         drops ok\n"
    );
}
