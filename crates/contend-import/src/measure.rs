//! Loading measurements: the hardware backend's JSON Lines and nccl-tests
//! text logs, each record checked against the topology it is said to come
//! from and classified (microbenchmark to fit on, allreduce or verify step
//! to hold out). Bad input is an error naming `file:line`; nothing is
//! skipped silently, so a fit never runs on data that failed a check.
//! What other tools measured passes [`physics`] twice: at import against
//! any machine, and here against the links of the topology's box.

use crate::error::CalibError;
pub use crate::jsonl::parse_jsonl;
use contend_topo::{NodeKind, Topology};
use contend_workload::GroupTag;
pub use contend_workload::ProbeOp;
use contend_workload::limits::launchable;
use contend_workload::{
    Algorithm, Dtype, FlagMemory, LaunchMode, Measured, Placement, ResultRecord, Source,
    WorkloadKind,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

mod check;
pub mod physics;
mod ranks;
use check::{check_machine, check_numbers, gpu_of, target_of};

/// An allreduce algorithm as measured: one of contend's kernels, or NCCL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AlgoRef {
    Custom(Algorithm),
    Nccl,
}

impl AlgoRef {
    pub fn name(self) -> &'static str {
        match self {
            AlgoRef::Custom(a) => a.name(),
            AlgoRef::Nccl => "nccl",
        }
    }
    /// The allreduce a record measured, if it is one.
    pub fn of(m: Measured) -> Option<AlgoRef> {
        match m {
            Measured::Allreduce(Algorithm::Nccl) => Some(AlgoRef::Nccl),
            Measured::Allreduce(a) => Some(AlgoRef::Custom(a)),
            _ => None,
        }
    }
}

/// One stream of a transfer microbenchmark, by node id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeStream {
    pub from: String,
    pub to: String,
}

/// What a measurement is, with everything its simulated twin needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Kind {
    /// A transfer between a GPU and host memory or another GPU.
    Probe {
        op: ProbeOp,
        /// This record's stream first, then the streams that ran at the same time.
        streams: Vec<ProbeStream>,
        bytes: u64,
        blocks: u32,
        threads: u32,
        iterations: u32,
        /// Ping-pong with the barriers' system fences (`extra.fenced`).
        fenced: bool,
        /// GPU-GPU ping-pong with both flags in host memory (`extra.flags`
        /// says host memory), each GPU polling its own over PCIe.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        host_flags: bool,
    },
    /// SM loads or stores of the GPU's own memory (closed-form fit of
    /// `gpu.local_efficiency`; the simulator has no local transfer stream).
    Local {
        op: ProbeOp,
        gpu: String,
        bytes: u64,
        blocks: u32,
    },
    /// Kernel launches on one GPU, back to back (`launch-eager`) or
    /// replayed as a CUDA graph (`launch-graph`): the per-launch cost, a
    /// constant in closed form (`gpu.launch_eager_ns`, `gpu.launch_graph_ns`).
    Launch { op: ProbeOp, gpu: String },
    /// An allreduce at one size (repeated back to back).
    Allreduce {
        algorithm: AlgoRef,
        placement: Placement,
        ranks: Vec<String>,
        size: u64,
        blocks: u32,
        threads: u32,
        dtype: Dtype,
        launch: LaunchMode,
    },
    /// An EAGLE verify step: `allreduces` allreduces of `size` bytes back to back.
    VerifyStep {
        algorithm: AlgoRef,
        placement: Placement,
        ranks: Vec<String>,
        size: u64,
        allreduces: u32,
        blocks: u32,
        threads: u32,
        dtype: Dtype,
        launch: LaunchMode,
    },
}

/// How calibration uses a measurement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A microbenchmark: the fit minimises its error.
    Fit,
    /// Fitted in closed form (local memory bandwidth).
    Direct,
    /// An allreduce or verify step: predicted, never fitted on.
    HeldOut,
    /// A known microbenchmark that the simulator cannot express (the reason).
    Skipped(String),
}

/// One measured result, where it came from, and what it is.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub file: String,
    pub line: usize,
    pub record: ResultRecord,
    pub kind: Kind,
    pub role: Role,
}

impl Measurement {
    /// The measured time the model is compared with, ns: for allreduce
    /// sweeps the batch mean (`extra.batch_mean_ns`: back-to-back launches
    /// timed at the ends, the nccl-tests way — the per-op median carries ~3 us
    /// of event overhead between kernels that no machine has in service and
    /// the model does not simulate); otherwise the median per-op time (one
    /// transfer, one round trip, one verify step).
    pub fn measured_ns(&self) -> f64 {
        self.record
            .extra
            .timing
            .batch_mean_ns
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(self.record.stats.median_ns)
    }
    /// Short label: `sm-load host 256 MiB 4x512`, `one-shot-pull host 42 KiB`.
    pub fn label(&self) -> String {
        match &self.kind {
            Kind::Probe {
                op,
                streams,
                bytes,
                blocks,
                fenced,
                host_flags,
                ..
            } => {
                let conc = if *fenced {
                    " fenced".to_string()
                } else if *host_flags {
                    " host flags".to_string()
                } else if streams.len() > 1 {
                    format!(" x{} concurrent", streams.len())
                } else {
                    String::new()
                };
                let blk = if op.is_kernel() {
                    format!(" {blocks} blocks")
                } else {
                    String::new()
                };
                format!(
                    "{} {}->{} {}{blk}{conc}",
                    op.name(),
                    streams[0].from,
                    streams[0].to,
                    contend_topo::Bytes(*bytes)
                )
            }
            Kind::Local {
                op, gpu, blocks, ..
            } => format!("{} {gpu} local {blocks} blocks", op.name()),
            Kind::Launch { op, gpu } => format!("{} {gpu}", op.name()),
            Kind::Allreduce {
                algorithm,
                placement,
                size,
                dtype,
                ..
            } => format!(
                "{} {placement} {} {dtype}",
                algorithm.name(),
                contend_topo::Bytes(*size)
            ),
            Kind::VerifyStep {
                algorithm,
                placement,
                launch,
                allreduces,
                ..
            } => format!(
                "verify-step {} {placement} {launch} ({allreduces} allreduces)",
                algorithm.name()
            ),
        }
    }
}

/// Loads every file (contend's JSON Lines, or the output of any tool
/// [`crate::import`] reads: nccl-tests text or `-J` JSON,
/// p2pBandwidthLatencyTest, nvbandwidth, p2pmark), checks every record
/// against `topo`, and joins concurrent probe streams. The first problem is
/// an error; what an importer leaves out is listed by `contend import`.
pub fn load_measurements(paths: &[&Path], topo: &Topology) -> Result<Vec<Measurement>, CalibError> {
    let mut all = vec![];
    for p in paths {
        let name = p.display().to_string();
        let recs = read_records(p)?;
        all.extend(classify(&name, recs, topo)?);
    }
    Ok(all)
}

/// The records of one measurements file, each with its line, as
/// calibration reads them (and the TUI's overlay, through the same call):
/// `*.jsonl` and `*.json` are contend's JSON Lines unless they hold
/// nccl-tests' `-J` JSON; anything else is the output of a tool
/// [`crate::import`] reads. A file without a record is an error.
pub fn read_records(p: &Path) -> Result<Vec<(usize, ResultRecord)>, CalibError> {
    let name = p.display().to_string();
    let text = contend_topo::bounded_read::read_text(p).map_err(CalibError::Read)?;
    let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
    let tool = crate::import::detect(&text);
    let recs =
        if (ext == "jsonl" || ext == "json") && tool != Some(crate::import::Tool::NcclTestsJson) {
            parse_jsonl(&name, &text)?
        } else {
            crate::import::import_text(&name, &text)?.records
        };
    if recs.is_empty() {
        return Err(CalibError::File {
            file: name,
            message: "holds no measurements".into(),
        });
    }
    Ok(recs)
}

/// NCCL's small-message latency probe: an NCCL allreduce of a few bytes
/// over two GPUs or more, fitted on (its twin the `nccl` algorithm under
/// the record's NCCL version and variables); over one GPU NCCL moves no
/// data, so there is nothing to fit.
fn nccl_latency(r: &ResultRecord, topo: &Topology) -> Result<(Kind, Role), String> {
    for id in &r.ranks {
        gpu_of(topo, id)?;
    }
    if r.size_bytes == 0 {
        return Err("an allreduce of zero bytes".into());
    }
    let kind = Kind::Allreduce {
        algorithm: AlgoRef::Nccl,
        placement: Placement::Peer,
        ranks: r.ranks.clone(),
        size: r.size_bytes,
        // NCCL's own grid: the twin's lowering sets it
        blocks: 1,
        threads: 512,
        dtype: r.extra.timing.dtype.unwrap_or(Dtype::Fp32),
        launch: r.launch,
    };
    let role = if r.ranks.len() < 2 {
        Role::Skipped(
            "NCCL latency over one GPU: NCCL moves no data, the simulator has nothing to time"
                .into(),
        )
    } else {
        Role::Fit
    };
    Ok((kind, role))
}

/// Checks and classifies the records of one file.
pub fn classify(
    file: &str,
    recs: Vec<(usize, ResultRecord)>,
    topo: &Topology,
) -> Result<Vec<Measurement>, CalibError> {
    let mut out = vec![];
    for (line, r) in recs {
        let err = |message: String| CalibError::Record {
            file: file.to_string(),
            line,
            message,
        };
        let (kind, role) = classify_one(&r, topo).map_err(err)?;
        // the physics again, against this box's own links
        if physics::applies(&r) {
            physics::check_record(&r, physics::Bounds::Box(topo)).map_err(|message| {
                CalibError::Impossible {
                    file: file.to_string(),
                    line,
                    column: None,
                    message: message.0,
                }
            })?;
        }
        out.push(Measurement {
            file: file.to_string(),
            line,
            record: r,
            kind,
            role,
        });
    }
    // after every record's own checks: an impossible number is the first
    // thing to fix, where the ranks ran the next
    ranks::place_ranks(&mut out, topo)?;
    join_concurrent(file, &mut out)?;
    Ok(out)
}

fn classify_one(r: &ResultRecord, topo: &Topology) -> Result<(Kind, Role), String> {
    if r.source == Source::Sim {
        return Err("source is `sim`: a simulator result, not a measurement".into());
    }
    if r.verified == Some(false) {
        return Err(format!(
            "{} {} failed verification: its timing must not be used",
            r.algorithm, r.size_bytes
        ));
    }
    let med = r.stats.median_ns;
    if !(med.is_finite() && med > 0.0) {
        return Err(format!(
            "field `stats.median_ns`: median time {med} ns is not a positive number"
        ));
    }
    check_numbers(r)?;
    if r.is_emulated() {
        return Ok(emulated(r));
    }
    check_machine(r, topo)?;
    let need = |key: &str, v: Option<u32>| {
        v.ok_or_else(|| {
            format!(
                "`{}` record without `extra.{key}`: cannot build its simulated twin",
                r.algorithm
            )
        })
    };
    if let Some(op) = r.algorithm.probe().filter(|o| o.is_launch()) {
        let gpu = r
            .ranks
            .first()
            .ok_or_else(|| format!("a `{op}` record names no GPU"))?;
        gpu_of(topo, gpu)?;
        return Ok((
            Kind::Launch {
                op,
                gpu: gpu.clone(),
            },
            Role::Direct,
        ));
    }
    if r.algorithm == Measured::Probe(ProbeOp::NcclLatency) {
        return nccl_latency(r, topo);
    }
    match r.workload {
        WorkloadKind::Transfer => {
            let op = r.algorithm.probe().ok_or_else(|| {
                format!(
                    "unknown transfer probe `{}` (one of: {})",
                    r.algorithm,
                    ProbeOp::ALL
                        .iter()
                        .map(|o| o.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            if r.ranks.len() != 2 {
                return Err(format!(
                    "a transfer names two endpoints, this one has {:?}",
                    r.ranks
                ));
            }
            let g = gpu_of(topo, &r.ranks[0])?;
            let (blocks, threads) = if op.is_kernel() {
                (
                    need("blocks", r.extra.kernel.blocks)?,
                    need("threads", r.extra.kernel.threads)?,
                )
            } else {
                (1, 32)
            };
            if r.ranks[0] == r.ranks[1] {
                if !op.is_kernel() {
                    return Err(format!("a `{}` from a GPU to itself", r.algorithm));
                }
                return Ok((
                    Kind::Local {
                        op,
                        gpu: r.ranks[0].clone(),
                        bytes: r.size_bytes,
                        blocks,
                    },
                    Role::Direct,
                ));
            }
            let to = target_of(topo, g, &r.ranks[1])?;
            let flags_in_host = r.extra.stream.flags == Some(FlagMemory::Host);
            let to_gpu = matches!(
                topo.lookup(&to).map(|i| &topo.node(i).kind),
                Some(NodeKind::Gpu(_))
            );
            // a GPU-host ping-pong keeps its flags in host memory anyway
            let host_flags = op == ProbeOp::PingPong && flags_in_host && to_gpu;
            // A CPU thread answers a GPU-host ping-pong: the GPU's flag
            // lands, the CPU sees it and answers, the GPU's polls find the
            // answer. The simulator has no CPU side; its twin (the flag
            // written, then read back) leaves out the CPU's answer and the
            // GPU's polling, and a fit on it takes them for PCIe latency.
            // The GPU-GPU ping-pong with both flags in host memory times
            // the same flag path (GPU stores and polls over PCIe) without
            // the CPU.
            let role = if op == ProbeOp::PingPong && !to_gpu {
                Role::Skipped(
                    "GPU-host ping-pong: a CPU thread answers, which the simulator does not model (its twin, a flag written and read back, has no CPU answer and no polling); the GPU-GPU ping-pong with flags in host memory times the flag path"
                        .into(),
                )
            } else {
                Role::Fit
            };
            if r.size_bytes == 0 {
                return Err("a transfer of zero bytes".into());
            }
            Ok((
                Kind::Probe {
                    op,
                    streams: vec![ProbeStream {
                        from: r.ranks[0].clone(),
                        to,
                    }],
                    bytes: r.size_bytes,
                    blocks,
                    threads,
                    iterations: r.extra.stream.iterations.unwrap_or(1),
                    fenced: r.extra.stream.fenced.unwrap_or(false),
                    host_flags,
                },
                role,
            ))
        }
        WorkloadKind::Allreduce | WorkloadKind::VerifyStep => {
            let algorithm = AlgoRef::of(r.algorithm).ok_or_else(|| {
                format!(
                    "unknown algorithm `{}` (one of: {}, nccl)",
                    r.algorithm,
                    Algorithm::ALL
                        .iter()
                        .map(|a| a.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            if r.ranks.len() < 2 {
                return Err(format!(
                    "an allreduce needs two ranks or more, got {:?}",
                    r.ranks
                ));
            }
            if r.ranks.len() > topo.gpus().len() {
                return Err(format!(
                    "topology mismatch: {} ranks measured, topology `{}` has {} GPUs",
                    r.ranks.len(),
                    topo.name,
                    topo.gpus().len()
                ));
            }
            for id in &r.ranks {
                gpu_of(topo, id)?;
            }
            let placement = match (algorithm, r.placement) {
                (_, Some(p)) => p,
                // NCCL picks its own path: P2P (NVLink or PCIe) unless told not to,
                // then it stages through host memory.
                (AlgoRef::Nccl, None) => {
                    if r.nccl_p2p_disabled() {
                        Placement::Host
                    } else {
                        Placement::Peer
                    }
                }
                (AlgoRef::Custom(a), None) => {
                    return Err(format!("`{a}` record without a placement"));
                }
            };
            let (blocks, threads) = match algorithm {
                // The backend launches `grid` blocks (fewer than asked for small messages).
                AlgoRef::Custom(_) => (
                    r.extra
                        .kernel
                        .grid
                        .or(r.extra.kernel.blocks)
                        .ok_or_else(|| {
                            format!(
                                "`{}` record without `extra.grid` or `extra.blocks`",
                                r.algorithm
                            )
                        })?,
                    need("threads", r.extra.kernel.threads)?,
                ),
                // NCCL runs one block of 512 threads per channel and opens
                // many channels on NVLink (16 is typical on H100/H200 pairs;
                // NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS move it).
                AlgoRef::Nccl => (16, 512),
            };
            if !launchable(blocks, threads) {
                return Err(format!(
                    "kernel shape {blocks} x {threads} is not launchable"
                ));
            }
            let dtype = r.extra.timing.dtype.unwrap_or(Dtype::Bf16);
            if r.size_bytes == 0 {
                return Err("an allreduce of zero bytes".into());
            }
            let ranks = r.ranks.clone();
            if r.workload == WorkloadKind::Allreduce {
                Ok((
                    Kind::Allreduce {
                        algorithm,
                        placement,
                        ranks,
                        size: r.size_bytes,
                        blocks,
                        threads,
                        dtype,
                        launch: r.launch,
                    },
                    Role::HeldOut,
                ))
            } else {
                let allreduces = r.extra.timing.allreduces.unwrap_or(122);
                if allreduces == 0 {
                    return Err("a verify step of zero allreduces".into());
                }
                Ok((
                    Kind::VerifyStep {
                        algorithm,
                        placement,
                        ranks,
                        size: r.size_bytes,
                        allreduces,
                        blocks,
                        threads,
                        dtype,
                        launch: r.launch,
                    },
                    Role::HeldOut,
                ))
            }
        }
    }
}

/// A record of `contend hw run --emulate-ranks`: every rank ran on one GPU,
/// so its timing says nothing about the machine the topology describes. It
/// is kept (and listed with the reason) but never fitted on nor predicted;
/// its ranks are not the topology's GPUs, so nothing is checked against it.
fn emulated(r: &ResultRecord) -> (Kind, Role) {
    let why = format!(
        "emulated: {} ranks ran concurrently on one GPU (`hw run --emulate-ranks`), a correctness check whose timing is not the machine's",
        r.ranks.len()
    );
    let kind = Kind::Allreduce {
        algorithm: AlgoRef::of(r.algorithm).unwrap_or(AlgoRef::Nccl),
        placement: r.placement.unwrap_or(Placement::Peer),
        ranks: r.ranks.clone(),
        size: r.size_bytes,
        blocks: r.extra.kernel.grid.or(r.extra.kernel.blocks).unwrap_or(1),
        threads: r.extra.kernel.threads.unwrap_or(32),
        dtype: r.extra.timing.dtype.unwrap_or(Dtype::Bf16),
        launch: r.launch,
    };
    (kind, Role::Skipped(why))
}

/// Streams measured at the same time (`extra.concurrent_streams` > 1) are
/// one scenario: each record's twin runs all of them. A group whose size
/// does not match `concurrent_streams` means a record is missing.
fn join_concurrent(file: &str, ms: &mut [Measurement]) -> Result<(), CalibError> {
    type Key = (String, Measured, u64, u32, String);
    let mut groups: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    for (i, m) in ms.iter().enumerate() {
        let n = m.record.extra.stream.concurrent_streams.unwrap_or(1);
        if n > 1 && matches!(m.kind, Kind::Probe { .. }) {
            let group = match &m.record.extra.kernel.group {
                Some(GroupTag::Label(l)) => l.clone(),
                Some(GroupTag::Ranks(k)) => k.to_string(),
                None => String::new(),
            };
            let key = (
                group,
                m.record.algorithm,
                m.record.size_bytes,
                n,
                m.record.scenario.clone(),
            );
            groups.entry(key).or_default().push(i);
        }
    }
    for ((_, alg, size, n, _), idx) in groups {
        if !(idx.len() as u64).is_multiple_of(u64::from(n)) {
            let m = &ms[idx[0]];
            return Err(CalibError::Record {
                file: file.to_string(),
                line: m.line,
                message: format!(
                    "`{alg}` {size} B ran as {n} concurrent streams, but {} record(s) of that run are in the file (truncated?)",
                    idx.len()
                ),
            });
        }
        for chunk in idx.chunks(n as usize) {
            let all: Vec<ProbeStream> = chunk
                .iter()
                .filter_map(|&i| match &ms[i].kind {
                    Kind::Probe { streams, .. } => streams.first().cloned(),
                    _ => None,
                })
                .collect();
            for &i in chunk {
                if let Kind::Probe { streams, .. } = &mut ms[i].kind {
                    let me = streams[0].clone();
                    *streams = std::iter::once(me.clone())
                        .chain(all.iter().filter(|s| **s != me).cloned())
                        .collect();
                }
            }
        }
    }
    Ok(())
}
