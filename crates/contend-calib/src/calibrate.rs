//! The whole calibration: load and pair measurements, fit on the
//! microbenchmarks, predict the held-out allreduces and verify steps with the
//! default and the fitted constants, check a few points at TLP fidelity, and
//! keep everything the report needs in one serialisable summary (`fit.json`).

use crate::error::CalibError;
use crate::fit::{FitOptions, FitParam, FitPoint, FittedConstant, Progress, fit};
use crate::measure::{Kind, Measurement, ProbeOp, Role, load_measurements};
use crate::twin::{Twin, build_twin};
use contend_sim::ModelParams;
use contend_topo::{NodeKind, Topology};
use contend_workload::{Fidelity, LaunchMode, Machine, Placement};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use statrs::statistics::{Data, OrderStatistics};
use std::collections::BTreeMap;
use std::path::Path;

/// One measurement with its predictions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PointResult {
    pub file: String,
    pub line: usize,
    pub label: String,
    pub role: Role,
    pub kind: Kind,
    pub measured_ns: f64,
    /// Predictions with the starting (default) and the fitted constants, flow fidelity.
    pub default_ns: Option<f64>,
    pub fitted_ns: Option<f64>,
}

impl PointResult {
    /// `(workload, algorithm, placement, size, launch)` for held-out points.
    pub fn collective(&self) -> Option<(&'static str, &'static str, Placement, u64, LaunchMode)> {
        match &self.kind {
            Kind::Allreduce {
                algorithm,
                placement,
                size,
                launch,
                dtype,
                ..
            } => Some((
                if *dtype == contend_workload::Dtype::Bf16 {
                    "allreduce"
                } else {
                    "allreduce-fp32"
                },
                algorithm.name(),
                *placement,
                *size,
                *launch,
            )),
            Kind::VerifyStep {
                algorithm,
                placement,
                size,
                launch,
                ..
            } => Some(("verify-step", algorithm.name(), *placement, *size, *launch)),
            _ => None,
        }
    }
}

/// A flow-fidelity prediction checked against the TLP reference.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TlpCheck {
    pub label: String,
    pub flow_ns: f64,
    pub tlp_ns: f64,
}

/// Everything a calibration produced (written as `fit.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FitSummary {
    pub topology_name: String,
    pub topology_file: String,
    pub machine: Option<Machine>,
    pub files: Vec<String>,
    pub constants: Vec<FittedConstant>,
    /// `gpu.local_efficiency` from the local-memory probes (closed form).
    pub local_efficiency: Option<FittedConstant>,
    pub loss_default: f64,
    pub loss_fit: f64,
    pub iterations: u64,
    pub evaluations: usize,
    pub bootstrap: usize,
    pub fidelity: Fidelity,
    pub points: Vec<PointResult>,
    pub skipped: Vec<String>,
    pub tlp_checks: Vec<TlpCheck>,
    /// The fitted constants as a params file.
    pub params_toml: String,
    /// What the probes' per-op timing adds (events between launches), ns,
    /// estimated from records timed both ways; added to SM probe twins.
    #[serde(default)]
    pub timing_offset_ns: f64,
}

/// Options of [`calibrate`].
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    pub fit: FitOptions,
    pub params: Vec<FitParam>,
    /// Points checked at TLP fidelity after the fit.
    pub tlp_checks: usize,
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

/// Runs the whole calibration.
pub fn calibrate(
    files: &[&Path],
    topo: &Topology,
    topology_file: &str,
    base: &ModelParams,
    opts: &CalibrateOptions,
    progress: Progress<'_>,
) -> Result<FitSummary, CalibError> {
    let ms = load_measurements(files, topo)?;
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
    let default_pred: Vec<Option<f64>> = ms
        .par_iter()
        .zip(twins.par_iter())
        .map(|(m, t)| match t {
            None => Ok(None),
            Some(t) => t
                .predict(base, opts.fit.fidelity)
                .map(Some)
                .map_err(|e| CalibError::Twin {
                    file: m.file.clone(),
                    line: m.line,
                    message: e,
                }),
        })
        .collect::<Result<_, _>>()?;
    progress("pairing", ms.len(), ms.len());

    let mut fam_count: BTreeMap<String, usize> = BTreeMap::new();
    for m in ms.iter().filter(|m| m.role == Role::Fit) {
        *fam_count.entry(family(m, topo)).or_default() += 1;
    }
    let mut points = vec![];
    let mut point_of = vec![None; ms.len()];
    for (i, (m, t)) in ms.iter().zip(&twins).enumerate() {
        if let (Role::Fit, Some(t)) = (&m.role, t) {
            point_of[i] = Some(points.len());
            points.push(FitPoint {
                twin: t.clone(),
                measured_ns: m.measured_ns(),
                weight: 1.0 / fam_count[&family(m, topo)] as f64,
            });
        }
    }
    let out = fit(base, &opts.params, &points, &opts.fit, progress)?;
    // gpu.local_efficiency: local loads at full occupancy, launch removed.
    let mut params = out.params.clone();
    let local_efficiency = local_efficiency(&ms, topo, &params);
    if let Some(c) = &local_efficiency {
        params.gpu.local_efficiency = c.value;
    }

    let fitted_pred: Vec<Option<f64>> = ms
        .par_iter()
        .zip(twins.par_iter())
        .map(|(m, t)| match t {
            None => Ok(None),
            Some(t) => t
                .predict(&params, opts.fit.fidelity)
                .map(Some)
                .map_err(|e| CalibError::Twin {
                    file: m.file.clone(),
                    line: m.line,
                    message: e,
                }),
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
    let tlp_checks: Vec<TlpCheck> = picked
        .par_iter()
        .filter_map(|&i| {
            let t = twins[i].as_ref()?;
            let flow = t.predict(&params, Fidelity::Flow).ok()?;
            let tlp = t.predict(&params, Fidelity::Tlp).ok()?;
            Some(TlpCheck {
                label: ms[i].label(),
                flow_ns: flow,
                tlp_ns: tlp,
            })
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
    let _ = point_of;
    Ok(FitSummary {
        topology_name: topo.name.clone(),
        topology_file: topology_file.to_string(),
        machine: ms.iter().find_map(|m| m.record.machine.clone()),
        files: files.iter().map(|p| p.display().to_string()).collect(),
        constants: out.constants,
        local_efficiency,
        loss_default: out.loss_default,
        loss_fit: out.loss,
        iterations: out.iterations,
        evaluations: out.evaluations,
        bootstrap: opts.fit.bootstrap,
        fidelity: opts.fit.fidelity,
        points,
        skipped,
        tlp_checks,
        params_toml: params.to_toml(),
        timing_offset_ns: offset,
    })
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
            let t = (m.measured_ns() - params.gpu.launch_eager_ns).max(1.0);
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
