//! Finding a kernel's template and reading its contract.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::cpp::{self, Scan};
use super::{TemplateRef, source};
use crate::contract::{self, Contract};
use crate::diag::{Diagnostic, Sink, display_path, path_problem};
use crate::library;
use crate::names::nearest;
use crate::spec::{self, KernelSpec};

/// Templates larger than this are refused before reading: a template is
/// source code, not data.
pub const MAX_TEMPLATE_BYTES: u64 = 1 << 20;

/// The contracts of the templates a set of specs uses, each read once.
#[derive(Default)]
pub(crate) struct Templates {
    /// `Err` when reading or parsing failed (already reported).
    read: HashMap<TemplateRef, Result<Option<Contract>, ()>>,
    /// What each brought source declares, for those read without problems.
    scans: HashMap<PathBuf, Scan>,
    /// Problems inside templates' front matter, located in the template.
    pub problems: Vec<Diagnostic>,
}

impl Templates {
    /// The contract of `template`, `None` for a template without front
    /// matter. `Err` when it cannot be read (reported at the kernel's
    /// `template:` the first time) or its contract has errors (reported in
    /// the template).
    pub(super) fn contract(
        &mut self,
        template: &TemplateRef,
        k: &KernelSpec,
        ctx: &str,
        sink: &mut Sink<'_>,
    ) -> Result<Option<&Contract>, ()> {
        if !self.read.contains_key(template) {
            let result = match template {
                TemplateRef::Builtin(name) => {
                    let text = library::builtin_template(name).unwrap_or_default();
                    let path = PathBuf::from(format!("builtin/{name}.hbs"));
                    self.parse(&path, text)
                }
                // A source has no contract: the spec declares everything.
                TemplateRef::Source(path) => match read_template(path) {
                    Ok(text) => {
                        let mut scan = cpp::scan(&text);
                        let problems = source::check_names(path, &text, &scan);
                        for header in source::quoted_system_includes(path, &text) {
                            if !scan.system_includes.contains(&header) {
                                scan.system_includes.push(header);
                            }
                        }
                        let launches = source::launches(&text);
                        if !launches.is_empty() {
                            scan.host_text = Some(source::host_copy(path, &text, &launches));
                            scan.npu_text = Some(source::host_copy(path, &text, &[]));
                        }
                        if problems.is_empty() {
                            self.scans.insert(path.clone(), scan);
                            Ok(None)
                        } else {
                            self.problems.extend(problems);
                            Err(())
                        }
                    }
                    Err(why) => {
                        let pos = k.source.as_ref().map_or(k.name.pos, |t| t.pos);
                        sink.error(pos, format!("{ctx}, `source`: {why}"));
                        Err(())
                    }
                },
                TemplateRef::File(path) => match read_template(path) {
                    Ok(text) => self.parse(path, &text),
                    Err(why) => {
                        let pos = k.template.as_ref().map_or(k.name.pos, |t| t.pos);
                        sink.error(pos, format!("{ctx}, `template`: {why}"));
                        Err(())
                    }
                },
            };
            self.read.insert(template.clone(), result);
        }
        match self.read.get(template) {
            Some(Ok(c)) => Ok(c.as_ref()),
            _ => Err(()),
        }
    }

    /// What the brought source at `path` declares, once read without
    /// problems by [`Templates::contract`].
    pub(super) fn scan(&self, path: &Path) -> Option<&Scan> {
        self.scans.get(path)
    }

    fn parse(&mut self, path: &Path, text: &str) -> Result<Option<Contract>, ()> {
        contract::read(path, text).map_err(|problems| self.problems.extend(problems))
    }
}

/// A template or source file's text, or why it cannot be had.
pub(crate) fn read_template(path: &Path) -> Result<String, String> {
    let shown = display_path(path);
    let len = std::fs::metadata(path)
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?
        .len();
    if len > MAX_TEMPLATE_BYTES {
        return Err(format!(
            "`{shown}` is {len} bytes; templates and sources larger than {MAX_TEMPLATE_BYTES} \
             bytes are refused"
        ));
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read `{shown}`: {e}"))
}

/// The package a spec belongs to: the directory of the nearest Cargo.toml
/// above the spec file, else the spec file's own directory; canonical.
fn package_of(spec: &Path) -> Option<PathBuf> {
    let dir = match spec.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = dir.canonicalize().ok()?;
    let root = dir.ancestors().find(|d| d.join("Cargo.toml").is_file());
    Some(root.unwrap_or(&dir).to_path_buf())
}

pub(super) fn check_template(
    k: &KernelSpec,
    ctx: &str,
    package: &OnceCell<Option<PathBuf>>,
    sink: &mut Sink<'_>,
) -> Option<TemplateRef> {
    if let Some(source) = &k.source {
        if k.template.is_some() || k.given.iter().any(|g| g == "template") {
            sink.error(
                source.pos,
                format!(
                    "{ctx}: has both `template` and `source`; a kernel is rendered from a \
                     template or compiled from an existing Ascend C source, not both"
                ),
            );
            return None;
        }
        return package_file("source", source, ctx, package, sink).map(TemplateRef::Source);
    }
    let Some(t) = &k.template else {
        if k.given.iter().any(|g| g == "template" || g == "source") {
            return None; // given, but not a string: already reported
        }
        sink.error(
            k.name.pos,
            format!(
                "{ctx}: has no `template`; give `builtin/NAME` or a path relative to the spec file"
            ),
        );
        return None;
    };
    if let Some(name) = t.value.strip_prefix("builtin/") {
        if library::builtin_template(name).is_some() {
            return Some(TemplateRef::Builtin(name.to_owned()));
        }
        let names: Vec<&str> = library::BUILTIN_TEMPLATES.iter().map(|(n, _)| *n).collect();
        // The nearest name when there is one; the whole list otherwise.
        let message = match nearest(name, names.iter().copied()) {
            Some(near) => format!(
                "{ctx}, `template`: there is no builtin template `{name}`; did you mean \
                 `builtin/{near}`? (the README's builtin table lists them all)"
            ),
            None => format!(
                "{ctx}, `template`: there is no builtin template `{name}`; builtins are {}",
                spec::one_of(&names)
            ),
        };
        sink.error(t.pos, message);
        return None;
    }
    package_file("template", t, ctx, package, sink).map(TemplateRef::File)
}

/// A file a spec names (`template:` or `source:`), relative to the spec and
/// inside its package: a template is pasted into generated C++, a source
/// included by it, so it must be the crate's own.
fn package_file(
    key: &str,
    t: &spec::Sp<String>,
    ctx: &str,
    package: &OnceCell<Option<PathBuf>>,
    sink: &mut Sink<'_>,
) -> Option<PathBuf> {
    let written = Path::new(&t.value);
    if let Some(problem) = path_problem(written) {
        sink.error(t.pos, format!("{ctx}, `{key}`: {problem}"));
        return None;
    }
    // Pasted into (or included by) generated C++: it must be the crate's own.
    if written.has_root() || written.is_absolute() {
        sink.error(
            t.pos,
            format!(
                "{ctx}, `{key}`: `{}` is an absolute path; give a path relative to the spec \
                 file, inside its package",
                t.value
            ),
        );
        return None;
    }
    let dir = sink.path().parent().unwrap_or(Path::new(""));
    let path = dir.join(written);
    if t.value.is_empty() || !path.is_file() {
        sink.error(
            t.pos,
            format!(
                "{ctx}, `{key}`: {} file `{}` does not exist (paths are relative to the spec \
                 file{})",
                key,
                display_path(&path),
                if key == "template" {
                    "; builtins are written `builtin/NAME`"
                } else {
                    ""
                }
            ),
        );
        return None;
    }
    let package = package.get_or_init(|| package_of(sink.path()));
    let inside = match (package, path.canonicalize()) {
        // A source is `#include`d by its real path, which cannot hold `"`.
        (Some(_), Ok(real)) if key == "source" && real.to_string_lossy().contains('"') => {
            sink.error(
                t.pos,
                format!(
                    "{ctx}, `{key}`: `{}` resolves to `{}`, whose `\"` an `#include` cannot \
                     name; rename the file or its directory",
                    t.value,
                    display_path(&real)
                ),
            );
            false
        }
        (Some(package), Ok(real)) if real.starts_with(package) => true,
        (Some(package), Ok(real)) => {
            sink.error(
                t.pos,
                format!(
                    "{ctx}, `{key}`: `{}` resolves to `{}`, outside the spec's package `{}` \
                     (the directory of the nearest Cargo.toml above the spec file); {key}s \
                     must be inside it",
                    t.value,
                    display_path(&real),
                    display_path(package)
                ),
            );
            false
        }
        (_, Err(e)) => {
            sink.error(
                t.pos,
                format!(
                    "{ctx}, `{key}`: cannot resolve `{}`: {e}",
                    display_path(&path)
                ),
            );
            false
        }
        (None, Ok(_)) => {
            sink.error(
                t.pos,
                format!("{ctx}, `{key}`: cannot resolve the spec file's directory"),
            );
            false
        }
    };
    inside.then_some(path)
}
