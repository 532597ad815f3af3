//! Transfers as people measure them, on the model: patterns and their
//! aggregate records, copy-engine reads, start offsets and repeats, and the
//! per-algorithm launch mode of collective scenarios.

use contend_sim::{ModelParams, Run, RunSpec, simulate, simulate_one};
use contend_workload::{
    Algorithm, Fidelity, LaunchMode, Measured, Placement, Resource, ResultRecord, Scenario,
    TransferOp, load_scenario, parse_scenario,
};
use std::path::PathBuf;

fn shipped(name: &str) -> Scenario {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    load_scenario(&p, None).unwrap_or_else(|e| panic!("{e}"))
}

fn transfer(body: &str) -> Scenario {
    let text = format!(
        "name = \"t\"\ntopology = \"pro6000-8x-2switch\"\n[workload]\nkind = \"transfer\"\n{body}"
    );
    parse_scenario("t.toml", &text, None, None).unwrap_or_else(|e| panic!("{e}"))
}

fn run(sc: &Scenario, fid: Fidelity) -> Run {
    simulate(sc, &ModelParams::default(), &[fid])
        .unwrap()
        .remove(0)
}

fn utilisation(r: &Run, from: &str, to: &str) -> f64 {
    let want: Resource = format!("{from}->{to}").parse().unwrap();
    r.utilisation
        .iter()
        .find(|(l, _)| *l == want)
        .map_or(0.0, |(_, u)| *u)
}

fn aggregates(r: &Run) -> Vec<&ResultRecord> {
    r.records
        .iter()
        .filter(|x| x.algorithm == Measured::Aggregate)
        .collect()
}

/// The shipped 56-stream all-to-all: one record per stream, then one
/// aggregate whose sum is the sum of the streams, at both fidelities.
#[test]
fn all_to_all_aggregate_sums_its_56_streams() {
    let sc = shipped("transfer-all-to-all-2switch.toml");
    assert_eq!(sc.streams().len(), 56);
    let mut spans = Vec::new();
    for fid in [Fidelity::Flow, Fidelity::Tlp] {
        let r = run(&sc, fid);
        assert_eq!(r.records.len(), 57, "{fid}: 56 streams and one aggregate");
        let streams = &r.records[..56];
        assert!(streams.iter().all(|x| {
            x.algorithm == Measured::Transfer(TransferOp::Copy)
                && x.extra.stream.pattern.as_deref() == Some("all-to-all")
        }));
        let a = aggregates(&r);
        assert_eq!(a.len(), 1, "one pattern: no separate whole-run aggregate");
        let (a, f) = (a[0], &a[0].extra.aggregate);
        let bw: Vec<f64> = streams.iter().map(|x| x.bandwidth_gbps.unwrap()).collect();
        let sum: f64 = bw.iter().sum();
        assert!(
            (f.aggregate_gbps.unwrap() - sum).abs() < 1e-3,
            "{fid}: {f:?} vs {sum}"
        );
        let mut sorted = bw.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(f.min_gbps, Some(sorted[0]));
        assert_eq!(f.median_gbps, Some(sorted[27]), "nearest rank of 56");
        assert_eq!(f.max_gbps, Some(sorted[55]));
        assert_eq!(f.streams, Some(56));
        assert_eq!(a.extra.stream.pattern.as_deref(), Some("all-to-all"));
        assert_eq!(a.size_bytes, 56 * (4 << 20));
        assert_eq!(a.per_op_ns.len(), 56);
        // the span is the slowest stream's time (all start at once), and
        // bytes over the span is at most the sum of the streams
        let slowest = streams.iter().map(|x| x.total_ns).fold(0.0, f64::max);
        assert!((a.total_ns - slowest).abs() < 1e-3, "{fid}");
        assert!(a.bandwidth_gbps.unwrap() <= sum + 1e-3);
        // the 16 cross-switch streams each way share a switch uplink: at
        // flow fidelity they are slower than the streams that stay below
        // their switch; at TLP fidelity a GPU's posted writes leave in
        // order, so the cross-switch writes queued in its egress hold the
        // same-switch ones back and every stream ends with the uplink
        match fid {
            Fidelity::Flow => assert!(sorted[0] < 0.9 * sorted[55], "{fid}: {sorted:?}"),
            _ => assert!(sorted[55] < 1.05 * sorted[0], "{fid}: {sorted:?}"),
        }
        spans.push(a.total_ns);
        // the JSON keys of the section
        let v = serde_json::to_value(&a.extra).unwrap();
        for k in [
            "aggregate_gbps",
            "min_gbps",
            "median_gbps",
            "max_gbps",
            "streams",
            "pattern",
        ] {
            assert!(v.get(k).is_some(), "{k} in {v}");
        }
        assert_eq!(serde_json::to_value(a).unwrap()["algorithm"], "aggregate");
    }
    // either way the uplink carries the same 64 MiB: the spans agree
    assert!(
        (spans[0] - spans[1]).abs() < 0.03 * spans[0],
        "flow {} ns vs tlp {} ns",
        spans[0],
        spans[1]
    );
}

/// Several patterns (the shipped stagger +1..+7, one after another): an
/// aggregate per pattern, then one over every stream of the run. Each
/// distance runs alone in its millisecond: +k and +(8-k) look alike.
#[test]
fn staggered_patterns_get_an_aggregate_each_and_one_for_the_run() {
    let sc = shipped("transfer-stagger-2switch.toml");
    let r = run(&sc, Fidelity::Flow);
    let a = aggregates(&r);
    let labels: Vec<&str> = a
        .iter()
        .map(|x| x.extra.stream.pattern.as_deref().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "stagger +1",
            "stagger +2",
            "stagger +3",
            "stagger +4",
            "stagger +5",
            "stagger +6",
            "stagger +7",
            "all"
        ]
    );
    let sum = |x: &ResultRecord| x.extra.aggregate.aggregate_gbps.unwrap();
    for k in 0..3 {
        assert!((sum(a[k]) - sum(a[6 - k])).abs() < 1e-3 * sum(a[k]));
    }
    // distance 4 sends all eight streams through the root complex
    assert!(a[3].extra.aggregate.max_gbps < a[0].extra.aggregate.max_gbps);
    // every distance is done before the next one starts
    for (k, x) in a[..7].iter().enumerate() {
        assert!(x.total_ns < 1e6, "stagger +{}: {} ns", k + 1, x.total_ns);
    }
    let all = a[7];
    assert_eq!(all.extra.aggregate.streams, Some(56));
    let total: f64 = a[..7].iter().map(|x| sum(x)).sum();
    assert!((sum(all) - total).abs() < 1e-2);
    // from the first start to the last finish: past 6 ms
    assert!(all.total_ns > 6e6 && all.total_ns < 7e6, "{}", all.total_ns);
}

/// A pattern's aggregate, and one over the run when the run is more than
/// that pattern (here an explicit stream too); a ping-pong has no
/// bandwidth and is summed by none.
#[test]
fn patterns_and_streams_get_aggregates_of_their_own() {
    let sc = transfer(
        "[[workload.stream]]\nfrom = \"gpu0\"\nto = \"mem0\"\nop = \"copy-read\"\nbytes = \"2 MiB\"\n[[workload.stream]]\nfrom = \"gpu2\"\nto = \"gpu3\"\nop = \"ping-pong\"\niterations = 3\n[[workload.pattern]]\nkind = \"bidirectional-pairs\"\npairs = [[\"gpu4\", \"gpu5\"], [\"gpu6\", \"gpu7\"]]\nop = \"store\"\nbytes = \"2 MiB\"\nstart_us = 3\n",
    );
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        let r = run(&sc, fid);
        assert_eq!(r.records.len(), 2 + 4 + 2, "{fid}");
        let a = aggregates(&r);
        let labels: Vec<_> = a
            .iter()
            .map(|x| x.extra.stream.pattern.as_deref().unwrap())
            .collect();
        assert_eq!(labels, ["bidirectional-pairs", "all"], "{fid}");
        let sum = |rs: &[ResultRecord]| rs.iter().filter_map(|x| x.bandwidth_gbps).sum::<f64>();
        let pat = &a[0].extra.aggregate;
        assert_eq!(pat.streams, Some(4));
        assert!((pat.aggregate_gbps.unwrap() - sum(&r.records[2..6])).abs() < 1e-3);
        let all = &a[1].extra.aggregate;
        assert_eq!(all.streams, Some(5), "{fid}: the ping-pong is left out");
        assert!((all.aggregate_gbps.unwrap() - sum(&r.records[..6])).abs() < 1e-3);
        // the pattern's streams say where they came from and when they began
        assert!(r.records[2..6].iter().all(|x| {
            x.extra.stream.pattern.as_deref() == Some("bidirectional-pairs")
                && x.extra.stream.start_us == Some(3.0)
        }));
        assert_eq!(r.records[0].extra.stream.pattern, None);
        // the run's span starts with the first stream, at 0
        let last = r.records[..6]
            .iter()
            .map(|x| x.extra.stream.start_us.unwrap_or(0.0) * 1e3 + x.total_ns)
            .fold(0.0, f64::max);
        assert!((a[1].total_ns - last).abs() < 1e-3, "{fid}");
    }
}

/// A copy-engine read pulls: its read requests go out on `from`'s link
/// and the data comes back over the reverse direction, the opposite of a
/// copy (posted writes out of `from`).
#[test]
fn copy_read_moves_bytes_the_other_way() {
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        let one = |op: &str| {
            run(
                &transfer(&format!(
                    "[[workload.stream]]\nfrom = \"gpu0\"\nto = \"gpu1\"\nop = \"{op}\"\nbytes = \"8 MiB\"\n"
                )),
                fid,
            )
        };
        let (read, write) = (one("copy-read"), one("copy"));
        let out = |r: &Run| utilisation(r, "gpu0", "sw0");
        let back = |r: &Run| utilisation(r, "sw0", "gpu0");
        let data_in = |r: &Run| utilisation(r, "gpu1", "sw0");
        // the read's completions fill gpu1 -> sw0 -> gpu0; its requests
        // are small on gpu0 -> sw0
        assert!(
            back(&read) > 0.8 && data_in(&read) > 0.8,
            "{fid}: {:?}",
            read.utilisation
        );
        assert!(out(&read) < 0.2, "{fid}: {}", out(&read));
        // the copy is the mirror image
        assert!(
            out(&write) > 0.8 && back(&write) < 0.2,
            "{fid}: {:?}",
            write.utilisation
        );
        assert_eq!(
            read.records[0].algorithm,
            Measured::Transfer(TransferOp::CopyRead)
        );
        let (rb, wb) = (
            read.records[0].bandwidth_gbps.unwrap(),
            write.records[0].bandwidth_gbps.unwrap(),
        );
        assert!(rb > 30.0 && wb > 30.0, "{fid}: read {rb}, write {wb} GB/s");
    }
    // host to device as the GPU sees it: completions come down to the GPU
    let r = run(
        &transfer(
            "[[workload.stream]]\nfrom = \"gpu0\"\nto = \"mem0\"\nop = \"copy-read\"\nbytes = \"8 MiB\"\n",
        ),
        Fidelity::Flow,
    );
    assert!(utilisation(&r, "sw0", "gpu0") > 0.3, "{:?}", r.utilisation);
    assert!(utilisation(&r, "gpu0", "sw0") < 0.2);
}

/// A stream that starts after another is done has the link to itself;
/// started together they share it. Repeats are per-op times back to back.
#[test]
fn start_offsets_and_repeats_shape_the_run() {
    let two = |start_us: f64| {
        transfer(&format!(
            "[[workload.stream]]\nfrom = \"gpu0\"\nto = \"gpu2\"\nop = \"copy\"\nbytes = \"4 MiB\"\n[[workload.stream]]\nfrom = \"gpu1\"\nto = \"gpu2\"\nop = \"copy\"\nbytes = \"4 MiB\"\nstart_us = {start_us}\n"
        ))
    };
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        let shared = run(&two(0.0), fid);
        let apart = run(&two(500.0), fid);
        let bw = |r: &Run, i: usize| r.records[i].bandwidth_gbps.unwrap();
        assert!(bw(&shared, 1) < 0.6 * bw(&apart, 1), "{fid}");
        assert!(
            (bw(&apart, 0) - bw(&apart, 1)).abs() < 0.02 * bw(&apart, 0),
            "{fid}"
        );
        assert_eq!(apart.records[1].extra.stream.start_us, Some(500.0));
        assert_eq!(shared.records[1].extra.stream.start_us, None);
        // no pattern: no aggregate record
        assert_eq!(apart.records.len(), 2);
    }
    let sc = transfer(
        "[[workload.stream]]\nfrom = \"gpu0\"\nto = \"gpu1\"\nop = \"store\"\nbytes = \"1 MiB\"\nrepeat = 3\n[[workload.stream]]\nfrom = \"gpu2\"\nto = \"gpu3\"\nop = \"ping-pong\"\niterations = 5\nrepeat = 4\n",
    );
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        let r = run(&sc, fid);
        let (st, pp) = (&r.records[0], &r.records[1]);
        assert_eq!(st.per_op_ns.len(), 3, "{fid}");
        assert!(
            (st.total_ns - st.per_op_ns.iter().sum::<f64>()).abs() < 1.0,
            "{fid}"
        );
        let once = st.per_op_ns[1];
        assert!(
            (st.bandwidth_gbps.unwrap() - (1 << 20) as f64 / once).abs()
                < 0.05 * st.bandwidth_gbps.unwrap(),
            "{fid}"
        );
        assert_eq!(pp.per_op_ns.len(), 4, "{fid}");
        let rt = pp.per_op_ns[0];
        assert!(
            pp.per_op_ns.iter().all(|x| (x - rt).abs() < 0.05 * rt),
            "{fid}: {:?}",
            pp.per_op_ns
        );
    }
}

/// `[nccl] caller = "torch"`: every eager NCCL call waits for torch's host
/// path before its launch (`nccl.torch_call_ns`), the other algorithms
/// keep theirs, and inside a graph no call is made.
#[test]
fn nccl_called_from_torch_pays_its_host_path_per_eager_call() {
    let text = |caller: &str, launch: &str| {
        format!(
            "name = \"c\"\ntopology = \"pro6000-8x-2switch\"\nalgorithms = [\"nccl\", \"one-shot-push\"]\nlaunch = \"{launch}\"\n[nccl]\nNCCL_P2P_LEVEL = \"SYS\"\n{caller}\n[workload]\nkind = \"allreduce\"\nsizes = [12288]\nrepeats = 4\n"
        )
    };
    let p = ModelParams::default();
    let time = |caller: &str, launch: &str, a: Algorithm| {
        let sc = parse_scenario("c.toml", &text(caller, launch), None, None).unwrap();
        let spec = RunSpec {
            algorithm: Some(a),
            placement: Placement::Peer,
            fidelity: Fidelity::Flow,
            size: Some(contend_topo::Bytes(12288)),
        };
        simulate_one(&sc, &p, spec)
            .unwrap()
            .record()
            .stats
            .median_ns
    };
    let torch = "caller = \"torch\"";
    let extra = time(torch, "eager", Algorithm::Nccl) - time("", "eager", Algorithm::Nccl);
    assert!(
        (extra - p.nccl.torch_call_ns.get()).abs() < 0.05 * p.nccl.torch_call_ns.get(),
        "torch adds {extra} ns per call, the constant is {} ns",
        p.nccl.torch_call_ns.get()
    );
    assert_eq!(
        time(torch, "eager", Algorithm::OneShotPush),
        time("", "eager", Algorithm::OneShotPush)
    );
    assert_eq!(
        time(torch, "graph", Algorithm::Nccl),
        time("", "graph", Algorithm::Nccl)
    );
}

/// `[algorithm.NAME] launch = "graph"` makes that algorithm's launches
/// graph launches (cheaper than eager) and says so in its record; the
/// others keep the scenario's.
#[test]
fn per_algorithm_launch_mode_takes_effect() {
    let text = |extra: &str| {
        format!(
            "name = \"l\"\ntopology = \"pro6000-8x-2switch\"\nalgorithms = [\"one-shot-push\", \"ring-ll\"]\n{extra}\n[workload]\nkind = \"allreduce\"\nsizes = [43008]\nrepeats = 4\n"
        )
    };
    let p = ModelParams::default();
    let time = |sc: &Scenario, a: Algorithm| {
        let spec = RunSpec {
            algorithm: Some(a),
            placement: Placement::Peer,
            fidelity: Fidelity::Flow,
            size: Some(contend_topo::Bytes(43008)),
        };
        let r = simulate_one(sc, &p, spec).unwrap();
        (r.record().stats.median_ns, r.record().launch)
    };
    let eager = parse_scenario("l.toml", &text(""), None, None).unwrap();
    let mixed = parse_scenario(
        "l.toml",
        &text("[algorithm.one-shot-push]\nlaunch = \"graph\"\n"),
        None,
        None,
    )
    .unwrap();
    let (e, le) = time(&eager, Algorithm::OneShotPush);
    let (g, lg) = time(&mixed, Algorithm::OneShotPush);
    assert_eq!((le, lg), (LaunchMode::Eager, LaunchMode::Graph));
    let saved = p.gpu.launch_eager_ns.get() - p.gpu.launch_graph_ns.get();
    assert!(
        (e - g - saved).abs() < 0.05 * saved,
        "eager {e} ns, graph {g} ns"
    );
    // ring-ll keeps the scenario's eager launches
    assert_eq!(
        time(&eager, Algorithm::RingLl),
        time(&mixed, Algorithm::RingLl)
    );
    // a kernel shape of its own: one block loads far slower than 36
    let one_block = parse_scenario(
        "l.toml",
        &text("algorithms = [\"one-shot-pull\"]\n[algorithm.one-shot-pull]\nblocks = 1\n")
            .replacen("algorithms = [\"one-shot-push\", \"ring-ll\"]\n", "", 1),
        None,
        None,
    )
    .unwrap();
    let wide = parse_scenario(
        "l.toml",
        &text("algorithms = [\"one-shot-pull\"]\n").replacen(
            "algorithms = [\"one-shot-push\", \"ring-ll\"]\n",
            "",
            1,
        ),
        None,
        None,
    )
    .unwrap();
    let (narrow, _) = time(&one_block, Algorithm::OneShotPull);
    let (full, _) = time(&wide, Algorithm::OneShotPull);
    assert!(narrow > full, "1 block {narrow} ns, 36 blocks {full} ns");
}
