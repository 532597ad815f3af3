//! What a run reports: which resource bound it ([`binding`]) and its
//! records in the shared schema ([`summary`]).

pub(crate) mod binding;
pub(crate) mod summary;
