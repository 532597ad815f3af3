//! # contend-nccl
//!
//! NCCL's decisions for a topology, an NCCL version and an environment,
//! replicated from NCCL's sources (NVIDIA/nccl at v2.27.7-1, v2.28.9-1 and
//! v2.29.7-1; every constant cites its file and tag): the path type between
//! every pair of GPUs ([`paths`]), the P2P level ([`p2p`]), the transport
//! per peer ([`transport`]), the ring and tree search with NCCL's bandwidth
//! constants ([`search`]), the channels ([`channels`]) and, per message
//! size, the algorithm and protocol NCCL's cost model picks ([`tuning`]);
//! [`tuner_table`] is the table contend's NCCL tuner plugin reads.
//! [`plan`] runs the pipeline; [`schedule`] says what one call runs
//! (channels, chunks, loops) and [`protocol`] how each protocol frames and
//! steps its data; [`mod@explain`] says what NCCL does and why; [`facts`]
//! keeps one call's decisions for a result record;
//! [`log`] reads `NCCL_DEBUG=INFO` logs so the replica can be checked
//! against what NCCL printed.
//!
//! ```
//! use contend_nccl::{explain, plan, all_gpus, NcclEnv, NcclVersion, Transport};
//! use contend_topo::{shipped, Bytes};
//! let topo = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
//! let p = plan(&topo, &all_gpus(&topo), &NcclEnv::default(), NcclVersion::V2_28).unwrap();
//! // GPUs on root ports of one socket cross a host bridge (PHB): above the
//! // default P2P level PXB, so NCCL stages through host memory.
//! assert_eq!(p.pair(0, 1).unwrap().transport, Transport::Shm);
//! let sys = NcclEnv::from_assignments(["NCCL_P2P_LEVEL=SYS"]).unwrap();
//! let q = plan(&topo, &all_gpus(&topo), &sys, NcclVersion::V2_28).unwrap();
//! assert!(matches!(q.pair(0, 4).unwrap().transport, Transport::P2p { .. }));
//! assert!(explain(&q, &[Bytes::kib(42)]).contains("ring"));
//! ```

pub mod channels;
mod env;
mod error;
pub mod explain;
pub mod facts;
mod graph_file;
pub mod log;
pub mod p2p;
pub mod paths;
mod plan;
pub mod protocol;
pub mod schedule;
pub mod search;
pub mod system;
pub mod transport;
pub mod tuner_table;
pub mod tuning;
mod version;

pub use channels::{Channels, TreeNode};
pub use env::{
    CpuArch, EnableList, FUNCTIONS, GpuP2p, HostFacts, MODELLED, NcclEnv, P2pLevel,
    P2pLevelSpelling, ProcessModel,
};
pub use error::{
    EnableListError, EnvError, EnvProblem, LogError, NcclError, P2pLevelError, P2pLevelHint,
    UnknownCpu,
};
pub use explain::{call_line, explain, summary};
pub use facts::{CallFacts, Connection, DecidedBy};
pub use p2p::{LevelSource, P2pPolicy, P2pVerdict};
pub use paths::PathType;
pub use plan::{
    Buffers, NcclPlan, PeerDecision, RankInfo, SizeRange, SystemSummary, all_gpus, plan,
};
pub use schedule::{CallSchedule, ChannelPart};
pub use search::{Pattern, SearchGraph};
pub use transport::{BufferAt, P2pMechanism, Transport, TransportKind};
pub use tuning::{Algorithm, CostModel, ModelEntry, Protocol, SizeChoice};
pub use version::NcclVersion;
