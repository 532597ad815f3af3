//! Results a long run hands out as each completes, and takes back to skip
//! on a resume: the library side of `contend … --stream`/`--resume`. The
//! caller keeps them (the binary writes each as a JSON line); a resumed
//! result stands for the one the run would compute, so a resumed run ends
//! with what an uninterrupted one does.

use contend_workload::Algorithm;
use serde::{Deserialize, Serialize};

/// Results done before (`done`) and where new ones go (`sink`).
pub struct Checkpoint<'a, S> {
    done: Vec<S>,
    sink: Option<&'a (dyn Fn(&S) + Sync)>,
}

impl<S> std::fmt::Debug for Checkpoint<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("done", &self.done.len())
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

impl<'a, S> Checkpoint<'a, S> {
    /// Nothing done before, nothing kept.
    pub fn none() -> Self {
        Checkpoint {
            done: vec![],
            sink: None,
        }
    }

    /// `done` results taken back; every new one handed to `sink`.
    pub fn new(done: Vec<S>, sink: &'a (dyn Fn(&S) + Sync)) -> Self {
        Checkpoint {
            done,
            sink: Some(sink),
        }
    }

    /// The results done before.
    pub fn done(&self) -> &[S] {
        &self.done
    }

    /// The first result done before that `f` picks.
    pub fn find<T>(&self, f: impl FnMut(&S) -> Option<T>) -> Option<T> {
        self.done.iter().find_map(f)
    }

    /// A new result.
    pub fn record(&self, s: &S) {
        if let Some(sink) = self.sink {
            sink(s);
        }
    }
}

/// One prediction of contend-advise's `advise`: an algorithm at a size on
/// the first `world` GPUs; `ns` none where it cannot run. The file names
/// the algorithm (`"variant": "one-shot-pull"`); reading it back parses the
/// name, and a name no algorithm has is an error of the read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub world: usize,
    pub size_bytes: u64,
    pub variant: Algorithm,
    pub ns: Option<f64>,
    /// Which constants predicted it.
    pub constants: ConstantSet,
}

/// The constants a prediction was made with: the given ones, or (for a tie
/// tolerance from a calibration's bootstrap) the fitted constants at their
/// bootstrap 5th or 95th percentiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConstantSet {
    Fitted,
    Low,
    High,
}

/// One finished step of [`crate::calibrate()`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum CalibStep {
    /// Measurement `index` (in load order) simulated with the starting
    /// constants (none: it has no twin).
    Paired {
        index: usize,
        label: String,
        ns: Option<f64>,
    },
    /// The main fit ended at `point` (the fitted constants in the search's
    /// unit coordinates).
    Fitted {
        point: Vec<f64>,
        loss_default: f64,
        loss: f64,
        iterations: u64,
        evaluations: usize,
    },
    /// Bootstrap replicate `replicate` refitted: its constants' values.
    Refit {
        replicate: usize,
        values: Vec<f64>,
        evaluations: usize,
    },
    /// Measurement `index` predicted with the fitted constants.
    Predicted {
        index: usize,
        label: String,
        ns: Option<f64>,
    },
    /// Measurement `index` checked at TLP fidelity (none: it did not simulate).
    Checked {
        index: usize,
        check: Option<TlpCheck>,
    },
}

/// A flow-fidelity prediction checked against the TLP reference (one
/// finished step of a calibration's TLP checks, and a line of `fit.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TlpCheck {
    pub label: String,
    pub flow_ns: f64,
    pub tlp_ns: f64,
}
