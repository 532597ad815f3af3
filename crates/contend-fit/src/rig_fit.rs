//! Calibrating a public rig on its own figures: which constants are the
//! rig's free parameters, the fit, and every fit figure's measured value
//! beside its prediction with the default and the fitted constants.
//!
//! ## The free constants
//!
//! A rig's figures pin some constants and say nothing of others, so the
//! set is chosen per rig by one rule, from one ordered list of candidates
//! ([`CANDIDATES`]: physical constants of a box — copy-engine setup, GPU
//! memory / switch / root-complex / I/O-die latencies, link efficiency,
//! the copy engine's outstanding reads, host-read completion size,
//! cross-socket, root-port, root-complex and memory caps, the platform's
//! collapse rate):
//!
//! 1. a candidate is *pinned* when moving it across its search range
//!    (from a quarter to three quarters of the way; a cap from a third of
//!    the way to unset) moves a fit figure of its kind by more than
//!    [`PINNED`] — latencies by latency figures (ping-pong, remote-load
//!    round trips, small copies), the rest by bandwidth figures;
//! 2. a pinned candidate is *free* unless its changes over the figures
//!    (log ratios) keep less than [`INDEPENDENT`] of their norm outside the
//!    span of the earlier choices' changes: then the figures cannot tell it
//!    from them, it keeps its default and the report says so.
//!
//! Never a per-figure constant: every free constant applies to every
//! figure of the rig (a cap to every root port, the collapse rate to every
//! collapsing port), so what the fit finds is a property of the box.

use crate::calibrate::guard::{Unpinned, check_bounds, unpinned_message};
use crate::figure_twin::FigureTwin;
use crate::figures::{FigMetric, Figure};
use crate::fit::pin::{self, Verdict};
use crate::fit::{
    FitOptions, FitParam, FitPoint, FittedConstant, Progress, fit, loss_of, pinned_by, select,
};
use crate::rig::{Rig, Use};
use contend_import::CalibError;
use contend_sim::ModelParams;
use contend_workload::Fidelity;
use serde::{Deserialize, Serialize};
use statrs::statistics::{Data, OrderStatistics};
use std::collections::BTreeMap;

/// The candidates, in the order the rule considers them.
pub const CANDIDATES: &[&str] = &[
    "gpu.copy_setup_ns",
    "gpu.memory_latency_ns",
    "switch.latency_ns",
    "root_complex.latency_ns",
    "io_die.latency_ns",
    "pcie.dllp_overhead",
    "gpu.copy_outstanding",
    "root_complex.host_completion_bytes",
    "cross_socket.port_gbps",
    "cross_socket.p2p_bandwidth_gbps",
    // before the cross-socket stream rule: a mechanism of the switch the
    // topology marks collapsing, where the stream rule is a shape any
    // socket link may have
    "root_complex.collapse_request_bytes",
    "cross_socket.stream_exponent",
    "cross_socket.stream_knee",
    "cross_socket.stream_gbps",
    "root_complex.port_p2p_gbps",
    "root_complex.p2p_bandwidth_gbps",
    "root_complex.memory_bandwidth_gbps",
    "platform.collapse_gbps",
];

pub use crate::fit::pin::{INDEPENDENT, PINNED};

/// What the rule decided for one candidate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FreeChoice {
    pub name: String,
    pub free: bool,
    /// Fit figures whose prediction it moves.
    pub moves: usize,
    /// Why, for people.
    pub why: String,
}

/// One fit figure's numbers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FigureResult {
    pub id: String,
    pub what: String,
    pub metric: String,
    pub unit: String,
    pub topology: String,
    pub family: String,
    pub measured: f64,
    pub default: f64,
    pub fitted: f64,
    /// (predicted / measured − 1) × 100.
    pub default_error_pct: f64,
    pub fitted_error_pct: f64,
    /// What the twin assumed beyond the figure's fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumed: Vec<String>,
}

/// A fit figure without a twin, and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SkippedFigure {
    pub id: String,
    pub reason: String,
}

/// Median and largest absolute % error.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ErrorStats {
    pub n: usize,
    pub median_pct: f64,
    pub max_pct: f64,
    /// Figures within [`TOLERANCE_PCT`].
    pub within: usize,
}

/// The bar a figure is held to after its rig's fit.
pub const TOLERANCE_PCT: f64 = 15.0;

impl ErrorStats {
    pub fn of(errors: impl Iterator<Item = f64>) -> ErrorStats {
        let v: Vec<f64> = errors.map(f64::abs).collect();
        if v.is_empty() {
            return ErrorStats::default();
        }
        let within = v.iter().filter(|e| **e <= TOLERANCE_PCT).count();
        let max = v.iter().copied().fold(0.0, f64::max);
        ErrorStats {
            n: v.len(),
            median_pct: Data::new(v).median(),
            max_pct: max,
            within,
        }
    }
}

/// Everything a rig's calibration produced (`report.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RigSummary {
    pub rig: String,
    pub figures_file: String,
    pub topologies: Vec<String>,
    /// Figures in the file, with `fit = true`, with `fit = false`.
    pub figures: usize,
    pub fit_figures: usize,
    pub not_fit: usize,
    /// Fit figures of a rig or figure without a topology.
    pub no_topology: usize,
    pub skipped: Vec<SkippedFigure>,
    pub choices: Vec<FreeChoice>,
    pub constants: Vec<FittedConstant>,
    pub loss_default: f64,
    pub loss_fit: f64,
    pub iterations: u64,
    pub evaluations: usize,
    pub bootstrap: usize,
    pub fidelity: Fidelity,
    pub results: Vec<FigureResult>,
    pub default_errors: ErrorStats,
    pub fitted_errors: ErrorStats,
    /// The fitted constants as a params file.
    pub params_toml: String,
    /// What a guard would have refused and `force` let through
    /// ([`crate::calibrate::guard`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// How to calibrate a rig.
#[derive(Clone, Debug, Default)]
pub struct RigOptions {
    pub fit: FitOptions,
    /// Constants to fit instead of the rule's choice: each must be one the
    /// rule frees, unless `force`.
    pub free: Option<Vec<FitParam>>,
    /// Fit and write despite a guard (a constant asked for that the
    /// figures cannot pin, a fitted constant on a bound), each kept as a
    /// warning.
    pub force: bool,
}

/// The family a figure's weight is shared in: the readout, the op and
/// whether one stream or several ran. Each of a family's n figures weighs
/// 1/√n: 56 matrix entries do not drown two collapse tests, nor two tests
/// the matrix.
fn family(f: &Figure, t: &FigureTwin) -> String {
    let n = t.scenario.streams().len();
    format!(
        "{} {} {}",
        t.readout.kind(),
        f.op,
        if n == 1 { "1 stream" } else { "streams" }
    )
}

/// Whether a candidate is a latency (pinned by latency figures) rather
/// than a rate or a count (pinned by bandwidth figures).
fn is_latency(name: &str) -> bool {
    name.ends_with("_ns")
}

/// Applies the rule above ([`crate::fit::pin`]) to every candidate.
pub fn choose_free(
    rig: &Rig,
    base: &ModelParams,
    fidelity: Fidelity,
) -> Result<Vec<(FitParam, FreeChoice)>, CalibError> {
    let names: Vec<String> = CANDIDATES.iter().map(|s| s.to_string()).collect();
    let cands = select(&names)?;
    let latency_figure: Vec<bool> = rig
        .twins()
        .iter()
        .map(|(i, _)| {
            matches!(
                rig.file.figures[*i].metric,
                FigMetric::OneWayLatencyNs
                    | FigMetric::RoundTripLatencyUs
                    | FigMetric::CopyLatencyUs
            )
        })
        .collect();
    // only the figures of its kind pin a candidate
    let pins = pin::choose(
        &cands,
        base,
        |p| rig.predict(p, fidelity),
        |fp, i| latency_figure[i] == is_latency(fp.name),
    )?;
    Ok(pins
        .into_iter()
        .map(|p| {
            let kind = if is_latency(p.param.name) {
                "latency"
            } else {
                "bandwidth"
            };
            let moves = p.moved.len();
            let why = match &p.verdict {
                Verdict::MovesNothing { lo, hi } => format!(
                    "no {kind} figure moves by more than {:.0} % between {} and {}",
                    PINNED * 100.0,
                    num(*lo),
                    hi.map_or("unset".into(), num)
                ),
                Verdict::Collinear { with } => format!(
                    "moves {moves} {kind} figures, but as a mix of {} does: the figures cannot tell it apart",
                    with.iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Verdict::Free => format!("moves {moves} {kind} figures"),
            };
            (
                p.param,
                FreeChoice {
                    name: p.param.name.to_string(),
                    free: p.free(),
                    moves,
                    why,
                },
            )
        })
        .collect())
}

fn num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// Points of a constant's range the coordinate search tries (fractions of
/// the way across, log-scaled where the range is), besides its current
/// value and, for a cap, unset.
pub const GRID: usize = 25;
/// Sweeps of the coordinate search over the free constants.
pub const SWEEPS: usize = 3;

/// A global start for Nelder–Mead: each free constant in turn set to the
/// best of [`GRID`] points across its range (the others held), for
/// [`SWEEPS`] sweeps. Caps and latencies make the loss flat in places
/// (an unbinding cap moves nothing), where a simplex started at the
/// defaults stalls; the grid sees past the plateaus.
fn coordinate_search(
    start: &ModelParams,
    params: &[FitParam],
    points: &[FitPoint<FigureTwin>],
    fid: Fidelity,
    progress: Progress<'_>,
) -> Result<ModelParams, CalibError> {
    let loss =
        |p: &ModelParams| loss_of(p, points, fid).map_err(|e| CalibError::Fit(e.to_string()));
    let mut best = start.clone();
    let mut best_loss = loss(&best)?;
    for sweep in 0..SWEEPS {
        progress("searching", sweep, SWEEPS);
        let before = best_loss;
        for fp in params {
            let mut values: Vec<f64> = (0..GRID)
                .map(|k| fp.at_fraction((k as f64 + 0.5) / GRID as f64))
                .collect();
            if fp.optional {
                values.push(fp.hi);
            }
            for v in values {
                let mut p = best.clone();
                (fp.set)(&mut p, v);
                let l = loss(&p)?;
                if l < best_loss {
                    (best, best_loss) = (p, l);
                }
            }
        }
        if before - best_loss < 1e-9 {
            break;
        }
    }
    progress("searching", SWEEPS, SWEEPS);
    Ok(best)
}

/// The collapse rate the rig's topologies state (the median over every
/// collapsing switch and root complex that gives one): where the fit of
/// `platform.collapse_gbps` starts.
pub fn documented_collapse_gbps(rig: &Rig) -> Option<f64> {
    use contend_topo::NodeKind;
    let mut v: Vec<f64> = rig
        .topologies
        .values()
        .flat_map(|t| t.nodes().iter())
        .filter_map(|n| match &n.kind {
            NodeKind::Switch(s) => s.collapse.as_ref(),
            NodeKind::RootComplex(r) => r.collapse.as_ref(),
            _ => None,
        })
        .filter_map(|c| c.rate.map(|r| r.as_gbps()))
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Fits the rig's free constants on its fit figures.
pub fn calibrate_rig(
    rig: &Rig,
    base: &ModelParams,
    opts: &RigOptions,
    progress: Progress<'_>,
) -> Result<RigSummary, CalibError> {
    let fid = opts.fit.fidelity;
    let twins = rig.twins();
    if twins.is_empty() {
        return Err(CalibError::Fit(format!(
            "rig `{}` has no fit figure with a twin",
            rig.name()
        )));
    }
    progress("choosing", 0, 1);
    let decided = choose_free(rig, base, fid)?;
    progress("choosing", 1, 1);
    let mut warnings = vec![];
    let (params, choices): (Vec<FitParam>, Vec<FreeChoice>) = match &opts.free {
        Some(list) => {
            let names: Vec<&str> = list.iter().map(|p| p.name).collect();
            // every constant asked for must be one the figures pin
            let unpinned: Vec<Unpinned> = list
                .iter()
                .filter_map(|fp| {
                    let why = match decided.iter().find(|(p, _)| p.name == fp.name) {
                        Some((_, c)) if c.free => return None,
                        Some((_, c)) => c.why.clone(),
                        None => format!(
                            "not a candidate of the rule (candidates: {})",
                            CANDIDATES.join(", ")
                        ),
                    };
                    Some(Unpinned {
                        name: fp.name.to_string(),
                        why,
                        pinned_by: pinned_by(fp.name).to_string(),
                    })
                })
                .collect();
            if !unpinned.is_empty() {
                let pinned: Vec<String> = (decided.iter().filter(|(_, c)| c.free))
                    .map(|(p, _)| p.name.to_string())
                    .collect();
                if !opts.force {
                    return Err(CalibError::Unpinned {
                        unpinned,
                        pinned,
                        asked: list.len(),
                        requested: true,
                    });
                }
                warnings.push(unpinned_message(&unpinned, &pinned, list.len(), true, true));
            }
            let choices = decided
                .into_iter()
                .map(|(_, mut c)| {
                    c.free = names.contains(&c.name.as_str());
                    c.why = format!("{} (chosen on the command line)", c.why);
                    c
                })
                .collect();
            (list.clone(), choices)
        }
        None => {
            let params = decided
                .iter()
                .filter(|(_, c)| c.free)
                .map(|(p, _)| *p)
                .collect();
            (params, decided.into_iter().map(|(_, c)| c).collect())
        }
    };
    if params.is_empty() {
        return Err(CalibError::Fit(format!(
            "no constant of rig `{}` is pinned by its figures",
            rig.name()
        )));
    }
    let figs = &rig.file.figures;
    let fams: Vec<String> = twins.iter().map(|(i, t)| family(&figs[*i], t)).collect();
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &fams {
        *count.entry(f).or_default() += 1;
    }
    let points: Vec<FitPoint<FigureTwin>> = twins
        .iter()
        .zip(&fams)
        .map(|((i, t), fam)| FitPoint {
            twin: (*t).clone(),
            measured: figs[*i].value,
            weight: 1.0 / (count[fam.as_str()] as f64).sqrt(),
        })
        .collect();
    // the fit of the platform's collapse rate starts from what the
    // topologies state
    let documented = documented_collapse_gbps(rig);
    let mut start = base.clone();
    if start.platform.collapse_gbps.is_none() {
        start.platform.collapse_gbps = documented;
    }
    let start = coordinate_search(&start, &params, &points, fid, progress)?;
    let mut out = fit(&start, &params, &points, &opts.fit, progress)?;
    // a constant on a bound of its search range is the bound's, not the box's
    warnings.extend(check_bounds(&out.constants, &params, opts.force)?);
    for c in &mut out.constants {
        if c.name == "platform.collapse_gbps"
            && let Some(d) = documented
        {
            c.default = d;
        }
    }
    let default = rig.predict(base, fid)?;
    let fitted = rig.predict(&out.params, fid)?;
    let pct = |p: f64, m: f64| (p / m - 1.0) * 100.0;
    let results: Vec<FigureResult> = twins
        .iter()
        .zip(&fams)
        .zip(default.iter().zip(&fitted))
        .map(|(((i, t), fam), (d, f))| {
            let fig = &figs[*i];
            FigureResult {
                id: fig.id.clone(),
                what: fig.what.clone(),
                metric: fig.metric.name().to_string(),
                unit: fig.metric.unit().to_string(),
                topology: rig.file.topology_of(fig).unwrap_or_default().to_string(),
                family: fam.clone(),
                measured: fig.value,
                default: *d,
                fitted: *f,
                default_error_pct: pct(*d, fig.value),
                fitted_error_pct: pct(*f, fig.value),
                assumed: t.assumed.clone(),
            }
        })
        .collect();
    let skipped = rig
        .uses
        .iter()
        .zip(figs)
        .filter_map(|(u, f)| match u {
            Use::Skipped(why) => Some(SkippedFigure {
                id: f.id.clone(),
                reason: why.clone(),
            }),
            _ => None,
        })
        .collect();
    let count_of = |pred: fn(&Use) -> bool| rig.uses.iter().filter(|u| pred(u)).count();
    Ok(RigSummary {
        rig: rig.name().to_string(),
        figures_file: rig.file.file.clone(),
        topologies: rig.topologies.keys().cloned().collect(),
        figures: figs.len(),
        fit_figures: figs.iter().filter(|f| f.fit).count(),
        not_fit: count_of(|u| matches!(u, Use::NotFit)),
        no_topology: count_of(|u| matches!(u, Use::NoTopology)),
        skipped,
        choices,
        constants: out.constants,
        loss_default: out.loss_default,
        loss_fit: out.loss,
        iterations: out.iterations,
        evaluations: out.evaluations,
        bootstrap: opts.fit.bootstrap,
        fidelity: fid,
        default_errors: ErrorStats::of(results.iter().map(|r| r.default_error_pct)),
        fitted_errors: ErrorStats::of(results.iter().map(|r| r.fitted_error_pct)),
        results,
        params_toml: out.params.to_toml(),
        warnings,
    })
}
