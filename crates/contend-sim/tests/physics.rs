//! The model's physics, each shown on a shipped `transfer` scenario (the same
//! files `contend simulate scenarios/transfer-*.toml` runs).

use contend_sim::{ModelParams, Run, simulate};
use contend_topo::{Nanos, shipped};
use contend_workload::{Fidelity, Scenario, load_scenario, parse_scenario};
use std::path::PathBuf;

fn scenario(name: &str) -> Scenario {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    load_scenario(&p, None).unwrap_or_else(|e| panic!("{e}"))
}

fn runs(sc: &Scenario) -> Vec<Run> {
    simulate(
        sc,
        &ModelParams::default(),
        &[Fidelity::Tlp, Fidelity::Flow],
    )
    .unwrap()
}

/// GB/s of every stream, per fidelity (tlp first).
fn bandwidths(sc: &Scenario) -> Vec<Vec<f64>> {
    runs(sc)
        .iter()
        .map(|r| {
            r.records
                .iter()
                .map(|x| x.bandwidth_gbps.unwrap())
                .collect()
        })
        .collect()
}

fn within(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs()
}

#[test]
fn gen5_x16_posted_writes_with_mps_256_reach_50_to_54_gb_s() {
    for (fid, bw) in bandwidths(&scenario("transfer-gen5-write.toml"))
        .iter()
        .enumerate()
    {
        assert!(
            (50.0..=54.0).contains(&bw[0]),
            "fidelity {fid}: {} GB/s",
            bw[0]
        );
    }
}

#[test]
fn gen4_x16_posted_writes_reach_25_to_27_gb_s() {
    for bw in bandwidths(&scenario("transfer-gen4-write.toml")) {
        assert!((25.0..=27.0).contains(&bw[0]), "{} GB/s", bw[0]);
    }
}

#[test]
fn sm_loads_fall_as_hops_are_added() {
    let sw = bandwidths(&scenario("transfer-load-hops-sw.toml"));
    let rc = bandwidths(&scenario("transfer-load-hops-rc.toml"));
    let xs = bandwidths(&scenario("transfer-load-hops-xgmi.toml"));
    for f in 0..2 {
        assert!(
            sw[f][0] > rc[f][0] * 1.2,
            "switch {} vs root complex {}",
            sw[f][0],
            rc[f][0]
        );
        assert!(
            rc[f][0] > xs[f][0] * 1.2,
            "root complex {} vs across sockets {}",
            rc[f][0],
            xs[f][0]
        );
        // latency-bound, far below the link rate
        assert!(rc[f][0] < 10.0);
    }
}

/// Little's law: with W requests of R bytes in flight, bandwidth = W·R / RTT,
/// where RTT is what a single outstanding request takes.
#[test]
fn sm_loads_are_bounded_by_outstanding_requests_over_round_trip() {
    let base = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/transfer-load-hops-rc.toml"),
    )
    .unwrap();
    let with_threads = |threads: u32| {
        let text = base
            .replace("threads = 128", &format!("threads = {threads}"))
            .replace("2 MiB", "256 KiB");
        parse_scenario("inline", &text, None, None).unwrap()
    };
    let params = ModelParams::default();
    let req = params.gpu.load_request_bytes as f64;
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        // 8 threads x 16 B = one 128 B request in flight at a time
        let one = &simulate(&with_threads(32), &params, &[fid]).unwrap()[0].records[0];
        let inflight_one = (32.0 * 16.0 / req).max(1.0);
        let rtt_ns = one.total_ns / (256.0 * 1024.0 / req) * inflight_one;
        for threads in [64u32, 128, 256] {
            let w = threads as f64 * 16.0 / req;
            let r = &simulate(&with_threads(threads), &params, &[fid]).unwrap()[0].records[0];
            let expect = w * req / rtt_ns; // GB/s
            let got = r.bandwidth_gbps.unwrap();
            assert!(
                within(got, expect, 0.10),
                "{fid} {threads} threads: {got} GB/s, Little's law says {expect}"
            );
        }
    }
}

#[test]
fn two_streams_sharing_a_link_direction_each_get_about_half() {
    let single = bandwidths(&scenario("transfer-gen5-write.toml"));
    let shared = bandwidths(&scenario("transfer-shared-link.toml"));
    for f in 0..2 {
        for s in &shared[f] {
            let share = s / single[f][0];
            assert!((0.45..=0.55).contains(&share), "share {share}");
        }
    }
}

#[test]
fn opposite_directions_do_not_slow_each_other() {
    let single = bandwidths(&scenario("transfer-gen5-write.toml"));
    let opp = bandwidths(&scenario("transfer-opposite.toml"));
    for f in 0..2 {
        for s in &opp[f] {
            assert!(
                within(*s, single[f][0], 0.02),
                "{s} vs alone {}",
                single[f][0]
            );
        }
    }
}

#[test]
fn tlp_and_flow_agree_within_10_percent_when_bandwidth_bound() {
    for name in [
        "transfer-gen5-write.toml",
        "transfer-gen4-write.toml",
        "transfer-shared-link.toml",
        "transfer-opposite.toml",
    ] {
        let bw = bandwidths(&scenario(name));
        for (t, f) in bw[0].iter().zip(&bw[1]) {
            assert!(within(*f, *t, 0.10), "{name}: tlp {t} vs flow {f}");
        }
    }
}

/// Every shipped topology carries traffic: a store stream from its first
/// GPU to its nearest host memory runs at close to the PCIe link's rate.
#[test]
fn every_shipped_topology_moves_data() {
    for (stem, _) in shipped::SHIPPED {
        let text = format!(
            "name = \"t\"\ntopology = \"{stem}\"\n[workload]\nkind = \"transfer\"\n[[workload.stream]]\nfrom = \"gpu0\"\nto = \"mem0\"\nop = \"copy\"\nbytes = \"4 MiB\"\n"
        );
        let sc = parse_scenario("inline", &text, None, None).unwrap();
        let r = simulate(&sc, &ModelParams::default(), &[Fidelity::Flow]).unwrap();
        let bw = r[0].records[0].bandwidth_gbps.unwrap();
        assert!(bw > 20.0, "{stem}: {bw} GB/s");
    }
}

/// A fenced flag ping-pong (the allreduce barriers' release and acquire
/// fences) costs four fences more per round trip than a plain one: how the
/// fenced probe pins `gpu.fence_ns`.
#[test]
fn fenced_ping_pong_costs_four_fences_more() {
    let text = |fence: bool| {
        format!(
            "name = \"pp\"\ntopology = \"pro6000-4x-1socket\"\n[workload]\nkind = \"transfer\"\n[[workload.stream]]\nfrom = \"gpu0\"\nto = \"gpu1\"\nop = \"ping-pong\"\niterations = 20\nfence = {fence}\n"
        )
    };
    let p = ModelParams::default();
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        let rt = |fence| {
            let sc = parse_scenario("inline", &text(fence), None, None).unwrap();
            simulate(&sc, &p, &[fid]).unwrap()[0].records[0]
                .stats
                .median_ns
        };
        let extra = rt(true) - rt(false);
        assert!(
            (extra - 4.0 * p.gpu.fence_ns.get()).abs() < 1.0,
            "{fid}: {extra} ns"
        );
    }
}

/// A read that fits in its load window is one round trip at both
/// fidelities: its requests all go out at once. At flow fidelity the
/// window's Little's-law rate binds from the second window on only (it
/// bound the first too, and the round trip was charged twice: a 1-block
/// read of one window took two round trips). One block of 512 threads
/// keeps 8 KiB in flight with one load per thread: 1 to 8 KiB cost about
/// the same, and each further window one round trip.
#[test]
fn a_read_within_its_window_is_one_round_trip_at_both_fidelities() {
    let text = |kib: u32| {
        format!(
            "name = \"rd\"\ntopology = \"h200-2x\"\n[workload]\nkind = \"transfer\"\n[[workload.stream]]\nfrom = \"gpu0\"\nto = \"mem0\"\nop = \"load\"\nbytes = \"{kib} KiB\"\nblocks = 1\nthreads = 512\n"
        )
    };
    let mut p = ModelParams::default();
    p.gpu.loads_in_flight_per_thread = 1;
    let time = |kib: u32, fid: Fidelity| {
        let sc = parse_scenario("inline", &text(kib), None, None).unwrap();
        simulate(&sc, &p, &[fid]).unwrap()[0].records[0]
            .stats
            .median_ns
    };
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        let (one, window, two) = (time(1, fid), time(8, fid), time(16, fid));
        // the window's bytes over the link (8 KiB at ~55 GB/s: ~150 ns)
        assert!(
            window - one < 300.0,
            "{fid}: 1 KiB {one} ns, 8 KiB {window} ns"
        );
        // the second window: one more round trip (more than the link time)
        assert!(
            two - window > 0.5 * one && two - window < 1.2 * one,
            "{fid}: 8 KiB {window} ns, 16 KiB {two} ns"
        );
    }
    let (t, f) = (time(8, Fidelity::Tlp), time(8, Fidelity::Flow));
    assert!(within(f, t, 0.15), "8 KiB: tlp {t} ns, flow {f} ns");
}

/// A GPU-GPU ping-pong with both flags in host memory (`host_flags`): each
/// GPU stores its flag over PCIe and polls its own across its link, so a
/// round trip costs at least two stores' visibility and posted writes and
/// grows with host memory's latency (device flags do not: they cross the
/// NVLink); `host_flags` belongs to ping-pongs between GPUs only.
#[test]
fn host_flag_ping_pong_polls_host_memory_over_pcie() {
    let text = |host: bool| {
        format!(
            "name = \"pp\"\ntopology = \"h200-2x\"\n[workload]\nkind = \"transfer\"\n[[workload.stream]]\nfrom = \"gpu0\"\nto = \"gpu1\"\nop = \"ping-pong\"\niterations = 20\nhost_flags = {host}\n"
        )
    };
    let p = ModelParams::default();
    let mut slow = p.clone();
    slow.host.memory_latency_ns = Nanos::new(slow.host.memory_latency_ns.get() + 1000.0);
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        let rt = |host, p: &ModelParams| {
            let sc = parse_scenario("inline", &text(host), None, None).unwrap();
            simulate(&sc, p, &[fid]).unwrap()[0].records[0]
                .stats
                .median_ns
        };
        let (dev, host) = (rt(false, &p), rt(true, &p));
        // each way at least: the store's visibility and a posted write
        // into host memory (a poll already out may see it as it lands)
        let floor = 2.0
            * (p.gpu.store_visibility_ns.get()
                + p.pcie.link_latency_ns.get()
                + p.root_complex.latency_ns.get());
        assert!(
            host > floor,
            "{fid}: host flags {host} ns, floor {floor} ns"
        );
        // the polls read host memory; device flags never touch it
        assert!(
            rt(true, &slow) > host + 1000.0,
            "{fid}: host flags {host} ns, {} ns with memory 1 us slower",
            rt(true, &slow)
        );
        assert_eq!(rt(false, &slow), dev, "{fid}: device flags");
    }
    let bad = text(true).replace("ping-pong", "load");
    let e = parse_scenario("inline", &bad, None, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("host_flags") && e.contains("ping-pong"), "{e}");
}
