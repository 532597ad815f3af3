//! Errors of the replica and the log parser.

use thiserror::Error;

/// A malformed `NCCL_*` value, naming the variable.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{name}={value}: {message}")]
pub struct EnvError {
    pub name: String,
    pub value: String,
    pub message: String,
}

impl EnvError {
    pub(crate) fn new(name: &str, value: &str, message: String) -> EnvError {
        EnvError {
            name: name.to_string(),
            value: value.to_string(),
            message,
        }
    }
}

/// Why a plan could not be made.
#[derive(Debug, Error)]
pub enum NcclError {
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error("rank {rank}: `{node}` is not a GPU of the topology")]
    NotAGpu { rank: usize, node: String },
    #[error("`{node}` is rank {first} and rank {second}: every rank needs its own GPU")]
    DuplicateRank {
        node: String,
        first: usize,
        second: usize,
    },
    #[error("a plan needs at least one rank")]
    NoRanks,
    #[error(
        "`{node}` has no PCIe path up to a root complex, which NCCL needs to place it under a CPU"
    )]
    NoPciePath { node: String },
    #[error(
        "the compute capability of GPU `{gpu}` (model `{model}`) is unknown, and NCCL's rules depend on it: name the GPU's model in the topology (`model = \"H100\"`, `\"RTX PRO 6000 Blackwell\"`; `contend topo import` writes it)"
    )]
    UnknownComputeCapability { gpu: String, model: String },
    #[error("GPUs of different compute capabilities ({min} and {max}) are not replicated")]
    MixedComputeCapability { min: u32, max: u32 },
    #[error("NCCL_GRAPH_FILE {file}: {message}")]
    GraphFile { file: String, message: String },
    /// A situation whose NCCL rules this crate does not replicate, with the
    /// rule named.
    #[error("not replicated: {0}")]
    Unreplicated(String),
}

/// A log line the parser must understand but cannot, with its place.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{file}:{line}: {message}: `{text}`")]
pub struct LogError {
    pub file: String,
    pub line: usize,
    pub message: String,
    pub text: String,
}
