//! The simulated twin of a measurement: the same topology, ranks, placement,
//! algorithm, size, kernel shape and launch mode, as a scenario the
//! simulator runs, and the number from its result that matches the measured
//! one.
//!
//! Two adaptations, both stated in the report:
//! - the simulator's transfer streams model no kernel launch, while the
//!   hardware's per-op time of an SM probe (CUDA events between back-to-back
//!   launches) holds one: the twin adds `gpu.launch_eager_ns` to SM probes;
//! - a host-to-device copy is twinned by its mirror, device to host
//!   (measured within 1 % of each other), as the shipped calibration was
//!   fitted; the simulator's `copy-read` from host memory (its copy engine
//!   reading, H2D as the GPU sees it) is the direct twin, left for the next
//!   refit. A peer pull (`copy-peer-read`) is twinned by `copy-read`.

use contend_import::CalibError;
use contend_import::measure::{AlgoRef, Kind, Measurement, ProbeOp, Role};
use contend_nccl::NcclVersion;
use contend_sim::{ModelParams, RunSpec, simulate_one};
use contend_topo::{Bytes, Picos, Topology};
use contend_workload::{
    Algorithm, Fidelity, KernelConfig, NcclSetup, Placement, Scenario, ScenarioSpec, Skew, Stream,
    TransferOp, VerifyStep, Workload,
};

/// Ping-pong round trips the twin runs (the per-round-trip time is steady
/// after the first few; the hardware ran 1000).
const TWIN_PING_PONGS: u32 = 20;
/// Allreduces back to back in the twin of one allreduce measurement.
const TWIN_REPEATS: u32 = 3;

/// A scenario and which of its results is the measurement's twin.
#[derive(Clone, Debug)]
pub struct Twin {
    pub scenario: Scenario,
    what: What,
    /// What the probes' timing method adds to a kernel's time, ns: the
    /// probes time each launch between CUDA events, which stops the next
    /// launch from overlapping the previous kernel (see
    /// [`timing_offset_ns`]). Added to SM probe twins only.
    pub timing_offset_ns: f64,
}

/// The cost of the per-op timing method, estimated from the measurements
/// themselves: the median gap between the per-op median (events between
/// launches) and the batch mean (events only at the ends) of every record
/// that has both. A property of the measuring, not of the model: it uses no
/// prediction, so the held-out split stays honest.
pub fn timing_offset_ns(ms: &[Measurement]) -> f64 {
    let mut gaps: Vec<f64> = ms
        .iter()
        .filter_map(|m| {
            let b = m.record.extra.timing.batch_mean_ns?;
            let d = m.record.stats.median_ns - b;
            d.is_finite().then_some(d)
        })
        .collect();
    if gaps.is_empty() {
        return 0.0;
    }
    gaps.sort_by(f64::total_cmp);
    gaps[gaps.len() / 2].max(0.0)
}

#[derive(Clone, Debug)]
enum What {
    /// The first stream's time (plus one launch for SM kernels).
    Stream { kernel: bool },
    /// The median allreduce time; the fastest of the algorithms (one: the
    /// measured kernel, or `nccl` — what NCCL decides under the record's
    /// version and variables).
    Allreduce {
        algorithms: Vec<Algorithm>,
        placement: Placement,
        size: Bytes,
    },
    /// The whole verify step.
    Verify {
        algorithms: Vec<Algorithm>,
        placement: Placement,
    },
}

fn algorithms(a: AlgoRef) -> Vec<Algorithm> {
    match a {
        AlgoRef::Custom(a) => vec![a],
        AlgoRef::Nccl => vec![Algorithm::Nccl],
    }
}

/// The NCCL release and environment a record ran under, for the `nccl`
/// twin: its `nccl_version` (the nearest replicated release line) and its
/// `NCCL_*` variables (those the replica does not model kept as notes, as
/// NCCL ignores what it does not know; a malformed value is an error).
fn nccl_setup(r: &contend_workload::ResultRecord) -> Result<NcclSetup, String> {
    let mut s = NcclSetup::default();
    if let Some(v) = &r.extra.nccl.nccl_version {
        let mut parts = v.trim_start_matches('v').split(['.', '-', '+']);
        let major = parts.next().and_then(|p| p.parse::<u32>().ok());
        let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
        match (major, minor) {
            (Some(a), Some(b)) => s.version = NcclVersion::nearest(a, b).0,
            _ => return Err(format!("nccl_version `{v}` is not a release number")),
        }
    }
    for (k, v) in &r.extra.nccl.env {
        s.env.set(k, v).map_err(|e| e.to_string())?;
    }
    Ok(s)
}

/// The twin of `m` on `topo`, or `None` for measurements that are not
/// simulated (closed-form and skipped ones).
pub fn build_twin(m: &Measurement, topo: &Topology) -> Result<Option<Twin>, CalibError> {
    if matches!(m.role, Role::Direct | Role::Skipped(_)) {
        return Ok(None);
    }
    let fail = |message: String| CalibError::Twin {
        file: m.file.clone(),
        line: m.line,
        message,
    };
    let node = |id: &str| {
        topo.lookup(id)
            .ok_or_else(|| fail(format!("`{id}` is not a node of topology `{}`", topo.name)))
    };
    let ranks_of = |ids: &[String]| ids.iter().map(|r| node(r)).collect::<Result<Vec<_>, _>>();
    let (spec, what) = match &m.kind {
        Kind::Local { .. } | Kind::Launch { .. } => return Ok(None),
        Kind::Probe {
            op,
            streams,
            bytes,
            blocks,
            threads,
            iterations,
            fenced,
            host_flags,
        } => {
            let (sim_op, iterations) = match op {
                ProbeOp::CopyH2d | ProbeOp::CopyD2h | ProbeOp::CopyPeer => (TransferOp::Copy, 1),
                ProbeOp::CopyPeerRead => (TransferOp::CopyRead, 1),
                ProbeOp::SmLoad => (TransferOp::Load, 1),
                ProbeOp::SmStore => (TransferOp::Store, 1),
                ProbeOp::PingPong => (
                    TransferOp::PingPong,
                    (*iterations).clamp(1, TWIN_PING_PONGS),
                ),
                // classified as an allreduce (NCCL) or a launch, never a stream
                ProbeOp::NcclLatency
                | ProbeOp::LaunchEager
                | ProbeOp::LaunchGraph
                | ProbeOp::LaunchGraphEach => {
                    return Err(fail(format!("`{op}` is not a transfer probe")));
                }
            };
            let kernel = KernelConfig {
                blocks: *blocks,
                threads: *threads,
            };
            let streams = streams
                .iter()
                .map(|s| {
                    Ok(Stream {
                        from: node(&s.from)?,
                        to: node(&s.to)?,
                        op: sim_op,
                        bytes: Bytes(*bytes),
                        kernel,
                        iterations,
                        fence: *fenced,
                        host_flags: *host_flags,
                        start: Picos::ZERO,
                        repeat: 1,
                    })
                })
                .collect::<Result<Vec<_>, CalibError>>()?;
            let mut spec = ScenarioSpec::new(
                "twin",
                topo.clone(),
                Workload::Transfer {
                    streams,
                    patterns: vec![],
                },
            );
            spec.kernel = kernel;
            (
                spec,
                What::Stream {
                    kernel: op.is_kernel(),
                },
            )
        }
        Kind::Allreduce {
            algorithm,
            placement,
            ranks,
            size,
            blocks,
            threads,
            dtype,
            launch,
        } => {
            let algs = algorithms(*algorithm);
            let workload = Workload::Allreduce {
                sizes: vec![Bytes(*size)],
                dtype: *dtype,
                repeats: TWIN_REPEATS,
                gap: Picos::ZERO,
                skew: Skew::None,
            };
            let spec = ScenarioSpec {
                ranks: ranks_of(ranks)?,
                algorithms: algs.clone(),
                placements: vec![*placement],
                launch: *launch,
                seed: 1,
                kernel: KernelConfig {
                    blocks: *blocks,
                    threads: *threads,
                },
                ..ScenarioSpec::new("twin", topo.clone(), workload)
            };
            (
                spec,
                What::Allreduce {
                    algorithms: algs,
                    placement: *placement,
                    size: Bytes(*size),
                },
            )
        }
        Kind::VerifyStep {
            algorithm,
            placement,
            ranks,
            size,
            allreduces,
            blocks,
            threads,
            dtype,
            launch,
        } => {
            let algs = algorithms(*algorithm);
            let (layers, per) = if allreduces % 2 == 0 {
                (allreduces / 2, 2)
            } else {
                (*allreduces, 1)
            };
            let elems = size / dtype.size();
            if elems * dtype.size() != *size {
                return Err(fail(format!(
                    "{size} B is not a whole number of {dtype} elements"
                )));
            }
            let workload = Workload::VerifyStep(VerifyStep {
                layers,
                allreduces_per_layer: per,
                hidden: elems,
                tokens: 1,
                dtype: *dtype,
                gap: Picos::ZERO,
                skew: Skew::None,
            });
            let spec = ScenarioSpec {
                ranks: ranks_of(ranks)?,
                algorithms: algs.clone(),
                placements: vec![*placement],
                launch: *launch,
                seed: 1,
                kernel: KernelConfig {
                    blocks: *blocks,
                    threads: *threads,
                },
                ..ScenarioSpec::new("twin", topo.clone(), workload)
            };
            (
                spec,
                What::Verify {
                    algorithms: algs,
                    placement: *placement,
                },
            )
        }
    };
    let mut spec = spec;
    if spec.algorithms.contains(&Algorithm::Nccl) {
        spec.nccl = nccl_setup(&m.record).map_err(fail)?;
    }
    let scenario = Scenario::new(spec).map_err(|e| fail(e.to_string()))?;
    Ok(Some(Twin {
        scenario,
        what,
        timing_offset_ns: 0.0,
    }))
}

/// Why a twin's time could not be predicted, by variant.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    /// The simulator refused or failed the twin's run.
    #[error(transparent)]
    Sim(#[from] contend_sim::SimError),
    /// A size too large to simulate slice by slice could not be extended.
    #[error(transparent)]
    LargeSize(#[from] contend_sim::large_size::LargeSizeError),
    /// The run produced no record the twin reads.
    #[error("the twin produced no record")]
    NoRecord,
    /// The figure's readout met a count or a value it cannot read
    /// (`figure_twin.rs`): what it met.
    #[error("the twin produced {records} stream records for {streams} streams")]
    StreamCount { records: usize, streams: usize },
    #[error("the twin's {what} is {value}")]
    NotPositive { what: &'static str, value: f64 },
}

impl Twin {
    /// The twin's time under `params`, ns.
    pub fn predict(&self, params: &ModelParams, fidelity: Fidelity) -> Result<f64, PredictError> {
        self.predict_ns(params, fidelity)
    }

    fn predict_ns(&self, params: &ModelParams, fidelity: Fidelity) -> Result<f64, PredictError> {
        let sc = &self.scenario;
        match &self.what {
            What::Stream { kernel } => {
                let spec = RunSpec {
                    algorithm: None,
                    placement: Placement::Peer,
                    fidelity,
                    size: None,
                };
                let run = simulate_one(sc, params, spec)?;
                let t = run
                    .records
                    .first()
                    .and_then(|r| r.per_op_ns.first().copied())
                    .ok_or(PredictError::NoRecord)?;
                Ok(t + if *kernel {
                    params.gpu.launch_eager_ns.get() + self.timing_offset_ns
                } else {
                    0.0
                })
            }
            // NCCL twins list both ring protocols: the faster one stands for NCCL
            What::Allreduce {
                algorithms,
                placement,
                size,
            } => fastest(
                sc,
                params,
                algorithms,
                *placement,
                fidelity,
                Some(*size),
                |r| r.stats.median_ns,
            ),
            What::Verify {
                algorithms,
                placement,
            } => fastest(sc, params, algorithms, *placement, fidelity, None, |r| {
                r.total_ns
            }),
        }
    }
}

/// The smallest `metric` over `algorithms` run on the twin's scenario.
fn fastest(
    sc: &Scenario,
    params: &ModelParams,
    algorithms: &[Algorithm],
    placement: Placement,
    fidelity: Fidelity,
    size: Option<Bytes>,
    metric: contend_sim::large_size::Metric,
) -> Result<f64, PredictError> {
    let mut best = f64::INFINITY;
    // the Simple ring first: past the size where it beats LL's byte bound,
    // LL is not simulated (it cannot be the faster one)
    let mut order = algorithms.to_vec();
    order.sort_by_key(|a| *a != Algorithm::RingSimple);
    for a in order {
        if let Some(s) = size
            && best.is_finite()
            && matches!(a, Algorithm::RingLl | Algorithm::RingSimple)
            && contend_sim::large_size::ring_lower_bound_ns(sc, a, s) >= best
        {
            continue;
        }
        let t = match size {
            // a ring past its slice limit is extended from two sizes
            Some(s) => contend_sim::large_size::allreduce_time(
                sc,
                params,
                a,
                placement,
                fidelity,
                s,
                metric,
                contend_sim::large_size::MAX_DIRECT_SLICES,
            )?,
            None => {
                let spec = RunSpec {
                    algorithm: Some(a),
                    placement,
                    fidelity,
                    size,
                };
                let run = simulate_one(sc, params, spec)?;
                metric(run.record())
            }
        };
        best = best.min(t);
    }
    Ok(best)
}
