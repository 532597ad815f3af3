//! # contend-tui
//!
//! A terminal UI (ratatui + crossterm) to explore a machine and a scenario
//! and see where PCIe contention happens: the topology as a tree with every
//! link's generation, width and rate (hot links highlighted from the
//! simulated run), scenario controls (workload, ranks, algorithms,
//! placement, fidelity) that re-run the simulator on a worker thread, and
//! the results: time per algorithm with the winner named, latency against
//! size with the crossovers marked, link use, and a per-rank timeline of one
//! allreduce.
//!
//! The app follows ratatui's todo-list example: [`App::handle_key`] only
//! changes state (and may hand jobs to the [`Worker`]); drawing
//! ([`ui::draw`], or `impl Widget for &App`, one file of `ui/` per view)
//! only reads it. The state is in named parts ([`Controls`], [`TreeState`],
//! [`View`], [`Jobs`], [`Results`], [`Overlay`]); which algorithm wins is
//! always decided by `contend_workload::compare`. The worker is injected,
//! so tests run simulations inline and deterministically:
//!
//! ```
//! use contend_tui::{App, InlineWorker};
//! use contend_workload::default_scenario;
//! use crossterm::event::{KeyCode, KeyEvent};
//! use ratatui::{Terminal, backend::TestBackend};
//!
//! let sc = default_scenario(None).unwrap();
//! let mut app = App::new(sc, Default::default(), vec![], Box::new(InlineWorker::paused()));
//! app.handle_key(KeyEvent::from(KeyCode::Down));
//! let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
//! term.draw(|f| contend_tui::ui::draw(&app, f)).unwrap();
//! assert!(term.backend().to_string().contains("Topology"));
//! ```

mod app;
mod controls;
mod heat;
mod jobs;
mod measure;
mod results;
mod term;
mod tree;
pub mod ui;
mod variant_run;
mod worker;

pub use app::{App, AppOptions, Focus, TABS, Tab, View};
pub use controls::{
    AllreduceTemplate, Controls, Cycle, FIELDS, Field, RankSet, WorkloadChoice,
    default_sweep_sizes, rank_sets,
};
pub use heat::{Channel, ChannelMap, Heat, Level, level};
pub use jobs::{JobState, Jobs};
pub use measure::{
    MeasureError, NcclPath, Overlay, Shape, Variant, check_measurements, load_measurements,
    measurements_beside, parse_measurements,
};
pub use results::{
    AlgResult, Crossover, MeasuredFigure, MeasuredSeries, Results, SimResults, SweepResults,
    VariantSweep,
};
pub use term::{TuiError, install_panic_hook, restore, run};
pub use tree::{Row, RowKind, Selected, TreeState, link_label, node_label, rows};
pub use variant_run::{VariantRun, variant_scenario};
pub use worker::{
    InlineWorker, Job, JobError, JobKind, JobOutput, ThreadWorker, WORKER_THREAD_PREFIX, Worker,
    WorkerMsg, execute,
};
