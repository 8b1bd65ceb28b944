//! `equals:` relations: integer arithmetic over axes and int options, one
//! equation per entry (`equals: "q.last / heads == k.last / kv_heads"`).
//!
//! The language is small on purpose: integers, axes (`PARAM.INDEX`,
//! `PARAM.last`), int options, `+ - * /` with the usual precedence (left
//! to right within a level) and parentheses, and exactly one `==` between
//! two such expressions. Every `/` must divide exactly: a remainder breaks
//! the relation (the message names the division), as a division by zero
//! does. This module tokenizes and parses; the contract reader resolves the
//! names, with errors located at the entry.

use crate::diag::clip;
use crate::tokens::{Cursor, Lexicon, Token};

use super::ParamAxis;

/// Longest `equals` text, in bytes: a hostile template must not make the
/// build do unbounded work.
pub(crate) const MAX_TEXT: usize = 256;
/// Deepest nesting of parentheses.
pub(crate) const MAX_DEPTH: usize = 16;
/// Largest integer literal: the largest size a kernel can receive.
pub(crate) const MAX_INT: u64 = u32::MAX as u64;

/// An arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    /// Exact division: a remainder breaks the relation.
    Div,
}

/// A side of an equation, its names resolved against the contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// An integer literal.
    Int(u64),
    /// The size of an axis of a tensor param.
    Axis(ParamAxis),
    /// The value of an int option.
    Option(String),
    /// `left OP right`.
    Bin(Op, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Every axis the expression reads, in order of appearance.
    pub fn axes(&self, out: &mut Vec<ParamAxis>) {
        match self {
            Expr::Axis(a) => out.push(*a),
            Expr::Bin(_, l, r) => {
                l.axes(out);
                r.axes(out);
            }
            Expr::Int(_) | Expr::Option(_) => {}
        }
    }

    /// Every option the expression reads, once each, in order.
    pub fn options<'e>(&'e self, out: &mut Vec<&'e str>) {
        match self {
            Expr::Option(o) if !out.contains(&o.as_str()) => out.push(o),
            Expr::Bin(_, l, r) => {
                l.options(out);
                r.options(out);
            }
            _ => {}
        }
    }

    /// The expression with each axis mapped by `f`; `None` when `f`
    /// drops one (a param a kernel's options leave out).
    pub fn map_axes(&self, f: &impl Fn(ParamAxis) -> Option<ParamAxis>) -> Option<Expr> {
        Some(match self {
            Expr::Axis(a) => Expr::Axis(f(*a)?),
            Expr::Bin(op, l, r) => {
                Expr::Bin(*op, Box::new(l.map_axes(f)?), Box::new(r.map_axes(f)?))
            }
            other => other.clone(),
        })
    }
}

/// One `equals:` relation, as the contract holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Equation {
    /// As written (trimmed), for messages.
    pub text: String,
    pub left: Expr,
    pub right: Expr,
    /// The relation (its index in `Contract::relations`).
    pub relation: usize,
}

/// A parsed side whose names are not resolved yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parsed {
    Int(u64),
    Name(String),
    Bin(Op, Box<Parsed>, Box<Parsed>),
}

/// The `equals` language's operators and refusals.
const EQUALS: Lexicon = Lexicon {
    ops: &["==", "+", "-", "*", "/", "(", ")"],
    max_int: MAX_INT,
    too_large: |digits| {
        format!(
            "`{}` is more than {MAX_INT}, the largest size",
            clip(digits, 24)
        )
    },
    unexpected: |c| match c {
        '=' => "`=` alone is not a comparison; write `==`".to_owned(),
        '%' => {
            "`%` is not part of `equals`; a remainder of 0 is a `multiple_of` relation".to_owned()
        }
        _ => format!(
            "unexpected `{c}`; an `equals` holds integers, axes (`x.0`, `x.last`), int \
             options, `+ - * /`, parentheses and one `==`"
        ),
    },
};

struct Parser {
    cur: Cursor,
}

impl Parser {
    /// `term (('+' | '-') term)*`
    fn sum(&mut self, depth: usize) -> Result<Parsed, String> {
        let mut left = self.product(depth)?;
        loop {
            let op = if self.cur.eat("+") {
                Op::Add
            } else if self.cur.eat("-") {
                Op::Sub
            } else {
                return Ok(left);
            };
            left = Parsed::Bin(op, Box::new(left), Box::new(self.product(depth)?));
        }
    }

    /// `atom (('*' | '/') atom)*`
    fn product(&mut self, depth: usize) -> Result<Parsed, String> {
        let mut left = self.atom(depth)?;
        loop {
            let op = if self.cur.eat("*") {
                Op::Mul
            } else if self.cur.eat("/") {
                Op::Div
            } else {
                return Ok(left);
            };
            let right = self.atom(depth)?;
            if op == Op::Div && right == Parsed::Int(0) {
                return Err("`/ 0` divides by zero".to_owned());
            }
            left = Parsed::Bin(op, Box::new(left), Box::new(right));
        }
    }

    fn atom(&mut self, depth: usize) -> Result<Parsed, String> {
        if self.cur.eat("(") {
            if depth >= MAX_DEPTH {
                return Err(format!("parentheses nested more than {MAX_DEPTH} deep"));
            }
            let inner = self.sum(depth + 1)?;
            if !self.cur.eat(")") {
                return Err(format!("expected `)`, found {}", self.cur.found()));
            }
            return Ok(inner);
        }
        let atom = match self.cur.peek() {
            Some(Token::Int(n)) => Parsed::Int(*n),
            Some(Token::Name(n)) => Parsed::Name(n.clone()),
            _ => {
                return Err(format!(
                    "expected an integer, an axis (`x.0`, `x.last`) or an int option, found {}",
                    self.cur.found()
                ));
            }
        };
        self.cur.advance();
        Ok(atom)
    }
}

/// Parses `LEFT == RIGHT`; the error says what is wrong, unlocated.
pub(crate) fn parse(text: &str) -> Result<(Parsed, Parsed), String> {
    if text.len() > MAX_TEXT {
        return Err(format!("longer than {MAX_TEXT} bytes"));
    }
    let tokens = EQUALS.tokens(text)?;
    if tokens.is_empty() {
        return Err(
            "empty; write two expressions and `==` between them, e.g. `q.last / heads == \
             k.last / kv_heads`"
                .to_owned(),
        );
    }
    let equals = tokens
        .iter()
        .filter(|t| matches!(t, Token::Op("==")))
        .count();
    if equals != 1 {
        return Err(format!(
            "needs exactly one `==` between two expressions, not {equals}; e.g. `q.last / \
             heads == k.last / kv_heads`"
        ));
    }
    let mut p = Parser {
        cur: Cursor::new(tokens),
    };
    let left = p.sum(0)?;
    if !p.cur.eat("==") {
        return Err(format!(
            "expected an operator or `==`, found {}",
            p.cur.found()
        ));
    }
    let right = p.sum(0)?;
    if p.cur.peek().is_some() {
        return Err(format!(
            "expected an operator or the end, found {}",
            p.cur.found()
        ));
    }
    Ok((left, right))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Box<Parsed> {
        Box::new(Parsed::Name(n.to_owned()))
    }

    #[test]
    fn precedence_and_parentheses() {
        let (l, r) = parse("q.last / heads == k.last - 2 * (a + 1)").unwrap();
        assert_eq!(l, Parsed::Bin(Op::Div, name("q.last"), name("heads")));
        assert_eq!(
            r,
            Parsed::Bin(
                Op::Sub,
                name("k.last"),
                Box::new(Parsed::Bin(
                    Op::Mul,
                    Box::new(Parsed::Int(2)),
                    Box::new(Parsed::Bin(Op::Add, name("a"), Box::new(Parsed::Int(1))))
                ))
            )
        );
    }

    #[test]
    fn malformed_text_is_refused_with_a_reason() {
        for (text, want) in [
            ("", "empty; write two expressions"),
            ("a.0 = b.0", "`=` alone is not a comparison; write `==`"),
            (
                "a.0 == b.0 == c.0",
                "needs exactly one `==` between two expressions, not 2",
            ),
            (
                "a.0 + b.0",
                "needs exactly one `==` between two expressions, not 0",
            ),
            ("a.0 / 0 == b.0", "`/ 0` divides by zero"),
            ("a.0 % 2 == 0", "`%` is not part of `equals`"),
            ("(a.0 == b.0)", "expected `)`, found `==`"),
            ("a.0 b.0 == 1", "expected an operator or `==`, found `b.0`"),
            ("a.0 == 1 2", "expected an operator or the end, found `2`"),
            ("a.0 == * 2", "expected an integer, an axis"),
            (
                "a.0 == 4294967296",
                "`4294967296` is more than 4294967295, the largest size",
            ),
            ("a.0 == b.0 ^ 2", "unexpected `^`"),
        ] {
            let got = parse(text).unwrap_err();
            assert!(got.starts_with(want), "{text:?}: {got}");
        }
        let deep = format!("{}a.0{} == 1", "(".repeat(17), ")".repeat(17));
        assert_eq!(
            parse(&deep).unwrap_err(),
            "parentheses nested more than 16 deep"
        );
        let long = format!("a.0 == {}1", "1 + ".repeat(64));
        assert_eq!(parse(&long).unwrap_err(), "longer than 256 bytes");
    }
}
