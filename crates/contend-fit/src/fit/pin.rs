//! Which constants a fit's points can pin, by one rule: for a box's own
//! measurements ([`mod@crate::calibrate`]) and for a public rig's figures
//! ([`crate::rig_fit`]).
//!
//! 1. a candidate is *pinned* when moving it across its search range (from
//!    a quarter to three quarters of the way; a cap from a third of the way
//!    to unset) moves the prediction of a point that may pin it by more
//!    than [`PINNED`];
//! 2. a pinned candidate is *free* (fitted) unless its changes over the
//!    points (log ratios) keep less than [`INDEPENDENT`] of their norm
//!    outside the span of the changes of the candidates chosen before it:
//!    then the points cannot tell it from them.
//!
//! Each free candidate adds one dimension to that span, and the span has
//! no more dimensions than the points have independent figures (twelve
//! figures that move alike are one), so no more constants are fitted than
//! the data has independent figures; the others keep their starting values.

use crate::fit::FitParam;
use contend_import::CalibError;
use contend_sim::ModelParams;

/// A prediction that moves by more than this (relative) pins a constant.
pub const PINNED: f64 = 0.01;
/// A candidate whose changes over the points keep less than this share
/// (of their norm) outside the span of the earlier choices' adds nothing
/// the points can tell apart.
pub const INDEPENDENT: f64 = 0.2;

/// What the rule decided for one candidate.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Pinned, and independent of the candidates chosen before it: fitted.
    Free,
    /// No point that may pin it moves by more than [`PINNED`] between
    /// `lo` and `hi` (`None`: a cap unset).
    MovesNothing { lo: f64, hi: Option<f64> },
    /// It moves points, but as a mix of these (chosen before it) does.
    Collinear { with: Vec<&'static str> },
}

/// One candidate and what the rule decided.
#[derive(Clone, Debug)]
pub struct Pin {
    pub param: FitParam,
    pub verdict: Verdict,
    /// The points whose prediction it moves by more than [`PINNED`].
    pub moved: Vec<usize>,
}

impl Pin {
    /// Whether it is fitted.
    pub fn free(&self) -> bool {
        self.verdict == Verdict::Free
    }
}

fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x.max(1e-9) / y.max(1e-9)).ln())
        .collect()
}

/// The two values a candidate is moved between, from `base`: a quarter
/// and three quarters of the way across its range, or (a cap unset in
/// `base`) a third of the way and unset (`None`).
fn span(fp: &FitParam, base: &ModelParams) -> (f64, Option<f64>) {
    if fp.optional && (fp.get)(base) >= fp.hi {
        (fp.at_fraction(1.0 / 3.0), None)
    } else {
        (fp.at_fraction(0.25), Some(fp.at_fraction(0.75)))
    }
}

/// Applies the rule to `cands` in order. `predict` gives every point's
/// prediction under a set of constants; `may_pin(candidate, point)` says
/// whether a point may pin a candidate (a rig's latency figures pin only
/// latencies).
pub fn choose(
    cands: &[FitParam],
    base: &ModelParams,
    predict: impl Fn(&ModelParams) -> Result<Vec<f64>, CalibError>,
    may_pin: impl Fn(&FitParam, usize) -> bool,
) -> Result<Vec<Pin>, CalibError> {
    // an orthonormal basis of the chosen candidates' changes
    let mut basis: Vec<Vec<f64>> = vec![];
    let mut chosen: Vec<&'static str> = vec![];
    let mut out = vec![];
    for fp in cands {
        let (lo, hi) = span(fp, base);
        // the knee of the cross-socket degradation does nothing while the
        // degradation is off: where the degradation's exponent is fitted,
        // the knee is probed with it on; where it is not, the knee stays
        // off with it (moves nothing)
        let mut probe = base.clone();
        if fp.name == "cross_socket.stream_knee"
            && probe.cross_socket.stream_exponent == 0.0
            && chosen.contains(&"cross_socket.stream_exponent")
        {
            probe.cross_socket.stream_exponent = 1.0;
        }
        let mut a = probe.clone();
        let mut b = probe;
        (fp.set)(&mut a, lo);
        (fp.set)(&mut b, hi.unwrap_or(fp.hi));
        let (pa, pb) = (predict(&a)?, predict(&b)?);
        let change: Vec<f64> = ratios(&pa, &pb)
            .into_iter()
            .enumerate()
            .map(|(i, r)| if may_pin(fp, i) { r } else { 0.0 })
            .collect();
        let moved: Vec<usize> = (change.iter().enumerate())
            .filter(|(_, r)| r.abs() > PINNED)
            .map(|(i, _)| i)
            .collect();
        let norm = change.iter().map(|x| x * x).sum::<f64>().sqrt();
        let mut residual = change;
        for e in &basis {
            let d: f64 = residual.iter().zip(e).map(|(x, y)| x * y).sum();
            for (x, y) in residual.iter_mut().zip(e) {
                *x -= d * y;
            }
        }
        let rnorm = residual.iter().map(|x| x * x).sum::<f64>().sqrt();
        let verdict = if moved.is_empty() {
            Verdict::MovesNothing { lo, hi }
        } else if rnorm < INDEPENDENT * norm {
            Verdict::Collinear {
                with: chosen.clone(),
            }
        } else {
            basis.push(residual.iter().map(|x| x / rnorm).collect());
            chosen.push(fp.name);
            Verdict::Free
        };
        out.push(Pin {
            param: *fp,
            verdict,
            moved,
        });
    }
    Ok(out)
}
