//! Thresholds a serving engine needs: for each world size (the first k GPUs
//! of a topology), the size ranges where one-shot, two-shot, hierarchical,
//! island two-shot, staged push, the copy-engine ring or NCCL's ring wins,
//! from the (fitted) model.

use crate::error::CalibError;
use crate::eval::ranges;
use crate::fit::Progress;
use contend_sim::ModelParams;
use contend_topo::{Bytes, Topology};
use contend_workload::{Algorithm, Placement};
use serde::Serialize;
use std::fmt::Write as _;

/// The family an algorithm belongs to in the advice.
pub fn family(a: Algorithm) -> &'static str {
    match a {
        Algorithm::OneShotPull | Algorithm::OneShotPush => "one-shot",
        Algorithm::TwoShotPull | Algorithm::TwoShotPush | Algorithm::TwoShotPushFp32Acc => {
            "two-shot"
        }
        Algorithm::Hierarchical => "hierarchical",
        Algorithm::IslandTwoShot => "island-two-shot",
        Algorithm::StagedPush => "staged-push",
        Algorithm::CeRing => "ce-ring",
        Algorithm::RingLl | Algorithm::RingSimple => "nccl-ring",
        Algorithm::Nccl => "nccl",
    }
}

/// One size range where one family wins.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Range {
    pub from_bytes: u64,
    pub to_bytes: u64,
    /// `one-shot`, `two-shot`, `hierarchical`, `island-two-shot`,
    /// `staged-push`, `ce-ring`, `nccl-ring`, `nccl`.
    pub family: String,
    /// The fastest algorithm of the family at each size of the range, in order (deduplicated).
    pub algorithms: Vec<String>,
}

/// The advice for one world size.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WorldAdvice {
    pub world: usize,
    pub ranks: Vec<String>,
    pub placement: Placement,
    pub ranges: Vec<Range>,
    /// Per size: (size, winner, its time ns, runner-up family's time ns).
    pub sizes: Vec<(u64, String, f64, f64)>,
}

/// Simulates every algorithm at every size for each world size 2..=GPUs.
pub fn advise(
    topo: &Topology,
    params: &ModelParams,
    placement: Placement,
    sizes: &[u64],
    progress: Progress<'_>,
) -> Result<Vec<WorldAdvice>, CalibError> {
    let gpus: Vec<String> = topo
        .gpus()
        .iter()
        .map(|g| topo.node(*g).id.0.clone())
        .collect();
    if gpus.len() < 2 {
        return Err(CalibError::Fit(format!(
            "topology `{}` has {} GPU(s): an allreduce needs two",
            topo.name,
            gpus.len()
        )));
    }
    let mut out = vec![];
    let worlds: Vec<usize> = (2..=gpus.len()).collect();
    let variants: Vec<(String, crate::emit::Variant)> = Algorithm::ALL
        .iter()
        .map(|a| (a.name().to_string(), crate::emit::Variant::Algo(*a)))
        .collect();
    let all = crate::emit::predict(
        topo,
        params,
        placement,
        contend_workload::LaunchMode::Eager,
        &worlds,
        sizes,
        &variants,
        progress,
    )?;
    for k in worlds {
        let ranks = &gpus[..k];
        let times: Vec<(u64, Algorithm, f64)> = sizes
            .iter()
            .flat_map(|&s| {
                let all = &all;
                Algorithm::ALL
                    .iter()
                    .filter_map(move |&a| crate::emit::at(all, k, s, a.name()).map(|t| (s, a, t)))
            })
            .collect();
        let mut per_size = vec![];
        for &s in sizes {
            let mut best: Vec<(&'static str, Algorithm, f64)> = vec![];
            for &(z, a, t) in times.iter().filter(|x| x.0 == s) {
                let _ = z;
                match best.iter_mut().find(|b| b.0 == family(a)) {
                    Some(b) if t < b.2 => *b = (family(a), a, t),
                    Some(_) => {}
                    None => best.push((family(a), a, t)),
                }
            }
            best.sort_by(|a, b| a.2.total_cmp(&b.2));
            if let Some(w) = best.first() {
                let second = best.get(1).map_or(w.2, |b| b.2);
                per_size.push((s, w.0.to_string(), w.1, w.2, second));
            }
        }
        let fam_rows: Vec<(u64, String)> = per_size.iter().map(|r| (r.0, r.1.clone())).collect();
        let ranges = ranges(&fam_rows)
            .into_iter()
            .map(|(a, b, fam)| {
                let mut algs: Vec<String> = vec![];
                for r in per_size.iter().filter(|r| r.0 >= a && r.0 <= b) {
                    let n = r.2.name().to_string();
                    if algs.last() != Some(&n) {
                        algs.push(n);
                    }
                }
                Range {
                    from_bytes: a,
                    to_bytes: b,
                    family: fam,
                    algorithms: algs,
                }
            })
            .collect();
        out.push(WorldAdvice {
            world: k,
            ranks: ranks.to_vec(),
            placement,
            ranges,
            sizes: per_size
                .iter()
                .map(|r| (r.0, r.2.name().to_string(), r.3, r.4))
                .collect(),
        });
    }
    Ok(out)
}

/// The advice as a table.
pub fn advice_table(topo_name: &str, advice: &[WorldAdvice]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "topology  {topo_name}");
    for w in advice {
        let _ = writeln!(
            s,
            "\nworld size {} ({}), {} placement",
            w.world,
            w.ranks.join(" "),
            w.placement
        );
        let _ = writeln!(
            s,
            "  {:>10}  {:>10}  {:<15} algorithm(s)",
            "from", "to", "use"
        );
        for r in &w.ranges {
            let _ = writeln!(
                s,
                "  {:>10}  {:>10}  {:<15} {}",
                Bytes(r.from_bytes).to_string(),
                Bytes(r.to_bytes).to_string(),
                r.family,
                r.algorithms.join(", ")
            );
        }
    }
    s
}
