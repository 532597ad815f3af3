//! DESIGN 1, 4, 5, 10 — the fabric: the resources traffic competes for as
//! channels (each direction of each link; each root complex's forwarding,
//! P2P aggregate, memory path and root ports; each I/O die; each
//! cross-socket P2P path) and the channel paths between endpoints.
//!
//! A path charges a root complex's forwarding latency once (where it enters
//! the CPU from a root port, or reaches host memory there), crosses an I/O
//! die's fabric once per die, and meets every cap on its way: the root ports
//! it enters and leaves by, each root complex's P2P aggregate, the memory
//! path, the die's P2P cap, the cross-socket P2P rule, the links. Stages
//! whose topology sets no cap and no rule are left out of paths.

use crate::engine::ids::{Arena, ChId, FxMap, PathId};
use crate::model::channel::{ChKind, ChannelSpec, StageRule};
use crate::model::collapse::{CollapseRule, target_root_complex};
use crate::model::credit_limits::receiver_credits;
use crate::model::cross_socket::CrossSocketRule;
use crate::model::root_complex::RcStageIds;
use crate::params::ModelParams;
use contend_topo::{LinkIdx, LinkKind, NodeIdx, NodeKind, Picos, TlpKind, Topology};
use contend_workload::Resource;

/// A channel sequence from one endpoint to another.
#[derive(Clone, Debug)]
pub(crate) struct Path {
    pub chans: Vec<ChId>,
    /// Positions of collapsing channels, with the path's (source, target root complex).
    pub collapse_at: Vec<(usize, NodeIdx, NodeIdx)>,
    /// Positions of cross-socket stages, with the path's (source, destination).
    pub cross_at: Vec<(usize, NodeIdx, NodeIdx)>,
    /// Every link in the path is NVLink (no PCIe tags apply).
    pub nvlink_only: bool,
    /// Smallest max payload size along the path (`fabric.no_pcie_mps` if no PCIe link).
    pub mps: u32,
    /// Read completion boundary of the PCIe link nearest the far end (`fabric.no_pcie_rcb` if none).
    pub rcb: u32,
    /// Largest read request the path passes: the smallest MRRS of its PCIe
    /// links and of the switches that force one (`fabric.no_pcie_mps` if none).
    pub mrrs: u32,
    /// Outstanding reads a requester may keep over it: `pcie.max_tags` with
    /// 10-bit tags end to end, else 256 (8-bit tags).
    pub max_tags: u32,
    /// The endpoint the path ends at.
    pub end: NodeIdx,
    /// Per hop: the latency a packet starting on that channel has passed
    /// since it left the previous link (that link's receiver pipeline and
    /// the stages since): pipeline, not buffer, so the credit it holds at
    /// the previous link comes back that much before it leaves.
    pub pipeline: Vec<Picos>,
    /// Index of the path's first hop in [`Fabric::hops`] (its hops follow
    /// in order).
    pub first: u32,
}

/// One hop of a path as the per-packet path reads it: the channel, and
/// what the path's own vectors give for that position
/// ([`Path::chans`], [`Path::pipeline`], [`Path::via`]), kept in one flat
/// table ([`Fabric::hops`]) so a hop is one read, not a chase through the
/// path's vectors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hop {
    pub chan: ChId,
    /// Its position in its path.
    pub hop: u16,
    /// The path's last hop.
    pub last: bool,
    /// [`Path::pipeline`] at this position.
    pub pipeline: Picos,
    /// [`Path::via`] at this position.
    pub via: Option<crate::model::collapse::Via>,
}

impl Path {
    /// What the rule of the channel at `hop` sees of this path.
    #[inline]
    pub fn via(&self, hop: u16) -> Option<crate::model::collapse::Via> {
        let hop = hop as usize;
        self.collapse_at
            .iter()
            .chain(&self.cross_at)
            .find(|(pos, _, _)| *pos == hop)
            .map(|&(_, a, b)| (a, b))
    }
}

/// The stages of one root complex.
#[derive(Clone, Debug, Default)]
struct RcStages {
    forward: Option<ChId>,
    p2p: Option<ChId>,
    to_memory: Option<ChId>,
    from_memory: Option<ChId>,
    /// Per root port (the PCIe link): (in, out).
    ports: FxMap<u32, (Option<ChId>, Option<ChId>)>,
    /// Per root port: P2P entering by it bound for the other socket.
    cross: FxMap<u32, ChId>,
}

#[derive(Debug)]
pub(crate) struct Fabric {
    pub chans: Arena<ChId, ChannelSpec>,
    pub paths: Arena<PathId, Path>,
    /// Every routed path's hops, path after path ([`Path::first`]).
    pub hops: Vec<Hop>,
    index: FxMap<(NodeIdx, NodeIdx), PathId>,
    /// [`Fabric::route`]'s dense cache: `from × nodes + to` → path index
    /// (`u32::MAX`: not routed yet).
    routed: Vec<u32>,
    nodes: usize,
    link_dir: FxMap<(u32, u8), ChId>,
    rcs: FxMap<NodeIdx, RcStages>,
    /// Per I/O die: (P2P crossing, any other crossing).
    dies: FxMap<NodeIdx, (ChId, ChId)>,
    /// Per cross-socket CPU link.
    cross: FxMap<u32, ChId>,
    no_pcie_mps: u32,
    no_pcie_rcb: u32,
    max_tags: u32,
}

/// 8-bit tags: the PCIe spec's 256 outstanding non-posted requests.
const EIGHT_BIT_TAGS: u32 = 256;

impl Fabric {
    pub fn new(topo: &Topology, p: &ModelParams) -> Fabric {
        let mut f = Fabric {
            chans: Arena::default(),
            paths: Arena::default(),
            hops: Vec::new(),
            index: FxMap::default(),
            routed: vec![u32::MAX; topo.nodes().len() * topo.nodes().len()],
            nodes: topo.nodes().len(),
            link_dir: FxMap::default(),
            rcs: FxMap::default(),
            dies: FxMap::default(),
            cross: FxMap::default(),
            no_pcie_mps: p.fabric.no_pcie_mps,
            no_pcie_rcb: p.fabric.no_pcie_rcb,
            max_tags: p.pcie.max_tags,
        };
        let min_wire = p.fabric.min_wire_bytes;
        for l in topo.links() {
            for dir in 0..2u8 {
                let (from, to) = if dir == 0 { (l.a, l.b) } else { (l.b, l.a) };
                let recv = &topo.node(to).kind;
                let mut pipeline = Picos::ZERO;
                let (rate, lat, pcie) = match &l.kind {
                    LinkKind::Pcie(s) => {
                        if let NodeKind::Switch(sw) = recv {
                            pipeline = sw.latency.unwrap_or(p.switch.latency_ns.to_picos());
                        }
                        (
                            Some(s.raw_rate().scale(1.0 - p.pcie.dllp_overhead)),
                            p.pcie.link_latency_ns.to_picos() + pipeline,
                            true,
                        )
                    }
                    LinkKind::Nvlink { bandwidth, latency }
                    | LinkKind::Cpu {
                        bandwidth, latency, ..
                    } => (Some(*bandwidth), *latency, false),
                    LinkKind::SwitchFabric { bandwidth, latency } => (*bandwidth, *latency, false),
                    LinkKind::Memory { bandwidth } => (Some(*bandwidth), Picos::ZERO, false),
                    LinkKind::Die => (None, Picos::ZERO, false),
                };
                // a switch's uplink carries the writes its collapse rule watches
                let rule = match (&l.kind, &topo.node(from).kind, dir) {
                    (LinkKind::Pcie(_), NodeKind::Switch(sw), 0) => {
                        CollapseRule::of(sw.collapse.as_ref(), p)
                            .map_or(StageRule::None, StageRule::Collapse)
                    }
                    _ => StageRule::None,
                };
                let name = Resource::Link {
                    from: topo.node(from).id.clone(),
                    to: topo.node(to).id.clone(),
                };
                let mut spec = ChannelSpec::new(
                    name,
                    ChKind::Link { link: l.idx.0, dir },
                    rate,
                    lat,
                    pcie,
                    receiver_credits(recv, &l.kind, p),
                    rule,
                    min_wire,
                );
                spec.pipeline = pipeline;
                let id = f.chans.push(spec);
                f.link_dir.insert((l.idx.0, dir), id);
            }
        }
        for (i, n) in topo.nodes().iter().enumerate() {
            let idx = NodeIdx(i as u32);
            match &n.kind {
                NodeKind::RootComplex(rc) => {
                    let st = crate::model::root_complex::stages(topo, idx, rc, p, &mut f.chans);
                    f.rcs.insert(idx, st.into());
                }
                NodeKind::CpuInterconnect {
                    latency,
                    p2p_bandwidth,
                    ..
                } => {
                    let lat = latency.unwrap_or(p.io_die.latency_ns.to_picos());
                    let credits = crate::model::credit_limits::stage_credits(p);
                    let mut stage = |rate| {
                        f.chans.push(ChannelSpec::new(
                            Resource::DieFabric { die: n.id.clone() },
                            ChKind::Stage,
                            rate,
                            lat,
                            false,
                            credits,
                            StageRule::None,
                            min_wire,
                        ))
                    };
                    let p2p = stage(*p2p_bandwidth);
                    let pass = stage(None);
                    f.dies.insert(idx, (p2p, pass));
                }
                _ => {}
            }
        }
        for l in topo.links() {
            if let LinkKind::Cpu { bandwidth, p2p, .. } = &l.kind
                && topo.socket_of(l.a) != topo.socket_of(l.b)
            {
                let rule = CrossSocketRule::of(p2p, *bandwidth, p);
                if rule.is_active(*bandwidth) {
                    let id = f.chans.push(ChannelSpec::new(
                        Resource::CrossSocket {
                            a: topo.node(l.a).id.clone(),
                            b: topo.node(l.b).id.clone(),
                        },
                        ChKind::Stage,
                        Some(rule.base),
                        Picos::ZERO,
                        false,
                        crate::model::credit_limits::stage_credits(p),
                        StageRule::CrossSocket(rule),
                        min_wire,
                    ));
                    f.cross.insert(l.idx.0, id);
                }
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
        let is_mem = |n: NodeIdx| matches!(topo.node(n).kind, NodeKind::HostMemory { .. });
        let p2p = !is_mem(from) && !is_mem(to);
        // the root port of root complex `rc` a PCIe link is
        let root_port = |l: LinkIdx, rc: NodeIdx| {
            let k = topo.link(l);
            matches!(k.kind, LinkKind::Pcie(_)) && k.b == rc
        };
        let target_rc = target_root_complex(topo, from, &route);
        let other_socket = p2p && topo.socket_of(from) != topo.socket_of(to);
        let mut chans = Vec::new();
        let mut collapse_at = Vec::new();
        let mut cross_at = Vec::new();
        let mut entered = false;
        // Traffic to or from host memory takes the memory path of the root
        // complex whose root ports carry it: the first one on the way to
        // memory, the last one on the way back (memory may hang off the
        // root complex or the I/O die).
        let is_rc = |n: NodeIdx| matches!(topo.node(n).kind, NodeKind::RootComplex(_));
        let on_route = || route.hops.iter().map(|h| h.to).filter(|&n| is_rc(n));
        let mem_rc = if is_mem(to) {
            on_route().next()
        } else if is_mem(from) {
            on_route().next_back()
        } else {
            None
        };
        let push = |chans: &mut Vec<ChId>, c: Option<ChId>| {
            if let Some(c) = c {
                chans.push(c);
            }
        };
        for (i, h) in route.hops.iter().enumerate() {
            let link = topo.link(h.link);
            if !matches!(link.kind, LinkKind::Die) {
                let c = self.link_dir[&(h.link.0, h.direction(topo) as u8)];
                if let StageRule::Collapse(_) = self.chans[c].rule
                    && let Some(t) = target_rc
                {
                    collapse_at.push((chans.len(), from, t));
                }
                chans.push(c);
            }
            if p2p && let Some(&c) = self.cross.get(&h.link.0) {
                cross_at.push((chans.len(), from, to));
                chans.push(c);
            }
            let Some(next) = route.hops.get(i + 1) else {
                continue;
            };
            let node = h.to;
            if let Some(st) = self.rcs.get(&node) {
                if !entered {
                    push(&mut chans, st.forward);
                    if other_socket {
                        push(&mut chans, st.cross.get(&h.link.0).copied());
                    }
                }
                entered = true;
                if Some(node) == mem_rc {
                    push(
                        &mut chans,
                        if is_mem(from) {
                            st.from_memory
                        } else {
                            st.to_memory
                        },
                    );
                } else if p2p {
                    if root_port(h.link, node) {
                        let port_in = st.ports.get(&h.link.0).and_then(|p| p.0);
                        if let Some(c) = port_in
                            && let StageRule::Collapse(_) = self.chans[c].rule
                            && let Some(t) = target_rc
                        {
                            collapse_at.push((chans.len(), from, t));
                        }
                        push(&mut chans, port_in);
                    }
                    push(&mut chans, st.p2p);
                    if root_port(next.link, node) {
                        push(&mut chans, st.ports.get(&next.link.0).and_then(|p| p.1));
                    }
                }
            } else if let Some(&(p2p_stage, pass)) = self.dies.get(&node) {
                chans.push(if p2p { p2p_stage } else { pass });
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
        let nodes = || {
            std::iter::once(from)
                .chain(route.hops.iter().map(|h| h.to))
                .map(|n| &topo.node(n).kind)
        };
        // A switch issues no reads: the MaxReadReq its ports report (a
        // register a requester's Device Control has; Broadcom and Microchip
        // switch ports show it fixed at 128 B) bounds no request passing
        // through. The WRX90 + PM50100 rigs' copy-engine reads run at
        // 50.4–51.6 GB/s while their GPUs serve as many reads as they make
        // (p2pmark's staggered probe), which 128-byte requests sharing the
        // link with the completions cannot reach (at most ~47 GB/s).
        let mrrs = pcie
            .iter()
            .map(|s| s.mrrs.0 as u32)
            .min()
            .unwrap_or(self.no_pcie_mps);
        let ten_bit = nodes().all(|k| match k {
            NodeKind::Gpu(g) => g.tags_10bit,
            NodeKind::Switch(sw) => sw.tags_10bit,
            _ => true,
        });
        let max_tags = if ten_bit {
            self.max_tags
        } else {
            self.max_tags.min(EIGHT_BIT_TAGS)
        };
        let mut pipeline = Vec::with_capacity(chans.len());
        let mut since = Picos::ZERO;
        for &c in &chans {
            pipeline.push(since);
            let s = &self.chans[c];
            since = if s.is_stage() {
                since + s.latency
            } else {
                s.pipeline
            };
        }
        let first = u32::try_from(self.hops.len()).expect("fewer than 2^32 hops");
        let path = Path {
            pipeline,
            chans,
            collapse_at,
            cross_at,
            nvlink_only,
            mps,
            rcb,
            mrrs,
            max_tags,
            end: to,
            first,
        };
        let n = path.chans.len();
        self.hops.extend((0..n).map(|i| Hop {
            chan: path.chans[i],
            hop: u16::try_from(i).expect("a path of fewer than 2^16 hops"),
            last: i + 1 == n,
            pipeline: path.pipeline[i],
            via: path.via(i as u16),
        }));
        let id = self.paths.push(path);
        self.index.insert((from, to), id);
        Some(id)
    }

    /// The path between two endpoints of a validated topology (which routes
    /// every endpoint pair).
    /// Looked up in a dense table once routed.
    #[inline]
    pub fn route(&mut self, topo: &Topology, from: NodeIdx, to: NodeIdx) -> PathId {
        let slot = from.0 as usize * self.nodes + to.0 as usize;
        if let Some(&p) = self.routed.get(slot)
            && p != u32::MAX
        {
            return PathId(p);
        }
        let p = self
            .path(topo, from, to)
            .expect("a validated topology routes every endpoint pair");
        if let Some(r) = self.routed.get_mut(slot) {
            *r = p.0;
        }
        p
    }

    /// Unloaded one-way time of one packet of `payload` along a path
    /// (store and forward at every hop).
    pub fn one_way(&self, path: PathId, kind: TlpKind, payload: u32) -> Picos {
        self.one_way_to(path, self.paths[path].chans.len(), kind, payload)
    }

    /// Unloaded time for one packet of `payload` to pass the first `hops`
    /// channels of a path: when it reaches channel `hops`.
    pub fn one_way_to(&self, path: PathId, hops: usize, kind: TlpKind, payload: u32) -> Picos {
        let mut t = Picos::ZERO;
        for &c in &self.paths[path].chans[..hops] {
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

impl From<RcStageIds> for RcStages {
    fn from(s: RcStageIds) -> RcStages {
        RcStages {
            forward: s.forward,
            p2p: s.p2p,
            to_memory: s.to_memory,
            from_memory: s.from_memory,
            ports: s.ports.into_iter().map(|(l, i, o)| (l, (i, o))).collect(),
            cross: s.cross_ports.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_workload::default_scenario;

    /// The flat hop table says what each path's own vectors say, hop by
    /// hop: the channel, the pipeline, what the channel's rule sees
    /// ([`Path::via`]), the position and the last hop; on the default
    /// scenario's fabric (two sockets: cross-socket stages), every pair
    /// of nodes routed.
    #[test]
    fn the_hop_table_matches_every_paths_vectors() {
        let sc = default_scenario(None).unwrap();
        let topo = sc.topology();
        let mut f = Fabric::new(topo, &ModelParams::default());
        let n = topo.nodes().len();
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    let _ = f.path(topo, NodeIdx(a as u32), NodeIdx(b as u32));
                }
            }
        }
        assert!(f.paths.len() > 1);
        let mut seen = 0;
        for path in f.paths.iter() {
            let len = path.chans.len();
            let hops = &f.hops[path.first as usize..path.first as usize + len];
            for (i, h) in hops.iter().enumerate() {
                assert_eq!(h.chan, path.chans[i]);
                assert_eq!(h.hop as usize, i);
                assert_eq!(h.last, i + 1 == len);
                assert_eq!(h.pipeline, path.pipeline[i]);
                assert_eq!(h.via, path.via(i as u16));
                seen += h.via.is_some() as usize;
            }
        }
        assert_eq!(
            f.hops.len(),
            f.paths.iter().map(|p| p.chans.len()).sum::<usize>()
        );
        assert!(seen > 0, "some hop has a rule that sees the path");
    }
}
