//! How far the model is from a case's measurements: every row's error, each
//! group's median and p90 |error|, the crossovers (where two series' times
//! cross, measured and predicted), and the sources' claims.

use crate::case::Group;
use contend_topo::Bytes;
use serde::Serialize;
use statrs::statistics::{Data, OrderStatistics};

/// One row, predicted.
#[derive(Clone, Debug, Serialize)]
pub struct RowResult {
    pub case: String,
    pub series: String,
    pub group: Group,
    pub algorithm: String,
    pub size_bytes: u64,
    pub measured_us: f64,
    pub predicted_us: f64,
    /// (predicted − measured) / measured, percent: above zero, too slow.
    pub error_pct: f64,
}

/// Median and p90 of a set of |error| percentages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ErrorStats {
    pub rows: usize,
    pub median_abs_pct: f64,
    pub p90_abs_pct: f64,
    pub max_abs_pct: f64,
    /// Median of the signed errors: above zero, the model is too slow.
    pub median_signed_pct: f64,
}

impl ErrorStats {
    /// Statistics of signed errors (percent); zeros for none.
    pub fn of(errors: &[f64]) -> ErrorStats {
        if errors.is_empty() {
            return ErrorStats::default();
        }
        let mut abs = Data::new(errors.iter().map(|e| e.abs()).collect::<Vec<_>>());
        let mut signed = Data::new(errors.to_vec());
        ErrorStats {
            rows: errors.len(),
            median_abs_pct: abs.median(),
            p90_abs_pct: abs.percentile(90),
            max_abs_pct: errors.iter().fold(0.0_f64, |m, e| m.max(e.abs())),
            median_signed_pct: signed.median(),
        }
    }
}

/// Where `a`'s time stops being below `b`'s: the first pair of neighbouring
/// sizes where `a` is faster at the smaller and not at the larger, the
/// crossing placed where log(a/b) reaches zero on a log-size axis. `None`
/// when `a` is not faster at the smallest size or never loses.
/// `pairs`: `(size, a, b)` sorted by size.
pub fn crossing(pairs: &[(Bytes, f64, f64)]) -> Option<f64> {
    let first = pairs.first()?;
    if first.1 >= first.2 {
        return None;
    }
    pairs.windows(2).find_map(|w| {
        let (s0, a0, b0) = w[0];
        let (s1, a1, b1) = w[1];
        if a0 < b0 && a1 >= b1 {
            let r0 = (a0 / b0).ln();
            let r1 = (a1 / b1).ln();
            let x0 = (s0.0 as f64).ln();
            let x1 = (s1.0 as f64).ln();
            let t = if r1 == r0 { 1.0 } else { -r0 / (r1 - r0) };
            Some((x0 + t * (x1 - x0)).exp())
        } else {
            None
        }
    })
}

/// A crossover, measured and predicted.
#[derive(Clone, Debug, Serialize)]
pub struct CrossoverResult {
    pub case: String,
    /// Faster below the crossover.
    pub small: String,
    /// Faster above it.
    pub large: String,
    pub measured_bytes: f64,
    /// `None`: the prediction does not cross in the measured range (which
    /// of the two wins throughout is in `predicted_note`).
    pub predicted_bytes: Option<f64>,
    pub predicted_note: Option<String>,
    /// predicted / measured (above 1: predicted too late); `None` with no
    /// predicted crossing.
    pub ratio: Option<f64>,
}

/// A claim of the source, checked on the prediction.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimResult {
    pub case: String,
    pub text: String,
    pub holds: bool,
    /// The sizes where the prediction contradicts it.
    pub contradicted_at: Vec<u64>,
}

/// Every group's statistics over `rows`, in group order.
pub fn by_group(rows: &[RowResult]) -> Vec<(Group, ErrorStats)> {
    let mut groups: Vec<Group> = rows.iter().map(|r| r.group).collect();
    groups.sort();
    groups.dedup();
    groups
        .into_iter()
        .map(|g| {
            let e: Vec<f64> = rows
                .iter()
                .filter(|r| r.group == g)
                .map(|r| r.error_pct)
                .collect();
            (g, ErrorStats::of(&e))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossing_interpolates_on_log_size() {
        // a is half of b at 1 KiB and twice b at 4 KiB: log-ratio −ln2 → +ln2,
        // so zero at the geometric middle, 2 KiB
        let p = [(Bytes(1024), 1.0, 2.0), (Bytes(4096), 4.0, 2.0)];
        let c = crossing(&p).unwrap();
        assert!((c - 2048.0).abs() < 1e-6, "{c}");
        // never loses, or loses from the start: no crossing
        assert_eq!(
            crossing(&[(Bytes(1), 1.0, 2.0), (Bytes(2), 1.0, 2.0)]),
            None
        );
        assert_eq!(
            crossing(&[(Bytes(1), 3.0, 2.0), (Bytes(2), 1.0, 2.0)]),
            None
        );
    }

    #[test]
    fn stats_are_of_absolute_errors_with_a_signed_median() {
        let s = ErrorStats::of(&[-10.0, 20.0, -30.0, 40.0, 50.0]);
        assert_eq!(s.rows, 5);
        assert!((s.median_abs_pct - 30.0).abs() < 1e-9);
        assert!((s.median_signed_pct - 20.0).abs() < 1e-9);
        assert!((s.max_abs_pct - 50.0).abs() < 1e-9);
    }
}
