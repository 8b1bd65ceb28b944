//! Kernels brought as existing Ascend C (`source:` + `entry:`), and what
//! only they declare in the spec: the block count (`blocks:`) and the core
//! kind (`cores:`). Scalars bound to sizes (`value: x.numel`) are checked
//! here too, for every kernel.

use std::path::Path;

use super::cpp::{DefKind, Macro, Scan};
use super::{
    BlockRule, DType, Draft, ParamKind, SizeOf, TemplateArg, TemplateRef, Tiling, TilingField,
    TilingValue,
};
use crate::diag::{Diagnostic, Sink, clip, display_path};
use crate::names::{c_identifier_problem, did_you_mean, generated_prefix, used_after_source};
use crate::spec::{KernelSpec, QUOTED};
use crate::tables::{CoreKind, MAX_SPEC_BLOCKS};
use crate::yaml::Value;

/// What a `source:` kernel declares beside its params.
pub(super) struct SourceParts {
    pub entry: String,
    pub blocks: BlockRule,
    pub cores: CoreKind,
}

/// A scalar param whose value is a size of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bound {
    /// The scalar param's index.
    pub param: usize,
    /// The size it is given.
    pub of: SizeOf,
}

/// Checks `entry`, `blocks` and `cores`: required (entry, blocks) or
/// allowed (cores) for a `source:` kernel, refused for a template kernel.
pub(super) fn check_source_parts(
    k: &KernelSpec,
    ctx: &str,
    template: Option<&TemplateRef>,
    drafts: &[Draft<'_>],
    sink: &mut Sink<'_>,
) -> Option<SourceParts> {
    let is_source = k.source.is_some();
    // Both `template` and `source`: reported once, by the template check.
    if is_source && (k.template.is_some() || k.given.iter().any(|g| g == "template")) {
        return None;
    }
    if !is_source {
        for (key, pos) in [
            ("entry", k.entry.as_ref().map(|e| e.pos)),
            ("template_args", k.template_args.as_ref().map(|a| a.pos)),
            ("tiling", k.tiling.as_ref().map(|t| t.pos)),
            ("blocks", k.blocks.as_ref().map(|b| b.pos)),
            ("cores", k.cores.as_ref().map(|c| c.pos)),
        ] {
            if let Some(pos) = pos {
                sink.error(
                    pos,
                    format!(
                        "{ctx}: `{key}` is for kernels brought as Ascend C (`source:`); a \
                         template's contract sets its {}",
                        if matches!(key, "entry" | "template_args" | "tiling") {
                            "entry"
                        } else if key == "blocks" {
                            "block rule"
                        } else {
                            "core kind"
                        }
                    ),
                );
            }
        }
        return None;
    }
    let entry = match &k.entry {
        Some(e) => match c_identifier_problem(&e.value) {
            None => Some(e.value.clone()),
            Some(problem) => {
                sink.error(
                    e.pos,
                    format!(
                        "{ctx}, `entry`: `{}` cannot name a kernel function: {problem}",
                        clip(&e.value, QUOTED)
                    ),
                );
                None
            }
        },
        None => {
            if !k.given.iter().any(|g| g == "entry") {
                sink.error(
                    k.name.pos,
                    format!(
                        "{ctx}: has `source` but no `entry`; name the source's kernel function \
                         (its `__global__ __aicore__` entry)"
                    ),
                );
            }
            None
        }
    };
    // The entry must be in the source: a misspelt name would otherwise
    // surface as a C++ error in generated code.
    if let (Some(entry), Some(TemplateRef::Source(path))) = (&entry, template)
        && let Ok(text) = std::fs::read_to_string(path)
        && !contains_word(&text, entry)
    {
        let pos = k.entry.as_ref().map_or(k.name.pos, |e| e.pos);
        sink.error(
            pos,
            format!(
                "{ctx}, `entry`: `{entry}` does not appear in `{}`; give the name of its \
                 `__global__ __aicore__` function",
                display_path(path)
            ),
        );
    }
    let cores = match &k.cores {
        None => Some(CoreKind::Vector),
        Some(word) => {
            let kinds = [CoreKind::Vector, CoreKind::Cube, CoreKind::Mixed];
            let found = kinds.into_iter().find(|c| c.spec_name() == word.value);
            if found.is_none() {
                sink.error(
                    word.pos,
                    format!(
                        "{ctx}, `cores`: unknown core kind `{}`; expected vector, cube or \
                         mixed{}",
                        clip(&word.value, QUOTED),
                        did_you_mean(&word.value, ["vector", "cube", "mixed"])
                    ),
                );
            }
            found
        }
    };
    let blocks = match &k.blocks {
        None => {
            sink.error(
                k.name.pos,
                format!(
                    "{ctx}: has `source` but no `blocks`; give the block count the kernel is \
                     launched with: a number, or a size such as `x.0` or `x.numel`"
                ),
            );
            None
        }
        Some(node) => match &node.value {
            Value::Int(n) => match u64::try_from(*n) {
                Ok(n @ 1..=MAX_SPEC_BLOCKS) => Some(BlockRule::Count(n as u32)),
                _ => {
                    sink.error(
                        node.pos,
                        format!(
                            "{ctx}, `blocks`: {n} is not a block count; use 1 to \
                             {MAX_SPEC_BLOCKS}, or a size such as `x.0`"
                        ),
                    );
                    None
                }
            },
            Value::Str(text) => match size_expr(text, drafts) {
                Ok(of) => Some(BlockRule::Size(of)),
                Err(why) => {
                    sink.error(node.pos, format!("{ctx}, `blocks`: {why}"));
                    None
                }
            },
            other => {
                sink.error(
                    node.pos,
                    format!(
                        "{ctx}, `blocks`: expected a number or a size such as `x.0`, found {}",
                        other.kind()
                    ),
                );
                None
            }
        },
    };
    Some(SourceParts {
        entry: entry?,
        blocks: blocks?,
        cores: cores?,
    })
}

/// The scalar params bound to sizes (`value:`), checked: only on integer
/// scalars, naming a tensor param of the kernel and an axis it has.
pub(super) fn check_bound(ctx: &str, drafts: &[Draft<'_>], sink: &mut Sink<'_>) -> Vec<Bound> {
    let mut bound = Vec::new();
    for (i, d) in drafts.iter().enumerate() {
        let Some(value) = &d.spec.value else {
            continue;
        };
        let pctx = format!(
            "{ctx}, param `{}`, `value`",
            clip(&d.spec.name.value, QUOTED)
        );
        let ParamKind::Scalar(dtype) = d.kind else {
            sink.error(
                value.pos,
                format!("{pctx}: only a scalar param can be bound to a size"),
            );
            continue;
        };
        if dtype.size_max().is_none() {
            sink.error(
                value.pos,
                format!(
                    "{pctx}: a size is bound to an integer scalar; `{}` is {}",
                    d.spec.name.value,
                    dtype.spec_name()
                ),
            );
            continue;
        }
        match size_expr(&value.value, drafts) {
            Ok(of) => bound.push(Bound { param: i, of }),
            Err(why) => sink.error(value.pos, format!("{pctx}: {why}")),
        }
    }
    bound
}

/// A templated entry's arguments (`template_args:`), each a dtype, an
/// integer or a size that is known when the kernel is built (`params`
/// carry their axes' dims by now); `None` after an error.
pub(super) fn check_template_args(
    k: &KernelSpec,
    ctx: &str,
    drafts: &[Draft<'_>],
    params: &[super::Param],
    dims: &[super::Dim],
    sink: &mut Sink<'_>,
) -> Option<Vec<TemplateArg>> {
    let Some(list) = &k.template_args else {
        return Some(Vec::new());
    };
    let before = sink.count();
    let mut out = Vec::new();
    for (i, node) in list.value.iter().enumerate() {
        let what = format!("{ctx}, `template_args`, argument {}", i + 1);
        let arg = match &node.value {
            Value::Int(v) => match i64::try_from(*v) {
                Ok(v) => TemplateArg::Int(v),
                Err(_) => {
                    sink.error(node.pos, format!("{what}: {v} is outside the 64-bit range"));
                    continue;
                }
            },
            Value::Str(word) => {
                if let Some(dtype) = DType::from_spec_name(word) {
                    TemplateArg::Type(dtype)
                } else if word.contains('.') {
                    match size_expr(word, drafts) {
                        Ok(of) => TemplateArg::Size(of),
                        Err(why) => {
                            sink.error(node.pos, format!("{what}: {why}"));
                            continue;
                        }
                    }
                } else {
                    let names: Vec<&str> = DType::ALL.iter().map(|d| d.spec_name()).collect();
                    sink.error(
                        node.pos,
                        format!(
                            "{what}: `{}` is neither a dtype (`DT_FP32`, …), an integer nor a \
                             size (`x.1`, `x.last`, `x.numel`){}",
                            clip(word, QUOTED),
                            did_you_mean(word, names.iter().copied())
                        ),
                    );
                    continue;
                }
            }
            other => {
                sink.error(
                    node.pos,
                    format!(
                        "{what}: expected a dtype, an integer or a size, found {}",
                        other.kind()
                    ),
                );
                continue;
            }
        };
        if let TemplateArg::Size(of) = arg {
            let (param, axes): (usize, Vec<usize>) = match of {
                SizeOf::Axis(p, a) => (p, vec![a]),
                SizeOf::Numel(p) => match &params[p].kind {
                    ParamKind::Tensor { axes, .. } => (p, (0..axes.len()).collect()),
                    ParamKind::Scalar(_) => (p, Vec::new()),
                },
            };
            let ParamKind::Tensor {
                axes: param_axes, ..
            } = &params[param].kind
            else {
                continue;
            };
            if let Some(&a) = axes
                .iter()
                .find(|&&a| matches!(dims[param_axes[a].dim].size, super::DimSize::Dynamic))
            {
                sink.error(
                    node.pos,
                    format!(
                        "{what}: `{}.{a}` is DYNAMIC, so its size is known only at run time; \
                         a template argument is fixed when the kernel is built (declare the \
                         axis STATIC, which builds one instantiation per size, or give its size)",
                        params[param].name
                    ),
                );
                continue;
            }
        }
        out.push(arg);
    }
    (sink.count() == before).then_some(out)
}

/// A `source:` kernel's `tiling:`: the struct's name, each field's name
/// and value (an integer, a number, a size or a scalar param) and the
/// entry parameter that takes it. `Some(None)`: no `tiling:`; `None` after
/// an error. Whether the struct exists is [`check_tiling_struct`]'s; its
/// fields and their types are checked by the generated code, at the spec.
pub(super) fn check_tiling(
    k: &KernelSpec,
    ctx: &str,
    drafts: &[Draft<'_>],
    sink: &mut Sink<'_>,
) -> Option<Option<Tiling>> {
    let Some(spec) = &k.tiling else {
        return Some(None);
    };
    // Without `source:`, reported by `check_source_parts`.
    k.source.as_ref()?;
    let ctx = format!("{ctx}, `tiling`");
    let before = sink.count();
    let struct_name = spec.struct_name.as_ref().and_then(|s| {
        let problem = s.value.split("::").enumerate().find_map(|(i, part)| {
            match c_identifier_problem(part) {
                // `::Name`: the global namespace's.
                Some(_) if i == 0 && part.is_empty() && s.value.len() > 2 => None,
                problem => problem,
            }
        });
        match problem {
            None => Some(s.value.clone()),
            Some(problem) => {
                sink.error(
                    s.pos,
                    format!(
                        "{ctx}, `struct`: `{}` cannot name a struct: {problem}",
                        clip(&s.value, QUOTED)
                    ),
                );
                None
            }
        }
    });
    let mut fields = Vec::new();
    for (name, node) in &spec.fields {
        let what = format!("{ctx}, field `{}`", clip(&name.value, QUOTED));
        if let Some(problem) = c_identifier_problem(&name.value) {
            sink.error(name.pos, format!("{what}: cannot name a field: {problem}"));
            continue;
        }
        let value = match &node.value {
            Value::Int(v) if *v >= i128::from(i64::MIN) && *v <= i128::from(u64::MAX) => {
                TilingValue::Int(*v)
            }
            Value::Int(v) => {
                sink.error(
                    node.pos,
                    format!("{what}: {v} is outside the range of a 64-bit integer"),
                );
                continue;
            }
            Value::Float { raw }
                if raw
                    .trim()
                    .trim_start_matches(['-', '+'])
                    .chars()
                    .all(|c| c.is_ascii_digit()) =>
            {
                sink.error(
                    node.pos,
                    format!(
                        "{what}: {} is outside the range of a 64-bit integer",
                        clip(raw.trim(), QUOTED)
                    ),
                );
                continue;
            }
            Value::Float { raw } => match raw.trim().parse::<f64>() {
                Ok(v) if v.is_finite() => TilingValue::Float(v),
                _ => {
                    sink.error(
                        node.pos,
                        format!("{what}: `{}` is not a finite number", clip(raw, QUOTED)),
                    );
                    continue;
                }
            },
            Value::Str(word) if word.contains('.') => match size_expr(word, drafts) {
                Ok(of) => TilingValue::Size(of),
                Err(why) => {
                    sink.error(node.pos, format!("{what}: {why}"));
                    continue;
                }
            },
            Value::Str(word) => {
                let scalars = drafts
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| matches!(d.kind, ParamKind::Scalar(_)));
                match scalars.clone().find(|(_, d)| d.spec.name.value == *word) {
                    Some((i, _)) => TilingValue::Scalar(i),
                    None => {
                        let names: Vec<&str> =
                            scalars.map(|(_, d)| d.spec.name.value.as_str()).collect();
                        sink.error(
                            node.pos,
                            format!(
                                "{what}: `{}` is neither a number, a size (`x.numel`, \
                                 `x.last`, `x.N`) nor a scalar param{}",
                                clip(word, QUOTED),
                                did_you_mean(word, names.iter().copied())
                            ),
                        );
                        continue;
                    }
                }
            }
            other => {
                sink.error(
                    node.pos,
                    format!(
                        "{what}: expected a number, a size or a scalar param, found {}",
                        other.kind()
                    ),
                );
                continue;
            }
        };
        fields.push(TilingField {
            name: name.value.clone(),
            pos: node.pos,
            value,
        });
    }
    // The entry's arguments besides the struct.
    let carried = |i: usize| fields.iter().any(|f| f.value == TilingValue::Scalar(i));
    let others = (0..drafts.len()).filter(|&i| !carried(i)).count();
    let at = match &spec.at {
        None => others,
        Some(node) => match node.value {
            Value::Int(v) if v >= 0 && v <= others as i128 => v as usize,
            Value::Int(v) => {
                sink.error(
                    node.pos,
                    format!(
                        "{ctx}, `at`: {v} is past the entry's parameters; the struct may be \
                         parameter 0 to {others} (the params pass {others} arguments besides it)"
                    ),
                );
                0
            }
            ref other => {
                sink.error(
                    node.pos,
                    format!(
                        "{ctx}, `at`: expected an entry parameter's index, found {}",
                        other.kind()
                    ),
                );
                0
            }
        },
    };
    // No `struct`: reported when the spec was read.
    let struct_name = struct_name?;
    (sink.count() == before).then_some(Some(Tiling {
        struct_name,
        pos: spec.struct_name.as_ref().map_or(spec.pos, |s| s.pos),
        fields,
        at,
    }))
}

/// The struct a `tiling:` names must be defined in the source or in a
/// quoted header beside it (read as far as [`quoted_system_includes`]
/// reads them).
pub(super) fn check_tiling_struct(
    ctx: &str,
    path: &Path,
    scan: &Scan,
    tiling: &Tiling,
    sink: &mut Sink<'_>,
) {
    let name = tiling
        .struct_name
        .rsplit("::")
        .next()
        .unwrap_or(&tiling.struct_name);
    let is_type = |s: &Scan| {
        s.defs
            .iter()
            .any(|d| d.kind == DefKind::Type && d.name == name)
    };
    if is_type(scan) {
        return;
    }
    let Ok(text) = super::template::read_template(path) else {
        return;
    };
    if quoted_headers(path, &text)
        .iter()
        .any(|body| is_type(&super::cpp::scan(body)))
    {
        return;
    }
    sink.error(
        tiling.pos,
        format!(
            "{ctx}, `tiling`, `struct`: `{}` is not defined in `{}` or in a header it includes \
             with `#include \"…\"`; name the struct its entry takes",
            clip(&tiling.struct_name, QUOTED),
            display_path(path)
        ),
    );
}

/// The texts of the quoted headers beside a source, through their own
/// quoted includes: at most 4 levels and 32 files.
pub(crate) fn quoted_headers(path: &Path, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: Vec<std::path::PathBuf> = Vec::new();
    let mut work: Vec<(std::path::PathBuf, String, usize)> =
        vec![(path.to_path_buf(), text.to_owned(), 0)];
    while let Some((file, body, depth)) = work.pop() {
        let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        for line in body.lines() {
            if let Some(name) = quoted_include(line) {
                let next = dir.join(name);
                if depth >= 4 || seen.len() >= 32 || seen.contains(&next) || !next.is_file() {
                    continue;
                }
                seen.push(next.clone());
                if let Ok(body) = super::template::read_template(&next) {
                    work.push((next, body.clone(), depth + 1));
                    out.push(body);
                }
            }
        }
    }
    out
}

/// The `<headers>` a source includes that the host backend may include
/// ahead of it: names of letters, digits and `_ . / + -`, relative and
/// without `..`, at most 128 characters; at most 64 of them.
pub(super) fn system_headers(scan: &Scan) -> Vec<String> {
    scan.system_includes
        .iter()
        .filter(|h| {
            h.len() <= 128
                && !h.starts_with('/')
                && !h.contains("..")
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./+-".contains(c))
        })
        .take(64)
        .cloned()
        .collect()
}

/// The byte ranges of the `<<<…>>>` launch configurations in `text`,
/// outside comments, string and character literals and preprocessor
/// lines: a vendor program's host code launching its kernels.
pub(crate) fn launches(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    let mut open: Option<usize> = None;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' if line_start => {
                // A directive, with its continued lines.
                while i < b.len() && b[i] != b'\n' {
                    if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            b'"' | b'\'' => {
                i += 1;
                while i < b.len() && b[i] != c && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'<' if open.is_none() && b[i..].starts_with(b"<<<") => {
                open = Some(i);
                i += 3;
            }
            b'>' if b[i..].starts_with(b">>>") => {
                if let Some(start) = open.take() {
                    out.push((start, i + 3));
                }
                i += 3;
            }
            b';' | b'{' | b'}' => {
                // A launch configuration never spans statements.
                open = None;
                i += 1;
            }
            _ => i += 1,
        }
        line_start = false;
    }
    out
}

/// The copy of a source with launches that the generated code holds in
/// its place: each `<<<…>>>` in `ranges` blanked (newlines kept, so errors
/// keep the file's lines and columns; the host backend's copy), and each
/// `#include "NAME"` that names a file beside the source given that file's
/// absolute path (the copy is compiled elsewhere). The source itself is
/// not changed.
pub(super) fn host_copy(path: &Path, text: &str, ranges: &[(usize, usize)]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for &(start, end) in ranges {
        for byte in &mut bytes[start..end.min(text.len())] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    }
    // Every byte replaced was part of a whole UTF-8 sequence inside the
    // range or ASCII, and became ASCII: still UTF-8.
    let blanked = String::from_utf8(bytes).unwrap_or_else(|_| text.to_owned());
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = String::with_capacity(blanked.len() + 256);
    for line in blanked.split_inclusive('\n') {
        match quoted_include(line) {
            Some(name) if dir.join(name).is_file() => {
                let full = dir
                    .join(name)
                    .canonicalize()
                    .unwrap_or_else(|_| dir.join(name));
                let shown = full.display().to_string();
                if shown.contains(['"', '\n', '\\']) {
                    out.push_str(line);
                } else {
                    out.push_str(&line.replacen(
                        &format!("\"{name}\""),
                        &format!("\"{shown}\""),
                        1,
                    ));
                }
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// `NAME` of a line `#include "NAME"` (blanks allowed around `#`).
fn quoted_include(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?.trim_start();
    let rest = rest.strip_prefix('"')?;
    rest.split_once('"').map(|(name, _)| name)
}

/// `NAME` of a line `#include <NAME>`.
fn system_include(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?.trim_start();
    let rest = rest.strip_prefix('<')?;
    rest.split_once('>').map(|(name, _)| name)
}

/// The `<headers>` the quoted headers beside a source include, through
/// their own quoted includes: at most 4 levels and 32 files of at most
/// the template size limit each, in the order met. A header that cannot
/// be read is left to the compiler to report.
pub(super) fn quoted_system_includes(path: &Path, text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: Vec<std::path::PathBuf> = Vec::new();
    let mut work: Vec<(std::path::PathBuf, String, usize)> =
        vec![(path.to_path_buf(), text.to_owned(), 0)];
    while let Some((file, body, depth)) = work.pop() {
        let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        for line in body.lines() {
            if depth > 0
                && let Some(name) = system_include(line)
                && !out.iter().any(|h| h == name)
            {
                out.push(name.to_owned());
            }
            if let Some(name) = quoted_include(line) {
                let next = dir.join(name);
                if depth >= 4 || seen.len() >= 32 || seen.contains(&next) || !next.is_file() {
                    continue;
                }
                seen.push(next.clone());
                if let Ok(body) = super::template::read_template(&next) {
                    work.push((next, body, depth + 1));
                }
            }
        }
    }
    out
}

/// A templated entry needs `template_args:`, and only a templated entry
/// takes them: each mismatch is an error at the spec naming the source's
/// line.
pub(super) fn check_entry_template(
    k: &KernelSpec,
    ctx: &str,
    path: &Path,
    scan: &Scan,
    entry: &str,
    sink: &mut Sink<'_>,
) {
    let template = scan.function_templates.iter().find(|(n, _)| n == entry);
    let plain = scan
        .defs
        .iter()
        .any(|d| d.name == entry && d.kind == DefKind::Function);
    let shown = display_path(path);
    match (template, &k.template_args) {
        (Some((_, pos)), None) if !plain => {
            let at = k.entry.as_ref().map_or(k.name.pos, |e| e.pos);
            sink.error(
                at,
                format!(
                    "{ctx}, `entry`: `{entry}` is a function template ({shown}:{pos}); give the \
                     arguments that instantiate it with `template_args:`, e.g. `[DT_FP32, 8]`"
                ),
            );
        }
        (None, Some(args)) if plain => {
            sink.error(
                args.pos,
                format!(
                    "{ctx}, `template_args`: `{entry}` in {shown} is not a function template; \
                     remove `template_args`"
                ),
            );
        }
        _ => {}
    }
}

/// `x.numel`, `x.last` or `x.N` over the kernel's tensor params.
fn size_expr(text: &str, drafts: &[Draft<'_>]) -> Result<SizeOf, String> {
    let shown = clip(text, QUOTED);
    let usage = "write `PARAM.numel`, `PARAM.last` or `PARAM.N` (an axis index)";
    let Some((name, what)) = text.trim().split_once('.') else {
        return Err(format!("`{shown}` is not a size; {usage}"));
    };
    let tensors: Vec<&str> = drafts
        .iter()
        .filter(|d| matches!(d.kind, ParamKind::Tensor { .. }))
        .map(|d| d.spec.name.value.as_str())
        .collect();
    let Some((param, draft)) = drafts
        .iter()
        .enumerate()
        .find(|(_, d)| d.spec.name.value == name)
    else {
        return Err(format!(
            "`{shown}`: no param `{}`{}",
            clip(name, QUOTED),
            did_you_mean(name, tensors.iter().copied())
        ));
    };
    let ParamKind::Tensor { axes, .. } = &draft.kind else {
        return Err(format!(
            "`{shown}`: `{name}` is a scalar; sizes are of tensor params"
        ));
    };
    let rank = axes.len();
    let of = match what {
        "numel" => SizeOf::Numel(param),
        "last" => SizeOf::Axis(param, rank - 1),
        n => match n.parse::<usize>() {
            Ok(axis) if axis < rank => SizeOf::Axis(param, axis),
            Ok(axis) => {
                return Err(format!(
                    "`{shown}`: `{name}` has rank {rank}, so it has no axis {axis}"
                ));
            }
            Err(_) => return Err(format!("`{shown}` is not a size; {usage}")),
        },
    };
    Ok(of)
}

/// Problems with the names a brought source declares, located in the
/// source: names that would meet the program's or the generated code's.
/// (Its other C-linkage names are renamed per compiled copy; see
/// [`c_linkage_names`].)
pub(super) fn check_names(path: &Path, text: &str, scan: &Scan) -> Vec<Diagnostic> {
    let mut sink = Sink::new(path, text);
    for d in &scan.defs {
        // A `main` (a whole vendor program's) is renamed by the generated
        // code and never called.
        if generated_prefix(&d.name) {
            sink.error(
                d.pos,
                format!(
                    "`{}` is declared here, but names starting with `pypto_`, `Pypto` or \
                     `PYPTO_` belong to the code pypto-build generates around the source \
                     (`PyptoTiling`, `pypto_load_tiling`, the kernels' symbols); rename it",
                    d.name
                ),
            );
        }
    }
    // A macro still defined where the source ends reaches the generated
    // launch code; undefining one of pypto-build's or the emulation's
    // macros takes it away from that code.
    let mut last: Vec<&Macro> = Vec::new();
    for m in &scan.macros {
        last.retain(|l| l.name != m.name);
        last.push(m);
        if !m.define && (generated_prefix(&m.name) || m.name == "GM_ADDR") {
            sink.error(
                m.pos,
                format!(
                    "`#undef {}`: the launch code pypto-build generates after the source \
                     needs `{}`",
                    m.name, m.name
                ),
            );
        }
    }
    for m in last {
        if m.define && used_after_source(&m.name) {
            sink.error(
                m.pos,
                format!(
                    "the macro `{}` is still defined where the source ends, and the launch \
                     code pypto-build generates after the source uses `{}`; rename the macro, \
                     or `#undef` it at the end of the source",
                    m.name, m.name
                ),
            );
        }
    }
    sink.finish()
}

/// The names of C linkage a brought source defines besides `entry`, in
/// order: each compiled copy of the source renames them, as it renames the
/// entry, so that two kernels (or two specialisations) sharing the source
/// never define one symbol twice, nor one of the program's.
pub(super) fn c_linkage_names(scan: &Scan, entry: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for d in &scan.defs {
        // `main` is renamed on its own (a whole program's), as any `main`.
        if d.c_linkage
            && d.kind != DefKind::Type
            && d.name != entry
            && d.name != "main"
            && !names.contains(&d.name)
        {
            names.push(d.name.clone());
        }
    }
    names
}

/// Whether `word` occurs in `text` as a whole identifier.
fn contains_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every identifier of the code generated after a brought source is one
    /// a macro left defined by the source is refused for (or a directive's
    /// word): so [`crate::names::AFTER_SOURCE`] stays complete as that code
    /// changes.
    #[test]
    fn the_names_used_after_a_source_are_all_guarded() {
        use crate::codegen::{Plan, SymbolScope, ascendc};
        let tiled = "kernels:\n  k:\n    source: ../templates/tiled.cpp\n    \
                     entry: tiled_kernel\n    blocks: 1\n    \
                     tiling: { struct: TiledData, fields: { n: x.numel, s: s } }\n    \
                     params:\n      x: { dtype: DT_FP32, shape: [DYNAMIC] }\n      \
                     y: { dtype: DT_FP32, shape: [DYNAMIC], output: true }\n      \
                     s: { scalar: DT_FP32 }\n"
            .to_owned();
        let specs = ["vector", "cube", "mixed"].map(|cores| {
            format!(
                "kernels:\n  k:\n    source: ../templates/brought.cpp\n    entry: scale_kernel\n    \
                 blocks: x.0\n    cores: {cores}\n    params:\n      \
                 x: {{ dtype: DT_FP32, shape: [DYNAMIC] }}\n      \
                 y: {{ dtype: DT_FP32, shape: [DYNAMIC], output: true }}\n      \
                 n: {{ scalar: DT_UINT32, value: x.numel }}\n      s: {{ scalar: DT_FP32 }}\n"
            )
        });
        for (cores, spec) in ["vector", "cube", "mixed", "tiled"]
            .into_iter()
            .zip(specs.into_iter().chain([tiled]))
        {
            let model = crate::check_source(Path::new("tests/specs/valid/generated.yaml"), &spec)
                .unwrap_or_else(|e| panic!("{}", e.render()));
            let plans: Vec<Plan<'_>> = model
                .kernels
                .iter()
                .map(|k| Plan::new(k, &SymbolScope::Prefix("t".to_owned())).with_npu())
                .collect();
            let mut read = |p: &Path| {
                std::fs::read_to_string(p).map_err(|source| crate::Error::Io {
                    path: p.to_path_buf(),
                    source,
                })
            };
            let sources = ascendc::render(&plans, &mut read).unwrap();
            let text = &sources[0].text;
            // What follows the `#include` of the source itself.
            let after = &text[text.find("// ---- source ").unwrap()..];
            let after = &after[after.find("\n#if").unwrap()..];
            // Code only: no comments, no strings.
            let code: String = after
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .map(|l| {
                    let mut out = String::new();
                    for (i, part) in l.split('"').enumerate() {
                        if i % 2 == 0 {
                            out.push_str(part);
                        }
                    }
                    out
                })
                .collect::<Vec<_>>()
                .join("\n");
            let words = code
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| {
                    w.chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                });
            // The directives' words, and the source's own names.
            let directives = [
                "line",
                "if",
                "endif",
                "undef",
                "pragma",
                "GCC",
                "diagnostic",
                "pop",
                "scale_kernel",
                "tiled_kernel",
                "TiledData",
                "n",
                "s",
            ];
            let unguarded: Vec<&str> = words
                .filter(|w| !used_after_source(w) && !directives.contains(w))
                .collect();
            assert!(
                unguarded.is_empty(),
                "{cores}: add {unguarded:?} to names::AFTER_SOURCE:\n{after}"
            );
        }
    }

    #[test]
    fn words_are_whole_identifiers() {
        assert!(contains_word("void add_custom(GM_ADDR x)", "add_custom"));
        assert!(!contains_word("void add_custom2(GM_ADDR x)", "add_custom"));
        assert!(!contains_word("void my_add_custom()", "add_custom"));
        assert!(contains_word("add_custom", "add_custom"));
    }
}
