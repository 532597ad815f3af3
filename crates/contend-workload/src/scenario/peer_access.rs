//! A scenario's peer access: the pairs of its ranks' GPUs without P2P (the
//! topology's fact, or `NCCL_P2P_DISABLE=1` read as the user's word where a
//! custom kernel runs), and the placements that run because of it — `host`
//! instead of `peer`, since no kernel can load or store a peer's buffer
//! there — with what to say about it.

use super::ScenarioSpec;
use crate::kinds::{Algorithm, Placement};
use contend_topo::{NoP2p, PairWithoutP2p};

/// The pairs without P2P and the placements that run.
pub(super) fn placements(spec: &ScenarioSpec) -> (Vec<PairWithoutP2p>, Vec<Placement>) {
    let mut no_p2p = spec.topology.pairs_without_p2p(&spec.ranks);
    let custom = spec.algorithms.iter().any(|a| *a != Algorithm::Nccl);
    if no_p2p.is_empty() && spec.nccl.env.p2p_disable && custom {
        // the user's word that P2P does not work here (for NCCL alone, as a
        // measured NCCL-through-host run, it says only that)
        for (i, &a) in spec.ranks.iter().enumerate() {
            for &b in &spec.ranks[i + 1..] {
                no_p2p.push(PairWithoutP2p {
                    a,
                    b,
                    why: NoP2p::NcclP2pDisable,
                });
            }
        }
    }
    let mut placements = Vec::new();
    for &p in &spec.placements {
        let p = if no_p2p.is_empty() {
            p
        } else {
            Placement::Host
        };
        if !placements.contains(&p) {
            placements.push(p);
        }
    }
    (no_p2p, placements)
}

/// `no_p2p` in words: which pairs, why, and what runs instead.
pub(super) fn note(spec: &ScenarioSpec, no_p2p: &[PairWithoutP2p]) -> Option<String> {
    let what = spec.topology.describe_no_p2p(no_p2p, spec.ranks.len())?;
    let asked_peer = spec.placements.contains(&Placement::Peer);
    Some(format!(
        "{what}. {}NCCL goes through host memory (SHM) there",
        if asked_peer {
            "Custom kernels run with their buffers in host memory (placement host, not peer); "
        } else {
            ""
        }
    ))
}
