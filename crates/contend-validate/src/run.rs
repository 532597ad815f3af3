//! Running the suite: each series' scenario at its measured sizes (flow
//! fidelity, the series' algorithm only), the model's median per call
//! against the measured time, then the case's crossovers and claims on the
//! predictions.

use crate::case::{Case, Series, measured_pairs};
use crate::error::ValidateError;
use crate::score::{ClaimResult, CrossoverResult, RowResult, crossing};
use contend_sim::{ModelParams, runs_of, simulate_one};
use contend_topo::Bytes;
use contend_workload::{Fidelity, Scenario, Workload};
use rayon::prelude::*;
use serde::Serialize;

/// Which model constants each case runs with.
#[derive(Clone, Debug, Default)]
pub enum ParamsChoice {
    /// The case's own (`params` in its file: a public rig's fitted
    /// constants), else the defaults.
    #[default]
    CaseOwn,
    /// The defaults for every case.
    Defaults,
    /// These for every case.
    These(Box<ModelParams>),
}

/// One case's results.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub title: String,
    pub source: String,
    /// The params file the case ran with; `None`: the defaults (or the
    /// caller's).
    pub params: Option<String>,
    pub rows: Vec<RowResult>,
    pub crossovers: Vec<CrossoverResult>,
    pub claims: Vec<ClaimResult>,
}

/// Runs one case.
pub fn run_case(case: &Case, choice: &ParamsChoice) -> Result<CaseResult, ValidateError> {
    let (params, params_name) = match choice {
        ParamsChoice::CaseOwn => match &case.params_file {
            Some(f) => (ModelParams::load(f)?, Some(f.display().to_string())),
            None => (ModelParams::default(), None),
        },
        ParamsChoice::Defaults => (ModelParams::default(), None),
        ParamsChoice::These(p) => ((**p).clone(), None),
    };
    let predicted: Vec<Vec<f64>> = case
        .series
        .par_iter()
        .map(|s| predict_series(case, s, &params))
        .collect::<Result<_, _>>()?;

    let mut rows = Vec::new();
    for (s, pred) in case.series.iter().zip(&predicted) {
        for (r, &p) in s.rows.iter().zip(pred) {
            rows.push(RowResult {
                case: case.id.clone(),
                series: s.name.clone(),
                group: s.group,
                algorithm: s.algorithm.name().to_string(),
                size_bytes: r.size.0,
                measured_us: r.measured_us,
                predicted_us: p,
                error_pct: 100.0 * (p - r.measured_us) / r.measured_us,
            });
        }
    }
    let predicted_pairs = |a: usize, b: usize| -> Vec<(Bytes, f64, f64)> {
        let (sa, sb) = (&case.series[a], &case.series[b]);
        sa.rows
            .iter()
            .zip(&predicted[a])
            .filter_map(|(ra, &pa)| {
                sb.rows
                    .iter()
                    .position(|rb| rb.size == ra.size)
                    .map(|j| (ra.size, pa, predicted[b][j]))
            })
            .collect()
    };
    let crossovers = case
        .crossovers
        .iter()
        .map(|c| {
            let (small, large) = (&case.series[c.small], &case.series[c.large]);
            let measured = crossing(&measured_pairs(small, large))
                .expect("a case's crossovers cross in its measured rows (checked at load)");
            let pairs = predicted_pairs(c.small, c.large);
            let predicted = crossing(&pairs);
            let note = match predicted {
                Some(_) => None,
                None if pairs.iter().all(|(_, a, b)| a < b) => {
                    Some(format!("`{}` predicted faster at every size", small.name))
                }
                None if pairs.iter().all(|(_, a, b)| a >= b) => {
                    Some(format!("`{}` predicted faster at every size", large.name))
                }
                None => Some("predicted to cross the other way".to_string()),
            };
            CrossoverResult {
                case: case.id.clone(),
                small: small.name.clone(),
                large: large.name.clone(),
                measured_bytes: measured,
                predicted_bytes: predicted,
                predicted_note: note,
                ratio: predicted.map(|p| p / measured),
            }
        })
        .collect();
    let claims = case
        .claims
        .iter()
        .map(|c| {
            let contradicted_at: Vec<u64> = predicted_pairs(c.faster, c.slower)
                .into_iter()
                .filter(|(s, f, w)| *s >= c.from && *s <= c.to && f >= w)
                .map(|(s, _, _)| s.0)
                .collect();
            ClaimResult {
                case: case.id.clone(),
                text: c.text.clone(),
                holds: contradicted_at.is_empty(),
                contradicted_at,
            }
        })
        .collect();
    Ok(CaseResult {
        id: case.id.clone(),
        title: case.title.clone(),
        source: case.source.clone(),
        params: params_name,
        rows,
        crossovers,
        claims,
    })
}

/// The model's median time per call, µs, at each of the series' sizes.
fn predict_series(
    case: &Case,
    s: &Series,
    params: &ModelParams,
) -> Result<Vec<f64>, ValidateError> {
    let fail = |message: String| ValidateError::Run {
        case: case.id.clone(),
        series: s.name.clone(),
        message,
    };
    let mut spec = s.scenario.spec();
    spec.algorithms = vec![s.algorithm];
    spec.fidelities = vec![Fidelity::Flow];
    // the scenario's first placement: the one its file names first
    spec.placements.truncate(1);
    let sizes: Vec<Bytes> = s.rows.iter().map(|r| r.size).collect();
    spec.workload = match spec.workload {
        Workload::Allreduce {
            dtype,
            repeats,
            gap,
            skew,
            ..
        } => Workload::Allreduce {
            sizes,
            dtype,
            repeats,
            gap,
            skew,
        },
        Workload::VerifyStep(v) => Workload::Allreduce {
            sizes,
            dtype: v.dtype,
            repeats: v.allreduces(),
            gap: v.gap,
            skew: v.skew,
        },
        Workload::Transfer { .. } => {
            return Err(fail("the scenario runs transfers, not a collective".into()));
        }
    };
    let sc = Scenario::new(spec).map_err(|e| fail(e.to_string()))?;
    let specs = runs_of(&sc, &[Fidelity::Flow]);
    let runs: Vec<(u64, f64)> = specs
        .par_iter()
        .map(|spec| {
            let run = simulate_one(&sc, params, *spec).map_err(|e| fail(e.to_string()))?;
            let r = run.record();
            Ok((r.size_bytes, r.stats.median_ns / 1e3))
        })
        .collect::<Result<_, ValidateError>>()?;
    s.rows
        .iter()
        .map(|row| {
            runs.iter()
                .find(|(b, _)| *b == row.size.0)
                .map(|(_, us)| *us)
                .ok_or_else(|| fail(format!("no result at {} B", row.size.0)))
        })
        .collect()
}
