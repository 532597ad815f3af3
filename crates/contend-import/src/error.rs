//! Everything that stops a calibration, each naming where it went wrong.

use thiserror::Error;

/// Why a measurement file, a fit or a report could not be used or made.
#[derive(Debug, Error)]
pub enum CalibError {
    /// A line of a measurement file: `file:line: message`.
    #[error("{file}:{line}: {message}")]
    Record {
        file: String,
        line: usize,
        message: String,
    },
    /// A whole file (unreadable, empty, wrong format).
    #[error("{file}: {message}")]
    File { file: String, message: String },
    /// A value of a file at a known place or field (`fit.json:12:7`,
    /// ``fit.json (field `points[3].measured_ns`)``).
    #[error("{location}: {message}")]
    At {
        location: contend_topo::Location,
        message: String,
    },
    /// A row inside a tool's table that does not parse: `file:line:column:
    /// message` (the column of the token, when one is at fault), saying
    /// which column of the table and what was expected.
    #[error("{}: {message}", place(.file, *.line, *.column))]
    Row {
        file: String,
        line: usize,
        column: Option<usize>,
        message: String,
    },
    /// A measured value no machine can produce (a rate above the fastest
    /// link, a time below the floor, zero, negative, not a finite number):
    /// `file:line:column: impossible measurement: what it is and why`
    /// (the rule: [`crate::measure::physics`]).
    #[error("{}: impossible measurement: {message}", place(.file, *.line, *.column))]
    Impossible {
        file: String,
        line: usize,
        column: Option<usize>,
        message: String,
    },
    /// The simulated twin of a measurement could not be built or run.
    #[error("{file}:{line}: simulated twin: {message}")]
    Twin {
        file: String,
        line: usize,
        message: String,
    },
    /// Fitting could not proceed (no fit points, the optimiser failed).
    #[error("fit: {0}")]
    Fit(String),
    /// The measurements pin none of the constants calibration fits, or
    /// not every constant asked for by name: each with why and what
    /// measurements would pin it (contend-fit's `calibrate::guard`).
    #[error("fit: {}", crate::fit_stop::unpinned_message(.unpinned, .pinned, *.asked, *.requested, false))]
    Unpinned {
        unpinned: Vec<crate::fit_stop::Unpinned>,
        /// The constants the data does pin.
        pinned: Vec<String>,
        /// How many constants the set has.
        asked: usize,
        /// The set was asked for by name (`--fit`).
        requested: bool,
    },
    /// Fitted constants that ended on a bound of their search range, each
    /// with the bound and what measurements would pin it.
    #[error("fit: {}", crate::fit_stop::bound_message(.constants, false))]
    OnBound {
        constants: Vec<crate::fit_stop::OnBound>,
    },
    /// A collective whose ranks cannot be placed on the topology's GPUs
    /// (a 6-GPU nccl-tests run against an 8-GPU topology whose GPUs carry
    /// no PCI address to match the run's devices to): `file:line: message`
    /// naming both counts and what to do.
    #[error("{file}:{line}: {message}")]
    RankMismatch {
        file: String,
        line: usize,
        /// The run's rank count.
        ranks: usize,
        /// The topology's GPU count.
        gpus: usize,
        message: String,
    },
    /// A calibration folder or report that cannot be read or written.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// A file that could not be read at all (missing, not a regular file,
    /// too large, not text).
    #[error("{0}")]
    Read(#[from] contend_topo::bounded_read::ReadError),
    /// Drawing a chart failed.
    #[error("chart {path}: {message}")]
    Chart { path: String, message: String },
}

/// `file:line:column`, or `file:line` when the column is not known.
fn place(file: &str, line: usize, column: Option<usize>) -> String {
    match column {
        Some(c) => format!("{file}:{line}:{c}"),
        None => format!("{file}:{line}"),
    }
}

impl CalibError {
    /// A calibration folder or report at `path` that cannot be read or written.
    pub fn io(path: &std::path::Path, e: impl std::fmt::Display) -> CalibError {
        CalibError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }

    /// A drawing error of the chart for `path`, naming it (the charts of
    /// contend-fit's reports and contend-advise's latency charts).
    pub fn chart<E: std::fmt::Display>(path: &std::path::Path) -> impl Fn(E) -> CalibError + '_ {
        move |e| CalibError::Chart {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}
