//! The reference of the kept problem (`FlowOptions::rebuild_problem`):
//! the max-min problem built from the flows at every solve.

use super::{FlowState, HELD};
use crate::model::channel::StageRule;
use crate::model::fabric::Fabric;

impl FlowState {
    /// Max-min fair rates of the flows now, solved on a problem built from
    /// them. Resources are numbered
    /// as channels first meet them walking the flows in order, then the
    /// rule channels' resources in channel order, and each resource's
    /// users are in flow order: the rates are a function of the flow set
    /// alone (the memo relies on it).
    pub(super) fn solve_rebuilt(&mut self, fabric: &Fabric) {
        let now = self.last;
        // every flow on a channel with a rule, by channel, flows in order
        // within each
        self.on_rules.clear();
        for (fi, f) in self.flows.iter().enumerate() {
            for &(c, a, b, w) in &self.kinds[f.kind as usize].rules {
                self.on_rules.push((c, fi, a, b, w));
            }
        }
        self.on_rules.sort_by_key(|m| m.0);
        self.rule_cap.clear();
        self.rule_uses.clear();
        self.shared.clear();
        self.watched.clear();
        let mut i = 0;
        while i < self.on_rules.len() {
            let c = self.on_rules[i].0;
            let mut j = i;
            while j < self.on_rules.len() && self.on_rules[j].0 == c {
                j += 1;
            }
            let group = &self.on_rules[i..j];
            match &fabric.chans[c].rule {
                // Posted-write collapse: writes (and read requests, where
                // the port counts them) through one collapsing port from
                // enough sources toward enough root complexes share the
                // collapsed rate, each flow at its weight; flags seen
                // there within the window count toward the trigger.
                StageRule::Collapse(rule) => {
                    self.members.clear();
                    // (members by their place in the group)
                    self.members.extend(
                        group
                            .iter()
                            .enumerate()
                            .map(|(m, &(_, _, a, b, _))| (m, a, b)),
                    );
                    let seen = self.flag_sights.seen_on(c, now);
                    for (capacity, members) in rule.collapsed_groups(&self.members, seen) {
                        let ri = self.rule_cap.len() as u32;
                        self.watched.push((c, ri as usize));
                        self.rule_cap.push(capacity);
                        self.rule_uses
                            .extend(members.into_iter().map(|m| (group[m].1, ri, group[m].4)));
                    }
                }
                // Cross-socket P2P: the shared rate for this many streams,
                // and each stream's cap.
                StageRule::CrossSocket(rule) => {
                    self.streams.clear();
                    self.streams
                        .extend(group.iter().map(|&(_, f, a, b, _)| (f, (a, b))));
                    let (shared, streams) = rule.resources(&self.streams);
                    self.shared.push((c, shared));
                    for (capacity, flows) in streams {
                        let ri = self.rule_cap.len() as u32;
                        self.watched.push((c, ri as usize));
                        self.rule_cap.push(capacity);
                        self.rule_uses
                            .extend(flows.into_iter().map(|f| (f, ri, 1.0)));
                    }
                }
                StageRule::None => {}
            }
            i = j;
        }
        // by flow, each flow's rule resources in order
        self.rule_uses.sort_by_key(|u| u.0);
        // every flow's uses: its rated channels, then its rule resources
        self.caps.clear();
        self.capacity.clear();
        self.uses.clear();
        self.start.clear();
        self.start.push(0);
        self.rule_pos.clear();
        self.slot.resize(fabric.chans.len(), u32::MAX);
        let mut next_rule = 0;
        for (fi, f) in self.flows.iter().enumerate() {
            let k = f.kind as usize;
            self.caps.push(if f.start > now {
                0.0
            } else {
                f.cap_now(self.kind_cap[k])
            });
            for &(c, w, rate) in &self.rated[self.rated_at[k]..self.rated_at[k + 1]] {
                let slot = &mut self.slot[c.ix()];
                if *slot == u32::MAX {
                    *slot = self.capacity.len() as u32;
                    self.capacity.push(rate);
                    self.touched.push(c);
                }
                self.uses.push((*slot, w));
            }
            while next_rule < self.rule_uses.len() && self.rule_uses[next_rule].0 == fi {
                self.rule_pos.push(self.uses.len());
                let (_, ri, w) = self.rule_uses[next_rule];
                self.uses.push((ri, w));
                next_rule += 1;
            }
            self.start.push(self.uses.len());
        }
        // the rule resources come after the channels'
        let chans = self.capacity.len();
        for &p in &self.rule_pos {
            self.uses[p].0 += chans as u32;
        }
        self.capacity.extend_from_slice(&self.rule_cap);
        for w in &mut self.watched {
            w.1 += chans;
        }
        for &(c, shared) in &self.shared {
            let ri = self.slot[c.ix()];
            if ri != u32::MAX {
                self.capacity[ri as usize] = shared;
            }
        }
        for c in self.touched.drain(..) {
            self.slot[c.ix()] = u32::MAX;
        }
        self.solver
            .solve_flows(&self.caps, &self.capacity, &self.start, &self.uses);
        let mut unbounded = false;
        for (f, r) in self.flows.iter_mut().zip(&self.solver.rate) {
            f.rate = *r;
            f.held = None;
            unbounded |= r.is_infinite();
        }
        self.unbounded = unbounded;
        for &(c, ri) in &self.watched {
            let users = self.solver.users_of(ri);
            let used: f64 = users
                .iter()
                .map(|&(f, w)| self.flows[f as usize].rate * w)
                .sum();
            if used >= HELD * self.capacity[ri] {
                for &(f, _) in users {
                    self.flows[f as usize].held = Some(c);
                }
            }
        }
    }
}
