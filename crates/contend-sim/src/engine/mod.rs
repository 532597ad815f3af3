//! DESIGN (time) — the event loop: simulated time is an integer number of
//! picoseconds; events at equal times pop in the order they were pushed;
//! the loop dispatches each to the actors or to the fidelity and ends when
//! the agenda is empty, a run limit is reached, or nothing can move (a
//! deadlock, named).
//!
//! The engine owns the actors; the [`World`] holds what actors and the
//! fidelity share (time, agenda, fabric, transfers, flags). A fidelity
//! (`seam.rs`) answers with events and [`Outcome`]s; it never calls into
//! actors. What each event does to a rank is in `rank_step.rs`,
//! `rank_flags.rs` and `rank_transfers.rs`.

pub mod estimate;
pub(crate) mod ids;
pub(crate) mod limits;
pub mod queue;
mod rank_flags;
mod rank_step;
mod rank_transfers;
pub mod wide_radix;

mod agenda;
mod seam;
mod world;

pub(crate) use agenda::{Agenda, Packed, PackedEvent, Queue};
pub(crate) use seam::FidelityModel;
pub(crate) use world::{Ev, Outcome, World};

use crate::actors::actor::{Actor, Span};
use crate::actors::script::ActorSpec;
use crate::engine::ids::{ActorId, Arena};
use crate::engine::limits::{LimitClock, LimitHit, RunLimits};
use crate::params::ModelParams;
use contend_topo::{Picos, Topology};
use contend_workload::Resource;

pub(crate) struct Engine<'a, Q: Queue<T::Event>, T: FidelityModel> {
    pub w: World<'a, T::Agenda<Q>>,
    pub fidelity: T,
    pub actors: Arena<ActorId, Actor>,
    pub events: u64,
    /// The collective whose spans are kept for the timeline.
    pub trace_epoch: Option<u32>,
    pub spans: Vec<Span>,
    /// Actors of one kernel launch that finished a collective and wait
    /// for the rest of it: launch → those waiting (one collective at a
    /// time: none goes on to the next before all have joined; the list is
    /// kept, empty, for the next collective's join).
    pub joins: crate::engine::ids::FxMap<u32, Vec<ActorId>>,
    limits: LimitClock,
}

impl<'a, Q: Queue<T::Event>, T: FidelityModel> Engine<'a, Q, T> {
    pub fn new(
        topo: &'a Topology,
        p: &'a ModelParams,
        actors: Vec<ActorSpec>,
        limits: RunLimits,
        opts: T::Options,
    ) -> Self {
        let w = World::new(topo, p, T::Agenda::<Q>::default());
        let fidelity = T::new(&w.fabric, p, opts);
        Engine {
            w,
            fidelity,
            actors: Arena::from_vec(actors.into_iter().map(Actor::new).collect()),
            events: 0,
            trace_epoch: None,
            spans: vec![],
            joins: Default::default(),
            limits: LimitClock::new(limits),
        }
    }
}

impl<'a, Q: Queue<T::Event>, T: FidelityModel> Engine<'a, Q, T> {
    pub fn now(&self) -> Picos {
        self.w.now
    }

    /// Runs every actor's script to its end.
    pub fn run(&mut self) -> Result<(), RunStop> {
        for a in self.actors.ids() {
            self.w.push(Picos::ZERO, Ev::Resume(a));
        }
        while let Some((t, ev)) = self.w.agenda.pop() {
            self.w.now = t;
            self.events += 1;
            if let Some(hit) = self.limits.check(t, self.events) {
                return Err(RunStop::Limit(hit));
            }
            match ev {
                Ev::Resume(a) => self.step(a),
                Ev::Fence(x) => self.fence_done(x),
                Ev::FlagAt(f) => self.flag_arrive(f),
                Ev::XferDone(x) => self.xfer_finished(x),
                Ev::Net(e) => self.net(|f, w| f.handle(w, e)),
            }
        }
        for (i, a) in self.actors.iter().enumerate() {
            if !a.finished() {
                return Err(RunStop::Deadlock {
                    actor: i,
                    step: a.pc,
                    waiting: a.waiting.map(|w| (w.count, w.flag.phase, w.flag.epoch)),
                });
            }
        }
        Ok(())
    }

    /// Calls the fidelity, then acts on what it told (in order, each
    /// handled completely before the next).
    pub(crate) fn net(&mut self, f: impl FnOnce(&mut T, &mut World<'a, T::Agenda<Q>>)) {
        f(&mut self.fidelity, &mut self.w);
        if !self.w.out.is_empty() {
            self.act_on_told();
        }
    }

    /// Acts on what the fidelity told, in order. (Always inlined, as it
    /// was inside `net`: out of line it cost a TLP run ~0.2 % more
    /// instructions.)
    #[inline(always)]
    pub(crate) fn act_on_told(&mut self) {
        // the buffer is handed back once drained (a call made while acting
        // on these tells into a fresh one), not freed and allocated again
        // at every call that tells something
        let mut told = std::mem::take(&mut self.w.out);
        for o in told.drain(..) {
            match o {
                Outcome::Flag(f) => self.flag_arrive(f),
                Outcome::Flags(b) => self.flags_landed(b),
                Outcome::XferDone(x) => self.xfer_finished(x),
                Outcome::CheckPost(g) => self.check_post(g),
                Outcome::Polled { actor, wait, seen } => self.polled(actor, wait, seen),
                Outcome::PolledNow(actor) => self.poll_done(actor),
            }
        }
        if self.w.out.capacity() == 0 {
            self.w.out = told;
        }
    }

    /// When each collective began and ended, for actor `a`.
    pub fn actor_times(&self, a: ActorId) -> (&[Picos], &[Picos]) {
        (&self.actors[a].begin, &self.actors[a].end)
    }

    /// Per channel: busy picoseconds, bytes its rule held (collapse,
    /// cross-socket stream cap), over the run.
    pub fn channel_use(&self) -> Vec<crate::report::binding::ChannelUse> {
        self.w
            .fabric
            .chans
            .ids()
            .map(|c| crate::report::binding::ChannelUse {
                spec: c,
                busy_ps: self.fidelity.busy_ps(c),
                bytes: self.fidelity.bytes(c),
                ruled_bytes: self.fidelity.ruled_bytes(c),
            })
            .collect()
    }

    /// Busy fraction of every rate-limited channel over `[0, end]`.
    pub fn utilisation(&self, end: Picos) -> Vec<(Resource, f64)> {
        let total = end.0.max(1) as f64;
        self.w
            .fabric
            .chans
            .ids()
            .filter(|c| self.w.fabric.chans[*c].rate.is_some())
            .map(|c| {
                let busy = self.fidelity.busy_ps(c);
                (self.w.fabric.chans[c].name.clone(), (busy / total).min(1.0))
            })
            .collect()
    }
}

/// Why a run stopped before every actor finished.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RunStop {
    /// The queue ran dry with an actor still mid-script.
    #[error(
        "the simulation deadlocked: actor {actor} stopped at step {step}{}",
        waiting_for(waiting)
    )]
    Deadlock {
        actor: usize,
        step: usize,
        /// (flags awaited, phase, collective) if it was waiting.
        waiting: Option<(u32, u32, u32)>,
    },
    /// A stated run limit was reached.
    #[error("{0}")]
    Limit(LimitHit),
}

/// What a deadlocked actor waited for, as its message says it.
fn waiting_for(waiting: &Option<(u32, u32, u32)>) -> String {
    match waiting {
        Some((n, ph, e)) => format!(" waiting for {n} flags of phase {ph} of collective {e}"),
        None => String::new(),
    }
}
