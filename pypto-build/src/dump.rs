//! A stable text form of the checked model: what each marker resolved to and
//! which specialisations will be built. Used by `pypto-build dump`.

use std::fmt::Write;

use crate::model::{DimSize, Kernel, Model, ParamKind, SizeOf, TemplateArg, TilingValue};

/// The whole model, kernels in model order; a kernel with variants is
/// its decision table, then each variant.
pub fn model(model: &Model) -> String {
    let mut blocks: Vec<String> = Vec::new();
    let mut tabled: Vec<&str> = Vec::new();
    for k in &model.kernels {
        if let Some(v) = &k.variant
            && !tabled.contains(&v.kernel.as_str())
        {
            tabled.push(&v.kernel);
            let group: Vec<&Kernel> = model
                .kernels
                .iter()
                .filter(|g| g.variant.as_ref().is_some_and(|w| w.kernel == v.kernel))
                .collect();
            blocks.push(decision_table(&group));
        }
        blocks.push(kernel(k));
    }
    blocks.join("\n")
}

/// How a kernel with variants chooses: each variant in the order tried,
/// with its condition and the STATIC sizes it was built for, then what a
/// call none accepts gets.
fn decision_table(group: &[&Kernel]) -> String {
    let first = group[0].variant.as_ref().expect("a variant");
    let mut out = format!("kernel {} (chooses per call)\n", first.kernel);
    let width = group
        .iter()
        .filter_map(|k| k.variant.as_ref().map(|v| v.name.len()))
        .max()
        .unwrap_or(0);
    for (i, k) in group.iter().enumerate() {
        let v = k.variant.as_ref().expect("a variant");
        let mut parts: Vec<String> = Vec::new();
        if let Some(c) = &v.when {
            parts.push(format!("when {}", c.text));
        }
        for (axis, values) in crate::model::built_sizes(k, group) {
            let listed: Vec<String> = values.iter().map(u64::to_string).collect();
            parts.push(format!(
                "built for {} = {}",
                crate::model::size_label(k, axis),
                listed.join(" | ")
            ));
        }
        if parts.is_empty() {
            parts.push("always".to_owned());
        }
        let _ = writeln!(
            out,
            "  {}. {:width$}  {}  -> kernel {}",
            i + 1,
            v.name,
            parts.join(", "),
            k.name
        );
    }
    let last = group[group.len() - 1];
    let total = last.variant.as_ref().is_some_and(|v| v.when.is_none())
        && crate::model::built_sizes(last, group).is_empty();
    if !total {
        let _ = write!(out, "  otherwise Error::NoVariant");
        match &first.uncovered {
            Some(sizes) => {
                let _ = writeln!(out, " (e.g. {sizes})");
            }
            None => out.push('\n'),
        }
    }
    out
}

/// One kernel.
pub fn kernel(k: &Kernel) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_kernel(&mut out, k);
    out
}

fn write_kernel(out: &mut String, k: &Kernel) -> std::fmt::Result {
    writeln!(out, "kernel {}", k.name)?;
    writeln!(out, "  origin    {}", k.origin)?;
    if let Some(v) = &k.variant {
        writeln!(
            out,
            "  variant   {} of {} ({} of {})",
            v.name,
            v.kernel,
            v.index + 1,
            v.count
        )?;
    }
    if let Some(doc) = &k.doc {
        writeln!(out, "  doc       {}", doc.escape_debug())?;
    }
    writeln!(out, "  template  {}", k.template)?;
    let targets: Vec<&str> = k.targets.iter().map(|t| t.spec_name()).collect();
    writeln!(out, "  targets   {}", targets.join(" "))?;
    if !k.options.is_empty() {
        let options: Vec<String> = k.options.iter().map(|(n, v)| format!("{n}={v}")).collect();
        writeln!(out, "  options   {}", options.join(" "))?;
    }
    if !k.template_args.is_empty() {
        let args: Vec<String> = k
            .template_args
            .iter()
            .map(|a| match a {
                TemplateArg::Type(dtype) => dtype.to_string(),
                TemplateArg::Int(v) => v.to_string(),
                TemplateArg::Size(SizeOf::Axis(p, a)) => format!("{}.{a}", k.params[*p].name),
                TemplateArg::Size(SizeOf::Numel(p)) => format!("{}.numel", k.params[*p].name),
            })
            .collect();
        writeln!(out, "  tmpl args {}", args.join(" "))?;
    }
    if let Some(t) = &k.tiling {
        let fields: Vec<String> = t
            .fields
            .iter()
            .map(|f| {
                let value = match &f.value {
                    TilingValue::Int(v) => v.to_string(),
                    TilingValue::Float(v) => format!("{v:?}"),
                    TilingValue::Size(SizeOf::Axis(p, a)) => format!("{}.{a}", k.params[*p].name),
                    TilingValue::Size(SizeOf::Numel(p)) => format!("{}.numel", k.params[*p].name),
                    TilingValue::Scalar(p) => k.params[*p].name.clone(),
                };
                format!("{}={value}", f.name)
            })
            .collect();
        writeln!(
            out,
            "  tiling    {} (entry parameter {}) {}",
            t.struct_name,
            t.at,
            fields.join(" ")
        )?;
    }
    if !k.defines.is_empty() {
        let defines: Vec<String> = k.defines.iter().map(|(n, v)| format!("{n}={v}")).collect();
        writeln!(out, "  defines   {}", defines.join(" "))?;
    }
    writeln!(out, "  params")?;
    let width = k.params.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in &k.params {
        match &p.kind {
            ParamKind::Scalar(dtype) => {
                writeln!(out, "    {:width$}  scalar  {dtype}", p.name)?;
            }
            ParamKind::Tensor {
                dtype,
                output,
                axes,
            } => {
                let role = if *output { "output" } else { "input " };
                let axes: Vec<String> = axes
                    .iter()
                    .map(|a| format!("{} -> d{}", a.written, a.dim))
                    .collect();
                writeln!(
                    out,
                    "    {:width$}  {role}  {dtype}  [{}]",
                    p.name,
                    axes.join(", ")
                )?;
            }
        }
    }
    writeln!(out, "  dims")?;
    for (i, d) in k.dims.iter().enumerate() {
        let size = match &d.size {
            DimSize::Dynamic => "DYNAMIC".to_owned(),
            DimSize::Fixed(n) => format!("fixed {n}"),
            DimSize::Static(v) => {
                let v: Vec<String> = v.iter().map(u64::to_string).collect();
                format!("STATIC {}", v.join(" "))
            }
        };
        let axes: Vec<String> = d.axes.iter().map(|&(p, a)| k.axis_label(p, a)).collect();
        let name = d
            .name
            .as_ref()
            .map(|n| format!("  ({n})"))
            .unwrap_or_default();
        writeln!(out, "    d{i}  {size:<18}  {}{name}", axes.join(" "))?;
        // The dim's doc, then any axis's that says something else.
        if let Some(doc) = &d.doc {
            writeln!(out, "        doc: {}", doc.escape_debug())?;
        }
        for &(p, a) in &d.axes {
            if let ParamKind::Tensor { axes, .. } = &k.params[p].kind
                && let Some(doc) = &axes[a].doc
                && Some(doc) != d.doc.as_ref()
            {
                writeln!(
                    out,
                    "        doc {}: {}",
                    k.axis_label(p, a),
                    doc.escape_debug()
                )?;
            }
        }
    }
    // What the wrapper checks at run time beyond the dims agreeing: the
    // template's divisibility, halving and `equals:` relations.
    if !(k.multiples.is_empty() && k.halves.is_empty() && k.equations.is_empty()) {
        writeln!(out, "  checks")?;
        for m in &k.multiples {
            let axis = k.axis_label(m.param, m.axis);
            writeln!(
                out,
                "    {axis} % {} == 0  ({})",
                m.of,
                m.why.escape_debug()
            )?;
        }
        for h in &k.halves {
            let (big, small) = (
                k.axis_label(h.big.0, h.big.1),
                k.axis_label(h.small.0, h.small.1),
            );
            writeln!(out, "    {big} == 2 * {small}  ({})", h.why.escape_debug())?;
        }
        for e in &k.equations {
            writeln!(out, "    {}", e.why.escape_debug())?;
        }
    }
    writeln!(out, "  specialisations {}", k.specialisations.len())?;
    for s in &k.specialisations {
        if s.0.is_empty() {
            writeln!(out, "    (no STATIC dims)")?;
        } else {
            let parts: Vec<String> =
                s.0.iter()
                    .map(|&(d, v)| format!("{}={v}", k.dim_label(d)))
                    .collect();
            writeln!(out, "    {}", parts.join(" "))?;
        }
    }
    Ok(())
}
