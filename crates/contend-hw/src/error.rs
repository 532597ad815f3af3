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
