//! The `nccl` algorithm: the `[nccl]` table, the plan a scenario keeps, and
//! the lowering of NCCL's decisions into traffic with each protocol's
//! costs (transport per connection, channels, LL/Simple framing, credits,
//! the per-step latency, the tree's halves).

use contend_nccl::{NcclVersion, Protocol};
use contend_topo::{Bytes, NodeIdx, Picos};
use contend_workload::{
    Algorithm, Collective, LowerConfig, MemLoc, NcclCaller, Notify, Op, Placement, Scenario,
    ScenarioError, default_scenario, lower, parse_scenario,
};

/// The default scenario (8× PRO 6000, two sockets) running `nccl` under
/// these variables.
fn default_with(vars: &[(&str, &str)]) -> Scenario {
    let sc = default_scenario(None).unwrap();
    let mut setup = sc.nccl().clone();
    for (k, v) in vars {
        setup.env.set_modelled(k, v).unwrap();
    }
    sc.with_nccl(setup).unwrap()
}

/// The lowering with a software cost of `overhead_ns` per NCCL step.
fn lowered(sc: &Scenario, size: u64, overhead_ns: u64) -> Collective {
    let cfg = LowerConfig {
        nccl: sc.nccl_plan(),
        nccl_step_overhead: Picos::from_ns(overhead_ns),
        ..LowerConfig::default()
    };
    lower(
        Algorithm::Nccl,
        sc.topology(),
        sc.ranks(),
        Placement::Peer,
        Bytes(size),
        &cfg,
    )
    .unwrap()
}

/// Bytes by where they go.
type ByPlace = Vec<(MemLoc, u64)>;

/// Bytes a program posts and fetches, by where they go.
fn traffic(c: &Collective, i: usize) -> (ByPlace, ByPlace) {
    let (mut posts, mut fetches) = (vec![], vec![]);
    let add =
        |v: &mut Vec<(MemLoc, u64)>, m: MemLoc, b: u64| match v.iter_mut().find(|(x, _)| *x == m) {
            Some((_, n)) => *n += b,
            None => v.push((m, b)),
        };
    for op in &c.programs[i].ops {
        match op {
            Op::Post { parts, .. } => parts
                .iter()
                .for_each(|(a, _)| add(&mut posts, a.mem, a.bytes.0)),
            Op::Fetch { parts, .. } => parts
                .iter()
                .for_each(|a| add(&mut fetches, a.mem, a.bytes.0)),
            Op::Stream { fetch, post, .. } => {
                post.iter()
                    .for_each(|(a, _)| add(&mut posts, a.mem, a.bytes.0));
                fetch
                    .iter()
                    .for_each(|a| add(&mut fetches, a.mem, a.bytes.0));
            }
            _ => {}
        }
    }
    (posts, fetches)
}

fn host_of(sc: &Scenario, r: usize) -> MemLoc {
    MemLoc::Host(sc.topology().nearest_host_memory(sc.ranks()[r]).unwrap())
}

#[test]
fn the_default_verify_step_stages_through_host_memory_on_two_channels() {
    let sc = default_scenario(None).unwrap();
    assert!(sc.algorithms().contains(&Algorithm::Nccl));
    let plan = sc.nccl_plan().expect("the default scenario runs nccl");
    assert_eq!(plan.version, NcclVersion::V2_28);
    let s = 43_008;
    let c = lowered(&sc, s, 700);
    // NCCL's choice at 43,008 B here: ring Simple over both channels
    let sched = plan.schedule(Bytes(s), Bytes(2)).unwrap();
    assert_eq!(sched.choice.protocol, Protocol::Simple);
    assert_eq!(sched.parts.len(), 2);
    assert_eq!(c.programs.len(), 8 * 2, "a program per rank and channel");
    // one block of NCCL's threads each (256 + a warp for ring Simple)
    assert!(
        c.shape
            .iter()
            .all(|k| k.is_some_and(|k| k.blocks == 1 && k.threads == 288))
    );
    let ring = &plan.channels.rings[0];
    let mut total = 0;
    for i in 0..8 {
        let r = c.rank_of[i];
        let next = ring[(ring.iter().position(|&x| x == r).unwrap() + 1) % 8];
        let (posts, fetches) = traffic(&c, i);
        // SHM: stores into host memory on the receiver's side, loads from
        // host memory on its own; flags polled there
        assert_eq!(posts.len(), 1);
        assert_eq!(posts[0].0, host_of(&sc, next));
        assert_eq!(fetches.len(), 1);
        assert_eq!(fetches[0].0, host_of(&sc, r));
        assert_eq!(posts[0].1, fetches[0].1, "as much in as out");
        assert_eq!(c.flag_loc[i], host_of(&sc, r));
        total += posts[0].1;
    }
    // channel 0's share moves 2(n−1)/n of itself per rank, Simple as is
    let share = sched.parts[0].bytes.0;
    assert_eq!(total, 8 * 2 * 7 * share / 8);
    // the model's software cost per step (700 ns here) once per call that
    // sends, 14 calls; NCCL's own table (PCI Ring Simple, 5.7 µs) is never time
    let overheads: Vec<Picos> = c.programs[0]
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Overhead { time } => Some(*time),
            _ => None,
        })
        .collect();
    assert_eq!(overheads.len(), 2 * 7);
    assert!(overheads.iter().all(|t| *t == Picos::from_ns(700)));
    let none = lowered(&sc, s, 0);
    assert!(
        !none.programs[0]
            .ops
            .iter()
            .any(|o| matches!(o, Op::Overhead { .. }))
    );
    // Simple: every data slice is followed by its flag after a fence
    assert!(c.programs[0].ops.iter().all(|o| match o {
        Op::Stream { post, .. } | Op::Post { parts: post, .. } =>
            post.iter().all(|(_, n)| matches!(n, Notify::After { .. })),
        _ => true,
    }));
}

#[test]
fn p2p_level_sys_writes_into_the_peers_memory() {
    let sc = default_with(&[("NCCL_P2P_LEVEL", "SYS")]);
    let c = lowered(&sc, 43_008, 0);
    let plan = sc.nccl_plan().unwrap();
    let ring = &plan.channels.rings[0];
    for i in 0..8 {
        let r = c.rank_of[i];
        let next = ring[(ring.iter().position(|&x| x == r).unwrap() + 1) % 8];
        let (posts, fetches) = traffic(&c, i);
        assert_eq!(posts, vec![(MemLoc::Device(sc.ranks()[next]), posts[0].1)]);
        assert!(
            fetches.is_empty(),
            "the data lands in the receiver's memory"
        );
        assert_eq!(c.flag_loc[i], MemLoc::Device(sc.ranks()[r]));
    }
}

#[test]
fn ll_doubles_the_wire_bytes_and_carries_its_flags_inline() {
    let sc = default_with(&[("NCCL_PROTO", "LL"), ("NCCL_P2P_LEVEL", "SYS")]);
    let s = 43_008;
    let c = lowered(&sc, s, 0);
    let sched = sc
        .nccl_plan()
        .unwrap()
        .schedule(Bytes(s), Bytes(2))
        .unwrap();
    assert_eq!(sched.choice.protocol, Protocol::Ll);
    // on every channel: what is stored is twice what is received (16-byte
    // lines of 8 data bytes)
    for part in 0..sched.parts.len() {
        let (mut wire, mut data) = (0, 0);
        for i in (0..c.programs.len()).filter(|i| i / 8 == part) {
            wire += traffic(&c, i).0.iter().map(|(_, b)| b).sum::<u64>();
            for op in &c.programs[i].ops {
                match op {
                    Op::Reduce { bytes } => data += bytes.0 / 3,
                    Op::LocalCopy { bytes } => data += bytes.0,
                    _ => {}
                }
            }
        }
        assert_eq!(wire, 2 * data, "channel {part}");
    }
    let mut inline = 0;
    for op in &c.programs[0].ops {
        if let Op::Post { parts, .. } = op {
            assert!(
                parts
                    .iter()
                    .all(|(_, n)| matches!(n, Notify::Inline { .. }))
            );
            inline += 1;
        }
        assert!(!matches!(op, Op::Fence));
    }
    assert!(inline >= 14, "{inline}");
    // no software cost per step unless the model has one: NCCL's own
    // table (PCI Ring LL, 1.0 µs a step) is never charged as time
    assert!(
        !c.programs[0]
            .ops
            .iter()
            .any(|o| matches!(o, Op::Overhead { .. }))
    );
    let with = lowered(&sc, s, 1000);
    assert!(with.programs[0].ops.contains(&Op::Overhead {
        time: Picos::from_ns(1000)
    }));
}

#[test]
fn senders_wait_for_the_receivers_credit_once_the_buffer_is_full() {
    // 16 MiB: ring Simple, 1 MiB per call in two slices: a sender may have
    // four slices (eight steps) in the receiver's buffer
    let sc = default_with(&[("NCCL_P2P_LEVEL", "SYS")]);
    let c = lowered(&sc, 16 << 20, 0);
    let ops = &c.programs[0].ops;
    let credit_waits = ops
        .iter()
        .filter(|o| matches!(o, Op::Wait { phase, .. } if phase.0 % 2 == 1))
        .count();
    let credits_sent: usize = ops
        .iter()
        .map(|o| match o {
            Op::Signal { to, phase } if phase.0 % 2 == 1 => to.len(),
            _ => 0,
        })
        .sum();
    // 14 sends of 2 slices, the first 4 free; 14 receives of 2 slices
    assert_eq!(credit_waits, 2 * 14 - 4);
    assert_eq!(credits_sent, 2 * 14);
    // a small call never fills the buffer
    let small = lowered(&sc, 43_008, 0);
    let w = small.programs[0]
        .ops
        .iter()
        .filter(|o| matches!(o, Op::Wait { phase, .. } if phase.0 % 2 == 1))
        .count();
    // here the second slice of every call is empty: the first slices of
    // calls 2..13 wait (slot g − 4 of the eight-step buffer)
    assert_eq!(w, 12);
}

#[test]
fn the_tree_splits_each_block_into_an_up_and_a_down_half() {
    let sc = default_with(&[("NCCL_ALGO", "Tree")]);
    let plan = sc.nccl_plan().unwrap();
    let s = 43_008;
    let sched = plan.schedule(Bytes(s), Bytes(2)).unwrap();
    assert_eq!(sched.choice.algorithm, contend_nccl::Algorithm::Tree);
    let c = lowered(&sc, s, 0);
    let parts = sched.parts.len();
    // the root one program, every other rank two, per channel
    assert_eq!(c.programs.len(), parts * (1 + 2 * 7));
    let root = plan.channels.trees[sched.parts[0].channel]
        .iter()
        .position(|t| t.up.is_none())
        .unwrap();
    let root_programs = c.rank_of.iter().filter(|r| **r == root).count();
    assert_eq!(root_programs, parts);
    // Simple tree: 640 threads, the halves 384 and 256
    let mut threads: Vec<u32> = c.shape.iter().map(|k| k.unwrap().threads).collect();
    threads.sort();
    threads.dedup();
    assert_eq!(threads, vec![256, 384, 640]);
    // every rank's output gets the whole of each share: the down halves copy it
    let copied: u64 = c
        .programs
        .iter()
        .flat_map(|p| &p.ops)
        .filter_map(|o| match o {
            Op::LocalCopy { bytes } => Some(bytes.0),
            _ => None,
        })
        .sum();
    assert_eq!(copied, 7 * s);
}

#[test]
fn p2p_read_makes_the_receiver_load_from_the_sender() {
    let topo = contend_topo::shipped::get("h200-2x").unwrap().unwrap();
    let text = r#"
name = "read"
topology = "h200-2x"
algorithms = ["nccl"]
[nccl]
NCCL_P2P_READ_ENABLE = 1
NCCL_PROTO = "Simple"
[workload]
kind = "allreduce"
sizes = [1048576]
"#;
    let sc = parse_scenario("read.toml", text, None, Some(topo)).unwrap();
    let plan = sc.nccl_plan().unwrap();
    assert!(matches!(
        plan.pair(0, 1).unwrap().transport,
        contend_nccl::Transport::P2p { read: true, .. }
    ));
    let c = lowered(&sc, 1 << 20, 0);
    let gpus: Vec<NodeIdx> = sc.ranks().to_vec();
    let (posts, fetches) = traffic(&c, 0);
    assert_eq!(posts[0].0, MemLoc::Device(gpus[0]), "stores stay local");
    assert_eq!(
        fetches[0].0,
        MemLoc::Device(gpus[1]),
        "loads cross to the sender"
    );
}

#[test]
fn the_nccl_table_sets_version_and_variables() {
    let text = r#"
name = "t"
topology = "pro6000-8x-2socket"
algorithms = ["nccl", "two-shot-push"]
[nccl]
version = "2.29"
NCCL_P2P_LEVEL = "SYS"
NCCL_MAX_NCHANNELS = 1
NCCL_P2P_DISABLE = false
[workload]
kind = "allreduce"
sizes = [1024, 1048576]
"#;
    let sc = parse_scenario("t.toml", text, None, None).unwrap();
    assert_eq!(sc.nccl().version, NcclVersion::V2_29);
    assert_eq!(sc.nccl().env.max_nchannels, Some(1));
    let plan = sc.nccl_plan().unwrap();
    assert_eq!(plan.version, NcclVersion::V2_29);
    assert_eq!(plan.channels.n_channels, 1);
    // without nccl among the algorithms there is no plan to make
    let other = text.replace("\"nccl\", ", "");
    let sc = parse_scenario("t.toml", &other, None, None).unwrap();
    assert!(sc.nccl_plan().is_none());
    // a bad key is reported at its line
    let bad = text.replace("NCCL_MAX_NCHANNELS", "NCCL_MAX_CHANNELS");
    let e = parse_scenario("t.toml", &bad, None, None)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.toml:8:"), "{e}");
    assert!(e.contains("nccl.NCCL_MAX_CHANNELS"), "{e}");
}

#[test]
fn the_nccl_table_says_who_calls_nccl() {
    let text = r#"
name = "t"
topology = "pro6000-8x-2socket"
algorithms = ["nccl"]
[nccl]
caller = "torch"
[workload]
kind = "allreduce"
sizes = [1024]
"#;
    // direct by default; torch where the table says so, and said so
    let plain = parse_scenario(
        "t.toml",
        &text.replace("caller = \"torch\"\n", ""),
        None,
        None,
    )
    .unwrap();
    assert_eq!(plain.nccl().caller, NcclCaller::Direct);
    let sc = parse_scenario("t.toml", text, None, None).unwrap();
    assert_eq!(sc.nccl().caller, NcclCaller::Torch);
    assert!(
        sc.nccl()
            .describe()
            .ends_with("called from torch.distributed"),
        "{}",
        sc.nccl().describe()
    );
    // an unknown caller is an error at its line and field
    let e = parse_scenario("t.toml", &text.replace("\"torch\"", "\"jax\""), None, None)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.toml:6:"), "{e}");
    assert!(e.contains("nccl.caller") && e.contains("`jax`"), "{e}");
}

/// A scenario given another workload keeps NCCL's plan (NCCL decides from
/// the topology, ranks and `[nccl]`): the same plan a fresh build searches
/// for, and the same verdict on the new sizes as a fresh build.
#[test]
fn another_workload_keeps_the_plan_it_would_search_for() {
    use contend_workload::{Dtype, ScenarioSpec, Skew, Workload};
    let sc = default_with(&[]);
    let w = Workload::Allreduce {
        sizes: vec![Bytes(1 << 20), Bytes(96 << 20)],
        dtype: Dtype::Bf16,
        repeats: 1,
        gap: Picos::ZERO,
        skew: Skew::None,
    };
    let kept = sc.with_workload(w.clone()).unwrap();
    let fresh = Scenario::new(ScenarioSpec {
        workload: w.clone(),
        ..sc.spec()
    })
    .unwrap();
    assert!(kept.nccl_plan().is_some());
    assert_eq!(kept.nccl_plan(), fresh.nccl_plan());
    // under a narrowed NCCL_ALGO/NCCL_PROTO too
    let ll = default_with(&[("NCCL_PROTO", "LL"), ("NCCL_ALGO", "Tree")]);
    let e = ll.with_workload(w);
    let fresh = Scenario::new(ScenarioSpec {
        workload: Workload::Allreduce {
            sizes: vec![Bytes(1 << 20), Bytes(96 << 20)],
            dtype: Dtype::Bf16,
            repeats: 1,
            gap: Picos::ZERO,
            skew: Skew::None,
        },
        ..ll.spec()
    });
    assert_eq!(
        e.as_ref().map(|_| ()).map_err(|e| e.to_string()),
        fresh.as_ref().map(|_| ()).map_err(|e| e.to_string())
    );
}

/// Variables that leave NCCL nothing it could run are refused as their own
/// typed error (a caller trying settings skips exactly these), located at
/// the variable in a scenario file and told in the same words either way.
#[test]
fn variables_that_leave_nccl_nothing_are_a_typed_located_error() {
    let sc = default_scenario(None).unwrap();
    let mut setup = sc.nccl().clone();
    setup.env.set_modelled("NCCL_ALGO", "NVLS").unwrap();
    match sc.with_nccl(setup) {
        Err(ScenarioError::NcclNoChoice { size, .. }) => assert_eq!(size, Bytes(43008)),
        other => panic!("{other:?}"),
    }
    let text = r#"
name = "t"
topology = "pro6000-8x-2socket"
algorithms = ["nccl"]
[nccl]
NCCL_ALGO = "NVLS"
[workload]
kind = "allreduce"
sizes = [1024, 1048576]
"#;
    let e = parse_scenario("t.toml", text, None, None).unwrap_err();
    assert!(
        matches!(&e, ScenarioError::NcclNoChoice { size, .. } if *size == Bytes(1024)),
        "{e:?}"
    );
    assert_eq!(e.field(), Some("nccl.NCCL_ALGO"));
    let m = e.to_string();
    assert!(m.starts_with("t.toml:6:"), "{m}");
    assert!(
        m.ends_with(
            "NCCL has no algorithm and protocol left for an allreduce of 1 KiB: \
             NCCL_ALGO/NCCL_PROTO disable every one NCCL could run here"
        ),
        "{m}"
    );
}
