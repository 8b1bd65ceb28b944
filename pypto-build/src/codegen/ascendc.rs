//! Ascend C sources: each specialisation of each kernel is its template
//! rendered with handlebars, between a generated preamble (the tiling data
//! layout) and, for the host backend, a launch shim.

use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

use handlebars::Handlebars;
use serde_json::{Value, json};

use crate::codegen::Plan;
use crate::error::Error;
use crate::library;
use crate::model::{DimSize, ParamKind, Target, TemplateRef};

/// One rendered source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub kernel: String,
    pub specialisation: usize,
    /// File name under the sources directory, e.g. `add_bias_s0.cpp`;
    /// unique within a build even on case-insensitive file systems.
    pub file_name: String,
    pub text: String,
}

/// Renders every specialisation of every kernel. Template files are read
/// through `read`, so the caller can record them for rebuilds.
pub fn render(
    plans: &[Plan<'_>],
    read: &mut dyn FnMut(&Path) -> Result<String, Error>,
) -> Result<Vec<Source>, Error> {
    let mut registry = Handlebars::new();
    registry.set_strict_mode(true);
    // Only validated identifiers and numbers are interpolated; C++ needs no escaping.
    registry.register_escape_fn(handlebars::no_escape);
    for (name, text) in library::PARTIALS {
        registry
            .register_partial(name, *text)
            .map_err(|e| Error::Config(format!("builtin partial `{name}` is invalid: {e}")))?;
    }
    let mut sources = Vec::new();
    // Kernels whose names differ only in case (`same`, `Same`) are distinct
    // Rust functions but would write one file on a case-insensitive file
    // system: after the first, each gets `__N`, which no kernel name holds.
    let mut spellings: HashMap<String, usize> = HashMap::new();
    for plan in plans {
        let k = plan.kernel;
        let nth = spellings.entry(k.name.to_ascii_lowercase()).or_insert(0);
        *nth += 1;
        let stem = match *nth {
            1 => k.name.clone(),
            n => format!("{}__{n}", k.name),
        };
        let template_name = k.template.to_string();
        let template_error = |message: String| Error::Template {
            kernel: k.name.clone(),
            spec: plan.spec_path.clone(),
            template: template_name.clone(),
            message,
        };
        // Kernels sharing a template parse it once.
        if !registry.has_template(&template_name) {
            let text = match &k.template {
                TemplateRef::Builtin(name) => library::builtin_template(name)
                    .ok_or_else(|| template_error("no such builtin template".to_owned()))?
                    .to_owned(),
                TemplateRef::File(path) => read(path)?,
            };
            // The front matter is the model's; only the body is rendered.
            let body = crate::contract::split(&text).body;
            registry
                .register_template_string(&template_name, body)
                .map_err(|e| template_error(e.to_string()))?;
        }
        for index in 0..k.specialisations.len() {
            let data = template_data(plan, index);
            let body = registry
                .render(&template_name, &data)
                .map_err(|e| template_error(e.to_string()))?;
            sources.push(Source {
                kernel: k.name.clone(),
                specialisation: index,
                file_name: format!("{stem}_s{index}.cpp"),
                text: assemble(plan, index, &body),
            });
        }
    }
    Ok(sources)
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
        "load_tiling": "PyptoTiling pypto_tiling;\n    pypto_load_tiling(pypto_tiling, pypto_tiling_gm);",
    })
}

/// Preamble + rendered template + host shim.
fn assemble(plan: &Plan<'_>, index: usize, body: &str) -> String {
    let k = plan.kernel;
    let scalars = k
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Scalar(_)))
        .count();
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
    if k.targets == [Target::Ascend950PR] {
        out.push_str("#if defined(PYPTO_HOST_BACKEND)\n#define PYPTO_TARGET_950 1\n#endif\n");
    }
    out.push_str("#include \"kernel_operator.h\"\n\nnamespace {\n\n");
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
    let _ = writeln!(out, "// ---- template {} ----", k.template);
    out.push_str(body.trim_end());
    out.push_str("\n\n// ---- host backend launch shim ----\n#if defined(PYPTO_HOST_BACKEND)\n");
    let call_args: Vec<String> = (0..tensors.len())
        .map(|i| format!("static_cast<GM_ADDR>(launch->args[{i}])"))
        .chain(std::iter::once(
            "reinterpret_cast<GM_ADDR>(const_cast<uint8_t*>(launch->tiling))".to_owned(),
        ))
        .collect();
    let _ = writeln!(
        out,
        "extern \"C\" int32_t {}(pypto_emu::HostLaunch* launch)\n{{\n    \
         return pypto_emu::run_block(launch, [&] {{\n        {}({});\n    }});\n}}\n#endif",
        plan.host_symbol(index),
        plan.entry_symbol(index),
        call_args.join(",\n            ")
    );
    let device_args: Vec<String> = (0..=tensors.len())
        .map(|i| format!("static_cast<uint8_t*>(args[{i}])"))
        .collect();
    let _ = writeln!(
        out,
        "\n// ---- NPU launch stub (compiled by bisheng; args are device addresses,\n\
         // the tiling's last) ----\n#if !defined(PYPTO_HOST_BACKEND)\n\
         extern \"C\" int32_t {}(uint32_t block_num, void* stream, void** args)\n{{\n    \
         {}<<<block_num, nullptr, stream>>>({});\n    return 0;\n}}\n#endif",
        plan.npu_symbol(index),
        plan.entry_symbol(index),
        device_args.join(", ")
    );
    out
}

/// The source compiled for `arch`: `source` with its entry and stub renamed
/// to their per-architecture symbols.
pub fn for_arch(plan: &Plan<'_>, index: usize, arch: crate::tables::Arch, source: &str) -> String {
    let mut out = String::new();
    for symbol in [plan.entry_symbol(index), plan.npu_symbol(index)] {
        let _ = writeln!(out, "#define {symbol} {}", Plan::for_arch(&symbol, arch));
    }
    out.push_str(source);
    out
}
