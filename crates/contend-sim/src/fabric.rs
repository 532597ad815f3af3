//! The fabric: the resources traffic competes for (each direction of each
//! link, each root complex's P2P forwarding) and the channel paths between
//! endpoints.

use crate::params::{ModelParams, ns};
use contend_topo::{Bytes, BytesPerSec, LinkKind, NodeIdx, NodeKind, Picos, TlpKind, Topology};
use contend_workload::Resource;
use std::collections::HashMap;

pub(crate) type ChId = u32;
pub(crate) type PathId = u32;

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

/// Credits a receiver advertises for one TLP type; `None` = infinite.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CreditLimit {
    pub hdr: Option<u32>,
    pub data: Option<u32>,
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
    /// Bytes a packet occupies on this channel.
    #[inline]
    pub fn wire(&self, kind: TlpKind, payload: u32) -> u32 {
        if self.pcie {
            kind.wire_size(Bytes(payload as u64)).0 as u32
        } else {
            payload.max(16)
        }
    }
    /// Serialization time of `wire` bytes: fixed-point picoseconds per byte
    /// (32 fractional bits), rounded up; exact to well under a picosecond.
    #[inline]
    pub fn ser(&self, wire: u32) -> Picos {
        Picos((wire as u64 * self.ps_per_byte_fp).div_ceil(1 << 32))
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
    /// Smallest max payload size along the path (4096 if no PCIe link).
    pub mps: u32,
    /// Read completion boundary of the PCIe link nearest the far end (64 if none).
    pub rcb: u32,
}

#[derive(Debug)]
pub(crate) struct Fabric {
    pub chans: Vec<ChannelSpec>,
    pub paths: Vec<Path>,
    index: FxMap<(NodeIdx, NodeIdx), PathId>,
    link_dir: FxMap<(u32, u8), ChId>,
    fabric_of: FxMap<NodeIdx, (ChId, ChId)>,
}

impl Fabric {
    pub fn new(topo: &Topology, p: &ModelParams) -> Fabric {
        let mut f = Fabric {
            chans: vec![],
            paths: vec![],
            index: FxMap::default(),
            link_dir: FxMap::default(),
            fabric_of: FxMap::default(),
        };
        let inf = CreditLimit {
            hdr: None,
            data: None,
        };
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
                let credits = if recv.is_endpoint() {
                    [inf; 3]
                } else if matches!(l.kind, LinkKind::Pcie(_)) {
                    [
                        CreditLimit {
                            hdr: Some(p.pcie.posted_hdr_credits),
                            data: Some(p.pcie.posted_data_bytes),
                        },
                        CreditLimit {
                            hdr: Some(p.pcie.nonposted_hdr_credits),
                            data: None,
                        },
                        CreditLimit {
                            hdr: Some(p.pcie.completion_hdr_credits),
                            data: Some(p.pcie.completion_data_bytes),
                        },
                    ]
                } else {
                    let b = Some(p.root_complex.buffer_bytes);
                    [
                        CreditLimit { hdr: None, data: b },
                        CreditLimit {
                            hdr: Some(p.pcie.nonposted_hdr_credits * 4),
                            data: None,
                        },
                        CreditLimit { hdr: None, data: b },
                    ]
                };
                let name = Resource::Link {
                    from: topo.node(from).id.clone(),
                    to: topo.node(to).id.clone(),
                };
                f.link_dir.insert((l.idx.0, dir), f.chans.len() as ChId);
                f.chans.push(ChannelSpec {
                    name,
                    kind: ChKind::Link { link: l.idx.0, dir },
                    rate,
                    latency: lat,
                    pcie,
                    credits,
                    collapse: false,
                    ps_per_byte_fp: ps_per_byte_fp(rate),
                });
            }
        }
        for (i, n) in topo.nodes().iter().enumerate() {
            if let NodeKind::RootComplex(rc) = &n.kind {
                let idx = NodeIdx(i as u32);
                let lat = rc.latency.unwrap_or(ns(p.root_complex.latency_ns));
                let bw = rc
                    .p2p_bandwidth
                    .unwrap_or(BytesPerSec::from_gbps(p.root_complex.p2p_bandwidth_gbps));
                let buf = CreditLimit {
                    hdr: None,
                    data: Some(p.root_complex.buffer_bytes),
                };
                let np = CreditLimit {
                    hdr: Some(p.pcie.nonposted_hdr_credits * 4),
                    data: None,
                };
                let fab = f.chans.len() as ChId;
                f.chans.push(ChannelSpec {
                    name: Resource::RootComplexP2p { rc: n.id.clone() },
                    kind: ChKind::Fabric { rc: idx },
                    rate: Some(bw),
                    latency: lat,
                    pcie: false,
                    credits: [buf, np, buf],
                    collapse: rc.posted_write_collapse,
                    ps_per_byte_fp: ps_per_byte_fp(Some(bw)),
                });
                f.chans.push(ChannelSpec {
                    name: Resource::RootComplexMemory { rc: n.id.clone() },
                    kind: ChKind::Transit { rc: idx },
                    rate: None,
                    latency: lat,
                    pcie: false,
                    credits: [buf, np, buf],
                    collapse: false,
                    ps_per_byte_fp: 0,
                });
                f.fabric_of.insert(idx, (fab, fab + 1));
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
        let target_rc = route
            .hops
            .iter()
            .rev()
            .map(|h| h.to)
            .chain(std::iter::once(from))
            .find(|n| matches!(topo.node(*n).kind, NodeKind::RootComplex(_)))
            .or_else(|| {
                route
                    .hops
                    .iter()
                    .rev()
                    .map(|h| h.from)
                    .find(|n| matches!(topo.node(*n).kind, NodeKind::RootComplex(_)))
            });
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
                    if self.chans[fab as usize].collapse
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
        let mps = pcie.iter().map(|s| s.mps.0 as u32).min().unwrap_or(4096);
        let rcb = pcie.last().map_or(64, |s| s.rcb.0 as u32);
        let id = self.paths.len() as PathId;
        self.paths.push(Path {
            chans,
            collapse_at,
            nvlink_only,
            mps,
            rcb,
        });
        self.index.insert((from, to), id);
        Some(id)
    }

    /// Unloaded one-way time of one packet of `payload` along a path
    /// (store and forward at every hop).
    pub fn one_way(&self, path: PathId, kind: TlpKind, payload: u32) -> Picos {
        let mut t = Picos::ZERO;
        for &c in &self.paths[path as usize].chans {
            let ch = &self.chans[c as usize];
            t += ch.latency + ch.ser(ch.wire(kind, payload));
        }
        t
    }
}

/// A small, fast, deterministic hasher for the simulator's integer keys
/// (the FxHash multiply-rotate scheme); std's SipHash costs more than the
/// work it guards on the hot path.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;
