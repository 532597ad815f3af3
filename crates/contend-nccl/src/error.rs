//! Errors of the replica, of the `NCCL_*` values it reads, and of the log
//! parser.

use std::fmt;
use thiserror::Error;

/// A malformed `NCCL_*` value, naming the variable.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{name}={value}: {problem}")]
pub struct EnvError {
    pub name: String,
    pub value: String,
    pub problem: EnvProblem,
}

impl EnvError {
    pub(crate) fn new(name: &str, value: &str, problem: impl Into<EnvProblem>) -> EnvError {
        EnvError {
            name: name.to_string(),
            value: value.to_string(),
            problem: problem.into(),
        }
    }
}

/// What is wrong with an `NCCL_*` assignment ([`EnvError`] names it).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum EnvProblem {
    #[error("must be an integer")]
    NotAnInteger,
    #[error("must be a positive number of bytes")]
    NotPositiveBytes,
    #[error("must name a file")]
    NoFile,
    /// A command line's `--env` item without `=`.
    #[error("write NAME=value")]
    NotAnAssignment,
    /// A name outside [`MODELLED`](crate::MODELLED) where only those
    /// are taken.
    #[error(
        "is not a variable the NCCL replica models ({}, NCCL_NVB_DISABLE); \
         NCCL ignores names it does not know, so a misspelt one would do nothing",
        crate::env::MODELLED.join(", ")
    )]
    NotModelled,
    #[error("is not an NCCL variable (NCCL_*)")]
    NotNccl,
    #[error(transparent)]
    P2pLevel(#[from] P2pLevelError),
    #[error(transparent)]
    EnableList(#[from] EnableListError),
}

/// A value of `NCCL_P2P_LEVEL` NCCL would not recognise
/// ([`P2pLevel::parse`](crate::P2pLevel::parse)).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum P2pLevelError {
    /// An old-style integer level past `u32`.
    #[error("integer out of range")]
    IntegerOutOfRange,
    #[error(
        "`{value}` is not a level NCCL recognises (LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS or 0-5); \
         NCCL would ignore it and keep its default{hint}"
    )]
    Unknown { value: String, hint: P2pLevelHint },
}

/// What a misspelt `NCCL_P2P_LEVEL` probably meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum P2pLevelHint {
    None,
    /// `NODE`: nvidia-smi's word for NCCL's PHB.
    Node,
    /// A type name in the wrong case: NCCL's spelling.
    Case(String),
}

impl fmt::Display for P2pLevelHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            P2pLevelHint::None => Ok(()),
            P2pLevelHint::Node => {
                f.write_str(" (NCCL has no NODE type: nvidia-smi's NODE is NCCL's PHB)")
            }
            P2pLevelHint::Case(up) => write!(f, " (NCCL compares case-sensitively: write `{up}`)"),
        }
    }
}

/// A malformed `NCCL_ALGO` or `NCCL_PROTO` list.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum EnableListError {
    #[error("all entries except the first must have a function prefix: `{token}`")]
    NoFunctionPrefix { token: String },
    /// An algorithm or protocol name the list cannot take (`known`: those it can).
    #[error("unknown element `{element}` (one of {})", known.join(", "))]
    UnknownElement { element: String, known: Vec<String> },
    #[error("unknown function `{function}` (one of {})", crate::env::FUNCTIONS.join(", "))]
    UnknownFunction { function: String },
}

/// A CPU name [`CpuArch::parse`](crate::CpuArch::parse) does not know.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error(
    "unknown CPU `{name}` (one of {})",
    crate::env::CpuArch::NAMES.map(|(n, _)| n).join(", ")
)]
pub struct UnknownCpu {
    pub name: String,
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
