//! The `nccl` algorithm on the fabric: its record carries NCCL's
//! decisions, its per-step latency sits on the critical path, its channels
//! run in parallel, host staging costs what it moves, both fidelities
//! agree.

use contend_nccl::{DecidedBy, Protocol, TransportKind};
use contend_sim::{ModelParams, RunSpec, simulate_one};
use contend_topo::{Bytes, Nanos};
use contend_workload::{
    Algorithm, Dtype, Fidelity, Placement, Scenario, Skew, Workload, default_scenario,
};

fn with(vars: &[(&str, &str)], size: u64) -> Scenario {
    let sc = default_scenario(None).unwrap();
    let mut spec = sc.spec();
    spec.algorithms = vec![Algorithm::Nccl];
    spec.workload = Workload::Allreduce {
        sizes: vec![Bytes(size)],
        dtype: Dtype::Bf16,
        repeats: 3,
        gap: contend_topo::Picos::ZERO,
        skew: Skew::None,
    };
    for (k, v) in vars {
        spec.nccl.env.set_modelled(k, v).unwrap();
    }
    Scenario::new(spec).unwrap()
}

/// Median allreduce time, µs.
fn time(sc: &Scenario, p: &ModelParams, fid: Fidelity) -> f64 {
    let size = match sc.workload() {
        Workload::Allreduce { sizes, .. } => sizes[0],
        _ => unreachable!(),
    };
    let run = simulate_one(
        sc,
        p,
        RunSpec {
            algorithm: Some(Algorithm::Nccl),
            placement: Placement::Peer,
            fidelity: fid,
            size: Some(size),
        },
    )
    .unwrap();
    run.record().stats.median_ns / 1e3
}

/// The defaults with a software cost of `ns` per NCCL step.
fn overhead(ns: f64) -> ModelParams {
    let mut p = ModelParams::default();
    p.nccl.step_overhead_ns = Nanos::new(ns);
    p
}

#[test]
fn the_record_carries_nccls_decisions() {
    let sc = default_scenario(None).unwrap();
    let spec = RunSpec {
        algorithm: Some(Algorithm::Nccl),
        placement: Placement::Peer,
        fidelity: Fidelity::Flow,
        size: None,
    };
    let run = simulate_one(&sc, &ModelParams::default(), spec).unwrap();
    let rec = run.record();
    assert_eq!(rec.placement, None, "NCCL places its own buffers");
    let f = rec.extra.nccl.decisions.as_ref().expect("decisions");
    assert_eq!(f.decided_by, DecidedBy::Replica);
    assert_eq!(f.version, "2.28");
    assert_eq!(
        (f.algorithm, f.protocol),
        (contend_nccl::Algorithm::Ring, Protocol::Simple)
    );
    assert_eq!(
        (f.channel_lo, f.channel_hi, f.comm_channels),
        (0, 1, Some(2))
    );
    assert_eq!(f.connections.len(), 8);
    assert!(
        f.connections
            .iter()
            .all(|c| c.transport == TransportKind::Shm)
    );
    let line = rec.extra.nccl.line.as_deref().unwrap();
    assert!(
        line.starts_with("nccl 2.28: SHM on 8 connections; ring Simple on 2 of 2 channels"),
        "{line}"
    );
    assert!(
        line.contains("gpu0→gpu4: SHM, path SYS above P2P level PXB"),
        "{line}"
    );
    // the record round-trips through JSON with its decisions
    let back: contend_workload::ResultRecord =
        serde_json::from_str(&serde_json::to_string(rec).unwrap()).unwrap();
    assert_eq!(back.extra.nccl.decisions, rec.extra.nccl.decisions);
    assert_eq!(back.algorithm, contend_workload::Measured::NCCL);
}

#[test]
fn the_per_step_overhead_adds_once_per_hop_on_the_critical_path() {
    let sc = with(&[], 43_008);
    let t0 = time(&sc, &overhead(0.0), Fidelity::Flow);
    let t1 = time(&sc, &overhead(5700.0), Fidelity::Flow);
    // ring Simple: 2(n−1) = 14 hops of 5.7 µs each, on the critical path
    let added = t1 - t0;
    assert!((70.0..=95.0).contains(&added), "{t0} -> {t1}: +{added} us");
}

#[test]
fn host_staging_costs_what_it_moves_and_p2p_skips_it() {
    let p = overhead(0.0);
    let shm = time(&with(&[], 16 << 20), &p, Fidelity::Flow);
    let p2p = time(
        &with(&[("NCCL_P2P_LEVEL", "SYS")], 16 << 20),
        &p,
        Fidelity::Flow,
    );
    assert!(shm > 1.5 * p2p, "SHM {shm} us vs P2P {p2p} us");
    let small_shm = time(&with(&[], 43_008), &p, Fidelity::Flow);
    let small_p2p = time(
        &with(&[("NCCL_P2P_LEVEL", "SYS")], 43_008),
        &p,
        Fidelity::Flow,
    );
    assert!(small_shm > small_p2p, "{small_shm} vs {small_p2p}");
}

#[test]
fn channels_run_in_parallel() {
    // host staging at 16 MiB is bound by each block's loads in flight:
    // eight blocks move it faster than two until the links bind (one
    // after another they would take as long or longer)
    let p = overhead(0.0);
    let two = time(&with(&[], 16 << 20), &p, Fidelity::Flow);
    let eight = time(
        &with(&[("NCCL_MIN_NCHANNELS", "8")], 16 << 20),
        &p,
        Fidelity::Flow,
    );
    assert!(
        two > 1.6 * eight,
        "2 channels {two} us, 8 channels {eight} us"
    );
}

#[test]
fn fidelities_agree_and_every_algorithm_and_protocol_runs() {
    for vars in [
        vec![],
        vec![("NCCL_P2P_LEVEL", "SYS")],
        vec![("NCCL_ALGO", "Tree")],
        vec![("NCCL_PROTO", "LL")],
        vec![("NCCL_PROTO", "LL128"), ("NCCL_P2P_LEVEL", "SYS")],
    ] {
        let sc = with(&vars, 43_008);
        let flow = time(&sc, &ModelParams::default(), Fidelity::Flow);
        let tlp = time(&sc, &ModelParams::default(), Fidelity::Tlp);
        // LL into host memory: each step's post ends when its stores have
        // drained there in the fluid model, when they have left the GPU at
        // TLP fidelity (the store buffer), so flow runs up to a quarter slow
        assert!(
            (flow - tlp).abs() <= 0.25 * tlp,
            "{vars:?}: flow {flow} us, TLP {tlp} us"
        );
    }
}
