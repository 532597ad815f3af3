//! The app's state and the only code that changes it: key handling and the
//! results the worker sends back. Drawing (`ui.rs`) only reads it.

use crate::heat::{ChannelMap, Heat};
use crate::measure::{MeasureKey, matches, series_name};
use crate::tree::{self, Row, RowKind, Selected};
use crate::worker::{Job, JobKind, Worker, WorkerMsg};
use contend_sim::{ModelParams, Run};
use contend_topo::{Bytes, NodeIdx, Picos, Topology};
use contend_workload::{
    Algorithm, Dtype, Fidelity, Placement, ResultRecord, Scenario, ScenarioError, Skew, VerifyStep,
    Workload, WorkloadKind, default_scenario,
};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Sizes of the latency-vs-size sweep: 1 KiB to 64 MiB, doubling.
pub fn default_sweep_sizes() -> Vec<Bytes> {
    (10..=26).map(|p| Bytes(1 << p)).collect()
}

/// What the workload control can be set to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadChoice {
    /// The scenario's verify step (by default EAGLE-3: 61 layers × 2 allreduces of 7168 × 3 × bf16).
    Verify,
    /// Allreduces of one size.
    Allreduce(Bytes),
}

/// Which pane the arrow keys act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Topology,
    Scenario,
    Results,
}

/// The scenario controls, left to right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Workload,
    Ranks,
    Algorithms,
    Placement,
    Fidelity,
}

pub const FIELDS: [Field; 5] = [
    Field::Workload,
    Field::Ranks,
    Field::Algorithms,
    Field::Placement,
    Field::Fidelity,
];

/// The results views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Times,
    Sweep,
    Links,
    Timeline,
}

pub const TABS: [Tab; 4] = [Tab::Times, Tab::Sweep, Tab::Links, Tab::Timeline];

impl Tab {
    pub fn title(self) -> &'static str {
        match self {
            Tab::Times => "1 Times",
            Tab::Sweep => "2 Size sweep",
            Tab::Links => "3 Links",
            Tab::Timeline => "4 Timeline",
        }
    }
}

/// Where a job of one kind stands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobState {
    pub id: u64,
    pub running: bool,
    pub done: usize,
    pub total: usize,
    pub error: Option<String>,
}

/// One algorithm's simulated result.
#[derive(Clone, Debug)]
pub struct AlgResult {
    pub algorithm: Algorithm,
    /// What the bar shows: the verify step's total time, or an allreduce's median.
    pub time_ns: f64,
    /// Median time of one allreduce.
    pub p50_ns: f64,
    /// The same figure measured on hardware, if a measurement matches.
    pub measured_ns: Option<f64>,
    pub run: Run,
}

/// The result of the scenario job.
#[derive(Clone, Debug)]
pub struct SimResults {
    /// `verify step: 122 × 42 KiB` or `allreduce 64 KiB`.
    pub workload: String,
    pub fidelity: Fidelity,
    pub placement: Placement,
    /// `step time` or `allreduce p50`.
    pub metric: &'static str,
    pub rank_names: Vec<String>,
    pub rows: Vec<AlgResult>,
    /// Index into `rows`.
    pub winner: usize,
    /// Measured series without a simulated twin (NCCL), with their figure.
    pub measured_extra: Vec<(String, f64)>,
}

impl SimResults {
    pub fn winner(&self) -> &AlgResult {
        &self.rows[self.winner]
    }
    pub fn row(&self, a: Algorithm) -> Option<&AlgResult> {
        self.rows.iter().find(|r| r.algorithm == a)
    }
}

/// Where the winner changes along the sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Crossover {
    /// The first size at which `to` wins.
    pub size: Bytes,
    pub from: Algorithm,
    pub to: Algorithm,
}

/// The result of the sweep job: median allreduce time per algorithm and size.
#[derive(Clone, Debug, Default)]
pub struct SweepResults {
    pub sizes: Vec<Bytes>,
    /// Per algorithm, ns per size (NaN where a run is missing).
    pub series: Vec<(Algorithm, Vec<f64>)>,
    pub winners: Vec<Option<Algorithm>>,
    pub crossovers: Vec<Crossover>,
    /// Measured allreduce points per series (algorithm name or `nccl`).
    pub measured: Vec<(String, Vec<(Bytes, f64)>)>,
}

/// Everything the screen shows.
#[derive(Debug)]
pub struct App {
    pub(crate) base: Scenario,
    pub(crate) params: Arc<ModelParams>,
    pub(crate) measurements: Vec<ResultRecord>,
    pub(crate) show_measured: bool,
    pub(crate) chmap: ChannelMap,
    pub(crate) rows: Vec<Row>,
    pub(crate) sel_row: usize,
    pub(crate) on_link: bool,
    pub(crate) focus: Focus,
    pub(crate) field: usize,
    pub(crate) workloads: Vec<WorkloadChoice>,
    pub(crate) workload: usize,
    verify: VerifyStep,
    allreduce_tpl: (Dtype, u32, Picos, Skew),
    pub(crate) rank_sets: Vec<(String, Vec<NodeIdx>)>,
    pub(crate) ranks: usize,
    pub(crate) alg_sets: Vec<(String, Vec<Algorithm>)>,
    pub(crate) algs: usize,
    pub(crate) placement: Placement,
    pub(crate) fidelity: Fidelity,
    pub(crate) tab: Tab,
    pub(crate) sel_alg: Option<Algorithm>,
    pub(crate) help: bool,
    quit: bool,
    next_id: u64,
    pub(crate) sim_job: JobState,
    pub(crate) sweep_job: JobState,
    sim_sc: Option<Arc<Scenario>>,
    sweep_sc: Option<Arc<Scenario>>,
    pub(crate) sim: Option<SimResults>,
    pub(crate) sweep: Option<SweepResults>,
    sweep_sizes: Vec<Bytes>,
    worker: Box<dyn Worker>,
    pub(crate) frame: u64,
    pub(crate) notice: Option<String>,
}

/// How the app starts, beyond the scenario.
#[derive(Clone, Debug)]
pub struct AppOptions {
    /// Sizes of the latency-vs-size sweep.
    pub sweep_sizes: Vec<Bytes>,
    /// Fidelity to start with (flow unless the scenario lists only TLP).
    pub fidelity: Option<Fidelity>,
}

impl Default for AppOptions {
    fn default() -> Self {
        AppOptions {
            sweep_sizes: default_sweep_sizes(),
            fidelity: None,
        }
    }
}

impl App {
    /// The app for a scenario; submits the scenario and the sweep to `worker`.
    pub fn new(
        base: Scenario,
        params: ModelParams,
        measurements: Vec<ResultRecord>,
        worker: Box<dyn Worker>,
    ) -> App {
        App::with_options(base, params, measurements, worker, AppOptions::default())
    }

    pub fn with_options(
        base: Scenario,
        params: ModelParams,
        measurements: Vec<ResultRecord>,
        worker: Box<dyn Worker>,
        opts: AppOptions,
    ) -> App {
        let topo = base.topology();
        // The embedded default's verify step (with its compute gap and skew).
        let default_verify = match default_scenario(None).map(|s| s.workload().clone()) {
            Ok(Workload::VerifyStep(v)) => v,
            _ => VerifyStep {
                gap: Picos::from_us(20),
                ..VerifyStep::default()
            },
        };
        let mut notice = None;
        let (verify, allreduce_tpl, mut sizes, start_verify) = match base.workload() {
            Workload::VerifyStep(v) => (*v, (0u32, v.dtype, v.gap, v.skew), vec![], true),
            Workload::Allreduce {
                sizes,
                dtype,
                repeats,
                gap,
                skew,
            } => (
                default_verify,
                (*repeats, *dtype, *gap, *skew),
                sizes.clone(),
                false,
            ),
            Workload::Transfer { .. } => {
                notice = Some(
                    "transfer scenarios are not explored here: showing the verify step".to_string(),
                );
                (
                    default_verify,
                    (0u32, Dtype::Bf16, default_verify.gap, default_verify.skew),
                    vec![],
                    true,
                )
            }
        };
        let repeats = if allreduce_tpl.0 == 0 {
            3
        } else {
            allreduce_tpl.0
        };
        let first_size = sizes.first().copied();
        sizes.extend(default_sweep_sizes());
        let sizes: BTreeSet<Bytes> = sizes.into_iter().filter(|b| b.0 > 0).collect();
        let mut workloads = vec![WorkloadChoice::Verify];
        workloads.extend(sizes.into_iter().map(WorkloadChoice::Allreduce));
        let workload = match (start_verify, first_size) {
            (false, Some(s)) => workloads
                .iter()
                .position(|w| *w == WorkloadChoice::Allreduce(s))
                .unwrap_or(0),
            _ => 0,
        };
        let fidelity = opts.fidelity.unwrap_or(
            if base.fidelities().contains(&Fidelity::Flow) || base.fidelities().is_empty() {
                Fidelity::Flow
            } else {
                Fidelity::Tlp
            },
        );
        let rows = tree::rows(topo);
        let sel_row = rows.iter().position(Row::selectable).unwrap_or(0);
        let mut app = App {
            chmap: ChannelMap::new(topo),
            rank_sets: rank_sets(topo, base.ranks()),
            alg_sets: alg_sets(base.algorithms()),
            placement: base
                .placements()
                .first()
                .copied()
                .unwrap_or(Placement::Peer),
            rows,
            sel_row,
            on_link: false,
            focus: Focus::Topology,
            field: 0,
            workloads,
            workload,
            verify,
            allreduce_tpl: (allreduce_tpl.1, repeats, allreduce_tpl.2, allreduce_tpl.3),
            ranks: 0,
            algs: 0,
            fidelity,
            tab: Tab::Times,
            sel_alg: None,
            help: false,
            quit: false,
            next_id: 1,
            sim_job: JobState::default(),
            sweep_job: JobState::default(),
            sim_sc: None,
            sweep_sc: None,
            sim: None,
            sweep: None,
            sweep_sizes: opts.sweep_sizes,
            worker,
            frame: 0,
            notice,
            show_measured: !measurements.is_empty(),
            measurements,
            params: Arc::new(params),
            base,
        };
        app.submit(JobKind::Scenario);
        app.submit(JobKind::Sweep);
        app
    }

    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Whether a simulation is running (the screen shows a spinner).
    pub fn is_busy(&self) -> bool {
        self.sim_job.running || self.sweep_job.running
    }

    pub fn topology(&self) -> &Topology {
        self.base.topology()
    }

    /// Takes what the worker produced since the last call.
    pub fn poll_worker(&mut self) {
        for m in self.worker.poll() {
            self.apply(m);
        }
    }

    /// Advances the spinner (the event loop calls this on every wake-up).
    pub fn on_tick(&mut self) {
        self.frame = self.frame.wrapping_add(1);
    }

    /// The scenario the controls describe.
    pub fn current_scenario(&self) -> Result<Scenario, ScenarioError> {
        let mut spec = self.base.spec();
        spec.ranks = self
            .rank_sets
            .get(self.ranks)
            .map(|r| r.1.clone())
            .unwrap_or_else(|| self.base.ranks().to_vec());
        spec.algorithms = self
            .alg_sets
            .get(self.algs)
            .map(|a| a.1.clone())
            .unwrap_or_else(|| Algorithm::ALL.to_vec());
        spec.placements = vec![self.placement];
        spec.fidelities = vec![self.fidelity];
        let (dtype, repeats, gap, skew) = self.allreduce_tpl;
        spec.workload = match self
            .workloads
            .get(self.workload)
            .copied()
            .unwrap_or(WorkloadChoice::Verify)
        {
            WorkloadChoice::Verify => Workload::VerifyStep(self.verify),
            WorkloadChoice::Allreduce(s) => Workload::Allreduce {
                sizes: vec![s],
                dtype,
                repeats,
                gap,
                skew,
            },
        };
        Scenario::new(spec)
    }

    fn sweep_scenario(&self) -> Result<Scenario, ScenarioError> {
        let mut spec = self.current_scenario()?.spec();
        let (dtype, repeats, gap, skew) = self.allreduce_tpl;
        spec.fidelities = vec![Fidelity::Flow];
        spec.workload = Workload::Allreduce {
            sizes: self.sweep_sizes.clone(),
            dtype,
            repeats,
            gap,
            skew,
        };
        Scenario::new(spec)
    }

    fn submit(&mut self, kind: JobKind) {
        let (sc, fidelity) = match kind {
            JobKind::Scenario => (self.current_scenario(), self.fidelity),
            JobKind::Sweep => (self.sweep_scenario(), Fidelity::Flow),
        };
        let id = self.next_id;
        self.next_id += 1;
        let sc = match sc {
            Ok(sc) => Arc::new(sc),
            Err(e) => {
                let st = JobState {
                    id,
                    running: false,
                    done: 0,
                    total: 0,
                    error: Some(e.to_string()),
                };
                *self.job_mut(kind) = st;
                return;
            }
        };
        let total = contend_sim::runs_of(&sc, &[fidelity]).len();
        let state = JobState {
            id,
            running: true,
            done: 0,
            total,
            error: None,
        };
        match kind {
            JobKind::Scenario => {
                self.sim_job = state;
                self.sim_sc = Some(sc.clone());
            }
            JobKind::Sweep => {
                self.sweep_job = state;
                self.sweep_sc = Some(sc.clone());
            }
        }
        self.worker.submit(Job {
            id,
            kind,
            scenario: sc,
            params: self.params.clone(),
            fidelity,
        });
    }

    /// Applies one worker message (stale ones are dropped).
    pub fn apply(&mut self, m: WorkerMsg) {
        match m {
            WorkerMsg::Progress {
                kind,
                id,
                done,
                total,
            } => {
                let st = self.job_mut(kind);
                if st.id == id && st.running {
                    st.done = done;
                    st.total = total;
                }
            }
            WorkerMsg::Done { kind, id, result } => {
                if self.job_mut(kind).id != id {
                    return;
                }
                let st = self.job_mut(kind);
                st.running = false;
                st.done = st.total;
                match result {
                    Err(e) => st.error = Some(e),
                    Ok(runs) => {
                        st.error = None;
                        match kind {
                            JobKind::Scenario => {
                                if let Some(sc) = self.sim_sc.clone() {
                                    self.sim = Some(self.sim_results(&sc, runs));
                                }
                            }
                            JobKind::Sweep => {
                                if let Some(sc) = self.sweep_sc.clone() {
                                    self.sweep = Some(self.sweep_results(&sc, runs));
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    fn job_mut(&mut self, kind: JobKind) -> &mut JobState {
        match kind {
            JobKind::Scenario => &mut self.sim_job,
            JobKind::Sweep => &mut self.sweep_job,
        }
    }

    fn sim_results(&self, sc: &Scenario, runs: Vec<Run>) -> SimResults {
        let (workload, metric, size, kind) = match sc.workload() {
            Workload::VerifyStep(v) => {
                let size = v.size();
                (
                    format!("verify step: {} × {size}", v.allreduces()),
                    "step time",
                    size,
                    WorkloadKind::VerifyStep,
                )
            }
            Workload::Allreduce { sizes, .. } => {
                let s = sizes.first().copied().unwrap_or_default();
                (
                    format!("allreduce {s}"),
                    "allreduce p50",
                    s,
                    WorkloadKind::Allreduce,
                )
            }
            Workload::Transfer { .. } => (
                "transfer".to_string(),
                "time",
                Bytes::ZERO,
                WorkloadKind::Transfer,
            ),
        };
        let verify = kind == WorkloadKind::VerifyStep;
        let key = MeasureKey {
            workload: kind,
            ranks: sc.ranks().len(),
            placement: self.placement_of(sc),
        };
        let measured: Vec<&ResultRecord> = self
            .measurements
            .iter()
            .filter(|r| matches(r, &key) && r.size_bytes == size.0)
            .collect();
        let figure = |r: &ResultRecord| {
            if verify {
                r.total_ns
            } else {
                r.stats.median_ns
            }
        };
        let measured_of = |name: &str| -> Option<f64> {
            let v: Vec<f64> = measured
                .iter()
                .filter(|r| series_name(r) == name)
                .map(|r| figure(r))
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let rows: Vec<AlgResult> = runs
            .into_iter()
            .filter(|r| !r.records.is_empty())
            .filter_map(|run| {
                let a = run.spec.algorithm?;
                let rec = run.record();
                let time_ns = if verify {
                    rec.total_ns
                } else {
                    rec.stats.median_ns
                };
                Some(AlgResult {
                    algorithm: a,
                    time_ns,
                    p50_ns: rec.stats.median_ns,
                    measured_ns: measured_of(a.name()),
                    run,
                })
            })
            .collect();
        let winner = rows
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.time_ns.total_cmp(&b.1.time_ns))
            .map(|(i, _)| i)
            .unwrap_or(0);
        let names: BTreeSet<String> = measured.iter().map(|r| series_name(r)).collect();
        let measured_extra = names
            .into_iter()
            .filter(|n| !rows.iter().any(|r| r.algorithm.name() == n))
            .filter_map(|n| measured_of(&n).map(|v| (n, v)))
            .collect();
        SimResults {
            workload,
            fidelity: sc.fidelities().first().copied().unwrap_or(Fidelity::Flow),
            placement: self.placement_of(sc),
            metric,
            rank_names: sc.rank_names(),
            rows,
            winner,
            measured_extra,
        }
    }

    fn placement_of(&self, sc: &Scenario) -> Placement {
        sc.placements().first().copied().unwrap_or(self.placement)
    }

    fn sweep_results(&self, sc: &Scenario, runs: Vec<Run>) -> SweepResults {
        let sizes = match sc.workload() {
            Workload::Allreduce { sizes, .. } => sizes.clone(),
            _ => vec![],
        };
        let series: Vec<(Algorithm, Vec<f64>)> = sc
            .algorithms()
            .iter()
            .map(|&a| {
                let v = sizes
                    .iter()
                    .map(|s| {
                        runs.iter()
                            .find(|r| {
                                r.spec.algorithm == Some(a)
                                    && r.spec.size == Some(*s)
                                    && !r.records.is_empty()
                            })
                            .map_or(f64::NAN, |r| r.record().stats.median_ns)
                    })
                    .collect();
                (a, v)
            })
            .collect();
        let winners: Vec<Option<Algorithm>> = (0..sizes.len())
            .map(|i| {
                series
                    .iter()
                    .filter(|(_, v)| v[i].is_finite())
                    .min_by(|a, b| a.1[i].total_cmp(&b.1[i]))
                    .map(|(a, _)| *a)
            })
            .collect();
        let mut crossovers = vec![];
        for i in 1..sizes.len() {
            if let (Some(from), Some(to)) = (winners[i - 1], winners[i])
                && from != to
            {
                crossovers.push(Crossover {
                    size: sizes[i],
                    from,
                    to,
                });
            }
        }
        let key = MeasureKey {
            workload: WorkloadKind::Allreduce,
            ranks: sc.ranks().len(),
            placement: self.placement_of(sc),
        };
        let mut measured: Vec<(String, Vec<(Bytes, f64)>)> = vec![];
        for r in self.measurements.iter().filter(|r| matches(r, &key)) {
            let name = series_name(r);
            let p = (Bytes(r.size_bytes), r.stats.median_ns);
            match measured.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => v.push(p),
                None => measured.push((name, vec![p])),
            }
        }
        SweepResults {
            sizes,
            series,
            winners,
            crossovers,
            measured,
        }
    }

    // ----- reading helpers for drawing -----------------------------------

    /// The algorithm whose timeline and link use are shown: the chosen one,
    /// else the winner.
    pub fn shown_algorithm(&self) -> Option<Algorithm> {
        let sim = self.sim.as_ref()?;
        match self.sel_alg {
            Some(a) if sim.row(a).is_some() => Some(a),
            _ => sim.rows.get(sim.winner).map(|r| r.algorithm),
        }
    }

    pub fn shown_run(&self) -> Option<&AlgResult> {
        let a = self.shown_algorithm()?;
        self.sim.as_ref()?.row(a)
    }

    /// Link and fabric use of the shown run.
    pub fn heat(&self) -> Option<Heat> {
        self.shown_run()
            .map(|r| self.chmap.heat(&r.run.utilisation))
    }

    pub fn selected(&self) -> Selected {
        match self.rows.get(self.sel_row).map(|r| &r.kind) {
            Some(RowKind::Socket(s)) => Selected::Socket(*s),
            Some(RowKind::Node { node, uplink }) => match uplink {
                Some(l) if self.on_link => Selected::Link(*l),
                _ => Selected::Node(*node),
            },
            Some(RowKind::Link(l)) => Selected::Link(*l),
            Some(RowKind::Heading(_)) | None => Selected::Nothing,
        }
    }

    pub fn measured_count(&self) -> usize {
        self.measurements.len()
    }

    // ----- keys ------------------------------------------------------------

    /// Changes state for one key; may submit jobs to the worker. Never panics.
    pub fn handle_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL)
            && matches!(key.code, KeyCode::Char('c' | 'C'))
        {
            self.quit = true;
            return;
        }
        if self.help {
            match key.code {
                KeyCode::Char('q') => self.quit = true,
                KeyCode::Char('?') | KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) => {
                    self.help = false
                }
                _ => {}
            }
            return;
        }
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('?') | KeyCode::F(1) => self.help = true,
            KeyCode::Tab => self.focus = next_focus(self.focus, 1),
            KeyCode::BackTab => self.focus = next_focus(self.focus, -1),
            KeyCode::Char(c @ '1'..='4') => self.tab = TABS[(c as u8 - b'1') as usize],
            KeyCode::Char('w') => self.change(Field::Workload, 1),
            KeyCode::Char('W') => self.change(Field::Workload, -1),
            KeyCode::Char('v') if self.workload != 0 => {
                self.workload = 0;
                self.submit(JobKind::Scenario);
            }
            KeyCode::Char('r') => self.change(Field::Ranks, 1),
            KeyCode::Char('R') => self.change(Field::Ranks, -1),
            KeyCode::Char('a') => self.change(Field::Algorithms, 1),
            KeyCode::Char('A') => self.change(Field::Algorithms, -1),
            KeyCode::Char('p' | 'P') => self.change(Field::Placement, 1),
            KeyCode::Char('t' | 'T' | 'f' | 'F') => self.change(Field::Fidelity, 1),
            KeyCode::Char(']') => self.step_algorithm(1),
            KeyCode::Char('[') => self.step_algorithm(-1),
            KeyCode::Char('m' | 'M') => {
                self.show_measured = !self.show_measured && !self.measurements.is_empty()
            }
            KeyCode::Enter => self.submit(JobKind::Scenario),
            KeyCode::Up
            | KeyCode::Down
            | KeyCode::Left
            | KeyCode::Right
            | KeyCode::PageUp
            | KeyCode::PageDown
            | KeyCode::Home
            | KeyCode::End => self.arrow(key.code),
            _ => {}
        }
    }

    fn arrow(&mut self, code: KeyCode) {
        match self.focus {
            Focus::Topology => match code {
                KeyCode::Up => self.move_row(-1),
                KeyCode::Down => self.move_row(1),
                KeyCode::PageUp => self.move_row(-10),
                KeyCode::PageDown => self.move_row(10),
                KeyCode::Home => self.move_row(-(self.rows.len() as isize)),
                KeyCode::End => self.move_row(self.rows.len() as isize),
                KeyCode::Right => {
                    if matches!(
                        self.rows.get(self.sel_row).map(|r| &r.kind),
                        Some(RowKind::Node {
                            uplink: Some(_),
                            ..
                        })
                    ) {
                        self.on_link = true;
                    }
                }
                KeyCode::Left => self.on_link = false,
                _ => {}
            },
            Focus::Scenario => match code {
                KeyCode::Left => self.field = (self.field + FIELDS.len() - 1) % FIELDS.len(),
                KeyCode::Right => self.field = (self.field + 1) % FIELDS.len(),
                KeyCode::Up | KeyCode::PageUp => self.change(FIELDS[self.field], 1),
                KeyCode::Down | KeyCode::PageDown => self.change(FIELDS[self.field], -1),
                KeyCode::Home => self.field = 0,
                KeyCode::End => self.field = FIELDS.len() - 1,
                _ => {}
            },
            Focus::Results => match code {
                KeyCode::Left => {
                    self.tab = TABS[(tab_index(self.tab) + TABS.len() - 1) % TABS.len()]
                }
                KeyCode::Right => self.tab = TABS[(tab_index(self.tab) + 1) % TABS.len()],
                KeyCode::Up | KeyCode::PageUp => self.step_algorithm(-1),
                KeyCode::Down | KeyCode::PageDown => self.step_algorithm(1),
                KeyCode::Home => self.tab = TABS[0],
                KeyCode::End => self.tab = TABS[TABS.len() - 1],
                _ => {}
            },
        }
    }

    fn move_row(&mut self, by: isize) {
        let sel: Vec<usize> = (0..self.rows.len())
            .filter(|i| self.rows[*i].selectable())
            .collect();
        if sel.is_empty() {
            return;
        }
        let cur = sel.iter().position(|i| *i >= self.sel_row).unwrap_or(0) as isize;
        let next = (cur + by).clamp(0, sel.len() as isize - 1) as usize;
        self.sel_row = sel[next];
        match &self.rows[self.sel_row].kind {
            RowKind::Node { uplink: None, .. } | RowKind::Socket(_) => self.on_link = false,
            _ => {}
        }
    }

    fn step_algorithm(&mut self, by: isize) {
        let Some(sim) = &self.sim else { return };
        let n = sim.rows.len() as isize;
        if n == 0 {
            return;
        }
        let cur = self
            .shown_algorithm()
            .and_then(|a| sim.rows.iter().position(|r| r.algorithm == a))
            .unwrap_or(0) as isize;
        self.sel_alg = Some(sim.rows[(cur + by).rem_euclid(n) as usize].algorithm);
    }

    /// Steps one control and re-runs what depends on it.
    fn change(&mut self, f: Field, by: isize) {
        let step =
            |cur: usize, n: usize| (cur as isize + by).rem_euclid(n.max(1) as isize) as usize;
        match f {
            Field::Workload => {
                self.workload = step(self.workload, self.workloads.len());
                self.submit(JobKind::Scenario);
            }
            Field::Ranks => {
                self.ranks = step(self.ranks, self.rank_sets.len());
                self.submit(JobKind::Scenario);
                self.submit(JobKind::Sweep);
            }
            Field::Algorithms => {
                self.algs = step(self.algs, self.alg_sets.len());
                self.submit(JobKind::Scenario);
                self.submit(JobKind::Sweep);
            }
            Field::Placement => {
                let i = Placement::ALL
                    .iter()
                    .position(|p| *p == self.placement)
                    .unwrap_or(0);
                self.placement = Placement::ALL[step(i, Placement::ALL.len())];
                self.submit(JobKind::Scenario);
                self.submit(JobKind::Sweep);
            }
            Field::Fidelity => {
                self.fidelity = if self.fidelity == Fidelity::Flow {
                    Fidelity::Tlp
                } else {
                    Fidelity::Flow
                };
                self.submit(JobKind::Scenario);
            }
        }
    }

    // ----- labels for the controls ------------------------------------------

    pub fn field_value(&self, f: Field) -> String {
        match f {
            Field::Workload => match self.workloads.get(self.workload) {
                Some(WorkloadChoice::Allreduce(s)) => format!("allreduce {s}"),
                _ => {
                    let v = &self.verify;
                    format!("verify step {}×{}", v.allreduces(), v.size())
                }
            },
            Field::Ranks => self
                .rank_sets
                .get(self.ranks)
                .map(|r| r.0.clone())
                .unwrap_or_default(),
            Field::Algorithms => self
                .alg_sets
                .get(self.algs)
                .map(|r| r.0.clone())
                .unwrap_or_default(),
            Field::Placement => self.placement.name().to_string(),
            Field::Fidelity => match self.fidelity {
                Fidelity::Flow => "flow".to_string(),
                Fidelity::Tlp => "TLP (slow)".to_string(),
            },
        }
    }
}

fn tab_index(t: Tab) -> usize {
    TABS.iter().position(|x| *x == t).unwrap_or(0)
}

fn next_focus(f: Focus, by: isize) -> Focus {
    const ALL: [Focus; 3] = [Focus::Topology, Focus::Scenario, Focus::Results];
    let i = ALL.iter().position(|x| *x == f).unwrap_or(0) as isize;
    ALL[(i + by).rem_euclid(3) as usize]
}

/// Rank sets to cycle through: all GPUs, each switch's and socket's GPUs,
/// a pair under one parent and a pair across sockets.
fn rank_sets(topo: &Topology, base: &[NodeIdx]) -> Vec<(String, Vec<NodeIdx>)> {
    let gpus = topo.gpus();
    let mut v: Vec<(String, Vec<NodeIdx>)> = vec![];
    let id = |n: NodeIdx| topo.node(n).id.0.clone();
    if base != gpus.as_slice() && !base.is_empty() {
        v.push((format!("scenario's {}", base.len()), base.to_vec()));
    }
    v.push((format!("all {}", gpus.len()), gpus.clone()));
    let mut groups: Vec<(String, Vec<NodeIdx>)> = vec![];
    for &g in &gpus {
        if let Some(sw) = topo.parent_switch(g) {
            let name = format!("{} ({})", id(sw), "switch");
            match groups.iter_mut().find(|(n, _)| *n == name) {
                Some((_, m)) => m.push(g),
                None => groups.push((name, vec![g])),
            }
        }
    }
    let sockets: BTreeSet<u32> = gpus.iter().filter_map(|g| topo.socket_of(*g)).collect();
    for s in &sockets {
        let m: Vec<NodeIdx> = gpus
            .iter()
            .copied()
            .filter(|g| topo.socket_of(*g) == Some(*s))
            .collect();
        groups.push((format!("socket {s}"), m));
    }
    for (name, m) in groups {
        if m.len() >= 2 && m.len() < gpus.len() {
            v.push((
                format!("{} ({})", name.replace(" (switch)", ""), m.len()),
                m,
            ));
        }
    }
    if gpus.len() > 2 {
        v.push((
            format!("{}+{}", id(gpus[0]), id(gpus[1])),
            gpus[..2].to_vec(),
        ));
    }
    if sockets.len() >= 2 {
        let pair: Vec<NodeIdx> = sockets
            .iter()
            .filter_map(|s| {
                gpus.iter()
                    .copied()
                    .find(|g| topo.socket_of(*g) == Some(*s))
            })
            .take(2)
            .collect();
        if pair.len() == 2 {
            v.push((format!("{}+{}", id(pair[0]), id(pair[1])), pair));
        }
    }
    let mut seen: Vec<Vec<NodeIdx>> = vec![];
    v.retain(|(_, m)| {
        if seen.contains(m) {
            false
        } else {
            seen.push(m.clone());
            true
        }
    });
    v
}

/// Algorithm sets to cycle through: all, the custom kernels, one- and
/// two-shot, then each algorithm alone.
fn alg_sets(base: &[Algorithm]) -> Vec<(String, Vec<Algorithm>)> {
    let mut v: Vec<(String, Vec<Algorithm>)> = vec![];
    if base != Algorithm::ALL && !base.is_empty() {
        v.push((format!("scenario's {}", base.len()), base.to_vec()));
    }
    v.push((
        format!("all {}", Algorithm::ALL.len()),
        Algorithm::ALL.to_vec(),
    ));
    let custom: Vec<Algorithm> = Algorithm::ALL
        .iter()
        .copied()
        .filter(|a| a.has_custom_kernel())
        .collect();
    v.push((format!("custom kernels {}", custom.len()), custom));
    v.push((
        "one- vs two-shot 4".to_string(),
        vec![
            Algorithm::OneShotPull,
            Algorithm::OneShotPush,
            Algorithm::TwoShotPull,
            Algorithm::TwoShotPush,
        ],
    ));
    for a in Algorithm::ALL {
        v.push((a.name().to_string(), vec![*a]));
    }
    let mut seen: Vec<Vec<Algorithm>> = vec![];
    v.retain(|(_, m)| {
        if seen.contains(m) {
            false
        } else {
            seen.push(m.clone());
            true
        }
    });
    v
}
