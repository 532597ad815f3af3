//! Error statistics on the held-out set (median, p90, max absolute percent
//! error per placement, per algorithm and size), winner agreement between
//! the model and the hardware, and the verdict: which algorithm to use up to
//! which size.

use crate::calibrate::PointResult;
use contend_import::measure::Role;
use contend_topo::Bytes;
use contend_workload::compare::{self, DEFAULT_TIE_TOLERANCE};
use contend_workload::{LaunchMode, Placement};
use serde::{Deserialize, Serialize};
use statrs::statistics::{Data, OrderStatistics};
use std::collections::BTreeMap;

/// Which prediction to score.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Which {
    Default,
    Fitted,
}

impl Which {
    pub fn of(self, p: &PointResult) -> Option<f64> {
        match self {
            Which::Default => p.default_ns,
            Which::Fitted => p.fitted_ns,
        }
    }
}

/// Absolute percent error of a prediction.
pub fn abs_pct(pred: f64, measured: f64) -> f64 {
    100.0 * (pred - measured).abs() / measured
}

/// Median, p90 and max of a set of absolute percent errors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrStats {
    pub n: usize,
    pub median: f64,
    pub p90: f64,
    pub max: f64,
}

impl ErrStats {
    pub fn of(v: &[f64]) -> ErrStats {
        if v.is_empty() {
            return ErrStats::default();
        }
        let mut d = Data::new(v.to_vec());
        ErrStats {
            n: v.len(),
            median: d.median(),
            p90: d.percentile(90),
            max: v.iter().copied().fold(0.0, f64::max),
        }
    }
    /// The targets: median <= 10 %, p90 <= 25 %.
    pub fn meets_target(&self) -> bool {
        self.n > 0 && self.median <= 10.0 && self.p90 <= 25.0
    }
}

/// Held-out points (allreduce and verify step) with a prediction.
pub fn held_out(points: &[PointResult]) -> impl Iterator<Item = &PointResult> {
    held_out_collectives(points).map(|(p, _)| p)
}

/// `(workload, algorithm, placement, size, launch)` of a collective point.
type CollectiveKey = (&'static str, &'static str, Placement, u64, LaunchMode);

/// Held-out points with what [`PointResult::collective`] says of each.
fn held_out_collectives(
    points: &[PointResult],
) -> impl Iterator<Item = (&PointResult, CollectiveKey)> {
    points
        .iter()
        .filter(|p| p.role == Role::HeldOut)
        .filter_map(|p| p.collective().map(|c| (p, c)))
}

/// Held-out errors per placement.
pub fn by_placement(points: &[PointResult], which: Which) -> BTreeMap<Placement, ErrStats> {
    let mut m: BTreeMap<Placement, Vec<f64>> = BTreeMap::new();
    for (p, (_, _, pl, _, _)) in held_out_collectives(points) {
        if let Some(pred) = which.of(p) {
            m.entry(pl).or_default().push(abs_pct(pred, p.measured_ns));
        }
    }
    m.into_iter().map(|(k, v)| (k, ErrStats::of(&v))).collect()
}

/// Held-out errors per (workload, algorithm, placement).
pub fn by_algorithm(
    points: &[PointResult],
    which: Which,
) -> BTreeMap<(String, String, Placement), ErrStats> {
    let mut m: BTreeMap<(String, String, Placement), Vec<f64>> = BTreeMap::new();
    for (p, (w, a, pl, _, launch)) in held_out_collectives(points) {
        let w = if w == "verify-step" {
            format!("verify-step ({launch})")
        } else {
            w.to_string()
        };
        if let Some(pred) = which.of(p) {
            m.entry((w, a.to_string(), pl))
                .or_default()
                .push(abs_pct(pred, p.measured_ns));
        }
    }
    m.into_iter().map(|(k, v)| (k, ErrStats::of(&v))).collect()
}

/// Signed error (percent) of each held-out bf16 allreduce, by placement,
/// algorithm and size: the residual pattern over size.
pub fn residuals(
    points: &[PointResult],
    which: Which,
) -> BTreeMap<(Placement, String), Vec<(u64, f64)>> {
    let mut m: BTreeMap<(Placement, String), Vec<(u64, f64)>> = BTreeMap::new();
    for (p, (w, a, pl, size, _)) in held_out_collectives(points) {
        if w != "allreduce" {
            continue;
        }
        if let Some(pred) = which.of(p) {
            m.entry((pl, a.to_string()))
                .or_default()
                .push((size, 100.0 * (pred - p.measured_ns) / p.measured_ns));
        }
    }
    for v in m.values_mut() {
        v.sort_by_key(|x| x.0);
    }
    m
}

/// At one placement and size: the fastest algorithm on the hardware and in the model.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WinnerRow {
    pub workload: String,
    pub placement: Placement,
    pub size: u64,
    pub launch: LaunchMode,
    pub hw: String,
    pub hw_ns: f64,
    pub default: Option<String>,
    pub fitted: Option<String>,
    /// Runner-up's margin on the hardware (percent slower than the winner).
    pub hw_margin_pct: f64,
    /// The algorithms within [`DEFAULT_TIE_TOLERANCE`] of the fastest: on
    /// the hardware, and in the model with the default and the fitted
    /// constants (fastest first).
    #[serde(default)]
    pub hw_tied: Vec<String>,
    #[serde(default)]
    pub default_tied: Vec<String>,
    #[serde(default)]
    pub fitted_tied: Vec<String>,
}

impl WinnerRow {
    /// The model (default or fitted constants) picks the hardware's winner.
    pub fn agrees(&self, which: Which) -> bool {
        self.pick(which).0.as_deref() == Some(&self.hw)
    }

    /// The same, a tie on either side counting: the hardware's winner is
    /// within the tolerance of the model's fastest, or the model's pick is
    /// within the tolerance of the hardware's fastest.
    pub fn agrees_with_ties(&self, which: Which) -> bool {
        let (pick, tied) = self.pick(which);
        match pick {
            Some(p) => p == &self.hw || tied.contains(&self.hw) || self.hw_tied.contains(p),
            None => false,
        }
    }

    fn pick(&self, which: Which) -> (&Option<String>, &[String]) {
        match which {
            Which::Default => (&self.default, &self.default_tied),
            Which::Fitted => (&self.fitted, &self.fitted_tied),
        }
    }
}

/// Winner agreement over the cells of [`winners`]: exact, and counting ties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agreement {
    pub cells: usize,
    pub default: usize,
    pub default_with_ties: usize,
    pub fitted: usize,
    pub fitted_with_ties: usize,
}

/// How often the model picks the hardware's winner.
pub fn agreement(rows: &[WinnerRow]) -> Agreement {
    let n = |f: &dyn Fn(&WinnerRow) -> bool| rows.iter().filter(|r| f(r)).count();
    Agreement {
        cells: rows.len(),
        default: n(&|r| r.agrees(Which::Default)),
        default_with_ties: n(&|r| r.agrees_with_ties(Which::Default)),
        fitted: n(&|r| r.agrees(Which::Fitted)),
        fitted_with_ties: n(&|r| r.agrees_with_ties(Which::Fitted)),
    }
}

impl std::fmt::Display for Agreement {
    /// `default 31/44 (36/44 counting ties within 3.0 %), fitted 24/44 (33/44)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "default {}/{n} ({}/{n} counting ties within {:.1} %), fitted {}/{n} ({}/{n} counting ties)",
            self.default,
            self.default_with_ties,
            DEFAULT_TIE_TOLERANCE * 100.0,
            self.fitted,
            self.fitted_with_ties,
            n = self.cells
        )
    }
}

/// Winner per (workload, placement, size, launch) among the algorithms measured there.
pub fn winners(points: &[PointResult]) -> Vec<WinnerRow> {
    type Key = (String, Placement, u64, LaunchMode);
    let mut g: BTreeMap<Key, Vec<&PointResult>> = BTreeMap::new();
    for (p, (w, _, pl, size, launch)) in held_out_collectives(points) {
        g.entry((w.to_string(), pl, size, launch))
            .or_default()
            .push(p);
    }
    let best = |v: &[&PointResult], f: &dyn Fn(&PointResult) -> Option<f64>| -> Option<String> {
        v.iter()
            .filter_map(|p| f(p).map(|t| (t, p.collective().map(|c| c.1).unwrap_or("?"))))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, a)| a.to_string())
    };
    // the one tie rule of `advise`, at its default tolerance
    let tied = |v: &[&PointResult], f: &dyn Fn(&PointResult) -> Option<f64>| -> Vec<String> {
        let times: Vec<(String, f64, f64)> = v
            .iter()
            .filter_map(|p| {
                f(p).map(|t| {
                    (
                        p.collective().map(|c| c.1).unwrap_or("?").to_string(),
                        t,
                        DEFAULT_TIE_TOLERANCE,
                    )
                })
            })
            .collect();
        compare::tied(&times)
    };
    g.into_iter()
        .filter(|(_, v)| v.len() >= 2)
        .map(|((w, pl, size, launch), v)| {
            let mut hw: Vec<(f64, &str)> = v
                .iter()
                .map(|p| (p.measured_ns, p.collective().map(|c| c.1).unwrap_or("?")))
                .collect();
            hw.sort_by(|a, b| a.0.total_cmp(&b.0));
            WinnerRow {
                workload: w,
                placement: pl,
                size,
                launch,
                hw: hw[0].1.to_string(),
                hw_ns: hw[0].0,
                default: best(&v, &|p| p.default_ns),
                fitted: best(&v, &|p| p.fitted_ns),
                hw_margin_pct: 100.0 * (hw[1].0 - hw[0].0) / hw[0].0,
                hw_tied: tied(&v, &|p| Some(p.measured_ns)),
                default_tied: tied(&v, &|p| p.default_ns),
                fitted_tied: tied(&v, &|p| p.fitted_ns),
            }
        })
        .collect()
}

/// Size ranges over which one algorithm wins: `(from, to, algorithm)`
/// (the shared rule of [`contend_workload::compare::bands`]).
pub fn ranges(rows: &[(u64, String)]) -> Vec<(u64, u64, String)> {
    let w: Vec<(Bytes, Option<String>)> = rows
        .iter()
        .map(|(s, a)| (Bytes(*s), Some(a.clone())))
        .collect();
    compare::bands(&w)
        .into_iter()
        .map(|b| (b.from.0, b.to.0, b.winner))
        .collect()
}
