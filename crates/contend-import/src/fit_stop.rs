//! Why a fit stopped: the constants the measurements cannot pin and the
//! fitted constants left on a bound of their search range, with the
//! messages that say what measurements would pin each. These are the
//! payloads of [`CalibError::Unpinned`](crate::CalibError::Unpinned) and
//! [`CalibError::OnBound`](crate::CalibError::OnBound): they sit here, in
//! the lowest calibration crate, because the calibration crates share one
//! error. The rule that decides them is contend-fit's `calibrate::guard`.

use std::fmt::Write as _;

/// A constant the measurements cannot pin.
#[derive(Clone, Debug, PartialEq)]
pub struct Unpinned {
    pub name: String,
    pub why: String,
    pub pinned_by: String,
}

/// A fitted constant on a bound of its search range.
#[derive(Clone, Debug, PartialEq)]
pub struct OnBound {
    pub name: String,
    pub value: f64,
    pub bound: f64,
    /// The upper bound (else the lower).
    pub upper: bool,
    pub lo: f64,
    pub hi: f64,
    pub pinned_by: String,
}

/// A constant's value as the messages write it (whole numbers from 100, two decimals from 1).
pub fn num(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// The refusal (or, `forced`, the warning) for constants the data cannot pin.
/// `asked`: how many constants the set has.
pub fn unpinned_message(
    unpinned: &[Unpinned],
    pinned: &[String],
    asked: usize,
    requested: bool,
    forced: bool,
) -> String {
    let mut o = if requested {
        format!(
            "the measurements cannot pin {} of the {asked} constant(s) asked for with --fit:",
            unpinned.len()
        )
    } else if pinned.is_empty() {
        format!("the measurements pin none of the {asked} constants calibration fits:")
    } else {
        format!(
            "the measurements cannot pin {} of the {asked} constants calibration fits:",
            unpinned.len()
        )
    };
    for u in unpinned {
        let _ = write!(o, "\n  `{}`: {}; pinned by {}", u.name, u.why, u.pinned_by);
    }
    let pinned = if pinned.is_empty() {
        "nothing".to_string()
    } else {
        pinned
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if forced {
        let _ = write!(
            o,
            "\n  fitted anyway (--force): their values come from the search, not from the box"
        );
    } else if requested {
        let _ = write!(
            o,
            "\nThe data pins {pinned}: fit only those (--fit), add the measurements named above, or pass --force to fit every constant asked for anyway. Nothing was written."
        );
    } else {
        let _ = write!(
            o,
            "\nAdd the measurements named above, or pass --force to fit them anyway (their values then come from the search, not from the box). Nothing was written."
        );
    }
    o
}

/// The refusal (or, `forced`, the warning) for fitted constants on a bound.
pub fn bound_message(constants: &[OnBound], forced: bool) -> String {
    let mut o = format!(
        "{} fitted constant(s) on a bound of the search range (the data pushes them past what the model allows: the value is the bound's, not the box's):",
        constants.len()
    );
    for c in constants {
        let _ = write!(
            o,
            "\n  `{}` = {} on its {} bound {} (range {} to {}); pinned by {}",
            c.name,
            num(c.value),
            if c.upper { "upper" } else { "lower" },
            num(c.bound),
            num(c.lo),
            num(c.hi),
            c.pinned_by
        );
    }
    if forced {
        let _ = write!(o, "\n  written anyway (--force)");
    } else {
        let _ = write!(
            o,
            "\nAdd measurements that pin them, fit without them (--fit the others), start elsewhere (--params), or pass --force to write params.toml with them flagged. Nothing was written."
        );
    }
    o
}
