//! The validated topology: nodes, links, routing.

mod check;
mod peer_access;

pub use peer_access::{NoP2p, P2p, P2pSpec, PairWithoutP2p};

use crate::error::{Location, TopoError, TopoErrorKind};
use crate::limits::{MAX_LINKS, MAX_NODES};
use crate::pcie::{PcieGen, raw_rate};
use crate::units::{Bytes, BytesPerSec, Picos};
use check::{check_link, check_link_ends, check_node};
use petgraph::graph::{EdgeIndex, NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;

/// A node's name as written in the topology file (`gpu0`, `rc1`, `sw0`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct NodeId(pub String);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Dense index of a node inside one [`Topology`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct NodeIdx(pub u32);

/// Dense index of a link inside one [`Topology`], in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct LinkIdx(pub u32);

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuSpec {
    /// Marketing name, for people (`RTX PRO 6000 Blackwell`).
    pub model: String,
    pub sms: u32,
    /// Local memory (HBM/GDDR) bandwidth.
    pub memory_bandwidth: BytesPerSec,
    /// The GPU issues 10-bit read tags (up to 768 outstanding reads; 256 without).
    pub tags_10bit: bool,
}

/// How collapsed posted writes share the collapsed rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CollapsePer {
    /// Every collapsed write through the port shares the rate.
    Port,
    /// Each (source, destination root complex) pair gets the rate.
    Pair,
}

/// Posted-write collapse at a switch or root complex, as a platform shows
/// it (see `docs/topology.md`). Unset fields take the model's defaults.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollapseSpec {
    /// Distinct source endpoints needed at once.
    pub min_sources: Option<u32>,
    /// Distinct destination root complexes needed at once.
    pub min_targets: Option<u32>,
    /// What the collapsed writes get.
    pub rate: Option<BytesPerSec>,
    pub per: CollapsePer,
    /// Writes this close together count as at once (TLP fidelity).
    pub window: Option<Picos>,
    /// Which platform shows it, and where that is written.
    pub note: Option<String>,
}

/// A PCIe switch, or one virtual switch (partition) of a switch chip.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SwitchSpec {
    /// Port-to-port latency; `None`: the model default.
    pub latency: Option<Picos>,
    /// The physical chip this (virtual) switch is a partition of.
    pub chip: Option<String>,
    /// A max read request size the switch forces on every path through it.
    pub mrrs: Option<Bytes>,
    /// Its ports pass 10-bit tags (else requesters behind it get 256).
    pub tags_10bit: bool,
    pub collapse: Option<CollapseSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RootComplexSpec {
    pub socket: u32,
    /// Cap on all P2P forwarding through it (both directions together);
    /// `None`: the model default (no cap unless the params give one).
    pub p2p_bandwidth: Option<BytesPerSec>,
    /// Forwarding latency, charged once per path entering the CPU here;
    /// `None`: the model default.
    pub latency: Option<Picos>,
    /// Cap on P2P forwarding per root port and direction; `None`: none.
    pub port_p2p_bandwidth: Option<BytesPerSec>,
    /// Cap on traffic between its ports and host memory, per direction; `None`: none.
    pub memory_bandwidth: Option<BytesPerSec>,
    /// Posted writes entering a root port toward several root complexes collapse.
    pub collapse: Option<CollapseSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NodeKind {
    Gpu(GpuSpec),
    Switch(SwitchSpec),
    RootComplex(RootComplexSpec),
    HostMemory {
        socket: u32,
        /// Access latency; `None`: the model default.
        latency: Option<Picos>,
    },
    /// A CPU-internal fabric joining root complexes (an I/O die's mesh, a
    /// socket's ring): crossing it costs `latency` once.
    CpuInterconnect {
        socket: u32,
        /// Crossing latency; `None`: the model default.
        latency: Option<Picos>,
        /// Cap on P2P crossing it (both directions together); `None`: none.
        p2p_bandwidth: Option<BytesPerSec>,
    },
}

impl NodeKind {
    pub fn name(&self) -> &'static str {
        match self {
            NodeKind::Gpu(_) => "gpu",
            NodeKind::Switch { .. } => "switch",
            NodeKind::RootComplex(_) => "root_complex",
            NodeKind::HostMemory { .. } => "host_memory",
            NodeKind::CpuInterconnect { .. } => "cpu_interconnect",
        }
    }
    /// Endpoints hold memory and never forward traffic for others.
    pub fn is_endpoint(&self) -> bool {
        matches!(self, NodeKind::Gpu(_) | NodeKind::HostMemory { .. })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Node {
    pub id: NodeId,
    pub kind: NodeKind,
    /// Free text kept with the node (what it is, where a figure came from).
    pub note: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PcieSpec {
    pub generation: PcieGen,
    pub width: u8,
    /// Max payload size (bytes).
    pub mps: Bytes,
    /// Max read request size (bytes).
    pub mrrs: Bytes,
    /// Read completion boundary (bytes).
    pub rcb: Bytes,
}

impl PcieSpec {
    /// Per-direction TLP byte rate on the wire (encoding applied, DLLP not).
    pub fn raw_rate(&self) -> BytesPerSec {
        raw_rate(self.generation, self.width)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LinkKind {
    Pcie(PcieSpec),
    Nvlink {
        bandwidth: BytesPerSec,
        latency: Picos,
    },
    /// CPU-to-CPU or inside-CPU link (UPI, xGMI, Infinity Fabric).
    Cpu {
        protocol: String,
        bandwidth: BytesPerSec,
        latency: Picos,
        /// Limits of GPU P2P crossing this link between sockets.
        p2p: CrossSocketP2p,
    },
    /// Memory controller: root complex / interconnect to host memory.
    Memory {
        bandwidth: BytesPerSec,
    },
    /// A switch chip's internal fabric between two of its virtual switches
    /// (`bandwidth` unset: no cap of its own, as a non-blocking crossbar).
    SwitchFabric {
        bandwidth: Option<BytesPerSec>,
        latency: Picos,
    },
    /// A root complex's attachment to its socket's I/O-die fabric.
    Die,
}

/// Limits of P2P between GPUs of different sockets over one CPU link;
/// unset fields take the model's defaults (`ModelParams.cross_socket`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CrossSocketP2p {
    /// Cap on all cross-socket P2P (both directions together).
    pub bandwidth: Option<BytesPerSec>,
    /// Cap on one stream (one source GPU to one destination).
    pub stream: Option<BytesPerSec>,
    /// Concurrent streams beyond which throughput degrades.
    pub knee: Option<f64>,
    /// How fast it degrades: × (knee / streams)^exponent.
    pub exponent: Option<f64>,
}

impl LinkKind {
    pub fn name(&self) -> &'static str {
        match self {
            LinkKind::Pcie(_) => "pcie",
            LinkKind::Nvlink { .. } => "nvlink",
            LinkKind::Cpu { .. } => "cpu",
            LinkKind::Memory { .. } => "memory",
            LinkKind::SwitchFabric { .. } => "switch_fabric",
            LinkKind::Die => "die",
        }
    }
    /// Per-direction rate of the link's data path before protocol overhead
    /// (`None`: a die attachment, which has no rate of its own).
    pub fn rate(&self) -> Option<BytesPerSec> {
        match self {
            LinkKind::Pcie(p) => Some(p.raw_rate()),
            LinkKind::Nvlink { bandwidth, .. }
            | LinkKind::Cpu { bandwidth, .. }
            | LinkKind::Memory { bandwidth } => Some(*bandwidth),
            LinkKind::SwitchFabric { bandwidth, .. } => *bandwidth,
            LinkKind::Die => None,
        }
    }
    /// A short description for people: `Gen5 x16 (63.0 GB/s)`.
    pub fn describe(&self) -> String {
        match self {
            LinkKind::Pcie(p) => format!(
                "PCIe Gen{} x{} ({}, MPS {}, MRRS {}, RCB {})",
                p.generation.0,
                p.width,
                p.raw_rate(),
                p.mps.0,
                p.mrrs.0,
                p.rcb.0
            ),
            LinkKind::Nvlink { bandwidth, .. } => format!("NVLink ({bandwidth})"),
            LinkKind::Cpu {
                protocol,
                bandwidth,
                p2p,
                ..
            } => {
                let mut limits = vec![];
                if let Some(b) = p2p.bandwidth {
                    limits.push(format!("GPU P2P {b}"));
                }
                if let Some(b) = p2p.stream {
                    limits.push(format!("{b} per P2P stream"));
                }
                if let (Some(k), Some(e)) = (p2p.knee, p2p.exponent) {
                    limits.push(format!("past {k} streams x(knee/n)^{e}"));
                }
                if limits.is_empty() {
                    format!("{protocol} ({bandwidth})")
                } else {
                    format!("{protocol} ({bandwidth}; {})", limits.join(", "))
                }
            }
            LinkKind::Memory { bandwidth } => format!("memory ({bandwidth})"),
            LinkKind::SwitchFabric {
                bandwidth: Some(b), ..
            } => format!("switch fabric ({b})"),
            LinkKind::SwitchFabric {
                bandwidth: None, ..
            } => "switch fabric".to_string(),
            LinkKind::Die => "I/O die".to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Link {
    pub idx: LinkIdx,
    /// For PCIe, the downstream side (GPU or switch upstream port).
    pub a: NodeIdx,
    /// For PCIe, the upstream side (switch downstream port or root port).
    pub b: NodeIdx,
    pub kind: LinkKind,
    /// Free text kept with the link (where its figures came from).
    pub note: Option<String>,
}

/// One traversal of a link in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Hop {
    pub link: LinkIdx,
    pub from: NodeIdx,
    pub to: NodeIdx,
}

impl Hop {
    /// Direction index: 0 when travelling a→b, 1 when b→a.
    pub fn direction(&self, topo: &Topology) -> usize {
        usize::from(topo.link(self.link).a != self.from)
    }
}

/// The path a TLP takes from one endpoint to another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Route {
    pub hops: Vec<Hop>,
}

impl Route {
    pub fn reversed(&self) -> Route {
        Route {
            hops: self
                .hops
                .iter()
                .rev()
                .map(|h| Hop {
                    link: h.link,
                    from: h.to,
                    to: h.from,
                })
                .collect(),
        }
    }
}

/// A validated machine: construct with [`Topology::new`] or the TOML loader.
#[derive(Clone, Debug)]
pub struct Topology {
    pub name: String,
    pub source: Option<String>,
    /// The platform as tested (BIOS, kernel, driver), free text.
    pub platform: Option<String>,
    pub(crate) graph: UnGraph<NodeIdx, LinkIdx>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) links: Vec<Link>,
    pub(crate) by_id: BTreeMap<NodeId, NodeIdx>,
    /// Which GPU pairs reach each other's memory directly.
    pub(crate) p2p: P2p,
    /// Where that fact comes from (`[p2p]`'s note).
    pub p2p_note: Option<String>,
    /// Where each node was written (file, line, column), where it came from
    /// a file: for errors found later, by what reads the topology.
    pub(crate) node_locs: Vec<Option<Location>>,
}

/// Input to [`Topology::new`]: nodes and links by id, each with an optional
/// place in a file for error messages.
#[derive(Clone, Debug, Default)]
pub struct TopologySpec {
    /// The file the spec came from, for errors that belong to no one entry.
    pub file: Option<String>,
    pub name: String,
    pub source: Option<String>,
    pub platform: Option<String>,
    /// `[p2p]`: which GPU pairs have peer-to-peer access.
    pub p2p: P2pSpec,
    /// `[p2p]`'s note: where the fact comes from, for people.
    pub p2p_note: Option<String>,
    pub nodes: Vec<(Node, Option<Location>)>,
    pub links: Vec<LinkSpec>,
}

/// One link of a [`TopologySpec`].
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub a: NodeId,
    pub b: NodeId,
    pub kind: LinkKind,
    pub note: Option<String>,
    /// Where it is written, for errors.
    pub location: Option<Location>,
}

impl Topology {
    /// Checks every documented rule and the stated [`crate::limits`] and builds the topology.
    pub fn new(spec: TopologySpec) -> Result<Topology, TopoError> {
        let whole = |field: &str| {
            spec.file.as_ref().map(|f| Location {
                file: f.clone(),
                line: 0,
                column: 0,
                field: Some(field.into()),
            })
        };
        if spec.nodes.len() > MAX_NODES {
            return Err(TopoError::at(
                whole("node"),
                TopoErrorKind::Invalid(format!(
                    "{} nodes: a topology has at most {MAX_NODES}",
                    spec.nodes.len()
                )),
            ));
        }
        if spec.links.len() > MAX_LINKS {
            return Err(TopoError::at(
                whole("link"),
                TopoErrorKind::Invalid(format!(
                    "{} links: a topology has at most {MAX_LINKS}",
                    spec.links.len()
                )),
            ));
        }
        let mut by_id = BTreeMap::new();
        let mut nodes = Vec::new();
        let mut graph = UnGraph::<NodeIdx, LinkIdx>::default();
        let mut locs: Vec<Option<Location>> = Vec::new();
        for (node, loc) in spec.nodes {
            // CORRECTNESS: ids are unique, so a link names exactly one node.
            if let Some(first) = by_id.get(&node.id) {
                let first: &NodeIdx = first;
                return Err(TopoError::at(
                    loc,
                    TopoErrorKind::DuplicateId {
                        id: node.id.0.clone(),
                        first: locs[first.0 as usize].clone(),
                    },
                ));
            }
            if node.id.0.is_empty() {
                return Err(TopoError::at(
                    loc,
                    TopoErrorKind::Invalid("node id is empty".into()),
                ));
            }
            // CORRECTNESS: every number inside the stated limits (a GPU with
            // no SMs or no memory bandwidth cannot run a kernel).
            check_node(&node.kind, loc.as_ref())?;
            let idx = NodeIdx(nodes.len() as u32);
            by_id.insert(node.id.clone(), idx);
            graph.add_node(idx);
            nodes.push(node);
            locs.push(loc);
        }
        if !nodes.iter().any(|n| matches!(n.kind, NodeKind::Gpu(_))) {
            let loc = spec.file.as_ref().map(|f| Location {
                file: f.clone(),
                line: 1,
                column: 1,
                field: Some("node".into()),
            });
            return Err(TopoError::at(loc, TopoErrorKind::NoGpu));
        }
        let mut links = Vec::new();
        let mut link_locs = Vec::new();
        for LinkSpec {
            a,
            b,
            kind,
            note,
            location: loc,
        } in spec.links
        {
            // CORRECTNESS: both ends exist.
            let lookup = |id: &NodeId, field: &str| {
                by_id.get(id).copied().ok_or_else(|| {
                    TopoError::at(
                        loc.clone().map(|l| l.with_field(field)),
                        TopoErrorKind::UnknownNode { id: id.0.clone() },
                    )
                })
            };
            let ai = lookup(&a, "a")?;
            let bi = lookup(&b, "b")?;
            if ai == bi {
                return Err(TopoError::at(
                    loc,
                    TopoErrorKind::Invalid(format!("link joins `{a}` to itself")),
                ));
            }
            check_link(&kind, loc.as_ref())?;
            let (ka, kb) = (&nodes[ai.0 as usize].kind, &nodes[bi.0 as usize].kind);
            check_link_ends(&kind, ka, kb, &a, &b, loc.as_ref())?;
            let idx = LinkIdx(links.len() as u32);
            graph.add_edge(
                NodeIndex::new(ai.0 as usize),
                NodeIndex::new(bi.0 as usize),
                idx,
            );
            links.push(Link {
                idx,
                a: ai,
                b: bi,
                kind,
                note,
            });
            link_locs.push(loc);
        }
        let p2p = spec.p2p.resolve(|id| {
            by_id
                .get(id)
                .map(|&i| (i, matches!(nodes[i.0 as usize].kind, NodeKind::Gpu(_))))
        })?;
        let topo = Topology {
            name: spec.name,
            source: spec.source,
            platform: spec.platform,
            graph,
            nodes,
            links,
            by_id,
            p2p,
            p2p_note: spec.p2p_note,
            node_locs: Vec::new(),
        };
        topo.check_pcie_forest(&link_locs)?;
        topo.check_reachability(&locs)?;
        Ok(Topology {
            node_locs: locs,
            ..topo
        })
    }

    pub fn node(&self, i: NodeIdx) -> &Node {
        &self.nodes[i.0 as usize]
    }
    /// Where node `i` was written, with `field` named: an error about the
    /// node found after loading points at the user's file.
    pub fn node_location(&self, i: NodeIdx, field: &str) -> Option<Location> {
        let mut l = self.node_locs.get(i.0 as usize)?.clone()?;
        l.field = Some(field.into());
        Some(l)
    }
    pub fn link(&self, i: LinkIdx) -> &Link {
        &self.links[i.0 as usize]
    }
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
    pub fn links(&self) -> &[Link] {
        &self.links
    }
    pub fn lookup(&self, id: &str) -> Option<NodeIdx> {
        self.by_id.get(&NodeId(id.to_string())).copied()
    }
    /// GPUs in file order.
    pub fn gpus(&self) -> Vec<NodeIdx> {
        self.indices_where(|k| matches!(k, NodeKind::Gpu(_)))
    }
    pub fn host_memories(&self) -> Vec<NodeIdx> {
        self.indices_where(|k| matches!(k, NodeKind::HostMemory { .. }))
    }
    fn indices_where(&self, f: impl Fn(&NodeKind) -> bool) -> Vec<NodeIdx> {
        (0..self.nodes.len() as u32)
            .map(NodeIdx)
            .filter(|i| f(&self.node(*i).kind))
            .collect()
    }

    /// Links touching a node, in file order, with the neighbour.
    pub fn neighbours(&self, n: NodeIdx) -> Vec<(LinkIdx, NodeIdx)> {
        let mut v: Vec<(LinkIdx, NodeIdx)> = self
            .graph
            .edges(NodeIndex::new(n.0 as usize))
            .map(|e| {
                let other = if e.source().index() == n.0 as usize {
                    e.target()
                } else {
                    e.source()
                };
                (*e.weight(), NodeIdx(other.index() as u32))
            })
            .collect();
        v.sort();
        v
    }

    /// The socket a node belongs to: its own for root complexes, memories and
    /// interconnects; for GPUs and switches, that of the root complex above.
    pub fn socket_of(&self, n: NodeIdx) -> Option<u32> {
        match &self.node(n).kind {
            NodeKind::RootComplex(rc) => Some(rc.socket),
            NodeKind::HostMemory { socket, .. } | NodeKind::CpuInterconnect { socket, .. } => {
                Some(*socket)
            }
            _ => self.upstream_root(n).and_then(|r| self.socket_of(r)),
        }
    }

    /// The root complex a GPU or switch hangs under (following PCIe links up).
    pub fn upstream_root(&self, n: NodeIdx) -> Option<NodeIdx> {
        let mut cur = n;
        for _ in 0..self.nodes.len() {
            if matches!(self.node(cur).kind, NodeKind::RootComplex(_)) {
                return Some(cur);
            }
            let up = self
                .links
                .iter()
                .find(|l| l.a == cur && matches!(l.kind, LinkKind::Pcie(_)))?;
            cur = up.b;
        }
        None
    }

    /// The PCIe switch directly above a GPU, if any.
    pub fn parent_switch(&self, n: NodeIdx) -> Option<NodeIdx> {
        let up = self
            .links
            .iter()
            .find(|l| l.a == n && matches!(l.kind, LinkKind::Pcie(_)))?;
        matches!(self.node(up.b).kind, NodeKind::Switch { .. }).then_some(up.b)
    }

    /// The host memory nearest a node (same socket first, then the first one).
    pub fn nearest_host_memory(&self, n: NodeIdx) -> Option<NodeIdx> {
        let mems = self.host_memories();
        let s = self.socket_of(n);
        mems.iter()
            .copied()
            .find(|m| self.socket_of(*m) == s)
            .or(mems.first().copied())
    }

    /// Shortest path (fewest hops; ties broken by link order) from one
    /// endpoint to another. Endpoints (GPUs, host memory) never forward.
    pub fn route(&self, from: NodeIdx, to: NodeIdx) -> Option<Route> {
        if from == to {
            return Some(Route { hops: vec![] });
        }
        let n = self.nodes.len();
        let mut prev: Vec<Option<Hop>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut q = VecDeque::new();
        seen[from.0 as usize] = true;
        q.push_back(from);
        while let Some(u) = q.pop_front() {
            if u != from && self.node(u).kind.is_endpoint() {
                continue;
            }
            for (l, v) in self.neighbours(u) {
                if seen[v.0 as usize] {
                    continue;
                }
                seen[v.0 as usize] = true;
                prev[v.0 as usize] = Some(Hop {
                    link: l,
                    from: u,
                    to: v,
                });
                if v == to {
                    let mut hops = Vec::new();
                    let mut cur = to;
                    while let Some(h) = prev[cur.0 as usize] {
                        hops.push(h);
                        cur = h.from;
                    }
                    hops.reverse();
                    return Some(Route { hops });
                }
                q.push_back(v);
            }
        }
        None
    }

    /// Index of a link's petgraph edge (for callers using petgraph algorithms).
    pub fn edge_index(&self, l: LinkIdx) -> EdgeIndex {
        EdgeIndex::new(l.0 as usize)
    }
}
