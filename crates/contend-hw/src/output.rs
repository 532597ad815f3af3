//! Results as JSON Lines (one [`ResultRecord`] per line, flushed as soon as
//! it is measured, so an interrupted run keeps what it measured) and
//! progress on stderr.

use crate::error::HwError;
use contend_workload::jsonl::{JsonlError, JsonlWriter};
use contend_workload::{Machine, ResultRecord};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::Path;

/// Where records go, with the progress bar and the failures seen so far.
pub struct Sink {
    out: JsonlWriter,
    pb: ProgressBar,
    pub machine: Machine,
    pub written: usize,
    /// Measurements that failed (wrong result, unsupported): one line each.
    pub failures: Vec<String>,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink")
            .field("path", &self.out.name())
            .field("written", &self.written)
            .finish()
    }
}

impl Sink {
    /// Appends to nothing: creates (truncates) `path`, or writes to stdout.
    pub fn create(path: Option<&Path>, machine: Machine) -> Result<Sink, HwError> {
        let out = JsonlWriter::create(path).map_err(io_error)?;
        let pb = ProgressBar::new(0);
        pb.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Ok(Sink {
            out,
            pb,
            machine,
            written: 0,
            failures: vec![],
        })
    }

    /// Adds `n` steps to the progress total.
    pub fn plan(&self, n: u64) {
        self.pb.inc_length(n);
    }

    /// One step done, with what it was.
    pub fn step(&self, msg: &str) {
        self.pb.set_message(msg.to_string());
        self.pb.inc(1);
    }

    /// A line for the person watching (above the bar, or plain stderr when
    /// stderr is not a terminal).
    pub fn note(&self, msg: &str) {
        if self.pb.is_hidden() {
            eprintln!("{msg}");
        } else {
            self.pb.println(msg);
        }
    }

    /// Writes one record (with the machine fingerprint) and flushes it.
    pub fn write(&mut self, mut rec: ResultRecord) -> Result<(), HwError> {
        if rec.machine.is_none() {
            rec.machine = Some(self.machine.clone());
        }
        self.out.write(&rec).map_err(io_error)?;
        self.written += 1;
        Ok(())
    }

    /// Records a failed measurement (its timing is not written).
    pub fn fail(&mut self, msg: String) {
        self.note(&format!("FAILED: {msg}"));
        self.failures.push(msg);
    }

    pub fn finish(&self) {
        self.pb.finish_and_clear();
    }
}

fn io_error(e: JsonlError) -> HwError {
    match e {
        JsonlError::Io { path, message } => HwError::Io { path, message },
        JsonlError::Bad { location, message } => HwError::Io {
            path: location.to_string(),
            message,
        },
    }
}
