//! A C++ error in a user template, compiled by `Builder::build` through cc
//! with the host compiler, is reported once, at the template's line, with
//! the rendered source named second and none of cc's command line.
//!
//! The only test in this binary: it sets the variables Cargo gives build
//! scripts, which cc reads, before any other thread runs.

use std::path::Path;
use std::process::Command;

use pypto_build::{Builder, Error};

/// The host's target triple, from `rustc -vV`.
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let out = Command::new(rustc).arg("-vV").output().expect("rustc runs");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc names its host")
        .to_owned()
}

#[test]
fn a_cpp_error_in_a_user_template_is_reported_at_its_template_line() {
    let triple = host_triple();
    // SAFETY: no other thread runs in this test binary yet.
    unsafe {
        std::env::set_var("TARGET", &triple);
        std::env::set_var("HOST", &triple);
        std::env::set_var("OPT_LEVEL", "0");
        std::env::set_var("PYPTO_BACKEND", "host");
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("build-errors");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("k.yaml"),
        "kernels:\n  k:\n    template: that.hbs\n    params:\n      \
         y: { dtype: DT_FP32, shape: [DYNAMIC, 4], output: true }\n",
    )
    .unwrap();
    // Front matter, then a loop over the dims before the bad line.
    std::fs::write(
        dir.join("that.hbs"),
        "---\n---\nextern \"C\" __global__ __aicore__ void {{symbol}}({{entry_params}})\n{\n    \
         {{load_tiling}}\n{{#each dims}}\n    uint32_t d{{index}} = {{expr}};\n{{/each}}\n    \
         undeclared_thing();\n}\n",
    )
    .unwrap();
    let out = dir.join("out");
    let err = Builder::new()
        .spec(dir.join("k.yaml"))
        .out_dir(&out)
        .symbol_prefix("t")
        .cargo_metadata(false)
        .build()
        .unwrap_err();
    let Error::Compile { message, .. } = &err else {
        panic!("expected a compile error, got {err}");
    };
    let t = dir.join("that.hbs").display().to_string();
    let located: Vec<&str> = message
        .lines()
        .filter(|l| l.contains(": error: "))
        .collect();
    assert_eq!(located.len(), 1, "{message}");
    assert!(
        located[0].starts_with(&format!("{t}:9:5: error: "))
            && located[0].contains("undeclared_thing"),
        "{message}"
    );
    let spec = dir.join("k.yaml").display().to_string();
    let rendered = out.join("pypto/src/k_s0.cpp").display().to_string();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("compiling kernels failed:\n{t}:")),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "\nnote: the compiler was given {rendered}, rendered from kernel `k` from {spec}:2:3 \
             (template {t})\nrendered sources are in {}",
            out.join("pypto/src").display()
        )),
        "{text}"
    );
    // Told once, without cc's command line and environment.
    assert_eq!(text.matches("undeclared_thing").count(), 2, "{text}");
    assert!(
        !text.contains("LC_ALL") && !text.contains("did not execute"),
        "{text}"
    );
}
