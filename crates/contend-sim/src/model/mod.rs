//! The PCIe fabric and the devices on it, shared by both fidelities: links
//! and their stages ([`fabric`]), root complexes ([`root_complex`]), the
//! posted-write collapse of some switches and root complexes
//! ([`collapse`]), the cross-socket link ([`cross_socket`]), keys sighted
//! within a window that both rules count ([`sightings`]), and the GPU side
//! ([`gpu`]).

pub(crate) mod channel;
pub(crate) mod collapse;
pub(crate) mod credit_limits;
pub(crate) mod cross_socket;
pub(crate) mod fabric;
pub(crate) mod gpu;
pub(crate) mod root_complex;
pub(crate) mod sightings;
