//! What a scenario says of NCCL (`[nccl]`: the release whose rules apply and
//! the `NCCL_*` environment) and NCCL's plan for the scenario's ranks,
//! made once when the scenario is built: a scenario that runs the `nccl`
//! algorithm on a machine whose NCCL decisions cannot be replicated, or
//! with every algorithm or protocol switched off, is refused there, at the
//! field that says so.

use super::validate::FieldError;
use super::{ScenarioError, ScenarioSpec, Workload};
use crate::kinds::Algorithm;
use contend_nccl::{NcclEnv, NcclError, NcclPlan, NcclVersion};
use contend_topo::{Bytes, TopoError, TopoErrorKind};
use std::sync::Arc;

/// The `[nccl]` table: the NCCL release whose rules the `nccl` algorithm
/// follows (2.27, 2.28 — the default — or 2.29) and the `NCCL_*`
/// variables it runs under (those the replica models:
/// [`contend_nccl::MODELLED`]), and who calls it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NcclSetup {
    pub version: NcclVersion,
    pub env: NcclEnv,
    pub caller: NcclCaller,
}

/// Who calls NCCL's collective (`[nccl] caller`): its C API directly
/// (nccl-tests, p2pmark, vLLM's pynccl) or torch.distributed's
/// `all_reduce` (ProcessGroupNCCL), whose eager call does its own host work
/// before NCCL's launch (`nccl.torch_call_ns`). Inside a captured CUDA graph
/// neither costs a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NcclCaller {
    #[default]
    Direct,
    Torch,
}

impl std::str::FromStr for NcclCaller {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "direct" => Ok(NcclCaller::Direct),
            "torch" => Ok(NcclCaller::Torch),
            _ => Err(format!(
                "unknown caller `{s}`: `direct` (NCCL's C API) or `torch` (torch.distributed)"
            )),
        }
    }
}

impl NcclSetup {
    /// `2.28` or `2.28, NCCL_P2P_LEVEL=SYS`.
    pub fn describe(&self) -> String {
        let mut s = self.version.to_string();
        for a in self.env.assignments() {
            s.push_str(", ");
            s.push_str(&a);
        }
        if self.caller == NcclCaller::Torch {
            s.push_str(", called from torch.distributed");
        }
        s
    }
}

/// Why NCCL's plan failed: something the scenario says (at its field), or
/// something of the topology it runs on (at the node in the topology's
/// file: a GPU whose model is not known).
#[derive(Debug)]
pub(crate) enum PlanFailure {
    Field(FieldError),
    Topology(TopoError),
    /// NCCL_ALGO/NCCL_PROTO (at `field`) leave nothing NCCL could run for
    /// an allreduce of `size`.
    NoChoice {
        field: &'static str,
        size: Bytes,
    },
}

impl PlanFailure {
    /// Located in the scenario by `locate` (a scenario's own field), or in
    /// the topology's file.
    pub(crate) fn into_error(
        self,
        locate: impl FnOnce(FieldError) -> ScenarioError,
    ) -> ScenarioError {
        match self {
            PlanFailure::Field(f) => locate(f),
            PlanFailure::Topology(t) => ScenarioError::Topology(t),
            PlanFailure::NoChoice { field, size } => {
                // located like any field, then typed
                match locate(FieldError {
                    field: field.into(),
                    message: String::new(),
                }) {
                    ScenarioError::Invalid { location, .. } => {
                        ScenarioError::NcclNoChoice { location, size }
                    }
                    other => other,
                }
            }
        }
    }
}

/// Where a failed plan is reported.
fn failure_of(s: &ScenarioSpec, e: NcclError) -> PlanFailure {
    let message = format!("NCCL's decisions for these ranks: {e}");
    let field = match &e {
        NcclError::GraphFile { .. } => "nccl.NCCL_GRAPH_FILE",
        NcclError::UnknownComputeCapability { gpu, .. } => {
            let at = s
                .topology
                .lookup(gpu)
                .and_then(|g| s.topology.node_location(g, "model"));
            return PlanFailure::Topology(TopoError::at(at, TopoErrorKind::Invalid(message)));
        }
        _ => "nccl",
    };
    PlanFailure::Field(FieldError {
        field: field.to_string(),
        message,
    })
}

/// NCCL's plan for the scenario's ranks when it runs the `nccl` algorithm
/// (`None` otherwise), checked to leave an algorithm and protocol for every
/// size the workload runs.
pub(crate) fn plan(s: &ScenarioSpec) -> Result<Option<Arc<NcclPlan>>, PlanFailure> {
    plan_reusing(s, None)
}

/// [`plan`], taking `known` — the plan of a scenario with the same
/// topology, ranks and `[nccl]` (NCCL decides from those alone) — instead of
/// searching again; the workload's sizes are checked against it all the same.
pub(crate) fn plan_reusing(
    s: &ScenarioSpec,
    known: Option<&Arc<NcclPlan>>,
) -> Result<Option<Arc<NcclPlan>>, PlanFailure> {
    // transfers run no algorithm
    if !s.algorithms.contains(&Algorithm::Nccl) || matches!(s.workload, Workload::Transfer { .. }) {
        return Ok(None);
    }
    let p = match known {
        Some(p) => Arc::clone(p),
        None => Arc::new(
            contend_nccl::plan(&s.topology, &s.ranks, &s.nccl.env, s.nccl.version)
                .map_err(|e| failure_of(s, e))?,
        ),
    };
    if s.ranks.len() > 1 {
        let (sizes, elem) = match &s.workload {
            Workload::Allreduce { sizes, dtype, .. } => (sizes.clone(), dtype.size()),
            Workload::VerifyStep(v) => (vec![v.size()], v.dtype.size()),
            Workload::Transfer { .. } => (vec![], 1),
        };
        if let Some(b) = sizes
            .iter()
            .find(|b| p.choose_with(**b, contend_topo::Bytes(elem)).is_none())
        {
            let field = if s.nccl.env.proto.is_some() {
                "nccl.NCCL_PROTO"
            } else {
                "nccl.NCCL_ALGO"
            };
            return Err(PlanFailure::NoChoice { field, size: *b });
        }
    }
    Ok(Some(p))
}
