//! The build-script entry point: specs → checked model → generated Rust and
//! Ascend C → compiled objects linked into the crate.

use std::path::{Path, PathBuf};

use crate::codegen::ascendc::{self, Source};
use crate::codegen::{self, Plan};
use crate::error::Error;
use crate::library;
use crate::model::Model;
use crate::toolchain::{CompileReport, cann};

/// Configures and runs kernel generation from a build script.
///
/// ```no_run
/// // build.rs
/// fn main() -> Result<(), pypto_build::Error> {
///     pypto_build::Builder::new().spec_dir("kernels").build()?;
///     Ok(())
/// }
/// ```
///
/// Then, in the crate, `pypto_rt::include_kernels!();` declares
/// `mod kernels` with one typed function per kernel.
///
/// Set `PYPTO_BUILD_VERBOSE=1` to have the build script report, as a
/// `cargo:warning`, how many kernels it rendered and how many objects it
/// compiled or reused.
#[derive(Debug, Clone)]
pub struct Builder {
    specs: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    symbol_prefix: Option<String>,
    opt_level: u32,
    cargo_metadata: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

/// What [`Builder::generate`] produces, before anything is written.
#[derive(Debug, Clone)]
pub struct Generated {
    pub model: Model,
    /// The Rust wrappers, one file for `include!`.
    pub rust: String,
    /// One Ascend C source per specialisation of each kernel.
    pub sources: Vec<Source>,
    /// Every file read: spec files and user templates.
    pub inputs: Vec<PathBuf>,
}

/// What [`Builder::build`] did.
#[derive(Debug, Clone)]
pub struct Built {
    pub generated: Generated,
    /// Where the generated Rust file is.
    pub rust_file: PathBuf,
    /// Where the rendered sources are kept.
    pub source_dir: PathBuf,
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            specs: Vec::new(),
            out_dir: None,
            symbol_prefix: None,
            opt_level: 2,
            cargo_metadata: true,
        }
    }

    /// A spec file, or a directory searched for `*.yaml`/`*.yml`.
    pub fn spec(mut self, path: impl AsRef<Path>) -> Self {
        self.specs.push(path.as_ref().to_path_buf());
        self
    }

    /// The same as [`Builder::spec`], for directories.
    pub fn spec_dir(self, dir: impl AsRef<Path>) -> Self {
        self.spec(dir)
    }

    /// Where to write generated files; defaults to Cargo's `OUT_DIR`.
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Prefix of the kernels' C symbols, keeping crates apart when several
    /// link into one binary; defaults to the package name.
    pub fn symbol_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.symbol_prefix = Some(prefix.into());
        self
    }

    /// Optimisation level of the host-backend kernel objects (default 2,
    /// also in debug builds: the emulation is slow unoptimised).
    pub fn opt_level(mut self, level: u32) -> Self {
        self.opt_level = level;
        self
    }

    /// Whether to print `cargo:` directives (default true; off for tools).
    pub fn cargo_metadata(mut self, on: bool) -> Self {
        self.cargo_metadata = on;
        self
    }

    fn prefix(&self) -> String {
        self.symbol_prefix
            .clone()
            .or_else(|| std::env::var("CARGO_PKG_NAME").ok())
            .unwrap_or_else(|| "crate".to_owned())
    }

    /// Checks the specs and renders the Rust and Ascend C code, writing
    /// nothing.
    pub fn generate(&self) -> Result<Generated, Error> {
        let files = crate::spec_files(&self.specs)?;
        let model = crate::check_files(&files)?;
        let prefix = self.prefix();
        let plans: Vec<Plan<'_>> = model
            .kernels
            .iter()
            .map(|k| Plan::new(k, &prefix))
            .collect();
        let mut inputs = files.clone();
        let mut read = |path: &Path| {
            inputs.push(path.to_path_buf());
            std::fs::read_to_string(path).map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })
        };
        let sources = ascendc::render(&plans, &mut read)?;
        let rust = codegen::rust::generate(&plans);
        inputs.sort();
        inputs.dedup();
        drop(plans);
        Ok(Generated {
            model,
            rust,
            sources,
            inputs,
        })
    }

    /// Generates, writes and compiles the kernels, and tells Cargo to link
    /// them. Files whose content did not change are not rewritten.
    pub fn build(&self) -> Result<Built, Error> {
        let started = std::time::Instant::now();
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| {
                    Error::Config(
                        "OUT_DIR is not set: call Builder::build from a build script, or set \
                     Builder::out_dir"
                            .to_owned(),
                    )
                })?,
        };
        if self.cargo_metadata {
            // The spec paths themselves, so that new spec files are noticed.
            for spec in &self.specs {
                println!("cargo:rerun-if-changed={}", spec.display());
            }
            for var in cann::ENV_VARS.iter().chain(&["PYPTO_BUILD_VERBOSE"]) {
                println!("cargo:rerun-if-env-changed={var}");
            }
        }
        let defaults: Vec<&Path> = cann::DEFAULT_HOMES.iter().map(Path::new).collect();
        match cann::detect(&|var| std::env::var(var).ok(), &defaults) {
            Ok(cann::Backend::Host) => {}
            Ok(cann::Backend::Npu(toolkit)) => {
                if self.cargo_metadata {
                    println!(
                        "cargo:warning=pypto-build: found CANN {} at {} ({}); building for the NPU is \
                         not implemented yet, so kernels are built for the host backend only",
                        toolkit.version,
                        toolkit.home.display(),
                        toolkit.found_by
                    );
                }
            }
            Err(e) => return Err(Error::Config(e.to_string())),
        }
        let generated = self.generate();
        if self.cargo_metadata
            && let Ok(g) = &generated
        {
            for input in &g.inputs {
                println!("cargo:rerun-if-changed={}", input.display());
            }
        }
        let generated = generated?;

        let root = out_dir.join("pypto");
        let include_dir = root.join("include");
        for (name, text) in library::EMULATION_HEADERS {
            write_if_changed(&include_dir.join(name), text)?;
        }
        let source_dir = root.join("src");
        let mut paths = Vec::new();
        for source in &generated.sources {
            let path = source_dir.join(&source.file_name);
            write_if_changed(&path, &source.text)?;
            paths.push(path);
        }
        remove_stale_sources(&source_dir, &paths)?;
        let rust_file = out_dir.join("pypto_kernels.rs");
        write_if_changed(&rust_file, &generated.rust)?;

        let report = if paths.is_empty() {
            CompileReport::default()
        } else {
            // The headers every source includes are part of each object's identity.
            let salt: String = library::EMULATION_HEADERS
                .iter()
                .map(|(_, text)| *text)
                .collect();
            crate::toolchain::compile_host(
                &paths,
                &include_dir,
                &root.join("obj"),
                self.opt_level,
                self.cargo_metadata,
                &salt,
            )
            .map_err(|failure| Error::Compile {
                message: describe_failure(&failure, &generated),
                dir: source_dir.clone(),
            })?
        };
        if self.cargo_metadata && std::env::var_os("PYPTO_BUILD_VERBOSE").is_some_and(|v| v != "0")
        {
            println!(
                "cargo:warning=pypto-build: {} kernels, {} sources rendered, {} objects compiled, {} reused, {} ms",
                generated.model.kernels.len(),
                generated.sources.len(),
                report.compiled,
                report.reused,
                started.elapsed().as_millis()
            );
        }
        Ok(Built {
            generated,
            rust_file,
            source_dir,
        })
    }
}

/// Writes `text` to `path` unless it already holds exactly that, so Cargo
/// and the C++ compiler see unchanged files as unchanged.
pub fn write_if_changed(path: &Path, text: &str) -> Result<(), Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    if std::fs::read(path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, text).map_err(io)
}

/// Deletes rendered sources of kernels that no longer exist.
fn remove_stale_sources(dir: &Path, keep: &[PathBuf]) -> Result<(), Error> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "cpp") && !keep.contains(&path) {
            std::fs::remove_file(&path).map_err(|source| Error::Io { path, source })?;
        }
    }
    Ok(())
}

/// The compiler's complaints, each with the kernel, spec and template the
/// rejected source was rendered from.
fn describe_failure(failure: &crate::toolchain::CompileFailure, generated: &Generated) -> String {
    let mut out = failure.summary.clone();
    for rejected in &failure.rejected {
        let name = rejected
            .source
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let origin = generated
            .sources
            .iter()
            .find(|s| s.file_name == name)
            .and_then(|s| generated.model.kernels.iter().find(|k| k.name == s.kernel))
            .map(|k| {
                format!(
                    "kernel `{}` from {} (template {})",
                    k.name, k.origin, k.template
                )
            })
            .unwrap_or_else(|| "an unknown kernel".to_owned());
        out.push_str(&format!(
            "\n\n{} rendered from {origin}:\n{}",
            rejected.source.display(),
            rejected.message
        ));
    }
    out
}
