//! The replica against public `NCCL_DEBUG=INFO` logs of PCIe boxes whose
//! topology the same post publishes (`tests/fixtures/nccl-logs/`, sources in
//! its README). Each test parses the log, runs the replica on the fixture's
//! topology with the facts the log states, and checks every decision the
//! quoted lines record. Where the replica cannot be checked (a line not
//! quoted, a fact not published) the test says so in a comment.

use contend_nccl::log::{self, LogTransport, NcclLog};
use contend_nccl::{
    CpuArch, GpuP2p, NcclEnv, NcclPlan, NcclVersion, PathType, Transport, all_gpus, plan,
};
use contend_topo::load_topology;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nccl-logs")
        .join(name)
}

fn read_log(name: &str) -> NcclLog {
    let path = fixture(name);
    let text = std::fs::read_to_string(&path).unwrap();
    log::parse(&path.display().to_string(), &text).unwrap()
}

fn run(topo: &str, env: &NcclEnv, version: NcclVersion) -> NcclPlan {
    let t = load_topology(&fixture(topo)).unwrap();
    plan(&t, &all_gpus(&t), env, version).unwrap()
}

/// `GPU/0-4e000`, `GPU/CE000` → `4e000`.
fn bus(node: &str) -> String {
    let id = node.rsplit('/').next().unwrap_or("");
    let id = id.rsplit('-').next().unwrap_or(id);
    id.trim_start_matches('0').to_ascii_lowercase()
}

/// Checks every GPU-to-GPU entry of the log's path dump against the
/// replica's search paths (after NCCL's CPU detour of refused pairs).
fn check_paths(log: &NcclLog, plan: &NcclPlan, buses: &[&str]) -> usize {
    let rank = |node: &str| buses.iter().position(|b| bus(b) == bus(node));
    let mut checked = 0;
    for line in &log.paths {
        let Some(from) = rank(&line.from) else {
            continue;
        };
        for (node, hops, bw, ptype) in &line.to {
            if !node.starts_with("GPU/") {
                continue;
            }
            let to = rank(node).unwrap_or_else(|| panic!("{node} is not a rank's GPU"));
            if to == from {
                assert_eq!(*ptype, PathType::Loc);
                continue;
            }
            let d = plan.pair(from, to).unwrap();
            assert_eq!(
                (d.search_path, d.search_hops),
                (*ptype, *hops),
                "path {from}->{to}: replica {:?}, log {line:?}",
                d
            );
            assert!(
                (d.search_bw.as_gbps() - f64::from(*bw)).abs() < 0.05,
                "path {from}->{to}: bandwidth {} vs log {bw}",
                d.search_bw
            );
            checked += 1;
        }
    }
    checked
}

/// The topology dump: every link line of the log (type, bandwidth, what it
/// reaches) is one the replica's system has, and the CPUs print the same
/// (arch/vendor/model).
fn check_topology_dump(log: &NcclLog, plan: &NcclPlan) -> usize {
    let text: String = plan
        .system
        .tree
        .iter()
        .map(|l| format!("replica NCCL INFO {l}\n"))
        .collect();
    let mine = log::parse("replica", &text).unwrap();
    let sig = |l: &log::LogTopoLine| {
        let kind = l.node.split('/').next().unwrap_or("").to_string();
        let detail = match kind.as_str() {
            "GPU" | "CPU" => l.detail.clone(),
            _ => None,
        };
        (
            l.link.clone().map(|(t, b)| (t, (b * 10.0).round() as i64)),
            kind,
            detail,
        )
    };
    let have: Vec<_> = mine.topology.iter().map(sig).collect();
    let mut checked = 0;
    for l in &log.topology {
        if l.node.starts_with("NIC/") || l.node.starts_with("NET/") {
            continue; // NICs are not part of a contend topology.
        }
        assert!(
            have.contains(&sig(l)),
            "replica has no {l:?}; it has {have:?}"
        );
        checked += 1;
    }
    checked
}

fn check_graph(g: &log::LogGraph, r: &contend_nccl::SearchGraph) {
    assert_eq!(g.pattern, r.pattern.code(), "pattern");
    assert_eq!(
        g.n_channels, r.n_channels,
        "channels of pattern {}",
        g.pattern
    );
    assert_eq!(g.bw_intra, r.bw_intra, "bandwidth of pattern {}", g.pattern);
    assert_eq!(g.type_intra, r.type_intra, "type of pattern {}", g.pattern);
    assert_eq!(
        g.type_inter, r.type_inter,
        "inter type of pattern {}",
        g.pattern
    );
    assert_eq!(
        g.same_channels, r.same_channels,
        "sameChannels of pattern {}",
        g.pattern
    );
    for (c, gpus) in g.channels.iter().enumerate() {
        let ranks: Vec<usize> = gpus
            .iter()
            .map(|x| x.trim_start_matches("GPU/").parse().unwrap())
            .collect();
        assert_eq!(ranks, r.channels[c], "channel {c} of pattern {}", g.pattern);
    }
}

fn check_transports(log: &NcclLog, plan: &NcclPlan) -> usize {
    for c in &log.connections {
        let d = plan.pair(c.from, c.to).unwrap();
        assert_eq!(
            d.transport.kind(),
            c.transport.kind(),
            "{}->{} on channel {}: replica {} ({}), log {}",
            c.from,
            c.to,
            c.channel,
            d.transport,
            d.reason,
            c.label
        );
        if let LogTransport::P2p { read, .. } = &c.transport {
            assert_eq!(d.transport.log_label(), c.label, "{}->{}", c.from, c.to);
            assert!(matches!(d.transport, Transport::P2p { read: r, .. } if r == *read));
        }
    }
    log.connections.len()
}

/// NVIDIA/nccl-tests#307: 8x RTX 4090, one Gen4 switch per Intel socket.
/// The log is NCCL 2.21 or 2.22 by its formats (`GPU/CE000 :` headers with
/// `GPU/0-4e000` entries, `src/graph/paths.cc` at v2.21.5-1 and v2.22.3-1);
/// the rules it exercises (Intel P2P level PXB, the CPU detour, the search
/// with its Intel ×6/5 PCI charge, duplication, channels) are those of
/// v2.27.7-1 for one node, so the replica runs as 2.27.
#[test]
fn rtx4090_8x_two_intel_sockets_with_switches() {
    let log = read_log("rtx4090-8x-2socket-switch.log");
    let mut env = NcclEnv::default();
    env.host.cpu = Some(CpuArch::IntelSkylake); // the log's CPU (1/1/2)
    // GeForce: the driver reports no P2P, so NCCL routes even the GPUs of
    // one switch through the CPU (the log's 4-hop PHB paths between them).
    env.host.gpu_p2p = GpuP2p::NotSupported;
    let p = run(
        "rtx4090-8x-2socket-switch.topo.toml",
        &env,
        NcclVersion::V2_27,
    );
    let buses = [
        "4e000", "4f000", "50000", "51000", "ce000", "cf000", "d0000", "d1000",
    ];

    assert_eq!(
        check_paths(&log, &p, &buses),
        5 * 7,
        "five GPUs' path lines quoted"
    );
    let (max, total) = log.system_bw.unwrap();
    assert_eq!(
        (p.system.max_bw.as_gbps(), p.system.total_bw.as_gbps()),
        (f64::from(max), f64::from(total))
    );
    assert_eq!(
        check_topology_dump(&log, &p),
        8,
        "distinct dump lines quoted"
    );

    check_graph(log.ring_graph().unwrap(), &p.ring);
    check_graph(log.tree_graph().unwrap(), &p.tree);
    assert_eq!(
        p.ring.bw_intra, 5.0,
        "1 × 5 GB/s: the switch uplink carries 3 PHB hops at ×6/5 and one SYS hop"
    );

    // Rings: rank 0's and rank 6's neighbours on channels 0 and 1.
    assert!(!log.ring_neighbours.is_empty());
    for &(c, prev, rank, next) in &log.ring_neighbours {
        let ring = &p.channels.rings[c];
        let i = ring.iter().position(|r| *r == rank).unwrap();
        let n = ring.len();
        assert_eq!(
            (ring[(i + n - 1) % n], ring[(i + 1) % n]),
            (prev, next),
            "ring {c} at rank {rank}"
        );
    }
    assert_eq!(
        p.channels.n_channels, 2,
        "Ring 00 and Ring 01: one search channel, doubled"
    );
    // Trees.
    for t in &log.trees {
        for (c, (downs, up)) in t.channels.iter().enumerate() {
            let mine = p.channels.trees[c][t.rank];
            assert_eq!(mine.up, *up, "tree {c} parent of {}", t.rank);
            assert_eq!(
                mine.down.into_iter().collect::<Vec<_>>(),
                *downs,
                "tree {c} children of {}",
                t.rank
            );
        }
    }
    assert_eq!(check_transports(&log, &p), 9);
}

/// NVIDIA/nccl#1358: two GPUs on two of three Intel NUMA nodes. The log is
/// NCCL 2.18–2.20 by its formats (`GPU/2A000 (0/5000.000000/LOC)`, no
/// system id); its decisions here (Intel P2P level PXB, the SYS path at the
/// Skylake inter-CPU 10 GB/s, the search at 10 GB/s) follow the same rules
/// at v2.27.7-1.
#[test]
fn two_gpus_across_intel_numa_nodes() {
    let log = read_log("2gpu-3numa-intel.log");
    let mut env = NcclEnv::default();
    env.host.cpu = Some(CpuArch::IntelSkylake); // CPU/0..2 (1/1/2)
    env.host.compute_capability = Some(80); // inferred, see the topology file
    let p = run("2gpu-3numa-intel.topo.toml", &env, NcclVersion::V2_27);
    assert_eq!(check_paths(&log, &p, &["2a000", "ab000"]), 2);
    assert!(check_topology_dump(&log, &p) >= 4);
    check_graph(log.ring_graph().unwrap(), &p.ring);
    // The quoted lines stop before the transports; the replica's answer to
    // the question is SHM (SYS is above Intel's PXB):
    assert_eq!(p.pair(0, 1).unwrap().transport, Transport::Shm);
    // The tree line is cut in the quote; the replica's tree is the same
    // single 10 GB/s channel as the ring.
    assert_eq!((p.tree.n_channels, p.tree.bw_intra), (1, 10.0));
}

/// NVIDIA/nccl#1817: 8x L20, two switches per socket. The post does not
/// name the CPU or the NCCL version: the transports checked here are the
/// same for every CPU vendor from NCCL 2.23 on (P2P level PXB for more than
/// two GPUs), so the replica runs with Intel and with AMD and must agree
/// with the log both times. (Before 2.23 an AMD box defaulted to P2P level
/// SYS, which would have used P2P everywhere; the log's SHM rules that out.)
/// Rings and trees are not checked: the quoted connections mix collective
/// and send/recv connections and the channel lines are not quoted.
#[test]
fn l20_8x_pairs_of_gpus_per_switch() {
    let log = read_log("l20-8x-2socket.log");
    for cpu in [CpuArch::IntelSapphireRapids, CpuArch::Amd] {
        let mut env = NcclEnv::default();
        env.host.cpu = Some(cpu);
        let p = run("l20-8x-2socket.topo.toml", &env, NcclVersion::V2_28);
        assert_eq!(check_transports(&log, &p), 30);
        // nvidia-smi's matrix, as far as quoted: PIX stays PIX, NODE is NCCL's PHB.
        let m = log.topo_matrix.as_ref().unwrap();
        for (row, cells) in &m.rows {
            let a: usize = row.trim_start_matches("GPU").parse().unwrap();
            for (col, cell) in m.labels.iter().zip(cells) {
                let b: usize = col.trim_start_matches("GPU").parse().unwrap();
                if a == b {
                    continue;
                }
                let want = match cell.as_str() {
                    "NODE" => PathType::Phb,
                    other => PathType::from_name(other).unwrap(),
                };
                assert_eq!(p.pair(a, b).unwrap().path, want, "GPU{a}-GPU{b}");
            }
        }
    }
}

/// NVIDIA/nccl-tests#287: 2x RTX 5090 (compute capability 12.0) on two NUMA
/// nodes of an AMD Genoa host, NCCL 2.25.1: the whole INFO run is quoted.
/// The two GPUs are SYS apart at AMD's 16 GB/s, and Blackwell's per-channel
/// speeds stop at 19 GB/s (2.25) or 18 GB/s (2.27 on): no ring or tree
/// fits, and NCCL falls back to one channel in simple order. The replica
/// runs as 2.27.
#[test]
fn rtx5090_2x_genoa_falls_back_to_simple_order() {
    let log = read_log("rtx5090-2x-genoa.log");
    assert_eq!(
        log.version.as_ref().map(|v| (v.minor, v.patch)),
        Some((25, 1))
    );
    let mut env = NcclEnv::default();
    env.host.cpu = Some(CpuArch::Amd);
    env.host.gpu_p2p = GpuP2p::NotSupported; // "CANNOT Access Peer"
    let p = run("rtx5090-2x-genoa.topo.toml", &env, NcclVersion::V2_27);

    // "Could not find a path for pattern 4 / 1, falling back to simple order".
    let mut fallbacks = log.search_fallbacks.clone();
    fallbacks.sort();
    fallbacks.dedup();
    assert_eq!(fallbacks, vec![1, 4]);
    assert!(p.ring.fallback && p.tree.fallback);
    // Channels, rings, trees, counts.
    assert_eq!(log.rings.len(), 2);
    for r in &log.rings {
        assert_eq!(r.n_channels, p.channels.n_channels);
        assert_eq!(r.order, p.channels.rings[r.channel]);
    }
    for t in &log.trees {
        for (c, (downs, up)) in t.channels.iter().enumerate() {
            let mine = p.channels.trees[c][t.rank];
            assert_eq!(
                (mine.down.into_iter().collect::<Vec<_>>(), mine.up),
                (downs.clone(), *up)
            );
        }
    }
    let counts = log.channel_counts.unwrap();
    assert_eq!(
        (counts.coll, counts.p2p, counts.p2p_per_peer),
        (
            p.channels.n_channels,
            p.channels.p2p_channels,
            p.channels.p2p_channels_per_peer
        )
    );
    assert_eq!(log.thread_thresholds, Some(p.model.thread_thresholds()));
    // SHM both ways: AMD with two GPUs allows P2P up to SYS, the driver does not.
    assert_eq!(check_transports(&log, &p), 4);
    assert_eq!(p.p2p.level, PathType::Sys);
    assert_eq!(
        p.pair(0, 1).unwrap().verdict,
        contend_nccl::P2pVerdict::DriverRefuses
    );
}
