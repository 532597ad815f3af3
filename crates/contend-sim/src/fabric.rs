//! DESIGN 1, 4, 5 — the fabric: the resources traffic competes for (each
//! direction of each link, each root complex's P2P forwarding and its pass
//! to memory) as channels, and the channel paths between endpoints.

use crate::credits::{CreditLimit, receiver_credits};
use crate::ids::{Arena, ChId, FxMap, PathId};
use crate::params::{ModelParams, ns};
use contend_topo::{Bytes, BytesPerSec, LinkKind, NodeIdx, NodeKind, Picos, TlpKind, Topology};
use contend_workload::Resource;

/// What a channel models.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ChKind {
    /// One direction of a link: (link index, 0 for a→b / 1 for b→a).
    Link { link: u32, dir: u8 },
    /// A root complex forwarding between root ports (P2P), rate-capped.
    Fabric { rc: NodeIdx },
    /// A root complex passing traffic to or from memory (latency only).
    Transit { rc: NodeIdx },
}

#[derive(Clone, Debug)]
pub(crate) struct ChannelSpec {
    pub name: Resource,
    pub kind: ChKind,
    /// Bytes per second on the wire after DLLP overhead; `None`: no limit.
    pub rate: Option<BytesPerSec>,
    pub latency: Picos,
    /// TLP framing applies (PCIe links); other channels carry payload only.
    pub pcie: bool,
    /// Receiver buffer per type: posted, non-posted, completion.
    pub credits: [CreditLimit; 3],
    /// Posted-write collapse applies (fabric of a marked root complex).
    pub collapse: bool,
    /// Smallest unit a non-PCIe channel moves (`fabric.min_wire_bytes`).
    pub min_wire: u32,
    /// Picoseconds per byte << 32 (0 for channels with no rate limit).
    pub ps_per_byte_fp: u64,
}

fn ps_per_byte_fp(rate: Option<BytesPerSec>) -> u64 {
    match rate {
        Some(r) if r.0 > 0 => ((1_000_000_000_000u128 << 32) / r.0 as u128) as u64,
        Some(_) => u64::MAX >> 16,
        None => 0,
    }
}

impl ChannelSpec {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: Resource,
        kind: ChKind,
        rate: Option<BytesPerSec>,
        latency: Picos,
        pcie: bool,
        credits: [CreditLimit; 3],
        collapse: bool,
        min_wire: u32,
    ) -> ChannelSpec {
        ChannelSpec {
            name,
            kind,
            rate,
            latency,
            pcie,
            credits,
            collapse,
            min_wire,
            ps_per_byte_fp: ps_per_byte_fp(rate),
        }
    }

    /// Bytes a packet occupies on this channel.
    #[inline]
    pub fn wire(&self, kind: TlpKind, payload: u32) -> u32 {
        if self.pcie {
            kind.wire_size(Bytes(payload as u64)).0 as u32
        } else {
            payload.max(self.min_wire)
        }
    }
    /// Serialization time of `wire` bytes: fixed-point picoseconds per byte
    /// (32 fractional bits), rounded up; exact to well under a picosecond.
    #[inline]
    pub fn ser(&self, wire: u32) -> Picos {
        Picos((wire as u64 * self.ps_per_byte_fp).div_ceil(1 << 32))
    }
    /// A root-complex stage (passed inline, see [`crate::root_complex`]).
    #[inline]
    pub fn is_stage(&self) -> bool {
        !matches!(self.kind, ChKind::Link { .. })
    }
}

/// A channel sequence from one endpoint to another.
#[derive(Clone, Debug)]
pub(crate) struct Path {
    pub chans: Vec<ChId>,
    /// For each fabric channel with collapse on: (position, ingress channel, target root complex).
    pub collapse_at: Vec<(usize, ChId, NodeIdx)>,
    /// Every link in the path is NVLink (no PCIe tags apply).
    pub nvlink_only: bool,
    /// Smallest max payload size along the path (`fabric.no_pcie_mps` if no PCIe link).
    pub mps: u32,
    /// Read completion boundary of the PCIe link nearest the far end (`fabric.no_pcie_rcb` if none).
    pub rcb: u32,
    /// The endpoint the path ends at.
    pub end: NodeIdx,
}

#[derive(Debug)]
pub(crate) struct Fabric {
    pub chans: Arena<ChId, ChannelSpec>,
    pub paths: Arena<PathId, Path>,
    index: FxMap<(NodeIdx, NodeIdx), PathId>,
    link_dir: FxMap<(u32, u8), ChId>,
    fabric_of: FxMap<NodeIdx, (ChId, ChId)>,
    no_pcie_mps: u32,
    no_pcie_rcb: u32,
}

impl Fabric {
    pub fn new(topo: &Topology, p: &ModelParams) -> Fabric {
        let mut f = Fabric {
            chans: Arena::default(),
            paths: Arena::default(),
            index: FxMap::default(),
            link_dir: FxMap::default(),
            fabric_of: FxMap::default(),
            no_pcie_mps: p.fabric.no_pcie_mps,
            no_pcie_rcb: p.fabric.no_pcie_rcb,
        };
        let min_wire = p.fabric.min_wire_bytes;
        for l in topo.links() {
            for dir in 0..2u8 {
                let (from, to) = if dir == 0 { (l.a, l.b) } else { (l.b, l.a) };
                let recv = &topo.node(to).kind;
                let (rate, lat, pcie) = match &l.kind {
                    LinkKind::Pcie(s) => {
                        let fwd = match recv {
                            NodeKind::Switch { latency } => {
                                latency.unwrap_or(ns(p.switch.latency_ns))
                            }
                            _ => Picos::ZERO,
                        };
                        (
                            Some(s.raw_rate().scale(1.0 - p.pcie.dllp_overhead)),
                            ns(p.pcie.link_latency_ns) + fwd,
                            true,
                        )
                    }
                    LinkKind::Nvlink { bandwidth, latency } => (Some(*bandwidth), *latency, false),
                    LinkKind::Cpu {
                        bandwidth, latency, ..
                    } => (Some(*bandwidth), *latency, false),
                    LinkKind::Memory { bandwidth } => (Some(*bandwidth), Picos::ZERO, false),
                };
                let name = Resource::Link {
                    from: topo.node(from).id.clone(),
                    to: topo.node(to).id.clone(),
                };
                let id = f.chans.push(ChannelSpec::new(
                    name,
                    ChKind::Link { link: l.idx.0, dir },
                    rate,
                    lat,
                    pcie,
                    receiver_credits(recv, &l.kind, p),
                    false,
                    min_wire,
                ));
                f.link_dir.insert((l.idx.0, dir), id);
            }
        }
        for (i, n) in topo.nodes().iter().enumerate() {
            if let NodeKind::RootComplex(rc) = &n.kind {
                let idx = NodeIdx(i as u32);
                let [fab, transit] = crate::root_complex::stages(&n.id, idx, rc, p);
                let fab = f.chans.push(fab);
                let transit = f.chans.push(transit);
                f.fabric_of.insert(idx, (fab, transit));
            }
        }
        f
    }

    /// The path from endpoint `from` to endpoint `to` (cached).
    pub fn path(&mut self, topo: &Topology, from: NodeIdx, to: NodeIdx) -> Option<PathId> {
        if let Some(p) = self.index.get(&(from, to)) {
            return Some(*p);
        }
        let route = topo.route(from, to)?;
        let mut chans = Vec::new();
        let mut collapse_at = Vec::new();
        let target_rc = crate::collapse::target_root_complex(topo, from, &route);
        for (i, h) in route.hops.iter().enumerate() {
            let dir = h.direction(topo) as u8;
            chans.push(self.link_dir[&(h.link.0, dir)]);
            if let Some(next) = route.hops.get(i + 1)
                && let Some(&(fab, transit)) = self.fabric_of.get(&h.to)
            {
                let mem =
                    |l: contend_topo::LinkIdx| matches!(topo.link(l).kind, LinkKind::Memory { .. });
                if mem(h.link) || mem(next.link) {
                    chans.push(transit);
                } else {
                    if self.chans[fab].collapse
                        && let Some(t) = target_rc
                    {
                        collapse_at.push((chans.len(), *chans.last().unwrap_or(&fab), t));
                    }
                    chans.push(fab);
                }
            }
        }
        let nvlink_only = route
            .hops
            .iter()
            .all(|h| matches!(topo.link(h.link).kind, LinkKind::Nvlink { .. }));
        let pcie: Vec<_> = route
            .hops
            .iter()
            .filter_map(|h| match &topo.link(h.link).kind {
                LinkKind::Pcie(s) => Some(*s),
                _ => None,
            })
            .collect();
        let mps = pcie
            .iter()
            .map(|s| s.mps.0 as u32)
            .min()
            .unwrap_or(self.no_pcie_mps);
        let rcb = pcie.last().map_or(self.no_pcie_rcb, |s| s.rcb.0 as u32);
        let id = self.paths.push(Path {
            chans,
            collapse_at,
            nvlink_only,
            mps,
            rcb,
            end: to,
        });
        self.index.insert((from, to), id);
        Some(id)
    }

    /// The path between two endpoints of a validated topology (which routes
    /// every endpoint pair).
    pub fn route(&mut self, topo: &Topology, from: NodeIdx, to: NodeIdx) -> PathId {
        self.path(topo, from, to)
            .expect("a validated topology routes every endpoint pair")
    }

    /// Unloaded one-way time of one packet of `payload` along a path
    /// (store and forward at every hop).
    pub fn one_way(&self, path: PathId, kind: TlpKind, payload: u32) -> Picos {
        let mut t = Picos::ZERO;
        for &c in &self.paths[path].chans {
            let ch = &self.chans[c];
            t += ch.latency + ch.ser(ch.wire(kind, payload));
        }
        t
    }

    /// Adds, for every rate-limited channel of `path`, the wire bytes it
    /// carries per payload byte: one `kind` TLP of `tlp_payload` per `per`
    /// bytes moved.
    pub fn uses(
        &self,
        path: PathId,
        kind: TlpKind,
        tlp_payload: u32,
        per: u32,
        uses: &mut Vec<(ChId, f64)>,
    ) {
        for &c in &self.paths[path].chans {
            let s = &self.chans[c];
            if s.rate.is_some() {
                uses.push((c, s.wire(kind, tlp_payload) as f64 / per as f64));
            }
        }
    }
}
