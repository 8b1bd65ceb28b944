//! Helpers shared by the workspace's integration tests.

use std::path::Path;

pub mod bench;
pub mod child;
pub mod fake_cann;
pub mod mask_model;

#[path = "../../examples/common/reference.rs"]
mod reference;
pub use reference::{attention_reference, data, max_abs_diff};

/// Whether host launches make their inputs read-only, so that a kernel's
/// raw write to one faults: `PYPTO_READONLY_INPUTS`, or on in debug builds
/// (pypto-rt's own default). Tests that need them call
/// [`child::ran_with_read_only_inputs`], which turns them on in a child
/// process when they are off here.
pub fn read_only_inputs() -> bool {
    std::env::var(pypto_rt::READONLY_INPUTS_VAR).map_or(cfg!(debug_assertions), |v| v == "1")
}

/// The workspace root, for locating example specs and test fixtures.
pub fn workspace_root() -> &'static Path {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR"));
    tests.parent().unwrap_or(tests)
}

// The kernels of examples/kernels and tests/kernels, built by
// tests/build.rs.
pypto_rt::include_kernels!();

/// The float element types the builtins are written for, with the
/// conversions the references need.
pub trait Float: pypto_rt::DType {
    const NAME: &'static str;
    fn from_f32(v: f32) -> Self;
    fn to_f32(self) -> f32;
    /// The value's bits, for comparisons that tell `-0.0` from `0.0` and
    /// compare NaNs.
    fn bits(self) -> u32;
}

impl Float for f32 {
    const NAME: &'static str = "f32";
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn bits(self) -> u32 {
        self.to_bits()
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
    fn bits(self) -> u32 {
        u32::from(self.to_bits())
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
    fn bits(self) -> u32 {
        u32::from(self.to_bits())
    }
}

/// Checks that a kernel call gives the same bits at every block count.
///
/// `run` makes one call and returns its output (it should fill the output
/// with NaN first, so that elements no block wrote show). It runs once at
/// the call's own block count, which must be more than one, then once at
/// each count from 1 to [`pypto_rt::MAX_BLOCKS`] forced with
/// [`pypto_rt::with_host_blocks`]; every output must match the first bit
/// for bit. Returns the first output, for a check against a reference.
pub fn same_bits_at_every_block_count<T: Float>(
    what: &str,
    mut run: impl FnMut() -> Vec<T>,
) -> Vec<T> {
    let natural = run();
    let blocks = pypto_rt::last_launch().expect("a launch").blocks;
    assert!(
        blocks > 1,
        "{what}: the shape should need more than one block; it has {blocks}"
    );
    let bits = |v: &[T]| -> Vec<u32> { v.iter().map(|x| x.bits()).collect() };
    let want = bits(&natural);
    for n in 1..=pypto_rt::MAX_BLOCKS {
        let got = bits(&pypto_rt::with_host_blocks(n, &mut run).unwrap());
        assert_eq!(pypto_rt::last_launch().unwrap().blocks, n, "{what}");
        assert_eq!(got.len(), want.len(), "{what}: {n} blocks");
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "{what}: with {n} blocks element {i} has bits {:#x}, with the natural {blocks} {:#x}",
                got[i], want[i]
            );
        }
    }
    natural
}

/// `data` rounded to `T`.
pub fn data_as<T: Float>(n: usize, seed: u64) -> Vec<T> {
    data(n, seed).into_iter().map(T::from_f32).collect()
}

/// An absolute and a relative tolerance: `|got - want| <= abs + rel·|want|`.
#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

/// Checks `got` against `want` element by element; the error names the
/// first element out of tolerance.
pub fn assert_close(got: &[f32], want: &[f64], tol: Tolerance, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = f64::from(*g);
        let ok = (g - w).abs() <= tol.abs + tol.rel * w.abs() || (g.is_nan() && w.is_nan());
        assert!(
            ok,
            "{what}: element {i} is {g}, expected {w} (tolerance {tol:?})"
        );
    }
}

/// Writes the skeleton of a user crate at `dir` (removing what was there),
/// set up the way users set theirs up: path dependencies on `pypto-rt` and,
/// as a build-dependency, `pypto-build`; a `build.rs` building the specs in
/// `kernels/`; and the workspace's lock file, so that builds need no network.
/// `manifest_tail` is appended to `Cargo.toml`.
pub fn user_crate(dir: &Path, name: &str, manifest_tail: &str) -> std::io::Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let root = workspace_root().display();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
             [dependencies]\npypto-rt = {{ path = \"{root}/pypto-rt\" }}\n\n\
             [build-dependencies]\npypto-build = {{ path = \"{root}/pypto-build\" }}\n\n\
             {manifest_tail}[workspace]\n"
        ),
    )?;
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.join("Cargo.lock"))?;
    std::fs::write(
        dir.join("build.rs"),
        "fn main() -> Result<(), pypto_build::Error> {\n    \
         pypto_build::Builder::new().spec_dir(\"kernels\").build()?;\n    Ok(())\n}\n",
    )
}

/// Whether a finished command succeeded, and its stdout and stderr as text.
pub fn outcome(out: std::process::Output) -> (bool, String, String) {
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `cargo <subcommand> --offline <rest>` in the scratch crate `dir`,
/// building into the workspace's shared `target/scratch` with the kernel
/// object cache `cache` (pypto-build's default when `None`). The caller's
/// settings that would change the build (`RUSTFLAGS`, `RUSTDOCFLAGS`,
/// `PYPTO_BUILD_VERBOSE`, `PYPTO_BACKEND`, `ASCEND_TOOLKIT_HOME`) are
/// removed, then `env` is set. Returns [`outcome`].
pub fn scratch_cargo<K, V>(
    dir: &Path,
    cache: Option<&Path>,
    args: &[&str],
    env: impl IntoIterator<Item = (K, V)>,
) -> (bool, String, String)
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    // `--offline` right after the subcommand, before any `--`.
    let (subcommand, rest) = args.split_first().expect("a cargo subcommand");
    let mut command =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .arg(subcommand)
        .arg("--offline")
        .args(rest)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", workspace_root().join("target/scratch"));
    if let Some(cache) = cache {
        command.env("PYPTO_CACHE_DIR", cache);
    }
    for name in [
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "PYPTO_BUILD_VERBOSE",
        "PYPTO_BACKEND",
        "ASCEND_TOOLKIT_HOME",
    ] {
        command.env_remove(name);
    }
    outcome(command.envs(env).output().expect("cargo runs"))
}

/// The message of a kernel error; any other result fails the test.
pub fn kernel_message(err: pypto_rt::Error) -> String {
    match err {
        pypto_rt::Error::Kernel { message, .. } => message,
        other => panic!("expected a kernel error, got {other:?}"),
    }
}
