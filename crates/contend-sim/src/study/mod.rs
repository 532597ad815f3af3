//! Studies of a run beyond its result: how much of a TLP run repeats
//! exactly ([`periodicity`]), on the starts a channel records
//! ([`start_trace`], feature `start-trace`).

pub mod periodicity;
pub mod start_trace;
