//! Compiling rendered kernel sources. The host backend: the system C++
//! compiler, through `cc`, against the emulation headers.

use std::path::{Path, PathBuf};

pub mod cann;

/// The static library the kernels are archived into.
pub const LIBRARY: &str = "pypto_kernels";

/// A source the compiler rejected, with what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub source: PathBuf,
    pub message: String,
}

/// Why compiling failed: cc's own error, and each source the compiler
/// rejected (found by compiling the sources one at a time, syntax only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileFailure {
    pub summary: String,
    pub rejected: Vec<Rejected>,
}

/// Compiles `sources` for the host backend into a static library and (with
/// `cargo_metadata`) tells Cargo to link it.
pub fn compile_host(
    sources: &[PathBuf],
    include_dir: &Path,
    obj_dir: &Path,
    opt_level: u32,
    cargo_metadata: bool,
) -> Result<(), CompileFailure> {
    std::fs::create_dir_all(obj_dir).map_err(|e| CompileFailure {
        summary: format!("{}: {e}", obj_dir.display()),
        rejected: Vec::new(),
    })?;
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .include(include_dir)
        .define("PYPTO_HOST_BACKEND", "1")
        .opt_level(opt_level)
        .out_dir(obj_dir)
        .cargo_metadata(cargo_metadata)
        .warnings(true)
        // Kernel entries take every tensor; templates need not use them all.
        .flag_if_supported("-Wno-unused-parameter")
        .files(sources);
    build.try_compile(LIBRARY).map_err(|e| CompileFailure {
        summary: e.to_string(),
        rejected: rejected_sources(&build, sources),
    })
}

/// cc prints compiler output as warnings only; to put it in the error, each
/// source is checked again on its own, syntax only, capturing stderr.
fn rejected_sources(build: &cc::Build, sources: &[PathBuf]) -> Vec<Rejected> {
    let Ok(tool) = build.try_get_compiler() else {
        return Vec::new();
    };
    sources
        .iter()
        .filter_map(|source| {
            let output = tool
                .to_command()
                .arg("-fsyntax-only")
                .arg(source)
                .output()
                .ok()?;
            if output.status.success() {
                return None;
            }
            let stderr = String::from_utf8_lossy(&output.stderr);
            // The first lines carry the first error; enough to act on.
            let message: Vec<&str> = stderr.lines().take(30).collect();
            Some(Rejected {
                source: source.clone(),
                message: message.join("\n"),
            })
        })
        .collect()
}
