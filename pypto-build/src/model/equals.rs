//! A contract's `equals:` relations applied to a kernel: option values
//! filled in, axes resolved to the kernel's params, checked here where
//! every size they read is fixed or STATIC, and otherwise handed to the
//! wrapper, which checks them on every call (pypto-rt's `NotEqual`).
//!
//! Both checks evaluate the same way and word their findings alike: the
//! sizes, then `TEMPLATE needs `RELATION` with OPTION = V (AT)`, then what
//! broke it.

use super::{Dim, DimSize, Draft, OptionValue, Param, ParamKind, Specialisation};
use crate::contract::{AxisRef, Contract, Expr, Op};
use crate::diag::Sink;
use crate::spec::KernelSpec;

/// One step of a side of an equation, in postfix order: sizes and
/// integers push a value, operators pop two and push one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// The size of axis `axis` of tensor param `param`.
    Size {
        /// The param's index.
        param: usize,
        /// The axis, from 0.
        axis: usize,
    },
    /// An integer: a literal or an option's value.
    Int(i64),
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`, which must leave no remainder.
    Div,
}

/// An `equals:` relation of a kernel, its options filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Equation {
    /// The left side, in postfix order.
    pub left: Vec<Step>,
    /// The right side, in postfix order.
    pub right: Vec<Step>,
    /// Every (param, axis) it reads, once each, in order.
    pub axes: Vec<(usize, usize)>,
    /// Why, for messages: ``builtin/x needs `a.0 == 2 * n` with n = 3 (builtin/x.hbs:9:5)``.
    pub why: String,
}

/// How sizes break an equation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Broken {
    /// The sides' values differ.
    Unequal(i128, i128),
    /// A division left a remainder: dividend, divisor.
    Remainder(i128, i128),
    /// A division by zero, of this dividend.
    ByZero(i128),
    /// A value out of `i128`'s range.
    Overflow,
}

impl Broken {
    /// The end of a message, worded as pypto-rt words it.
    pub fn describe(self) -> String {
        match self {
            Broken::Unequal(l, r) => format!("the left side is {l}, the right {r}"),
            Broken::Remainder(a, b) => format!("the division {a} / {b} leaves a remainder"),
            Broken::ByZero(a) => format!("it divides {a} by 0"),
            Broken::Overflow => "its arithmetic overflows".to_owned(),
        }
    }
}

/// The value of one side.
fn evaluate(steps: &[Step], size: &impl Fn(usize, usize) -> u64) -> Result<i128, Broken> {
    let mut stack: Vec<i128> = Vec::with_capacity(steps.len());
    for step in steps {
        let value = match *step {
            Step::Size { param, axis } => i128::from(size(param, axis)),
            Step::Int(n) => i128::from(n),
            op => {
                let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                    return Err(Broken::Overflow);
                };
                match op {
                    Step::Add => a.checked_add(b).ok_or(Broken::Overflow)?,
                    Step::Sub => a.checked_sub(b).ok_or(Broken::Overflow)?,
                    Step::Mul => a.checked_mul(b).ok_or(Broken::Overflow)?,
                    _ if b == 0 => return Err(Broken::ByZero(a)),
                    _ if a.checked_rem(b) != Some(0) => return Err(Broken::Remainder(a, b)),
                    _ => a.checked_div(b).ok_or(Broken::Overflow)?,
                }
            }
        };
        stack.push(value);
    }
    match stack[..] {
        [v] => Ok(v),
        _ => Err(Broken::Overflow),
    }
}

impl Equation {
    /// Whether the sizes keep the equation; `size(param, axis)`.
    pub fn check(&self, size: &impl Fn(usize, usize) -> u64) -> Result<(), Broken> {
        let l = evaluate(&self.left, size)?;
        let r = evaluate(&self.right, size)?;
        if l == r {
            Ok(())
        } else {
            Err(Broken::Unequal(l, r))
        }
    }
}

/// `expr` in postfix order into `out`; `None` when an option has no value
/// (options in error) or an axis is past its param's rank.
fn postfix(
    expr: &Expr,
    rank: &impl Fn(usize) -> usize,
    option: &impl Fn(&str) -> Option<i64>,
    out: &mut Vec<Step>,
) -> Option<()> {
    match expr {
        Expr::Int(n) => out.push(Step::Int(i64::try_from(*n).ok()?)),
        Expr::Option(name) => out.push(Step::Int(option(name)?)),
        Expr::Axis((param, axis)) => {
            let axis = match *axis {
                AxisRef::Index(i) => (i < rank(*param)).then_some(i)?,
                AxisRef::Last => rank(*param).checked_sub(1)?,
            };
            out.push(Step::Size {
                param: *param,
                axis,
            });
        }
        Expr::Bin(op, l, r) => {
            postfix(l, rank, option, out)?;
            postfix(r, rank, option, out)?;
            out.push(match op {
                Op::Add => Step::Add,
                Op::Sub => Step::Sub,
                Op::Mul => Step::Mul,
                Op::Div => Step::Div,
            });
        }
    }
    Some(())
}

/// The contract's equations for a kernel with these options and ranks.
fn equations(
    contract: &Contract,
    t: &str,
    options: &[(String, OptionValue)],
    rank: &impl Fn(usize) -> usize,
) -> Vec<Equation> {
    let option = |name: &str| {
        options.iter().find_map(|(n, v)| match v {
            OptionValue::Int(i) if n == name => Some(*i),
            _ => None,
        })
    };
    contract
        .equations
        .iter()
        .filter_map(|e| {
            let mut left = Vec::new();
            let mut right = Vec::new();
            postfix(&e.left, rank, &option, &mut left)?;
            postfix(&e.right, rank, &option, &mut right)?;
            let mut axes: Vec<(usize, usize)> = Vec::new();
            for step in left.iter().chain(&right) {
                if let Step::Size { param, axis } = *step
                    && !axes.contains(&(param, axis))
                {
                    axes.push((param, axis));
                }
            }
            let mut names = Vec::new();
            e.left.options(&mut names);
            e.right.options(&mut names);
            let values: Vec<String> = names
                .iter()
                .filter_map(|n| Some(format!("{n} = {}", option(n)?)))
                .collect();
            let with = if values.is_empty() {
                String::new()
            } else {
                format!(" with {}", and_list(&values))
            };
            let at = &contract.relations[e.relation].at;
            Some(Equation {
                left,
                right,
                axes,
                why: format!("{t} needs `{}`{with} ({at})", e.text),
            })
        })
        .collect()
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn rank_of(kind: &ParamKind) -> usize {
    match kind {
        ParamKind::Tensor { axes, .. } => axes.len(),
        ParamKind::Scalar(_) => 0,
    }
}

/// Equations whose sizes are all fixed or STATIC are checked here, for
/// every specialisation: the first that breaks one is an error at the
/// kernel naming the sizes, the relation and what broke.
#[allow(clippy::too_many_arguments)]
pub(super) fn check_equations(
    k: &KernelSpec,
    ctx: &str,
    contract: &Contract,
    t: &str,
    options: &[(String, OptionValue)],
    drafts: &[Draft<'_>],
    dims: &[Dim],
    specialisations: &[Specialisation],
    sink: &mut Sink<'_>,
) {
    let rank = |p: usize| drafts.get(p).map_or(0, |d| rank_of(&d.kind));
    for e in equations(contract, t, options, &rank) {
        let Some(dims_read) = e
            .axes
            .iter()
            .map(|a| dims.iter().position(|d| d.axes.contains(a)))
            .collect::<Option<Vec<usize>>>()
        else {
            continue;
        };
        if dims_read.iter().any(|&d| dims[d].size == DimSize::Dynamic) {
            continue;
        }
        for s in specialisations {
            let size_in = |d: usize| match &dims[d].size {
                DimSize::Fixed(n) => *n,
                DimSize::Static(_) => s.0.iter().find(|(dim, _)| *dim == d).map_or(0, |(_, v)| *v),
                DimSize::Dynamic => 0,
            };
            let size = |p: usize, a: usize| {
                e.axes
                    .iter()
                    .position(|&x| x == (p, a))
                    .map_or(0, |i| size_in(dims_read[i]))
            };
            if let Err(broken) = e.check(&size) {
                let sizes: Vec<String> = e
                    .axes
                    .iter()
                    .map(|&(p, a)| format!("`{}.{a}` is {}", drafts[p].spec.name.value, size(p, a)))
                    .collect();
                sink.error(
                    k.name.pos,
                    format!(
                        "{ctx}: {}, but {}: {}",
                        and_list(&sizes),
                        e.why,
                        broken.describe()
                    ),
                );
                break;
            }
        }
    }
}

/// The equations a call must be checked against: those reading a DYNAMIC
/// size (the others were checked here).
pub(super) fn runtime_equations(
    contract: &Contract,
    t: &str,
    options: &[(String, OptionValue)],
    params: &[Param],
    dims: &[Dim],
) -> Vec<Equation> {
    let rank = |p: usize| params.get(p).map_or(0, |p| rank_of(&p.kind));
    equations(contract, t, options, &rank)
        .into_iter()
        .filter(|e| {
            e.axes.iter().any(|&(p, a)| match &params[p].kind {
                ParamKind::Tensor { axes, .. } => dims[axes[a].dim].size == DimSize::Dynamic,
                ParamKind::Scalar(_) => false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postfix_evaluates_exactly_or_says_why_not() {
        // q.2 / 4 == k.2 / 1
        let e = Equation {
            left: vec![Step::Size { param: 0, axis: 2 }, Step::Int(4), Step::Div],
            right: vec![Step::Size { param: 1, axis: 2 }, Step::Int(1), Step::Div],
            axes: vec![(0, 2), (1, 2)],
            why: String::new(),
        };
        let sizes = |q: u64, k: u64| move |p: usize, _: usize| if p == 0 { q } else { k };
        assert_eq!(e.check(&sizes(256, 64)), Ok(()));
        assert_eq!(e.check(&sizes(256, 96)), Err(Broken::Unequal(64, 96)));
        assert_eq!(e.check(&sizes(250, 64)), Err(Broken::Remainder(250, 4)));
        let by_size = Equation {
            left: vec![Step::Int(8), Step::Size { param: 0, axis: 0 }, Step::Div],
            right: vec![Step::Int(1)],
            axes: vec![(0, 0)],
            why: String::new(),
        };
        assert_eq!(by_size.check(&|_, _| 0), Err(Broken::ByZero(8)));
        let big = Equation {
            left: [Step::Size { param: 0, axis: 0 }]
                .into_iter()
                .chain([Step::Size { param: 0, axis: 0 }, Step::Mul].repeat(5))
                .collect(),
            right: vec![Step::Int(1)],
            axes: vec![(0, 0)],
            why: String::new(),
        };
        assert_eq!(big.check(&|_, _| u64::MAX), Err(Broken::Overflow));
    }
}
