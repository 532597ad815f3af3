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
//! ## Where each part of the model lives
//!
//! | DESIGN.md model item | file |
//! |---|---|
//! | time as integer picoseconds, equal times in insertion order | [`queue`], `engine.rs` |
//! | 1. links: rates, TLP/DLLP overhead, MPS/MRRS/RCB | `fabric.rs`, `transport/tlp/channel.rs` |
//! | 2. posted writes vs non-posted reads, completions | `transport/tlp/packet.rs`, `transport/tlp/mod.rs` (`mem_done`) |
//! | 3. flow-control credits, UpdateFC | `credits.rs` |
//! | 4. switches (port latency; P2P below the switch) | `fabric.rs` (channel latency), routes in `contend-topo` |
//! | 5. root complex: P2P forwarding, latency, memory pass | `root_complex.rs` |
//! | 5. posted-write collapse (one rule, both fidelities) | `collapse.rs` |
//! | 5, 10. keys sighted within a window, counted off as they expire (TLP collapse, cross-socket) | `sightings.rs` |
//! | 6. GPU side: coalescing, load window, store rate, local bandwidth | `gpu.rs` |
//! | 6. store buffer and paced SM stores (TLP) | `transport/tlp/issue.rs` |
//! | 6. flags, local and remote polling | `flags.rs` |
//! | 6. remote polls without an event per round trip (flow) | `poll_chain.rs` |
//! | 6–7. ops of a traffic program, fence | `actor.rs` |
//! | 6–7. kernel launches: graph, a thread per rank, one thread for all | `launcher.rs` |
//! | 6–7. transfers and groups (a Fetch or Post op) | `transfer.rs` |
//! | 7–8. programs repeated per collective with gap and skew | `script.rs` |
//! | 9. two fidelities behind one trait | `transport/mod.rs` |
//! | 9. TLP fidelity | `transport/tlp/` |
//! | 9. flow fidelity, max-min fair sharing | `transport/flow/`, `maxmin.rs` (twin `maxmin_reference.rs`), `maxmin_live.rs` |
//! | model constants and their bounds | [`ModelParams`] (`params/mod.rs`, `params/check.rs`) |
//! | run limits | [`RunLimits`] (`limits.rs`) |
//! | results in the shared schema | `summary.rs` |
//! | how much of a TLP run repeats exactly (what a fast-forward could skip) | [`periodicity`], [`start_trace`] (feature `start-trace`), `examples/steady_state.rs` |
//!
//! Every optimisation has a plain twin and a test holding them together:
//! the radix event queue vs a binary heap ([`QueueKind`]), the fast max-min
//! solver vs its reference, and the TLP transport's inline root-complex
//! stages, batched store-buffer release, paced stores and a packet started
//! straight onto an empty channel vs an event (or a queue pass) each
//! ([`TlpOptions`]), the cross-socket stage's streams and a collapsing
//! port's pairs counted as their sightings expire vs a scan of every one
//! (`sightings.rs`'s, `cross_socket.rs`'s and `collapse.rs`'s tests), the flow transport's
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

mod actor;
mod binding;
mod collapse;
mod credits;
mod cross_socket;
mod engine;
pub mod estimate;
mod fabric;
mod flag_batch;
mod flags;
mod gpu;
mod ids;
mod launcher;
mod limits;
pub mod maxmin;
pub mod maxmin_live;
pub mod maxmin_reference;
mod params;
pub mod periodicity;
mod poll_chain;
pub mod queue;
mod root_complex;
mod run;
mod script;
mod sightings;
pub mod start_trace;
mod summary;
mod transfer;
mod transport;
pub mod wide_radix;

pub use actor::{Span, SpanKind};
pub use limits::{LimitHit, RunLimits};
pub use params::{
    CrossSocketParams, FabricParams, GpuParams, HostParams, IoDieParams, ModelParams, NcclParams,
    ParamsError, PcieParams, PlatformParams, RingParams, RootComplexParams, SwitchParams,
};
pub use run::{
    QueueKind, Run, RunSpec, SimError, SimOptions, runs_of, simulate, simulate_one,
    simulate_one_reference, simulate_one_with,
};
pub use transport::flow::FlowOptions;
pub use transport::tlp::TlpOptions;
