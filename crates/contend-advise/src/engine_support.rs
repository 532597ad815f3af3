//! What each serving engine can run on a box: its allreduce backends
//! besides NCCL (custom kernels, PCIe IPC allreduces), which of contend's
//! algorithms each implements, when each runs (world size, NVLink, P2P),
//! the setting that turns it on or off — each read in the engine's source
//! at a named release, cited — and the best the engine can have by the
//! advice's predictions, with the loss of settling for it. One table, read
//! by `advise --engine`.

use crate::advise::{SizeChoice, WorldAdvice};
use contend_topo::{Bytes, Topology};
use contend_workload::Algorithm;
use serde::Serialize;
use std::fmt;

/// A name on the command line that is none of those known (`--emit`,
/// `--engine`): the message names it and every choice. It reads as the
/// message (`Deref` to `str`), as clap prints it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownName(pub String);

impl std::ops::Deref for UnknownName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// A serving engine (or NCCL alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServingEngine {
    Vllm,
    Sglang,
    Flashinfer,
    Trtllm,
    Nccl,
}

impl ServingEngine {
    pub const ALL: [ServingEngine; 5] = [
        ServingEngine::Vllm,
        ServingEngine::Sglang,
        ServingEngine::Flashinfer,
        ServingEngine::Trtllm,
        ServingEngine::Nccl,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ServingEngine::Vllm => "vllm",
            ServingEngine::Sglang => "sglang",
            ServingEngine::Flashinfer => "flashinfer",
            ServingEngine::Trtllm => "trtllm",
            ServingEngine::Nccl => "nccl",
        }
    }
    pub fn parse(s: &str) -> Result<ServingEngine, UnknownName> {
        ServingEngine::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| {
                UnknownName(format!(
                    "unknown engine `{s}` (one of: {})",
                    ServingEngine::ALL.map(|e| e.name()).join(", ")
                ))
            })
    }
    /// What the engine's allreduce can be, as read in its source.
    pub fn support(self) -> &'static Support {
        SUPPORT
            .iter()
            .find(|s| s.engine == self)
            .expect("every engine has a row")
    }
}

impl fmt::Display for ServingEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// When a backend's kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Gate {
    /// The world sizes it supports.
    pub worlds: &'static [usize],
    /// Above this many GPUs it runs only where every pair has an NVLink
    /// (vLLM's and SGLang's "more than two PCIe-only GPUs"; 0: never
    /// without NVLink; `usize::MAX`: PCIe alone is enough).
    pub pcie_max_world: usize,
}

/// A setting as the user writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Setting {
    /// An environment variable: `export NAME=VALUE`.
    Env(&'static str, &'static str),
    /// A command-line flag of the engine's server: `--name`.
    Flag(&'static str),
    /// A key of the engine's YAML options: `key: value`.
    Yaml(&'static str, &'static str),
}

impl Setting {
    /// The key the engine reads (`VLLM_…`, `--disable-custom-all-reduce`,
    /// `allreduce_strategy`).
    pub fn key(&self) -> &'static str {
        match self {
            Setting::Env(k, _) | Setting::Flag(k) | Setting::Yaml(k, _) => k,
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Setting::Env(k, v) => write!(f, "export {k}={v}"),
            Setting::Flag(k) => f.write_str(k),
            Setting::Yaml(k, v) => write!(f, "{k}: {v}"),
        }
    }
}

/// One allreduce backend of an engine: contend's algorithms it implements,
/// when it runs and how a user turns it on or off.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Backend {
    pub name: &'static str,
    pub algorithms: &'static [Algorithm],
    pub gate: Gate,
    /// The setting that turns it on, where it is opt-in.
    pub enable: Option<Setting>,
    /// The setting that turns it off, where it is on by default.
    pub disable: Option<Setting>,
    /// The setting that turns it on (opt-in) or off, as the user writes it.
    pub switch: &'static str,
    /// Where that is read: repository@commit or release, file, lines.
    pub source: &'static str,
}

/// One engine's row: its backends besides NCCL, which it always has.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Support {
    pub engine: ServingEngine,
    /// The engine's own name and release, for people (`vLLM 0.34.0`).
    pub title: &'static str,
    pub backends: &'static [Backend],
    /// What else is worth knowing (NCCL variables it sets itself).
    pub note: &'static str,
}

/// FlashInfer's PCIe IPC allreduce variants at `k` GPUs, by FlashInfer's
/// name, as contend's algorithms (`flashinfer/comm/pcie_ipc_policy.py`:
/// UNSTAGED one-shot push; STAGED two-shot push, island staged at 8;
/// STAGED_RING staged push; FLAT_STAGED two-shot push at 8; 0.7.2's
/// COPY_ENGINE_RING the copy-engine ring, from 4 GPUs). The one place the
/// mapping is written: the FlashInfer emitter names these, and
/// [`FLASHINFER_PCIE`] is their union (a test holds it).
pub(crate) fn flashinfer_variants(k: usize) -> Vec<(IpcVariant, Algorithm)> {
    use IpcVariant::*;
    let mut v = vec![(Unstaged, Algorithm::OneShotPush)];
    match k {
        2 => v.push((Staged, Algorithm::TwoShotPush)),
        4 => {
            v.push((Staged, Algorithm::TwoShotPush));
            v.push((StagedRing, Algorithm::StagedPush));
            v.push((CopyEngineRing, Algorithm::CeRing));
        }
        _ => {
            v.push((FlatStaged, Algorithm::TwoShotPush));
            v.push((Staged, Algorithm::IslandTwoShot));
            v.push((StagedRing, Algorithm::StagedPush));
            v.push((CopyEngineRing, Algorithm::CeRing));
        }
    }
    v
}

/// FlashInfer's `IpcVariant` (`flashinfer/comm/pcie_ipc_policy.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum IpcVariant {
    Unstaged,
    Staged,
    StagedRing,
    FlatStaged,
    CopyEngineRing,
}

impl IpcVariant {
    /// FlashInfer's name: `UNSTAGED`, `COPY_ENGINE_RING`.
    pub fn name(self) -> &'static str {
        match self {
            IpcVariant::Unstaged => "UNSTAGED",
            IpcVariant::Staged => "STAGED",
            IpcVariant::StagedRing => "STAGED_RING",
            IpcVariant::FlatStaged => "FLAT_STAGED",
            IpcVariant::CopyEngineRing => "COPY_ENGINE_RING",
        }
    }
}

impl fmt::Display for IpcVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every algorithm a FlashInfer PCIe IPC variant runs, at any world size
/// FlashInfer takes ([`flashinfer_variants`] over 2, 4 and 8 GPUs).
const FLASHINFER_PCIE: &[Algorithm] = &[
    Algorithm::OneShotPush,
    Algorithm::TwoShotPush,
    Algorithm::StagedPush,
    Algorithm::IslandTwoShot,
    Algorithm::CeRing,
];

const PCIE_IPC_GATE: Gate = Gate {
    worlds: &[2, 4, 8],
    pcie_max_world: usize::MAX,
};

/// The table, read in each engine's source (what a user can set, and when
/// each backend runs on a box without NVLink).
pub const SUPPORT: &[Support] = &[
    Support {
        engine: ServingEngine::Vllm,
        title: "vLLM 0.34.0",
        backends: &[
            Backend {
                name: "custom allreduce",
                // one-stage and two-stage kernels, both loading the peers' buffers
                algorithms: &[Algorithm::OneShotPull, Algorithm::TwoShotPull],
                gate: Gate {
                    worlds: &[2, 4, 6, 8, 16],
                    pcie_max_world: 2,
                },
                enable: None,
                disable: Some(Setting::Flag("--disable-custom-all-reduce")),
                switch: "on by default; off: --disable-custom-all-reduce",
                source: "vllm@62d4bc3c7 vllm/distributed/device_communicators/custom_all_reduce.py L118 (world sizes), L267-274 (more than two PCIe-only GPUs: off), L279-289 (P2P); vllm/engine/arg_utils.py L1381-1384",
            },
            Backend {
                name: "FlashInfer PCIe IPC allreduce",
                algorithms: FLASHINFER_PCIE,
                gate: PCIE_IPC_GATE,
                enable: Some(Setting::Env("VLLM_ALLREDUCE_USE_FLASHINFER_PCIE_IPC", "1")),
                disable: None,
                switch: "VLLM_ALLREDUCE_USE_FLASHINFER_PCIE_IPC=1 (opt-in; needs CUDA-graph capture sizes; bf16/fp16)",
                source: "vllm@62d4bc3c7 vllm/envs.py L2073-2078; vllm/distributed/device_communicators/flashinfer_pcie_ipc_all_reduce.py L29-30, L80-85; cuda_communicator.py L416-418 (tried before the custom allreduce)",
            },
        ],
        note: "PyNccl loads libnccl, so NCCL_* variables you export apply (vllm/distributed/device_communicators/pynccl_wrapper.py L378-385)",
    },
    Support {
        engine: ServingEngine::Sglang,
        title: "SGLang 0.5.23",
        backends: &[
            Backend {
                name: "custom allreduce",
                // the legacy kernels; v2 needs full NVLink (custom_all_reduce_v2.py L582-597)
                algorithms: &[Algorithm::OneShotPull, Algorithm::TwoShotPull],
                gate: Gate {
                    worlds: &[2, 4, 6, 8],
                    pcie_max_world: 2,
                },
                enable: None,
                disable: Some(Setting::Flag("--disable-custom-all-reduce")),
                switch: "on by default; off: --disable-custom-all-reduce",
                source: "sglang@v0.5.23 python/sglang/srt/distributed/device_communicators/custom_all_reduce.py L41, L87-94, L272-273; custom_all_reduce_utils.py L492-498; srt/arg_groups/fields/exec_.py L725-731",
            },
            Backend {
                name: "PCIe IPC allreduce (FlashInfer's)",
                algorithms: FLASHINFER_PCIE,
                gate: PCIE_IPC_GATE,
                enable: Some(Setting::Env("SGLANG_ENABLE_PCIE_IPC_ALLREDUCE", "1")),
                disable: None,
                switch: "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1 (opt-in; bf16; sizes up to SGLANG_PCIE_IPC_MAX_NUMEL elements, default the decode width x hidden)",
                source: "sglang@v0.5.23 python/sglang/srt/environ.py L1539-1540; device_communicators/pcie_ipc_ar.py L77, L98-114, L396-399",
            },
        ],
        note: "SGLang sets NCCL_CUMEM_ENABLE=0 and NCCL_NVLS_ENABLE=0 where you have not (srt/entrypoints/engine.py L1898-1915); other NCCL_* variables you export apply",
    },
    Support {
        engine: ServingEngine::Flashinfer,
        title: "FlashInfer 0.7.2",
        backends: &[Backend {
            name: "PCIe IPC allreduce",
            algorithms: FLASHINFER_PCIE,
            gate: PCIE_IPC_GATE,
            enable: None,
            disable: None,
            switch: "flashinfer.comm.PcieIpcAllReduceWorkspace(...).all_reduce(inp, config=IpcLaunchConfig(blocks, threads, variant)) or its .tune() cache",
            source: "flashinfer@fb28d72 flashinfer/comm/pcie_ipc_ar.py L50, L179-188, L630-650; pcie_ipc_policy.py L46-57 (0.7.2: L55-74, the copy-engine variants)",
        }],
        note: "needs P2P: buffers open with cudaIpcMemLazyEnablePeerAccess (flashinfer/comm/cuda_ipc.py L186-190)",
    },
    Support {
        engine: ServingEngine::Trtllm,
        title: "TensorRT-LLM",
        backends: &[Backend {
            name: "custom allreduce (ONESHOT, TWOSHOT, MIN_LATENCY)",
            algorithms: &[Algorithm::OneShotPull, Algorithm::TwoShotPull],
            gate: Gate {
                worlds: &[2, 4, 8],
                pcie_max_world: 0,
            },
            enable: None,
            disable: Some(Setting::Yaml("allreduce_strategy", "NCCL")),
            switch: "allreduce_strategy in the LLM API or trtllm-serve's --extra_llm_api_options YAML",
            source: "TensorRT-LLM@4bb1ef88 cpp/tensorrt_llm/thop/allreduceOp.cpp ifFallbackToNCCL (NCCL without NVLink, even for a strategy named); tensorrt_llm/llmapi/llm_args.py@0004396 allreduce_strategy",
        }],
        note: "LOWPRECISION (FP8 transport, messages of 2 MiB and more) does run on PCIe with P2P; contend has no FP8 transport to predict it",
    },
    Support {
        engine: ServingEngine::Nccl,
        title: "NCCL",
        backends: &[],
        note: "as NCCL's replica decides; NCCL_* variables, NCCL_GRAPH_FILE and a tuner plugin act on it (--emit nccl-env, nccl-graph, nccl-tuner-table)",
    },
];

/// One backend on a box: whether it runs, and why not.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackendHere {
    pub name: &'static str,
    pub switch: &'static str,
    /// `None` where it runs; else why not.
    pub off: Option<String>,
}

/// What an engine can run on the first `world` GPUs of a topology.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Availability {
    pub engine: ServingEngine,
    pub backends: Vec<BackendHere>,
    /// The algorithms it can run here: those of its backends that run,
    /// and NCCL always.
    pub algorithms: Vec<Algorithm>,
}

impl Availability {
    /// The backend that runs `a` here (`None` for NCCL).
    pub fn backend_of(&self, engine: ServingEngine, a: Algorithm) -> Option<&'static Backend> {
        engine.support().backends.iter().find(|b| {
            b.algorithms.contains(&a)
                && self
                    .backends
                    .iter()
                    .any(|h| h.name == b.name && h.off.is_none())
        })
    }
}

/// Why `b` does not run on the first `world` GPUs of `topo`, or `None`.
fn gate_off(b: &Backend, topo: &Topology, world: usize) -> Option<String> {
    let gpus = &topo.gpus()[..world.min(topo.gpus().len())];
    if !b.gate.worlds.contains(&world) {
        return Some(format!(
            "{world} GPUs: it runs on {}",
            b.gate
                .worlds
                .iter()
                .map(|w| w.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(why) = topo.no_p2p_summary(gpus) {
        return Some(format!("{why}; it needs P2P"));
    }
    if world > b.gate.pcie_max_world && !crate::predict::fully_connected(topo, world) {
        return Some(if b.gate.pcie_max_world == 0 {
            "no NVLink between every pair: it falls back to NCCL".to_string()
        } else {
            format!(
                "{world} GPUs without NVLink between every pair: off above {} PCIe-only GPUs",
                b.gate.pcie_max_world
            )
        });
    }
    None
}

/// The engine's availability on the first `world` GPUs of `topo`.
pub fn availability(engine: ServingEngine, topo: &Topology, world: usize) -> Availability {
    let s = engine.support();
    let backends: Vec<BackendHere> = s
        .backends
        .iter()
        .map(|b| BackendHere {
            name: b.name,
            switch: b.switch,
            off: gate_off(b, topo, world),
        })
        .collect();
    let mut algorithms: Vec<Algorithm> = vec![];
    for (b, h) in s.backends.iter().zip(&backends) {
        if h.off.is_none() {
            for a in b.algorithms {
                if !algorithms.contains(a) {
                    algorithms.push(*a);
                }
            }
        }
    }
    algorithms.push(Algorithm::Nccl);
    Availability {
        engine,
        backends,
        algorithms,
    }
}

/// The best an engine can have over a size range, against the best overall.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServingEngineRange {
    pub from_bytes: u64,
    pub to_bytes: u64,
    /// The engine's fastest algorithm here.
    pub algorithm: Algorithm,
    /// Its time at each size, ns.
    pub ns: Vec<f64>,
    /// The fastest of every algorithm at each size, and its time.
    pub best: Vec<(Algorithm, f64)>,
}

impl ServingEngineRange {
    /// How much slower the engine's choice is than the best at each size
    /// (1.0: it is the best), the least and the most.
    pub fn loss(&self) -> (f64, f64) {
        let l: Vec<f64> = self
            .ns
            .iter()
            .zip(&self.best)
            .map(|(t, b)| t / b.1.max(1e-9))
            .collect();
        (
            l.iter().copied().fold(f64::INFINITY, f64::min),
            l.iter().copied().fold(0.0, f64::max),
        )
    }
}

/// What one engine can have on one world size of the advice.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServingEngineAdvice {
    pub world: usize,
    pub availability: Availability,
    pub ranges: Vec<ServingEngineRange>,
}

/// The engine's best choice per size of `advice` (sizes where it runs
/// the same algorithm merged into ranges).
pub fn engine_advice(
    engine: ServingEngine,
    topo: &Topology,
    advice: &WorldAdvice,
) -> ServingEngineAdvice {
    let availability = availability(engine, topo, advice.world);
    let mut ranges: Vec<ServingEngineRange> = vec![];
    for c in &advice.choices {
        let Some((alg, t)) = fastest(c, |a| availability.algorithms.contains(&a)) else {
            continue;
        };
        let Some(best) = fastest(c, |_| true) else {
            continue;
        };
        match ranges.last_mut() {
            Some(r) if r.algorithm == alg => {
                r.to_bytes = c.size_bytes;
                r.ns.push(t);
                r.best.push(best);
            }
            _ => ranges.push(ServingEngineRange {
                from_bytes: c.size_bytes,
                to_bytes: c.size_bytes,
                algorithm: alg,
                ns: vec![t],
                best: vec![best],
            }),
        }
    }
    ServingEngineAdvice {
        world: advice.world,
        availability,
        ranges,
    }
}

fn fastest(c: &SizeChoice, keep: impl Fn(Algorithm) -> bool) -> Option<(Algorithm, f64)> {
    c.algorithms
        .iter()
        .copied()
        .filter(|(a, _)| keep(*a))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// The engine's advice as lines under a world size's table.
pub fn engine_lines(engine: ServingEngine, e: &ServingEngineAdvice) -> String {
    use std::fmt::Write as _;
    let s = engine.support();
    let mut out = String::new();
    for (b, h) in s.backends.iter().zip(&e.availability.backends) {
        let _ = match &h.off {
            None => writeln!(out, "  {}: runs here ({})", b.name, b.switch),
            Some(why) => writeln!(out, "  {}: not here ({why})", b.name),
        };
    }
    if e.availability.algorithms == [Algorithm::Nccl] && !s.backends.is_empty() {
        let _ = writeln!(
            out,
            "  so NCCL runs every allreduce: what acts is NCCL's settings (--emit nccl-env, nccl-graph, nccl-tuner-table)"
        );
    }
    for r in &e.ranges {
        let (lo, hi) = r.loss();
        let t = |v: &[f64]| {
            let a = v.iter().copied().fold(f64::INFINITY, f64::min) / 1e3;
            let b = v.iter().copied().fold(0.0, f64::max) / 1e3;
            if (b - a) / b.max(1e-9) < 0.005 {
                format!("{a:.1} us")
            } else {
                format!("{a:.1}-{b:.1} us")
            }
        };
        let best: Vec<f64> = r.best.iter().map(|b| b.1).collect();
        let loss = if hi < 1.005 {
            "the fastest of all".to_string()
        } else {
            let mut names: Vec<&str> = vec![];
            for b in &r.best {
                if !names.contains(&b.0.name()) {
                    names.push(b.0.name());
                }
            }
            format!(
                "{} slower than {} ({})",
                if hi - lo < 0.05 {
                    format!("{hi:.2}x")
                } else {
                    format!("{lo:.2}-{hi:.2}x")
                },
                names.join(", "),
                t(&best)
            )
        };
        let via = e
            .availability
            .backend_of(engine, r.algorithm)
            .map(|b| format!(" [{}]", b.name))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    {:>9} {:>9}  {:<14} {:>15}  {loss}{via}",
            Bytes(r.from_bytes).to_string(),
            Bytes(r.to_bytes).to_string(),
            r.algorithm.name(),
            t(&r.ns),
        );
    }
    out
}

/// What `engine` can have on every world size of `advice`, as a section
/// after the advice's table.
pub fn engine_section(engine: ServingEngine, topo: &Topology, advice: &[WorldAdvice]) -> String {
    let s = engine.support();
    let mut out = format!(
        "\nwhat {} can run here, and the best of it (time; against the fastest of all)\n  {}\n",
        s.title, s.note
    );
    for w in advice {
        out.push_str(&format!("world size {}\n", w.world));
        out.push_str(&engine_lines(engine, &engine_advice(engine, topo, w)));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn flashinfers_algorithms_are_its_variants_at_every_world_size() {
        use std::collections::BTreeSet;
        let variants: BTreeSet<_> = [2, 4, 8]
            .into_iter()
            .flat_map(super::flashinfer_variants)
            .map(|(_, a)| a)
            .collect();
        let listed: BTreeSet<_> = super::FLASHINFER_PCIE.iter().copied().collect();
        assert_eq!(variants, listed);
        // each world size names a variant once
        for k in [2, 4, 8] {
            let v = super::flashinfer_variants(k);
            let names: BTreeSet<_> = v.iter().map(|(n, _)| *n).collect();
            assert_eq!(names.len(), v.len(), "{k} GPUs: {v:?}");
        }
    }

    use super::*;
    use contend_topo::shipped;

    #[test]
    fn vllm_runs_its_custom_allreduce_on_two_pcie_gpus_only() {
        let t = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
        let off = |a: &Availability, name: &str| {
            a.backends
                .iter()
                .find(|b| b.name == name)
                .unwrap()
                .off
                .clone()
        };
        let two = availability(ServingEngine::Vllm, &t, 2);
        assert_eq!(off(&two, "custom allreduce"), None);
        let eight = availability(ServingEngine::Vllm, &t, 8);
        assert!(
            off(&eight, "custom allreduce")
                .unwrap()
                .contains("off above 2 PCIe-only GPUs"),
            "{eight:?}"
        );
        // its opt-in FlashInfer PCIe allreduce does run on 8
        assert_eq!(off(&eight, "FlashInfer PCIe IPC allreduce"), None);
        assert!(eight.algorithms.contains(&Algorithm::OneShotPush));
        assert!(!eight.algorithms.contains(&Algorithm::OneShotPull));
        // 3 GPUs: no backend but NCCL
        let three = availability(ServingEngine::Vllm, &t, 3);
        assert!(
            off(&three, "custom allreduce")
                .unwrap()
                .contains("2, 4, 6, 8, 16")
        );
        assert_eq!(three.algorithms, vec![Algorithm::Nccl]);
        // TensorRT-LLM falls back to NCCL without NVLink, even on 2
        assert_eq!(
            availability(ServingEngine::Trtllm, &t, 2).algorithms,
            vec![Algorithm::Nccl]
        );
        // on NVLink (the H200 pair) vLLM's custom allreduce runs
        let h = shipped::get("h200-2x").unwrap().unwrap();
        assert_eq!(
            off(
                &availability(ServingEngine::Vllm, &h, 2),
                "custom allreduce"
            ),
            None
        );
    }

    #[test]
    fn without_p2p_no_engine_runs_a_custom_kernel() {
        let text = shipped::text("rtx4090-8x-gen4")
            .unwrap()
            .replace("access = \"all\"", "access = \"none\"");
        let t = contend_topo::parse_topology("box.toml", &text).unwrap();
        for e in ServingEngine::ALL {
            for w in [2, 4, 8] {
                let a = availability(e, &t, w);
                assert_eq!(a.algorithms, vec![Algorithm::Nccl], "{e} {w}");
            }
        }
    }
}
