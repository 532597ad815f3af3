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

use crate::error::LogError;
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

struct Cx<'a> {
    file: &'a str,
    line: usize,
    text: &'a str,
}

impl Cx<'_> {
    fn err(&self, message: impl Into<String>) -> LogError {
        LogError {
            file: self.file.to_string(),
            line: self.line,
            message: message.into(),
            text: self.text.trim_end().to_string(),
        }
    }
}

fn num<T: std::str::FromStr>(cx: &Cx, s: &str, what: &str) -> Result<T, LogError> {
    s.trim()
        .parse()
        .map_err(|_| cx.err(format!("{what} `{s}` is not a number")))
}

fn after<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    s.find(key).map(|i| &s[i + key.len()..])
}

fn first_token(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or("")
}

/// Parses a log's text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<NcclLog, LogError> {
    let mut log = NcclLog::default();
    // The graph whose channel lines follow, per printing thread (the text
    // before `NCCL INFO`): threads interleave in multi-GPU logs.
    let mut pending_graph: Vec<(String, usize)> = Vec::new();
    let mut model_algos: Vec<Algorithm> = Vec::new();
    let mut model: Vec<(Algorithm, Protocol, f32, f32)> = Vec::new();
    let mut matrix: Option<TopoMatrix> = None;
    for (i, raw) in text.lines().enumerate() {
        let cx = Cx {
            file,
            line: i + 1,
            text: raw,
        };
        // nvidia-smi topo -m, pasted beside the log.
        let trimmed = raw.trim();
        if trimmed.starts_with("GPU0") && trimmed.split_whitespace().nth(1) == Some("GPU1") {
            let labels: Vec<String> = trimmed
                .split_whitespace()
                .take_while(|t| !t.starts_with("CPU"))
                .map(String::from)
                .collect();
            matrix = Some(TopoMatrix {
                labels,
                rows: vec![],
            });
            continue;
        }
        if let Some(m) = matrix.as_mut() {
            let mut toks = trimmed.split_whitespace();
            if let Some(label) = toks.next()
                && m.labels.iter().any(|l| l == label)
                && !trimmed.contains("NCCL")
            {
                let cells: Vec<String> = toks.take(m.labels.len()).map(String::from).collect();
                if cells.len() == m.labels.len() {
                    m.rows.push((label.to_string(), cells));
                    continue;
                }
            }
        }
        if let Some(w) = after(raw, "NCCL WARN ") {
            log.warnings.push(w.trim().to_string());
            parse_tuner(&cx, w.trim(), &mut log.tuner)?;
            if let Some(p) = after(w, "Could not find a path for pattern ") {
                log.search_fallbacks.push(num(
                    &cx,
                    first_token(p).trim_end_matches(','),
                    "pattern",
                )?);
            }
            continue;
        }
        let body = match after(raw, "NCCL INFO ") {
            Some(b) => b,
            None => {
                if let Some(v) = after(raw, "NCCL version ")
                    && log.version.is_none()
                {
                    log.version = Some(parse_version(&cx, first_token(v))?);
                }
                continue;
            }
        };
        let who = raw[..raw.len() - body.len() - "NCCL INFO ".len()].to_string();
        let b = body.trim_end();
        let bt = b.trim_start();
        if let Some(v) = after(bt, "NCCL version ") {
            if log.version.is_none() {
                log.version = Some(parse_version(&cx, first_token(v))?);
            }
            continue;
        }
        if parse_tuner(&cx, bt, &mut log.tuner)? {
            continue;
        }
        // Topology dump: "=== System : maxBw 24.0 totalBw 24.0 ===" then tree lines.
        if let Some(rest) = after(bt, "=== System : maxBw ") {
            let mut t = rest.split_whitespace();
            let max: f32 = num(&cx, t.next().unwrap_or(""), "maxBw")?;
            let _ = t.next();
            let total: f32 = num(&cx, t.next().unwrap_or(""), "totalBw")?;
            if log.system_bw.is_none() {
                log.system_bw = Some((max, total));
            }
            continue;
        }
        if bt.starts_with("==========") {
            continue;
        }
        // Topology dump lines (several ranks may print theirs, interleaved).
        if let Some(line) = parse_topo_line(&cx, b)? {
            if !log.topology.contains(&line) {
                log.topology.push(line);
            }
            continue;
        }
        if let Some(rest) = bt.strip_prefix("Pattern ") {
            let g = parse_graph(&cx, rest)?;
            let ix = match log.graphs.iter().position(|x| {
                x.pattern == g.pattern
                    && x.n_channels == g.n_channels
                    && x.bw_intra == g.bw_intra
                    && x.type_intra == g.type_intra
            }) {
                // Every rank prints the same graph: keep one.
                Some(ix) => ix,
                None => {
                    log.graphs.push(g);
                    log.graphs.len() - 1
                }
            };
            pending_graph.retain(|(w, _)| *w != who);
            pending_graph.push((who.clone(), ix));
            continue;
        }
        if let Some(&(_, g)) = pending_graph.iter().find(|(w, _)| *w == who) {
            // " 0 : GPU/0 GPU/1 …" lines follow their Pattern line.
            if let Some((c, rest)) = bt.split_once(" : ")
                && let Ok(ch) = c.trim().parse::<usize>()
                && (rest.contains("GPU/") || rest.contains("NET/"))
            {
                let gpus: Vec<String> = rest
                    .split_whitespace()
                    .filter(|t| t.starts_with("GPU/"))
                    .map(String::from)
                    .collect();
                if log.graphs[g].channels.len() == ch {
                    log.graphs[g].channels.push(gpus);
                }
                continue;
            }
            pending_graph.retain(|(w, _)| *w != who);
        }
        if let Some(p) = after(bt, "Could not find a path for pattern ") {
            log.search_fallbacks
                .push(num(&cx, first_token(p).trim_end_matches(','), "pattern")?);
            continue;
        }
        if let Some(rest) = after(bt, " set by environment to ") {
            let name = bt[..bt.find(" set by environment to ").unwrap_or(0)].trim();
            if name.starts_with("NCCL_") {
                log.env.push((
                    name.to_string(),
                    rest.trim().trim_end_matches('.').to_string(),
                ));
            }
            continue;
        }
        if bt.contains(" via ") && (bt.starts_with("Channel ") || bt.starts_with("Ring ")) {
            log.connections.push(parse_connection(&cx, bt)?);
            continue;
        }
        if let Some(rest) = bt.strip_prefix("Channel ")
            && let Some((head, tail)) = rest.split_once(" :")
            && head.contains('/')
        {
            log.rings.push(parse_ring(&cx, head, tail)?);
            continue;
        }
        if let Some(rest) = bt.strip_prefix("Ring ")
            && rest.contains("->")
        {
            let (c, r) = rest
                .split_once(':')
                .ok_or_else(|| cx.err("ring neighbour line without `:`"))?;
            let parts: Vec<&str> = r.split("->").map(str::trim).collect();
            if parts.len() != 3 {
                return Err(cx.err("ring neighbour line is not `prev -> rank -> next`"));
            }
            log.ring_neighbours.push((
                num(&cx, c, "channel")?,
                num(&cx, parts[0], "prev")?,
                num(&cx, parts[1], "rank")?,
                num(&cx, parts[2], "next")?,
            ));
            continue;
        }
        if let Some(rest) = bt.strip_prefix("Trees") {
            if let Some(t) = parse_trees(&cx, rest)?
                && !log.trees.iter().any(|x| x.rank == t.rank)
            {
                log.trees.push(t);
            }
            continue;
        }
        if let Some(rest) = bt.strip_prefix("threadThresholds ") {
            let groups: Vec<&str> = rest.split('|').map(str::trim).collect();
            let three = |g: &str| -> Result<[u64; 3], LogError> {
                let v: Vec<&str> = g.split('/').collect();
                if v.len() != 3 {
                    return Err(cx.err("thread thresholds are not `ll/ll128/simple`"));
                }
                Ok([
                    num(&cx, v[0], "threshold")?,
                    num(&cx, v[1], "threshold")?,
                    num(&cx, v[2], "threshold")?,
                ])
            };
            if groups.len() < 2 {
                return Err(cx.err("thread thresholds lack the ring group"));
            }
            log.thread_thresholds = Some((three(groups[0])?, three(groups[1])?));
            continue;
        }
        if bt.contains(" coll channels,") {
            log.channel_counts = Some(parse_counts(&cx, bt)?);
            continue;
        }
        if bt.contains("Bytes -> ") {
            if let Some(c) = parse_call(&cx, bt)? {
                log.calls.push(c);
            }
            continue;
        }
        if let Some(rest) = bt.strip_prefix("P2P is disabled between connected GPUs ") {
            let t: Vec<&str> = rest.split_whitespace().collect();
            if t.len() >= 3 {
                log.p2p_disabled.push((
                    num(&cx, t[0], "GPU")?,
                    num(&cx, t[2].trim_end_matches('.'), "GPU")?,
                ));
            }
            continue;
        }
        if let Some(r) = parse_init(&cx, bt)? {
            if !log.ranks.iter().any(|x| x.rank == r.rank) {
                log.ranks.push(r);
            }
            continue;
        }
        if bt.contains(" :")
            && (bt.starts_with("GPU/") || bt.starts_with("NET/"))
            && bt.contains('(')
        {
            if let Some(p) = parse_paths(&cx, bt)?
                && !log.paths.iter().any(|x| x.from == p.from)
            {
                log.paths.push(p);
            }
            continue;
        }
        // Model table, new format (2.19+): "  Algorithm   |   Tree ..." blocks.
        if bt.starts_with("Algorithm") && bt.contains('|') {
            model_algos = bt
                .split('|')
                .skip(1)
                .flat_map(|c| c.split_whitespace())
                .filter_map(Algorithm::from_log_name)
                .collect();
            continue;
        }
        if bt.starts_with("Latency/AlgBw") {
            // Old format: "Latency/AlgBw | Tree/    LL | Tree/ LL128 | …".
            model_algos.clear();
            continue;
        }
        if let Some(rest) = bt.strip_prefix("AllReduce |") {
            parse_model_row(&cx, rest, &model_algos, &mut model)?;
            continue;
        }
    }
    if let Some(m) = matrix
        && !m.rows.is_empty()
    {
        log.topo_matrix = Some(m);
    }
    if !model.is_empty() {
        log.model = Some(LogModel { entries: model });
    }
    log.ranks.sort_by_key(|r| r.rank);
    log.trees.sort_by_key(|t| t.rank);
    log.connections.dedup();
    Ok(log)
}

/// A tuner plugin line, into `t`; whether `bt` was one.
fn parse_tuner(cx: &Cx, bt: &str, t: &mut LogTuner) -> Result<bool, LogError> {
    if let Some(m) = bt.strip_prefix("contend-tuner: ") {
        if !t.contend.iter().any(|x| x == m) {
            t.contend.push(m.to_string());
        }
        return Ok(true);
    }
    if let Some(p) = bt.strip_prefix("Successfully loaded external tuner plugin ") {
        t.loaded_from = Some(p.trim().to_string());
        return Ok(true);
    }
    if bt.starts_with("External tuner plugin ") && bt.ends_with(" is unsupported") {
        t.failures.push(bt.to_string());
        return Ok(true);
    }
    let Some(rest) = bt.strip_prefix("TUNER/Plugin: ") else {
        return Ok(false);
    };
    if rest.starts_with("Using internal tuner plugin") {
        // NCCL 2.28.3 (`src/plugin/tuner.cc`) when the named plugin did not
        // load: its own tuner, no external one
        t.failures.push(bt.to_string());
    } else if let Some(u) = rest.strip_prefix("Using ") {
        // "NAME (vN)"
        let (name, v) = u
            .rsplit_once(" (v")
            .ok_or_else(|| cx.err("tuner plugin line is not `Using NAME (vN)`"))?;
        t.name = Some(name.to_string());
        t.abi = Some(num(cx, v.trim_end_matches(')'), "tuner ABI version")?);
    } else if !rest.starts_with("Closing tuner") {
        t.failures.push(bt.to_string());
    }
    Ok(true)
}

fn parse_version(cx: &Cx, tok: &str) -> Result<LogVersion, LogError> {
    let core = tok.split('+').next().unwrap_or("");
    let p: Vec<&str> = core.split('.').collect();
    if p.len() < 3 {
        return Err(cx.err("NCCL version is not major.minor.patch"));
    }
    Ok(LogVersion {
        major: num(cx, p[0], "major")?,
        minor: num(cx, p[1], "minor")?,
        patch: num(cx, p[2], "patch")?,
        text: tok.to_string(),
    })
}

fn parse_topo_line(cx: &Cx, b: &str) -> Result<Option<LogTopoLine>, LogError> {
    let depth = b.len() - b.trim_start().len();
    let t = b.trim_start();
    let (link, rest) = if let Some(r) = t.strip_prefix("+ ") {
        let open = r
            .find('[')
            .ok_or_else(|| cx.err("topology link without `[bw]`"))?;
        let close = r
            .find(']')
            .ok_or_else(|| cx.err("topology link without `]`"))?;
        let ty = r[..open].to_string();
        let bw: f32 = num(cx, &r[open + 1..close], "link bandwidth")?;
        let after_dash = r[close + 1..]
            .trim_start()
            .strip_prefix('-')
            .ok_or_else(|| cx.err("topology link without ` - `"))?
            .trim_start();
        (Some((ty, bw)), after_dash)
    } else if t.starts_with("CPU/") && !t.contains(" :") && t.ends_with(')') {
        (None, t)
    } else {
        return Ok(None);
    };
    let node = first_token(rest).to_string();
    let detail = rest.find('(').and_then(|o| {
        rest[o + 1..]
            .find(')')
            .map(|c| rest[o + 1..o + 1 + c].to_string())
    });
    Ok(Some(LogTopoLine {
        depth,
        link,
        node,
        detail,
    }))
}

fn path_type(cx: &Cx, s: &str) -> Result<PathType, LogError> {
    PathType::from_name(s.trim()).ok_or_else(|| cx.err(format!("`{s}` is not a path type")))
}

fn parse_graph(cx: &Cx, rest: &str) -> Result<LogGraph, LogError> {
    // "4, crossNic 0, nChannels 1, bw 5.000000/5.000000, type SYS/PIX, sameChannels 1"
    let mut g = LogGraph {
        pattern: 0,
        cross_nic: 0,
        n_channels: 0,
        bw_intra: 0.0,
        bw_inter: 0.0,
        type_intra: PathType::Loc,
        type_inter: PathType::Loc,
        same_channels: false,
        channels: vec![],
    };
    let mut seen = 0;
    for (k, part) in rest.split(',').enumerate() {
        let part = part.trim();
        if k == 0 {
            g.pattern = num(cx, part, "pattern")?;
            seen += 1;
            continue;
        }
        let (key, val) = part
            .split_once(' ')
            .ok_or_else(|| cx.err(format!("graph field `{part}` has no value")))?;
        match key {
            "crossNic" => g.cross_nic = num(cx, val, "crossNic")?,
            "nChannels" => g.n_channels = num(cx, val, "nChannels")?,
            "bw" | "speed" => {
                let (a, b) = val
                    .split_once('/')
                    .ok_or_else(|| cx.err("graph bandwidth is not intra/inter"))?;
                g.bw_intra = num(cx, a, "bandwidth")?;
                g.bw_inter = num(cx, b, "bandwidth")?;
            }
            "type" => {
                let (a, b) = val
                    .split_once('/')
                    .ok_or_else(|| cx.err("graph type is not intra/inter"))?;
                g.type_intra = path_type(cx, a)?;
                g.type_inter = path_type(cx, b)?;
            }
            "sameChannels" => g.same_channels = num::<u8>(cx, val, "sameChannels")? != 0,
            _ => continue,
        }
        seen += 1;
    }
    if seen < 6 {
        return Err(cx.err("graph line lacks some of pattern, nChannels, bw, type, sameChannels"));
    }
    Ok(g)
}

fn parse_connection(cx: &Cx, bt: &str) -> Result<LogConnection, LogError> {
    // "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read"
    // "Channel 01/0 : 0[0] -> 4[0] [send] via NET/Socket/0"
    let rest = bt
        .strip_prefix("Channel ")
        .or_else(|| bt.strip_prefix("Ring "))
        .unwrap_or(bt);
    let (head, tail) = rest
        .split_once(" : ")
        .ok_or_else(|| cx.err("connection line without ` : `"))?;
    let (channel, conn_index) = match head.split_once('/') {
        Some((c, i)) => (
            num(cx, c, "channel")?,
            Some(num(cx, i, "connection index")?),
        ),
        None => (num(cx, head, "channel")?, None),
    };
    let (pair, via) = tail
        .split_once(" via ")
        .ok_or_else(|| cx.err("connection line without `via`"))?;
    let (a, bpart) = pair
        .split_once("->")
        .ok_or_else(|| cx.err("connection line without `->`"))?;
    let endpoint = |s: &str| -> Result<(usize, String), LogError> {
        let s = s.trim();
        let open = s
            .find('[')
            .ok_or_else(|| cx.err("peer without `[device]`"))?;
        let close = s.find(']').ok_or_else(|| cx.err("peer without `]`"))?;
        Ok((num(cx, &s[..open], "rank")?, s[open + 1..close].to_string()))
    };
    let bpart = bpart.trim();
    let (bpeer, direction) = match bpart.find(" [") {
        Some(i) => (
            &bpart[..i],
            Some(bpart[i + 2..].trim_end_matches(']').to_string()),
        ),
        None => (bpart, None),
    };
    let (from, from_dev) = endpoint(a)?;
    let (to, to_dev) = endpoint(bpeer)?;
    let label = via
        .trim()
        .split(" comm ")
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let transport = if let Some(m) = label.strip_prefix("P2P/") {
        let parts: Vec<&str> = m.split('/').collect();
        LogTransport::P2p {
            mechanism: parts[0].to_string(),
            read: parts.contains(&"read"),
            copy_engine: parts.contains(&"CE"),
        }
    } else if let Some(m) = label.strip_prefix("SHM/") {
        LogTransport::Shm {
            mode: m.to_string(),
        }
    } else if label == "SHM" {
        LogTransport::Shm {
            mode: String::new(),
        }
    } else if let Some(m) = label.strip_prefix("NET/") {
        LogTransport::Net {
            name: m.to_string(),
        }
    } else if label.starts_with("COLLNET") || label.starts_with("CollNet") {
        LogTransport::CollNet
    } else {
        LogTransport::Other(label.clone())
    };
    Ok(LogConnection {
        channel,
        conn_index,
        from,
        to,
        from_dev,
        to_dev,
        transport,
        direction,
        label,
    })
}

fn parse_ring(cx: &Cx, head: &str, tail: &str) -> Result<LogRing, LogError> {
    let (c, n) = head
        .split_once('/')
        .ok_or_else(|| cx.err("ring line without `channel/count`"))?;
    let mut order = Vec::new();
    let mut truncated = false;
    for t in tail.split_whitespace() {
        if t.ends_with("...") {
            truncated = true;
            let d = t.trim_end_matches("...");
            if !d.is_empty()
                && let Ok(x) = d.parse()
            {
                order.push(x);
            }
            break;
        }
        order.push(num(cx, t, "rank")?);
    }
    Ok(LogRing {
        channel: num(cx, c, "channel")?,
        n_channels: num(cx, n, "channel count")?,
        order,
        truncated,
    })
}

fn parse_trees(cx: &Cx, rest: &str) -> Result<Option<LogTrees>, LogError> {
    // " [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1" (old: "... ->0->-1|-1->0->1/-1/-1")
    // NCCL formats a log line into a fixed buffer (`src/debug.cc`,
    // v2.28: 1024 bytes) and cuts what does not fit: 48 or more channels'
    // trees end mid-entry. The last entry, when incomplete, is dropped.
    let mut channels = Vec::new();
    let mut rank = None;
    let parts: Vec<&str> = rest.split('[').skip(1).collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let Some((_, spec)) = part.split_once(']') else {
            if last {
                break;
            }
            return Err(cx.err("tree entry without `]`"));
        };
        let spec = spec.trim().split('|').next().unwrap_or("");
        let fields: Vec<&str> = spec.split("->").collect();
        if last && (fields.len() < 3 || fields.iter().any(|f| f.is_empty())) {
            break;
        }
        if fields.len() != 3 {
            return Err(cx.err("tree entry is not `down/down/down->rank->up`"));
        }
        let r: usize = num(cx, fields[1], "rank")?;
        rank = Some(r);
        let mut downs = Vec::new();
        for d in fields[0].split('/') {
            let v: i64 = num(cx, d, "child")?;
            if v >= 0 {
                downs.push(v as usize);
            }
        }
        let up: i64 = num(cx, fields[2], "parent")?;
        channels.push((downs, (up >= 0).then_some(up as usize)));
    }
    Ok(rank.map(|rank| LogTrees { rank, channels }))
}

fn parse_counts(cx: &Cx, bt: &str) -> Result<LogChannelCounts, LogError> {
    let mut coll = None;
    let mut collnet = None;
    let mut nvls = None;
    let mut p2p = None;
    let mut per_peer = None;
    for part in bt.split(',') {
        let part = part.trim();
        let (n, label) = part
            .split_once(' ')
            .ok_or_else(|| cx.err("channel count without a label"))?;
        let v: usize = num(cx, n, "channel count")?;
        match label.trim() {
            "coll channels" => coll = Some(v),
            "collnet channels" => collnet = Some(v),
            "nvls channels" => nvls = Some(v),
            "p2p channels" => p2p = Some(v),
            "p2p channels per peer" => per_peer = Some(v),
            _ => {}
        }
    }
    match (coll, p2p, per_peer) {
        (Some(coll), Some(p2p), Some(p2p_per_peer)) => Ok(LogChannelCounts {
            coll,
            collnet,
            nvls,
            p2p,
            p2p_per_peer,
        }),
        _ => Err(cx.err("channel counts lack coll, p2p or p2p per peer")),
    }
}

fn parse_call(cx: &Cx, bt: &str) -> Result<Option<LogCall>, LogError> {
    // "AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}"
    // "AllReduce: 8 Bytes -> Algo 1 proto 0 time 10.200000"
    // "8 Bytes -> Algo 1 proto 0 time 10.2"
    if bt.contains("[Symmetric]") || bt.contains("[Copy Engine]") || bt.contains("-> Kernel") {
        return Ok(None);
    }
    let (left, right) = bt
        .split_once("Bytes -> ")
        .ok_or_else(|| cx.err("call line without `Bytes ->`"))?;
    let (function, bytes) = match left.split_once(':') {
        Some((f, b)) => (Some(f.trim().to_string()), b),
        None => (None, left),
    };
    let bytes: u64 = num(cx, bytes, "bytes")?;
    let t: Vec<&str> = right.split_whitespace().collect();
    let get = |key: &str| {
        t.iter()
            .position(|x| *x == key)
            .and_then(|i| t.get(i + 1))
            .copied()
    };
    let a = get("Algo").ok_or_else(|| cx.err("call line without `Algo`"))?;
    let p = get("proto").ok_or_else(|| cx.err("call line without `proto`"))?;
    let algorithm = match a.parse::<usize>() {
        Ok(i) => Algorithm::from_index(i),
        Err(_) => Algorithm::from_log_name(a),
    }
    .ok_or_else(|| cx.err(format!("unknown algorithm `{a}`")))?;
    let protocol = match p.parse::<usize>() {
        Ok(i) => Protocol::from_index(i),
        Err(_) => Protocol::from_log_name(p),
    }
    .ok_or_else(|| cx.err(format!("unknown protocol `{p}`")))?;
    let time_us = match get("time") {
        Some(s) => Some(num(cx, s, "time")?),
        None => None,
    };
    let channels = match after(right, "channel{Lo..Hi}={") {
        Some(r) => {
            let inner = r.split('}').next().unwrap_or("");
            let (lo, hi) = inner
                .split_once("..")
                .ok_or_else(|| cx.err("channel range is not `lo..hi`"))?;
            Some((num(cx, lo, "channel")?, num(cx, hi, "channel")?))
        }
        None => None,
    };
    Ok(Some(LogCall {
        function,
        bytes,
        algorithm,
        protocol,
        channels,
        time_us,
    }))
}

fn parse_init(cx: &Cx, bt: &str) -> Result<Option<LogRank>, LogError> {
    // "[ncclCommInitRank ]comm 0x… rank 0 nranks 8 cudaDev 0 [nvmlDev 0] busId 4e000 … - Init START|COMPLETE"
    if !(bt.contains("Init START") || bt.contains("Init COMPLETE")) || !bt.contains(" nranks ") {
        return Ok(None);
    }
    let t: Vec<&str> = bt.split_whitespace().collect();
    let get = |key: &str| {
        t.iter()
            .position(|x| *x == key)
            .and_then(|i| t.get(i + 1))
            .copied()
    };
    let (Some(rank), Some(nranks)) = (get("rank"), get("nranks")) else {
        return Err(cx.err("init line without rank and nranks"));
    };
    Ok(Some(LogRank {
        rank: num(cx, rank, "rank")?,
        nranks: num(cx, nranks, "nranks")?,
        cuda_dev: get("cudaDev").and_then(|s| s.parse().ok()),
        nvml_dev: get("nvmlDev").and_then(|s| s.parse().ok()),
        bus_id: get("busId").map(String::from),
    }))
}

fn parse_paths(cx: &Cx, bt: &str) -> Result<Option<LogPaths>, LogError> {
    let (from, rest) = bt
        .split_once(" :")
        .ok_or_else(|| cx.err("path line without ` :`"))?;
    let mut to = Vec::new();
    let mut r = rest;
    while let Some(open) = r.find('(') {
        let node = r[..open].trim().to_string();
        let close = r[open..]
            .find(')')
            .ok_or_else(|| cx.err("path entry without `)`"))?
            + open;
        let f: Vec<&str> = r[open + 1..close].split('/').collect();
        if f.len() != 3 {
            return Err(cx.err("path entry is not `(hops/bw/type)`"));
        }
        to.push((
            node,
            num(cx, f[0], "hops")?,
            num(cx, f[1], "bandwidth")?,
            path_type(cx, f[2])?,
        ));
        r = &r[close + 1..];
    }
    if to.is_empty() {
        return Ok(None);
    }
    Ok(Some(LogPaths {
        from: from.trim().to_string(),
        to,
    }))
}

fn parse_model_row(
    cx: &Cx,
    rest: &str,
    algos: &[Algorithm],
    out: &mut Vec<(Algorithm, Protocol, f32, f32)>,
) -> Result<(), LogError> {
    let cells: Vec<&str> = rest
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    if !cells.iter().any(|c| c.contains('/')) {
        // The "Enabled NCCL Func/Proto/Algo Matrix" (NCCL_ALGO/NCCL_PROTO set)
        // has AllReduce rows of 0/1 flags, not latency/bandwidth pairs.
        return Ok(());
    }
    let order: Vec<(Algorithm, Protocol)> = if algos.is_empty() {
        // Old format: Tree/LL, Tree/LL128, Tree/Simple, Ring/LL, Ring/LL128, Ring/Simple, …
        Algorithm::ALL
            .iter()
            .flat_map(|a| Protocol::ALL.iter().map(move |p| (*a, *p)))
            .collect()
    } else {
        algos
            .iter()
            .flat_map(|a| Protocol::ALL.iter().map(move |p| (*a, *p)))
            .collect()
    };
    for (cell, (a, p)) in cells.iter().zip(order) {
        let (l, b) = cell
            .split_once('/')
            .ok_or_else(|| cx.err("model cell is not `latency/bandwidth`"))?;
        let lat: f32 = num(cx, l, "latency")?;
        let bw: f32 = num(cx, b, "bandwidth")?;
        if !out.iter().any(|(x, y, _, _)| *x == a && *y == p) {
            out.push((a, p, lat, bw));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
host:1:1 [0] NCCL INFO NCCL version 2.28.3+cuda12.9
host:1:2 [0] NCCL INFO ncclCommInitAll comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x7 - Init START
host:1:3 [1] NCCL INFO ncclCommInitAll comm 0x56 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 1c000 commId 0x7 - Init START
host:1:2 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS
host:1:2 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 2, bw 20.000000/20.000000, type PHB/PIX, sameChannels 1
host:1:2 [0] NCCL INFO  0 : GPU/0-1b000 GPU/0-1c000
host:1:2 [0] NCCL INFO  1 : GPU/0-1b000 GPU/0-1c000
something unrelated
host:1:2 [0] NCCL INFO Channel 00/04 :    0   1
host:1:2 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1
host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
host:1:3 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct
host:1:2 [0] NCCL INFO 4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels, 2 p2p channels per peer
host:1:2 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}
host:1:2 [0] NCCL INFO 8 Bytes -> Algo 1 proto 0 time 10.500000
";

    /// A one-rank communicator's trees line as NCCL 2.28.3 printed it on
    /// the lent H200 (64 channels, cut by NCCL's 1024-byte line buffer
    /// inside entry 47): the whole entries read, the cut one dropped; a
    /// malformed entry before the end is still an error.
    #[test]
    fn a_trees_line_cut_by_nccls_buffer_keeps_its_whole_entries() {
        let mut line = String::from("vm:480:480 [0] NCCL INFO Trees");
        for c in 0..47 {
            line.push_str(&format!(" [{c}] -1/-1/-1->0->-1"));
        }
        line.push_str(" [47] -1/-1/-1->");
        let log = parse("t.log", &format!("{line}\n")).unwrap();
        let t = &log.trees;
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!((t[0].rank, t[0].channels.len()), (0, 47));
        assert!(
            t[0].channels
                .iter()
                .all(|(d, u)| d.is_empty() && u.is_none())
        );
        let bad = "h:1:1 [0] NCCL INFO Trees [0] -1/-1/-1->0 [1] -1/-1/-1->0->-1\n";
        assert!(parse("t.log", bad).is_err());
    }

    /// What NCCL 2.28.3 printed on the lent H200 when `NCCL_TUNER_PLUGIN`
    /// named a file that is no plugin: no plugin loaded, both lines kept.
    #[test]
    fn nccls_internal_tuner_is_no_plugin_loaded() {
        let text = "\
vm:744:744 [0] NCCL INFO NCCL_TUNER_PLUGIN set by environment to /x/contend
vm:744:744 [0] NCCL INFO TUNER/Plugin: /x/contend: /x/contend: cannot dynamically load position-independent executable
vm:744:744 [0] NCCL INFO TUNER/Plugin: Using internal tuner plugin.
";
        let t = parse("t.log", text).unwrap().tuner;
        assert!(!t.loaded(), "{t:?}");
        assert_eq!(t.failures.len(), 2, "{t:?}");
        assert!(t.failures[1].contains("internal tuner"), "{t:?}");
    }

    #[test]
    fn reads_the_tuner_plugin_lines() {
        // as NCCL 2.28.3 prints them (src/plugin/tuner.cc, tuner_v5.cc)
        let text = "\
host:1:1 [0] NCCL INFO NCCL_TUNER_PLUGIN set by environment to /x/libcontend_tuner.so
host:1:1 [0] NCCL INFO TUNER/Plugin: Using contend (v5)
host:1:1 [0] NCCL INFO Successfully loaded external tuner plugin /x/libcontend_tuner.so
host:1:1 [0] NCCL INFO contend-tuner: tuner ABI v5, communicator 0x1, 1 ranks on 1 node(s)
host:1:1 [0] NCCL INFO contend-tuner: tuner ABI v5, communicator 0x1, 1 ranks on 1 node(s)
host:1:1 [0] file.cc:12 NCCL WARN contend-tuner: malformed table: t.toml:3:1: bad
host:1:1 [0] NCCL INFO TUNER/Plugin: Closing tuner: 'contend'
";
        let log = parse("t.log", text).unwrap();
        let t = &log.tuner;
        assert!(t.loaded());
        assert_eq!((t.name.as_deref(), t.abi), (Some("contend"), Some(5)));
        assert_eq!(t.loaded_from.as_deref(), Some("/x/libcontend_tuner.so"));
        assert!(t.failures.is_empty(), "{t:?}");
        assert_eq!(t.contend.len(), 2, "each line once: {t:?}");
        assert!(t.contend[1].starts_with("malformed table: t.toml:3:1"));
        assert_eq!(log.env[0].0, "NCCL_TUNER_PLUGIN");
        let none = parse(
            "n.log",
            "h:1:1 [0] NCCL INFO TUNER/Plugin: Could not find: /y/nope.so\n",
        )
        .unwrap();
        assert!(!none.tuner.loaded());
        assert_eq!(none.tuner.failures.len(), 1);
        assert!(parse("b.log", "h:1:1 [0] NCCL INFO TUNER/Plugin: Using x\n").is_err());
        assert!(parse("e.log", SAMPLE).unwrap().tuner.is_empty());
    }

    #[test]
    fn reads_every_kind_of_line() {
        let log = parse("sample.log", SAMPLE).unwrap();
        assert_eq!(log.version.as_ref().unwrap().minor, 28);
        assert_eq!(log.ranks.len(), 2);
        assert_eq!(log.ranks[1].bus_id.as_deref(), Some("1c000"));
        assert_eq!(log.env, vec![("NCCL_P2P_LEVEL".into(), "SYS".into())]);
        let g = log.ring_graph().unwrap();
        assert_eq!(
            (g.n_channels, g.bw_intra, g.type_intra),
            (2, 20.0, PathType::Phb)
        );
        assert_eq!(g.channels.len(), 2);
        assert_eq!(log.rings[0].order, vec![0, 1]);
        assert_eq!(log.rings[0].n_channels, 4);
        assert_eq!(log.trees[0].channels[0], (vec![1], None));
        assert!(matches!(
            &log.connections[0].transport,
            LogTransport::P2p { mechanism, read: true, .. } if mechanism == "CUMEM"
        ));
        assert_eq!(log.connections[1].transport.kind(), "SHM");
        assert_eq!(log.channel_counts.unwrap().coll, 4);
        assert_eq!(log.calls[0].channels, Some((0, 3)));
        assert_eq!(log.calls[1].algorithm, Algorithm::Ring);
        assert_eq!(log.calls[1].protocol, Protocol::Ll);
    }

    #[test]
    fn reads_both_model_table_formats() {
        // 2.19+ (src/graph/tuning.cc v2.28.9-1): blocks of three algorithms.
        let new = "\
h:1:1 [0] NCCL INFO   Algorithm   |                            Tree                              Ring                   CollNetDirect |
h:1:1 [0] NCCL INFO   Protocol    |             LL |          LL128 |         Simple |             LL |          LL128 |         Simple |             LL |          LL128 |         Simple |
h:1:1 [0] NCCL INFO  Max NThreads |            512 |            640 |            512 |            512 |            640 |            256 |            640 |            640 |            640 |
h:1:1 [0] NCCL INFO     Broadcast |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |    10.5/   6.0 |    21.0/   0.0 |    25.6/  12.0 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |
h:1:1 [0] NCCL INFO     AllReduce |    20.8/   1.2 |    40.6/   0.0 |    64.4/   4.6 |    20.6/   2.9 |    49.0/   0.0 |    88.2/   5.7 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |
h:1:1 [0] NCCL INFO Enabled NCCL Func/Proto/Algo Matrix:
h:1:1 [0] NCCL INFO     AllReduce |        1         0         1  |             1              1              0 |
";
        let m = parse("new.log", new).unwrap().model.unwrap();
        assert_eq!(m.entries.len(), 9);
        assert_eq!(m.entries[5], (Algorithm::Ring, Protocol::Simple, 88.2, 5.7));
        // 2.18 and older: one line of Tree/Ring × protocols.
        let old = "\
h:1:1 [0] NCCL INFO Latency/AlgBw | Tree/    LL | Tree/ LL128 | Tree/Simple | Ring/    LL | Ring/ LL128 | Ring/Simple |
h:1:1 [0] NCCL INFO     AllReduce |   14.4/  3.6|   19.4/  8.4|  100.0/ 10.8|    5.4/  3.0|    8.6/ 11.2|   21.6/ 12.0|
";
        let m = parse("old.log", old).unwrap().model.unwrap();
        assert_eq!(m.entries[0], (Algorithm::Tree, Protocol::Ll, 14.4, 3.6));
        assert_eq!(
            m.entries[5],
            (Algorithm::Ring, Protocol::Simple, 21.6, 12.0)
        );
    }

    #[test]
    fn malformed_decision_lines_are_located() {
        let bad = "a\nh:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> x[1] via P2P/IPC\n";
        let e = parse("bad.log", bad).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("bad.log:2: rank `x`"), "{e}");
        let bad = "h:1:1 [0] NCCL INFO Pattern 4, crossNic 0, nChannels two\n";
        assert!(parse("bad.log", bad).is_err());
    }
}
