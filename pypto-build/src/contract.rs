//! Template contracts: the front-matter block a template may open with,
//! declaring its params by role, the relations between their axes, its
//! options, block rule, core kind and dtypes.

// Used by the renderer and the model as they adopt contracts.
#![allow(dead_code)]

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
