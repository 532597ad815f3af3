//! Path types between GPUs, as NCCL computes and ranks them: replicates
//! `ncclTopoSetPaths` and `ncclTopoComputePaths` of `src/graph/paths.cc` and
//! the `PATH_*` ranking of `src/graph/topo.h` (identical at v2.27.7-1,
//! v2.28.9-1 and v2.29.7-1).
//!
//! NCCL finds every path by a breadth-first search from each GPU and CPU
//! over its own system graph ([`crate::system`]): a path keeps the fewest
//! hops, then the highest bandwidth; its type is the worst hop seen. A PCI
//! link between two PCI switches makes it PXB, a PCI link into or out of a
//! CPU (NUMA node) makes it PHB, the CPU-to-CPU link makes it SYS.
//! `nvidia-smi` prints NODE for "through the interconnect between host
//! bridges of one NUMA node": NCCL has no such type, because every host
//! bridge of a NUMA node is the same CPU node to it, so NODE is PHB here.

use crate::system::{LinkType, NodeKind, System};
use serde::Serialize;
use std::fmt;

/// NCCL's path types, in NCCL's order (`PATH_LOC` 0 … `PATH_DIS` 11,
/// `src/graph/topo.h` at v2.27.7-1, v2.28.9-1, v2.29.7-1): a higher rank is
/// farther.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum PathType {
    /// The GPU itself.
    Loc,
    /// Direct NVLink.
    Nvl,
    /// NVLink through an intermediate GPU.
    Nvb,
    /// Through a C2C link to the CPU.
    C2c,
    /// At most one PCIe switch between them.
    Pix,
    /// Several PCIe switches, no host bridge.
    Pxb,
    /// GPU to NIC through C2C then PCIe (NIC paths only).
    P2c,
    /// GPU to NIC through an intermediate GPU (NIC paths only).
    Pxn,
    /// Through a PCIe host bridge (a CPU's root complex). nvidia-smi's NODE is this.
    Phb,
    /// Across the SMP interconnect between NUMA nodes (UPI, xGMI).
    Sys,
    /// Through the network.
    Net,
    /// Disconnected.
    Dis,
}

impl PathType {
    /// Every type in NCCL's order.
    pub const ALL: [PathType; 12] = [
        PathType::Loc,
        PathType::Nvl,
        PathType::Nvb,
        PathType::C2c,
        PathType::Pix,
        PathType::Pxb,
        PathType::P2c,
        PathType::Pxn,
        PathType::Phb,
        PathType::Sys,
        PathType::Net,
        PathType::Dis,
    ];

    /// NCCL's integer for this type (`PATH_*` in `src/graph/topo.h`).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The name NCCL prints (`topoPathTypeStr`, `src/graph/topo.cc`).
    pub fn name(self) -> &'static str {
        match self {
            PathType::Loc => "LOC",
            PathType::Nvl => "NVL",
            PathType::Nvb => "NVB",
            PathType::C2c => "C2C",
            PathType::Pix => "PIX",
            PathType::Pxb => "PXB",
            PathType::P2c => "P2C",
            PathType::Pxn => "PXN",
            PathType::Phb => "PHB",
            PathType::Sys => "SYS",
            PathType::Net => "NET",
            PathType::Dis => "DIS",
        }
    }

    /// The type NCCL prints as `name` (exact, case-sensitive, as NCCL compares).
    pub fn from_name(name: &str) -> Option<PathType> {
        PathType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// A link type read as a path type (`LINK_*` and `PATH_*` share numbers
    /// on purpose, `src/graph/topo.h`).
    pub(crate) fn of_link(t: LinkType) -> PathType {
        match t {
            LinkType::Loc | LinkType::Net => PathType::Loc,
            LinkType::Nvl => PathType::Nvl,
            LinkType::C2c => PathType::C2c,
            LinkType::Pci => PathType::Pix,
            LinkType::Sys => PathType::Sys,
        }
    }
}

impl fmt::Display for PathType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `LOC_BW` (`src/graph/topo.h`, v2.27.7-1 … v2.29.7-1): the bandwidth NCCL
/// gives a node's path to itself, and a link it does not limit, in GB/s.
pub(crate) const LOC_BW: f32 = 5000.0;

/// One path in NCCL's system graph: the directed links it takes, its
/// bottleneck bandwidth (GB/s, as NCCL's `float`) and its type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Path {
    pub links: Vec<usize>,
    pub bw: f32,
    pub ptype: PathType,
}

impl Path {
    pub fn hops(&self) -> usize {
        self.links.len()
    }
}

/// Every node's path to every GPU and CPU (`node->paths[GPU|CPU]` in NCCL).
#[derive(Clone, Debug)]
pub(crate) struct Paths {
    /// `to[base][node]`: the path from `node` to `base` (bases are GPU and
    /// CPU nodes), `None` while disconnected.
    to: Vec<Vec<Option<Path>>>,
}

impl Paths {
    /// The path from node `from` to node `to`.
    pub fn get(&self, from: usize, to: usize) -> Option<&Path> {
        self.to
            .get(to)
            .and_then(|v| v.get(from))
            .and_then(|p| p.as_ref())
    }
    pub fn set(&mut self, from: usize, to: usize, p: Path) {
        self.to[to][from] = Some(p);
    }
}

/// Breadth-first search from every GPU and CPU (`ncclTopoSetPaths`,
/// `src/graph/paths.cc`): a node's path to the base is updated when the new
/// one is no longer in hops and strictly better in bandwidth; a GPU forwards
/// only one NVLink hop to another GPU (`NCCL_NVB_DISABLE` turns that off).
pub(crate) fn compute(sys: &System, nvb_disable: bool) -> Paths {
    let n = sys.nodes.len();
    let mut paths = Paths {
        to: vec![vec![None; n]; n],
    };
    for base in 0..n {
        if matches!(
            sys.nodes[base].kind,
            NodeKind::Gpu { .. } | NodeKind::Cpu { .. }
        ) {
            bfs_from(sys, base, nvb_disable, &mut paths.to[base]);
        }
    }
    paths
}

fn bfs_from(sys: &System, base: usize, nvb_disable: bool, out: &mut [Option<Path>]) {
    out[base] = Some(Path {
        links: vec![],
        bw: LOC_BW,
        ptype: PathType::Loc,
    });
    let mut frontier = vec![base];
    while !frontier.is_empty() {
        let mut next: Vec<usize> = Vec::new();
        for &node in &frontier {
            let here = out[node].clone().expect("frontier nodes have a path");
            for &l in &sys.nodes[node].links {
                let link = &sys.links[l];
                let rem = link.to;
                let bw = here.bw.min(link.bw);
                // A GPU relays only as one NVLink hop to another GPU (NVB).
                if node != base
                    && matches!(sys.nodes[node].kind, NodeKind::Gpu { .. })
                    && (nvb_disable
                        || link.ltype != LinkType::Nvl
                        || !matches!(sys.nodes[rem].kind, NodeKind::Gpu { .. })
                        || here.hops() > 1)
                {
                    continue;
                }
                let better = match &out[rem] {
                    None => true,
                    Some(p) => p.hops() > here.hops() && p.bw < bw,
                };
                if !better {
                    continue;
                }
                // The path from `rem` starts with its own link back to `node`.
                let Some(rev) = sys.nodes[rem]
                    .links
                    .iter()
                    .copied()
                    .find(|&r| sys.links[r].to == node && sys.links[r].ltype == link.ltype)
                else {
                    continue;
                };
                let mut ptype = PathType::of_link(link.ltype);
                let (nk, rk) = (&sys.nodes[node].kind, &sys.nodes[rem].kind);
                if matches!(nk, NodeKind::Pci { .. }) && matches!(rk, NodeKind::Pci { .. }) {
                    ptype = PathType::Pxb;
                }
                if link.ltype == LinkType::Pci
                    && (matches!(nk, NodeKind::Cpu { .. }) || matches!(rk, NodeKind::Cpu { .. }))
                {
                    ptype = PathType::Phb;
                }
                if matches!(nk, NodeKind::Gpu { .. })
                    && here.ptype == PathType::Nvl
                    && ptype == PathType::Nvl
                    && here.hops() + 1 > 1
                {
                    ptype = PathType::Nvb;
                }
                let mut links = Vec::with_capacity(here.hops() + 1);
                links.push(rev);
                links.extend_from_slice(&here.links);
                out[rem] = Some(Path {
                    links,
                    bw,
                    ptype: here.ptype.max(ptype),
                });
                if !next.contains(&rem) {
                    next.push(rem);
                }
            }
        }
        frontier = next;
    }
}

/// NCCL's merge of two path types when a path is diverted through a CPU
/// (`mergePathType`, `src/graph/paths.cc`): the worse of the two, except
/// PHB joined to C2C, which is P2C.
pub(crate) fn merge(a: PathType, b: PathType) -> PathType {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    if hi == PathType::Phb && lo == PathType::C2c {
        PathType::P2c
    } else {
        hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_types_keep_ncclss_numbers_and_names() {
        assert_eq!(PathType::Pix.code(), 4);
        assert_eq!(PathType::Phb.code(), 8);
        assert_eq!(PathType::Sys.code(), 9);
        assert_eq!(PathType::Dis.code(), 11);
        assert_eq!(PathType::from_name("PXB"), Some(PathType::Pxb));
        assert_eq!(
            PathType::from_name("sys"),
            None,
            "NCCL compares case-sensitively"
        );
        assert_eq!(
            PathType::from_name("NODE"),
            None,
            "NODE is not an NCCL path type"
        );
        assert_eq!(merge(PathType::Phb, PathType::C2c), PathType::P2c);
        assert_eq!(merge(PathType::Sys, PathType::Phb), PathType::Sys);
    }
}
