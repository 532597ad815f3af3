//! A transfer probe's result record, and the lines `contend hw` prints
//! for it and for a pattern's aggregate.

use super::*;
use contend_workload::{FlagMemory, ProbeTarget};

pub(super) fn transfer_record(
    scenario: &str,
    topology: &str,
    s: &Spec,
    m: &probe::Measured,
    ranks: Vec<String>,
    concurrent: usize,
    group: &str,
) -> ResultRecord {
    let t = Timing {
        per_op_ns: m.per_op_ns.clone(),
        total_ns: m.total_ns,
        sync_ns: m.sync_ns.clone(),
        batch_ops: 0,
    };
    let med = Stats::of(&t.per_op_ns).median_ns;
    let bw = (s.op != Op::PingPong && med > 0.0).then(|| s.bytes as f64 / med);
    let placement = match s.target_kind() {
        ProbeTarget::Peer => Some(Placement::Peer),
        ProbeTarget::Host => Some(Placement::Host),
        ProbeTarget::Local => None,
    };
    let mut extra = Extra::default();
    extra.stream.target = Some(s.target_kind());
    extra.stream.concurrent_streams = Some(concurrent as u32);
    extra.kernel.group = Some(GroupTag::Label(group.into()));
    if matches!(s.op, Op::Load | Op::Store) {
        extra.kernel.blocks = Some(s.kernel.blocks);
        extra.kernel.threads = Some(s.kernel.threads);
    }
    if s.op == Op::PingPong {
        extra.stream.iterations = Some(s.iterations);
        extra.stream.flags = Some(if s.flags_in_host || s.to == Target::Host {
            FlagMemory::Host
        } else {
            FlagMemory::OwnMemory
        });
        extra.stream.per_op = Some("one round trip".into());
        if s.fenced {
            extra.stream.fenced = Some(true);
        }
    }
    record(
        Source::Hw,
        scenario,
        topology,
        WorkloadKind::Transfer,
        Measured::of_probe(s.probe()),
        placement,
        LaunchMode::Eager,
        ranks,
        s.bytes as u64,
        &t,
        bw,
        None,
        extra,
    )
}

pub(super) fn aggregate_line(r: &ResultRecord) -> String {
    let a = &r.extra.aggregate;
    let g = |v: Option<f64>| v.unwrap_or(0.0);
    format!(
        "aggregate {}: {} streams, {:.1} GB/s together (per stream min {:.1}, median {:.1}, max {:.1} GB/s)",
        r.extra.stream.pattern.as_deref().unwrap_or_default(),
        a.streams.unwrap_or(0),
        g(a.aggregate_gbps),
        g(a.min_gbps),
        g(a.median_gbps),
        g(a.max_gbps)
    )
}

pub(super) fn transfer_line(r: &ResultRecord) -> String {
    let bw = r
        .bandwidth_gbps
        .map(|b| format!(", {b:.1} GB/s"))
        .unwrap_or_default();
    let blocks = r
        .extra
        .kernel
        .blocks
        .map(|b| format!(" blocks {b}"))
        .unwrap_or_default();
    format!(
        "{} {} {} {} B{blocks}: median {}{bw}",
        r.algorithm,
        r.ranks.join("->"),
        r.extra.stream.target.map_or("", |t| t.name()),
        r.size_bytes,
        us(r.stats.median_ns)
    )
}
