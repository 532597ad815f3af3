//! DESIGN 5 — the root complex: forwarding between root ports (P2P) with its
//! own bandwidth cap and latency, where posted writes may collapse
//! ([`crate::collapse`]), and a latency-only pass to and from host memory.
//! At TLP fidelity both are stages a packet passes inline: it takes its
//! slot of the stage's bandwidth when it reaches the stage and becomes
//! ready for the next link at the end of it, costing no event (the plain
//! twin, `TlpOptions::queued_stages`, spends an event per stage).

use crate::collapse::{CollapseRule, Via};
use crate::credits::stage_credits;
use crate::fabric::{ChKind, ChannelSpec};
use crate::params::{ModelParams, ns};
use crate::transport::tlp::channel::Chan;
use contend_topo::{BytesPerSec, NodeIdx, Picos, RootComplexSpec, TlpKind};
use contend_workload::Resource;

/// The two stages of root complex `rc` (node `idx`): P2P forwarding, then
/// the pass to memory.
pub(crate) fn stages(
    id: &contend_topo::NodeId,
    idx: NodeIdx,
    rc: &RootComplexSpec,
    p: &ModelParams,
) -> [ChannelSpec; 2] {
    let lat = rc.latency.unwrap_or(ns(p.root_complex.latency_ns));
    let bw = rc
        .p2p_bandwidth
        .unwrap_or(BytesPerSec::from_gbps(p.root_complex.p2p_bandwidth_gbps));
    let credits = stage_credits(p);
    let min_wire = p.fabric.min_wire_bytes;
    [
        ChannelSpec::new(
            Resource::RootComplexP2p { rc: id.clone() },
            ChKind::Fabric { rc: idx },
            Some(bw),
            lat,
            false,
            credits,
            rc.posted_write_collapse,
            min_wire,
        ),
        ChannelSpec::new(
            Resource::RootComplexMemory { rc: id.clone() },
            ChKind::Transit { rc: idx },
            None,
            lat,
            false,
            credits,
            false,
            min_wire,
        ),
    ]
}

/// A packet of `kind` with `data` payload bytes, ready at `ready`, passes
/// stage `spec` (state `ch`) now. `collapse`: the (ingress, target) its
/// path gives this stage when the stage collapses. Returns when it leaves.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pass(
    ch: &mut Chan,
    spec: &ChannelSpec,
    rule: &CollapseRule,
    collapse: Option<Via>,
    kind: TlpKind,
    data: u32,
    ready: Picos,
    now: Picos,
) -> Picos {
    let start = ch.busy_until.max(ready).max(now);
    let ser = ch.occupy(spec, rule, collapse, kind, data, start);
    start + ser + spec.latency
}
