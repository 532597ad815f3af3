//! What can go wrong when the suite loads or runs.

use contend_topo::Location;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ValidateError {
    /// A case file is wrong at this place.
    #[error("{location}: {message}")]
    At { location: Location, message: String },
    /// A file or folder cannot be read.
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    /// A case's model constants do not load.
    #[error(transparent)]
    Params(#[from] contend_sim::ParamsError),
    /// A series' scenario cannot be run at the measured sizes.
    #[error("case {case}, series `{series}`: {message}")]
    Run {
        case: String,
        series: String,
        message: String,
    },
}
