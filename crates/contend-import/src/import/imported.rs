//! What an importer hands back and the located errors of a tool's table:
//! the [`Tool`] that wrote a file, the records read ([`Imported`]), what was
//! left out and why ([`Skip`]), and the `file:line:column` errors of a row
//! that does not parse or a figure no machine can produce. Every reader of
//! a tool's log (this folder's and [`crate::nccl_tests`]) builds on these;
//! the dispatch over tools is [`crate::import`]'s.

use super::clean::Noise;
use crate::error::CalibError;
use contend_workload::ResultRecord;
use serde::Serialize;
use std::collections::BTreeMap;

/// A tool whose output contend reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    /// contend's own records (JSON Lines).
    Contend,
    NcclTests,
    NcclTestsJson,
    /// `p2pBandwidthLatencyTest` of the CUDA samples.
    CudaP2p,
    Nvbandwidth,
    P2pmark,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Contend => "contend",
            Tool::NcclTests => "nccl-tests",
            Tool::NcclTestsJson => "nccl-tests-json",
            Tool::CudaP2p => "p2pBandwidthLatencyTest",
            Tool::Nvbandwidth => "nvbandwidth",
            Tool::P2pmark => "p2pmark",
        }
    }
}

/// Something an importer read but did not turn into a record, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skip {
    pub line: usize,
    /// What it was (`Bidirectional P2P=Disabled matrix`, `shell prompt`).
    pub what: String,
    pub why: String,
}

/// One file's import.
#[derive(Clone, Debug, Serialize)]
pub struct Imported {
    pub file: String,
    pub tool: Tool,
    /// The tool's version when the output says it.
    pub version: Option<String>,
    /// Records with the line each came from.
    #[serde(skip)]
    pub records: Vec<(usize, ResultRecord)>,
    /// What was read and left out, in file order.
    pub skipped: Vec<Skip>,
    /// Noise lines skipped, counted by kind.
    pub noise: BTreeMap<String, usize>,
}

impl Imported {
    pub(crate) fn new(file: &str, tool: Tool) -> Imported {
        Imported {
            file: file.to_string(),
            tool,
            version: None,
            records: vec![],
            skipped: vec![],
            noise: BTreeMap::new(),
        }
    }
    pub(crate) fn skip(&mut self, line: usize, what: impl Into<String>, why: impl Into<String>) {
        self.skipped.push(Skip {
            line,
            what: what.into(),
            why: why.into(),
        });
    }
    pub(crate) fn count_noise(&mut self, n: Noise) {
        *self.noise.entry(n.describe().to_string()).or_default() += 1;
    }
}

/// The 1-based character column of `tok` in `raw`, the line as the file
/// holds it (`tok` a slice of it, as the importers' tokens are; else its
/// first occurrence, else 1).
pub(crate) fn column(raw: &str, tok: &str) -> usize {
    let off = (tok.as_ptr() as usize).wrapping_sub(raw.as_ptr() as usize);
    let off = if off <= raw.len() && raw.is_char_boundary(off) {
        off
    } else {
        raw.find(tok).unwrap_or(0)
    };
    raw[..off].chars().count() + 1
}

/// The first control character of a line that is not whitespace (a
/// tab, a carriage return are), with its 1-based column: no tool prints
/// one inside a table.
pub(crate) fn control_char(raw: &str) -> Option<(usize, char)> {
    raw.chars()
        .enumerate()
        .find(|(_, c)| c.is_control() && !c.is_whitespace())
        .map(|(k, c)| (k + 1, c))
}

/// A control character in a line of a table's body (`inside`: which
/// table), located: no tool prints one, so the line is corrupt.
pub(crate) fn corrupt_row(file: &str, line: usize, raw: &str, inside: &str) -> Option<CalibError> {
    let (col, ch) = control_char(raw)?;
    Some(row_error(
        file,
        line,
        Some(col),
        format!(
            "a control character (U+{:04X}) {inside}: no tool prints one in a row (a corrupt line)",
            ch as u32
        ),
    ))
}

/// A line of a table's body that does not parse: `file:line:column`.
pub(crate) fn row_error(
    file: &str,
    line: usize,
    column: Option<usize>,
    message: String,
) -> CalibError {
    CalibError::Row {
        file: file.to_string(),
        line,
        column,
        message,
    }
}

/// An impossible figure: `file:line:column`.
pub(crate) fn impossible(
    file: &str,
    line: usize,
    column: Option<usize>,
    message: String,
) -> CalibError {
    CalibError::Impossible {
        file: file.to_string(),
        line,
        column,
        message,
    }
}
