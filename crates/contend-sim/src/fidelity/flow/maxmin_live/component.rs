//! The component solve of a [`LiveMaxMin`] ([`LiveMaxMin::solve_changed`]):
//! max-min fair rates fall apart over the flows' connected components
//! (two flows are joined when they use one constraint taking part), so a
//! change since the last solve can move the rates of its own component
//! only. The solve searches the flows the changes reach; where they are
//! few it fills those alone, over their constraints, and every other flow
//! keeps the rate it has. Its reference fills every flow at every solve
//! (`FlowOptions::whole_max_min`; a property test here holds them
//! together within 1e-9).
//!
//! Why the others stand: progressive filling raises every open flow's
//! level together and freezes a flow when a constraint it uses saturates or
//! its cap binds; a constraint's capacity left moves only with its own
//! users' levels, so what freezes a component's flows, and at which level,
//! depends on that component alone. The filling of all the flows is the
//! fillings of the components side by side: the same levels, summed in
//! other steps (within rounding). A flow none of the changes reaches is in
//! a component that is what it was at the last solve, and so is its rate.

use super::LiveMaxMin;

/// What a change can reach, of `flows` flows, for a solve to fill it
/// alone: at most half (beyond that the search costs more than filling
/// the rest saves, and a solve of thousands of flows resumes the last
/// one's filling instead, which a component solve would leave unrecorded).
fn most_reached(flows: usize) -> usize {
    flows / 2
}

/// The changes since the last solve (constraints whose capacity or taking
/// part changed, flows taking part whose uses changed) and the search's
/// working state. (A flow added, or one whose cap changes, is found by its
/// cap; one removed by the solver's list of removed flows.)
#[derive(Clone, Debug, Default)]
pub(super) struct Changes {
    res: Vec<u32>,
    res_marked: Vec<bool>,
    flows: Vec<u32>,
    flow_marked: Vec<bool>,
    /// The search: flows reached (and those still to walk), constraints
    /// reached (and of those, the ones taking part).
    seen_flow: Vec<bool>,
    reached: Vec<u32>,
    walk: Vec<u32>,
    seen_res: Vec<bool>,
    res_reached: Vec<u32>,
    res_taking_part: Vec<u32>,
    /// The flows reached in flow order and their caps.
    slots: Vec<u32>,
    caps: Vec<f64>,
    /// Flows the last solve filled, when it filled a component alone.
    last_alone: Option<usize>,
    /// Searches in a row that gave up, and solves still to make without
    /// one: after `n` in a row, the next `2^n - 1` (at most
    /// [`SKIP_MOST`]) do not search (where flows are joined into one
    /// component, as through a root complex, every search gives up).
    gave_up: u32,
    skip: u32,
}

/// Solves made without a search, at most, after searches gave up.
const SKIP_MOST: u32 = 63;

/// What the search reads of a [`LiveMaxMin`].
struct View<'a> {
    users: &'a [Vec<(u32, f64)>],
    active: &'a [bool],
    uses: &'a [(u32, f64)],
    at: &'a [u32],
    len: &'a [u32],
    dead: &'a [bool],
    /// Each flow's cap at the last solve.
    cap: &'a [f64],
    removed: &'a [u32],
}

impl View<'_> {
    fn uses_of(&self, s: u32) -> &[(u32, f64)] {
        let at = self.at[s as usize] as usize;
        &self.uses[at..at + self.len[s as usize] as usize]
    }
}

impl Changes {
    pub(super) fn new_constraint(&mut self) {
        self.res_marked.push(false);
        self.seen_res.push(false);
    }

    pub(super) fn new_slot(&mut self) {
        self.flow_marked.push(false);
        self.seen_flow.push(false);
    }

    /// Constraint `r`'s capacity changed, or it was turned on or off.
    pub(super) fn constraint(&mut self, r: u32) {
        if !self.res_marked[r as usize] {
            self.res_marked[r as usize] = true;
            self.res.push(r);
        }
    }

    /// Flow slot `s`, solved last with cap `cap`, gained or lost a use: a
    /// change if it took part (a flow frozen at 0 weighs on nothing; if
    /// its cap rises, that is the change).
    pub(super) fn flow_bound(&mut self, s: u32, cap: f64) {
        if cap > 0.0 && !self.flow_marked[s as usize] {
            self.flow_marked[s as usize] = true;
            self.flows.push(s);
        }
    }

    /// A solve took the changes in: none is pending.
    pub(super) fn settle(&mut self) {
        for &r in &self.res {
            self.res_marked[r as usize] = false;
        }
        self.res.clear();
        for &s in &self.flows {
            self.flow_marked[s as usize] = false;
        }
        self.flows.clear();
    }

    /// Whether the flows the changes reach (in `reached`) are at most
    /// `most`: from the flows whose cap or uses changed, and from the
    /// constraints changed or left by a removed flow that took part, through
    /// all their users; then from every flow reached through the constraints
    /// taking part that it uses.
    fn search(&mut self, m: &View<'_>, slots: &[u32], caps: &[f64], most: usize) -> bool {
        self.reached.clear();
        self.walk.clear();
        self.res_reached.clear();
        self.res_taking_part.clear();
        for (&s, &c) in slots.iter().zip(caps) {
            if m.cap[s as usize].to_bits() != c.to_bits() && !self.reach_flow(m, s, most) {
                return false;
            }
        }
        for i in 0..self.flows.len() {
            if !self.reach_flow(m, self.flows[i], most) {
                return false;
            }
        }
        for &s in m.removed {
            if m.cap[s as usize] <= 0.0 {
                continue;
            }
            for &(r, _) in m.uses_of(s) {
                if !self.reach_constraint(m, r, most) {
                    return false;
                }
            }
        }
        for i in 0..self.res.len() {
            if !self.reach_constraint(m, self.res[i], most) {
                return false;
            }
        }
        while let Some(s) = self.walk.pop() {
            for &(r, _) in m.uses_of(s) {
                if m.active[r as usize] && !self.reach_constraint(m, r, most) {
                    return false;
                }
            }
        }
        true
    }

    fn reach_flow(&mut self, m: &View<'_>, s: u32, most: usize) -> bool {
        let si = s as usize;
        if m.dead[si] || self.seen_flow[si] {
            return true;
        }
        self.seen_flow[si] = true;
        self.reached.push(s);
        self.walk.push(s);
        self.reached.len() <= most
    }

    /// Constraint `r` and all its users (a constraint turned off since still
    /// joined them at the last solve).
    fn reach_constraint(&mut self, m: &View<'_>, r: u32, most: usize) -> bool {
        let ri = r as usize;
        if self.seen_res[ri] {
            return true;
        }
        self.seen_res[ri] = true;
        self.res_reached.push(r);
        if m.active[ri] {
            self.res_taking_part.push(r);
        }
        let users = &m.users[ri];
        // (a bound: some may be reached already)
        if self.reached.len() + users.len() > most {
            return false;
        }
        for &(s, _) in users {
            if !self.reach_flow(m, s, most) {
                return false;
            }
        }
        true
    }

    /// The flows reached, in flow order, with their caps, into `slots`
    /// and `caps` (none where the search gave up); the marks forgotten.
    fn take_reached(&mut self, alone: bool, slots: &[u32], caps: &[f64]) {
        self.slots.clear();
        self.caps.clear();
        if alone && !self.reached.is_empty() {
            for (&s, &c) in slots.iter().zip(caps) {
                if self.seen_flow[s as usize] {
                    self.slots.push(s);
                    self.caps.push(c);
                }
            }
        }
        for &s in &self.reached {
            self.seen_flow[s as usize] = false;
        }
        for &r in &self.res_reached {
            self.seen_res[r as usize] = false;
        }
        self.last_alone = alone.then_some(self.slots.len());
    }
}

impl LiveMaxMin {
    /// Max-min fair rates of the flows `slots` (all the flows, in the order
    /// they were added) with these caps, into [`LiveMaxMin::rate`], as
    /// [`LiveMaxMin::solve_resumed`] gives them to within rounding: where
    /// the changes since the last solve (flows added or removed, uses
    /// added or cleared, caps and capacities changed, constraints turned on
    /// or off) reach at most half the flows, through the constraints they
    /// share, only those are filled, over their constraints; else
    /// [`LiveMaxMin::solve_resumed`].
    pub fn solve_changed(&mut self, slots: &[u32], caps: &[f64]) {
        if self.changes.skip > 0 {
            self.changes.skip -= 1;
            self.changes.last_alone = None;
            return self.solve_resumed(slots, caps);
        }
        let view = View {
            users: &self.users,
            active: &self.active,
            uses: &self.uses,
            at: &self.at,
            len: &self.len,
            dead: &self.dead,
            cap: &self.cap,
            removed: &self.removed,
        };
        let ch = &mut self.changes;
        let alone = ch.search(&view, slots, caps, most_reached(slots.len()));
        ch.take_reached(alone, slots, caps);
        if !alone {
            ch.gave_up = (ch.gave_up + 1).min(6);
            ch.skip = ((1 << ch.gave_up) - 1).min(SKIP_MOST);
            return self.solve_resumed(slots, caps);
        }
        ch.gave_up = 0;
        // (the flush settles the changes: the lists taken are the search's)
        let removed = !self.removed.is_empty();
        self.flush();
        if self.changes.slots.is_empty() {
            // no change reaches a flow taking part: every rate stands, and
            // so does the last solve's trace, unless a flow it recorded is
            // gone (its slot is free for a new flow; the trace would still
            // hold its share of its constraints)
            if removed {
                self.untraced();
            }
            return;
        }
        let ch = &mut self.changes;
        let (s, c, r) = (
            std::mem::take(&mut ch.slots),
            std::mem::take(&mut ch.caps),
            std::mem::take(&mut ch.res_taking_part),
        );
        self.fill_over(&s, &c, &r);
        let ch = &mut self.changes;
        (ch.slots, ch.caps, ch.res_taking_part) = (s, c, r);
        self.untraced();
    }

    /// How many flows the last solve filled, if it filled a component
    /// alone.
    #[cfg(test)]
    pub(super) fn filled_alone(&self) -> Option<usize> {
        self.changes.last_alone
    }
}

#[cfg(test)]
mod tests {
    use super::super::FIRST_MET;
    use super::super::tests::{Change, Trial, from_scratch};
    use super::*;
    use proptest::prelude::*;

    /// Two pairs of flows on their own links, a fifth flow on its own and
    /// a link that comes to be shared by a flow of each pair: a change to
    /// one pair's link reaches that pair only; one to the shared link
    /// reaches both pairs (more than half: every flow is filled).
    #[test]
    fn a_change_fills_the_flows_it_reaches_only() {
        let mut m = LiveMaxMin::default();
        for c in [10.0, 20.0, 30.0, 40.0] {
            m.constraint(c, FIRST_MET);
        }
        let a = m.add_flow(&[(0, 1.0)], 0);
        let b = m.add_flow(&[(0, 1.0)], 0);
        let c = m.add_flow(&[(1, 1.0)], 0);
        let d = m.add_flow(&[(1, 1.0)], 0);
        let e = m.add_flow(&[(3, 1.0)], 0);
        let slots = vec![a, b, c, d, e];
        let caps = vec![f64::INFINITY; 5];
        m.solve_changed(&slots, &caps);
        // everything was new: more than half
        assert_eq!(m.filled_alone(), None);
        assert_eq!(m.rate[a as usize], 5.0);
        assert_eq!(m.rate[c as usize], 10.0);
        // the search gave up once: the next solve makes none
        m.solve_changed(&slots, &caps);
        assert_eq!(m.filled_alone(), None);
        m.set_capacity(0, 16.0);
        m.solve_changed(&slots, &caps);
        assert_eq!(m.filled_alone(), Some(2));
        assert_eq!(m.rate[b as usize], 8.0);
        assert_eq!(m.rate[d as usize], 10.0);
        // a flow of the first pair leaves: its partner takes the link
        m.remove_flow(a);
        let slots = vec![b, c, d, e];
        let caps = vec![f64::INFINITY; 4];
        m.solve_changed(&slots, &caps);
        assert_eq!(m.filled_alone(), Some(1));
        assert_eq!(m.rate[b as usize], 16.0);
        // b's cap: itself alone
        let capped = vec![4.0, f64::INFINITY, f64::INFINITY, f64::INFINITY];
        m.solve_changed(&slots, &capped);
        assert_eq!(m.filled_alone(), Some(1));
        assert_eq!(m.rate[b as usize], 4.0);
        assert_eq!(m.rate[c as usize], 10.0);
        // a link shared by b and c joins the pairs: three of four reached
        m.add_use(b, 2, 1.0);
        m.add_use(c, 2, 1.0);
        m.solve_changed(&slots, &capped);
        assert_eq!(m.filled_alone(), None);
        assert_eq!(m.rate[b as usize], 4.0);
        assert_eq!(m.rate[c as usize], 10.0);
        // (the search that gave up skips the next one's)
        let zero = vec![4.0, 0.0, f64::INFINITY, f64::INFINITY];
        m.solve_changed(&slots, &zero);
        assert_eq!(m.filled_alone(), None);
        assert_eq!(m.rate[c as usize], 0.0);
        assert_eq!(m.rate[d as usize], 20.0);
        // a flow frozen at 0 that gains a use changes nothing
        m.add_use(c, 3, 1.0);
        m.solve_changed(&slots, &zero);
        assert_eq!(m.filled_alone(), Some(0));
        assert_eq!(m.rate[e as usize], 40.0);
        // its cap rising is the change, and c reaches every flow now
        m.solve_changed(&slots, &capped);
        assert_eq!(m.filled_alone(), None);
        assert_eq!(m.rate[c as usize], 10.0);
        assert_eq!(m.rate[e as usize], 30.0);
    }

    /// Enough flows for the resumed solve to keep a trace: a flow removed
    /// alone on its link reaches no other, yet the trace that recorded it
    /// must not stand (its slot, taken by a new flow on that link, would
    /// find the link's capacity still held by the flow gone, the next time
    /// a solve resumes).
    #[test]
    fn a_flow_removed_alone_leaves_no_trace_behind() {
        let n = 600u32;
        let mut m = LiveMaxMin::default();
        for _ in 0..n {
            m.constraint(1000.0, FIRST_MET);
        }
        // flow i alone on link i, capped at i + 1: a round each
        let mut slots: Vec<u32> = (0..n).map(|i| m.add_flow(&[(i, 1.0)], 0)).collect();
        let mut caps: Vec<f64> = (0..n).map(|i| f64::from(i) + 1.0).collect();
        m.solve_changed(&slots, &caps);
        // (the search gave up: this one resumes without one)
        m.solve_changed(&slots, &caps);
        m.remove_flow(slots.remove(0));
        caps.remove(0);
        m.solve_changed(&slots, &caps);
        assert_eq!(m.filled_alone(), Some(0));
        // a new flow on the first link, and caps raised on most of the
        // others (too many for a component: the solve resumes)
        let g = m.add_flow(&[(0, 1.0)], 0);
        slots.push(g);
        caps.push(1000.5);
        for c in caps.iter_mut().skip(250).take(320) {
            *c += 0.5;
        }
        m.solve_changed(&slots, &caps);
        assert_eq!(m.filled_alone(), None);
        let want = from_scratch(&m, &slots, &caps);
        for (&s, w) in slots.iter().zip(&want) {
            let got = m.rate[s as usize];
            assert!(
                (got - w).abs() <= 1e-9 * w.abs(),
                "flow {s}: {got}, {w} from scratch"
            );
        }
        assert_eq!(m.rate[g as usize], 1000.0);
    }

    proptest! {
        /// Flows added and removed in any order, caps changed, grouped
        /// constraints used and let go, capacities changed, constraints turned
        /// off and on: the component solve's rates are those of the same
        /// flows solved from scratch, within 1e-9 relative. (One change
        /// per solve, most of them reaching a few flows.)
        #[test]
        fn component_solve_matches_a_solve_from_scratch(
            steps in proptest::collection::vec(
                (
                    0u8..8,
                    proptest::collection::vec((0u32..24, prop_oneof![Just(1.0f64), 0.5f64..1.5]), 1..3),
                    0usize..64,
                    prop_oneof![Just(f64::INFINITY), Just(0.0), 1.0f64..100.0],
                    1.0f64..50.0,
                ),
                1..80,
            ),
            capacity in proptest::collection::vec(prop_oneof![Just(10.0f64), 1.0f64..100.0], 30),
        ) {
            // 24 constraints met in order (few flows share one: small
            // components), 6 in groups
            let mut t = Trial::new(&capacity, 24);
            for (op, uses, pick, cap, cap_r) in steps {
                t.apply(Change::drawn(op, pick), &uses, pick, cap, cap_r);
                t.live.solve_changed(&t.slots, &t.caps);
                let want = t.solved_from_scratch();
                for (&s, w) in t.slots.iter().zip(&want) {
                    let got = t.live.rate[s as usize];
                    prop_assert!(
                        got == *w || (got - w).abs() <= 1e-9 * w.abs(),
                        "flow {s}: {got} alone, {w} from scratch"
                    );
                }
            }
        }
    }
}
