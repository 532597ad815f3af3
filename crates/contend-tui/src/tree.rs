//! The machine as rows of a tree: sockets, root complexes and CPU
//! interconnects, PCIe below them (each row a node and the link above it),
//! host memory, then the links that are not part of the tree (CPU links,
//! NVLink).

use contend_topo::{LinkIdx, LinkKind, NodeIdx, NodeKind, Topology};
use std::collections::BTreeSet;

/// One row of the topology pane.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Tree glyphs drawn before the row's text.
    pub prefix: String,
    pub kind: RowKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RowKind {
    /// A section title (not selectable).
    Heading(&'static str),
    Socket(u32),
    /// A node and the link that hangs it under its parent, if any.
    Node {
        node: NodeIdx,
        uplink: Option<LinkIdx>,
    },
    /// A link outside the tree.
    Link(LinkIdx),
}

impl Row {
    pub fn selectable(&self) -> bool {
        !matches!(self.kind, RowKind::Heading(_))
    }
}

/// What the selection points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selected {
    Nothing,
    Socket(u32),
    Node(NodeIdx),
    Link(LinkIdx),
}

/// The topology pane's rows and which one is selected.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeState {
    pub rows: Vec<Row>,
    /// Index into `rows` of the selected row.
    pub sel: usize,
    /// Whether the selection is the link above the selected node, not the node.
    pub on_link: bool,
}

impl TreeState {
    /// The rows of `topo`, the first selectable one selected.
    pub fn new(topo: &Topology) -> TreeState {
        let rows = rows(topo);
        let sel = rows.iter().position(Row::selectable).unwrap_or(0);
        TreeState {
            rows,
            sel,
            on_link: false,
        }
    }

    /// What the selection points at.
    pub fn selected(&self) -> Selected {
        match self.rows.get(self.sel).map(|r| &r.kind) {
            Some(RowKind::Socket(s)) => Selected::Socket(*s),
            Some(RowKind::Node { node, uplink }) => match uplink {
                Some(l) if self.on_link => Selected::Link(*l),
                _ => Selected::Node(*node),
            },
            Some(RowKind::Link(l)) => Selected::Link(*l),
            Some(RowKind::Heading(_)) | None => Selected::Nothing,
        }
    }

    /// Moves the selection `by` selectable rows, stopping at the ends; a row
    /// without a link above it selects the node.
    pub fn move_by(&mut self, by: isize) {
        let sel: Vec<usize> = (0..self.rows.len())
            .filter(|i| self.rows[*i].selectable())
            .collect();
        if sel.is_empty() {
            return;
        }
        let cur = sel.iter().position(|i| *i >= self.sel).unwrap_or(0) as isize;
        let next = (cur + by).clamp(0, sel.len() as isize - 1) as usize;
        self.sel = sel[next];
        match &self.rows[self.sel].kind {
            RowKind::Node { uplink: None, .. } | RowKind::Socket(_) => self.on_link = false,
            _ => {}
        }
    }

    /// Selects the link above the selected node, if it has one.
    pub fn select_link(&mut self) {
        if matches!(
            self.rows.get(self.sel).map(|r| &r.kind),
            Some(RowKind::Node {
                uplink: Some(_),
                ..
            })
        ) {
            self.on_link = true;
        }
    }

    /// Selects the node again, not the link above it.
    pub fn select_node(&mut self) {
        self.on_link = false;
    }
}

fn is_tree_link(k: &LinkKind) -> bool {
    matches!(k, LinkKind::Pcie(_) | LinkKind::Memory { .. })
}

/// Builds the rows of a topology.
pub fn rows(topo: &Topology) -> Vec<Row> {
    let n = topo.nodes().len() as u32;
    let is_root = |i: NodeIdx| {
        matches!(
            topo.node(i).kind,
            NodeKind::RootComplex(_) | NodeKind::CpuInterconnect { .. }
        )
    };
    let sockets: BTreeSet<u32> = (0..n)
        .map(NodeIdx)
        .filter(|i| is_root(*i))
        .filter_map(|i| topo.socket_of(i))
        .collect();
    let mut out = Vec::new();
    let mut seen: BTreeSet<NodeIdx> = BTreeSet::new();
    let mut used: BTreeSet<LinkIdx> = BTreeSet::new();
    for s in &sockets {
        out.push(Row {
            prefix: String::new(),
            kind: RowKind::Socket(*s),
        });
        for r in (0..n)
            .map(NodeIdx)
            .filter(|i| is_root(*i) && topo.socket_of(*i) == Some(*s))
        {
            seen.insert(r);
            out.push(Row {
                prefix: String::new(),
                kind: RowKind::Node {
                    node: r,
                    uplink: None,
                },
            });
            children(topo, r, " ", &mut out, &mut seen, &mut used);
        }
    }
    let rest: Vec<NodeIdx> = (0..n).map(NodeIdx).filter(|i| !seen.contains(i)).collect();
    if !rest.is_empty() {
        out.push(Row {
            prefix: String::new(),
            kind: RowKind::Heading("other nodes"),
        });
        for i in rest {
            if seen.insert(i) {
                out.push(Row {
                    prefix: String::new(),
                    kind: RowKind::Node {
                        node: i,
                        uplink: None,
                    },
                });
                children(topo, i, " ", &mut out, &mut seen, &mut used);
            }
        }
    }
    let others: Vec<LinkIdx> = topo
        .links()
        .iter()
        .map(|l| l.idx)
        .filter(|l| !used.contains(l))
        .collect();
    if !others.is_empty() {
        out.push(Row {
            prefix: String::new(),
            kind: RowKind::Heading("links"),
        });
        for l in others {
            out.push(Row {
                prefix: String::new(),
                kind: RowKind::Link(l),
            });
        }
    }
    out
}

fn children(
    topo: &Topology,
    n: NodeIdx,
    prefix: &str,
    out: &mut Vec<Row>,
    seen: &mut BTreeSet<NodeIdx>,
    used: &mut BTreeSet<LinkIdx>,
) {
    // Below a node: what hangs from it by PCIe (it is the upstream `b` end),
    // and host memory joined to it.
    let kids: Vec<(LinkIdx, NodeIdx)> = topo
        .links()
        .iter()
        .filter(|l| is_tree_link(&l.kind) && !used.contains(&l.idx))
        .filter_map(|l| {
            let other = if l.b == n {
                l.a
            } else if l.a == n && matches!(l.kind, LinkKind::Memory { .. }) {
                l.b
            } else {
                return None;
            };
            (!seen.contains(&other)).then_some((l.idx, other))
        })
        .collect();
    let count = kids.len();
    for (i, (l, k)) in kids.into_iter().enumerate() {
        if !seen.insert(k) {
            continue;
        }
        used.insert(l);
        let last = i + 1 == count;
        out.push(Row {
            prefix: format!("{prefix}{}", if last { "└─" } else { "├─" }),
            kind: RowKind::Node {
                node: k,
                uplink: Some(l),
            },
        });
        let next = format!("{prefix}{}", if last { "  " } else { "│ " });
        children(topo, k, &next, out, seen, used);
    }
}

/// A node's short label: `gpu0`, `rc0 root complex`, `sw0 switch`.
pub fn node_label(topo: &Topology, n: NodeIdx) -> String {
    let node = topo.node(n);
    match &node.kind {
        NodeKind::Gpu(_) => format!("{}", node.id),
        NodeKind::Switch { .. } => format!("{} switch", node.id),
        NodeKind::RootComplex(_) => format!("{} root complex", node.id),
        NodeKind::HostMemory { .. } => format!("{} memory", node.id),
        NodeKind::CpuInterconnect { .. } => format!("{} cpu fabric", node.id),
    }
}

/// A link's short label: `Gen5 x16 63.0 GB/s`, `xGMI 256.0 GB/s`.
pub fn link_label(k: &LinkKind) -> String {
    match k {
        LinkKind::Pcie(p) => format!(
            "Gen{} x{} {:.1} GB/s",
            p.generation.0,
            p.width,
            p.raw_rate().as_gbps()
        ),
        LinkKind::Nvlink { bandwidth, .. } => format!("NVLink {:.0} GB/s", bandwidth.as_gbps()),
        LinkKind::Cpu {
            protocol,
            bandwidth,
            ..
        } => format!("{protocol} {:.0} GB/s", bandwidth.as_gbps()),
        LinkKind::Memory { bandwidth } => format!("DRAM {:.0} GB/s", bandwidth.as_gbps()),
        LinkKind::SwitchFabric {
            bandwidth: Some(b), ..
        } => format!("fabric {:.0} GB/s", b.as_gbps()),
        LinkKind::SwitchFabric {
            bandwidth: None, ..
        } => "switch fabric".to_string(),
        LinkKind::Die => "I/O die".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_topo::shipped;

    #[test]
    fn every_node_and_link_of_every_shipped_topology_has_a_row() {
        for (stem, _) in shipped::SHIPPED {
            let topo = shipped::get(stem).unwrap().unwrap();
            let rows = rows(&topo);
            let mut nodes = BTreeSet::new();
            let mut links = BTreeSet::new();
            for r in &rows {
                match r.kind {
                    RowKind::Node { node, uplink } => {
                        assert!(nodes.insert(node), "{stem}: node twice");
                        if let Some(l) = uplink {
                            assert!(links.insert(l), "{stem}: link twice");
                        }
                    }
                    RowKind::Link(l) => assert!(links.insert(l), "{stem}: link twice"),
                    _ => {}
                }
            }
            assert_eq!(nodes.len(), topo.nodes().len(), "{stem}");
            assert_eq!(links.len(), topo.links().len(), "{stem}");
        }
    }
}
