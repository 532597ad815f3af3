//! Scenarios: which machine, which ranks, which algorithms, placement,
//! fidelity, seed and workload. One scenario feeds the simulator and the
//! hardware backend alike.
//!
//! A [`Scenario`] can only be built by [`Scenario::new`] (from a
//! [`ScenarioSpec`] a program fills in) or by the TOML loader
//! ([`parse_scenario`], [`load_scenario`]), which both run the same checks
//! ([`validate`]) against the stated [`limits`](crate::limits); its fields
//! are private, so every scenario in the program is a valid one. To vary
//! one, take its spec ([`Scenario::spec`]), change it and build again.

mod nccl;
mod pattern;
mod peer_access;
mod step;
mod toml;
mod validate;

use crate::kinds::{Algorithm, Dtype, Fidelity, LaunchMode, Launcher, Placement, TransferOp};
use crate::skew::Skew;
use contend_topo::{Bytes, Location, NodeIdx, Picos, TopoError, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use thiserror::Error;

pub use self::nccl::{NcclCaller, NcclSetup};
pub use self::pattern::{Pattern, PatternStreams, Shape};
pub use self::step::StepOverrides;
pub use self::toml::{
    DEFAULT_SCENARIO, DEFAULT_SCENARIO_NAME, default_scenario, load_scenario, parse_scenario,
    shipped_scenario_names,
};
pub use self::validate::{BelowOneElement, at_least_one_element};

/// A scenario that cannot be used, and where.
#[derive(Debug, Error)]
pub enum ScenarioError {
    #[error("{}{message}", location.as_ref().map(|l| format!("{l}: ")).unwrap_or_default())]
    Invalid {
        location: Option<Location>,
        message: String,
    },
    #[error(transparent)]
    Topology(#[from] TopoError),
    #[error("{location}: in the topology it names: {topo}")]
    InTopology { location: Location, topo: TopoError },
    /// `NCCL_ALGO`/`NCCL_PROTO` leave NCCL nothing it could run for an
    /// allreduce of `size` (typed: a caller that tries such settings skips
    /// them).
    #[error(
        "{}NCCL has no algorithm and protocol left for an allreduce of {size}: \
         NCCL_ALGO/NCCL_PROTO disable every one NCCL could run here",
        location.as_ref().map(|l| format!("{l}: ")).unwrap_or_default()
    )]
    NcclNoChoice {
        location: Option<Location>,
        size: contend_topo::Bytes,
    },
}

impl ScenarioError {
    /// The field at fault, where one is.
    pub fn field(&self) -> Option<&str> {
        match self {
            ScenarioError::Invalid { location, .. }
            | ScenarioError::NcclNoChoice { location, .. } => location.as_ref()?.field.as_deref(),
            ScenarioError::InTopology { location, .. } => location.field.as_deref(),
            ScenarioError::Topology(t) => t.location.as_ref()?.field.as_deref(),
        }
    }
}

/// Kernel shape for the custom allreduce kernels and SM microbenchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    pub blocks: u32,
    pub threads: u32,
}

impl Default for KernelConfig {
    fn default() -> Self {
        // vLLM's custom allreduce launches 36 blocks of 512 threads by default.
        KernelConfig {
            blocks: 36,
            threads: 512,
        }
    }
}

/// What a scenario says of one algorithm beyond the scenario-wide
/// choices (`[algorithm.one-shot-push]`): its launch mode and kernel
/// shape. What it leaves out is the scenario's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AlgorithmConfig {
    pub launch: Option<LaunchMode>,
    pub blocks: Option<u32>,
    pub threads: Option<u32>,
}

/// One stream of a `transfer` workload: GPU `from` drives `op` against
/// `to`, starting `start` after the run begins, `repeat` times back to back.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stream {
    pub from: NodeIdx,
    pub to: NodeIdx,
    pub op: TransferOp,
    /// Bytes per op (ping-pong: the flag).
    pub bytes: Bytes,
    pub kernel: KernelConfig,
    pub iterations: u32,
    /// Ping-pong only: a system fence before every flag and after every wait,
    /// as the allreduce kernels' barriers do.
    pub fence: bool,
    /// Ping-pong between two GPUs only: both flags in host memory (the
    /// GPU nearest host memory of `from`, mapped into both), each GPU
    /// polling its own over its link, as `contend hw probe`'s host-flag
    /// ping-pong and the host placement's barriers keep them
    /// (`host_flags`). A GPU-host ping-pong keeps its flags in host memory
    /// anyway.
    pub host_flags: bool,
    /// Offset from the start of the run (`start_us`).
    pub start: Picos,
    /// The op this many times back to back, each repeat a per-op time of
    /// the stream's record (`repeat`; a ping-pong repeats its `iterations`
    /// round trips).
    pub repeat: u32,
}

impl Stream {
    /// A stream that starts with the run and runs its op once, the kernel
    /// and iterations left at the scenario defaults (36 x 512, 100).
    pub fn new(from: NodeIdx, to: NodeIdx, op: TransferOp, bytes: Bytes) -> Stream {
        Stream {
            from,
            to,
            op,
            bytes,
            kernel: KernelConfig::default(),
            iterations: 100,
            fence: false,
            host_flags: false,
            start: Picos::ZERO,
            repeat: 1,
        }
    }
    /// Ops the stream runs in all (what [`crate::limits::MAX_TRANSFER_OPS`] bounds).
    pub fn ops(&self) -> u64 {
        let per = if self.op == TransferOp::PingPong {
            u64::from(self.iterations)
        } else {
            1
        };
        u64::from(self.repeat).saturating_mul(per)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Workload {
    /// Allreduces of each size, `repeats` times back to back.
    Allreduce {
        sizes: Vec<Bytes>,
        dtype: Dtype,
        repeats: u32,
        gap: Picos,
        skew: Skew,
    },
    /// An EAGLE verify step.
    VerifyStep(VerifyStep),
    /// Point-to-point streams, each from its start offset, and patterns of
    /// streams (expanded when the scenario is built: [`Scenario::streams`]).
    Transfer {
        streams: Vec<Stream>,
        patterns: Vec<Pattern>,
    },
}

/// An EAGLE verify step: layers × allreduces_per_layer allreduces of
/// hidden × tokens × dtype bytes, each after a compute gap and arrival skew.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct VerifyStep {
    pub layers: u32,
    pub allreduces_per_layer: u32,
    pub hidden: u64,
    pub tokens: u64,
    pub dtype: Dtype,
    pub gap: Picos,
    pub skew: Skew,
}

impl Default for VerifyStep {
    /// EAGLE-3 on a 61-layer model: 61 × 2 allreduces of 7168 × 3 × bf16
    /// (43,008 B), back to back.
    fn default() -> Self {
        VerifyStep {
            layers: 61,
            allreduces_per_layer: 2,
            hidden: 7168,
            tokens: 3,
            dtype: Dtype::Bf16,
            gap: Picos::ZERO,
            skew: Skew::None,
        }
    }
}

impl VerifyStep {
    /// Bytes per allreduce (saturating; a validated scenario's never saturates).
    pub fn size(&self) -> Bytes {
        Bytes(
            self.hidden
                .saturating_mul(self.tokens)
                .saturating_mul(self.dtype.size()),
        )
    }
    /// Allreduces in one step (saturating; bounded in a validated scenario).
    pub fn allreduces(&self) -> u32 {
        self.layers.saturating_mul(self.allreduces_per_layer)
    }
}

impl Workload {
    pub fn kind(&self) -> crate::kinds::WorkloadKind {
        use crate::kinds::WorkloadKind;
        match self {
            Workload::Allreduce { .. } => WorkloadKind::Allreduce,
            Workload::VerifyStep(_) => WorkloadKind::VerifyStep,
            Workload::Transfer { .. } => WorkloadKind::Transfer,
        }
    }
    pub fn kind_name(&self) -> &'static str {
        self.kind().name()
    }
    /// The element type of a collective workload.
    pub fn dtype(&self) -> Option<Dtype> {
        match self {
            Workload::Allreduce { dtype, .. } => Some(*dtype),
            Workload::VerifyStep(v) => Some(v.dtype),
            Workload::Transfer { .. } => None,
        }
    }
    /// Compute gap and arrival skew of a collective workload.
    pub fn gap_and_skew(&self) -> Option<(Picos, Skew)> {
        match self {
            Workload::Allreduce { gap, skew, .. } => Some((*gap, *skew)),
            Workload::VerifyStep(v) => Some((v.gap, v.skew)),
            Workload::Transfer { .. } => None,
        }
    }
}

/// Everything a scenario says, before it is checked. Programs fill one in
/// (usually from [`ScenarioSpec::new`] and a change or two) and build the
/// scenario with [`Scenario::new`].
#[derive(Clone, Debug)]
pub struct ScenarioSpec {
    pub name: String,
    pub description: Option<String>,
    /// What results call the topology (`pro6000-8x-2socket` or a path).
    pub topology_ref: String,
    /// The topology the scenario file names, where another replaced it
    /// (`--topology`): its description may speak of that box.
    pub replaced_topology: Option<String>,
    pub topology: Topology,
    /// Rank order: GPUs of `topology`.
    pub ranks: Vec<NodeIdx>,
    pub algorithms: Vec<Algorithm>,
    pub placements: Vec<Placement>,
    pub fidelities: Vec<Fidelity>,
    pub seed: u64,
    pub kernel: KernelConfig,
    pub launch: LaunchMode,
    /// Who launches the ranks' eager kernels: a thread per rank, or one for all.
    pub launcher: Launcher,
    /// Launch mode and kernel shape of single algorithms
    /// (`[algorithm.NAME]`), over `launch` and `kernel`.
    pub per_algorithm: BTreeMap<Algorithm, AlgorithmConfig>,
    /// NCCL's release and environment for the `nccl` algorithm (`[nccl]`).
    pub nccl: NcclSetup,
    pub workload: Workload,
}

impl ScenarioSpec {
    /// Every GPU of `topology` as a rank, every algorithm, peer placement,
    /// flow fidelity, seed 0, the default kernel, eager launches, NCCL
    /// 2.28 with an empty environment.
    pub fn new(name: &str, topology: Topology, workload: Workload) -> ScenarioSpec {
        ScenarioSpec {
            name: name.to_string(),
            description: None,
            topology_ref: topology.name.clone(),
            replaced_topology: None,
            ranks: topology.gpus(),
            topology,
            algorithms: Algorithm::ALL.to_vec(),
            placements: vec![Placement::Peer],
            fidelities: vec![Fidelity::Flow],
            seed: 0,
            kernel: KernelConfig::default(),
            launch: LaunchMode::Eager,
            launcher: Launcher::PerRank,
            per_algorithm: BTreeMap::new(),
            nccl: NcclSetup::default(),
            workload,
        }
    }
}

/// A validated scenario: topology loaded, ranks resolved, every name and
/// number checked against the stated limits.
#[derive(Clone, Debug)]
pub struct Scenario {
    spec: ScenarioSpec,
    /// A transfer workload's streams, patterns expanded.
    streams: Vec<Stream>,
    patterns: Vec<PatternStreams>,
    /// NCCL's decisions for the ranks, when the scenario runs `nccl`.
    nccl_plan: Option<Arc<contend_nccl::NcclPlan>>,
    /// Pairs of ranks' GPUs without P2P ([`Topology::pairs_without_p2p`]).
    no_p2p: Vec<contend_topo::PairWithoutP2p>,
    /// The placements that run: the spec's, with `peer` replaced by `host`
    /// where GPUs lack P2P (a kernel cannot load or store a peer's buffer).
    placements: Vec<Placement>,
}

impl Scenario {
    /// Checks `spec` and builds the scenario; an error names the field.
    pub fn new(spec: ScenarioSpec) -> Result<Scenario, ScenarioError> {
        validate::check(&spec).map_err(|e| e.unlocated(&spec.name))?;
        let plan = nccl::plan(&spec).map_err(|e| e.into_error(|f| f.unlocated(&spec.name)))?;
        Ok(Scenario::from_checked(spec, plan))
    }

    /// A spec the checks have passed, with its NCCL plan.
    pub(super) fn from_checked(
        spec: ScenarioSpec,
        nccl_plan: Option<Arc<contend_nccl::NcclPlan>>,
    ) -> Scenario {
        let (streams, patterns) = match &spec.workload {
            Workload::Transfer { streams, patterns } => {
                pattern::expand(&spec.topology, streams, patterns)
            }
            _ => (vec![], vec![]),
        };
        let (no_p2p, placements) = peer_access::placements(&spec);
        Scenario {
            spec,
            streams,
            patterns,
            nccl_plan,
            no_p2p,
            placements,
        }
    }

    /// A copy of what the scenario says, to change and build again.
    pub fn spec(&self) -> ScenarioSpec {
        self.spec.clone()
    }
    /// The same scenario with another workload.
    /// NCCL's plan is kept (it depends on the topology, ranks and
    /// `[nccl]` only: a fit's twins change sizes thousands of times).
    pub fn with_workload(&self, workload: Workload) -> Result<Scenario, ScenarioError> {
        let spec = ScenarioSpec {
            workload,
            ..self.spec()
        };
        validate::check(&spec).map_err(|e| e.unlocated(&spec.name))?;
        let plan = nccl::plan_reusing(&spec, self.nccl_plan.as_ref())
            .map_err(|e| e.into_error(|f| f.unlocated(&spec.name)))?;
        Ok(Scenario::from_checked(spec, plan))
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }
    pub fn description(&self) -> Option<&str> {
        self.spec.description.as_deref()
    }
    /// The topology the scenario file names, where `--topology` replaced it.
    pub fn replaced_topology(&self) -> Option<&str> {
        self.spec.replaced_topology.as_deref()
    }
    /// What results call the topology (`pro6000-8x-2socket` or a path).
    pub fn topology_ref(&self) -> &str {
        &self.spec.topology_ref
    }
    pub fn topology(&self) -> &Topology {
        &self.spec.topology
    }
    pub fn ranks(&self) -> &[NodeIdx] {
        &self.spec.ranks
    }
    pub fn algorithms(&self) -> &[Algorithm] {
        &self.spec.algorithms
    }
    /// The placements that run: the scenario's, except that where the
    /// ranks' GPUs lack P2P ([`Scenario::no_p2p`]) buffers go to host
    /// memory (`host`), since no kernel can reach a peer's.
    pub fn placements(&self) -> &[Placement] {
        &self.placements
    }
    /// The pairs of ranks' GPUs without P2P, and why (empty where every
    /// pair has it).
    pub fn no_p2p(&self) -> &[contend_topo::PairWithoutP2p] {
        &self.no_p2p
    }
    /// In words, when some pairs lack P2P: which, why, and what runs
    /// instead; `None` where every pair has it.
    pub fn no_p2p_note(&self) -> Option<String> {
        peer_access::note(&self.spec, &self.no_p2p)
    }
    pub fn fidelities(&self) -> &[Fidelity] {
        &self.spec.fidelities
    }
    pub fn seed(&self) -> u64 {
        self.spec.seed
    }
    /// The scenario-wide kernel shape (see [`Scenario::kernel_of`]).
    pub fn kernel(&self) -> KernelConfig {
        self.spec.kernel
    }
    /// The scenario-wide launch mode (see [`Scenario::launch_of`]).
    pub fn launch(&self) -> LaunchMode {
        self.spec.launch
    }
    /// What `[algorithm.NAME]` says of `alg`, if anything.
    pub fn algorithm_config(&self, alg: Algorithm) -> Option<&AlgorithmConfig> {
        self.spec.per_algorithm.get(&alg)
    }
    /// Who launches the ranks' eager kernels.
    pub fn launcher(&self) -> Launcher {
        self.spec.launcher
    }
    /// How `alg`'s kernels are launched: its own `launch`, else the scenario's.
    pub fn launch_of(&self, alg: Algorithm) -> LaunchMode {
        self.algorithm_config(alg)
            .and_then(|c| c.launch)
            .unwrap_or(self.spec.launch)
    }
    /// `alg`'s kernel shape: its own `blocks` and `threads`, else the scenario's.
    pub fn kernel_of(&self, alg: Algorithm) -> KernelConfig {
        let c = self.algorithm_config(alg).copied().unwrap_or_default();
        KernelConfig {
            blocks: c.blocks.unwrap_or(self.spec.kernel.blocks),
            threads: c.threads.unwrap_or(self.spec.kernel.threads),
        }
    }
    /// A transfer workload's streams: its `[[workload.stream]]`s in order,
    /// then every pattern's streams in pattern order (empty for collectives).
    pub fn streams(&self) -> &[Stream] {
        &self.streams
    }
    /// Where each pattern's streams are in [`Scenario::streams`], with the
    /// label its aggregate record carries.
    pub fn pattern_streams(&self) -> &[PatternStreams] {
        &self.patterns
    }
    pub fn workload(&self) -> &Workload {
        &self.spec.workload
    }
    /// NCCL's release and environment (`[nccl]`).
    pub fn nccl(&self) -> &NcclSetup {
        &self.spec.nccl
    }
    /// NCCL's decisions for the ranks, when the scenario runs `nccl`.
    pub fn nccl_plan(&self) -> Option<&contend_nccl::NcclPlan> {
        self.nccl_plan.as_deref()
    }
    /// The same scenario under another NCCL release or environment.
    pub fn with_nccl(&self, nccl: NcclSetup) -> Result<Scenario, ScenarioError> {
        Scenario::new(ScenarioSpec {
            nccl,
            ..self.spec()
        })
    }
    pub fn rank_names(&self) -> Vec<String> {
        self.spec
            .ranks
            .iter()
            .map(|r| self.spec.topology.node(*r).id.0.clone())
            .collect()
    }
}
