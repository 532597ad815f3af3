//! Collectives on the model: twins agree, runs repeat, mechanisms show.

use contend_sim::{ModelParams, RunSpec, simulate_one, simulate_one_reference};
use contend_topo::Bytes;
use contend_workload::{Algorithm, Fidelity, Placement, Scenario, parse_scenario};

fn verify(layers: u32, topo: &str) -> Scenario {
    let text = format!(
        "name = \"v\"\ntopology = \"{topo}\"\nseed = 7\n[workload]\nkind = \"verify-step\"\nlayers = {layers}\ngap_us = 10.0\nskew = {{ distribution = \"normal\", sd_us = 2.0 }}\n"
    );
    parse_scenario("inline", &text, None, None).unwrap()
}

fn spec(a: Algorithm, f: Fidelity, p: Placement) -> RunSpec {
    RunSpec {
        algorithm: Some(a),
        placement: p,
        fidelity: f,
        size: None,
    }
}

/// The fast radix queue and the plain binary heap give the same run, event for event.
#[test]
fn fast_queue_matches_plain_heap() {
    let sc = verify(2, "pro6000-8x-2socket");
    let p = ModelParams::default();
    for a in Algorithm::ALL {
        for f in [Fidelity::Tlp, Fidelity::Flow] {
            let x = simulate_one(&sc, &p, spec(*a, f, Placement::Peer)).unwrap();
            let y = simulate_one_reference(&sc, &p, spec(*a, f, Placement::Peer)).unwrap();
            let (mut rx, mut ry) = (x.records[0].clone(), y.records[0].clone());
            rx.wall_ns = None;
            ry.wall_ns = None;
            assert_eq!(rx, ry, "{a} {f}");
        }
    }
}

#[test]
fn same_seed_same_result_other_seed_other_skew() {
    let sc = verify(2, "pro6000-8x-2socket");
    let p = ModelParams::default();
    let s = spec(Algorithm::OneShotPull, Fidelity::Tlp, Placement::Peer);
    let mut a = simulate_one(&sc, &p, s).unwrap().records[0].clone();
    let mut b = simulate_one(&sc, &p, s).unwrap().records[0].clone();
    a.wall_ns = None;
    b.wall_ns = None;
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    let mut spec2 = sc.spec();
    spec2.seed = 8;
    let sc2 = Scenario::new(spec2).unwrap();
    let c = simulate_one(&sc2, &p, s).unwrap().records[0].clone();
    assert_ne!(a.per_op_ns, c.per_op_ns);
}

/// TLP and flow fidelity agree on the collectives too, within 12 %: these
/// are partly latency-bound, where the fluid model's round trips are
/// approximate. Measured here (verify step of 2 allreduces of 43,008 B),
/// TLP over flow: two-shot pull 0.90, one-shot pull 0.94, one-shot push,
/// ring-simple and island two-shot 0.95, the others 0.99–1.00. (At 1 MiB
/// one-shot pull agrees within 0.1 %, 183.5 vs 183.4 µs, since a link
/// queue no longer commits a packet before it is ready.) `nccl` here
/// stages through host memory (SHM, ring Simple): 13 % apart (TLP 50.7 µs,
/// flow 44.9 µs), since NCCL's time has come from the mechanics alone (its
/// tuning table's 14 × 5.7 µs on top had hidden it); the gap grows with the
/// root complex's latency (about one traversal more per step at TLP), so it
/// is held at 15 % until the two fidelities share that step's rule.
#[test]
fn fidelities_agree_on_collectives() {
    let sc = verify(2, "pro6000-8x-2socket");
    let p = ModelParams::default();
    for a in Algorithm::ALL {
        let t = simulate_one(&sc, &p, spec(*a, Fidelity::Tlp, Placement::Peer))
            .unwrap()
            .records[0]
            .stats
            .median_ns;
        let f = simulate_one(&sc, &p, spec(*a, Fidelity::Flow, Placement::Peer))
            .unwrap()
            .records[0]
            .stats
            .median_ns;
        let tolerance = if *a == Algorithm::Nccl { 0.15 } else { 0.12 };
        assert!(
            (t - f).abs() <= tolerance * f,
            "{a}: tlp {t} ns, flow {f} ns"
        );
    }
}

/// Host placement sends every byte through host memory (store, then load)
/// and never through the root complex's P2P forwarding; peer placement is
/// the other way round. (The P2P forwarding is a resource of its own where
/// it has a cap: the test gives it one.)
#[test]
fn host_placement_goes_through_memory_not_p2p() {
    let sc = verify(2, "pro6000-4x-1socket");
    let mut p = ModelParams::default();
    p.root_complex.p2p_bandwidth_gbps = Some(400.0);
    let busy = |r: &contend_sim::Run, what: &str| -> f64 {
        r.utilisation
            .iter()
            .filter(|(n, _)| n.to_string().contains(what))
            .map(|(_, u)| u)
            .sum()
    };
    for f in [Fidelity::Tlp, Fidelity::Flow] {
        for a in [Algorithm::OneShotPull, Algorithm::TwoShotPush] {
            let peer = simulate_one(&sc, &p, spec(a, f, Placement::Peer)).unwrap();
            let host = simulate_one(&sc, &p, spec(a, f, Placement::Host)).unwrap();
            assert!(
                busy(&peer, "p2p") > 0.01 && busy(&peer, "mem0") == 0.0,
                "{f} {a} peer"
            );
            assert!(
                busy(&host, "mem0") > 0.001 && busy(&host, "p2p") == 0.0,
                "{f} {a} host"
            );
        }
    }
}

/// One-shot's all-to-all loads every root complex's P2P forwarding; at
/// large sizes the ring, which sends each byte over one link per step, wins.
#[test]
fn one_shot_wins_small_and_ring_or_two_shot_wins_large() {
    let p = ModelParams::default();
    let text = "name = \"s\"\ntopology = \"pro6000-4x-1socket\"\n[workload]\nkind = \"allreduce\"\nsizes = [\"4 KiB\", \"64 MiB\"]\n";
    let sc = parse_scenario("inline", text, None, None).unwrap();
    let t = |a: Algorithm, size: u64| {
        simulate_one(
            &sc,
            &p,
            RunSpec {
                algorithm: Some(a),
                placement: Placement::Peer,
                fidelity: Fidelity::Flow,
                size: Some(Bytes(size)),
            },
        )
        .unwrap()
        .records[0]
            .stats
            .median_ns
    };
    let small = 4096;
    let large = 64 << 20;
    assert!(t(Algorithm::OneShotPull, small) < t(Algorithm::RingSimple, small));
    assert!(t(Algorithm::OneShotPull, large) > t(Algorithm::RingSimple, large));
    assert!(t(Algorithm::OneShotPull, large) > t(Algorithm::TwoShotPull, large));
}

/// Posted-write collapse: turning it on for the root complexes of a
/// two-socket machine slows push algorithms (posted writes toward both
/// sockets) and leaves pull (reads) alone.
#[test]
fn posted_write_collapse_hits_pushes_not_pulls() {
    let sc = verify(1, "pro6000-8x-2socket");
    let text = contend_topo::shipped::text("pro6000-8x-2socket")
        .unwrap()
        .replace(
            "kind = \"root_complex\"\n",
            "kind = \"root_complex\"\nposted_write_collapse = true\n",
        );
    let topo = contend_topo::parse_topology("collapse.toml", &text).unwrap();
    let mut spec2 = sc.spec();
    spec2.topology = topo;
    let sc2 = Scenario::new(spec2).unwrap();
    let p = ModelParams::default();
    for f in [Fidelity::Tlp, Fidelity::Flow] {
        let t = |s: &Scenario, a| {
            simulate_one(s, &p, spec(a, f, Placement::Peer))
                .unwrap()
                .records[0]
                .stats
                .median_ns
        };
        let push = (
            t(&sc, Algorithm::OneShotPush),
            t(&sc2, Algorithm::OneShotPush),
        );
        let pull = (
            t(&sc, Algorithm::OneShotPull),
            t(&sc2, Algorithm::OneShotPull),
        );
        assert!(push.1 > 1.5 * push.0, "{f}: push {push:?}");
        assert!(
            (pull.1 - pull.0).abs() < 0.05 * pull.0,
            "{f}: pull {pull:?}"
        );
    }
}
