//! DESIGN 9 — weighted max-min fair sharing, the fast solver the flow
//! fidelity uses: progressive filling with per-constraint weight sums and
//! remaining capacities kept incrementally, so each round costs
//! O(constraints + flows). Its reference is [`crate::fidelity::flow::maxmin_reference`]; a
//! property test holds them to the same rates.

/// One constraint of a max-min problem: capacity and the (flow, weight) pairs using it.
#[derive(Clone, Debug)]
pub struct Constraint {
    pub capacity: f64,
    pub users: Vec<(usize, f64)>,
}

/// Weighted max-min fair rates by progressive filling: all unfrozen flows
/// grow together; a flow freezes when a constraint it uses saturates or it
/// reaches its cap. Per-constraint weight sums and remaining capacities are
/// kept incrementally, so each round costs O(constraints + flows).
pub fn max_min(caps: &[f64], constraints: &[Constraint]) -> Vec<f64> {
    let mut w = MaxMin::default();
    w.solve(caps, constraints);
    w.rate
}

/// Reusable buffers for [`max_min`] (the simulator solves many small
/// problems, so a solve allocates nothing once they have grown).
#[derive(Debug, Default)]
pub struct MaxMin {
    pub rate: Vec<f64>,
    frozen: Vec<bool>,
    left: Vec<f64>,
    wsum: Vec<f64>,
    sat: Vec<bool>,
    /// The problem [`MaxMin::solve`] was given, as [`MaxMin::solve_flows`]
    /// takes it.
    capacity: Vec<f64>,
    flow_uses: Vec<(u32, f64)>,
    flow_start: Vec<usize>,
    /// (flow, weight) per constraint, in flow order, with offsets.
    users: Vec<(u32, f64)>,
    rstart: Vec<usize>,
    fill: Vec<usize>,
}

impl MaxMin {
    /// Solves a problem given as constraints with their users.
    pub fn solve(&mut self, caps: &[f64], constraints: &[Constraint]) {
        let n = caps.len();
        let mut start = std::mem::take(&mut self.flow_start);
        let mut uses = std::mem::take(&mut self.flow_uses);
        let mut capacity = std::mem::take(&mut self.capacity);
        // bucket the (constraint, weight) pairs by flow, in constraint order
        start.clear();
        start.resize(n + 1, 0);
        for res in constraints {
            for &(f, _) in &res.users {
                start[f + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        uses.clear();
        uses.resize(start[n], (0, 0.0));
        self.fill.clear();
        self.fill.extend_from_slice(&start[..n]);
        for (ri, res) in constraints.iter().enumerate() {
            for &(f, w) in &res.users {
                uses[self.fill[f]] = (ri as u32, w);
                self.fill[f] += 1;
            }
        }
        capacity.clear();
        capacity.extend(constraints.iter().map(|r| r.capacity));
        self.solve_flows(caps, &capacity, &start, &uses);
        self.flow_start = start;
        self.flow_uses = uses;
        self.capacity = capacity;
    }

    /// The users of constraint `ri` in the last solve, (flow, weight) in
    /// flow order.
    pub fn users_of(&self, ri: usize) -> &[(u32, f64)] {
        &self.users[self.rstart[ri]..self.rstart[ri + 1]]
    }

    /// Solves a problem given flow by flow: flow `f` uses
    /// `uses[start[f]..start[f + 1]]` (constraint, weight). Each constraint's
    /// weights are summed in flow order (a flow's repeated uses of one
    /// constraint in its order): the same rates, to the bit, as
    /// [`MaxMin::solve`] on constraints listing their users in flow order.
    #[allow(clippy::needless_range_loop)] // parallel arrays indexed by flow and constraint
    pub fn solve_flows(
        &mut self,
        caps: &[f64],
        capacity: &[f64],
        start: &[usize],
        uses: &[(u32, f64)],
    ) {
        let n = caps.len();
        let r = capacity.len();
        self.rate.clear();
        self.rate.resize(n, 0.0);
        self.frozen.clear();
        self.frozen.extend(caps.iter().map(|c| *c <= 0.0));
        self.left.clear();
        self.left.extend_from_slice(capacity);
        self.wsum.clear();
        self.wsum.resize(r, 0.0);
        self.sat.clear();
        self.sat.resize(r, false);
        // each constraint's users, in flow order
        self.rstart.clear();
        self.rstart.resize(r + 1, 0);
        for &(ri, _) in &uses[..start[n]] {
            self.rstart[ri as usize + 1] += 1;
        }
        for i in 0..r {
            self.rstart[i + 1] += self.rstart[i];
        }
        self.users.clear();
        self.users.resize(start[n], (0, 0.0));
        self.fill.clear();
        self.fill.extend_from_slice(&self.rstart[..r]);
        for f in 0..n {
            let open = !self.frozen[f];
            for &(ri, w) in &uses[start[f]..start[f + 1]] {
                let k = &mut self.fill[ri as usize];
                self.users[*k] = (f as u32, w);
                *k += 1;
                if open {
                    self.wsum[ri as usize] += w;
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
                if !self.sat[ri] && self.wsum[ri] > 1e-15 && self.left[ri] <= capacity[ri] * 1e-12 {
                    self.sat[ri] = true;
                    for k in self.rstart[ri]..self.rstart[ri + 1] {
                        let f = self.users[k].0 as usize;
                        open -= self.freeze(f, start, uses);
                    }
                }
            }
            for i in 0..n {
                if !self.frozen[i] && level >= caps[i] * (1.0 - 1e-12) {
                    self.rate[i] = caps[i];
                    open -= self.freeze(i, start, uses);
                }
            }
        }
    }

    /// Freezes flow `f`; 1 if it was open.
    fn freeze(&mut self, f: usize, start: &[usize], uses: &[(u32, f64)]) -> usize {
        if self.frozen[f] {
            return 0;
        }
        self.frozen[f] = true;
        for &(ri, w) in &uses[start[f]..start[f + 1]] {
            self.wsum[ri as usize] -= w;
        }
        1
    }
}

/// Max-min problems of up to 8 flows, each flow bounded (an extra
/// constraint over every flow), for the property tests that hold the fast
/// solver to the old one and to the reference.
#[cfg(test)]
pub(crate) fn bounded_problems()
-> impl proptest::strategy::Strategy<Value = (Vec<f64>, Vec<Constraint>)> {
    use proptest::prelude::*;
    (
        proptest::collection::vec(prop_oneof![Just(f64::INFINITY), 1.0f64..100.0], 1..8),
        proptest::collection::vec(
            (
                1.0f64..100.0,
                proptest::collection::vec((0usize..8, 1.0f64..1.5), 1..5),
            ),
            1..6,
        ),
    )
        .prop_map(|(caps, res)| {
            let n = caps.len();
            let mut constraints: Vec<Constraint> = res
                .into_iter()
                .map(|(c, u)| {
                    let mut users: Vec<(usize, f64)> =
                        u.into_iter().filter(|(f, _)| *f < n).collect();
                    users.sort_by_key(|(f, _)| *f);
                    users.dedup_by_key(|(f, _)| *f);
                    Constraint { capacity: c, users }
                })
                .collect();
            // keep every flow bounded: an extra constraint for uncapped, unused flows
            constraints.push(Constraint {
                capacity: 1000.0,
                users: (0..n).map(|f| (f, 1.0)).collect(),
            });
            (caps, constraints)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The solver as it was before it took its problem as a list of uses
    /// (each constraint's users bucketed by flow per solve): the reference the
    /// fast one must match to the bit.
    mod old {
        use super::Constraint;

        #[derive(Debug, Default)]
        struct OldMaxMin {
            rate: Vec<f64>,
            frozen: Vec<bool>,
            left: Vec<f64>,
            wsum: Vec<f64>,
            sat: Vec<bool>,
            /// (constraint, weight) per flow, flattened with offsets.
            uses: Vec<(usize, f64)>,
            start: Vec<usize>,
        }

        impl OldMaxMin {
            #[allow(clippy::needless_range_loop)] // parallel arrays indexed by flow and constraint
            fn solve(&mut self, caps: &[f64], constraints: &[Constraint]) {
                let n = caps.len();
                let r = constraints.len();
                self.rate.clear();
                self.rate.resize(n, 0.0);
                self.frozen.clear();
                self.frozen.extend(caps.iter().map(|c| *c <= 0.0));
                self.left.clear();
                self.left.extend(constraints.iter().map(|r| r.capacity));
                self.wsum.clear();
                self.wsum.resize(r, 0.0);
                self.sat.clear();
                self.sat.resize(r, false);
                // bucket the (constraint, weight) pairs by flow
                self.start.clear();
                self.start.resize(n + 1, 0);
                for res in constraints {
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
                for (ri, res) in constraints.iter().enumerate() {
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
                            && self.left[ri] <= constraints[ri].capacity * 1e-12
                        {
                            self.sat[ri] = true;
                            for &(f, _) in &constraints[ri].users {
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

        pub fn max_min_old(caps: &[f64], constraints: &[Constraint]) -> Vec<f64> {
            let mut w = OldMaxMin::default();
            w.solve(caps, constraints);
            w.rate
        }
    }

    #[test]
    fn two_flows_share_one_constraint_equally() {
        let r = vec![Constraint {
            capacity: 10.0,
            users: vec![(0, 1.0), (1, 1.0)],
        }];
        assert_eq!(max_min(&[f64::INFINITY, f64::INFINITY], &r), vec![5.0, 5.0]);
    }

    #[test]
    fn a_capped_flow_leaves_the_rest_to_the_other() {
        let r = vec![Constraint {
            capacity: 10.0,
            users: vec![(0, 1.0), (1, 1.0)],
        }];
        let x = max_min(&[2.0, f64::INFINITY], &r);
        assert!((x[0] - 2.0).abs() < 1e-9 && (x[1] - 8.0).abs() < 1e-9);
    }

    proptest! {
        #[test]
        fn fast_is_feasible_and_matches_the_old_solver(
            (caps, constraints) in bounded_problems(),
        ) {
            let a = max_min(&caps, &constraints);
            // (the reference's agreement: `maxmin_reference.rs`'s tests)
            // the solver as it was, to the bit
            let c = old::max_min_old(&caps, &constraints);
            prop_assert_eq!(
                a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                c.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
            // feasibility: no constraint over capacity
            for r in &constraints {
                let used: f64 = r.users.iter().map(|(f, w)| a[*f] * w).sum();
                prop_assert!(used <= r.capacity * (1.0 + 1e-9));
            }
        }

        /// Problems as the flow fidelity gives them (a flow may use one
        /// constraint twice, flows may be capped at zero, constraints may be
        /// unused): the same rates as the solver before, to the bit.
        #[test]
        fn fast_matches_the_old_solver_to_the_bit(
            caps in proptest::collection::vec(prop_oneof![Just(f64::INFINITY), Just(0.0), 1.0f64..100.0], 1..12),
            res in proptest::collection::vec((1.0f64..100.0, proptest::collection::vec((0usize..12, 0.5f64..1.5), 0..8)), 1..8),
        ) {
            let n = caps.len();
            let mut constraints: Vec<Constraint> = res.into_iter().map(|(c, u)| {
                let mut users: Vec<(usize, f64)> = u.into_iter().filter(|(f, _)| *f < n).collect();
                users.sort_by_key(|(f, _)| *f);
                Constraint { capacity: c, users }
            }).collect();
            constraints.push(Constraint { capacity: 1000.0, users: (0..n).map(|f| (f, 1.0)).collect() });
            let a = max_min(&caps, &constraints);
            let c = old::max_min_old(&caps, &constraints);
            prop_assert_eq!(
                a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                c.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
        }
    }
}
