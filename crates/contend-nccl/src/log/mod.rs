//! `NCCL_DEBUG=INFO` logs: what NCCL printed about its decisions, as typed
//! records. The line formats follow the `INFO(...)` calls of NCCL's sources
//! (v2.18–v2.29: `src/init.cc` version, ranks, trees and channel counts;
//! `src/graph/rings.cc` ring order; `src/transport/p2p.cc` and `shm.cc`
//! transports; `src/graph/search.cc` graphs; `src/graph/topo.cc` and
//! `paths.cc` the topology dump (`NCCL_DEBUG_SUBSYS=GRAPH`);
//! `src/graph/tuning.cc` the model table and `src/enqueue.cc` the per-call
//! choice (`NCCL_DEBUG_SUBSYS=TUNING`), in each version's format).
//!
//! Lines are found by their `NCCL INFO` text wherever it sits in the line,
//! so host/pid/thread prefixes, MPI or Ray prefixes and unrelated output
//! are skipped. A line that starts like a decision but does not parse is an
//! error naming file and line.

use crate::paths::PathType;
use crate::tuning::{Algorithm, Protocol};
use serde::{Deserialize, Serialize};

/// The NCCL release that wrote the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// As printed (`2.28.3+cuda12.9`).
    pub text: String,
}

/// A rank as its init line reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogRank {
    pub rank: usize,
    pub nranks: usize,
    pub cuda_dev: Option<usize>,
    pub nvml_dev: Option<usize>,
    /// PCI bus ID as NCCL prints it (`4e000`).
    pub bus_id: Option<String>,
}

/// A ring as rank 0 prints it (`Channel 00/02 :  0 1 2 3`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogRing {
    pub channel: usize,
    pub n_channels: usize,
    pub order: Vec<usize>,
    /// NCCL cut the line at 128 characters.
    pub truncated: bool,
}

/// How NCCL connected one rank to a peer on one channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogConnection {
    pub channel: usize,
    /// The connection index after the slash (`Channel 00/1`), if printed.
    pub conn_index: Option<usize>,
    pub from: usize,
    pub to: usize,
    /// The device or bus ID printed in brackets.
    pub from_dev: String,
    pub to_dev: String,
    pub transport: LogTransport,
    /// `[send]` / `[receive]` for network connections.
    pub direction: Option<String>,
    /// The text after `via`.
    pub label: String,
}

/// The transport of a connection line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum LogTransport {
    P2p {
        /// `direct pointer`, `CUMEM`, `IPC`, `indirect`, …
        mechanism: String,
        read: bool,
        copy_engine: bool,
    },
    Shm {
        /// `direct/direct`, `CE/direct`, …
        mode: String,
    },
    Net {
        name: String,
    },
    CollNet,
    Other(String),
}

impl LogTransport {
    /// `P2P`, `SHM`, `NET`, …
    pub fn kind(&self) -> &str {
        match self {
            LogTransport::P2p { .. } => "P2P",
            LogTransport::Shm { .. } => "SHM",
            LogTransport::Net { .. } => "NET",
            LogTransport::CollNet => "COLLNET",
            LogTransport::Other(s) => s,
        }
    }
}

/// A rank's trees (`Trees [0] 1/-1/-1->0->-1 …`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogTrees {
    pub rank: usize,
    /// Per channel: (children, parent).
    pub channels: Vec<(Vec<usize>, Option<usize>)>,
}

/// `N coll channels, … p2p channels per peer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LogChannelCounts {
    pub coll: usize,
    pub collnet: Option<usize>,
    pub nvls: Option<usize>,
    pub p2p: usize,
    pub p2p_per_peer: usize,
}

/// A search result (`Pattern 4, crossNic 0, nChannels 1, bw 5.0/5.0, type SYS/PIX, sameChannels 1`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogGraph {
    pub pattern: u8,
    pub cross_nic: u8,
    pub n_channels: usize,
    pub bw_intra: f32,
    pub bw_inter: f32,
    pub type_intra: PathType,
    pub type_inter: PathType,
    pub same_channels: bool,
    /// Each channel's GPUs as printed (`GPU/0`, `GPU/0-4e000`).
    pub channels: Vec<Vec<String>>,
}

/// One line of the topology dump (`+ PCI[24.0] - GPU/0-4e000 (0)`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogTopoLine {
    pub depth: usize,
    /// `None` for a root (`CPU/0-0 (1/1/2)`).
    pub link: Option<(String, f32)>,
    /// `CPU/0-0`, `PCI/0-4b000`, `GPU/0-4e000`.
    pub node: String,
    /// The parenthesised detail (`1/1/2`, `0`, `1000c0101000100b`).
    pub detail: Option<String>,
}

/// One GPU's paths (`GPU/CE000 :GPU/0-4e000 (5/10.0/SYS) …`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogPaths {
    pub from: String,
    /// (node, hops, bw, type).
    pub to: Vec<(String, usize, f32, PathType)>,
}

/// NCCL's AllReduce model table (`NCCL_DEBUG_SUBSYS=TUNING`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogModel {
    /// (algorithm, protocol, latency µs, bandwidth GB/s).
    pub entries: Vec<(Algorithm, Protocol, f32, f32)>,
}

/// One call's choice (`AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE …`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogCall {
    pub function: Option<String>,
    pub bytes: u64,
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    pub channels: Option<(usize, usize)>,
    pub time_us: Option<f32>,
}

/// `nvidia-smi topo -m`, if the log holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TopoMatrix {
    pub labels: Vec<String>,
    /// Row label → cells (one per column label).
    pub rows: Vec<(String, Vec<String>)>,
}

impl TopoMatrix {
    /// The cell between `GPUa` and `GPUb`.
    pub fn get(&self, a: &str, b: &str) -> Option<&str> {
        let col = self.labels.iter().position(|l| l == b)?;
        let row = self.rows.iter().find(|(l, _)| l == a)?;
        row.1.get(col).map(|s| s.as_str())
    }
}

/// NCCL's tuner plugin as its log tells it (`src/plugin/tuner.cc`,
/// `src/plugin/tuner/tuner_v5.cc`, `src/plugin/plugin_open.cc`, NVIDIA/nccl
/// v2.28.3-1; INIT and TUNING lines), and the lines contend's own plugin
/// (`crates/contend-tuner`) logged through NCCL.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogTuner {
    /// `TUNER/Plugin: Using NAME (vN)`: the plugin's name and ABI version.
    pub name: Option<String>,
    pub abi: Option<u32>,
    /// `Successfully loaded external tuner plugin PATH` (printed when
    /// `NCCL_TUNER_PLUGIN` named it).
    pub loaded_from: Option<String>,
    /// Why none loaded: `External tuner plugin X is unsupported`,
    /// `TUNER/Plugin: Could not find: …`, `TUNER/Plugin: X: <dlerror>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// The lines of contend's plugin (`contend-tuner: …`), each once, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contend: Vec<String>,
}

impl LogTuner {
    /// Whether NCCL took a plugin.
    pub fn loaded(&self) -> bool {
        self.name.is_some() || self.loaded_from.is_some()
    }
    /// Whether the log says anything about a tuner plugin.
    pub fn is_empty(&self) -> bool {
        *self == LogTuner::default()
    }
}

/// Everything the parser found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NcclLog {
    pub version: Option<LogVersion>,
    pub ranks: Vec<LogRank>,
    /// `NAME set by environment to value`.
    pub env: Vec<(String, String)>,
    pub rings: Vec<LogRing>,
    /// `Ring 00 : 7 -> 0 -> 1` (GRAPH): (channel, prev, rank, next).
    pub ring_neighbours: Vec<(usize, usize, usize, usize)>,
    pub connections: Vec<LogConnection>,
    pub trees: Vec<LogTrees>,
    pub channel_counts: Option<LogChannelCounts>,
    pub graphs: Vec<LogGraph>,
    /// `=== System : maxBw … totalBw … ===`.
    pub system_bw: Option<(f32, f32)>,
    /// The first topology dump.
    pub topology: Vec<LogTopoLine>,
    pub paths: Vec<LogPaths>,
    pub model: Option<LogModel>,
    pub calls: Vec<LogCall>,
    /// `P2P is disabled between connected GPUs a and b`.
    pub p2p_disabled: Vec<(usize, usize)>,
    /// `Could not find a path for pattern N, falling back to simple order`.
    pub search_fallbacks: Vec<u8>,
    pub topo_matrix: Option<TopoMatrix>,
    /// `threadThresholds t/t/t | r/r/r | …`: Tree then Ring, LL/LL128/Simple.
    pub thread_thresholds: Option<([u64; 3], [u64; 3])>,
    pub warnings: Vec<String>,
    /// The tuner plugin NCCL loaded, or why not.
    pub tuner: LogTuner,
}

impl NcclLog {
    /// The number of ranks the log reports.
    pub fn n_ranks(&self) -> Option<usize> {
        self.ranks
            .first()
            .map(|r| r.nranks)
            .or_else(|| self.rings.first().map(|r| r.order.len()))
    }
    /// The ring graph (pattern 4) and tree graph (pattern 1, 2 or 3), if printed.
    pub fn ring_graph(&self) -> Option<&LogGraph> {
        self.graphs.iter().find(|g| g.pattern == 4)
    }
    pub fn tree_graph(&self) -> Option<&LogGraph> {
        self.graphs.iter().find(|g| (1..=3).contains(&g.pattern))
    }
    /// The transport kinds seen per ordered pair of ranks.
    pub fn pair_transports(&self) -> Vec<(usize, usize, String)> {
        let mut v: Vec<(usize, usize, String)> = self
            .connections
            .iter()
            .map(|c| (c.from, c.to, c.transport.kind().to_string()))
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

mod lines;
mod parse;
#[cfg(test)]
mod tests;

pub use self::parse::parse;
