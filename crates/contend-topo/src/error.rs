//! Typed errors with the place in a file where the problem is.

use std::fmt;
use thiserror::Error;

/// Where in an input file something is: file, line and column (1-based), and
/// the field, when one is to blame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub field: Option<String>,
}

impl Location {
    /// The location of byte `offset` of `text` (an offset inside a
    /// character counts as that character's start).
    pub fn from_offset(file: &str, text: &str, offset: usize) -> Location {
        Location::in_lines(file, &Lines::new(text), offset)
    }
    /// The location of byte `offset` of the text `lines` indexes (a binary
    /// search: for a file whose every entry keeps its location).
    pub fn in_lines(file: &str, lines: &Lines<'_>, offset: usize) -> Location {
        let text = lines.text;
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        // the lines starting at or before the offset: its line, 1-based
        let line = lines.starts.partition_point(|&s| s <= offset);
        let start = lines.starts[line - 1];
        Location {
            file: file.to_string(),
            line,
            column: text[start..offset].chars().count() + 1,
            field: None,
        }
    }
    pub fn with_field(mut self, field: &str) -> Location {
        self.field = Some(field.to_string());
        self
    }
    /// The location of a TOML parse or type error in `text`: its line and
    /// column, with the dotted key written there as the field (see
    /// [`toml_key_path`]); without a span, the file and the field the
    /// message names.
    pub fn of_toml_error(file: &str, text: &str, e: &toml::de::Error) -> Location {
        match e.span() {
            Some(s) => {
                let mut l = Location::from_offset(file, text, s.start);
                l.field = toml_key_path(text, s.start);
                l
            }
            None => Location {
                file: file.to_string(),
                line: 0,
                column: 0,
                field: named_field(e.message()),
            },
        }
    }
}

/// Where each line of a text starts: for a file whose every entry keeps
/// its location ([`Location::in_lines`]), where counting the lines from
/// the top for each would cost the square of the file's length.
#[derive(Clone, Debug)]
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Lines<'a> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { text, starts }
    }
}

/// The field a serde message names (``missing field `x` ``), if any.
pub fn named_field(msg: &str) -> Option<String> {
    let i = msg.find("field `")?;
    let rest = &msg[i + "field `".len()..];
    rest.find('`').map(|j| rest[..j].to_string())
}

/// The dotted path of the TOML key at byte `offset` of `text` (best effort:
/// the innermost `[table]` or `[[array]]` header above it and the key on its
/// line), for syntax and type errors that serde reports by position only.
pub fn toml_key_path(text: &str, offset: usize) -> Option<String> {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    // `key = …`, or a key cut short before its `=` (`key with no value`)
    let key = match line.split_once('=') {
        Some((k, _)) => Some(k),
        None => Some(line.split('#').next().unwrap_or("").trim()).filter(|k| {
            k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        }),
    }
    .map(|k| k.trim().trim_matches('"').to_string())
    .filter(|k| !k.is_empty() && !k.starts_with('#') && !k.starts_with('['));
    let header = |l: &str| {
        let l = l.trim();
        l.strip_prefix("[[")
            .and_then(|x| x.strip_suffix("]]"))
            .or_else(|| l.strip_prefix('[').and_then(|x| x.strip_suffix(']')))
            .map(|t| t.trim().to_string())
    };
    // a header cut short on the error's own line (`unclosed table`) is the table meant
    let open_header = line
        .trim()
        .strip_prefix('[')
        .filter(|_| header(line).is_none())
        .map(|t| t.trim_start_matches('[').trim().to_string())
        .filter(|t| !t.is_empty());
    if let Some(t) = open_header {
        return Some(t);
    }
    let table = before[..line_start].lines().rev().find_map(header);
    match (table, key) {
        (Some(t), Some(k)) => Some(format!("{t}.{k}")),
        (None, Some(k)) => Some(k),
        (Some(t), None) => Some(t),
        (None, None) => None,
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)?;
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.column)?;
        }
        if let Some(field) = &self.field {
            write!(f, " (field `{field}`)")?;
        }
        Ok(())
    }
}

/// A topology that cannot be used, and where it went wrong.
#[derive(Debug, Error)]
#[error("{}{kind}", location.as_ref().map(|l| format!("{l}: ")).unwrap_or_default())]
pub struct TopoError {
    pub location: Option<Location>,
    pub kind: TopoErrorKind,
}

impl TopoError {
    pub fn at(location: Option<Location>, kind: TopoErrorKind) -> TopoError {
        TopoError { location, kind }
    }
}

#[derive(Debug, Error)]
pub enum TopoErrorKind {
    #[error("cannot read topology file: {0}")]
    Io(String),
    #[error("{0}")]
    Syntax(String),
    #[error("node id `{id}` is used twice{}", first.as_ref().map(|l| format!(" (first at line {})", l.line)).unwrap_or_default())]
    DuplicateId { id: String, first: Option<Location> },
    #[error("link names node `{id}`, which is not defined")]
    UnknownNode { id: String },
    #[error("PCIe links `{a}` – `{b}` close a cycle; PCIe is a tree")]
    PcieCycle { a: String, b: String },
    #[error("`{from}` cannot reach `{to}`: no path of links joins them")]
    Unreachable { from: String, to: String },
    #[error("the topology has no GPU")]
    NoGpu,
    /// A number past one of the stated [`limits`](crate::limits).
    #[error(transparent)]
    Limit(#[from] crate::limits::LimitError),
    #[error("{0}")]
    Invalid(String),
}

#[cfg(test)]
mod key_path_tests {
    use super::toml_key_path;

    #[test]
    fn a_key_path_names_the_key_even_cut_short() {
        let t = "name = \"x\"\n[workload]\nkind = 3\n";
        assert_eq!(
            toml_key_path(t, t.find('3').unwrap()).as_deref(),
            Some("workload.kind")
        );
        // a key with no value (the file cut after it)
        let t = "name = \"x\"\n[workload]\nsizes";
        assert_eq!(toml_key_path(t, t.len()).as_deref(), Some("workload.sizes"));
        // a header cut short
        let t = "name = \"x\"\n[[workload.strea";
        assert_eq!(toml_key_path(t, t.len()).as_deref(), Some("workload.strea"));
        // a line of a multi-line array is no key: the table it is in
        let t = "[links]\nlist = [\n  \"a\", \"b\",\n";
        assert_eq!(toml_key_path(t, t.len() - 2).as_deref(), Some("links"));
    }
}

#[cfg(test)]
mod lines_tests {
    use super::{Lines, Location};

    /// The indexed location of every offset (inside characters, past the
    /// end) is the one counted from the top: line and column.
    #[test]
    fn indexed_locations_are_the_counted_ones() {
        for text in [
            "",
            "a",
            "\n",
            "\n\n",
            "ab\ncd\n\nü€x\ny",
            "€\n",
            "x = 1\n[[node]]\nid = \"gpü0\"\n",
        ] {
            let lines = Lines::new(text);
            for offset in 0..text.len() + 3 {
                // counted from the top: the newlines before the offset's
                // character, and the characters since the last of them
                let mut at = offset.min(text.len());
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                let before = &text[..at];
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                let got = Location::in_lines("f", &lines, offset);
                assert_eq!(
                    (got.line, got.column),
                    (line, column),
                    "{text:?} at {offset}"
                );
                assert_eq!(Location::from_offset("f", text, offset), got);
            }
        }
    }
}
