//! The whole calibration: load and pair measurements, fit on the
//! microbenchmarks, predict the held-out allreduces and verify steps with the
//! default and the fitted constants, check a few points at TLP fidelity, and
//! keep everything the report needs in one serialisable summary (`fit.json`).

use crate::checkpoint::{CalibStep, Checkpoint};
use crate::fit::{FitOptions, FitParam, FitPoint, FittedConstant, Progress, fit_resumable};
use crate::twin::{Twin, build_twin};
use contend_import::CalibError;
use contend_import::measure::{Kind, Measurement, ProbeOp, Role, load_measurements};
use contend_sim::ModelParams;
use contend_topo::{NodeKind, Topology};
use contend_workload::Fidelity;
use rayon::prelude::*;
use statrs::statistics::{Data, OrderStatistics};
use std::collections::BTreeMap;
use std::path::Path;

pub mod guard;
mod summary;

pub use self::guard::PinChoice;
pub use self::summary::{FitSummary, MAX_SUMMARY_NS, PointResult, TlpCheck};

/// Most points checked at TLP fidelity after a fit.
pub const MAX_TLP_CHECKS: usize = 1000;

/// Options of [`calibrate`].
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    pub fit: FitOptions,
    pub params: Vec<FitParam>,
    /// The constants fitted when the files hold no microbenchmark but a
    /// user's own nccl-tests log: then every other size of each run (at
    /// most [`LOG_FIT_POINTS`]) is fitted on and the rest held out (see
    /// [`log_fit_split`]).
    pub log_params: Vec<FitParam>,
    /// Points checked at TLP fidelity after the fit (at most [`MAX_TLP_CHECKS`]).
    pub tlp_checks: usize,
    /// `params` and `log_params` were asked for by name (`--fit`): each
    /// must be pinned by the data ([`guard`]); else (the default sets) the
    /// pinned ones are fitted and the others keep their starting values.
    pub requested: bool,
    /// Fit the whole set as asked, pinned or not, and write despite a
    /// guard ([`guard`]: constants the data cannot pin, a fitted constant
    /// on a bound), each kept as a warning.
    pub force: bool,
}

/// Weights: every family of probes (op, target kind, concurrency) weighs
/// the same in total, so 21 bandwidth points do not drown 1 latency point.
fn family(m: &Measurement, topo: &Topology) -> String {
    match &m.kind {
        Kind::Probe { op, streams, .. } => {
            let target = topo
                .lookup(&streams[0].to)
                .map(|i| match topo.node(i).kind {
                    NodeKind::Gpu(_) => "gpu",
                    _ => "host",
                })
                .unwrap_or("?");
            format!("{}-{target}-{}", op.name(), streams.len())
        }
        _ => String::new(),
    }
}

/// What kind of figure a fit point is, for people: `copy-peer to a GPU`,
/// `sm-load to host memory, 2 streams`, `nccl-latency, 2 ranks`.
fn figure_kind(m: &Measurement, topo: &Topology) -> String {
    match &m.kind {
        Kind::Probe {
            op,
            streams,
            fenced,
            host_flags,
            ..
        } => {
            let target = match topo.lookup(&streams[0].to).map(|i| &topo.node(i).kind) {
                Some(NodeKind::Gpu(_)) => "a GPU",
                _ => "host memory",
            };
            let mut k = format!("{} to {target}", op.name());
            if *fenced {
                k += ", fenced";
            }
            if *host_flags {
                k += ", flags in host memory";
            }
            if streams.len() > 1 {
                k += &format!(", {} streams", streams.len());
            }
            k
        }
        Kind::Allreduce {
            algorithm, ranks, ..
        } => match m.record.algorithm.probe() {
            Some(op) => format!("{}, {} ranks", op.name(), ranks.len()),
            None => match m.record.extra.import.format.as_deref() {
                Some(f) => format!("{f} allreduce, {} ranks", ranks.len()),
                None => format!("{} allreduce, {} ranks", algorithm.name(), ranks.len()),
            },
        },
        _ => m.label(),
    }
}

/// Runs the whole calibration.
pub fn calibrate(
    files: &[&Path],
    topo: &Topology,
    topology_file: &str,
    base: &ModelParams,
    opts: &CalibrateOptions,
    progress: Progress<'_>,
) -> Result<FitSummary, CalibError> {
    calibrate_resumable(
        files,
        topo,
        topology_file,
        base,
        opts,
        progress,
        &Checkpoint::none(),
    )
}

/// [`calibrate`], every step (a pairing simulation, the fit, a bootstrap
/// refit, a prediction, a TLP check) handed to `checkpoint` as it
/// completes, and those it holds from before not run again: resumed from
/// the steps of an interrupted run on the same inputs, it ends with the
/// summary an uninterrupted run gives.
pub fn calibrate_resumable(
    files: &[&Path],
    topo: &Topology,
    topology_file: &str,
    base: &ModelParams,
    opts: &CalibrateOptions,
    progress: Progress<'_>,
    checkpoint: &Checkpoint<'_, CalibStep>,
) -> Result<FitSummary, CalibError> {
    let paired_before = |i: usize| {
        checkpoint.find(|s| match s {
            CalibStep::Paired { index, ns, .. } if *index == i => Some(*ns),
            _ => None,
        })
    };
    let predicted_before = |i: usize| {
        checkpoint.find(|s| match s {
            CalibStep::Predicted { index, ns, .. } if *index == i => Some(*ns),
            _ => None,
        })
    };
    let checked_before = |i: usize| {
        checkpoint.find(|s| match s {
            CalibStep::Checked { index, check } if *index == i => Some(check.clone()),
            _ => None,
        })
    };
    opts.fit.check()?;
    if opts.tlp_checks > MAX_TLP_CHECKS {
        return Err(CalibError::Fit(format!(
            "tlp_checks = {} is outside 0..={MAX_TLP_CHECKS}",
            opts.tlp_checks
        )));
    }
    let mut ms = load_measurements(files, topo)?;
    // no microbenchmark: a user's own nccl-tests log fits NCCL's twin
    let on_log = log_fit_split(&mut ms);
    let chosen = if on_log > 0 {
        &opts.log_params
    } else {
        &opts.params
    };
    // the launch constants in closed form first: every probe's time holds launches
    let launch = launch_constants(&ms);
    let mut start = base.clone();
    let all = crate::fit::catalogue();
    for c in &launch {
        // the catalogue is the one map from a constant's name to its field
        if let Some(f) = all.iter().find(|f| f.name == c.name) {
            (f.set)(&mut start, c.value);
        }
    }
    let base = &start;
    // Pair: every twin is built and simulated once with the starting
    // constants before any fitting, so a measurement that cannot be paired
    // stops the calibration here.
    let offset = crate::twin::timing_offset_ns(&ms);
    let twins: Vec<Option<Twin>> = ms
        .iter()
        .map(|m| {
            build_twin(m, topo).map(|t| {
                t.map(|mut t| {
                    t.timing_offset_ns = offset;
                    t
                })
            })
        })
        .collect::<Result<_, _>>()?;
    progress("pairing", 0, ms.len());
    let paired = std::sync::atomic::AtomicUsize::new(0);
    let default_pred: Vec<Option<f64>> = ms
        .par_iter()
        .zip(twins.par_iter())
        .enumerate()
        .map(|(i, (m, t))| {
            let p = match (paired_before(i), t) {
                (Some(ns), _) => Ok(ns),
                (None, None) => Ok(None),
                (None, Some(t)) => {
                    t.predict(base, opts.fit.fidelity)
                        .map(Some)
                        .map_err(|e| CalibError::Twin {
                            file: m.file.clone(),
                            line: m.line,
                            message: e.to_string(),
                        })
                }
            };
            if let (Ok(ns), None) = (&p, paired_before(i)) {
                checkpoint.record(&CalibStep::Paired {
                    index: i,
                    label: m.label(),
                    ns: *ns,
                });
            }
            let done = paired.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress("pairing", done, ms.len());
            p
        })
        .collect::<Result<_, _>>()?;

    let mut fam_count: BTreeMap<String, usize> = BTreeMap::new();
    for m in ms.iter().filter(|m| m.role == Role::Fit) {
        *fam_count.entry(family(m, topo)).or_default() += 1;
    }
    let mut points = vec![];
    let mut kinds = vec![];
    let mut places = vec![];
    for (m, t) in ms.iter().zip(&twins) {
        if let (Role::Fit, Some(t)) = (&m.role, t) {
            points.push(FitPoint {
                twin: t.clone(),
                measured: m.measured_ns(),
                weight: 1.0 / fam_count[&family(m, topo)] as f64,
            });
            kinds.push(figure_kind(m, topo));
            places.push((m.file.clone(), m.line));
        }
    }
    // the constants the fit points pin (NCCL's step overhead only by
    // NCCL's latency probe, a latency only by what it delays ...): fitted;
    // the others keep their starting values, each with the reason
    let nccl_points = ms.iter().any(|m| {
        m.role == Role::Fit
            && matches!(
                m.kind,
                Kind::Allreduce {
                    algorithm: contend_import::measure::AlgoRef::Nccl,
                    ..
                }
            )
    });
    let decision = if points.is_empty() {
        // no fit point: the fit says so
        guard::Decision {
            fit: chosen.clone(),
            pinning: vec![],
            warnings: vec![],
        }
    } else {
        guard::decide(
            chosen,
            base,
            &points,
            &kinds,
            &places,
            opts.fit.fidelity,
            nccl_points,
            opts.requested,
            opts.force,
        )?
    };
    let fit_params: Vec<FitParam> = decision.fit.clone();
    let mut warnings = decision.warnings.clone();
    // a log's fit points are collectives, each many times a probe's cost:
    // its bootstrap is capped (the summary says how many ran)
    let mut fit_opts = opts.fit.clone();
    if on_log > 0 {
        fit_opts.bootstrap = fit_opts.bootstrap.min(LOG_FIT_BOOTSTRAP);
    }
    let out = fit_resumable(base, &fit_params, &points, &fit_opts, progress, checkpoint)?;
    // a constant on a bound of its search range is the bound's, not the box's
    warnings.extend(guard::check_bounds(
        &out.constants,
        &fit_params,
        opts.force,
    )?);
    // gpu.local_efficiency: local loads at full occupancy, launch removed.
    let mut params = out.params.clone();
    let local_efficiency = local_efficiency(&ms, topo, &params);
    if let Some(c) = &local_efficiency {
        params.gpu.local_efficiency = c.value;
    }

    progress("predicting", 0, ms.len());
    let predicted = std::sync::atomic::AtomicUsize::new(0);
    let fitted_pred: Vec<Option<f64>> = ms
        .par_iter()
        .zip(twins.par_iter())
        .enumerate()
        .map(|(i, (m, t))| {
            let p = match (predicted_before(i), t) {
                (Some(ns), _) => return Ok(ns),
                (None, None) => Ok(None),
                (None, Some(t)) => t
                    .predict(&params, opts.fit.fidelity)
                    .map(Some)
                    .map_err(|e| CalibError::Twin {
                        file: m.file.clone(),
                        line: m.line,
                        message: e.to_string(),
                    }),
            };
            if let Ok(ns) = &p {
                checkpoint.record(&CalibStep::Predicted {
                    index: i,
                    label: m.label(),
                    ns: *ns,
                });
            }
            let done = predicted.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress("predicting", done, ms.len());
            p
        })
        .collect::<Result<_, _>>()?;

    // TLP spot checks: the smallest held-out allreduces and probes.
    let mut cands: Vec<usize> = (0..ms.len())
        .filter(|&i| twins[i].is_some() && ms[i].record.size_bytes <= 1 << 20)
        .filter(|&i| !matches!(ms[i].kind, Kind::VerifyStep { .. }))
        .collect();
    cands.sort_by_key(|&i| (ms[i].record.size_bytes, i));
    let step = (cands.len() / opts.tlp_checks.max(1)).max(1);
    let picked: Vec<usize> = cands
        .iter()
        .step_by(step)
        .take(opts.tlp_checks)
        .copied()
        .collect();
    progress("tlp checks", 0, picked.len());
    let checked = std::sync::atomic::AtomicUsize::new(0);
    let tlp_checks: Vec<TlpCheck> = picked
        .par_iter()
        .filter_map(|&i| {
            if let Some(c) = checked_before(i) {
                return c;
            }
            let t = twins[i].as_ref()?;
            let check = (|| {
                let flow = t.predict(&params, Fidelity::Flow).ok()?;
                let tlp = t.predict(&params, Fidelity::Tlp).ok()?;
                Some(TlpCheck {
                    label: ms[i].label(),
                    flow_ns: flow,
                    tlp_ns: tlp,
                })
            })();
            checkpoint.record(&CalibStep::Checked {
                index: i,
                check: check.clone(),
            });
            let done = checked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress("tlp checks", done, picked.len());
            check
        })
        .collect();

    let skipped = ms
        .iter()
        .filter_map(|m| match &m.role {
            Role::Skipped(why) => Some(format!("{}:{}: {}: {why}", m.file, m.line, m.label())),
            _ => None,
        })
        .collect();
    let points = ms
        .iter()
        .enumerate()
        .map(|(i, m)| PointResult {
            file: m.file.clone(),
            line: m.line,
            label: m.label(),
            role: m.role.clone(),
            kind: m.kind.clone(),
            measured_ns: m.measured_ns(),
            default_ns: default_pred[i],
            fitted_ns: fitted_pred[i],
        })
        .collect();
    Ok(FitSummary {
        topology_name: topo.name.clone(),
        topology_file: topology_file.to_string(),
        machine: ms.iter().find_map(|m| m.record.machine.clone()),
        files: files.iter().map(|p| p.display().to_string()).collect(),
        constants: out.constants,
        local_efficiency,
        launch,
        loss_default: out.loss_default,
        loss_fit: out.loss,
        iterations: out.iterations,
        evaluations: out.evaluations,
        bootstrap: fit_opts.bootstrap,
        fidelity: opts.fit.fidelity,
        points,
        skipped,
        tlp_checks,
        params_toml: params.to_toml(),
        timing_offset_ns: offset,
        pinning: decision.pinning,
        warnings,
    })
}

/// Most bootstrap refits of a fit on an nccl-tests log ([`log_fit_split`]):
/// its points are whole collectives (a 16-rank log to 8 GiB costs about
/// 40 ms of simulation per evaluation), so 24 refits would take minutes.
pub const LOG_FIT_BOOTSTRAP: usize = 8;

/// Most sizes of one nccl-tests run fitted on ([`log_fit_split`]): four
/// constants ([`crate::NCCL_LOG_SUBSET`]) need a few sizes from latency- to
/// bandwidth-bound, and every one costs a whole collective per evaluation.
pub const LOG_FIT_POINTS: usize = 8;

/// When no measurement is a microbenchmark to fit on, a user's own
/// nccl-tests log (text or `-J`) is: in each run (file, ranks, launch
/// mode), the sizes in ascending order are fitted on at an even stride —
/// every other one, or wider so that at most [`LOG_FIT_POINTS`] are — from
/// the first; the others are held out and predicted. Returns how many were
/// made fit points (0: there were microbenchmarks, or no log). Shipped
/// constants are never fitted this way: only files the user passes.
pub fn log_fit_split(ms: &mut [Measurement]) -> usize {
    if ms
        .iter()
        .any(|m| matches!(m.role, Role::Fit | Role::Direct))
    {
        return 0;
    }
    let is_log = |m: &Measurement| {
        matches!(
            m.kind,
            Kind::Allreduce {
                algorithm: contend_import::measure::AlgoRef::Nccl,
                ..
            }
        ) && m.role == Role::HeldOut
            && matches!(
                m.record.extra.import.format.as_deref(),
                Some("nccl-tests" | "nccl-tests-json")
            )
    };
    let mut runs: BTreeMap<(String, Vec<String>, String), Vec<usize>> = BTreeMap::new();
    for (i, m) in ms.iter().enumerate().filter(|(_, m)| is_log(m)) {
        runs.entry((
            m.file.clone(),
            m.record.ranks.clone(),
            m.record.launch.to_string(),
        ))
        .or_default()
        .push(i);
    }
    let mut n = 0;
    for idx in runs.values_mut() {
        idx.sort_by_key(|&i| (ms[i].record.size_bytes, i));
        let stride = idx.len().div_ceil(LOG_FIT_POINTS).max(2);
        for (k, &i) in idx.iter().enumerate() {
            if k % stride == 0 {
                ms[i].role = Role::Fit;
                n += 1;
            }
        }
    }
    n
}

/// `gpu.launch_eager_ns`, `gpu.launch_graph_ns` and
/// `gpu.launch_graph_each_ns`: the median per-launch time of the
/// `launch-eager`, `launch-graph` and `launch-graph-each` probes (each
/// record's per-op times are per launch), with their 5th and 95th
/// percentiles.
fn launch_constants(ms: &[Measurement]) -> Vec<FittedConstant> {
    let mut out = vec![];
    for (op, name, default) in [
        (
            ProbeOp::LaunchEager,
            "gpu.launch_eager_ns",
            ModelParams::default().gpu.launch_eager_ns.get(),
        ),
        (
            ProbeOp::LaunchGraph,
            "gpu.launch_graph_ns",
            ModelParams::default().gpu.launch_graph_ns.get(),
        ),
        (
            ProbeOp::LaunchGraphEach,
            "gpu.launch_graph_each_ns",
            ModelParams::default().gpu.launch_graph_each_ns.get(),
        ),
    ] {
        let v: Vec<f64> = ms
            .iter()
            .filter(|m| matches!(&m.kind, Kind::Launch { op: o, .. } if *o == op))
            .flat_map(|m| m.record.per_op_ns.iter().copied())
            .filter(|x| x.is_finite() && *x > 0.0 && *x <= ModelParams::MAX_NS.get())
            .collect();
        if v.is_empty() {
            continue;
        }
        let mut d = Data::new(v);
        out.push(FittedConstant {
            name: name.into(),
            default,
            value: d.median(),
            lo_bound: 0.0,
            hi_bound: ModelParams::MAX_NS.get(),
            p05: Some(d.percentile(5)),
            p95: Some(d.percentile(95)),
            std: None,
            at_bound: false,
        });
    }
    out
}

/// `gpu.local_efficiency` = local load bandwidth at full occupancy over the
/// topology's memory bandwidth, the fitted launch removed from each time.
fn local_efficiency(
    ms: &[Measurement],
    topo: &Topology,
    params: &ModelParams,
) -> Option<FittedConstant> {
    let mut v = vec![];
    for m in ms {
        if let Kind::Local {
            op: ProbeOp::SmLoad,
            gpu,
            bytes,
            blocks,
        } = &m.kind
        {
            let g = topo.lookup(gpu)?;
            let NodeKind::Gpu(spec) = &topo.node(g).kind else {
                continue;
            };
            if *blocks < spec.sms {
                continue;
            }
            let t = (m.measured_ns() - params.gpu.launch_eager_ns.get()).max(1.0);
            let bw = *bytes as f64 / t; // GB/s
            v.push((bw / spec.memory_bandwidth.as_gbps()).clamp(0.01, 1.0));
        }
    }
    if v.is_empty() {
        return None;
    }
    let mut d = Data::new(v.clone());
    Some(FittedConstant {
        name: "gpu.local_efficiency".into(),
        default: ModelParams::default().gpu.local_efficiency,
        value: d.median(),
        lo_bound: 0.01,
        hi_bound: 1.0,
        p05: Some(d.percentile(5)),
        p95: Some(d.percentile(95)),
        std: None,
        at_bound: false,
    })
}
