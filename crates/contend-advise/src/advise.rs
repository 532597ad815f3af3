//! Thresholds a serving engine needs: for each world size (the first k GPUs
//! of a topology), the size ranges where one-shot, two-shot, hierarchical,
//! island two-shot, staged push, the copy-engine ring or NCCL's ring wins,
//! from the (fitted) model.

use crate::predict::Candidate;
use contend_fit::checkpoint::{Checkpoint, ConstantSet, Prediction};
use contend_fit::fit::Progress;
use contend_import::CalibError;
use contend_sim::ModelParams;
use contend_topo::{Bytes, Topology};
use contend_workload::compare::{self, DEFAULT_TIE_TOLERANCE};
use contend_workload::{Algorithm, Placement};
use serde::Serialize;
use std::fmt::Write as _;

pub use crate::family::{Family, family};

/// One size range where one family wins, or several tie.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Range {
    pub from_bytes: u64,
    pub to_bytes: u64,
    /// The family that wins; `None` (`tie` in JSON) where several
    /// families are within the tolerance of the fastest all through the range.
    #[serde(serialize_with = "crate::family::family_or_tie")]
    pub family: Option<Family>,
    /// The families tied, fastest at the range's first size first (empty
    /// unless `family` is a tie).
    pub tied: Vec<Family>,
    /// The fastest algorithm of the family (of each tied family) at each
    /// size of the range, in order (deduplicated).
    pub algorithms: Vec<Algorithm>,
}

/// One family's best prediction at one size.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FamilyTime {
    pub family: Family,
    pub algorithm: Algorithm,
    pub ns: f64,
    /// The relative uncertainty of comparing it with the fastest (0.03: 3 %).
    pub tolerance: f64,
}

/// What the advice saw at one size.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SizeChoice {
    pub size_bytes: u64,
    /// Every family's best, fastest first.
    pub families: Vec<FamilyTime>,
    /// The families tied for fastest ([`compare::tied`]).
    pub tied: Vec<Family>,
    /// Every algorithm's time (ns), in [`Algorithm::ALL`]'s order: what an
    /// engine that runs only some of them can have.
    pub algorithms: Vec<(Algorithm, f64)>,
}

/// The advice for one world size.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WorldAdvice {
    pub world: usize,
    pub ranks: Vec<String>,
    /// Where the custom kernels' buffers are: the placement asked for,
    /// or `host` where the ranks' GPUs lack P2P.
    pub placement: Placement,
    /// Which of the ranks' GPUs lack P2P and why (`None`: every pair has it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_p2p: Option<String>,
    pub ranges: Vec<Range>,
    /// Per size: (size, winner, its time ns, runner-up family's time ns).
    pub sizes: Vec<(u64, Algorithm, f64, f64)>,
    /// Per size: every family's time and which are tied.
    pub choices: Vec<SizeChoice>,
}

/// How far apart two predictions must be for one to win (below it they tie).
#[derive(Clone, Debug)]
pub enum Tolerance {
    /// The same relative tolerance everywhere: [`DEFAULT_TIE_TOLERANCE`]
    /// where the constants state no uncertainty, or a user's.
    Fixed(f64),
    /// From a calibration's bootstrap: every prediction made again with the
    /// fitted constants at their bootstrap 5th (`low`) and 95th (`high`)
    /// percentiles; a family's uncertainty is half the spread of its two
    /// times over its time, and a comparison's the larger of the two
    /// families'.
    Bootstrap {
        low: Box<ModelParams>,
        high: Box<ModelParams>,
    },
}

impl Tolerance {
    /// In words, for the table's header.
    pub fn describe(&self, advice: &[WorldAdvice]) -> String {
        match self {
            Tolerance::Fixed(t) if *t == DEFAULT_TIE_TOLERANCE => format!(
                "{:.1} % (the default: these constants state no uncertainty)",
                t * 100.0
            ),
            Tolerance::Fixed(t) => format!("{:.1} %", t * 100.0),
            Tolerance::Bootstrap { .. } => {
                let mut v: Vec<f64> = advice
                    .iter()
                    .flat_map(|w| w.choices.iter())
                    .flat_map(|c| c.families.iter().map(|f| f.tolerance))
                    .collect();
                v.sort_by(f64::total_cmp);
                let med = v.get(v.len() / 2).copied().unwrap_or(0.0);
                let max = v.last().copied().unwrap_or(0.0);
                format!(
                    "from the fit's bootstrap (5th..95th percentile constants): median {:.1} %, max {:.1} %",
                    med * 100.0,
                    max * 100.0
                )
            }
        }
    }

    /// The constant sets predicted with.
    fn sets(&self) -> &'static [ConstantSet] {
        match self {
            Tolerance::Fixed(_) => &[ConstantSet::Fitted],
            Tolerance::Bootstrap { .. } => {
                &[ConstantSet::Fitted, ConstantSet::Low, ConstantSet::High]
            }
        }
    }
}

/// Simulates every algorithm at every size for each world size 2..=GPUs;
/// ties within [`DEFAULT_TIE_TOLERANCE`].
pub fn advise(
    topo: &Topology,
    params: &ModelParams,
    placement: Placement,
    sizes: &[u64],
    progress: Progress<'_>,
) -> Result<Vec<WorldAdvice>, CalibError> {
    advise_resumable(
        topo,
        params,
        &Tolerance::Fixed(DEFAULT_TIE_TOLERANCE),
        placement,
        sizes,
        progress,
        &Checkpoint::none(),
    )
}

/// The GPUs' ids, two at least.
fn gpu_ids(topo: &Topology) -> Result<Vec<String>, CalibError> {
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
    Ok(gpus)
}

/// How many predictions [`advise_resumable`] makes: every algorithm at
/// every size for each world size 2..=GPUs, for each constant set.
pub fn predictions(topo: &Topology, sizes: &[u64], tolerance: &Tolerance) -> usize {
    topo.gpus().len().saturating_sub(1)
        * Algorithm::ALL.len()
        * sizes.len()
        * tolerance.sets().len()
}

/// [`advise`] with a tie tolerance, each prediction handed to `checkpoint`
/// as it completes and those it holds from before not simulated again.
pub fn advise_resumable(
    topo: &Topology,
    params: &ModelParams,
    tolerance: &Tolerance,
    placement: Placement,
    sizes: &[u64],
    progress: Progress<'_>,
    checkpoint: &Checkpoint<'_, Prediction>,
) -> Result<Vec<WorldAdvice>, CalibError> {
    let gpus = gpu_ids(topo)?;
    let worlds: Vec<usize> = (2..=gpus.len()).collect();
    let mut done: Vec<Prediction> = vec![];
    for &set in tolerance.sets() {
        let p = match (set, tolerance) {
            (ConstantSet::Low, Tolerance::Bootstrap { low, .. }) => low.as_ref(),
            (ConstantSet::High, Tolerance::Bootstrap { high, .. }) => high.as_ref(),
            _ => params,
        };
        let all = crate::predict::predict_resumable(
            topo,
            p,
            placement,
            contend_workload::LaunchMode::Eager,
            &worlds,
            sizes,
            Algorithm::ALL,
            progress,
            checkpoint,
            set,
        )?;
        // every key is an algorithm: only algorithms were predicted
        done.extend(all.into_iter().filter_map(|((world, size_bytes, c), ns)| {
            let Candidate::Algorithm(variant) = c else {
                return None;
            };
            Some(Prediction {
                world,
                size_bytes,
                variant,
                ns,
                constants: set,
            })
        }));
    }
    advice_of(topo, tolerance, placement, sizes, &done)
}

/// The advice over the sizes of `sizes` where every algorithm is predicted
/// (with every constant set the tolerance needs) for every world size: all
/// of them after a whole run; after an interrupted one, those done.
pub fn advice_of(
    topo: &Topology,
    tolerance: &Tolerance,
    placement: Placement,
    sizes: &[u64],
    done: &[Prediction],
) -> Result<Vec<WorldAdvice>, CalibError> {
    let gpus = gpu_ids(topo)?;
    let sets = tolerance.sets();
    let table = |set: ConstantSet| -> crate::predict::Times {
        done.iter()
            .filter(|p| p.constants == set)
            .map(|p| {
                (
                    (p.world, p.size_bytes, Candidate::Algorithm(p.variant)),
                    p.ns,
                )
            })
            .collect()
    };
    let tables: Vec<crate::predict::Times> = sets.iter().map(|&s| table(s)).collect();
    let whole: Vec<u64> = sizes
        .iter()
        .copied()
        .filter(|&s| {
            (2..=gpus.len()).all(|k| {
                Algorithm::ALL.iter().all(|a| {
                    tables
                        .iter()
                        .all(|t| t.contains_key(&(k, s, Candidate::Algorithm(*a))))
                })
            })
        })
        .collect();
    let fixed = match tolerance {
        Tolerance::Fixed(t) => Some(*t),
        Tolerance::Bootstrap { .. } => None,
    };
    let mut out = advice_from(&gpus, placement, &whole, &tables, fixed);
    // where the ranks' GPUs lack P2P the custom kernels ran in host memory
    let all = topo.gpus();
    for w in &mut out {
        w.no_p2p = topo.no_p2p_summary(&all[..w.world]);
        if w.no_p2p.is_some() {
            w.placement = Placement::Host;
        }
    }
    Ok(out)
}

fn advice_from(
    gpus: &[String],
    placement: Placement,
    sizes: &[u64],
    tables: &[crate::predict::Times],
    fixed: Option<f64>,
) -> Vec<WorldAdvice> {
    let all = &tables[0];
    // a family's uncertainty at (world, size): fixed, or the bootstrap's half-spread
    let unc = |k: usize, s: u64, a: Algorithm, t: f64| -> f64 {
        match (fixed, tables.get(1), tables.get(2)) {
            (Some(f), _, _) => f,
            (None, Some(lo), Some(hi)) => {
                match (
                    crate::predict::at(lo, k, s, a.into()),
                    crate::predict::at(hi, k, s, a.into()),
                ) {
                    (Some(l), Some(h)) => (h - l).abs() / 2.0 / t.max(1e-9),
                    _ => 0.0,
                }
            }
            _ => 0.0,
        }
    };
    let worlds: Vec<usize> = (2..=gpus.len()).collect();
    let mut out = vec![];
    for k in worlds {
        let ranks = &gpus[..k];
        let mut per_size = vec![];
        let mut choices = vec![];
        for &s in sizes {
            // each family's fastest algorithm here
            let mut best: Vec<(Family, Algorithm, f64)> = vec![];
            for &a in Algorithm::ALL {
                let Some(t) = crate::predict::at(all, k, s, a.into()) else {
                    continue;
                };
                match best.iter_mut().find(|b| b.0 == family(a)) {
                    Some(b) if t < b.2 => *b = (family(a), a, t),
                    Some(_) => {}
                    None => best.push((family(a), a, t)),
                }
            }
            best.sort_by(|a, b| a.2.total_cmp(&b.2));
            let Some(w) = best.first().copied() else {
                continue;
            };
            let second = best.get(1).map_or(w.2, |b| b.2);
            per_size.push((s, w.1, w.2, second));
            let u_best = unc(k, s, w.1, w.2);
            let families: Vec<FamilyTime> = best
                .iter()
                .map(|&(f, a, t)| FamilyTime {
                    family: f,
                    algorithm: a,
                    ns: t,
                    tolerance: unc(k, s, a, t).max(u_best),
                })
                .collect();
            let tied = compare::tied(
                &families
                    .iter()
                    .map(|f| (f.family, f.ns, f.tolerance))
                    .collect::<Vec<_>>(),
            );
            let algorithms = Algorithm::ALL
                .iter()
                .filter_map(|&a| Some((a, crate::predict::at(all, k, s, a.into())?)))
                .collect();
            choices.push(SizeChoice {
                size_bytes: s,
                families,
                tied,
                algorithms,
            });
        }
        let per: Vec<(Bytes, Vec<Family>)> = choices
            .iter()
            .map(|c| (Bytes(c.size_bytes), c.tied.clone()))
            .collect();
        let ranges = compare::tie_bands(&per)
            .into_iter()
            .map(|b| {
                let mut algs: Vec<Algorithm> = vec![];
                for fam in &b.choices {
                    for c in choices
                        .iter()
                        .filter(|c| c.size_bytes >= b.from.0 && c.size_bytes <= b.to.0)
                    {
                        if let Some(f) = c.families.iter().find(|f| f.family == *fam)
                            && !algs.contains(&f.algorithm)
                        {
                            algs.push(f.algorithm);
                        }
                    }
                }
                let tie = b.choices.len() > 1;
                Range {
                    from_bytes: b.from.0,
                    to_bytes: b.to.0,
                    family: (!tie).then_some(b.choices[0]),
                    tied: if tie { b.choices.clone() } else { vec![] },
                    algorithms: algs,
                }
            })
            .collect();
        out.push(WorldAdvice {
            world: k,
            ranks: ranks.to_vec(),
            placement,
            no_p2p: None,
            ranges,
            sizes: per_size,
            choices,
        });
    }
    out
}

/// The advice as a table, within [`WIDTH`] columns: per world size, each
/// range's choice with its predicted time over the range and NCCL's (as
/// NCCL would run there), and how much faster the choice is.
pub fn advice_table(topo_name: &str, tolerance: &str, advice: &[WorldAdvice]) -> String {
    let mut s = String::new();
    wrap(&mut s, "topology  ", topo_name);
    wrap(
        &mut s,
        "tie       ",
        &format!(
            "tolerance {tolerance}: a prediction within it of the fastest ties; a range changes only where its choice is beaten by more"
        ),
    );
    for w in advice {
        s.push('\n');
        wrap(
            &mut s,
            "",
            &format!(
                "world size {} ({}), {} placement",
                w.world,
                w.ranks.join(" "),
                w.placement
            ),
        );
        if let Some(n) = &w.no_p2p {
            wrap(
                &mut s,
                "  ",
                &format!(
                    "{n}. Custom kernels were predicted with their buffers in host memory; NCCL through host memory (SHM)"
                ),
            );
        }
        let _ = writeln!(
            s,
            "  {:>9} {:>9}  {:<16} {:<24} {:>15} {:>15} {:>8}",
            "from", "to", "use", "algorithm", "time (us)", "NCCL (us)", "vs NCCL"
        );
        for r in &w.ranges {
            let in_range: Vec<&SizeChoice> = w
                .choices
                .iter()
                .filter(|c| c.size_bytes >= r.from_bytes && c.size_bytes <= r.to_bytes)
                .collect();
            // the choice's time: its fastest algorithm's at each size
            let pick = |c: &SizeChoice| -> Option<f64> {
                // a tie's first family (tied is empty where one family wins)
                let fam = match r.family {
                    Some(f) => f,
                    None => r.tied[0],
                };
                c.families.iter().find(|f| f.family == fam).map(|f| f.ns)
            };
            let nccl = |c: &SizeChoice| -> Option<f64> {
                c.families
                    .iter()
                    .find(|f| f.family == Family::Nccl)
                    .map(|f| f.ns)
            };
            let span = |v: Vec<f64>| -> String {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(0.0, f64::max);
                if v.is_empty() {
                    "-".into()
                } else if (hi - lo) / hi.max(1e-9) < 0.005 {
                    format!("{:.1}", lo / 1e3)
                } else {
                    format!("{:.1}-{:.1}", lo / 1e3, hi / 1e3)
                }
            };
            let times: Vec<f64> = in_range.iter().filter_map(|c| pick(c)).collect();
            let ncc: Vec<f64> = in_range.iter().filter_map(|c| nccl(c)).collect();
            // the speed-up over NCCL at each size, its range
            let gain: Vec<f64> = in_range
                .iter()
                .filter_map(|c| Some(nccl(c)? / pick(c)?.max(1e-9)))
                .collect();
            let vs = if r.family == Some(Family::Nccl) {
                "-".to_string()
            } else if gain.is_empty() {
                "?".into()
            } else {
                let lo = gain.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = gain.iter().copied().fold(0.0, f64::max);
                if hi - lo < 0.05 {
                    format!("{lo:.2}x")
                } else {
                    format!("{lo:.1}-{hi:.1}x")
                }
            };
            // families tied at the very same time at every size are one
            // algorithm here (island two-shot with one island per socket
            // is two-shot): not a tie, the first named and the others noted
            let same = !r.tied.is_empty()
                && in_range.iter().all(|c| {
                    let t: Vec<f64> = r
                        .tied
                        .iter()
                        .filter_map(|fam| c.families.iter().find(|f| f.family == *fam))
                        .map(|f| f.ns)
                        .collect();
                    t.iter()
                        .all(|x| (x - t[0]).abs() <= 1e-6 * t[0].abs().max(1.0))
                });
            let names = |algs: &[Algorithm], sep: &str| {
                algs.iter().map(|a| a.name()).collect::<Vec<_>>().join(sep)
            };
            let (fam, what) = if r.tied.is_empty() {
                (
                    r.family.map_or("tie", Family::name).to_string(),
                    names(&r.algorithms, ", "),
                )
            } else if same {
                (
                    r.tied[0].name().to_string(),
                    format!(
                        "{} (= {} here)",
                        r.algorithms[0].name(),
                        names(&r.algorithms[1..], ", ")
                    ),
                )
            } else {
                (
                    format!("tie: {}", families(&r.tied)),
                    names(&r.algorithms, " = "),
                )
            };
            let line = format!(
                "  {:>9} {:>9}  {:<16} {:<24} {:>15} {:>15} {:>8}",
                Bytes(r.from_bytes).to_string(),
                Bytes(r.to_bytes).to_string(),
                fam,
                what,
                span(times),
                span(ncc),
                vs,
            );
            s.push_str(line.trim_end());
            s.push('\n');
        }
    }
    s
}

/// `one-shot = two-shot`.
pub(crate) fn families(f: &[Family]) -> String {
    f.iter().map(|f| f.name()).collect::<Vec<_>>().join(" = ")
}

/// Columns a table line fits in.
pub const WIDTH: usize = 120;

/// `text` after `lead`, wrapped at word boundaries to [`WIDTH`] columns,
/// the following lines indented as deep as `lead`.
fn wrap(s: &mut String, lead: &str, text: &str) {
    let indent = " ".repeat(lead.chars().count());
    let mut line = lead.to_string();
    let mut empty = true;
    for word in text.split(' ') {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            s.push_str(&line);
            s.push('\n');
            line = indent.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    s.push_str(&line);
    s.push('\n');
}
