//! Each step of the decision pipeline on shipped and small inline
//! topologies: path types, P2P level, transport, search, channels, the cost
//! model, the version differences, and the plan's errors.

use contend_nccl::{
    Algorithm, CpuArch, GpuP2p, NcclEnv, NcclError, NcclPlan, NcclVersion, P2pMechanism,
    P2pVerdict, PathType, ProcessModel, Protocol, Transport, all_gpus, explain, plan,
};
use contend_topo::{Bytes, NodeIdx, Topology, parse_topology, shipped};

fn shipped_topo(name: &str) -> Topology {
    shipped::get(name).unwrap().unwrap()
}

fn run(topo: &Topology, env: &NcclEnv) -> NcclPlan {
    plan(topo, &all_gpus(topo), env, NcclVersion::V2_28).unwrap()
}

fn env(vars: &[&str]) -> NcclEnv {
    NcclEnv::from_assignments(vars).unwrap()
}

fn ranks(topo: &Topology, ids: &[&str]) -> Vec<NodeIdx> {
    ids.iter().map(|i| topo.lookup(i).unwrap()).collect()
}

/// Two switches under one switch (PXB), a third under the root complex,
/// one GPU on a root port of the other socket.
fn nested() -> Topology {
    let mut t = String::from("name = \"nested switches\"\n");
    for (id, kind, socket) in [
        ("rc0", "root_complex", Some(0)),
        ("rc1", "root_complex", Some(1)),
        ("mem0", "host_memory", Some(0)),
        ("mem1", "host_memory", Some(1)),
        ("top", "switch", None),
        ("swa", "switch", None),
        ("swb", "switch", None),
        ("swc", "switch", None),
    ] {
        t += &format!("[[node]]\nid = \"{id}\"\nkind = \"{kind}\"\n");
        if let Some(s) = socket {
            t += &format!("socket = {s}\n");
        }
    }
    for g in 0..6 {
        t += &format!(
            "[[node]]\nid = \"gpu{g}\"\nkind = \"gpu\"\nmodel = \"L40S\"\nsms = 142\nmemory_bandwidth_gbps = 864\n"
        );
    }
    for (a, b) in [
        ("gpu0", "swa"),
        ("gpu1", "swa"),
        ("gpu2", "swb"),
        ("gpu3", "swc"),
        ("gpu4", "swc"),
        ("gpu5", "rc1"),
        ("swa", "top"),
        ("swb", "top"),
        ("top", "rc0"),
        ("swc", "rc0"),
    ] {
        t += &format!("[[link]]\na = \"{a}\"\nb = \"{b}\"\nkind = \"pcie\"\ngen = 4\nwidth = 16\n");
    }
    t += "[[link]]\na = \"rc0\"\nb = \"rc1\"\nkind = \"cpu\"\nprotocol = \"UPI\"\nbandwidth_gbps = 40\nlatency_ns = 200\n";
    t += "[[link]]\na = \"mem0\"\nb = \"rc0\"\nkind = \"memory\"\nbandwidth_gbps = 300\n";
    t += "[[link]]\na = \"mem1\"\nb = \"rc1\"\nkind = \"memory\"\nbandwidth_gbps = 300\n";
    parse_topology("nested.toml", &t).unwrap()
}

#[test]
fn path_types_follow_ncclss_rules() {
    let p = run(&nested(), &NcclEnv::default());
    let path = |a, b| p.pair(a, b).unwrap().path;
    assert_eq!(path(0, 1), PathType::Pix, "one switch");
    assert_eq!(
        path(0, 2),
        PathType::Pxb,
        "two switches under a third, no host bridge"
    );
    assert_eq!(path(0, 3), PathType::Phb, "through the root complex");
    assert_eq!(path(3, 4), PathType::Pix);
    assert_eq!(path(0, 5), PathType::Sys, "across sockets");
    assert_eq!(path(5, 0), PathType::Sys);
    // Root ports of one socket (nvidia-smi's NODE or PHB) are PHB to NCCL;
    // quadrant root complexes joined by the I/O die are one CPU node.
    let q = run(&shipped_topo("rtx4090-8x-gen4"), &NcclEnv::default());
    assert!(q.pairs.iter().all(|d| d.path == PathType::Phb));
    assert_eq!(q.system.cpus, 1);
    let h = run(&shipped_topo("h200-2x"), &NcclEnv::default());
    assert_eq!(h.pair(0, 1).unwrap().path, PathType::Nvl);
    // NCCL's link bandwidths: Gen4 x16 24 GB/s, Skylake inter-CPU 10 GB/s.
    assert_eq!(p.pair(0, 1).unwrap().search_bw.as_gbps(), 24.0);
    assert_eq!(p.pair(0, 5).unwrap().search_bw.as_gbps(), 10.0);
}

#[test]
fn p2p_level_default_amd_rule_and_overrides() {
    let topo = nested();
    let p = run(&topo, &NcclEnv::default());
    assert_eq!(p.p2p.level, PathType::Pxb);
    assert!(
        matches!(p.pair(0, 2).unwrap().transport, Transport::P2p { .. }),
        "PXB is within"
    );
    assert_eq!(
        p.pair(0, 3).unwrap().transport,
        Transport::Shm,
        "PHB is above"
    );
    assert_eq!(p.pair(0, 3).unwrap().verdict, P2pVerdict::AboveLevel);
    // A refused pair is searched through the CPU of its destination.
    let d = p.pair(0, 3).unwrap();
    assert_eq!((d.search_path, d.search_hops), (PathType::Phb, 5));

    // AMD with at most two GPUs: SYS.
    let two = ranks(&topo, &["gpu0", "gpu5"]);
    let mut amd = NcclEnv::default();
    amd.host.cpu = Some(CpuArch::Amd);
    let a = plan(&topo, &two, &amd, NcclVersion::V2_28).unwrap();
    assert_eq!(a.p2p.level, PathType::Sys);
    assert!(matches!(
        a.pair(0, 1).unwrap().transport,
        Transport::P2p { .. }
    ));
    assert!(
        a.pair(0, 1).unwrap().reason.contains("AMD"),
        "{}",
        a.pair(0, 1).unwrap().reason
    );
    let i = plan(&topo, &two, &NcclEnv::default(), NcclVersion::V2_28).unwrap(); // UPI: Intel
    assert_eq!(i.pair(0, 1).unwrap().transport, Transport::Shm);
    let three = ranks(&topo, &["gpu0", "gpu3", "gpu5"]);
    let a3 = plan(&topo, &three, &amd, NcclVersion::V2_28).unwrap();
    assert_eq!(a3.p2p.level, PathType::Pxb, "three GPUs: the default again");

    // NCCL_P2P_DISABLE and NCCL_P2P_LEVEL, names and old integers.
    let off = run(&topo, &env(&["NCCL_P2P_DISABLE=1"]));
    assert!(off.pairs.iter().all(|d| d.transport == Transport::Shm));
    assert!(off.pair(0, 1).unwrap().reason.contains("NCCL_P2P_DISABLE"));
    let pix = run(&topo, &env(&["NCCL_P2P_LEVEL=PIX"]));
    assert_eq!(pix.pair(0, 2).unwrap().transport, Transport::Shm);
    assert!(matches!(
        pix.pair(0, 1).unwrap().transport,
        Transport::P2p { .. }
    ));
    let phb = run(&topo, &env(&["NCCL_P2P_LEVEL=3"]));
    assert_eq!(phb.p2p.level, PathType::Phb);
    assert!(matches!(
        phb.pair(0, 3).unwrap().transport,
        Transport::P2p { .. }
    ));
    assert_eq!(phb.pair(0, 5).unwrap().transport, Transport::Shm);
    let sys = run(&topo, &env(&["NCCL_P2P_LEVEL=SYS"]));
    assert!(
        sys.pairs
            .iter()
            .all(|d| matches!(d.transport, Transport::P2p { .. }))
    );

    // The driver refusing P2P (GeForce) overrides any level.
    let mut geforce = env(&["NCCL_P2P_LEVEL=SYS"]);
    geforce.host.gpu_p2p = GpuP2p::NotSupported;
    let g = run(&topo, &geforce);
    assert!(g.pairs.iter().all(|d| d.transport == Transport::Shm));
    assert_eq!(g.pair(0, 1).unwrap().verdict, P2pVerdict::DriverRefuses);
    assert!(g.pair(0, 1).unwrap().reason.contains("driver"));
}

#[test]
fn transports_name_the_mechanism_and_read_rule() {
    let topo = nested();
    let p = run(&topo, &NcclEnv::default());
    assert_eq!(
        p.pair(0, 1).unwrap().transport.log_label(),
        "P2P/direct pointer"
    );
    assert_eq!(
        p.pair(0, 3).unwrap().transport.log_label(),
        "SHM/direct/direct"
    );
    let mut procs = NcclEnv::default();
    procs.host.processes = ProcessModel::ProcessPerRank;
    let q = run(&topo, &procs);
    assert!(matches!(
        q.pair(0, 1).unwrap().transport,
        Transport::P2p {
            mechanism: P2pMechanism::Cumem,
            read: false,
            ..
        }
    ));
    let mut ipc = env(&["NCCL_CUMEM_ENABLE=0"]);
    ipc.host.processes = ProcessModel::ProcessPerRank;
    assert_eq!(
        run(&topo, &ipc).pair(0, 1).unwrap().transport.log_label(),
        "P2P/IPC"
    );
    let read = run(&topo, &env(&["NCCL_P2P_READ_ENABLE=1"]));
    assert_eq!(
        read.pair(0, 1).unwrap().transport.log_label(),
        "P2P/direct pointer/read"
    );
    // Read by default only on NVLink between two SM80 GPUs.
    let h = shipped_topo("h200-2x");
    assert!(matches!(
        run(&h, &NcclEnv::default()).pair(0, 1).unwrap().transport,
        Transport::P2p { read: false, .. }
    ));
    let mut a100 = NcclEnv::default();
    a100.host.compute_capability = Some(80);
    assert!(matches!(
        run(&h, &a100).pair(0, 1).unwrap().transport,
        Transport::P2p { read: true, .. }
    ));
    // SHM off: P2P pairs keep P2P; a pair with neither is not replicated.
    let no_shm = run(&topo, &env(&["NCCL_SHM_DISABLE=1", "NCCL_P2P_LEVEL=SYS"]));
    assert!(
        no_shm
            .pairs
            .iter()
            .all(|d| matches!(d.transport, Transport::P2p { .. }))
    );
    let e = plan(
        &topo,
        &all_gpus(&topo),
        &env(&["NCCL_SHM_DISABLE=1"]),
        NcclVersion::V2_28,
    )
    .unwrap_err();
    assert!(matches!(e, NcclError::Unreplicated(_)), "{e}");
}

#[test]
fn search_matches_hand_worked_cases() {
    // rtx4090-8x-gen4: 8 GPUs on root ports of one AMD socket, Gen4 x16
    // (24 GB/s), P2P refused (PHB) so every hop goes through the CPU: at
    // 20 GB/s one ring fits, at 12 two do (24 > 20), which fills the links.
    let p = run(&shipped_topo("rtx4090-8x-gen4"), &NcclEnv::default());
    assert_eq!((p.ring.n_channels, p.ring.bw_intra), (2, 12.0));
    assert_eq!(p.ring.type_intra, PathType::Phb);
    assert_eq!(p.channels.n_channels, 4);
    // pro6000-8x-2switch: four GPUs per switch, Gen5 (48 GB/s): 2 × 24.
    let s = run(&shipped_topo("pro6000-8x-2switch"), &NcclEnv::default());
    assert_eq!((s.ring.n_channels, s.ring.bw_intra), (2, 24.0));
    assert_eq!(s.channels.rings[0], (0..8).collect::<Vec<_>>());
    // h200-2x: 18 NVLinks × 20.6 GB/s; 6 rings of 60 GB/s, duplicated to 12 × 30.
    let h = run(&shipped_topo("h200-2x"), &NcclEnv::default());
    assert_eq!((h.ring.n_channels, h.ring.bw_intra), (12, 30.0));
    assert_eq!(h.channels.n_channels, 24);
    assert_eq!(
        (h.channels.p2p_channels, h.channels.p2p_channels_per_peer),
        (32, 32)
    );
    // pro6000-8x-2socket: Blackwell's lowest per-channel speed (18 GB/s)
    // is above AMD's 16 GB/s between sockets: NCCL falls back to one
    // channel in simple order at 0.1 GB/s.
    let f = run(&shipped_topo("pro6000-8x-2socket"), &NcclEnv::default());
    assert!(f.ring.fallback && f.tree.fallback);
    assert_eq!(
        (f.ring.n_channels, f.ring.bw_intra, f.ring.type_intra),
        (1, 0.1, PathType::Sys)
    );
    assert_eq!(f.channels.n_channels, 2);
    // The same box with Intel Emerald Rapids (40 GB/s UPI) finds real rings.
    let mut erp = NcclEnv::default();
    erp.host.cpu = Some(CpuArch::IntelEmeraldRapids);
    let e = run(&shipped_topo("pro6000-8x-2socket"), &erp);
    assert!(!e.ring.fallback);
    assert!(e.ring.bw_intra >= 18.0);
}

#[test]
fn channel_counts_follow_the_environment() {
    let topo = shipped_topo("pro6000-8x-2switch");
    assert_eq!(
        run(&topo, &env(&["NCCL_MAX_NCHANNELS=1"]))
            .channels
            .n_channels,
        1
    );
    let min = run(&topo, &env(&["NCCL_MIN_NCHANNELS=8"]));
    assert_eq!(min.channels.n_channels, 8);
    assert_eq!(min.channels.source, vec![0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(min.channels.p2p_channels, 8);
    let both = run(
        &topo,
        &env(&["NCCL_MAX_NCHANNELS=2", "NCCL_MIN_NCHANNELS=6"]),
    );
    assert_eq!(
        both.channels.n_channels, 6,
        "max cuts first, min then copies"
    );
    assert_eq!(
        run(&topo, &env(&["NCCL_MAX_CTAS=3"])).channels.n_channels,
        3
    );
    // The model multiplies the search's channels, not the communicator's.
    assert_eq!(
        min.model.entries,
        run(&topo, &NcclEnv::default()).model.entries
    );
}

#[test]
fn cost_model_choices_and_overrides() {
    let topo = shipped_topo("pro6000-8x-2switch");
    let p = run(&topo, &NcclEnv::default());
    // LL128 is off over PCIe.
    assert!(
        p.model
            .entries
            .iter()
            .filter(|e| e.protocol == Protocol::Ll128)
            .all(|e| e.bandwidth_gbps == 0.0)
    );
    let small = p.choose(Bytes::kib(4)).unwrap();
    assert_eq!(
        (small.algorithm, small.protocol),
        (Algorithm::Ring, Protocol::Ll)
    );
    assert_eq!(small.max_channels, 1, "a small call uses fewer channels");
    let large = p.choose(Bytes::mib(256)).unwrap();
    assert_eq!(
        (large.algorithm, large.protocol),
        (Algorithm::Ring, Protocol::Simple)
    );
    assert_eq!(
        large.threads,
        512 + 32,
        "Ring Simple: max threads plus a sync warp"
    );
    // Ring latency: base 6.6 + 2(n-1) steps of PCI's 1.0 µs for LL.
    let ll = p.model.entry(Algorithm::Ring, Protocol::Ll).unwrap();
    assert!((ll.latency_us - (6.6 + 14.0 * 1.0)).abs() < 1e-4);
    // NCCL_PROTO, NCCL_ALGO, NCCL_NTHREADS.
    let simple = run(&topo, &env(&["NCCL_PROTO=Simple"]));
    assert_eq!(simple.choose(Bytes(8)).unwrap().protocol, Protocol::Simple);
    let tree = run(&topo, &env(&["NCCL_ALGO=Tree"]));
    assert_eq!(
        tree.choose(Bytes::mib(64)).unwrap().algorithm,
        Algorithm::Tree
    );
    let nt = run(&topo, &env(&["NCCL_NTHREADS=128"]));
    assert_eq!(
        nt.model
            .entry(Algorithm::Ring, Protocol::Simple)
            .unwrap()
            .max_threads,
        128
    );
    // LL128 forced on by NCCL_PROTO bypasses NCCL's enable rule.
    let ll128 = run(&topo, &env(&["NCCL_PROTO=LL128"]));
    assert!(
        ll128
            .model
            .entry(Algorithm::Ring, Protocol::Ll128)
            .unwrap()
            .bandwidth_gbps
            > 0.0
    );
    // Every size has a choice, and the reported time is NCCL's own model.
    for c in p.table(&[Bytes(1), Bytes(43008), Bytes::mib(1), Bytes::mib(64)]) {
        assert!(c.time_us > 0.0 && c.channels_used() >= 1);
    }
}

#[test]
fn version_differences_show_where_the_sources_differ() {
    // NVLink pair with Blackwell's compute capability: LL128 is on, and its
    // Ring cap per channel is 73.4 GB/s in 2.28 but 40.0 in 2.29
    // (perChMaxRingLL128Bws, src/graph/tuning.cc).
    let topo = shipped_topo("h200-2x");
    let mut bw = NcclEnv::default();
    bw.host.compute_capability = Some(100);
    let at = |v| plan(&topo, &all_gpus(&topo), &bw, v).unwrap();
    let (p28, p29, p27) = (
        at(NcclVersion::V2_28),
        at(NcclVersion::V2_29),
        at(NcclVersion::V2_27),
    );
    let ll128 = |p: &NcclPlan| {
        p.model
            .entry(Algorithm::Ring, Protocol::Ll128)
            .unwrap()
            .bandwidth_gbps
    };
    assert!(ll128(&p29) < ll128(&p28));
    // Tree per-channel cap: 77.4 (2.27) vs 70.0 (2.28).
    let tree = |p: &NcclPlan| {
        p.model
            .entry(Algorithm::Tree, Protocol::Simple)
            .unwrap()
            .bandwidth_gbps
    };
    assert!(tree(&p27) >= tree(&p28));
    // Tree correction at 512 MiB: none before 2.29, 0.9 for Simple in 2.29.
    let b = Bytes::mib(512);
    let t28 = p28
        .model
        .time_us(Algorithm::Tree, Protocol::Simple, b)
        .unwrap();
    let t29 = p29
        .model
        .time_us(Algorithm::Tree, Protocol::Simple, b)
        .unwrap();
    assert!(t29 > t28);
    // The SM100 speed list gains 45 GB/s in 2.29.
    assert!(p29.ring.speeds.contains(&45.0) && !p28.ring.speeds.contains(&45.0));
}

#[test]
fn graph_file_replaces_the_search() {
    let topo = shipped_topo("pro6000-4x-1socket");
    let dir = std::env::temp_dir().join(format!("contend-nccl-graph-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("graph.xml");
    std::fs::write(
        &file,
        r#"<graphs version="1">
  <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="20" speedinter="20" latencyinter="0" typeintra="PHB" typeinter="PIX" samechannels="0">
    <channel><gpu dev="0"/><gpu dev="2"/><gpu dev="1"/><gpu dev="3"/></channel>
    <channel><gpu dev="3"/><gpu dev="1"/><gpu dev="2"/><gpu dev="0"/></channel>
  </graph>
</graphs>"#,
    )
    .unwrap();
    let p = run(
        &topo,
        &env(&[&format!("NCCL_GRAPH_FILE={}", file.display())]),
    );
    assert!(p.graph_from_file);
    assert_eq!(p.ring.channels[0], vec![0, 2, 1, 3]);
    assert_eq!(p.channels.rings[1], vec![0, 3, 1, 2]);
    let missing = plan(
        &topo,
        &all_gpus(&topo),
        &env(&["NCCL_GRAPH_FILE=/nonexistent/g.xml"]),
        NcclVersion::V2_28,
    );
    assert!(matches!(missing, Err(NcclError::GraphFile { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plan_errors_name_the_problem() {
    let topo = shipped_topo("pro6000-4x-1socket");
    let rc = topo.lookup("rc0").unwrap();
    let g0 = topo.lookup("gpu0").unwrap();
    let e = plan(&topo, &[g0, rc], &NcclEnv::default(), NcclVersion::V2_28).unwrap_err();
    assert!(e.to_string().contains("rank 1: `rc0` is not a GPU"), "{e}");
    let e = plan(&topo, &[g0, g0], &NcclEnv::default(), NcclVersion::V2_28).unwrap_err();
    assert!(e.to_string().contains("rank 0 and rank 1"), "{e}");
    assert!(matches!(
        plan(&topo, &[], &NcclEnv::default(), NcclVersion::V2_28),
        Err(NcclError::NoRanks)
    ));
    let one = plan(&topo, &[g0], &NcclEnv::default(), NcclVersion::V2_28).unwrap();
    assert!(one.choose(Bytes::kib(1)).is_none());
    assert!(explain(&one, &[Bytes::kib(1)]).contains("one rank"));
}

#[test]
fn explain_says_what_and_why() {
    let p = run(&shipped_topo("pro6000-8x-2switch"), &NcclEnv::default());
    let text = explain(&p, &[Bytes(43008)]);
    assert!(
        text.contains(
            "gpu0→gpu4: SHM, path PHB above P2P level PXB (NCCL's default); 4 channels; ring LL to"
        ),
        "{text}"
    );
    assert!(text.contains("P2P write, path PIX within P2P level PXB"));
    assert!(text.contains("ring LL"));
}

#[test]
fn one_calls_schedule_facts_and_line() {
    use contend_nccl::{CallFacts, DecidedBy, TransportKind, call_line};
    use contend_topo::Picos;
    let topo = shipped_topo("pro6000-8x-2socket");
    let p = run(&topo, &NcclEnv::default());
    // the model's latency is NCCL's base plus 2(n−1) steps of PCI Ring Simple
    let e = p.model.entry(Algorithm::Ring, Protocol::Simple).unwrap();
    assert_eq!((e.base_latency_us, e.step_latency_us), (8.4, 5.7));
    assert!((e.latency_us - (8.4 + 14.0 * 5.7)).abs() < 1e-3);
    let s = p.schedule(Bytes(43_008), Bytes(2)).unwrap();
    assert_eq!(
        (s.choice.algorithm, s.choice.protocol),
        (Algorithm::Ring, Protocol::Simple)
    );
    assert_eq!(s.parts.len(), 2);
    assert_eq!(s.parts.iter().map(|x| x.bytes.0).sum::<u64>(), 43_008);
    assert_eq!(s.step_latency, Picos::from_ns(5700));
    let f = CallFacts::from_plan(&p, &s);
    assert_eq!(f.decided_by, DecidedBy::Replica);
    assert_eq!((f.channel_lo, f.channel_hi), (0, 1));
    assert_eq!(f.connections.len(), 8, "the ring's eight links");
    assert!(
        f.connections
            .iter()
            .all(|c| c.transport == TransportKind::Shm)
    );
    let line = call_line(&p, &s);
    assert_eq!(
        line,
        "nccl 2.28: SHM on 8 connections; ring Simple on 2 of 2 channels (ring LL to 3.8 KiB, then Simple); gpu0→gpu4: SHM, path SYS above P2P level PXB (NCCL's default)"
    );
    // P2P level SYS: the same ring, P2P writes
    let q = run(&topo, &env(&["NCCL_P2P_LEVEL=SYS"]));
    let f = CallFacts::from_plan(&q, &q.schedule(Bytes(43_008), Bytes(2)).unwrap());
    assert!(
        f.connections
            .iter()
            .all(|c| c.transport == TransportKind::P2pWrite)
    );
    // a small call: LL on one channel; the tree when forced lists both ways
    let small = p.schedule(Bytes(1024), Bytes(2)).unwrap();
    assert_eq!(small.choice.protocol, Protocol::Ll);
    assert_eq!(small.parts.len(), 1);
    let t = run(&topo, &env(&["NCCL_ALGO=Tree"]));
    let ts = t.schedule(Bytes(43_008), Bytes(2)).unwrap();
    assert_eq!(ts.choice.algorithm, Algorithm::Tree);
    let tf = CallFacts::from_plan(&t, &ts);
    assert_eq!(tf.connections.len(), 14, "a chain of 8, up and down");
    // one rank: no call to schedule
    let one = plan(
        &topo,
        &ranks(&topo, &["gpu0"]),
        &NcclEnv::default(),
        NcclVersion::V2_28,
    )
    .unwrap();
    assert!(one.schedule(Bytes(1024), Bytes(2)).is_none());
}
