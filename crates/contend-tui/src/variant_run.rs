//! Simulations of the shape the hardware ran: when a measurement's
//! [`Variant`] (launch mode, NCCL's path, gap or none) is not the one the
//! scenario simulates, the job that draws it also runs the scenario again in
//! the measurement's variant, for the algorithms measured in it, and the
//! measurement is laid over that run instead.

use crate::measure::{MeasureKey, NcclPath, Overlay, Shape, Variant, series_of};
use contend_topo::Picos;
use contend_workload::{Algorithm, Scenario, ScenarioError, Skew, Workload};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A scenario re-run in a measurement's variant.
#[derive(Clone, Debug)]
pub struct VariantRun {
    pub variant: Variant,
    pub scenario: Arc<Scenario>,
}

/// `sc` in `variant`, for `algorithms` only: every algorithm launched
/// `variant.launch`, NCCL with P2P on or off as measured, the gap and skew
/// taken away when the hardware had none.
pub fn variant_scenario(
    sc: &Scenario,
    variant: Variant,
    algorithms: Vec<Algorithm>,
) -> Result<Scenario, ScenarioError> {
    let mut spec = sc.spec();
    spec.algorithms = algorithms;
    spec.launch = variant.launch;
    for c in spec.per_algorithm.values_mut() {
        c.launch = None;
    }
    if let Some(path) = variant.nccl {
        spec.nccl.env.p2p_disable = path == NcclPath::P2pDisabled;
    }
    if variant.shape == Shape::Gapless {
        match &mut spec.workload {
            Workload::VerifyStep(v) => {
                v.gap = Picos::ZERO;
                v.skew = Skew::None;
            }
            Workload::Allreduce { gap, skew, .. } => {
                *gap = Picos::ZERO;
                *skew = Skew::None;
            }
            Workload::Transfer { .. } => {}
        }
    }
    Scenario::new(spec)
}

/// The re-runs the measurements of `overlay` matching `key` (and `size`,
/// when given) need beside `sc`: one per variant that some measured
/// algorithm of `sc` was measured in and `sc` does not simulate it in, and
/// that can be built from `sc` ([`Variant::simulable_from`]).
pub(crate) fn variant_runs_for(
    sc: &Scenario,
    overlay: &Overlay,
    key: &MeasureKey,
    size: Option<u64>,
) -> Result<Vec<VariantRun>, ScenarioError> {
    let shape = Shape::of(sc.workload());
    let mut want: BTreeMap<Variant, Vec<Algorithm>> = BTreeMap::new();
    for r in overlay.matching(key) {
        if size.is_some_and(|s| s != r.size_bytes) {
            continue;
        }
        let Some(a) = series_of(r).algorithm() else {
            continue;
        };
        if !sc.algorithms().contains(&a) {
            continue;
        }
        let v = Variant::of_record(r, shape);
        if v == Variant::of_scenario(sc, a) || !v.simulable_from(shape) {
            continue;
        }
        let algs = want.entry(v).or_default();
        if !algs.contains(&a) {
            algs.push(a);
        }
    }
    want.into_iter()
        .map(|(variant, mut algs)| {
            algs.sort();
            Ok(VariantRun {
                variant,
                scenario: Arc::new(variant_scenario(sc, variant, algs)?),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::parse_measurements;
    use contend_workload::{LaunchMode, default_scenario};

    fn first(path: &str) -> contend_workload::ResultRecord {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
        let text = std::fs::read_to_string(format!("{p}{path}")).unwrap();
        parse_measurements(path, &text).unwrap().remove(0)
    }

    /// The committed H200 records: NCCL with P2P and with P2P disabled are
    /// two variants, and a gapless verify step says so.
    #[test]
    fn nccl_records_are_classed_by_their_environment() {
        let p2p = first("calibration/h200x2/nccl.jsonl");
        let off = first("calibration/h200x2/nccl-p2p-disabled.jsonl");
        let (a, b) = (
            Variant::of_record(&p2p, Shape::Gapped),
            Variant::of_record(&off, Shape::Gapped),
        );
        assert_eq!(a.nccl, Some(NcclPath::P2p));
        assert_eq!(b.nccl, Some(NcclPath::P2pDisabled));
        assert_ne!(a, b);
        // measured allreduces run back to back
        assert_eq!(a.shape, Shape::Gapless);
    }

    #[test]
    fn a_variant_run_runs_the_measured_launch_path_and_shape() {
        let sc = default_scenario(None).unwrap();
        assert_eq!(Shape::of(sc.workload()), Shape::Gapped);
        let v = Variant {
            launch: LaunchMode::Graph,
            nccl: Some(NcclPath::P2pDisabled),
            shape: Shape::Gapless,
        };
        let t = variant_scenario(&sc, v, vec![Algorithm::Nccl]).unwrap();
        assert_eq!(t.algorithms(), [Algorithm::Nccl]);
        assert_eq!(Variant::of_scenario(&t, Algorithm::Nccl), v);
        assert!(t.nccl().env.p2p_disable);
        let Workload::VerifyStep(w) = t.workload() else {
            panic!("not a verify step")
        };
        assert_eq!((w.gap, w.skew), (Picos::ZERO, Skew::None));
        // everything else is the scenario's
        assert_eq!(t.ranks(), sc.ranks());
        assert_eq!(t.placements(), sc.placements());
    }

    /// A measured gap of unknown length cannot be put into a gapless
    /// scenario: no re-run, and the record is not laid over anything.
    #[test]
    fn a_gapped_measurement_over_a_gapless_scenario_is_not_simulable() {
        let v = Variant {
            launch: LaunchMode::Eager,
            nccl: None,
            shape: Shape::Gapped,
        };
        assert!(!v.simulable_from(Shape::Gapless));
        assert!(v.simulable_from(Shape::Gapped));
    }
}
