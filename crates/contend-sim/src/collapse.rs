//! DESIGN 5 — posted-write collapse, the one rule both fidelities use: when
//! posted writes entering a marked root complex through one ingress port go
//! toward `root_complex.collapse_min_targets` or more distinct target root
//! complexes at once, that port's posted writes through the root complex
//! share `root_complex.collapse_gbps` in total. Reads are never affected.
//!
//! "At once" is what each fidelity can see: at TLP fidelity, writes seen
//! within `root_complex.collapse_window_ns` of each other; at flow fidelity,
//! flows active at the same instant (a fluid flow is seen continuously).

use crate::ids::ChId;
use crate::params::{ModelParams, ns};
use contend_topo::{Bytes, BytesPerSec, NodeIdx, NodeKind, Picos, Route, Topology};

/// The root complex a path's posted writes are bound for: the last root
/// complex the route enters (else the first it leaves).
pub(crate) fn target_root_complex(
    topo: &Topology,
    from: NodeIdx,
    route: &Route,
) -> Option<NodeIdx> {
    let is_rc = |n: &NodeIdx| matches!(topo.node(*n).kind, NodeKind::RootComplex(_));
    route
        .hops
        .iter()
        .rev()
        .map(|h| h.to)
        .chain(std::iter::once(from))
        .find(is_rc)
        .or_else(|| route.hops.iter().rev().map(|h| h.from).find(is_rc))
}

/// The rule's parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CollapseRule {
    min_targets: u32,
    gbps: f64,
    window: Picos,
}

/// How a posted write approaches a collapsing fabric: (ingress channel,
/// target root complex).
pub(crate) type Via = (ChId, NodeIdx);

/// What a collapsing fabric remembers at TLP fidelity: the last time each
/// (ingress, target) pair was seen.
pub(crate) type Recent = Vec<(ChId, NodeIdx, Picos)>;

impl CollapseRule {
    pub fn new(p: &ModelParams) -> CollapseRule {
        CollapseRule {
            min_targets: p.root_complex.collapse_min_targets,
            gbps: p.root_complex.collapse_gbps,
            window: ns(p.root_complex.collapse_window_ns),
        }
    }

    /// Whether this many distinct targets from one ingress collapse it.
    #[inline]
    pub fn fires(&self, distinct_targets: usize) -> bool {
        distinct_targets as u32 >= self.min_targets
    }

    /// TLP fidelity: a posted write of `wire` bytes from `ingress` toward
    /// `target` passes the fabric at `now`. Returns its serialization time
    /// at the collapsed rate if the rule fires.
    pub fn observe(
        &self,
        recent: &mut Recent,
        ingress: ChId,
        target: NodeIdx,
        now: Picos,
        wire: u32,
    ) -> Option<Picos> {
        let window = self.window;
        recent.retain(|&(_, _, t)| now.saturating_sub(t) <= window);
        match recent
            .iter_mut()
            .find(|(i, tg, _)| *i == ingress && *tg == target)
        {
            Some(e) => e.2 = now,
            None => recent.push((ingress, target, now)),
        }
        let distinct = recent.iter().filter(|(i, _, _)| *i == ingress).count();
        self.fires(distinct)
            .then(|| BytesPerSec::from_gbps(self.gbps).time_for(Bytes(wire as u64)))
    }

    /// Flow fidelity: `flows` lists (fabric, ingress, target, flow) of every
    /// active posted-write flow through a collapsing fabric. Returns, per
    /// collapsed (fabric, ingress), the flows that share the collapsed rate
    /// (bytes per second), in a fixed order.
    pub fn collapsed_groups(
        &self,
        flows: impl Iterator<Item = (ChId, ChId, NodeIdx, usize)>,
    ) -> Vec<(f64, Vec<usize>)> {
        let mut groups: std::collections::BTreeMap<(ChId, ChId), (Vec<NodeIdx>, Vec<usize>)> =
            Default::default();
        for (fab, ing, t, fi) in flows {
            let e = groups.entry((fab, ing)).or_default();
            if !e.0.contains(&t) {
                e.0.push(t);
            }
            e.1.push(fi);
        }
        groups
            .into_values()
            .filter(|(targets, _)| self.fires(targets.len()))
            .map(|(_, flows)| (self.gbps * 1e9, flows))
            .collect()
    }
}
