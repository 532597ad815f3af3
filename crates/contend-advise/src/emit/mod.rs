//! `contend advise --emit KIND`: the model's predictions in the form the
//! software that acts on them reads — NCCL's example tuner plugin config,
//! the table of contend's own tuner plugin,
//! NCCL environment variables, an NCCL graph file, vLLM's, SGLang's,
//! FlashInfer's and TensorRT-LLM's custom-allreduce thresholds, Vidur's
//! collective profile. Every setting carries a comment with contend's
//! version, the constants it used (file and fingerprint) and the predicted
//! times that decided it. Each consumer's format is cited where it is
//! written ([`nccl`], [`engines`], [`vidur`]).

pub mod engines;
pub mod nccl;
pub mod settings;
pub mod vidur;

use crate::engine_support::{ServingEngine, UnknownName};
use contend_fit::fit::Progress;
use contend_import::CalibError;
use contend_sim::ModelParams;
use contend_topo::Topology;
use contend_workload::Placement;
use std::fmt;

pub(crate) use crate::predict::{Candidate, Times, Variant, at, best, predict, runs, span, time};

/// What `--emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmitKind {
    NcclTunerCsv,
    NcclTunerTable,
    NcclEnv,
    NcclGraph,
    Vllm,
    Sglang,
    Flashinfer,
    Trtllm,
    Vidur,
}

impl EmitKind {
    pub const ALL: [EmitKind; 9] = [
        EmitKind::NcclTunerCsv,
        EmitKind::NcclTunerTable,
        EmitKind::NcclEnv,
        EmitKind::NcclGraph,
        EmitKind::Vllm,
        EmitKind::Sglang,
        EmitKind::Flashinfer,
        EmitKind::Trtllm,
        EmitKind::Vidur,
    ];
    pub fn name(self) -> &'static str {
        match self {
            EmitKind::NcclTunerCsv => "nccl-tuner-csv",
            EmitKind::NcclTunerTable => "nccl-tuner-table",
            EmitKind::NcclEnv => "nccl-env",
            EmitKind::NcclGraph => "nccl-graph",
            EmitKind::Vllm => "vllm",
            EmitKind::Sglang => "sglang",
            EmitKind::Flashinfer => "flashinfer",
            EmitKind::Trtllm => "trtllm",
            EmitKind::Vidur => "vidur",
        }
    }
    pub fn parse(s: &str) -> Result<EmitKind, UnknownName> {
        EmitKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = EmitKind::ALL.iter().map(|k| k.name()).collect();
                UnknownName(format!(
                    "unknown --emit kind `{s}` (one of: {})",
                    names.join(", ")
                ))
            })
    }
}

impl fmt::Display for EmitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which model said it: contend's version and the constants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub version: String,
    /// `params.toml` or `defaults`, with a fingerprint of every constant.
    pub params: String,
}

impl Stamp {
    /// The stamp of `params`, read from `label` (a file, or `defaults`).
    pub fn new(params: &ModelParams, label: &str) -> Stamp {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        params.to_toml().hash(&mut h);
        Stamp {
            version: format!("contend {}", env!("CARGO_PKG_VERSION")),
            params: format!("{label} #{:08x}", h.finish() as u32),
        }
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, params {}", self.version, self.params)
    }
}

/// What to emit for.
#[derive(Clone, Debug)]
pub struct EmitOptions {
    pub kind: EmitKind,
    pub placement: Placement,
    /// The sizes to predict (a ladder); emitters with a fixed grid of their
    /// own (TensorRT-LLM's tokens × hidden) use theirs.
    pub sizes: Vec<u64>,
    pub stamp: Stamp,
}

/// Writes what `opts.kind` names for `topo` under `params`.
pub fn emit(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    if topo.gpus().len() < 2 {
        return Err(CalibError::Fit(format!(
            "topology `{}` has {} GPU(s): an allreduce needs two",
            topo.name,
            topo.gpus().len()
        )));
    }
    if opts.sizes.is_empty() {
        return Err(CalibError::Fit("no sizes to predict".into()));
    }
    match opts.kind {
        EmitKind::NcclTunerCsv => nccl::tuner_csv(topo, params, opts, progress),
        EmitKind::NcclTunerTable => nccl::tuner_table(topo, params, opts, progress),
        EmitKind::NcclEnv => nccl::env(topo, params, opts, progress),
        EmitKind::NcclGraph => nccl::graph(topo, params, opts, progress),
        EmitKind::Vllm => {
            settings::engine_settings(ServingEngine::Vllm, topo, params, opts, progress)
        }
        EmitKind::Sglang => {
            settings::engine_settings(ServingEngine::Sglang, topo, params, opts, progress)
        }
        EmitKind::Flashinfer => engines::flashinfer(topo, params, opts, progress),
        EmitKind::Trtllm => {
            settings::engine_settings(ServingEngine::Trtllm, topo, params, opts, progress)
        }
        EmitKind::Vidur => vidur::vidur(topo, params, opts, progress),
    }
}
