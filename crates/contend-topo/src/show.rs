//! A tree view of a topology for people (`contend topo show`).

use crate::{LinkKind, NodeIdx, NodeKind, Topology};
use std::fmt::Write;

fn label(topo: &Topology, n: NodeIdx) -> String {
    let node = topo.node(n);
    match &node.kind {
        NodeKind::Gpu(g) => format!(
            "{} [gpu: {}, {} SMs, {}]",
            node.id, g.model, g.sms, g.memory_bandwidth
        ),
        NodeKind::Switch(sw) => format!(
            "{} [pcie switch{}{}]",
            node.id,
            sw.chip
                .as_ref()
                .map(|c| format!(", partition of chip {c}"))
                .unwrap_or_default(),
            if sw.collapse.is_some() {
                ", posted-write collapse"
            } else {
                ""
            }
        ),
        NodeKind::RootComplex(rc) => format!(
            "{} [root complex, socket {}{}]",
            node.id,
            rc.socket,
            if rc.collapse.is_some() {
                ", posted-write collapse"
            } else {
                ""
            }
        ),
        NodeKind::HostMemory { socket, .. } => {
            format!("{} [host memory, socket {socket}]", node.id)
        }
        NodeKind::CpuInterconnect { socket, .. } => {
            format!("{} [cpu interconnect, socket {socket}]", node.id)
        }
    }
}

/// Renders the machine as a tree: root complexes and CPU interconnects at the
/// top, PCIe below them with each link's rate; CPU links and NVLinks listed after.
pub fn render_tree(topo: &Topology) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", topo.name);
    if let Some(s) = &topo.source {
        let _ = writeln!(out, "  source: {s}");
    }
    let roots: Vec<NodeIdx> = (0..topo.nodes().len() as u32)
        .map(NodeIdx)
        .filter(|n| {
            matches!(
                topo.node(*n).kind,
                NodeKind::RootComplex(_) | NodeKind::CpuInterconnect { .. }
            )
        })
        .collect();
    for r in roots {
        let _ = writeln!(out, "{}", label(topo, r));
        children(topo, r, "", &mut out);
    }
    let others: Vec<_> = topo
        .links()
        .iter()
        .filter(|l| !matches!(l.kind, LinkKind::Pcie(_) | LinkKind::Memory { .. }))
        .collect();
    if !others.is_empty() {
        let _ = writeln!(out, "other links:");
        for l in others {
            let _ = writeln!(
                out,
                "  {} <-> {}  {}",
                topo.node(l.a).id,
                topo.node(l.b).id,
                l.kind.describe()
            );
        }
    }
    out
}

fn children(topo: &Topology, n: NodeIdx, prefix: &str, out: &mut String) {
    let kids: Vec<_> = topo
        .links()
        .iter()
        .filter(|l| l.b == n && matches!(l.kind, LinkKind::Pcie(_) | LinkKind::Memory { .. }))
        .map(|l| (l, l.a))
        .chain(
            topo.links()
                .iter()
                .filter(|l| l.a == n && matches!(l.kind, LinkKind::Memory { .. }))
                .map(|l| (l, l.b)),
        )
        .filter(|(_, k)| *k != n)
        .collect();
    let count = kids.len();
    for (i, (l, k)) in kids.into_iter().enumerate() {
        let last = i + 1 == count;
        let _ = writeln!(
            out,
            "{prefix}{}── {}  via {}",
            if last { "└" } else { "├" },
            label(topo, k),
            l.kind.describe()
        );
        let next = format!("{prefix}{}", if last { "    " } else { "│   " });
        if !matches!(topo.node(k).kind, NodeKind::HostMemory { .. }) {
            children(topo, k, &next, out);
        }
    }
}
