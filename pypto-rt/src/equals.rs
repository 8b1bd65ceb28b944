//! The `equals:` relations of a kernel's template that read a size known
//! only at run time (integer arithmetic over axes, the options' values
//! filled in by pypto-build): the wrapper passes them here before it
//! launches, and a call that breaks one is [`Error::NotEqual`].

use crate::abi::{Arg, KernelDesc};
use crate::error::{AxisSize, Error};
use crate::launch::{Tiling, check_call};

/// One step of a side of an equation, in postfix order: sizes and
/// integers push a value, operators pop two and push one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The size of an axis: (param index, axis).
    Size(u8, u8),
    /// An integer: a literal of the relation or an option's value.
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

/// An equation the call's sizes must keep.
#[derive(Debug)]
pub struct Equation {
    /// The left side, in postfix order.
    pub left: &'static [Step],
    /// The right side, in postfix order.
    pub right: &'static [Step],
    /// Every (param index, axis) the equation reads, once each, for the
    /// message.
    pub axes: &'static [(u8, u8)],
    /// The relation, for the message: the template, the equation as
    /// written, the options' values and where the template writes it.
    pub why: &'static str,
}

/// Most values a side's evaluation holds at once: generated sides need a
/// few (pypto-build caps an equation's length and nesting).
const STACK: usize = 64;

/// The value of one side at a call's sizes, or what breaks it.
fn evaluate(steps: &[Step], args: &[Arg<'_>]) -> Result<i128, String> {
    evaluate_at(steps, |param, axis| match args.get(usize::from(param)) {
        Some(Arg::Tensor { sizes, .. }) => sizes.get(usize::from(axis)).map(|&n| n as i128),
        _ => None,
    })
}

/// The value of one side, each axis's size given by `size` (`None`: no
/// such axis), or what breaks it. [`crate::testing::Sweep`] evaluates
/// sides at the sizes it chooses with it.
pub(crate) fn evaluate_at(
    steps: &[Step],
    size: impl Fn(u8, u8) -> Option<i128>,
) -> Result<i128, String> {
    let mut stack = [0i128; STACK];
    let mut len = 0usize;
    let malformed = || "the generated relation is malformed".to_owned();
    for step in steps {
        let value = match *step {
            Step::Size(param, axis) => size(param, axis).ok_or_else(malformed)?,
            Step::Int(n) => i128::from(n),
            op => {
                if len < 2 {
                    return Err(malformed());
                }
                let (a, b) = (stack[len - 2], stack[len - 1]);
                len -= 2;
                let overflow = || "its arithmetic overflows".to_owned();
                match op {
                    Step::Add => a.checked_add(b).ok_or_else(overflow)?,
                    Step::Sub => a.checked_sub(b).ok_or_else(overflow)?,
                    Step::Mul => a.checked_mul(b).ok_or_else(overflow)?,
                    _ if b == 0 => return Err(format!("it divides {a} by 0")),
                    _ if a.checked_rem(b) != Some(0) => {
                        return Err(format!("the division {a} / {b} leaves a remainder"));
                    }
                    _ => a.checked_div(b).ok_or_else(overflow)?,
                }
            }
        };
        if len == STACK {
            return Err(malformed());
        }
        stack[len] = value;
        len += 1;
    }
    match len {
        1 => Ok(stack[0]),
        _ => Err(malformed()),
    }
}

/// Checks a call as [`crate::launch::launch`] does first (one device, the
/// dims, halvings and multiples, with the same errors), then each
/// equation: the first the sizes break is [`Error::NotEqual`].
pub fn check_equations(
    desc: &KernelDesc,
    args: &[Arg<'_>],
    equations: &[Equation],
) -> Result<(), Error> {
    check_call(desc, args, &mut Tiling::default())?;
    for e in equations {
        let problem = match (evaluate(e.left, args), evaluate(e.right, args)) {
            (Ok(l), Ok(r)) if l == r => continue,
            (Ok(l), Ok(r)) => format!("the left side is {l}, the right {r}"),
            (Err(why), _) | (_, Err(why)) => why,
        };
        return Err(Error::NotEqual {
            kernel: desc.name,
            axes: e
                .axes
                .iter()
                .filter_map(|&(p, a)| {
                    let Some(Arg::Tensor { sizes, .. }) = args.get(usize::from(p)) else {
                        return None;
                    };
                    Some(AxisSize {
                        param: desc.params.get(usize::from(p))?,
                        axis: usize::from(a),
                        size: *sizes.get(usize::from(a))?,
                    })
                })
                .collect(),
            why: e.why.to_owned(),
            problem,
        });
    }
    Ok(())
}
