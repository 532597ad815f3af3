//! Where the latest job of each kind stands, and the scenario it runs, so
//! that what a superseded job sends back is dropped.

use crate::worker::JobKind;
use contend_workload::Scenario;
use std::sync::Arc;

/// Where a job of one kind stands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobState {
    pub id: u64,
    pub running: bool,
    pub done: usize,
    pub total: usize,
    pub error: Option<String>,
}

/// The latest scenario job and size-sweep job.
#[derive(Clone, Debug)]
pub struct Jobs {
    next_id: u64,
    pub sim: JobState,
    pub sweep: JobState,
    sim_scenario: Option<Arc<Scenario>>,
    sweep_scenario: Option<Arc<Scenario>>,
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs {
            next_id: 1,
            sim: JobState::default(),
            sweep: JobState::default(),
            sim_scenario: None,
            sweep_scenario: None,
        }
    }
}

impl Jobs {
    /// Whether a job of either kind is running.
    pub fn busy(&self) -> bool {
        self.sim.running || self.sweep.running
    }

    pub fn state(&self, kind: JobKind) -> &JobState {
        match kind {
            JobKind::Scenario => &self.sim,
            JobKind::Sweep => &self.sweep,
        }
    }

    fn state_mut(&mut self, kind: JobKind) -> &mut JobState {
        match kind {
            JobKind::Scenario => &mut self.sim,
            JobKind::Sweep => &mut self.sweep,
        }
    }

    fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Makes a new job of `kind` the latest, running `scenario` of `total`
    /// runs; returns its id.
    pub fn start(&mut self, kind: JobKind, scenario: Arc<Scenario>, total: usize) -> u64 {
        let id = self.new_id();
        match kind {
            JobKind::Scenario => self.sim_scenario = Some(scenario),
            JobKind::Sweep => self.sweep_scenario = Some(scenario),
        }
        *self.state_mut(kind) = JobState {
            id,
            running: true,
            done: 0,
            total,
            error: None,
        };
        id
    }

    /// Makes a new job of `kind` the latest, one that failed before it
    /// started (the scenario the last one ran is kept).
    pub fn refuse(&mut self, kind: JobKind, error: String) {
        let id = self.new_id();
        *self.state_mut(kind) = JobState {
            id,
            running: false,
            done: 0,
            total: 0,
            error: Some(error),
        };
    }

    /// Whether `id` is the latest job of `kind`.
    pub fn is_latest(&self, kind: JobKind, id: u64) -> bool {
        self.state(kind).id == id
    }

    /// Progress of a running job (ignored unless it is the latest).
    pub fn progress(&mut self, kind: JobKind, id: u64, done: usize, total: usize) {
        let st = self.state_mut(kind);
        if st.id == id && st.running {
            st.done = done;
            st.total = total;
        }
    }

    /// Marks the latest job of `kind` done, failed with `error` or not;
    /// returns the scenario it ran.
    pub fn finish(&mut self, kind: JobKind, error: Option<String>) -> Option<Arc<Scenario>> {
        let st = self.state_mut(kind);
        st.running = false;
        st.done = st.total;
        st.error = error;
        match kind {
            JobKind::Scenario => self.sim_scenario.clone(),
            JobKind::Sweep => self.sweep_scenario.clone(),
        }
    }
}
