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
    /// The location of byte `offset` of `text`.
    pub fn from_offset(file: &str, text: &str, offset: usize) -> Location {
        let offset = offset.min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit('\n')
            .next()
            .map(|l| l.chars().count())
            .unwrap_or(0)
            + 1;
        Location {
            file: file.to_string(),
            line,
            column,
            field: None,
        }
    }
    pub fn with_field(mut self, field: &str) -> Location {
        self.field = Some(field.to_string());
        self
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
    #[error("`{field}` must be greater than zero")]
    Zero { field: String },
    #[error("PCIe links `{a}` – `{b}` close a cycle; PCIe is a tree")]
    PcieCycle { a: String, b: String },
    #[error("`{from}` cannot reach `{to}`: no path of links joins them")]
    Unreachable { from: String, to: String },
    #[error("the topology has no GPU")]
    NoGpu,
    #[error("{0}")]
    Invalid(String),
}
