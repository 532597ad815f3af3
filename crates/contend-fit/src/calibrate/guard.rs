//! What a calibration refuses to write (or, with `force`, writes with a
//! warning): a fit of constants the measurements cannot pin, and a fitted
//! constant left on a bound of its search range. (An nccl-tests run whose
//! ranks cannot be placed on the topology is refused when the files load,
//! [`contend_import::measure`].)
//!
//! Which constants the measurements pin is decided by the rule of
//! [`crate::fit::pin`] over the fit points: a constant is fitted when moving
//! it moves a fit figure by more than 1 % and in a way the constants
//! chosen before it do not, so no more constants are fitted than the
//! figures have independent values. Of the default set, the pinned ones
//! are fitted and the rest keep their starting values, each with the
//! reason; nothing pinned, or a `--fit` set with a constant the data cannot
//! pin, is refused.
//!
//! `force` fits the whole set as asked, pinned or not (the rule judges
//! each constant at the starting constants, and a constant that binds only
//! once another has moved is judged to move nothing there), less what no
//! fit point can move at all (NCCL's step overhead without an NCCL
//! point); every guard it overrides is a warning kept in the summary.

use crate::fit::pin::{self, PINNED, Verdict};
use crate::fit::{FitParam, FitPoint, FittedConstant, pinned_by};
use crate::twin::Twin;
use contend_import::CalibError;
use contend_sim::ModelParams;
use contend_workload::Fidelity;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use contend_import::fit_stop::{OnBound, Unpinned, bound_message, num, unpinned_message};

/// What the rule decided for one constant of the set a calibration was
/// asked to fit (`fit.json`'s `pinning`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinChoice {
    pub name: String,
    /// Pinned by the data ([`crate::fit::pin`]).
    pub pinned: bool,
    /// Fitted (pinned, or fitted anyway under `force`).
    pub fitted: bool,
    /// Fit figures whose prediction it moves by more than 1 %.
    pub moves: usize,
    /// Those figures by kind, with their count (`copy-peer to a GPU (12)`).
    pub figures: Vec<String>,
    /// Why it is fitted or left, for people.
    pub why: String,
    /// The value it starts from, and keeps when it is not fitted.
    pub start: f64,
    /// The measurements that pin it.
    pub pinned_by: String,
}

/// What the fit runs on, and what the report says of every constant asked for.
#[derive(Clone, Debug)]
pub struct Decision {
    pub fit: Vec<FitParam>,
    pub pinning: Vec<PinChoice>,
    pub warnings: Vec<String>,
}

/// The fit point's kinds, each with its count, for [`PinChoice::figures`].
fn kinds_of(moved: &[usize], kinds: &[String]) -> Vec<String> {
    let mut n: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in moved {
        *n.entry(kinds[i].as_str()).or_default() += 1;
    }
    n.into_iter().map(|(k, c)| format!("{k} ({c})")).collect()
}

/// Whether a fit point can move the constant at all, whatever the others:
/// NCCL's step overhead times NCCL's steps only, so without an NCCL fit
/// point nothing moves it (even under `force` it is not fitted).
fn movable(name: &str, nccl_points: bool) -> bool {
    nccl_points || name != "nccl.step_overhead_ns"
}

/// Decides which of `chosen` the fit points pin ([`crate::fit::pin`]).
/// `kinds` names each point's kind of figure and `places` its file and
/// line; `nccl_points` says whether any is an NCCL collective. Without
/// `force` the pinned constants are fitted and the others keep their
/// starting values; of a `requested` set every constant must be pinned,
/// of the default set at least one, else an error
/// ([`CalibError::Unpinned`]). Under `force` the whole set is fitted as
/// asked (less what nothing can move, `movable`), and each constant the
/// data does not pin is named in a warning.
#[allow(clippy::too_many_arguments)]
pub fn decide(
    chosen: &[FitParam],
    base: &ModelParams,
    points: &[FitPoint<Twin>],
    kinds: &[String],
    places: &[(String, usize)],
    fidelity: Fidelity,
    nccl_points: bool,
    requested: bool,
    force: bool,
) -> Result<Decision, CalibError> {
    let predict = |p: &ModelParams| -> Result<Vec<f64>, CalibError> {
        points
            .par_iter()
            .enumerate()
            .map(|(i, pt)| {
                pt.twin
                    .predict(p, fidelity)
                    .map_err(|message| CalibError::Twin {
                        file: places[i].0.clone(),
                        line: places[i].1,
                        message: message.to_string(),
                    })
            })
            .collect()
    };
    let pins = pin::choose(chosen, base, predict, |_, _| true)?;
    let why = |p: &pin::Pin| match &p.verdict {
        Verdict::Free => format!(
            "moves {} fit figure(s) by more than {:.0} %",
            p.moved.len(),
            PINNED * 100.0
        ),
        Verdict::MovesNothing { lo, hi } => format!(
            "no fit figure moves by more than {:.0} % between {} and {}",
            PINNED * 100.0,
            num(*lo),
            hi.map_or("unset".into(), num)
        ),
        Verdict::Collinear { with } => format!(
            "moves {} fit figure(s), but as a mix of {} does: the figures cannot tell it apart",
            p.moved.len(),
            with.iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let unpinned: Vec<Unpinned> = pins
        .iter()
        .filter(|p| !p.free())
        .map(|p| Unpinned {
            name: p.param.name.to_string(),
            why: why(p),
            pinned_by: pinned_by(p.param.name).to_string(),
        })
        .collect();
    let pinned: Vec<String> = (pins.iter().filter(|p| p.free()))
        .map(|p| p.param.name.to_string())
        .collect();
    let refused = (requested && !unpinned.is_empty()) || pinned.is_empty();
    if refused && !force {
        return Err(CalibError::Unpinned {
            unpinned,
            pinned,
            asked: chosen.len(),
            requested,
        });
    }
    // under force, every constant asked for that anything can move
    let fitted = |p: &pin::Pin| p.free() || (force && movable(p.param.name, nccl_points));
    let anyway: Vec<Unpinned> = (unpinned.into_iter())
        .filter(|u| pins.iter().any(|p| p.param.name == u.name && fitted(p)))
        .collect();
    let mut warnings = vec![];
    if !anyway.is_empty() {
        warnings.push(unpinned_message(
            &anyway,
            &pinned,
            chosen.len(),
            requested,
            true,
        ));
    }
    let pinning = pins
        .iter()
        .map(|p| PinChoice {
            name: p.param.name.to_string(),
            pinned: p.free(),
            fitted: fitted(p),
            moves: p.moved.len(),
            figures: kinds_of(&p.moved, kinds),
            why: why(p),
            start: (p.param.get)(base),
            pinned_by: pinned_by(p.param.name).to_string(),
        })
        .collect();
    let fit: Vec<FitParam> = pins.iter().filter(|p| fitted(p)).map(|p| p.param).collect();
    if fit.is_empty() {
        // nothing anything can move, even under force
        return Err(CalibError::Unpinned {
            unpinned: pins
                .iter()
                .map(|p| Unpinned {
                    name: p.param.name.to_string(),
                    why: why(p),
                    pinned_by: pinned_by(p.param.name).to_string(),
                })
                .collect(),
            pinned: vec![],
            asked: chosen.len(),
            requested,
        });
    }
    Ok(Decision {
        fit,
        pinning,
        warnings,
    })
}

/// The fitted constants on a bound ([`crate::fit::BOUND_MARGIN`]) of their
/// search range: an error ([`CalibError::OnBound`]), or under `force` the
/// warning to keep.
pub fn check_bounds(
    constants: &[FittedConstant],
    params: &[FitParam],
    force: bool,
) -> Result<Option<String>, CalibError> {
    let on: Vec<OnBound> = constants
        .iter()
        .filter_map(|c| {
            let fp = params.iter().find(|p| p.name == c.name)?;
            let (bound, upper) = fp.on_bound(c.value)?;
            Some(OnBound {
                name: c.name.clone(),
                value: c.value,
                bound,
                upper,
                lo: fp.lo,
                hi: fp.hi,
                pinned_by: pinned_by(fp.name).to_string(),
            })
        })
        .collect();
    if on.is_empty() {
        return Ok(None);
    }
    if !force {
        return Err(CalibError::OnBound { constants: on });
    }
    Ok(Some(bound_message(&on, true)))
}
