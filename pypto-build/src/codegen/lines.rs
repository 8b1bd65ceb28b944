//! Mapping rendered Ascend C lines back to template lines, for `#line`.
//!
//! Handlebars expands partials, `{{#each}}` blocks and multi-line values,
//! so rendered lines do not follow template lines one to one. Before a
//! template is registered, [`mark`] puts an invisible marker
//! (`\u{1}FILE:LINE\u{1}`) at the start of each template line whose start
//! is plain text, where inserting text cannot change what handlebars does
//! (never inside a `{{…}}` tag, a comment or a raw block, never on a line
//! that could be a standalone block line, never where `~` strips
//! whitespace). The marker is copied to the output wherever that line is,
//! once per `{{#each}}` iteration. [`resolve`] then removes every marker
//! and writes a `#line` directive wherever the compiler's own count would
//! be wrong: a marked line points to its template line, an unmarked line
//! (a partial's, the second line of a multi-line value, the output of a
//! line that opens with a block tag) to the rendered file itself.

use std::fmt::Write;

/// Starts and ends a marker; templates holding it are not marked.
const MARK: char = '\u{1}';

/// A template body with markers, and where they were put.
#[derive(Debug, Clone)]
pub(crate) struct Marked {
    pub text: String,
    /// Per body line (0-based): the byte column the marker was inserted at
    /// and its length, for lines that got one.
    marks: Vec<Option<(usize, usize)>>,
}

impl Marked {
    /// The column (1-based, in the unmarked body) of a position handlebars
    /// reports in the marked body.
    pub fn column(&self, line: usize, column: usize) -> usize {
        match line
            .checked_sub(1)
            .and_then(|l| self.marks.get(l))
            .copied()
            .flatten()
        {
            Some((at, len)) if column > at + len => column - len,
            Some((at, _)) if column > at => at + 1,
            _ => column,
        }
    }
}

/// Where a tag or a block the scanner is in ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Text,
    /// In `{{ … }}`; the quote a string parameter is open with.
    Tag(Option<u8>),
    /// In `{{! … }}` or, when long, `{{!-- … --}}`.
    Comment {
        long: bool,
    },
    /// In a `{{{{raw}}}} … {{{{/raw}}}}` block.
    Raw,
}

/// `body` with a marker for file `file` at the start of each line that can
/// take one; `first_line` is the template line `body` starts on. `None` when
/// the body holds the marker character itself.
pub(crate) fn mark(body: &str, file: usize, first_line: usize) -> Option<Marked> {
    if body.contains(MARK) {
        return None;
    }
    let mut text = String::with_capacity(body.len() + body.len() / 8);
    let mut marks = Vec::new();
    let mut state = State::Text;
    // A `~}}` strips the whitespace after it, across lines, up to the next
    // text: no marker may stand in its way.
    let mut stripping = false;
    for (index, line) in body.split_inclusive('\n').enumerate() {
        let marker = format!("{MARK}{file}:{}{MARK}", first_line + index);
        let at = if state == State::Text && !stripping {
            marker_column(line)
        } else {
            None
        };
        match at {
            Some(at) => {
                text.push_str(&line[..at]);
                text.push_str(&marker);
                text.push_str(&line[at..]);
                marks.push(Some((line[..at].chars().count(), marker.len())));
            }
            None => {
                text.push_str(line);
                marks.push(None);
            }
        }
        scan(line.as_bytes(), &mut state, &mut stripping);
    }
    Some(Marked { text, marks })
}

/// Where on `line` (which starts in plain text) a marker may go, as a byte
/// offset: its start, or just after a block tag the line opens with when
/// text follows the tag (so that the line cannot be standalone); `None` for
/// blank lines and lines that may be standalone or strip whitespace.
fn marker_column(line: &str) -> Option<usize> {
    let content = line.trim_start_matches([' ', '\t']);
    if content.trim_end().is_empty() {
        return None;
    }
    let Some(tag) = content.strip_prefix("{{") else {
        return Some(0);
    };
    let inner = tag.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let block = match inner.as_bytes().first() {
        // Partial blocks and decorators may be standalone.
        Some(b'#') if inner[1..].starts_with(['>', '*']) => return None,
        Some(b'#' | b'/' | b'^') => true,
        _ if inner.starts_with("else") => true,
        // Partials, comments, decorators, `~` and raw blocks.
        Some(b'>' | b'!' | b'*' | b'~') => return None,
        _ if inner.starts_with("{{") => return None,
        _ => false,
    };
    if !block {
        // `{{name}}`: an expression is never standalone.
        return Some(0);
    }
    // The block tag's end, outside quoted parameters.
    let start = line.len() - content.len();
    let bytes = line.as_bytes();
    let mut quote = None;
    let mut i = start + 2;
    while i + 1 < bytes.len() {
        match (quote, bytes[i]) {
            (Some(q), b) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(bytes[i]),
            (None, b'}') if bytes[i + 1] == b'}' => {
                if bytes[i - 1] == b'~' {
                    return None;
                }
                let end = i + 2;
                let next = line[end..].chars().next()?;
                return (!next.is_whitespace()).then_some(end);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Advances the scanner over one line.
fn scan(bytes: &[u8], state: &mut State, stripping: &mut bool) {
    let at = |i: usize, s: &[u8]| bytes[i..].starts_with(s);
    let mut i = 0;
    while i < bytes.len() {
        match *state {
            State::Text => {
                if at(i, b"\\{{") {
                    *stripping = false;
                    i += 3;
                    continue;
                }
                if at(i, b"{{{{") {
                    *state = State::Raw;
                    *stripping = false;
                    i += 4;
                    continue;
                }
                if at(i, b"{{!--") {
                    *state = State::Comment { long: true };
                    i += 5;
                    continue;
                }
                if at(i, b"{{!") {
                    *state = State::Comment { long: false };
                    i += 3;
                    continue;
                }
                if at(i, b"{{") {
                    *state = State::Tag(None);
                    *stripping = false;
                    i += 2;
                    continue;
                }
                if !bytes[i].is_ascii_whitespace() {
                    *stripping = false;
                }
            }
            State::Tag(Some(q)) => {
                if bytes[i] == q {
                    *state = State::Tag(None);
                }
            }
            State::Tag(None) => match bytes[i] {
                b'"' | b'\'' => *state = State::Tag(Some(bytes[i])),
                b'}' if at(i, b"}}") => {
                    *stripping = i > 0 && bytes[i - 1] == b'~';
                    *state = State::Text;
                    // A triple-stash's third brace closes it too.
                    i += if at(i, b"}}}") { 3 } else { 2 };
                    continue;
                }
                _ => {}
            },
            State::Comment { long } => {
                let end: &[u8] = if long { b"--}}" } else { b"}}" };
                if at(i, end) {
                    *stripping = bytes[i.saturating_sub(1)] == b'~';
                    *state = State::Text;
                    i += end.len();
                    continue;
                }
            }
            State::Raw => {
                if at(i, b"{{{{/")
                    && let Some(n) = bytes[i..].windows(4).position(|w| w == b"}}}}")
                {
                    *state = State::Text;
                    i += n + 4;
                    continue;
                }
            }
        }
        i += 1;
    }
}

/// Where a line of the assembled source was written from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A line of marked file `FILE`.
    Template { file: usize, line: usize },
    /// The rendered file itself.
    Rendered,
}

/// `text` with a C string literal's escapes, for a `#line` file name.
pub(crate) fn c_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\{:03o}", u32::from(c) & 0xff);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes the rendered `body` to `out` (which ends with a line break),
/// markers removed, with `#line` directives: marked lines name `files[FILE]`
/// (a C string literal) at their template line, other lines `rendered` (a
/// C string literal) at their own line in `out`. Ends with a line break and
/// the directive that makes the lines after the body the rendered file's
/// own again.
pub(crate) fn resolve(out: &mut String, body: &str, files: &[String], rendered: &str) {
    // Lines of `out` so far, and where the compiler takes the next to be from.
    let mut written = out.matches('\n').count();
    let mut presumed = Origin::Rendered;
    for line in body.split_inclusive('\n') {
        let (origin, clean) = unmark(line);
        if origin.is_none() && clean.trim().is_empty() {
            // A blank line may be counted as anyone's.
            out.push_str(&clean);
            written += 1;
            if let Origin::Template { line, .. } = &mut presumed {
                *line += 1;
            }
            continue;
        }
        let origin = match origin {
            Some(Origin::Template { file, line }) if file < files.len() => {
                Origin::Template { file, line }
            }
            _ => Origin::Rendered,
        };
        if origin != presumed {
            match origin {
                Origin::Template { file, line } => {
                    let _ = writeln!(out, "#line {line} {}", files[file]);
                }
                Origin::Rendered => {
                    let _ = writeln!(out, "#line {} {rendered}", written + 2);
                }
            }
            written += 1;
        }
        out.push_str(&clean);
        written += 1;
        presumed = match origin {
            Origin::Template { file, line } => Origin::Template {
                file,
                line: line + 1,
            },
            Origin::Rendered => Origin::Rendered,
        };
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if presumed != Origin::Rendered {
        let _ = writeln!(out, "#line {} {rendered}", written + 2);
    }
}

/// The origin a rendered line's leading marker gives it (after any
/// indentation, which partials get), and the line without markers.
fn unmark(line: &str) -> (Option<Origin>, String) {
    if !line.contains(MARK) {
        return (None, line.to_owned());
    }
    let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
    let mut origin = None;
    let mut rest = &line[indent..];
    while let Some(after) = rest.strip_prefix(MARK) {
        let Some(end) = after.find(MARK) else { break };
        let parsed = after[..end]
            .split_once(':')
            .and_then(|(f, l)| Some((f.parse().ok()?, l.parse().ok()?)));
        match parsed {
            Some((file, line)) => origin = Some(Origin::Template { file, line }),
            None => break,
        }
        rest = &after[end + 1..];
    }
    // Markers elsewhere (a line joined by `~`) only go.
    let mut clean = String::with_capacity(line.len());
    clean.push_str(&line[..indent]);
    let mut parts = rest.split(MARK);
    clean.push_str(parts.next().unwrap_or(""));
    let mut inside = true;
    for part in parts {
        if !inside {
            clean.push_str(part);
        }
        inside = !inside;
    }
    (origin, clean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Renders `template` (starting on template line `first`) with markers
    /// and `partial` as partial `p`, and resolves it after `prefix`.
    fn render(prefix: &str, template: &str, first: usize, partial: &str) -> String {
        let mut registry = handlebars::Handlebars::new();
        registry.set_strict_mode(true);
        let p = mark(partial, 1, 1).unwrap();
        registry.register_partial("p", &p.text).unwrap();
        let t = mark(template, 0, first).unwrap();
        registry.register_template_string("t", &t.text).unwrap();
        let body = registry
            .render("t", &json!({ "xs": [1, 2], "v": "a;\nb;", "yes": true }))
            .unwrap();
        let mut out = prefix.to_owned();
        resolve(
            &mut out,
            &body,
            &[c_string("t.hbs"), c_string("p.hbs")],
            &c_string("k_s0.cpp"),
        );
        out
    }

    #[test]
    fn template_lines_keep_their_numbers_through_blocks_partials_and_values() {
        let template = "int a;\n{{#each xs}}\nint x{{this}};\n{{/each}}\n{{v}}\n\n  {{> p}}\n{{#if yes}}int y;{{/if}}\nint z;";
        assert_eq!(
            render("// 1\n// 2\n", template, 5, "int p;\n"),
            "// 1\n// 2\n\
             #line 5 \"t.hbs\"\nint a;\n\
             #line 7 \"t.hbs\"\nint x1;\n\
             #line 7 \"t.hbs\"\nint x2;\n\
             #line 9 \"t.hbs\"\na;\n\
             #line 12 \"k_s0.cpp\"\nb;\n\
             \n\
             #line 1 \"p.hbs\"\n  int p;\n\
             #line 12 \"t.hbs\"\nint y;\n\
             int z;\n\
             #line 20 \"k_s0.cpp\"\n"
        );
    }

    #[test]
    fn markers_stay_out_of_tags_comments_and_stripped_whitespace() {
        let template = "{{#if yes}}\nA\n{{/if}}\n{{!-- a\nb --}}\n{{v\n}}\nB {{~v~}}\n  C\nD\n{{{{raw}}}}\nE\n{{{{/raw}}}}\n";
        let m = mark(template, 0, 1).unwrap();
        let marked: Vec<usize> = m
            .marks
            .iter()
            .enumerate()
            .filter(|(_, m)| m.is_some())
            .map(|(i, _)| i + 1)
            .collect();
        // `{{#if}}`, `{{/if}}`, a comment's and a tag's inner lines, the
        // line after `~}}` and the raw block's are left alone.
        assert_eq!(marked, [2, 6, 8, 10]);
        // What handlebars makes of it is the same, markers aside.
        let mut registry = handlebars::Handlebars::new();
        registry.register_escape_fn(handlebars::no_escape);
        let data = json!({ "yes": true, "v": "x" });
        let plain = registry.render_template(template, &data).unwrap();
        let marked = registry.render_template(&m.text, &data).unwrap();
        let unmarked: String = marked.split(MARK).step_by(2).collect();
        assert_eq!(unmarked, plain);
        assert_eq!(m.column(8, 20), 20 - "\u{1}0:8\u{1}".len());
        assert_eq!(m.column(9, 3), 3);
        assert!(mark("a\u{1}b", 0, 1).is_none());
    }

    #[test]
    fn file_names_are_c_strings() {
        assert_eq!(c_string("dir\\t \"x\".hbs"), "\"dir\\\\t \\\"x\\\".hbs\"");
    }
}
