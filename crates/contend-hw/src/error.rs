//! What can go wrong on (or for want of) a GPU machine. Every message is one
//! sentence a person can act on.

use thiserror::Error;

/// An error of the hardware backend.
#[derive(Debug, Error)]
pub enum HwError {
    /// libcuda could not be loaded at all.
    #[error(
        "no CUDA driver found (libcuda.so could not be loaded): contend hw needs an NVIDIA GPU machine"
    )]
    NoDriver,
    /// A library loaded as libcuda lacks a function the backend calls.
    #[error(
        "the CUDA driver library {library} has no `{symbol}`: it is not a working NVIDIA driver (or is older than contend hw needs)"
    )]
    DriverSymbol {
        library: String,
        symbol: &'static str,
    },
    /// The driver loaded but reports no usable GPU.
    #[error("no NVIDIA GPU found ({0}): contend hw needs an NVIDIA GPU machine")]
    NoDevice(String),
    /// NVRTC (the runtime compiler) is missing.
    #[error(
        "NVRTC (libnvrtc.so) could not be loaded: install the CUDA toolkit or put libnvrtc on LD_LIBRARY_PATH"
    )]
    NoNvrtc,
    /// NCCL is missing.
    #[error(
        "NCCL could not be loaded (cudarc looks for libnccl.so by name): put a folder holding libnccl.so (a link to libnccl.so.2 will do) on LD_LIBRARY_PATH"
    )]
    NoNccl,
    /// A GPU whose architecture is not in the table the kernels compile for.
    #[error(
        "GPU architecture {0} is not one contend hw compiles for (sm_70 to sm_121): add it to contend_hw::kernels::ARCHES"
    )]
    UnknownArch(String),
    /// A kernel source did not compile.
    #[error("kernel file {file} did not compile for {arch}: {log}")]
    Compile {
        file: String,
        arch: String,
        log: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA call {call} failed: {code}")]
    Driver { call: &'static str, code: String },
    /// An NCCL call failed.
    #[error("NCCL call {call} failed: {code}")]
    Nccl { call: &'static str, code: String },
    /// The machine cannot run what was asked (too few GPUs, sizes, ...).
    #[error("{0}")]
    Unsupported(String),
    /// A kernel (or NCCL) did not finish within the watchdog limit.
    #[error(
        "hang: {what} ({algorithm}, {size} B, ranks {ranks}) did not finish within {limit_ms} ms{detail}"
    )]
    Hang {
        what: String,
        algorithm: String,
        size: u64,
        ranks: String,
        limit_ms: u64,
        detail: String,
    },
    /// A result did not match the CPU reference.
    #[error("wrong result: {algorithm} {placement} {size} B on rank {rank}: {detail}")]
    Mismatch {
        algorithm: String,
        placement: String,
        size: u64,
        rank: usize,
        detail: String,
    },
    /// Reading or writing a file.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// Another GPU thread of the same measurement failed first.
    #[error("another GPU thread failed")]
    Aborted,
    /// An environment variable of the backend has a value it cannot use.
    #[error("{var}={value:?} cannot be used: {why}")]
    Env {
        var: &'static str,
        value: String,
        why: &'static str,
    },
    /// A scenario that the hardware backend cannot take.
    #[error("scenario: {0}")]
    Scenario(String),
    /// Emulated ranks (`hw run --emulate-ranks`) that cannot run.
    #[error(transparent)]
    Emulation(#[from] EmulationError),
}

/// Why `hw run --emulate-ranks` cannot run what was asked.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EmulationError {
    /// Not 2 to the kernels' `MAX_RANKS` ranks.
    #[error(
        "{n} ranks cannot be emulated: an allreduce needs 2 and the kernels take at most {}",
        crate::abi::MAX_RANKS
    )]
    RankCount { n: usize },
    /// More emulated ranks than the scenario has ranks to stand for.
    #[error(
        "--emulate-ranks {n}: the scenario has {count} rank(s); emulated ranks stand for ranks of its topology, so it needs at least {n}"
    )]
    FewerScenarioRanks { n: usize, count: usize },
    /// The ranks' grids do not all fit on the GPU at once, so they would
    /// deadlock ([`coresident`](crate::allreduce::coresident)).
    #[error(
        "{ranks} emulated ranks x {grid} blocks of {kernel} = {} blocks, but one GPU keeps at most {} resident ({} x {blocks_per_sm} blocks per SM): ranks waiting for blocks that cannot start would deadlock; use fewer ranks or fewer blocks ([kernel] blocks)",
        *ranks as u64 * u64::from(*grid),
        u64::from(sms.saturating_sub(*reserve)) * u64::from(*blocks_per_sm),
        kept_sms(*sms, *reserve)
    )]
    NotCoresident {
        kernel: String,
        ranks: usize,
        grid: u32,
        sms: u32,
        blocks_per_sm: u32,
        /// SMs left for the driver's copies.
        reserve: u32,
    },
}

/// The SMs a GPU keeps for kernels, for [`EmulationError::NotCoresident`].
fn kept_sms(sms: u32, reserve: u32) -> String {
    if reserve > 0 {
        format!(
            "{} of its {sms} SMs ({reserve} left for the driver's copies)",
            sms.saturating_sub(reserve)
        )
    } else {
        format!("{sms} SMs")
    }
}

impl HwError {
    /// True for errors after which the GPUs may still be busy (a hang): the
    /// process should stop rather than try the next measurement.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            HwError::Hang { .. } | HwError::Driver { .. } | HwError::Nccl { .. }
        )
    }
}

/// A `hw probe --only` group that is none of
/// [`PROBE_GROUPS`](crate::run::PROBE_GROUPS).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "unknown probe group `{group}` (one of: {})",
    crate::run::PROBE_GROUPS.join(", ")
)]
pub struct UnknownProbeGroup {
    pub group: String,
}
