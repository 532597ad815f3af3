//! The resumed solve against a solve from scratch, and against the
//! definition of a max-min fair allocation.

use super::super::tests::{Change, Trial};
use super::*;
use proptest::prelude::*;

/// Whether `rate` is a max-min fair allocation of the flows `slots` of
/// `live` with `caps`: a flow with a cap of 0 stands still, an
/// infinite rate only where nothing bounds the flow; no constraint
/// carries more than its capacity; every other flow is at its cap or
/// has a saturated constraint on which no user goes faster (1e-9
/// relative).
fn fair(live: &LiveMaxMin, slots: &[u32], caps: &[f64], rate: &[f64]) -> Result<(), String> {
    let at: std::collections::HashMap<u32, usize> =
        slots.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    let on = |r: u32| live.active[r as usize];
    let load = |r: u32| -> (f64, f64) {
        let (mut load, mut top) = (0.0, 0.0f64);
        for &(f, w) in live.users(r) {
            if let Some(&i) = at.get(&f) {
                load += w * rate[i];
                top = top.max(rate[i]);
            }
        }
        (load, top)
    };
    for (i, &s) in slots.iter().enumerate() {
        let (c, x) = (caps[i], rate[i]);
        if c <= 0.0 {
            if x != 0.0 {
                return Err(format!("flow {i} has cap 0 and rate {x}"));
            }
            continue;
        }
        if x.is_infinite() {
            if c.is_finite() || live.uses_of(s).iter().any(|u| on(u.0)) {
                return Err(format!("flow {i} is unbounded but bounded"));
            }
            continue;
        }
        if x > c * (1.0 + 1e-9) {
            return Err(format!("flow {i} at {x} over its cap {c}"));
        }
        let bound = x >= c * (1.0 - 1e-9)
            || live.uses_of(s).iter().any(|&(r, _)| {
                let (l, top) = load(r);
                on(r) && l >= live.capacity(r) * (1.0 - 1e-9) && x >= top * (1.0 - 1e-9)
            });
        if !bound {
            return Err(format!("flow {i} at {x}: neither its cap nor a bottleneck"));
        }
    }
    for r in 0..live.constraints() as u32 {
        let (l, _) = load(r);
        if on(r) && l > live.capacity(r) * (1.0 + 1e-9) {
            return Err(format!(
                "constraint {r} carries {l} over {}",
                live.capacity(r)
            ));
        }
    }
    Ok(())
}

proptest! {
    /// Flows added (some with a grouped use), removed, capped anew,
    /// started and stopped, capacities changed, grouped uses added to
    /// flows solved before, users cleared, constraints turned off and
    /// on, several changes between solves: the resumed solve's rates
    /// are the solve from scratch's within 1e-9 relative, and a max-min
    /// fair allocation.
    #[test]
    fn resumed_solve_matches_a_solve_from_scratch(
        steps in proptest::collection::vec(
            (
                0u8..14,
                proptest::collection::vec((0u32..10, prop_oneof![Just(1.0f64), 0.5f64..1.5]), 1..5),
                0usize..64,
                prop_oneof![Just(f64::INFINITY), Just(0.0), 1.0f64..100.0],
                prop_oneof![Just(10.0f64), 1.0f64..100.0],
                proptest::bool::weighted(0.7),
            ),
            1..60,
        ),
        capacity in proptest::collection::vec(prop_oneof![Just(10.0f64), 1.0f64..100.0], 16),
    ) {
        let mut t = Trial::new(&capacity, 10);
        for (op, uses, pick, cap, cap_r, solve) in steps {
            let change = match op {
                0 | 1 => Change::Add { more: 1 },
                2 => Change::AddGrouped,
                3..=5 => Change::Remove,
                6..=8 => Change::Recap,
                9 | 10 => Change::Capacity,
                11 => Change::GroupedUse,
                12 => Change::ClearUsers,
                _ => Change::Toggle,
            };
            t.apply(change, &uses, pick, cap, cap_r);
            if !solve {
                continue;
            }
            let (live, slots, caps) = (&mut t.live, &t.slots, &t.caps);
            live.solve_resuming(slots, caps);
            let got: Vec<f64> = slots.iter().map(|&s| live.rate[s as usize]).collect();
            let want = t.solved_from_scratch();
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                let close = a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-3);
                prop_assert!(close, "flow {} (slot {}): resumed {} from scratch {}", i, t.slots[i], a, b);
            }
            if let Err(e) = fair(&t.live, &t.slots, &t.caps, &got) {
                prop_assert!(false, "{}", e);
            }
        }
    }
}
