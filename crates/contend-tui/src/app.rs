//! The app's state and the only code that changes it: key handling and the
//! results the worker sends back. Drawing (`ui/`) only reads it.
//!
//! The state is a few named parts: the scenario [`Controls`], the topology
//! [`TreeState`], what the screen looks at ([`View`]), the [`Jobs`] handed to
//! the worker, their [`Results`] and the measured [`Overlay`].

use crate::controls::{Controls, FIELDS, Field};
use crate::heat::{ChannelMap, Heat};
use crate::jobs::Jobs;
use crate::measure::{MeasureKey, Overlay};
use crate::results::{AlgResult, Results, SimResults, SweepResults};
use crate::tree::{Selected, TreeState};
use crate::variant_run::variant_runs_for;
use crate::worker::{Job, JobKind, Worker, WorkerMsg};
use contend_sim::ModelParams;
use contend_topo::{Bytes, Topology};
use contend_workload::{Algorithm, Fidelity, ResultRecord, Scenario, ScenarioError, Workload};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::sync::Arc;

/// Which pane the arrow keys act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Topology,
    Scenario,
    Results,
}

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

/// What the screen looks at.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    /// The pane the arrow keys act on.
    pub focus: Focus,
    /// The results view shown.
    pub tab: Tab,
    /// Whether the help overlay is open.
    pub help: bool,
    /// The algorithm chosen for the timeline and the tree (`[` `]`); the
    /// winner is shown while none is chosen or the choice has no result.
    pub chosen: Option<Algorithm>,
}

impl Default for View {
    fn default() -> Self {
        View {
            focus: Focus::Topology,
            tab: Tab::Times,
            help: false,
            chosen: None,
        }
    }
}

/// Everything the screen shows.
#[derive(Debug)]
pub struct App {
    pub(crate) base: Scenario,
    pub(crate) params: Arc<ModelParams>,
    pub(crate) chmap: ChannelMap,
    pub(crate) controls: Controls,
    pub(crate) tree: TreeState,
    pub(crate) view: View,
    pub(crate) jobs: Jobs,
    pub(crate) results: Results,
    pub(crate) overlay: Overlay,
    worker: Box<dyn Worker>,
    quit: bool,
    /// Counts wake-ups of the event loop: the spinner's frame.
    pub(crate) frame: u64,
    /// A note on how the scenario was taken (a transfer scenario is not).
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
            sweep_sizes: crate::controls::default_sweep_sizes(),
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
        let notice = matches!(base.workload(), Workload::Transfer { .. }).then(|| {
            "transfer scenarios are not explored here: showing the verify step".to_string()
        });
        let mut app = App {
            chmap: ChannelMap::new(base.topology()),
            controls: Controls::new(&base, opts.fidelity, opts.sweep_sizes),
            tree: TreeState::new(base.topology()),
            view: View::default(),
            jobs: Jobs::default(),
            results: Results::default(),
            overlay: Overlay::new(measurements),
            worker,
            quit: false,
            frame: 0,
            notice,
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
        self.jobs.busy()
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
        self.controls.scenario(&self.base)
    }

    fn submit(&mut self, kind: JobKind) {
        let (sc, fidelity) = match kind {
            JobKind::Scenario => (self.current_scenario(), self.controls.fidelity),
            JobKind::Sweep => (self.controls.sweep_scenario(&self.base), Fidelity::Flow),
        };
        // The scenario again in every variant a measurement to lay over it
        // was taken in (launch mode, NCCL's path, no gap), when the
        // scenario itself runs another.
        let variant_runs = sc.and_then(|sc| {
            let placement = sc
                .placements()
                .first()
                .copied()
                .unwrap_or(self.controls.placement);
            let key = MeasureKey {
                workload: sc.workload().kind(),
                ranks: sc.ranks().len(),
                placement,
            };
            let size = match (kind, sc.workload()) {
                (JobKind::Scenario, Workload::VerifyStep(v)) => Some(v.size().0),
                (JobKind::Scenario, Workload::Allreduce { sizes, .. }) => {
                    Some(sizes.first().copied().unwrap_or_default().0)
                }
                _ => None,
            };
            let variant_runs = variant_runs_for(&sc, &self.overlay, &key, size)?;
            Ok((Arc::new(sc), variant_runs))
        });
        let (sc, variant_runs) = match variant_runs {
            Ok(x) => x,
            Err(e) => {
                self.jobs.refuse(kind, e.to_string());
                return;
            }
        };
        let job = Job {
            id: 0,
            kind,
            scenario: sc.clone(),
            params: self.params.clone(),
            fidelity,
            variant_runs,
        };
        let id = self.jobs.start(kind, sc, job.total());
        self.worker.submit(Job { id, ..job });
    }

    /// Applies one worker message (stale ones are dropped).
    pub fn apply(&mut self, m: WorkerMsg) {
        match m {
            WorkerMsg::Progress {
                kind,
                id,
                done,
                total,
            } => self.jobs.progress(kind, id, done, total),
            WorkerMsg::Done { kind, id, result } => {
                if !self.jobs.is_latest(kind, id) {
                    return;
                }
                let out = match result {
                    Err(e) => {
                        self.jobs.finish(kind, Some(e.to_string()));
                        return;
                    }
                    Ok(out) => out,
                };
                let Some(sc) = self.jobs.finish(kind, None) else {
                    return;
                };
                // The placement the job ran (the scenario names exactly one).
                let placement = sc
                    .placements()
                    .first()
                    .copied()
                    .unwrap_or(self.controls.placement);
                match kind {
                    JobKind::Scenario => {
                        self.results.sim = Some(SimResults::new(&sc, out, &self.overlay, placement))
                    }
                    JobKind::Sweep => {
                        self.results.sweep =
                            Some(SweepResults::new(&sc, &out, &self.overlay, placement))
                    }
                }
            }
        }
    }

    // ----- reading helpers for drawing -----------------------------------

    /// The algorithm whose timeline and link use are shown: the chosen one,
    /// else the winner.
    pub fn shown_algorithm(&self) -> Option<Algorithm> {
        let sim = self.results.sim.as_ref()?;
        match self.view.chosen {
            Some(a) if sim.row(a).is_some() => Some(a),
            _ => sim.winner().map(|r| r.algorithm),
        }
    }

    pub fn shown_run(&self) -> Option<&AlgResult> {
        let a = self.shown_algorithm()?;
        self.results.sim.as_ref()?.row(a)
    }

    /// Link and fabric use of the shown run.
    pub fn heat(&self) -> Option<Heat> {
        self.shown_run()
            .map(|r| self.chmap.heat(&r.run.utilisation))
    }

    pub fn selected(&self) -> Selected {
        self.tree.selected()
    }

    /// The latest results of the scenario job and the sweep.
    pub fn results(&self) -> &Results {
        &self.results
    }

    pub fn measured_count(&self) -> usize {
        self.overlay.records.len()
    }

    /// What a scenario control shows.
    pub fn field_value(&self, f: Field) -> String {
        self.controls.value(f)
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
        if self.view.help {
            match key.code {
                KeyCode::Char('q') => self.quit = true,
                KeyCode::Char('?') | KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) => {
                    self.view.help = false
                }
                _ => {}
            }
            return;
        }
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('?') | KeyCode::F(1) => self.view.help = true,
            KeyCode::Tab => self.view.focus = next_focus(self.view.focus, 1),
            KeyCode::BackTab => self.view.focus = next_focus(self.view.focus, -1),
            KeyCode::Char(c @ '1'..='4') => self.view.tab = TABS[(c as u8 - b'1') as usize],
            KeyCode::Char('w') => self.change(Field::Workload, 1),
            KeyCode::Char('W') => self.change(Field::Workload, -1),
            KeyCode::Char('v') if self.controls.workload.index() != 0 => {
                // The first workload choice is always the verify step.
                self.controls.workload.select(0);
                self.submit(JobKind::Scenario);
            }
            KeyCode::Char('r') => self.change(Field::Ranks, 1),
            KeyCode::Char('R') => self.change(Field::Ranks, -1),
            KeyCode::Char('a') => self.change(Field::Algorithms, 1),
            KeyCode::Char('A') => self.change(Field::Algorithms, -1),
            KeyCode::Char('p' | 'P') => self.change(Field::Placement, 1),
            KeyCode::Char('t' | 'T' | 'f' | 'F') => self.change(Field::Fidelity, 1),
            KeyCode::Char('h') => self.change(Field::Hidden, 1),
            KeyCode::Char('H') => self.change(Field::Hidden, -1),
            KeyCode::Char('k') => self.change(Field::Tokens, 1),
            KeyCode::Char('K') => self.change(Field::Tokens, -1),
            KeyCode::Char('l') => self.change(Field::Layers, 1),
            KeyCode::Char('L') => self.change(Field::Layers, -1),
            KeyCode::Char('g' | 'G') => self.change(Field::Launch, 1),
            KeyCode::Char(']') => self.step_algorithm(1),
            KeyCode::Char('[') => self.step_algorithm(-1),
            KeyCode::Char('m' | 'M') => self.overlay.toggle(),
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
        let tab = tab_index(self.view.tab);
        match self.view.focus {
            Focus::Topology => {
                let all = self.tree.rows.len() as isize;
                match code {
                    KeyCode::Up => self.tree.move_by(-1),
                    KeyCode::Down => self.tree.move_by(1),
                    KeyCode::PageUp => self.tree.move_by(-10),
                    KeyCode::PageDown => self.tree.move_by(10),
                    KeyCode::Home => self.tree.move_by(-all),
                    KeyCode::End => self.tree.move_by(all),
                    KeyCode::Right => self.tree.select_link(),
                    KeyCode::Left => self.tree.select_node(),
                    _ => {}
                }
            }
            Focus::Scenario => {
                let field = self.controls.field;
                match code {
                    KeyCode::Left => self.controls.field = field.step(-1),
                    KeyCode::Right => self.controls.field = field.step(1),
                    KeyCode::Up | KeyCode::PageUp => self.change(field, 1),
                    KeyCode::Down | KeyCode::PageDown => self.change(field, -1),
                    KeyCode::Home => self.controls.field = FIELDS[0],
                    KeyCode::End => self.controls.field = FIELDS[FIELDS.len() - 1],
                    _ => {}
                }
            }
            Focus::Results => match code {
                KeyCode::Left => self.view.tab = TABS[(tab + TABS.len() - 1) % TABS.len()],
                KeyCode::Right => self.view.tab = TABS[(tab + 1) % TABS.len()],
                KeyCode::Up | KeyCode::PageUp => self.step_algorithm(-1),
                KeyCode::Down | KeyCode::PageDown => self.step_algorithm(1),
                KeyCode::Home => self.view.tab = TABS[0],
                KeyCode::End => self.view.tab = TABS[TABS.len() - 1],
                _ => {}
            },
        }
    }

    fn step_algorithm(&mut self, by: isize) {
        let Some(sim) = &self.results.sim else { return };
        let n = sim.rows.len() as isize;
        if n == 0 {
            return;
        }
        let cur = self
            .shown_algorithm()
            .and_then(|a| sim.rows.iter().position(|r| r.algorithm == a))
            .unwrap_or(0) as isize;
        self.view.chosen = Some(sim.rows[(cur + by).rem_euclid(n) as usize].algorithm);
    }

    /// Steps one control and re-runs what depends on it.
    fn change(&mut self, f: Field, by: isize) {
        self.controls.change(f, by);
        for kind in f.reruns() {
            self.submit(*kind);
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
