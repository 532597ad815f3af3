//! The checked size ladder: sizes from `from` to `to`, each `factor` times
//! the last. Every sweep (scenario files, `contend sweep`, the TUI,
//! `advise`) builds its sizes here, so none can overflow or run away.

use crate::limits::{MAX_FACTOR, MAX_SIZE, MAX_SIZES};
use contend_topo::Bytes;
use thiserror::Error;

/// Why a ladder cannot be built; `field` is the bound at fault.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct LadderError {
    /// `from`, `to` or `factor` (`sizes` for a [`size_list`]).
    pub field: &'static str,
    pub message: String,
}

/// Sizes `round(from · factor^k)` for k = 0, 1, 2, … up to and including
/// `to`: whole bytes, duplicates dropped, strictly increasing. `factor` is
/// any number above 1 up to [`MAX_FACTOR`]; an integer factor gives the
/// exact products (`1 KiB, 2 KiB, 4 KiB, …`).
pub fn ladder(from: Bytes, to: Bytes, factor: f64) -> Result<Vec<Bytes>, LadderError> {
    let err = |field, message: String| Err(LadderError { field, message });
    if from.0 == 0 {
        return err("from", "the smallest size must be above zero".into());
    }
    if to > MAX_SIZE {
        return err(
            "to",
            format!(
                "{} is above the largest size contend runs ({MAX_SIZE})",
                to.0
            ),
        );
    }
    if to < from {
        return err("to", format!("{to} is below the smallest size {from}"));
    }
    if !(factor.is_finite() && factor > 1.0 && factor <= MAX_FACTOR as f64) {
        return err(
            "factor",
            format!("factor must be above 1 and at most {MAX_FACTOR}, not {factor}"),
        );
    }
    let too_many = || err("factor", format!("more than {MAX_SIZES} sizes"));
    let mut v = vec![from];
    if factor.fract() == 0.0 {
        // exact integer products (every step stays below MAX_SIZE x MAX_FACTOR)
        let f = factor as u64;
        let mut x = from.0;
        while let Some(n) = x.checked_mul(f).filter(|n| *n <= to.0) {
            v.push(Bytes(n));
            if v.len() > MAX_SIZES {
                return too_many();
            }
            x = n;
        }
        return Ok(v);
    }
    // Jump straight to the next exponent whose size rounds above the last
    // one, so a factor near 1 costs one step per size, not per exponent.
    let (base, lnf) = (from.0 as f64, factor.ln());
    let mut k = 0.0_f64;
    loop {
        let last = v[v.len() - 1].0 as f64;
        let mut kk = (((last + 0.5) / base).ln() / lnf).ceil().max(k + 1.0);
        let mut next = (base * factor.powf(kk)).round();
        // rounding in ln/powf: a step or two more at most
        let mut tries = 0;
        while next <= last {
            tries += 1;
            if tries > 64 {
                return err(
                    "factor",
                    format!("factor {factor} is too close to 1 to step from {last} B"),
                );
            }
            kk += 1.0;
            next = (base * factor.powf(kk)).round();
        }
        if next > to.0 as f64 {
            return Ok(v);
        }
        v.push(Bytes(next as u64));
        if v.len() > MAX_SIZES {
            return too_many();
        }
        k = kk;
    }
}

/// A list of sizes given one by one (`--sizes 1KiB,43008,64KiB`), held
/// to the same limits as a ladder: each above zero and at most
/// [`MAX_SIZE`], at most [`MAX_SIZES`] of them. Sorted, repeats dropped.
pub fn size_list(sizes: &[Bytes]) -> Result<Vec<Bytes>, LadderError> {
    let err = |message: String| {
        Err(LadderError {
            field: "sizes",
            message,
        })
    };
    if sizes.is_empty() {
        return err("the list of sizes is empty".into());
    }
    if sizes.len() > MAX_SIZES {
        return err(format!("{} sizes: at most {MAX_SIZES}", sizes.len()));
    }
    if let Some(b) = sizes.iter().find(|b| b.0 == 0 || **b > MAX_SIZE) {
        return err(format!(
            "size {} is outside 1 B to the largest size contend runs ({MAX_SIZE})",
            b.0
        ));
    }
    let mut v = sizes.to_vec();
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders_are_bounded_and_exact() {
        assert_eq!(
            ladder(Bytes(1024), Bytes(8192), 2.0).unwrap(),
            vec![Bytes(1024), Bytes(2048), Bytes(4096), Bytes(8192)]
        );
        assert_eq!(ladder(Bytes(1), Bytes(1), 2.0).unwrap(), vec![Bytes(1)]);
        // a step past `to` ends the ladder; with `to` and the factor
        // bounded, no step can pass u64::MAX
        assert_eq!(
            ladder(Bytes(1 << 30), MAX_SIZE, MAX_FACTOR as f64).unwrap(),
            vec![Bytes(1 << 30)]
        );
        assert_eq!(
            ladder(Bytes(1 << 10), MAX_SIZE, (1u64 << 54) as f64)
                .unwrap_err()
                .field,
            "factor"
        );
        for bad in [f64::MAX, f64::INFINITY, f64::NAN, 1.0, 0.5, -2.0, 0.0] {
            assert_eq!(
                ladder(Bytes(1), Bytes(4), bad).unwrap_err().field,
                "factor",
                "{bad}"
            );
        }
        assert_eq!(
            ladder(Bytes(1), Bytes(u64::MAX), 2.0).unwrap_err().field,
            "to"
        );
        assert_eq!(ladder(Bytes(0), Bytes(1), 2.0).unwrap_err().field, "from");
        assert_eq!(ladder(Bytes(8), Bytes(4), 2.0).unwrap_err().field, "to");
    }

    #[test]
    fn float_factors_round_to_whole_bytes_without_repeats() {
        // 1, 1.5, 2.25, 3.375, 5.06, 7.59, 11.4 -> 1, 2, (2), 3, 5, 8, 11
        assert_eq!(
            ladder(Bytes(1), Bytes(12), 1.5).unwrap(),
            [1, 2, 3, 5, 8, 11].map(Bytes).to_vec()
        );
        // sqrt(2) from 1 KiB: every other size is a power of two (to rounding)
        let v = ladder(Bytes(1024), Bytes(16384), 2f64.sqrt()).unwrap();
        assert_eq!(
            v,
            [1024, 1448, 2048, 2896, 4096, 5793, 8192, 11585, 16384]
                .map(Bytes)
                .to_vec()
        );
        // strictly increasing, bounded, within `to`, for factors near 1 too
        for (from, to, f) in [
            (1u64, 4096u64, 1.001),
            (1, 1 << 20, 1.07),
            (43_008, 64 << 20, 1.25),
            (1 << 30, 1 << 31, 1.001),
        ] {
            let v = ladder(Bytes(from), Bytes(to), f).unwrap();
            assert_eq!(v[0], Bytes(from));
            assert!(v.windows(2).all(|w| w[0] < w[1]), "{from} {to} {f}");
            assert!(v.iter().all(|b| b.0 <= to));
            assert!(v.len() <= MAX_SIZES);
        }
        // a factor so near 1 that it needs more sizes than the limit is an
        // error, found in at most MAX_SIZES steps
        let t = std::time::Instant::now();
        assert_eq!(
            ladder(Bytes(1 << 30), MAX_SIZE, 1.0 + 1e-12)
                .unwrap_err()
                .field,
            "factor"
        );
        assert_eq!(
            ladder(Bytes(1), MAX_SIZE, 1.000_000_1).unwrap_err().field,
            "factor"
        );
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn size_lists_are_checked_sorted_and_deduplicated() {
        assert_eq!(
            size_list(&[Bytes(65536), Bytes(1024), Bytes(43008), Bytes(1024)]).unwrap(),
            vec![Bytes(1024), Bytes(43008), Bytes(65536)]
        );
        for bad in [vec![], vec![Bytes(0)], vec![Bytes(MAX_SIZE.0 + 1)]] {
            assert_eq!(size_list(&bad).unwrap_err().field, "sizes");
        }
        assert!(size_list(&vec![Bytes(1); MAX_SIZES + 1]).is_err());
    }
}
