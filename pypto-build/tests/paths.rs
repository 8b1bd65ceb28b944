//! Paths from specs and the file system are not trusted: templates stay in
//! the spec's package, and a spec path that would break a line of generated
//! code, a comment or a `cargo:` directive is refused or escaped.

use std::path::{Path, PathBuf};

use pypto_build::Builder;
use pypto_build::unstable::codegen::{Plan, SymbolScope, ascendc, rust};

/// `DIR/pkg/` with a Cargo.toml, its `kernels/` and `templates/ok.hbs`,
/// and `DIR/outside.hbs` next to the package.
fn package(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("paths-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("pkg/kernels")).unwrap();
    std::fs::create_dir_all(dir.join("pkg/templates")).unwrap();
    std::fs::write(dir.join("pkg/Cargo.toml"), "[package]\nname = \"pkg\"\n").unwrap();
    std::fs::write(dir.join("pkg/templates/ok.hbs"), "// ok\n").unwrap();
    std::fs::write(dir.join("outside.hbs"), "// secret\n").unwrap();
    dir.canonicalize().unwrap()
}

/// The errors of a spec at `DIR/pkg/kernels/k.yaml` whose one kernel uses
/// `template` (written as YAML).
fn template_errors(dir: &Path, template: &str) -> Vec<String> {
    let spec = dir.join("pkg/kernels/k.yaml");
    std::fs::write(
        &spec,
        format!(
            "kernels:\n  k:\n    template: {template}\n    params:\n      y: {{ dtype: DT_FP32, shape: [4], output: true }}\n"
        ),
    )
    .unwrap();
    match pypto_build::check_paths(&[&spec]) {
        Ok(_) => Vec::new(),
        Err(d) => d.iter().map(|d| d.to_string()).collect(),
    }
}

#[test]
fn templates_inside_the_package_are_accepted() {
    let dir = package("inside");
    assert_eq!(
        template_errors(&dir, "../templates/ok.hbs"),
        Vec::<String>::new()
    );
    assert_eq!(
        template_errors(&dir, "./../kernels/../templates/ok.hbs"),
        Vec::<String>::new()
    );
}

#[test]
fn absolute_template_paths_are_refused() {
    let dir = package("absolute");
    let outside = dir.join("outside.hbs");
    assert_eq!(
        template_errors(&dir, &outside.display().to_string()),
        [format!(
            "{}:3:15: error: kernel `k`, `template`: `{}` is an absolute path; give a path relative to the spec file, inside its package",
            dir.join("pkg/kernels/k.yaml").display(),
            outside.display()
        )]
    );
}

#[test]
fn templates_escaping_the_package_with_dot_dot_are_refused() {
    let dir = package("dotdot");
    assert_eq!(
        template_errors(&dir, "../../outside.hbs"),
        [format!(
            "{}:3:15: error: kernel `k`, `template`: `../../outside.hbs` resolves to `{}`, outside the spec's package `{}` (the directory of the nearest Cargo.toml above the spec file); templates must be inside it",
            dir.join("pkg/kernels/k.yaml").display(),
            dir.join("outside.hbs").display(),
            dir.join("pkg").display()
        )]
    );
}

#[cfg(unix)]
#[test]
fn templates_escaping_the_package_through_a_symlink_are_refused() {
    let dir = package("symlink");
    std::os::unix::fs::symlink("../../outside.hbs", dir.join("pkg/kernels/link.hbs")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("pkg/templates/etc")).unwrap();
    assert_eq!(
        template_errors(&dir, "link.hbs"),
        [format!(
            "{}:3:15: error: kernel `k`, `template`: `link.hbs` resolves to `{}`, outside the spec's package `{}` (the directory of the nearest Cargo.toml above the spec file); templates must be inside it",
            dir.join("pkg/kernels/k.yaml").display(),
            dir.join("outside.hbs").display(),
            dir.join("pkg").display()
        )]
    );
    // A symlink inside the package that points inside it is fine.
    std::os::unix::fs::symlink("../templates/ok.hbs", dir.join("pkg/kernels/ok.hbs")).unwrap();
    assert_eq!(template_errors(&dir, "ok.hbs"), Vec::<String>::new());
}

#[test]
fn control_characters_in_template_paths_are_refused() {
    let dir = package("control");
    assert_eq!(
        template_errors(&dir, "\"ok\\n.hbs\""),
        [format!(
            "{}:3:15: error: kernel `k`, `template`: the path contains the control character `\\n`, which Cargo cannot watch (`cargo:rerun-if-changed`); rename it",
            dir.join("pkg/kernels/k.yaml").display()
        )]
    );
}

const VALID: &str = "kernels:\n  k:\n    template: builtin/relu\n    params:\n      x: { dtype: DT_FP32, shape: [4] }\n      y: { dtype: DT_FP32, shape: [4], output: true }\n";

#[cfg(unix)]
#[test]
fn spec_files_named_with_a_newline_are_refused() {
    let dir = package("newline");
    let bad = dir.join("pkg/kernels/bad\ncargo:warning=injected.yaml");
    std::fs::write(&bad, VALID).unwrap();
    let expected = format!(
        "{}/pkg/kernels/bad\\ncargo:warning=injected.yaml:1:1: error: cannot use this spec file: the path contains the control character `\\n`, which Cargo cannot watch (`cargo:rerun-if-changed`); rename it",
        dir.display()
    );
    // Found by walking a directory...
    let err = pypto_build::check_paths(&[dir.join("pkg/kernels")]).unwrap_err();
    assert_eq!(err.to_string(), expected);
    // ...and given directly.
    let err = pypto_build::check_paths(&[&bad]).unwrap_err();
    assert_eq!(
        err.to_string(),
        expected.replace("spec file:", "spec path:")
    );
    let err = pypto_build::check_source(&bad, VALID).unwrap_err();
    assert_eq!(err.to_string(), expected);
    // The build stops before anything is generated from it.
    match Builder::new().spec(dir.join("pkg/kernels")).generate() {
        Err(pypto_build::Error::Spec(d)) => assert_eq!(d.to_string(), expected),
        other => panic!("expected a spec error, got {other:?}"),
    }
}

/// A model whose spec path holds a newline cannot be had from the checker;
/// built by hand, it is still written as one line wherever it appears.
#[test]
fn spec_paths_are_escaped_in_generated_rust_and_cpp() {
    let dir = package("escape");
    let template = dir.join("pkg/templates/t.hbs");
    std::fs::write(&template, "// spec {{spec}} template {{template}}\n").unwrap();
    let spec = dir.join("pkg/kernels/k.yaml");
    let src = VALID.replace("builtin/relu", "../templates/t.hbs");
    let mut model = pypto_build::check_source(&spec, &src).unwrap();
    let evil = "k\nfn injected() {}\n#error injected\n.yaml";
    model.kernels[0].origin.path = dir.join(evil);
    let plans: Vec<Plan<'_>> = model
        .kernels
        .iter()
        .map(|k| Plan::new(k, &SymbolScope::Prefix("p".to_owned())))
        .collect();
    let sources = ascendc::render(&plans, &mut |p: &Path| {
        std::fs::read_to_string(p).map_err(|source| pypto_build::Error::Io {
            path: p.to_path_buf(),
            source,
        })
    })
    .unwrap();
    let generated = rust::generate(&plans);
    for text in [&sources[0].text, &generated] {
        assert!(
            !text
                .lines()
                .any(|l| l.starts_with("fn injected") || l.starts_with("#error")),
            "{text}"
        );
    }
    let escaped = "k\\nfn injected() {}\\n#error injected\\n.yaml";
    let cpp = &sources[0].text;
    assert!(
        cpp.starts_with(&format!(
            "// Generated by pypto-build from {}/{escaped}:2:3 (kernel `k`",
            dir.display()
        )),
        "{cpp}"
    );
    assert!(
        cpp.contains(&format!("// spec {}/{escaped} template ", dir.display())),
        "{cpp}"
    );
    assert!(generated.contains(escaped), "{generated}");
}

/// A brought source is `#include`d by its real path, which an `#include`
/// cannot spell with a `"` in it: refused at the spec, not left to the
/// compiler.
#[test]
fn a_source_whose_real_path_holds_a_quote_is_refused() {
    let dir = package("quote\"d");
    std::fs::write(
        dir.join("pkg/kernels/add.cpp"),
        "extern \"C\" __global__ __aicore__ void add(GM_ADDR y) {}\n",
    )
    .unwrap();
    let spec = dir.join("pkg/kernels/k.yaml");
    std::fs::write(
        &spec,
        "kernels:\n  k:\n    source: add.cpp\n    entry: add\n    blocks: 1\n    params:\n      \
         y: { dtype: DT_FP32, shape: [4], output: true }\n",
    )
    .unwrap();
    let errors: Vec<String> = match pypto_build::check_paths(&[&spec]) {
        Ok(_) => Vec::new(),
        Err(d) => d.iter().map(|d| d.to_string()).collect(),
    };
    assert_eq!(
        errors,
        [format!(
            "{}:3:13: error: kernel `k`, `source`: `add.cpp` resolves to `{}`, whose `\"` an \
             `#include` cannot name; rename the file or its directory",
            spec.display(),
            dir.join("pkg/kernels/add.cpp").display()
        )]
    );
}
