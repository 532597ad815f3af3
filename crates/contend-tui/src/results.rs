//! What the simulator's runs say, ready to draw: per algorithm the time, the
//! winner and the measured figure (the scenario job); per algorithm and size
//! the median, who wins where and the crossovers (the size sweep). Every
//! rule of which is faster is [`contend_workload::compare`]'s.

use crate::measure::{MeasureKey, Overlay, series_of};
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
    /// The same figure measured on hardware, if a measurement matches.
    pub measured_ns: Option<f64>,
    pub run: Run,
}

/// A measured figure of a series the simulation has no row for (NCCL).
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredFigure {
    pub series: Measured,
    pub ns: f64,
}

/// Measured median allreduce times of one series: `(size, ns)` points.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredSeries {
    pub series: Measured,
    pub points: Vec<(Bytes, f64)>,
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
    /// Measured series without a simulated twin (NCCL), by name.
    pub measured_extra: Vec<MeasuredFigure>,
}

impl SimResults {
    /// The results of the runs of `sc`, with the measurements of `overlay`
    /// that match it (at `placement`, the placement it ran).
    pub fn new(
        sc: &Scenario,
        runs: Vec<Run>,
        overlay: &Overlay,
        placement: Placement,
    ) -> SimResults {
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
        let measured: Vec<&ResultRecord> = overlay
            .matching(&key)
            .filter(|r| r.size_bytes == size.0)
            .collect();
        let rows: Vec<AlgResult> = runs
            .into_iter()
            .filter(|r| !r.records.is_empty())
            .filter_map(|run| {
                let a = run.spec.algorithm?;
                let rec = run.record();
                Some(AlgResult {
                    algorithm: a,
                    time_ns: compare::ranking_ns(rec),
                    p50_ns: rec.stats.median_ns,
                    measured_ns: mean_of(&measured, Measured::Allreduce(a)),
                    run,
                })
            })
            .collect();
        let winner = compare::fastest(&rows, |r| r.time_ns);
        let mut extra: Vec<Measured> = measured
            .iter()
            .map(|r| series_of(r))
            .filter(|m| !rows.iter().any(|r| Measured::Allreduce(r.algorithm) == *m))
            .collect();
        extra.sort_by_key(|m| m.name());
        extra.dedup();
        let measured_extra = extra
            .into_iter()
            .filter_map(|series| mean_of(&measured, series).map(|ns| MeasuredFigure { series, ns }))
            .collect();
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

    /// The slowest row ([`compare::slowest`] by `time_ns`).
    pub fn slowest(&self) -> Option<&AlgResult> {
        compare::slowest(&self.rows, |r| r.time_ns).map(|i| &self.rows[i])
    }

    pub fn row(&self, a: Algorithm) -> Option<&AlgResult> {
        self.rows.iter().find(|r| r.algorithm == a)
    }

    /// Whether the rows rank verify steps (by their whole time).
    pub fn is_verify_step(&self) -> bool {
        self.workload.kind() == WorkloadKind::VerifyStep
    }
}

/// The mean ranking figure of the measured records of one series.
fn mean_of(measured: &[&ResultRecord], series: Measured) -> Option<f64> {
    let v: Vec<f64> = measured
        .iter()
        .filter(|r| series_of(r) == series)
        .map(|r| compare::ranking_ns(r))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
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
    /// Measured allreduce points per series, in the order first met.
    pub measured: Vec<MeasuredSeries>,
}

impl SweepResults {
    /// The results of the sweep runs of `sc`, with the allreduce
    /// measurements of `overlay` that match it (at `placement`).
    pub fn new(
        sc: &Scenario,
        runs: &[Run],
        overlay: &Overlay,
        placement: Placement,
    ) -> SweepResults {
        let sizes = match sc.workload() {
            Workload::Allreduce { sizes, .. } => sizes.clone(),
            _ => vec![],
        };
        let series: Vec<Series<Algorithm>> = sc
            .algorithms()
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
            .collect();
        let winners = compare::winners_over(&sizes, &series);
        let key = MeasureKey {
            workload: WorkloadKind::Allreduce,
            ranks: sc.ranks().len(),
            placement,
        };
        let mut measured: Vec<MeasuredSeries> = vec![];
        for r in overlay.matching(&key) {
            let series = series_of(r);
            let p = (Bytes(r.size_bytes), r.stats.median_ns);
            match measured.iter_mut().find(|m| m.series == series) {
                Some(m) => m.points.push(p),
                None => measured.push(MeasuredSeries {
                    series,
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
        }
    }
}

/// The latest result of each job.
#[derive(Clone, Debug, Default)]
pub struct Results {
    pub sim: Option<SimResults>,
    pub sweep: Option<SweepResults>,
}
