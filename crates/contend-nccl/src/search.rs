//! Ring and tree search inside one node: replicates `ncclTopoSearchInit`,
//! `ncclTopoCompute`, `ncclTopoSearchRec`, `ncclTopoSearchRecGpu`,
//! `ncclTopoSearchNextGpuSort`, `ncclTopoFollowPath`/`followPath`,
//! `ncclTopoCompareGraphs` and `ncclTopoDupChannels` of
//! `src/graph/search.cc` (v2.28.9-1; v2.27.7-1 equal for one node;
//! v2.29.7-1 adds 45 GB/s to the SM100 intra-node speeds).
//!
//! NCCL tries per-channel bandwidths from a fixed list (by compute
//! capability), highest first, skipping those above the best GPU-to-GPU
//! path. For each it walks GPU orders depth first — PCI order first, then
//! each start GPU, next GPUs sorted by path bandwidth and hops — charging
//! the bandwidth on every link of every hop (×6/5 on the PCI links of a
//! path through an Intel CPU's root complex), and keeps the solution with
//! the most channels × bandwidth. It widens the allowed path type step by
//! step (starting from the nearest pair's), lowers the bandwidth while the
//! next one is above half the best found, then duplicates channels of
//! ≥ 25 GB/s, and finally tries higher bandwidths with that many channels.
//! Every recursion step costs one unit of a fixed time budget, as in NCCL.
//! The loop over speeds and path types, its inputs and the channel
//! duplication are in `search/compute.rs`; the recursion is here.

use self::tables::{Hop, Tables};
use crate::paths::PathType;
use crate::system::System;
use serde::Serialize;

/// NCCL's graph patterns (`NCCL_TOPO_PATTERN_*`, `src/include/graph.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Pattern {
    BalancedTree = 1,
    SplitTree = 2,
    Tree = 3,
    Ring = 4,
}

impl Pattern {
    pub fn code(self) -> u8 {
        self as u8
    }
    fn is_tree(self) -> bool {
        !matches!(self, Pattern::Ring)
    }
}

/// `MAXCHANNELS` (`src/include/device.h`, v2.27.7-1 … v2.29.7-1).
pub const MAXCHANNELS: usize = 64;

/// A search result (`struct ncclTopoGraph`, the fields used in one node).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchGraph {
    pub pattern: Pattern,
    pub n_channels: usize,
    /// Per-channel bandwidth, GB/s (NCCL's `float`).
    pub bw_intra: f32,
    pub bw_inter: f32,
    pub type_intra: PathType,
    pub type_inter: PathType,
    pub same_channels: bool,
    /// Ranks of each channel in order (`intra`).
    pub channels: Vec<Vec<usize>>,
    /// No speed worked: NCCL's "Could not find a path for pattern N,
    /// falling back to simple order" (one channel at 0.1 GB/s).
    pub fallback: bool,
    /// The per-channel speeds the search tried (NCCL's list for the
    /// compute capability), GB/s.
    pub speeds: Vec<f32>,
    #[serde(skip)]
    pub(crate) min_channels: usize,
    #[serde(skip)]
    pub(crate) max_channels: usize,
    #[serde(skip)]
    n_hops: i64,
    #[serde(skip)]
    intra: Vec<usize>,
}

impl SearchGraph {
    pub(crate) fn new(
        pattern: Pattern,
        min_channels: usize,
        max_channels: usize,
        ngpus: usize,
    ) -> SearchGraph {
        SearchGraph {
            pattern,
            n_channels: 0,
            bw_intra: 0.0,
            bw_inter: 0.0,
            type_intra: PathType::Loc,
            type_inter: PathType::Pix,
            same_channels: true,
            channels: vec![],
            fallback: false,
            speeds: vec![],
            min_channels,
            max_channels,
            n_hops: 0,
            intra: vec![0; MAXCHANNELS * ngpus.max(1)],
        }
    }

    /// A graph given whole (from `NCCL_GRAPH_FILE`).
    pub(crate) fn from_channels(
        pattern: Pattern,
        channels: Vec<Vec<usize>>,
        bw_intra: f32,
        bw_inter: f32,
        type_intra: PathType,
        type_inter: PathType,
        same_channels: bool,
    ) -> SearchGraph {
        let n = channels.len();
        SearchGraph {
            pattern,
            n_channels: n,
            bw_intra,
            bw_inter,
            type_intra,
            type_inter,
            same_channels,
            channels,
            fallback: false,
            speeds: vec![],
            min_channels: n,
            max_channels: n,
            n_hops: 0,
            intra: vec![],
        }
    }

    /// The per-channel bandwidth as a rate.
    pub fn bandwidth(&self) -> contend_topo::BytesPerSec {
        contend_topo::BytesPerSec::from_gbps(f64::from(self.bw_intra))
    }

    fn finish(&mut self, ngpus: usize) {
        self.channels = (0..self.n_channels)
            .map(|c| self.intra[c * ngpus..(c + 1) * ngpus].to_vec())
            .collect();
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    Normal,
    Pci,
    Replay,
}

/// How a walk proceeds: the step that closes a ring (`backToFirstRank`),
/// and the GPU order (`forcedOrder`).
#[derive(Clone, Copy)]
struct Walk {
    back_to_first: Option<usize>,
    order: Order,
}

/// NCCL's recursion (`ncclTopoSearchRec`), as driven by [`drive`](compute::drive): the
/// search below, and in tests its reference (`reference.rs`).
trait Recursion {
    /// Sets the budget of one search (`*time`).
    fn set_time(&mut self, time: i64);
    /// The budget left: 0 when spent, -1 after a perfect solution.
    fn time(&self) -> i64;
    /// Recursion steps taken so far, each one unit of budget.
    fn steps(&self) -> u64;
    /// `ncclTopoSearchRec` inside one node.
    fn rec(&mut self, g: &mut SearchGraph, save: &mut SearchGraph);
}

/// The search state: NCCL's `ncclTopoSearchRec*` over [`Tables`]. Every
/// step is the reference's step in the same order (the test in
/// `reference.rs` checks result and budget on every shipped, synthetic and
/// random PCIe tree); only the lookups are precomputed.
struct Searcher<'a> {
    t: &'a Tables,
    /// Remaining bandwidth per link during the search.
    bw: Vec<f32>,
    /// Per GPU, the channels (bits) it is already in.
    used: Vec<u64>,
    /// The search's remaining budget (`*time` in NCCL): -1 once a perfect
    /// solution is found, 0 when spent.
    time: i64,
    steps: u64,
    /// Per GPU `g`, `cand[g * (ngpus - 1)..][..cand_len[g]]`: the order of
    /// [`Tables::next_of`] less the GPUs `ncclTopoFollowPath` refuses by
    /// path type alone (farther than `typeIntra`, or for trees the way
    /// back farther), for the `typeIntra` and pattern in `cand_key`.
    /// A refused GPU costs NCCL no step and changes nothing, so leaving it
    /// out of the loop leaves the search as it was.
    cand: Vec<usize>,
    cand_len: Vec<usize>,
    cand_key: Option<(PathType, bool)>,
}

impl<'a> Searcher<'a> {
    fn new(t: &'a Tables, sys: &System) -> Searcher<'a> {
        Searcher {
            t,
            bw: sys.links.iter().map(|l| l.bw).collect(),
            used: vec![0; t.ngpus],
            time: 0,
            steps: 0,
            cand: vec![0; t.next.len()],
            cand_len: vec![0; t.ngpus],
            cand_key: None,
        }
    }

    /// Fills `cand` for the graph's `typeIntra` and pattern (fixed for a
    /// whole search: `ncclTopoCompute` changes them between searches).
    fn prepare(&mut self, g: &SearchGraph) {
        let key = (g.type_intra, g.pattern.is_tree());
        if self.cand_key == Some(key) {
            return;
        }
        let t = self.t;
        let stride = t.ngpus.saturating_sub(1);
        for gpu in 0..t.ngpus {
            let mut k = 0;
            for &h in t.next_of(gpu) {
                let p = t.pair(gpu, h);
                let refused =
                    p.ptype >= PathType::Dis || p.ptype > key.0 || (key.1 && p.rev_type > key.0);
                if !refused {
                    self.cand[gpu * stride + k] = h;
                    k += 1;
                }
            }
            self.cand_len[gpu] = k;
        }
        self.cand_key = Some(key);
    }

    /// `followPath`: charges `bw` on the links `hops` (the first
    /// `max_steps` of the path); returns how many it could.
    fn follow(&mut self, hops: &[Hop], intel_overhead: bool, bw: f32) -> usize {
        // INTEL_P2P_OVERHEAD(bw) = bw*6/5 (`src/graph/topo.h`): Intel root
        // complexes split P2P into 64 B TLPs.
        let pci_bw = if intel_overhead { bw * 6.0 / 5.0 } else { bw };
        for (step, h) in hops.iter().enumerate() {
            let fw = if h.pci { pci_bw } else { bw };
            let rem = &mut self.bw[h.link];
            if *rem < fw {
                return step;
            }
            // SUB_ROUND: keep three decimals against float drift.
            *rem = ((*rem - fw) * 1000.0).round() / 1000.0;
        }
        hops.len()
    }

    /// `ncclTopoFollowPath` between GPUs (`from: None` is the search start).
    fn follow_path(
        &mut self,
        g: &mut SearchGraph,
        from: Option<usize>,
        to: usize,
        mult: f32,
    ) -> bool {
        let Some(g1) = from else {
            return true;
        };
        let t = self.t;
        let p = t.pair(g1, to);
        if p.ptype >= PathType::Dis {
            return false;
        }
        if mult == 1.0 && p.ptype > g.type_intra {
            return false;
        }
        if mult == 1.0 && g.pattern.is_tree() && p.rev_type > g.type_intra {
            return false;
        }
        let bw = g.bw_intra * mult;
        let hops = t.hops_of(p);
        let step = self.follow(hops, p.intel_overhead, bw);
        if step < p.count as usize {
            self.follow(&hops[..step], p.intel_overhead, -bw);
            return false;
        }
        g.n_hops += (mult * p.count as f32) as i64;
        true
    }

    fn replay_gpu(&self, g: &SearchGraph, step: isize) -> usize {
        let n = self.t.ngpus;
        let rank = g.intra[(g.n_channels - 1) * n + (step + 1) as usize];
        self.t.gpu_of[rank]
    }

    fn try_gpu(
        &mut self,
        g: &mut SearchGraph,
        save: &mut SearchGraph,
        step: usize,
        walk: Walk,
        from: Option<usize>,
        to: usize,
    ) {
        let flag = 1u64 << g.n_channels;
        if self.follow_path(g, from, to, 1.0) {
            self.used[to] ^= flag;
            self.rec_gpu(g, save, to, step, walk);
            self.used[to] ^= flag;
            self.follow_path(g, from, to, -1.0);
        }
    }

    fn rec_gpu(
        &mut self,
        g: &mut SearchGraph,
        save: &mut SearchGraph,
        gpu: usize,
        step: usize,
        walk: Walk,
    ) {
        if self.time <= 0 {
            return;
        }
        self.time -= 1;
        self.steps += 1;
        let t = self.t;
        let n = t.ngpus;
        if step == n {
            g.n_channels += 1;
            if better(g, save) {
                *save = g.clone();
                if g.n_channels == g.max_channels {
                    self.time = -1;
                }
            }
            if g.n_channels < g.max_channels {
                self.rec(g, save);
            }
            g.n_channels -= 1;
            return;
        }
        g.intra[g.n_channels * n + step] = t.rank_of[gpu];
        if step + 1 < n {
            match walk.order {
                Order::Pci => self.try_gpu(g, save, step + 1, walk, Some(gpu), step + 1),
                Order::Replay => {
                    let h = self.replay_gpu(g, step as isize);
                    self.try_gpu(g, save, step + 1, walk, Some(gpu), h);
                }
                Order::Normal => {
                    // NCCL sorts the unused GPUs first, then tries each. The
                    // order is fixed per GPU (Tables::next_of, less the GPUs
                    // refused by type: `cand`), and the filter may be read
                    // as we go: every try_gpu gives back `used` (its XOR
                    // undone) and `n_channels` (a finished channel is
                    // counted back), so `used` at each candidate is `used`
                    // at the sort.
                    debug_assert_eq!(self.cand_key, Some((g.type_intra, g.pattern.is_tree())));
                    let flag = 1u64 << g.n_channels;
                    let base = gpu * (n - 1);
                    for k in 0..self.cand_len[gpu] {
                        let h = self.cand[base + k];
                        if self.used[h] & flag != 0 {
                            continue;
                        }
                        self.try_gpu(g, save, step + 1, walk, Some(gpu), h);
                    }
                }
            }
        } else if walk.back_to_first == Some(step) {
            let first = t.gpu_of[g.intra[g.n_channels * n]];
            if self.follow_path(g, Some(gpu), first, 1.0) {
                let w = Walk {
                    back_to_first: None,
                    ..walk
                };
                self.rec_gpu(g, save, first, step + 1, w);
                self.follow_path(g, Some(gpu), first, -1.0);
            }
        } else {
            let w = Walk {
                back_to_first: None,
                ..walk
            };
            self.rec_gpu(g, save, gpu, n, w);
        }
    }
}

impl Recursion for Searcher<'_> {
    fn set_time(&mut self, time: i64) {
        self.time = time;
    }
    fn time(&self) -> i64 {
        self.time
    }
    fn steps(&self) -> u64 {
        self.steps
    }
    fn rec(&mut self, g: &mut SearchGraph, save: &mut SearchGraph) {
        self.prepare(g);
        let n = self.t.ngpus;
        let back_to_first = (g.pattern == Pattern::Ring).then(|| n - 1);
        let walk = |order| Walk {
            back_to_first,
            order,
        };
        if g.n_channels == 0 {
            self.try_gpu(g, save, 0, walk(Order::Pci), None, 0);
        } else {
            let first = self.replay_gpu(g, -1);
            self.try_gpu(g, save, 0, walk(Order::Replay), None, first);
        }
        if !g.same_channels || g.n_channels == 0 {
            for start in 0..n {
                self.try_gpu(g, save, 0, walk(Order::Normal), None, start);
            }
        }
    }
}

/// `ncclTopoCompareGraphs` for one node: more channels × bandwidth wins,
/// then fewer hops with the same pattern.
fn better(g: &SearchGraph, reference: &SearchGraph) -> bool {
    if g.n_channels < g.min_channels {
        return false;
    }
    let a = g.n_channels as f32 * g.bw_intra;
    let b = reference.n_channels as f32 * reference.bw_intra;
    if a > b {
        return true;
    }
    if a < b {
        return false;
    }
    g.pattern == reference.pattern && g.n_hops < reference.n_hops
}

mod compute;
#[cfg(test)]
mod reference;
mod tables;

#[cfg(test)]
use self::compute::{Search, drive};
pub(crate) use self::compute::{compute, max_and_total_bw};
