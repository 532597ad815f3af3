//! A run's identity: which algorithm (none for transfers), placement,
//! fidelity and size, and the one line that names it — in the simulator's
//! errors, in result records and in the stream lines `--resume` reads back.

use contend_topo::Bytes;
use contend_workload::{Algorithm, Fidelity, Placement};
use serde::Serialize;

/// One simulation to run: which algorithm (none for transfers), placement,
/// fidelity and size (none for the verify step and transfers).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunSpec {
    pub algorithm: Option<Algorithm>,
    pub placement: Placement,
    pub fidelity: Fidelity,
    pub size: Option<Bytes>,
}

/// A run as one line names it (`one-shot-pull peer flow 4 KiB`, `transfer
/// peer tlp`): the simulator's errors and the stream lines `--resume` reads
/// back both use it, so the one rule is here.
impl std::fmt::Display for RunSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.algorithm.map_or("transfer", |a| a.name()),
            self.placement,
            self.fidelity
        )?;
        match self.size {
            Some(s) => write!(f, " {s}"),
            None => Ok(()),
        }
    }
}
