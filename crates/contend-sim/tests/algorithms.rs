//! The PCIe-era algorithms (island two-shot, staged push, the copy-engine
//! ring, the lossless two-shot) run to completion at both fidelities, in
//! both placements, on every shipped topology: every flag they wait for
//! arrives (the engine reports a run that stalls as an error, not a hang).

use contend_sim::{ModelParams, RunSpec, simulate_one};
use contend_topo::{Bytes, Picos, shipped};
use contend_workload::{
    Algorithm, Dtype, Fidelity, Placement, Scenario, ScenarioSpec, Skew, Workload,
};

const NEW: [Algorithm; 4] = [
    Algorithm::IslandTwoShot,
    Algorithm::StagedPush,
    Algorithm::CeRing,
    Algorithm::TwoShotPushFp32Acc,
];

#[test]
fn new_algorithms_finish_at_both_fidelities_on_every_shipped_topology() {
    let p = ModelParams::default();
    // one size below and one above a chunk per rank of a few KiB
    let sizes = [Bytes(43_008), Bytes(256 << 10)];
    for (name, _) in shipped::SHIPPED {
        let topo = shipped::get(name).unwrap().unwrap();
        if topo.gpus().len() < 2 {
            continue;
        }
        let workload = Workload::Allreduce {
            sizes: sizes.to_vec(),
            dtype: Dtype::Bf16,
            repeats: 2,
            gap: Picos::ZERO,
            skew: Skew::None,
        };
        let sc = Scenario::new(ScenarioSpec {
            placements: vec![Placement::Peer, Placement::Host],
            algorithms: NEW.to_vec(),
            ..ScenarioSpec::new("new-algorithms", topo.clone(), workload)
        })
        .unwrap();
        for alg in NEW {
            for placement in [Placement::Peer, Placement::Host] {
                for fidelity in [Fidelity::Tlp, Fidelity::Flow] {
                    for size in sizes {
                        let run = simulate_one(
                            &sc,
                            &p,
                            RunSpec {
                                algorithm: Some(alg),
                                placement,
                                fidelity,
                                size: Some(size),
                            },
                        )
                        .unwrap_or_else(|e| panic!("{name} {alg} {placement} {fidelity}: {e}"));
                        let r = run.record();
                        assert_eq!(r.per_op_ns.len(), 2, "{name} {alg}");
                        assert!(
                            r.stats.median_ns > 0.0 && r.stats.median_ns.is_finite(),
                            "{name} {alg} {placement} {fidelity} {size}: {}",
                            r.stats.median_ns
                        );
                    }
                }
            }
        }
    }
}

/// The lossless two-shot differs from two-shot push in its arithmetic only:
/// the model gives both the same time.
#[test]
fn the_lossless_two_shot_costs_what_two_shot_push_costs() {
    let topo = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
    let workload = Workload::Allreduce {
        sizes: vec![Bytes(43_008)],
        dtype: Dtype::Bf16,
        repeats: 3,
        gap: Picos::ZERO,
        skew: Skew::None,
    };
    let sc = Scenario::new(ScenarioSpec::new("lossless", topo, workload)).unwrap();
    let p = ModelParams::default();
    let t = |a| {
        simulate_one(
            &sc,
            &p,
            RunSpec {
                algorithm: Some(a),
                placement: Placement::Peer,
                fidelity: Fidelity::Tlp,
                size: Some(Bytes(43_008)),
            },
        )
        .unwrap()
        .record()
        .per_op_ns
        .clone()
    };
    assert_eq!(t(Algorithm::TwoShotPush), t(Algorithm::TwoShotPushFp32Acc));
}
