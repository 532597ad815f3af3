//! Serving engines' custom-allreduce thresholds, in the form each reads.
//!
//! - vLLM (`vllm/distributed/device_communicators/all_reduce_utils.py` and
//!   `custom_all_reduce.py` @00d618a): `CUSTOM_ALL_REDUCE_MAX_SIZES =
//!   {"<capability>": {world: bytes}}`; custom allreduce runs while
//!   `inp_size < max_size`, the table is read with symmetric memory on and
//!   capped at `max_size` (8 MiB), world sizes 2, 4, 6, 8, and more than two
//!   PCIe-only GPUs disable it. Its kernels read the peers' buffers: contend's
//!   one-shot and two-shot pull.
//! - SGLang v2 (`python/sglang/srt/distributed/device_communicators/configs/
//!   custom_all_reduce_v2.py` @09e7d8e): `graph_map`/`eager_map = {world:
//!   (one_shot_push_threshold, one_shot_pull_threshold,
//!   two_shot_pull_threshold)}`, tried in that order with `nbytes <=
//!   threshold`, NCCL above; equal adjacent thresholds disable the middle one.
//! - FlashInfer (`flashinfer/comm/pcie_ipc_policy.py` @1abbaaa):
//!   `IpcLaunchConfig(blocks, threads, variant)` with `IpcVariant` UNSTAGED 0,
//!   STAGED 1, STAGED_RING 2, FLAT_STAGED 3 (world 8 only), COPY_ENGINE_RING
//!   4 (not at world 2, ≤ 4 pieces, 256 threads); world sizes 2, 4, 8, only
//!   UNSTAGED and STAGED at 2; `None` means another backend.
//! - TensorRT-LLM (`cpp/tensorrt_llm/common/customAllReduceUtils.h`
//!   @005b299): `AllReduceBestStrategyTableSM90`/`SM100`, `[tp 2,4,8][fusion
//!   NONE, RESIDUAL_RMS_NORM, …QUANT_FP8, …QUANT_NVFP4][hidden 128…8192][tokens
//!   1…16384]` of `AllReduceStrategyType` (NCCL 0, ONESHOT 4, TWOSHOT 5); a
//!   message is tokens × hidden elements.

use super::{
    EmitOptions, Times, Variant, at, best, compute_capability, fully_connected, predict, runs,
    span, time,
};
use crate::error::CalibError;
use crate::fit::Progress;
use contend_sim::ModelParams;
use contend_topo::{Bytes, Topology};
use contend_workload::{Algorithm, LaunchMode};
use std::fmt::Write as _;

fn algos(list: &[Algorithm]) -> Vec<(String, Variant)> {
    list.iter()
        .map(|a| (a.name().to_string(), Variant::Algo(*a)))
        .collect()
}

/// The faster of `labels` at each size, as a pseudo-label's times.
fn fold(t: &mut Times, worlds: &[usize], sizes: &[u64], labels: &[&str], name: &str) {
    for &k in worlds {
        for &s in sizes {
            let v = best(t, k, s, labels).map(|x| x.1);
            t.insert((k, s, name.to_string()), v);
        }
    }
}

pub fn vllm(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    let n = topo.gpus().len();
    let cc = compute_capability(topo)?;
    let worlds: Vec<usize> = [2, 4, 6, 8].into_iter().filter(|k| *k <= n).collect();
    if worlds.is_empty() {
        return Err(CalibError::Fit(
            "vLLM's custom allreduce needs 2, 4, 6 or 8 GPUs".into(),
        ));
    }
    let v = algos(&[
        Algorithm::OneShotPull,
        Algorithm::TwoShotPull,
        Algorithm::Nccl,
    ]);
    let mut t = predict(
        topo,
        params,
        opts.placement,
        LaunchMode::Graph,
        &worlds,
        &opts.sizes,
        &v,
        progress,
    )?;
    fold(
        &mut t,
        &worlds,
        &opts.sizes,
        &["one-shot-pull", "two-shot-pull"],
        "custom",
    );
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {}: vLLM CUSTOM_ALL_REDUCE_MAX_SIZES for {} (vllm/distributed/device_communicators/all_reduce_utils.py @00d618a)",
        opts.stamp, topo.name
    );
    let _ = writeln!(
        s,
        "# custom allreduce runs while inp_size < max_size; vLLM reads this with symmetric memory on, caps it at max_size (8 MiB) and disables custom allreduce for more than two PCIe-only GPUs (custom_all_reduce.py)"
    );
    let _ = writeln!(s, "CUSTOM_ALL_REDUCE_MAX_SIZES = {{");
    let _ = writeln!(s, "    \"{}.{}\": {{", cc / 10, cc % 10);
    for &k in &worlds {
        // custom while it wins from the smallest size up; max_size is the first size NCCL wins
        let first_loss = opts.sizes.iter().copied().find(|&z| {
            match (at(&t, k, z, "custom"), at(&t, k, z, "nccl")) {
                (Some(c), Some(nc)) => nc < c,
                _ => true,
            }
        });
        let top = *opts.sizes.last().expect("sizes");
        let max_size = first_loss.unwrap_or(top * 2);
        let last_win = opts.sizes.iter().copied().rfind(|z| *z < max_size);
        let why = match (last_win, first_loss) {
            (Some(w), Some(l)) => format!(
                "custom {} vs NCCL {} at {}; NCCL wins at {} ({} vs {})",
                time(at(&t, k, w, "custom").unwrap_or(0.0)),
                time(at(&t, k, w, "nccl").unwrap_or(0.0)),
                Bytes(w),
                Bytes(l),
                time(at(&t, k, l, "nccl").unwrap_or(0.0)),
                time(at(&t, k, l, "custom").unwrap_or(0.0)),
            ),
            (None, Some(l)) => format!(
                "NCCL wins from the smallest size, {} ({} vs custom {})",
                Bytes(l),
                time(at(&t, k, l, "nccl").unwrap_or(0.0)),
                time(at(&t, k, l, "custom").unwrap_or(0.0)),
            ),
            (Some(w), None) => format!(
                "custom wins to the largest size predicted, {} ({} vs NCCL {})",
                Bytes(w),
                time(at(&t, k, w, "custom").unwrap_or(0.0)),
                time(at(&t, k, w, "nccl").unwrap_or(0.0)),
            ),
            (None, None) => "no size predicted".into(),
        };
        let pcie = if k > 2 && !fully_connected(topo, k) {
            "; not read here: more than two PCIe-only GPUs"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "        {k}: {max_size},  # {}: {} ranks, custom = one-/two-shot pull (graph launch): {why}{pcie}",
            opts.stamp, k
        );
    }
    let _ = writeln!(s, "    }},");
    let _ = writeln!(s, "}}");
    Ok(s)
}

/// Monotone stages 0..=3 over the sizes (push, pull, 2-shot pull, NCCL)
/// that lose the least time against the per-size best (sum of log ratios).
fn stages(t: &Times, k: usize, sizes: &[u64], labels: &[&str; 4]) -> Vec<usize> {
    let cost = |z: u64, st: usize| -> f64 {
        let b = best(t, k, z, labels).map(|x| x.1).unwrap_or(1.0);
        at(t, k, z, labels[st]).map_or(1e9, |v| (v / b).ln())
    };
    let m = sizes.len();
    // dp[i][st]: least cost of sizes[..=i] ending in stage st
    let mut dp = vec![[f64::INFINITY; 4]; m];
    let mut from = vec![[0usize; 4]; m];
    for (st, d) in dp[0].iter_mut().enumerate() {
        *d = cost(sizes[0], st);
    }
    for i in 1..m {
        for st in 0..4 {
            let (p, c) = (0..=st)
                .map(|p| (p, dp[i - 1][p]))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("stages");
            dp[i][st] = c + cost(sizes[i], st);
            from[i][st] = p;
        }
    }
    let mut st = (0..4)
        .min_by(|a, b| dp[m - 1][*a].total_cmp(&dp[m - 1][*b]))
        .expect("stages");
    let mut out = vec![0; m];
    for i in (0..m).rev() {
        out[i] = st;
        st = from[i][st];
    }
    out
}

pub fn sglang(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    let n = topo.gpus().len();
    let worlds: Vec<usize> = (2..=n.min(16)).collect();
    let v = algos(&[
        Algorithm::OneShotPush,
        Algorithm::OneShotPull,
        Algorithm::TwoShotPull,
        Algorithm::Nccl,
    ]);
    let labels = ["one-shot-push", "one-shot-pull", "two-shot-pull", "nccl"];
    let names = ["1shot_push", "1shot_pull", "2shot_pull", "NCCL"];
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {}: SGLang JIT custom all-reduce v2 dispatch for {} (python/sglang/srt/distributed/device_communicators/configs/custom_all_reduce_v2.py @09e7d8e)",
        opts.stamp, topo.name
    );
    let _ = writeln!(
        s,
        "# {{world: (one_shot_push_threshold, one_shot_pull_threshold, two_shot_pull_threshold)}} in bytes, tried in order with nbytes <= threshold, NCCL above"
    );
    let _ = writeln!(s, "KB, MB = 1024, 1024 * 1024");
    for (map, launch) in [
        ("graph_map", LaunchMode::Graph),
        ("eager_map", LaunchMode::Eager),
    ] {
        let t = predict(
            topo,
            params,
            opts.placement,
            launch,
            &worlds,
            &opts.sizes,
            &v,
            progress,
        )?;
        let _ = writeln!(s, "{map} = {{");
        for &k in &worlds {
            let st = stages(&t, k, &opts.sizes, &labels);
            let mut th = [0u64; 3];
            let mut parts = Vec::new();
            for j in 0..4 {
                let mine: Vec<u64> = opts
                    .sizes
                    .iter()
                    .zip(&st)
                    .filter(|(_, x)| **x == j)
                    .map(|(z, _)| *z)
                    .collect();
                if j < 3 {
                    th[j] = mine
                        .last()
                        .copied()
                        .unwrap_or(if j == 0 { 0 } else { th[j - 1] });
                }
                if let (Some(a), Some(b)) = (mine.first(), mine.last()) {
                    parts.push(format!(
                        "{} {}..{} ({})",
                        names[j],
                        Bytes(*a),
                        Bytes(*b),
                        span(&t, k, &opts.sizes, *a, *b, labels[j])
                    ));
                }
            }
            let _ = writeln!(
                s,
                "    {k}: ({}, {}, {}),  # {}: {} launch: {}",
                th[0],
                th[1],
                th[2],
                opts.stamp,
                if launch == LaunchMode::Graph {
                    "graph"
                } else {
                    "eager"
                },
                parts.join(", ")
            );
        }
        let _ = writeln!(s, "}}");
    }
    Ok(s)
}

/// FlashInfer's PCIe IPC variants and the contend algorithm each runs.
fn flashinfer_variants(k: usize) -> Vec<(&'static str, Algorithm)> {
    let mut v = vec![("UNSTAGED", Algorithm::OneShotPush)];
    match k {
        2 => v.push(("STAGED", Algorithm::TwoShotPush)),
        4 => {
            v.push(("STAGED", Algorithm::TwoShotPush));
            v.push(("STAGED_RING", Algorithm::StagedPush));
            v.push(("COPY_ENGINE_RING", Algorithm::CeRing));
        }
        _ => {
            v.push(("FLAT_STAGED", Algorithm::TwoShotPush));
            v.push(("STAGED", Algorithm::IslandTwoShot));
            v.push(("STAGED_RING", Algorithm::StagedPush));
            v.push(("COPY_ENGINE_RING", Algorithm::CeRing));
        }
    }
    v
}

/// The grid FlashInfer's seed launches a variant with (contend does not
/// choose grids): blocks, threads.
fn flashinfer_grid(k: usize, variant: &str, payload: u64) -> (u64, u64) {
    match (variant, k) {
        ("UNSTAGED", 2) | ("STAGED", 2) => (16, 128),
        ("UNSTAGED", _) | ("FLAT_STAGED", _) => (16, 256),
        ("STAGED", 8) => (4, 256),
        ("STAGED", _) => (1, 256),
        ("STAGED_RING", _) => ((payload / (256 * 1024)).clamp(1, 4), 256),
        _ => (1, 256),
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
        &algos(&list),
        progress,
    )?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {}: FlashInfer PCIe IPC all-reduce launch configs for {} (flashinfer/comm/pcie_ipc_policy.py @1abbaaa: IpcLaunchConfig(blocks, threads, variant))",
        opts.stamp, topo.name
    );
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
        let vs = flashinfer_variants(k);
        let labels: Vec<&str> = vs.iter().map(|v| v.1.name()).collect();
        let rows: Vec<(u64, &str)> = opts
            .sizes
            .iter()
            .filter_map(|&z| {
                let ipc = best(&t, k, z, &labels)?;
                let other = at(&t, k, z, "nccl");
                Some((
                    z,
                    if other.is_some_and(|o| o < ipc.1) {
                        "nccl"
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
            let cfg = match vs.iter().find(|v| v.1.name() == *label) {
                Some((variant, _)) => {
                    let (bl, th) = flashinfer_grid(k, variant, *b);
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
                span(&t, k, &opts.sizes, *a, *b, label),
                span(&t, k, &opts.sizes, *a, *b, "nccl"),
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

pub fn trtllm(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    let n = topo.gpus().len();
    let cc = compute_capability(topo)?;
    let sm = if cc >= 100 { 100 } else { 90 };
    let tps: Vec<usize> = [2, 4, 8].into_iter().filter(|k| *k <= n).collect();
    if tps.is_empty() {
        return Err(CalibError::Fit(
            "TensorRT-LLM's table covers TP 2, 4 and 8".into(),
        ));
    }
    // bf16 messages: tokens × hidden × 2 bytes
    let mut sizes: Vec<u64> = TRT_HIDDEN
        .iter()
        .flat_map(|h| TRT_TOKENS.iter().map(move |t| t * h * 2))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let v = algos(&[
        Algorithm::OneShotPull,
        Algorithm::OneShotPush,
        Algorithm::TwoShotPull,
        Algorithm::TwoShotPush,
        Algorithm::Nccl,
    ]);
    let mut t = predict(
        topo,
        params,
        opts.placement,
        LaunchMode::Graph,
        &tps,
        &sizes,
        &v,
        progress,
    )?;
    fold(
        &mut t,
        &tps,
        &sizes,
        &["one-shot-pull", "one-shot-push"],
        "ONESHOT",
    );
    fold(
        &mut t,
        &tps,
        &sizes,
        &["two-shot-pull", "two-shot-push"],
        "TWOSHOT",
    );
    let strategy = |k: usize, z: u64| -> (u8, &'static str) {
        match best(&t, k, z, &["nccl", "ONESHOT", "TWOSHOT"]) {
            Some(("ONESHOT", _)) => (4, "ONESHOT"),
            Some(("TWOSHOT", _)) => (5, "TWOSHOT"),
            _ => (0, "NCCL"),
        }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// {}: TensorRT-LLM AllReduceBestStrategyTableSM{sm} for {} (cpp/tensorrt_llm/common/customAllReduceUtils.h @005b299)",
        opts.stamp, topo.name
    );
    let _ = writeln!(
        s,
        "// [tp][fusion][hidden 128..8192][tokens 1..16384] = AllReduceStrategyType: 0 NCCL, 4 ONESHOT, 5 TWOSHOT; bf16 messages; fusion ops are not modelled (each fusion block repeats NONE{})",
        if sm == 90 {
            "; NVFP4 is all NCCL on SM90, as TensorRT-LLM has it"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "inline AllReduceBestStrategyTableType AllReduceBestStrategyTableSM{sm} = {{"
    );
    for (ti, &k) in tps.iter().enumerate() {
        let _ = writeln!(s, "    {{    // TP={k}");
        for (fi, fusion) in TRT_FUSIONS.iter().enumerate() {
            let _ = writeln!(s, "        {{    // Fusion={fusion}");
            for (hi, &h) in TRT_HIDDEN.iter().enumerate() {
                let cells: Vec<(u8, &str)> = TRT_TOKENS
                    .iter()
                    .map(|&tok| {
                        if sm == 90 && fi == 3 {
                            (0, "NCCL")
                        } else {
                            strategy(k, tok * h * 2)
                        }
                    })
                    .collect();
                let row: Vec<String> = cells.iter().map(|c| c.0.to_string()).collect();
                let rows: Vec<(u64, &str)> = TRT_TOKENS
                    .iter()
                    .zip(&cells)
                    .map(|(tok, c)| (*tok, c.1))
                    .collect();
                let why: Vec<String> = runs(&rows)
                    .iter()
                    .map(|(a, b, name)| {
                        let label = if *name == "NCCL" { "nccl" } else { name };
                        format!(
                            "{name} tokens {a}..{b} ({})",
                            span(&t, k, &sizes, a * h * 2, b * h * 2, label)
                        )
                    })
                    .collect();
                let _ = writeln!(
                    s,
                    "            {{{}}}{}  // {}: TP {k}, hidden {h}: {}",
                    row.join(", "),
                    if hi + 1 < TRT_HIDDEN.len() { "," } else { "" },
                    opts.stamp,
                    why.join(", ")
                );
            }
            let _ = writeln!(
                s,
                "        }}{}",
                if fi + 1 < TRT_FUSIONS.len() { "," } else { "" }
            );
        }
        let _ = writeln!(s, "    }}{}", if ti + 1 < tps.len() { "," } else { "" });
    }
    let _ = writeln!(s, "}};");
    Ok(s)
}
