//! Running a scenario: which runs it asks for ([`runs_of`]), each run's
//! actors built ([`crate::actors::script`]), executed by the engine on the chosen
//! fidelity and event queue, and summarised ([`crate::report::summary`]).

use crate::actors::actor::Span;
use crate::actors::script::ActorSpec;
use crate::engine::ids::ActorId;
use crate::engine::limits::RunLimits;
use crate::engine::queue::HeapQueue;
use crate::engine::wide_radix::WideRadixQueue;
use crate::engine::{Engine, Ev, RunStop};
use crate::engine::{FidelityModel, Queue};
use crate::fidelity::flow::{Flow, FlowOptions};
use crate::fidelity::tlp::{Tlp, TlpOptions};
use crate::params::ModelParams;
pub use crate::report::run_spec::RunSpec;
use crate::report::summary::{Ran, records, round6};
use contend_topo::{Bytes, Picos};
use contend_workload::{
    Algorithm, Fidelity, LowerError, Placement, Resource, ResultRecord, Scenario, Workload,
};
use serde::Serialize;
use thiserror::Error;

/// Why a simulation gave no result, by variant: callers match on it.
#[derive(Debug, Error)]
pub enum SimError {
    /// The run asked for does not fit the scenario's workload.
    #[error("scenario `{scenario}`, {spec}: {why}")]
    Unfit {
        scenario: String,
        spec: RunSpec,
        why: Unfit,
    },
    /// The collective could not be lowered (NCCL with no algorithm and
    /// protocol left at this size, ...): the reason typed, for callers
    /// that skip such a run.
    #[error("scenario `{scenario}`, {spec}: {error}")]
    Lower {
        scenario: String,
        spec: RunSpec,
        error: LowerError,
    },
    /// The run stopped before every rank finished (a deadlock, or a run
    /// limit reached).
    #[error("scenario `{scenario}`, {spec}: {stop}")]
    Stopped {
        scenario: String,
        spec: RunSpec,
        stop: RunStop,
    },
}

/// A run that does not fit its scenario's workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum Unfit {
    #[error("an allreduce run needs a size")]
    NoSize,
    #[error("a collective workload needs an algorithm")]
    NoAlgorithm,
}

/// A finished simulation.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub spec: RunSpec,
    /// One record for a collective workload; for transfers one per stream,
    /// then one aggregate per pattern (and one over every stream when the
    /// run has more than one pattern, or patterns and streams).
    pub records: Vec<ResultRecord>,
    /// Busy fraction of every rate-limited channel over the run.
    pub utilisation: Vec<(Resource, f64)>,
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

/// Which event queue a run uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueueKind {
    /// The radix heap with 6-bit digits (fast, [`WideRadixQueue`]).
    #[default]
    Radix,
    /// The binary heap (the reference).
    Heap,
}

/// How to run: queue, the TLP fidelity's optimisation switches, limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimOptions {
    pub queue: QueueKind,
    pub tlp: TlpOptions,
    pub flow: FlowOptions,
    pub limits: RunLimits,
}

/// Every run a scenario asks for at the given fidelities, in a fixed order.
pub fn runs_of(sc: &Scenario, fidelities: &[Fidelity]) -> Vec<RunSpec> {
    let mut v = vec![];
    let collective = |v: &mut Vec<RunSpec>, size| {
        for (pi, &placement) in sc.placements().iter().enumerate() {
            for &a in sc.algorithms() {
                // NCCL places its own buffers (its transports): one run
                if a == Algorithm::Nccl && pi > 0 {
                    continue;
                }
                for &fidelity in fidelities {
                    v.push(RunSpec {
                        algorithm: Some(a),
                        placement,
                        fidelity,
                        size,
                    });
                }
            }
        }
    };
    match sc.workload() {
        Workload::Allreduce { sizes, .. } => {
            for &size in sizes {
                collective(&mut v, Some(size));
            }
        }
        Workload::VerifyStep(_) => collective(&mut v, None),
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
    simulate_one_with(sc, params, spec, &SimOptions::default())
}

/// The same with the plain binary-heap queue (the reference).
pub fn simulate_one_reference(
    sc: &Scenario,
    params: &ModelParams,
    spec: RunSpec,
) -> Result<Run, SimError> {
    let opts = SimOptions {
        queue: QueueKind::Heap,
        ..SimOptions::default()
    };
    simulate_one_with(sc, params, spec, &opts)
}

/// One simulation with the given options.
pub fn simulate_one_with(
    sc: &Scenario,
    params: &ModelParams,
    spec: RunSpec,
    opts: &SimOptions,
) -> Result<Run, SimError> {
    use crate::fidelity::flow::FlowEv;
    use crate::fidelity::tlp::TlpEv;
    match (spec.fidelity, opts.queue) {
        (Fidelity::Tlp, QueueKind::Radix) => {
            run::<WideRadixQueue<Ev<TlpEv>>, Tlp>(sc, params, spec, opts.tlp, opts.limits)
        }
        (Fidelity::Tlp, QueueKind::Heap) => {
            run::<HeapQueue<Ev<TlpEv>>, Tlp>(sc, params, spec, opts.tlp, opts.limits)
        }
        (Fidelity::Flow, QueueKind::Radix) => {
            run::<WideRadixQueue<Ev<FlowEv>>, Flow>(sc, params, spec, opts.flow, opts.limits)
        }
        (Fidelity::Flow, QueueKind::Heap) => {
            run::<HeapQueue<Ev<FlowEv>>, Flow>(sc, params, spec, opts.flow, opts.limits)
        }
    }
}

/// A run's actors, how many collectives they run, at what size, and the
/// lowering's note.
type Actors = (Vec<ActorSpec>, usize, Bytes, Option<String>);

/// Why a run's actors could not be built.
#[derive(Debug)]
enum ActorsError {
    Lower(LowerError),
    Unfit(Unfit),
}

impl From<LowerError> for ActorsError {
    fn from(e: LowerError) -> Self {
        ActorsError::Lower(e)
    }
}

fn actors_of(sc: &Scenario, params: &ModelParams, spec: RunSpec) -> Result<Actors, ActorsError> {
    Ok(match (sc.workload(), spec.algorithm) {
        (
            Workload::Allreduce {
                repeats, gap, skew, ..
            },
            Some(alg),
        ) => {
            let size = spec.size.ok_or(ActorsError::Unfit(Unfit::NoSize))?;
            let n = *repeats as usize;
            let (a, note) = crate::actors::script::collective(
                sc,
                params,
                alg,
                spec.placement,
                size,
                n,
                *gap,
                skew,
            )?;
            (a, n, size, note)
        }
        (Workload::VerifyStep(v), Some(alg)) => {
            let n = v.allreduces() as usize;
            let (a, note) = crate::actors::script::collective(
                sc,
                params,
                alg,
                spec.placement,
                v.size(),
                n,
                v.gap,
                &v.skew,
            )?;
            (a, n, v.size(), note)
        }
        (Workload::Transfer { .. }, _) => (
            crate::actors::script::streams(sc, sc.streams()),
            0,
            Bytes::ZERO,
            None,
        ),
        _ => {
            return Err(ActorsError::Unfit(Unfit::NoAlgorithm));
        }
    })
}

fn run<Q: Queue<T::Event>, T: FidelityModel>(
    sc: &Scenario,
    params: &ModelParams,
    spec: RunSpec,
    topts: T::Options,
    limits: RunLimits,
) -> Result<Run, SimError> {
    let started = std::time::Instant::now();
    let scenario = || sc.name().to_string();
    let (actors, collectives, size, note) = actors_of(sc, params, spec).map_err(|e| match e {
        ActorsError::Lower(error) => SimError::Lower {
            scenario: scenario(),
            spec,
            error,
        },
        ActorsError::Unfit(why) => SimError::Unfit {
            scenario: scenario(),
            spec,
            why,
        },
    })?;
    let mut eng: Engine<Q, T> = Engine::new(sc.topology(), params, actors, limits, topts);
    eng.trace_epoch = Some((collectives / 2) as u32);
    eng.run().map_err(|stop| SimError::Stopped {
        scenario: scenario(),
        spec,
        stop,
    })?;
    let wall_ns = started.elapsed().as_nanos() as u64;
    let mut end = Picos::ZERO;
    for a in eng.actors.ids() {
        if let Some(e) = eng.actor_times(a).1.last() {
            end = end.max(*e);
        }
    }
    let end = end.max(eng.now());
    let utilisation = eng.utilisation(end);
    let binding = spec.algorithm.map(|_| {
        crate::report::binding::binding(
            &eng.w.fabric,
            &eng.channel_use(),
            eng.w.moving.total(end),
            &eng.spans,
        )
    });
    let ran = Ran {
        times: eng
            .actors
            .ids()
            .map(|a: ActorId| eng.actor_times(a))
            .collect(),
        end,
        events: eng.events,
        wall_ns,
        utilisation: &utilisation,
        binding,
    };
    let records = records(sc, spec, spec.algorithm, collectives, size, &note, &ran);
    Ok(Run {
        spec,
        records,
        utilisation: utilisation
            .iter()
            .map(|(n, u)| (n.clone(), round6(*u)))
            .collect(),
        timeline: std::mem::take(&mut eng.spans),
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_workload::default_scenario;

    /// Runs one of the scenario's runs to its end; true if everything a
    /// run frees as it goes (transfers, groups, flag counters) is gone.
    fn all_freed<T: FidelityModel>(sc: &Scenario, spec: RunSpec, opts: T::Options) -> bool {
        let p = ModelParams::default();
        let (actors, ..) = actors_of(sc, &p, spec).unwrap();
        let mut eng: Engine<WideRadixQueue<Ev<T::Event>>, T> =
            Engine::new(sc.topology(), &p, actors, RunLimits::default(), opts);
        eng.run().unwrap();
        eng.w.xfers.held() == 0 && eng.w.groups.held() == 0 && eng.w.flags.rows() == 0
    }

    /// Flat memory: at the end of a verify step every transfer, group and
    /// flag counter has been freed, at both fidelities, for every algorithm.
    #[test]
    fn a_run_frees_what_it_no_longer_needs() {
        let sc = default_scenario(None).unwrap();
        for spec in runs_of(&sc, &[Fidelity::Flow, Fidelity::Tlp]) {
            let freed = match spec.fidelity {
                Fidelity::Flow => all_freed::<Flow>(&sc, spec, Default::default()),
                Fidelity::Tlp => all_freed::<Tlp>(&sc, spec, TlpOptions::default()),
            };
            assert!(freed, "{spec}");
        }
    }
}
