//! What a run reports: which resource bound it ([`binding`]), its
//! records in the shared schema ([`summary`]), and the time of an
//! allreduce too large to simulate slice by slice ([`large_size`]).

pub(crate) mod binding;
pub mod large_size;
pub(crate) mod run_spec;
pub(crate) mod summary;
