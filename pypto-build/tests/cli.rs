//! The `pypto-build` binary: exit statuses and output streams.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    // Run from this package's directory so that fixture paths are short and
    // stable, and no file outside the package is read.
    let out = Command::new(env!("CARGO_BIN_EXE_pypto-build"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("pypto-build runs");
    (
        out.status.code().expect("exited normally"),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn check_succeeds_with_a_summary() {
    assert_eq!(
        run(&["check", "tests/specs/examples"]),
        (0, "ok: 2 kernels in 2 spec files\n".into(), String::new())
    );
}

#[test]
fn check_fails_with_located_diagnostics_on_stderr() {
    let (code, out, err) = run(&["check", "tests/specs/invalid/dims.yaml"]);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    let located: Vec<&str> = err.lines().filter(|l| l.contains(": error: ")).collect();
    assert_eq!(
        located,
        [
            "tests/specs/invalid/dims.yaml:6:3: error: `dims`: `B` is given twice; first at line 5, column 3",
            "tests/specs/invalid/dims.yaml:11:39: error: kernel `relu_k`, param `x`, shape[1]: unknown dim marker `S`; expected DYNAMIC, DYN, STATIC, a positive integer, `...` or a name from `dims` — did you mean `B`?",
        ]
    );
    assert!(err.contains("11 |       x: { dtype: DT_FP32, shape: [B, S] }\n"));
    assert!(err.ends_with("error: 2 problems found in the specs\n"));
}

#[test]
fn dump_prints_the_model() {
    let (code, out, err) = run(&["dump", "tests/specs/examples/add_bias.yaml"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.starts_with("kernel add_bias\n"), "{out}");
    assert!(out.contains("    d1  fixed 128           x.1 bias.0 out.1  (HIDDEN_SIZE)\n"));
}

#[test]
fn usage_errors_exit_2() {
    let (code, out, err) = run(&[]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.starts_with("usage: pypto-build <command> PATH..."));
    let (code, _, err) = run(&["chek", "x"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: unknown command `chek`"));
    let (code, _, err) = run(&["check"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: `check` needs at least one spec file or directory"));
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("check PATH..."));
}

#[test]
fn missing_path_is_a_spec_error() {
    let (code, _, err) = run(&["check", "no/such/dir"]);
    assert_eq!(code, 1);
    assert!(err.starts_with("no/such/dir:1:1: error: no such spec file or directory\n"));
}

#[test]
fn emit_prints_generated_rust_and_ascendc() {
    let (code, out, err) = run(&["emit", "rust", "tests/specs/examples/add_bias.yaml"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.contains(
        "pub fn add_bias(\n    x: &::pypto_rt::__private::v1::Tensor<f32, (usize, ::pypto_rt::__private::v1::Const<128>)>,\n    \
         bias: &::pypto_rt::__private::v1::Tensor<f32, (::pypto_rt::__private::v1::Const<128>,)>,\n    \
         out: &mut ::pypto_rt::__private::v1::Tensor<f32, (usize, ::pypto_rt::__private::v1::Const<128>)>,\n) -> \
         ::core::result::Result<(), ::pypto_rt::__private::v1::Error>\n"
    ), "{out}");
    let (code, out, err) = run(&["emit", "ascendc", "tests/specs/examples/add_bias.yaml"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.starts_with("// ===== add_bias_s0.cpp =====\n"), "{out}");
    assert!(out.contains(
        "extern \"C\" __global__ __aicore__ void pypto_x5_cratek10_add_5fbias_s0(GM_ADDR x, GM_ADDR bias, \
         GM_ADDR out, GM_ADDR pypto_tiling_gm)"
    ), "{out}");
    // The fixed hidden size is a constant in the source, the batch a launch-time size.
    assert!(
        out.contains("op.Init(x, bias, out, (static_cast<uint64_t>(pypto_tiling.dim[0])), 128u);"),
        "{out}"
    );
    let (code, _, err) = run(&["emit", "python", "tests/specs/examples"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: `emit` takes `rust` or `ascendc`"));
}
