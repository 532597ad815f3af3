//! Which algorithm wins: the one set of rules the command line, the TUI,
//! calibration and `advise` use to rank results, find the winner at each
//! size, merge sizes into bands and mark the crossovers between them, and
//! the sets of algorithms a comparison is made over.
//!
//! ```
//! use contend_workload::compare::{bands, crossovers};
//! use contend_topo::Bytes;
//! let w = [(Bytes(1), Some("a")), (Bytes(2), Some("a")), (Bytes(4), Some("b"))];
//! assert_eq!(bands(&w).len(), 2);
//! assert_eq!(crossovers(&w)[0].size, Bytes(4));
//! ```

use crate::kinds::{Algorithm, WorkloadKind};
use crate::record::{Measured, ResultRecord};
use contend_topo::Bytes;
use std::fmt;

/// The number that ranks results of one workload, ns: a verify step by its
/// whole time, anything else by its median per-op time.
pub fn ranking_ns(r: &ResultRecord) -> f64 {
    match r.workload {
        WorkloadKind::VerifyStep => r.total_ns,
        _ => r.stats.median_ns,
    }
}

/// Index of the fastest item by `key` (the first of equals); items whose
/// key is not a number never win.
pub fn fastest<T>(items: &[T], key: impl Fn(&T) -> f64) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, x) in items.iter().enumerate() {
        let k = key(x);
        if k.is_nan() {
            continue;
        }
        if best.is_none_or(|(_, b)| k < b) {
            best = Some((i, k));
        }
    }
    best.map(|b| b.0)
}

/// Index of the slowest item by `key` (the last of equals).
pub fn slowest<T>(items: &[T], key: impl Fn(&T) -> f64) -> Option<usize> {
    let mut worst: Option<(usize, f64)> = None;
    for (i, x) in items.iter().enumerate() {
        let k = key(x);
        if k.is_nan() {
            continue;
        }
        if worst.is_none_or(|(_, w)| k >= w) {
            worst = Some((i, k));
        }
    }
    worst.map(|w| w.0)
}

/// What a winner's speed-up is told against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Baseline {
    /// NCCL as NCCL would run there (its item's index): what a user has
    /// without changing anything.
    Nccl(usize),
    /// No NCCL among the items: the slowest (its index).
    Slowest(usize),
}

impl Baseline {
    /// The baseline item's index.
    pub fn index(self) -> usize {
        match self {
            Baseline::Nccl(i) | Baseline::Slowest(i) => i,
        }
    }
}

/// The baseline of `items` by `key`: NCCL's item where [`Algorithm::Nccl`]
/// is among them (one rule for every table that tells a speed-up), else the
/// slowest.
pub fn baseline<T>(
    items: &[T],
    key: impl Fn(&T) -> f64,
    algorithm: impl Fn(&T) -> Option<Algorithm>,
) -> Option<Baseline> {
    match items
        .iter()
        .position(|x| algorithm(x) == Some(Algorithm::Nccl) && !key(x).is_nan())
    {
        Some(i) => Some(Baseline::Nccl(i)),
        None => slowest(items, key).map(Baseline::Slowest),
    }
}

/// The distinct sizes of `records`, in the order they first appear.
pub fn sizes(records: &[&ResultRecord]) -> Vec<Bytes> {
    let mut v: Vec<Bytes> = vec![];
    for r in records {
        let s = Bytes(r.size_bytes);
        if !v.contains(&s) {
            v.push(s);
        }
    }
    v
}

/// At each size of a sweep, what was fastest (by [`ranking_ns`]).
pub fn winners_by_size(records: &[&ResultRecord]) -> Vec<(Bytes, Option<Measured>)> {
    sizes(records)
        .into_iter()
        .map(|s| {
            let at: Vec<&&ResultRecord> = records.iter().filter(|r| r.size_bytes == s.0).collect();
            (s, fastest(&at, |r| ranking_ns(r)).map(|i| at[i].algorithm))
        })
        .collect()
}

/// One contender's time at each size of a sweep, ns (NaN where it has no
/// point at that size).
#[derive(Clone, Debug, PartialEq)]
pub struct Series<T> {
    pub name: T,
    pub ns: Vec<f64>,
}

/// At each of `sizes`, which series was fastest (by [`fastest`]: the first
/// of equals; a missing point never wins). `series[j].ns[i]` is the time
/// at `sizes[i]`; a series shorter than `sizes` has no point beyond its end.
pub fn winners_over<T: Clone>(sizes: &[Bytes], series: &[Series<T>]) -> Vec<(Bytes, Option<T>)> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let at = |x: &Series<T>| x.ns.get(i).copied().unwrap_or(f64::NAN);
            (*s, fastest(series, at).map(|j| series[j].name.clone()))
        })
        .collect()
}

/// Consecutive sizes with the same winner.
#[derive(Clone, Debug, PartialEq)]
pub struct Band<T> {
    pub from: Bytes,
    pub to: Bytes,
    pub winner: T,
}

/// Merges consecutive sizes with the same winner into bands (sizes with no
/// winner are left out and end a band).
pub fn bands<T: PartialEq + Clone>(winners: &[(Bytes, Option<T>)]) -> Vec<Band<T>> {
    let mut out: Vec<Band<T>> = vec![];
    let mut open = false;
    for (size, w) in winners {
        match w {
            Some(w) => match out.last_mut() {
                Some(last) if open && last.winner == *w => last.to = *size,
                _ => {
                    out.push(Band {
                        from: *size,
                        to: *size,
                        winner: w.clone(),
                    });
                    open = true;
                }
            },
            None => open = false,
        }
    }
    out
}

/// Merges consecutive sizes with the same outcome into bands, where a size
/// without a winner is an outcome too (`None`): every size lies in exactly
/// one band, so a sweep can say who wins where and where nothing does.
pub fn outcome_bands<T: PartialEq + Clone>(winners: &[(Bytes, Option<T>)]) -> Vec<Band<Option<T>>> {
    let all: Vec<(Bytes, Option<Option<T>>)> =
        winners.iter().map(|(s, w)| (*s, Some(w.clone()))).collect();
    bands(&all)
}

/// Where the winner changes from one size to the next.
#[derive(Clone, Debug, PartialEq)]
pub struct Crossover<T> {
    /// The first size at which `to` wins.
    pub size: Bytes,
    pub from: T,
    pub to: T,
}

/// Every change of winner between two neighbouring sizes that both have one.
pub fn crossovers<T: PartialEq + Clone>(winners: &[(Bytes, Option<T>)]) -> Vec<Crossover<T>> {
    winners
        .windows(2)
        .filter_map(|w| match (&w[0].1, &w[1].1) {
            (Some(a), Some(b)) if a != b => Some(Crossover {
                size: w[1].0,
                from: a.clone(),
                to: b.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// The relative difference under which two predictions are a tie when the
/// model states no uncertainty of its own (constants that are not a
/// calibration's with a bootstrap): 3 %. A choice, not a measurement: it
/// is about the spread of repeated runs of one allreduce on one machine
/// that the measured records in `calibration/` show (one to a few percent
/// between repeats and between eager and graph launches), so a prediction
/// that wins by less is not a reason to switch algorithms.
pub const DEFAULT_TIE_TOLERANCE: f64 = 0.03;

/// The choices at one size that are a tie with the fastest: every one whose
/// time is at most the fastest's times (1 + its tolerance), fastest first.
/// `times`: (choice, time, the relative uncertainty of that comparison).
pub fn tied<T: Clone>(times: &[(T, f64, f64)]) -> Vec<T> {
    let Some(best) = fastest(times, |t| t.1) else {
        return vec![];
    };
    let b = times[best].1;
    let mut v: Vec<&(T, f64, f64)> = times
        .iter()
        .filter(|t| !t.1.is_nan() && t.1 <= b * (1.0 + t.2.max(0.0)))
        .collect();
    v.sort_by(|x, y| x.1.total_cmp(&y.1));
    v.into_iter().map(|t| t.0.clone()).collect()
}

/// Consecutive sizes over which the same choices hold: one (a winner) or
/// several (a tie, the choices in the order of the band's first size).
#[derive(Clone, Debug, PartialEq)]
pub struct TieBand<T> {
    pub from: Bytes,
    pub to: Bytes,
    pub choices: Vec<T>,
}

/// Merges sizes into bands so that a threshold never moves on a tie: a band
/// goes on while at least one of its choices is tied for fastest at the
/// next size too (its choices narrow to those that are), and a new band
/// starts only where none of the old band's choices is within the
/// tolerance of the fastest. `tied`: per size (ascending), the choices tied
/// for fastest there ([`tied`]); a size with none ends a band.
pub fn tie_bands<T: PartialEq + Clone>(tied: &[(Bytes, Vec<T>)]) -> Vec<TieBand<T>> {
    let mut out: Vec<TieBand<T>> = vec![];
    let mut open = false;
    for (size, here) in tied {
        if here.is_empty() {
            open = false;
            continue;
        }
        if open && let Some(last) = out.last_mut() {
            let keep: Vec<T> = last
                .choices
                .iter()
                .filter(|c| here.contains(c))
                .cloned()
                .collect();
            if !keep.is_empty() {
                last.choices = keep;
                last.to = *size;
                continue;
            }
        }
        out.push(TieBand {
            from: *size,
            to: *size,
            choices: here.clone(),
        });
        open = true;
    }
    out
}

/// Which algorithms a set names, as a preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlgorithmPreset {
    /// The scenario's own list.
    Scenario,
    /// Every algorithm.
    All,
    /// Those with a kernel written in this repository (not NCCL's rings).
    CustomKernels,
    /// One-shot against two-shot, pull and push.
    OneVsTwoShot,
    /// One algorithm alone.
    Only(Algorithm),
}

/// A set of algorithms to compare.
#[derive(Clone, Debug, PartialEq)]
pub struct AlgorithmSet {
    pub preset: AlgorithmPreset,
    pub algorithms: Vec<Algorithm>,
}

impl fmt::Display for AlgorithmSet {
    /// `all 7`, `scenario's 3`, `custom kernels 5`, `one- vs two-shot 4`,
    /// `ring-ll`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.algorithms.len();
        match self.preset {
            AlgorithmPreset::Scenario => write!(f, "scenario's {n}"),
            AlgorithmPreset::All => write!(f, "all {n}"),
            AlgorithmPreset::CustomKernels => write!(f, "custom kernels {n}"),
            AlgorithmPreset::OneVsTwoShot => write!(f, "one- vs two-shot {n}"),
            AlgorithmPreset::Only(a) => f.write_str(a.name()),
        }
    }
}

/// The algorithm sets to compare over, in order: the scenario's own list
/// (`base`, when it is neither empty nor every algorithm), all, the custom
/// kernels, one- vs two-shot, then each algorithm alone; a set with the same
/// algorithms as an earlier one is left out.
pub fn algorithm_sets(base: &[Algorithm]) -> Vec<AlgorithmSet> {
    let set = |preset, algorithms: Vec<Algorithm>| AlgorithmSet { preset, algorithms };
    let mut v: Vec<AlgorithmSet> = vec![];
    if base != Algorithm::ALL && !base.is_empty() {
        v.push(set(AlgorithmPreset::Scenario, base.to_vec()));
    }
    v.push(set(AlgorithmPreset::All, Algorithm::ALL.to_vec()));
    let custom: Vec<Algorithm> = Algorithm::ALL
        .iter()
        .copied()
        .filter(|a| a.has_custom_kernel())
        .collect();
    v.push(set(AlgorithmPreset::CustomKernels, custom));
    v.push(set(
        AlgorithmPreset::OneVsTwoShot,
        vec![
            Algorithm::OneShotPull,
            Algorithm::OneShotPush,
            Algorithm::TwoShotPull,
            Algorithm::TwoShotPush,
        ],
    ));
    for a in Algorithm::ALL {
        v.push(set(AlgorithmPreset::Only(*a), vec![*a]));
    }
    let mut seen: Vec<Vec<Algorithm>> = vec![];
    v.retain(|s| {
        if seen.contains(&s.algorithms) {
            false
        } else {
            seen.push(s.algorithms.clone());
            true
        }
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_of_equals_wins_last_of_equals_is_slowest_nan_never() {
        let v = [3.0, 1.0, 1.0, f64::NAN, 3.0];
        assert_eq!(fastest(&v, |x| *x), Some(1));
        assert_eq!(slowest(&v, |x| *x), Some(4));
        assert_eq!(fastest(&[f64::NAN], |x| *x), None);
    }

    /// A speed-up is told against NCCL wherever NCCL ran, even when a
    /// slower algorithm ran too; the slowest only where NCCL did not (or
    /// has no time).
    #[test]
    fn the_baseline_is_nccl_where_it_ran_else_the_slowest() {
        let rows = [
            (Algorithm::TwoShotPush, 4.0),
            (Algorithm::Nccl, 8.0),
            (Algorithm::CeRing, 15.0),
        ];
        let b = |r: &[(Algorithm, f64)]| baseline(r, |x| x.1, |x| Some(x.0));
        assert_eq!(b(&rows), Some(Baseline::Nccl(1)));
        assert_eq!(b(&[rows[0], rows[2]]), Some(Baseline::Slowest(1)));
        assert_eq!(
            b(&[rows[0], (Algorithm::Nccl, f64::NAN), rows[2]]),
            Some(Baseline::Slowest(2))
        );
        assert_eq!(b(&[]), None);
    }

    #[test]
    fn bands_and_crossovers_follow_the_winners() {
        let w = [
            (Bytes(1), Some('a')),
            (Bytes(2), Some('a')),
            (Bytes(4), Some('b')),
            (Bytes(8), None),
            (Bytes(16), Some('b')),
            (Bytes(32), Some('a')),
        ];
        let b = bands(&w);
        assert_eq!(
            b.iter()
                .map(|b| (b.from.0, b.to.0, b.winner))
                .collect::<Vec<_>>(),
            vec![(1, 2, 'a'), (4, 4, 'b'), (16, 16, 'b'), (32, 32, 'a')]
        );
        let c = crossovers(&w);
        assert_eq!(
            c.iter()
                .map(|c| (c.size.0, c.from, c.to))
                .collect::<Vec<_>>(),
            vec![(4, 'a', 'b'), (32, 'b', 'a')]
        );
    }

    #[test]
    fn winners_over_series_take_the_first_of_equals_and_skip_missing_points() {
        let sizes = [Bytes(1), Bytes(2), Bytes(4), Bytes(8)];
        let series = [
            Series {
                name: 'a',
                ns: vec![1.0, 5.0, f64::NAN, 2.0],
            },
            Series {
                name: 'b',
                ns: vec![1.0, 3.0, f64::NAN],
            },
        ];
        assert_eq!(
            winners_over(&sizes, &series),
            vec![
                (Bytes(1), Some('a')),
                (Bytes(2), Some('b')),
                (Bytes(4), None),
                (Bytes(8), Some('a')),
            ]
        );
        assert!(
            winners_over::<char>(&sizes, &[])
                .iter()
                .all(|w| w.1.is_none())
        );
    }

    #[test]
    fn outcome_bands_cover_every_size_and_keep_no_winner_as_its_own_band() {
        let w = [
            (Bytes(1), Some('a')),
            (Bytes(2), Some('a')),
            (Bytes(4), None),
            (Bytes(8), None),
            (Bytes(16), Some('a')),
        ];
        assert_eq!(
            outcome_bands(&w)
                .iter()
                .map(|b| (b.from.0, b.to.0, b.winner))
                .collect::<Vec<_>>(),
            vec![(1, 2, Some('a')), (4, 8, None), (16, 16, Some('a'))]
        );
        assert!(outcome_bands::<char>(&[]).is_empty());
    }

    #[test]
    fn algorithm_sets_start_with_the_scenario_and_drop_repeats() {
        let labels = |v: &[AlgorithmSet]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all = algorithm_sets(Algorithm::ALL);
        let mut want = vec![
            "all 12".to_string(),
            "custom kernels 9".into(),
            "one- vs two-shot 4".into(),
        ];
        want.extend(Algorithm::ALL.iter().map(|a| a.name().to_string()));
        assert_eq!(labels(&all), want);
        assert_eq!(algorithm_sets(&[]), all);
        // The scenario's set comes first; the same set alone is not repeated.
        let one = algorithm_sets(&[Algorithm::RingLl]);
        assert_eq!(one[0].to_string(), "scenario's 1");
        assert_eq!(one[0].algorithms, vec![Algorithm::RingLl]);
        assert_eq!(one.len(), all.len());
        assert!(!labels(&one).contains(&"ring-ll".to_string()));
    }

    #[test]
    fn ties_within_the_tolerance_never_move_a_threshold() {
        // the issue's 2-GPU case: ring wins, one-shot wins 4 MiB by 0.04 %, two-shot after
        let t = |r: f64, o: f64, w: f64| vec![('r', r, 0.03), ('o', o, 0.03), ('w', w, 0.03)];
        assert_eq!(tied(&t(10.0, 12.0, 20.0)), vec!['r']);
        assert_eq!(tied(&t(10.004, 10.0, 20.0)), vec!['o', 'r']);
        assert_eq!(tied(&t(10.0, f64::NAN, 10.2)), vec!['r', 'w']);
        assert!(tied::<char>(&[]).is_empty());
        let sizes = [
            t(10.0, 12.0, 20.0),
            t(10.0, 11.0, 20.0),
            t(10.004, 10.0, 20.0),
            t(16.0, 20.0, 10.0),
            t(32.0, 40.0, 20.0),
        ];
        let per: Vec<(Bytes, Vec<char>)> = sizes
            .iter()
            .enumerate()
            .map(|(i, v)| (Bytes(1 << i), tied(v)))
            .collect();
        let b = tie_bands(&per);
        assert_eq!(
            b.iter()
                .map(|b| (b.from.0, b.to.0, b.choices.clone()))
                .collect::<Vec<_>>(),
            vec![(1, 4, vec!['r']), (8, 16, vec!['w'])]
        );
        // a real tie is a band of its own, listing both
        let per = vec![
            (Bytes(1), vec!['a']),
            (Bytes(2), vec!['b', 'c']),
            (Bytes(4), vec!['c', 'b']),
            (Bytes(8), vec![]),
            (Bytes(16), vec!['c']),
        ];
        assert_eq!(
            tie_bands(&per)
                .iter()
                .map(|b| (b.from.0, b.to.0, b.choices.clone()))
                .collect::<Vec<_>>(),
            vec![
                (1, 1, vec!['a']),
                (2, 4, vec!['b', 'c']),
                (16, 16, vec!['c'])
            ]
        );
        // tolerance 0: the bands of plain winners
        let zero: Vec<(Bytes, Vec<char>)> = sizes
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let v: Vec<(char, f64, f64)> = v.iter().map(|x| (x.0, x.1, 0.0)).collect();
                (Bytes(1 << i), tied(&v))
            })
            .collect();
        assert_eq!(tie_bands(&zero).len(), 3);
    }
}
