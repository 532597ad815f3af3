//! The fixed facts one search reads ~10⁶ times at 64 GPUs, taken once
//! from [`Paths`]: per ordered GPU pair its path type, hops and links, per
//! GPU the order `ncclTopoSearchNextGpuSort` gives the others
//! (`src/graph/search.cc` v2.28.9-1), and the rank ↔ GPU maps.

use crate::paths::{PathType, Paths};
use crate::system::{LinkType, NodeKind, System};

/// What the search reads of one ordered GPU pair, taken once from
/// [`Paths`] ([`Tables::new`]): the recursion looks up the path from the
/// current GPU to each candidate ~10⁶ times at 64 GPUs, where NCCL reads
/// `gpu->paths[GPU][index]` directly.
#[derive(Clone, Copy)]
pub(super) struct Pair {
    /// `path->type` of `g1 → g2`, and of `g2 → g1` (trees check both).
    pub(super) ptype: PathType,
    pub(super) rev_type: PathType,
    /// `path->count`; the links are `Tables::hops[first..first + count]`.
    pub(super) count: u32,
    pub(super) first: u32,
    /// Whether `followPath` charges `INTEL_P2P_OVERHEAD` on the PCI links:
    /// an Intel CPU, a PHB path, and a link of it into the CPU.
    pub(super) intel_overhead: bool,
}

/// One link of a pair's path: its index and whether it is PCI (the links
/// `INTEL_P2P_OVERHEAD` applies to).
#[derive(Clone, Copy)]
pub(super) struct Hop {
    pub(super) link: usize,
    pub(super) pci: bool,
}

/// The fixed facts of one search: per ordered GPU pair its [`Pair`], per
/// GPU the other GPUs in `ncclTopoSearchNextGpuSort`'s order, and the
/// rank ↔ GPU maps. Nothing here changes while the search runs (paths
/// and their bandwidths are fixed; only link bandwidths and `used` move).
pub(super) struct Tables {
    pub(super) ngpus: usize,
    /// `pairs[g1 * ngpus + g2]`.
    pub(super) pairs: Vec<Pair>,
    pub(super) hops: Vec<Hop>,
    /// Per GPU `g`, `next[g * (ngpus - 1)..][..next_len[g]]`: the other
    /// GPUs sorted as `ncclTopoSearchNextGpuSort` sorts them, before the
    /// filter on GPUs already in the channel.
    pub(super) next: Vec<usize>,
    pub(super) next_len: Vec<usize>,
    pub(super) rank_of: Vec<usize>,
    pub(super) gpu_of: Vec<usize>,
}

impl Tables {
    pub(super) fn new(sys: &System, paths: &Paths) -> Tables {
        let n = sys.gpus.len();
        let intel = sys.cpu.is_intel();
        let mut pairs = Vec::with_capacity(n * n);
        let mut hops = Vec::new();
        for g1 in 0..n {
            for g2 in 0..n {
                let path = paths.get(sys.gpus[g1], sys.gpus[g2]);
                let rev = paths.get(sys.gpus[g2], sys.gpus[g1]);
                let first = hops.len();
                // A missing path is disconnected: `followPath` refuses it.
                // (compute's type scan and the system build never leave one.)
                let Some(p) = path else {
                    pairs.push(Pair {
                        ptype: PathType::Dis,
                        rev_type: rev.map_or(PathType::Dis, |r| r.ptype),
                        count: 0,
                        first: first as u32,
                        intel_overhead: false,
                    });
                    continue;
                };
                hops.extend(p.links.iter().map(|&l| Hop {
                    link: l,
                    pci: sys.links[l].ltype == LinkType::Pci,
                }));
                let intel_overhead = intel
                    && p.ptype == PathType::Phb
                    && p.links
                        .iter()
                        .any(|&l| matches!(sys.nodes[sys.links[l].to].kind, NodeKind::Cpu { .. }));
                pairs.push(Pair {
                    ptype: p.ptype,
                    rev_type: rev.map_or(PathType::Dis, |r| r.ptype),
                    count: p.hops() as u32,
                    first: first as u32,
                    intel_overhead,
                });
            }
        }
        let stride = n.saturating_sub(1);
        let mut next = vec![0; n * stride];
        let mut next_len = vec![0; n];
        let mut scores: Vec<(i64, usize, usize, usize)> = Vec::with_capacity(stride);
        for gpu in 0..n {
            scores.clear();
            for i in 1..n {
                let h = (gpu + i) % n;
                // `path->bw` truncated to an integer, then `path->count`.
                let Some(p) = paths.get(sys.gpus[gpu], sys.gpus[h]) else {
                    continue;
                };
                if p.hops() == 0 {
                    continue;
                }
                scores.push((p.bw as i64, p.hops(), i, h));
            }
            // Bandwidth descending, then hops, then index distance: `i` is
            // unique, so this order is total and any sort gives it.
            scores.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
            for (k, s) in scores.iter().enumerate() {
                next[gpu * stride + k] = s.3;
            }
            next_len[gpu] = scores.len();
        }
        let rank_of: Vec<usize> = (0..n).map(|g| sys.rank_of_gpu(g)).collect();
        let mut gpu_of = vec![0; n];
        for (g, &r) in rank_of.iter().enumerate() {
            gpu_of[r] = g;
        }
        Tables {
            ngpus: n,
            pairs,
            hops,
            next,
            next_len,
            rank_of,
            gpu_of,
        }
    }

    pub(super) fn pair(&self, g1: usize, g2: usize) -> &Pair {
        &self.pairs[g1 * self.ngpus + g2]
    }

    pub(super) fn hops_of(&self, p: &Pair) -> &[Hop] {
        &self.hops[p.first as usize..(p.first + p.count) as usize]
    }

    /// The candidates after `gpu`, best first (`ncclTopoSearchNextGpuSort`
    /// without its `used` filter, which the searcher's `rec_gpu` applies).
    pub(super) fn next_of(&self, gpu: usize) -> &[usize] {
        let stride = self.ngpus - 1;
        &self.next[gpu * stride..gpu * stride + self.next_len[gpu]]
    }
}
