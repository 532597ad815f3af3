//! # contend-validate
//!
//! The accuracy suite: published allreduce timings of real PCIe boxes
//! (`validation/` at the repository root, one folder per case: the source,
//! the box's topology, a scenario per measured series, the measured table),
//! predicted by the model and scored. Nothing here is fitted: a row that is
//! off says which mechanism is missing (`validation/README.md`).
//!
//! | part | file |
//! |---|---|
//! | the case format, parsed once into checked types | `case.rs` |
//! | running each series' scenario at the measured sizes | `run.rs` |
//! | errors, medians, crossovers, claims | `score.rs` |

mod case;
mod error;
mod run;
mod score;

pub use case::{CASE_FILE, Case, Claim, Crossover, Group, Row, Series, load_case, load_suite};
pub use error::ValidateError;
pub use run::{CaseResult, ParamsChoice, run_case};
pub use score::{ClaimResult, CrossoverResult, ErrorStats, RowResult, by_group, crossing};

use rayon::prelude::*;
use serde::Serialize;
use std::path::Path;

/// The whole suite's results: every case's, and every group's statistics
/// over all cases.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteResult {
    pub cases: Vec<CaseResult>,
    pub groups: Vec<(Group, ErrorStats)>,
}

impl SuiteResult {
    /// Every row of every case.
    pub fn rows(&self) -> impl Iterator<Item = &RowResult> {
        self.cases.iter().flat_map(|c| c.rows.iter())
    }
    /// One group's statistics over every case (zeros when no row has it).
    pub fn group(&self, g: Group) -> ErrorStats {
        self.groups
            .iter()
            .find(|(h, _)| *h == g)
            .map_or_else(ErrorStats::default, |(_, s)| *s)
    }
    /// One case's results by id.
    pub fn case(&self, id: &str) -> Option<&CaseResult> {
        self.cases.iter().find(|c| c.id == id)
    }
}

/// Runs `cases` (all at once, each on its own thread) and scores them.
pub fn run_suite(cases: &[Case], choice: &ParamsChoice) -> Result<SuiteResult, ValidateError> {
    let cases: Vec<CaseResult> = cases
        .par_iter()
        .map(|c| run_case(c, choice))
        .collect::<Result<_, _>>()?;
    let rows: Vec<RowResult> = cases.iter().flat_map(|c| c.rows.clone()).collect();
    Ok(SuiteResult {
        groups: by_group(&rows),
        cases,
    })
}

/// Loads the suite at `root` and runs it.
pub fn validate(root: &Path, choice: &ParamsChoice) -> Result<SuiteResult, ValidateError> {
    run_suite(&load_suite(root)?, choice)
}
