//! The tokens and cursor of the two small expression languages a spec may
//! hold: a variant's `when:` condition (model/variant.rs) and a contract's
//! `equals:` relation (contract/equals.rs). Each language names its own
//! operators and its own wording for what it refuses; the scanning, and
//! the parser's view of the tokens, are this module's.

use crate::diag::{QUOTED_CHARS, clip};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// A name, dots included: `x.0`, `x.last`, `K`, `heads`.
    Name(String),
    Int(u64),
    Op(&'static str),
}

/// What one language accepts.
pub(crate) struct Lexicon {
    /// Its operators, each listed before any operator it starts with
    /// (`<=` before `<`).
    pub ops: &'static [&'static str],
    /// The largest integer literal.
    pub max_int: u64,
    /// The message for a literal above `max_int`, given its digits.
    pub too_large: fn(&str) -> String,
    /// The message for a character that starts no token.
    pub unexpected: fn(char) -> String,
}

impl Lexicon {
    /// The tokens of `text`. The callers bound `text`'s length first, so
    /// the work and the vector are bounded too.
    pub(crate) fn tokens(&self, text: &str) -> Result<Vec<Token>, String> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if c.is_whitespace() {
                rest = &rest[c.len_utf8()..];
            } else if c.is_ascii_digit() {
                let end = rest
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len());
                let digits = &rest[..end];
                let n = digits
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n <= self.max_int)
                    .ok_or_else(|| (self.too_large)(digits))?;
                out.push(Token::Int(n));
                rest = &rest[end..];
            } else if c.is_ascii_alphabetic() || c == '_' {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                    .unwrap_or(rest.len());
                out.push(Token::Name(rest[..end].to_owned()));
                rest = &rest[end..];
            } else if let Some(op) = self.ops.iter().find(|op| rest.starts_with(**op)) {
                out.push(Token::Op(op));
                rest = &rest[op.len()..];
            } else {
                return Err((self.unexpected)(c));
            }
        }
        Ok(out)
    }
}

/// A parser's position in its tokens.
pub(crate) struct Cursor {
    tokens: Vec<Token>,
    at: usize,
}

impl Cursor {
    pub(crate) fn new(tokens: Vec<Token>) -> Cursor {
        Cursor { tokens, at: 0 }
    }

    pub(crate) fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    /// Steps past the token `peek` shows.
    pub(crate) fn advance(&mut self) {
        self.at += 1;
    }

    /// Steps past operator `op` if it comes next.
    pub(crate) fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Token::Op(o)) if *o == op) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// The next token as an error message quotes it.
    pub(crate) fn found(&self) -> String {
        match self.peek() {
            None => "the end".to_owned(),
            Some(Token::Name(n)) => format!("`{}`", clip(n, QUOTED_CHARS)),
            Some(Token::Int(n)) => format!("`{n}`"),
            Some(Token::Op(o)) => format!("`{o}`"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEX: Lexicon = Lexicon {
        ops: &["<=", "<", "+"],
        max_int: 99,
        too_large: |d| format!("`{d}` is too large"),
        unexpected: |c| format!("unexpected `{c}`"),
    };

    #[test]
    fn longest_operator_first_names_with_dots_and_bounded_integers() {
        assert_eq!(
            LEX.tokens(" x.last<=7+_k < 99").unwrap(),
            [
                Token::Name("x.last".into()),
                Token::Op("<="),
                Token::Int(7),
                Token::Op("+"),
                Token::Name("_k".into()),
                Token::Op("<"),
                Token::Int(99),
            ]
        );
        assert_eq!(LEX.tokens("100").unwrap_err(), "`100` is too large");
        assert_eq!(
            LEX.tokens("99999999999999999999999").unwrap_err(),
            "`99999999999999999999999` is too large"
        );
        assert_eq!(LEX.tokens("a = b").unwrap_err(), "unexpected `=`");
        assert_eq!(LEX.tokens("é").unwrap_err(), "unexpected `é`");
    }

    #[test]
    fn the_cursor_eats_only_the_operator_it_is_asked_for() {
        let mut c = Cursor::new(LEX.tokens("a + 1").unwrap());
        assert_eq!(c.found(), "`a`");
        assert!(!c.eat("a"));
        c.advance();
        assert!(!c.eat("<"));
        assert!(c.eat("+"));
        assert_eq!(c.found(), "`1`");
        c.advance();
        assert_eq!(c.found(), "the end");
    }
}
