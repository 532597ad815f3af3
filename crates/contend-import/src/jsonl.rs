//! contend's own JSON Lines of result records (what `contend hw run`,
//! `contend hw nccl` and `contend import` write), read into records with
//! their line numbers: the one reader calibration, `contend import` and the
//! TUI's overlay share.

use crate::error::CalibError;
use contend_workload::ResultRecord;
use contend_workload::jsonl::{JsonlError, parse_records};

/// Parses JSON Lines into records with their line numbers. A line that is not
/// one complete record (truncated, invalid JSON, missing fields) is an error.
pub fn parse_jsonl(file: &str, text: &str) -> Result<Vec<(usize, ResultRecord)>, CalibError> {
    parse_records(file, text).map_err(|e| match e {
        JsonlError::Bad { location, message } => CalibError::Record {
            file: location.file.clone(),
            line: location.line,
            message: match &location.field {
                Some(f) => format!("field `{f}`: {message}"),
                None => message,
            },
        },
        JsonlError::Io { path, message } => CalibError::File {
            file: path,
            message,
        },
    })
}
