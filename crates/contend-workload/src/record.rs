//! One result schema for the simulator, the hardware backend and NCCL, so
//! every comparison is like for like. Written as JSON (one object per line
//! for measurements: JSON Lines, see [`crate::jsonl`]).
//!
//! Every field is typed: what was measured ([`Measured`]), which resource
//! was busiest ([`Resource`]) and the facts beyond the common fields
//! ([`Extra`]). Their JSON is the flat strings and keys earlier files used,
//! so committed data loads unchanged.

use crate::kinds::WorkloadKind;
use crate::kinds::{Algorithm, Dtype, Fidelity, LaunchMode, Placement, ProbeOp, TransferOp};
use contend_topo::NodeId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Who produced a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The simulator.
    Sim,
    /// The hardware backend's own kernels.
    Hw,
    /// NCCL on hardware.
    Nccl,
}

/// Summary statistics of a set of timings, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub count: u32,
    pub median_ns: f64,
    pub p10_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
}

impl Stats {
    /// Statistics of `values` (nearest-rank percentiles). Empty input gives zeros.
    pub fn of(values: &[f64]) -> Stats {
        if values.is_empty() {
            return Stats::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let pct = |p: f64| -> f64 {
            let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
            v[rank.clamp(1, v.len()) - 1]
        };
        Stats {
            count: v.len().min(u32::MAX as usize) as u32,
            median_ns: pct(50.0),
            p10_ns: pct(10.0),
            p90_ns: pct(90.0),
            p99_ns: pct(99.0),
            min_ns: v[0],
            max_ns: v[v.len() - 1],
        }
    }
}

/// Implements `Serialize`/`Deserialize` through `Display`/`FromStr`: the
/// type is a string in JSON, parsed once when a file is read.
macro_rules! string_serde {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// What a result measured: an allreduce algorithm (contend's, the forced
/// rings, or `nccl`: NCCL's own, simulated or on hardware), a simulated
/// transfer stream, a hardware microbenchmark, or the aggregate of several
/// streams. In JSON the plain name (`one-shot-pull`, `nccl`, `store`,
/// `copy-h2d`, `aggregate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measured {
    Allreduce(Algorithm),
    /// A transfer stream as a scenario writes it (`ping-pong` is always this).
    Transfer(TransferOp),
    /// A hardware probe whose label says more than the stream op (`copy-h2d`).
    Probe(ProbeOp),
    /// The streams of one pattern, or of a whole transfer run, summed
    /// (`extra.pattern` says which; [`AggregateFacts`] the numbers).
    Aggregate,
}

impl Measured {
    pub fn name(self) -> &'static str {
        match self {
            Measured::Allreduce(a) => a.name(),
            Measured::Transfer(t) => t.name(),
            Measured::Probe(p) => p.name(),
            Measured::Aggregate => "aggregate",
        }
    }
    /// NCCL's allreduce (`nccl`).
    pub const NCCL: Measured = Measured::Allreduce(Algorithm::Nccl);

    /// The allreduce algorithm, if this is one.
    pub fn algorithm(self) -> Option<Algorithm> {
        match self {
            Measured::Allreduce(a) => Some(a),
            _ => None,
        }
    }
    /// The hardware probe this record's label names (`ping-pong` included).
    pub fn probe(self) -> Option<ProbeOp> {
        match self {
            Measured::Probe(p) => Some(p),
            Measured::Transfer(TransferOp::PingPong) => Some(ProbeOp::PingPong),
            _ => None,
        }
    }
    /// The record label of a probe: `ping-pong` is written as the transfer op.
    pub fn of_probe(p: ProbeOp) -> Measured {
        match p {
            ProbeOp::PingPong => Measured::Transfer(TransferOp::PingPong),
            p => Measured::Probe(p),
        }
    }
}

impl fmt::Display for Measured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Measured {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "aggregate" {
            return Ok(Measured::Aggregate);
        }
        if let Ok(a) = Algorithm::from_str(s) {
            return Ok(Measured::Allreduce(a));
        }
        if let Ok(t) = TransferOp::from_str(s) {
            return Ok(Measured::Transfer(t));
        }
        if let Ok(p) = ProbeOp::from_str(s) {
            return Ok(Measured::Probe(p));
        }
        let names: Vec<&str> = Algorithm::ALL
            .iter()
            .map(|a| a.name())
            .chain(TransferOp::ALL.iter().map(|t| t.name()))
            .chain(ProbeOp::ALL.iter().map(|p| p.name()))
            .chain(["aggregate"])
            .filter(|n| *n != "ping-pong" || s != "ping-pong")
            .collect();
        Err(format!(
            "unknown algorithm `{s}` (one of: {})",
            dedup(names).join(", ")
        ))
    }
}

fn dedup(v: Vec<&str>) -> Vec<&str> {
    let mut out: Vec<&str> = vec![];
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

string_serde!(Measured);

/// Which way traffic crosses a port or memory stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Way {
    /// Into the CPU (toward memory; into a root port).
    In,
    /// Out of the CPU (from memory; out of a root port).
    Out,
}

/// A resource of the simulated fabric that traffic competes for. In JSON
/// the simulator's channel name (`gpu0->rc0`, `rc0 p2p`, `rc0 to memory`,
/// `rc0 port gpu1 in`, `iod0 fabric`, `rc0~rc1 p2p`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// One direction of a link.
    Link { from: NodeId, to: NodeId },
    /// All P2P forwarding through a root complex.
    RootComplexP2p { rc: NodeId },
    /// A root complex passing traffic to (`In`) or from (`Out`) host memory.
    RootComplexMemory { rc: NodeId, way: Way },
    /// A root complex's forwarding latency (no rate).
    RootComplexForward { rc: NodeId },
    /// P2P entering (`In`) or leaving (`Out`) a root complex by the root
    /// port that leads to `port`.
    RootPort { rc: NodeId, port: NodeId, way: Way },
    /// P2P entering a root complex by the root port that leads to `port`,
    /// bound for the other socket.
    CrossSocketPort { rc: NodeId, port: NodeId },
    /// P2P crossing a socket's I/O-die fabric.
    DieFabric { die: NodeId },
    /// GPU P2P between sockets over the CPU link joining `a` and `b`.
    CrossSocket { a: NodeId, b: NodeId },
}

impl Resource {
    /// The nodes this resource belongs to: both ends of a link, or the root complex.
    pub fn nodes(&self) -> Vec<&NodeId> {
        match self {
            Resource::Link { from, to } => vec![from, to],
            Resource::RootComplexP2p { rc }
            | Resource::RootComplexMemory { rc, .. }
            | Resource::RootComplexForward { rc }
            | Resource::RootPort { rc, .. }
            | Resource::CrossSocketPort { rc, .. } => vec![rc],
            Resource::DieFabric { die } => vec![die],
            Resource::CrossSocket { a, b } => vec![a, b],
        }
    }
    /// What kind of resource it is, for people: `link`, `root port`, ...
    pub fn class(&self) -> &'static str {
        match self {
            Resource::Link { .. } => "link",
            Resource::RootComplexP2p { .. } => "root-complex P2P aggregate",
            Resource::RootComplexMemory { .. } => "root-complex memory path",
            Resource::RootComplexForward { .. } => "root-complex forwarding",
            Resource::RootPort { .. } => "root port",
            Resource::CrossSocketPort { .. } => "root port to the other socket",
            Resource::DieFabric { .. } => "I/O-die fabric",
            Resource::CrossSocket { .. } => "cross-socket P2P",
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let way = |w: &Way| match w {
            Way::In => "in",
            Way::Out => "out",
        };
        let s = match self {
            Resource::Link { from, to } => format!("{from}->{to}"),
            Resource::RootComplexP2p { rc } => format!("{rc} p2p"),
            Resource::RootComplexMemory { rc, way: Way::In } => format!("{rc} to memory"),
            Resource::RootComplexMemory { rc, way: Way::Out } => format!("{rc} from memory"),
            Resource::RootComplexForward { rc } => format!("{rc} forward"),
            Resource::RootPort { rc, port, way: w } => format!("{rc} port {port} {}", way(w)),
            Resource::CrossSocketPort { rc, port } => format!("{rc} port {port} cross"),
            Resource::DieFabric { die } => format!("{die} fabric"),
            Resource::CrossSocket { a, b } => format!("{a}~{b} p2p"),
        };
        f.pad(&s)
    }
}

impl FromStr for Resource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let id = |x: &str| NodeId(x.to_string());
        let bad = || {
            format!(
                "`{s}` names no resource (`a->b`, `rc p2p`, `rc to memory`, `rc from memory`, `rc forward`, `rc port dev in|out|cross`, `die fabric`, `a~b p2p`)"
            )
        };
        if let Some(x) = s.strip_suffix(" p2p") {
            return Ok(match x.split_once('~') {
                Some((a, b)) => Resource::CrossSocket { a: id(a), b: id(b) },
                None => Resource::RootComplexP2p { rc: id(x) },
            });
        }
        if let Some(rc) = s.strip_suffix(" to memory") {
            return Ok(Resource::RootComplexMemory {
                rc: id(rc),
                way: Way::In,
            });
        }
        if let Some(rc) = s.strip_suffix(" from memory") {
            return Ok(Resource::RootComplexMemory {
                rc: id(rc),
                way: Way::Out,
            });
        }
        if let Some(rc) = s.strip_suffix(" forward") {
            return Ok(Resource::RootComplexForward { rc: id(rc) });
        }
        if let Some(die) = s.strip_suffix(" fabric") {
            return Ok(Resource::DieFabric { die: id(die) });
        }
        if let Some((rc, rest)) = s.split_once(" port ") {
            let (port, w) = rest.rsplit_once(' ').ok_or_else(bad)?;
            let way = match w {
                "in" => Way::In,
                "out" => Way::Out,
                "cross" => {
                    return Ok(Resource::CrossSocketPort {
                        rc: id(rc),
                        port: id(port),
                    });
                }
                _ => return Err(bad()),
            };
            return Ok(Resource::RootPort {
                rc: id(rc),
                port: id(port),
                way,
            });
        }
        match s.split_once("->") {
            Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok(Resource::Link {
                from: id(a),
                to: id(b),
            }),
            _ => Err(bad()),
        }
    }
}

string_serde!(Resource);

/// The busiest resource of a simulated run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkUse {
    /// `gpu0->rc0`, `rc0 p2p`.
    pub link: Resource,
    /// Busy fraction over the run, 0..1.
    pub utilisation: f64,
}

/// The machine a measurement was taken on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: String,
    pub gpus: Vec<String>,
    pub pci_addresses: Vec<String>,
    pub driver: String,
    pub cuda: String,
    /// `link_matrix[i][j]`: how GPU i reaches GPU j (`X`, `NV18`, `PIX`, `SYS`, ...).
    pub link_matrix: Vec<Vec<String>>,
    /// PCIe link of each GPU to the host, e.g. `Gen5 x16`.
    pub pcie_links: Vec<String>,
}

/// `extra.group`: the hierarchical kernels' group size, or the label that
/// ties probe streams measured at the same time together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GroupTag {
    Ranks(u32),
    Label(String),
}

/// Simulator facts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SimFacts {
    /// Collectives simulated back to back.
    pub collectives: Option<u64>,
    /// A sentence when an algorithm fell back to another shape.
    pub note: Option<String>,
    /// What bound the run (collectives).
    pub binding: Option<Binding>,
}

/// What bound a simulated collective, read from the fabric while its data
/// moved (`contend_sim`'s `binding` module says how).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Binding {
    /// Launches and barriers took most of each rank's time.
    Sync {
        /// Their share of the ranks' busy time.
        share: f64,
    },
    /// A resource ran near its capacity while data moved.
    Resource {
        resource: Resource,
        /// Busy fraction of the time data moved.
        busy: f64,
    },
    /// Posted writes through a port went at its collapsed rate.
    Collapse {
        resource: Resource,
        /// Share of the port's traffic that went collapsed.
        share: f64,
    },
    /// Cross-socket P2P streams were held by their per-stream cap.
    CrossSocketStream { resource: Resource },
    /// No resource near capacity and loads dominated: reads waited on their
    /// round trips (the outstanding-load window).
    ReadWindow {
        /// The busiest resource's busy fraction while data moved.
        busiest: f64,
    },
    /// No resource near capacity and stores dominated: the stores' issue
    /// rate and latency.
    StoreIssue { busiest: f64 },
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |x: f64| format!("{:.0}%", x * 100.0);
        match self {
            Binding::Sync { share } => {
                write!(f, "launch + barriers ({} of rank time)", pct(*share))
            }
            Binding::Resource { resource, busy } => {
                write!(f, "{} {resource} ({})", resource.class(), pct(*busy))
            }
            Binding::Collapse { resource, share } => write!(
                f,
                "posted-write collapse at {resource} ({} of its writes)",
                pct(*share)
            ),
            Binding::CrossSocketStream { resource } => {
                write!(f, "cross-socket P2P stream cap ({resource})")
            }
            Binding::ReadWindow { busiest } => {
                write!(f, "read window (busiest resource {})", pct(*busiest))
            }
            Binding::StoreIssue { busiest } => {
                write!(f, "store issue (busiest resource {})", pct(*busiest))
            }
        }
    }
}

/// The kernel's launch shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelFacts {
    /// Blocks the scenario allows.
    pub blocks: Option<u32>,
    pub threads: Option<u32>,
    /// Blocks the backend launched for this size.
    pub grid: Option<u32>,
    /// Hierarchical group size (allreduce) or the probe group's label.
    pub group: Option<GroupTag>,
    /// `contend hw run --emulate-ranks`: every rank ran on one GPU, each on
    /// its own stream with its own buffers. The result was checked like any
    /// other; the timing is not a machine's, so calibration, reports and the
    /// TUI leave such records out.
    pub emulated: Option<bool>,
}

impl ResultRecord {
    /// Whether this record comes from `--emulate-ranks` (see
    /// [`KernelFacts::emulated`]).
    pub fn is_emulated(&self) -> bool {
        self.extra.kernel.emulated == Some(true)
    }
    /// Whether NCCL ran with P2P disabled (`NCCL_P2P_DISABLE=1` in the
    /// record's environment), so it staged through host memory. The one
    /// rule calibration (NCCL's placement) and the TUI's overlay (which
    /// simulation a record is laid over) class NCCL records by.
    pub fn nccl_p2p_disabled(&self) -> bool {
        self.extra.nccl.var("NCCL_P2P_DISABLE") == Some("1")
    }
}

/// What a transfer stream or probe did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamFacts {
    /// Node ids of the simulated stream's ends.
    pub from: Option<String>,
    pub to: Option<String>,
    /// Probe target: `host`, `peer` or `local`.
    pub target: Option<String>,
    pub iterations: Option<u32>,
    /// Ping-pong with the barriers' system fences.
    pub fenced: Option<bool>,
    /// Where a ping-pong's flags live (a sentence for people).
    pub flags: Option<String>,
    /// What one per-op entry is (a sentence for people).
    pub per_op: Option<String>,
    /// Streams measured at the same time as this one (itself included).
    pub concurrent_streams: Option<u32>,
    /// The pattern a stream came from, or the streams an aggregate record
    /// sums: a pattern's label (`all-to-all`, `stagger +3`), or `all` for
    /// every stream of the run.
    pub pattern: Option<String>,
    /// When the stream started after the run began, us (absent: at once).
    pub start_us: Option<f64>,
}

/// The numbers of an aggregate record ([`Measured::Aggregate`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AggregateFacts {
    /// Streams summed.
    pub streams: Option<u32>,
    /// Sum of the streams' bandwidths, GB/s (what p2pmark-style tools call
    /// the aggregate; the record's `bandwidth_gbps` is every byte over the
    /// span instead).
    pub aggregate_gbps: Option<f64>,
    /// The slowest stream's bandwidth, the median stream's (nearest rank,
    /// as [`Stats`]) and the fastest's, GB/s.
    pub min_gbps: Option<f64>,
    pub median_gbps: Option<f64>,
    pub max_gbps: Option<f64>,
}

/// How the hardware timed a measurement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimingFacts {
    /// The timing method, for people.
    pub timing: Option<String>,
    pub dtype: Option<Dtype>,
    pub repeats: Option<u32>,
    /// Launches in the batch `total_ns` times.
    pub batch_ops: Option<u32>,
    pub batch_mean_ns: Option<f64>,
    pub sync_median_ns: Option<f64>,
    pub sync_p10_ns: Option<f64>,
    pub sync_p90_ns: Option<f64>,
    pub algbw_gbps: Option<f64>,
    pub busbw_gbps: Option<f64>,
    /// Verification tolerance (relative).
    pub tolerance: Option<f64>,
    pub seed: Option<u64>,
    pub seeds: Option<Vec<u64>>,
    /// Verify steps: allreduces per step, per-allreduce median, whether
    /// compute gaps and skew were applied.
    pub allreduces: Option<u32>,
    pub per_allreduce_median_ns: Option<f64>,
    pub gap_and_skew: Option<bool>,
}

/// Facts of a record imported from another tool's output (`contend
/// import`): nccl-tests text or JSON, p2pBandwidthLatencyTest, nvbandwidth,
/// p2pmark.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportFacts {
    /// The tool: `nccl-tests`, `nccl-tests-json`, `p2pBandwidthLatencyTest`,
    /// `nvbandwidth`, `p2pmark`.
    pub format: Option<String>,
    /// The tool's version as it printed it (`2.17.1`, `v0.8`).
    pub tool_version: Option<String>,
    /// The test that produced the figure (`all_reduce_perf`,
    /// `device_to_device_memcpy_read_ce`, `topology probe +3`).
    pub test: Option<String>,
    /// Hosts the run spans (more than one: not one box).
    pub hosts: Option<Vec<String>>,
    /// What moved the bytes: `copy` (copy engine) or `sm` (kernel loads/stores).
    pub engine: Option<String>,
    /// `write` (the engine's GPU pushes), `read` (it pulls), `bidirectional`.
    pub direction: Option<String>,
    /// What the tool's number is when it is not this stream's own rate
    /// (`mean of 8 concurrent streams`, `half of the bidirectional sum`).
    pub value: Option<String>,
    /// The old nccl-tests `error` column (largest deviation), out of place and in place.
    pub max_error: Option<f64>,
    pub in_place_max_error: Option<f64>,
    /// Elements per rank.
    pub count: Option<u64>,
    /// nccl-tests' type column (`bfloat16`, `float`).
    #[serde(rename = "type")]
    pub element_type: Option<String>,
    pub redop: Option<String>,
    pub in_place_us: Option<f64>,
    pub in_place_algbw_gbps: Option<f64>,
    pub in_place_busbw_gbps: Option<f64>,
    pub in_place_wrong: Option<u64>,
}

/// NCCL's version, the `NCCL_*` environment a run used, and NCCL's
/// decisions for the call: the replica's in a simulated `nccl` record,
/// what NCCL printed (`NCCL_DEBUG=INFO`) in a hardware one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NcclFacts {
    pub nccl_version: Option<String>,
    /// `NCCL_*` variables and their values (`NCCL_P2P_DISABLE = "1"`).
    pub env: BTreeMap<String, String>,
    /// Transport per connection, channels, algorithm and protocol
    /// (`extra.nccl_decisions`).
    pub decisions: Option<contend_nccl::CallFacts>,
    /// The decisions in a line for people (`extra.nccl_line`).
    pub line: Option<String>,
    /// The tuner plugin NCCL's log says it loaded, or why not, and the
    /// lines contend's plugin logged (`extra.nccl_tuner`).
    pub tuner: Option<contend_nccl::log::LogTuner>,
}

impl NcclFacts {
    /// The value of an `NCCL_*` variable.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }
}

/// Everything a record says beyond the common fields. Serialized as one
/// flat JSON object with sorted keys (the `extra` of earlier files);
/// unknown keys are an error, except `NCCL_*` environment variables.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extra {
    pub sim: SimFacts,
    pub kernel: KernelFacts,
    pub stream: StreamFacts,
    pub aggregate: AggregateFacts,
    pub timing: TimingFacts,
    pub import: ImportFacts,
    pub nccl: NcclFacts,
}

/// The derive-able mirror of [`Extra`]: one flat struct per section.
#[derive(Serialize, Deserialize)]
struct ExtraWire {
    #[serde(flatten)]
    sim: SimFacts,
    #[serde(flatten)]
    kernel: KernelFacts,
    #[serde(flatten)]
    stream: StreamFacts,
    #[serde(flatten)]
    aggregate: AggregateFacts,
    #[serde(flatten)]
    timing: TimingFacts,
    #[serde(flatten)]
    import: ImportFacts,
    nccl_version: Option<String>,
    nccl_decisions: Option<contend_nccl::CallFacts>,
    nccl_line: Option<String>,
    nccl_tuner: Option<contend_nccl::log::LogTuner>,
    /// What no section took: `NCCL_*` variables only.
    #[serde(flatten)]
    rest: BTreeMap<String, serde_json::Value>,
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let wire = ExtraWire {
            sim: self.sim.clone(),
            kernel: self.kernel.clone(),
            stream: self.stream.clone(),
            aggregate: self.aggregate.clone(),
            timing: self.timing.clone(),
            import: self.import.clone(),
            nccl_version: self.nccl.nccl_version.clone(),
            nccl_decisions: self.nccl.decisions.clone(),
            nccl_line: self.nccl.line.clone(),
            nccl_tuner: self.nccl.tuner.clone(),
            rest: self
                .nccl
                .env
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                .collect(),
        };
        // One flat object, absent facts left out, keys sorted (serde_json's
        // map is ordered), as earlier files wrote it.
        let v = serde_json::to_value(&wire).map_err(serde::ser::Error::custom)?;
        let flat: BTreeMap<String, serde_json::Value> = match v {
            serde_json::Value::Object(m) => m.into_iter().filter(|(_, v)| !v.is_null()).collect(),
            _ => BTreeMap::new(),
        };
        flat.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = ExtraWire::deserialize(d)?;
        let mut env = BTreeMap::new();
        for (k, v) in w.rest {
            if !k.starts_with("NCCL_") {
                return Err(serde::de::Error::custom(format!(
                    "unknown field `extra.{k}`"
                )));
            }
            let v = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            env.insert(k, v);
        }
        Ok(Extra {
            sim: w.sim,
            kernel: w.kernel,
            stream: w.stream,
            aggregate: w.aggregate,
            timing: w.timing,
            import: w.import,
            nccl: NcclFacts {
                nccl_version: w.nccl_version,
                env,
                decisions: w.nccl_decisions,
                line: w.nccl_line,
                tuner: w.nccl_tuner,
            },
        })
    }
}

impl Extra {
    /// The key path (`extra.grid`) of the first value in `v` (a record's
    /// `extra` object) that does not deserialize, for error messages.
    pub(crate) fn bad_key(v: &serde_json::Value) -> Option<String> {
        fn first<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<String> {
            serde_path_to_error::deserialize::<_, T>(v)
                .err()
                .map(|e| format!("extra.{}", e.path()))
        }
        first::<SimFacts>(v)
            .or_else(|| first::<KernelFacts>(v))
            .or_else(|| first::<StreamFacts>(v))
            .or_else(|| first::<AggregateFacts>(v))
            .or_else(|| first::<TimingFacts>(v))
            .or_else(|| first::<ImportFacts>(v))
            .or_else(|| {
                let d = v.get("nccl_decisions").filter(|d| !d.is_null())?;
                serde_path_to_error::deserialize::<_, contend_nccl::CallFacts>(d)
                    .err()
                    .map(|e| format!("extra.nccl_decisions.{}", e.path()))
            })
            .or_else(|| {
                let known = serde_json::to_value(ExtraWire {
                    sim: SimFacts::default(),
                    kernel: KernelFacts::default(),
                    stream: StreamFacts::default(),
                    aggregate: AggregateFacts::default(),
                    timing: TimingFacts::default(),
                    import: ImportFacts::default(),
                    nccl_version: None,
                    nccl_decisions: None,
                    nccl_line: None,
                    nccl_tuner: None,
                    rest: BTreeMap::new(),
                })
                .ok()?;
                v.as_object()?
                    .keys()
                    .find(|k| known.get(k.as_str()).is_none() && !k.starts_with("NCCL_"))
                    .map(|k| format!("extra.{k}"))
            })
    }
}

/// One result: a collective at one size (or a verify step, or a transfer)
/// with one algorithm, placement and fidelity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    pub source: Source,
    pub scenario: String,
    pub topology: String,
    pub workload: WorkloadKind,
    /// The algorithm (`one-shot-pull`, ...), `nccl`, or the transfer op.
    pub algorithm: Measured,
    pub placement: Option<Placement>,
    pub fidelity: Option<Fidelity>,
    pub launch: LaunchMode,
    pub ranks: Vec<String>,
    /// Bytes per collective (or per transfer stream).
    pub size_bytes: u64,
    /// Wall time of the whole workload (all collectives), ns.
    pub total_ns: f64,
    /// Time of each collective (or each repeat), ns.
    pub per_op_ns: Vec<f64>,
    pub stats: Stats,
    /// Achieved bandwidth where it means something (transfers), GB/s.
    pub bandwidth_gbps: Option<f64>,
    /// Hardware: whether every rank's output matched the CPU reference.
    pub verified: Option<bool>,
    /// Simulator: events processed.
    pub events: Option<u64>,
    /// Simulator: wall time spent simulating, ns (not deterministic).
    pub wall_ns: Option<u64>,
    pub busiest_link: Option<LinkUse>,
    pub machine: Option<Machine>,
    /// Facts beyond the common fields (kernel shape, timing method, notes).
    #[serde(default)]
    pub extra: Extra,
}

impl ResultRecord {
    /// The aggregate of transfer-stream records (one pattern's, or a whole
    /// run's): `extra.aggregate_gbps` the sum of their bandwidths, the
    /// slowest, median and fastest stream, the stream count; `size_bytes`
    /// every byte they moved, `total_ns` from the first start to the last
    /// finish and `bandwidth_gbps` the one over the other (below the sum
    /// when streams end at different times); one `per_op_ns` entry per
    /// stream (its own time).
    /// Records without a bandwidth (ping-pong) are left out; `None` when no
    /// record has one. The common fields come from the first record.
    pub fn aggregate(pattern: &str, streams: &[&ResultRecord]) -> Option<ResultRecord> {
        let with_bw: Vec<&ResultRecord> = streams
            .iter()
            .copied()
            .filter(|r| r.bandwidth_gbps.is_some())
            .collect();
        let first = *with_bw.first()?;
        let mut bw: Vec<f64> = with_bw.iter().filter_map(|r| r.bandwidth_gbps).collect();
        let sum = round3(bw.iter().sum());
        bw.sort_by(f64::total_cmp);
        let median = bw[(bw.len().div_ceil(2)).max(1) - 1];
        let start = |r: &ResultRecord| r.extra.stream.start_us.unwrap_or(0.0) * 1e3;
        let begin = with_bw
            .iter()
            .map(|r| start(r))
            .fold(f64::INFINITY, f64::min);
        let end = with_bw
            .iter()
            .map(|r| start(r) + r.total_ns)
            .fold(0.0, f64::max);
        let per_op: Vec<f64> = with_bw.iter().map(|r| r.total_ns).collect();
        let bytes = with_bw.iter().fold(0u64, |b, r| {
            b.saturating_add(r.size_bytes.saturating_mul(r.per_op_ns.len().max(1) as u64))
        });
        let mut extra = Extra::default();
        extra.stream.pattern = Some(pattern.to_string());
        extra.aggregate = AggregateFacts {
            streams: Some(with_bw.len().min(u32::MAX as usize) as u32),
            aggregate_gbps: Some(sum),
            min_gbps: Some(bw[0]),
            median_gbps: Some(median),
            max_gbps: Some(bw[bw.len() - 1]),
        };
        let span = end - begin;
        Some(ResultRecord {
            algorithm: Measured::Aggregate,
            size_bytes: bytes,
            total_ns: round3(span),
            stats: Stats::of(&per_op),
            per_op_ns: per_op,
            bandwidth_gbps: Some(round3(bytes as f64 / span.max(1e-9))),
            verified: None,
            machine: None,
            extra,
            ..first.clone()
        })
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Stats::of(&v);
        assert_eq!(
            (s.median_ns, s.p10_ns, s.p90_ns, s.p99_ns),
            (50.0, 10.0, 90.0, 99.0)
        );
        assert_eq!((s.min_ns, s.max_ns, s.count), (1.0, 100.0, 100));
        assert_eq!(Stats::of(&[]).count, 0);
        assert_eq!(Stats::of(&[7.0]).p99_ns, 7.0);
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for s in [
            "one-shot-pull",
            "nccl",
            "store",
            "ping-pong",
            "copy-h2d",
            "sm-load",
            "copy-read",
            "aggregate",
        ] {
            assert_eq!(Measured::from_str(s).unwrap().to_string(), s);
        }
        assert_eq!(
            Measured::from_str("ping-pong").unwrap().probe(),
            Some(ProbeOp::PingPong)
        );
        assert!(
            Measured::from_str("three-shot")
                .unwrap_err()
                .contains("unknown algorithm `three-shot`")
        );
        for s in [
            "gpu0->rc0",
            "rc0 p2p",
            "rc1 to memory",
            "rc1 from memory",
            "rc0 forward",
            "rc0 port sw0 in",
            "rc2 port gpu3 out",
            "iod0 fabric",
            "rc0~rc1 p2p",
        ] {
            assert_eq!(Resource::from_str(s).unwrap().to_string(), s);
        }
        assert!(Resource::from_str("gpu0").is_err());
    }

    #[test]
    fn extra_keeps_flat_sorted_keys_and_rejects_unknown_ones() {
        let text = r#"{"threads":512,"NCCL_P2P_DISABLE":"1","blocks":132,"group":2,"batch_mean_ns":7.5,"nccl_version":"2.28.3"}"#;
        let e: Extra = serde_json::from_str(text).unwrap();
        assert_eq!(e.kernel.blocks, Some(132));
        assert_eq!(e.kernel.emulated, None);
        let em: Extra = serde_json::from_str(r#"{"emulated":true,"grid":4}"#).unwrap();
        assert_eq!(em.kernel.emulated, Some(true));
        assert_eq!(
            serde_json::to_string(&em).unwrap(),
            r#"{"emulated":true,"grid":4}"#
        );
        assert_eq!(e.kernel.group, Some(GroupTag::Ranks(2)));
        assert_eq!(e.nccl.var("NCCL_P2P_DISABLE"), Some("1"));
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"NCCL_P2P_DISABLE":"1","batch_mean_ns":7.5,"blocks":132,"group":2,"nccl_version":"2.28.3","threads":512}"#
        );
        let bad = serde_json::from_str::<Extra>(r#"{"blocks":1,"colour":"red"}"#).unwrap_err();
        assert!(
            bad.to_string().contains("unknown field `extra.colour`"),
            "{bad}"
        );
        // out of range for the field's type: an error, never a truncation
        assert!(serde_json::from_str::<Extra>(r#"{"grid":4294967297}"#).is_err());
    }

    fn stream(bw: Option<f64>, total_ns: f64, start_us: Option<f64>) -> ResultRecord {
        ResultRecord {
            source: Source::Sim,
            scenario: "s".into(),
            topology: "t".into(),
            workload: WorkloadKind::Transfer,
            algorithm: Measured::Transfer(TransferOp::Copy),
            placement: None,
            fidelity: Some(Fidelity::Flow),
            launch: LaunchMode::Eager,
            ranks: vec![],
            size_bytes: 1000,
            total_ns,
            per_op_ns: vec![total_ns / 2.0; 2],
            stats: Stats::default(),
            bandwidth_gbps: bw,
            verified: None,
            events: Some(7),
            wall_ns: None,
            busiest_link: None,
            machine: None,
            extra: Extra {
                stream: StreamFacts {
                    start_us,
                    ..StreamFacts::default()
                },
                ..Extra::default()
            },
        }
    }

    #[test]
    fn aggregates_sum_streams_and_span_their_offsets() {
        let (a, b, c) = (
            stream(Some(2.0), 1000.0, None),
            stream(Some(4.0), 500.0, Some(1.0)),
            stream(None, 100.0, None), // a ping-pong: no bandwidth, left out
        );
        let agg = ResultRecord::aggregate("p", &[&a, &b, &c]).unwrap();
        let f = &agg.extra.aggregate;
        assert_eq!(agg.algorithm, Measured::Aggregate);
        assert_eq!(
            (
                f.streams,
                f.aggregate_gbps,
                f.min_gbps,
                f.median_gbps,
                f.max_gbps
            ),
            (Some(2), Some(6.0), Some(2.0), Some(2.0), Some(4.0))
        );
        // 2 repeats x 1000 B each; from 0 to 1 us + 500 ns
        assert_eq!((agg.size_bytes, agg.total_ns), (4000, 1500.0));
        assert_eq!(agg.bandwidth_gbps, Some(2.667));
        assert_eq!(agg.per_op_ns, [1000.0, 500.0]);
        assert_eq!(agg.events, Some(7));
        assert_eq!(agg.extra.stream.pattern.as_deref(), Some("p"));
        assert!(ResultRecord::aggregate("p", &[&c]).is_none());
        // the record round-trips through JSON with its new keys
        let text = serde_json::to_string(&agg).unwrap();
        assert!(text.contains(r#""aggregate_gbps":6.0"#) && text.contains(r#""pattern":"p""#));
        assert_eq!(serde_json::from_str::<ResultRecord>(&text).unwrap(), agg);
    }
}
