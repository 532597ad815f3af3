//! DESIGN 6, 9 — the flow fidelity's agenda: the event queue wrapped with
//! what only flow keeps beside it, so the engine carries none of it.
//!
//! - Remote polls kept as chains, not an event per round trip
//!   (`poll_chain.rs`): a push for a time a chain's pending poll falls at
//!   makes that poll real first (it was pushed before), a rank whose flags
//!   are in has its pending poll made real, and when nothing else is left
//!   the chains poll on, a real poll each round trip.
//! - Flags landing together share one event (`flag_batch.rs`), which pops
//!   as the fidelity's own [`FlowEv::Flags`].
//! - The time the flow fidelity watches (its pending tick's): whether
//!   anything was pushed for that time since, so the tick may stand for an
//!   equal one (equal times pop in push order).
//! - The number of the live tick, where the fidelity tells it: a stale
//!   tick (any other) is dropped as it pops when an event follows it, not
//!   handed to the engine to do nothing (the reference,
//!   `FlowOptions::stale_tick_events`, hands every tick on). The event
//!   after it pops no earlier, so the run's time and everything else go
//!   as they would; only the event count is smaller.

use super::FlowEv;
use super::flag_batch::FlagBatchId;
use super::flag_batch::FlagBatches;
use super::poll_chain::PollChains;
use crate::actors::flags::FlagAddr;
use crate::engine::ids::ActorId;
use crate::engine::queue::EventQueue;
use crate::engine::{Agenda, Ev};
use contend_topo::Picos;

/// The flow fidelity's agenda over the event queue `Q`.
pub(crate) struct FlowAgenda<Q> {
    q: Q,
    /// A time the fidelity watches (its pending event's), and whether
    /// anything has been pushed for that time since it set it.
    watched: Picos,
    watched_hit: bool,
    /// Remote polls kept as chains, not an event per round trip.
    polls: PollChains,
    /// Actors whose polls are made real (a buffer reused).
    made_real: Vec<ActorId>,
    /// Events pushed so far (a flag joins a batch only if nothing was
    /// pushed since it).
    pushes: u64,
    batches: FlagBatches,
    /// The live tick's number, as the fidelity last told it ([`NO_TICK`]:
    /// none is live), or `None` where it tells none (every tick popped is
    /// handed on).
    live_tick: Option<u64>,
}

/// No tick is live (ticks are numbered from 1).
pub(crate) const NO_TICK: u64 = 0;

impl<Q: Default> Default for FlowAgenda<Q> {
    fn default() -> Self {
        FlowAgenda {
            q: Q::default(),
            watched: Picos(u64::MAX),
            watched_hit: false,
            polls: PollChains::default(),
            made_real: vec![],
            pushes: 0,
            batches: FlagBatches::default(),
            live_tick: None,
        }
    }
}

impl<Q: EventQueue<Ev<FlowEv>>> Agenda<FlowEv> for FlowAgenda<Q> {
    #[inline(always)]
    fn push(&mut self, t: Picos, ev: Ev<FlowEv>) {
        if t == self.watched {
            self.watched_hit = true;
        }
        if self.polls.may_meet(t) {
            self.polls_met(t);
        }
        self.pushes += 1;
        self.q.push(t, ev);
    }

    /// The common pop written out where the engine pops (one event that
    /// is not a stale tick), the rest out of line (`pop_on`:
    /// the same pops, from the same event).
    #[inline(always)]
    fn pop(&mut self) -> Option<(Picos, Ev<FlowEv>)> {
        let Some((t, ev)) = self.q.pop() else {
            return self.pop_on();
        };
        if self.popped(t, &ev) {
            return self.pop_on();
        }
        Some((t, ev))
    }

    /// Batch `b` pops: its flags, in push order, for the engine to land
    /// each as its own event would have (then [`Agenda::landed_done`]).
    fn landed(&mut self, b: FlagBatchId) -> Vec<FlagAddr> {
        self.batches.take(b)
    }

    fn landed_done(&mut self, b: FlagBatchId, list: Vec<FlagAddr>) {
        self.batches.give_back(b, list);
    }

    /// Rank `a`'s flags are in: its pending poll (and those pending at the
    /// same time that pop before it) are made real.
    fn flags_in(&mut self, a: ActorId) {
        if self.polls.is_empty() {
            return;
        }
        let mut v = std::mem::take(&mut self.made_real);
        if let Some(t) = self.polls.take_through(a, &mut v) {
            if t == self.watched {
                self.watched_hit = true;
            }
            for b in v.drain(..) {
                self.pushes += 1;
                self.q.push(t, Ev::Net(FlowEv::PollDone(b)));
            }
        }
        self.made_real = v;
    }
}

impl<Q: EventQueue<Ev<FlowEv>>> FlowAgenda<Q> {
    /// Event `ev` popped at `t`: the chains' polls go on to `t`; true if it
    /// is a stale tick to drop. A stale tick does nothing: dropped where an
    /// event follows it (that one sets the engine's time, no earlier).
    #[inline(always)]
    fn popped(&mut self, t: Picos, ev: &Ev<FlowEv>) -> bool {
        if t > self.polls.earliest() {
            let hit = self.polls.advance(t, self.watched);
            self.watched_hit |= hit;
        }
        matches!((ev, self.live_tick), (Ev::Net(FlowEv::Tick(n)), Some(live)) if *n != live)
            && !self.q.is_empty()
    }

    /// The next event after a stale tick dropped, or where the queue is
    /// empty (out of line: neither is the common pop).
    #[inline(never)]
    fn pop_on(&mut self) -> Option<(Picos, Ev<FlowEv>)> {
        loop {
            if let Some((t, ev)) = self.q.pop() {
                if self.popped(t, &ev) {
                    continue;
                }
                return Some((t, ev));
            }
            if self.polls.is_empty() {
                return None;
            }
            // nothing else will happen: the chains poll on, a real poll
            // each round trip, to the run's limits
            let mut all = vec![];
            self.polls.take_all(&mut all);
            for (t, a) in all {
                self.push(t, Ev::Net(FlowEv::PollDone(a)));
            }
        }
    }

    /// A push for `t` meets pending polls: they were pushed before it, so
    /// they are made real first (out of line: a push stays small).
    #[cold]
    #[inline(never)]
    fn polls_met(&mut self, t: Picos) {
        let mut v = std::mem::take(&mut self.made_real);
        self.polls.take_at(t, &mut v);
        for a in v.drain(..) {
            self.pushes += 1;
            self.q.push(t, Ev::Net(FlowEv::PollDone(a)));
        }
        self.made_real = v;
    }

    /// Files flag `flag` landing at `t`: in the batch of flags landing at
    /// `t` pushed last if nothing else was pushed since and no pending
    /// poll returns at `t` (it does what its push would do but queue an
    /// event: `flag_batch.rs`), else in a batch of its own.
    pub fn push_flag(&mut self, t: Picos, flag: FlagAddr) {
        if !self.polls.meets(t)
            && let Some(b) = self.batches.joinable(t, self.pushes)
        {
            if t == self.watched {
                self.watched_hit = true;
            }
            self.batches.join(b, flag);
            return;
        }
        let b = self.batches.open(t, flag);
        self.push(t, Ev::Net(FlowEv::Flags(b)));
        self.batches.pushed(self.pushes);
    }

    /// Actor `a` polls its flag in remote memory every `rtt` from `now`
    /// on, as a chain; its flags must not be in yet.
    pub fn start_polls(&mut self, a: ActorId, now: Picos, rtt: Picos) {
        self.polls.start(a, now, rtt);
        if now + rtt == self.watched {
            self.watched_hit = true;
        }
    }

    /// Tick `n` is the live one ([`NO_TICK`]: none is): every other tick
    /// is stale, dropped as it pops where an event follows it.
    #[inline]
    pub fn live_tick(&mut self, n: u64) {
        self.live_tick = Some(n);
    }

    /// Watches time `t` from now on.
    #[inline]
    pub fn watch(&mut self, t: Picos) {
        self.watched = t;
        self.watched_hit = false;
    }

    /// Whether `t` is the watched time and nothing was pushed for it since
    /// it was watched (an event kept for `t` pops where a new one would).
    #[inline]
    pub fn unmet(&self, t: Picos) -> bool {
        self.watched == t && !self.watched_hit
    }
}
