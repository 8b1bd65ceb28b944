//! Ascend C sources: each specialisation of each kernel is its template
//! rendered with handlebars, between a generated preamble (the tiling data
//! layout) and, for the host backend, a launch shim.

use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use handlebars::{Handlebars, RenderErrorReason, TemplateErrorReason};
use serde_json::{Value, json};

use crate::codegen::{Plan, lines};
use crate::contract;
use crate::diag::{Diagnostic, Pos, Sink, display_path};
use crate::error::Error;
use crate::library;
use crate::model::{
    CoreKind, DimSize, EntryArg, ParamKind, SizeOf, TemplateArg, TemplateRef, TilingValue,
};

/// One rendered source file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Source {
    /// The kernel it implements.
    pub kernel: String,
    /// Which of the kernel's STATIC specialisations (0 when it has none).
    pub specialisation: usize,
    /// File name under the sources directory, e.g. `add_bias_s0.cpp`;
    /// unique within a build even on case-insensitive file systems.
    pub file_name: String,
    /// The Ascend C source.
    pub text: String,
}

/// Renders every specialisation of every kernel. Template files are read
/// through `read`, so the caller can record them for rebuilds. The first
/// template that fails stops rendering; see [`render_all`].
pub fn render(
    plans: &[Plan<'_>],
    read: &mut dyn FnMut(&Path) -> Result<String, Error>,
) -> Result<Vec<Source>, Error> {
    let (sources, errors) = render_each(plans, read, true);
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(sources),
    }
}

/// As [`render`], but goes on after a failing kernel, and returns what
/// rendered and every error (the same problem in a template shared by
/// several kernels once).
pub fn render_all(
    plans: &[Plan<'_>],
    read: &mut dyn FnMut(&Path) -> Result<String, Error>,
) -> (Vec<Source>, Vec<Error>) {
    render_each(plans, read, false)
}

/// A template or partial as registered: its text, where its body starts,
/// and the markers put in it.
struct Registered {
    /// The whole file, front matter included, for diagnostics' snippets.
    text: String,
    /// Where diagnostics locate it: the user's path, or `builtin/NAME.hbs`.
    path: PathBuf,
    body_line: usize,
    marked: Option<lines::Marked>,
    /// Its name in `#line` directives, a C string literal.
    line_name: String,
}

impl Registered {
    fn new(text: String, path: PathBuf, file: usize) -> Self {
        let split = contract::split(&text);
        let body_line = split.body_line;
        let marked = lines::mark(split.body, file, body_line);
        let line_name = lines::c_string(&display_path(&path));
        Registered {
            text,
            path,
            body_line,
            marked,
            line_name,
        }
    }

    fn body(&self) -> &str {
        contract::split(&self.text).body
    }

    /// What handlebars is given: the body with markers when it has them.
    fn registered_text(&self) -> &str {
        self.marked
            .as_ref()
            .map_or(self.body(), |m| m.text.as_str())
    }

    /// The template position of a body position handlebars reported.
    fn position(&self, line: usize, column: usize, marked: bool) -> Pos {
        let column = match &self.marked {
            Some(m) if marked => m.column(line, column),
            _ => column,
        };
        let line = self.body_line + line.saturating_sub(1);
        Pos::new(
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column.max(1)).unwrap_or(u32::MAX),
        )
    }

    /// A located diagnostic with a snippet of the template line.
    fn diagnostic(&self, pos: Pos, message: String) -> Diagnostic {
        let mut sink = Sink::new(&self.path, &self.text);
        sink.error(pos, message.clone());
        sink.finish()
            .into_iter()
            .next()
            .unwrap_or_else(|| Diagnostic {
                location: sink_location(&self.path, pos),
                message,
                snippet: None,
            })
    }
}

fn sink_location(path: &Path, pos: Pos) -> crate::diag::Location {
    crate::diag::Location {
        path: path.to_path_buf(),
        pos,
    }
}

fn render_each(
    plans: &[Plan<'_>],
    read: &mut dyn FnMut(&Path) -> Result<String, Error>,
    stop_at_first: bool,
) -> (Vec<Source>, Vec<Error>) {
    let mut registry = Handlebars::new();
    registry.set_strict_mode(true);
    // Only validated identifiers and numbers are interpolated; C++ needs no escaping.
    registry.register_escape_fn(handlebars::no_escape);
    // Partials are files 1..; a kernel's own template is file 0.
    let mut partials: Vec<(&str, Registered)> = Vec::new();
    for (i, (name, text)) in library::PARTIALS.iter().enumerate() {
        let partial = Registered::new(
            (*text).to_owned(),
            PathBuf::from(format!("builtin/partials/{name}.hbs")),
            i + 1,
        );
        // A partial whose markers do not parse goes in without them (the
        // builtin partials are tested to take markers).
        if registry
            .register_partial(name, partial.registered_text())
            .is_err()
        {
            let _ = registry.register_partial(name, partial.body());
        }
        partials.push((name, partial));
    }
    let mut sources = Vec::new();
    let mut errors: Vec<Error> = Vec::new();
    // `None` for a template that failed to load, reported once.
    let mut templates: HashMap<String, Option<Registered>> = HashMap::new();
    // Kernels whose names differ only in case (`same`, `Same`) are distinct
    // Rust functions but would write one file on a case-insensitive file
    // system: after the first, each gets `__N`, which no kernel name holds.
    let mut spellings: HashMap<String, usize> = HashMap::new();
    for plan in plans {
        if stop_at_first && !errors.is_empty() {
            break;
        }
        let k = plan.kernel;
        let nth = spellings.entry(k.name.to_ascii_lowercase()).or_insert(0);
        *nth += 1;
        let stem = match *nth {
            1 => k.name.clone(),
            n => format!("{}__{n}", k.name),
        };
        // A brought source is compiled as it is: no handlebars.
        if let TemplateRef::Source(path) = &k.template {
            match read(path) {
                // Read for Cargo's reruns; the source is included, not copied.
                Ok(_) => {
                    for index in 0..k.specialisations.len() {
                        let file_name = format!("{stem}_s{index}.cpp");
                        sources.push(Source {
                            kernel: k.name.clone(),
                            specialisation: index,
                            text: assemble_source(plan, index, path, &file_name),
                            file_name,
                        });
                    }
                }
                Err(e) => errors.push(e),
            }
            continue;
        }
        let template_name = k.template.to_string();
        let failed = |index: usize, diagnostic: Diagnostic| Error::Template {
            kernel: k.name.clone(),
            origin: k.origin.to_string(),
            template: template_name.clone(),
            specialisation: plan.describe_specialisation(index),
            diagnostic: Box::new(diagnostic),
        };
        // Kernels sharing a template parse it once.
        if !templates.contains_key(&template_name) {
            let loaded = match &k.template {
                TemplateRef::Builtin(name) => match library::builtin_template(name) {
                    Some(text) => Ok(Registered::new(
                        text.to_owned(),
                        PathBuf::from(format!("builtin/{name}.hbs")),
                        0,
                    )),
                    None => Err(failed(
                        0,
                        Diagnostic {
                            location: k.origin.clone(),
                            message: format!("no builtin template `{name}`"),
                            snippet: None,
                        },
                    )),
                },
                TemplateRef::File(path) | TemplateRef::Source(path) => {
                    read(path).map(|text| Registered::new(text, path.clone(), 0))
                }
            };
            let loaded = loaded.and_then(|t| {
                register(&mut registry, &template_name, &t).map_err(|d| failed(0, d))?;
                Ok(t)
            });
            let loaded = match loaded {
                Ok(t) => Some(t),
                Err(e) => {
                    errors.push(e);
                    None
                }
            };
            templates.insert(template_name.clone(), loaded);
        }
        let Some(template) = &templates[&template_name] else {
            continue;
        };
        let mut files = vec![template.line_name.clone()];
        files.extend(partials.iter().map(|(_, p)| p.line_name.clone()));
        for index in 0..k.specialisations.len() {
            let data = template_data(plan, index);
            match registry.render(&template_name, &data) {
                Ok(body) => {
                    let file_name = format!("{stem}_s{index}.cpp");
                    let text = assemble(plan, index, &body, &files, &file_name);
                    sources.push(Source {
                        kernel: k.name.clone(),
                        specialisation: index,
                        file_name,
                        text,
                    });
                }
                Err(e) => {
                    let d = render_diagnostic(&e, &template_name, template, &partials, &data);
                    let e = failed(index, d);
                    if !errors.iter().any(|x| same_problem(x, &e)) {
                        errors.push(e);
                    }
                    break;
                }
            }
        }
    }
    (sources, errors)
}

/// Whether two template errors are one problem met by two kernels.
fn same_problem(a: &Error, b: &Error) -> bool {
    match (a, b) {
        (Error::Template { diagnostic: x, .. }, Error::Template { diagnostic: y, .. }) => x == y,
        _ => false,
    }
}

/// Registers `template` under `name`: its body checked unmarked first, so
/// that syntax errors are located in the text as written, then with markers
/// (or without, should the markers not parse).
fn register(
    registry: &mut Handlebars<'_>,
    name: &str,
    template: &Registered,
) -> Result<(), Diagnostic> {
    if let Err(e) = registry.register_template_string(name, template.body()) {
        let (line, column) = e.pos().unwrap_or((1, 1));
        let pos = template.position(line, column, false);
        let message = match e.reason() {
            // Handlebars lists the grammar rules it expected; the position
            // says more.
            TemplateErrorReason::InvalidSyntax(_) => {
                let end = crate::diag::end_position(template.body());
                if (line, column) >= (end.line as usize, end.column as usize) {
                    "template syntax: the template ends inside a block or tag \
                     (a `{{#…}}` without its `{{/…}}`?)"
                        .to_owned()
                } else {
                    "template syntax: invalid handlebars syntax".to_owned()
                }
            }
            other => format!("template syntax: {other}"),
        };
        return Err(template.diagnostic(pos, message));
    }
    if template.marked.is_some()
        && registry
            .register_template_string(name, template.registered_text())
            .is_err()
    {
        let _ = registry.register_template_string(name, template.body());
    }
    Ok(())
}

/// A render error as a diagnostic located in the template or partial it
/// happened in.
fn render_diagnostic(
    e: &handlebars::RenderError,
    template_name: &str,
    template: &Registered,
    partials: &[(&str, Registered)],
    data: &Value,
) -> Diagnostic {
    let file = match e.template_name.as_deref() {
        Some(name) if name != template_name => partials
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(template, |(_, p)| p),
        _ => template,
    };
    let pos = match (e.line_no, e.column_no) {
        (Some(line), Some(column)) => file.position(line, column, true),
        _ => file.position(1, 1, false),
    };
    let message = match e.reason() {
        RenderErrorReason::MissingVariable(Some(path)) => {
            let names = available(data, path);
            let mut message = format!("unknown variable `{path}`");
            if !names.is_empty() {
                message.push_str("; available: ");
                let shown: Vec<String> = names.iter().take(12).map(|n| format!("`{n}`")).collect();
                message.push_str(&shown.join(", "));
                if names.len() > 12 {
                    message.push_str(", …");
                }
            }
            message
        }
        RenderErrorReason::MissingVariable(None) => "unknown variable".to_owned(),
        RenderErrorReason::HelperNotFound(name) => format!("unknown helper `{name}`"),
        RenderErrorReason::PartialNotFound(name) => format!(
            "unknown partial `{name}`; available: {}",
            partials
                .iter()
                .map(|(n, _)| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    };
    file.diagnostic(pos, message)
}

/// The variables beside the first part of `path` that does not exist in
/// `data`: the members of the deepest object (or array) on the path, as
/// full paths, sorted.
fn available(data: &Value, path: &str) -> Vec<String> {
    let path = path
        .strip_prefix("@root.")
        .or_else(|| path.strip_prefix("this."))
        .or_else(|| path.strip_prefix("./"))
        .unwrap_or(path);
    let mut at = data;
    let mut prefix = String::new();
    for segment in path.split(['.', '/']).filter(|s| !s.is_empty()) {
        let key = segment.trim_start_matches('[').trim_end_matches(']');
        let next = match at {
            Value::Object(map) => map.get(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        match next {
            Some(v @ (Value::Object(_) | Value::Array(_))) => {
                if !prefix.is_empty() {
                    prefix.push('.');
                }
                if matches!(at, Value::Array(_)) {
                    prefix.push_str(&format!("[{key}]"));
                } else {
                    prefix.push_str(key);
                }
                at = v;
            }
            _ => break,
        }
    }
    let join = |name: String| {
        if prefix.is_empty() {
            name
        } else {
            format!("{prefix}.{name}")
        }
    };
    let mut names: Vec<String> = match at {
        Value::Object(map) => map.keys().map(|k| join(k.clone())).collect(),
        Value::Array(items) => (0..items.len()).map(|i| join(format!("[{i}]"))).collect(),
        _ => Vec::new(),
    };
    names.sort();
    names
}

/// The C++ expression for a dim's size in specialisation `index`.
fn dim_expr(plan: &Plan<'_>, index: usize, dim: usize) -> String {
    match &plan.kernel.dims[dim].size {
        DimSize::Fixed(n) => format!("{n}u"),
        DimSize::Static(_) => {
            let value = plan.kernel.specialisations[index]
                .0
                .iter()
                .find(|(d, _)| *d == dim)
                .map_or(0, |(_, v)| *v);
            format!("{value}u")
        }
        DimSize::Dynamic => format!("pypto_tiling.dim[{}]", plan.dynamic_index(dim)),
    }
}

fn product(factors: &[String]) -> String {
    match factors {
        [] => "1ull".to_owned(),
        _ => format!(
            "(static_cast<uint64_t>({}))",
            factors.join(") * static_cast<uint64_t>(")
        ),
    }
}

/// The variables a template sees; documented in `templates/README.md`.
fn template_data(plan: &Plan<'_>, index: usize) -> Value {
    let k = plan.kernel;
    let mut args = serde_json::Map::new();
    let mut tensor_index = 0usize;
    let mut scalar_index = 0usize;
    let mut first_dtype = None;
    for (p, role) in k.params.iter().zip(&plan.roles) {
        let value = match &p.kind {
            ParamKind::Tensor {
                dtype,
                output,
                axes,
            } => {
                first_dtype.get_or_insert(dtype.cpp_type());
                let sizes: Vec<String> =
                    axes.iter().map(|a| dim_expr(plan, index, a.dim)).collect();
                let (outer, inner) = sizes.split_at(sizes.len() - 1);
                let v = json!({
                    "name": p.name,
                    "type": dtype.cpp_type(),
                    "rank": axes.len(),
                    "output": output,
                    "index": tensor_index,
                    "axes": sizes,
                    "numel": product(&sizes),
                    "outer": product(outer),
                    "inner": inner[0],
                });
                tensor_index += 1;
                v
            }
            ParamKind::Scalar(dtype) => {
                let v = json!({
                    "name": p.name,
                    "type": dtype.cpp_type(),
                    "value": format!("pypto_scalar<{}>(pypto_tiling.scalar[{scalar_index}])", dtype.cpp_type()),
                });
                scalar_index += 1;
                v
            }
        };
        args.insert(role.clone(), value);
    }
    let dims: Vec<Value> = (0..k.dims.len())
        .map(|d| json!({ "index": d, "expr": dim_expr(plan, index, d) }))
        .collect();
    let entry_params: Vec<String> = k
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Tensor { .. }))
        .map(|p| format!("GM_ADDR {}", p.name))
        .chain(k.workspace.map(|_| format!("GM_ADDR {WORKSPACE_PARAM}")))
        .chain(std::iter::once("GM_ADDR pypto_tiling_gm".to_owned()))
        .collect();
    let options: serde_json::Map<String, Value> = k
        .options
        .iter()
        .map(|(name, value)| {
            let v = match value {
                crate::model::OptionValue::Int(i) => json!(i),
                crate::model::OptionValue::Bool(b) => json!(b),
            };
            (name.clone(), v)
        })
        .collect();
    json!({
        "kernel": k.name,
        "options": options,
        "symbol": plan.entry_symbol(index),
        // Templates may write it into a comment: a path of one line.
        "spec": crate::diag::display_path(&k.origin.path),
        "template": k.template.to_string(),
        "specialisation": plan.describe_specialisation(index),
        "dtype": first_dtype.unwrap_or("float"),
        "args": args,
        "dims": dims,
        "entry_params": entry_params.join(", "),
        // The scratch a launch lends the kernel (contract `workspace:`).
        "workspace": k.workspace.map(|bytes| json!({ "name": WORKSPACE_PARAM, "bytes": bytes })),
        "load_tiling": "PyptoTiling pypto_tiling;\n    pypto_load_tiling(pypto_tiling, pypto_tiling_gm);",
    })
}

/// The entry parameter that receives a kernel's workspace, after the
/// tensors (a template names it as `{{workspace.name}}`).
const WORKSPACE_PARAM: &str = "pypto_workspace";

/// The tiling struct, laid out as pypto-rt writes it, and its readers.
fn tiling_preamble(out: &mut String, plan: &Plan<'_>) {
    let k = plan.kernel;
    let scalars = k
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Scalar(_)))
        .count();
    out.push_str("namespace {\n\n");
    out.push_str("// Launch-time data, laid out as pypto-rt writes it: each DYNAMIC dim's\n// size, then the scalar arguments' bits.\nstruct PyptoTiling {\n");
    let dynamic = k
        .dims
        .iter()
        .filter(|d| matches!(d.size, DimSize::Dynamic))
        .count();
    // Only DYNAMIC dims travel; fixed and STATIC sizes are constants here.
    if dynamic > 0 {
        let _ = writeln!(out, "    uint32_t dim[{dynamic}];");
    }
    if scalars > 0 {
        let _ = writeln!(out, "    uint64_t scalar[{scalars}];");
    }
    out.push_str(
        "};\n\n\
         __aicore__ inline void pypto_load_tiling(PyptoTiling& tiling, GM_ADDR gm)\n{\n    \
         const __gm__ uint32_t* src = reinterpret_cast<const __gm__ uint32_t*>(gm);\n    \
         uint32_t* dst = reinterpret_cast<uint32_t*>(&tiling);\n    \
         for (uint32_t i = 0; i < sizeof(PyptoTiling) / sizeof(uint32_t); ++i) {\n        \
         dst[i] = src[i];\n    }\n}\n\n\
         template <typename T>\n\
         __aicore__ inline T pypto_scalar(uint64_t bits)\n{\n    \
         T value;\n    __builtin_memcpy(&value, &bits, sizeof(T));\n    return value;\n}\n\n\
         } // namespace\n\n",
    );
}

/// The emulation's block runner for the kernel's core kind.
fn block_runner(plan: &Plan<'_>) -> &'static str {
    match plan.kernel.cores {
        CoreKind::Vector => "run_block",
        CoreKind::Cube => "run_cube_block",
        CoreKind::Mixed => "run_mixed_block",
    }
}

/// The macro of the architecture row kernel `k` is emulated as on the
/// host, if not the default row: a kernel built for one architecture only
/// is emulated as that architecture.
pub(crate) fn host_row_define(k: &crate::model::Kernel) -> Option<&'static str> {
    match crate::tables::arches(&k.targets)[..] {
        [arch] => arch.host_define(),
        _ => None,
    }
}

/// On the host, the macro of the row kernel `k` is emulated as, which the
/// emulation's headers test (`pypto_emu/arch.h`).
fn host_arch_define(out: &mut String, k: &crate::model::Kernel) {
    if let Some(define) = host_row_define(k) {
        let _ = writeln!(
            out,
            "#if defined(PYPTO_HOST_BACKEND)\n#define {define} 1\n#endif"
        );
    }
}

/// The spec's `defines:`, for the kernel's own code only: defined just
/// before it and undefined after, so that neither the emulation's headers
/// nor the shim see them.
fn define_macros(out: &mut String, k: &crate::model::Kernel) {
    if k.defines.is_empty() {
        return;
    }
    out.push_str("// The spec's `defines:`.\n");
    for (name, value) in &k.defines {
        let _ = writeln!(out, "#define {name} {value}");
    }
}

fn undefine_macros(out: &mut String, k: &crate::model::Kernel) {
    for (name, _) in &k.defines {
        let _ = writeln!(out, "#undef {name}");
    }
}

/// Standard headers included before a brought source's anonymous
/// namespace, so that the source's own includes of them are no-ops there.
const STD_HEADERS: &[&str] = &[
    "algorithm",
    "array",
    "cmath",
    "cstddef",
    "cstdint",
    "cstdio",
    "cstdlib",
    "cstring",
    "limits",
    "type_traits",
    "utility",
];

/// A `source:` kernel's file: the source included unchanged from where it
/// is (on the host inside an anonymous namespace, so that its classes cannot
/// meet another source's of the same name at link time), its entry and its
/// other C-linkage names (which no namespace makes internal) renamed to
/// symbols of the kernel's own and undefined again after it, and the host
/// shim and NPU stub passing tensors and scalars in spec order.
fn assemble_source(plan: &Plan<'_>, index: usize, path: &Path, file_name: &str) -> String {
    let k = plan.kernel;
    let entry = k.entry.as_deref().unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Generated by pypto-build from {} (kernel `{}`, source `{}`, entry `{entry}`).\n\
         // Do not edit.",
        k.origin, k.name, k.template
    );
    host_arch_define(&mut out, k);
    out.push_str("#include \"kernel_operator.h\"\n");
    if k.tiling.is_some() {
        // The `tiling:` checks' traits, on both backends.
        out.push_str("#include <type_traits>\n");
    }
    out.push_str("#if defined(PYPTO_HOST_BACKEND)\n");
    for header in STD_HEADERS {
        let _ = writeln!(out, "#include <{header}>");
    }
    // The source's own `<headers>`, where the host has them: outside the
    // namespace the source is wrapped in (inside it, `<iostream>` would
    // declare `std` in the wrong place).
    for header in k
        .system_headers
        .iter()
        .filter(|h| !STD_HEADERS.contains(&h.as_str()))
    {
        let _ = writeln!(
            out,
            "#if __has_include(<{header}>)\n#include <{header}>\n#endif"
        );
    }
    // A whole program's host runtime, ahead of the namespace too.
    if k.host_text.is_some() {
        out.push_str("#include \"acl/acl.h\"\n");
    }
    out.push_str("#endif\n\n");
    tiling_preamble(&mut out, plan);
    // The source is included where it is, not copied: its own quoted
    // includes resolve beside it, and the compiler lists it and every
    // header it reads in its dependency output (the object cache's key and
    // Cargo's reruns). Its path was checked to be inside the package and
    // free of `"` when the spec was.
    let real = path
        .canonicalize()
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf());
    define_macros(&mut out, k);
    let _ = writeln!(
        out,
        "// The source's entry, renamed so that no two kernels share a symbol.\n\
         #define {entry} {}",
        plan.entry_symbol(index)
    );
    if !k.c_names.is_empty() {
        out.push_str(
            "// Its other names of C linkage, renamed too: no namespace makes them internal.\n",
        );
        for name in &k.c_names {
            let _ = writeln!(out, "#define {name} {}", plan.c_symbol(index, name));
        }
    }
    // A whole vendor program's `main` is kept out of the program's: renamed
    // to a symbol of the kernel's own and never called. On the host, the
    // vendor's CPU debug macros.
    let _ = writeln!(
        out,
        "#define main {}\n#if defined(PYPTO_HOST_BACKEND)\n\
         #define ASCENDC_CPU_DEBUG 1\n#define __CCE_KT_TEST__ 1\n\
         // In the namespace, an entry another copy of the source launches is unused.\n\
         #pragma GCC diagnostic push\n#pragma GCC diagnostic ignored \"-Wunused-function\"\n\
         namespace {{\n#endif",
        plan.c_symbol(index, "main")
    );
    let _ = writeln!(out, "// ---- source {} ----", k.template);
    match (&k.host_text, &k.npu_text) {
        // A whole program: its copies, the host's with its launches blanked
        // for g++, under `#line` so that errors name the file's lines.
        (Some(host), Some(npu)) => {
            let at = lines::c_string(&real.display().to_string());
            let _ = writeln!(
                out,
                "#if defined(PYPTO_HOST_BACKEND)\n#line 1 {at}\n{}\n#else\n#line 1 {at}\n{}\n#endif",
                host.trim_end(),
                npu.trim_end()
            );
        }
        _ => {
            let _ = writeln!(out, "#include \"{}\"", real.display());
        }
    }
    let _ = writeln!(
        out,
        "#if defined(PYPTO_HOST_BACKEND)\n}} // namespace\n#pragma GCC diagnostic pop\n#undef ASCENDC_CPU_DEBUG\n\
         #undef __CCE_KT_TEST__\n#endif\n#undef main\n\
         // The code below names the renamed symbols itself.\n#undef {entry}"
    );
    for name in &k.c_names {
        let _ = writeln!(out, "#undef {name}");
    }
    undefine_macros(&mut out, k);
    tiling_checks(&mut out, plan, index, file_name);
    entry_check(&mut out, plan, index, file_name);
    // Each param's expression, host and NPU; the entry takes them in
    // `entry_args` order (a `tiling:` struct among them).
    let mut tensor = 0usize;
    let mut scalar = 0usize;
    let mut host_param = Vec::new();
    let mut device_param = Vec::new();
    for p in &k.params {
        match &p.kind {
            ParamKind::Tensor { .. } => {
                // To the entry's `GM_ADDR` or `__gm__ T*`, whichever it takes.
                host_param.push(format!(
                    "pypto_gm_arg{{static_cast<GM_ADDR>(launch->args[{tensor}])}}"
                ));
                device_param.push(format!("args[{tensor}]"));
                tensor += 1;
            }
            ParamKind::Scalar(dtype) => {
                let value = scalar_expr(dtype.cpp_type(), scalar);
                host_param.push(value.clone());
                device_param.push(value);
                scalar += 1;
            }
        }
    }
    let mut host_args = Vec::new();
    let mut device_args = Vec::new();
    for (i, arg) in k.entry_args().iter().enumerate() {
        match arg {
            EntryArg::Param(p) => {
                host_args.push(host_param[*p].clone());
                device_args.push(match &k.params[*p].kind {
                    ParamKind::Tensor { .. } => format!(
                        "(typename pypto_npu_param<decltype({}), {i}>::type)({})",
                        entry_instance(plan, index),
                        device_param[*p]
                    ),
                    ParamKind::Scalar(_) => device_param[*p].clone(),
                });
            }
            EntryArg::Tiling => {
                host_args.push("pypto_tiling_struct".to_owned());
                device_args.push("pypto_tiling_struct".to_owned());
            }
        }
    }
    let (host_build, npu_build) = tiling_build(plan, index);
    let _ = writeln!(
        out,
        "\n// ---- host backend launch shim ----\n#if defined(PYPTO_HOST_BACKEND)\n\
         namespace {{\n// A tensor's address, as the entry's `GM_ADDR` or `__gm__ T*`.\n\
         struct pypto_gm_arg {{\n    GM_ADDR pypto_address;\n    \
         template <typename PyptoT>\n    operator PyptoT*() const {{ return reinterpret_cast<PyptoT*>(pypto_address); }}\n}};\n\
         }} // namespace\n\
         extern \"C\" int32_t {}(pypto_emu::HostLaunch* launch)\n{{\n    \
         return pypto_emu::{}(launch, [&] {{\n        PyptoTiling pypto_tiling;\n        \
         pypto_load_tiling(pypto_tiling, reinterpret_cast<GM_ADDR>(const_cast<uint8_t*>(launch->tiling)));\n        \
         (void)pypto_tiling;\n{host_build}        pypto_emu::EntryCall<pypto_entry_ok>::call(&{}, {});\n    }});\n}}\n#endif",
        plan.host_symbol(index),
        block_runner(plan),
        entry_instance(plan, index),
        host_args.join(",\n            ")
    );
    let _ = writeln!(
        out,
        "\n// ---- NPU launch stub (compiled by bisheng; args are device addresses, then\n\
         // the tiling's device and host addresses; scalars are read from the host copy) ----\n\
         #if !defined(PYPTO_HOST_BACKEND)\n\
         // The type of an entry's I-th parameter: a tensor's address is cast to it.\n\
         template <unsigned PyptoI, typename... PyptoA>\nstruct pypto_npu_nth {{\n    using type = void;\n}};\n\
         template <typename PyptoH, typename... PyptoT>\nstruct pypto_npu_nth<0, PyptoH, PyptoT...> {{\n    using type = PyptoH;\n}};\n\
         template <unsigned PyptoI, typename PyptoH, typename... PyptoT>\n\
         struct pypto_npu_nth<PyptoI, PyptoH, PyptoT...> : pypto_npu_nth<PyptoI - 1, PyptoT...> {{}};\n\
         template <typename PyptoF, unsigned PyptoI>\nstruct pypto_npu_param;\n\
         template <typename PyptoR, typename... PyptoA, unsigned PyptoI>\n\
         struct pypto_npu_param<PyptoR(PyptoA...), PyptoI> : pypto_npu_nth<PyptoI, PyptoA...> {{}};\n\
         extern \"C\" int32_t {}(uint32_t block_num, void* stream, void** args)\n{{\n    \
         const PyptoTiling& pypto_tiling = *static_cast<const PyptoTiling*>(args[{}]);\n    \
         (void)pypto_tiling;\n{npu_build}{}    {}<<<block_num, nullptr, stream>>>({});\n    return 0;\n}}\n#endif",
        plan.npu_symbol(index),
        tensor + 1,
        fake_npu_cores(plan),
        entry_instance(plan, index),
        device_args.join(", ")
    );
    out
}

/// A scalar param's value, read from the launch's tiling.
fn scalar_expr(cpp_type: &str, slot: usize) -> String {
    format!("pypto_scalar<{cpp_type}>(pypto_tiling.scalar[{slot}])")
}

/// What a `tiling:` struct's NPU stub returns when a value does not fit
/// its field (pypto-rt's `TILING_RANGE_STATUS`).
const TILING_RANGE_STATUS: u32 = 0x7074_0001;

/// A `tiling:` field's value as a C++ expression (`unsigned long long`,
/// `long long`, `double` or a scalar's type), and whether it is known
/// when the kernel is built.
fn tiling_value(plan: &Plan<'_>, index: usize, value: &TilingValue) -> (String, bool) {
    let k = plan.kernel;
    let dims_of = |of: &SizeOf| -> Vec<usize> {
        match of {
            SizeOf::Axis(p, a) => match &k.params[*p].kind {
                ParamKind::Tensor { axes, .. } => vec![axes[*a].dim],
                ParamKind::Scalar(_) => Vec::new(),
            },
            SizeOf::Numel(p) => match &k.params[*p].kind {
                ParamKind::Tensor { axes, .. } => axes.iter().map(|a| a.dim).collect(),
                ParamKind::Scalar(_) => Vec::new(),
            },
        }
    };
    match value {
        TilingValue::Int(v) if *v == i128::from(i64::MIN) => {
            ("(-9223372036854775807ll - 1)".to_owned(), true)
        }
        TilingValue::Int(v) if *v < 0 => (format!("({v}ll)"), true),
        TilingValue::Int(v) if *v > i128::from(i64::MAX) => (format!("{v}ull"), true),
        TilingValue::Int(v) => (format!("{v}ll"), true),
        TilingValue::Float(v) => (format!("{v:?}"), true),
        TilingValue::Size(of) => {
            let dims = dims_of(of);
            let sizes: Vec<String> = dims.iter().map(|&d| dim_expr(plan, index, d)).collect();
            let constant = dims
                .iter()
                .all(|&d| !matches!(k.dims[d].size, DimSize::Dynamic));
            (
                format!("static_cast<unsigned long long>({})", product(&sizes)),
                constant,
            )
        }
        TilingValue::Scalar(p) => {
            let slot = k.params[..*p]
                .iter()
                .filter(|q| matches!(q.kind, ParamKind::Scalar(_)))
                .count();
            let cpp = match &k.params[*p].kind {
                ParamKind::Scalar(dtype) => dtype.cpp_type(),
                ParamKind::Tensor { .. } => "uint64_t",
            };
            (scalar_expr(cpp, slot), false)
        }
    }
}

/// After a brought source with `tiling:`, on both backends: the field
/// setters the launch code calls, and compile-time checks located at the
/// spec: the struct is a plain struct, each field exists and takes its
/// value's kind, literal and built-in sizes fit, and every field is given.
fn tiling_checks(out: &mut String, plan: &Plan<'_>, index: usize, file_name: &str) {
    let k = plan.kernel;
    let Some(t) = &k.tiling else {
        return;
    };
    let spec = lines::c_string(&display_path(&k.origin.path));
    let resume = |out: &mut String| {
        let _ = writeln!(
            out,
            "#line {} {}",
            out.lines().count() + 2,
            lines::c_string(file_name)
        );
    };
    let s = &t.struct_name;
    out.push_str(
        "\n// ---- the `tiling:` struct's fields, checked against the spec and set ----\n\
         namespace {\n\
         // Converts to anything: counts the fields of an aggregate.\n\
         struct pypto_tiling_any {\n    template <typename PyptoT>\n    operator PyptoT() const;\n};\n\
         template <typename PyptoT, typename... PyptoA>\n\
         constexpr decltype(void(PyptoT{PyptoA{}...}), true) pypto_tiling_takes(int) { return true; }\n\
         template <typename PyptoT, typename... PyptoA>\nconstexpr bool pypto_tiling_takes(...) { return false; }\n\
         // PyptoA field the spec may set: an integer, bool or floating-point one.\n\
         template <typename PyptoF>\nconstexpr bool pypto_tiling_number()\n{\n    \
         return std::is_arithmetic<PyptoF>::value && !std::is_const<PyptoF>::value;\n}\n\
         // Field type PyptoF accepts a value of type PyptoV: no number into an integer field.\n\
         template <typename PyptoF, typename PyptoV>\nconstexpr bool pypto_tiling_kind_ok()\n{\n    \
         return !(std::is_integral<PyptoF>::value && !std::is_integral<PyptoV>::value);\n}\n\
         // Field type PyptoF holds value pypto_v exactly (integers), or at all (floats).\n\
         template <typename PyptoF, typename PyptoV>\nconstexpr bool pypto_tiling_fits(PyptoV pypto_v)\n{\n    \
         if constexpr (std::is_same<PyptoF, bool>::value) {\n        return pypto_v == PyptoV(0) || pypto_v == PyptoV(1);\n    \
         } else if constexpr (std::is_integral<PyptoF>::value && std::is_integral<PyptoV>::value) {\n        \
         constexpr unsigned pypto_bits = 8 * sizeof(PyptoF) - (std::is_signed<PyptoF>::value ? 1 : 0);\n        \
         constexpr unsigned long long pypto_max = pypto_bits >= 64 ? ~0ull : (1ull << pypto_bits) - 1;\n        \
         if constexpr (std::is_signed<PyptoV>::value) {\n            if (pypto_v < PyptoV(0)) {\n                \
         return std::is_signed<PyptoF>::value && (0ull - static_cast<unsigned long long>(pypto_v)) <= pypto_max + 1;\n            \
         }\n        }\n        return static_cast<unsigned long long>(pypto_v) <= pypto_max;\n    \
         } else if constexpr (std::is_floating_point<PyptoF>::value && sizeof(PyptoF) == 4 && std::is_floating_point<PyptoV>::value) {\n        \
         return pypto_v <= PyptoV(3.4028234663852886e38) && pypto_v >= PyptoV(-3.4028234663852886e38);\n    \
         } else {\n        return pypto_tiling_kind_ok<PyptoF, PyptoV>();\n    }\n}\n",
    );
    let at = |out: &mut String, pos: Pos, cond: &str, message: &str| {
        let _ = writeln!(
            out,
            "static_assert(\n#line {} {spec}\n{:indent$}{cond}, {message});",
            pos.line,
            "",
            indent = pos.column.saturating_sub(1) as usize
        );
    };
    let _ = writeln!(
        out,
        "constexpr bool pypto_tiling_plain = std::is_class<{s}>::value && \
         std::is_aggregate<{s}>::value && std::is_trivially_copyable<{s}>::value;"
    );
    let message = lines::c_string(&format!(
        "kernel `{}`, `tiling`: `{s}` is not a plain struct (an aggregate of fields, \
         trivially copyable), which the launch builds field by field and copies",
        k.name
    ));
    at(out, t.pos, "pypto_tiling_plain", &message);
    resume(out);
    let mut all_found = Vec::new();
    for (i, f) in t.fields.iter().enumerate() {
        let name = &f.name;
        let (expr, constant) = tiling_value(plan, index, &f.value);
        let _ = writeln!(
            out,
            "template <typename PyptoT, typename = void>\nstruct pypto_tiling_f{i} {{\n    \
             static constexpr bool found = false;\n    using type = int;\n}};\n\
             template <typename PyptoT>\nstruct pypto_tiling_f{i}<PyptoT, decltype(void(std::declval<PyptoT&>().{name}))> {{\n    \
             static constexpr bool found = true;\n    \
             using type = typename std::remove_reference<decltype(std::declval<PyptoT&>().{name})>::type;\n}};\n\
             template <typename PyptoT, typename PyptoV>\nbool pypto_tiling_set{i}(PyptoT& pypto_s, PyptoV pypto_v)\n{{\n    \
             using PyptoF = typename pypto_tiling_f{i}<PyptoT>::type;\n    \
             if constexpr (pypto_tiling_f{i}<PyptoT>::found && pypto_tiling_number<PyptoF>() && pypto_tiling_kind_ok<PyptoF, PyptoV>()) {{\n        \
             if (!pypto_tiling_fits<PyptoF>(pypto_v)) {{\n            return false;\n        }}\n        \
             pypto_s.{name} = static_cast<PyptoF>(pypto_v);\n    }}\n    return true;\n}}\n\
             using pypto_tiling_t{i} = typename pypto_tiling_f{i}<{s}>::type;\n\
             using pypto_tiling_v{i} = decltype({expr_type});\n\
             constexpr bool pypto_tiling_found{i} = !pypto_tiling_plain || pypto_tiling_f{i}<{s}>::found;",
            expr_type = match &f.value {
                TilingValue::Int(v) if *v > i128::from(i64::MAX) => "0ull".to_owned(),
                TilingValue::Int(_) => "0ll".to_owned(),
                TilingValue::Float(_) => "0.0".to_owned(),
                TilingValue::Size(_) => "0ull".to_owned(),
                TilingValue::Scalar(p) => match &k.params[*p].kind {
                    ParamKind::Scalar(dtype) => format!("std::declval<{}>()", dtype.cpp_type()),
                    ParamKind::Tensor { .. } => "0ull".to_owned(),
                },
            }
        );
        let said = match &f.value {
            TilingValue::Int(v) => format!("the integer {v}"),
            TilingValue::Float(v) => format!("the number {v:?}"),
            TilingValue::Size(_) => "a size".to_owned(),
            TilingValue::Scalar(p) => format!("scalar `{}`", k.params[*p].name),
        };
        let message = lines::c_string(&format!(
            "kernel `{}`, `tiling`, field `{name}`: `{s}` has no field `{name}`",
            k.name
        ));
        at(out, f.pos, &format!("pypto_tiling_found{i}"), &message);
        resume(out);
        let _ = writeln!(
            out,
            "constexpr bool pypto_tiling_number{i} = !pypto_tiling_plain || !pypto_tiling_found{i} || \
             pypto_tiling_number<pypto_tiling_t{i}>();"
        );
        let message = lines::c_string(&format!(
            "kernel `{}`, `tiling`, field `{name}`: `{s}::{name}` is not an integer, bool or \
             floating-point field the launch can set (a const, array, pointer or class \
             field); give the struct plain numeric fields",
            k.name
        ));
        at(out, f.pos, &format!("pypto_tiling_number{i}"), &message);
        resume(out);
        let _ = writeln!(
            out,
            "constexpr bool pypto_tiling_kind{i} = !pypto_tiling_plain || !pypto_tiling_found{i} || \
             pypto_tiling_kind_ok<pypto_tiling_t{i}, pypto_tiling_v{i}>();"
        );
        let message = lines::c_string(&format!(
            "kernel `{}`, `tiling`, field `{name}`: `{s}::{name}` is an integer field, and the \
             spec gives it {said}, which is not an integer",
            k.name
        ));
        at(out, f.pos, &format!("pypto_tiling_kind{i}"), &message);
        resume(out);
        if constant {
            let _ = writeln!(
                out,
                "constexpr bool pypto_tiling_fit{i} = !pypto_tiling_plain || !pypto_tiling_found{i} || \
                 !pypto_tiling_number<pypto_tiling_t{i}>() || \
                 !pypto_tiling_kind_ok<pypto_tiling_t{i}, pypto_tiling_v{i}>() || \
                 pypto_tiling_fits<pypto_tiling_t{i}>({expr});"
            );
            let value = match &f.value {
                TilingValue::Size(_) => {
                    let (e, _) = tiling_value(plan, index, &f.value);
                    format!(
                        "a size ({})",
                        e.trim_start_matches("static_cast<unsigned long long>(")
                            .trim_end_matches(')')
                    )
                }
                _ => said.clone(),
            };
            let message = lines::c_string(&format!(
                "kernel `{}`, `tiling`, field `{name}`: the type of `{s}::{name}` cannot hold \
                 {value}",
                k.name
            ));
            at(out, f.pos, &format!("pypto_tiling_fit{i}"), &message);
            resume(out);
        }
        all_found.push(format!("pypto_tiling_found{i}"));
    }
    let n = t.fields.len();
    let _ = writeln!(
        out,
        "constexpr bool pypto_tiling_all = !pypto_tiling_plain || !({}) || \
         !pypto_tiling_takes<{s}, {}>(0);",
        all_found.join(" && "),
        vec!["pypto_tiling_any"; n + 1].join(", ")
    );
    let message = lines::c_string(&format!(
        "kernel `{}`, `tiling`: `{s}` has more fields than the {n} the spec gives; give every \
         field a value (fields are numbers: arrays and nested structs are not supported)",
        k.name
    ));
    at(out, t.pos, "pypto_tiling_all", &message);
    resume(out);
    out.push_str("} // namespace\n");
}

/// The statements that build a `tiling:` struct (`pypto_tiling_struct`)
/// in the host shim (a value that does not fit is the kernel's error) and
/// in the NPU stub (it returns [`TILING_RANGE_STATUS`]); empty without one.
fn tiling_build(plan: &Plan<'_>, index: usize) -> (String, String) {
    let k = plan.kernel;
    let Some(t) = &k.tiling else {
        return (String::new(), String::new());
    };
    let s = &t.struct_name;
    let mut host = format!("        {s} pypto_tiling_struct{{}};\n");
    let mut npu = format!("    {s} pypto_tiling_struct{{}};\n");
    for (i, f) in t.fields.iter().enumerate() {
        let (expr, _) = tiling_value(plan, index, &f.value);
        let said = match &f.value {
            TilingValue::Scalar(p) => format!("the value of scalar `{}`", k.params[*p].name),
            _ => "the size ".to_owned(),
        };
        let shown = match &f.value {
            TilingValue::Scalar(_) => String::new(),
            _ => format!(", {expr}"),
        };
        let message = lines::c_string(&format!(
            "`tiling`, field `{}`: the type of `{s}::{}` cannot hold {said}",
            f.name, f.name
        ));
        let _ = writeln!(
            host,
            "        if (!pypto_tiling_set{i}(pypto_tiling_struct, {expr})) {{\n            \
             pypto_emu::fail({message}{shown});\n        }}"
        );
        let _ = writeln!(
            npu,
            "    if (!pypto_tiling_set{i}(pypto_tiling_struct, {expr})) {{\n        \
             return {TILING_RANGE_STATUS:#x};\n    }}"
        );
    }
    (host, npu)
}

/// A `source:` kernel's entry as the generated code names it: its symbol,
/// instantiated with `template_args` (sizes as this specialisation's
/// constants) when it is a function template.
fn entry_instance(plan: &Plan<'_>, index: usize) -> String {
    let k = plan.kernel;
    let symbol = plan.entry_symbol(index);
    if k.template_args.is_empty() {
        return symbol;
    }
    let args: Vec<String> = k
        .template_args
        .iter()
        .map(|a| match a {
            TemplateArg::Type(dtype) => dtype.cpp_type().to_owned(),
            TemplateArg::Int(v) if *v < 0 => format!("({v})"),
            TemplateArg::Int(v) => v.to_string(),
            TemplateArg::Size(SizeOf::Axis(p, a)) => match &k.params[*p].kind {
                ParamKind::Tensor { axes, .. } => dim_expr(plan, index, axes[*a].dim),
                ParamKind::Scalar(_) => "0u".to_owned(),
            },
            TemplateArg::Size(SizeOf::Numel(p)) => match &k.params[*p].kind {
                ParamKind::Tensor { axes, .. } => {
                    let sizes: Vec<String> =
                        axes.iter().map(|a| dim_expr(plan, index, a.dim)).collect();
                    product(&sizes)
                }
                ParamKind::Scalar(_) => "0u".to_owned(),
            },
        })
        .collect();
    format!("{symbol}<{}>", args.join(", "))
}

/// What a rejected entry parameter is named by, at the index
/// `pypto_emu::entry_type_index` gives it (templates/include/pypto_emu/types.h);
/// the last for any other type.
const ENTRY_TYPE_NAMES: [(i32, &str); 24] = [
    (0, "bool"),
    (1, "int8_t"),
    (2, "uint8_t"),
    (3, "int16_t"),
    (4, "uint16_t"),
    (5, "int32_t"),
    (6, "uint32_t"),
    (7, "int64_t"),
    (8, "uint64_t"),
    (9, "float"),
    (10, "half"),
    (11, "bfloat16_t"),
    (12, "fp8_e4m3fn_t"),
    (13, "fp8_e5m2_t"),
    (14, "GM_ADDR"),
    (15, "char"),
    (16, "long"),
    (17, "unsigned long"),
    (18, "long long"),
    (19, "unsigned long long"),
    (20, "double"),
    (21, "another pointer type"),
    (22, "a reference"),
    (-1, "a type no spec dtype is passed as"),
];

/// On the host backend, after a brought source: compile-time checks that
/// its entry takes the spec's params, in number and type, each mismatch
/// one error located at the spec (the kernel's name for the count, the
/// param's dtype word for a type) that names the param, the spec's dtype
/// and the entry's C++ type; and `pypto_entry_ok`, which the shim's call
/// depends on, so that a rejected entry gives no second error from the call.
fn entry_check(out: &mut String, plan: &Plan<'_>, index: usize, file_name: &str) {
    let k = plan.kernel;
    let entry = k.entry.as_deref().unwrap_or_default();
    let symbol = entry_instance(plan, index);
    let spec = lines::c_string(&display_path(&k.origin.path));
    // `static_assert(cond, message)` with `cond`, a single name, at `pos` of
    // the spec: the compiler reports a failed assertion at its condition.
    let at = |out: &mut String, pos: Pos, cond: &str, message: &str| {
        let _ = writeln!(
            out,
            "static_assert(\n#line {} {spec}\n{:indent$}{cond}, {message});",
            pos.line,
            "",
            indent = pos.column.saturating_sub(1) as usize
        );
    };
    let args = k.entry_args();
    let tiling_name = k.tiling.as_ref().map_or("", |t| t.struct_name.as_str());
    let wanted: Vec<String> = args
        .iter()
        .map(|arg| match arg {
            EntryArg::Param(p) => {
                let p = &k.params[*p];
                match &p.kind {
                    ParamKind::Tensor { dtype, .. } => {
                        format!("{} (GM_ADDR or __gm__ {}*)", p.name, dtype.cpp_type())
                    }
                    ParamKind::Scalar(dtype) => {
                        format!("{} ({}, {dtype})", p.name, dtype.cpp_type())
                    }
                }
            }
            EntryArg::Tiling => format!("the `tiling:` struct ({tiling_name})"),
        })
        .collect();
    let _ = writeln!(
        out,
        "\n// ---- the entry's parameters checked against the spec ----\n\
         #if defined(PYPTO_HOST_BACKEND)\nnamespace {{\n\
         using pypto_entry = decltype({symbol});\n\
         constexpr bool pypto_entry_arity = pypto_emu::entry_arity<pypto_entry>() == {};",
        args.len()
    );
    let arity = lines::c_string(&format!(
        "kernel `{}`: entry `{entry}` does not take {} parameters; the spec passes, in \
         order: {}",
        k.name,
        args.len(),
        wanted.join(", ")
    ));
    at(out, k.origin.pos, "pypto_entry_arity", &arity);
    let mut oks = vec!["pypto_entry_arity".to_owned()];
    for (i, arg) in args.iter().enumerate() {
        let ty = format!("pypto_entry_p{i}");
        let ok = format!("pypto_entry_ok{i}");
        let (test, said, fix, pos, what) = match arg {
            EntryArg::Param(p) => {
                let p = &k.params[*p];
                let what = format!("param `{}`", p.name);
                match &p.kind {
                    ParamKind::Tensor { dtype, .. } => {
                        let cpp = dtype.cpp_type();
                        (
                            format!(
                                "(pypto_emu::entry_gm_ok<{ty}>() || (std::is_pointer<{ty}>::value \
                                 && std::is_same<typename std::remove_cv<typename \
                                 std::remove_pointer<{ty}>::type>::type, {cpp}>::value))"
                            ),
                            format!("a tensor ({dtype}) as GM_ADDR or __gm__ {cpp}*"),
                            format!("take it as GM_ADDR or __gm__ {cpp}*"),
                            p.pos,
                            what,
                        )
                    }
                    ParamKind::Scalar(dtype) => (
                        format!("pypto_emu::entry_scalar_ok<{}, {ty}>()", dtype.cpp_type()),
                        format!("{dtype} ({})", dtype.cpp_type()),
                        format!(
                            "declare the entry's parameter as {}, or change the spec's `scalar:` \
                             to the dtype the entry takes",
                            dtype.cpp_type()
                        ),
                        p.pos,
                        what,
                    ),
                }
            }
            EntryArg::Tiling => {
                let t = k.tiling.as_ref().map(|t| (t.pos, t.struct_name.as_str()));
                let (pos, name) = t.unwrap_or((k.origin.pos, ""));
                (
                    format!(
                        "std::is_same<typename std::remove_cv<typename \
                         std::remove_reference<{ty}>::type>::type, {name}>::value"
                    ),
                    format!("the `tiling:` struct `{name}` as parameter {i}"),
                    format!("take `{name}` by value there, or move it with `tiling: {{ at: N }}`"),
                    pos,
                    "`tiling`".to_owned(),
                )
            }
        };
        let _ = writeln!(
            out,
            "#line {} {}\nusing {ty} = pypto_emu::entry_param_t<pypto_entry, {i}>;\n\
             constexpr bool {ok} = !pypto_entry_arity || {test};",
            out.lines().count() + 2,
            lines::c_string(file_name)
        );
        for (c, (n, name)) in ENTRY_TYPE_NAMES.iter().enumerate() {
            let cond = format!("pypto_c{i}_{c}");
            let _ = writeln!(
                out,
                "constexpr bool {cond} = {ok} || pypto_emu::entry_type_index<{ty}>() != {n};"
            );
            let message = lines::c_string(&format!(
                "kernel `{}`, {what}: the spec passes {said}, but entry `{entry}` takes \
                 {name}; {fix}",
                k.name
            ));
            at(out, pos, &cond, &message);
            let _ = writeln!(
                out,
                "#line {} {}",
                out.lines().count() + 2,
                lines::c_string(file_name)
            );
        }
        oks.push(ok);
    }
    let _ = writeln!(
        out,
        "#line {} {}\nconstexpr bool pypto_entry_ok = {};\n}} // namespace\n#endif",
        out.lines().count() + 2,
        lines::c_string(file_name),
        oks.join(" && ")
    );
}

/// For the test toolkit's fake NPU only: the core kind of the next launch,
/// which a real NPU takes from the compiled kernel.
fn fake_npu_cores(plan: &Plan<'_>) -> String {
    match plan.kernel.cores {
        CoreKind::Vector => String::new(),
        kind => format!(
            "#if defined(PYPTO_FAKE_NPU)\n    pypto_fake_npu::next_launch_cores(\"{}\");\n#endif\n",
            kind.spec_name()
        ),
    }
}

/// Preamble + rendered template + host shim. The body's lines carry
/// `#line` directives naming `files` (see [`lines::resolve`]); the lines
/// after it are numbered as `file_name`'s own.
fn assemble(
    plan: &Plan<'_>,
    index: usize,
    body: &str,
    files: &[String],
    file_name: &str,
) -> String {
    let k = plan.kernel;
    let tensors: Vec<&str> = k
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Tensor { .. }))
        .map(|p| p.name.as_str())
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Generated by pypto-build from {} (kernel `{}`, template `{}`),\n\
         // specialisation {index}: {}. Do not edit.",
        k.origin,
        k.name,
        k.template,
        plan.describe_specialisation(index)
    );
    host_arch_define(&mut out, k);
    out.push_str("#include \"kernel_operator.h\"\n\n");
    tiling_preamble(&mut out, plan);
    define_macros(&mut out, k);
    let _ = writeln!(out, "// ---- template {} ----", k.template);
    lines::resolve(
        &mut out,
        body.trim_end(),
        files,
        &lines::c_string(file_name),
    );
    if !k.defines.is_empty() {
        out.push('\n');
        undefine_macros(&mut out, k);
    }
    out.push_str("\n// ---- host backend launch shim ----\n#if defined(PYPTO_HOST_BACKEND)\n");
    // The workspace travels as one more tensor, after the params'.
    let pointers = tensors.len() + usize::from(k.workspace.is_some());
    let call_args: Vec<String> = (0..pointers)
        .map(|i| format!("static_cast<GM_ADDR>(launch->args[{i}])"))
        .chain(std::iter::once(
            "reinterpret_cast<GM_ADDR>(const_cast<uint8_t*>(launch->tiling))".to_owned(),
        ))
        .collect();
    let _ = writeln!(
        out,
        "extern \"C\" int32_t {}(pypto_emu::HostLaunch* launch)\n{{\n    \
         return pypto_emu::{}(launch, [&] {{\n        {}({});\n    }});\n}}\n#endif",
        plan.host_symbol(index),
        block_runner(plan),
        plan.entry_symbol(index),
        call_args.join(",\n            ")
    );
    let device_args: Vec<String> = (0..=pointers)
        .map(|i| format!("static_cast<uint8_t*>(args[{i}])"))
        .collect();
    let _ = writeln!(
        out,
        "\n// ---- NPU launch stub (compiled by bisheng; args are device addresses,\n\
         // the tiling's last) ----\n#if !defined(PYPTO_HOST_BACKEND)\n\
         extern \"C\" int32_t {}(uint32_t block_num, void* stream, void** args)\n{{\n\
         {}    {}<<<block_num, nullptr, stream>>>({});\n    return 0;\n}}\n#endif",
        plan.npu_symbol(index),
        fake_npu_cores(plan),
        plan.entry_symbol(index),
        device_args.join(", ")
    );
    out
}

/// The source compiled for `arch`: `source` with its entry and stub renamed
/// to their per-architecture symbols.
pub fn for_arch(plan: &Plan<'_>, index: usize, arch: crate::tables::Arch, source: &str) -> String {
    let mut out = String::new();
    // A whole program's renamed `main` too, on the NPU an external symbol.
    let helpers = plan
        .kernel
        .c_names
        .iter()
        .map(|n| plan.c_symbol(index, n))
        .chain((plan.kernel.entry.is_some()).then(|| plan.c_symbol(index, "main")));
    for symbol in [plan.entry_symbol(index), plan.npu_symbol(index)]
        .into_iter()
        .chain(helpers)
    {
        let _ = writeln!(out, "#define {symbol} {}", Plan::for_arch(&symbol, arch));
    }
    out.push_str(source);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_templates_and_partials_take_markers() {
        let all = library::BUILTIN_TEMPLATES.iter().chain(library::PARTIALS);
        for (name, text) in all {
            let t = Registered::new((*text).to_owned(), PathBuf::from(*name), 0);
            assert!(t.marked.is_some(), "{name}");
            handlebars::Template::compile(t.registered_text())
                .unwrap_or_else(|e| panic!("{name} with markers: {e}"));
        }
    }

    #[test]
    fn front_matter_is_not_rendered_and_lines_count_from_the_file() {
        let t = Registered::new(
            "---\nparams: {}\n---\nint a;\n  {{nope}}\n".to_owned(),
            PathBuf::from("t.hbs"),
            0,
        );
        assert_eq!(t.body(), "int a;\n  {{nope}}\n");
        let mut registry = Handlebars::new();
        registry.set_strict_mode(true);
        register(&mut registry, "t.hbs", &t).unwrap();
        let e = registry
            .render("t.hbs", &json!({ "b": 1, "a": { "x": 1 } }))
            .unwrap_err();
        let d = render_diagnostic(&e, "t.hbs", &t, &[], &json!({ "b": 1, "a": { "x": 1 } }));
        assert_eq!(
            d.render(),
            "t.hbs:5:3: error: unknown variable `nope`; available: `a`, `b`\n  |\n5 |   {{nope}}\n  |   ^"
        );
        // A syntax error, located in the text as written.
        let t = Registered::new(
            "---\n---\n{{#if a}}\n".to_owned(),
            PathBuf::from("u.hbs"),
            0,
        );
        let d = register(&mut registry, "u.hbs", &t).unwrap_err();
        assert_eq!(d.location.to_string(), "u.hbs:4:1");
    }

    #[test]
    fn unknown_variables_list_what_exists_beside_them() {
        let data = json!({ "args": { "x": { "name": "x", "axes": ["1u", "2u"] }, "y": {} }, "kernel": "k" });
        assert_eq!(
            available(&data, "args.x.nmae"),
            ["args.x.axes", "args.x.name"]
        );
        assert_eq!(available(&data, "args.z.name"), ["args.x", "args.y"]);
        assert_eq!(
            available(&data, "args.x.axes.[2]"),
            ["args.x.axes.[0]", "args.x.axes.[1]"]
        );
        assert_eq!(available(&data, "kernal"), ["args", "kernel"]);
        assert_eq!(available(&data, "kernel.x"), ["args", "kernel"]);
    }
}
