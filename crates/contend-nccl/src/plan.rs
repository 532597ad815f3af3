//! The whole decision pipeline for one communicator: NCCL's system graph →
//! path types → P2P level → transport per peer → ring and tree search →
//! channels → cost model. Each step lives in its own module; this one runs
//! them in NCCL's order (`initTransportsRank`, `src/init.cc` v2.28.9-1) and
//! keeps every decision with its reason.

use crate::channels::{self, Channels};
use crate::env::{CpuArch, HostFacts, NcclEnv};
use crate::error::NcclError;
use crate::graph_file;
use crate::p2p::{self, LevelSource, P2pPolicy, P2pVerdict};
use crate::paths::{self, PathType};
use crate::search::{self, MAXCHANNELS, Pattern, SearchGraph};
use crate::system::{self, LinkType, NodeKind, System};
use crate::transport::{self, Transport};
use crate::tuning::{self, Algorithm, CostModel, Protocol, SizeChoice};
use crate::version::NcclVersion;
use contend_topo::{Bytes, BytesPerSec, NodeId, NodeIdx, NodeKind as TopoKind, Topology};
use serde::Serialize;

/// One rank of the communicator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankInfo {
    pub rank: usize,
    pub node: NodeId,
    /// The GPU's index in NCCL's system (`GPU/…` order of its dumps).
    pub nccl_index: usize,
    /// The CPU (NUMA node) NCCL hangs it under: the socket.
    pub socket: u32,
    pub compute_capability: u32,
}

/// What NCCL decides for one ordered pair of ranks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeerDecision {
    pub from: usize,
    pub to: usize,
    /// The path type between the GPUs in the topology.
    pub path: PathType,
    /// The path NCCL's search uses: the same, or through the CPU when P2P
    /// is refused (then PHB or SYS).
    pub search_path: PathType,
    /// Bandwidth of `search_path` in NCCL's model.
    pub search_bw: BytesPerSec,
    /// Hops of the topology path and of the search path (NCCL's `count`).
    pub hops: usize,
    pub search_hops: usize,
    pub verdict: P2pVerdict,
    pub transport: Transport,
    /// The decision in a sentence.
    pub reason: String,
}

/// NCCL's buffer sizes per connection (`computeBuffSizes`, `src/init.cc`
/// v2.28.9-1): LL 8 lines × 512 threads × 8 steps × 16 B = 512 KiB, LL128
/// 120 × 640 × 8 × 8 B = 4.6875 MiB, Simple 4 MiB (`NCCL_BUFFSIZE`); P2P
/// chunks 128 KiB over PCIe, 512 KiB when every path is NVLink.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Buffers {
    pub ll: Bytes,
    pub ll128: Bytes,
    pub simple: Bytes,
    /// Simple buffer / `NCCL_STEPS` (8): the step a ring moves at a time.
    pub simple_step: Bytes,
    pub p2p_chunk: Bytes,
}

/// The numbers NCCL's search starts from (`=== System : maxBw … totalBw … ===`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SystemSummary {
    pub max_bw: BytesPerSec,
    pub total_bw: BytesPerSec,
    pub cpu: CpuArch,
    pub cpu_source: String,
    pub cpus: usize,
    pub inter_cpu_bw: Option<BytesPerSec>,
    /// NCCL's topology tree as its GRAPH dump prints it (ids are contend's).
    pub tree: Vec<String>,
}

/// NCCL's decisions for one topology, rank set, environment and version.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NcclPlan {
    pub version: NcclVersion,
    pub topology: String,
    pub ranks: Vec<RankInfo>,
    pub env: Vec<String>,
    pub host: HostFacts,
    pub system: SystemSummary,
    pub p2p: P2pPolicy,
    /// Every ordered pair of distinct ranks, `from`-major.
    pub pairs: Vec<PeerDecision>,
    pub ring: SearchGraph,
    pub tree: SearchGraph,
    /// Whether the graphs came from `NCCL_GRAPH_FILE`.
    pub graph_from_file: bool,
    pub channels: Channels,
    pub model: CostModel,
    pub buffers: Buffers,
    /// Assumptions and variables not replicated.
    pub notes: Vec<String>,
}

/// A stretch of sizes with one choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SizeRange {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    pub from: Bytes,
    pub to: Bytes,
}

impl NcclPlan {
    /// The decision for ranks `from → to`.
    pub fn pair(&self, from: usize, to: usize) -> Option<&PeerDecision> {
        self.pairs.iter().find(|p| p.from == from && p.to == to)
    }

    /// NCCL's choice for one AllReduce of `bytes` (4-byte elements, as
    /// nccl-tests' default float; the element size only moves the channel
    /// spread).
    pub fn choose(&self, bytes: Bytes) -> Option<SizeChoice> {
        self.model.choose(bytes, Bytes(4))
    }

    /// As [`NcclPlan::choose`], for elements of `elem` bytes.
    pub fn choose_with(&self, bytes: Bytes, elem: Bytes) -> Option<SizeChoice> {
        self.model.choose(bytes, elem)
    }

    /// The choice for each size.
    pub fn table(&self, sizes: &[Bytes]) -> Vec<SizeChoice> {
        sizes.iter().filter_map(|b| self.choose(*b)).collect()
    }

    /// Where the choice changes between `from` and `to`, by powers of two.
    pub fn ranges(&self, from: Bytes, to: Bytes) -> Vec<SizeRange> {
        let mut out: Vec<SizeRange> = Vec::new();
        let mut b = from.0.max(1);
        while b <= to.0 {
            if let Some(c) = self.choose(Bytes(b)) {
                match out.last_mut() {
                    Some(r) if r.algorithm == c.algorithm && r.protocol == c.protocol => {
                        r.to = Bytes(b)
                    }
                    _ => out.push(SizeRange {
                        algorithm: c.algorithm,
                        protocol: c.protocol,
                        from: Bytes(b),
                        to: Bytes(b),
                    }),
                }
            }
            b *= 2;
        }
        out
    }

    /// The ordered pairs rings and trees connect, with the channels each is on.
    pub fn connections(&self) -> Vec<(usize, usize, Vec<usize>)> {
        let mut v: Vec<(usize, usize, Vec<usize>)> = Vec::new();
        let mut add = |a: usize, b: usize, c: usize| {
            if a == b {
                return;
            }
            match v.iter_mut().find(|(x, y, _)| *x == a && *y == b) {
                Some((_, _, ch)) => {
                    if !ch.contains(&c) {
                        ch.push(c)
                    }
                }
                None => v.push((a, b, vec![c])),
            }
        };
        for (c, ring) in self.channels.rings.iter().enumerate() {
            for i in 0..ring.len() {
                add(ring[i], ring[(i + 1) % ring.len()], c);
            }
        }
        for (c, tree) in self.channels.trees.iter().enumerate() {
            for (r, t) in tree.iter().enumerate() {
                if let Some(u) = t.up {
                    add(r, u, c);
                    add(u, r, c);
                }
            }
        }
        v.sort();
        v
    }
}

/// Every GPU of a topology in file order: the usual rank order.
pub fn all_gpus(topo: &Topology) -> Vec<NodeIdx> {
    topo.gpus()
}

pub(crate) fn source_text(p: &P2pPolicy) -> String {
    match p.source {
        LevelSource::Default => format!("P2P level {} (NCCL's default)", p.level),
        LevelSource::AmdTwoGpus => format!(
            "P2P level {} (NCCL's rule for AMD CPUs with at most two GPUs)",
            p.level
        ),
        LevelSource::P2pDisable => "NCCL_P2P_DISABLE=1".to_string(),
        LevelSource::Env(_) => format!("P2P level {} (NCCL_P2P_LEVEL)", p.level),
    }
}

fn pair_reason(
    path: PathType,
    verdict: P2pVerdict,
    transport: &Transport,
    policy: &P2pPolicy,
) -> String {
    let what = match transport {
        Transport::P2p { read: true, .. } => "P2P read",
        Transport::P2p { .. } => "P2P write",
        Transport::Shm => "SHM",
        Transport::Net => "NET",
    };
    match verdict {
        P2pVerdict::Allowed => format!("{what}, path {path} within {}", source_text(policy)),
        P2pVerdict::AboveLevel if policy.source == LevelSource::P2pDisable => {
            format!("{what}, P2P off by NCCL_P2P_DISABLE=1 (path {path})")
        }
        P2pVerdict::AboveLevel => format!("{what}, path {path} above {}", source_text(policy)),
        P2pVerdict::DriverRefuses => format!(
            "{what}, path {path} within {} but the driver reports no P2P between them (NVML)",
            source_text(policy)
        ),
    }
}

/// NCCL's topology tree as `ncclTopoPrint` shows it.
fn print_tree(topo: &Topology, sys: &System) -> Vec<String> {
    let mut out = Vec::new();
    fn name(topo: &Topology, sys: &System, n: usize) -> String {
        match &sys.nodes[n].kind {
            NodeKind::Cpu { socket } => {
                let (a, v, m) = sys.cpu.nccl_codes();
                format!("CPU/{socket} ({a}/{v}/{m})")
            }
            NodeKind::Pci { topo: t } => format!("PCI/{}", topo.node(*t).id),
            NodeKind::Gpu { rank, topo: t, .. } => format!("GPU/{} ({rank})", topo.node(*t).id),
        }
    }
    fn rec(
        topo: &Topology,
        sys: &System,
        n: usize,
        up: Option<usize>,
        depth: usize,
        out: &mut Vec<String>,
    ) {
        for &l in &sys.nodes[n].links {
            let link = &sys.links[l];
            if Some(link.to) == up {
                continue;
            }
            let pad = "  ".repeat(depth);
            // Like ncclTopoPrintRec: a PCI child with its details, then its
            // subtree; another link's far end by name only.
            let far = name(topo, sys, link.to);
            let far = if link.ltype == LinkType::Pci {
                far
            } else {
                far.split(' ').next().unwrap_or_default().to_string()
            };
            out.push(format!(
                "{pad}+ {}[{:.1}] - {far}",
                link.ltype.name(),
                link.bw
            ));
            if link.ltype == LinkType::Pci {
                rec(topo, sys, link.to, Some(n), depth + 1, out);
            }
        }
    }
    for &c in &sys.cpus {
        out.push(name(topo, sys, c));
        rec(topo, sys, c, None, 1, &mut out);
    }
    out
}

/// NCCL's decisions for `ranks` (GPUs of `topo`, in rank order) under `env`
/// as NCCL `version` makes them.
pub fn plan(
    topo: &Topology,
    ranks: &[NodeIdx],
    env: &NcclEnv,
    version: NcclVersion,
) -> Result<NcclPlan, NcclError> {
    if ranks.is_empty() {
        return Err(NcclError::NoRanks);
    }
    for (i, &r) in ranks.iter().enumerate() {
        if r.0 as usize >= topo.nodes().len() || !matches!(topo.node(r).kind, TopoKind::Gpu(_)) {
            return Err(NcclError::NotAGpu {
                rank: i,
                node: if (r.0 as usize) < topo.nodes().len() {
                    topo.node(r).id.0.clone()
                } else {
                    format!("#{}", r.0)
                },
            });
        }
        if let Some(j) = ranks[..i].iter().position(|x| *x == r) {
            return Err(NcclError::DuplicateRank {
                node: topo.node(r).id.0.clone(),
                first: j,
                second: i,
            });
        }
    }
    let (cpu, cpu_source) = match env.host.cpu {
        Some(c) => (c, "given".to_string()),
        None => {
            let (c, why) = CpuArch::infer(topo);
            (c, why.to_string())
        }
    };
    let sys = system::build(topo, ranks, &env.host, cpu)?;
    let n = ranks.len();
    let ccs: Vec<u32> = (0..n).map(|g| sys.cc_of_gpu(g)).collect();
    let (cc_min, cc_max) = (
        *ccs.iter().min().expect("ranks"),
        *ccs.iter().max().expect("ranks"),
    );
    if cc_min != cc_max {
        return Err(NcclError::MixedComputeCapability {
            min: cc_min,
            max: cc_max,
        });
    }

    // Paths, P2P level, and the CPU detour of refused pairs.
    let mut paths = paths::compute(&sys, env.nvb_disable);
    let direct = paths.clone();
    let policy = p2p::policy(&sys, env);
    let verdicts = p2p::divert(&sys, &mut paths, policy, env);

    // Transport per ordered pair (ranks, not NCCL indices).
    let mut pairs = Vec::new();
    for from in 0..n {
        for to in 0..n {
            if from == to {
                continue;
            }
            let (g1, g2) = (sys.gpu_of_rank(from), sys.gpu_of_rank(to));
            let dpath = direct.get(sys.gpus[g1], sys.gpus[g2]).expect("path");
            let spath = paths.get(sys.gpus[g1], sys.gpus[g2]).expect("path");
            let verdict = verdicts[g1][g2];
            let (_, read, via) = p2p::check(&sys, &direct, g1, g2, policy, env);
            let via = via.map(|g| sys.rank_of_gpu(g));
            let t = transport::choose(verdict, read, via, env);
            if t == Transport::Net {
                return Err(NcclError::Unreplicated(format!(
                    "ranks {from} and {to} have neither P2P nor SHM (NCCL_SHM_DISABLE=1): NCCL then \
                     splits the node into network domains (ncclTopoTrimSystem, src/graph/paths.cc) \
                     and searches as if across nodes"
                )));
            }
            pairs.push(PeerDecision {
                from,
                to,
                path: dpath.ptype,
                search_path: spath.ptype,
                search_bw: BytesPerSec::from_gbps(f64::from(spath.bw)),
                hops: dpath.hops(),
                search_hops: spath.hops(),
                verdict,
                reason: pair_reason(dpath.ptype, verdict, &t, &policy),
                transport: t,
            });
        }
    }

    let mut notes = Vec::new();
    // Graphs: from NCCL_GRAPH_FILE, else the search.
    let mut from_file: (Option<SearchGraph>, Option<SearchGraph>) = (None, None);
    if let Some(file) = &env.graph_file {
        let text =
            contend_topo::bounded_read::read_text(std::path::Path::new(file)).map_err(|e| {
                NcclError::GraphFile {
                    file: file.clone(),
                    message: e.reason(),
                }
            })?;
        let graphs = graph_file::parse(&text).map_err(|m| NcclError::GraphFile {
            file: file.clone(),
            message: m,
        })?;
        let topo_gpus = topo.gpus();
        for g in graphs {
            let mut chans = Vec::new();
            for c in g.channels.iter().take(g.n_channels.min(MAXCHANNELS)) {
                let mut ranks_of = Vec::new();
                for &dev in c {
                    let node = topo_gpus.get(dev).copied();
                    let r = node.and_then(|nd| ranks.iter().position(|x| *x == nd));
                    ranks_of.push(r.ok_or_else(|| NcclError::GraphFile {
                        file: file.clone(),
                        message: format!("gpu dev {dev} is not one of the ranks' GPUs"),
                    })?);
                }
                chans.push(ranks_of);
            }
            let sg = SearchGraph::from_channels(
                g.pattern,
                chans,
                g.speed_intra,
                g.speed_inter,
                g.type_intra,
                g.type_inter,
                g.same_channels,
            );
            match g.id {
                0 => from_file.0 = Some(sg),
                1 => from_file.1 = Some(sg),
                _ => {}
            }
        }
    }
    let graph_from_file = from_file.0.is_some() || from_file.1.is_some();
    let mut ring = match from_file.0 {
        Some(g) => g,
        None => search::compute(
            &sys,
            &paths,
            Pattern::Ring,
            1,
            MAXCHANNELS / 2,
            cc_min,
            version,
        ),
    };
    let mut tree = match from_file.1 {
        Some(g) => g,
        None => search::compute(
            &sys,
            &paths,
            Pattern::BalancedTree,
            ring.n_channels,
            ring.n_channels,
            cc_min,
            version,
        ),
    };
    let nc = ring.n_channels.min(tree.n_channels);
    // NCCL sets both graphs to the smaller count (src/init.cc).
    ring.n_channels = nc;
    ring.channels.truncate(nc);
    tree.n_channels = nc;
    tree.channels.truncate(nc);

    // ncclTopoGetNchannels: 2 per peer over PCIe, 2 × (NVLink bw / per-link bw) over NVLink.
    let mut min_per_peer = usize::MAX;
    for g in 0..n {
        for p in 0..n {
            if p == g {
                continue;
            }
            let path = paths.get(sys.gpus[p], sys.gpus[g]).expect("path");
            let c = if path.ptype == PathType::Nvl {
                let per = system::nvlink_bw(sys.cc_of_gpu(g));
                2 * ((path.bw / per) as usize).max(1)
            } else {
                2
            };
            min_per_peer = min_per_peer.min(c);
        }
    }
    if min_per_peer == usize::MAX {
        min_per_peer = 2;
    }
    let channels = channels::build(&ring, &tree, n, min_per_peer, env);
    let model = tuning::model(
        &ring,
        &tree,
        &tuning::ModelInputs {
            n_ranks: n,
            n_channels: channels.n_channels,
            cc: cc_min,
            power_cpu: cpu == CpuArch::Power,
            version,
        },
        env,
    );

    let all_nvlink = (0..n).all(|a| {
        (0..n).all(|b| {
            a == b || paths.get(sys.gpus[a], sys.gpus[b]).expect("path").ptype < PathType::Pix
        })
    });
    let simple = env.buffsize.unwrap_or(Bytes(1 << 22));
    let mut chunk = if all_nvlink {
        Bytes(1 << 19)
    } else {
        Bytes(1 << 17)
    };
    if chunk.0 * 8 > simple.0 {
        chunk = Bytes(simple.0 / 8);
    }
    let buffers = Buffers {
        ll: env.ll_buffsize.unwrap_or(Bytes(8 * 512 * 8 * 16)),
        ll128: env.ll128_buffsize.unwrap_or(Bytes(120 * 640 * 8 * 8)),
        simple,
        simple_step: Bytes(simple.0 / 8),
        p2p_chunk: chunk,
    };

    let (max_bw, total_bw) = search::max_and_total_bw(&sys, &paths);
    let system = SystemSummary {
        max_bw: BytesPerSec::from_gbps(f64::from(max_bw)),
        total_bw: BytesPerSec::from_gbps(f64::from(total_bw)),
        cpu,
        cpu_source,
        cpus: sys.cpus.len(),
        inter_cpu_bw: (sys.cpus.len() > 1)
            .then(|| BytesPerSec::from_gbps(f64::from(system::inter_cpu_bw(cpu)))),
        tree: print_tree(topo, &sys),
    };

    if env.host.cpu.is_none() {
        notes.push(format!("CPU: {} ({})", system.cpu, system.cpu_source));
    }
    if env.host.compute_capability.is_none() {
        notes.push(format!(
            "compute capability {cc_min} from the GPU model name"
        ));
    }
    notes.push(
        "PCI bus order is taken as the topology's GPU file order; one NUMA node per socket (NPS1)"
            .to_string(),
    );
    if let Some(why) = topo.no_p2p_summary(ranks) {
        notes.push(format!(
            "{why}: NVML reports no P2P there, so NCCL goes through host memory (SHM)"
        ));
    }
    if n == 1 {
        notes.push("one rank: NCCL moves no data between GPUs".to_string());
    }
    for (k, v) in &env.unreplicated {
        notes.push(format!("{k}={v} is not replicated (ignored here)"));
    }

    let ranks_info = (0..n)
        .map(|r| {
            let g = sys.gpu_of_rank(r);
            let socket = match sys.nodes[p2p::local_cpu(&sys, &paths, g)].kind {
                NodeKind::Cpu { socket } => socket,
                _ => 0,
            };
            RankInfo {
                rank: r,
                node: topo.node(ranks[r]).id.clone(),
                nccl_index: g,
                socket,
                compute_capability: ccs[g],
            }
        })
        .collect();

    Ok(NcclPlan {
        version,
        topology: topo.name.clone(),
        ranks: ranks_info,
        env: env.assignments(),
        host: env.host.clone(),
        system,
        p2p: policy,
        pairs,
        ring,
        tree,
        graph_from_file,
        channels,
        model,
        buffers,
        notes,
    })
}
