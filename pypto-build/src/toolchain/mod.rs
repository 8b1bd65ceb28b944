//! Compiling rendered kernel sources. The host backend: the system C++
//! compiler, through `cc`, against the emulation headers.

use std::path::{Path, PathBuf};

pub mod cann;

/// The static library the kernels are archived into.
pub const LIBRARY: &str = "pypto_kernels";

/// Compiles `sources` for the host backend into a static library and (with
/// `cargo_metadata`) tells Cargo to link it. Returns the compiler's message
/// on failure.
pub fn compile_host(
    sources: &[PathBuf],
    include_dir: &Path,
    obj_dir: &Path,
    opt_level: u32,
    cargo_metadata: bool,
) -> Result<(), String> {
    std::fs::create_dir_all(obj_dir).map_err(|e| format!("{}: {e}", obj_dir.display()))?;
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
    build.try_compile(LIBRARY).map_err(|e| e.to_string())
}
