//! Simulations off the UI thread. The app hands [`Job`]s to a [`Worker`] and
//! reads [`WorkerMsg`]s back; [`ThreadWorker`] runs them on background
//! threads (one lane for the scenario, one for the size sweep, so a sweep
//! never delays the main result), [`InlineWorker`] runs them on the caller's
//! thread when polled, so tests are synchronous and deterministic.

use crate::measure::Variant;
use crate::variant_run::VariantRun;
use contend_sim::{ModelParams, Run, SimError, runs_of, simulate_one};
use contend_workload::{Fidelity, Scenario};
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use thiserror::Error;

/// Threads the worker starts are named with this prefix (the panic hook
/// leaves the terminal alone for them: their panics become job errors).
pub const WORKER_THREAD_PREFIX: &str = "contend-tui-worker";

/// Which result a job produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// The scenario as set in the controls: one run per algorithm.
    Scenario,
    /// Every algorithm over a ladder of allreduce sizes at flow fidelity.
    Sweep,
}

impl JobKind {
    fn lane(self) -> usize {
        match self {
            JobKind::Scenario => 0,
            JobKind::Sweep => 1,
        }
    }
}

/// A batch of simulations: every run of `scenario` at `fidelity`.
#[derive(Clone, Debug)]
pub struct Job {
    /// Increases with every job the app submits; results of a job that a
    /// newer one of the same kind replaced are dropped.
    pub id: u64,
    pub kind: JobKind,
    pub scenario: Arc<Scenario>,
    pub params: Arc<ModelParams>,
    pub fidelity: Fidelity,
    /// The scenario again in the variants measurements were taken in
    /// (the crate's `variant_run` module), run after it at the same fidelity.
    pub variant_runs: Vec<VariantRun>,
}

impl Job {
    /// Runs the job makes: the scenario's, then every variant run's.
    pub fn total(&self) -> usize {
        std::iter::once(&self.scenario)
            .chain(self.variant_runs.iter().map(|t| &t.scenario))
            .map(|sc| runs_of(sc, &[self.fidelity]).len())
            .sum()
    }
}

/// What a job produced: the scenario's runs, and each variant run's.
#[derive(Debug, Default)]
pub struct JobOutput {
    pub runs: Vec<Run>,
    pub variant_runs: Vec<(Variant, Vec<Run>)>,
}

/// What a worker reports.
#[derive(Debug)]
pub enum WorkerMsg {
    Progress {
        kind: JobKind,
        id: u64,
        done: usize,
        total: usize,
    },
    Done {
        kind: JobKind,
        id: u64,
        result: Result<JobOutput, JobError>,
    },
}

/// Why a job produced nothing to show (the app shows the message).
#[derive(Debug, Error)]
pub enum JobError {
    /// A simulation refused or failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A simulation panicked (the panic's message).
    #[error("the simulator panicked: {0}")]
    Panicked(String),
    /// A re-run of the scenario in a measured variant failed.
    #[error("re-run in the measured {}: {error}", variant.label())]
    VariantRun {
        variant: Variant,
        error: Box<JobError>,
    },
}

/// Runs jobs somewhere and hands back what they produced.
pub trait Worker: fmt::Debug {
    /// Queues a job; a newer job of the same kind supersedes an older one.
    fn submit(&mut self, job: Job);
    /// Messages that arrived since the last call; never blocks for long.
    fn poll(&mut self) -> Vec<WorkerMsg>;
}

/// Runs every simulation of a job in order (the scenario's, then each
/// variant run's), reporting progress; stops early (returning `None`) when
/// `cancelled` says a newer job replaced it.
pub fn execute(
    job: &Job,
    progress: &mut dyn FnMut(usize, usize),
    cancelled: &dyn Fn() -> bool,
) -> Option<Result<JobOutput, JobError>> {
    let total = job.total();
    progress(0, total);
    let mut done = 0;
    let mut run_all = |sc: &Scenario| -> Option<Result<Vec<Run>, JobError>> {
        let specs = runs_of(sc, &[job.fidelity]);
        let mut runs = Vec::with_capacity(specs.len());
        for spec in specs {
            if cancelled() {
                return None;
            }
            let r = catch_unwind(AssertUnwindSafe(|| simulate_one(sc, &job.params, spec)));
            match r {
                Ok(Ok(run)) => runs.push(run),
                Ok(Err(e)) => return Some(Err(e.into())),
                Err(p) => {
                    let msg = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    return Some(Err(JobError::Panicked(msg)));
                }
            }
            done += 1;
            progress(done, total);
        }
        Some(Ok(runs))
    };
    let runs = match run_all(&job.scenario)? {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    let mut out = JobOutput {
        runs,
        variant_runs: Vec::with_capacity(job.variant_runs.len()),
    };
    for t in &job.variant_runs {
        match run_all(&t.scenario)? {
            Ok(r) => out.variant_runs.push((t.variant, r)),
            Err(e) => {
                return Some(Err(JobError::VariantRun {
                    variant: t.variant,
                    error: Box::new(e),
                }));
            }
        }
    }
    Some(Ok(out))
}

struct Lane {
    tx: Option<Sender<Job>>,
    latest: Arc<AtomicU64>,
    _handle: Option<JoinHandle<()>>,
}

/// Runs jobs on two background threads and returns results over a channel.
pub struct ThreadWorker {
    lanes: Vec<Lane>,
    rx: Receiver<WorkerMsg>,
}

impl fmt::Debug for ThreadWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadWorker")
            .field("lanes", &self.lanes.len())
            .finish()
    }
}

impl ThreadWorker {
    /// Starts the worker threads; fails only if the OS refuses a thread.
    pub fn start() -> std::io::Result<ThreadWorker> {
        let (out_tx, rx) = channel();
        let mut lanes = Vec::new();
        for name in ["scenario", "sweep"] {
            let (tx, jobs) = channel::<Job>();
            let latest = Arc::new(AtomicU64::new(0));
            let (l2, out) = (latest.clone(), out_tx.clone());
            let handle = std::thread::Builder::new()
                .name(format!("{WORKER_THREAD_PREFIX}-{name}"))
                .spawn(move || lane_loop(&jobs, &l2, &out))?;
            lanes.push(Lane {
                tx: Some(tx),
                latest,
                _handle: Some(handle),
            });
        }
        Ok(ThreadWorker { lanes, rx })
    }
}

fn lane_loop(jobs: &Receiver<Job>, latest: &AtomicU64, out: &Sender<WorkerMsg>) {
    while let Ok(mut job) = jobs.recv() {
        // Only the newest queued job matters.
        while let Ok(j) = jobs.try_recv() {
            job = j;
        }
        if latest.load(Ordering::SeqCst) != job.id {
            continue;
        }
        let (kind, id) = (job.kind, job.id);
        let mut gone = false;
        let result = execute(
            &job,
            &mut |done, total| {
                gone |= out
                    .send(WorkerMsg::Progress {
                        kind,
                        id,
                        done,
                        total,
                    })
                    .is_err()
            },
            &|| latest.load(Ordering::SeqCst) != id,
        );
        if let Some(result) = result
            && out.send(WorkerMsg::Done { kind, id, result }).is_err()
        {
            return;
        }
        if gone {
            return;
        }
    }
}

impl Worker for ThreadWorker {
    fn submit(&mut self, job: Job) {
        let lane = &mut self.lanes[job.kind.lane()];
        lane.latest.store(job.id, Ordering::SeqCst);
        if let Some(tx) = &lane.tx
            && tx.send(job).is_err()
        {
            lane.tx = None;
        }
    }
    fn poll(&mut self) -> Vec<WorkerMsg> {
        self.rx.try_iter().collect()
    }
}

impl Drop for ThreadWorker {
    fn drop(&mut self) {
        // Closing the queues ends the threads after their current run; they
        // are not joined, so quitting never waits for a long simulation.
        for l in &mut self.lanes {
            l.latest.store(u64::MAX, Ordering::SeqCst);
            l.tx = None;
        }
    }
}

/// Runs queued jobs on the caller's thread when polled (tests). A paused
/// worker keeps jobs queued, so the screen shows them as running.
#[derive(Debug, Default)]
pub struct InlineWorker {
    queue: VecDeque<Job>,
    paused: Rc<Cell<bool>>,
    submitted: Rc<Cell<usize>>,
}

impl InlineWorker {
    pub fn new() -> InlineWorker {
        InlineWorker::default()
    }
    /// A worker that queues jobs but runs none until unpaused.
    pub fn paused() -> InlineWorker {
        let w = InlineWorker::default();
        w.paused.set(true);
        w
    }
    /// Shared switch: set to true to stop running jobs, false to resume.
    pub fn pause_handle(&self) -> Rc<Cell<bool>> {
        self.paused.clone()
    }
    /// Shared count of the jobs submitted so far.
    pub fn submitted_handle(&self) -> Rc<Cell<usize>> {
        self.submitted.clone()
    }
}

impl Worker for InlineWorker {
    fn submit(&mut self, job: Job) {
        self.submitted.set(self.submitted.get() + 1);
        self.queue.retain(|j| j.kind != job.kind);
        self.queue.push_back(job);
    }
    fn poll(&mut self) -> Vec<WorkerMsg> {
        let mut out = Vec::new();
        if self.paused.get() {
            return out;
        }
        while let Some(job) = self.queue.pop_front() {
            let (kind, id) = (job.kind, job.id);
            if let Some(result) = execute(&job, &mut |_, _| {}, &|| false) {
                out.push(WorkerMsg::Done { kind, id, result });
            }
        }
        out
    }
}
