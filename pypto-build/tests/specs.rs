//! The spec fixtures under `tests/specs/`: every invalid file fails with
//! exactly the problems its `# expect:` lines list, every valid one passes,
//! and the PyPTO examples pass and resolve as documented.
//!
//! Paths are relative to this package's directory, where Cargo runs the
//! test. `tests/specs/examples/` holds copies of the workspace's
//! `examples/kernels/` (a published crate's tests read only its own files);
//! the workspace's `tests/golden.rs` checks that the copies are current.

use std::path::{Path, PathBuf};

/// Runs the `pypto-build` command line in-process and returns
/// (exit status, stdout, stderr).
fn run_cli(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = pypto_build::unstable::cli::run(&args, &mut out, &mut err);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let files = pypto_build::spec_files(&[Path::new(dir)]).expect("fixture dir readable");
    assert!(!files.is_empty(), "no fixtures in {dir}");
    files
}

/// The `# expect: LINE:COL: MESSAGE` lines of a fixture, read as bytes so
/// that a fixture that is deliberately not UTF-8 still has expectations.
fn expectations(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| l.strip_prefix("# expect: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_invalid_spec_fails_with_its_located_errors() {
    let mut mismatches = Vec::new();
    for file in fixtures("tests/specs/invalid") {
        let expected = expectations(&file);
        assert!(
            !expected.is_empty(),
            "{} has no `# expect:` lines",
            file.display()
        );
        let problems = pypto_build::check_files(&[&file])
            .err()
            .unwrap_or_else(|| panic!("{} passed the checker", file.display()));
        let actual: Vec<String> = problems
            .iter()
            .map(|d| {
                assert_eq!(d.location.path, file);
                format!("{}: {}", d.location.pos, d.message)
            })
            .collect();
        if actual != expected {
            mismatches.push(format!(
                "{}:\n  expected:\n    {}\n  actual:\n    {}",
                file.display(),
                expected.join("\n    "),
                actual.join("\n    ")
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn all_invalid_specs_together_report_every_problem_in_one_run() {
    let mut expected: Vec<String> = Vec::new();
    for file in fixtures("tests/specs/invalid") {
        for e in expectations(&file) {
            expected.push(format!(
                "{}:{}",
                file.display(),
                e.replacen(": ", ": error: ", 1)
            ));
        }
    }
    let (code, out, err) = run_cli(&["check", "tests/specs/invalid"]);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    let located: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("tests/specs/invalid/") && l.contains(": error: "))
        .collect();
    for e in &expected {
        assert!(located.contains(&e.as_str()), "missing: {e}\n{err}");
    }
    // Checked as one set, the fixtures also reuse kernel names across files:
    // each reuse is reported at the second place, naming the first.
    let extra: Vec<&str> = located
        .iter()
        .copied()
        .filter(|l| !expected.iter().any(|e| e == l))
        .collect();
    assert_eq!(extra.len(), 8, "{extra:#?}");
    assert!(extra.contains(
        &"tests/specs/invalid/ellipsis.yaml:6:3: error: kernel `relu_k` is declared twice: \
          here and at tests/specs/invalid/dims.yaml:8:3"
    ));
    assert!(
        extra
            .iter()
            .all(|l| l.contains("is declared twice: here and at tests/specs/invalid/"))
    );
    let total = expected.len() + extra.len();
    assert!(err.ends_with(&format!("error: {total} problems found in the specs\n")));
}

#[test]
fn every_valid_spec_passes() {
    for file in fixtures("tests/specs/valid") {
        if let Err(e) = pypto_build::check_files(&[&file]) {
            panic!("{} should be valid:\n{}", file.display(), e.render());
        }
    }
    let (code, out, err) = run_cli(&["check", "tests/specs/valid", "tests/specs/examples"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "ok: 37 kernels in 9 spec files; 1 chooses among 3 variants\n"
    );
}

/// The examples follow PyPTO's practice: every DYNAMIC dim says what it
/// counts.
#[test]
fn pypto_examples_document_every_dynamic_dim() {
    let (code, out, err) = run_cli(&["check", "--require-dim-docs", "tests/specs/examples"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "ok: 32 kernels in 6 spec files; 1 chooses among 3 variants\n"
    );
}

#[test]
fn pypto_examples_dump_as_documented() {
    let (code, out, err) = run_cli(&["dump", "tests/specs/examples"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let expected = std::fs::read_to_string("tests/specs/examples.dump").unwrap();
    assert_eq!(out, expected);
}

#[test]
fn valid_specs_dump_deterministically() {
    let first = run_cli(&["dump", "tests/specs/valid"]);
    let second = run_cli(&["dump", "tests/specs/valid/anchors.yml", "tests/specs/valid"]);
    assert_eq!(first.0, 0, "{}", first.2);
    // Naming a file twice (directly and through its directory) reads it once,
    // but it is then read first; the per-kernel text is unchanged.
    let mut a: Vec<&str> = first.1.split("\n\n").collect();
    let mut b: Vec<&str> = second.1.split("\n\n").collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
    assert_eq!(first.1, run_cli(&["dump", "tests/specs/valid"]).1);
}
