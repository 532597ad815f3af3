//! The kept problem's tests, and what the component and resumed solves'
//! tests share: a solve from scratch and random changes to a problem.

use super::*;
use proptest::prelude::*;

/// The flows of a [`LiveMaxMin`] solved from scratch: constraints
/// numbered as the flow fidelity numbers them (first met walking the
/// flows in order, then the other groups in order, each by its first
/// flow), inactive ones left out, by [`MaxMin::solve_flows`].
pub(super) fn from_scratch(live: &LiveMaxMin, slots: &[u32], caps: &[f64]) -> Vec<f64> {
    let mut number: std::collections::HashMap<u32, u32> = Default::default();
    let mut capacity = vec![];
    for &s in slots {
        for &(r, _) in live.uses_of(s) {
            if live.group[r as usize] == FIRST_MET
                && live.active[r as usize]
                && !number.contains_key(&r)
            {
                number.insert(r, capacity.len() as u32);
                capacity.push(live.capacity[r as usize]);
            }
        }
    }
    let mut grouped: Vec<(u32, usize, u32)> = vec![];
    for (i, &s) in slots.iter().enumerate() {
        for &(r, _) in live.uses_of(s) {
            let g = live.group[r as usize];
            if g != FIRST_MET && live.active[r as usize] && !grouped.iter().any(|x| x.2 == r) {
                grouped.push((g, i, r));
            }
        }
    }
    grouped.sort();
    for &(_, _, r) in &grouped {
        number.insert(r, capacity.len() as u32);
        capacity.push(live.capacity[r as usize]);
    }
    let (mut start, mut uses) = (vec![0], vec![]);
    for &s in slots {
        for &(r, w) in live.uses_of(s) {
            if let Some(&n) = number.get(&r) {
                uses.push((n, w));
            }
        }
        start.push(uses.len());
    }
    let mut m = MaxMin::default();
    m.solve_flows(caps, &capacity, &start, &uses);
    m.rate
}

/// A change a property test makes to a kept problem (see [`Trial`]).
#[derive(Clone, Copy, Debug)]
pub(super) enum Change {
    /// A flow joins, last, with the uses drawn (and `more` room).
    Add {
        more: usize,
    },
    /// A flow joins with the uses drawn and a grouped use.
    AddGrouped,
    Remove,
    /// A flow's cap becomes the one drawn.
    Recap,
    /// A constraint's capacity becomes the one drawn (finite: a
    /// channel's rate, a rule's).
    Capacity,
    /// A grouped constraint gains a flow that uses none of its group yet
    /// (as a flow meets one stream per channel).
    GroupedUse,
    ClearUsers,
    /// A constraint is turned off, or on.
    Toggle,
}

impl Change {
    /// The change drawn as `op`, one of 0..8 (7 and above: a new cap),
    /// a flow joining with room for `pick % 3` more uses.
    pub fn drawn(op: u8, pick: usize) -> Change {
        match op {
            0 | 1 => Change::Add { more: pick % 3 },
            2 => Change::Remove,
            3 => Change::GroupedUse,
            4 => Change::ClearUsers,
            5 => Change::Toggle,
            6 => Change::Capacity,
            _ => Change::Recap,
        }
    }
}

/// A kept problem under a property test: `met` constraints met in order
/// and 6 more in groups 3 and 5, with the capacities given, and its
/// flows in order with their caps.
pub(super) struct Trial {
    pub live: LiveMaxMin,
    pub slots: Vec<u32>,
    pub caps: Vec<f64>,
    met: u32,
}

impl Trial {
    pub fn new(capacity: &[f64], met: u32) -> Trial {
        assert_eq!(capacity.len(), met as usize + 6);
        let mut live = LiveMaxMin::default();
        for (r, &c) in (0..).zip(capacity) {
            let g = if r < met {
                FIRST_MET
            } else if r < met + 3 {
                3
            } else {
                5
            };
            live.constraint(c, g);
        }
        Trial {
            live,
            slots: vec![],
            caps: vec![],
            met,
        }
    }

    /// Makes `change`, drawn with these uses, pick, cap and capacity.
    pub fn apply(
        &mut self,
        change: Change,
        uses: &[(u32, f64)],
        pick: usize,
        cap: f64,
        capacity: f64,
    ) {
        let (live, n) = (&mut self.live, self.slots.len());
        let grouped = self.met + (pick % 6) as u32;
        let any = (pick % (self.met as usize + 6)) as u32;
        match change {
            Change::Add { more } => {
                self.slots.push(live.add_flow(uses, more));
                self.caps.push(cap);
            }
            Change::AddGrouped => {
                let s = live.add_flow(uses, 1);
                live.add_use(s, grouped, 1.0);
                self.slots.push(s);
                self.caps.push(cap);
            }
            Change::Remove if n > 0 => {
                live.remove_flow(self.slots.remove(pick % n));
                self.caps.remove(pick % n);
            }
            Change::Recap if n > 0 => self.caps[pick % n] = cap,
            Change::Capacity => live.set_capacity(any, capacity),
            Change::GroupedUse if n > 0 => {
                let s = self.slots[pick % n];
                let g = live.group[grouped as usize];
                if !live
                    .uses_of(s)
                    .iter()
                    .any(|u| live.group[u.0 as usize] == g)
                {
                    live.add_use(s, grouped, 1.0);
                }
            }
            Change::ClearUsers => live.clear_users(grouped),
            Change::Toggle => {
                let on = live.is_active(any);
                live.set_active(any, !on);
            }
            _ => {}
        }
    }

    /// The flows' rates solved from scratch.
    pub fn solved_from_scratch(&self) -> Vec<f64> {
        from_scratch(&self.live, &self.slots, &self.caps)
    }
}

proptest! {
    /// Flows added and removed in any order, grouped constraints used and
    /// let go, turned off and on: the kept problem's rates are those of
    /// the same flows solved from scratch, to the bit.
    #[test]
    fn kept_problem_matches_a_solve_from_scratch(
        steps in proptest::collection::vec(
            (
                0u8..6,
                proptest::collection::vec((0u32..10, prop_oneof![Just(1.0f64), 0.5f64..1.5]), 1..5),
                0usize..64,
                proptest::collection::vec(prop_oneof![Just(f64::INFINITY), Just(0.0), 1.0f64..100.0], 64),
            ),
            1..40,
        ),
        capacity in proptest::collection::vec(prop_oneof![Just(10.0f64), 1.0f64..100.0], 16),
    ) {
        // 10 constraints met in order, 6 in groups; every cap drawn anew
        // at each solve
        let mut t = Trial::new(&capacity, 10);
        for (op, uses, pick, caps) in steps {
            let change = Change::drawn(op, pick);
            // (grouped constraints only turned off and on)
            let pick = if op == 5 { 10 + pick % 6 } else { pick };
            t.apply(change, &uses, pick, 0.0, 0.0);
            if t.slots.len() > caps.len() {
                continue;
            }
            t.caps.copy_from_slice(&caps[..t.slots.len()]);
            t.live.solve(&t.slots, &t.caps);
            let got: Vec<u64> = t.slots.iter().map(|&s| t.live.rate[s as usize].to_bits()).collect();
            let want: Vec<u64> = t.solved_from_scratch().iter().map(|x| x.to_bits()).collect();
            prop_assert_eq!(got, want);
        }
    }
}
