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

/// Deterministic test data in [-4, 4): a linear congruential sequence, so
/// failures reproduce without a random-number crate.
pub fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0
        })
        .collect()
}

/// The float element types the builtins are written for, with the
/// conversions the references need.
pub trait Float: pypto_rt::DType {
    const NAME: &'static str;
    fn from_f32(v: f32) -> Self;
    fn to_f32(self) -> f32;
}

impl Float for f32 {
    const NAME: &'static str = "f32";
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Float for half::f16 {
    const NAME: &'static str = "f16";
    fn from_f32(v: f32) -> Self {
        half::f16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        half::f16::to_f32(self)
    }
}

impl Float for half::bf16 {
    const NAME: &'static str = "bf16";
    fn from_f32(v: f32) -> Self {
        half::bf16::from_f32(v)
    }
    fn to_f32(self) -> f32 {
        half::bf16::to_f32(self)
    }
}

/// `data` rounded to `T`.
pub fn data_as<T: Float>(n: usize, seed: u64) -> Vec<T> {
    data(n, seed).into_iter().map(T::from_f32).collect()
}
