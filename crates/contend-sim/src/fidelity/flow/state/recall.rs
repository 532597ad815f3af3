//! The rates of the flow set as it is, recalled where they can be: the
//! last ones where only flows that change nothing joined since (not
//! started, meeting no rule), else the memo's for a set solved before
//! (`memo.rs`, keyed without the idle flows at the set's end), else
//! solved and remembered. The references: `FlowOptions::full_solve`
//! solves every time, `FlowOptions::memo_whole_set` keys the memo by the
//! whole set; all give the same rates to the bit.

use super::FlowState;
use crate::fidelity::flow::memo::Memo;
use crate::model::fabric::Fabric;

impl FlowState {
    /// The rates of the flow set as it is: the last ones where only flows
    /// that change nothing joined since, else remembered or solved.
    pub(super) fn rates(&mut self, fabric: &Fabric) {
        let check = self.idle_joined && self.last_whole;
        self.idle_joined = true;
        if self.full_solve {
            return self.solve(fabric);
        }
        if !self.flag_sights.is_empty() {
            // the rates hang on the flags seen, which no flow set keys
            self.last_whole = false;
            return self.solve(fabric);
        }
        // (the set is built where the memo or the check needs it)
        let with_set = check || self.memo.is_on();
        if with_set {
            self.flow_set();
        }
        if check && self.only_idle_joined() {
            // (the new flows keep the rate 0 and no rule they started with)
            std::mem::swap(&mut self.set, &mut self.last_set);
            return;
        }
        self.rates_of_set(fabric);
        if with_set {
            std::mem::swap(&mut self.set, &mut self.last_set);
        }
        self.last_whole = with_set;
    }

    /// The flow set in order (kind × 4 + started + 2 × in first window, as
    /// the memo keys it), into `set`.
    fn flow_set(&mut self) {
        let now = self.last;
        self.set.clear();
        self.set.extend(
            self.flows.iter().map(|f| {
                f.kind * 4 + u32::from(f.start <= now) + 2 * u32::from(f.in_first_window())
            }),
        );
    }

    /// Whether the flow set is the one last given rates with flows
    /// appended that have not started and meet no rule. Rates are a
    /// function of the set (flows in order), and such flows add nothing to
    /// it: frozen at 0 from the start, they weigh on no resource and count
    /// in no rule, and any resource they bring is numbered after the
    /// others. With no flow gone since, every other flow still holds its
    /// own rate and held rule, so they stand as they are (the reference,
    /// `FlowOptions::full_solve`, solves every time).
    fn only_idle_joined(&self) -> bool {
        let n = self.last_set.len();
        self.last_whole
            && self.set.len() >= n
            && self.set[..n] == self.last_set[..]
            && self.set[n..]
                .iter()
                .all(|&e| e & 1 == 0 && self.kinds[(e / 4) as usize].rules.is_empty())
    }

    /// How many of the flow set's first flows the memo keys it by: all
    /// but those at its end that have not started and meet no rule (the
    /// reference, `FlowOptions::memo_whole_set`, keys it by all). Such
    /// flows add nothing to a solve: frozen at 0 from its start, they
    /// weigh on no constraint (an open weight skips them), each
    /// constraint they share with an earlier flow is numbered by that
    /// flow (its first user), those they alone use take no part, and no
    /// rule holds them; so the earlier flows get the same rates, to the
    /// bit, with or without them, and they get 0 and no rule. Sets that
    /// differ only there (a step's next transfers queued behind its
    /// first) share one solve.
    fn memo_key(&self) -> usize {
        if self.memo_whole_set {
            return self.set.len();
        }
        let kinds = &self.kinds;
        let idle = |e: u32| e & 1 == 0 && kinds[(e / 4) as usize].rules.is_empty();
        self.set.len() - self.set.iter().rev().take_while(|&&e| idle(e)).count()
    }

    /// The rates of the flow set in `set`: remembered or solved.
    fn rates_of_set(&mut self, fabric: &Fabric) {
        if !self.memo.take_part() {
            return self.solve(fabric);
        }
        let n = self.memo_key();
        let key = &self.set[..n];
        let hash = Memo::hash(key);
        if let Some(kept) = self.memo.find(hash, key) {
            let mut unbounded = false;
            let (keyed, idle) = self.flows.split_at_mut(n);
            for (f, k) in keyed.iter_mut().zip(kept) {
                f.rate = k.rate();
                f.held = k.held();
                unbounded |= f.rate.is_infinite();
            }
            // (what a solve gives the flows left out of the key)
            for f in idle {
                f.rate = 0.0;
                f.held = None;
            }
            self.unbounded = unbounded;
            return;
        }
        self.solve(fabric);
        let (rates, held) = (
            self.flows[..n].iter().map(|f| f.rate),
            self.flows[..n].iter().map(|f| f.held),
        );
        // (every debug run checks that a solve gave the flows left out of
        // the key what a memo hit gives them)
        debug_assert!(
            self.flows[n..]
                .iter()
                .all(|f| f.rate.to_bits() == 0 && f.held.is_none()),
            "a flow left out of the memo's key moves or is held"
        );
        self.memo.store(hash, &self.set[..n], rates, held);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Flow, NO_SLOT};
    use super::*;
    use crate::engine::ids::ChId;
    use contend_topo::{NodeIdx, Picos};

    /// The memo keys a set by all but its last flows that have not
    /// started and meet no rule: a flow started, or one meeting a rule,
    /// ends the flows left out; the reference keys every flow.
    #[test]
    fn the_key_leaves_out_the_idle_flows_at_the_end_only() {
        let mut st = FlowState::new(1, Default::default());
        let plain = st.intern(1.0, &[(ChId(0), 1.0)], &[]);
        let ruled = st.intern(
            1.0,
            &[(ChId(0), 1.0)],
            &[(ChId(0), NodeIdx(0), NodeIdx(1), 1.0)],
        );
        st.last = Picos(10);
        let flow = |kind, start| Flow {
            remaining: 100.0,
            rate: 0.0,
            kind,
            capped_below: 0.0,
            start: Picos(start),
            held: None,
            slot: NO_SLOT,
        };
        let key = |st: &mut FlowState| {
            st.flow_set();
            st.memo_key()
        };
        assert_eq!(key(&mut st), 0);
        // idle, started, idle, idle: the last two left out
        for (kind, start) in [(plain, 20), (plain, 0), (plain, 20), (plain, 30)] {
            st.flows.push(flow(kind, start));
        }
        assert_eq!(key(&mut st), 2);
        // an idle flow meeting a rule ends the flows left out
        st.flows.insert(3, flow(ruled, 20));
        assert_eq!(key(&mut st), 4);
        // a flow starting now is started
        st.flows.push(flow(plain, 10));
        assert_eq!(key(&mut st), 6);
        st.flows.push(flow(plain, 11));
        assert_eq!(key(&mut st), 6);
        // (the reference keys them all)
        st.memo_whole_set = true;
        assert_eq!(key(&mut st), 7);
    }
}
