//! The numbers a result must hold before anything writes it: times that
//! are times (finite, above zero, within the simulator's clock), rates
//! that are rates and fractions within 0..=1. An allreduce that took no
//! time (a size below one element under `nccl`) would win every sweep and
//! print `inf` GB/s; a `-1e300` read back from a stream would print as a
//! 300-digit number. [`ResultRecord::check`] refuses them, naming the
//! result (algorithm, size, placement, fidelity) and the field.

use super::{Binding, Measured, ResultRecord};
use crate::kinds::{Fidelity, Placement};
use contend_topo::Bytes;
use std::fmt;
use thiserror::Error;

/// The longest time a result can hold, ns: where the simulator's clock
/// (picoseconds in a `u64`, about 213 days) ends. No measurement comes
/// near it.
pub const MAX_RESULT_NS: f64 = u64::MAX as f64 / 1e3;

/// The highest rate a result can hold, GB/s: an exabyte a second, a
/// million times what any PCIe or NVLink fabric moves.
pub const MAX_RESULT_GBPS: f64 = 1e9;

/// What a number of a result must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// A duration, ns: finite, above zero, at most `MAX_RESULT_NS`.
    Time,
    /// A rate, GB/s: finite, above zero, at most `MAX_RESULT_GBPS`.
    Rate,
    /// A busy fraction or share: finite, 0 to 1.
    Fraction,
}

impl Quantity {
    /// Whether `v` is one.
    pub fn holds(self, v: f64) -> bool {
        match self {
            Quantity::Time => v.is_finite() && v > 0.0 && v <= MAX_RESULT_NS,
            Quantity::Rate => v.is_finite() && v > 0.0 && v <= MAX_RESULT_GBPS,
            Quantity::Fraction => (0.0..=1.0).contains(&v),
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Quantity::Time => write!(
                f,
                "a time (finite, above zero, at most {MAX_RESULT_NS:.1e} ns)"
            ),
            Quantity::Rate => write!(
                f,
                "a rate (finite, above zero, at most {MAX_RESULT_GBPS:.0e} GB/s)"
            ),
            Quantity::Fraction => write!(f, "a fraction (0 to 1)"),
        }
    }
}

/// A result holding a number that is not what its field is: a time of
/// zero, a negative, NaN or infinite one, a rate or fraction out of range.
/// The value is shown in Rust's shortest form (`-1e300`, not 301 digits).
#[derive(Clone, Debug, PartialEq, Error)]
#[error("{algorithm} at {size}{}: `{field}` = {value:?} is not {expected}", placed(*placement, *fidelity))]
pub struct BadResult {
    pub algorithm: Measured,
    pub size: Bytes,
    pub placement: Option<Placement>,
    pub fidelity: Option<Fidelity>,
    /// The field as the record's JSON names it (`total_ns`,
    /// `stats.median_ns`, `per_op_ns[3]`, `busiest_link.utilisation`).
    pub field: String,
    pub value: f64,
    pub expected: Quantity,
}

fn placed(p: Option<Placement>, f: Option<Fidelity>) -> String {
    let parts: Vec<&str> = [p.map(Placement::name), f.map(Fidelity::name)]
        .into_iter()
        .flatten()
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

impl ResultRecord {
    /// Checks every number the writers print or compare (times, per-op
    /// times and their statistics, rates, busy fractions): the first that
    /// is not what its field is, named with the result. Every result goes
    /// through this before it is written (table, CSV, JSON, a stream,
    /// nccl-tests' table) or read back from a stream.
    pub fn check(&self) -> Result<(), BadResult> {
        let is = |q: Quantity, field: &dyn Fn() -> String, v: f64| {
            if q.holds(v) {
                Ok(())
            } else {
                Err(BadResult {
                    algorithm: self.algorithm,
                    size: Bytes(self.size_bytes),
                    placement: self.placement,
                    fidelity: self.fidelity,
                    field: field(),
                    value: v,
                    expected: q,
                })
            }
        };
        let named = |s: &'static str| move || s.to_string();
        is(Quantity::Time, &named("total_ns"), self.total_ns)?;
        let s = &self.stats;
        for (f, v) in [
            ("stats.median_ns", s.median_ns),
            ("stats.p10_ns", s.p10_ns),
            ("stats.p90_ns", s.p90_ns),
            ("stats.p99_ns", s.p99_ns),
            ("stats.min_ns", s.min_ns),
            ("stats.max_ns", s.max_ns),
        ] {
            is(Quantity::Time, &named(f), v)?;
        }
        for (i, v) in self.per_op_ns.iter().enumerate() {
            is(Quantity::Time, &|| format!("per_op_ns[{i}]"), *v)?;
        }
        let a = &self.extra.aggregate;
        for (f, v) in [
            ("bandwidth_gbps", self.bandwidth_gbps),
            ("extra.aggregate_gbps", a.aggregate_gbps),
            ("extra.min_gbps", a.min_gbps),
            ("extra.median_gbps", a.median_gbps),
            ("extra.max_gbps", a.max_gbps),
        ] {
            if let Some(v) = v {
                is(Quantity::Rate, &named(f), v)?;
            }
        }
        if let Some(b) = &self.busiest_link {
            is(
                Quantity::Fraction,
                &named("busiest_link.utilisation"),
                b.utilisation,
            )?;
        }
        let fraction = match &self.extra.sim.binding {
            Some(Binding::Sync { share } | Binding::Collapse { share, .. }) => {
                Some(("extra.binding.share", *share))
            }
            Some(Binding::Resource { busy, .. }) => Some(("extra.binding.busy", *busy)),
            Some(Binding::ReadWindow { busiest } | Binding::StoreIssue { busiest }) => {
                Some(("extra.binding.busiest", *busiest))
            }
            Some(Binding::CrossSocketStream { .. }) | None => None,
        };
        if let Some((f, v)) = fraction {
            is(Quantity::Fraction, &named(f), v)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{Algorithm, LaunchMode, WorkloadKind};
    use crate::record::{Extra, LinkUse, Resource, Source, Stats};

    fn record() -> ResultRecord {
        let per_op = vec![12_000.0, 13_500.5, 12_700.25];
        ResultRecord {
            source: Source::Sim,
            scenario: "s".into(),
            topology: "t".into(),
            workload: WorkloadKind::Allreduce,
            algorithm: Measured::NCCL,
            placement: None,
            fidelity: Some(Fidelity::Flow),
            launch: LaunchMode::Eager,
            ranks: vec!["gpu0".into(), "gpu1".into()],
            size_bytes: 43_008,
            total_ns: per_op.iter().sum(),
            stats: Stats::of(&per_op),
            per_op_ns: per_op,
            bandwidth_gbps: None,
            verified: None,
            events: Some(9),
            wall_ns: Some(1),
            busiest_link: Some(LinkUse {
                link: "gpu0->rc0".parse::<Resource>().unwrap(),
                utilisation: 0.5,
            }),
            machine: None,
            extra: Extra::default(),
        }
    }

    #[test]
    fn a_sane_record_passes() {
        record().check().unwrap();
        let mut r = record();
        r.bandwidth_gbps = Some(52.3);
        r.extra.sim.binding = Some(Binding::Sync { share: 1.0 });
        r.busiest_link.as_mut().unwrap().utilisation = 0.0;
        r.check().unwrap();
    }

    /// Zero, negative, NaN and infinite times are refused in every time
    /// field, named with the result; the value in its short form.
    #[test]
    fn times_that_are_no_times_are_refused_naming_the_result() {
        let bad = [0.0, -0.0, -1.0, -1e300, f64::NAN, f64::INFINITY, 1e300];
        type Set = fn(&mut ResultRecord, f64);
        let fields: [(&str, Set); 5] = [
            ("total_ns", |r, v| r.total_ns = v),
            ("stats.median_ns", |r, v| r.stats.median_ns = v),
            ("stats.p99_ns", |r, v| r.stats.p99_ns = v),
            ("stats.min_ns", |r, v| r.stats.min_ns = v),
            ("per_op_ns[1]", |r, v| r.per_op_ns[1] = v),
        ];
        for (field, set) in fields {
            for v in bad {
                let mut r = record();
                set(&mut r, v);
                let e = r.check().unwrap_err();
                assert_eq!((e.field.as_str(), e.expected), (field, Quantity::Time));
                let text = e.to_string();
                assert!(
                    text.starts_with(&format!("nccl at 42 KiB (flow): `{field}` = ")),
                    "{text}"
                );
                assert!(text.contains("is not a time"), "{text}");
                assert!(text.len() < 200, "{text}");
            }
        }
        let mut r = record();
        r.total_ns = -1e300;
        r.algorithm = Measured::Allreduce(Algorithm::OneShotPush);
        r.placement = Some(Placement::Peer);
        r.size_bytes = 1;
        assert_eq!(
            r.check().unwrap_err().to_string(),
            "one-shot-push at 1 B (peer, flow): `total_ns` = -1e300 is not a time (finite, above zero, at most 1.8e16 ns)"
        );
    }

    #[test]
    fn rates_and_fractions_out_of_range_are_refused() {
        let mut r = record();
        r.bandwidth_gbps = Some(f64::INFINITY);
        assert_eq!(r.check().unwrap_err().field, "bandwidth_gbps");
        r.bandwidth_gbps = Some(0.0);
        assert_eq!(r.check().unwrap_err().expected, Quantity::Rate);
        let mut r = record();
        r.extra.aggregate.median_gbps = Some(-3.0);
        assert_eq!(r.check().unwrap_err().field, "extra.median_gbps");
        let mut r = record();
        r.busiest_link.as_mut().unwrap().utilisation = 1e300;
        let e = r.check().unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.expected),
            ("busiest_link.utilisation", Quantity::Fraction)
        );
        let mut r = record();
        r.extra.sim.binding = Some(Binding::ReadWindow { busiest: f64::NAN });
        assert_eq!(r.check().unwrap_err().field, "extra.binding.busiest");
    }
}
