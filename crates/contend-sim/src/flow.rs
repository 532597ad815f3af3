//! Flow fidelity: each transfer is a fluid flow over the channels of its path.
//! Rates are max-min fair (progressive filling with per-channel weights: a
//! flow of payload rate r uses `coef × r` of a channel, where `coef` is the
//! wire bytes per payload byte there) and capped per flow (reads: Little's
//! law, outstanding requests × request size ÷ round trip). Rates are
//! recomputed whenever a flow starts or ends.
//!
//! `max_min_reference` is the plain twin: it recomputes from scratch with
//! exact bottleneck search; a test compares both on random instances.

use crate::fabric::{ChId, Fabric};
use crate::params::ModelParams;
use contend_topo::{NodeIdx, Picos};

#[derive(Debug)]
pub(crate) struct Flow {
    pub xfer: u32,
    pub remaining: f64,
    pub rate: f64,
    pub cap: f64,
    pub uses: Vec<(ChId, f64)>,
    /// (fabric channel, ingress channel, target root complex) for posted-write collapse.
    pub collapse: Vec<(ChId, ChId, NodeIdx)>,
    /// Time from draining to completion (a read's last round trip).
    pub tail: Picos,
    /// Not started before this time (copy-engine setup).
    pub start: Picos,
}

#[derive(Debug)]
pub(crate) struct FlowState {
    pub flows: Vec<Flow>,
    pub version: u64,
    pub last: Picos,
    /// Busy time per channel, picoseconds-equivalent (for utilisation).
    pub busy: Vec<f64>,
    slot: Vec<usize>,
    res: Vec<Resource>,
    caps: Vec<f64>,
    solver: MaxMin,
    /// A recompute is already scheduled for this time.
    pub pending: Option<Picos>,
}

/// One resource of a max-min problem: capacity and the (flow, weight) pairs using it.
#[derive(Clone, Debug)]
pub struct Resource {
    pub capacity: f64,
    pub users: Vec<(usize, f64)>,
}

/// Weighted max-min fair rates by progressive filling: all unfrozen flows
/// grow together; a flow freezes when a resource it uses saturates or it
/// reaches its cap. Per-resource weight sums and remaining capacities are
/// kept incrementally, so each round costs O(resources + flows).
pub fn max_min(caps: &[f64], resources: &[Resource]) -> Vec<f64> {
    let mut w = MaxMin::default();
    w.solve(caps, resources);
    w.rate
}

/// Reusable buffers for [`max_min`] (the simulator solves many small problems).
#[derive(Debug, Default)]
pub struct MaxMin {
    pub rate: Vec<f64>,
    frozen: Vec<bool>,
    left: Vec<f64>,
    wsum: Vec<f64>,
    sat: Vec<bool>,
    /// (resource, weight) per flow, flattened with offsets.
    uses: Vec<(usize, f64)>,
    start: Vec<usize>,
}

impl MaxMin {
    #[allow(clippy::needless_range_loop)] // parallel arrays indexed by flow and resource
    pub fn solve(&mut self, caps: &[f64], resources: &[Resource]) {
        let n = caps.len();
        let r = resources.len();
        self.rate.clear();
        self.rate.resize(n, 0.0);
        self.frozen.clear();
        self.frozen.extend(caps.iter().map(|c| *c <= 0.0));
        self.left.clear();
        self.left.extend(resources.iter().map(|r| r.capacity));
        self.wsum.clear();
        self.wsum.resize(r, 0.0);
        self.sat.clear();
        self.sat.resize(r, false);
        // bucket the (resource, weight) pairs by flow
        self.start.clear();
        self.start.resize(n + 1, 0);
        for res in resources {
            for &(f, _) in &res.users {
                self.start[f + 1] += 1;
            }
        }
        for i in 0..n {
            self.start[i + 1] += self.start[i];
        }
        self.uses.clear();
        self.uses.resize(self.start[n], (0, 0.0));
        let mut fill = self.start.clone();
        for (ri, res) in resources.iter().enumerate() {
            for &(f, w) in &res.users {
                self.uses[fill[f]] = (ri, w);
                fill[f] += 1;
                if !self.frozen[f] {
                    self.wsum[ri] += w;
                }
            }
        }
        let mut open = self.frozen.iter().filter(|f| !**f).count();
        let mut level = 0.0f64;
        while open > 0 {
            let mut delta = f64::INFINITY;
            for ri in 0..r {
                if !self.sat[ri] && self.wsum[ri] > 1e-15 {
                    delta = delta.min(self.left[ri] / self.wsum[ri]);
                }
            }
            for i in 0..n {
                if !self.frozen[i] {
                    delta = delta.min(caps[i] - level);
                }
            }
            if !delta.is_finite() {
                for i in 0..n {
                    if !self.frozen[i] {
                        self.rate[i] = caps[i];
                    }
                }
                break;
            }
            let delta = delta.max(0.0);
            level += delta;
            for ri in 0..r {
                if !self.sat[ri] {
                    self.left[ri] -= self.wsum[ri] * delta;
                }
            }
            for i in 0..n {
                if !self.frozen[i] {
                    self.rate[i] = level;
                }
            }
            for ri in 0..r {
                if !self.sat[ri]
                    && self.wsum[ri] > 1e-15
                    && self.left[ri] <= resources[ri].capacity * 1e-12
                {
                    self.sat[ri] = true;
                    for &(f, _) in &resources[ri].users {
                        open -= self.freeze(f);
                    }
                }
            }
            for i in 0..n {
                if !self.frozen[i] && level >= caps[i] * (1.0 - 1e-12) {
                    self.rate[i] = caps[i];
                    open -= self.freeze(i);
                }
            }
        }
    }

    /// Freezes flow `f`; 1 if it was open.
    fn freeze(&mut self, f: usize) -> usize {
        if self.frozen[f] {
            return 0;
        }
        self.frozen[f] = true;
        for k in self.start[f]..self.start[f + 1] {
            let (ri, w) = self.uses[k];
            self.wsum[ri] -= w;
        }
        1
    }
}

/// The reference twin: repeatedly find the single most constrained
/// bottleneck (resource fair share or flow cap), fix those flows, remove
/// their usage, repeat. Slower and simpler; must agree with [`max_min`].
pub fn max_min_reference(caps: &[f64], resources: &[Resource]) -> Vec<f64> {
    let n = caps.len();
    let mut rate = vec![f64::NAN; n];
    let mut cap_left: Vec<f64> = resources.iter().map(|r| r.capacity).collect();
    loop {
        let open: Vec<usize> = (0..n).filter(|i| rate[*i].is_nan()).collect();
        if open.is_empty() {
            return rate;
        }
        // the level at which each resource would saturate if all open flows rose together
        let mut best = f64::INFINITY;
        for (ri, r) in resources.iter().enumerate() {
            let w: f64 = r
                .users
                .iter()
                .filter(|(f, _)| rate[*f].is_nan())
                .map(|(_, w)| *w)
                .sum();
            if w > 0.0 {
                best = best.min(cap_left[ri].max(0.0) / w);
            }
        }
        let min_cap = open.iter().map(|i| caps[*i]).fold(f64::INFINITY, f64::min);
        let level = best.min(min_cap);
        if !level.is_finite() {
            for i in open {
                rate[i] = caps[i];
            }
            return rate;
        }
        // fix flows at that level: capped ones and those on saturated resources
        let mut fixed = vec![];
        for &i in &open {
            if caps[i] <= level * (1.0 + 1e-12) {
                fixed.push(i);
            }
        }
        for (ri, r) in resources.iter().enumerate() {
            let w: f64 = r
                .users
                .iter()
                .filter(|(f, _)| rate[*f].is_nan())
                .map(|(_, w)| *w)
                .sum();
            if w > 0.0 && cap_left[ri].max(0.0) / w <= level * (1.0 + 1e-12) {
                fixed.extend(
                    r.users
                        .iter()
                        .map(|(f, _)| *f)
                        .filter(|f| rate[*f].is_nan()),
                );
            }
        }
        fixed.sort_unstable();
        fixed.dedup();
        for &i in &fixed {
            rate[i] = level.min(caps[i]);
        }
        for (ri, r) in resources.iter().enumerate() {
            for (f, w) in &r.users {
                if fixed.contains(f) {
                    cap_left[ri] -= w * rate[*f];
                }
            }
        }
    }
}

impl FlowState {
    pub fn new(chans: usize) -> FlowState {
        FlowState {
            flows: vec![],
            version: 0,
            last: Picos::ZERO,
            busy: vec![0.0; chans],
            slot: vec![],
            res: vec![],
            caps: vec![],
            solver: MaxMin::default(),
            pending: None,
        }
    }

    /// Moves every flow forward to `now` at its current rate.
    pub fn advance(&mut self, now: Picos, fabric: &Fabric) {
        let dt = now.0.saturating_sub(self.last.0) as f64 / 1e12;
        if dt > 0.0 {
            for f in &mut self.flows {
                if f.start > self.last {
                    continue;
                }
                f.remaining -= f.rate * dt;
                for &(c, w) in &f.uses {
                    if let Some(r) = fabric.chans[c as usize].rate {
                        self.busy[c as usize] += f.rate * w * dt / r.0 as f64 * 1e12;
                    }
                }
            }
        }
        self.last = now;
    }

    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        xfer: u32,
        bytes: f64,
        cap: f64,
        uses: Vec<(ChId, f64)>,
        collapse: Vec<(ChId, ChId, NodeIdx)>,
        tail: Picos,
        setup: Picos,
    ) {
        let start = self.last + setup;
        self.flows.push(Flow {
            xfer,
            remaining: bytes,
            rate: 0.0,
            cap,
            uses,
            collapse,
            tail,
            start,
        });
    }

    pub fn recompute(&mut self, fabric: &Fabric, p: &ModelParams) {
        self.version += 1;
        let now = self.last;
        self.caps.clear();
        self.caps.extend(
            self.flows
                .iter()
                .map(|f| if f.start > now { 0.0 } else { f.cap }),
        );
        let mut res = std::mem::take(&mut self.res);
        let mut used = 0usize;
        // channel -> resource index, reset after use
        self.slot.resize(fabric.chans.len(), usize::MAX);
        for (fi, f) in self.flows.iter().enumerate() {
            for &(c, w) in &f.uses {
                let Some(r) = fabric.chans[c as usize].rate else {
                    continue;
                };
                let mut ri = self.slot[c as usize];
                if ri == usize::MAX {
                    if used == res.len() {
                        res.push(Resource {
                            capacity: 0.0,
                            users: vec![],
                        });
                    }
                    res[used].capacity = r.0 as f64;
                    res[used].users.clear();
                    ri = used;
                    used += 1;
                    self.slot[c as usize] = ri;
                }
                res[ri].users.push((fi, w));
            }
        }
        for f in &self.flows {
            for &(c, _) in &f.uses {
                self.slot[c as usize] = usize::MAX;
            }
        }
        // Posted-write collapse: flows through one collapsing fabric from one
        // ingress toward enough distinct root complexes share the collapsed rate.
        let mut groups: std::collections::BTreeMap<(ChId, ChId), (Vec<NodeIdx>, Vec<usize>)> =
            Default::default();
        for (fi, f) in self
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.collapse.is_empty())
        {
            for &(fab, ing, t) in &f.collapse {
                let e = groups.entry((fab, ing)).or_default();
                if !e.0.contains(&t) {
                    e.0.push(t);
                }
                e.1.push(fi);
            }
        }
        res.truncate(used);
        for (_, (targets, flows)) in groups {
            if targets.len() as u32 >= p.root_complex.collapse_min_targets {
                res.push(Resource {
                    capacity: p.root_complex.collapse_gbps * 1e9,
                    users: flows.into_iter().map(|f| (f, 1.0)).collect(),
                });
            }
        }
        self.solver.solve(&self.caps, &res);
        for (f, r) in self.flows.iter_mut().zip(&self.solver.rate) {
            f.rate = *r;
        }
        self.res = res;
    }

    /// When the next flow drains (or a delayed flow starts).
    pub fn next_finish(&self, now: Picos) -> Option<Picos> {
        self.flows
            .iter()
            .filter_map(|f| {
                if f.start > now {
                    Some(f.start)
                } else if f.rate > 0.0 && f.rate.is_finite() {
                    Some(now + Picos((f.remaining.max(0.0) / f.rate * 1e12).ceil() as u64))
                } else if f.rate.is_infinite() {
                    Some(now)
                } else {
                    None
                }
            })
            .min()
    }

    /// Removes drained flows: (transfer, tail latency).
    pub fn take_finished(&mut self) -> Vec<(u32, Picos)> {
        let mut out = vec![];
        self.flows.retain(|f| {
            let done = f.start <= self.last && (f.remaining <= 0.5 || f.rate.is_infinite());
            if done {
                out.push((f.xfer, f.tail));
            }
            !done
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn two_flows_share_one_resource_equally() {
        let r = vec![Resource {
            capacity: 10.0,
            users: vec![(0, 1.0), (1, 1.0)],
        }];
        assert_eq!(max_min(&[f64::INFINITY, f64::INFINITY], &r), vec![5.0, 5.0]);
    }

    #[test]
    fn a_capped_flow_leaves_the_rest_to_the_other() {
        let r = vec![Resource {
            capacity: 10.0,
            users: vec![(0, 1.0), (1, 1.0)],
        }];
        let x = max_min(&[2.0, f64::INFINITY], &r);
        assert!((x[0] - 2.0).abs() < 1e-9 && (x[1] - 8.0).abs() < 1e-9);
    }

    proptest! {
        #[test]
        fn fast_matches_reference(
            caps in proptest::collection::vec(prop_oneof![Just(f64::INFINITY), 1.0f64..100.0], 1..8),
            res in proptest::collection::vec((1.0f64..100.0, proptest::collection::vec((0usize..8, 1.0f64..1.5), 1..5)), 1..6),
        ) {
            let n = caps.len();
            let mut resources: Vec<Resource> = res.into_iter().map(|(c, u)| {
                let mut users: Vec<(usize, f64)> = u.into_iter().filter(|(f, _)| *f < n).collect();
                users.sort_by_key(|(f, _)| *f);
                users.dedup_by_key(|(f, _)| *f);
                Resource { capacity: c, users }
            }).collect();
            // keep every flow bounded: an extra resource for uncapped, unused flows
            resources.push(Resource { capacity: 1000.0, users: (0..n).map(|f| (f, 1.0)).collect() });
            let a = max_min(&caps, &resources);
            let b = max_min_reference(&caps, &resources);
            for (x, y) in a.iter().zip(&b) {
                prop_assert!((x - y).abs() <= 1e-6 * y.abs().max(1.0), "{a:?} vs {b:?}");
            }
            // feasibility: no resource over capacity
            for r in &resources {
                let used: f64 = r.users.iter().map(|(f, w)| a[*f] * w).sum();
                prop_assert!(used <= r.capacity * (1.0 + 1e-9));
            }
        }
    }
}
