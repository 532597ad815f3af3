//! Communicator channels from the ring and tree graphs: replicates the
//! channel setup of `initTransportsRank` (`src/init.cc`: `nChannels =
//! min(tree, ring)`), `ncclTopoPreset` / `ncclTopoPostset`
//! (`src/graph/connect.cc`: every channel doubled, then
//! `NCCL_MAX_NCHANNELS`/`NCCL_MAX_CTAS` cut and `NCCL_MIN_NCHANNELS`/
//! `NCCL_MIN_CTAS` copy), `ncclBuildRings` (`src/graph/rings.cc`) and
//! `ncclTopoComputeP2pChannels` (`src/graph/paths.cc`), all v2.28.9-1 and
//! equal at v2.27.7-1 and v2.29.7-1 for one node.

use crate::env::NcclEnv;
use crate::search::{MAXCHANNELS, SearchGraph};
use serde::Serialize;

/// A rank's place in one channel's tree (NCCL prints it
/// `down0/down1/down2->rank->up`, -1 for none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TreeNode {
    pub up: Option<usize>,
    pub down: Option<usize>,
}

/// The communicator's channels.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Channels {
    /// Channels of the ring and tree graphs after `min(tree, ring)`; the
    /// cost model multiplies the per-channel bandwidth by this.
    pub graph_channels: usize,
    /// `comm->nChannels`: the channels collectives run on.
    pub n_channels: usize,
    /// For each channel, the graph channel it copies.
    pub source: Vec<usize>,
    /// For each channel, the ring as rank 0 prints it (`Channel cc/nn :`).
    pub rings: Vec<Vec<usize>>,
    /// For each channel, each rank's tree neighbours.
    pub trees: Vec<Vec<TreeNode>>,
    /// `p2p channels` and `p2p channels per peer` (send/recv).
    pub p2p_channels: usize,
    pub p2p_channels_per_peer: usize,
    /// How the count came about, in order.
    pub steps: Vec<String>,
}

fn pow2_up(x: usize) -> usize {
    x.max(1).next_power_of_two()
}
fn pow2_down(x: usize) -> usize {
    if x == 0 {
        0
    } else {
        1 << (usize::BITS - 1 - x.leading_zeros())
    }
}

/// Builds the channels. `min_channels_per_peer` is the smallest
/// `ncclTopoGetNchannels` over the pairs (2 over PCIe, more over NVLink).
pub(crate) fn build(
    ring: &SearchGraph,
    tree: &SearchGraph,
    n_ranks: usize,
    min_channels_per_peer: usize,
    env: &NcclEnv,
) -> Channels {
    let mut steps = Vec::new();
    let nc = ring.n_channels.min(tree.n_channels);
    steps.push(format!(
        "search: ring {} × {:.1} GB/s, tree {} × {:.1} GB/s → {nc} (the smaller)",
        ring.n_channels, ring.bw_intra, tree.n_channels, tree.bw_intra
    ));
    let mut n = (2 * nc).min(MAXCHANNELS);
    steps.push(format!("doubled → {n}"));
    // ncclMaxNchannels / ncclMinNchannels (src/graph/connect.cc) and the
    // config's CTA bounds (src/init.cc): defaults 64 and 0, 64 and 1.
    let max_nch = env
        .max_nchannels
        .unwrap_or(MAXCHANNELS as i64)
        .clamp(1, MAXCHANNELS as i64) as usize;
    let min_nch = env.min_nchannels.unwrap_or(0).clamp(0, MAXCHANNELS as i64) as usize;
    let max_ctas = env
        .max_ctas
        .filter(|v| *v > 0)
        .unwrap_or(MAXCHANNELS as i64)
        .min(MAXCHANNELS as i64) as usize;
    let mut min_ctas = env
        .min_ctas
        .filter(|v| *v > 0)
        .unwrap_or(1)
        .min(MAXCHANNELS as i64) as usize;
    min_ctas = min_ctas.min(max_ctas);
    let cut = n.min(max_nch).min(max_ctas);
    if cut < n {
        steps.push(format!(
            "NCCL_MAX_NCHANNELS/NCCL_MAX_CTAS ({}) → {cut}",
            max_nch.min(max_ctas)
        ));
    }
    n = cut;
    let mut source: Vec<usize> = (0..n).map(|c| c % nc.max(1)).collect();
    let target = min_nch.max(min_ctas);
    if target > n {
        for c in n..target {
            let s = source[c - n];
            source.push(s);
        }
        steps.push(format!(
            "NCCL_MIN_NCHANNELS/NCCL_MIN_CTAS ({target}) → {target} (copies)"
        ));
        n = target;
    }
    let mut rings = Vec::with_capacity(n);
    let mut trees = Vec::with_capacity(n);
    for &s in &source {
        let ring_order = ring.channels.get(s).cloned().unwrap_or_default();
        let mut next = vec![0usize; n_ranks];
        for (i, &r) in ring_order.iter().enumerate() {
            next[r] = ring_order[(i + 1) % ring_order.len()];
        }
        let mut from0 = Vec::with_capacity(n_ranks);
        let mut cur = 0;
        for _ in 0..n_ranks {
            from0.push(cur);
            cur = next[cur];
        }
        rings.push(from0);
        let chain = tree.channels.get(s).cloned().unwrap_or_default();
        let mut t = vec![
            TreeNode {
                up: None,
                down: None
            };
            n_ranks
        ];
        for (i, &r) in chain.iter().enumerate() {
            t[r] = TreeNode {
                up: (i > 0).then(|| chain[i - 1]),
                down: chain.get(i + 1).copied(),
            };
        }
        trees.push(t);
    }
    // ncclTopoComputeP2pChannels: NCCL_MAX_P2P_NCHANNELS 64, NCCL_MIN_P2P_NCHANNELS 1.
    let p2p = pow2_up(n.clamp(1, MAXCHANNELS)).min(pow2_down(MAXCHANNELS));
    let per_peer = pow2_up(min_channels_per_peer.min(n.max(1))).min(p2p);
    Channels {
        graph_channels: nc,
        n_channels: n,
        source,
        rings,
        trees,
        p2p_channels: p2p,
        p2p_channels_per_peer: per_peer,
        steps,
    }
}
