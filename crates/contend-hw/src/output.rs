//! Results as JSON Lines (one [`ResultRecord`] per line, flushed as soon as
//! it is measured, so an interrupted run keeps what it measured) and
//! progress on stderr.

use crate::error::HwError;
use contend_workload::{Machine, ResultRecord};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::path::Path;

/// Where records go, with the progress bar and the failures seen so far.
pub struct Sink {
    out: Box<dyn Write + Send>,
    path: String,
    pb: ProgressBar,
    pub machine: Machine,
    pub written: usize,
    /// Measurements that failed (wrong result, unsupported): one line each.
    pub failures: Vec<String>,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink")
            .field("path", &self.path)
            .field("written", &self.written)
            .finish()
    }
}

impl Sink {
    /// Appends to nothing: creates (truncates) `path`, or writes to stdout.
    pub fn create(path: Option<&Path>, machine: Machine) -> Result<Sink, HwError> {
        let (out, name): (Box<dyn Write + Send>, String) = match path {
            Some(p) => {
                if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| HwError::Io {
                        path: dir.display().to_string(),
                        message: e.to_string(),
                    })?;
                }
                let f = std::fs::File::create(p).map_err(|e| HwError::Io {
                    path: p.display().to_string(),
                    message: e.to_string(),
                })?;
                (
                    Box::new(std::io::BufWriter::new(f)),
                    p.display().to_string(),
                )
            }
            None => (Box::new(std::io::stdout()), "stdout".into()),
        };
        let pb = ProgressBar::new(0);
        pb.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Ok(Sink {
            out,
            path: name,
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
        let line = serde_json::to_string(&rec).map_err(|e| HwError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        let io = |e: std::io::Error| HwError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        };
        self.out.write_all(line.as_bytes()).map_err(io)?;
        self.out.write_all(b"\n").map_err(io)?;
        self.out.flush().map_err(io)?;
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

/// Reads JSON Lines of [`ResultRecord`]s (blank lines skipped).
pub fn read_records(text: &str) -> Result<Vec<ResultRecord>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}
