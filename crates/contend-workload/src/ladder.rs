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
    /// `from`, `to` or `factor`.
    pub field: &'static str,
    pub message: String,
}

/// Sizes `from, from·factor, from·factor², …` up to and including `to`.
pub fn ladder(from: Bytes, to: Bytes, factor: u64) -> Result<Vec<Bytes>, LadderError> {
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
    if !(2..=MAX_FACTOR).contains(&factor) {
        return err(
            "factor",
            format!("factor must be 2 to {MAX_FACTOR}, not {factor}"),
        );
    }
    let mut v = vec![];
    let mut x = from.0;
    while x <= to.0 {
        v.push(Bytes(x));
        if v.len() > MAX_SIZES {
            return err("factor", format!("more than {MAX_SIZES} sizes"));
        }
        match x.checked_mul(factor) {
            Some(n) => x = n,
            None => break,
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders_are_bounded_and_exact() {
        assert_eq!(
            ladder(Bytes(1024), Bytes(8192), 2).unwrap(),
            vec![Bytes(1024), Bytes(2048), Bytes(4096), Bytes(8192)]
        );
        assert_eq!(ladder(Bytes(1), Bytes(1), 2).unwrap(), vec![Bytes(1)]);
        // a step past `to` ends the ladder; with `to` and the factor
        // bounded, no step can pass u64::MAX
        assert_eq!(
            ladder(Bytes(1 << 30), MAX_SIZE, MAX_FACTOR).unwrap(),
            vec![Bytes(1 << 30)]
        );
        assert_eq!(
            ladder(Bytes(1 << 10), MAX_SIZE, 1 << 54).unwrap_err().field,
            "factor"
        );
        assert_eq!(
            ladder(Bytes(1), Bytes(4), u64::MAX).unwrap_err().field,
            "factor"
        );
        assert_eq!(
            ladder(Bytes(1), Bytes(u64::MAX), 2).unwrap_err().field,
            "to"
        );
        assert_eq!(ladder(Bytes(0), Bytes(1), 2).unwrap_err().field, "from");
        assert_eq!(ladder(Bytes(1), Bytes(4), 1).unwrap_err().field, "factor");
        assert_eq!(ladder(Bytes(8), Bytes(4), 2).unwrap_err().field, "to");
    }
}
