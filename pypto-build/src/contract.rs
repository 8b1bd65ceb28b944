//! Template contracts: the front-matter block a template may open with,
//! declaring its params by role, the relations between their axes, its
//! options, block rule, core kind and dtypes. The reference is in
//! `templates/README.md`; the builtins declare theirs the same way.
//!
//! ```text
//! ---
//! summary: out = x + bias, bias broadcast over every row of x
//! params:
//!   - { name: x }
//!   - { name: bias, rank: 1 }
//!   - { name: out, output: true }
//! relations:
//!   - same_shape: [x, out]
//!   - same_dim: [bias.0, x.last]
//! dtypes: [DT_FP32, DT_FP16, DT_BF16]
//! blocks: { rule: rows, param: x }
//! cores: vector
//! ---
//! ```
//!
//! Parsing checks the contract on its own (names, references, ranges) with
//! errors at the template's `LINE:COL`; the model checks specs against it.

use std::path::Path;

pub(crate) mod equals;

pub use equals::{Equation, Expr, Op};

use crate::diag::{Diagnostic, Pos, Sink, clip, display_path};
use crate::names::one_of;
use crate::names::{did_you_mean, identifier_problem};
pub use crate::tables::CoreKind;
use crate::tables::{DType, MAX_RANK};
use crate::yaml::{self, Node, Value};

/// What a param of a contract is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Input,
    Output,
    Scalar,
}

impl Role {
    pub fn describe(self) -> &'static str {
        match self {
            Role::Input => "an input tensor",
            Role::Output => "an output tensor",
            Role::Scalar => "a scalar",
        }
    }
}

/// One param a template expects, in call order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSpec {
    /// The name the template uses (`args.NAME`); spec names may differ.
    pub name: String,
    pub role: Role,
    /// Exact rank required, or `None` for any rank.
    pub rank: Option<usize>,
    /// A scalar's required dtype, if any.
    pub dtype: Option<DType>,
    /// A tensor's own dtypes (`dtypes:` on the param): it takes any of
    /// them, whatever the others' dtype. Empty: the contract's `dtypes`.
    pub dtypes: Vec<DType>,
    /// `when: OPTION` (`(OPTION, true)`) or `unless: OPTION`: the param is
    /// there only for kernels whose bool option has that value.
    pub condition: Option<(String, bool)>,
}

/// An axis of a param: `Last` is the innermost axis, whatever the rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisRef {
    Index(usize),
    Last,
}

/// An axis of the param at this position.
pub type ParamAxis = (usize, AxisRef);

/// How a launch is split into blocks; the runtime caps the count at the
/// core count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocks {
    /// One block per row of a param: the product of all but its last axis.
    Rows { param: usize },
    /// One block per `per_block` elements of a param.
    Elements { param: usize, per_block: u32 },
    /// One block per index of a param's leading `axes` axes, times the
    /// value of an integer option when given (e.g. attention heads).
    Leading {
        param: usize,
        axes: usize,
        option: Option<String>,
    },
    /// Exactly the product of the values of these integer options (a grid
    /// of cores, e.g. `[split_m, split_n]`), whatever the sizes; not capped.
    Grid { options: Vec<String> },
}

/// A template option (`options:` in a spec), its type and default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionSpec {
    pub name: String,
    pub kind: OptionKind,
    pub doc: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    Int { min: i64, max: i64, default: i64 },
    Bool { default: bool },
}

/// A template's contract. A template without front matter has none: its
/// roles are the spec's param names, its options untyped, its blocks one
/// per 8 Ki output elements, its core the vector core. A template with
/// front matter takes exactly the options it declares.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Contract {
    pub summary: Option<String>,
    /// The params in call order; `None` when the contract does not declare
    /// them (roles are then the spec's names and no relation can be given).
    pub params: Option<Vec<RoleSpec>>,
    /// The relations as written, in order: what the entries below point
    /// into by index, for messages.
    pub relations: Vec<Relation>,
    /// Pairs of params (by position) whose shapes are identical, and the
    /// relation that says so.
    pub same_shape: Vec<(usize, usize, usize)>,
    /// Pairs of (param, axis) that are one dim, and the relation.
    pub same_axis: Vec<(ParamAxis, ParamAxis, usize)>,
    /// The dtypes the template is written for; all tensors share one.
    /// Empty: any dtypes, mixed freely.
    pub dtypes: Vec<DType>,
    /// `None`: the default rule.
    pub blocks: Option<Blocks>,
    /// The options the template takes; a spec may give no others.
    pub options: Vec<OptionSpec>,
    /// Axes whose size must be a multiple of an integer option's value,
    /// and the relation.
    pub divisible_by_option: Vec<(ParamAxis, String, usize)>,
    /// Axes whose size must be a multiple of a constant (times an integer
    /// option's value, when `times` names one), and why.
    pub multiple_of: Vec<MultipleOf>,
    /// `(big, small, relation)`: the small param has the big one's leading
    /// axes and half its last axis (swiglu's split).
    pub halved_last: Option<(usize, usize, usize)>,
    /// `equals:` relations: integer arithmetic over axes and int options.
    pub equations: Vec<Equation>,
    pub cores: CoreKind,
    /// GM scratch the kernel needs (cube/vector exchanges): the runtime
    /// lends it zeroed on every launch, after the params.
    pub workspace: Option<Workspace>,
    /// Optional params a kernel's options left out ([`Contract::under`]),
    /// for messages.
    pub absent_params: Vec<RoleSpec>,
}

/// `workspace: { per_block: BYTES, shared: BYTES }`: scratch of `shared`
/// bytes followed by `per_block` bytes for each block of the grid rule
/// (whose block count is known when the kernel is built).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workspace {
    pub per_block: u64,
    pub shared: u64,
}

/// Most bytes of either part of a workspace: 64 MiB. The whole is at most
/// this times one more than the largest grid a contract may declare.
pub const MAX_WORKSPACE_PART: u64 = 64 << 20;

/// A `multiple_of` relation: the axis is a multiple of `of`, or of `of`
/// times the value of the option `times`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultipleOf {
    pub axis: ParamAxis,
    pub of: u64,
    pub times: Option<String>,
    pub why: String,
    /// The relation that says so.
    pub relation: usize,
}

/// One entry of a contract's `relations`, as its template writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    /// The entry in YAML flow style, e.g. `same_shape: [q, k, v, out]`.
    pub text: String,
    /// Where it is written: `TEMPLATE:LINE:COL`.
    pub at: String,
    /// Every axis it names by index (`x.2`; not `x.last`), which a spec's
    /// param must have.
    pub axes: Vec<ParamAxis>,
    /// `when: OPTION` (`(OPTION, true)`) or `unless: OPTION`: the relation
    /// holds only for kernels whose bool option has that value.
    pub condition: Option<(String, bool)>,
}

impl Relation {
    /// `` `same_dim: [x.2, w.0]` (t.hbs:6:5) ``, for messages.
    pub fn describe(&self) -> String {
        format!("`{}` ({})", self.text, self.at)
    }
}

impl Contract {
    /// The declared option named `name`.
    pub fn option(&self, name: &str) -> Option<&OptionSpec> {
        self.options.iter().find(|o| o.name == name)
    }

    /// The contract for a kernel whose bool options have the values
    /// `is_on` gives: params and relations whose `when:`/`unless:` does
    /// not hold are dropped, and so is every relation that names a dropped
    /// param (relations stay in `relations`, which the lists index, for
    /// messages).
    pub fn under(&self, is_on: impl Fn(&str) -> bool) -> Contract {
        let holds = |condition: &Option<(String, bool)>| {
            condition
                .as_ref()
                .is_none_or(|(option, value)| is_on(option) == *value)
        };
        let mut c = self.clone();
        // Params whose `when:`/`unless:` does not hold are not there; the
        // others move up, and what names an absent param goes with it.
        let mut at: Vec<Option<usize>> = Vec::new();
        if let Some(params) = &mut c.params {
            let mut next = 0;
            for p in params.iter() {
                at.push(holds(&p.condition).then(|| {
                    next += 1;
                    next - 1
                }));
            }
            c.absent_params = params
                .iter()
                .filter(|p| !holds(&p.condition))
                .cloned()
                .collect();
            params.retain(|p| holds(&p.condition));
        }
        let moved = |p: usize| at.get(p).copied().unwrap_or(Some(p));
        let axis = |(p, a): ParamAxis| moved(p).map(|p| (p, a));
        let relation_holds = |r: usize| holds(&self.relations[r].condition);
        c.same_shape = c
            .same_shape
            .iter()
            .filter(|&&(_, _, r)| relation_holds(r))
            .filter_map(|&(a, b, r)| Some((moved(a)?, moved(b)?, r)))
            .collect();
        c.same_axis = c
            .same_axis
            .iter()
            .filter(|&&(_, _, r)| relation_holds(r))
            .filter_map(|&(a, b, r)| Some((axis(a)?, axis(b)?, r)))
            .collect();
        c.divisible_by_option = c
            .divisible_by_option
            .iter()
            .filter(|(_, _, r)| relation_holds(*r))
            .filter_map(|(a, o, r)| Some((axis(*a)?, o.clone(), *r)))
            .collect();
        c.multiple_of = c
            .multiple_of
            .iter()
            .filter(|m| relation_holds(m.relation))
            .filter_map(|m| {
                Some(MultipleOf {
                    axis: axis(m.axis)?,
                    ..m.clone()
                })
            })
            .collect();
        c.halved_last = c
            .halved_last
            .filter(|&(_, _, r)| relation_holds(r))
            .and_then(|(a, b, r)| Some((moved(a)?, moved(b)?, r)));
        c.equations = c
            .equations
            .iter()
            .filter(|e| relation_holds(e.relation))
            .filter_map(|e| {
                Some(Equation {
                    left: e.left.map_axes(&axis)?,
                    right: e.right.map_axes(&axis)?,
                    ..e.clone()
                })
            })
            .collect();
        for relation in &mut c.relations {
            relation.axes = relation.axes.iter().filter_map(|&a| axis(a)).collect();
        }
        // A blocks rule never names an optional param (checked on reading).
        c.blocks = c.blocks.map(|b| match b {
            Blocks::Rows { param } => Blocks::Rows {
                param: moved(param).unwrap_or(param),
            },
            Blocks::Elements { param, per_block } => Blocks::Elements {
                param: moved(param).unwrap_or(param),
                per_block,
            },
            Blocks::Leading {
                param,
                axes,
                option,
            } => Blocks::Leading {
                param: moved(param).unwrap_or(param),
                axes,
                option,
            },
            grid => grid,
        });
        c
    }
}

/// A template split into its front matter and the handlebars body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split<'t> {
    /// The YAML between the `---` lines, if the template opens with them.
    pub front: Option<&'t str>,
    /// The handlebars text after the closing `---` (the whole text when
    /// there is no front matter).
    pub body: &'t str,
    /// The 1-based template line on which `body` starts.
    pub body_line: usize,
}

/// Splits `text` at its front matter: a first line that is exactly `---`,
/// up to the next line that is exactly `---`. An unclosed block is not
/// front matter (the caller reports it when parsing the contract).
pub(crate) fn split(text: &str) -> Split<'_> {
    let whole = Split {
        front: None,
        body: text,
        body_line: 1,
    };
    let Some(rest) = strip_marker_line(text) else {
        return whole;
    };
    let mut offset = 0;
    let mut line = 2;
    while offset <= rest.len() {
        let tail = &rest[offset..];
        if let Some(after) = strip_marker_line(tail) {
            return Split {
                front: Some(&rest[..offset]),
                body: after,
                body_line: line + 1,
            };
        }
        match tail.find('\n') {
            Some(n) => {
                offset += n + 1;
                line += 1;
            }
            None => break,
        }
    }
    whole
}

/// The text after a line that is exactly `---` at the start of `text`.
fn strip_marker_line(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---")?;
    let rest = rest.strip_prefix('\r').unwrap_or(rest);
    if rest.is_empty() {
        return Some(rest);
    }
    rest.strip_prefix('\n')
}

/// Whether `text` opens a front-matter block it never closes.
pub(crate) fn unclosed(text: &str) -> bool {
    strip_marker_line(text).is_some() && split(text).front.is_none()
}

/// Most params a contract may declare (as many as a kernel may take).
const MAX_PARAMS: usize = crate::tables::MAX_PARAMS;
const TOP_KEYS: &[&str] = &[
    "summary",
    "params",
    "relations",
    "options",
    "blocks",
    "cores",
    "dtypes",
    "workspace",
];
const PARAM_KEYS: &[&str] = &[
    "name", "kind", "output", "rank", "dtype", "dtypes", "when", "unless",
];
/// A relation entry's keys: one relation, and at most one condition.
const RELATION_KEYS: &[&str] = &[
    "same_shape",
    "same_dim",
    "halved_last",
    "multiple_of",
    "divisible_by",
    "equals",
    "when",
    "unless",
];
const OPTION_KEYS: &[&str] = &["type", "default", "min", "max", "doc"];
const BLOCK_KEYS: &[&str] = &["rule", "param", "per_block", "axes", "times", "options"];
const BLOCK_RULES: [&str; 4] = ["rows", "elements", "leading", "grid"];

/// Reads the contract of the template at `path` (named so in messages) with
/// text `text`: `Ok(None)` when it has no front matter, else the contract or
/// every problem found, located in the template.
pub(crate) fn read(path: &Path, text: &str) -> Result<Option<Contract>, Vec<Diagnostic>> {
    let mut sink = Sink::new(path, text);
    if unclosed(text) {
        sink.error(
            Pos::new(1, 1),
            "the front matter opened by `---` on line 1 is never closed; end it with a line \
             holding only `---`",
        );
        return Err(sink.finish());
    }
    let Some(front) = split(text).front else {
        return Ok(None);
    };
    // One blank line stands for the opening `---`, so YAML positions are
    // template positions.
    let root = match yaml::parse(&format!("\n{front}")) {
        Ok(root) => root,
        Err((pos, message)) => {
            sink.error(pos, format!("template contract: {message}"));
            return Err(sink.finish());
        }
    };
    let contract = Reader {
        sink: &mut sink,
        pending_conditions: Vec::new(),
    }
    .contract(&root);
    match sink.count() {
        0 => Ok(Some(contract)),
        _ => Err(sink.finish()),
    }
}

struct Reader<'r, 'a> {
    sink: &'r mut Sink<'a>,
    /// Params' `when`/`unless` (param, option, where), checked once the
    /// options are read.
    pending_conditions: Vec<(usize, String, bool, Pos)>,
}

/// A key of a mapping, and its value.
type Entry<'n> = (&'n str, &'n Node, &'n Node);

impl Reader<'_, '_> {
    fn error(&mut self, pos: Pos, message: impl Into<String>) {
        self.sink
            .error(pos, format!("template contract: {}", message.into()));
    }

    /// The entries of a mapping whose keys are all in `allowed`; unknown
    /// and repeated keys are reported.
    fn mapping<'n>(&mut self, node: &'n Node, what: &str, allowed: &[&str]) -> Vec<Entry<'n>> {
        let Value::Map(pairs) = &node.value else {
            self.error(
                node.pos,
                format!("{what}: expected a mapping, found {}", node.value.kind()),
            );
            return Vec::new();
        };
        let mut out: Vec<Entry<'n>> = Vec::new();
        for (key, value) in pairs {
            let Value::Str(name) = &key.value else {
                self.error(
                    key.pos,
                    format!("{what}: keys are names, not {}", key.value.kind()),
                );
                continue;
            };
            if !allowed.contains(&name.as_str()) {
                self.error(
                    key.pos,
                    format!(
                        "{what}: unknown key `{}`; expected {}{}",
                        clip(name, 40),
                        one_of(allowed),
                        did_you_mean(name, allowed.iter().copied())
                    ),
                );
            } else if out.iter().any(|(n, _, _)| n == name) {
                self.error(key.pos, format!("{what}: `{name}` is given twice"));
            } else {
                out.push((name, key, value));
            }
        }
        out
    }

    fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.value {
            Value::Str(s) => Some(s.clone()),
            other => {
                self.error(
                    node.pos,
                    format!("{what}: expected a string, found {}", other.kind()),
                );
                None
            }
        }
    }

    /// A declared name: a string, a valid identifier, not in `taken`.
    fn new_name<'t>(
        &mut self,
        node: &Node,
        what: &str,
        mut taken: impl Iterator<Item = &'t str>,
    ) -> Option<String> {
        let name = self.string(node, &format!("{what} name"))?;
        if let Some(problem) = identifier_problem(&name) {
            self.error(
                node.pos,
                format!("{what} `{}`: not a valid name: {problem}", clip(&name, 40)),
            );
            return None;
        }
        if taken.any(|t| t == name) {
            self.error(node.pos, format!("{what} `{name}` is declared twice"));
            return None;
        }
        Some(name)
    }

    fn int(&mut self, node: &Node, what: &str, min: i128, max: i128) -> Option<i128> {
        match &node.value {
            Value::Int(i) if (min..=max).contains(i) => Some(*i),
            Value::Int(i) => {
                self.error(node.pos, format!("{what}: {i} is not from {min} to {max}"));
                None
            }
            other => {
                self.error(
                    node.pos,
                    format!("{what}: expected an integer, found {}", other.kind()),
                );
                None
            }
        }
    }

    fn seq<'n>(&mut self, node: &'n Node, what: &str) -> &'n [Node] {
        match &node.value {
            Value::Seq(items) => items,
            other => {
                self.error(
                    node.pos,
                    format!("{what}: expected a list, found {}", other.kind()),
                );
                &[]
            }
        }
    }

    fn contract(&mut self, root: &Node) -> Contract {
        let mut c = Contract::default();
        if root.value == Value::Null {
            return c;
        }
        let entries = self.mapping(root, "front matter", TOP_KEYS);
        let get = |key: &str| entries.iter().find(|(n, _, _)| *n == key).map(|e| e.2);
        if let Some(node) = get("summary") {
            c.summary = self.string(node, "`summary`");
        }
        if let Some(node) = get("params") {
            c.params = Some(self.params(node));
        }
        if let Some(node) = get("dtypes") {
            c.dtypes = self.dtypes(node);
        }
        if let Some(node) = get("options") {
            c.options = self.options(node);
        }
        for (p, option, on, pos) in std::mem::take(&mut self.pending_conditions) {
            let name = c.params.as_ref().map_or("", |ps| ps[p].name.as_str());
            let word = if on { "when" } else { "unless" };
            let what = format!("param `{name}`, `{word}`");
            let node = Node {
                pos,
                value: Value::Str(option),
            };
            if self.bool_option(&node, &c, &what).is_none()
                && let Some(ps) = c.params.as_mut()
            {
                ps[p].condition = None;
            }
        }
        if let Some(node) = get("cores")
            && let Some(word) = self.string(node, "`cores`")
        {
            match [CoreKind::Vector, CoreKind::Cube, CoreKind::Mixed]
                .into_iter()
                .find(|k| k.spec_name() == word)
            {
                Some(kind) => c.cores = kind,
                None => self.error(
                    node.pos,
                    format!(
                        "`cores`: unknown core kind `{}`; expected vector, cube or mixed{}",
                        clip(&word, 40),
                        did_you_mean(&word, ["vector", "cube", "mixed"])
                    ),
                ),
            }
        }
        if let Some(node) = get("relations") {
            self.relations(node, &mut c);
        }
        if let Some(node) = get("blocks") {
            c.blocks = self.blocks(node, &c);
            let param = match &c.blocks {
                Some(
                    Blocks::Rows { param }
                    | Blocks::Elements { param, .. }
                    | Blocks::Leading { param, .. },
                ) => Some(*param),
                _ => None,
            };
            if let (Some(p), Some(ps)) = (param, &c.params)
                && ps[p].condition.is_some()
            {
                self.error(
                    node.pos,
                    format!(
                        "`blocks`: counts blocks over `{}`, which is optional; count them over a param every kernel has",
                        ps[p].name
                    ),
                );
            }
        }
        if let Some(node) = get("workspace") {
            c.workspace = self.workspace(node, &c);
        }
        c
    }

    /// `workspace: { per_block: BYTES, shared: BYTES }`; only with the grid
    /// rule, whose block count the build knows, so the size is a constant.
    fn workspace(&mut self, node: &Node, c: &Contract) -> Option<Workspace> {
        let entries = self.mapping(node, "`workspace`", &["per_block", "shared"]);
        let get = |key: &str| entries.iter().find(|(n, _, _)| *n == key).map(|e| e.2);
        if !matches!(c.blocks, Some(Blocks::Grid { .. })) {
            self.error(
                node.pos,
                "`workspace`: needs `blocks: { rule: grid, … }`, so that its size is known \
                 when the kernel is built",
            );
            return None;
        }
        let max = i128::from(MAX_WORKSPACE_PART);
        let part = |r: &mut Self, key: &str| match get(key) {
            Some(n) => r
                .int(n, &format!("`workspace`, `{key}`"), 0, max)
                .map(|b| b as u64),
            None => Some(0),
        };
        let per_block = part(self, "per_block")?;
        let shared = part(self, "shared")?;
        // An unknown key was reported already; one error is enough.
        let all_known = matches!(&node.value, Value::Map(pairs) if pairs.len() == entries.len());
        if per_block == 0 && shared == 0 {
            if all_known {
                self.error(
                    node.pos,
                    "`workspace`: give `per_block` or `shared` a number of bytes above 0",
                );
            }
            return None;
        }
        Some(Workspace { per_block, shared })
    }

    fn params(&mut self, node: &Node) -> Vec<RoleSpec> {
        let mut out: Vec<RoleSpec> = Vec::new();
        let items = self.seq(node, "`params`");
        if items.len() > MAX_PARAMS {
            self.error(
                node.pos,
                format!(
                    "`params`: {} params; at most {MAX_PARAMS} are supported",
                    items.len()
                ),
            );
            return out;
        }
        for item in items {
            let entries = self.mapping(item, "`params` entry", PARAM_KEYS);
            let get = |key: &str| entries.iter().find(|(n, _, _)| *n == key).map(|e| e.2);
            let Some(name_node) = get("name") else {
                self.error(
                    item.pos,
                    "`params` entry: needs a `name`, e.g. `{ name: x }`",
                );
                continue;
            };
            let taken = out.iter().map(|p| p.name.as_str());
            let Some(name) = self.new_name(name_node, "param", taken) else {
                continue;
            };
            let ctx = format!("param `{name}`");
            let scalar = match get("kind") {
                None => false,
                Some(kind) => match self.string(kind, &format!("{ctx}, `kind`")).as_deref() {
                    Some("tensor") => false,
                    Some("scalar") => true,
                    Some(other) => {
                        self.error(
                            kind.pos,
                            format!(
                                "{ctx}, `kind`: expected `tensor` or `scalar`, found `{}`",
                                clip(other, 40)
                            ),
                        );
                        false
                    }
                    None => false,
                },
            };
            let output = match get("output") {
                None => false,
                Some(n) => match n.value {
                    Value::Bool(b) => b,
                    ref other => {
                        self.error(
                            n.pos,
                            format!(
                                "{ctx}, `output`: expected `true` or `false`, found {}",
                                other.kind()
                            ),
                        );
                        false
                    }
                },
            };
            let rank = match get("rank") {
                Some(n) if scalar => {
                    self.error(n.pos, format!("{ctx}: a scalar has no `rank`"));
                    None
                }
                Some(n) => self
                    .int(n, &format!("{ctx}, `rank`"), 1, MAX_RANK as i128)
                    .map(|r| r as usize),
                None => None,
            };
            let dtype = match get("dtype") {
                Some(n) if !scalar => {
                    self.error(
                        n.pos,
                        format!(
                            "{ctx}: only scalars take a `dtype`; a tensor's are given by `dtypes:`"
                        ),
                    );
                    None
                }
                Some(n) => self.dtype(n),
                None => None,
            };
            let dtypes = match get("dtypes") {
                Some(n) if scalar => {
                    self.error(
                        n.pos,
                        format!("{ctx}: a scalar takes one `dtype`, not `dtypes`"),
                    );
                    Vec::new()
                }
                Some(n) => self.dtypes(n),
                None => Vec::new(),
            };
            // Checked against the options once they are read.
            let condition = match (get("when"), get("unless")) {
                (Some(_), Some(_)) => {
                    self.error(
                        item.pos,
                        format!("{ctx}: give `when` or `unless`, not both"),
                    );
                    None
                }
                (Some(n), None) => self.string(n, &format!("{ctx}, `when`")).map(|o| (o, true)),
                (None, Some(n)) => self
                    .string(n, &format!("{ctx}, `unless`"))
                    .map(|o| (o, false)),
                (None, None) => None,
            };
            if condition.is_some() && (scalar || output) {
                self.error(
                    item.pos,
                    format!("{ctx}: only an input tensor can be optional (`when`/`unless`)"),
                );
            }
            let condition_pos = get("when").or(get("unless")).map(|n| n.pos);
            if scalar && output {
                self.error(item.pos, format!("{ctx}: a scalar cannot be an output"));
            }
            let role = match (scalar, output) {
                (true, _) => Role::Scalar,
                (false, true) => Role::Output,
                (false, false) => Role::Input,
            };
            if let (Some(c), Some(pos)) = (&condition, condition_pos) {
                self.pending_conditions
                    .push((out.len(), c.0.clone(), c.1, pos));
            }
            out.push(RoleSpec {
                name,
                role,
                rank,
                dtype,
                dtypes,
                condition,
            });
        }
        if !items.is_empty()
            && !out.iter().any(|p| p.role == Role::Output)
            && self.sink.count() == 0
        {
            self.error(
                node.pos,
                "`params`: no param is an output; mark one with `output: true`",
            );
        }
        out
    }

    fn dtype(&mut self, node: &Node) -> Option<DType> {
        let word = self.string(node, "dtype")?;
        let found = DType::from_spec_name(&word);
        if found.is_none() {
            let names: Vec<&str> = DType::ALL.iter().map(|d| d.spec_name()).collect();
            self.error(
                node.pos,
                format!(
                    "unknown dtype `{}`; expected {}{}",
                    clip(&word, 40),
                    one_of(&names),
                    did_you_mean(&word, names.iter().copied())
                ),
            );
        }
        found
    }

    fn dtypes(&mut self, node: &Node) -> Vec<DType> {
        let mut out = Vec::new();
        for item in self.seq(node, "`dtypes`") {
            if let Some(d) = self.dtype(item) {
                if out.contains(&d) {
                    self.error(item.pos, format!("`dtypes`: {d} is listed twice"));
                } else {
                    out.push(d);
                }
            }
        }
        out
    }

    fn options(&mut self, node: &Node) -> Vec<OptionSpec> {
        let mut out: Vec<OptionSpec> = Vec::new();
        if node.value == Value::Null {
            return out;
        }
        let Value::Map(pairs) = &node.value else {
            self.error(
                node.pos,
                format!("`options`: expected a mapping, found {}", node.value.kind()),
            );
            return out;
        };
        for (key, value) in pairs {
            let taken = out.iter().map(|o| o.name.as_str());
            let Some(name) = self.new_name(key, "option", taken) else {
                continue;
            };
            let ctx = format!("option `{name}`");
            let entries = self.mapping(value, &ctx, OPTION_KEYS);
            let get = |key: &str| entries.iter().find(|(n, _, _)| *n == key).map(|e| e.2);
            let doc = match get("doc") {
                Some(n) => self.string(n, &format!("{ctx}, `doc`")).unwrap_or_default(),
                None => String::new(),
            };
            let Some(type_node) = get("type") else {
                self.error(value.pos, format!("{ctx}: needs a `type`: `int` or `bool`"));
                continue;
            };
            let Some(default_node) = get("default") else {
                self.error(value.pos, format!("{ctx}: needs a `default`"));
                continue;
            };
            let kind = match self.string(type_node, &format!("{ctx}, `type`")).as_deref() {
                Some("int") => {
                    let (lo, hi) = (i64::MIN as i128, i64::MAX as i128);
                    let min = get("min")
                        .map_or(Some(lo), |n| self.int(n, &format!("{ctx}, `min`"), lo, hi));
                    let max = get("max")
                        .map_or(Some(hi), |n| self.int(n, &format!("{ctx}, `max`"), lo, hi));
                    let (Some(min), Some(max)) = (min, max) else {
                        continue;
                    };
                    if min > max {
                        self.error(
                            value.pos,
                            format!("{ctx}: `min` {min} is above `max` {max}"),
                        );
                        continue;
                    }
                    let Some(default) =
                        self.int(default_node, &format!("{ctx}, `default`"), lo, hi)
                    else {
                        continue;
                    };
                    if !(min..=max).contains(&default) {
                        let (side, bound) = if default < min {
                            ("below `min`", min)
                        } else {
                            ("above `max`", max)
                        };
                        self.error(
                            default_node.pos,
                            format!("{ctx}: `default` {default} is {side} {bound}"),
                        );
                        continue;
                    }
                    OptionKind::Int {
                        min: min as i64,
                        max: max as i64,
                        default: default as i64,
                    }
                }
                Some("bool") => {
                    for key in ["min", "max"] {
                        if let Some(n) = get(key) {
                            self.error(n.pos, format!("{ctx}: a bool option has no `{key}`"));
                        }
                    }
                    match default_node.value {
                        Value::Bool(b) => OptionKind::Bool { default: b },
                        ref other => {
                            self.error(
                                default_node.pos,
                                format!(
                                    "{ctx}, `default`: expected `true` or `false`, found {}",
                                    other.kind()
                                ),
                            );
                            continue;
                        }
                    }
                }
                Some(other) => {
                    self.error(
                        type_node.pos,
                        format!(
                            "{ctx}, `type`: expected `int` or `bool`, found `{}`",
                            clip(other, 40)
                        ),
                    );
                    continue;
                }
                None => continue,
            };
            out.push(OptionSpec { name, kind, doc });
        }
        out
    }

    /// The position of the param named by `node` among the declared ones.
    fn param_ref(&mut self, node: &Node, c: &Contract, what: &str, tensor: bool) -> Option<usize> {
        let name = self.string(node, what)?;
        let Some(params) = &c.params else {
            self.error(
                node.pos,
                format!(
                    "{what}: names param `{}`, but the contract declares no `params`",
                    clip(&name, 40)
                ),
            );
            return None;
        };
        let Some(i) = params.iter().position(|p| p.name == name) else {
            self.error(
                node.pos,
                format!(
                    "{what}: no param `{}`; the params are {}{}",
                    clip(&name, 40),
                    one_of(&params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>()),
                    did_you_mean(&name, params.iter().map(|p| p.name.as_str()))
                ),
            );
            return None;
        };
        if tensor && params[i].role == Role::Scalar {
            self.error(
                node.pos,
                format!("{what}: `{name}` is a scalar; this needs a tensor"),
            );
            return None;
        }
        Some(i)
    }

    /// `param.N` or `param.last`.
    fn axis_ref(&mut self, node: &Node, c: &Contract, what: &str) -> Option<ParamAxis> {
        let Value::Str(text) = &node.value else {
            self.error(
                node.pos,
                format!(
                    "{what}: expected an axis such as `x.0` or `x.last`, found {}",
                    node.value.kind()
                ),
            );
            return None;
        };
        let Some((param, axis)) = text.rsplit_once('.') else {
            self.error(
                node.pos,
                format!(
                    "{what}: `{}` is not an axis; write `PARAM.INDEX` or `PARAM.last`",
                    clip(text, 40)
                ),
            );
            return None;
        };
        let name = Node {
            pos: node.pos,
            value: Value::Str(param.to_owned()),
        };
        let p = self.param_ref(&name, c, what, true)?;
        let rank = c.params.as_ref().and_then(|ps| ps[p].rank);
        let axis = match axis {
            "last" => AxisRef::Last,
            digits => match digits.parse::<usize>() {
                Ok(i) if i < rank.unwrap_or(MAX_RANK) => AxisRef::Index(i),
                Ok(i) => {
                    self.error(
                        node.pos,
                        format!(
                            "{what}: `{param}` has {} axes; there is no axis {i}",
                            rank.unwrap_or(MAX_RANK)
                        ),
                    );
                    return None;
                }
                Err(_) => {
                    self.error(
                        node.pos,
                        format!(
                            "{what}: `{}` is not an axis; write `PARAM.INDEX` or `PARAM.last`",
                            clip(text, 40)
                        ),
                    );
                    return None;
                }
            },
        };
        Some((p, axis))
    }

    /// An int option that can divide or multiply: at least 1, at most `u32::MAX`.
    fn factor_option(&mut self, node: &Node, c: &Contract, what: &str) -> Option<String> {
        let name = self.string(node, what)?;
        match c.option(&name).map(|o| o.kind) {
            Some(OptionKind::Int { min, max, .. }) if min >= 1 && max <= i64::from(u32::MAX) => {
                Some(name)
            }
            Some(OptionKind::Int { .. }) => {
                self.error(
                    node.pos,
                    format!("{what}: option `{name}` must be declared with `min` of at least 1 and `max` of at most {}", u32::MAX),
                );
                None
            }
            Some(OptionKind::Bool { .. }) => {
                self.error(
                    node.pos,
                    format!("{what}: option `{name}` is a bool; this needs an int option"),
                );
                None
            }
            None => {
                self.no_option(node, c, what, &name);
                None
            }
        }
    }

    /// An option name the contract does not declare.
    fn no_option(&mut self, node: &Node, c: &Contract, what: &str, name: &str) {
        let names: Vec<&str> = c.options.iter().map(|o| o.name.as_str()).collect();
        self.error(
            node.pos,
            format!(
                "{what}: no option `{}`; declare it under `options:`{}",
                clip(name, 40),
                did_you_mean(name, names.iter().copied())
            ),
        );
    }

    /// `when: NAME` / `unless: NAME`: a declared bool option. `what` says
    /// where, for messages.
    fn bool_option(&mut self, node: &Node, c: &Contract, what: &str) -> Option<String> {
        let name = self.string(node, what)?;
        match c.option(&name).map(|o| o.kind) {
            Some(OptionKind::Bool { .. }) => Some(name),
            Some(OptionKind::Int { .. }) => {
                self.error(
                    node.pos,
                    format!("{what}: option `{name}` is an int; this needs a bool option"),
                );
                None
            }
            None => {
                self.no_option(node, c, what, &name);
                None
            }
        }
    }

    fn relations(&mut self, node: &Node, c: &mut Contract) {
        for item in self.seq(node, "`relations`") {
            let all = self.mapping(item, "`relations` entry", RELATION_KEYS);
            let (conditions, entries): (Vec<Entry<'_>>, Vec<Entry<'_>>) = all
                .into_iter()
                .partition(|(name, _, _)| matches!(*name, "when" | "unless"));
            if entries.len() != 1 {
                if entries.len() > 1 {
                    self.error(item.pos, "`relations` entry: give one relation per entry");
                } else if !conditions.is_empty() {
                    self.error(
                        item.pos,
                        "`relations` entry: `when`/`unless` needs a relation beside it, e.g. \
                         `{ same_dim: [a.1, b.0], unless: transpose_b }`",
                    );
                }
                continue;
            }
            if conditions.len() > 1 {
                self.error(
                    item.pos,
                    "`relations` entry: give `when` or `unless`, not both",
                );
                continue;
            }
            let condition = match conditions.first() {
                None => None,
                Some(&(word, _, option)) => {
                    match self.bool_option(option, c, &format!("`relations` entry, `{word}`")) {
                        Some(name) => Some((name, word == "when")),
                        None => continue,
                    }
                }
            };
            let (kind, key, value) = entries[0];
            let what = format!("`{kind}`");
            let relation = c.relations.len();
            // An equation is quoted whole, as written: messages show it.
            let shown = match (&value.value, kind) {
                (Value::Str(s), "equals") if s.len() <= equals::MAX_TEXT => {
                    format!("\"{}\"", s.trim())
                }
                _ => flow(value),
            };
            let text = match &condition {
                None => format!("{kind}: {shown}"),
                Some((option, on)) => format!(
                    "{kind}: {shown}, {}: {option}",
                    if *on { "when" } else { "unless" }
                ),
            };
            c.relations.push(Relation {
                text,
                at: format!("{}:{}", display_path(self.sink.path()), key.pos),
                axes: Vec::new(),
                condition,
            });
            let named = |c: &mut Contract, axis: Option<ParamAxis>| {
                if let Some(a @ (_, AxisRef::Index(_))) = axis {
                    c.relations[relation].axes.push(a);
                }
                axis
            };
            match kind {
                "same_shape" | "same_dim" | "halved_last" => {
                    let items = self.seq(value, &what);
                    let need = if kind == "halved_last" {
                        2..=2
                    } else {
                        2..=MAX_PARAMS * MAX_RANK
                    };
                    if !need.contains(&items.len()) {
                        let n = if kind == "halved_last" {
                            "exactly two params, `[big, small]`"
                        } else {
                            "at least two"
                        };
                        self.error(value.pos, format!("{what}: needs {n}"));
                        continue;
                    }
                    if kind == "same_dim" {
                        let axes: Vec<Option<ParamAxis>> = items
                            .iter()
                            .map(|n| {
                                let axis = self.axis_ref(n, c, &what);
                                named(c, axis)
                            })
                            .collect();
                        if let Some(Some(first)) = axes.first().copied() {
                            for other in axes.into_iter().skip(1).flatten() {
                                c.same_axis.push((first, other, relation));
                            }
                        }
                        continue;
                    }
                    let params: Vec<Option<usize>> = items
                        .iter()
                        .map(|n| self.param_ref(n, c, &what, true))
                        .collect();
                    let [Some(first), ..] = params[..] else {
                        continue;
                    };
                    let rank = |c: &Contract, p: usize| c.params.as_ref().and_then(|ps| ps[p].rank);
                    for (other, node) in params.iter().zip(items).skip(1) {
                        let Some(other) = *other else { continue };
                        if let (Some(a), Some(b)) = (rank(c, first), rank(c, other))
                            && a != b
                        {
                            self.error(
                                node.pos,
                                format!("{what}: the params are declared with ranks {a} and {b}"),
                            );
                            continue;
                        }
                        if kind == "halved_last" {
                            if c.halved_last.is_some() {
                                self.error(item.pos, "`halved_last` is given twice");
                            }
                            c.halved_last = Some((first, other, relation));
                        } else {
                            c.same_shape.push((first, other, relation));
                        }
                    }
                }
                "equals" => {
                    if let Some(e) = self.equation(value, c, relation) {
                        c.equations.push(e);
                    }
                }
                "multiple_of" => {
                    let entries = self.mapping(value, &what, &["axis", "of", "times", "why"]);
                    let get = |key: &str| entries.iter().find(|(n, _, _)| *n == key).map(|e| e.2);
                    let (Some(axis), Some(of)) = (get("axis"), get("of")) else {
                        self.error(
                            value.pos,
                            format!(
                                "{what}: needs `axis` and `of`, e.g. `{{ axis: x.last, of: 16 }}`"
                            ),
                        );
                        continue;
                    };
                    let axis = self.axis_ref(axis, c, &format!("{what}, `axis`"));
                    let axis = named(c, axis);
                    let of = self.int(of, &format!("{what}, `of`"), 1, i128::from(u32::MAX));
                    let times = match get("times") {
                        Some(n) => self
                            .factor_option(n, c, &format!("{what}, `times`"))
                            .map(Some),
                        None => Some(None),
                    };
                    let why = match get("why") {
                        Some(n) => self.string(n, &format!("{what}, `why`")),
                        None => Some("the template requires it".to_owned()),
                    };
                    if let (Some(axis), Some(of), Some(times), Some(why)) = (axis, of, times, why) {
                        c.multiple_of.push(MultipleOf {
                            axis,
                            of: of as u64,
                            times,
                            why,
                            relation,
                        });
                    }
                }
                _ => {
                    let entries = self.mapping(value, &what, &["axis", "option"]);
                    let get = |key: &str| entries.iter().find(|(n, _, _)| *n == key).map(|e| e.2);
                    let (Some(axis), Some(option)) = (get("axis"), get("option")) else {
                        self.error(value.pos, format!("{what}: needs `axis` and `option`, e.g. `{{ axis: x.last, option: heads }}`"));
                        continue;
                    };
                    let axis = self.axis_ref(axis, c, &format!("{what}, `axis`"));
                    let axis = named(c, axis);
                    let option = self.factor_option(option, c, &format!("{what}, `option`"));
                    if let (Some(axis), Some(option)) = (axis, option) {
                        c.divisible_by_option.push((axis, option, relation));
                    }
                }
            }
        }
    }

    /// `equals: "LEFT == RIGHT"`: parsed, its names resolved (axes of
    /// tensor params, int options), and the axes it names recorded on the
    /// relation.
    fn equation(&mut self, node: &Node, c: &mut Contract, relation: usize) -> Option<Equation> {
        let text = self.string(node, "`equals`")?;
        let what = format!("`equals` (`{}`)", clip(text.trim(), 64));
        let (left, right) = match equals::parse(&text) {
            Ok(sides) => sides,
            Err(why) => {
                self.error(node.pos, format!("{what}: {why}"));
                return None;
            }
        };
        let before = self.sink.count();
        let left = self.resolve(&left, node, c, &what);
        let right = self.resolve(&right, node, c, &what);
        let (Some(left), Some(right)) = (left, right) else {
            return None;
        };
        if self.sink.count() != before {
            return None;
        }
        let mut axes = Vec::new();
        left.axes(&mut axes);
        right.axes(&mut axes);
        if axes.is_empty() {
            self.error(
                node.pos,
                format!("{what}: names no axis, so it checks nothing about the tensors"),
            );
            return None;
        }
        if let (Expr::Axis(_), Expr::Axis(_)) = (&left, &right) {
            let sides: Vec<&str> = text.split("==").map(str::trim).collect();
            self.error(
                node.pos,
                format!(
                    "{what}: two axes that are equal are one dim; write `same_dim: [{}]`",
                    sides.join(", ")
                ),
            );
            return None;
        }
        for a in axes {
            if let (_, AxisRef::Index(_)) = a {
                c.relations[relation].axes.push(a);
            }
        }
        Some(Equation {
            text: text.trim().to_owned(),
            left,
            right,
            relation,
        })
    }

    /// A parsed side with its names resolved; every bad name is reported.
    fn resolve(
        &mut self,
        p: &equals::Parsed,
        node: &Node,
        c: &Contract,
        what: &str,
    ) -> Option<Expr> {
        match p {
            equals::Parsed::Int(n) => Some(Expr::Int(*n)),
            equals::Parsed::Bin(op, l, r) => {
                let l = self.resolve(l, node, c, what);
                let r = self.resolve(r, node, c, what);
                Some(Expr::Bin(*op, Box::new(l?), Box::new(r?)))
            }
            equals::Parsed::Name(name) if name.contains('.') => {
                let axis = Node {
                    pos: node.pos,
                    value: Value::Str(name.clone()),
                };
                self.axis_ref(&axis, c, what).map(Expr::Axis)
            }
            equals::Parsed::Name(name) => match c.option(name).map(|o| o.kind) {
                Some(OptionKind::Int { .. }) => Some(Expr::Option(name.clone())),
                Some(OptionKind::Bool { .. }) => {
                    self.error(
                        node.pos,
                        format!("{what}: option `{name}` is a bool; this needs an int option"),
                    );
                    None
                }
                None if c
                    .params
                    .as_ref()
                    .is_some_and(|ps| ps.iter().any(|p| &p.name == name)) =>
                {
                    self.error(
                        node.pos,
                        format!(
                            "{what}: `{name}` is a param; name one of its axes, `{name}.0` or \
                             `{name}.last`"
                        ),
                    );
                    None
                }
                None => {
                    self.no_option(node, c, what, name);
                    None
                }
            },
        }
    }

    fn blocks(&mut self, node: &Node, c: &Contract) -> Option<Blocks> {
        let entries = self.mapping(node, "`blocks`", BLOCK_KEYS);
        let get = |key: &str| entries.iter().find(|(n, _, _)| *n == key).map(|e| e.2);
        let Some(rule) = get("rule") else {
            self.error(
                node.pos,
                "`blocks`: needs `rule` (rows, elements, leading or grid) and, but for grid, `param`",
            );
            return None;
        };
        let rule_node = rule;
        let rule = self.string(rule_node, "`blocks`, `rule`")?;
        let allowed: &[&str] = match rule.as_str() {
            "rows" => &["rule", "param"],
            "elements" => &["rule", "param", "per_block"],
            "leading" => &["rule", "param", "axes", "times"],
            "grid" => &["rule", "options"],
            other => {
                self.error(
                    rule_node.pos,
                    format!(
                        "`blocks`, `rule`: unknown rule `{}`; expected rows, elements, leading or grid{}",
                        clip(other, 40),
                        did_you_mean(other, BLOCK_RULES)
                    ),
                );
                return None;
            }
        };
        for (key, key_node, _) in &entries {
            if !allowed.contains(key) {
                self.error(
                    key_node.pos,
                    format!(
                        "`blocks`: this rule takes no `{key}`; it takes {}",
                        one_of(allowed)
                    ),
                );
            }
        }
        if rule == "grid" {
            return self.grid(node, get("options"), c);
        }
        let Some(param) = get("param") else {
            self.error(node.pos, format!("`blocks`: the {rule} rule needs `param`"));
            return None;
        };
        let param = self.param_ref(param, c, "`blocks`, `param`", true)?;
        match rule.as_str() {
            "rows" => Some(Blocks::Rows { param }),
            "elements" => {
                let Some(n) = get("per_block") else {
                    self.error(node.pos, "`blocks`: the elements rule needs `per_block`");
                    return None;
                };
                let per_block = self.int(n, "`blocks`, `per_block`", 1, i128::from(u32::MAX))?;
                Some(Blocks::Elements {
                    param,
                    per_block: per_block as u32,
                })
            }
            _ => {
                let rank = c
                    .params
                    .as_ref()
                    .and_then(|ps| ps[param].rank)
                    .unwrap_or(MAX_RANK);
                let axes = match get("axes") {
                    Some(n) => self.int(n, "`blocks`, `axes`", 1, rank as i128)? as usize,
                    None => 1,
                };
                let option = match get("times") {
                    Some(n) => Some(self.factor_option(n, c, "`blocks`, `times`")?),
                    None => None,
                };
                Some(Blocks::Leading {
                    param,
                    axes,
                    option,
                })
            }
        }
    }

    /// `{ rule: grid, options: [a, b, …] }`: one block per cell of a grid
    /// whose sides are int options.
    fn grid(&mut self, node: &Node, options: Option<&Node>, c: &Contract) -> Option<Blocks> {
        let Some(list) = options else {
            self.error(
                node.pos,
                "`blocks`: the grid rule needs `options`, the int options whose product is the \
                 block count, e.g. `{ rule: grid, options: [split_m, split_n] }`",
            );
            return None;
        };
        let items = self.seq(list, "`blocks`, `options`");
        if items.is_empty() {
            if matches!(list.value, Value::Seq(_)) {
                self.error(
                    list.pos,
                    "`blocks`, `options`: name at least one int option",
                );
            }
            return None;
        }
        let mut names: Vec<String> = Vec::new();
        let mut ok = true;
        for item in items {
            match self.factor_option(item, c, "`blocks`, `options`") {
                Some(name) if names.contains(&name) => {
                    self.error(
                        item.pos,
                        format!("`blocks`, `options`: `{name}` is named twice"),
                    );
                    ok = false;
                }
                Some(name) => names.push(name),
                None => ok = false,
            }
        }
        ok.then_some(Blocks::Grid { options: names })
    }
}

/// A YAML value in flow style on one line, as messages quote relations.
fn flow(node: &Node) -> String {
    match &node.value {
        Value::Seq(items) => {
            let items: Vec<String> = items.iter().map(flow).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Map(pairs) => {
            let pairs: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", flow(k), flow(v)))
                .collect();
            format!("{{ {} }}", pairs.join(", "))
        }
        Value::Str(s) => clip(s, 40).into_owned(),
        Value::Int(i) => i.to_string(),
        Value::Float { raw } => raw.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "~".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_front_matter_and_counts_lines() {
        let s = split("---\na: 1\nb: 2\n---\nbody\n");
        assert_eq!(s.front, Some("a: 1\nb: 2\n"));
        assert_eq!(s.body, "body\n");
        assert_eq!(s.body_line, 5);
        let s = split("---\r\na: 1\r\n---\r\nx");
        assert_eq!(s.front, Some("a: 1\r\n"));
        assert_eq!(s.body, "x");
        assert_eq!(s.body_line, 4);
        let s = split("---\n---\n");
        assert_eq!((s.front, s.body, s.body_line), (Some(""), "", 3));
    }

    #[test]
    fn text_without_a_closed_block_is_all_body() {
        for text in ["", "body", "--- \nx", "----\n---\n", "---\na: 1\n"] {
            let s = split(text);
            assert_eq!((s.front, s.body, s.body_line), (None, text, 1), "{text:?}");
        }
        assert!(unclosed("---\na: 1\n"));
        assert!(!unclosed("body"));
    }
}
