//! DESIGN 5, 10 — the root complex as built: a forwarding latency charged
//! once where a path enters the CPU; per root port and direction, a P2P
//! forwarding cap (each port's ingress and egress its own resource); an
//! aggregate P2P cap over all its ports; a cap on its path to host memory
//! per direction; on a box of several sockets, a cap on the P2P a root port
//! sends to the other socket (`cross_socket.port_gbps`); and, where the
//! platform shows it, posted-write collapse on what enters a root port
//! ([`crate::model::collapse`]). Stages without a cap or
//! rule are not built. At TLP fidelity a packet passes each stage inline: it
//! takes its slot of the stage's bandwidth when it reaches the stage and is
//! ready for the next link at the end of it, costing no event (the
//! reference, `TlpOptions::queued_stages`, spends an event per stage).

use crate::engine::ids::{Arena, ChId};
use crate::model::channel::{ChKind, ChannelSpec, StageRule};
use crate::model::collapse::CollapseRule;
use crate::model::credit_limits::stage_credits;
use crate::params::ModelParams;
use contend_topo::{BytesPerSec, LinkKind, NodeIdx, Picos, RootComplexSpec, Topology};
use contend_workload::{Resource, Way};

/// Builds the stages of root complex `rc` (node `idx`) into `chans`.
pub(crate) fn stages(
    topo: &Topology,
    idx: NodeIdx,
    rc: &RootComplexSpec,
    p: &ModelParams,
    chans: &mut Arena<ChId, ChannelSpec>,
) -> RcStageIds {
    let id = topo.node(idx).id.clone();
    let pr = &p.root_complex;
    let credits = stage_credits(p);
    let min_wire = p.fabric.min_wire_bytes;
    let gbps = |v: Option<f64>| v.map(BytesPerSec::from_gbps);
    let mut stage = |name: Resource, rate: Option<BytesPerSec>, lat: Picos, rule: StageRule| {
        chans.push(ChannelSpec::new(
            name,
            ChKind::Stage,
            rate,
            lat,
            false,
            credits,
            rule,
            min_wire,
        ))
    };
    let forward = Some(stage(
        Resource::RootComplexForward { rc: id.clone() },
        None,
        rc.latency.unwrap_or(pr.latency_ns.to_picos()),
        StageRule::None,
    ));
    let p2p = rc.p2p_bandwidth.or(gbps(pr.p2p_bandwidth_gbps)).map(|r| {
        stage(
            Resource::RootComplexP2p { rc: id.clone() },
            Some(r),
            Picos::ZERO,
            StageRule::None,
        )
    });
    let memory = rc.memory_bandwidth.or(gbps(pr.memory_bandwidth_gbps));
    let mut mem = |way| {
        memory.map(|r| {
            stage(
                Resource::RootComplexMemory {
                    rc: id.clone(),
                    way,
                },
                Some(r),
                Picos::ZERO,
                StageRule::None,
            )
        })
    };
    let to_memory = mem(Way::In);
    let from_memory = mem(Way::Out);
    let port_cap = rc.port_p2p_bandwidth.or(gbps(pr.port_p2p_gbps));
    let collapse = CollapseRule::of(rc.collapse.as_ref(), p);
    // P2P bound for the other socket, per root port it enters by (a box
    // with more than one socket, where the constants cap it)
    let sockets = topo.links().iter().any(|l| {
        matches!(l.kind, LinkKind::Cpu { .. }) && topo.socket_of(l.a) != topo.socket_of(l.b)
    });
    let cross_cap = gbps(p.cross_socket.port_gbps).filter(|_| sockets);
    let mut ports = vec![];
    let mut cross_ports = vec![];
    for l in topo.links() {
        if !matches!(l.kind, LinkKind::Pcie(_)) || l.b != idx {
            continue;
        }
        let port = topo.node(l.a).id.clone();
        let name = |way| Resource::RootPort {
            rc: id.clone(),
            port: port.clone(),
            way,
        };
        let inward = (port_cap.is_some() || collapse.is_some()).then(|| {
            stage(
                name(Way::In),
                port_cap,
                Picos::ZERO,
                collapse.map_or(StageRule::None, StageRule::Collapse),
            )
        });
        let outward =
            port_cap.map(|r| stage(name(Way::Out), Some(r), Picos::ZERO, StageRule::None));
        if inward.is_some() || outward.is_some() {
            ports.push((l.idx.0, inward, outward));
        }
        if let Some(r) = cross_cap {
            let name = Resource::CrossSocketPort {
                rc: id.clone(),
                port: port.clone(),
            };
            cross_ports.push((l.idx.0, stage(name, Some(r), Picos::ZERO, StageRule::None)));
        }
    }
    RcStageIds {
        forward,
        p2p,
        to_memory,
        from_memory,
        ports,
        cross_ports,
    }
}

/// The stages [`stages`] made, by role.
pub(crate) struct RcStageIds {
    pub forward: Option<ChId>,
    pub p2p: Option<ChId>,
    pub to_memory: Option<ChId>,
    pub from_memory: Option<ChId>,
    pub ports: Vec<(u32, Option<ChId>, Option<ChId>)>,
    pub cross_ports: Vec<(u32, ChId)>,
}
