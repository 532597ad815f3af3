//! NCCL's cost model for AllReduce inside one node: replicates
//! `ncclTopoTuneModel` and `ncclTopoGetAlgoTime` (`src/graph/tuning.cc`)
//! and the choice in `topoGetAlgoInfo` (`src/enqueue.cc`), at v2.28.9-1
//! with the differences of v2.27.7-1 and v2.29.7-1 named where they apply.
//!
//! Each (algorithm, protocol) gets a latency (a base plus a per-hop
//! hardware latency per step, by NVLink or PCI) and a bus bandwidth
//! (channels × per-channel search bandwidth, then protocol caps: LL half
//! the bandwidth up to an LL maximum, LL128 92 % up to a per-channel cap,
//! Tree 92 % up to a per-channel cap), turned into algorithm bandwidth
//! (Ring × nRanks / 2(nRanks−1), Tree × ½). A call of `n` bytes costs
//! `latency + n / (1000 · bandwidth)` µs, the Tree times corrected per size;
//! the cheapest enabled pair wins. LL128 is on by default only when the
//! graph stays on NVLink (type ≤ NVB) — never over PCIe.

use crate::env::{ALLREDUCE, NcclEnv};
use crate::paths::PathType;
use crate::search::SearchGraph;
use crate::version::NcclVersion;
use contend_topo::{Bytes, BytesPerSec, Picos};
use serde::{Deserialize, Serialize};
use std::fmt;

/// NCCL's algorithms (`NCCL_ALGO_*`, `src/include/nccl_common.h`, in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    Tree,
    Ring,
    CollNetDirect,
    CollNetChain,
    Nvls,
    NvlsTree,
    Pat,
}

impl Algorithm {
    pub const ALL: [Algorithm; 7] = [
        Algorithm::Tree,
        Algorithm::Ring,
        Algorithm::CollNetDirect,
        Algorithm::CollNetChain,
        Algorithm::Nvls,
        Algorithm::NvlsTree,
        Algorithm::Pat,
    ];
    /// The name `NCCL_ALGO` takes (`ncclAlgoStr`, `src/init.cc`).
    pub fn nccl_name(self) -> &'static str {
        [
            "Tree",
            "Ring",
            "CollNetDirect",
            "CollNetChain",
            "NVLS",
            "NVLSTree",
            "PAT",
        ][self as usize]
    }
    /// The name the per-call TUNING line prints (`ncclAlgoToString`).
    pub fn log_name(self) -> &'static str {
        [
            "TREE",
            "RING",
            "COLLNET_DIRECT",
            "COLLNET_CHAIN",
            "NVLS",
            "NVLS_TREE",
            "PAT",
        ][self as usize]
    }
    pub fn from_index(i: usize) -> Option<Algorithm> {
        Algorithm::ALL.get(i).copied()
    }
    pub fn from_log_name(s: &str) -> Option<Algorithm> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.log_name().eq_ignore_ascii_case(s) || a.nccl_name().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Algorithm::Tree => "tree",
            Algorithm::Ring => "ring",
            Algorithm::CollNetDirect => "collnet-direct",
            Algorithm::CollNetChain => "collnet-chain",
            Algorithm::Nvls => "nvls",
            Algorithm::NvlsTree => "nvls-tree",
            Algorithm::Pat => "pat",
        })
    }
}

/// NCCL's protocols (`NCCL_PROTO_*`, in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Protocol {
    Ll,
    Ll128,
    Simple,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];
    pub fn nccl_name(self) -> &'static str {
        ["LL", "LL128", "Simple"][self as usize]
    }
    pub fn log_name(self) -> &'static str {
        ["LL", "LL128", "SIMPLE"][self as usize]
    }
    pub fn from_index(i: usize) -> Option<Protocol> {
        Protocol::ALL.get(i).copied()
    }
    pub fn from_log_name(s: &str) -> Option<Protocol> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.log_name().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.nccl_name())
    }
}

const NP: usize = 3;
const TREE: usize = 0;
const RING: usize = 1;
const LL: usize = 0;
const LL128: usize = 1;
const SIMPLE: usize = 2;

/// Base latencies, µs (`baseLat` / `baseLatencies`, `src/graph/tuning.cc`,
/// equal at v2.27.7-1, v2.28.9-1, v2.29.7-1): Tree, Ring × LL, LL128, Simple.
const BASE_LAT: [[f32; NP]; 2] = [[6.8, 14.0, 8.4], [6.6, 14.0, 8.4]];
/// Hardware latency per step, µs (`hwLat` / `hwLatencies`, same file and
/// tags): `[NVLink, PCI][Tree, Ring][LL, LL128, Simple]`.
const HW_LAT: [[[f32; NP]; 2]; 2] = [
    [[0.6, 1.25, 4.0], [0.6, 1.9, 3.4]],
    [[1.0, 1.9, 4.0], [1.0, 2.5, 5.7]],
];
/// `llMaxBws[compCapIndex][0]` (one node indexes by GPU), GB/s: Volta 39.0,
/// Ampere 87.7, Hopper 141.0, Blackwell 282.0 (equal at the three tags).
const LL_MAX_BW_N1: [f64; 4] = [39.0, 87.7, 141.0, 2.0 * 141.0];
/// `PCI_BW` (`src/graph/topo.h`): below `bwIntra × nChannels` of this the
/// Ring Simple default is 256 threads, else 512 (`ncclTopoTuneModel`).
const PCI_BW: f32 = 12.0;
/// `NCCL_SIMPLE_MAX_NTHREADS`, `NCCL_LL_MAX_NTHREADS`,
/// `NCCL_LL128_MAX_NTHREADS`, `NCCL_MAX_NTHREADS`, `WARP_SIZE`
/// (`src/include/device.h`).
const SIMPLE_MAX_NTHREADS: i64 = 512;
const LL_MAX_NTHREADS: i64 = 512;
const LL128_MAX_NTHREADS: i64 = 640;
const MAX_NTHREADS: i64 = 640;
const WARP: i64 = 32;
/// `NCCL_LL_THREAD_THRESHOLD` 8, `NCCL_LL128_THREAD_THRESHOLD` 8,
/// `NCCL_SIMPLE_THREAD_THRESHOLD` 64 (`src/include/comm.h`); Ring LL × nRanks.
const THREAD_THRESHOLD: [i64; NP] = [8, 8, 64];

/// Per-channel caps for one node (`[compCapIndex][0]`), GB/s, by version:
/// (`perChMaxRingLL128Bws`, `perChMaxTreeLL128Bws`, `perChMaxTreeBws`).
fn per_channel_caps(cc_index: usize, version: NcclVersion) -> (f64, f64, f64) {
    // Volta, Ampere, Hopper rows are equal at all three tags.
    const RING_LL128: [f64; 3] = [20.0, 20.0, 36.7];
    const TREE_LL128: [f64; 3] = [20.0, 20.0, 36.7];
    const TREE: [f64; 3] = [26.5, 24.0, 38.7];
    if cc_index < 3 {
        return (RING_LL128[cc_index], TREE_LL128[cc_index], TREE[cc_index]);
    }
    match version {
        // v2.27.7-1: Blackwell rows are twice Hopper's.
        NcclVersion::V2_27 => (2.0 * 36.7, 2.0 * 36.7, 2.0 * 38.7),
        // v2.28.9-1: measured Blackwell rows.
        NcclVersion::V2_28 => (2.0 * 36.7, 55.6, 70.0),
        // v2.29.7-1: Ring LL128 lowered to 40.0.
        NcclVersion::V2_29 => (40.0, 55.6, 70.0),
    }
}

/// The Tree correction per size, powers of two from 64 B
/// (`treeCorrectionFactor`, `src/graph/tuning.cc`): 23 entries to 256 MiB
/// at v2.27.7-1 and v2.28.9-1, 24 (to 512 MiB) at v2.29.7-1.
fn tree_correction(protocol: usize, log_size: i64, version: NcclVersion) -> f32 {
    const F: [[f32; 24]; NP] = [
        [
            1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7,
            0.8, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0,
        ],
        [
            1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8,
            0.9, 0.9, 0.9, 0.9, 1.0, 1.0, 1.0,
        ],
        [
            0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7,
            0.8, 0.7, 0.7, 0.8, 0.9, 0.9, 0.9,
        ],
    ];
    let len = if version >= NcclVersion::V2_29 {
        24
    } else {
        23
    };
    if log_size >= 0 && (log_size as usize) < len {
        F[protocol][log_size as usize]
    } else {
        1.0
    }
}

fn log2i(n: u64) -> i64 {
    if n == 0 {
        -1
    } else {
        63 - i64::from(n.leading_zeros())
    }
}

/// `getNthreads` (`src/graph/tuning.cc`): an environment value must be a
/// positive multiple of 32 within [min, max], else it is replaced.
fn nthreads(env: Option<i64>, min: i64, max: i64, default: i64) -> i64 {
    match env {
        Some(nt) if nt > 0 => {
            if nt % WARP != 0 || nt > max {
                max
            } else if nt < min {
                min
            } else {
                nt
            }
        }
        _ => default,
    }
}

/// One (algorithm, protocol) entry of NCCL's model for AllReduce.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ModelEntry {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    /// `comm->latencies`, as NCCL's float µs: `base_latency_us` plus
    /// the steps times `step_latency_us`.
    pub latency_us: f32,
    /// `baseLat[algorithm][protocol]`, µs: NCCL's fixed cost of a call.
    pub base_latency_us: f32,
    /// `hwLat[link][algorithm][protocol]`, µs: what NCCL charges per step
    /// (per ring step; per hop up and down a tree), by the graph's link
    /// type (NVLink or PCI).
    pub step_latency_us: f32,
    /// `comm->bandwidths` (0: disabled), NCCL's float GB/s.
    pub bandwidth_gbps: f32,
    /// `comm->maxThreads`.
    pub max_threads: u32,
    /// Why the entry is disabled, if it is.
    pub disabled: Option<&'static str>,
}

impl ModelEntry {
    pub fn latency(&self) -> Picos {
        Picos::from_ns_f64(f64::from(self.latency_us) * 1000.0)
    }
    /// NCCL's per-step hardware latency as a time.
    pub fn step_latency(&self) -> Picos {
        Picos::from_ns_f64(f64::from(self.step_latency_us) * 1000.0)
    }
    pub fn bandwidth(&self) -> BytesPerSec {
        BytesPerSec::from_gbps(f64::from(self.bandwidth_gbps))
    }
}

/// NCCL's AllReduce model for one communicator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostModel {
    pub version: NcclVersion,
    pub n_ranks: usize,
    /// `comm->nChannels`: the channels a call may spread over.
    pub n_channels: usize,
    /// Tree and Ring entries (the only AllReduce algorithms a node without
    /// NVSwitch or CollNet has), LL, LL128, Simple each.
    pub entries: Vec<ModelEntry>,
    thresholds: [[i64; NP]; 2],
}

/// The choice for one call size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeChoice {
    pub bytes: Bytes,
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    /// NCCL's own predicted time (its model, µs as float).
    pub time_us: f32,
    pub time: Picos,
    /// `nMaxChannels` after the size-based reduction.
    pub max_channels: usize,
    /// Threads per block (`nWarps × 32`).
    pub threads: u32,
    /// Channels the scheduler gives a lone call (`channel{Lo..Hi}`), for
    /// the element size asked.
    pub channel_lo: usize,
    pub channel_hi: usize,
    /// Every enabled candidate's time, µs.
    pub candidates: Vec<(Algorithm, Protocol, f32)>,
}

impl SizeChoice {
    pub fn channels_used(&self) -> usize {
        self.channel_hi + 1 - self.channel_lo
    }
}

/// What the model needs besides the graphs.
#[derive(Clone, Copy)]
pub(crate) struct ModelInputs {
    pub n_ranks: usize,
    /// `comm->nChannels`.
    pub n_channels: usize,
    /// The (single) compute capability.
    pub cc: u32,
    pub power_cpu: bool,
    pub version: NcclVersion,
}

/// Builds the model (`ncclTopoTuneModel`, AllReduce, one node).
pub(crate) fn model(
    ring: &SearchGraph,
    tree: &SearchGraph,
    inputs: &ModelInputs,
    env: &NcclEnv,
) -> CostModel {
    let ModelInputs {
        n_ranks,
        n_channels,
        cc,
        power_cpu,
        version,
    } = *inputs;
    let cc_index = if cc >= 100 {
        3
    } else if cc >= 90 {
        2
    } else if cc >= 80 {
        1
    } else {
        0
    };
    let ll_max = LL_MAX_BW_N1[cc_index];
    let (ring_ll128_cap, tree_ll128_cap, tree_cap) = per_channel_caps(cc_index, version);
    let simple_default = if ring.bw_intra * ring.n_channels as f32 <= PCI_BW {
        256
    } else {
        SIMPLE_MAX_NTHREADS
    };
    let mut max_threads = [[0i64; NP]; 2];
    max_threads[RING][SIMPLE] =
        nthreads(env.nthreads, 2 * WARP, SIMPLE_MAX_NTHREADS, simple_default);
    max_threads[TREE][SIMPLE] = nthreads(
        env.nthreads,
        2 * WARP,
        SIMPLE_MAX_NTHREADS,
        SIMPLE_MAX_NTHREADS,
    );
    for a in [TREE, RING] {
        max_threads[a][LL] = nthreads(env.nthreads, 2 * WARP, LL_MAX_NTHREADS, LL_MAX_NTHREADS);
        max_threads[a][LL128] = nthreads(
            env.ll128_nthreads,
            LL128_MAX_NTHREADS / 4,
            LL128_MAX_NTHREADS,
            LL128_MAX_NTHREADS,
        );
    }
    let mut thresholds = [THREAD_THRESHOLD; 2];
    thresholds[RING][LL] *= n_ranks as i64;
    if n_ranks <= 1 {
        // ncclTopoTuneModel returns before the model with one rank.
        return CostModel {
            version,
            n_ranks,
            n_channels,
            entries: vec![],
            thresholds,
        };
    }
    let nsteps = 2 * (n_ranks - 1);
    let mut entries = Vec::new();
    let proto_table = env.proto.as_ref().map(|p| p.table[ALLREDUCE].clone());
    let algo_table = env.algo.as_ref().map(|a| a.table[ALLREDUCE].clone());
    for (a, graph) in [(TREE, tree), (RING, ring)] {
        let intra_hw = usize::from(graph.type_intra != PathType::Nvl);
        for p in 0..NP {
            // Bus bandwidth and its refinements, latencies and enable rules:
            // ncclTopoTuneModel, src/graph/tuning.cc v2.28.9-1 (the factors
            // 0.5, 0.92, 1/3.8, 7/9, 0.85 and the ratios are equal at
            // v2.27.7-1 and v2.29.7-1).
            let mut bus = graph.n_channels as f32 * graph.bw_intra;
            let nch = graph.n_channels as f64;
            if a == RING && p == LL {
                bus = ll_max.min(f64::from(bus) * 0.5) as f32;
            }
            if a == RING && p == LL128 {
                bus = (f64::from(bus) * 0.92).min(nch * ring_ll128_cap) as f32;
            }
            if a == TREE {
                bus = (f64::from(bus) * 0.92).min(nch * tree_cap) as f32;
            }
            if a == TREE && p == LL {
                bus = (f64::from(bus) * 1.0 / 3.8).min(ll_max) as f32;
            }
            if a == TREE && p == LL128 {
                bus = (f64::from(bus) * 7.0 / 9.0).min(nch * tree_ll128_cap) as f32;
            }
            if a == TREE && graph.pattern == crate::search::Pattern::Tree {
                bus *= 0.85;
            }
            let ratio: f32 = if a == RING {
                (n_ranks as f64 / nsteps as f64) as f32
            } else {
                0.5
            };
            bus *= ratio;
            let base = BASE_LAT[a][p];
            let mut lat = base;
            let mut hw = HW_LAT[intra_hw][a][p];
            // POWER: Tree Simple gets Ring Simple's PCI latency, to favour Tree.
            if power_cpu && intra_hw == 1 && a == TREE && p == SIMPLE {
                hw = HW_LAT[1][RING][SIMPLE];
            }
            if a == RING {
                lat += nsteps as f32 * hw;
            } else {
                lat += 2.0 * ((n_ranks - 1) as f32 * hw);
            }
            // Enable rules.
            let mut disabled: Option<&'static str> = None;
            let mut p_enable = proto_table
                .as_ref()
                .map_or(if p == LL128 { 2 } else { 1 }, |t| t[p]);
            if p_enable == 2 && p == LL128 {
                let mut on = true;
                if cc >= 90 {
                    on &= graph.type_inter <= PathType::Pxn;
                } else {
                    on &= graph.type_inter <= PathType::Pxb;
                }
                on &= graph.type_intra <= PathType::Nvb;
                on &= cc >= 70;
                p_enable = u8::from(on);
                if !on {
                    disabled = Some(if graph.type_intra > PathType::Nvb {
                        "LL128 is on by default only over NVLink (graph type NVB or nearer)"
                    } else {
                        "LL128 off for this architecture or path"
                    });
                }
            } else if p_enable == 0 {
                disabled = Some("NCCL_PROTO");
            }
            let a_enable = algo_table.as_ref().map_or(1, |t| t[a]);
            if a_enable == 0 {
                disabled = Some("NCCL_ALGO");
            }
            if p_enable == 0 || a_enable == 0 {
                bus = 0.0;
            }
            entries.push(ModelEntry {
                algorithm: Algorithm::from_index(a).expect("tree or ring"),
                protocol: Protocol::from_index(p).expect("three protocols"),
                latency_us: lat,
                base_latency_us: base,
                step_latency_us: hw,
                bandwidth_gbps: bus,
                max_threads: max_threads[a][p] as u32,
                disabled,
            });
        }
    }
    CostModel {
        version,
        n_ranks,
        n_channels,
        entries,
        thresholds,
    }
}

impl CostModel {
    /// The entry for (algorithm, protocol); `None` for one rank or an
    /// algorithm the node does not have.
    pub fn entry(&self, a: Algorithm, p: Protocol) -> Option<&ModelEntry> {
        self.entries
            .iter()
            .find(|e| e.algorithm == a && e.protocol == p)
    }

    /// `comm->threadThresholds` for (Tree, Ring) × (LL, LL128, Simple): the
    /// bytes per thread below which a call uses fewer channels and threads.
    pub fn thread_thresholds(&self) -> ([u64; 3], [u64; 3]) {
        let f = |a: [i64; NP]| a.map(|x| x as u64);
        (f(self.thresholds[TREE]), f(self.thresholds[RING]))
    }

    /// `ncclTopoGetAlgoTime` for AllReduce: µs, or `None` when disabled.
    pub fn time_us(&self, a: Algorithm, p: Protocol, bytes: Bytes) -> Option<f32> {
        let e = self.entry(a, p)?;
        let mut bw = e.bandwidth_gbps;
        if bw == 0.0 {
            return None;
        }
        let log_size = log2i(bytes.0 >> 6);
        if a == Algorithm::Tree {
            bw *= tree_correction(p as usize, log_size, self.version);
        }
        Some(e.latency_us + bytes.0 as f32 / (1000.0 * bw))
    }

    /// What NCCL picks for one AllReduce of `bytes`, elements of `elem`
    /// bytes (for the channel spread only).
    pub fn choose(&self, bytes: Bytes, elem: Bytes) -> Option<SizeChoice> {
        let mut best: Option<(Algorithm, Protocol, f32)> = None;
        let mut candidates = Vec::new();
        for a in [Algorithm::Tree, Algorithm::Ring] {
            for p in Protocol::ALL {
                if let Some(t) = self.time_us(a, p, bytes) {
                    candidates.push((a, p, t));
                    if t >= 0.0 && best.is_none_or(|(_, _, bt)| t < bt) {
                        best = Some((a, p, t));
                    }
                }
            }
        }
        let (a, p, t) = best?;
        let ai = a as usize;
        let pi = p as usize;
        let mut nc = self.n_channels as i64;
        let mut nt = i64::from(self.entry(a, p)?.max_threads);
        let thr = self.thresholds[ai][pi];
        let b = bytes.0 as i64;
        while b < nc * nt * thr && nc >= 2 {
            nc -= 1;
        }
        while b < nc * nt * thr && nt % 128 == 0 {
            nt /= 2;
        }
        if p == Protocol::Simple {
            nt += if a == Algorithm::Ring { WARP } else { 4 * WARP };
        }
        if nt / WARP < 3 {
            nt = 3 * WARP;
        }
        if a == Algorithm::Tree {
            nt = MAX_NTHREADS;
        }
        let (lo, hi) = spread(bytes, elem, nc as usize, self.n_channels, p);
        Some(SizeChoice {
            bytes,
            algorithm: a,
            protocol: p,
            time_us: t,
            time: Picos::from_ns_f64(f64::from(t) * 1000.0),
            max_channels: nc as usize,
            threads: nt as u32,
            channel_lo: lo,
            channel_hi: hi,
            candidates,
        })
    }
}

/// The channels `scheduleCollTasksToPlan` (`src/enqueue.cc` v2.28.9-1)
/// gives one AllReduce launched alone, first and last
/// ([`crate::schedule::channel_counts`] holds the rule).
fn spread(
    bytes: Bytes,
    elem: Bytes,
    task_channels: usize,
    comm_channels: usize,
    p: Protocol,
) -> (usize, usize) {
    let (lo, counts) =
        crate::schedule::channel_counts(bytes, elem, task_channels, comm_channels, p);
    (lo, lo + counts.len().max(1) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nthreads_replaces_invalid_values() {
        assert_eq!(nthreads(None, 64, 512, 256), 256);
        assert_eq!(
            nthreads(Some(100), 64, 512, 256),
            512,
            "not a multiple of 32"
        );
        assert_eq!(nthreads(Some(1024), 64, 512, 256), 512);
        assert_eq!(nthreads(Some(32), 64, 512, 256), 64);
        assert_eq!(nthreads(Some(128), 64, 512, 256), 128);
    }

    #[test]
    fn tree_correction_table_grows_in_2_29() {
        assert_eq!(tree_correction(SIMPLE, 23, NcclVersion::V2_28), 1.0);
        assert_eq!(tree_correction(SIMPLE, 23, NcclVersion::V2_29), 0.9);
        assert_eq!(tree_correction(LL, 12, NcclVersion::V2_28), 0.4);
        assert_eq!(log2i(0), -1);
        assert_eq!(log2i(1024 >> 6), 4);
    }
}
