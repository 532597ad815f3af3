//! # contend-sim
//!
//! A discrete-event model of GPUs talking over PCIe: links are full-duplex
//! channels with TLP/DLLP overhead and credit-based flow control, reads are
//! non-posted and bounded by outstanding requests, switches forward port to
//! port, root complexes forward P2P with their own bandwidth cap (and an
//! optional posted-write collapse), CPU links and host memory are resources
//! too. Traffic programs from `contend-workload` run on it at `tlp` fidelity
//! (every TLP an event) or `flow` fidelity (max-min fair fluid flows).
//!
//! ```
//! use contend_sim::{simulate, ModelParams};
//! use contend_workload::{default_scenario, Fidelity};
//! let sc = default_scenario(None).unwrap();
//! let runs = simulate(&sc, &ModelParams::default(), &[Fidelity::Flow]).unwrap();
//! // every algorithm of the default scenario ran
//! assert_eq!(runs.len(), sc.algorithms().len());
//! assert!(runs.iter().all(|r| r.record().total_ns > 0.0));
//! ```
//!
//! ## Where each part lives
//!
//! | folder | what it holds | DESIGN.md model items |
//! |---|---|---|
//! | `engine/` | the event loop (`mod.rs`), what actors and the fidelity share (`world.rs`), the agenda the engine pops (`agenda.rs`) and the seam a fidelity plugs into (`seam.rs`), queues (`queue.rs`, `wide_radix.rs`), ids and arenas (`ids.rs`), run limits and the work estimate (`limits.rs`, `estimate.rs`), and what each event does to a rank (`rank_step.rs`, `rank_flags.rs`, `rank_transfers.rs`) | time as integer picoseconds, equal times in insertion order; 6–8 (ops, waits, fences); 9 (the seam) |
//! | `model/` | the fabric both fidelities share: links and stages (`fabric.rs`), the credits receivers advertise (`credit_limits.rs`), root complexes (`root_complex.rs`), the posted-write collapse (`collapse.rs`), the cross-socket link (`cross_socket.rs`), keys sighted within a window (`sightings.rs`), the GPU side (`gpu.rs`) | 1, 3, 4, 5, 6, 10 |
//! | `actors/` | ranks as data and pure functions: actor (`actor.rs`), script (`script.rs`), kernel launchers (`launcher.rs`), flag counters (`flags.rs`), transfers and groups (`transfer.rs`) | 6–8 |
//! | `fidelity/tlp/` | every TLP an event: channels and their queues (`channel.rs`), packets (`packet.rs`), credit accounting (`credits.rs`), store buffer and paced stores (`issue.rs`) | 1, 2, 3, 6, 9 |
//! | `fidelity/flow/` | fluid flows at max-min fair rates (`mod.rs`, `state/`, `memo.rs`; solvers `maxmin.rs`, reference `maxmin_reference.rs`, `maxmin_live.rs`), and its agenda (`agenda.rs`): remote polls as chains (`poll_chain.rs`), flags sharing an event (`flag_batch.rs`) | 6, 9 |
//! | `report/` | which resource bound a run (`binding.rs`), records in the shared schema (`summary.rs`), the time of an allreduce too large to simulate slice by slice ([`large_size`]) | results |
//! | `study/` | how much of a TLP run repeats exactly ([`periodicity`], [`start_trace`] with feature `start-trace`, `examples/steady_state.rs`) | speed studies |
//! | `params/` | model constants and their bounds ([`ModelParams`]) | every constant |
//! | `run.rs` | a scenario's runs, built, run and summarised ([`simulate`], [`simulate_one`]) | — |
//!
//! The engine knows no fidelity: a fidelity supplies its events, its
//! agenda and its answers through `engine/seam.rs`, and nothing in
//! `engine/`, `model/` or `actors/` names `fidelity/`.
//!
//! Every optimisation has a reference and a test holding them together:
//! the radix event queue vs a binary heap ([`QueueKind`]), the fast max-min
//! solver vs its reference, and the TLP fidelity's inline root-complex
//! stages, batched store-buffer release, paced stores and a packet started
//! straight onto an empty channel vs an event (or a queue pass) each
//! ([`TlpOptions`]), the cross-socket stage's streams and a collapsing
//! port's pairs counted as their sightings expire vs a scan of every one
//! (`model/`'s tests), the flow fidelity's
//! memo of solved flow sets vs a solve at every recompute, its max-min
//! problem kept across flow changes vs one built at every solve, and its
//! remote polls kept as chains vs a poll event every round trip
//! ([`FlowOptions`]), and an actor's script in
//! closed form vs written out (`script.rs`).
//!
//! Memory stays flat however many collectives a run has: transfers and
//! groups live in windowed arenas (`ids.rs`) and are freed when they end
//! (`transfer.rs`), flag counters when their collective ends (`flags.rs`),
//! and scripts hold one idle time per collective (`script.rs`).

mod actors;
mod engine;
mod fidelity;
mod model;
mod params;
mod report;
mod run;
mod study;

pub use engine::{estimate, queue, wide_radix};
pub use fidelity::flow::{maxmin, maxmin_live, maxmin_reference};
pub use report::large_size;
pub use study::{periodicity, start_trace};

pub use actors::actor::{Span, SpanKind};
pub use engine::RunStop;
pub use engine::limits::{LimitHit, RunLimits};
pub use fidelity::flow::FlowOptions;
pub use fidelity::tlp::TlpOptions;
pub use params::{
    CrossSocketParams, FabricParams, GpuParams, HostParams, IoDieParams, ModelParams, NcclParams,
    ParamsError, PcieParams, PlatformParams, RingParams, RootComplexParams, SwitchParams,
};
pub use run::{
    QueueKind, Run, RunSpec, SimError, SimOptions, Unfit, runs_of, simulate, simulate_one,
    simulate_one_reference, simulate_one_with,
};
