//! A brought source (`source:`), read far enough to know the names it
//! declares at file scope: which functions and variables have C linkage
//! (they keep their name program-wide, so every compiled copy of the source
//! must rename them, as it renames the entry), whether it defines the
//! program's `main`, and which macros it defines or undefines.
//!
//! This is a tokenizer and a declaration splitter, not a C++ parser: it
//! skips comments, strings, characters and preprocessor lines, follows
//! `namespace` and `extern "C"` blocks, and does not look inside function
//! bodies, class bodies or initializers. Names a macro expands to are not
//! seen.

use crate::diag::Pos;

/// What a file-scope declaration declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DefKind {
    /// A function, with its body.
    Function,
    /// A variable (defined, not only declared).
    Variable,
    /// A class, struct, union, enum, typedef or alias.
    Type,
}

/// A name the source defines outside any function or class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Def {
    pub name: String,
    pub pos: Pos,
    pub kind: DefKind,
    /// Declared with C linkage (`extern "C"`, or inside `extern "C" { }`),
    /// and not `static`: the name is the symbol.
    pub c_linkage: bool,
    /// In the global namespace (not inside any `namespace`).
    pub global: bool,
}

/// A `#define NAME` (`define: true`) or `#undef NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Macro {
    pub name: String,
    pub pos: Pos,
    pub define: bool,
}

/// What a scan of one source found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Scan {
    pub defs: Vec<Def>,
    /// Every `#define` and `#undef`, in order.
    pub macros: Vec<Macro>,
    /// The headers it includes with `#include <NAME>`, in order, once each
    /// (with those of the quoted headers beside it, once read).
    pub system_includes: Vec<String>,
    /// What the host backend compiles instead of the file, when the file
    /// holds `<<<…>>>` launches g++ cannot parse (a whole vendor program):
    /// the text with them blanked, lines and columns kept.
    pub host_text: Option<String>,
    /// The same for the NPU (bisheng parses the launches): the text with
    /// only its quoted includes made absolute.
    pub npu_text: Option<String>,
    /// The function templates it defines at namespace scope (name, where).
    pub function_templates: Vec<(String, Pos)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Ident(&'a str),
    /// A string literal's contents, as written.
    Str(&'a str),
    Punct(char),
    /// A number or character literal.
    Literal,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tok: Tok<'a>,
    pos: Pos,
}

/// Characters of `text` with their positions.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
    line: u32,
    column: u32,
    /// Only blanks since the line began (a `#` here opens a directive).
    line_start: bool,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.text[self.at..].chars().nth(n)
    }

    fn pos(&self) -> Pos {
        Pos::new(self.line, self.column)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
            self.line_start = true;
        } else {
            self.column += 1;
            if !c.is_whitespace() {
                self.line_start = false;
            }
        }
        Some(c)
    }

    fn eat_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let start = self.at;
        while self.peek().is_some_and(&f) {
            self.bump();
        }
        &self.text[start..self.at]
    }

    /// Past the end of a `/* */` comment.
    fn block_comment(&mut self) {
        self.bump();
        self.bump();
        while let Some(c) = self.bump() {
            if c == '*' && self.peek() == Some('/') {
                self.bump();
                return;
            }
        }
    }

    /// Past a quoted literal whose opening `quote` is next.
    fn quoted(&mut self, quote: char) -> &'a str {
        self.bump();
        let start = self.at;
        let mut end = self.at;
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.bump();
            if c == '\\' {
                self.bump();
            } else if c == quote {
                break;
            }
            end = self.at;
        }
        &self.text[start..end.min(self.at)]
    }

    /// Past a raw string `R"delim( … )delim"` whose `"` is next.
    fn raw_string(&mut self) {
        self.bump();
        let delim = self.eat_while(|c| c != '(' && c != '\n' && c != '"');
        let close = format!("){delim}\"");
        match self.text[self.at..].find(&close) {
            Some(n) => {
                let end = self.at + n + close.len();
                while self.at < end {
                    self.bump();
                }
            }
            None => while self.bump().is_some() {},
        }
    }

    /// Past a preprocessor directive (its `#` is next), with its continued
    /// lines; a `define` or `undef` records its macro's name.
    fn directive(&mut self, macros: &mut Vec<Macro>, includes: &mut Vec<String>) {
        self.bump();
        self.eat_while(|c| c == ' ' || c == '\t');
        let word = self.eat_while(|c| c.is_ascii_alphanumeric() || c == '_');
        if word == "include" {
            self.eat_while(|c| c == ' ' || c == '\t');
            if self.peek() == Some('<') {
                self.bump();
                let name = self.eat_while(|c| c != '>' && c != '\n');
                if self.peek() == Some('>')
                    && !name.is_empty()
                    && !includes.iter().any(|i| i == name)
                {
                    includes.push(name.to_owned());
                }
            }
        }
        if word == "define" || word == "undef" {
            self.eat_while(|c| c == ' ' || c == '\t');
            let pos = self.pos();
            let name = self.eat_while(is_ident);
            if !name.is_empty() {
                macros.push(Macro {
                    name: name.to_owned(),
                    pos,
                    define: word == "define",
                });
            }
        }
        while let Some(c) = self.peek() {
            match c {
                '\n' => break,
                '\\' if self.peek_at(1) == Some('\n') => {
                    self.bump();
                    self.bump();
                }
                '/' if self.peek_at(1) == Some('*') => self.block_comment(),
                '/' if self.peek_at(1) == Some('/') => {
                    self.eat_while(|c| c != '\n');
                }
                _ => {
                    self.bump();
                }
            }
        }
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

fn tokens<'a>(
    text: &'a str,
    macros: &mut Vec<Macro>,
    includes: &mut Vec<String>,
) -> Vec<Token<'a>> {
    let mut cur = Cursor {
        text,
        at: 0,
        line: 1,
        column: 1,
        line_start: true,
    };
    let mut out = Vec::new();
    while let Some(c) = cur.peek() {
        let pos = cur.pos();
        match c {
            '#' if cur.line_start => cur.directive(macros, includes),
            c if c.is_whitespace() => {
                cur.bump();
            }
            '/' if cur.peek_at(1) == Some('/') => {
                cur.eat_while(|c| c != '\n');
            }
            '/' if cur.peek_at(1) == Some('*') => cur.block_comment(),
            '"' => {
                let s = cur.quoted('"');
                out.push(Token {
                    tok: Tok::Str(s),
                    pos,
                });
            }
            '\'' => {
                cur.quoted('\'');
                out.push(Token {
                    tok: Tok::Literal,
                    pos,
                });
            }
            c if c.is_ascii_digit()
                || (c == '.' && cur.peek_at(1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                // Digits, separators, suffixes and exponent signs.
                let mut prev = ' ';
                while let Some(d) = cur.peek() {
                    let sign = (d == '+' || d == '-') && matches!(prev, 'e' | 'E' | 'p' | 'P');
                    if !(is_ident(d) || d == '.' || d == '\'' || sign) {
                        break;
                    }
                    prev = d;
                    cur.bump();
                }
                out.push(Token {
                    tok: Tok::Literal,
                    pos,
                });
            }
            c if is_ident_start(c) => {
                let word = cur.eat_while(is_ident);
                let raw = matches!(word, "R" | "LR" | "uR" | "UR" | "u8R");
                if raw && cur.peek() == Some('"') {
                    cur.raw_string();
                    out.push(Token {
                        tok: Tok::Literal,
                        pos,
                    });
                } else {
                    out.push(Token {
                        tok: Tok::Ident(word),
                        pos,
                    });
                }
            }
            c => {
                cur.bump();
                out.push(Token {
                    tok: Tok::Punct(c),
                    pos,
                });
            }
        }
    }
    out
}

/// Scans `text`, a C++ source.
pub(super) fn scan(text: &str) -> Scan {
    let mut scan = Scan::default();
    let toks = tokens(text, &mut scan.macros, &mut scan.system_includes);
    let mut parser = Parser {
        toks: &toks,
        at: 0,
        defs: Vec::new(),
        templates: Vec::new(),
    };
    parser.scope(false, true, 0);
    scan.defs = parser.defs;
    scan.function_templates = parser.templates;
    scan
}

/// Namespaces and linkage blocks nested deeper are not looked into (the
/// scan recurses once per level).
const MAX_NESTING: usize = 64;

struct Parser<'t, 'a> {
    toks: &'t [Token<'a>],
    at: usize,
    defs: Vec<Def>,
    templates: Vec<(String, Pos)>,
}

/// One piece of a declaration: a token, or a `{ … }` skipped whole.
#[derive(Debug, Clone, Copy)]
enum Piece<'a> {
    Token(Token<'a>),
    Braces,
}

impl<'a> Parser<'_, 'a> {
    fn next(&mut self) -> Option<Token<'a>> {
        let t = self.toks.get(self.at).copied();
        self.at += 1;
        t
    }

    /// Past the `}` matching a `{` just taken.
    fn skip_braces(&mut self) {
        let mut depth = 1usize;
        while let Some(t) = self.next() {
            match t.tok {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// The declarations of a namespace-level scope, up to its `}` (or the
    /// end of the text); at the top (`depth` 0) a stray `}` is passed over.
    fn scope(&mut self, c_linkage: bool, global: bool, depth: usize) {
        let mut decl: Vec<Piece<'a>> = Vec::new();
        let mut parens = 0usize;
        while let Some(t) = self.next() {
            match t.tok {
                Tok::Punct('(') | Tok::Punct('[') => {
                    parens += 1;
                    decl.push(Piece::Token(t));
                }
                Tok::Punct(')') | Tok::Punct(']') => {
                    parens = parens.saturating_sub(1);
                    decl.push(Piece::Token(t));
                }
                Tok::Punct('{') if parens > 0 => {
                    self.skip_braces();
                    decl.push(Piece::Braces);
                }
                Tok::Punct(';') if parens == 0 => {
                    self.declaration(&decl, c_linkage, global);
                    decl.clear();
                }
                Tok::Punct('}') if parens == 0 && depth > 0 => return,
                Tok::Punct('}') if parens == 0 => decl.clear(),
                Tok::Punct('{') => {
                    let words: Vec<&str> = decl
                        .iter()
                        .filter_map(|p| match p {
                            Piece::Token(Token {
                                tok: Tok::Ident(w), ..
                            }) => Some(*w),
                            _ => None,
                        })
                        .collect();
                    let is_c_block = matches!(
                        decl.as_slice(),
                        [
                            Piece::Token(Token {
                                tok: Tok::Ident("extern"),
                                ..
                            }),
                            Piece::Token(Token {
                                tok: Tok::Str("C"),
                                ..
                            })
                        ]
                    );
                    let is_namespace = words.first() == Some(&"namespace")
                        || words.starts_with(&["inline", "namespace"]);
                    let nests = depth < MAX_NESTING;
                    if is_c_block && nests {
                        self.scope(true, global, depth + 1);
                        decl.clear();
                    } else if is_namespace && nests && !decl.iter().any(|p| is_punct(p, '=')) {
                        self.scope(c_linkage, false, depth + 1);
                        decl.clear();
                    } else if is_function_head(&decl) {
                        self.function(&decl, c_linkage, global);
                        self.skip_braces();
                        decl.clear();
                    } else {
                        self.skip_braces();
                        decl.push(Piece::Braces);
                    }
                }
                _ => decl.push(Piece::Token(t)),
            }
        }
    }

    fn function(&mut self, decl: &[Piece<'a>], c_linkage: bool, global: bool) {
        let (decl, c_linkage) = strip_linkage(decl, c_linkage);
        if starts_with_word(decl, "template") {
            if let Some((name, pos, false)) = function_name(decl) {
                self.templates.push((name.to_owned(), pos));
            }
            return;
        }
        let Some((name, pos, qualified)) = function_name(decl) else {
            return;
        };
        if qualified {
            return;
        }
        self.defs.push(Def {
            name: name.to_owned(),
            pos,
            kind: DefKind::Function,
            c_linkage: c_linkage && !has_word(decl, "static"),
            global,
        });
    }

    /// A declaration ended by `;`.
    fn declaration(&mut self, decl: &[Piece<'a>], c_linkage: bool, global: bool) {
        let single = matches!(
            decl,
            [
                Piece::Token(Token {
                    tok: Tok::Ident("extern"),
                    ..
                }),
                Piece::Token(Token {
                    tok: Tok::Str("C"),
                    ..
                }),
                ..
            ]
        );
        let (decl, c_linkage) = strip_linkage(decl, c_linkage);
        let Some(Piece::Token(Token {
            tok: Tok::Ident(first),
            ..
        })) = decl.first()
        else {
            return;
        };
        match *first {
            "template" | "static_assert" | "friend" | "namespace" | "asm" => return,
            "typedef" => {
                if let Some((name, pos)) = last_ident(decl) {
                    self.type_def(name, pos, global);
                }
                return;
            }
            "using" => {
                if let [
                    _,
                    Piece::Token(Token {
                        tok: Tok::Ident(name),
                        pos,
                    }),
                    Piece::Token(Token {
                        tok: Tok::Punct('='),
                        ..
                    }),
                    ..,
                ] = decl
                {
                    self.type_def(name, *pos, global);
                }
                return;
            }
            _ => {}
        }
        // A class key opens a type; declarators may follow its body.
        let mut rest = decl;
        if matches!(*first, "struct" | "class" | "union" | "enum") {
            let body = rest.iter().position(|p| matches!(p, Piece::Braces));
            let head = &rest[..body.unwrap_or(rest.len())];
            if let Some((name, pos)) = head.iter().find_map(|p| match p {
                Piece::Token(Token {
                    tok: Tok::Ident(w),
                    pos,
                }) if !matches!(*w, "struct" | "class" | "union" | "enum" | "alignas")
                    && !w.starts_with("__") =>
                {
                    Some((*w, *pos))
                }
                _ => None,
            }) {
                self.type_def(name, pos, global);
            }
            match body {
                Some(b) => rest = &rest[b + 1..],
                None => return,
            }
        }
        // A function declaration (a parenthesis before any `=`) defines
        // nothing; nor does `extern "C" int x;` without an initializer.
        let before_init = rest
            .iter()
            .position(|p| is_punct(p, '='))
            .unwrap_or(rest.len());
        if rest[..before_init].iter().any(|p| is_punct(p, '(')) {
            return;
        }
        let has_init = before_init < rest.len();
        let is_extern = has_word(decl, "extern");
        if (single || is_extern) && !has_init {
            return;
        }
        let is_static = has_word(decl, "static");
        for declarator in split_top_level(rest) {
            let end = declarator
                .iter()
                .position(|p| is_punct(p, '=') || is_punct(p, '['))
                .unwrap_or(declarator.len());
            if let Some((name, pos)) = last_ident(&declarator[..end]) {
                self.defs.push(Def {
                    name: name.to_owned(),
                    pos,
                    kind: DefKind::Variable,
                    c_linkage: c_linkage && !is_static,
                    global,
                });
            }
        }
    }

    fn type_def(&mut self, name: &str, pos: Pos, global: bool) {
        self.defs.push(Def {
            name: name.to_owned(),
            pos,
            kind: DefKind::Type,
            c_linkage: false,
            global,
        });
    }
}

fn is_punct(p: &Piece<'_>, c: char) -> bool {
    matches!(p, Piece::Token(Token { tok: Tok::Punct(x), .. }) if *x == c)
}

fn word_of<'a>(p: &Piece<'a>) -> Option<&'a str> {
    match p {
        Piece::Token(Token {
            tok: Tok::Ident(w), ..
        }) => Some(w),
        _ => None,
    }
}

fn starts_with_word(decl: &[Piece<'_>], word: &str) -> bool {
    decl.first().and_then(word_of) == Some(word)
}

fn has_word(decl: &[Piece<'_>], word: &str) -> bool {
    decl.iter().any(|p| word_of(p) == Some(word))
}

/// `decl` without a leading `extern "C"`, and whether it has C linkage.
fn strip_linkage<'d, 'a>(decl: &'d [Piece<'a>], c_linkage: bool) -> (&'d [Piece<'a>], bool) {
    match decl {
        [
            Piece::Token(Token {
                tok: Tok::Ident("extern"),
                ..
            }),
            Piece::Token(Token {
                tok: Tok::Str(lang),
                ..
            }),
            rest @ ..,
        ] => (rest, *lang == "C" || (c_linkage && *lang != "C++")),
        _ => (decl, c_linkage),
    }
}

/// The pieces before a `{` are a function's head: a parameter list (a
/// parenthesis after a name) before any `=`, and not a class key.
fn is_function_head(decl: &[Piece<'_>]) -> bool {
    let (decl, _) = strip_linkage(decl, false);
    if let Some(w) = decl.first().and_then(word_of)
        && matches!(w, "struct" | "class" | "union" | "enum")
    {
        return false;
    }
    let eq = decl.iter().position(|p| is_punct(p, '='));
    function_name(&decl[..eq.unwrap_or(decl.len())]).is_some()
}

/// Words that take parentheses but are not the declared name.
const NOT_NAMES: &[&str] = &[
    "__attribute__",
    "__declspec",
    "alignas",
    "decltype",
    "noexcept",
    "throw",
    "requires",
    "__aicore__",
    "__global__",
];

/// The name a function declarator declares: the word before the first
/// parameter list, whether it is qualified (`S::f`), and its position.
fn function_name<'a>(decl: &[Piece<'a>]) -> Option<(&'a str, Pos, bool)> {
    let mut depth = 0usize;
    for (i, p) in decl.iter().enumerate() {
        match p {
            Piece::Token(Token {
                tok: Tok::Punct('('),
                ..
            }) => {
                if depth == 0
                    && let Some(Piece::Token(Token {
                        tok: Tok::Ident(name),
                        pos,
                    })) = i.checked_sub(1).map(|j| &decl[j])
                    && !NOT_NAMES.contains(name)
                {
                    let qualified = i >= 2 && is_punct(&decl[i - 2], ':');
                    return Some((name, *pos, qualified));
                }
                depth += 1;
            }
            Piece::Token(Token {
                tok: Tok::Punct(')'),
                ..
            }) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The last word outside parentheses.
fn last_ident<'a>(decl: &[Piece<'a>]) -> Option<(&'a str, Pos)> {
    let mut depth = 0usize;
    let mut found = None;
    for p in decl {
        match p {
            Piece::Token(Token {
                tok: Tok::Punct('(' | '['),
                ..
            }) => depth += 1,
            Piece::Token(Token {
                tok: Tok::Punct(')' | ']'),
                ..
            }) => depth = depth.saturating_sub(1),
            Piece::Token(Token {
                tok: Tok::Ident(w),
                pos,
            }) if depth == 0 => found = Some((*w, *pos)),
            _ => {}
        }
    }
    found
}

/// `decl` split at its top-level commas.
fn split_top_level<'d, 'a>(decl: &'d [Piece<'a>]) -> Vec<&'d [Piece<'a>]> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, p) in decl.iter().enumerate() {
        match p {
            Piece::Token(Token {
                tok: Tok::Punct('(' | '[' | '<'),
                ..
            }) => depth += 1,
            Piece::Token(Token {
                tok: Tok::Punct(')' | ']' | '>'),
                ..
            }) => depth = depth.saturating_sub(1),
            Piece::Token(Token {
                tok: Tok::Punct(','),
                ..
            }) if depth == 0 => {
                out.push(&decl[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&decl[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(text: &str) -> Vec<(String, DefKind, bool, bool, String)> {
        scan(text)
            .defs
            .into_iter()
            .map(|d| (d.name, d.kind, d.c_linkage, d.global, d.pos.to_string()))
            .collect()
    }

    fn c_names(text: &str) -> Vec<String> {
        scan(text)
            .defs
            .into_iter()
            .filter(|d| d.c_linkage)
            .map(|d| d.name)
            .collect()
    }

    #[test]
    fn finds_c_linkage_definitions_in_every_form() {
        let src = r#"#include "kernel_operator.h"
extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y)
{
    int op_helper = 3; // a local, not a definition at file scope
}
extern "C" int op_helper(int v) { return v + 1; }
extern "C" int declared_only(int v);
extern "C" int counter = 0;
extern "C" int not_defined;
extern "C" {
    float scale(float x) { return 2 * x; }
    int table[4] = {1, 2, 3, 4}, other;
    extern int elsewhere;
    static int hidden(int v) { return v; }
    void proto(void);
}
extern "C" static int internal(int v) { return v; }
extern "C++" int cxx(int v) { return v; }
"#;
        assert_eq!(
            c_names(src),
            [
                "add_custom",
                "op_helper",
                "counter",
                "scale",
                "table",
                "other"
            ]
        );
        let d = &scan(src).defs;
        let helper = d.iter().find(|d| d.name == "op_helper").unwrap();
        assert_eq!(
            (helper.kind, helper.pos),
            (DefKind::Function, Pos::new(6, 16))
        );
        assert!(d.iter().any(|d| d.name == "cxx" && !d.c_linkage));
    }

    #[test]
    fn bodies_comments_strings_and_directives_hide_nothing_else() {
        let src = "/* extern \"C\" int a() {} */\n// extern \"C\" int b() {}\n\
                   const char* s = \"extern \\\"C\\\" int c() {}\";\n\
                   const char* r = R\"x(extern \"C\" int d() {})x\";\n\
                   #define WRAP(n) extern \"C\" int n() { return 0; }\n\
                   #undef WRAP\n\
                   class K { public: void main() {} int x = 1'000; };\n\
                   namespace ns { int main() { return 0; } }\n\
                   extern \"C\" int e() { return '}'; }\n";
        assert_eq!(c_names(src), ["e"]);
        let s = scan(src);
        let macros: Vec<(&str, String, bool)> = s
            .macros
            .iter()
            .map(|m| (m.name.as_str(), m.pos.to_string(), m.define))
            .collect();
        assert_eq!(
            macros,
            [
                ("WRAP", "5:9".to_owned(), true),
                ("WRAP", "6:8".to_owned(), false)
            ]
        );
        let d = defs(src);
        assert!(d.iter().any(|d| d.0 == "K" && d.1 == DefKind::Type));
        // `main` in a namespace is not the program's.
        assert!(d.iter().any(|d| d.0 == "main" && !d.3));
        assert!(!d.iter().any(|d| d.0 == "main" && d.3));
    }

    #[test]
    fn finds_main_types_and_global_names() {
        let src = "int main(int argc, char** argv) { return 0; }\n\
                   template <typename T> T twice(T v) { return v + v; }\n\
                   struct PyptoThing { int a; } thing;\n\
                   typedef unsigned int pypto_u32;\n\
                   using Alias = int;\n\
                   __aicore__ inline void S::method() {}\n\
                   namespace { int hidden_counter = 0; }\n";
        let d = defs(src);
        assert_eq!(
            d,
            [
                (
                    "main".to_owned(),
                    DefKind::Function,
                    false,
                    true,
                    "1:5".to_owned()
                ),
                (
                    "PyptoThing".to_owned(),
                    DefKind::Type,
                    false,
                    true,
                    "3:8".to_owned()
                ),
                (
                    "thing".to_owned(),
                    DefKind::Variable,
                    false,
                    true,
                    "3:30".to_owned()
                ),
                (
                    "pypto_u32".to_owned(),
                    DefKind::Type,
                    false,
                    true,
                    "4:22".to_owned()
                ),
                (
                    "Alias".to_owned(),
                    DefKind::Type,
                    false,
                    true,
                    "5:7".to_owned()
                ),
                (
                    "hidden_counter".to_owned(),
                    DefKind::Variable,
                    false,
                    false,
                    "7:17".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn stray_braces_and_deep_nesting_stop_nothing() {
        // A `}` too many at the top, then a definition: still found.
        let src = "}\nextern \"C\" int after() { return 0; }\n";
        assert_eq!(c_names(src), ["after"]);
        // Nesting past the limit is skipped whole, without recursing.
        let deep = "namespace a { ".repeat(100_000) + &"}".repeat(100_000);
        let src = format!("{deep}\nextern \"C\" int last() {{ return 0; }}\n");
        assert_eq!(c_names(&src), ["last"]);
    }

    #[test]
    fn the_test_kernels_entries_are_found() {
        for (file, entry) in [
            ("add_custom.cpp", "add_custom"),
            ("cross_core.cpp", "cross_core"),
            ("leaky_rows.cpp", "leaky_rows"),
            ("matmul_relu.cpp", "matmul_relu"),
        ] {
            let path = format!(
                "{}/../tests/kernels/byok/{file}",
                env!("CARGO_MANIFEST_DIR")
            );
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue; // a published crate has no workspace tests
            };
            assert_eq!(c_names(&text), [entry], "{file}");
        }
    }
}
