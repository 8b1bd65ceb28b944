//! Variants: a kernel's implementations chosen per call by conditions on
//! the call's sizes (`variants:`), or by the STATIC sizes built
//! (`dispatch: runtime`). Each variant is checked as a kernel of its own;
//! this module checks what binds them: the conditions, the variants' names
//! and order, the dims a variant marks differently, and whether some sizes
//! reach no variant.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::dims::{FileDims, NamedDim, size};
use super::{AxisKind, DimSize, Kernel, ParamKind};
use crate::diag::{Pos, Sink, clip};
use crate::names::{did_you_mean, variant_name_problem};
use crate::spec::{KernelSpec, QUOTED, Sp, VariantSpec};
use crate::tokens::{Cursor, Lexicon, Token};
use crate::yaml::Value;

/// What makes a checked kernel one variant of a kernel with `variants:`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Variant {
    /// The kernel the variant belongs to: the name of the one wrapper that
    /// chooses among its variants.
    pub kernel: String,
    /// The variant's name (for `dispatch: runtime`, the kernel's).
    pub name: String,
    /// When it runs; `None` for the last variant when it is unconditioned.
    pub when: Option<Condition>,
    /// Its place in the list, from 0.
    pub index: usize,
    /// How many variants the kernel has.
    pub count: usize,
    /// `dispatch: runtime` without `variants:`: a kernel with one
    /// implementation whose STATIC sizes are chosen at run time.
    pub implicit: bool,
    /// Sizes no variant accepts, found at build time (set on the first
    /// variant): a warning, and `Error::NoVariant` for such a call.
    pub uncovered: Option<String>,
}

/// A checked `when:`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Condition {
    /// As written.
    pub text: String,
    /// As parsed.
    pub expr: Expr,
}

/// A condition's syntax tree.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expr {
    /// `a || b`.
    Or(Box<Expr>, Box<Expr>),
    /// `a && b`.
    And(Box<Expr>, Box<Expr>),
    /// `!a`.
    Not(Box<Expr>),
    /// `a < b` and the other comparisons.
    Compare(Term, Compare, Term),
}

/// A value in a comparison: a size or an integer, optionally `% m`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Term {
    /// The value.
    pub atom: Atom,
    /// `% m`, when written.
    pub modulo: Option<u64>,
}

/// A size or an integer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Atom {
    /// The size of a tensor's axis, as the condition named it (`x.0`, `M`).
    Size {
        /// As written.
        label: String,
        /// The param's index.
        param: usize,
        /// The axis (for a named dim, its first axis).
        axis: usize,
    },
    /// An integer.
    Int(u64),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compare {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Compare {
    fn symbol(self) -> &'static str {
        match self {
            Compare::Lt => "<",
            Compare::Le => "<=",
            Compare::Gt => ">",
            Compare::Ge => ">=",
            Compare::Eq => "==",
            Compare::Ne => "!=",
        }
    }

    fn holds(self, a: u64, b: u64) -> bool {
        match self {
            Compare::Lt => a < b,
            Compare::Le => a <= b,
            Compare::Gt => a > b,
            Compare::Ge => a >= b,
            Compare::Eq => a == b,
            Compare::Ne => a != b,
        }
    }
}

impl Term {
    fn value(&self, size: &impl Fn(usize, usize) -> u64) -> u64 {
        let v = match &self.atom {
            Atom::Size { param, axis, .. } => size(*param, *axis),
            Atom::Int(n) => *n,
        };
        match self.modulo {
            Some(m) => v % m,
            None => v,
        }
    }

    /// Rust for the term; `size(param, axis)` is the Rust for a size.
    fn rust(&self, size: &impl Fn(usize, usize) -> String) -> String {
        let v = match &self.atom {
            Atom::Size { param, axis, .. } => size(*param, *axis),
            Atom::Int(n) => format!("{n}u64"),
        };
        match self.modulo {
            Some(m) => format!("({v} % {m}u64)"),
            None => v,
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.atom {
            Atom::Size { label, .. } => f.write_str(label)?,
            Atom::Int(n) => write!(f, "{n}")?,
        }
        match self.modulo {
            Some(m) => write!(f, " % {m}"),
            None => Ok(()),
        }
    }
}

impl Expr {
    /// Whether the condition holds for these sizes.
    pub fn holds(&self, size: &impl Fn(usize, usize) -> u64) -> bool {
        match self {
            Expr::Or(a, b) => a.holds(size) || b.holds(size),
            Expr::And(a, b) => a.holds(size) && b.holds(size),
            Expr::Not(a) => !a.holds(size),
            Expr::Compare(a, op, b) => op.holds(a.value(size), b.value(size)),
        }
    }

    /// The condition as a Rust `bool` expression.
    pub fn rust(&self, size: &impl Fn(usize, usize) -> String) -> String {
        match self {
            Expr::Or(a, b) => format!("({} || {})", a.rust(size), b.rust(size)),
            Expr::And(a, b) => format!("({} && {})", a.rust(size), b.rust(size)),
            Expr::Not(a) => format!("!{}", a.rust(size)),
            Expr::Compare(a, op, b) => {
                format!("({} {} {})", a.rust(size), op.symbol(), b.rust(size))
            }
        }
    }

    /// Every size the condition reads, once each, in order of first use.
    pub fn sizes(&self, out: &mut Vec<(String, usize, usize)>) {
        let mut term = |t: &Term| {
            if let Atom::Size { label, param, axis } = &t.atom
                && !out.iter().any(|(l, _, _)| l == label)
            {
                out.push((label.clone(), *param, *axis));
            }
        };
        match self {
            Expr::Or(a, b) | Expr::And(a, b) => {
                a.sizes(out);
                b.sizes(out);
            }
            Expr::Not(a) => a.sizes(out),
            Expr::Compare(a, _, b) => {
                term(a);
                term(b);
            }
        }
    }

    /// The integers the condition compares with or divides by, for the
    /// search for sizes no variant accepts.
    fn constants(&self, out: &mut BTreeSet<u64>) {
        match self {
            Expr::Or(a, b) | Expr::And(a, b) => {
                a.constants(out);
                b.constants(out);
            }
            Expr::Not(a) => a.constants(out),
            Expr::Compare(a, _, b) => {
                for t in [a, b] {
                    if let Atom::Int(n) = t.atom {
                        out.insert(n);
                    }
                    if let Some(m) = t.modulo {
                        out.insert(m);
                    }
                }
            }
        }
    }
}

/// Deepest nesting of `(` and `!` a condition may have: a hostile spec
/// must not exhaust the stack.
const MAX_DEPTH: usize = 32;
/// Longest condition, in bytes.
const MAX_CONDITION: usize = 1024;

/// The condition language's operators and refusals.
const CONDITION: Lexicon = Lexicon {
    ops: &[
        "<=", ">=", "==", "!=", "&&", "||", "<", ">", "%", "!", "(", ")",
    ],
    max_int: u64::MAX,
    too_large: |digits| format!("`{}` is too large", clip(digits, QUOTED)),
    unexpected: |c| match c {
        '=' => "`=` is not a comparison; write `==`".to_owned(),
        _ => format!("unexpected `{c}`"),
    },
};

/// Parses and checks one condition against a kernel's params and dims.
struct Parser<'a> {
    cur: Cursor,
    kernel: &'a Kernel,
    /// Named dims whose marker this variant changes: not fixed in the
    /// wrapper even when fixed here.
    overridden: &'a [String],
}

impl Parser<'_> {
    fn or(&mut self, depth: usize) -> Result<Expr, String> {
        let mut left = self.and(depth)?;
        while self.cur.eat("||") {
            left = Expr::Or(Box::new(left), Box::new(self.and(depth)?));
        }
        Ok(left)
    }

    fn and(&mut self, depth: usize) -> Result<Expr, String> {
        let mut left = self.unary(depth)?;
        while self.cur.eat("&&") {
            left = Expr::And(Box::new(left), Box::new(self.unary(depth)?));
        }
        Ok(left)
    }

    fn unary(&mut self, depth: usize) -> Result<Expr, String> {
        if depth >= MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} deep"));
        }
        if self.cur.eat("!") {
            return Ok(Expr::Not(Box::new(self.unary(depth + 1)?)));
        }
        if self.cur.eat("(") {
            let inner = self.or(depth + 1)?;
            if !self.cur.eat(")") {
                return Err(format!("expected `)`, found {}", self.cur.found()));
            }
            return Ok(inner);
        }
        let left = self.term()?;
        let op = match self.cur.peek() {
            Some(Token::Op("<")) => Compare::Lt,
            Some(Token::Op("<=")) => Compare::Le,
            Some(Token::Op(">")) => Compare::Gt,
            Some(Token::Op(">=")) => Compare::Ge,
            Some(Token::Op("==")) => Compare::Eq,
            Some(Token::Op("!=")) => Compare::Ne,
            _ => {
                return Err(format!(
                    "expected a comparison (`<`, `<=`, `>`, `>=`, `==` or `!=`) after `{left}`, \
                     found {}",
                    self.cur.found()
                ));
            }
        };
        self.cur.advance();
        let right = self.term()?;
        if matches!(left.atom, Atom::Int(_)) && matches!(right.atom, Atom::Int(_)) {
            return Err(format!(
                "`{left} {} {right}` compares two integers, so it is constant",
                op.symbol()
            ));
        }
        Ok(Expr::Compare(left, op, right))
    }

    fn term(&mut self) -> Result<Term, String> {
        let atom = match self.cur.peek().cloned() {
            Some(Token::Int(n)) => Atom::Int(n),
            Some(Token::Name(name)) => self.size(&name)?,
            _ => {
                return Err(format!(
                    "expected an axis (`x.0`), a named dim or an integer, found {}",
                    self.cur.found()
                ));
            }
        };
        self.cur.advance();
        let modulo = if self.cur.eat("%") {
            match self.cur.peek() {
                Some(Token::Int(0)) => return Err("`% 0` divides by zero".to_owned()),
                Some(&Token::Int(m)) => {
                    self.cur.advance();
                    Some(m)
                }
                _ => {
                    return Err(format!(
                        "expected an integer after `%`, found {}",
                        self.cur.found()
                    ));
                }
            }
        } else {
            None
        };
        Ok(Term { atom, modulo })
    }

    /// An axis (`x.0`, `x.last`) or a named dim, as a size of the call.
    fn size(&self, name: &str) -> Result<Atom, String> {
        let k = self.kernel;
        let (param, axis) = if let Some((pname, axis)) = name.split_once('.') {
            let Some(pi) = k.params.iter().position(|p| p.name == pname) else {
                return Err(format!(
                    "kernel has no param `{}`{}",
                    clip(pname, QUOTED),
                    did_you_mean(pname, k.params.iter().map(|p| p.name.as_str()))
                ));
            };
            let ParamKind::Tensor { axes, .. } = &k.params[pi].kind else {
                return Err(format!("`{pname}` is a scalar and has no axes"));
            };
            let ai = match axis {
                "last" => axes.len() - 1,
                _ => match axis.parse::<usize>() {
                    Ok(ai) if ai < axes.len() => ai,
                    _ => {
                        return Err(format!(
                            "`{pname}` has axes 0 to {}; write `{pname}.AXIS` with AXIS a number \
                             in that range, or `{pname}.last`",
                            axes.len() - 1
                        ));
                    }
                },
            };
            (pi, ai)
        } else {
            let Some(dim) = k.dims.iter().find(|d| d.name.as_deref() == Some(name)) else {
                let mut known: Vec<String> = k.dims.iter().filter_map(|d| d.name.clone()).collect();
                for p in &k.params {
                    if let ParamKind::Tensor { axes, .. } = &p.kind {
                        known.extend((0..axes.len()).map(|a| format!("{}.{a}", p.name)));
                    }
                }
                return Err(format!(
                    "`{}` is neither an axis (`param.N`) nor a dim a param of this kernel \
                     uses{}",
                    clip(name, QUOTED),
                    did_you_mean(name, known.iter().map(String::as_str))
                ));
            };
            dim.axes[0]
        };
        let ParamKind::Tensor { axes, .. } = &k.params[param].kind else {
            unreachable!("sizes are of tensors");
        };
        let dim = &k.dims[axes[axis].dim];
        if let DimSize::Fixed(n) = dim.size
            && !dim
                .name
                .as_ref()
                .is_some_and(|d| self.overridden.contains(d))
        {
            return Err(format!(
                "`{}` is fixed at {n} when the kernel is built, so the condition on it is \
                 constant",
                clip(name, QUOTED)
            ));
        }
        Ok(Atom::Size {
            label: name.to_owned(),
            param,
            axis,
        })
    }
}

/// Parses and checks a variant's `when:` against its kernel.
pub(super) fn check_condition(
    when: &Sp<String>,
    kernel: &Kernel,
    overridden: &[String],
    ctx: &str,
    sink: &mut Sink<'_>,
) -> Option<Condition> {
    let text = &when.value;
    let fail = |sink: &mut Sink<'_>, why: String| {
        sink.error(
            when.pos,
            format!("{ctx}, `when` (`{}`): {why}", clip(text, QUOTED)),
        );
    };
    if text.len() > MAX_CONDITION {
        fail(sink, format!("longer than {MAX_CONDITION} bytes"));
        return None;
    }
    let tokens = match CONDITION.tokens(text) {
        Ok(t) if t.is_empty() => {
            fail(
                sink,
                "empty; give a condition or leave `when` out".to_owned(),
            );
            return None;
        }
        Ok(t) => t,
        Err(why) => {
            fail(sink, why);
            return None;
        }
    };
    let mut parser = Parser {
        cur: Cursor::new(tokens),
        kernel,
        overridden,
    };
    match parser.or(0) {
        Ok(expr) if parser.cur.peek().is_none() => Some(Condition {
            text: text.clone(),
            expr,
        }),
        Ok(_) => {
            let found = parser.cur.found();
            fail(sink, format!("unexpected {found} after a whole condition"));
            None
        }
        Err(why) => {
            fail(sink, why);
            None
        }
    }
}

/// The file's named dims as a variant sees them: its `dims:` markers in
/// place of the file's.
pub(super) fn variant_dims(
    base: &FileDims,
    variant: &VariantSpec,
    ctx: &str,
    sink: &mut Sink<'_>,
) -> FileDims {
    let mut dims = base.clone();
    for (name, node) in &variant.dims {
        let at = format!("{ctx}, `dims` entry `{}`", clip(&name.value, QUOTED));
        let Some(old) = base.valid.get(&name.value) else {
            if !base.invalid.contains(&name.value) {
                sink.error_with(name.pos, || {
                    format!(
                        "{at}: not a dim of the file's `dims:`; a variant changes the marker of \
                         a named dim{}",
                        did_you_mean(&name.value, base.valid.keys().map(String::as_str))
                    )
                });
            }
            continue;
        };
        let kind = match &node.value {
            Value::Str(s) if s == "DYNAMIC" || s == "DYN" => AxisKind::Dynamic,
            Value::Str(s) if s == "STATIC" => AxisKind::Static,
            _ => match size(node) {
                Ok(n) => AxisKind::Fixed(n),
                Err(why) => {
                    sink.error(node.pos, format!("{at}: {why}"));
                    continue;
                }
            },
        };
        dims.valid.insert(
            name.value.clone(),
            NamedDim {
                kind,
                doc: old.doc.clone(),
            },
        );
    }
    dims
}

/// Checks a kernel's variants as a whole, once each is checked: names,
/// order, and sizes no variant accepts. (The name a variant is compiled as,
/// `KERNEL__VARIANT`, cannot be another kernel's: names with `__` are
/// refused.) `kernels` are
/// every kernel of the file checked so far, variants among them.
pub(super) fn check_groups(specs: &[KernelSpec], kernels: &mut [Kernel], sink: &mut Sink<'_>) {
    let mut groups: BTreeMap<&str, Vec<&KernelSpec>> = BTreeMap::new();
    for k in specs {
        if let Some(v) = &k.variant {
            groups.entry(v.kernel.value.as_str()).or_default().push(k);
        }
    }
    for (kernel, members) in &groups {
        let ctx = format!("kernel `{}`", clip(kernel, QUOTED));
        let mut seen: BTreeMap<&str, Pos> = BTreeMap::new();
        for k in members {
            let v = k.variant.as_ref().expect("grouped by variant");
            if v.implicit {
                continue;
            }
            let vctx = format!("{ctx}, variant `{}`", clip(&v.name.value, QUOTED));
            if let Some(problem) = variant_name_problem(&v.name.value) {
                sink.error(
                    v.name.pos,
                    format!("{vctx}: not a valid variant name: {problem}"),
                );
            }
            if let Some(first) = seen.insert(&v.name.value, v.name.pos) {
                sink.error(
                    v.name.pos,
                    format!(
                        "{ctx}: two variants are named `{}`; the first is at line {}, column {}",
                        clip(&v.name.value, QUOTED),
                        first.line,
                        first.column
                    ),
                );
            }
        }
        // Sizes no variant accepts: searched among the sizes at and
        // around every number the conditions and STATIC lists name.
        let chosen: Vec<&Kernel> = kernels
            .iter()
            .filter(|k| k.variant.as_ref().is_some_and(|v| v.kernel == *kernel))
            .collect();
        for k in members {
            let v = k.variant.as_ref().expect("grouped by variant");
            let Some(checked) = chosen.iter().find(|c| c.name == k.name.value) else {
                continue;
            };
            let takes_all = v.when.is_none()
                && v.dims.is_empty()
                && !checked
                    .dims
                    .iter()
                    .any(|d| matches!(d.size, DimSize::Static(_)));
            if takes_all && v.index + 1 < v.count {
                let vctx = format!("{ctx}, variant `{}`", clip(&v.name.value, QUOTED));
                sink.error(
                    v.name.pos,
                    format!(
                        "{vctx}: has no `when` and no STATIC sizes, so it takes every call and \
                         the {} after it would never run; give it a condition or move it last",
                        if v.count - v.index == 2 {
                            "variant".to_owned()
                        } else {
                            format!("{} variants", v.count - v.index - 1)
                        }
                    ),
                );
            }
        }
        // `dispatch: runtime` alone turns away unbuilt sizes by design.
        let implicit = members
            .iter()
            .any(|k| k.variant.as_ref().is_some_and(|v| v.implicit));
        if chosen.len() != members.len() || chosen.is_empty() || implicit {
            continue;
        }
        let uncovered = search_uncovered(&chosen);
        if let Some(first) = kernels
            .iter_mut()
            .find(|k| k.variant.as_ref().is_some_and(|v| v.kernel == *kernel))
            && let Some(v) = &mut first.variant
        {
            v.uncovered = uncovered;
        }
    }
}

/// Most size combinations the build-time search tries.
const MAX_SEARCH: usize = 4096;

/// Whether every variant fixes the axis at the same size: then the
/// wrapper's type fixes it too, and no variant is chosen by it.
pub fn fixed_in_every_variant(variants: &[&Kernel], (param, axis): (usize, usize)) -> bool {
    let size = |k: &Kernel| match &k.params[param].kind {
        ParamKind::Tensor { axes, .. } => match k.dims[axes[axis].dim].size {
            DimSize::Fixed(n) => Some(n),
            _ => None,
        },
        ParamKind::Scalar(_) => None,
    };
    let first = size(variants[0]);
    first.is_some() && variants.iter().all(|k| size(k) == first)
}

/// The sizes a variant's STATIC dims, and the fixed dims the wrapper takes
/// at run time, must have (first axis, sizes built): the implicit part of
/// its condition.
pub fn built_sizes(k: &Kernel, variants: &[&Kernel]) -> Vec<((usize, usize), Vec<u64>)> {
    k.dims
        .iter()
        .filter_map(|d| match &d.size {
            DimSize::Static(values) => Some((d.axes[0], values.clone())),
            DimSize::Fixed(n) if !fixed_in_every_variant(variants, d.axes[0]) => {
                Some((d.axes[0], vec![*n]))
            }
            _ => None,
        })
        .collect()
}

/// A label for an axis: its named dim, else `param.N`.
pub fn size_label(k: &Kernel, (param, axis): (usize, usize)) -> String {
    if let ParamKind::Tensor { axes, .. } = &k.params[param].kind
        && let Some(name) = &k.dims[axes[axis].dim].name
    {
        return name.clone();
    }
    k.axis_label(param, axis)
}

fn search_uncovered(variants: &[&Kernel]) -> Option<String> {
    let first = variants[0];
    // One variable per dim of the first variant that a condition reads or
    // a variant builds for, keyed by that dim's first axis.
    let canonical = |(p, a): (usize, usize)| -> (usize, usize) {
        match &first.params[p].kind {
            ParamKind::Tensor { axes, .. } => first.dims[axes[a].dim].axes[0],
            ParamKind::Scalar(_) => (p, a),
        }
    };
    let mut candidates: BTreeMap<(usize, usize), BTreeSet<u64>> = BTreeMap::new();
    for k in variants {
        let v = k.variant.as_ref().expect("a variant");
        if let Some(c) = &v.when {
            let mut sizes = Vec::new();
            c.expr.sizes(&mut sizes);
            let mut constants = BTreeSet::new();
            c.expr.constants(&mut constants);
            for (_, p, a) in sizes {
                let set = candidates.entry(canonical((p, a))).or_default();
                set.insert(1);
                for &n in &constants {
                    set.extend([n.saturating_sub(1).max(1), n, n.saturating_add(1)]);
                }
            }
        }
        for (axis, values) in built_sizes(k, variants) {
            let set = candidates.entry(canonical(axis)).or_default();
            set.insert(1);
            for &n in &values {
                set.extend([n.saturating_sub(1).max(1), n, n.saturating_add(1)]);
            }
        }
    }
    if candidates.is_empty() {
        // Every variant is unconditioned or fully DYNAMIC: the last
        // accepts every call only if it has no condition.
        return None;
    }
    let vars: Vec<((usize, usize), Vec<u64>)> = candidates
        .into_iter()
        .map(|(k, v)| (k, v.into_iter().collect()))
        .collect();
    let mut index = vec![0usize; vars.len()];
    for _ in 0..MAX_SEARCH {
        let value = |axis: (usize, usize)| -> u64 {
            let key = canonical(axis);
            vars.iter()
                .position(|(k, _)| *k == key)
                .map_or(1, |i| vars[i].1[index[i]])
        };
        let accepted = variants.iter().any(|k| {
            let v = k.variant.as_ref().expect("a variant");
            v.when
                .as_ref()
                .is_none_or(|c| c.expr.holds(&|p, a| value((p, a))))
                && built_sizes(k, variants)
                    .iter()
                    .all(|(axis, values)| values.contains(&value(*axis)))
        });
        if !accepted {
            let shown: Vec<String> = vars
                .iter()
                .enumerate()
                .map(|(i, (axis, values))| {
                    format!("{} = {}", size_label(first, *axis), values[index[i]])
                })
                .collect();
            return Some(shown.join(", "));
        }
        // The next combination, last variable fastest.
        let mut i = vars.len();
        loop {
            if i == 0 {
                return None;
            }
            i -= 1;
            index[i] += 1;
            if index[i] < vars[i].1.len() {
                break;
            }
            index[i] = 0;
        }
    }
    None
}
