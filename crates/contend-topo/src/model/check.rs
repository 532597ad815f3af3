//! The rules every node and link is held to when a topology is built:
//! each number inside its limit, each link kind between the node kinds it
//! can join; and those the whole topology is held to once built: PCIe a
//! forest, every GPU reaching every GPU and every host memory (and a
//! topology with no host memory is one whose GPUs reach none). Errors name
//! the file, line and field.

use super::{CollapseSpec, LinkKind, NodeId, NodeIdx, NodeKind, Topology};
use crate::error::{Location, TopoError, TopoErrorKind};
use crate::limits;
use crate::pcie::{VALID_PAYLOADS, VALID_RCBS, VALID_WIDTHS};
use crate::units::Picos;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use std::collections::VecDeque;

pub(super) fn check_link(kind: &LinkKind, loc: Option<&Location>) -> Result<(), TopoError> {
    let err = |field: &str, k: TopoErrorKind| {
        Err(TopoError::at(loc.cloned().map(|l| l.with_field(field)), k))
    };
    match kind {
        LinkKind::Pcie(p) => {
            // CORRECTNESS: only widths and payload sizes the spec defines.
            if !(1..=6).contains(&p.generation.0) {
                return err(
                    "gen",
                    TopoErrorKind::Invalid(format!(
                        "PCIe generation {} does not exist (1 to 6)",
                        p.generation.0
                    )),
                );
            }
            if !VALID_WIDTHS.contains(&p.width) {
                return err(
                    "width",
                    TopoErrorKind::Invalid(format!(
                        "PCIe width x{} is impossible (x1, x2, x4, x8, x12 or x16)",
                        p.width
                    )),
                );
            }
            for (field, v) in [("mps", p.mps), ("mrrs", p.mrrs)] {
                if !VALID_PAYLOADS.contains(&v.0) {
                    return err(
                        field,
                        TopoErrorKind::Invalid(format!(
                            "{field} {} is not a power of two from 128 to 4096",
                            v.0
                        )),
                    );
                }
            }
            if !VALID_RCBS.contains(&p.rcb.0) {
                return err(
                    "rcb",
                    TopoErrorKind::Invalid(format!("rcb {} must be 64 or 128", p.rcb.0)),
                );
            }
        }
        LinkKind::Nvlink { bandwidth, latency }
        | LinkKind::Cpu {
            bandwidth, latency, ..
        } => {
            limits::bandwidth(*bandwidth).map_err(|e| limit(loc, "bandwidth_gbps", e))?;
            limits::latency(*latency).map_err(|e| limit(loc, "latency_ns", e))?;
        }
        LinkKind::SwitchFabric { bandwidth, latency } => {
            if let Some(b) = bandwidth {
                limits::bandwidth(*b).map_err(|e| limit(loc, "bandwidth_gbps", e))?;
            }
            limits::latency(*latency).map_err(|e| limit(loc, "latency_ns", e))?;
        }
        LinkKind::Memory { bandwidth } => {
            limits::bandwidth(*bandwidth).map_err(|e| limit(loc, "bandwidth_gbps", e))?;
        }
        LinkKind::Die => {}
    }
    if let LinkKind::Cpu { p2p, .. } = kind {
        for (field, b) in [
            ("p2p_bandwidth_gbps", p2p.bandwidth),
            ("p2p_stream_gbps", p2p.stream),
        ] {
            if let Some(b) = b {
                limits::bandwidth(b).map_err(|e| limit(loc, field, e))?;
            }
        }
        if let Some(k) = p2p.knee
            && !(k.is_finite() && k >= 1.0)
        {
            return Err(invalid(
                loc,
                "p2p_stream_knee",
                format!("p2p_stream_knee = {k}: at least 1"),
            ));
        }
        if let Some(e) = p2p.exponent
            && !(e.is_finite() && (0.0..=16.0).contains(&e))
        {
            return Err(invalid(
                loc,
                "p2p_stream_exponent",
                format!("p2p_stream_exponent = {e}: 0 to 16"),
            ));
        }
    }
    Ok(())
}

/// The numbers of a collapse table, against the stated [`limits`].
fn check_collapse(c: &Option<CollapseSpec>, loc: Option<&Location>) -> Result<(), TopoError> {
    let Some(c) = c else { return Ok(()) };
    for (field, v) in [
        ("collapse.min_sources", c.min_sources),
        ("collapse.min_targets", c.min_targets),
    ] {
        if let Some(v) = v {
            limits::count(i64::from(v), field).map_err(|e| limit(loc, field, e))?;
        }
    }
    if let Some(r) = c.rate {
        limits::bandwidth(r).map_err(|e| limit(loc, "collapse.rate_gbps", e))?;
    }
    if let Some(w) = c.window {
        limits::latency(w).map_err(|e| limit(loc, "collapse.window_ns", e))?;
    }
    Ok(())
}

fn limit(loc: Option<&Location>, field: &str, e: limits::LimitError) -> TopoError {
    TopoError::at(
        loc.cloned().map(|l| l.with_field(field)),
        TopoErrorKind::Limit(e),
    )
}

fn invalid(loc: Option<&Location>, field: &str, message: String) -> TopoError {
    TopoError::at(
        loc.cloned().map(|l| l.with_field(field)),
        TopoErrorKind::Invalid(message),
    )
}

/// The numbers of a node, against the stated [`limits`].
pub(super) fn check_node(kind: &NodeKind, loc: Option<&Location>) -> Result<(), TopoError> {
    let latency = |l: &Option<Picos>| {
        l.map_or(Ok(()), limits::latency)
            .map_err(|e| limit(loc, "latency_ns", e))
    };
    let socket = |s: u32| {
        limits::socket(i64::from(s))
            .map(|_| ())
            .map_err(|e| limit(loc, "socket", e))
    };
    match kind {
        NodeKind::Gpu(g) => {
            limits::sms(i64::from(g.sms)).map_err(|e| limit(loc, "sms", e))?;
            limits::bandwidth(g.memory_bandwidth)
                .map_err(|e| limit(loc, "memory_bandwidth_gbps", e))
        }
        NodeKind::Switch(sw) => {
            if let Some(m) = sw.mrrs
                && !VALID_PAYLOADS.contains(&m.0)
            {
                return Err(invalid(
                    loc,
                    "mrrs",
                    format!("mrrs {} is not a power of two from 128 to 4096", m.0),
                ));
            }
            check_collapse(&sw.collapse, loc)?;
            latency(&sw.latency)
        }
        NodeKind::RootComplex(rc) => {
            socket(rc.socket)?;
            for (field, b) in [
                ("p2p_bandwidth_gbps", rc.p2p_bandwidth),
                ("port_p2p_gbps", rc.port_p2p_bandwidth),
                ("memory_bandwidth_gbps", rc.memory_bandwidth),
            ] {
                if let Some(b) = b {
                    limits::bandwidth(b).map_err(|e| limit(loc, field, e))?;
                }
            }
            check_collapse(&rc.collapse, loc)?;
            latency(&rc.latency)
        }
        NodeKind::HostMemory {
            socket: s,
            latency: l,
        } => {
            socket(*s)?;
            latency(l)
        }
        NodeKind::CpuInterconnect {
            socket: s,
            latency: l,
            p2p_bandwidth,
        } => {
            socket(*s)?;
            if let Some(b) = p2p_bandwidth {
                limits::bandwidth(*b).map_err(|e| limit(loc, "p2p_bandwidth_gbps", e))?;
            }
            latency(l)
        }
    }
}

pub(super) fn check_link_ends(
    kind: &LinkKind,
    ka: &NodeKind,
    kb: &NodeKind,
    a: &NodeId,
    b: &NodeId,
    loc: Option<&Location>,
) -> Result<(), TopoError> {
    use NodeKind as K;
    let ok = match kind {
        // a: downstream (GPU or switch), b: upstream (switch or root complex).
        LinkKind::Pcie(_) => {
            matches!(ka, K::Gpu(_) | K::Switch { .. })
                && matches!(kb, K::Switch { .. } | K::RootComplex(_))
        }
        LinkKind::Nvlink { .. } => matches!((ka, kb), (K::Gpu(_), K::Gpu(_))),
        LinkKind::Cpu { .. } => {
            matches!(ka, K::RootComplex(_) | K::CpuInterconnect { .. })
                && matches!(kb, K::RootComplex(_) | K::CpuInterconnect { .. })
        }
        LinkKind::Memory { .. } => {
            matches!(
                (ka, kb),
                (
                    K::HostMemory { .. },
                    K::RootComplex(_) | K::CpuInterconnect { .. }
                )
            ) || matches!(
                (kb, ka),
                (
                    K::HostMemory { .. },
                    K::RootComplex(_) | K::CpuInterconnect { .. }
                )
            )
        }
        // CORRECTNESS: a chip's internal fabric joins partitions of that chip.
        LinkKind::SwitchFabric { .. } => match (ka, kb) {
            (K::Switch(x), K::Switch(y)) => x.chip.is_some() && x.chip == y.chip,
            _ => false,
        },
        // CORRECTNESS: a root complex joins the I/O die of its own socket.
        LinkKind::Die => match (ka, kb) {
            (K::RootComplex(rc), K::CpuInterconnect { socket, .. })
            | (K::CpuInterconnect { socket, .. }, K::RootComplex(rc)) => rc.socket == *socket,
            _ => false,
        },
    };
    if ok {
        return Ok(());
    }
    let rule = match kind {
        LinkKind::Pcie(_) => {
            "a PCIe link goes from a GPU or switch (`a`, downstream) to a switch or root complex (`b`, upstream)"
        }
        LinkKind::Nvlink { .. } => "an NVLink joins two GPUs",
        LinkKind::Cpu { .. } => "a CPU link joins root complexes or CPU interconnects",
        LinkKind::Memory { .. } => {
            "a memory link joins host memory to a root complex or CPU interconnect"
        }
        LinkKind::SwitchFabric { .. } => {
            "a switch_fabric link joins two virtual switches of one chip (both `switch` nodes with the same `chip`)"
        }
        LinkKind::Die => {
            "a die link joins a root complex to the cpu_interconnect of its own socket"
        }
    };
    // the rule broken is that of the link's kind: the error names `kind`
    // (where the location names no field of its own)
    let loc = loc.map(|l| match l.field {
        Some(_) => l.clone(),
        None => l.clone().with_field("kind"),
    });
    Err(TopoError::at(
        loc,
        TopoErrorKind::Invalid(format!(
            "link `{a}` ({}) – `{b}` ({}): {rule}",
            ka.name(),
            kb.name()
        )),
    ))
}

impl Topology {
    /// CORRECTNESS: PCIe is a tree: the PCIe links alone must form no cycle.
    pub(super) fn check_pcie_forest(
        &self,
        link_locs: &[Option<Location>],
    ) -> Result<(), TopoError> {
        let mut parent: Vec<usize> = (0..self.nodes.len()).collect();
        fn find(p: &mut [usize], x: usize) -> usize {
            let mut r = x;
            while p[r] != r {
                r = p[r];
            }
            let mut c = x;
            while p[c] != r {
                let n = p[c];
                p[c] = r;
                c = n;
            }
            r
        }
        for l in &self.links {
            if !matches!(l.kind, LinkKind::Pcie(_)) {
                continue;
            }
            let (ra, rb) = (
                find(&mut parent, l.a.0 as usize),
                find(&mut parent, l.b.0 as usize),
            );
            if ra == rb {
                return Err(TopoError::at(
                    link_locs[l.idx.0 as usize].clone(),
                    TopoErrorKind::PcieCycle {
                        a: self.node(l.a).id.0.clone(),
                        b: self.node(l.b).id.0.clone(),
                    },
                ));
            }
            parent[ra] = rb;
        }
        Ok(())
    }

    /// CORRECTNESS: every GPU reaches every other GPU and every host memory,
    /// and there is one (a GPU's buffers are staged and fed from it).
    /// One search per GPU (the rule of [`Topology::route`]: endpoints never
    /// forward), so a topology at the size limits is checked in milliseconds.
    pub(super) fn check_reachability(&self, locs: &[Option<Location>]) -> Result<(), TopoError> {
        let gpus = self.gpus();
        let mems: Vec<NodeIdx> = self.host_memories();
        // with no host memory at all, every GPU reaches none: the first is named
        if let (Some(&g), true) = (gpus.first(), mems.is_empty()) {
            return Err(TopoError::at(
                locs[g.0 as usize].clone(),
                TopoErrorKind::Invalid(format!(
                    "`{}` reaches no host memory: the topology has no `host_memory` node (add one, joined by a `memory` link to a root complex or cpu_interconnect)",
                    self.node(g).id.0
                )),
            ));
        }
        for &g in &gpus {
            let reach = self.reachable_from(g);
            for &h in gpus.iter().chain(mems.iter()) {
                if g != h && !reach[h.0 as usize] {
                    return Err(TopoError::at(
                        locs[g.0 as usize].clone(),
                        TopoErrorKind::Unreachable {
                            from: self.node(g).id.0.clone(),
                            to: self.node(h).id.0.clone(),
                        },
                    ));
                }
            }
        }
        Ok(())
    }

    /// Which nodes a TLP from `from` can reach (endpoints other than `from`
    /// receive but never forward): exactly those [`Topology::route`] finds.
    fn reachable_from(&self, from: NodeIdx) -> Vec<bool> {
        let mut seen = vec![false; self.nodes.len()];
        let mut q = VecDeque::new();
        seen[from.0 as usize] = true;
        q.push_back(from);
        while let Some(u) = q.pop_front() {
            if u != from && self.node(u).kind.is_endpoint() {
                continue;
            }
            for e in self.graph.edges(NodeIndex::new(u.0 as usize)) {
                let v = if e.source().index() == u.0 as usize {
                    e.target()
                } else {
                    e.source()
                };
                if !seen[v.index()] {
                    seen[v.index()] = true;
                    q.push_back(NodeIdx(v.index() as u32));
                }
            }
        }
        seen
    }
}
