//! The spec stage: the structure of a spec file (which keys exist, what kind of
//! value each holds) checked against the grammar in `grammar`, which
//! `pypto-build schema` also prints, every item keeping its position. What the
//! words mean (markers, dtypes, sizes) is the model's job.

use std::collections::HashMap;

use crate::diag::{Pos, Sink, clip};
use crate::grammar::{self, Field, Kind};
use crate::names::did_you_mean;
pub(crate) use crate::names::one_of;
use crate::yaml::{Node, Value};

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sp<T> {
    pub value: T,
    pub pos: Pos,
}

/// One spec file, structurally valid as far as it could be read.
#[derive(Debug, Default)]
pub(crate) struct SpecFile {
    pub dims: Vec<DimDecl>,
    pub kernels: Vec<KernelSpec>,
}

#[derive(Debug)]
pub(crate) struct DimDecl {
    pub name: Sp<String>,
    pub value: Node,
}

#[derive(Debug)]
pub(crate) struct KernelSpec {
    pub name: Sp<String>,
    pub doc: Option<Sp<String>>,
    pub template: Option<Sp<String>>,
    /// An existing Ascend C file compiled unchanged (`source:`), instead of
    /// a template; its entry function is `entry:`.
    pub source: Option<Sp<String>>,
    pub entry: Option<Sp<String>>,
    /// A templated entry's arguments (`template_args:`), as written.
    pub template_args: Option<Sp<Vec<Node>>>,
    /// A `source:` kernel's block count (a number or a size expression)
    /// and core kind, as written.
    pub blocks: Option<Node>,
    pub cores: Option<Sp<String>>,
    pub targets: Option<Sp<Vec<Sp<String>>>>,
    pub params: Vec<ParamSpec>,
    pub statics: Vec<StaticEntry>,
    /// Where `static:` was written, for errors about the whole set.
    pub statics_pos: Option<Pos>,
    /// Template options (`options: { heads: 12 }`), values as written.
    pub options: Vec<(Sp<String>, Node)>,
    /// Preprocessor macros (`defines: { SCENARIO_NUM: 2 }`), as written.
    pub defines: Vec<(Sp<String>, Node)>,
    /// A struct the launch builds and passes to the entry (`tiling:`).
    pub tiling: Option<TilingSpec>,
    /// The keys written, valid or not, so that a key given with a bad value
    /// is not also reported as missing.
    pub given: Vec<String>,
    /// Set when this is one variant of a kernel with `variants:` (or the
    /// one implementation of a kernel with `dispatch: runtime`).
    pub variant: Option<VariantSpec>,
}

/// One of a kernel's `variants:`: the kernel's keys, with the variant's in
/// their place, make a kernel of their own, named `KERNEL__VARIANT`, that
/// the kernel's one wrapper launches when `when:` holds.
#[derive(Debug)]
pub(crate) struct VariantSpec {
    /// The kernel the variant belongs to.
    pub kernel: Sp<String>,
    /// The variant's name (`dispatch: runtime` without variants: the
    /// kernel's, at the `dispatch:` key).
    pub name: Sp<String>,
    pub when: Option<Sp<String>>,
    /// Named dims whose marker differs in this variant.
    pub dims: Vec<(Sp<String>, Node)>,
    /// Its place in the list, and the list's length.
    pub index: usize,
    pub count: usize,
    /// `dispatch: runtime` without `variants:`.
    pub implicit: bool,
}

/// The name of the kernel a variant is compiled as: a name the spec cannot
/// give another kernel without the model reporting the clash.
pub(crate) fn variant_kernel_name(kernel: &str, variant: &str) -> String {
    format!("{kernel}__{variant}")
}

#[derive(Debug)]
pub(crate) struct ParamSpec {
    pub name: Sp<String>,
    pub dtype: Option<Sp<String>>,
    pub scalar: Option<Sp<String>>,
    pub shape: Option<Sp<Vec<Node>>>,
    pub rank: Option<Node>,
    /// What each axis counts (`axis_docs:`), as written.
    pub axis_docs: Option<Sp<Vec<Node>>>,
    pub output: Option<Sp<bool>>,
    /// A scalar bound to a size of the other params (`value: x.numel`).
    pub value: Option<Sp<String>>,
    /// The keys written, valid or not.
    pub given: Vec<String>,
}

/// A `source:` kernel's `tiling:`, as written.
#[derive(Debug)]
pub(crate) struct TilingSpec {
    /// Where `tiling:` was written.
    pub pos: Pos,
    pub struct_name: Option<Sp<String>>,
    /// `(field, value)` in spec order.
    pub fields: Vec<(Sp<String>, Node)>,
    pub at: Option<Node>,
}

#[derive(Debug)]
pub(crate) struct StaticEntry {
    pub key: Sp<String>,
    pub values: Sp<Vec<Node>>,
}

/// Names quoted in the context of every message about their contents are
/// clipped to this length once, rather than each message copying a hostile
/// name whole.
pub(crate) const QUOTED: usize = crate::diag::QUOTED_CHARS;

/// Reads the structure of a parsed spec file, reporting every problem to `sink`.
pub(crate) fn read(root: &Node, sink: &mut Sink<'_>) -> SpecFile {
    let mut file = SpecFile::default();
    if root.value == Value::Null {
        sink.error(
            root.pos,
            "spec file is empty; expected a mapping with `kernels:` (and optionally `dims:`)",
        );
        return file;
    }
    let Some(top) = mapping(root, "spec file", sink) else {
        return file;
    };
    check_keys(&top, grammar::TOP, "spec file", sink);
    if let Some((_, dims)) = find(&top, "dims")
        && !left_empty(dims, grammar::TOP, "dims")
        && let Some(entries) = mapping(dims, "`dims`", sink)
    {
        file.dims = entries
            .into_iter()
            .map(|(name, value)| DimDecl {
                name,
                value: value.clone(),
            })
            .collect();
    }
    match find(&top, "kernels") {
        None => sink.error(
            root.pos,
            "spec file has no `kernels:`; declare at least one kernel",
        ),
        Some((key, kernels)) => match &kernels.value {
            Value::Null => sink.error(key.pos, "`kernels` is empty; declare at least one kernel"),
            _ => {
                if let Some(entries) = mapping(kernels, "`kernels`", sink) {
                    if entries.is_empty() {
                        sink.error(key.pos, "`kernels` is empty; declare at least one kernel");
                    }
                    for (name, node) in entries {
                        read_kernel_or_variants(name, node, sink, &mut file.kernels);
                    }
                }
            }
        },
    }
    file
}

/// Reads one kernel: one `KernelSpec`, or with `variants:` (or `dispatch:
/// runtime`) one per variant.
fn read_kernel_or_variants(
    name: Sp<String>,
    node: &Node,
    sink: &mut Sink<'_>,
    out: &mut Vec<KernelSpec>,
) {
    let ctx = format!("kernel `{}`", clip(&name.value, QUOTED));
    let Some(entries) = mapping(node, &ctx, sink) else {
        return;
    };
    check_keys(&entries, grammar::KERNEL, &ctx, sink);
    let dispatch = find(&entries, "dispatch").map(|(k, n)| (k.clone(), n));
    let variants = find(&entries, "variants").map(|(_, n)| n);
    if dispatch.is_none() && variants.is_none() {
        out.extend(read_kernel(name, &entries, ctx, None, sink));
        return;
    }
    if let Some((_, n)) = &dispatch
        && let Some(word) = scalar_word(n, &format!("{ctx}, `dispatch`"), sink)
        && !grammar::DISPATCH_WORDS.contains(&word.value.as_str())
    {
        sink.error(
            word.pos,
            format!(
                "{ctx}, `dispatch`: unknown value `{}`; expected {}",
                clip(&word.value, QUOTED),
                one_of(&grammar::DISPATCH_WORDS)
            ),
        );
    }
    // What every variant shares: the kernel's keys but these two.
    let base: Vec<(Sp<String>, &Node)> = entries
        .iter()
        .filter(|(k, _)| k.value != "dispatch" && k.value != "variants")
        .map(|(k, n)| (k.clone(), *n))
        .collect();
    let Some(list) = variants else {
        let (key, _) = dispatch.expect("dispatch or variants");
        let variant = VariantSpec {
            kernel: name.clone(),
            name: Sp {
                value: name.value.clone(),
                pos: key.pos,
            },
            when: None,
            dims: Vec::new(),
            index: 0,
            count: 1,
            implicit: true,
        };
        let compiled = Sp {
            value: variant_kernel_name(&name.value, "runtime"),
            pos: name.pos,
        };
        out.extend(read_kernel(compiled, &base, ctx, Some(variant), sink));
        return;
    };
    let Some(items) = sequence(list, &format!("{ctx}, `variants`"), sink) else {
        return;
    };
    if items.is_empty() {
        sink.error(
            list.pos,
            format!("{ctx}: `variants` is empty; list at least one, or leave the key out"),
        );
        return;
    }
    for (index, item) in items.iter().enumerate() {
        let what = format!("{ctx}, variant {}", index + 1);
        let Some(own) = mapping(item, &what, sink) else {
            continue;
        };
        let mut overrides = Vec::new();
        let mut variant_name = None;
        let mut when = None;
        let mut dims = Vec::new();
        for (key, value) in &own {
            match key.value.as_str() {
                "name" => variant_name = scalar_word(value, &format!("{what}, `name`"), sink),
                "when" => when = string(value, &format!("{what}, `when`"), sink),
                "dims" => {
                    if let Some(list) = mapping(value, &format!("{what}, `dims`"), sink) {
                        dims = list.into_iter().map(|(k, v)| (k, v.clone())).collect();
                    }
                }
                k if grammar::VARIANT_OVERRIDES.contains(&k) => {
                    overrides.push((key.clone(), *value))
                }
                k => {
                    let mut allowed = grammar::keys(grammar::VARIANT);
                    allowed.extend(grammar::VARIANT_OVERRIDES);
                    let message = if grammar::keys(grammar::KERNEL).contains(&k) {
                        format!(
                            "{what}: a variant cannot set `{k}`; every variant shares the kernel's"
                        )
                    } else {
                        format!(
                            "{what}: unknown key `{}`; a variant may set {}{}",
                            clip(k, QUOTED),
                            one_of(&allowed),
                            did_you_mean(k, allowed.iter().copied())
                        )
                    };
                    sink.error(key.pos, message);
                }
            }
        }
        let Some(variant_name) = variant_name else {
            if find(&own, "name").is_none() {
                sink.error(
                    item.pos,
                    format!("{what}: no `name`; name it, e.g. `name: small_m`"),
                );
            }
            continue;
        };
        let ctx = format!("{ctx}, variant `{}`", clip(&variant_name.value, QUOTED));
        // The kernel's keys, each replaced by the variant's where it gives one.
        let mut merged: Vec<(Sp<String>, &Node)> = base
            .iter()
            .filter(|(k, _)| !overrides.iter().any(|(o, _)| o.value == k.value))
            .cloned()
            .collect();
        merged.extend(overrides);
        let compiled = Sp {
            value: variant_kernel_name(&name.value, &variant_name.value),
            pos: variant_name.pos,
        };
        let variant = VariantSpec {
            kernel: name.clone(),
            name: variant_name,
            when,
            dims,
            index,
            count: items.len(),
            implicit: false,
        };
        out.extend(read_kernel(compiled, &merged, ctx, Some(variant), sink));
    }
}

fn read_kernel(
    name: Sp<String>,
    entries: &[(Sp<String>, &Node)],
    ctx: String,
    variant: Option<VariantSpec>,
    sink: &mut Sink<'_>,
) -> Option<KernelSpec> {
    let entries = entries.to_vec();
    let read =
        |key: &str, sink: &mut Sink<'_>| read_leaf(&entries, grammar::KERNEL, key, &ctx, sink);
    let doc = read("doc", sink);
    let template = read("template", sink);
    let source = read("source", sink);
    let entry = read("entry", sink);
    let template_args = find(&entries, "template_args").and_then(|(_, n)| {
        let items = sequence(n, &format!("{ctx}, `template_args`"), sink)?;
        Some(Sp {
            value: items.to_vec(),
            pos: n.pos,
        })
    });
    let blocks = find(&entries, "blocks").map(|(_, n)| n.clone());
    let cores = read("cores", sink);
    let targets = find(&entries, "targets").and_then(|(_, n)| {
        let what = format!("{ctx}, `targets`");
        let items = sequence(n, &what, sink)?;
        let item = match grammar::field(grammar::KERNEL, "targets").map(|f| &f.kind) {
            Some(Kind::List(item)) => item,
            _ => &Kind::Word(None),
        };
        let words = items
            .iter()
            .filter_map(|node| leaf(item, node, &what, sink))
            .collect();
        Some(Sp {
            value: words,
            pos: n.pos,
        })
    });
    let mut params = Vec::new();
    if let Some((key, n)) = find(&entries, "params") {
        if n.value == Value::Null {
            sink.error(key.pos, format!("{ctx}: `params` is empty"));
        } else if let Some(list) = mapping(n, &format!("{ctx}, `params`"), sink) {
            params = list
                .into_iter()
                .filter_map(|(pname, pnode)| read_param(&ctx, pname, pnode, sink))
                .collect();
        }
    }
    let mut statics = Vec::new();
    let mut statics_pos = None;
    if let Some((key, n)) = find(&entries, "static") {
        statics_pos = Some(key.pos);
        if !left_empty(n, grammar::KERNEL, "static")
            && let Some(list) = mapping(n, &format!("{ctx}, `static`"), sink)
        {
            for (key, values) in list {
                let what = format!("{ctx}, `static` entry `{}`", clip(&key.value, QUOTED));
                // A single value is accepted as a one-element list.
                let values = match &values.value {
                    Value::Seq(items) => Sp {
                        value: items.clone(),
                        pos: values.pos,
                    },
                    Value::Map(_) | Value::Null => {
                        sink.error(
                            values.pos,
                            format!(
                                "{what}: expected a list of sizes to build, found {}",
                                values.value.kind()
                            ),
                        );
                        continue;
                    }
                    _ => Sp {
                        value: vec![values.clone()],
                        pos: values.pos,
                    },
                };
                statics.push(StaticEntry { key, values });
            }
        }
    }
    let mut options = Vec::new();
    if let Some((_, n)) = find(&entries, "options")
        && !left_empty(n, grammar::KERNEL, "options")
        && let Some(list) = mapping(n, &format!("{ctx}, `options`"), sink)
    {
        options = list.into_iter().map(|(k, v)| (k, v.clone())).collect();
    }
    let mut defines = Vec::new();
    if let Some((_, n)) = find(&entries, "defines")
        && !left_empty(n, grammar::KERNEL, "defines")
        && let Some(list) = mapping(n, &format!("{ctx}, `defines`"), sink)
    {
        defines = list.into_iter().map(|(k, v)| (k, v.clone())).collect();
    }
    let tiling = find(&entries, "tiling").and_then(|(key, n)| read_tiling(&ctx, key.pos, n, sink));
    Some(KernelSpec {
        name,
        doc,
        template,
        source,
        entry,
        template_args,
        blocks,
        cores,
        targets,
        params,
        statics,
        statics_pos,
        options,
        defines,
        tiling,
        given: keys_of(&entries),
        variant,
    })
}

fn read_tiling(kernel_ctx: &str, pos: Pos, node: &Node, sink: &mut Sink<'_>) -> Option<TilingSpec> {
    let ctx = format!("{kernel_ctx}, `tiling`");
    let entries = mapping(node, &ctx, sink)?;
    check_keys(&entries, grammar::TILING, &ctx, sink);
    let struct_name = read_leaf(&entries, grammar::TILING, "struct", &ctx, sink);
    if struct_name.is_none() && find(&entries, "struct").is_none() {
        sink.error(
            pos,
            format!("{ctx}: no `struct`; name the struct the source defines for the entry"),
        );
    }
    let mut fields = Vec::new();
    match find(&entries, "fields") {
        Some((key, n)) if n.value == Value::Null => {
            sink.error(
                key.pos,
                format!("{ctx}: `fields` is empty; give every field a value"),
            );
        }
        Some((_, n)) => {
            if let Some(list) = mapping(n, &format!("{ctx}, `fields`"), sink) {
                fields = list.into_iter().map(|(k, v)| (k, v.clone())).collect();
            }
        }
        None => sink.error(
            pos,
            format!("{ctx}: no `fields`; give every field of the struct a value"),
        ),
    }
    let at = find(&entries, "at").map(|(_, n)| n.clone());
    Some(TilingSpec {
        pos,
        struct_name,
        fields,
        at,
    })
}

fn read_param(
    kernel_ctx: &str,
    name: Sp<String>,
    node: &Node,
    sink: &mut Sink<'_>,
) -> Option<ParamSpec> {
    let ctx = format!("{kernel_ctx}, param `{}`", clip(&name.value, QUOTED));
    let entries = mapping(node, &ctx, sink)?;
    check_keys(&entries, grammar::PARAM, &ctx, sink);
    let read =
        |key: &str, sink: &mut Sink<'_>| read_leaf(&entries, grammar::PARAM, key, &ctx, sink);
    let dtype = read("dtype", sink);
    let scalar = read("scalar", sink);
    let shape = find(&entries, "shape").and_then(|(_, n)| {
        let items = sequence(n, &format!("{ctx}, `shape`"), sink)?;
        Some(Sp {
            value: items.to_vec(),
            pos: n.pos,
        })
    });
    let rank = find(&entries, "rank").map(|(_, n)| n.clone());
    let axis_docs = find(&entries, "axis_docs").and_then(|(_, n)| {
        let items = sequence(n, &format!("{ctx}, `axis_docs`"), sink)?;
        Some(Sp {
            value: items.to_vec(),
            pos: n.pos,
        })
    });
    let value = read("value", sink);
    let output = find(&entries, "output").and_then(|(_, n)| match n.value {
        Value::Bool(b) => Some(Sp {
            value: b,
            pos: n.pos,
        }),
        ref other => {
            sink.error(
                n.pos,
                format!(
                    "{ctx}, `output`: expected `true` or `false`, found {}",
                    other.kind()
                ),
            );
            None
        }
    });
    Some(ParamSpec {
        name,
        dtype,
        scalar,
        shape,
        rank,
        axis_docs,
        output,
        value,
        given: keys_of(&entries),
    })
}

/// The entries of a mapping with string keys; duplicate keys are reported and
/// only the first of each is kept.
fn mapping<'n>(
    node: &'n Node,
    what: &str,
    sink: &mut Sink<'_>,
) -> Option<Vec<(Sp<String>, &'n Node)>> {
    let Value::Map(pairs) = &node.value else {
        sink.error(
            node.pos,
            format!("{what}: expected a mapping, found {}", node.value.kind()),
        );
        return None;
    };
    let mut out: Vec<(Sp<String>, &Node)> = Vec::with_capacity(pairs.len());
    // Where each key was first given: a mapping may hold thousands of keys.
    let mut first_at: HashMap<String, Pos> = HashMap::with_capacity(pairs.len());
    for (key, value) in pairs {
        let name = match &key.value {
            Value::Str(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            other => {
                sink.error(
                    key.pos,
                    format!("{what}: expected a name as key, found {}", other.kind()),
                );
                continue;
            }
        };
        if let Some(first) = first_at.get(&name) {
            sink.error(
                key.pos,
                format!(
                    "{what}: `{name}` is given twice; first at line {}, column {}",
                    first.line, first.column
                ),
            );
            continue;
        }
        first_at.insert(name.clone(), key.pos);
        out.push((
            Sp {
                value: name,
                pos: key.pos,
            },
            value,
        ));
    }
    Some(out)
}

/// Whether `node`, the value of `key`, is left empty (`dims:` with nothing
/// under it) where the grammar allows that.
fn left_empty(node: &Node, fields: &[Field], key: &str) -> bool {
    node.value == Value::Null
        && matches!(
            grammar::field(fields, key).map(|f| &f.kind),
            Some(Kind::Named {
                may_be_empty: true,
                ..
            })
        )
}

fn keys_of(entries: &[(Sp<String>, &Node)]) -> Vec<String> {
    entries.iter().map(|(k, _)| k.value.clone()).collect()
}

/// Reports each key the grammar's `fields` do not have.
fn check_keys(entries: &[(Sp<String>, &Node)], fields: &[Field], what: &str, sink: &mut Sink<'_>) {
    let allowed = grammar::keys(fields);
    let allowed = allowed.as_slice();
    for (key, _) in entries {
        if !allowed.contains(&key.value.as_str()) {
            sink.error(
                key.pos,
                format!(
                    "{what}: unknown key `{}`; expected {}{}",
                    key.value,
                    one_of(allowed),
                    did_you_mean(&key.value, allowed.iter().copied())
                ),
            );
        }
    }
}

fn find<'e, 'n>(
    entries: &'e [(Sp<String>, &'n Node)],
    key: &str,
) -> Option<(&'e Sp<String>, &'n Node)> {
    entries
        .iter()
        .find(|(k, _)| k.value == key)
        .map(|(k, n)| (k, *n))
}

/// The value of a string or word key, read as its grammar says: a string
/// (`doc`, `template`), or a word, where an integer is taken as written.
fn read_leaf(
    entries: &[(Sp<String>, &Node)],
    fields: &[Field],
    key: &str,
    ctx: &str,
    sink: &mut Sink<'_>,
) -> Option<Sp<String>> {
    let (_, node) = find(entries, key)?;
    let kind = grammar::field(fields, key).map_or(&Kind::Word(None), |f| &f.kind);
    leaf(kind, node, &format!("{ctx}, `{key}`"), sink)
}

/// A string or word node, read as `kind` says.
fn leaf(kind: &Kind, node: &Node, what: &str, sink: &mut Sink<'_>) -> Option<Sp<String>> {
    match kind {
        Kind::Text => string(node, what, sink),
        _ => scalar_word(node, what, sink),
    }
}

fn sequence<'n>(node: &'n Node, what: &str, sink: &mut Sink<'_>) -> Option<&'n [Node]> {
    match &node.value {
        Value::Seq(items) => Some(items),
        other => {
            sink.error(
                node.pos,
                format!("{what}: expected a list, found {}", other.kind()),
            );
            None
        }
    }
}

fn string(node: &Node, what: &str, sink: &mut Sink<'_>) -> Option<Sp<String>> {
    match &node.value {
        Value::Str(s) => Some(Sp {
            value: s.clone(),
            pos: node.pos,
        }),
        other => {
            sink.error(
                node.pos,
                format!("{what}: expected a string, found {}", other.kind()),
            );
            None
        }
    }
}

/// A word such as a dtype or target; plain numbers are accepted as words
/// because `950PR`-like names may be typed unquoted.
fn scalar_word(node: &Node, what: &str, sink: &mut Sink<'_>) -> Option<Sp<String>> {
    match &node.value {
        Value::Int(i) => Some(Sp {
            value: i.to_string(),
            pos: node.pos,
        }),
        _ => string(node, what, sink),
    }
}
