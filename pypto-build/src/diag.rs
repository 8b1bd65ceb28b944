//! Located diagnostics: every problem in a spec is reported as
//! `PATH:LINE:COL: error: MESSAGE`, optionally followed by the source line.

use std::fmt;
use std::path::{Path, PathBuf};

/// A 1-based line and column (in characters) inside a spec file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1, in characters.
    pub column: u32,
}

impl Pos {
    /// The position at `line` and `column`, both 1-based.
    pub const fn new(line: u32, column: u32) -> Self {
        Pos { line, column }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A file and a position in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// The spec (or template) file.
    pub path: PathBuf,
    /// The position in it.
    pub pos: Pos,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", display_path(&self.path), self.pos)
    }
}

/// A path as text that cannot break the line it is written into: control
/// characters (and the bidirectional overrides rustc refuses in comments)
/// are escaped. Every path written into generated code, comments and
/// messages goes through here.
pub fn display_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    if !text.chars().any(unsafe_in_text) {
        return text.into_owned();
    }
    text.chars()
        .map(|c| {
            if unsafe_in_text(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn unsafe_in_text(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Why `path` cannot be a spec or template path, if it cannot: Cargo's
/// `rerun-if-changed` takes one UTF-8 line, so such a file could not be
/// watched, and its name would have to be escaped wherever it is shown.
pub(crate) fn path_problem(path: &Path) -> Option<String> {
    let Some(text) = path.to_str() else {
        return Some("the path is not valid UTF-8".to_owned());
    };
    let bad = text.chars().find(|&c| unsafe_in_text(c))?;
    Some(format!(
        "the path contains the control character `{}`, which Cargo cannot watch \
         (`cargo:rerun-if-changed`); rename it",
        bad.escape_default()
    ))
}

/// One problem found in a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where the problem is.
    pub location: Location,
    /// What is wrong, as one sentence without the location.
    pub message: String,
    /// The part of the source line the position points into, for a caret.
    pub snippet: Option<Snippet>,
}

/// A window of at most [`SNIPPET_CHARS`] characters of one source line, with
/// `…` where it was clipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// The characters shown.
    pub text: String,
    /// How many characters of `text` precede the caret.
    pub caret: usize,
}

/// At most this many characters of a source line are shown under a
/// diagnostic: a hostile one-line file must not be printed whole per error.
pub const SNIPPET_CHARS: usize = 100;
/// At most this many diagnostics are kept per spec file; the rest are
/// counted in one final diagnostic.
pub const MAX_DIAGNOSTICS_PER_FILE: usize = 50;
/// Messages are clipped to this many characters, and each `quoted` word in
/// them to [`QUOTED_CHARS`], so that one long name cannot flood the output.
pub const MESSAGE_CHARS: usize = 500;
/// At most this many characters of each `quoted` word in a message are
/// kept (see [`MESSAGE_CHARS`]).
pub const QUOTED_CHARS: usize = 64;

impl Diagnostic {
    /// The diagnostic followed by the offending source line and a caret.
    pub fn render(&self) -> String {
        let mut out = self.to_string();
        if let Some(snippet) = &self.snippet {
            let number = self.location.pos.line.to_string();
            let gutter = " ".repeat(number.len());
            let caret_pad: String = snippet
                .text
                .chars()
                .take(snippet.caret)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            out.push_str(&format!(
                "\n{gutter} |\n{number} | {}\n{gutter} | {caret_pad}^",
                snippet.text
            ));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: error: {}", self.location, self.message)
    }
}

/// Every problem found in one check, in file then source order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Whether no problem was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many problems.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The problems, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    /// All diagnostics with their source snippets, one block per problem.
    pub fn render(&self) -> String {
        let blocks: Vec<String> = self.0.iter().map(Diagnostic::render).collect();
        blocks.join("\n")
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Collects the diagnostics of one spec file: the first
/// [`MAX_DIAGNOSTICS_PER_FILE`] are kept, the rest only counted, so that a
/// hostile file costs bounded memory and output however many errors it has.
pub(crate) struct Sink<'a> {
    path: &'a Path,
    source: &'a str,
    /// Byte offset of each line's start, built on the first snippet.
    line_starts: Option<Vec<usize>>,
    kept: Vec<Diagnostic>,
    count: usize,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(path: &'a Path, source: &'a str) -> Self {
        Sink {
            path,
            source,
            line_starts: None,
            kept: Vec::new(),
            count: 0,
        }
    }

    pub(crate) fn path(&self) -> &'a Path {
        self.path
    }

    pub(crate) fn location(&self, pos: Pos) -> Location {
        Location {
            path: self.path.to_path_buf(),
            pos,
        }
    }

    /// How many errors were reported, kept or not; stages compare counts to
    /// learn whether a part they checked had errors.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    pub(crate) fn error(&mut self, pos: Pos, message: impl Into<String>) {
        let message = message.into();
        self.error_with(pos, || message);
    }

    /// As [`Sink::error`], building the message only when it is kept: for
    /// messages whose suggestion costs a search over many names.
    pub(crate) fn error_with(&mut self, pos: Pos, message: impl FnOnce() -> String) {
        self.count += 1;
        if self.kept.len() >= MAX_DIAGNOSTICS_PER_FILE {
            return;
        }
        let snippet = self.snippet(pos);
        self.kept.push(Diagnostic {
            location: self.location(pos),
            message: clip_message(&message()),
            snippet,
        });
    }

    fn snippet(&mut self, pos: Pos) -> Option<Snippet> {
        let source = self.source;
        let starts = self.line_starts.get_or_insert_with(|| line_starts(source));
        let index = pos.line.checked_sub(1)? as usize;
        let start = *starts.get(index)?;
        let end = starts.get(index + 1).copied().unwrap_or(source.len());
        let line = source[start..end].trim_end_matches(['\n', '\r']);
        Some(clip_line(line, pos.column.saturating_sub(1) as usize))
    }

    /// The kept diagnostics in source order, then one saying how many more
    /// there were.
    pub(crate) fn finish(mut self) -> Vec<Diagnostic> {
        // Stages find problems in their own order; report them in source order.
        self.kept.sort_by_key(|d| d.location.pos);
        let more = self.count - self.kept.len();
        if more > 0 {
            self.kept.push(Diagnostic {
                location: self.location(Pos::new(1, 1)),
                message: format!(
                    "{more} more error{} in this file not shown; at most \
                     {MAX_DIAGNOSTICS_PER_FILE} are reported per file",
                    if more == 1 { "" } else { "s" }
                ),
                snippet: None,
            });
        }
        self.kept
    }
}

/// Where each line of `source` starts. A line ends at `\n`, `\r\n` or a lone
/// `\r`, as the YAML parser counts them, so that its line numbers find
/// their lines here.
fn line_starts(source: &str) -> Vec<usize> {
    let bytes = source.as_bytes();
    let mut starts = vec![0];
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => starts.push(i + 1),
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                starts.push(i + 2);
                i += 1;
            }
            b'\r' => starts.push(i + 1),
            _ => {}
        }
        i += 1;
    }
    starts
}

/// The 1-based line and column just after `prefix`, counting line breaks
/// as [`line_starts`] does.
pub(crate) fn end_position(prefix: &str) -> Pos {
    let starts = line_starts(prefix);
    let last = starts[starts.len() - 1];
    let column = prefix[last..].chars().count() + 1;
    Pos::new(
        u32::try_from(starts.len()).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

/// At most [`SNIPPET_CHARS`] characters of `line` around character `at`,
/// with `…` for what was cut on either side.
fn clip_line(line: &str, at: usize) -> Snippet {
    // Counting stops early: a long line is cut anyway.
    let fits = line.chars().nth(SNIPPET_CHARS).is_none();
    if fits {
        return Snippet {
            text: line.to_owned(),
            caret: at.min(line.chars().count()),
        };
    }
    let len = line.chars().count();
    let at = at.min(len);
    let half = SNIPPET_CHARS / 2;
    let start = at.saturating_sub(half).min(len - SNIPPET_CHARS);
    let end = start + SNIPPET_CHARS;
    let mut text = String::new();
    if start > 0 {
        text.push('…');
    }
    text.extend(line.chars().skip(start).take(SNIPPET_CHARS));
    if end < len {
        text.push('…');
    }
    Snippet {
        text,
        caret: at - start + usize::from(start > 0),
    }
}

/// `text` cut to `max` characters by replacing its middle with `…`.
pub(crate) fn clip(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.chars().nth(max).is_none() {
        return text.into();
    }
    let head = max * 2 / 3;
    let tail = max - head - 1;
    let len = text.chars().count();
    let mut out: String = text.chars().take(head).collect();
    out.push('…');
    out.extend(text.chars().skip(len - tail));
    out.into()
}

/// A message with each long `quoted` word clipped, then clipped as a whole.
fn clip_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MESSAGE_CHARS * 4));
    for (i, part) in message.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        // Odd parts are between backticks: the words quoted from the spec.
        if i % 2 == 1 {
            out.push_str(&clip(part, QUOTED_CHARS));
        } else {
            out.push_str(part);
        }
    }
    clip(&out, MESSAGE_CHARS).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_lf_crlf_and_lone_cr() {
        assert_eq!(line_starts("a\nb\r\nc\rd"), [0, 2, 5, 7]);
        assert_eq!(end_position("a\r\nb\rcd"), Pos::new(3, 3));
        let source = "a: 1\rb: [x\r\nc: 2\n";
        let mut sink = Sink::new(Path::new("s.yaml"), source);
        sink.error(Pos::new(2, 5), "m");
        sink.error(Pos::new(3, 1), "m");
        let texts: Vec<String> = sink
            .finish()
            .into_iter()
            .map(|d| d.snippet.unwrap().text)
            .collect();
        assert_eq!(texts, ["b: [x", "c: 2"]);
    }

    #[test]
    fn long_lines_are_clipped_around_the_caret() {
        let line = format!("{}X{}", "a".repeat(500), "b".repeat(500));
        let s = clip_line(&line, 500);
        assert_eq!(s.text.chars().count(), SNIPPET_CHARS + 2);
        assert_eq!(s.text.chars().nth(s.caret), Some('X'));
        assert!(s.text.starts_with('…') && s.text.ends_with('…'));
        let s = clip_line(&line, 3);
        assert_eq!(s.caret, 3);
        assert!(!s.text.starts_with('…') && s.text.ends_with('…'));
        let s = clip_line(&line, 1000);
        assert_eq!(s.text.chars().nth(s.caret), Some('b'));
        assert!(s.text.starts_with('…') && !s.text.ends_with('…'));
    }

    #[test]
    fn long_quoted_words_and_messages_are_clipped() {
        let message = format!("kernel `{}`: bad", "k".repeat(1000));
        assert_eq!(
            clip_message(&message),
            format!("kernel `{}…{}`: bad", "k".repeat(42), "k".repeat(21))
        );
        assert_eq!(
            clip_message(&"x ".repeat(1000)).chars().count(),
            MESSAGE_CHARS
        );
    }

    #[test]
    fn at_most_the_bound_is_kept_and_the_rest_counted() {
        let mut sink = Sink::new(Path::new("s.yaml"), "a\n");
        for _ in 0..MAX_DIAGNOSTICS_PER_FILE + 7 {
            sink.error_with(Pos::new(1, 1), || "m".to_owned());
        }
        assert_eq!(sink.count(), MAX_DIAGNOSTICS_PER_FILE + 7);
        let kept = sink.finish();
        assert_eq!(kept.len(), MAX_DIAGNOSTICS_PER_FILE + 1);
        assert_eq!(
            kept[MAX_DIAGNOSTICS_PER_FILE].to_string(),
            "s.yaml:1:1: error: 7 more errors in this file not shown; at most 50 are reported per file"
        );
    }
}
