//! Reading a spec file into a located YAML tree.
//!
//! serde-saphyr does the parsing (with budgets against anchor bombs and deep
//! nesting); this module turns its output into [`Node`]s that keep a position on
//! every key and value, so later stages can point at anything they reject.

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Budget, DuplicateKeyPolicy, Spanned};

use crate::diag::{Diagnostic, Location, Pos, end_position};

/// Spec files are small; anything larger is refused before parsing.
pub const MAX_SPEC_BYTES: u64 = 1 << 20;
const MAX_NODES: usize = 100_000;
const MAX_DEPTH: usize = 32;
const MAX_ALIASES: usize = 1_000;

/// A YAML value with the position of its first character.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub pos: Pos,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i128),
    /// A float, or an integer too large for `i128`; `raw` is the source text.
    Float {
        raw: String,
    },
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Value {
    /// How the value is described in "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "nothing",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float { .. } => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

pub(crate) fn too_large(path: &Path) -> Diagnostic {
    Diagnostic {
        location: Location {
            path: path.to_path_buf(),
            pos: Pos::new(1, 1),
        },
        message: format!(
            "spec file is larger than {} KiB; split it into several files",
            MAX_SPEC_BYTES / 1024
        ),
        snippet: None,
    }
}

/// Reads a spec file as text, refusing huge and non-UTF-8 files.
pub(crate) fn read_text(path: &Path) -> Result<String, Diagnostic> {
    let fail = |pos: Pos, message: String| Diagnostic {
        location: Location {
            path: path.to_path_buf(),
            pos,
        },
        message,
        snippet: None,
    };
    let start = Pos::new(1, 1);
    let file = std::fs::File::open(path)
        .map_err(|e| fail(start, format!("cannot read spec file: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_SPEC_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(start, format!("cannot read spec file: {e}")))?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(too_large(path));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        // The prefix is valid UTF-8 by definition of `valid_up_to`.
        let prefix = std::str::from_utf8(valid).unwrap_or_default();
        fail(
            end_position(prefix),
            "spec file is not valid UTF-8".to_owned(),
        )
    })
}

/// Parses YAML text into a located tree.
pub(crate) fn parse(source: &str) -> Result<Node, (Pos, String)> {
    let mut budget = Budget::default();
    budget.max_nodes = MAX_NODES;
    budget.max_depth = MAX_DEPTH;
    budget.max_aliases = MAX_ALIASES;
    budget.max_anchors = MAX_ALIASES;
    budget.max_documents = 1;
    let options = serde_saphyr::options! {
        budget: Some(budget),
        // Duplicates are reported by the spec stage, which knows what the key means.
        duplicate_keys: DuplicateKeyPolicy::PassThrough,
        // `n`, `no`, `off` are names, not booleans.
        strict_booleans: true,
        with_snippet: false,
    };
    let raw: Spanned<RawNode> =
        serde_saphyr::from_str_with_options(source, options).map_err(|e| {
            let pos = e
                .location()
                .map(|l| Pos::new(l.line() as u32, l.column() as u32))
                .filter(|p| p.line > 0 && p.column > 0)
                .unwrap_or(Pos::new(1, 1));
            (pos, yaml_message(&e))
        })?;
    Ok(convert(raw, source))
}

/// The parser's message in our words: without its own location (we print
/// ours), and with resource-limit breaches said plainly.
fn yaml_message(e: &serde_saphyr::Error) -> String {
    let text = e.without_snippet().to_string();
    let breach = text
        .split_once("budget breached: ")
        .map(|(_, rest)| rest.split([' ', '{']).next().unwrap_or(""));
    let limit = match breach {
        Some("Documents") => {
            return "a spec file holds one YAML document; move the document after `---` into \
                    its own file"
                .to_owned();
        }
        Some("Nodes") => format!("more than {MAX_NODES} nodes once aliases are expanded"),
        Some("Depth") => format!("nesting deeper than {MAX_DEPTH} levels"),
        Some("Aliases" | "Anchors") => format!("more than {MAX_ALIASES} anchors or aliases"),
        Some(_) => "more content than a spec file may hold".to_owned(),
        None if text.contains("recursion limit") => {
            format!("nesting deeper than {MAX_DEPTH} levels")
        }
        None if text.contains("multiple YAML documents") => {
            return "a spec file holds one YAML document; move the document after `---` into \
                    its own file"
                .to_owned();
        }
        None => {
            let text = text.trim();
            let text = match text.rfind(" at line ") {
                Some(i) if text[i..].contains(", column ") => &text[..i],
                _ => text,
            };
            return format!(
                "invalid YAML: {}",
                text.strip_prefix("error: ").unwrap_or(text)
            );
        }
    };
    format!(
        "the document is too large for a spec file: {limit} (anchor/alias bombs and deep \
         nesting are refused)"
    )
}

fn convert(raw: Spanned<RawNode>, source: &str) -> Node {
    let loc = raw.referenced;
    let pos = Pos::new(loc.line() as u32, loc.column() as u32);
    let value = match raw.value {
        RawNode::Null => Value::Null,
        RawNode::Bool(b) => Value::Bool(b),
        RawNode::Int(i) => Value::Int(i),
        RawNode::Float(f) => {
            let span = loc.span();
            let raw = match (span.byte_offset(), span.byte_len()) {
                (Some(o), Some(l)) => source.get(o as usize..(o + l) as usize),
                _ => None,
            };
            Value::Float {
                raw: raw.map_or_else(|| f.to_string(), str::to_owned),
            }
        }
        RawNode::Str(s) => Value::Str(s),
        RawNode::Seq(items) => Value::Seq(items.into_iter().map(|n| convert(n, source)).collect()),
        RawNode::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (convert(k, source), convert(v, source)))
                .collect(),
        ),
    };
    Node { pos, value }
}

/// What serde-saphyr hands us: any YAML value, keeping every entry and span.
enum RawNode {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<RawNode>>),
    Map(Vec<(Spanned<RawNode>, Spanned<RawNode>)>),
}

impl<'de> Deserialize<'de> for RawNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = RawNode;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<RawNode, E> {
        Ok(RawNode::Null)
    }
    fn visit_none<E>(self) -> Result<RawNode, E> {
        Ok(RawNode::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<RawNode, D::Error> {
        RawNode::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<RawNode, E> {
        Ok(RawNode::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<RawNode, E> {
        Ok(RawNode::Int(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<RawNode, E> {
        Ok(RawNode::Int(v.into()))
    }
    fn visit_i128<E>(self, v: i128) -> Result<RawNode, E> {
        Ok(RawNode::Int(v))
    }
    fn visit_u128<E>(self, v: u128) -> Result<RawNode, E> {
        Ok(match i128::try_from(v) {
            Ok(i) => RawNode::Int(i),
            Err(_) => RawNode::Float(v as f64),
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<RawNode, E> {
        Ok(RawNode::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<RawNode, E> {
        Ok(RawNode::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<RawNode, E> {
        Ok(RawNode::Str(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<RawNode, E> {
        Ok(RawNode::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawNode, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(RawNode::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawNode, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key()? {
            let value = map.next_value()?;
            entries.push((key, value));
        }
        Ok(RawNode::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> (Pos, String) {
        parse(src).expect_err("should fail")
    }

    #[test]
    fn keeps_positions_of_keys_and_values() {
        let root = parse("a:\n  b: [1, x]\n").unwrap();
        let Value::Map(top) = &root.value else {
            panic!("not a map")
        };
        let (k, v) = &top[0];
        assert_eq!(k.pos, Pos::new(1, 1));
        let Value::Map(inner) = &v.value else {
            panic!("not a map")
        };
        assert_eq!(inner[0].0.pos, Pos::new(2, 3));
        let Value::Seq(items) = &inner[0].1.value else {
            panic!("not a seq")
        };
        assert_eq!(items[1].pos, Pos::new(2, 10));
        assert_eq!(items[1].value, Value::Str("x".into()));
    }

    #[test]
    fn duplicate_keys_are_kept_for_the_spec_stage() {
        let root = parse("a: 1\na: 2\n").unwrap();
        let Value::Map(top) = root.value else {
            panic!("not a map")
        };
        assert_eq!(top.len(), 2);
    }

    #[test]
    fn yaml_1_1_booleans_are_strings() {
        let root = parse("n: no\n").unwrap();
        let Value::Map(top) = root.value else {
            panic!("not a map")
        };
        assert_eq!(top[0].0.value, Value::Str("n".into()));
        assert_eq!(top[0].1.value, Value::Str("no".into()));
    }

    #[test]
    fn huge_integers_keep_their_text() {
        let root = parse("a: 99999999999999999999999999999999999999999\n").unwrap();
        let Value::Map(top) = root.value else {
            panic!("not a map")
        };
        assert_eq!(
            top[0].1.value,
            Value::Float {
                raw: "99999999999999999999999999999999999999999".into()
            }
        );
    }

    #[test]
    fn syntax_error_is_located() {
        let (pos, msg) = err("kernels:\n  a: {x: [1, 2}\n");
        assert_eq!(pos, Pos::new(2, 10));
        assert_eq!(msg, "invalid YAML: mismatched bracket '[' closed by '}'");
    }

    #[test]
    fn alias_bomb_is_refused_quickly() {
        let mut src = String::from("a: &a [1,1,1,1,1,1,1,1,1]\n");
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        for w in names.windows(2) {
            let (prev, next) = (w[0], w[1]);
            let refs = vec![format!("*{prev}"); 9].join(",");
            src.push_str(&format!("{next}: &{next} [{refs}]\n"));
        }
        let (_, msg) = err(&src);
        assert_eq!(
            msg,
            "the document is too large for a spec file: more than 100000 nodes once aliases \
             are expanded (anchor/alias bombs and deep nesting are refused)"
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let src = format!("a: {}{}\n", "[".repeat(5000), "]".repeat(5000));
        let (pos, msg) = err(&src);
        assert_eq!(pos.line, 1);
        assert_eq!(
            msg,
            "the document is too large for a spec file: nesting deeper than 32 levels \
             (anchor/alias bombs and deep nesting are refused)"
        );
    }

    #[test]
    fn several_documents_are_refused() {
        let (pos, msg) = err("a: 1\n---\nb: 2\n");
        assert_eq!(pos, Pos::new(2, 1));
        assert_eq!(
            msg,
            "a spec file holds one YAML document; move the document after `---` into its own file"
        );
    }
}
