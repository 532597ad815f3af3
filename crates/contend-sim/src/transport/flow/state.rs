//! DESIGN 9 — the fluid state of flow fidelity: each transfer is a flow
//! over the channels of its path, using `coef × rate` of each (its wire
//! bytes per payload byte there), capped per flow (reads: Little's law on
//! their share of the load window, from their second window on: the first
//! window's requests all go out at once, so only the link bounds its bytes),
//! advanced between recomputes; the rules
//! of stages that change with the traffic ([`StageRule`]) give their
//! resources: posted writes through a collapsing port share the collapse
//! rule's rate, cross-socket P2P gets the rate for its concurrent streams
//! and each stream its cap.

use crate::fabric::{Fabric, StageRule};
use crate::ids::{ChId, XferId};
use crate::maxmin::{MaxMin, Resource};
use contend_topo::{NodeIdx, Picos};

#[derive(Debug)]
pub(crate) struct Flow {
    pub xfer: XferId,
    pub remaining: f64,
    pub rate: f64,
    pub cap: f64,
    /// The cap binds once `remaining` is down to this: the bytes above it
    /// are the first window, requested at once, bounded by the links alone
    /// (0 for flows whose cap binds from their first byte: writes, whose
    /// cap is the rate their stores issue at).
    pub capped_below: f64,
    pub uses: Vec<(ChId, f64)>,
    /// Channels with a rule, and what the rule sees of the flow's path
    /// (collapse entries only for posted writes).
    pub rules: Vec<(ChId, NodeIdx, NodeIdx)>,
    /// Time from draining to completion (a read's last round trip).
    pub tail: Picos,
    /// Not started before this time (copy-engine setup).
    pub start: Picos,
    /// The rule channel holding the flow at its current rate, if any
    /// (collapsed writes, a cross-socket stream at its cap).
    pub held: Option<ChId>,
}

impl Flow {
    /// Whether the flow still drains its first window (half a byte of
    /// slack, as [`FlowState::take_finished`] allows).
    fn in_first_window(&self) -> bool {
        self.remaining > self.capped_below + 0.5
    }

    /// The flow's own cap now: none through its first window.
    fn cap_now(&self) -> f64 {
        if self.in_first_window() {
            f64::INFINITY
        } else {
            self.cap
        }
    }
}

#[derive(Debug)]
pub(crate) struct FlowState {
    pub flows: Vec<Flow>,
    pub version: u64,
    pub last: Picos,
    /// Busy time per channel, picoseconds-equivalent (for utilisation).
    pub busy: Vec<f64>,
    /// Payload bytes per rule channel (channels with a stage rule only),
    /// and those its rule held.
    pub bytes: Vec<f64>,
    pub ruled: Vec<f64>,
    slot: Vec<usize>,
    res: Vec<Resource>,
    caps: Vec<f64>,
    solver: MaxMin,
    /// A recompute is already scheduled for this time.
    pub pending: Option<Picos>,
}

impl FlowState {
    pub fn new(chans: usize) -> FlowState {
        FlowState {
            flows: vec![],
            version: 0,
            last: Picos::ZERO,
            busy: vec![0.0; chans],
            bytes: vec![0.0; chans],
            ruled: vec![0.0; chans],
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
                if let Some(c) = f.held {
                    self.ruled[c.ix()] += f.rate * dt;
                }
                for &(c, _, _) in &f.rules {
                    self.bytes[c.ix()] += f.rate * dt;
                }
                for &(c, w) in &f.uses {
                    if let Some(r) = fabric.chans[c].rate {
                        self.busy[c.ix()] += f.rate * w * dt / r.0 as f64 * 1e12;
                    }
                }
            }
        }
        self.last = now;
    }

    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        xfer: XferId,
        bytes: f64,
        cap: f64,
        uncapped: f64,
        uses: Vec<(ChId, f64)>,
        rules: Vec<(ChId, NodeIdx, NodeIdx)>,
        tail: Picos,
        setup: Picos,
    ) {
        let start = self.last + setup;
        self.flows.push(Flow {
            xfer,
            remaining: bytes,
            rate: 0.0,
            cap,
            capped_below: (bytes - uncapped.clamp(0.0, bytes)).max(0.0),
            uses,
            rules,
            tail,
            start,
            held: None,
        });
    }

    pub fn recompute(&mut self, fabric: &Fabric) {
        self.solve(fabric);
        // A first window no rated channel bounds goes out and lands at once:
        // the flow is through it, and its cap binds from there.
        let mut jumped = false;
        for f in &mut self.flows {
            if f.rate.is_infinite() && f.in_first_window() {
                f.remaining = f.capped_below;
                jumped = true;
            }
        }
        if jumped {
            self.solve(fabric);
        }
    }

    fn solve(&mut self, fabric: &Fabric) {
        self.version += 1;
        let now = self.last;
        self.caps.clear();
        self.caps.extend(
            self.flows
                .iter()
                .map(|f| if f.start > now { 0.0 } else { f.cap_now() }),
        );
        // every flow on a channel with a rule, by channel
        let mut ruled: std::collections::BTreeMap<ChId, Vec<(usize, NodeIdx, NodeIdx)>> =
            Default::default();
        for (fi, f) in self.flows.iter().enumerate() {
            for &(c, a, b) in &f.rules {
                ruled.entry(c).or_default().push((fi, a, b));
            }
        }
        let mut res = std::mem::take(&mut self.res);
        // rule resources whose flows the rule holds when they are full:
        // (channel, resource index)
        let mut watched: Vec<(ChId, usize)> = vec![];
        let mut used = 0usize;
        // channel -> resource index, reset after use
        self.slot.resize(fabric.chans.len(), usize::MAX);
        for (fi, f) in self.flows.iter().enumerate() {
            for &(c, w) in &f.uses {
                let Some(r) = fabric.chans[c].rate else {
                    continue;
                };
                let mut ri = self.slot[c.ix()];
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
                    self.slot[c.ix()] = ri;
                }
                res[ri].users.push((fi, w));
            }
        }
        res.truncate(used);
        for (c, members) in &ruled {
            match &fabric.chans[*c].rule {
                // Posted-write collapse: writes through one collapsing port
                // from enough sources toward enough root complexes share the
                // collapsed rate.
                StageRule::Collapse(rule) => {
                    for (capacity, flows) in rule.collapsed_groups(members) {
                        watched.push((*c, res.len()));
                        res.push(Resource {
                            capacity,
                            users: flows.into_iter().map(|f| (f, 1.0)).collect(),
                        });
                    }
                }
                // Cross-socket P2P: the shared rate for this many streams,
                // and each stream's cap.
                StageRule::CrossSocket(rule) => {
                    let keyed: Vec<(usize, (NodeIdx, NodeIdx))> =
                        members.iter().map(|&(f, a, b)| (f, (a, b))).collect();
                    let (shared, streams) = rule.resources(&keyed);
                    let ri = self.slot[c.ix()];
                    if ri != usize::MAX {
                        res[ri].capacity = shared;
                    }
                    for (capacity, flows) in streams {
                        watched.push((*c, res.len()));
                        res.push(Resource {
                            capacity,
                            users: flows.into_iter().map(|f| (f, 1.0)).collect(),
                        });
                    }
                }
                StageRule::None => {}
            }
        }
        for f in &self.flows {
            for &(c, _) in &f.uses {
                self.slot[c.ix()] = usize::MAX;
            }
        }
        self.solver.solve(&self.caps, &res);
        for (f, r) in self.flows.iter_mut().zip(&self.solver.rate) {
            f.rate = *r;
            f.held = None;
        }
        for (c, ri) in watched {
            let r = &res[ri];
            let used: f64 = r.users.iter().map(|&(f, w)| self.flows[f].rate * w).sum();
            if used >= 0.999 * r.capacity {
                for &(f, _) in &r.users {
                    self.flows[f].held = Some(c);
                }
            }
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
                    // drained, or through its first window (its cap binds from there)
                    let to = if f.in_first_window() {
                        f.remaining - f.capped_below
                    } else {
                        f.remaining.max(0.0)
                    };
                    Some(now + Picos((to / f.rate * 1e12).ceil() as u64))
                } else if f.rate.is_infinite() {
                    Some(now)
                } else {
                    None
                }
            })
            .min()
    }

    /// Removes drained flows: (transfer, tail latency).
    pub fn take_finished(&mut self) -> Vec<(XferId, Picos)> {
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
