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

mod engine;
mod fabric;
pub mod flow;
mod params;
pub mod queue;
mod run;

pub use engine::{Span, SpanKind};
pub use params::{
    GpuParams, HostParams, ModelParams, ParamsError, PcieParams, RootComplexParams, SwitchParams,
};
pub use run::{Run, RunSpec, SimError, runs_of, simulate, simulate_one, simulate_one_reference};
