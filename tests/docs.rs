//! The figures the READMEs state that a test can check: each is compared with
//! what it counts, so the docs cannot drift from the code unnoticed.

use std::path::Path;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The text between `before` and `after` on the first line holding `before`.
fn between<'a>(text: &'a str, before: &str, after: &str) -> &'a str {
    let start = text
        .find(before)
        .unwrap_or_else(|| panic!("`{before}` not found"))
        + before.len();
    let len = text[start..]
        .find(after)
        .unwrap_or_else(|| panic!("`{after}` not found after `{before}`"));
    &text[start..start + len]
}

#[test]
fn the_readme_states_the_emulations_api_coverage_as_coverage_md_counts_it() {
    let coverage = read("templates/include/pypto_emu/COVERAGE.md");
    let covered = between(&coverage, "| **all** | **", "**");
    let total = between(&coverage, &format!("| **all** | **{covered}** | **"), "**");
    let readme = read("README.md");
    assert_eq!(
        between(&readme, "the A2/A3 basic API (", " names;"),
        format!("{covered} of {total}"),
        "README.md's coverage figure differs from COVERAGE.md's totals"
    );
    let emu = read("templates/include/pypto_emu/README.md");
    assert_eq!(
        between(&emu, "which of the ", " basic-API"),
        total,
        "the emulation README's count of API names differs from COVERAGE.md's"
    );
}

#[test]
fn the_readme_states_the_clean_build_time_benchmarks_md_measured() {
    let benchmarks = read("BENCHMARKS.md");
    let measured = between(
        &benchmarks,
        "| clean build of the crate (baseline) | ",
        " |",
    );
    let readme = read("README.md");
    assert_eq!(
        format!(
            "{} s",
            between(&readme, "a 50-kernel clean build is ", " s on 2 cores")
        ),
        measured,
        "README.md's clean-build figure differs from BENCHMARKS.md's"
    );
}

#[test]
fn the_readmes_verbose_build_line_counts_the_kernels_this_package_builds() {
    // The same specs as this package's build script, in the same order (the
    // broken builtins' spec is the one it writes).
    let generated = pypto_build::Builder::new()
        .spec_dir(Path::new(ROOT).join("examples/kernels"))
        .spec_dir(Path::new(ROOT).join("tests/kernels"))
        .spec_dir(concat!(env!("OUT_DIR"), "/mutants"))
        .generate()
        .expect("the tests' specs generate");
    let readme = read("README.md");
    let line = between(
        &readme,
        "warning: pypto-tests@0.1.0: pypto-build: ",
        " ms\n",
    );
    let number = |after: &str| -> usize {
        let head = line.split(after).next().unwrap();
        head.rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|e| panic!("`{line}`: {e}"))
    };
    assert_eq!(
        number(" kernels"),
        generated.model.kernels.len(),
        "`{line}`"
    );
    assert_eq!(
        number(" sources rendered"),
        generated.sources.len(),
        "`{line}`"
    );
    assert_eq!(
        number(" objects compiled") + number(" reused"),
        generated.sources.len(),
        "`{line}`: compiled and reused objects are the sources"
    );
}
