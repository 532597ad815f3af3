//! NCCL's own picture of the machine, built from a contend topology as
//! NCCL builds it from sysfs: replicates `ncclTopoGetXmlFromSys` /
//! `ncclTopoGetPciNode` (`src/graph/xml.cc`) and `ncclTopoAddCpu`,
//! `ncclTopoAddPci`, `ncclTopoConnectNodes`, `ncclTopoConnectCpus`,
//! `ncclTopoSortSystem` (`src/graph/topo.cc`), with the bandwidth constants
//! of `src/graph/topo.h` — all identical at v2.27.7-1, v2.28.9-1, v2.29.7-1.
//!
//! What NCCL sees:
//! - a CPU node per NUMA node that holds a rank's GPU (here: per socket,
//!   the NPS1 default; sockets without a rank's GPU are absent);
//! - a PCI node per PCIe switch (NCCL walks sysfs up two levels at a time,
//!   skipping the downstream port, so one switch is one node); a GPU
//!   directly on a root port hangs from its CPU; every host bridge of a
//!   NUMA node is that one CPU node;
//! - PCI links of `width × rate / 80` GB/s with rate 15, 30, 60, 120, 240,
//!   480 for Gen1–Gen6 (`kvDictPciGen`): Gen4 x16 24 GB/s, Gen5 x16 48;
//! - a SYS link between every pair of CPUs, at the inter-CPU figure for
//!   the CPU (`inter_cpu_bw`);
//! - NVLinks at `links × per-link figure` (`nvlink_bw`).
//!
//! NCCL keeps the children of a PCI node in PCI bus-ID order; a contend
//! topology has no bus IDs, so the file order of GPUs stands for it (a
//! switch sorts by the first GPU below it).

use crate::env::{CpuArch, HostFacts};
use crate::error::NcclError;
use crate::paths::LOC_BW;
use contend_topo::{LinkKind, NodeIdx, NodeKind as TopoKind, Topology};

/// NCCL's link types that occur inside one node (`LINK_*`,
/// `src/graph/topo.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkType {
    // LOC, C2C and NET links exist in NCCL's systems (NICs, Grace C2C) but
    // never come from a contend topology.
    #[allow(dead_code)]
    Loc,
    Nvl,
    #[allow(dead_code)]
    C2c,
    Pci,
    Sys,
    #[allow(dead_code)]
    Net,
}

impl LinkType {
    pub fn name(self) -> &'static str {
        match self {
            LinkType::Loc => "LOC",
            LinkType::Nvl => "NVL",
            LinkType::C2c => "C2C",
            LinkType::Pci => "PCI",
            LinkType::Sys => "SYS",
            LinkType::Net => "NET",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum NodeKind {
    Gpu { rank: usize, cc: u32, topo: NodeIdx },
    Pci { topo: NodeIdx },
    Cpu { socket: u32 },
}

#[derive(Clone, Debug)]
pub(crate) struct SysNode {
    pub kind: NodeKind,
    /// Outgoing links in NCCL's order (bandwidth descending as connected,
    /// then the PCI uplink moved last by `ncclTopoSortSystem`).
    pub links: Vec<usize>,
}

#[derive(Clone, Debug)]
pub(crate) struct SysLink {
    pub to: usize,
    pub ltype: LinkType,
    /// GB/s, NCCL's `float`.
    pub bw: f32,
}

/// NCCL's system graph for one communicator.
#[derive(Clone, Debug)]
pub(crate) struct System {
    pub nodes: Vec<SysNode>,
    pub links: Vec<SysLink>,
    /// NCCL's GPU index → node (the order of `system->nodes[GPU]`).
    pub gpus: Vec<usize>,
    /// NCCL's CPU index → node.
    pub cpus: Vec<usize>,
    pub cpu: CpuArch,
    /// Ranks whose GPUs have no P2P between them, as the topology says
    /// (`[p2p]`, or a GeForce model under the stock driver): what NVML's
    /// P2P status reports there (lower rank first).
    pub no_p2p: std::collections::BTreeSet<(usize, usize)>,
}

impl System {
    pub fn rank_of_gpu(&self, g: usize) -> usize {
        match self.nodes[self.gpus[g]].kind {
            NodeKind::Gpu { rank, .. } => rank,
            _ => unreachable!("gpus holds GPU nodes"),
        }
    }
    pub fn gpu_of_rank(&self, rank: usize) -> usize {
        (0..self.gpus.len())
            .find(|&g| self.rank_of_gpu(g) == rank)
            .expect("every rank has a GPU")
    }
    /// Whether NCCL GPUs `g1` and `g2` have no P2P (the topology's fact).
    pub fn no_p2p(&self, g1: usize, g2: usize) -> bool {
        let (a, b) = (self.rank_of_gpu(g1), self.rank_of_gpu(g2));
        self.no_p2p.contains(&(a.min(b), a.max(b)))
    }
    pub fn cc_of_gpu(&self, g: usize) -> u32 {
        match self.nodes[self.gpus[g]].kind {
            NodeKind::Gpu { cc, .. } => cc,
            _ => unreachable!("gpus holds GPU nodes"),
        }
    }

    /// Connects `a` to `b`, adding bandwidth to an existing link of that
    /// type, and keeps `a`'s links in descending bandwidth, a new link
    /// placed after those at least as fast (`ncclTopoConnectNodes`).
    fn connect(&mut self, a: usize, b: usize, ltype: LinkType, bw: f32) {
        let pos = self.nodes[a]
            .links
            .iter()
            .position(|&l| self.links[l].to == b && self.links[l].ltype == ltype);
        let mut pos = match pos {
            Some(p) => {
                let l = self.nodes[a].links[p];
                self.links[l].bw += bw;
                p
            }
            None => {
                self.links.push(SysLink { to: b, ltype, bw });
                self.nodes[a].links.push(self.links.len() - 1);
                self.nodes[a].links.len() - 1
            }
        };
        while pos > 0 {
            let (prev, cur) = (self.nodes[a].links[pos - 1], self.nodes[a].links[pos]);
            if self.links[prev].bw >= self.links[cur].bw {
                break;
            }
            self.nodes[a].links.swap(pos - 1, pos);
            pos -= 1;
        }
    }

    /// `ncclTopoSort`: the link back up the PCI tree goes last, recursively.
    fn sort_pci(&mut self, node: usize, up: Option<usize>) {
        if let Some(up) = up
            && let Some(p) = self.nodes[node]
                .links
                .iter()
                .position(|&l| self.links[l].to == up)
        {
            let l = self.nodes[node].links.remove(p);
            self.nodes[node].links.push(l);
        }
        let links = self.nodes[node].links.clone();
        for l in links {
            let (to, t) = (self.links[l].to, self.links[l].ltype);
            if t == LinkType::Pci && Some(to) != up {
                self.sort_pci(to, Some(node));
            }
        }
    }
}

/// PCI link bandwidth as NCCL computes it: `width × rate / 80` GB/s,
/// rate in units of 100 Mb/s per lane from `kvDictPciGen`
/// (`src/graph/topo.cc` v2.28.9-1): 2.5 GT/s 15, 5 30, 8 60, 16 120,
/// 32 240, 64 480. Gen4 x16: 24 GB/s; Gen5 x16: 48 GB/s.
pub(crate) fn pci_bw(generation: u8, width: u8) -> f32 {
    let rate: u32 = match generation {
        1 => 15,
        2 => 30,
        3 => 60,
        4 => 120,
        5 => 240,
        _ => 480,
    };
    (f64::from(u32::from(width) * rate) / 80.0) as f32
}

/// Inter-CPU bandwidth by CPU (`ncclTopoGetInterCpuBw`,
/// `src/graph/topo.cc`; constants `src/graph/topo.h`, v2.27.7-1 …
/// v2.29.7-1): Intel `ERP_QPI_BW` 40, `SRP_QPI_BW` 22, `SKL_QPI_BW` 10,
/// `BDW_QPI_BW` 6; `AMD_BW` 16; Zhaoxin `YONGFENG_ZPI_BW` 9, `ZPI_BW` 6;
/// `P9_BW` 32; `ARM_BW` 6 GB/s.
pub(crate) fn inter_cpu_bw(cpu: CpuArch) -> f32 {
    match cpu {
        CpuArch::IntelEmeraldRapids => 40.0,
        CpuArch::IntelSapphireRapids => 22.0,
        CpuArch::IntelSkylake => 10.0,
        CpuArch::IntelBroadwell => 6.0,
        CpuArch::Amd => 16.0,
        CpuArch::ZhaoxinYongfeng => 9.0,
        CpuArch::Zhaoxin => 6.0,
        CpuArch::Power => 32.0,
        CpuArch::Arm => 6.0,
    }
}

/// NCCL's bandwidth per NVLink by compute capability (`ncclTopoNVLinkBw`,
/// `src/graph/topo.h` v2.28.9-1): SM100+ 40.1, SM90 20.6, SM86 12.0,
/// SM80/SM70 20.0, SM60 18.0 GB/s.
pub(crate) fn nvlink_bw(cc: u32) -> f32 {
    match cc {
        c if c >= 100 => 40.1,
        c if c >= 90 => 20.6,
        86 => 12.0,
        c if c >= 70 => 20.0,
        c if c >= 60 => 18.0,
        _ => 20.0,
    }
}

/// The compute capability (×10) of a GPU model name, for the models the
/// shipped topologies and the public logs name. `None`: unknown, to be
/// given in [`HostFacts::compute_capability`].
pub fn compute_capability_of(model: &str) -> Option<u32> {
    let m = model.to_ascii_uppercase();
    // Most specific first: "A100" before "A10", "H200" before "H20".
    const TABLE: [(&str, u32); 29] = [
        ("GB300", 103),
        ("B300", 103),
        ("GB200", 100),
        ("B200", 100),
        ("B100", 100),
        ("RTX PRO 6000", 120),
        ("RTX PRO", 120),
        ("RTX 50", 120),
        ("5090", 120),
        ("5080", 120),
        ("GH200", 90),
        ("H200", 90),
        ("H100", 90),
        ("H800", 90),
        ("H20", 90),
        ("A100", 80),
        ("A800", 80),
        ("A30", 80),
        ("L40", 89),
        ("L20", 89),
        ("L4", 89),
        ("4090", 89),
        ("RTX 6000 ADA", 89),
        ("RTX 40", 89),
        ("A6000", 86),
        ("3090", 86),
        ("A40", 86),
        ("A10", 86),
        ("V100", 70),
    ];
    TABLE
        .iter()
        .find(|(k, _)| m.contains(k))
        .map(|(_, c)| *c)
        .or_else(|| m.contains("T4").then_some(75))
}

/// One entry of NCCL's XML topology tree while it is being built.
struct XNode {
    what: XWhat,
    /// The bus-ID stand-in children are sorted by.
    key: usize,
    children: Vec<usize>,
}

enum XWhat {
    Cpu(u32),
    Switch(NodeIdx),
    Gpu(usize),
}

/// The PCIe ancestors of a node, nearest first, ending at its root complex.
fn pcie_chain(topo: &Topology, n: NodeIdx) -> Option<Vec<NodeIdx>> {
    let mut chain = Vec::new();
    let mut cur = n;
    for _ in 0..topo.nodes().len() {
        let up = topo
            .links()
            .iter()
            .find(|l| l.a == cur && matches!(l.kind, LinkKind::Pcie(_)))?;
        chain.push(up.b);
        if matches!(topo.node(up.b).kind, TopoKind::RootComplex(_)) {
            return Some(chain);
        }
        cur = up.b;
    }
    None
}

fn uplink_bw(topo: &Topology, n: NodeIdx) -> f32 {
    topo.links()
        .iter()
        .find(|l| l.a == n && matches!(l.kind, LinkKind::Pcie(_)))
        .and_then(|l| match &l.kind {
            LinkKind::Pcie(p) => Some(pci_bw(p.generation.0, p.width)),
            _ => None,
        })
        .unwrap_or(LOC_BW)
}

/// Builds NCCL's system for `ranks` (GPUs in rank order).
pub(crate) fn build(
    topo: &Topology,
    ranks: &[NodeIdx],
    host: &HostFacts,
    cpu: CpuArch,
) -> Result<System, NcclError> {
    let file_pos = |n: NodeIdx| {
        topo.gpus()
            .iter()
            .position(|g| *g == n)
            .unwrap_or(usize::MAX)
    };
    // Bus-ID stand-in of a switch: the first GPU below it in file order.
    let mut switch_key: std::collections::BTreeMap<NodeIdx, usize> = Default::default();
    for g in topo.gpus() {
        if let Some(chain) = pcie_chain(topo, g) {
            for s in chain {
                let e = switch_key.entry(s).or_insert(usize::MAX);
                *e = (*e).min(file_pos(g));
            }
        }
    }
    let mut ccs = Vec::with_capacity(ranks.len());
    for &g in ranks {
        let TopoKind::Gpu(spec) = &topo.node(g).kind else {
            unreachable!("plan checks that ranks are GPUs");
        };
        let cc = match host.compute_capability {
            Some(c) => c,
            None => compute_capability_of(&spec.model).ok_or_else(|| {
                NcclError::UnknownComputeCapability {
                    gpu: topo.node(g).id.to_string(),
                    model: spec.model.clone(),
                }
            })?,
        };
        ccs.push(cc);
    }

    // The XML tree: CPUs in the order ranks reach them, children by bus ID.
    let mut xml: Vec<XNode> = Vec::new();
    let mut cpus_x: Vec<usize> = Vec::new();
    for (rank, &g) in ranks.iter().enumerate() {
        let chain = pcie_chain(topo, g).ok_or_else(|| NcclError::NoPciePath {
            node: topo.node(g).id.0.clone(),
        })?;
        let rc = *chain.last().expect("chain ends at a root complex");
        let socket = topo.socket_of(rc).unwrap_or(0);
        let cpu_x = match cpus_x
            .iter()
            .copied()
            .find(|&c| matches!(xml[c].what, XWhat::Cpu(s) if s == socket))
        {
            Some(c) => c,
            None => {
                xml.push(XNode {
                    what: XWhat::Cpu(socket),
                    key: 0,
                    children: vec![],
                });
                cpus_x.push(xml.len() - 1);
                xml.len() - 1
            }
        };
        let mut parent = cpu_x;
        let switches = &chain[..chain.len() - 1];
        for &s in switches.iter().rev() {
            let existing = xml[parent]
                .children
                .iter()
                .copied()
                .find(|&c| matches!(xml[c].what, XWhat::Switch(n) if n == s));
            parent = match existing {
                Some(c) => c,
                None => {
                    xml.push(XNode {
                        what: XWhat::Switch(s),
                        key: switch_key.get(&s).copied().unwrap_or(usize::MAX),
                        children: vec![],
                    });
                    let id = xml.len() - 1;
                    insert_sorted(&mut xml, parent, id);
                    id
                }
            };
        }
        xml.push(XNode {
            what: XWhat::Gpu(rank),
            key: file_pos(g),
            children: vec![],
        });
        let id = xml.len() - 1;
        insert_sorted(&mut xml, parent, id);
    }

    let mut sys = System {
        nodes: Vec::new(),
        links: Vec::new(),
        gpus: Vec::new(),
        cpus: Vec::new(),
        cpu,
        no_p2p: topo
            .pairs_without_p2p(ranks)
            .into_iter()
            .map(|p| {
                let r = |g| ranks.iter().position(|x| *x == g).expect("a rank's GPU");
                (r(p.a), r(p.b))
            })
            .collect(),
    };
    for &cx in &cpus_x {
        let XWhat::Cpu(socket) = xml[cx].what else {
            unreachable!()
        };
        sys.nodes.push(SysNode {
            kind: NodeKind::Cpu { socket },
            links: vec![],
        });
        let cpu_node = sys.nodes.len() - 1;
        sys.cpus.push(cpu_node);
        add_children(topo, ranks, &ccs, &xml, cx, cpu_node, &mut sys);
    }
    // NVLinks, each GPU its own direction (`ncclTopoAddNvLinks`).
    for g in 0..sys.gpus.len() {
        let node = sys.gpus[g];
        let NodeKind::Gpu { topo: tn, cc, .. } = sys.nodes[node].kind else {
            unreachable!()
        };
        for (l, other) in topo.neighbours(tn) {
            let LinkKind::Nvlink { bandwidth, .. } = &topo.link(l).kind else {
                continue;
            };
            let Some(peer) = (0..sys.gpus.len()).find(|&p| {
                matches!(sys.nodes[sys.gpus[p]].kind, NodeKind::Gpu { topo: t, .. } if t == other)
            }) else {
                continue;
            };
            let per_link = nvlink_bw(cc);
            let count = host
                .nvlink_links
                .unwrap_or_else(|| ((bandwidth.as_gbps() as f32 / per_link).round() as u32).max(1));
            let to = sys.gpus[peer];
            sys.connect(node, to, LinkType::Nvl, per_link * count as f32);
        }
    }
    // Every CPU to every other (`ncclTopoConnectCpus`).
    let bw = inter_cpu_bw(cpu);
    for &a in &sys.cpus.clone() {
        for &b in &sys.cpus.clone() {
            if a != b {
                sys.connect(a, b, LinkType::Sys, bw);
            }
        }
    }
    for c in sys.cpus.clone() {
        sys.sort_pci(c, None);
    }
    Ok(sys)
}

fn insert_sorted(xml: &mut [XNode], parent: usize, child: usize) {
    let key = xml[child].key;
    let pos = xml[parent]
        .children
        .iter()
        .position(|&c| key < xml[c].key)
        .unwrap_or(xml[parent].children.len());
    xml[parent].children.insert(pos, child);
}

/// `ncclTopoAddPci`: a switch's children first, then its own link up; a
/// GPU's link up (device first, then the parent's link down).
fn add_children(
    topo: &Topology,
    ranks: &[NodeIdx],
    ccs: &[u32],
    xml: &[XNode],
    x: usize,
    parent: usize,
    sys: &mut System,
) {
    for &c in &xml[x].children {
        match xml[c].what {
            XWhat::Gpu(rank) => {
                sys.nodes.push(SysNode {
                    kind: NodeKind::Gpu {
                        rank,
                        cc: ccs[rank],
                        topo: ranks[rank],
                    },
                    links: vec![],
                });
                let n = sys.nodes.len() - 1;
                sys.gpus.push(n);
                let bw = uplink_bw(topo, ranks[rank]);
                sys.connect(n, parent, LinkType::Pci, bw);
                sys.connect(parent, n, LinkType::Pci, bw);
            }
            XWhat::Switch(s) => {
                sys.nodes.push(SysNode {
                    kind: NodeKind::Pci { topo: s },
                    links: vec![],
                });
                let n = sys.nodes.len() - 1;
                add_children(topo, ranks, ccs, xml, c, n, sys);
                let bw = uplink_bw(topo, s);
                sys.connect(n, parent, LinkType::Pci, bw);
                sys.connect(parent, n, LinkType::Pci, bw);
            }
            XWhat::Cpu(_) => unreachable!("CPUs are roots"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_bandwidth_follows_nccl_rates() {
        assert_eq!(pci_bw(3, 16), 12.0);
        assert_eq!(pci_bw(4, 16), 24.0);
        assert_eq!(pci_bw(5, 16), 48.0);
        assert_eq!(pci_bw(5, 8), 24.0);
        assert_eq!(pci_bw(4, 4), 6.0);
    }

    #[test]
    fn compute_capabilities_of_named_models() {
        assert_eq!(compute_capability_of("RTX PRO 6000 Blackwell"), Some(120));
        assert_eq!(compute_capability_of("H200"), Some(90));
        assert_eq!(compute_capability_of("NVIDIA GeForce RTX 4090"), Some(89));
        assert_eq!(compute_capability_of("L40S"), Some(89));
        assert_eq!(compute_capability_of("A100-SXM4-80GB"), Some(80));
        assert_eq!(compute_capability_of("A10G"), Some(86));
        assert_eq!(compute_capability_of("Tesla T4"), Some(75));
        assert_eq!(compute_capability_of("GPU"), None);
    }
}
