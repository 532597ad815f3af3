//! # contend-workload
//!
//! What runs on the machine: allreduce algorithms lowered to per-rank traffic
//! programs ([`lower`]; `nccl`: what NCCL decides for the topology, from
//! contend-nccl's replica), the workloads (allreduce sizes, the EAGLE verify
//! step, point-to-point transfers), the validated [`Scenario`] and its TOML
//! format, arrival skew, the result schema shared by the simulator and the
//! hardware backend ([`ResultRecord`], read and written by [`jsonl`]), and
//! the rules that rank results ([`compare`]).
//!
//! ```
//! use contend_workload::{default_scenario, lower, Algorithm, LowerConfig, Placement, Workload};
//! let sc = default_scenario(None).unwrap();
//! assert_eq!(sc.ranks().len(), 8);
//! let Workload::VerifyStep(v) = sc.workload() else { panic!() };
//! let size = v.size();
//! assert_eq!(v.allreduces(), 122);
//! assert_eq!(size.0, 43_008);
//! let c = lower(Algorithm::OneShotPull, sc.topology(), sc.ranks(), Placement::Peer, size, &LowerConfig::default()).unwrap();
//! // every rank loads the 7 peers' inputs
//! assert_eq!(c.programs[0].link_bytes().0, 7 * 43_008);
//! // NCCL's own allreduce: what its replica decides for these ranks, one
//! // program per rank and channel
//! let cfg = LowerConfig { nccl: sc.nccl_plan(), ..LowerConfig::default() };
//! let n = lower(Algorithm::Nccl, sc.topology(), sc.ranks(), Placement::Peer, size, &cfg).unwrap();
//! assert_eq!(n.programs.len(), 8 * 2);
//! ```

pub mod compare;
mod grid;
pub mod jsonl;
mod kinds;
mod ladder;
pub mod limits;
mod lower;
mod nccl;
mod program;
mod record;
mod ring;
mod scenario;
mod skew;

pub use grid::{FLAG_BLOCKS, kernel_work, launch_grid};
pub use kinds::{
    Algorithm, Dtype, Fidelity, FlagMemory, LaunchMode, Launcher, PatternKind, Placement, ProbeOp,
    ProbeTarget, TransferOp, WorkloadKind,
};
pub use ladder::{LadderError, ladder, size_list};
pub use lower::{
    Collective, LowerConfig, LowerError, RingConfig, chunk_of, chunks, groups, lower, ring_slices,
};
pub use program::{Access, MemLoc, Mover, Notify, Op, OpRef, PackedProgram, Phase, Program, Rank};
pub use record::{
    AggregateFacts, BadResult, Binding, Extra, GroupTag, ImportFacts, KernelFacts, LinkUse,
    Machine, Measured, NcclFacts, PcieLinkState, Quantity, Resource, ResultRecord, SimFacts,
    Source, Stats, StreamFacts, TimingFacts, Way,
};
pub use ring::RingSteps;
pub use scenario::{
    AlgorithmConfig, BelowOneElement, DEFAULT_SCENARIO, DEFAULT_SCENARIO_NAME, KernelConfig,
    NcclCaller, NcclSetup, Pattern, PatternStreams, Scenario, ScenarioError, ScenarioSpec, Shape,
    StepOverrides, Stream, VerifyStep, Workload, at_least_one_element, default_scenario,
    load_scenario, parse_scenario, shipped_scenario_names,
};
pub use skew::{Skew, SkewError};
