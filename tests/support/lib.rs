//! Helpers shared by the workspace's integration tests.

use std::path::Path;

pub mod bench;
pub mod child;
pub mod fake_cann;
pub mod mask_model;
pub mod mutants;

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

#[path = "../../pypto-build/tests/support/seed.rs"]
mod seed;
/// A ChaCha key whose whole stream follows from a seed.
pub use seed::key as test_key;
/// A property test's seed: `PYPTO_MUTATE_SEED`, else a fresh one per run.
pub use seed::seed as test_seed;

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
    /// Bits of the significand after the leading one (fp32 23, fp16 10,
    /// bf16 7).
    const MANTISSA_BITS: i32;
    /// The exponent of the smallest normal value (fp32 and bf16 -126, fp16
    /// -14).
    const MIN_EXP: i32;
    fn from_f32(v: f32) -> Self;
    fn to_f32(self) -> f32;
    /// The value's bits, for comparisons that tell `-0.0` from `0.0` and
    /// compare NaNs.
    fn bits(self) -> u32;
}

/// add_bias's reference: out[r][c] = x[r][c] + bias[c], added in f32 and
/// rounded to `T` once, as the kernel documents (every architecture's
/// build).
pub fn add_bias_reference<T: Float>(x: &[T], bias: &[T]) -> Vec<T> {
    if bias.is_empty() {
        return Vec::new();
    }
    x.chunks(bias.len())
        .flat_map(|row| {
            row.iter()
                .zip(bias)
                .map(|(a, b)| T::from_f32(a.to_f32() + b.to_f32()))
        })
        .collect()
}

impl Float for f32 {
    const NAME: &'static str = "f32";
    const MANTISSA_BITS: i32 = 23;
    const MIN_EXP: i32 = -126;
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
    const MANTISSA_BITS: i32 = 10;
    const MIN_EXP: i32 = -14;
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
    const MANTISSA_BITS: i32 = 7;
    const MIN_EXP: i32 = -126;
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
pub fn same_bits_at_every_block_count<T: Float>(what: &str, run: impl FnMut() -> Vec<T>) -> Vec<T> {
    let every: Vec<u32> = (1..=pypto_rt::MAX_BLOCKS).collect();
    same_bits_at_block_counts(what, &every, run)
}

/// The block counts that split `units` work units (rows; (batch, head)
/// pairs) in distinct ways: 1 to `units + 1`, and
/// [`pypto_rt::MAX_BLOCKS`]. The builtins give block `b` of `n` the units
/// from `b·(units / n) + min(b, units % n)`, `units / n` of them plus one
/// for the first `units % n` blocks; from `n = units` on, block `b` has unit
/// `b` alone and the blocks past `units` none, so larger counts only add
/// idle blocks (`units + 1` and the maximum stand for them).
pub fn distinct_splits(units: usize) -> Vec<u32> {
    let max = pypto_rt::MAX_BLOCKS;
    let last = u32::try_from(units + 1).unwrap_or(max).min(max);
    let mut counts: Vec<u32> = (1..=last).collect();
    if last < max {
        counts.push(max);
    }
    counts
}

/// [`same_bits_at_every_block_count`] at the block counts `counts` only,
/// for calls too slow to make 48 times (see [`distinct_splits`]).
pub fn same_bits_at_block_counts<T: Float>(
    what: &str,
    counts: &[u32],
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
    for &n in counts {
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

/// The unit roundoff of fp32, 2⁻²⁴: one fp32 operation on exact operands
/// is within `U·|result|` of the exact result (the kernels compute in fp32
/// whatever their dtype).
pub const U: f64 = 1.0 / 16_777_216.0;

/// Results smaller than this, 2⁻¹²⁰ (about 7.5e-37), may come back as
/// zero: fp32 intermediates lose them. exp(z) is inf past z = 88.72, so
/// `x / (1 + exp(-x))` is -0 below x = -88.72, where the true value is at
/// most 88.72·e^-88.72, about 2.5e-37.
pub const FLUSHED: f64 = 1.0 / 1_329_227_995_784_915_872_903_807_060_280_344_576.0;

/// The spacing of `T`'s values at `v`: one unit in the last place of a `T`
/// of magnitude |v| (the subnormal spacing below the normal range).
pub fn ulp<T: Float>(v: f64) -> f64 {
    let exponent = if v == 0.0 || !v.is_finite() {
        T::MIN_EXP
    } else {
        // The binary exponent of |v|: exact, unlike log2.
        let biased = ((v.abs().to_bits() >> 52) & 0x7ff) as i32;
        (biased - 1023).max(T::MIN_EXP)
    };
    2f64.powi(exponent - T::MANTISSA_BITS)
}

/// Compares a kernel's output with an f64 reference element by element,
/// each with a tolerance of its own: element `i` passes when
/// `|got - want| <= err(i) + ulp_T(want) + FLUSHED`, where `err(i)` bounds
/// the error the kernel's fp32 arithmetic may make at that element and
/// `ulp_T(want)` is the final rounding to `T` (none for fp32, where `err`
/// covers the last operation). The message names the first element out of
/// tolerance, its error in units of `T`'s last place and the allowance.
pub fn within<T: Float>(
    got: &[T],
    want: &[f64],
    err: impl Fn(usize) -> f64,
    what: &str,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    let narrow = T::MANTISSA_BITS < 23;
    for (i, (g, &w)) in got.iter().zip(want).enumerate() {
        let g = f64::from(g.to_f32());
        if g == w || (g.is_nan() && w.is_nan()) {
            continue;
        }
        let unit = ulp::<T>(w);
        let allowed = err(i) + if narrow { unit } else { 0.0 } + FLUSHED;
        let off = (g - w).abs();
        // A NaN where a number was expected fails.
        if off.is_nan() || off > allowed {
            return Err(format!(
                "{what}: element {i} is {g:e}, expected {w:e}: off by {:.1} ulps of {}, {:.1} \
                 allowed",
                off / unit,
                T::NAME,
                allowed / unit
            ));
        }
    }
    Ok(())
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
    let mut command = scratch_command(dir, cache, args);
    outcome(command.envs(env).output().expect("cargo runs"))
}

/// The command [`scratch_cargo`] runs, before its `env`, for a caller
/// that needs more of it.
pub fn scratch_command(dir: &Path, cache: Option<&Path>, args: &[&str]) -> std::process::Command {
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
    command
}

/// The message of a kernel error; any other result fails the test.
pub fn kernel_message(err: pypto_rt::Error) -> String {
    match err {
        pypto_rt::Error::Kernel { message, .. } => message,
        other => panic!("expected a kernel error, got {other:?}"),
    }
}
