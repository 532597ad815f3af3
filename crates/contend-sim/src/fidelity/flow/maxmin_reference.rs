//! DESIGN 9 — the reference of [`crate::fidelity::flow::maxmin`]: max-min fair rates by
//! repeatedly fixing the single most constrained bottleneck. Slower and
//! simpler; must agree with the fast solver.

use crate::fidelity::flow::maxmin::Constraint;

/// The reference: repeatedly find the single most constrained
/// bottleneck (constraint fair share or flow cap), fix those flows, remove
/// their usage, repeat. Slower and simpler; must agree with [`crate::fidelity::flow::maxmin::max_min`].
pub fn max_min_reference(caps: &[f64], constraints: &[Constraint]) -> Vec<f64> {
    let n = caps.len();
    let mut rate = vec![f64::NAN; n];
    let mut cap_left: Vec<f64> = constraints.iter().map(|r| r.capacity).collect();
    loop {
        let open: Vec<usize> = (0..n).filter(|i| rate[*i].is_nan()).collect();
        if open.is_empty() {
            return rate;
        }
        // the level at which each constraint would saturate if all open flows rose together
        let mut best = f64::INFINITY;
        for (ri, r) in constraints.iter().enumerate() {
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
        // fix flows at that level: capped ones and those on saturated constraints
        let mut fixed = vec![];
        for &i in &open {
            if caps[i] <= level * (1.0 + 1e-12) {
                fixed.push(i);
            }
        }
        for (ri, r) in constraints.iter().enumerate() {
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
        for (ri, r) in constraints.iter().enumerate() {
            for (f, w) in &r.users {
                if fixed.contains(f) {
                    cap_left[ri] -= w * rate[*f];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fidelity::flow::maxmin::{bounded_problems, max_min};
    use proptest::prelude::*;

    proptest! {
        /// The fast solver and this reference give the same rates (to
        /// 1e-6), and neither overfills a constraint.
        #[test]
        fn fast_matches_reference(
            (caps, constraints) in bounded_problems(),
        ) {
            let a = max_min(&caps, &constraints);
            let b = max_min_reference(&caps, &constraints);
            for (x, y) in a.iter().zip(&b) {
                prop_assert!((x - y).abs() <= 1e-6 * y.abs().max(1.0), "{a:?} vs {b:?}");
            }
            for r in &constraints {
                let used: f64 = r.users.iter().map(|(f, w)| b[*f] * w).sum();
                prop_assert!(used <= r.capacity * (1.0 + 1e-9));
            }
        }
    }
}
