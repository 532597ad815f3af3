//! The ranks and what they run, as data and pure functions: an actor and
//! its script position ([`actor`]), scripts built from traffic programs
//! ([`script`]), kernel launchers ([`launcher`]), flags and waits
//! ([`flags`]), transfers and groups ([`transfer`]). What each event does
//! to a rank is the engine's (`engine/rank_*.rs`).

pub(crate) mod actor;
pub(crate) mod flags;
pub(crate) mod launcher;
pub(crate) mod script;
pub(crate) mod transfer;
