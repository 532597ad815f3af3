//! # contend-hw
//!
//! The hardware backend of `contend`: it runs the scenario the simulator
//! predicts on real NVIDIA GPUs and writes what it measures in the shared
//! result schema ([`contend_workload::ResultRecord`], JSON Lines).
//!
//! - [`devices::Devices`]: one process drives every GPU of the host (a primary
//!   context and a thread per GPU), peer access enabled where the driver
//!   allows it, the kernels of `kernels/*.cu` compiled by NVRTC once per
//!   architecture among the GPUs ([`kernels`]) and loaded into each; what
//!   the kernels share with the Rust side (limits, argument structs) is
//!   defined once in [`abi`].
//! - [`allreduce`]: one-shot pull/push, two-shot pull/push, hierarchical,
//!   island two-shot, staged push and lossless two-shot push kernels, and the
//!   copy-engine ring (a schedule of copies and one small kernel per step),
//!   on buffers in device memory (`peer` placement) or pinned host memory
//!   mapped into every GPU (`host`), launched with
//!   [`contend_workload::launch_grid`]'s grid, verified against a CPU
//!   reference ([`verify`]; bit for bit for the lossless kernel) and timed
//!   with CUDA events, eager and as CUDA graphs. Several ranks may share a
//!   GPU (`hw run --emulate-ranks`): each then has its own stream, and grids
//!   that could not all be resident at once are refused
//!   ([`allreduce::coresident`]).
//! - [`nccl`]: NCCL's allreduce through the same engine (the baseline).
//! - [`probe`]: copy-engine and SM load/store bandwidth, flag round trips,
//!   several GPUs at once.
//! - [`topo`]: the live machine as topology TOML and the machine
//!   fingerprint stamped on every record.
//!
//! Without a driver or a GPU every entry point returns a one-sentence error
//! and nothing panics:
//!
//! ```
//! if !contend_hw::driver::driver_present() {
//!     let e = contend_hw::open(false).unwrap_err();
//!     assert!(e.to_string().starts_with("no CUDA driver found"));
//! }
//! ```

pub mod abi;
pub mod allreduce;
pub mod devices;
pub mod driver;
mod error;
pub mod kernels;
pub mod nccl;
pub mod output;
pub mod probe;
pub mod run;
pub mod topo;
pub mod verify;

pub use devices::Devices;
pub use error::{EmulationError, HwError, UnknownProbeGroup};
pub use output::Sink;
pub use run::Options;
pub use topo::LiveMachine;

/// Opens every GPU (with `kernels`, compiled and loaded) and finds out what
/// the machine is.
pub fn open(kernels: bool) -> Result<(Devices, LiveMachine), HwError> {
    let devices = Devices::open(kernels)?;
    let live = topo::discover(&devices);
    Ok((devices, live))
}
