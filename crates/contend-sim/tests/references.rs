//! Every optimisation of the TLP fidelity against its reference, on every
//! algorithm of a short verify step (both placements, two topologies) and
//! on shipped transfer scenarios. The references spend more events for the same
//! physics but are not all exact: a paced store queued with a future ready
//! time holds its link's queue where the reference lets later-ready traffic go
//! first. Measured on these cases (`cargo test --release -p contend-sim
//! --test references`, with the asserts printing): inline stages match their reference
//! exactly (a packet passes a run of stages inline and joins the next
//! link's queue by an event when it is out of them, and a stage that only
//! delays holds no slot); batched release and paced stores within 1.03 %
//! run totals (0.21 % per op on average); coalesced credit wake-ups within
//! 0.7 % and 0.10 %. The flow fidelity's references are exact: memoised rates
//! against a full solve every recompute and the max-min problem kept
//! across flow changes against one built at every solve (both solving
//! max-min from round 0), a kept tick against a new tick at every
//! recompute (records equal to the bit); the resumed max-min solve is
//! within rounding of solving from round 0 (per-op times within 1e-6). Starting a
//! packet straight onto an empty channel is exact against queueing every
//! packet (records equal to the bit, events included).

use contend_sim::{
    FlowOptions, LimitHit, ModelParams, RunLimits, RunSpec, SimOptions, TlpOptions,
    simulate_one_with,
};
use contend_workload::{Algorithm, Fidelity, Placement, Scenario, load_scenario, parse_scenario};
use std::path::PathBuf;

fn verify(topo: &str) -> Scenario {
    let text = format!(
        "name = \"v\"\ntopology = \"{topo}\"\nseed = 3\nplacement = [\"peer\", \"host\"]\n[workload]\nkind = \"verify-step\"\nlayers = 2\ngap_us = 5.0\nskew = {{ distribution = \"normal\", sd_us = 1.0 }}\n"
    );
    parse_scenario("inline", &text, None, None).unwrap()
}

fn scenario(name: &str) -> Scenario {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    load_scenario(&p, None).unwrap()
}

/// (per-op times, events) of every TLP run of `sc` under `opts`.
fn times(sc: &Scenario, opts: &SimOptions, p: &ModelParams) -> Vec<(String, Vec<f64>, u64)> {
    contend_sim::runs_of(sc, &[Fidelity::Tlp])
        .into_iter()
        .map(|spec| {
            let run = simulate_one_with(sc, p, spec, opts).unwrap();
            let r = run.record();
            (
                format!("{} {:?}", r.algorithm, spec.placement),
                run.records
                    .iter()
                    .flat_map(|r| r.per_op_ns.clone())
                    .collect(),
                r.events.unwrap_or(0),
            )
        })
        .collect()
}

/// Checks two sets of runs agree: every run's total within `total_tol`
/// (relative), the mean per-op difference within `mean_tol`.
fn agree(
    name: &str,
    a: &[(String, Vec<f64>, u64)],
    b: &[(String, Vec<f64>, u64)],
    total_tol: f64,
    mean_tol: f64,
) {
    let (mut sum, mut n) = (0.0, 0usize);
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.0, y.0);
        let (ta, tb): (f64, f64) = (x.1.iter().sum(), y.1.iter().sum());
        let d = (ta - tb).abs() / ta.max(1.0);
        assert!(
            d <= total_tol,
            "{name}: {} total differs by {:.3} %",
            x.0,
            d * 100.0
        );
        for (s, t) in x.1.iter().zip(&y.1) {
            sum += (s - t).abs() / s.abs().max(1.0);
            n += 1;
        }
    }
    let mean = sum / n.max(1) as f64;
    assert!(
        mean <= mean_tol,
        "{name}: per-op times differ by {:.3} % on average",
        mean * 100.0
    );
}

/// The scenarios the TLP references run on: verify steps on two topologies (two
/// sockets, two switches), a shared link, loaded hops across sockets and
/// the ping-pong.
fn tlp_cases() -> [Scenario; 5] {
    [
        verify("pro6000-8x-2socket"),
        verify("pro6000-8x-2switch"),
        scenario("transfer-shared-link.toml"),
        scenario("transfer-load-hops-xgmi.toml"),
        scenario("transfer-pingpong.toml"),
    ]
}

fn against_reference(tlp: TlpOptions, tol: f64, mean_tol: f64) {
    let p = ModelParams::default();
    let fast = SimOptions::default();
    let plain = SimOptions {
        tlp,
        ..SimOptions::default()
    };
    for sc in tlp_cases() {
        let a = times(&sc, &fast, &p);
        let b = times(&sc, &plain, &p);
        assert!(
            b.iter().zip(&a).all(|(b, a)| b.2 >= a.2),
            "{tlp:?} on {}: the reference should spend at least as many events",
            sc.name()
        );
        agree(&format!("{tlp:?} on {}", sc.name()), &a, &b, tol, mean_tol);
    }
}

#[test]
fn inline_root_complex_stages_match_an_event_per_stage() {
    against_reference(
        TlpOptions {
            queued_stages: true,
            ..TlpOptions::default()
        },
        0.001,
        0.0005,
    );
}

#[test]
fn batched_store_buffer_release_matches_release_per_store() {
    against_reference(
        TlpOptions {
            release_per_store: true,
            ..TlpOptions::default()
        },
        0.015,
        0.003,
    );
}

#[test]
fn paced_stores_carrying_their_ready_time_match_an_event_per_store() {
    against_reference(
        TlpOptions {
            event_per_store: true,
            ..TlpOptions::default()
        },
        0.015,
        0.003,
    );
}

/// A packet that reaches an empty channel goes straight out when it can,
/// as its reference (every packet queued and started by the channel's pick)
/// would start it: records equal to the bit, events included.
#[test]
fn straight_out_on_an_empty_channel_matches_every_packet_queued() {
    let p = ModelParams::default();
    let plain = SimOptions {
        tlp: TlpOptions {
            queued_start: true,
            ..TlpOptions::default()
        },
        ..SimOptions::default()
    };
    for sc in tlp_cases() {
        for spec in contend_sim::runs_of(&sc, &[Fidelity::Tlp]) {
            let a = simulate_one_with(&sc, &p, spec, &SimOptions::default()).unwrap();
            let b = simulate_one_with(&sc, &p, spec, &plain).unwrap();
            let strip = |r: &contend_sim::Run| {
                let mut v = r.records.clone();
                for x in &mut v {
                    x.wall_ns = None;
                }
                serde_json::to_string(&v).unwrap()
            };
            assert_eq!(strip(&a), strip(&b), "{} {spec:?}", sc.name());
        }
    }
}

/// Coalesced credit wake-ups are `pcie.fc_coalesce` (UpdateFC DLLPs
/// coalesce); its reference wakes a blocked sender at every return.
#[test]
fn coalesced_credit_wakeups_match_a_wakeup_per_return() {
    let mut one = ModelParams::default();
    one.pcie.fc_coalesce = 1;
    let opts = SimOptions::default();
    for sc in [
        verify("pro6000-8x-2socket"),
        scenario("transfer-shared-link.toml"),
    ] {
        let a = times(&sc, &opts, &ModelParams::default());
        let b = times(&sc, &opts, &one);
        agree(
            &format!("fc_coalesce = 1 on {}", sc.name()),
            &a,
            &b,
            0.015,
            0.003,
        );
    }
}

/// The defaults, with read requests counted at collapsing ports (about the
/// ESC8000A-E13P's fitted cost), so the flow references also compare collapse
/// groups whose members use the rate at different weights (a read's
/// requests against a write's bytes); no other case has a collapsing port.
fn reads_collapse() -> ModelParams {
    let mut p = ModelParams::default();
    p.root_complex.collapse_request_bytes = 192.0;
    p
}

/// The memo references' cases: the flow references' with the rings, and
/// verify steps on two collapsing public topologies (idle flows meeting a
/// port's rule change rates there).
fn memo_cases() -> Vec<Scenario> {
    let mut cases = flow_cases(&["ring-ll", "ring-simple", "nccl"], &[]);
    for t in ["asus-esc8000a-e13p", "wrx90-pm50100-16gpu-collapse"] {
        cases.push(verify(&topo(&format!("public/{t}.toml"))));
    }
    cases
}

/// The cases a flow reference runs on: every algorithm of a verify step (both
/// placements, two topologies), an allreduce of `rings` large enough to
/// repeat its pattern of slices, and shipped transfer scenarios
/// (collapse, cross-socket streams, reads) plus `more`.
fn flow_cases(rings: &[&str], more: &[&str]) -> Vec<Scenario> {
    let algorithms: Vec<String> = rings.iter().map(|a| format!("\"{a}\"")).collect();
    let ring = parse_scenario(
        "inline",
        &format!(
            "name = \"r\"\ntopology = \"pro6000-8x-2socket\"\nalgorithms = [{}]\nplacement = [\"peer\", \"host\"]\n[workload]\nkind = \"allreduce\"\nsizes = [\"4 MiB\"]\nrepeats = 2\n",
            algorithms.join(", ")
        ),
        None,
        None,
    )
    .unwrap();
    let mut v = vec![
        verify("pro6000-8x-2socket"),
        verify("pro6000-8x-2switch"),
        ring,
    ];
    for f in [
        "transfer-shared-link.toml",
        "transfer-load-hops-xgmi.toml",
        "transfer-all-to-all-2switch.toml",
        "transfer-copy-read.toml",
    ]
    .iter()
    .chain(more)
    {
        v.push(scenario(f));
    }
    v
}

/// The flow fidelity's memo of solved flow sets, and its keeping the last
/// rates where only idle flows joined, against solving at every recompute
/// (both on the kept problem, solved from round 0): the rates are a pure
/// function of the flow set, so every
/// record matches to the bit (wall time aside), on every algorithm of a
/// verify step (both placements, two topologies), a ring-ll allreduce
/// large enough to repeat its pattern of slices, and shipped transfer
/// scenarios (collapse, cross-socket streams, reads).
#[test]
fn memoised_flow_rates_match_a_full_solve_every_time() {
    let p = reads_collapse();
    // each side solving from round 0: a resumed solve's rates hang on the
    // solves before it (to within rounding), so a memo hit and a solve of
    // the same flow set may differ in their last bits
    let memo = SimOptions {
        flow: FlowOptions {
            full_max_min: true,
            ..FlowOptions::default()
        },
        ..SimOptions::default()
    };
    let full = SimOptions {
        flow: FlowOptions {
            full_solve: true,
            full_max_min: true,
            ..FlowOptions::default()
        },
        ..SimOptions::default()
    };
    // posted-write collapse, where flows not yet started count among a
    // collapsing port's members (an idle flow meeting a rule changes rates)
    for sc in memo_cases() {
        for spec in contend_sim::runs_of(&sc, &[Fidelity::Flow]) {
            let mut a = simulate_one_with(&sc, &p, spec, &memo).unwrap().records;
            let mut b = simulate_one_with(&sc, &p, spec, &full).unwrap().records;
            for r in a.iter_mut().chain(b.iter_mut()) {
                r.wall_ns = None;
            }
            assert_eq!(a, b, "{} {spec:?}", sc.name());
        }
    }
}

/// The memo of solved flow sets keyed without the flows at a set's end
/// that have not started and meet no rule, against keying it by the
/// whole set: such flows add nothing to a solve (0 for them, the others'
/// rates to the bit), so every record matches to the bit (wall time
/// aside), on the memo reference's cases: each side solving from round 0
/// (a solve a pure function of the flow set), and each as shipped (the
/// resumed and component solves, whose rates hang on the solves before,
/// made at other recomputes where the trimmed key finds more).
#[test]
fn memo_keyed_without_idle_flows_at_the_end_matches_the_whole_set() {
    let p = reads_collapse();
    let opts = |memo_whole_set, full_max_min| SimOptions {
        flow: FlowOptions {
            memo_whole_set,
            full_max_min,
            ..FlowOptions::default()
        },
        ..SimOptions::default()
    };
    for sc in memo_cases() {
        for spec in contend_sim::runs_of(&sc, &[Fidelity::Flow]) {
            for full_max_min in [true, false] {
                let mut a = simulate_one_with(&sc, &p, spec, &opts(false, full_max_min))
                    .unwrap()
                    .records;
                let mut b = simulate_one_with(&sc, &p, spec, &opts(true, full_max_min))
                    .unwrap()
                    .records;
                for r in a.iter_mut().chain(b.iter_mut()) {
                    r.wall_ns = None;
                }
                assert_eq!(a, b, "{} {spec:?} full_max_min {full_max_min}", sc.name());
            }
        }
    }
}

/// The flow fidelity's max-min problem kept across flow starts and
/// finishes against building it from the flows at every solve: the kept
/// problem solves operation for operation as the built one does, so every
/// record matches to the bit (wall time aside), events included, on the
/// flow references' cases, with every recompute solved (no memo, each solve from
/// round 0) so that each is compared.
#[test]
fn kept_flow_problem_matches_one_built_every_solve() {
    let p = reads_collapse();
    let opts = |rebuild_problem| SimOptions {
        flow: FlowOptions {
            full_solve: true,
            rebuild_problem,
            // the built problem is solved from round 0
            full_max_min: true,
            ..FlowOptions::default()
        },
        ..SimOptions::default()
    };
    let (kept, built) = (opts(false), opts(true));
    // posted-write collapse on switch uplinks, per port as shipped and per
    // (source, target) pair
    let asus = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../topologies/public/asus-esc8000a-e13p.toml");
    let pair = std::env::temp_dir().join(format!(
        "contend-references-pair-{}.toml",
        std::process::id()
    ));
    std::fs::write(
        &pair,
        std::fs::read_to_string(&asus)
            .unwrap()
            .replace("per = \"port\"", "per = \"pair\""),
    )
    .unwrap();
    let mut cases = flow_cases(&["ring-ll", "ring-simple", "nccl"], &[]);
    cases.push(verify(asus.to_str().unwrap()));
    cases.push(verify(pair.to_str().unwrap()));
    for sc in cases {
        for spec in contend_sim::runs_of(&sc, &[Fidelity::Flow]) {
            let mut a = simulate_one_with(&sc, &p, spec, &kept).unwrap().records;
            let mut b = simulate_one_with(&sc, &p, spec, &built).unwrap().records;
            for r in a.iter_mut().chain(b.iter_mut()) {
                r.wall_ns = None;
            }
            assert_eq!(a, b, "{} {spec:?}", sc.name());
        }
    }
    std::fs::remove_file(&pair).unwrap();
}

/// A verify step of `algorithms` on `topo` (peer placement, `layers`).
fn verify_of(topo: &str, algorithms: &[&str], layers: u32) -> Scenario {
    let algorithms: Vec<String> = algorithms.iter().map(|a| format!("\"{a}\"")).collect();
    let text = format!(
        "name = \"v\"\ntopology = \"{topo}\"\nseed = 3\nalgorithms = [{}]\nplacement = [\"peer\"]\n[workload]\nkind = \"verify-step\"\nlayers = {layers}\ngap_us = 5.0\nskew = {{ distribution = \"normal\", sd_us = 1.0 }}\n",
        algorithms.join(", ")
    );
    parse_scenario("inline", &text, None, None).unwrap()
}

/// A topology shipped under `topologies/`, as a path.
fn topo(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../topologies")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// Every run of `cases` at flow fidelity with the default options and with
/// the options `reference`: every op's time within 1e-6 relative. Prints the
/// worst deviation seen, as `what`.
fn ops_within_the_reference(reference: FlowOptions, cases: Vec<Scenario>, what: &str) {
    let p = ModelParams::default();
    let fast = SimOptions::default();
    let reference = SimOptions {
        flow: reference,
        ..SimOptions::default()
    };
    let (mut worst, mut ops) = (0.0f64, 0usize);
    for sc in cases {
        for spec in contend_sim::runs_of(&sc, &[Fidelity::Flow]) {
            let a = simulate_one_with(&sc, &p, spec, &fast).unwrap().records;
            let b = simulate_one_with(&sc, &p, spec, &reference)
                .unwrap()
                .records;
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(
                    x.per_op_ns.len(),
                    y.per_op_ns.len(),
                    "{} {spec:?}",
                    sc.name()
                );
                for (s, t) in x.per_op_ns.iter().zip(&y.per_op_ns) {
                    let d = (s - t).abs() / t.abs().max(1e-30);
                    assert!(
                        d <= 1e-6,
                        "{} {spec:?}: an op takes {s} ns ({what}), {t} by the reference",
                        sc.name()
                    );
                    worst = worst.max(d);
                    ops += 1;
                }
            }
        }
    }
    assert!(ops > 0);
    eprintln!("{what}: worst per-op deviation {worst:e} over {ops} ops");
}

/// The resumed max-min solve (progressive filling restarted at the first
/// round a change can reach) against solving from round 0 every time: the
/// same saturations, so every op's time within 1e-6 relative, on the flow
/// references' cases, a collapsing topology, and the 32- and 64-GPU synthetic
/// ones (cross-socket streams, thousands of flows). Prints the worst
/// deviation seen.
#[test]
fn resumed_max_min_matches_a_solve_from_round_0() {
    let mut cases = flow_cases(&["ring-ll", "ring-simple", "nccl"], &[]);
    cases.push(verify(&topo("public/asus-esc8000a-e13p.toml")));
    cases.push(verify_of(
        &topo("synthetic-32x-4switch-2socket.toml"),
        &["one-shot-push", "two-shot-push", "ring-ll", "staged-push"],
        1,
    ));
    cases.push(verify_of(
        &topo("synthetic-64x-8switch-2socket.toml"),
        &["one-shot-push", "staged-push"],
        1,
    ));
    let full = FlowOptions {
        full_max_min: true,
        ..FlowOptions::default()
    };
    ops_within_the_reference(full, cases, "resumed max-min");
}

/// The component solve (only the flows a change reaches through the
/// resources they share filled again) against filling every flow at every
/// solve: the same saturations, so every op's time within 1e-6 relative,
/// on the flow references' cases, a collapsing topology, and rings on the 32-
/// and 64-GPU synthetic ones (behind switches, most flows a component of
/// their own). Prints the worst deviation seen.
#[test]
fn component_max_min_matches_filling_every_flow() {
    let mut cases = flow_cases(&["ring-ll", "ring-simple", "nccl", "ce-ring"], &[]);
    cases.push(verify(&topo("public/asus-esc8000a-e13p.toml")));
    cases.push(verify_of(
        &topo("synthetic-32x-4switch-2socket.toml"),
        &["nccl", "ce-ring", "hierarchical", "island-two-shot"],
        1,
    ));
    cases.push(verify_of(
        &topo("synthetic-64x-8switch-2socket.toml"),
        &["ring-ll", "ring-simple"],
        1,
    ));
    let whole = FlowOptions {
        whole_max_min: true,
        ..FlowOptions::default()
    };
    ops_within_the_reference(whole, cases, "component max-min");
}

/// Keeping the rates at a flow start where only flows that change nothing
/// joined since they were worked out, against working them out at every
/// start instant: the same rates (within rounding, which the resumed and
/// memoised solves a recompute makes allow), so every op's time within
/// 1e-6 relative, on the flow references' cases and rings on the 32-GPU
/// synthetic topology.
#[test]
fn quiet_starts_match_a_recompute_every_start() {
    let mut cases = flow_cases(&["ring-ll", "ring-simple", "nccl", "ce-ring"], &[]);
    cases.push(verify(&topo("public/asus-esc8000a-e13p.toml")));
    cases.push(verify_of(
        &topo("synthetic-32x-4switch-2socket.toml"),
        &["ring-simple", "one-shot-push", "staged-push"],
        1,
    ));
    let every = FlowOptions {
        recompute_every_start: true,
        ..FlowOptions::default()
    };
    ops_within_the_reference(every, cases, "quiet starts");
}

/// Every flow case (and `more`) run with the options `fast` and with the
/// options `reference`: every record matches to the bit (wall time and event
/// counts aside), `fast` never spends more events than the reference, and at
/// least one run spends fewer (else the test tests nothing; `saved` says
/// what such a run saves).
fn fewer_events_than_the_reference(
    fast: FlowOptions,
    reference: FlowOptions,
    saved: &str,
    more: Vec<Scenario>,
) {
    let p = ModelParams::default();
    let fast = SimOptions {
        flow: fast,
        ..SimOptions::default()
    };
    let reference = SimOptions {
        flow: reference,
        ..SimOptions::default()
    };
    let mut fewer = 0;
    for sc in flow_cases(
        &["ring-ll", "ring-simple", "nccl", "ce-ring"],
        &["transfer-pingpong.toml"],
    )
    .into_iter()
    .chain(more)
    {
        for spec in contend_sim::runs_of(&sc, &[Fidelity::Flow]) {
            let mut a = simulate_one_with(&sc, &p, spec, &fast).unwrap().records;
            let mut b = simulate_one_with(&sc, &p, spec, &reference)
                .unwrap()
                .records;
            let (ea, eb) = (a[0].events.unwrap_or(0), b[0].events.unwrap_or(0));
            assert!(
                ea <= eb,
                "{} {spec:?}: {ea} events, the reference {eb}",
                sc.name()
            );
            fewer += usize::from(ea < eb);
            for r in a.iter_mut().chain(b.iter_mut()) {
                r.wall_ns = None;
                r.events = None;
            }
            assert_eq!(a, b, "{} {spec:?}", sc.name());
        }
    }
    assert!(fewer > 0, "no run {saved}: the test tests nothing");
}

/// The flow fidelity keeping its pending tick when a recompute's next
/// tick falls at the same time (and nothing was pushed for that time
/// since) against pushing a new tick at every recompute: the kept tick
/// pops where the new one would (stale ticks handed to the engine on both
/// sides, each an event: dropping them would hide the saving).
#[test]
fn kept_flow_ticks_match_a_new_tick_every_recompute() {
    let stale_each = FlowOptions {
        stale_tick_events: true,
        ..FlowOptions::default()
    };
    fewer_events_than_the_reference(
        stale_each,
        FlowOptions {
            tick_every_recompute: true,
            ..stale_each
        },
        "kept a tick",
        vec![],
    );
}

/// Stale ticks dropped by the flow agenda as they pop (where an event
/// follows) against every stale tick handed to the engine as an event
/// that does nothing: every record matches to the bit, on a verify step of
/// 32 GPUs too.
#[test]
fn dropped_stale_ticks_match_a_stale_tick_event_each() {
    let wide = verify_of(
        &topo("synthetic-32x-4switch-2socket.toml"),
        &["one-shot-push", "nccl"],
        1,
    );
    fewer_events_than_the_reference(
        FlowOptions::default(),
        FlowOptions {
            stale_tick_events: true,
            ..FlowOptions::default()
        },
        "dropped a stale tick",
        vec![wide],
    );
}

/// Drained flows' completions due at their tick's own time, where nothing
/// was pushed for that time since the tick was, told to the engine as the
/// tick's call returns, against an event pushed for each: each is handled
/// where its event would have popped, so every record matches to the bit,
/// on a verify step of 32 GPUs too.
#[test]
fn told_completions_match_a_completion_event_each() {
    let wide = verify_of(
        &topo("synthetic-32x-4switch-2socket.toml"),
        &["one-shot-push", "ring-simple", "nccl"],
        1,
    );
    fewer_events_than_the_reference(
        FlowOptions::default(),
        FlowOptions {
            xfer_done_events: true,
            ..FlowOptions::default()
        },
        "told a completion",
        vec![wide],
    );
}

/// Flags landing at one time whose pushes follow one another sharing one
/// event (a barrier's, per latency of its paths) against an event per
/// flag: each flag of a batch lands where its own event would have
/// popped, so every record matches to the bit, on every algorithm of a
/// verify step (host placement: the flags meet chains of remote polls),
/// the rings, the transfer scenarios, and barriers of 32 GPUs (31 flags
/// from each rank, over paths of several latencies).
#[test]
fn batched_flags_match_an_event_per_flag() {
    let each = FlowOptions {
        flag_event_each: true,
        ..FlowOptions::default()
    };
    let wide = verify_of(
        &topo("synthetic-32x-4switch-2socket.toml"),
        &["staged-push", "one-shot-pull", "hierarchical", "nccl"],
        1,
    );
    fewer_events_than_the_reference(FlowOptions::default(), each, "batched flags", vec![wide]);
}

/// Remote polls kept as chains, only the poll that sees the flags (or one
/// whose place among the events matters) pushed, against a poll event
/// every round trip: the chain's poll pops where the repeated polls' would,
/// on every algorithm of a verify step (NCCL's flags are in host memory;
/// host placement), rings of both protocols and the host-flag ping-pong
/// (each flag an event of its own on both sides: which flags share an
/// event hangs on the polls pending, so the two savings are counted
/// apart). A run stopped by its time limit stops the same way.
#[test]
fn poll_chains_match_a_poll_every_round_trip() {
    let flag_each = FlowOptions {
        flag_event_each: true,
        ..FlowOptions::default()
    };
    fewer_events_than_the_reference(
        flag_each,
        FlowOptions {
            poll_every_round_trip: true,
            ..flag_each
        },
        "saved a poll",
        vec![],
    );
    let every_round_trip = FlowOptions {
        poll_every_round_trip: true,
        ..FlowOptions::default()
    };
    let p = ModelParams::default();
    let chain = SimOptions::default();
    let every = SimOptions {
        flow: every_round_trip,
        ..SimOptions::default()
    };
    // stopped mid-run by the time limit, while ranks poll
    let sc = verify("pro6000-8x-2socket");
    let spec = RunSpec {
        algorithm: Some(Algorithm::Nccl),
        placement: Placement::Peer,
        fidelity: Fidelity::Flow,
        size: None,
    };
    for us in [2, 7, 20] {
        let limits = RunLimits {
            max_time: contend_topo::Picos::from_us(us),
            ..RunLimits::default()
        };
        let err = |o: &SimOptions| {
            simulate_one_with(&sc, &p, spec, &SimOptions { limits, ..*o })
                .unwrap_err()
                .to_string()
        };
        let e = err(&chain);
        assert!(e.contains("RunLimits::max_time"), "{e}");
        assert_eq!(e, err(&every));
    }
}

/// A run that reaches a limit ends with an error naming it.
#[test]
fn run_limits_end_a_run_with_an_error_naming_them() {
    let sc = verify("pro6000-4x-1socket");
    let spec = RunSpec {
        algorithm: Some(Algorithm::OneShotPull),
        placement: Placement::Peer,
        fidelity: Fidelity::Tlp,
        size: None,
    };
    let p = ModelParams::default();
    let limited = |limits: RunLimits| {
        simulate_one_with(
            &sc,
            &p,
            spec,
            &SimOptions {
                limits,
                ..SimOptions::default()
            },
        )
        .unwrap_err()
        .to_string()
    };
    let e = limited(RunLimits {
        max_events: 1000,
        ..RunLimits::default()
    });
    assert!(e.contains("RunLimits::max_events"), "{e}");
    let e = limited(RunLimits {
        max_time: contend_topo::Picos::from_us(3),
        ..RunLimits::default()
    });
    assert!(e.contains("RunLimits::max_time"), "{e}");
    let e = limited(RunLimits {
        max_events_per_instant: 2,
        ..RunLimits::default()
    });
    assert!(e.contains("RunLimits::max_events_per_instant"), "{e}");
    let _ = LimitHit::Time {
        limit: contend_topo::Picos::ZERO,
    };
}
