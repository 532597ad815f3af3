//! `advise` on every shipped topology: no range is narrower than the tie
//! tolerance. Checked from the advice's own per-size times, by a rule
//! written out here (not `compare::tied`): every range's choice is within
//! the tolerance of the fastest at each of its sizes, and a new range
//! starts only where every choice of the one before is slower than the
//! fastest by more than the tolerance.

use contend_advise::advise::{Family, SizeChoice, Tolerance, advise_resumable};
use contend_fit::Checkpoint;
use contend_sim::ModelParams;
use contend_workload::Placement;
use contend_workload::compare::DEFAULT_TIE_TOLERANCE;

fn within(c: &SizeChoice, family: Family) -> bool {
    let best = c
        .families
        .iter()
        .map(|f| f.ns)
        .fold(f64::INFINITY, f64::min);
    c.families
        .iter()
        .any(|f| f.family == family && f.ns <= best * (1.0 + f.tolerance))
}

#[test]
fn no_range_of_shipped_advice_is_narrower_than_the_tie_tolerance() {
    // 1 KiB to 64 MiB by fours: the advice's range, every regime
    let sizes: Vec<u64> = (0..=8).map(|i| 1024u64 << (2 * i)).collect();
    let mut ties = 0;
    for (stem, _) in contend_topo::shipped::SHIPPED {
        let topo = contend_topo::shipped::get(stem).unwrap().unwrap();
        if topo.gpus().len() < 2 {
            continue;
        }
        // advise's default placement
        for placement in [Placement::Peer] {
            let adv = advise_resumable(
                &topo,
                &ModelParams::default(),
                &Tolerance::Fixed(DEFAULT_TIE_TOLERANCE),
                placement,
                &sizes,
                &|_, _, _| {},
                &Checkpoint::none(),
            )
            .unwrap();
            for w in &adv {
                let at = |s: u64| w.choices.iter().find(|c| c.size_bytes == s).unwrap();
                let choices = |r: &contend_advise::advise::Range| -> Vec<Family> {
                    match r.family {
                        Some(f) => vec![f],
                        None => r.tied.clone(),
                    }
                };
                let covered: usize = w
                    .ranges
                    .iter()
                    .map(|r| {
                        w.choices
                            .iter()
                            .filter(|c| c.size_bytes >= r.from_bytes && c.size_bytes <= r.to_bytes)
                            .count()
                    })
                    .sum();
                assert_eq!(
                    covered,
                    sizes.len(),
                    "{stem} world {}: every size in one range",
                    w.world
                );
                for r in &w.ranges {
                    if !r.tied.is_empty() {
                        ties += 1;
                        assert_eq!(r.family, None);
                        assert!(r.tied.len() >= 2);
                    }
                    for c in w
                        .choices
                        .iter()
                        .filter(|c| c.size_bytes >= r.from_bytes && c.size_bytes <= r.to_bytes)
                    {
                        for f in choices(r) {
                            assert!(
                                within(c, f),
                                "{stem} {placement} world {}: {f} is not within the tolerance at {} B of its range {}..{}",
                                w.world,
                                c.size_bytes,
                                r.from_bytes,
                                r.to_bytes
                            );
                        }
                    }
                }
                for pair in w.ranges.windows(2) {
                    let first = at(pair[1].from_bytes);
                    for f in choices(&pair[0]) {
                        assert!(
                            !within(first, f),
                            "{stem} {placement} world {}: the range at {} B starts though {f} is within the tolerance of the fastest there",
                            w.world,
                            pair[1].from_bytes
                        );
                    }
                }
            }
        }
    }
    // the rule has something to do on the shipped machines
    assert!(ties > 0, "no tie on any shipped topology");
}
