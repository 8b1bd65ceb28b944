//! The grammar of a spec file, written once: every key, the kind of value it
//! holds, whether it must be given and what it means. The spec reader checks
//! keys and reads values by it; `pypto-build schema` prints it as a JSON
//! Schema. Rules between keys (`template` or `source`, `...` needs `rank`)
//! and what the words mean are the model's; the schema states structure only.

use serde_json::{Map, Value as Json, json};

use crate::tables::{CoreKind, MAX_PARAMS, MAX_RANK, MAX_SIZE, MAX_SPEC_BLOCKS};
use crate::tables::{DType, Target};

/// One key of a mapping with fixed keys.
#[derive(Debug)]
pub(crate) struct Field {
    pub key: &'static str,
    pub kind: Kind,
    /// Must be given (the model reports it missing).
    pub required: bool,
    pub description: &'static str,
}

/// The kind of value a key holds.
#[derive(Debug)]
pub(crate) enum Kind {
    /// A mapping with these keys only.
    Keys(&'static [Field]),
    /// A mapping from names (of dims, kernels, params...) to values of one
    /// kind; `item` says what each entry is.
    Named {
        value: &'static Kind,
        item: &'static str,
        /// May be left empty (`dims:` with nothing under it).
        may_be_empty: bool,
    },
    /// A non-empty list.
    List(&'static Kind),
    /// A list, or a single item standing for a list of one.
    ListOrOne(&'static Kind),
    /// A string.
    Text,
    /// A word: a string, or an integer read as one (`950PR`-like names may be
    /// typed unquoted); `Some` lists the words there are.
    Word(Option<&'static [&'static str]>),
    Bool,
    /// An integer, within bounds when given.
    Integer {
        min: Option<i64>,
        max: Option<i64>,
    },
    /// A number, integer or not.
    Number,
    /// Any of these.
    AnyOf(&'static [Kind]),
}

/// The dim markers a shape entry may be; all but `...` may be a dim's value.
pub(crate) const MARKERS: [&str; 4] = ["DYNAMIC", "DYN", "STATIC", "..."];
const DIM_MARKERS: [&str; 3] = [MARKERS[0], MARKERS[1], MARKERS[2]];

const SIZE: Kind = Kind::Integer {
    min: Some(1),
    max: Some(MAX_SIZE as i64),
};

/// The top level of a spec file.
pub(crate) const TOP: &[Field] = &[
    Field {
        key: "dims",
        kind: Kind::Named {
            value: &Kind::AnyOf(&[Kind::Word(Some(&DIM_MARKERS)), SIZE, Kind::Keys(DIM)]),
            item: "A named dim: DYNAMIC/DYN, STATIC, or a positive integer (a fixed size), or \
                   `{ marker: …, doc: \"what it counts\" }`. Every use of the name is one dim.",
            may_be_empty: true,
        },
        required: false,
        description: "Module-level dims, by name.",
    },
    Field {
        key: "kernels",
        kind: Kind::Named {
            value: &Kind::Keys(KERNEL),
            item: "A kernel, by name: a template (`template:`) or an existing Ascend C \
                   source (`source:` and `entry:`), and its params.",
            may_be_empty: false,
        },
        required: true,
        description: "The kernels, by name, in file order.",
    },
];

/// The keys of a named dim written as a mapping.
pub(crate) const DIM: &[Field] = &[
    Field {
        key: "marker",
        kind: Kind::AnyOf(&[Kind::Word(Some(&DIM_MARKERS)), SIZE]),
        required: true,
        description: "DYNAMIC/DYN, STATIC, or a positive integer (a fixed size).",
    },
    Field {
        key: "doc",
        kind: Kind::Text,
        required: false,
        description: "What the dim counts (\"requests in the batch\"): shown in the wrappers' \
                      documentation and by `dump`.",
    },
];

/// The keys of one kernel.
pub(crate) const KERNEL: &[Field] = &[
    Field {
        key: "doc",
        kind: Kind::Text,
        required: false,
        description: "Documentation; becomes the wrapper's rustdoc.",
    },
    Field {
        key: "template",
        kind: Kind::Text,
        required: false,
        description: "`builtin/NAME`, or a template file's path relative to the spec file, \
                      inside its package.",
    },
    Field {
        key: "source",
        kind: Kind::Text,
        required: false,
        description: "Instead of `template`: an existing Ascend C file, relative to the spec \
                      file, compiled unchanged.",
    },
    Field {
        key: "entry",
        kind: Kind::Word(None),
        required: false,
        description: "`source:` kernels only: the source's `__global__ __aicore__` function.",
    },
    Field {
        key: "template_args",
        kind: Kind::List(&Kind::AnyOf(&[
            Kind::Integer {
                min: None,
                max: None,
            },
            Kind::Word(None),
        ])),
        required: false,
        description: "`source:` kernels only: the arguments that instantiate a templated entry \
                      (`template <typename T, uint32_t N> __global__ … void add(…)`), each a \
                      dtype (`DT_FP32`, its C++ type), an integer, or a fixed or STATIC size \
                      (`x.1`, `x.last`, `x.numel`).",
    },
    Field {
        key: "tiling",
        kind: Kind::Keys(TILING),
        required: false,
        description: "`source:` kernels only: a struct the source defines, built by the launch \
                      from the spec's values field by field and passed by value as one of the \
                      entry's arguments (a vendor kernel's tiling data).",
    },
    Field {
        key: "blocks",
        kind: Kind::AnyOf(&[
            Kind::Integer {
                min: Some(1),
                max: Some(MAX_SPEC_BLOCKS as i64),
            },
            Kind::Text,
        ]),
        required: false,
        description: "`source:` kernels only: the block count, a number or a size such as \
                      `x.0` or `x.numel`.",
    },
    Field {
        key: "cores",
        kind: Kind::Word(Some(&CoreKind::SPEC_NAMES)),
        required: false,
        description: "`source:` kernels only: the core kind (default `vector`).",
    },
    Field {
        key: "targets",
        kind: Kind::List(&Kind::Word(Some(&Target::SPEC_NAMES))),
        required: false,
        description: "The NPU targets to build for; default: all.",
    },
    Field {
        key: "params",
        kind: Kind::Named {
            value: &Kind::Keys(PARAM),
            item: "A param, by name: a tensor (`dtype` and `shape`) or a scalar (`scalar`).",
            may_be_empty: false,
        },
        required: true,
        description: "The kernel's params, by name, in call order.",
    },
    Field {
        key: "static",
        kind: Kind::Named {
            value: &Kind::ListOrOne(&SIZE),
            item: "The sizes to build a STATIC axis for, under `param.axis` or a STATIC dim's \
                   name; a single size needs no list.",
            may_be_empty: true,
        },
        required: false,
        description: "The sizes each STATIC axis is built for; each combination is a \
                      specialisation.",
    },
    Field {
        key: "options",
        kind: Kind::Named {
            value: &Kind::AnyOf(&[
                Kind::Integer {
                    min: None,
                    max: None,
                },
                Kind::Bool,
            ]),
            item: "A template option: an integer or `true`/`false`.",
            may_be_empty: true,
        },
        required: false,
        description: "Template options, by name.",
    },
    Field {
        key: "defines",
        kind: Kind::Named {
            value: &Kind::AnyOf(&[
                Kind::Integer {
                    min: None,
                    max: None,
                },
                Kind::Word(None),
            ]),
            item: "A preprocessor macro, by name: an integer or an identifier.",
            may_be_empty: true,
        },
        required: false,
        description: "Macros defined for every compile of the kernel's source or template, on \
                      every backend (a vendor source's `SCENARIO_NUM: 2`).",
    },
    Field {
        key: "dispatch",
        kind: Kind::Word(Some(&DISPATCH_WORDS)),
        required: false,
        description: "`runtime`: STATIC axes take sizes known only at run time; a call runs the \
                      specialisation built for its sizes, or fails listing them (by default a \
                      STATIC size is a const generic, checked at compile time).",
    },
    Field {
        key: "variants",
        kind: Kind::List(&Kind::Keys(VARIANT)),
        required: false,
        description: "Implementations chosen per call by their `when:` conditions on the call's \
                      sizes, the first that holds winning; a variant may set any of `template`, \
                      `source`, `entry`, `template_args`, `tiling`, `blocks`, `cores`, \
                      `static`, `options` and `defines`, in place of the kernel's.",
    },
];

/// The words `dispatch:` takes.
pub(crate) const DISPATCH_WORDS: [&str; 1] = ["runtime"];

/// The keys of a kernel's that a variant may set in its place: everything
/// that says how the kernel is implemented, nothing that changes its call.
pub(crate) const VARIANT_OVERRIDES: [&str; 10] = [
    "template",
    "source",
    "entry",
    "template_args",
    "tiling",
    "blocks",
    "cores",
    "static",
    "options",
    "defines",
];

/// The keys of one of a kernel's `variants:`, besides the kernel keys it may
/// override ([`VARIANT_OVERRIDES`]).
pub(crate) const VARIANT: &[Field] = &[
    Field {
        key: "name",
        kind: Kind::Word(None),
        required: true,
        description: "The variant's name: an identifier, reported by `pypto_rt::last_launch()` \
                      and in errors.",
    },
    Field {
        key: "when",
        kind: Kind::Text,
        required: false,
        description: "When the variant runs: comparisons (`<`, `<=`, `>`, `>=`, `==`, `!=`) of \
                      axes (`x.0`), named dims (`M`) and integers, `%` by an integer, joined \
                      with `&&`, `||`, `!` and parentheses (`M <= 16 || K % 128 == 0`). Only \
                      the last variant may leave it out.",
    },
    Field {
        key: "dims",
        kind: Kind::Named {
            value: &Kind::AnyOf(&[Kind::Word(Some(&DIM_MARKERS)), SIZE]),
            item: "A named dim's marker in this variant: a DYNAMIC dim of the kernel made \
                   STATIC here (with its sizes under `static:`) is a fast path taken when the \
                   call's size is one of them.",
            may_be_empty: false,
        },
        required: false,
        description: "Named dims whose marker differs in this variant.",
    },
];

/// The keys of a `source:` kernel's `tiling:`.
pub(crate) const TILING: &[Field] = &[
    Field {
        key: "struct",
        kind: Kind::Word(None),
        required: true,
        description: "The struct's name, as the source (or a header it includes) defines it: a \
                      plain struct of integer, bool and floating-point fields.",
    },
    Field {
        key: "fields",
        kind: Kind::Named {
            value: &Kind::AnyOf(&[
                Kind::Integer {
                    min: None,
                    max: None,
                },
                Kind::Number,
                Kind::Word(None),
            ]),
            item: "A field's value: an integer, a number, a size (`x.numel`, `x.last`, `x.N`) \
                   or a scalar param's name (its value then travels in the struct, not as an \
                   entry argument).",
            may_be_empty: false,
        },
        required: true,
        description: "Every field of the struct, by name, with its value.",
    },
    Field {
        key: "at",
        kind: Kind::Integer {
            min: Some(0),
            max: Some(MAX_PARAMS as i64),
        },
        required: false,
        description: "The entry parameter, counted from 0, that takes the struct; by default \
                      the last, after the params.",
    },
];

/// The keys of one param.
pub(crate) const PARAM: &[Field] = &[
    Field {
        key: "dtype",
        kind: Kind::Word(Some(&DType::SPEC_NAMES)),
        required: false,
        description: "A tensor's element type.",
    },
    Field {
        key: "shape",
        kind: Kind::List(&Kind::AnyOf(&[
            Kind::Word(Some(&MARKERS)),
            SIZE,
            Kind::Text,
        ])),
        required: false,
        description: "A tensor's axes: DYNAMIC/DYN, STATIC, a positive integer, a name from \
                      `dims`, or `...` (last only) for the remaining axes up to `rank`.",
    },
    Field {
        key: "axis_docs",
        kind: Kind::List(&Kind::Text),
        required: false,
        description: "What each axis of a tensor counts, one string per axis (after `...` \
                      expands): shown in the wrapper's documentation and by `dump`.",
    },
    Field {
        key: "rank",
        kind: Kind::Integer {
            min: Some(1),
            max: Some(MAX_RANK as i64),
        },
        required: false,
        description: "A tensor's rank; required when its shape ends in `...`.",
    },
    Field {
        key: "output",
        kind: Kind::Bool,
        required: false,
        description: "`true` for a tensor the kernel writes.",
    },
    Field {
        key: "scalar",
        kind: Kind::Word(Some(&DType::SPEC_NAMES)),
        required: false,
        description: "A scalar param's type.",
    },
    Field {
        key: "value",
        kind: Kind::Word(None),
        required: false,
        description: "An integer scalar computed from a tensor param's sizes: `x.numel`, \
                      `x.last` or `x.N` (an axis index).",
    },
];

/// The keys of a mapping with fixed keys, in the order messages list them.
pub(crate) fn keys(fields: &[Field]) -> Vec<&'static str> {
    fields.iter().map(|f| f.key).collect()
}

/// The field of `key`, if the grammar has it.
pub(crate) fn field<'f>(fields: &'f [Field], key: &str) -> Option<&'f Field> {
    fields.iter().find(|f| f.key == key)
}

/// The JSON Schema (draft 2020-12) of a spec file.
pub(crate) fn schema() -> Json {
    let mut root = Map::new();
    root.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    root.insert("title".into(), json!("pypto-build spec file"));
    root.insert(
        "description".into(),
        json!(
            "Ascend NPU kernels declared in YAML with PyPTO-style dim markers. Structure \
             only: `pypto-build check` also checks the rules between keys and what the \
             names mean."
        ),
    );
    if let Json::Object(body) = keys_schema(TOP) {
        root.extend(body);
    }
    Json::Object(root)
}

fn keys_schema(fields: &[Field]) -> Json {
    // A variant also takes the kernel keys it may override. (Compared by
    // keys: a const slice has no one address.)
    let is_variant = keys(fields) == keys(VARIANT);
    let overrides = KERNEL
        .iter()
        .filter(|f| is_variant && VARIANT_OVERRIDES.contains(&f.key));
    let properties: Map<String, Json> = fields
        .iter()
        .chain(overrides)
        .map(|f| {
            let mut s = kind_schema(&f.kind);
            describe(&mut s, f.description);
            (f.key.to_owned(), s)
        })
        .collect();
    let required: Vec<&str> = fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.key)
        .collect();
    let mut s = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        s["required"] = json!(required);
    }
    s
}

fn describe(schema: &mut Json, description: &str) {
    if let Json::Object(map) = schema {
        map.insert("description".into(), json!(description));
    }
}

fn kind_schema(kind: &Kind) -> Json {
    match kind {
        Kind::Keys(fields) => keys_schema(fields),
        Kind::Named {
            value,
            item,
            may_be_empty,
        } => {
            let mut entry = kind_schema(value);
            describe(&mut entry, item);
            if *may_be_empty {
                json!({ "type": ["object", "null"], "additionalProperties": entry })
            } else {
                json!({ "type": "object", "minProperties": 1, "additionalProperties": entry })
            }
        }
        Kind::List(item) => json!({ "type": "array", "minItems": 1, "items": kind_schema(item) }),
        Kind::ListOrOne(item) => {
            let one = kind_schema(item);
            json!({ "anyOf": [one.clone(), { "type": "array", "items": one }] })
        }
        Kind::Text => json!({ "type": "string" }),
        Kind::Word(None) => json!({ "type": ["string", "integer"] }),
        Kind::Word(Some(words)) => json!({ "enum": words }),
        Kind::Bool => json!({ "type": "boolean" }),
        Kind::Number => json!({ "type": "number" }),
        Kind::Integer { min, max } => {
            let mut s = json!({ "type": "integer" });
            if let Some(min) = min {
                s["minimum"] = json!(min);
            }
            if let Some(max) = max {
                s["maximum"] = json!(max);
            }
            s
        }
        Kind::AnyOf(kinds) => json!({ "anyOf": kinds.iter().map(kind_schema).collect::<Vec<_>>() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_lists_follow_the_tables() {
        for (i, t) in Target::ALL.iter().enumerate() {
            assert_eq!(Target::SPEC_NAMES[i], t.spec_name());
        }
        for (i, d) in DType::ALL.iter().enumerate() {
            assert_eq!(DType::SPEC_NAMES[i], d.spec_name());
        }
    }

    #[test]
    fn every_mapping_lists_its_keys_once() {
        for fields in [TOP, KERNEL, PARAM, TILING, DIM, VARIANT] {
            let keys = keys(fields);
            for (i, k) in keys.iter().enumerate() {
                assert!(!keys[..i].contains(k), "{k} twice");
            }
        }
    }
}
