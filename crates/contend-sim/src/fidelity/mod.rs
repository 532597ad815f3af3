//! DESIGN 9 — the two fidelities behind the engine's seam
//! (`engine/seam.rs`): [`tlp`] moves every TLP hop by hop with credits and
//! queues (the reference); [`flow`] moves fluid flows at max-min fair rates
//! (fast), on an agenda that keeps remote polls as chains and lets flags
//! share events.

pub(crate) mod flow;
pub(crate) mod tlp;
