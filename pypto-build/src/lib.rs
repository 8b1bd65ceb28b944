//! `pypto-build`: Ascend NPU kernels declared in YAML with PyPTO-style dim
//! markers, checked at build time.
//!
//! Data flows one way: YAML → spec structure → checked [`model`] (each
//! template's contract applied) → generated Rust and Ascend C → compiled
//! objects. Every problem in a spec or a template's contract is a located
//! [`Diagnostic`]. The public API is what a build script and the CLI need:
//! [`Builder`] and its outputs, [`Error`], the diagnostics and the `check_*`
//! functions; everything else is crate-private or under the unstable
//! `unstable` module.
//!
//! In a build script:
//!
//! ```no_run
//! fn main() -> Result<(), pypto_build::Error> {
//!     pypto_build::Builder::new().spec_dir("kernels").build()?;
//!     Ok(())
//! }
//! ```

#![warn(missing_docs)]

/// The module of pypto-rt that generated code names, as a string literal
/// (`codegen::rust::RT_INTERFACE` is its version): stated once here, so
/// that the dtype table's Rust paths and the generated wrappers agree.
macro_rules! rt_module {
    () => {
        "::pypto_rt::__private::v3"
    };
}

mod builder;
mod contract;
pub mod diag;
mod error;
mod grammar;
mod library;
pub mod model;
mod names;
mod run;
mod spec;
mod tables;
mod tokens;
#[doc(hidden)]
pub mod unstable;
mod yaml;

use unstable::{codegen, dump, toolchain};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use builder::{Builder, Built, Generated, NpuSource, write_if_changed};
pub use codegen::ascendc::Source;
pub use diag::{Diagnostic, Diagnostics, Location, Pos, Snippet, display_path};
pub use error::Error;
pub use model::{Kernel, Model};

/// The spec files under `paths`: files as given, directories walked for
/// `*.yaml`/`*.yml` in sorted order. Each file appears once.
pub fn spec_files<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<PathBuf>, Diagnostics> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let at_start = |path: &Path, message: String| Diagnostic {
        location: Location {
            path: path.to_path_buf(),
            pos: Pos::new(1, 1),
        },
        message,
        snippet: None,
    };
    for path in paths {
        let path = path.as_ref();
        if let Some(problem) = diag::path_problem(path) {
            errors.push(at_start(
                path,
                format!("cannot use this spec path: {problem}"),
            ));
        } else if path.is_dir() {
            let walk = walkdir::WalkDir::new(path)
                .sort_by_file_name()
                .follow_links(true);
            for entry in walk {
                match entry {
                    Ok(e) if e.file_type().is_file() && is_spec_name(e.path()) => {
                        match diag::path_problem(e.path()) {
                            Some(problem) => errors.push(at_start(
                                e.path(),
                                format!("cannot use this spec file: {problem}"),
                            )),
                            None => files.push(e.into_path()),
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let at = e.path().unwrap_or(path).to_path_buf();
                        errors.push(at_start(&at, format!("cannot read spec directory: {e}")));
                    }
                }
            }
        } else if path.is_file() {
            files.push(path.to_path_buf());
        } else {
            errors.push(at_start(path, "no such spec file or directory".to_owned()));
        }
    }
    // The same file named twice (directly and through a directory) is read once.
    let mut seen = std::collections::BTreeSet::new();
    files.retain(|f| seen.insert(f.canonicalize().unwrap_or_else(|_| f.clone())));
    if errors.is_empty() {
        Ok(files)
    } else {
        Err(Diagnostics(errors))
    }
}

fn is_spec_name(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

/// Checks the spec files under `paths` (see [`spec_files`]) and returns the
/// checked model, or every problem found in every file.
pub fn check_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Model, Diagnostics> {
    let files = spec_files(paths)?;
    check_files(&files)
}

/// Checks exactly these spec files.
pub fn check_files<P: AsRef<Path>>(files: &[P]) -> Result<Model, Diagnostics> {
    let mut set = SpecSet::default();
    for path in files {
        match yaml::read_text(path.as_ref()) {
            Ok(source) => set.add(path.as_ref(), &source),
            Err(d) => set.problems.push(d),
        }
    }
    set.finish()
}

/// Checks one spec given as text; `path` names it in diagnostics and anchors
/// relative template paths.
pub fn check_source(path: &Path, source: &str) -> Result<Model, Diagnostics> {
    let mut set = SpecSet::default();
    if source.len() as u64 > yaml::MAX_SPEC_BYTES {
        set.problems.push(yaml::too_large(path));
    } else {
        set.add(path, source);
    }
    set.finish()
}

/// Spec files checked together: kernel names are unique across the set.
#[derive(Default)]
struct SpecSet {
    kernels: Vec<Kernel>,
    files: Vec<PathBuf>,
    problems: Vec<Diagnostic>,
    /// Every kernel name declared so far, valid or not, and where.
    declared: BTreeMap<String, Location>,
    /// The templates' contracts, read once for the whole set.
    templates: model::Templates,
}

impl SpecSet {
    fn add(&mut self, path: &Path, source: &str) {
        self.files.push(path.to_path_buf());
        let mut sink = diag::Sink::new(path, source);
        // Files given directly (not found by `spec_files`) are checked here.
        if let Some(problem) = diag::path_problem(path) {
            sink.error(
                Pos::new(1, 1),
                format!("cannot use this spec file: {problem}"),
            );
            self.problems.extend(sink.finish());
            return;
        }
        let root = match yaml::parse(source) {
            Ok(root) => root,
            Err((pos, message)) => {
                sink.error(pos, message);
                self.problems.extend(sink.finish());
                return;
            }
        };
        let spec = spec::read(&root, &mut sink);
        let checked = model::check_file(&spec, &mut self.templates, &mut sink);
        let mut duplicates = std::collections::HashSet::new();
        // A kernel with variants is declared once, by the name of its one
        // wrapper; its variants' own names are checked with each other.
        let mut grouped = std::collections::HashSet::new();
        for k in &spec.kernels {
            let name = match &k.variant {
                Some(v) if !grouped.insert(v.kernel.value.as_str()) => continue,
                Some(v) => &v.kernel,
                None => &k.name,
            };
            match self.declared.get(&name.value) {
                Some(first) => {
                    sink.error(
                        name.pos,
                        format!(
                            "kernel `{}` is declared twice: here and at {first}",
                            name.value
                        ),
                    );
                    duplicates.insert(name.value.clone());
                }
                None => {
                    self.declared
                        .insert(name.value.clone(), sink.location(name.pos));
                }
            }
        }
        self.kernels.extend(
            checked.into_iter().filter(|k| {
                !duplicates.contains(k.variant.as_ref().map_or(&k.name, |v| &v.kernel))
            }),
        );
        self.problems.extend(sink.finish());
    }

    fn finish(mut self) -> Result<Model, Diagnostics> {
        self.problems.append(&mut self.templates.problems);
        if self.problems.is_empty() {
            Ok(Model {
                kernels: self.kernels,
                files: self.files,
            })
        } else {
            Err(Diagnostics(self.problems))
        }
    }
}
