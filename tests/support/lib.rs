//! Helpers shared by the workspace's integration tests.

use std::path::Path;

/// Runs the `pypto-build` command line in-process and returns
/// (exit status, stdout, stderr).
pub fn run_cli(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = pypto_build::cli::run(&args, &mut out, &mut err);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// The one-line form (`PATH:LINE:COL: error: MESSAGE`) of every problem in the
/// specs under `path`, or an empty list when they are valid.
pub fn problems(path: &Path) -> Vec<String> {
    match pypto_build::check_paths(&[path]) {
        Ok(_) => Vec::new(),
        Err(d) => d.iter().map(ToString::to_string).collect(),
    }
}

/// The workspace root, for locating example specs and test fixtures.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// The kernels of examples/kernels and tests/kernels, built by
// examples/build.rs.
pypto_rt::include_kernels!();
