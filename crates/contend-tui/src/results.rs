//! What the simulator's runs say, ready to draw: per algorithm the time, the
//! winner and the measured figure (the scenario job); per algorithm and size
//! the median, who wins where and the crossovers (the size sweep). Every
//! rule of which is faster is [`contend_workload::compare`]'s.

use crate::measure::{MeasureKey, Overlay, Shape, Variant, series_of};
use crate::worker::JobOutput;
use contend_sim::Run;
use contend_topo::Bytes;
use contend_workload::compare::{self, Band, Series};
use contend_workload::{
    Algorithm, Fidelity, Measured, Placement, ResultRecord, Scenario, Workload, WorkloadKind,
};

/// One algorithm's simulated result.
#[derive(Clone, Debug)]
pub struct AlgResult {
    pub algorithm: Algorithm,
    /// What the bar shows and the ranking uses ([`compare::ranking_ns`]):
    /// the verify step's total time, or an allreduce's median.
    pub time_ns: f64,
    /// Median time of one allreduce.
    pub p50_ns: f64,
    /// The same figure measured on hardware, one per variant measured
    /// (eager and graph apart, NCCL with P2P and without apart), each with
    /// the simulation of its own variant.
    pub measured: Vec<MeasuredFigure>,
    pub run: Run,
}

/// The measured figure of one series in one variant (the mean of its
/// records), and the simulated figure of the same variant.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredFigure {
    pub series: Measured,
    pub variant: Variant,
    pub ns: f64,
    /// The simulation of the measured variant: the row's own when the
    /// scenario runs that variant, else its re-run; `None` for a series the
    /// scenario does not simulate.
    pub sim_ns: Option<f64>,
    /// Whether `sim_ns` comes from a re-run in the measured variant (the
    /// scenario itself simulates another).
    pub rerun: bool,
}

/// Measured median allreduce times of one series in one variant: `(size,
/// ns)` points.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredSeries {
    pub series: Measured,
    pub variant: Variant,
    pub points: Vec<(Bytes, f64)>,
}

/// The sweep re-run in a measured variant: per algorithm, ns per size.
#[derive(Clone, Debug)]
pub struct VariantSweep {
    pub variant: Variant,
    pub series: Vec<Series<Algorithm>>,
}

/// Where the winner changes along the sweep.
pub type Crossover = compare::Crossover<Algorithm>;

/// The result of the scenario job.
#[derive(Clone, Debug)]
pub struct SimResults {
    /// The workload that ran.
    pub workload: Workload,
    pub fidelity: Fidelity,
    pub placement: Placement,
    pub rank_names: Vec<String>,
    pub rows: Vec<AlgResult>,
    /// Index into `rows` of the fastest ([`compare::fastest`] by `time_ns`).
    pub winner: Option<usize>,
    /// Measured series without a simulated row (NCCL when the scenario
    /// leaves it out), by name and variant.
    pub measured_extra: Vec<MeasuredFigure>,
}

impl SimResults {
    /// The results of the runs of `sc`, with the measurements of `overlay`
    /// that match it (at `placement`, the placement it ran).
    pub fn new(
        sc: &Scenario,
        out: JobOutput,
        overlay: &Overlay,
        placement: Placement,
    ) -> SimResults {
        let JobOutput { runs, variant_runs } = out;
        let workload = sc.workload().clone();
        let size = match &workload {
            Workload::VerifyStep(v) => v.size(),
            Workload::Allreduce { sizes, .. } => sizes.first().copied().unwrap_or_default(),
            Workload::Transfer { .. } => Bytes::ZERO,
        };
        let key = MeasureKey {
            workload: workload.kind(),
            ranks: sc.ranks().len(),
            placement,
        };
        let shape = Shape::of(&workload);
        let groups = groups(
            overlay.matching(&key).filter(|r| r.size_bytes == size.0),
            shape,
        );
        let rerun_ns = |v: Variant, a: Algorithm| {
            let (_, runs) = variant_runs.iter().find(|(tv, _)| *tv == v)?;
            runs.iter()
                .find(|r| r.spec.algorithm == Some(a) && !r.records.is_empty())
                .map(|r| compare::ranking_ns(r.record()))
        };
        let rows: Vec<AlgResult> = runs
            .into_iter()
            .filter(|r| !r.records.is_empty())
            .filter_map(|run| {
                let a = run.spec.algorithm?;
                let rec = run.record();
                let time_ns = compare::ranking_ns(rec);
                let own = Variant::of_scenario(sc, a);
                // Each measured variant over the simulation of that variant,
                // never over another.
                let measured = groups
                    .iter()
                    .filter(|(series, ..)| *series == Measured::Allreduce(a))
                    .filter_map(|&(series, variant, ns)| {
                        let (sim_ns, rerun) = if variant == own {
                            (time_ns, false)
                        } else {
                            (rerun_ns(variant, a)?, true)
                        };
                        Some(MeasuredFigure {
                            series,
                            variant,
                            ns,
                            sim_ns: Some(sim_ns),
                            rerun,
                        })
                    })
                    .collect();
                Some(AlgResult {
                    algorithm: a,
                    time_ns,
                    p50_ns: rec.stats.median_ns,
                    measured,
                    run,
                })
            })
            .collect();
        let winner = compare::fastest(&rows, |r| r.time_ns);
        let mut measured_extra: Vec<MeasuredFigure> = groups
            .iter()
            .filter(|(m, ..)| !rows.iter().any(|r| Measured::Allreduce(r.algorithm) == *m))
            .map(|&(series, variant, ns)| MeasuredFigure {
                series,
                variant,
                ns,
                sim_ns: None,
                rerun: false,
            })
            .collect();
        measured_extra
            .sort_by(|a, b| (a.series.name(), a.variant).cmp(&(b.series.name(), b.variant)));
        SimResults {
            workload,
            fidelity: sc.fidelities().first().copied().unwrap_or(Fidelity::Flow),
            placement,
            rank_names: sc.rank_names(),
            rows,
            winner,
            measured_extra,
        }
    }

    /// The fastest row.
    pub fn winner(&self) -> Option<&AlgResult> {
        self.rows.get(self.winner?)
    }

    /// What the winner's speed-up is told against ([`compare::baseline`]:
    /// NCCL's row, else the slowest).
    pub fn baseline(&self) -> Option<(compare::Baseline, &AlgResult)> {
        compare::baseline(&self.rows, |r| r.time_ns, |r| Some(r.algorithm))
            .map(|b| (b, &self.rows[b.index()]))
    }

    pub fn row(&self, a: Algorithm) -> Option<&AlgResult> {
        self.rows.iter().find(|r| r.algorithm == a)
    }

    /// Whether the rows rank verify steps (by their whole time).
    pub fn is_verify_step(&self) -> bool {
        self.workload.kind() == WorkloadKind::VerifyStep
    }
}

/// The measured records by series and variant (in the order first met),
/// each group's mean ranking figure: records of one algorithm in two
/// launch modes, or NCCL's with P2P and without, are two figures.
fn groups<'a>(
    records: impl Iterator<Item = &'a ResultRecord>,
    shape: Shape,
) -> Vec<(Measured, Variant, f64)> {
    let mut g: Vec<(Measured, Variant, Vec<f64>)> = vec![];
    for r in records {
        let (series, variant) = (series_of(r), Variant::of_record(r, shape));
        let ns = compare::ranking_ns(r);
        match g.iter_mut().find(|(s, v, _)| *s == series && *v == variant) {
            Some((.., v)) => v.push(ns),
            None => g.push((series, variant, vec![ns])),
        }
    }
    g.into_iter()
        .map(|(s, v, ns)| (s, v, ns.iter().sum::<f64>() / ns.len() as f64))
        .collect()
}

/// Per algorithm of `algorithms`, the ranking figure of its run at each
/// of `sizes` (NaN where a run is missing).
fn series_over(runs: &[Run], algorithms: &[Algorithm], sizes: &[Bytes]) -> Vec<Series<Algorithm>> {
    algorithms
        .iter()
        .map(|&a| Series {
            name: a,
            ns: sizes
                .iter()
                .map(|s| {
                    runs.iter()
                        .find(|r| {
                            r.spec.algorithm == Some(a)
                                && r.spec.size == Some(*s)
                                && !r.records.is_empty()
                        })
                        .map_or(f64::NAN, |r| compare::ranking_ns(r.record()))
                })
                .collect(),
        })
        .collect()
}

/// The result of the sweep job: median allreduce time per algorithm and size.
#[derive(Clone, Debug, Default)]
pub struct SweepResults {
    pub sizes: Vec<Bytes>,
    /// Per algorithm, ns per size (NaN where a run is missing).
    pub series: Vec<Series<Algorithm>>,
    /// The fastest algorithm at each size ([`compare::winners_over`]).
    pub winners: Vec<(Bytes, Option<Algorithm>)>,
    /// Who wins where, every size in one band ([`compare::outcome_bands`]).
    pub bands: Vec<Band<Option<Algorithm>>>,
    pub crossovers: Vec<Crossover>,
    /// What to use where, ties within [`compare::DEFAULT_TIE_TOLERANCE`]
    /// merged ([`compare::tie_bands`], the rule `contend advise` follows).
    pub advice: Vec<compare::TieBand<Algorithm>>,
    /// Measured allreduce points per series and variant, in the order
    /// first met: only variants the sweep simulates or re-ran.
    pub measured: Vec<MeasuredSeries>,
    /// The sweep re-run in measured variants it does not simulate.
    pub variant_sweeps: Vec<VariantSweep>,
}

impl SweepResults {
    /// The results of the sweep runs of `sc`, with the allreduce
    /// measurements of `overlay` that match it (at `placement`).
    pub fn new(
        sc: &Scenario,
        out: &JobOutput,
        overlay: &Overlay,
        placement: Placement,
    ) -> SweepResults {
        let sizes = match sc.workload() {
            Workload::Allreduce { sizes, .. } => sizes.clone(),
            _ => vec![],
        };
        let series = series_over(&out.runs, sc.algorithms(), &sizes);
        let variant_sweeps: Vec<VariantSweep> = out
            .variant_runs
            .iter()
            .map(|(variant, runs)| {
                let mut algs: Vec<Algorithm> =
                    runs.iter().filter_map(|r| r.spec.algorithm).collect();
                algs.dedup();
                VariantSweep {
                    variant: *variant,
                    series: series_over(runs, &algs, &sizes),
                }
            })
            .collect();
        let shape = Shape::of(sc.workload());
        let winners = compare::winners_over(&sizes, &series);
        let key = MeasureKey {
            workload: WorkloadKind::Allreduce,
            ranks: sc.ranks().len(),
            placement,
        };
        let mut measured: Vec<MeasuredSeries> = vec![];
        for r in overlay.matching(&key) {
            let series = series_of(r);
            let variant = Variant::of_record(r, shape);
            // Only over a simulation of the same variant: the sweep's own,
            // or its re-run.
            let simulated = series.algorithm().is_some_and(|a| {
                sc.algorithms().contains(&a)
                    && (Variant::of_scenario(sc, a) == variant
                        || variant_sweeps
                            .iter()
                            .any(|t| t.variant == variant && t.series.iter().any(|s| s.name == a)))
            });
            if !simulated {
                continue;
            }
            let p = (Bytes(r.size_bytes), r.stats.median_ns);
            match measured
                .iter_mut()
                .find(|m| m.series == series && m.variant == variant)
            {
                Some(m) => m.points.push(p),
                None => measured.push(MeasuredSeries {
                    series,
                    variant,
                    points: vec![p],
                }),
            }
        }
        let tied: Vec<(Bytes, Vec<Algorithm>)> = sizes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let times: Vec<(Algorithm, f64, f64)> = series
                    .iter()
                    .map(|x| (x.name, x.ns[i], compare::DEFAULT_TIE_TOLERANCE))
                    .collect();
                (*s, compare::tied(&times))
            })
            .collect();
        SweepResults {
            advice: compare::tie_bands(&tied),
            bands: compare::outcome_bands(&winners),
            crossovers: compare::crossovers(&winners),
            sizes,
            series,
            winners,
            measured,
            variant_sweeps,
        }
    }
}

/// The latest result of each job.
#[derive(Clone, Debug, Default)]
pub struct Results {
    pub sim: Option<SimResults>,
    pub sweep: Option<SweepResults>,
}
