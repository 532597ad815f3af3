//! What a run will cost, known before it starts: an estimate of the events
//! it processes, from what its ranks move (the bytes of every program,
//! lowered once) and how many ops they run, times the collectives of the
//! run. A command sums it over its runs and refuses a run past
//! [`WORK_BUDGET`] unless the user says `--force`, so no input keeps the
//! machine busy for minutes or hours without being asked.
//!
//! A unit is about an event's worth of work, 100 ns of one core of the
//! development machine. The estimate bounds the measured events from above
//! within a small factor (a test holds it on the default verify step): TLP
//! fidelity moves a request and a completion per 64 B read, a TLP per
//! posted write, each an event at every hop of its route and its credit
//! return; flow fidelity has a few events per op and access whatever the
//! bytes, but each event re-solves the fair shares of the flows in flight,
//! so a flow event weighs one unit more per 128 flows that may be in flight
//! at once (every rank's widest op). A TLP event costs more on a large box
//! too: more ranks queue more packets at each shared channel (a packet is
//! placed in its queue by its ready time), and the state outgrows the
//! caches, so a TLP event weighs one unit more per 160 ranks (in proportion).

use crate::params::ModelParams;
use crate::run::{RunSpec, Unfit};
use contend_topo::Bytes;
use contend_workload::{Access, Fidelity, LowerError, Op, Scenario, TransferOp, Workload, lower};

/// Work units a command may spend before it asks for `--force`: 4e8.
/// At TLP fidelity a unit is at most an event (the estimate runs 1.3 to 10
/// times the events), and the engine does about 10 M events a second on one
/// core of the development machine (`contend bench`). The default verify
/// step (every algorithm, both fidelities) is estimated at 2.2e8 units and
/// takes about 6 s on its two cores (`time contend simulate`): the budget
/// is about ten seconds there.
pub const WORK_BUDGET: u64 = 400_000_000;

/// Events a TLP run spends per 64 B its programs move over links: a read
/// is a request and a completion per read completion boundary, each
/// forwarded and credited at every hop (measured: one-shot pull 6.1 per
/// 64 B on the default verify step, the most of any algorithm).
const TLP_EVENTS_PER_64B: u64 = 8;
/// Events per op at TLP fidelity (launch, flags, waits, their fences).
const TLP_EVENTS_PER_OP: u64 = 24;
/// Events per op or access at flow fidelity (a flow's start and end, its
/// flags; measured: ring-simple 2.2 per op and access on the default verify
/// step, the most of any algorithm).
const FLOW_EVENTS_PER_ACCESS: u64 = 3;
/// Flows in flight per extra unit a flow event weighs: each event re-solves
/// the fair shares of the flows it touches (measured on 64 GPUs: ring-ll,
/// 64 flows in flight, 130 ns an event; one-shot push, 4,032 in flight,
/// 1.9 µs an event).
const FLOW_IN_FLIGHT_PER_UNIT: u64 = 128;
/// Ranks per extra unit a TLP event weighs. Measured (`contend simulate
/// --format json`, one 42 KiB allreduce, 16 GPUs per switch): two-shot
/// push 142 ns an event on 64 GPUs, 419 on 256, 603 on 448; hierarchical
/// 126, 159, 263 (the default verify step's 8 GPUs: about 100).
const TLP_RANKS_PER_UNIT: u64 = 160;

/// Why a run could not be estimated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EstimateError {
    /// The run does not fit the scenario's workload.
    #[error("cannot estimate {spec}: {why}")]
    Unfit { spec: RunSpec, why: Unfit },
    /// Its collective could not be lowered.
    #[error("cannot estimate {spec}: {error}")]
    Lower { spec: RunSpec, error: LowerError },
}

/// The work units of one run (see the module's doc).
pub fn work_units(
    sc: &Scenario,
    params: &ModelParams,
    spec: RunSpec,
) -> Result<u64, EstimateError> {
    let unfit = |why| EstimateError::Unfit { spec, why };
    // (bytes over links, ops) of one collective or of the streams' whole run
    let (bytes, ops, accesses, in_flight, count): (u64, u64, u64, u64, u64) =
        match (sc.workload(), spec.algorithm) {
            (Workload::Transfer { .. }, _) => {
                let mut bytes = 0u64;
                let mut ops = 0u64;
                for s in sc.streams() {
                    let times = u64::from(s.repeat)
                        * match s.op {
                            TransferOp::PingPong => u64::from(s.iterations) * 2,
                            _ => 1,
                        };
                    bytes = bytes.saturating_add(s.bytes.0.saturating_mul(times));
                    ops = ops.saturating_add(times.saturating_mul(4));
                }
                (bytes, ops, 0, sc.streams().len() as u64, 1)
            }
            (w, Some(alg)) => {
                let (size, count) = match w {
                    Workload::Allreduce { repeats, .. } => (
                        spec.size.ok_or_else(|| unfit(Unfit::NoSize))?,
                        u64::from(*repeats),
                    ),
                    Workload::VerifyStep(v) => (v.size(), u64::from(v.allreduces())),
                    Workload::Transfer { .. } => unreachable!("matched above"),
                };
                let c = lower(
                    alg,
                    sc.topology(),
                    sc.ranks(),
                    spec.placement,
                    size,
                    &crate::actors::script::lower_config(sc, params),
                )
                .map_err(|error| EstimateError::Lower { spec, error })?;
                let mut bytes = Bytes::ZERO;
                let mut ops = 0u64;
                let mut accesses = 0u64;
                let mut widest = 1u64;
                for (p, &r) in c.programs.iter().zip(&c.rank_of) {
                    bytes += p.link_bytes();
                    ops += p.len() as u64;
                    // every access of an op that leaves the GPU: a stream of
                    // TLPs, or a flow, each (a local or empty one is neither)
                    let gpu = sc.ranks()[r];
                    // the distinct memories an op reaches off the GPU: a flow,
                    // or a stream of TLPs, each (parts to one memory share one)
                    let reach = |it: &mut dyn Iterator<Item = &Access>| {
                        let mut to: Vec<_> = it
                            .filter(|a| a.bytes.0 > 0 && a.mem.node() != gpu)
                            .map(|a| a.mem)
                            .collect();
                        to.sort_unstable();
                        to.dedup();
                        to.len() as u64
                    };
                    for op in p.iter() {
                        let n = match &*op {
                            Op::Fetch { parts, .. } => reach(&mut parts.iter()),
                            Op::Post { parts, .. } => reach(&mut parts.iter().map(|(a, _)| a)),
                            Op::Stream { fetch, post, .. } => {
                                reach(&mut fetch.iter().chain(post.iter().map(|(a, _)| a)))
                            }
                            Op::Signal { to, .. } => to.len() as u64,
                            _ => 0,
                        };
                        accesses += n;
                        widest = widest.max(n);
                    }
                }
                // at most every rank's widest op at once
                let in_flight = widest.saturating_mul(c.programs.len() as u64);
                (bytes.0, ops, accesses, in_flight, count)
            }
            (_, None) => return Err(unfit(Unfit::NoAlgorithm)),
        };
    let per = match spec.fidelity {
        Fidelity::Tlp => {
            bytes
                .div_ceil(64)
                .saturating_mul(TLP_EVENTS_PER_64B)
                .saturating_add(
                    ops.saturating_add(accesses)
                        .saturating_mul(TLP_EVENTS_PER_OP),
                )
                .saturating_mul(TLP_RANKS_PER_UNIT + sc.ranks().len() as u64)
                / TLP_RANKS_PER_UNIT
        }
        Fidelity::Flow => ops
            .saturating_add(accesses)
            .saturating_mul(FLOW_EVENTS_PER_ACCESS)
            .saturating_mul(1 + in_flight / FLOW_IN_FLIGHT_PER_UNIT),
    };
    Ok(per.saturating_mul(count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{runs_of, simulate_one};
    use contend_workload::default_scenario;

    /// The estimate bounds the events a run really processes, and not by
    /// more than a factor that would refuse ordinary runs: on the default
    /// verify step, for every algorithm at both fidelities.
    #[test]
    fn the_estimate_bounds_the_events_of_the_default_step() {
        let sc = default_scenario(None).unwrap();
        let p = ModelParams::default();
        let mut total = 0;
        for spec in runs_of(&sc, &[Fidelity::Tlp, Fidelity::Flow]) {
            let est = work_units(&sc, &p, spec).unwrap();
            let ran = simulate_one(&sc, &p, spec)
                .unwrap()
                .record()
                .events
                .unwrap();
            assert!(est >= ran, "{}: estimated {est} < {ran} events", spec);
            let bound = if spec.fidelity == Fidelity::Tlp {
                16
            } else {
                24
            };
            assert!(
                est <= ran * bound,
                "{}: estimated {est}, more than {bound}x the {ran} events",
                spec
            );
            total += est;
        }
        eprintln!("the default step (both fidelities): {total} units");
        // the default run and a step half as large again fit the budget
        assert!(
            total * 3 / 2 < WORK_BUDGET,
            "the default step is estimated at {total}"
        );
    }
}
