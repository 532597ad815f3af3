//! `contend topo import` on real, public outputs (tests/fixtures/real, see
//! its README for each file's source): the figures the files state come out
//! in the topology, what they cannot state comes out as warnings, several
//! inputs of one machine merge, and cut or foreign inputs are errors that
//! say where.

use contend_topo::import::{ImportedTopology, import_topology};
use contend_topo::{LinkKind, NodeKind, Topology, parse_topology};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn input(rel: &str) -> (String, String) {
    let p = root().join(rel);
    (
        rel.to_string(),
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
}

fn import(rels: &[&str]) -> ImportedTopology {
    let inputs: Vec<_> = rels.iter().map(|r| input(r)).collect();
    import_topology(&inputs, None).unwrap_or_else(|e| panic!("{rels:?}: {e}"))
}

const ASUS: &str = "tests/fixtures/real/machines/stelline-asus-esc8000a-e12.md";
const PUGET: &str = "tests/fixtures/real/machines/stelline-puget-wrx90.md";

/// (id of the far end, gen, width, mps, mrrs) of each GPU's PCIe link.
fn gpu_links(t: &Topology) -> Vec<(String, u8, u8, u64, u64)> {
    t.gpus()
        .iter()
        .map(|&g| {
            let (l, other) = t
                .neighbours(g)
                .into_iter()
                .find(|(l, _)| matches!(t.link(*l).kind, LinkKind::Pcie(_)))
                .unwrap();
            let LinkKind::Pcie(p) = &t.link(l).kind else {
                unreachable!()
            };
            (
                t.node(other).id.0.clone(),
                p.generation.0,
                p.width,
                p.mps.0,
                p.mrrs.0,
            )
        })
        .collect()
}

fn sockets(t: &Topology) -> Vec<(String, u32)> {
    t.nodes()
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::RootComplex(rc) => Some((n.id.0.clone(), rc.socket)),
            _ => None,
        })
        .collect()
}

fn fields(t: &ImportedTopology) -> Vec<String> {
    t.warnings.iter().map(|w| w.field.clone()).collect()
}

#[test]
fn a_pcie_box_from_its_published_report() {
    // ASUS ESC8000A-E12, 2x EPYC (Genoa), 4x RTX 6000 Ada each on its own
    // root port of a different host bridge: lspci -tv, lspci -vvv per GPU,
    // nvidia-smi, nvidia-smi topo -m (NODE within a socket, SYS across),
    // numactl (2 nodes) and p2pBandwidthLatencyTest in one page.
    let t = import(&[ASUS]);
    let topo = &t.topology;
    assert_eq!(topo.gpus().len(), 4);
    assert_eq!(
        gpu_links(topo),
        vec![
            ("rc00".into(), 4, 16, 256, 512),
            ("rc40".into(), 4, 16, 256, 512),
            ("rcc0".into(), 4, 16, 256, 512),
            ("rce0".into(), 4, 16, 256, 512),
        ],
        "LnkCap Gen4 x16 (LnkSta 2.5GT/s downgraded while idle), DevCtl MaxPayload 256, MaxReadReq 512"
    );
    assert_eq!(
        sockets(topo),
        vec![
            ("rc00".into(), 0),
            ("rc40".into(), 0),
            ("rcc0".into(), 1),
            ("rce0".into(), 1)
        ]
    );
    for &g in &topo.gpus() {
        let NodeKind::Gpu(gpu) = &topo.node(g).kind else {
            unreachable!()
        };
        assert_eq!(
            (gpu.model.as_str(), gpu.sms, gpu.tags_10bit),
            ("NVIDIA RTX 6000 Ada Generation", 142, false)
        );
        assert_eq!(gpu.memory_bandwidth.as_gbps(), 960.0);
    }
    let cpu = topo.links().iter().find_map(|l| match &l.kind {
        LinkKind::Cpu { protocol, .. } => Some(protocol.clone()),
        _ => None,
    });
    assert_eq!(
        cpu.as_deref(),
        Some("xGMI"),
        "AMD host bridges in lspci -tv"
    );
    // what no input says: the memory and CPU link rates; topo -m agrees
    // with the tree, so no path warning
    assert_eq!(
        fields(&t),
        vec![
            "`bandwidth_gbps` of link mem0–iod0, link mem1–iod1",
            "`bandwidth_gbps` of link iod0–iod1"
        ],
        "{:#?}",
        t.warnings
    );
    let src = topo.source.as_deref().unwrap();
    assert!(
        src.contains(ASUS) && src.contains("lspci -tv") && src.contains("nvidia-smi topo -m"),
        "{src}"
    );
    assert_eq!(
        topo.platform.as_deref(),
        Some("NVIDIA driver 575.51.03, CUDA 12.9 (nvidia-smi)")
    );
    // the written text is a topology that reads back the same
    let back = parse_topology("back.toml", &t.to_toml()).unwrap();
    assert_eq!((back.nodes(), back.links()), (topo.nodes(), topo.links()));
}

#[test]
fn the_inputs_of_one_machine_merge() {
    // The same page cut into the files a user would have: lspci -tv,
    // lspci -vvv, nvidia-smi topo -m.
    let (_, text) = input(ASUS);
    let section = |from: &str, to: &str| -> String {
        let a = text.find(from).unwrap();
        let b = a + text[a..].find(to).unwrap();
        text[a..b].to_string()
    };
    let tree = section("$ sonata@coyote2:~$ lspci -tv", "## NUMA Topology");
    let blocks = section("## PCIe Devices Details", "## NVIDIA SMI Debug");
    let smi = section(
        "$ sonata@coyote2:~$ nvidia-smi topo -m",
        "## NVIDIA Transfers",
    );
    let only_tree = import_topology(&[("tree.txt".into(), tree.clone())], None).unwrap();
    assert!(
        fields(&only_tree)
            .iter()
            .any(|f| f.contains("`mps`, `mrrs`")),
        "{:#?}",
        only_tree.warnings
    );
    assert!(
        fields(&only_tree).iter().any(|f| f.contains("`socket`")),
        "no NUMA node in a bare tree"
    );
    let merged = import_topology(
        &[
            ("tree.txt".into(), tree),
            ("lspci-vvv.txt".into(), blocks),
            ("topo-m.txt".into(), smi),
        ],
        None,
    )
    .unwrap();
    let whole = import(&[ASUS]);
    assert_eq!(gpu_links(&merged.topology), gpu_links(&whole.topology));
    assert_eq!(sockets(&merged.topology), sockets(&whole.topology));
    assert_eq!(fields(&merged), fields(&whole), "{:#?}", merged.warnings);
    assert_eq!(merged.found.len(), 3);
    let src = merged.topology.source.clone().unwrap();
    for f in ["tree.txt", "lspci-vvv.txt", "topo-m.txt"] {
        assert!(src.contains(f), "{src}");
    }
}

#[test]
fn two_gpus_under_one_host_bridge() {
    // Puget WRX90 (Threadripper PRO, one NUMA node): both RTX 6000 Ada on
    // root ports of host bridge c0 — topo -m says PHB.
    let t = import(&[PUGET]);
    assert_eq!(
        gpu_links(&t.topology)
            .iter()
            .map(|l| l.0.as_str())
            .collect::<Vec<_>>(),
        ["rcc0", "rcc0"]
    );
    assert_eq!(sockets(&t.topology), vec![("rcc0".into(), 0)]);
    assert_eq!(
        fields(&t),
        vec!["`bandwidth_gbps` of link mem0–rcc0"],
        "{:#?}",
        t.warnings
    );
}

#[test]
fn nvidia_smi_matrices_alone() {
    // club-3090#46: 5 GPUs, GPU0 alone on NUMA node 1, two PHB pairs NODE
    // to each other on node 0.
    let t = import(&["tests/fixtures/real/nvidia-smi/club-3090-46-5gpu-2numa.md"]);
    let l = gpu_links(&t.topology);
    assert_eq!(l[0].0, "rc_numa1");
    assert_eq!(
        (l[1].0.as_str(), l[2].0.as_str()),
        ("rc_numa0_0", "rc_numa0_0")
    );
    assert_eq!(
        (l[3].0.as_str(), l[4].0.as_str()),
        ("rc_numa0_1", "rc_numa0_1")
    );
    let f = fields(&t);
    for want in [
        "`model` of gpu0",
        "`sms` of gpu0",
        "`gen`, `width` of link gpu0–rc_numa1",
        "`PCIe tree`",
    ] {
        assert!(f.iter().any(|x| x.contains(want)), "{want}: {f:#?}");
    }
    // club-3090#1229: 2x RTX 5090, PHB, and topo -p2p rw says GNS
    let t = import(&["tests/fixtures/real/nvidia-smi/club-3090-1229-2x5090-topo-p2p.md"]);
    assert_eq!(t.topology.gpus().len(), 2);
    let p2p = t
        .warnings
        .iter()
        .find(|w| w.field.starts_with("`[p2p]`"))
        .unwrap();
    assert!(
        p2p.message.contains("-p2p rw")
            && p2p.message.contains("GNS (GPU not supported) for 2 pairs"),
        "{p2p}"
    );
    // and the topology says it: the pair has no P2P, from that paste
    let g = t.topology.gpus();
    assert_eq!(t.topology.p2p(), &contend_topo::P2p::None);
    let why = t.topology.no_p2p_summary(&g).unwrap();
    assert!(why.contains("-p2p rw"), "{why}");
    assert!(t.to_toml().contains("[p2p]\naccess = \"none\""));
}

#[test]
fn a_cut_matrix_in_a_real_log_is_located() {
    // NVIDIA/nccl#1817 as the existing fixture quotes it: four of eight rows.
    let e = import_topology(
        &[input("tests/fixtures/nccl-logs/l20-8x-2socket.log")],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("tests/fixtures/nccl-logs/l20-8x-2socket.log:55:1: the nvidia-smi matrix at line 50 lists 8 GPUs but has 4 rows"), "{e}");
}

#[test]
fn nccl_topology_dumps() {
    // NVIDIA/nccl#2397: two hosts, each 2x A100 80GB PCIe (device 0x20b5,
    // sm 80) on NUMA nodes 0 and 1 of an Ice Lake (model 106) pair.
    let a = "tests/fixtures/real/nccl-topo/nccl-2397-host-10.153.235.11-2xa100.xml";
    let b = "tests/fixtures/real/nccl-topo/nccl-2397-host-10.153.235.13-2xa100.xml";
    for f in [a, b] {
        let t = import(&[f]);
        assert_eq!(
            gpu_links(&t.topology),
            vec![
                ("rc_numa0".into(), 4, 16, 256, 512),
                ("rc_numa1".into(), 4, 16, 256, 512)
            ]
        );
        let NodeKind::Gpu(g) = &t.topology.node(t.topology.gpus()[0]).kind else {
            unreachable!()
        };
        assert_eq!(
            (g.model.as_str(), g.sms, g.memory_bandwidth.as_gbps()),
            ("NVIDIA A100 PCIe 80GB", 108, 1935.0)
        );
        let f = fields(&t);
        assert!(
            f.iter()
                .any(|x| x.contains("root complexes under NCCL's CPUs")),
            "{f:#?}"
        );
        assert!(f.iter().any(|x| x.contains("`mps`, `mrrs`")), "{f:#?}");
        assert!(t.to_toml().contains("protocol = \"UPI\""));
    }
    let e = import_topology(&[input(a), input(b)], None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the inputs come from 2 machines") && e.contains("0xceea43a840550885"),
        "{e}"
    );
    // nccl-tests#256: the bare-metal dump as pasted, cut inside a <nic>
    let e = import_topology(
        &[input(
            "tests/fixtures/real/nccl-topo/nccl-tests-256-h200-baremetal-cut.xml",
        )],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "baremetal-cut.xml:54:1: NCCL topology XML ends inside <nic> (opened at line 53)"
        ),
        "{e}"
    );
}

#[test]
fn a_vm_tree_names_gpus_by_device_id() {
    // nccl-tests#256: the VM's lspci -tvv, 8 GPUs as "NVIDIA Corporation
    // Device 2335" (H200 SXM) each on its own root port of one host bridge.
    let t = import(&["tests/fixtures/real/lspci/nccl-tests-256-h200-vm-tvv.txt"]);
    let l = gpu_links(&t.topology);
    assert_eq!(l.len(), 8);
    assert!(l.iter().all(|x| x.0 == "rc00" && x.1 == 5), "{l:?}");
    let NodeKind::Gpu(g) = &t.topology.node(t.topology.gpus()[0]).kind else {
        unreachable!()
    };
    assert_eq!((g.model.as_str(), g.sms), ("H200 SXM 141GB", 132));
    assert!(
        fields(&t)
            .iter()
            .any(|f| f.contains("`gen`, `width` of link gpu0–rc00"))
    );
}

#[test]
fn inputs_of_two_machines_are_refused() {
    let e = import_topology(
        &[
            input(ASUS),
            input("tests/fixtures/real/nvidia-smi/club-3090-1229-2x5090-topo-p2p.md"),
        ],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("club-3090-1229-2x5090-topo-p2p.md:4:1: this nvidia-smi topo -m (2 GPUs) differs from the one at tests/fixtures/real/machines/stelline-asus-esc8000a-e12.md:"), "{e}");
    // a matrix of another GPU count than the PCI inputs name
    let e = import_topology(
        &[
            input(PUGET).clone(),
            input("tests/fixtures/real/nvidia-smi/club-3090-46-5gpu-2numa.md"),
        ],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("differs from the one at"), "{e}");
    let (_, tree) = input(ASUS);
    let tree =
        tree[tree.find("lspci -tv").unwrap()..tree.find("## NUMA Topology").unwrap()].to_string();
    let e = import_topology(
        &[
            ("tree.txt".into(), tree),
            input("tests/fixtures/real/nvidia-smi/club-3090-46-5gpu-2numa.md"),
        ],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("the inputs disagree on the GPUs: nvidia-smi topo -m")
            && e.contains("has 5, the PCI inputs name 4"),
        "{e}"
    );
}

/// The GPU model: from `nvidia-smi -L`, from `nvidia-smi -q`, or from the
/// user (`--gpu-model`) over what the inputs say; a `topo -m` paste alone
/// names none.
#[test]
fn the_gpu_model_from_smi_lists_queries_or_the_user() {
    use contend_topo::NodeKind;
    use contend_topo::import::{ImportOptions, import_topology_with};
    let (file, text) = input("tests/fixtures/box/rtx5090-8x-2socket.txt");
    let model = |t: &ImportedTopology| {
        let g = t.topology.gpus()[0];
        match &t.topology.node(g).kind {
            NodeKind::Gpu(s) => (s.model.clone(), s.sms),
            _ => unreachable!(),
        }
    };
    // -L names it
    let t = import_topology(&[(file.clone(), text.clone())], None).unwrap();
    assert_eq!(model(&t), ("NVIDIA GeForce RTX 5090".into(), 170));
    // topo -m alone: a generic GPU, and a warning names the field
    let matrix_only: String = text
        .lines()
        .filter(|l| !l.starts_with("GPU ") || l.starts_with("GPU0"))
        .collect::<Vec<_>>()
        .join("\n");
    let t = import_topology(&[(file.clone(), matrix_only.clone())], None).unwrap();
    assert_eq!(model(&t).0, "GPU");
    // the user's model over it
    let opts = ImportOptions {
        gpu_model: Some("RTX 5090"),
        ..Default::default()
    };
    let t = import_topology_with(&[(file.clone(), matrix_only)], &opts).unwrap();
    assert_eq!(model(&t), ("RTX 5090".into(), 170));
    // and over a different model the inputs name, with a warning
    let opts = ImportOptions {
        gpu_model: Some("RTX 4090"),
        ..Default::default()
    };
    let t = import_topology_with(&[(file.clone(), text)], &opts).unwrap();
    assert_eq!(model(&t), ("RTX 4090".into(), 128));
    assert!(
        t.warnings
            .iter()
            .any(|w| w.message.contains("--gpu-model says RTX 4090")),
        "{:?}",
        t.warnings
    );
    // nvidia-smi -q: a section per GPU in index order, its Product Name
    let q = "==============NVSMI LOG==============\n\nDriver Version                            : 575.57.08\n\nAttached GPUs                             : 2\nGPU 00000000:01:00.0\n    Product Name                          : NVIDIA GeForce RTX 5090\n    Product Brand                         : GeForce\nGPU 00000000:81:00.0\n    Product Name                          : NVIDIA GeForce RTX 5090\n";
    let t = import_topology(&[("q.txt".into(), q.into())], None).unwrap();
    assert_eq!(t.topology.gpus().len(), 2);
    assert_eq!(model(&t).0, "NVIDIA GeForce RTX 5090");
    assert!(
        t.found[0]
            .what
            .iter()
            .any(|w| w == "nvidia-smi -q (2 GPUs)"),
        "{:?}",
        t.found
    );
}
