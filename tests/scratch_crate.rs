//! A user crate built from scratch the way users build theirs: path
//! dependencies on pypto-build (build-dependency) and pypto-rt, a build.rs,
//! a spec directory, and a main that calls the typed wrappers.

use std::path::{Path, PathBuf};

fn workspace() -> &'static Path {
    pypto_tests::workspace_root()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Runs cargo in the scratch crate, offline, with a target dir kept between
/// test runs; returns (success, stdout, stderr).
fn cargo(dir: &Path, args: &[&str]) -> (bool, String, String) {
    cargo_with(dir, args, &[])
}

fn cargo_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    pypto_tests::scratch_cargo(dir, Some(&cache_dir(dir)), args, env.iter().copied())
}

/// The kernel object cache of the scratch crate in `dir`: its own, emptied
/// when the crate is made, since the tests count compiles.
fn cache_dir(dir: &Path) -> PathBuf {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    dir.with_file_name(format!("{name}-cache"))
}

/// Every cached kernel object in `cache`.
fn cached_objects(cache: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "o"))
        .collect()
}

/// A fresh copy of the scratch crate in its own directory `name`.
fn scratch_crate(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(cache_dir(&dir));
    pypto_tests::user_crate(&dir, "scratch-user", "").unwrap();
    write(
        &dir.join("kernels/model.yaml"),
        r#"dims:
  HIDDEN: 48
kernels:
  bias_rows:
    doc: "A bias added to every row."
    template: builtin/add_bias
    params:
      x:    { dtype: DT_FP16, shape: [DYNAMIC, HIDDEN] }
      bias: { dtype: DT_FP16, shape: [HIDDEN] }
      out:  { dtype: DT_FP16, shape: [DYNAMIC, HIDDEN], output: true }
  relu_wide:
    template: builtin/relu
    params:
      x: { dtype: DT_FP32, shape: [DYNAMIC, STATIC] }
      y: { dtype: DT_FP32, shape: [DYNAMIC, ...], rank: 2, output: true }
    static: { x.1: [16, 40] }
"#,
    );
    write(
        &dir.join("src/main.rs"),
        r#"pypto_rt::include_kernels!();

use pypto_rt::{f16, Const, Device};

fn main() -> Result<(), pypto_rt::Error> {
    let dev = Device::default();
    for rows in [1usize, 5] {
        let x: Vec<f16> = (0..rows * 48).map(|i| f16::from_f32(i as f32 * 0.25)).collect();
        let bias: Vec<f16> = (0..48).map(|i| f16::from_f32(-(i as f32))).collect();
        let mut out = dev.zeros((rows, Const::<48>))?;
        kernels::bias_rows(
            &dev.tensor_from(&x, (rows, Const::<48>))?,
            &dev.tensor_from(&bias, (Const::<48>,))?,
            &mut out,
        )?;
        let want: Vec<f16> = x
            .iter()
            .enumerate()
            .map(|(i, v)| f16::from_f32(v.to_f32() + bias[i % 48].to_f32()))
            .collect();
        assert_eq!(out.to_vec()?, want);
        println!("bias_rows rows={rows} ok");
    }
    let x: Vec<f32> = (0..3 * 40).map(|i| i as f32 - 60.0).collect();
    let mut y = dev.zeros((3, Const::<40>))?;
    kernels::relu_wide(&dev.tensor_from(&x, (3, Const::<40>))?, &mut y)?;
    assert_eq!(y.to_vec()?, x.iter().map(|v| v.max(0.0)).collect::<Vec<_>>());
    println!("relu_wide width=40 ok");
    Ok(())
}
"#,
    );
    dir
}

// One test, so the cargo runs sharing the scratch target dir are sequential.
#[test]
fn a_user_crate_builds_runs_rebuilds_only_on_change_and_reports_spec_errors() {
    let dir = scratch_crate("scratch-user");
    let (ok, stdout, stderr) = cargo(&dir, &["run", "-q"]);
    assert!(ok, "scratch crate failed:\n{stderr}");
    assert_eq!(
        stdout,
        "bias_rows rows=1 ok\nbias_rows rows=5 ok\nrelu_wide width=40 ok\n"
    );

    // Nothing changed: the build script does not run again.
    let (ok, _, stderr) = cargo(&dir, &["build", "-v"]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("Fresh scratch-user"), "{stderr}");
    assert!(
        !stderr.contains("build-script-build`"),
        "the build script ran again:\n{stderr}"
    );

    // A spec edit reruns it, and only the new STATIC size is compiled; the
    // other objects come from the cache.
    let spec = dir.join("kernels/model.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, text.replace("[16, 40]", "[16, 40, 64]")).unwrap();
    let (ok, _, stderr) = cargo_with(&dir, &["build", "-v"], &[("PYPTO_BUILD_VERBOSE", "1")]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("build-script-build`"),
        "the build script did not rerun:\n{stderr}"
    );
    assert!(
        stderr
            .contains("pypto-build: 2 kernels, 4 sources rendered, 1 objects compiled, 3 reused, "),
        "{stderr}"
    );

    // A user template shared by two kernels: editing it recompiles exactly
    // those two; the builtin kernels' objects are reused.
    write(
        &dir.join("kernels/twice.hbs"),
        "extern \"C\" __global__ __aicore__ void {{symbol}}({{entry_params}})\n{\n    \
         {{load_tiling}}\n    AscendC::GlobalTensor<float> out;\n    \
         out.SetGlobalBuffer(reinterpret_cast<__gm__ float*>({{args.y.name}}), {{args.y.numel}});\n    \
         for (uint64_t i = AscendC::GetBlockIdx(); i < {{args.y.numel}}; i += AscendC::GetBlockNum()) {\n        \
         out.SetValue(i, 2.0f);\n    }\n}\n",
    );
    write(
        &dir.join("kernels/shared.yaml"),
        "kernels:\n  fill_a: { template: twice.hbs, params: { y: { dtype: DT_FP32, shape: [DYNAMIC], output: true } } }\n  \
         fill_b: { template: twice.hbs, params: { y: { dtype: DT_FP32, shape: [8], output: true } } }\n",
    );
    let (ok, _, stderr) = cargo_with(&dir, &["build"], &[("PYPTO_BUILD_VERBOSE", "1")]);
    assert!(ok, "{stderr}");
    assert!(
        stderr
            .contains("pypto-build: 4 kernels, 6 sources rendered, 2 objects compiled, 4 reused, "),
        "{stderr}"
    );
    let template = std::fs::read_to_string(dir.join("kernels/twice.hbs")).unwrap();
    write(
        &dir.join("kernels/twice.hbs"),
        &template.replace("2.0f", "3.0f"),
    );
    let (ok, _, stderr) = cargo_with(&dir, &["build"], &[("PYPTO_BUILD_VERBOSE", "1")]);
    assert!(ok, "{stderr}");
    assert!(
        stderr
            .contains("pypto-build: 4 kernels, 6 sources rendered, 2 objects compiled, 4 reused, "),
        "{stderr}"
    );
    std::fs::remove_file(dir.join("kernels/shared.yaml")).unwrap();

    // A cached object cut short (a full disk mid-copy) is compiled again,
    // not linked as it is.
    let cached = cached_objects(&cache_dir(&dir));
    let victim = cached
        .iter()
        .filter(|p| p.to_string_lossy().contains("relu_wide"))
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no cached relu_wide object in {cached:?}"));
    let bytes = std::fs::read(victim).unwrap();
    std::fs::write(victim, &bytes[..bytes.len() / 2]).unwrap();
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, format!("{text}\n# touched\n")).unwrap();
    let (ok, _, stderr) = cargo_with(&dir, &["build"], &[("PYPTO_BUILD_VERBOSE", "1")]);
    assert!(ok, "{stderr}");
    assert!(
        stderr
            .contains("pypto-build: 2 kernels, 4 sources rendered, 1 objects compiled, 3 reused, "),
        "{stderr}"
    );
    assert_eq!(std::fs::read(victim).unwrap(), bytes);

    // Forcing the NPU backend on a machine without CANN is a clear error.
    let (ok, _, stderr) = cargo_with(
        &dir,
        &["build"],
        &[
            ("PYPTO_BACKEND", "npu"),
            ("ASCEND_HOME_PATH", "/nonexistent/cann"),
        ],
    );
    assert!(!ok);
    assert!(
        stderr.contains("Error: PYPTO_BACKEND=npu, but no CANN toolkit was found; looked in /nonexistent/cann, ASCEND_TOOLKIT_HOME (unset), "),
        "{stderr}"
    );

    // A template that renders to bad C++ fails with the compiler's message
    // and where the source came from.
    write(
        &dir.join("kernels/broken.hbs"),
        "extern \"C\" __global__ __aicore__ void {{symbol}}({{entry_params}}) { undeclared_thing(); }\n",
    );
    std::fs::write(
        dir.join("kernels/broken.yaml"),
        "kernels:\n  broken:\n    template: broken.hbs\n    params:\n      y: { dtype: DT_FP32, shape: [4], output: true }\n",
    )
    .unwrap();
    let (ok, _, stderr) = cargo(&dir, &["build"]);
    assert!(!ok);
    // (Cargo indents what the build script printed.)
    assert!(
        stderr.contains("Error: compiling kernels failed:\n  kernels/broken.hbs:"),
        "{stderr}"
    );
    // Without cc's echo of the variables it read.
    assert!(!stderr.contains("CXX = None"), "{stderr}");
    // At the template's line, once: not also as cc's warnings, nor in cc's
    // command line.
    let located: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(": error: ") && l.contains("undeclared_thing"))
        .collect();
    assert_eq!(located.len(), 1, "{stderr}");
    assert!(
        located[0].trim_start().starts_with("kernels/broken.hbs:1:"),
        "{stderr}"
    );
    assert!(!stderr.contains("did not execute successfully"), "{stderr}");
    // The rendered source is named second.
    assert!(
        stderr.contains("/out/pypto/src/broken_s0.cpp, rendered from kernel `broken` from kernels/broken.yaml:2:3 (template kernels/broken.hbs)\n"),
        "{stderr}"
    );
    std::fs::remove_file(dir.join("kernels/broken.yaml")).unwrap();

    // A spec error fails the user's build, located, without a struct dump.
    std::fs::write(
        &spec,
        text.replace(
            "DT_FP16, shape: [DYNAMIC, HIDDEN] }",
            "DT_FP61, shape: [DYNAMIC, HIDDEN] }",
        ),
    )
    .unwrap();
    let (ok, _, stderr) = cargo(&dir, &["build"]);
    assert!(!ok);
    assert!(
        stderr.contains("Error: invalid kernel specs:\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "kernels/model.yaml:8:22: error: kernel `bias_rows`, param `x`, `dtype`: \
             unknown dtype `DT_FP61`"
        ),
        "{stderr}"
    );
}

/// A user template filling its output `y` with the option `value`, so that
/// each kernel's result says which compiled code ran.
const FILL: &str = "extern \"C\" __global__ __aicore__ void {{symbol}}({{entry_params}})\n{\n    \
     {{load_tiling}}\n    AscendC::GlobalTensor<float> out;\n    \
     out.SetGlobalBuffer(reinterpret_cast<__gm__ float*>({{args.y.name}}), {{args.y.numel}});\n    \
     for (uint64_t i = AscendC::GetBlockIdx(); i < {{args.y.numel}}; i += AscendC::GetBlockNum()) {\n        \
     out.SetValue(i, {{options.value}}.0f);\n    }\n}\n";

/// A spec of `fill` kernels: (name, value) pairs.
fn fill_spec(kernels: &[(&str, u32)]) -> String {
    let mut spec = String::from("kernels:\n");
    for (name, value) in kernels {
        spec.push_str(&format!(
            "  {name}: {{ template: fill.hbs, options: {{ value: {value} }}, \
             params: {{ y: {{ dtype: DT_FP32, shape: [DYNAMIC], output: true }} }} }}\n"
        ));
    }
    spec
}

/// A library crate `name` at `version` whose `run` calls its fill kernel
/// `kernel` and returns what it wrote.
fn fill_library(dir: &Path, name: &str, version: &str, kernel: &str, value: u32) {
    pypto_tests::user_crate(dir, name, "").unwrap();
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    write(
        &dir.join("Cargo.toml"),
        &manifest.replace("version = \"0.1.0\"", &format!("version = \"{version}\"")),
    );
    write(&dir.join("kernels/fill.hbs"), FILL);
    write(&dir.join("kernels/k.yaml"), &fill_spec(&[(kernel, value)]));
    write(
        &dir.join("src/lib.rs"),
        &format!(
            "pypto_rt::include_kernels!();\n\n\
             pub fn run(dev: &pypto_rt::Device) -> Result<Vec<f32>, pypto_rt::Error> {{\n    \
             let mut y = dev.zeros((3usize,))?;\n    kernels::{kernel}(&mut y)?;\n    y.to_vec()\n}}\n"
        ),
    );
}

// Kernels whose symbols used to collide: `k` and `k_host` in one spec (`k`'s
// host shim was `k_host`'s entry); kernel `a_b` of package `kx` and kernel
// `b` of package `kx_a`; and one kernel in two versions of one package. All
// link into one binary, and each call runs its own kernel.
#[test]
fn kernels_whose_old_symbols_collided_each_run_their_own_code() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("symbols");
    fill_library(&root.join("kx_a"), "kx_a", "0.1.0", "b", 2);
    fill_library(&root.join("kdep1"), "kdep", "0.1.0", "f", 5);
    fill_library(&root.join("kdep2"), "kdep", "0.2.0", "f", 6);
    let dir = root.join("kx");
    pypto_tests::user_crate(
        &dir,
        "kx",
        "[dependencies.kx_a]\npath = \"../kx_a\"\n\n\
         [dependencies.kdep1]\npackage = \"kdep\"\npath = \"../kdep1\"\n\n\
         [dependencies.kdep2]\npackage = \"kdep\"\npath = \"../kdep2\"\n\n",
    )
    .unwrap();
    write(&dir.join("kernels/fill.hbs"), FILL);
    write(
        &dir.join("kernels/k.yaml"),
        &fill_spec(&[("k", 3), ("k_host", 4), ("a_b", 1)]),
    );
    write(
        &dir.join("src/main.rs"),
        r#"pypto_rt::include_kernels!();

fn main() -> Result<(), pypto_rt::Error> {
    let dev = pypto_rt::Device::default();
    // Wrappers are generic (`impl AsOutput`): closures make them fn pointers.
    type Kernel = fn(&mut pypto_rt::Tensor<f32, (usize,)>) -> Result<(), pypto_rt::Error>;
    let all: [(&str, Kernel); 3] = [
        ("k", |y| kernels::k(y)),
        ("k_host", |y| kernels::k_host(y)),
        ("a_b", |y| kernels::a_b(y)),
    ];
    for (name, kernel) in all {
        let mut y = dev.zeros((3usize,))?;
        kernel(&mut y)?;
        println!("kx::{name} {:?}", y.to_vec()?);
    }
    println!("kx_a::b {:?}", kx_a::run(&dev)?);
    println!("kdep 0.1.0 f {:?}", kdep1::run(&dev)?);
    println!("kdep 0.2.0 f {:?}", kdep2::run(&dev)?);
    Ok(())
}
"#,
    );
    let (ok, stdout, stderr) = cargo(&dir, &["run", "-q"]);
    assert!(ok, "the crates did not build or run:\n{stderr}");
    assert_eq!(
        stdout,
        "kx::k [3.0, 3.0, 3.0]\nkx::k_host [4.0, 4.0, 4.0]\nkx::a_b [1.0, 1.0, 1.0]\n\
         kx_a::b [2.0, 2.0, 2.0]\nkdep 0.1.0 f [5.0, 5.0, 5.0]\nkdep 0.2.0 f [6.0, 6.0, 6.0]\n"
    );
}

/// A crate with a library, a binary and an integration test, each declaring
/// the kernels itself (Cargo gives a build script's link directives to the
/// library target only; the generated code links the kernels wherever it is
/// included). Also: a release build after a debug build compiles no kernel
/// (one cache for every profile), the docs of generated code pass rustdoc
/// with warnings denied, and with `DOCS_RS` set no kernel is compiled.
#[test]
fn kernels_link_into_library_binary_and_tests_and_are_compiled_once_for_all_profiles() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-shapes");
    let _ = std::fs::remove_dir_all(cache_dir(&dir));
    pypto_tests::user_crate(&dir, "scratch-shapes", "").unwrap();
    write(
        &dir.join("kernels/k.yaml"),
        "kernels:\n  proj:\n    doc: \"A ReLU whose width is STATIC.\"\n    template: builtin/relu\n    params:\n      \
         x: { dtype: DT_FP32, shape: [DYNAMIC, STATIC] }\n      \
         y: { dtype: DT_FP32, shape: [DYNAMIC, ...], rank: 2, output: true }\n    \
         static: { x.1: [8, 16] }\n",
    );
    let call = |what: &str| {
        format!(
            "let dev = pypto_rt::Device::host();\n    \
             let x = dev.tensor_from(&[-1.0f32, 2.0, -3.0, 4.0, 5.0, -6.0, 7.0, -8.0], (1, pypto_rt::Const::<8>))?;\n    \
             let mut y = dev.zeros((1, pypto_rt::Const::<8>))?;\n    \
             {what}::proj(&x, &mut y)?;\n    \
             Ok(y.to_vec()?.iter().sum())"
        )
    };
    write(
        &dir.join("src/lib.rs"),
        &format!(
            "//! A library whose kernels its binary and tests call too.\n\n\
             pypto_rt::include_kernels!();\n\n\
             /// Sum of relu over eight values, through the library's kernels.\n\
             pub fn through_library() -> Result<f32, pypto_rt::Error> {{\n    {}\n}}\n",
            call("kernels")
        ),
    );
    write(
        &dir.join("src/main.rs"),
        &format!(
            "pypto_rt::include_kernels!();\n\n\
             fn own() -> Result<f32, pypto_rt::Error> {{\n    {}\n}}\n\n\
             fn main() -> Result<(), pypto_rt::Error> {{\n    \
             println!(\"bin {{}} lib {{}}\", own()?, scratch_shapes::through_library()?);\n    Ok(())\n}}\n",
            call("kernels")
        ),
    );
    write(
        &dir.join("tests/it.rs"),
        &format!(
            "pypto_rt::include_kernels!();\n\n\
             fn own() -> Result<f32, pypto_rt::Error> {{\n    {}\n}}\n\n\
             #[test]\nfn all_three() {{\n    \
             assert_eq!(own().unwrap(), 18.0);\n    \
             assert_eq!(scratch_shapes::through_library().unwrap(), 18.0);\n    \
             fn built<T: scratch_shapes::kernels::proj::XAxis1>() {{}}\n    \
             built::<pypto_rt::Const<16>>();\n}}\n",
            call("kernels")
        ),
    );

    let (ok, stdout, stderr) = cargo_with(&dir, &["run", "-q"], &[]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "bin 18 lib 18\n");
    // The emulation headers were precompiled once for the kernels (GCC).
    let builds = workspace().join("target/scratch/debug/build");
    let precompiled = std::fs::read_dir(&builds)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("scratch-shapes-")
        })
        .any(|e| {
            e.path()
                .join("out/pypto/include/kernel_operator.h.gch")
                .is_file()
        });
    assert!(
        precompiled,
        "no precompiled header under {}",
        builds.display()
    );
    let (ok, stdout, stderr) = cargo_with(&dir, &["test", "-q"], &[]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");

    // One line says what a compiling build did.
    let touched = std::fs::read_to_string(dir.join("kernels/k.yaml")).unwrap();
    std::fs::write(
        dir.join("kernels/k.yaml"),
        touched.replace("[8, 16]", "[8, 16, 24]"),
    )
    .unwrap();
    let (ok, _, stderr) = cargo_with(&dir, &["build"], &[]);
    assert!(ok, "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].starts_with(
            "warning: scratch-shapes@0.1.0: pypto-build: compiled 1 kernel object in "
        ) && warnings[0]
            .ends_with(" UTC (2 reused from the cache; PYPTO_BUILD_VERBOSE=1 for details)"),
        "{stderr}"
    );

    // Release reuses every object the debug build compiled.
    let (ok, _, stderr) = cargo_with(
        &dir,
        &["build", "--release"],
        &[("PYPTO_BUILD_VERBOSE", "1")],
    );
    assert!(ok, "{stderr}");
    assert!(
        stderr
            .contains("pypto-build: 1 kernels, 3 sources rendered, 0 objects compiled, 3 reused, "),
        "{stderr}"
    );

    // Generated docs: no rustdoc warning (a STATIC kernel's module shares
    // the function's name); with DOCS_RS, wrappers but no kernel compile.
    let (ok, _, stderr) = cargo_with(
        &dir,
        &["doc", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    );
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    std::fs::write(
        dir.join("kernels/k.yaml"),
        touched.replace("[8, 16]", "[8, 16, 32]"),
    )
    .unwrap();
    let (ok, _, stderr) = cargo_with(
        &dir,
        &["doc", "--no-deps"],
        &[("DOCS_RS", "1"), ("PYPTO_BUILD_VERBOSE", "1")],
    );
    assert!(ok, "{stderr}");
    assert!(
        stderr
            .contains("pypto-build: 1 kernels, 3 sources rendered, 0 objects compiled, 0 reused, "),
        "{stderr}"
    );
    let page = std::fs::read_to_string(
        workspace().join("target/scratch/doc/scratch_shapes/kernels/fn.proj.html"),
    )
    .unwrap();
    assert!(page.contains("A ReLU whose width is STATIC."), "{page}");

    // The command line, run from the user's crate as the README says.
    let manifest = workspace().join("pypto-build/Cargo.toml");
    let manifest = manifest.to_str().unwrap();
    let (ok, stdout, stderr) = cargo_with(
        &dir,
        &[
            "run",
            "-q",
            "--manifest-path",
            manifest,
            "--",
            "check",
            "kernels",
        ],
        &[],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "ok: 1 kernel in 1 spec file\n");
}

/// A binary crate `name` at `dir` whose kernel `fill` writes `value` and
/// whose `main` prints what it wrote; its build script names cache entries
/// with only `key_chars` digits of each digest (a test hook), so that every
/// such crate's `fill` source has one entry name, and gives its symbols
/// one prefix, so that each such crate links the others' objects.
fn fill_binary(dir: &Path, name: &str, value: u32, key_chars: usize) {
    pypto_tests::user_crate(dir, name, "").unwrap();
    write(
        &dir.join("build.rs"),
        &format!(
            "fn main() -> Result<(), pypto_build::Error> {{\n    \
             pypto_build::Builder::new()\n        .spec_dir(\"kernels\")\n        .symbol_prefix(\"poison\")\n        .cache_key_chars({key_chars})\n        .build()?;\n    \
             Ok(())\n}}\n"
        ),
    );
    write(&dir.join("kernels/fill.hbs"), FILL);
    write(&dir.join("kernels/k.yaml"), &fill_spec(&[("fill", value)]));
    write(
        &dir.join("src/main.rs"),
        "pypto_rt::include_kernels!();\n\n\
         fn main() -> Result<(), pypto_rt::Error> {\n    \
         let dev = pypto_rt::Device::host();\n    \
         let mut y = dev.zeros((3usize,))?;\n    kernels::fill(&mut y)?;\n    \
         println!(\"{:?}\", y.to_vec()?);\n    Ok(())\n}\n",
    );
}

/// The cached objects in `cache` whose names start with `stem`.
fn entries_of(cache: &Path, stem: &str) -> Vec<String> {
    let mut names: Vec<String> = cached_objects(cache)
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .filter(|n| n.starts_with(stem))
        .collect();
    names.sort();
    names
}

// Two crates' different `fill` sources forced onto one entry name (keys
// truncated to nothing): the second build compares the entry's recorded key
// material with its own, compiles its own source rather than link the
// first crate's object, and computes its own value; so does the first crate
// when built again.
#[test]
fn a_cache_entry_for_another_source_under_the_same_name_is_compiled_not_reused() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("poison");
    let cache = root.join("shared-cache");
    let _ = std::fs::remove_dir_all(&cache);
    let (a, b) = (root.join("poison-a"), root.join("poison-b"));
    fill_binary(&a, "poison-a", 2, 0);
    fill_binary(&b, "poison-b", 3, 0);
    // (Built, then run: `run -q` would hide the build script's summary.)
    let build = |dir: &Path| {
        let (ok, _, stderr) = pypto_tests::scratch_cargo(
            dir,
            Some(&cache),
            &["build"],
            [("PYPTO_BUILD_VERBOSE", "1")],
        );
        assert!(ok, "{stderr}");
        let (ok, stdout, run_stderr) =
            pypto_tests::scratch_cargo(dir, Some(&cache), &["run", "-q"], [("", ""); 0]);
        (ok, stdout, format!("{stderr}{run_stderr}"))
    };
    let (ok, stdout, stderr) = build(&a);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "[2.0, 2.0, 2.0]\n");
    assert!(
        stderr
            .contains("pypto-build: 1 kernels, 1 sources rendered, 1 objects compiled, 0 reused, "),
        "{stderr}"
    );
    assert_eq!(entries_of(&cache, "fill_s0"), ["fill_s0--.o"]);

    let (ok, stdout, stderr) = build(&b);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "[3.0, 3.0, 3.0]\n", "{stderr}");
    assert!(
        stderr
            .contains("pypto-build: 1 kernels, 1 sources rendered, 1 objects compiled, 0 reused, "),
        "{stderr}"
    );
    assert_eq!(entries_of(&cache, "fill_s0"), ["fill_s0--.o"]);

    // The entry is b's now: a, built again, compiles its own once more.
    let spec = a.join("kernels/k.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, format!("{text}# touched\n")).unwrap();
    let (ok, stdout, stderr) = build(&a);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "[2.0, 2.0, 2.0]\n", "{stderr}");
    assert!(
        stderr
            .contains("pypto-build: 1 kernels, 1 sources rendered, 1 objects compiled, 0 reused, "),
        "{stderr}"
    );
}

// A brought kernel's own headers: `#include "helper.h"` beside the source
// resolves there, and so does the helper's own `#include "detail/factor.h"`
// beside it; editing that header reruns the build script and compiles the
// kernel again (the header is in the entry's key material), and a fresh
// OUT_DIR sharing the cache reuses the entry of the header as it is again.
#[test]
fn a_brought_kernels_own_headers_are_found_beside_it_and_rebuild_it_when_edited() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-headers");
    let cache = cache_dir(&dir);
    let _ = std::fs::remove_dir_all(&cache);
    pypto_tests::user_crate(&dir, "scratch-headers", "").unwrap();
    write(
        &dir.join("kernels/k.yaml"),
        "dims:\n  N: DYNAMIC\nkernels:\n  scale:\n    source: scale/scale.cpp\n    entry: scale\n    blocks: 2\n    \
         params:\n      x: { dtype: DT_FP32, shape: [N] }\n      \
         y: { dtype: DT_FP32, shape: [N], output: true }\n      \
         n: { scalar: DT_UINT32, value: x.numel }\n",
    );
    write(
        &dir.join("kernels/scale/scale.cpp"),
        "#include \"kernel_operator.h\"\n#include \"helper.h\"\n\nusing namespace AscendC;\n\n\
         extern \"C\" __global__ __aicore__ void scale(GM_ADDR x, GM_ADDR y, uint32_t n)\n{\n    \
         GlobalTensor<float> xGm;\n    GlobalTensor<float> yGm;\n    \
         xGm.SetGlobalBuffer((__gm__ float*)x, n);\n    \
         yGm.SetGlobalBuffer((__gm__ float*)y, n);\n    \
         for (uint32_t i = GetBlockIdx(); i < n; i += GetBlockNum()) {\n        \
         yGm.SetValue(i, scaled(xGm.GetValue(i)));\n    }\n}\n",
    );
    write(
        &dir.join("kernels/scale/helper.h"),
        "#pragma once\n#include \"detail/factor.h\"\n\n\
         inline float scaled(float v) { return v * FACTOR; }\n",
    );
    let factor = dir.join("kernels/scale/detail/factor.h");
    write(&factor, "#define FACTOR 2.0f\n");
    write(
        &dir.join("src/main.rs"),
        "pypto_rt::include_kernels!();\n\n\
         fn main() -> Result<(), pypto_rt::Error> {\n    \
         let dev = pypto_rt::Device::host();\n    \
         let x = dev.tensor_from(&[1.0f32, 2.0, 3.0, 4.0], (4usize,))?;\n    \
         let mut y = dev.zeros((4usize,))?;\n    kernels::scale(&x, &mut y)?;\n    \
         println!(\"{:?}\", y.to_vec()?);\n    Ok(())\n}\n",
    );
    // Built, then run (`run -q` would hide the build script's summary).
    let build = |what: &str| {
        let (ok, _, stderr) = pypto_tests::scratch_cargo(
            &dir,
            Some(&cache),
            &["build"],
            [("PYPTO_BUILD_VERBOSE", "1")],
        );
        assert!(ok, "{what}:\n{stderr}");
        let (ok, stdout, run_stderr) =
            pypto_tests::scratch_cargo(&dir, Some(&cache), &["run", "-q"], [("", ""); 0]);
        assert!(ok, "{what}:\n{run_stderr}");
        (stdout, stderr)
    };
    let (stdout, stderr) = build("first build");
    assert_eq!(stdout, "[2.0, 4.0, 6.0, 8.0]\n", "{stderr}");
    assert!(
        stderr.contains("pypto-build: 1 kernels, 1 sources rendered, 1 objects compiled, "),
        "{stderr}"
    );

    write(&factor, "#define FACTOR 3.0f\n");
    let (stdout, stderr) = build("after the header edit");
    assert_eq!(stdout, "[3.0, 6.0, 9.0, 12.0]\n", "{stderr}");
    assert!(
        stderr
            .contains("pypto-build: 1 kernels, 1 sources rendered, 1 objects compiled, 0 reused, "),
        "{stderr}"
    );

    // A fresh OUT_DIR, sharing the cache, with the header as it first was.
    let (ok, _, stderr) = pypto_tests::scratch_cargo(
        &dir,
        Some(&cache),
        &["clean", "-p", "scratch-headers"],
        [("", ""); 0],
    );
    assert!(ok, "{stderr}");
    write(&factor, "#define FACTOR 2.0f\n");
    let (stdout, stderr) = build("in a fresh OUT_DIR");
    assert_eq!(stdout, "[2.0, 4.0, 6.0, 8.0]\n", "{stderr}");
    assert!(
        stderr
            .contains("pypto-build: 1 kernels, 1 sources rendered, 0 objects compiled, 1 reused, "),
        "{stderr}"
    );
}

/// `cargo <args>` in `dir` with the cache `cache`, run so that it cannot
/// write where the directory's mode bits forbid it, even as root (whose
/// CAP_DAC_OVERRIDE is dropped from the bounding set for it).
fn cargo_without_override(dir: &Path, cache: &Path, args: &[&str]) -> (bool, String, String) {
    use std::os::unix::process::CommandExt;
    const PR_CAPBSET_DROP: libc::c_int = 24;
    const CAP_DAC_OVERRIDE: libc::c_ulong = 1;
    let mut command = pypto_tests::scratch_command(dir, Some(cache), args);
    command.env("PYPTO_BUILD_VERBOSE", "1");
    // SAFETY: prctl is a system call, safe between fork and exec; as root
    // it drops the capability for the program exec'd, elsewhere it fails
    // with EPERM, and the mode bits bind anyway.
    unsafe {
        command.pre_exec(|| {
            if libc::geteuid() == 0 && libc::prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    pypto_tests::outcome(command.output().expect("cargo runs"))
}

// A pre-seeded cache the build cannot write: its entries are reused once
// verified, what it lacks is compiled into OUT_DIR, one warning says so,
// and nothing in the cache changes. A PYPTO_CACHE_DIR that is not a
// directory is an error naming it.
#[test]
fn a_read_only_cache_is_read_and_a_cache_path_that_is_not_a_directory_is_an_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-rocache");
    let cache = cache_dir(&dir);
    if cache.exists() {
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let _ = std::fs::remove_dir_all(&cache);
    pypto_tests::user_crate(&dir, "scratch-rocache", "").unwrap();
    write(&dir.join("kernels/fill.hbs"), FILL);
    write(&dir.join("kernels/k.yaml"), &fill_spec(&[("fill_a", 2)]));
    let main = |kernels: &[&str]| {
        let calls: String = kernels
            .iter()
            .map(|k| {
                format!(
                    "    let mut y = dev.zeros((3usize,))?;\n    kernels::{k}(&mut y)?;\n    \
                     println!(\"{k} {{:?}}\", y.to_vec()?);\n"
                )
            })
            .collect();
        format!(
            "pypto_rt::include_kernels!();\n\nfn main() -> Result<(), pypto_rt::Error> {{\n    \
             let dev = pypto_rt::Device::host();\n{calls}    Ok(())\n}}\n"
        )
    };
    write(&dir.join("src/main.rs"), &main(&["fill_a"]));
    let (ok, stdout, stderr) = cargo(&dir, &["run", "-q"]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "fill_a [2.0, 2.0, 2.0]\n");
    let listing = |cache: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let seeded = listing(&cache);
    assert_eq!(seeded.len(), 4, "{seeded:?}");

    // Read-only now; a second kernel is not in it.
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o555)).unwrap();
    write(
        &dir.join("kernels/k.yaml"),
        &fill_spec(&[("fill_a", 2), ("fill_b", 3)]),
    );
    write(&dir.join("src/main.rs"), &main(&["fill_a", "fill_b"]));
    let (ok, _, stderr) = cargo_without_override(&dir, &cache, &["build"]);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert!(ok, "{stderr}");
    assert_eq!(
        warnings,
        [
            format!(
                "warning: scratch-rocache@0.1.0: pypto-build: the kernel object cache `{}` \
                 (PYPTO_CACHE_DIR) is not writable (Permission denied (os error 13)); kernels it \
                 does not hold are compiled into OUT_DIR and not cached",
                cache.display()
            )
            .as_str(),
            warnings.get(1).copied().unwrap_or("no second warning"),
        ],
        "{stderr}"
    );
    assert!(
        warnings[1].starts_with(
            "warning: scratch-rocache@0.1.0: pypto-build: 2 kernels, 2 sources rendered, \
             1 objects compiled, 1 reused, "
        ),
        "{stderr}"
    );
    let (ok, stdout, stderr) = cargo_without_override(&dir, &cache, &["run", "-q"]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "fill_a [2.0, 2.0, 2.0]\nfill_b [3.0, 3.0, 3.0]\n");
    assert_eq!(listing(&cache), seeded);
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o755)).unwrap();

    // A file, and a path under a file.
    let file = dir.join("not-a-dir");
    write(&file, "");
    let file_env = [("PYPTO_CACHE_DIR", file.clone())];
    let (ok, _, stderr) = pypto_tests::scratch_cargo(&dir, None, &["build"], file_env);
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "Error: PYPTO_CACHE_DIR is `{}`, which is not a directory; the kernel object cache \
             must be a directory (it is created if missing)\n",
            file.display()
        )),
        "{stderr}"
    );
    let under = [("PYPTO_CACHE_DIR", file.join("cache"))];
    let (ok, _, stderr) = pypto_tests::scratch_cargo(&dir, None, &["build"], under);
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "Error: PYPTO_CACHE_DIR is `{}`, which is not a directory and cannot be created: \
             Not a directory (os error 20)\n",
            file.join("cache").display()
        )),
        "{stderr}"
    );
}
