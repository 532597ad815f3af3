//! Runs a scenario: builds each rank's script (compute gap, skew, the lowered
//! collective, again and again), executes it, and summarises the result in
//! the shared [`ResultRecord`] schema.

use crate::engine::{ActorSpec, Engine, Ev, Span, Step};
use crate::params::ModelParams;
use crate::queue::{EventQueue, HeapQueue, RadixQueue};
use contend_topo::{Bytes, Picos};
use contend_workload::{
    Access, Algorithm, Engine as Eng, Extra, Fidelity, LaunchMode, LinkUse, Measured, MemLoc,
    Notify, Op, Phase, Placement, Rank, ResultRecord, RingConfig, Scenario, Source, Stats,
    TransferOp, Workload, lower,
};
use serde::Serialize;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum SimError {
    #[error("scenario `{scenario}`, {what}: {message}")]
    Failed {
        scenario: String,
        what: String,
        message: String,
    },
}

/// One simulation to run: which algorithm (none for transfers), placement,
/// fidelity and size (none for the verify step and transfers).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunSpec {
    pub algorithm: Option<Algorithm>,
    pub placement: Placement,
    pub fidelity: Fidelity,
    pub size: Option<Bytes>,
}

impl RunSpec {
    fn describe(&self) -> String {
        format!(
            "{} {} {}{}",
            self.algorithm.map_or("transfer", |a| a.name()),
            self.placement,
            self.fidelity,
            self.size.map(|s| format!(" {s}")).unwrap_or_default()
        )
    }
}

/// A finished simulation.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub spec: RunSpec,
    /// One record for a collective workload, one per stream for transfers.
    pub records: Vec<ResultRecord>,
    /// Busy fraction of every rate-limited channel over the run.
    pub utilisation: Vec<(contend_workload::Resource, f64)>,
    /// Per-rank spans of one collective (the middle one).
    pub timeline: Vec<Span>,
    pub note: Option<String>,
}

impl Run {
    /// The first (for collectives, the only) record.
    pub fn record(&self) -> &ResultRecord {
        &self.records[0]
    }
}

/// Every run a scenario asks for at the given fidelities, in a fixed order.
pub fn runs_of(sc: &Scenario, fidelities: &[Fidelity]) -> Vec<RunSpec> {
    let mut v = vec![];
    match sc.workload() {
        Workload::Allreduce { sizes, .. } => {
            for &size in sizes {
                for &placement in sc.placements() {
                    for &a in sc.algorithms() {
                        for &fidelity in fidelities {
                            v.push(RunSpec {
                                algorithm: Some(a),
                                placement,
                                fidelity,
                                size: Some(size),
                            });
                        }
                    }
                }
            }
        }
        Workload::VerifyStep(_) => {
            for &placement in sc.placements() {
                for &a in sc.algorithms() {
                    for &fidelity in fidelities {
                        v.push(RunSpec {
                            algorithm: Some(a),
                            placement,
                            fidelity,
                            size: None,
                        });
                    }
                }
            }
        }
        Workload::Transfer { .. } => {
            for &fidelity in fidelities {
                v.push(RunSpec {
                    algorithm: None,
                    placement: Placement::Peer,
                    fidelity,
                    size: None,
                });
            }
        }
    }
    v
}

/// Runs every run of the scenario, one after another.
pub fn simulate(
    sc: &Scenario,
    params: &ModelParams,
    fidelities: &[Fidelity],
) -> Result<Vec<Run>, SimError> {
    runs_of(sc, fidelities)
        .into_iter()
        .map(|spec| simulate_one(sc, params, spec))
        .collect()
}

/// Runs one simulation with the fast event queue.
pub fn simulate_one(sc: &Scenario, params: &ModelParams, spec: RunSpec) -> Result<Run, SimError> {
    simulate_with::<RadixQueue<Ev>>(sc, params, spec)
}

/// The same with the plain binary-heap queue (the reference twin).
pub fn simulate_one_reference(
    sc: &Scenario,
    params: &ModelParams,
    spec: RunSpec,
) -> Result<Run, SimError> {
    simulate_with::<HeapQueue<Ev>>(sc, params, spec)
}

fn simulate_with<Q: EventQueue<Ev> + Default>(
    sc: &Scenario,
    params: &ModelParams,
    spec: RunSpec,
) -> Result<Run, SimError> {
    let started = std::time::Instant::now();
    let eager = sc.launch() == LaunchMode::Eager;
    let fail = |message: String| SimError::Failed {
        scenario: sc.name().to_string(),
        what: spec.describe(),
        message,
    };
    let (actors, collectives, size, note) = match (&sc.workload(), spec.algorithm) {
        (
            Workload::Allreduce {
                repeats, gap, skew, ..
            },
            Some(alg),
        ) => {
            let size = spec
                .size
                .ok_or_else(|| fail("an allreduce run needs a size".into()))?;
            let (a, n) = collective_actors(
                sc,
                alg,
                spec.placement,
                size,
                *repeats as usize,
                *gap,
                skew,
                eager,
            );
            (a, *repeats as usize, size, n)
        }
        (Workload::VerifyStep(v), Some(alg)) => {
            let count = v.allreduces() as usize;
            let (a, n) = collective_actors(
                sc,
                alg,
                spec.placement,
                v.size(),
                count,
                v.gap,
                &v.skew,
                eager,
            );
            (a, count, v.size(), n)
        }
        (Workload::Transfer { streams }, _) => {
            let mut actors = vec![];
            for s in streams {
                actors.extend(stream_actors(sc, s, params, eager));
            }
            (actors, 0, Bytes::ZERO, None)
        }
        _ => return Err(fail("a collective workload needs an algorithm".into())),
    };
    let n_actors = actors.len();
    let mut eng: Engine<Q> = Engine::new(sc.topology(), params, spec.fidelity, actors);
    eng.trace_epoch = Some((collectives / 2) as u32);
    eng.run().map_err(fail)?;
    let wall = started.elapsed().as_nanos() as u64;
    let mut end = Picos::ZERO;
    for a in 0..n_actors {
        if let Some(e) = eng.actor_times(a).1.last() {
            end = end.max(*e);
        }
    }
    let end = end.max(eng.now);
    let util = eng.utilisation(end);
    let busiest = util
        .iter()
        .max_by(|a, b| {
            a.1.total_cmp(&b.1)
                .then_with(|| b.0.to_string().cmp(&a.0.to_string()))
        })
        .map(|(l, u)| LinkUse {
            link: l.clone(),
            utilisation: round6(*u),
        });
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
        placement: spec.algorithm.map(|_| spec.placement),
        fidelity: Some(spec.fidelity),
        launch: sc.launch(),
        ranks: sc.rank_names(),
        size_bytes: size,
        total_ns: round3(total),
        stats: Stats::of(&per_op),
        per_op_ns: per_op,
        bandwidth_gbps: bw,
        verified: None,
        events: Some(eng.events),
        wall_ns: Some(wall),
        busiest_link: busiest.clone(),
        machine: None,
        extra,
    };
    let mut records = vec![];
    if let (Some(alg), Workload::Transfer { .. }) | (Some(alg), _) = (spec.algorithm, sc.workload())
    {
        let mut per_op = vec![];
        for k in 0..collectives {
            let mut worst = Picos::ZERO;
            for a in 0..n_actors {
                let (b, e) = eng.actor_times(a);
                if let (Some(b), Some(e)) = (b.get(k), e.get(k)) {
                    worst = worst.max(*e - *b);
                }
            }
            per_op.push(round3(worst.as_ns_f64()));
        }
        let mut extra = Extra::default();
        extra.sim.collectives = Some(collectives as u64);
        extra.sim.note = note.clone();
        records.push(base(
            Measured::Allreduce(alg),
            size.0,
            per_op,
            end.as_ns_f64(),
            None,
            extra,
        ));
    } else if let Workload::Transfer { streams } = sc.workload() {
        let mut a = 0;
        for s in streams {
            let (b, e) = eng.actor_times(a);
            let t = match (b.first(), e.first()) {
                (Some(b), Some(e)) => *e - *b,
                _ => Picos::ZERO,
            };
            let (per_op, bw) = if s.op == TransferOp::PingPong {
                (vec![round3(t.as_ns_f64() / s.iterations as f64)], None)
            } else {
                (
                    vec![round3(t.as_ns_f64())],
                    Some(round3(s.bytes.0 as f64 / t.as_ns_f64().max(1e-9))),
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
    }
    Ok(Run {
        spec,
        records,
        utilisation: util.into_iter().map(|(n, u)| (n, round6(u))).collect(),
        timeline: eng.spans,
        note,
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[allow(clippy::too_many_arguments)]
fn collective_actors(
    sc: &Scenario,
    alg: Algorithm,
    placement: Placement,
    size: Bytes,
    count: usize,
    gap: Picos,
    skew: &contend_workload::Skew,
    eager: bool,
) -> (Vec<ActorSpec>, Option<String>) {
    let c = lower(
        alg,
        sc.topology(),
        sc.ranks(),
        placement,
        size,
        RingConfig::default(),
    );
    let delays = skew.sample(sc.seed(), count, sc.ranks().len());
    let actors = sc
        .ranks()
        .iter()
        .enumerate()
        .map(|(r, &gpu)| {
            let prog = &c.programs[r.min(c.programs.len() - 1)];
            let n = prog.ops.len() as u32;
            let mut script = Vec::with_capacity(count * (n as usize + 3));
            for (k, row) in delays.iter().enumerate() {
                script.push(Step::Delay(gap + row[r]));
                script.push(Step::Begin(k as u32));
                script.extend((0..n).map(Step::Op));
                script.push(Step::End);
            }
            let ops = prog.ops.clone().into();
            ActorSpec {
                gpu,
                flag_loc: c.flag_loc[r],
                blocks: sc.kernel().blocks,
                threads: sc.kernel().threads,
                script,
                ops,
                eager,
            }
        })
        .collect();
    (actors, c.note)
}

fn stream_actor_count(sc: &Scenario, s: &contend_workload::Stream) -> usize {
    let to_gpu = matches!(
        sc.topology().node(s.to).kind,
        contend_topo::NodeKind::Gpu(_)
    );
    if s.op == TransferOp::PingPong && to_gpu {
        2
    } else {
        1
    }
}

/// The actors of one transfer stream. Actor indices for flags are assigned in
/// order, so a ping-pong's partner is the actor right after it.
fn stream_actors(
    sc: &Scenario,
    s: &contend_workload::Stream,
    params: &ModelParams,
    eager: bool,
) -> Vec<ActorSpec> {
    let _ = params;
    let mem = if matches!(
        sc.topology().node(s.to).kind,
        contend_topo::NodeKind::Gpu(_)
    ) {
        MemLoc::Device(s.to)
    } else {
        MemLoc::Host(s.to)
    };
    let acc = Access {
        mem,
        bytes: s.bytes,
    };
    // An actor that times its ops as collective 0.
    let me = |ops: Vec<Op>| {
        let mut script = vec![Step::Begin(0)];
        script.extend((0..ops.len() as u32).map(Step::Op));
        script.push(Step::End);
        ActorSpec {
            gpu: s.from,
            flag_loc: MemLoc::Device(s.from),
            blocks: s.kernel.blocks,
            threads: s.kernel.threads,
            script,
            ops: ops.into(),
            eager,
        }
    };
    let wrap = |ops: Vec<Op>| ops;
    match s.op {
        TransferOp::Copy => vec![me(wrap(vec![Op::Post {
            parts: vec![(acc, Notify::None)],
            engine: Eng::CopyEngine,
        }]))],
        TransferOp::Load => vec![me(wrap(vec![Op::Fetch {
            parts: vec![acc],
            engine: Eng::Sm,
        }]))],
        TransferOp::Store => vec![me(wrap(vec![Op::Post {
            parts: vec![(acc, Notify::None)],
            engine: Eng::Sm,
        }]))],
        TransferOp::PingPong => {
            if let MemLoc::Host(_) = mem {
                // GPU and host memory: write a flag, read it back (a read cannot
                // pass the write, so it returns once the write has landed).
                let flag = Access {
                    mem,
                    bytes: s.bytes,
                };
                let mut ops = vec![];
                for _ in 0..s.iterations {
                    ops.push(Op::Post {
                        parts: vec![(flag, Notify::None)],
                        engine: Eng::Sm,
                    });
                    ops.push(Op::Fetch {
                        parts: vec![flag],
                        engine: Eng::Sm,
                    });
                }
                vec![me(wrap(ops))]
            } else {
                // Two GPUs: the actor index of the partner is this one's + 1;
                // the caller assigns indices in order (see stream_actor_count).
                let base = sc_actor_base(sc, s);
                let (a, b) = (Rank(base as u32), Rank(base as u32 + 1));
                let mut pa = vec![];
                let mut pb = vec![];
                for i in 0..s.iterations {
                    // fenced: release fence before the flag, acquire after the
                    // wait, on both sides (the kernels' barrier fences)
                    if s.fence {
                        pa.push(Op::Fence);
                    }
                    pa.push(Op::Signal {
                        to: b,
                        phase: Phase(i),
                    });
                    pa.push(Op::Wait {
                        phase: Phase(i),
                        count: 1,
                    });
                    pb.push(Op::Wait {
                        phase: Phase(i),
                        count: 1,
                    });
                    if s.fence {
                        pa.push(Op::Fence);
                        pb.push(Op::Fence);
                        pb.push(Op::Fence);
                    }
                    pb.push(Op::Signal {
                        to: a,
                        phase: Phase(i),
                    });
                }
                let partner = ActorSpec {
                    gpu: s.to,
                    flag_loc: MemLoc::Device(s.to),
                    blocks: 1,
                    threads: 32,
                    script: (0..pb.len() as u32).map(Step::Op).collect(),
                    ops: pb.into(),
                    eager,
                };
                vec![me(wrap(pa)), partner]
            }
        }
    }
}

fn sc_actor_base(sc: &Scenario, s: &contend_workload::Stream) -> usize {
    let Workload::Transfer { streams } = sc.workload() else {
        return 0;
    };
    let mut base = 0;
    for t in streams {
        if std::ptr::eq(t, s) {
            return base;
        }
        base += stream_actor_count(sc, t);
    }
    base
}
