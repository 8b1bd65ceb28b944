//! The `pypto-build` binary: exit statuses and output streams.

use std::path::Path;
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
        (
            0,
            "ok: 32 kernels in 6 spec files; 1 chooses among 3 variants\n".into(),
            String::new()
        )
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
    assert!(out.contains("check [--compile] [--require-dim-docs] PATH..."));
    assert!(out.contains("run FILE [-I DIR]... [-D NAME[=VALUE]]... [-- ARGS...]"));
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
        "pub fn add_bias(\n    x: impl ::pypto_rt::__private::v3::AsInput<f32, (usize, ::pypto_rt::__private::v3::Const<128>)>,\n    \
         bias: impl ::pypto_rt::__private::v3::AsInput<f32, (::pypto_rt::__private::v3::Const<128>,)>,\n    \
         mut out: impl ::pypto_rt::__private::v3::AsOutput<f32, (usize, ::pypto_rt::__private::v3::Const<128>)>,\n) -> \
         ::core::result::Result<(), ::pypto_rt::__private::v3::Error>\n"
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

/// A directory of its own for one test, holding a spec of kernel `k` (a
/// tensor `x`, a scalar `alpha`, an output `y`) with user template `t.hbs`.
fn user_kernel(name: &str, template: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.hbs"), template).unwrap();
    std::fs::write(
        dir.join("k.yaml"),
        "kernels:\n  k:\n    template: t.hbs\n    params:\n      \
         x: { dtype: DT_FP32, shape: [DYNAMIC, 8] }\n      alpha: { scalar: DT_FP32 }\n      \
         y: { dtype: DT_FP32, shape: [DYNAMIC, 8], output: true }\n",
    )
    .unwrap();
    dir
}

const ENTRY: &str = "extern \"C\" __global__ __aicore__ void {{symbol}}({{entry_params}})\n{\n    {{load_tiling}}\n";

#[test]
fn check_renders_templates_and_locates_unknown_variables() {
    let dir = user_kernel(
        "unknown-variable",
        &format!("{ENTRY}    float a = {{{{args.alpha.valeu}}}};\n}}\n"),
    );
    let spec = dir.join("k.yaml").display().to_string();
    let t = dir.join("t.hbs").display().to_string();
    let (code, out, err) = run(&["check", &spec]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "{t}:4:15: error: unknown variable `args.alpha.valeu`; available: `args.alpha.name`, \
             `args.alpha.type`, `args.alpha.value`\n  |\n4 |     float a = {{{{args.alpha.valeu}}}};\n  \
             |               ^\nnote: while rendering template `{t}` for kernel `k` ({spec}:2:3), \
             specialisation: no STATIC dims\nerror: 1 problem found in the templates\n"
        )
    );
    // A role that does not exist: the roles that do.
    std::fs::write(
        dir.join("t.hbs"),
        format!("{ENTRY}{{{{#each dims}}}}\n    // {{{{expr}}}}\n{{{{/each}}}}\n    {{{{args.beta.value}}}};\n}}\n"),
    )
    .unwrap();
    let (code, _, err) = run(&["check", &spec]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with(&format!(
            "{t}:7:5: error: unknown variable `args.beta.value`; available: `args.alpha`, `args.x`, `args.y`\n"
        )),
        "{err}"
    );
}

#[test]
fn check_compile_reports_cpp_errors_at_template_lines() {
    let dir = user_kernel(
        "compile",
        &format!(
            "{ENTRY}{{{{#each dims}}}}\n    uint32_t d{{{{index}}}} = {{{{expr}}}};\n{{{{/each}}}}\n    undeclared_thing();\n}}\n"
        ),
    );
    let spec = dir.join("k.yaml").display().to_string();
    let t = dir.join("t.hbs").display().to_string();
    // Rendering alone finds nothing wrong.
    assert_eq!(
        run(&["check", &spec]),
        (0, "ok: 1 kernel in 1 spec file\n".into(), String::new())
    );
    let (code, out, err) = run(&["check", "--compile", &spec]);
    assert_eq!((code, out.as_str()), (1, ""));
    // Line 7 of the template, after a loop that rendered four lines.
    let located: Vec<&str> = err.lines().filter(|l| l.contains(": error: ")).collect();
    assert_eq!(located.len(), 1, "{err}");
    assert!(
        located[0].starts_with(&format!("{t}:7:5: error: "))
            && located[0].contains("undeclared_thing"),
        "{err}"
    );
    // The rendered file is named second.
    let note = err
        .lines()
        .find(|l| l.starts_with("note: "))
        .unwrap_or_default();
    assert!(
        note.starts_with("note: the compiler was given ")
            && note.ends_with(&format!(
                "/src/k_s0.cpp, rendered from kernel `k` from {spec}:2:3 (template {t})"
            )),
        "{err}"
    );
    assert!(
        err.ends_with("/src\n")
            && err.contains("\nerror: 1 rendered source failed to compile; the sources are in "),
        "{err}"
    );
    // Fixed, it compiles.
    std::fs::write(
        dir.join("t.hbs"),
        format!("{ENTRY}    (void)pypto_tiling;\n}}\n"),
    )
    .unwrap();
    assert_eq!(
        run(&["check", "--compile", &spec]),
        (
            0,
            "ok: 1 kernel in 1 spec file; 1 rendered source compiles\n".into(),
            String::new()
        )
    );
}

#[test]
fn check_compile_passes_the_examples() {
    assert_eq!(
        run(&["check", "--compile", "tests/specs/examples"]),
        (
            0,
            "ok: 32 kernels in 6 spec files; 1 chooses among 3 variants; 35 rendered sources compile\n".into(),
            String::new()
        )
    );
}

#[test]
fn schema_prints_pretty_json_and_takes_no_paths() {
    let (code, out, err) = run(&["schema"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let schema: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(out.contains("\n  \"properties\": {\n"), "{out}");
    assert!(out.ends_with("}\n"));
    let (code, out, err) = run(&["schema", "tests/specs/examples"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.starts_with("error: `schema` takes no arguments, found `tests/specs/examples`\n"));
    let (_, help, _) = run(&["--help"]);
    assert!(help.contains("\n  schema          print the JSON Schema"));
}
