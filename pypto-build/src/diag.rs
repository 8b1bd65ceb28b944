//! Located diagnostics: every problem in a spec is reported as
//! `PATH:LINE:COL: error: MESSAGE`, optionally followed by the source line.

use std::fmt;
use std::path::{Path, PathBuf};

/// A 1-based line and column (in characters) inside a spec file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

impl Pos {
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
    pub path: PathBuf,
    pub pos: Pos,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.pos)
    }
}

/// One problem found in a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub location: Location,
    pub message: String,
    /// The source line the position points into, for a caret snippet.
    pub source_line: Option<String>,
}

impl Diagnostic {
    /// The diagnostic followed by the offending source line and a caret.
    pub fn render(&self) -> String {
        let mut out = self.to_string();
        if let Some(line) = &self.source_line {
            let number = self.location.pos.line.to_string();
            let gutter = " ".repeat(number.len());
            let caret_pad: String = line
                .chars()
                .take(self.location.pos.column.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            out.push_str(&format!(
                "\n{gutter} |\n{number} | {line}\n{gutter} | {caret_pad}^"
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
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

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

/// Collects the diagnostics of one spec file.
pub(crate) struct Sink<'a> {
    path: &'a Path,
    source: &'a str,
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(path: &'a Path, source: &'a str) -> Self {
        Sink {
            path,
            source,
            diagnostics: Vec::new(),
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

    pub(crate) fn error(&mut self, pos: Pos, message: impl Into<String>) {
        let source_line = pos
            .line
            .checked_sub(1)
            .and_then(|i| self.source.lines().nth(i as usize))
            .map(|l| l.trim_end_matches('\r').to_owned());
        self.diagnostics.push(Diagnostic {
            location: self.location(pos),
            message: message.into(),
            source_line,
        });
    }
}
