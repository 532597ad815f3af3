//! Fitting a chosen subset of [`ModelParams`] to microbenchmarks: Nelder–Mead
//! (argmin) on the weighted mean squared log ratio of predicted to measured
//! time, in a bounded, log-scaled parameter space; uncertainty by bootstrap
//! over the fit points (rayon runs the replicates in parallel, statrs gives
//! the percentiles). The constants it may fit, with their ranges, are
//! in `catalogue.rs`.

use crate::checkpoint::{CalibStep, Checkpoint};
use crate::twin::{PredictError, Twin};
use argmin::core::{CostFunction, Executor, State};
use argmin::solver::neldermead::NelderMead;
use contend_import::CalibError;
use contend_sim::ModelParams;
use contend_workload::Fidelity;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use statrs::statistics::{Data, OrderStatistics, Statistics};
use std::sync::atomic::{AtomicUsize, Ordering};

mod catalogue;
pub mod pin;
pub use catalogue::{
    BOUND_MARGIN, DEFAULT_SUBSET, FitParam, NCCL_LOG_SUBSET, catalogue, pinned_by, select,
};

/// What the fit can ask of a fit point: its value under some constants
/// (a time for the lent machine's probes, the figure's own unit for a
/// public figure; the loss compares log ratios, so the unit cancels).
pub trait Predict: Sync {
    fn predict(&self, params: &ModelParams, fidelity: Fidelity) -> Result<f64, PredictError>;
}

impl Predict for Twin {
    fn predict(&self, params: &ModelParams, fidelity: Fidelity) -> Result<f64, PredictError> {
        Twin::predict(self, params, fidelity)
    }
}

impl Predict for crate::figure_twin::FigureTwin {
    fn predict(&self, params: &ModelParams, fidelity: Fidelity) -> Result<f64, PredictError> {
        crate::figure_twin::FigureTwin::predict(self, params, fidelity)
    }
}

/// One fit point: a microbenchmark and its twin.
#[derive(Debug)]
pub struct FitPoint<T = Twin> {
    pub twin: T,
    /// The measured value, in the unit the twin predicts.
    pub measured: f64,
    /// Relative weight (each family of probes counts the same in total).
    pub weight: f64,
}

/// Where in its search range an unset cap starts the fit.
pub const UNSET_CAP_START: f64 = 0.85;

/// Most Nelder–Mead iterations of a fit or of each bootstrap refit.
pub const MAX_FIT_ITERS: u64 = 100_000;
/// Most bootstrap replicates.
pub const MAX_BOOTSTRAP: usize = 1000;

/// How to fit.
#[derive(Clone, Debug)]
pub struct FitOptions {
    pub max_iters: u64,
    /// Bootstrap replicates (0: none).
    pub bootstrap: usize,
    /// Nelder–Mead iterations of each bootstrap refit (started from the fit).
    pub bootstrap_iters: u64,
    pub seed: u64,
    pub fidelity: Fidelity,
}

impl FitOptions {
    /// Checks the counts against the stated limits; an error names the option.
    pub fn check(&self) -> Result<(), CalibError> {
        for (name, v, lo) in [
            ("max_iters", self.max_iters, 1),
            ("bootstrap_iters", self.bootstrap_iters, 1),
        ] {
            if !(lo..=MAX_FIT_ITERS).contains(&v) {
                return Err(CalibError::Fit(format!(
                    "{name} = {v} is outside {lo}..={MAX_FIT_ITERS}"
                )));
            }
        }
        if self.bootstrap > MAX_BOOTSTRAP {
            return Err(CalibError::Fit(format!(
                "bootstrap = {} is outside 0..={MAX_BOOTSTRAP}",
                self.bootstrap
            )));
        }
        Ok(())
    }
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            max_iters: 400,
            bootstrap: 24,
            bootstrap_iters: 120,
            seed: 1,
            fidelity: Fidelity::Flow,
        }
    }
}

/// A fitted constant with its bootstrap spread.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FittedConstant {
    pub name: String,
    pub default: f64,
    pub value: f64,
    pub lo_bound: f64,
    pub hi_bound: f64,
    /// Bootstrap 5th and 95th percentiles and standard deviation (None without bootstrap).
    pub p05: Option<f64>,
    pub p95: Option<f64>,
    pub std: Option<f64>,
    /// True when the fit ended within [`BOUND_MARGIN`] of a search bound
    /// (a share of the range, log-scaled where the range is).
    pub at_bound: bool,
}

/// What a fit produced.
#[derive(Clone, Debug)]
pub struct FitOutcome {
    pub params: ModelParams,
    pub constants: Vec<FittedConstant>,
    pub loss_default: f64,
    pub loss: f64,
    pub iterations: u64,
    pub evaluations: usize,
}

/// Progress callback: (stage, done, total).
pub type Progress<'a> = &'a (dyn Fn(&str, usize, usize) + Sync);

struct Problem<'a, T> {
    base: &'a ModelParams,
    params: &'a [FitParam],
    points: &'a [FitPoint<T>],
    /// Per point: weight times bootstrap multiplicity.
    weights: Vec<f64>,
    fidelity: Fidelity,
    evals: &'a AtomicUsize,
}

fn apply(base: &ModelParams, params: &[FitParam], u: &[f64]) -> ModelParams {
    let mut p = base.clone();
    for (fp, &x) in params.iter().zip(u) {
        (fp.set)(&mut p, fp.value_at(x));
    }
    p
}

/// The fit's loss of `params` over the points at their own weights.
pub fn loss_of<T: Predict>(
    params: &ModelParams,
    points: &[FitPoint<T>],
    fidelity: Fidelity,
) -> Result<f64, PredictError> {
    let w: Vec<f64> = points.iter().map(|p| p.weight).collect();
    loss(params, points, &w, fidelity)
}

/// Weighted mean squared log ratio of predicted to measured; a twin that
/// fails to simulate under these constants makes them infeasible.
fn loss<T: Predict>(
    params: &ModelParams,
    points: &[FitPoint<T>],
    weights: &[f64],
    fid: Fidelity,
) -> Result<f64, PredictError> {
    if params.check().is_err() {
        return Ok(1e6);
    }
    let terms: Vec<Result<(f64, f64), PredictError>> = points
        .par_iter()
        .zip(weights.par_iter())
        .filter(|(_, w)| **w > 0.0)
        .map(|(pt, &w)| {
            let pred = pt.twin.predict(params, fid)?;
            let r = (pred.max(1e-6) / pt.measured).ln();
            Ok((w * r * r, w))
        })
        .collect();
    let (mut s, mut sw) = (0.0, 0.0);
    for t in terms {
        let (a, b) = t?;
        s += a;
        sw += b;
    }
    Ok(if sw > 0.0 { s / sw } else { 0.0 })
}

impl<T: Predict> CostFunction for Problem<'_, T> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, u: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        self.evals.fetch_add(1, Ordering::Relaxed);
        let p = apply(self.base, self.params, u);
        Ok(loss(&p, self.points, &self.weights, self.fidelity).unwrap_or(1e6))
    }
}

fn nelder_mead<T: Predict>(
    problem: Problem<'_, T>,
    start: Vec<f64>,
    iters: u64,
) -> Result<(Vec<f64>, f64, u64), CalibError> {
    let n = start.len();
    let mut simplex = vec![start.clone()];
    for i in 0..n {
        let mut v = start.clone();
        v[i] += if v[i] > 2.0 { -0.8 } else { 0.8 };
        simplex.push(v);
    }
    let solver = NelderMead::new(simplex)
        .with_sd_tolerance(1e-7)
        .map_err(|e| CalibError::Fit(e.to_string()))?;
    let res = Executor::new(problem, solver)
        .configure(|s| s.max_iters(iters))
        .run()
        .map_err(|e| CalibError::Fit(e.to_string()))?;
    let st = res.state();
    let best = st.get_best_param().cloned().unwrap_or(start);
    Ok((best, st.get_best_cost(), st.get_iter()))
}

/// A small deterministic generator for bootstrap resampling (splitmix64).
struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The main fit: Nelder–Mead from `base`, polished; (best point, its loss,
/// iterations, the loss at `base`, evaluations).
fn main_fit<T: Predict>(
    base: &ModelParams,
    params: &[FitParam],
    points: &[FitPoint<T>],
    weights: &[f64],
    opts: &FitOptions,
    progress: Progress<'_>,
) -> Result<(Vec<f64>, f64, u64, f64, usize), CalibError> {
    let loss_default =
        loss(base, points, weights, opts.fidelity).map_err(|e| CalibError::Fit(e.to_string()))?;
    let evals = AtomicUsize::new(0);
    // an unset cap starts inside its range, above any link's rate, where
    // the simplex's first steps can reach values that bind (from the very
    // top of the range they would move nothing)
    let start: Vec<f64> = params
        .iter()
        .map(|p| {
            let v = (p.get)(base);
            if p.optional && v >= p.hi {
                p.unit_of(p.at_fraction(UNSET_CAP_START))
            } else {
                p.unit_of(v)
            }
        })
        .collect();
    progress("fitting", 0, 1);
    let (best, best_cost, iterations) = nelder_mead(
        Problem {
            base,
            params,
            points,
            weights: weights.to_vec(),
            fidelity: opts.fidelity,
            evals: &evals,
        },
        start,
        opts.max_iters,
    )?;
    // Polish: restart from the best point while that still helps (Nelder–Mead
    // stalls on the plateaus that rounding integer constants makes).
    let (mut best, mut best_cost, mut iterations) = (best, best_cost, iterations);
    for _ in 0..3 {
        let (b, c, i) = nelder_mead(
            Problem {
                base,
                params,
                points,
                weights: weights.to_vec(),
                fidelity: opts.fidelity,
                evals: &evals,
            },
            best.clone(),
            opts.max_iters / 2,
        )?;
        iterations += i;
        if c < best_cost - 1e-6 {
            (best, best_cost) = (b, c);
        } else {
            break;
        }
    }
    progress("fitting", 1, 1);
    Ok((
        best,
        best_cost,
        iterations,
        loss_default,
        evals.load(Ordering::Relaxed),
    ))
}

/// Fits `params` (starting from `base`) to the points.
pub fn fit<T: Predict>(
    base: &ModelParams,
    params: &[FitParam],
    points: &[FitPoint<T>],
    opts: &FitOptions,
    progress: Progress<'_>,
) -> Result<FitOutcome, CalibError> {
    fit_resumable(base, params, points, opts, progress, &Checkpoint::none())
}

/// [`fit`], the main fit's end and each bootstrap refit handed to
/// `checkpoint` as they complete, and those it holds from before not run
/// again (they are what the run would compute: the refits are seeded by
/// their index and start from the fit's point).
pub fn fit_resumable<T: Predict>(
    base: &ModelParams,
    params: &[FitParam],
    points: &[FitPoint<T>],
    opts: &FitOptions,
    progress: Progress<'_>,
    checkpoint: &Checkpoint<'_, CalibStep>,
) -> Result<FitOutcome, CalibError> {
    if points.is_empty() {
        return Err(CalibError::Fit(
            "no microbenchmark to fit on (the files hold no transfer probes, and no nccl-tests log of your own: `contend import` lists what each file holds)".into(),
        ));
    }
    if params.is_empty() {
        return Err(CalibError::Fit("no constant to fit".into()));
    }
    opts.check()?;
    let weights: Vec<f64> = points.iter().map(|p| p.weight).collect();
    let before = checkpoint.find(|s| match s {
        CalibStep::Fitted {
            point,
            loss_default,
            loss,
            iterations,
            evaluations,
        } if point.len() == params.len() => Some((
            point.clone(),
            *loss_default,
            *loss,
            *iterations,
            *evaluations,
        )),
        _ => None,
    });
    let (best, best_cost, iterations, loss_default, fit_evals) = match before {
        Some((point, loss_default, cost, iterations, evaluations)) => {
            progress("fitting", 1, 1);
            (point, cost, iterations, loss_default, evaluations)
        }
        None => {
            let (best, cost, iterations, loss_default, evaluations) =
                main_fit(base, params, points, &weights, opts, progress)?;
            checkpoint.record(&CalibStep::Fitted {
                point: best.clone(),
                loss_default,
                loss: cost,
                iterations,
                evaluations,
            });
            (best, cost, iterations, loss_default, evaluations)
        }
    };
    let fitted = apply(base, params, &best);

    // Bootstrap: resample points with replacement, refit from the fit.
    let done = AtomicUsize::new(0);
    let reps: Vec<(Vec<f64>, usize)> = (0..opts.bootstrap)
        .into_par_iter()
        .map(|b| {
            if let Some(r) = checkpoint.find(|s| match s {
                CalibStep::Refit {
                    replicate,
                    values,
                    evaluations,
                } if *replicate == b && values.len() == params.len() => {
                    Some((values.clone(), *evaluations))
                }
                _ => None,
            }) {
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress("bootstrap", d, opts.bootstrap);
                return Ok(r);
            }
            let evals = AtomicUsize::new(0);
            let mut rng = SplitMix(opts.seed ^ (b as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F));
            let mut w = vec![0.0; points.len()];
            for _ in 0..points.len() {
                let i = (rng.next() % points.len() as u64) as usize;
                w[i] += weights[i];
            }
            let r = nelder_mead(
                Problem {
                    base,
                    params,
                    points,
                    weights: w,
                    fidelity: opts.fidelity,
                    evals: &evals,
                },
                best.clone(),
                opts.bootstrap_iters,
            );
            let d = done.fetch_add(1, Ordering::Relaxed) + 1;
            progress("bootstrap", d, opts.bootstrap);
            r.map(|(u, _, _)| {
                let values: Vec<f64> = params
                    .iter()
                    .zip(&u)
                    .map(|(fp, &x)| fp.value_at(x))
                    .collect();
                let evaluations = evals.load(Ordering::Relaxed);
                checkpoint.record(&CalibStep::Refit {
                    replicate: b,
                    values: values.clone(),
                    evaluations,
                });
                (values, evaluations)
            })
        })
        .collect::<Result<_, _>>()?;
    let evaluations = fit_evals + reps.iter().map(|r| r.1).sum::<usize>();
    let reps: Vec<Vec<f64>> = reps.into_iter().map(|r| r.0).collect();
    let default_params = ModelParams::default();
    let constants = params
        .iter()
        .enumerate()
        .map(|(i, fp)| {
            let value = (fp.get)(&fitted);
            let (p05, p95, std) = if reps.len() >= 2 {
                let v: Vec<f64> = reps.iter().map(|r| r[i]).collect();
                let mut d = Data::new(v.clone());
                (
                    Some(d.percentile(5)),
                    Some(d.percentile(95)),
                    Some(v.std_dev()),
                )
            } else {
                (None, None, None)
            };
            FittedConstant {
                name: fp.name.to_string(),
                default: (fp.get)(&default_params),
                value,
                lo_bound: fp.lo,
                hi_bound: fp.hi,
                p05,
                p95,
                std,
                at_bound: fp.on_bound(value).is_some(),
            }
        })
        .collect();
    Ok(FitOutcome {
        params: fitted,
        constants,
        loss_default,
        loss: best_cost,
        iterations,
        evaluations,
    })
}
