//! The max-min problem kept across flow starts and finishes
//! ([`LiveMaxMin`](crate::fidelity::flow::maxmin_live::LiveMaxMin)): flows join it when
//! first solved and leave it when they drain, cross-socket streams are
//! counted as they come and go, and a collapsing channel's groups are
//! worked out again only when its flows change.

use super::{FlowState, HELD, NO_SLOT};
use crate::engine::ids::{ChId, FxMap};
use crate::fidelity::flow::maxmin_live::FIRST_MET;
use crate::model::channel::StageRule;
use crate::model::fabric::Fabric;
use contend_topo::NodeIdx;

/// A rule with more than this share of its rate left after a solve holds
/// none of its flows: what the solve leaves is within rounding of the rate
/// less what the flows use, so they use less than [`HELD`] of it.
const HELD_FAR: f64 = 0.01;

/// What the kept problem knows of a cross-socket channel: its streams
/// (flows on each, and each one's cap resource, `u32::MAX`: no cap) and
/// how many have flows.
#[derive(Debug, Default)]
pub(super) struct CrossLive {
    streams: FxMap<(NodeIdx, NodeIdx), (u32, u32)>,
    active: usize,
}

/// What the kept problem knows of a collapsing channel: its flows in order
/// (slot, source, target), its group resources, and whether it changed
/// since its groups were worked out.
#[derive(Debug, Default)]
pub(super) struct CollapseLive {
    members: Vec<(u32, NodeIdx, NodeIdx, f64)>,
    groups: Vec<u32>,
    dirty: bool,
}

impl FlowState {
    /// Collapsing channel `c` saw a change its groups hang on (a flag seen
    /// or over): the rates are worked out again, its groups in the kept
    /// problem too.
    pub(super) fn collapse_changed(&mut self, c: ChId) {
        self.idle_joined = false;
        let k = self.collapse.entry(c).or_default();
        if !k.dirty {
            k.dirty = true;
            self.dirty.push(c);
        }
    }

    /// Brings the kept problem up to the flows: those gone leave it (and
    /// their rules' streams and members), the new ones (the last flows,
    /// in order) join it, and the collapsing channels that changed get
    /// their groups worked out again.
    pub(super) fn sync(&mut self, fabric: &Fabric) {
        // channel c is resource c: made first, once (the fabric's channels
        // are made with it)
        if self.live.constraints() == 0 {
            for i in 0..fabric.chans.len() {
                let rate = fabric.chans[ChId(i as u32)].rate;
                self.live
                    .constraint(rate.map_or(0.0, |r| r.0 as f64), FIRST_MET);
            }
        }
        // (the list goes back empty, its capacity kept)
        let mut gone = std::mem::take(&mut self.gone);
        for &(s, kind) in &gone {
            for &(c, a, b, _) in &self.kinds[kind as usize].rules {
                match &fabric.chans[c].rule {
                    StageRule::CrossSocket(rule) => {
                        let x = self.cross.get_mut(&c).expect("a stream's channel is known");
                        let e = x.streams.get_mut(&(a, b)).expect("a stream is known");
                        e.0 -= 1;
                        if e.0 == 0 {
                            x.active -= 1;
                            let cap = if x.active > 0 {
                                rule.rate(x.active).0 as f64
                            } else {
                                fabric.chans[c].rate.map_or(0.0, |r| r.0 as f64)
                            };
                            self.live.set_capacity(c.0, cap);
                        }
                    }
                    StageRule::Collapse(_) => {
                        let k = self.collapse.entry(c).or_default();
                        if !k.dirty {
                            k.dirty = true;
                            self.dirty.push(c);
                        }
                    }
                    StageRule::None => {}
                }
            }
            self.live.remove_flow(s);
        }
        gone.clear();
        self.gone = gone;
        let new = self
            .flows
            .iter()
            .rev()
            .take_while(|f| f.slot == NO_SLOT)
            .count();
        let from = self.flows.len() - new;
        for fi in from..self.flows.len() {
            let k = self.flows[fi].kind as usize;
            self.scratch.clear();
            self.scratch.extend(
                self.rated[self.rated_at[k]..self.rated_at[k + 1]]
                    .iter()
                    .map(|&(c, w, _)| (c.0, w)),
            );
            let s = self.live.add_flow(&self.scratch, self.kinds[k].rules.len());
            self.flows[fi].slot = s;
            for &(c, a, b, w) in &self.kinds[k].rules {
                match &fabric.chans[c].rule {
                    StageRule::CrossSocket(rule) => {
                        let x = self.cross.entry(c).or_default();
                        let e = x.streams.entry((a, b)).or_insert_with(|| {
                            let r = match rule.stream {
                                Some(cap) => {
                                    let r = self.live.constraint(cap.0 as f64, c.0);
                                    self.rule_res.push((r, c));
                                    r
                                }
                                None => u32::MAX,
                            };
                            (0, r)
                        });
                        e.0 += 1;
                        let (n, r) = *e;
                        if n == 1 {
                            x.active += 1;
                            self.live.set_capacity(c.0, rule.rate(x.active).0 as f64);
                        }
                        if r != u32::MAX {
                            self.live.add_use(s, r, 1.0);
                        }
                    }
                    StageRule::Collapse(_) => {
                        let k = self.collapse.entry(c).or_default();
                        k.members.push((s, a, b, w));
                        if !k.dirty {
                            k.dirty = true;
                            self.dirty.push(c);
                        }
                    }
                    StageRule::None => {}
                }
            }
        }
        for c in std::mem::take(&mut self.dirty) {
            let StageRule::Collapse(rule) = &fabric.chans[c].rule else {
                continue;
            };
            let k = self.collapse.get_mut(&c).expect("a dirty channel is known");
            k.dirty = false;
            let live = &mut self.live;
            k.members.retain(|m| !live.is_removed(m.0));
            for &r in &k.groups {
                live.clear_users(r);
            }
            self.rule_members.clear();
            self.rule_members.extend(
                k.members
                    .iter()
                    .enumerate()
                    .map(|(i, &(_, a, b, _))| (i, a, b)),
            );
            let seen = self.flag_sights.seen_on(c, self.last);
            for (gi, (capacity, flows)) in rule
                .collapsed_groups(&self.rule_members, seen)
                .into_iter()
                .enumerate()
            {
                if gi == k.groups.len() {
                    let r = live.constraint(capacity, c.0);
                    k.groups.push(r);
                    self.rule_res.push((r, c));
                }
                let r = k.groups[gi];
                live.set_capacity(r, capacity);
                for m in flows {
                    live.add_use(k.members[m].0, r, k.members[m].3);
                }
            }
        }
    }

    /// Max-min fair rates of the flows now, solved on the kept problem:
    /// the same rates, to the bit, as [`FlowState::solve_rebuilt`] when
    /// filled from round 0 (`full_max_min`), within rounding filled by
    /// components or resumed.
    pub(super) fn solve_kept(&mut self, fabric: &Fabric) {
        self.sync(fabric);
        let now = self.last;
        self.slots.clear();
        self.slots.extend(self.flows.iter().map(|f| f.slot));
        self.caps.clear();
        let kind_cap = &self.kind_cap;
        self.caps.extend(self.flows.iter().map(|f| {
            if f.start > now {
                0.0
            } else {
                f.cap_now(kind_cap[f.kind as usize])
            }
        }));
        // (every debug run solves a copy of the problem from round 0 too,
        // the full solve, and checks the incremental rates against it)
        let twin = (cfg!(debug_assertions) && !self.full_max_min).then(|| self.live.clone());
        if self.full_max_min {
            self.live.solve(&self.slots, &self.caps);
        } else if self.whole_max_min {
            self.live.solve_resumed(&self.slots, &self.caps);
        } else {
            self.live.solve_changed(&self.slots, &self.caps);
        }
        if let Some(mut twin) = twin {
            twin.solve(&self.slots, &self.caps);
            for &s in &self.slots {
                let (a, b) = (self.live.rate[s as usize], twin.rate[s as usize]);
                debug_assert!(
                    same_rate(a, b),
                    "flow slot {s}: incremental solve {a}, full solve {b}"
                );
            }
        }
        // (every entry is None here: each is taken as it is read, below)
        self.held_of.resize(self.live.rate.len(), None);
        // a flow held by two rules is held by the later channel's (as the
        // reference marks rule resources in channel order)
        let mut any_held = false;
        for &(r, c) in &self.rule_res {
            let users = self.live.users(r);
            if users.is_empty() || !self.live.is_active(r) {
                continue;
            }
            // (every debug run sums the users of every rule, the
            // reference, and checks that no rule skipped here holds)
            let far = self.live.left(r) > HELD_FAR * self.live.capacity(r);
            if far && !cfg!(debug_assertions) {
                continue;
            }
            let used: f64 = users
                .iter()
                .map(|&(s, w)| self.live.rate[s as usize] * w)
                .sum();
            let held = used >= HELD * self.live.capacity(r);
            debug_assert!(
                !(far && held),
                "rule resource {r}: {used} used of {} with {} left",
                self.live.capacity(r),
                self.live.left(r)
            );
            if held {
                any_held = true;
                for &(s, _) in users {
                    let h = &mut self.held_of[s as usize];
                    if h.is_none_or(|h| h < c) {
                        *h = Some(c);
                    }
                }
            }
        }
        let rate = &self.live.rate;
        let mut unbounded = false;
        if any_held {
            for f in &mut self.flows {
                let r = rate[f.slot as usize];
                f.rate = r;
                f.held = self.held_of[f.slot as usize].take();
                unbounded |= r.is_infinite();
            }
        } else {
            // (no rule holds a flow: every entry of `held_of` is None)
            for f in &mut self.flows {
                let r = rate[f.slot as usize];
                f.rate = r;
                f.held = None;
                unbounded |= r.is_infinite();
            }
        }
        self.unbounded = unbounded;
    }
}

/// Whether an incremental solve's rate `a` is the full solve's `b` to
/// within the rounding the incremental solves allow (their property tests'
/// 1e-9 relative, rates below 1e-3 B/s taken as 1e-3).
fn same_rate(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-3)
}
