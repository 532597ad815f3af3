//! The summary of a run in the shared result schema: per collective the
//! slowest rank's time from its arrival to its finish (per stream and
//! repeat for transfers, with one aggregate record per pattern), the whole
//! run's time, the busiest resource and the facts a reader needs to
//! reproduce it.

use crate::actors::script::stream_actor_count;
use crate::engine::ids::ActorId;
use crate::report::run_spec::RunSpec;
use contend_topo::{Bytes, Picos};
use contend_workload::{
    Algorithm, Binding, Extra, LinkUse, Measured, NcclFacts, Resource, ResultRecord, Scenario,
    Source, Stats, TransferOp, Workload,
};

/// What the aggregate over every stream of a run is called.
pub(crate) const ALL_STREAMS: &str = "all";

/// What the engine leaves behind that the summary reads.
pub(crate) struct Ran<'a> {
    /// (begin, end) times of each collective, per actor.
    pub times: Vec<(&'a [Picos], &'a [Picos])>,
    pub end: Picos,
    pub events: u64,
    pub wall_ns: u64,
    pub utilisation: &'a [(Resource, f64)],
    /// What bound the run (collectives).
    pub binding: Option<Binding>,
}

pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
pub(crate) fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The busiest resource (ties: the first by name).
fn busiest(util: &[(Resource, f64)]) -> Option<LinkUse> {
    util.iter()
        .max_by(|a, b| {
            a.1.total_cmp(&b.1)
                .then_with(|| b.0.to_string().cmp(&a.0.to_string()))
        })
        .map(|(l, u)| LinkUse {
            link: l.clone(),
            utilisation: round6(*u),
        })
}

/// NCCL's decisions for one call of `size` in the scenario, as the `nccl`
/// record keeps them (none with one rank).
pub(crate) fn nccl_facts(sc: &Scenario, size: Bytes) -> NcclFacts {
    let Some(plan) = sc.nccl_plan() else {
        return NcclFacts::default();
    };
    let elem = Bytes(sc.workload().dtype().map_or(2, |d| d.size()));
    let env = plan
        .env
        .iter()
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let s = plan.schedule(size, elem);
    NcclFacts {
        nccl_version: Some(plan.version.to_string()),
        env,
        decisions: s
            .as_ref()
            .map(|s| contend_nccl::CallFacts::from_plan(plan, s)),
        line: s.as_ref().map(|s| contend_nccl::call_line(plan, s)),
        tuner: None,
    }
}

/// The records of one run: one for a collective workload; for transfers
/// one per stream, then one aggregate per pattern, then one over every
/// stream when there is more than one pattern, or patterns and streams.
#[allow(clippy::too_many_arguments)]
pub(crate) fn records(
    sc: &Scenario,
    spec: RunSpec,
    alg: Option<Algorithm>,
    collectives: usize,
    size: Bytes,
    note: &Option<String>,
    ran: &Ran,
) -> Vec<ResultRecord> {
    let base = |algorithm: Measured,
                size: u64,
                per_op: Vec<f64>,
                total: f64,
                bw: Option<f64>,
                extra: Extra| ResultRecord {
        source: Source::Sim,
        scenario: sc.name().to_string(),
        topology: sc.topology_ref().to_string(),
        workload: sc.workload().kind(),
        algorithm,
        // NCCL places its buffers itself (its transports)
        placement: spec
            .algorithm
            .filter(|a| *a != Algorithm::Nccl)
            .map(|_| spec.placement),
        fidelity: Some(spec.fidelity),
        launch: alg.map_or(sc.launch(), |a| sc.launch_of(a)),
        ranks: sc.rank_names(),
        size_bytes: size,
        total_ns: round3(total),
        stats: Stats::of(&per_op),
        per_op_ns: per_op,
        bandwidth_gbps: bw,
        verified: None,
        events: Some(ran.events),
        wall_ns: Some(ran.wall_ns),
        busiest_link: busiest(ran.utilisation),
        machine: None,
        extra,
    };
    let mut records = vec![];
    match (alg, sc.workload()) {
        (Some(alg), _) => {
            let mut per_op = vec![];
            for k in 0..collectives {
                let mut worst = Picos::ZERO;
                for (b, e) in &ran.times {
                    if let (Some(b), Some(e)) = (b.get(k), e.get(k)) {
                        worst = worst.max(*e - *b);
                    }
                }
                per_op.push(round3(worst.as_ns_f64()));
            }
            let mut extra = Extra::default();
            extra.sim.collectives = Some(collectives as u64);
            extra.sim.note = note.clone();
            extra.sim.binding = ran.binding.clone();
            if alg == Algorithm::Nccl {
                extra.nccl = nccl_facts(sc, size);
            }
            records.push(base(
                Measured::Allreduce(alg),
                size.0,
                per_op,
                ran.end.as_ns_f64(),
                None,
                extra,
            ));
        }
        (None, Workload::Transfer { .. }) => {
            let streams = sc.streams();
            let mut a = 0;
            for s in streams {
                let (b, e) = ran.times[ActorId::from(a).ix()];
                let per = |k: usize| match (b.get(k), e.get(k)) {
                    (Some(b), Some(e)) => *e - *b,
                    _ => Picos::ZERO,
                };
                // first begin to last end; one entry per repeat
                let t = match (b.first(), e.last()) {
                    (Some(b), Some(e)) if e >= b => *e - *b,
                    _ => Picos::ZERO,
                };
                let repeats = s.repeat as usize;
                let (per_op, bw) = if s.op == TransferOp::PingPong {
                    (
                        (0..repeats)
                            .map(|k| round3(per(k).as_ns_f64() / s.iterations as f64))
                            .collect(),
                        None,
                    )
                } else {
                    let moved = s.bytes.0 as f64 * repeats as f64;
                    (
                        (0..repeats).map(|k| round3(per(k).as_ns_f64())).collect(),
                        Some(round3(moved / t.as_ns_f64().max(1e-9))),
                    )
                };
                let mut extra = Extra::default();
                extra.stream.from = Some(sc.topology().node(s.from).id.0.clone());
                extra.stream.to = Some(sc.topology().node(s.to).id.0.clone());
                extra.kernel.blocks = Some(s.kernel.blocks);
                extra.kernel.threads = Some(s.kernel.threads);
                if s.op == TransferOp::PingPong {
                    extra.stream.iterations = Some(s.iterations);
                }
                if s.start > Picos::ZERO {
                    extra.stream.start_us = Some(round6(s.start.as_us_f64()));
                }
                records.push(base(
                    Measured::Transfer(s.op),
                    s.bytes.0,
                    per_op,
                    t.as_ns_f64(),
                    bw,
                    extra,
                ));
                a += stream_actor_count(sc, s);
            }
            let groups = sc.pattern_streams();
            for g in groups {
                for r in &mut records[g.streams.clone()] {
                    r.extra.stream.pattern = Some(g.label.clone());
                }
            }
            let mut aggregates = vec![];
            for g in groups {
                let members: Vec<&ResultRecord> = records[g.streams.clone()].iter().collect();
                aggregates.extend(ResultRecord::aggregate(&g.label, &members));
            }
            // the run as a whole, where it is more than one pattern's streams
            let explicit = groups.first().map_or(streams.len(), |g| g.streams.start);
            let explicit_bw = streams[..explicit].iter().any(|s| s.op.moves_bytes());
            if !groups.is_empty() && groups.len() + usize::from(explicit_bw) > 1 {
                let all: Vec<&ResultRecord> = records.iter().collect();
                aggregates.extend(ResultRecord::aggregate(ALL_STREAMS, &all));
            }
            records.extend(aggregates);
        }
        (None, _) => {}
    }
    records
}
