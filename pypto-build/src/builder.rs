//! The build-script entry point: specs → checked model → generated Rust and
//! Ascend C → compiled objects linked into the crate.

use std::path::{Path, PathBuf};

use crate::codegen::ascendc::{self, Source};
use crate::codegen::{self, Plan, SymbolScope};
use crate::error::Error;
use crate::library;
use crate::model::Model;
use crate::toolchain::{self, CompileReport, cann};

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
/// A build that compiles kernels says so in one `cargo:warning` line (how
/// many, how long); set `PYPTO_BUILD_VERBOSE=1` to have every build report
/// how many kernels it rendered and how many objects it compiled or reused.
///
/// With `DOCS_RS` set (as on docs.rs), the wrappers are generated, so the
/// crate's documentation builds, but no kernel is compiled or linked.
#[derive(Debug, Clone)]
pub struct Builder {
    specs: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    symbol_prefix: Option<String>,
    opt_level: u32,
    debug_info: bool,
    precompiled_header: bool,
    cache_dir: Option<PathBuf>,
    cache_key_chars: Option<usize>,
    cargo_metadata: bool,
    require_dim_docs: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

/// What [`Builder::generate`] produces, before anything is written.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Generated {
    /// The checked kernels the code was generated from.
    pub model: Model,
    /// The Rust wrappers, one file for `include!`.
    pub rust: String,
    /// One Ascend C source per specialisation of each kernel.
    pub sources: Vec<Source>,
    /// With a CANN toolkit: each source again per NPU architecture its
    /// kernel targets, with its symbols renamed for that architecture.
    pub npu_sources: Vec<NpuSource>,
    /// Every file read: spec files and user templates.
    pub inputs: Vec<PathBuf>,
}

/// A rendered source as compiled for one NPU architecture.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NpuSource {
    /// The architecture it is compiled for.
    pub arch: cann::Arch,
    /// Whether the kernel runs on the cube core.
    pub cube: bool,
    /// The source, its kernel's symbols renamed for `arch`.
    pub source: Source,
}

/// What [`Builder::build`] did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Built {
    /// What was generated: the model, the Rust wrappers, the sources.
    pub generated: Generated,
    /// Where the generated Rust file is.
    pub rust_file: PathBuf,
    /// Where the rendered sources are kept.
    pub source_dir: PathBuf,
}

impl Builder {
    /// A builder with no specs, writing into the build script's `OUT_DIR`.
    pub fn new() -> Self {
        Builder {
            specs: Vec::new(),
            out_dir: None,
            symbol_prefix: None,
            opt_level: 2,
            debug_info: false,
            precompiled_header: true,
            cache_dir: None,
            cache_key_chars: None,
            cargo_metadata: true,
            require_dim_docs: false,
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

    /// What the kernels' C symbols are named after, in place of the package
    /// name and version (the default, which keeps apart crates, and versions
    /// of one crate, linked into one binary). Distinct prefixes give distinct
    /// symbols, and never those of a package; a crate that sets one must
    /// change it between versions that may link together.
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

    /// Whether host-backend kernel objects carry debug information (default
    /// false, in every profile: it costs a third of each compile, and
    /// leaving it to the profile would compile every kernel again for
    /// `--release`). Turn it on to step through a kernel in a debugger.
    pub fn debug_info(mut self, on: bool) -> Self {
        self.debug_info = on;
        self
    }

    /// Whether to precompile the emulation headers once per build for the
    /// host-backend kernels (default true; GCC only): a kernel then compiles
    /// in about half the time. The objects are the same either way.
    pub fn precompiled_header(mut self, on: bool) -> Self {
        self.precompiled_header = on;
        self
    }

    /// Where compiled kernel objects are cached, shared by every build that
    /// uses the directory. Defaults to `PYPTO_CACHE_DIR` when set, else
    /// `pypto-cache` at the root of Cargo's target directory (shared by
    /// debug and release builds, `--target` builds and trybuild's copy of
    /// the crate; `cargo clean` removes it). Entries are named by SHA-256
    /// digests of everything that goes into the object (the source, every
    /// header the compiler read, the compiler, its version and its flags),
    /// which each entry records beside it: an entry is reused only when its
    /// record matches and its object is the one recorded. Entries are
    /// written atomically; those unused for 30 days are deleted. A cache
    /// that cannot be written is still read, and the build compiles what it
    /// lacks into `OUT_DIR`, with one warning. Anyone who can write the
    /// directory can make a build link an object of theirs: share it only
    /// with those you would take code from.
    pub fn cache_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cache_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Names cache entries with only `chars` hex digits of each digest, so
    /// that different sources share an entry name: for tests of the cache.
    #[doc(hidden)]
    pub fn cache_key_chars(mut self, chars: usize) -> Self {
        self.cache_key_chars = Some(chars);
        self
    }

    /// The cache directory, and what chose it (for messages).
    fn resolved_cache_dir(&self, out_dir: &Path) -> (PathBuf, &'static str) {
        if let Some(dir) = &self.cache_dir {
            return (dir.clone(), "Builder::cache_dir");
        }
        if let Some(dir) = std::env::var_os("PYPTO_CACHE_DIR").filter(|d| !d.is_empty()) {
            return (PathBuf::from(dir), "PYPTO_CACHE_DIR");
        }
        let target = std::env::var("TARGET").ok();
        let dir = toolchain::default_cache_dir(out_dir, target.as_deref())
            .unwrap_or_else(|| out_dir.join("pypto").join("cache"));
        (dir, "the default kernel object cache")
    }

    /// Opens the kernel object cache; one that cannot be written is used
    /// read-only, and said so once (a `cargo:warning`, or on stderr without
    /// Cargo metadata).
    fn open_cache(&self, out_dir: &Path) -> Result<toolchain::ObjectCache, Error> {
        let (dir, named_by) = self.resolved_cache_dir(out_dir);
        let shown = dir.display();
        let cache = match toolchain::ObjectCache::open(&dir) {
            Ok(cache) => cache,
            Err(toolchain::OpenError::NotADirectory) => {
                return Err(Error::Config(format!(
                    "{named_by} is `{shown}`, which is not a directory; the kernel object \
                     cache must be a directory (it is created if missing)"
                )));
            }
            Err(toolchain::OpenError::CannotCreate(e)) => {
                return Err(Error::Config(format!(
                    "{named_by} is `{shown}`, which is not a directory and cannot be created: {e}"
                )));
            }
        };
        if let Some(e) = cache.unwritable() {
            let warning = format!(
                "pypto-build: the kernel object cache `{shown}` ({named_by}) is not writable \
                 ({e}); kernels it does not hold are compiled into OUT_DIR and not cached"
            );
            if self.cargo_metadata {
                println!("cargo:warning={warning}");
            } else {
                eprintln!("warning: {warning}");
            }
        }
        Ok(match self.cache_key_chars {
            Some(chars) => cache.with_key_chars(chars),
            None => cache,
        })
    }

    /// Whether to print `cargo:` directives (default true; off for tools).
    pub fn cargo_metadata(mut self, on: bool) -> Self {
        self.cargo_metadata = on;
        self
    }

    /// Whether every DYNAMIC dim must say what it counts (default false):
    /// with `true`, a DYNAMIC dim none of whose axes has a doc (its named
    /// dim's `doc:` or the param's `axis_docs:`) is an error at the spec,
    /// so that a team can hold to PyPTO's practice of documenting which
    /// dims are dynamic.
    pub fn require_dim_docs(mut self, on: bool) -> Self {
        self.require_dim_docs = on;
        self
    }

    fn scope(&self) -> SymbolScope {
        if let Some(prefix) = &self.symbol_prefix {
            return SymbolScope::Prefix(prefix.clone());
        }
        match std::env::var("CARGO_PKG_NAME") {
            Ok(name) => SymbolScope::Package {
                name,
                version: std::env::var("CARGO_PKG_VERSION").unwrap_or_default(),
            },
            Err(_) => SymbolScope::Prefix("crate".to_owned()),
        }
    }

    /// Checks the specs and renders the Rust and Ascend C code for the host
    /// backend, writing nothing.
    pub fn generate(&self) -> Result<Generated, Error> {
        self.generate_for(false)
    }

    /// As [`Builder::generate`]; with `npu`, also the per-architecture NPU
    /// sources and the Rust that dispatches to them.
    pub fn generate_for(&self, npu: bool) -> Result<Generated, Error> {
        let files = crate::spec_files(&self.specs)?;
        let model = crate::check_files(&files)?;
        if self.require_dim_docs {
            crate::model::require_dim_docs(&model)?;
        }
        for warning in model.warnings() {
            if self.cargo_metadata {
                println!("cargo:warning={warning}");
            } else {
                eprintln!("warning: {warning}");
            }
        }
        let scope = self.scope();
        let plans: Vec<Plan<'_>> = model
            .kernels
            .iter()
            .map(|k| {
                let plan = Plan::new(k, &scope);
                if npu { plan.with_npu() } else { plan }
            })
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
        // Kernel names are unique in a model; a map keeps many kernels linear.
        let plan_of: std::collections::HashMap<&str, &Plan<'_>> =
            plans.iter().map(|p| (p.kernel.name.as_str(), p)).collect();
        let mut npu_sources = Vec::new();
        for source in &sources {
            let Some(&plan) = plan_of.get(source.kernel.as_str()) else {
                continue;
            };
            for &arch in &plan.npu_arches {
                npu_sources.push(NpuSource {
                    arch,
                    cube: plan.uses_cube(),
                    source: Source {
                        text: ascendc::for_arch(plan, source.specialisation, arch, &source.text),
                        ..source.clone()
                    },
                });
            }
        }
        let rust = codegen::rust::generate(&plans);
        inputs.sort();
        inputs.dedup();
        drop(plans);
        Ok(Generated {
            model,
            rust,
            sources,
            npu_sources,
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
                if let Some(line) = rerun_if_changed(spec) {
                    println!("{line}");
                }
            }
            for var in
                cann::ENV_VARS
                    .iter()
                    .chain(&["PYPTO_BUILD_VERBOSE", "PYPTO_CACHE_DIR", "DOCS_RS"])
            {
                println!("cargo:rerun-if-env-changed={var}");
            }
        }
        let defaults: Vec<&Path> = cann::DEFAULT_HOMES.iter().map(Path::new).collect();
        let toolkit = match cann::detect(&|var| std::env::var(var).ok(), &defaults) {
            Ok(cann::Backend::Host) => None,
            Ok(cann::Backend::Npu(toolkit)) => Some(toolkit),
            Err(e) => return Err(Error::Config(e.to_string())),
        };
        let generated = self.generate_for(toolkit.is_some());
        if self.cargo_metadata
            && let Ok(g) = &generated
        {
            for input in &g.inputs {
                if let Some(line) = rerun_if_changed(input) {
                    println!("{line}");
                }
            }
        }
        let generated = generated?;
        // Said once, in the build's one summary line.
        let npu_note = toolkit.as_ref().map(|toolkit| {
            let mut arches: Vec<cann::Arch> =
                generated.npu_sources.iter().map(|s| s.arch).collect();
            arches.sort();
            arches.dedup();
            let arches: Vec<String> = arches.iter().map(ToString::to_string).collect();
            format!(
                "building kernels for the NPU with CANN {} at {} (found by {}), \
                 compiler {}, architectures: {}; the host backend is built in too",
                toolkit.version,
                toolkit.home.display(),
                toolkit.found_by,
                toolkit.bisheng.display(),
                if arches.is_empty() {
                    "none".to_owned()
                } else {
                    arches.join(", ")
                },
            )
        });

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
        let runtime_source = source_dir.join(toolchain::RUNTIME_SOURCE.0);
        write_if_changed(&runtime_source, toolchain::RUNTIME_SOURCE.1)?;
        // Kernels emulated as another architecture's row have that row's
        // namespace (pypto_emu/arch.h), so its own runtime too.
        let mut runtimes = vec![runtime_source];
        let mut rows: Vec<&str> = generated
            .model
            .kernels
            .iter()
            .filter_map(ascendc::host_row_define)
            .collect();
        rows.sort_unstable();
        rows.dedup();
        for define in rows {
            let path = source_dir.join(format!("pypto_emu_runtime_{define}.cpp"));
            let text = format!(
                "// The runtime of kernels built with {define}.\n#define {define} 1\n{}",
                toolchain::RUNTIME_SOURCE.1
            );
            write_if_changed(&path, &text)?;
            runtimes.push(path);
        }
        let mut keep = paths.clone();
        keep.extend(runtimes.iter().cloned());
        remove_stale_sources(&source_dir, &keep)?;
        // NPU sources, grouped by compiler configuration.
        let mut npu_groups: Vec<((cann::Arch, bool), Vec<PathBuf>)> = Vec::new();
        for npu in &generated.npu_sources {
            let path = source_dir
                .join(format!("npu-{}", npu.arch.suffix()))
                .join(&npu.source.file_name);
            write_if_changed(&path, &npu.source.text)?;
            let key = (npu.arch, npu.cube);
            match npu_groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, group)) => group.push(path),
                None => npu_groups.push((key, vec![path])),
            }
        }
        for arch in cann::Arch::ALL {
            let dir = source_dir.join(format!("npu-{}", arch.suffix()));
            let keep: Vec<PathBuf> = npu_groups
                .iter()
                .filter(|((a, _), _)| *a == arch)
                .flat_map(|(_, paths)| paths.iter().cloned())
                .collect();
            remove_stale_sources(&dir, &keep)?;
        }
        // Where the NPU shared libraries go, next to the Rust that embeds
        // them (`include_bytes!` paths are relative to it).
        let npu_dir = root.join("npu");
        let mut npu_arches: Vec<cann::Arch> =
            generated.npu_sources.iter().map(|s| s.arch).collect();
        npu_arches.sort();
        npu_arches.dedup();
        let rust_file = out_dir.join("pypto_kernels.rs");
        write_if_changed(&rust_file, &generated.rust)?;

        let compile_error = |failure: crate::toolchain::CompileFailure| Error::Compile {
            message: describe_failure(&failure, &generated.sources, &generated.model),
            dir: source_dir.clone(),
        };
        let mut report = CompileReport::default();
        // docs.rs builds documentation without a C++ toolchain worth the
        // name: the wrappers are all its pages need.
        let docs_only = self.cargo_metadata && std::env::var_os("DOCS_RS").is_some();
        if !paths.is_empty() && !docs_only {
            let obj_dir = root.join("obj");
            let cache = self.open_cache(&out_dir)?;
            // The headers every source includes are part of each object's identity.
            let salt: String = library::EMULATION_HEADERS
                .iter()
                .map(|(_, text)| *text)
                .collect();
            let abi = toolchain::emulation_abi(&salt);
            let mut host =
                toolchain::host_build(&include_dir, &obj_dir, self.opt_level, self.cargo_metadata);
            host.debug(self.debug_info)
                .define("PYPTO_EMU_ABI", abi.as_str());
            if self.precompiled_header {
                toolchain::precompile_header(&host, &include_dir, &salt);
            }
            // The runtime objects are the batch's last sources (`support`).
            let mut host_sources = paths.clone();
            host_sources.extend(runtimes.iter().cloned());
            let batch = toolchain::Batch {
                build: &host,
                sources: &host_sources,
                generated: &root,
                salt: &salt,
                forward_warnings: self.cargo_metadata,
                support: runtimes.len(),
            };
            let host_compiled = toolchain::compile_cached(&batch, &cache).map_err(compile_error)?;
            report += host_compiled.report;
            let objects = host_compiled.objects;
            let mut headers = host_compiled.headers;
            // The NPU objects of each architecture, for its shared library.
            let mut npu_objects: Vec<(cann::Arch, Vec<PathBuf>)> = Vec::new();
            if let Some(toolkit) = &toolkit {
                // The toolkit's version stands for what its headers do not
                // show (the compiler's dependency output lists the headers).
                let salt = format!("CANN {}", toolkit.version);
                for ((arch, cube), group) in &npu_groups {
                    let name = format!(
                        "npu-{}-{}",
                        arch.suffix(),
                        if *cube { "cube" } else { "vec" }
                    );
                    let npu_obj_dir = obj_dir.join(&name);
                    let mut build =
                        toolchain::npu_build(toolkit, *arch, *cube, &npu_obj_dir, self.opt_level);
                    // A fake toolkit's headers are the emulation's; CANN's
                    // ignore the name.
                    build.flag(format!("-DPYPTO_EMU_ABI={abi}"));
                    let batch = toolchain::Batch {
                        build: &build,
                        sources: group,
                        generated: &root,
                        salt: &salt,
                        forward_warnings: self.cargo_metadata,
                        support: 0,
                    };
                    let compiled =
                        toolchain::compile_cached(&batch, &cache).map_err(compile_error)?;
                    match npu_objects.iter_mut().find(|(a, _)| a == arch) {
                        Some((_, objects)) => objects.extend(compiled.objects),
                        None => npu_objects.push((*arch, compiled.objects)),
                    }
                    headers.extend(compiled.headers);
                    report += compiled.report;
                }
            }
            if self.cargo_metadata {
                // Every header a compile read: editing one reruns the build.
                headers.sort();
                headers.dedup();
                for header in &headers {
                    if let Some(line) = rerun_if_changed(header) {
                        println!("{line}");
                    }
                }
            }
            toolchain::archive(
                &host,
                &self.scope().library(),
                &objects,
                self.cargo_metadata,
            )
            .map_err(compile_error)?;
            // The NPU kernels go into one shared library per architecture,
            // which the generated Rust embeds: the binary links no CANN
            // library.
            if let Some(toolkit) = &toolkit {
                for (arch, objects) in &npu_objects {
                    let output = npu_dir.join(self.scope().npu_library(*arch));
                    toolchain::link_npu_library(toolkit, *arch, objects, &output)
                        .map_err(compile_error)?;
                }
            }
            // Libraries of architectures no kernel targets any more.
            if let Ok(entries) = std::fs::read_dir(&npu_dir) {
                let keep: Vec<String> = npu_arches
                    .iter()
                    .map(|arch| self.scope().npu_library(*arch))
                    .collect();
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let library = name.strip_suffix(".key").unwrap_or(&name);
                    if !keep.iter().any(|k| k == library) {
                        let _ = std::fs::remove_file(entry.path());
                    }
                }
            }
        } else if docs_only {
            // The wrappers embed the libraries: stand-ins let them compile.
            for arch in &npu_arches {
                let output = npu_dir.join(self.scope().npu_library(*arch));
                if !output.is_file() {
                    write_if_changed(&output, "")?;
                }
            }
        }
        if self.cargo_metadata {
            let verbose = std::env::var_os("PYPTO_BUILD_VERBOSE").is_some_and(|v| v != "0");
            if let Some(line) = summary_line(
                &generated,
                report,
                started.elapsed(),
                npu_note.as_deref(),
                verbose,
            ) {
                println!("cargo:warning={line}");
            }
        }
        Ok(Built {
            generated,
            rust_file,
            source_dir,
        })
    }
}

/// The build's one `cargo:warning` line: what it compiled and how long it
/// took, when it compiled anything (a long build otherwise looks hung), or
/// always with `verbose`, which adds the counts of kernels and sources.
fn summary_line(
    generated: &Generated,
    report: CompileReport,
    elapsed: std::time::Duration,
    npu_note: Option<&str>,
    verbose: bool,
) -> Option<String> {
    if report.compiled == 0 && !verbose {
        return None;
    }
    let mut line = if verbose {
        format!(
            "pypto-build: {} kernels, {} sources rendered, {} objects compiled, {} reused, {} ms",
            generated.model.kernels.len(),
            generated.sources.len(),
            report.compiled,
            report.reused,
            elapsed.as_millis()
        )
    } else {
        // The time of day: Cargo shows a build script's warnings again on
        // later builds that do not rerun it, and an old time says so.
        format!(
            "pypto-build: compiled {} kernel object{} in {:.1} s at {} ({} reused from the \
             cache; PYPTO_BUILD_VERBOSE=1 for details)",
            report.compiled,
            if report.compiled == 1 { "" } else { "s" },
            elapsed.as_secs_f64(),
            utc_time_of_day(std::time::SystemTime::now()),
            report.reused,
        )
    };
    if let Some(note) = npu_note {
        line.push_str("; ");
        line.push_str(note);
    }
    Some(line)
}

/// `HH:MM:SS UTC` of `at`.
fn utc_time_of_day(at: std::time::SystemTime) -> String {
    let secs = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The directive watching `path`, or nothing for a path a directive cannot
/// carry (a newline would end it and start another directive); such paths
/// are refused as spec and template paths, so the build fails on them anyway.
fn rerun_if_changed(path: &Path) -> Option<String> {
    if crate::diag::path_problem(path).is_some() {
        return None;
    }
    Some(format!("cargo:rerun-if-changed={}", path.display()))
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
    let keep: std::collections::HashSet<&PathBuf> = keep.iter().collect();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "cpp") && !keep.contains(&path) {
            std::fs::remove_file(&path).map_err(|source| Error::Io { path, source })?;
        }
    }
    Ok(())
}

/// The compiler's complaints (located at template lines, thanks to the
/// sources' `#line` directives), each followed by the rendered source the
/// compiler was given and the kernel, spec and template it came from.
pub(crate) fn describe_failure(
    failure: &crate::toolchain::CompileFailure,
    sources: &[Source],
    model: &Model,
) -> String {
    let mut parts = Vec::new();
    if !failure.summary.is_empty() {
        parts.push(failure.summary.clone());
    }
    for rejected in &failure.rejected {
        let name = rejected
            .source
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let origin = sources
            .iter()
            .find(|s| s.file_name == name)
            .and_then(|s| model.kernels.iter().find(|k| k.name == s.kernel))
            .map(|k| {
                format!(
                    "kernel `{}` from {} (template {})",
                    k.name, k.origin, k.template
                )
            })
            .unwrap_or_else(|| "an unknown kernel".to_owned());
        parts.push(format!(
            "{}\nnote: the compiler was given {}, rendered from {origin}",
            rejected.message,
            crate::diag::display_path(&rejected.source),
        ));
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rerun_directives_are_one_line_or_none() {
        assert_eq!(
            rerun_if_changed(Path::new("kernels/k.yaml")).as_deref(),
            Some("cargo:rerun-if-changed=kernels/k.yaml")
        );
        assert_eq!(
            rerun_if_changed(Path::new("kernels/k.yaml\ncargo:warning=injected")),
            None
        );
        assert_eq!(rerun_if_changed(Path::new("a\rb.yaml")), None);
    }

    #[test]
    fn the_compile_line_says_when_in_utc() {
        let at =
            |secs| utc_time_of_day(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
        assert_eq!(at(0), "00:00:00 UTC");
        // 2026-12-05 08:30:12 UTC.
        assert_eq!(at(1_796_459_412), "08:30:12 UTC");
        assert_eq!(at(86_399), "23:59:59 UTC");
    }
}
