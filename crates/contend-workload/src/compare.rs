//! Which algorithm wins: the one set of rules the command line, the TUI,
//! calibration and `advise` use to rank results, find the winner at each
//! size, merge sizes into bands and mark the crossovers between them.
//!
//! ```
//! use contend_workload::compare::{bands, crossovers};
//! use contend_topo::Bytes;
//! let w = [(Bytes(1), Some("a")), (Bytes(2), Some("a")), (Bytes(4), Some("b"))];
//! assert_eq!(bands(&w).len(), 2);
//! assert_eq!(crossovers(&w)[0].size, Bytes(4));
//! ```

use crate::kinds::WorkloadKind;
use crate::record::{Measured, ResultRecord};
use contend_topo::Bytes;

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
}
