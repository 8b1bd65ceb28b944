//! What a kernel on the FAKE NPU (tests/fake_cann/) cannot do to the rest
//! of the program: a `DT_BOOL` output holding bytes other than 0 and 1
//! reaches no host tensor (every copy to the host checks, and resets its
//! destination), and a kernel that writes its own tiling changes no other
//! kernel's launch. A user crate built against the fake CANN 8.5 runs each
//! case and prints what it saw; the parent compares it line by line.

use std::path::{Path, PathBuf};
use std::process::Command;

use pypto_tests::fake_cann::{FakeCann, FakeVersion};

fn target_dir() -> PathBuf {
    pypto_tests::workspace_root().join("target/scratch")
}

fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-checks-cache")
}

const SPEC: &str = r#"dims:
  N: DYNAMIC
kernels:
  writes_tiling:
    template: writes_tiling.hbs
    targets: [A2]
    params:
      x: { dtype: DT_FP32, shape: [N] }
      y: { dtype: DT_FP32, shape: [N], output: true }
  add_f32:
    template: builtin/add
    targets: [A2]
    params:
      a: { dtype: DT_FP32, shape: [N] }
      b: { dtype: DT_FP32, shape: [N] }
      out: { dtype: DT_FP32, shape: [N], output: true }
  bad_bool:
    template: bad_bool.hbs
    targets: [A2]
    params:
      x: { dtype: DT_FP32, shape: [DYNAMIC] }
      flags: { dtype: DT_BOOL, shape: [4], output: true }
  writes_bool_input:
    template: writes_bool_input.hbs
    targets: [A2]
    params:
      flags: { dtype: DT_BOOL, shape: [4] }
      y: { dtype: DT_FP32, shape: [DYNAMIC], output: true }
"#;

/// Writes bytes 1, 2 and 255 into its `DT_BOOL` output.
const BAD_BOOL: &str = r#"extern "C" __global__ __aicore__ void {{symbol}}({{entry_params}})
{
    {{load_tiling}}
    AscendC::GlobalTensor<uint8_t> flagsGm;
    flagsGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>({{args.flags.name}}), {{args.flags.numel}});
    flagsGm.SetValue(0, 1);
    flagsGm.SetValue(1, 2);
    flagsGm.SetValue(2, 255);
}
"#;

/// Writes 0 over the first word of its tiling (the size of `N`) through
/// the raw pointer, and nothing else. Its tiling is that of `add_f32` with
/// the same `N`: one dim.
const WRITES_TILING: &str = r#"extern "C" __global__ __aicore__ void {{symbol}}({{entry_params}})
{
    {{load_tiling}}
    reinterpret_cast<__gm__ volatile uint32_t*>(pypto_tiling_gm)[0] = 0;
}
"#;

/// Writes byte 2 into its `DT_BOOL` input through the raw pointer.
const WRITES_BOOL_INPUT: &str = r#"extern "C" __global__ __aicore__ void {{symbol}}({{entry_params}})
{
    {{load_tiling}}
    reinterpret_cast<__gm__ volatile uint8_t*>({{args.flags.name}})[1] = 2;
}
"#;

const MAIN: &str = r#"pypto_rt::include_kernels!();

use pypto_rt::{Const, Device, Tensor};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;
type Flags = Tensor<bool, (Const<4>,)>;

fn show<T: std::fmt::Debug>(what: &str, result: std::result::Result<T, pypto_rt::Error>) {
    match result {
        Ok(v) => println!("{what}: ok {v:?}"),
        Err(e) => println!("{what}: error: {e}"),
    }
}

/// The bytes of a host tensor, read as bytes: what `as_array` would lend
/// as `&[bool]`.
fn bytes(flags: &Flags) -> Vec<u8> {
    assert!(flags.device().is_host());
    // SAFETY: a host tensor of 4 one-byte elements, borrowed shared.
    unsafe { std::slice::from_raw_parts(flags.as_ptr().cast::<u8>(), 4) }.to_vec()
}

fn host_flags() -> Result<Flags> {
    Ok(Device::host().tensor_from(&[true; 4], (Const::<4>,))?)
}

/// A bool output written with bytes 1, 2 and 255 on the NPU, then every way
/// its bytes can reach the host.
fn bools() -> Result<()> {
    let dev = Device::from_env()?;
    let host = Device::host();
    let x = dev.tensor_from(&[1.0f32; 4], (4usize,))?;
    let mut flags: Flags = dev.zeros((Const::<4>,))?;
    show("launch", kernels::bad_bool(&x, &mut flags));
    show("to_vec", flags.to_vec());
    show("to_device", flags.to_device(&host).map(|t| bytes(&t)));
    let mut dst = host_flags()?;
    show("copy_to", flags.copy_to(&mut dst));
    println!("  then {:?} {:?}", bytes(&dst), dst.to_vec()?);
    let mut dst = host_flags()?;
    show("copy_from", dst.copy_from(&flags));
    println!("  then {:?} {:?}", bytes(&dst), dst.to_vec()?);
    let mut dst = host_flags()?;
    show("copy_from into a view", dst.view_mut().copy_from(flags.view()));
    println!("  then {:?}", bytes(&dst));
    let mut dst = host_flags()?;
    show("copy_to a view", flags.view().copy_to(dst.view_mut()));
    println!("  then {:?}", bytes(&dst));
    // On the device the bytes are only bytes: copies there keep them, and
    // the check follows them to the host.
    let copy = flags.try_clone()?;
    show("try_clone, then to_vec", copy.to_vec());
    Ok(())
}

/// On the host: a kernel that writes byte 2 into a bool input, where no
/// read-only page stops it (PYPTO_READONLY_INPUTS=0).
fn bool_input() -> Result<()> {
    let dev = Device::host();
    let flags = dev.tensor_from(&[true, false, true, false], (Const::<4>,))?;
    let mut y = dev.zeros((1usize,))?;
    show("launch", kernels::writes_bool_input(&flags, &mut y));
    println!("  then {:?}", bytes(&flags));
    Ok(())
}

/// A kernel that writes its own tiling, then a correct `add_f32` of the
/// same sizes, twice each.
fn tilings() -> Result<()> {
    let dev = Device::from_env()?;
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32 - 7.0).collect();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let (ta, tb) = (dev.tensor_from(&a, (n,))?, dev.tensor_from(&b, (n,))?);
    for round in 1..=2 {
        let mut y = dev.zeros((n,))?;
        show(&format!("writes_tiling {round}"), kernels::writes_tiling(&ta, &mut y));
        let mut out = dev.tensor_from(&vec![-1.0f32; n], (n,))?;
        show(&format!("add_f32 {round}"), kernels::add_f32(&ta, &tb, &mut out));
        let got = out.to_vec()?;
        let wrong = (0..n).filter(|&i| got[i] != want[i]).count();
        println!("  {wrong} of {n} elements wrong");
    }
    Ok(())
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let result = match mode.as_str() {
        "tilings" => tilings(),
        "bools" => bools(),
        "bool_input" => bool_input(),
        other => Err(format!("unknown mode {other}").into()),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    println!("done");
}
"#;

fn run(fake: &FakeCann, mode: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    pypto_tests::outcome(
        Command::new(target_dir().join("debug/scratch-checks"))
            .arg(mode)
            .env("PYPTO_ACL_LIBRARY", fake.libascendcl())
            .env_remove("PYPTO_DEVICE")
            .env_remove("PYPTO_FAKE_ACL_FAIL")
            .env_remove("PYPTO_LAUNCH_BLOCKING")
            .env_remove("PYPTO_READONLY_INPUTS")
            .envs(env.iter().copied())
            .output()
            .expect("scratch binary runs"),
    )
}

/// Builds the scratch crate against a fake CANN 8.5; returns the toolkit.
fn build() -> FakeCann {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join("scratch-checks");
    pypto_tests::user_crate(&dir, "scratch-checks", "").unwrap();
    for (path, text) in [
        ("kernels/model.yaml", SPEC),
        ("kernels/bad_bool.hbs", BAD_BOOL),
        ("kernels/writes_tiling.hbs", WRITES_TILING),
        ("kernels/writes_bool_input.hbs", WRITES_BOOL_INPUT),
        ("src/main.rs", MAIN),
    ] {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let fake = FakeCann::assemble(&tmp.join("fake-cann-checks"), FakeVersion::Cann85).unwrap();
    let (ok, _, stderr) = pypto_tests::scratch_cargo(
        &dir,
        Some(&cache_dir()),
        &["build"],
        [("ASCEND_HOME_PATH", &fake.home)],
    );
    assert!(ok, "{stderr}");
    fake
}

// One test: the cases share one scratch build.
#[test]
fn a_kernel_on_the_npu_cannot_reach_the_host_s_invariants() {
    let fake = build();

    // Every copy that brings the bool bytes to the host checks them, and
    // leaves its destination all `false`, not holding the bytes.
    let (ok, stdout, stderr) = run(&fake, "bools", &[]);
    assert!(ok, "{stderr}");
    let copied = "error: element 1 of a DT_BOOL tensor holds byte 2, which is not a DT_BOOL (0 \
                  or 1), so the copy's destination was reset to false";
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "launch: ok ()",
            "to_vec: error: element 1 of a DT_BOOL tensor holds byte 2, which is not a DT_BOOL \
             (0 or 1), so to_vec returned nothing",
            &format!("to_device: {copied}"),
            &format!("copy_to: {copied}"),
            "  then [0, 0, 0, 0] [false, false, false, false]",
            &format!("copy_from: {copied}"),
            "  then [0, 0, 0, 0] [false, false, false, false]",
            &format!("copy_from into a view: {copied}"),
            "  then [0, 0, 0, 0]",
            &format!("copy_to a view: {copied}"),
            "  then [0, 0, 0, 0]",
            "try_clone, then to_vec: error: element 1 of a DT_BOOL tensor holds byte 2, which is \
             not a DT_BOOL (0 or 1), so to_vec returned nothing",
            "done",
        ]
    );

    // A kernel that writes its tiling changes no other kernel's: add_f32
    // with the same sizes, launched after it on the same stream, is right.
    let (ok, stdout, stderr) = run(&fake, "tilings", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "writes_tiling 1: ok ()\nadd_f32 1: ok ()\n  0 of 1000 elements wrong\n\
         writes_tiling 2: ok ()\nadd_f32 2: ok ()\n  0 of 1000 elements wrong\ndone\n"
    );
    // The host backend reports the write itself.
    let (ok, stdout, stderr) = run(&fake, "tilings", &[("PYPTO_DEVICE", "host")]);
    assert!(ok, "{stderr}");
    let written = "error: kernel `writes_tiling`: it wrote its tiling (the sizes and scalars \
                   pypto-rt passes it), which a kernel may only read; on an NPU that write \
                   would change the tiling of its later launches with the same sizes";
    assert_eq!(
        stdout,
        format!(
            "writes_tiling 1: {written}\nadd_f32 1: ok ()\n  0 of 1000 elements wrong\n\
             writes_tiling 2: {written}\nadd_f32 2: ok ()\n  0 of 1000 elements wrong\ndone\n"
        )
    );

    // A bool input a kernel wrote on the host, with no read-only pages.
    let (ok, stdout, stderr) = run(
        &fake,
        "bool_input",
        &[("PYPTO_DEVICE", "host"), ("PYPTO_READONLY_INPUTS", "0")],
    );
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "launch: error: kernel `writes_bool_input`: `flags` element 1 holds byte 2, which is not \
         a DT_BOOL (0 or 1); the tensor was reset to false\n  then [0, 0, 0, 0]\ndone\n"
    );
}
