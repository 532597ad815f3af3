//! What a user sets in a serving engine (vLLM, SGLang, TensorRT-LLM) to
//! get the best allreduce the engine can run on a box: per tensor-parallel
//! size, first whether each of the engine's allreduce backends runs here at
//! all ([`crate::engine_support`]: world size, NVLink, P2P) and what the
//! engine's best choice costs against the fastest of all, then only
//! settings that engine reads in the release named (each cited in a
//! comment): an opt-in backend's switch where it wins somewhere, a
//! default-on backend's off switch where it never wins. Where only NCCL
//! acts, the file says so and names NCCL's own emits.

use super::{EmitOptions, Stamp};
use crate::engine_support::{ServingEngine, ServingEngineAdvice, Setting, engine_advice};
use contend_fit::fit::Progress;
use contend_import::CalibError;
use contend_sim::ModelParams;
use contend_topo::{Bytes, Topology};
use contend_workload::Algorithm;
use std::fmt::Write as _;

/// The settings that get `e`'s best: an opt-in backend that wins a range
/// is switched on; a default-on backend that runs here but wins none is
/// switched off (NCCL or another backend is faster at every size).
pub fn settings_for(engine: ServingEngine, e: &ServingEngineAdvice) -> Vec<(Setting, String)> {
    let s = engine.support();
    let mut out = vec![];
    for (b, here) in s.backends.iter().zip(&e.availability.backends) {
        if here.off.is_some() {
            continue;
        }
        let wins: Vec<&crate::engine_support::ServingEngineRange> = e
            .ranges
            .iter()
            .filter(|r| {
                e.availability
                    .backend_of(engine, r.algorithm)
                    .map(|x| x.name)
                    == Some(b.name)
            })
            .collect();
        match (b.enable, b.disable, wins.is_empty()) {
            (Some(on), _, false) => {
                let names: Vec<String> = wins
                    .iter()
                    .map(|r| {
                        format!(
                            "{} from {} to {}",
                            r.algorithm,
                            Bytes(r.from_bytes),
                            Bytes(r.to_bytes)
                        )
                    })
                    .collect();
                out.push((
                    on,
                    format!("{} wins: {} ({})", b.name, names.join(", "), b.source),
                ));
            }
            (None, Some(off), true) => out.push((
                off,
                format!(
                    "{} runs here but wins no size: NCCL or another backend is faster ({})",
                    b.name, b.source
                ),
            )),
            _ => {}
        }
    }
    out
}

/// TensorRT-LLM's `allreduce_strategy` for `e`: ONESHOT or TWOSHOT where
/// its custom kernels run and one of them wins every range they win, AUTO
/// where both do, NCCL where they run nowhere or win nothing.
fn trtllm_strategy(e: &ServingEngineAdvice) -> &'static str {
    let custom: Vec<Algorithm> = e
        .ranges
        .iter()
        .map(|r| r.algorithm)
        .filter(|a| *a != Algorithm::Nccl)
        .collect();
    if custom.is_empty() {
        "NCCL"
    } else if custom.iter().all(|a| *a == Algorithm::OneShotPull) {
        "ONESHOT"
    } else if custom.iter().all(|a| *a == Algorithm::TwoShotPull) {
        "TWOSHOT"
    } else {
        "AUTO"
    }
}

fn comment(out: &mut String, text: &str) {
    // one comment line per sentence-sized piece, wrapped at 100 columns
    let mut line = String::from("#");
    for w in text.split(' ') {
        if line.len() + 1 + w.len() > 100 && line.len() > 1 {
            let _ = writeln!(out, "{line}");
            line = String::from("#  ");
        } else {
            line.push(' ');
        }
        line.push_str(w);
    }
    let _ = writeln!(out, "{line}");
}

/// The engine's settings file for `topo`: a section per tensor-parallel
/// size (the first k GPUs).
pub fn engine_settings(
    engine: ServingEngine,
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    let advice = crate::advise::advise(topo, params, opts.placement, &opts.sizes, progress)?;
    let s = engine.support();
    let stamp: &Stamp = &opts.stamp;
    let mut out = String::new();
    comment(
        &mut out,
        &format!(
            "{stamp}: allreduce settings for {} on {} ({} GPUs), from contend's predictions (flow fidelity, bf16, {} to {})",
            s.title,
            topo.name,
            topo.gpus().len(),
            Bytes(*opts.sizes.first().expect("sizes")),
            Bytes(*opts.sizes.last().expect("sizes")),
        ),
    );
    comment(
        &mut out,
        &format!(
            "Every setting below is one {} reads (cited beside it). {}.",
            s.title, s.note
        ),
    );
    if engine == ServingEngine::Trtllm {
        comment(
            &mut out,
            "A YAML fragment for trtllm-serve --extra_llm_api_options (or the LLM API's allreduce_strategy=).",
        );
    } else {
        comment(
            &mut out,
            "export lines go in the engine's environment; a --flag goes on its server's command line.",
        );
    }
    for w in &advice {
        let e = engine_advice(engine, topo, w);
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "## tensor parallel {} ({})",
            w.world,
            w.ranks.join(" ")
        );
        for (b, here) in s.backends.iter().zip(&e.availability.backends) {
            match &here.off {
                None => comment(&mut out, &format!("{}: runs here.", b.name)),
                Some(why) => comment(&mut out, &format!("{}: does not run here: {why}.", b.name)),
            }
        }
        for r in &e.ranges {
            let (lo, hi) = r.loss();
            let t = r.ns.iter().copied().fold(0.0, f64::max) / 1e3;
            comment(
                &mut out,
                &format!(
                    "  {} to {}: {} (up to {t:.1} us), {}",
                    Bytes(r.from_bytes),
                    Bytes(r.to_bytes),
                    r.algorithm,
                    if hi < 1.005 {
                        "the fastest of all".to_string()
                    } else {
                        format!("{lo:.2}-{hi:.2}x the fastest of all")
                    }
                ),
            );
        }
        let set = if engine == ServingEngine::Trtllm {
            let v = trtllm_strategy(&e);
            vec![(
                Setting::Yaml("allreduce_strategy", v),
                s.backends[0].source.to_string(),
            )]
        } else {
            settings_for(engine, &e)
        };
        if e.availability.algorithms == [Algorithm::Nccl] {
            comment(
                &mut out,
                "Only NCCL runs here: what acts is NCCL's settings (contend advise --emit nccl-env, nccl-graph, nccl-tuner-table).",
            );
        }
        if set.is_empty() {
            comment(
                &mut out,
                "Nothing to set: the engine's defaults get its best.",
            );
        }
        for (setting, why) in set {
            comment(&mut out, &why);
            let _ = writeln!(out, "{setting}");
        }
    }
    Ok(out)
}
