//! What a calibration keeps (`fit.json`): every measurement with its
//! predictions, the TLP checks, the fitted constants, and the check every
//! number the report computes with is held to when a summary is read.

use crate::fit::FittedConstant;
use contend_import::measure::{Kind, Role};
use contend_workload::{Fidelity, LaunchMode, Machine, Placement};
use serde::{Deserialize, Serialize};

pub use crate::checkpoint::TlpCheck;

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
    /// `gpu.launch_eager_ns` and `gpu.launch_graph_ns` from the launch
    /// probes (closed form: the median per-launch time), set before the fit
    /// (the starting predictions use them too).
    #[serde(default)]
    pub launch: Vec<FittedConstant>,
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
    /// Every constant the calibration was asked to fit: fitted (from which
    /// fit figures) or left at its starting value, and why
    /// ([`super::guard`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinning: Vec<super::guard::PinChoice>,
    /// What a guard would have refused and `--force` let through.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The longest time a `fit.json` may hold, ns (about 11.6 days): the
/// report's charts and ratios stay finite.
pub const MAX_SUMMARY_NS: f64 = 1e15;

impl FitSummary {
    /// Checks every number the report computes with (times positive and
    /// finite, sizes and kernel shapes inside the scenario limits); returns
    /// the offending field (`points[3].measured_ns`) and why.
    pub fn check(&self) -> Result<(), (String, String)> {
        use contend_workload::limits::{MAX_COLLECTIVES, MAX_SIZE, launchable};
        let time = |f: String, v: f64| {
            if v.is_finite() && v > 0.0 && v <= MAX_SUMMARY_NS {
                Ok(())
            } else {
                Err((
                    f,
                    format!("{v} ns is not a time from above 0 to {MAX_SUMMARY_NS:e} ns"),
                ))
            }
        };
        let finite = |f: String, v: f64| {
            if v.is_finite() {
                Ok(())
            } else {
                Err((f, format!("{v} is not a finite number")))
            }
        };
        let size = |f: String, v: u64| {
            if (1..=MAX_SIZE.0).contains(&v) {
                Ok(())
            } else {
                Err((
                    f,
                    format!("{v} B is outside 1..={} ({MAX_SIZE})", MAX_SIZE.0),
                ))
            }
        };
        let kernel = |f: &str, blocks: u32, threads: u32| {
            if launchable(blocks, threads) {
                Ok(())
            } else {
                Err((
                    f.to_string(),
                    format!("kernel shape {blocks} x {threads} is not launchable"),
                ))
            }
        };
        finite("loss_default".into(), self.loss_default)?;
        finite("loss_fit".into(), self.loss_fit)?;
        finite("timing_offset_ns".into(), self.timing_offset_ns)?;
        let constants = (self.constants.iter().enumerate())
            .map(|(i, c)| (format!("constants[{i}]"), c))
            .chain(
                self.local_efficiency
                    .iter()
                    .map(|c| ("local_efficiency".into(), c)),
            )
            .chain((self.launch.iter().enumerate()).map(|(i, c)| (format!("launch[{i}]"), c)));
        for (name, c) in constants {
            for (x, v) in [
                ("default", Some(c.default)),
                ("value", Some(c.value)),
                ("p05", c.p05),
                ("p95", c.p95),
                ("std", c.std),
            ] {
                if let Some(v) = v {
                    finite(format!("{name}.{x}"), v)?;
                }
            }
        }
        for (i, p) in self.pinning.iter().enumerate() {
            finite(format!("pinning[{i}].start"), p.start)?;
        }
        for (i, p) in self.points.iter().enumerate() {
            let at = |x: &str| format!("points[{i}].{x}");
            time(at("measured_ns"), p.measured_ns)?;
            for (x, v) in [("default_ns", p.default_ns), ("fitted_ns", p.fitted_ns)] {
                if let Some(v) = v {
                    time(at(x), v)?;
                }
            }
            match &p.kind {
                Kind::Probe {
                    streams,
                    bytes,
                    blocks,
                    threads,
                    ..
                } => {
                    if streams.is_empty() {
                        return Err((at("kind.streams"), "a probe has at least one stream".into()));
                    }
                    size(at("kind.bytes"), *bytes)?;
                    kernel(&at("kind.blocks"), *blocks, *threads)?;
                }
                Kind::Local { bytes, .. } => size(at("kind.bytes"), *bytes)?,
                Kind::Launch { .. } => {}
                Kind::Allreduce {
                    ranks,
                    size: z,
                    blocks,
                    threads,
                    ..
                }
                | Kind::VerifyStep {
                    ranks,
                    size: z,
                    blocks,
                    threads,
                    ..
                } => {
                    if ranks.len() < 2 {
                        return Err((
                            at("kind.ranks"),
                            "an allreduce has two ranks or more".into(),
                        ));
                    }
                    size(at("kind.size"), *z)?;
                    kernel(&at("kind.blocks"), *blocks, *threads)?;
                }
            }
            if let Kind::VerifyStep { allreduces, .. } = &p.kind
                && !(1..=MAX_COLLECTIVES).contains(&u64::from(*allreduces))
            {
                return Err((
                    at("kind.allreduces"),
                    format!("{allreduces} is outside 1..={MAX_COLLECTIVES}"),
                ));
            }
        }
        for (i, t) in self.tlp_checks.iter().enumerate() {
            time(format!("tlp_checks[{i}].flow_ns"), t.flow_ns)?;
            time(format!("tlp_checks[{i}].tlp_ns"), t.tlp_ns)?;
        }
        Ok(())
    }
}
