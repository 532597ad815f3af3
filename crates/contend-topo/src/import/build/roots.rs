//! Root complexes and sockets: each root with its NUMA node, the NUMA
//! nodes renumbered densely as sockets, and the root complexes' ids (host
//! bridges by bus; implied ones numbered per NUMA node).

use super::{Gpu, Root, Warnings};
use crate::import::Facts;
use std::collections::{BTreeMap, BTreeSet};

pub(super) struct Roots {
    /// Every root a GPU hangs from, with the NUMA node of its first GPU
    /// that has one.
    numa: BTreeMap<Root, Option<i64>>,
    names: BTreeMap<Root, String>,
    socket_of_numa: BTreeMap<i64, u32>,
    /// Per socket, its roots in order.
    pub by_socket: BTreeMap<u32, Vec<Root>>,
    /// The sockets the roots are on.
    pub sockets: BTreeSet<u32>,
}

impl Roots {
    pub fn of(gpus: &[Gpu], facts: &Facts, w: &mut Warnings) -> Roots {
        let mut roots: BTreeMap<Root, Option<i64>> = BTreeMap::new();
        for g in gpus {
            let r = g.root.expect("set");
            let e = roots.entry(r).or_insert(None);
            if e.is_none() {
                *e = g.numa;
            }
        }
        let numas: BTreeSet<i64> = roots.values().flatten().copied().collect();
        if roots.values().any(|v| v.is_none()) {
            let only_one = facts.numa_nodes == Some(1) || roots.len() == 1;
            if !only_one {
                w.add(
                    roots
                        .iter()
                        .filter(|(_, v)| v.is_none())
                        .map(|(r, _)| match r {
                            Root::Host(..) => host_bridge_id(*r),
                            _ => "the implied root complexes".into(),
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                    "socket",
                    "no input gives the NUMA node of its GPUs (lspci -vv `NUMA node`, topo -m `NUMA Affinity`): written on socket 0",
                );
            }
        }
        let mut names: BTreeMap<Root, String> = BTreeMap::new();
        let mut per_numa: BTreeMap<i64, Vec<Root>> = BTreeMap::new();
        for r in roots.keys() {
            match r {
                Root::Host(..) => {
                    names.insert(*r, host_bridge_id(*r));
                }
                Root::Numa(n, _) | Root::Class(n, _) => per_numa.entry(*n).or_default().push(*r),
            }
        }
        for (n, rs) in &per_numa {
            for (k, r) in rs.iter().enumerate() {
                let base = if *n >= 0 {
                    format!("rc_numa{n}")
                } else {
                    "rc".into()
                };
                let id = if rs.len() == 1 && *n >= 0 {
                    base
                } else {
                    format!("{base}_{k}")
                };
                names.insert(*r, id);
            }
        }
        let socket_of_numa: BTreeMap<i64, u32> = numas
            .iter()
            .enumerate()
            .map(|(k, n)| (*n, k as u32))
            .collect();
        if numas.len() > 2 || facts.numa_nodes.is_some_and(|k| k > 2) {
            w.add(
                "the root complexes, iods and memories",
                "socket",
                "NUMA nodes are written as sockets: with NPS2/NPS4 or SNC several NUMA nodes share a socket (set `socket` and join their root complexes on one iod)",
            );
        }
        let mut out = Roots {
            numa: roots,
            names,
            socket_of_numa,
            by_socket: BTreeMap::new(),
            sockets: BTreeSet::new(),
        };
        for r in out.numa.keys() {
            let s = out.socket(r);
            out.by_socket.entry(s).or_default().push(*r);
            out.sockets.insert(s);
        }
        out
    }

    /// Every root, in order.
    pub fn all(&self) -> impl Iterator<Item = &Root> {
        self.numa.keys()
    }

    /// The root complex's node id.
    pub fn rc_id(&self, r: Root) -> String {
        self.names[&r].clone()
    }

    /// The socket a root is on (socket 0 when no input gives its NUMA node).
    pub fn socket(&self, r: &Root) -> u32 {
        self.numa[r]
            .and_then(|n| self.socket_of_numa.get(&n).copied())
            .unwrap_or(0)
    }

    /// What a socket's CPU and memory links join: its root complex, or its
    /// iod when it has several.
    pub fn hub(&self, s: u32) -> String {
        let rs = &self.by_socket[&s];
        if rs.len() == 1 {
            self.rc_id(rs[0])
        } else {
            format!("iod{s}")
        }
    }
}

/// A host bridge's id: `rcBB` (root bus), `rcDDDD_BB` off domain 0.
fn host_bridge_id(root: Root) -> String {
    match root {
        Root::Host(0, bus) => format!("rc{bus:02x}"),
        Root::Host(d, bus) => format!("rc{d:04x}_{bus:02x}"),
        Root::Numa(n, k) | Root::Class(n, k) => format!("rc_numa{n}_{k}"),
    }
}
