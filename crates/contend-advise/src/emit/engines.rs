//! FlashInfer's PCIe IPC allreduce launch configuration per payload, in
//! the form it reads: `flashinfer.comm.PcieIpcAllReduceWorkspace(...)
//! .all_reduce(inp, config=IpcLaunchConfig(blocks, threads, variant))`
//! (`flashinfer/comm/pcie_ipc_ar.py` L630-650, `pcie_ipc_policy.py` L46-57
//! @fb28d72; 0.7.2 adds COPY_ENGINE_RING 4, `pcie_ipc_policy.py` L55-74):
//! `IpcVariant` UNSTAGED 0, STAGED 1, STAGED_RING 2, FLAT_STAGED 3 (world 8
//! only), COPY_ENGINE_RING 4 (not at world 2, ≤ 4 pieces, 256 threads);
//! world sizes 2, 4, 8, only UNSTAGED and STAGED at 2; `None` means another
//! backend. (vLLM, SGLang and TensorRT-LLM read no such table a user can
//! set: their settings are in [`super::settings`].)

use super::{Candidate, EmitOptions, at, best, predict, runs, span};
use crate::engine_support::IpcVariant;
use crate::predict::algorithms;
use contend_fit::fit::Progress;
use contend_import::CalibError;
use contend_sim::ModelParams;
use contend_topo::{Bytes, Topology};
use contend_workload::{Algorithm, LaunchMode};
use std::fmt::Write as _;

/// NCCL's default choice, as the replica makes it.
const NCCL: Candidate = Candidate::Algorithm(Algorithm::Nccl);

/// The grid FlashInfer's seed launches a variant with (contend does not
/// choose grids): blocks, threads.
fn flashinfer_grid(k: usize, variant: IpcVariant, payload: u64) -> (u64, u64) {
    match (variant, k) {
        (IpcVariant::Unstaged, 2) | (IpcVariant::Staged, 2) => (16, 128),
        (IpcVariant::Unstaged, _) | (IpcVariant::FlatStaged, _) => (16, 256),
        (IpcVariant::Staged, 8) => (4, 256),
        (IpcVariant::Staged, _) => (1, 256),
        (IpcVariant::StagedRing, _) => ((payload / (256 * 1024)).clamp(1, 4), 256),
        (IpcVariant::CopyEngineRing, _) => (1, 256),
    }
}

pub fn flashinfer(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    let n = topo.gpus().len();
    let worlds: Vec<usize> = [2, 4, 8].into_iter().filter(|k| *k <= n).collect();
    if worlds.is_empty() {
        return Err(CalibError::Fit(
            "FlashInfer's PCIe IPC all-reduce needs 2, 4 or 8 GPUs".into(),
        ));
    }
    let mut list = vec![
        Algorithm::OneShotPush,
        Algorithm::TwoShotPush,
        Algorithm::StagedPush,
        Algorithm::IslandTwoShot,
        Algorithm::CeRing,
        Algorithm::Nccl,
    ];
    list.dedup();
    let t = predict(
        topo,
        params,
        opts.placement,
        LaunchMode::Graph,
        &worlds,
        &opts.sizes,
        &algorithms(&list),
        progress,
    )?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {}: FlashInfer PCIe IPC all-reduce launch configs for {} (flashinfer/comm/pcie_ipc_policy.py @fb28d72: IpcLaunchConfig(blocks, threads, variant))",
        opts.stamp, topo.name
    );
    // first: whether it runs here at all
    for &k in &worlds {
        let a = crate::engine_support::availability(
            crate::engine_support::ServingEngine::Flashinfer,
            topo,
            k,
        );
        let _ = match a.backends.first().and_then(|b| b.off.as_ref()) {
            None => writeln!(s, "# world size {k}: it runs here (P2P between every pair)"),
            Some(why) => writeln!(
                s,
                "# world size {k}: it does NOT run here: {why}; only NCCL acts (contend advise --emit nccl-env, nccl-graph, nccl-tuner-table)"
            ),
        };
    }
    let _ = writeln!(
        s,
        "# per world size, ascending: (largest payload in bytes, or None for any larger; config, or None for another backend); grids are FlashInfer's seed's"
    );
    let _ = writeln!(
        s,
        "from flashinfer.comm.pcie_ipc_policy import IpcLaunchConfig, IpcVariant  # {}",
        opts.stamp
    );
    let _ = writeln!(s, "CONTEND_PCIE_IPC_CONFIGS = {{");
    for &k in &worlds {
        let vs = crate::engine_support::flashinfer_variants(k);
        let labels: Vec<Candidate> = vs.iter().map(|v| v.1.into()).collect();
        let rows: Vec<(u64, Candidate)> = opts
            .sizes
            .iter()
            .filter_map(|&z| {
                let ipc = best(&t, k, z, &labels)?;
                let other = at(&t, k, z, NCCL);
                Some((
                    z,
                    if other.is_some_and(|o| o < ipc.1) {
                        NCCL
                    } else {
                        ipc.0
                    },
                ))
            })
            .collect();
        let rs = runs(&rows);
        let _ = writeln!(s, "    {k}: [");
        for (i, (a, b, label)) in rs.iter().enumerate() {
            let bound = if i + 1 == rs.len() {
                "None".to_string()
            } else {
                b.to_string()
            };
            let cfg = match vs.iter().find(|v| Candidate::from(v.1) == *label) {
                Some((variant, _)) => {
                    let (bl, th) = flashinfer_grid(k, *variant, *b);
                    format!("IpcLaunchConfig({bl}, {th}, IpcVariant.{variant})")
                }
                None => "None".into(),
            };
            let _ = writeln!(
                s,
                "        ({bound}, {cfg}),  # {}: {}..{}{}: {label} {}; NCCL {}",
                opts.stamp,
                Bytes(*a),
                Bytes(*b),
                if i + 1 == rs.len() { " and above" } else { "" },
                span(&t, k, &opts.sizes, *a, *b, *label),
                span(&t, k, &opts.sizes, *a, *b, NCCL),
            );
        }
        let _ = writeln!(s, "    ],");
    }
    let _ = writeln!(s, "}}");
    let _ = writeln!(
        s,
        "def contend_pcie_ipc_launch_config(world_size, numel, elem_size):  # {}: the first entry whose bound holds",
        opts.stamp
    );
    let _ = writeln!(
        s,
        "    for bound, config in CONTEND_PCIE_IPC_CONFIGS.get(world_size, [(None, None)]):"
    );
    let _ = writeln!(s, "        if bound is None or numel * elem_size <= bound:");
    let _ = writeln!(s, "            return config");
    let _ = writeln!(s, "    return None");
    Ok(s)
}

/// TensorRT-LLM's table grid.
pub const TRT_HIDDEN: [u64; 7] = [128, 256, 512, 1024, 2048, 4096, 8192];
pub const TRT_TOKENS: [u64; 15] = [
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
];
pub const TRT_FUSIONS: [&str; 4] = [
    "NONE",
    "RESIDUAL_RMS_NORM",
    "RESIDUAL_RMS_NORM_QUANT_FP8",
    "RESIDUAL_RMS_NORM_QUANT_NVFP4",
];
