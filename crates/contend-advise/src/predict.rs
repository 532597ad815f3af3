//! The model's predictions that advice and every emitter read: each way to
//! run an allreduce ([`Variant`]) simulated at every size for each world
//! size (the first k GPUs of a topology), keyed by what it is
//! ([`Candidate`]), resumable through a checkpoint, and the helpers that
//! read the table (the time at a point, the fastest, runs of sizes with one
//! winner, a time range as text).

pub(crate) use crate::candidate::Candidate;
use contend_fit::checkpoint::{Checkpoint, ConstantSet, Prediction};
use contend_fit::fit::Progress;
use contend_import::CalibError;
use contend_nccl::NcclEnv;
use contend_sim::{ModelParams, RunSpec, SimError, simulate_one};
use contend_topo::{Bytes, Picos, Topology};
use contend_workload::{
    Algorithm, Dtype, Fidelity, LaunchMode, LowerError, NcclSetup, Placement, Scenario,
    ScenarioError, ScenarioSpec, Skew, Workload,
};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// One way to run an allreduce the emitters compare.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Variant {
    /// One of contend's algorithms (NCCL's own with its defaults included).
    Algo(Algorithm),
    /// NCCL with these variables set.
    Nccl(Vec<(String, String)>),
}

/// Predicted median times: (world, size, candidate) → ns; `None` where the
/// variant cannot run (NCCL with every protocol disabled for that size).
pub(crate) type Times = BTreeMap<(usize, u64, Candidate), Option<f64>>;

/// Each of `list` as the candidate it is and the variant that runs it.
pub(crate) fn algorithms(list: &[Algorithm]) -> Vec<(Candidate, Variant)> {
    list.iter()
        .map(|a| (Candidate::Algorithm(*a), Variant::Algo(*a)))
        .collect()
}

/// Simulates every keyed variant at every size for each world size (the
/// first k GPUs of `topo`), flow fidelity, bf16 elements.
#[allow(clippy::too_many_arguments)]
pub(crate) fn predict(
    topo: &Topology,
    params: &ModelParams,
    placement: Placement,
    launch: LaunchMode,
    worlds: &[usize],
    sizes: &[u64],
    variants: &[(Candidate, Variant)],
    progress: Progress<'_>,
) -> Result<Times, CalibError> {
    predict_from(
        topo,
        params,
        placement,
        launch,
        worlds,
        sizes,
        variants,
        progress,
        Times::new(),
        &|_, _, _, _| {},
    )
}

/// [`predict`] of contend's algorithms `list` with the constants `set`
/// stands for, each prediction handed to `checkpoint` as it completes and
/// those it holds from before not simulated again.
#[allow(clippy::too_many_arguments)]
pub(crate) fn predict_resumable(
    topo: &Topology,
    params: &ModelParams,
    placement: Placement,
    launch: LaunchMode,
    worlds: &[usize],
    sizes: &[u64],
    list: &[Algorithm],
    progress: Progress<'_>,
    checkpoint: &Checkpoint<'_, Prediction>,
    set: ConstantSet,
) -> Result<Times, CalibError> {
    let before: Times = checkpoint
        .done()
        .iter()
        .filter(|p| p.constants == set)
        .map(|p| {
            (
                (p.world, p.size_bytes, Candidate::Algorithm(p.variant)),
                p.ns,
            )
        })
        .collect();
    let record = |world: usize, size_bytes: u64, c: Candidate, ns: Option<f64>| {
        if let Candidate::Algorithm(variant) = c {
            checkpoint.record(&Prediction {
                world,
                size_bytes,
                variant,
                ns,
                constants: set,
            });
        }
    };
    predict_from(
        topo,
        params,
        placement,
        launch,
        worlds,
        sizes,
        &algorithms(list),
        progress,
        before,
        &record,
    )
}

/// [`predict`], those in `before` not simulated again, each new
/// prediction handed to `record`.
#[allow(clippy::too_many_arguments)]
fn predict_from(
    topo: &Topology,
    params: &ModelParams,
    placement: Placement,
    launch: LaunchMode,
    worlds: &[usize],
    sizes: &[u64],
    variants: &[(Candidate, Variant)],
    progress: Progress<'_>,
    before: Times,
    record: &(dyn Fn(usize, u64, Candidate, Option<f64>) + Sync),
) -> Result<Times, CalibError> {
    let gpus = topo.gpus();
    let mut jobs: Vec<(usize, Candidate, &Variant, u64)> = Vec::new();
    for &k in worlds {
        for (label, v) in variants {
            for &s in sizes {
                jobs.push((k, *label, v, s));
            }
        }
    }
    // one scenario per (world, variant)
    // `None`: NCCL has no algorithm and protocol left under the variables
    let mut scenarios: BTreeMap<(usize, Candidate), Option<Scenario>> = BTreeMap::new();
    for &k in worlds {
        if k > gpus.len() || k < 2 {
            return Err(CalibError::Fit(format!(
                "world size {k} on `{}` ({} GPUs)",
                topo.name,
                gpus.len()
            )));
        }
        for (label, v) in variants {
            let (algorithm, env) = match v {
                Variant::Algo(a) => (*a, vec![]),
                Variant::Nccl(env) => (Algorithm::Nccl, env.clone()),
            };
            let mut nccl_env = NcclEnv::default();
            for (n, val) in &env {
                nccl_env
                    .set(n, val)
                    .map_err(|e| CalibError::Fit(format!("{label}: {e}")))?;
            }
            let sc = Scenario::new(ScenarioSpec {
                ranks: gpus[..k].to_vec(),
                algorithms: vec![algorithm],
                placements: vec![placement],
                launch,
                nccl: NcclSetup {
                    env: nccl_env,
                    ..NcclSetup::default()
                },
                ..ScenarioSpec::new(
                    "emit",
                    topo.clone(),
                    Workload::Allreduce {
                        sizes: sizes.iter().map(|s| Bytes(*s)).collect(),
                        dtype: Dtype::Bf16,
                        repeats: 3,
                        gap: Picos::ZERO,
                        skew: Skew::None,
                    },
                )
            });
            let sc = match sc {
                Ok(sc) => Some(sc),
                // forced NCCL settings that leave NCCL nothing at some size
                Err(ScenarioError::NcclNoChoice { .. }) if matches!(v, Variant::Nccl(_)) => None,
                Err(e) => return Err(CalibError::Fit(format!("{label} on {k} ranks: {e}"))),
            };
            scenarios.insert((k, *label), sc);
        }
    }
    let total = jobs.len();
    let done = std::sync::atomic::AtomicUsize::new(
        jobs.iter()
            .filter(|j| before.contains_key(&(j.0, j.3, j.1)))
            .count(),
    );
    let out: Vec<((usize, u64, Candidate), Option<f64>)> = jobs
        .par_iter()
        .map(|&(k, label, v, s)| {
            if let Some(t) = before.get(&(k, s, label)) {
                return Ok(((k, s, label), *t));
            }
            let Some(sc) = &scenarios[&(k, label)] else {
                return Ok(((k, s, label), None));
            };
            let algorithm = match v {
                Variant::Algo(a) => *a,
                Variant::Nccl(_) => Algorithm::Nccl,
            };
            let run = simulate_one(
                sc,
                params,
                RunSpec {
                    algorithm: Some(algorithm),
                    // host where the GPUs lack P2P (the scenario's rule)
                    placement: sc.placements()[0],
                    fidelity: Fidelity::Flow,
                    size: Some(Bytes(s)),
                },
            );
            let d = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress("predict", d, total);
            let t = match run {
                Ok(r) => Some(r.record().stats.median_ns),
                // a forced NCCL protocol NCCL would not run at this size
                Err(SimError::Lower {
                    error: LowerError::NcclNoChoice(_),
                    ..
                }) if matches!(v, Variant::Nccl(_)) => None,
                Err(e) => {
                    return Err(CalibError::Fit(format!(
                        "{label} at {} on {k} ranks: {e}",
                        Bytes(s)
                    )));
                }
            };
            record(k, s, label, t);
            Ok(((k, s, label), t))
        })
        .collect::<Result<_, CalibError>>()?;
    Ok(out.into_iter().collect())
}

/// `12.3 us`, `1.234 ms`.
pub(crate) fn time(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.1} us", ns / 1e3)
    }
}

/// The time of `c` at (world, size), if predicted.
pub(crate) fn at(t: &Times, k: usize, s: u64, c: Candidate) -> Option<f64> {
    t.get(&(k, s, c)).copied().flatten()
}

/// The fastest of `candidates` at (world, size).
pub(crate) fn best(
    t: &Times,
    k: usize,
    s: u64,
    candidates: &[Candidate],
) -> Option<(Candidate, f64)> {
    candidates
        .iter()
        .filter_map(|c| at(t, k, s, *c).map(|v| (*c, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Runs of consecutive sizes with one value: (first size, last size, value).
pub(crate) fn runs<T: PartialEq + Clone>(rows: &[(u64, T)]) -> Vec<(u64, u64, T)> {
    let mut out: Vec<(u64, u64, T)> = Vec::new();
    for (s, v) in rows {
        match out.last_mut() {
            Some(r) if r.2 == *v => r.1 = *s,
            _ => out.push((*s, *s, v.clone())),
        }
    }
    out
}

/// `min-max` of a candidate's times over sizes `a..=b` of world `k`
/// (`n/a` where it has none).
pub(crate) fn span(t: &Times, k: usize, sizes: &[u64], a: u64, b: u64, c: Candidate) -> String {
    let v: Vec<f64> = sizes
        .iter()
        .filter(|s| **s >= a && **s <= b)
        .filter_map(|s| at(t, k, *s, c))
        .collect();
    match (
        v.iter().copied().reduce(f64::min),
        v.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) if (hi - lo).abs() < 0.05 * lo.max(1.0) => time(lo),
        (Some(lo), Some(hi)) => format!("{}-{}", time(lo), time(hi)),
        _ => "n/a".into(),
    }
}

/// Whether every GPU pair has an NVLink (vLLM's and SGLang's "fully
/// connected").
pub(crate) fn fully_connected(topo: &Topology, k: usize) -> bool {
    let gpus = &topo.gpus()[..k];
    gpus.iter().enumerate().all(|(i, &a)| {
        gpus[i + 1..].iter().all(|&b| {
            topo.neighbours(a).iter().any(|(l, n)| {
                *n == b && matches!(topo.link(*l).kind, contend_topo::LinkKind::Nvlink { .. })
            })
        })
    })
}
