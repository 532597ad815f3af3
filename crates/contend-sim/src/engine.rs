//! DESIGN (time) — the event loop: simulated time is an integer number of
//! picoseconds; events at equal times pop in the order they were pushed;
//! the loop dispatches each to the actors or to the transport and ends when
//! the queue is empty, a run limit is reached, or nothing can move (a
//! deadlock, named).
//!
//! The engine owns the actors; the [`World`] holds what actors and the
//! transport share (time, queue, fabric, transfers, flags). A transport
//! answers with events and [`Outcome`]s; it never calls into actors.

use crate::actor::{Actor, ActorSpec, Span};
use crate::fabric::Fabric;
use crate::flag_batch::FlagBatches;
use crate::flags::{FlagAddr, Flags, Waiting};
use crate::ids::{ActorId, Arena, FlagBatchId, GroupId, Window, XferId};
use crate::limits::{LimitClock, LimitHit, RunLimits};
use crate::params::ModelParams;
use crate::poll_chain::PollChains;
use crate::queue::EventQueue;
use crate::transfer::{Group, Xfer};
use crate::transport::Transport;
use contend_topo::{Picos, Topology};
use contend_workload::Resource;

/// An event: for the actors, or for the transport (`Net`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev<E> {
    /// The actor continues its script.
    Resume(ActorId),
    /// The fence after a store stream has passed; its flag goes out.
    Fence(XferId),
    /// A flag lands.
    FlagAt(FlagAddr),
    /// Flags land, one after another (`flag_batch.rs`).
    Flags(FlagBatchId),
    /// A transfer is done (local parts, drained flows).
    XferDone(XferId),
    /// A poll of the actor's flag in remote memory came back (flow
    /// fidelity; `poll_chain.rs`).
    PollDone(ActorId),
    /// The transport's own event.
    Net(E),
}

/// What a transport tells the engine.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Outcome {
    /// A flag reached its address.
    Flag(FlagAddr),
    /// Every byte of a read transfer has arrived.
    XferDone(XferId),
    /// A post group's stores may all have left the GPU.
    CheckPost(GroupId),
    /// A poll came back; `seen`: the flags were in when memory was read.
    Polled {
        actor: ActorId,
        wait: Waiting,
        seen: bool,
    },
}

/// What actors and the transport share.
pub(crate) struct World<'a, Q> {
    pub p: &'a ModelParams,
    pub topo: &'a Topology,
    pub fabric: Fabric,
    q: Q,
    pub now: Picos,
    /// Live transfers and groups (freed when they end).
    pub xfers: Window<XferId, Xfer>,
    pub groups: Window<GroupId, Group>,
    pub flags: Flags,
    /// What the transport told the engine during its last call.
    pub out: Vec<Outcome>,
    /// How long remote data was moving (some transfer group open).
    pub moving: crate::binding::Moving,
    /// A time the transport watches (its pending event's), and whether
    /// anything has been pushed for that time since it set it: a
    /// transport may keep an event in the queue in place of pushing an
    /// equal one only while nothing was pushed for the same time after
    /// it (equal times pop in push order).
    pub watched: Picos,
    pub watched_hit: bool,
    /// Remote polls kept as chains, not an event per round trip.
    pub polls: PollChains,
    /// Actors whose polls are made real (a buffer reused).
    made_real: Vec<ActorId>,
    /// Events pushed so far, and the flags sharing events
    /// ([`World::push_flag`]).
    pushes: u64,
    pub(crate) flag_batches: FlagBatches,
}

impl<Q> World<'_, Q> {
    /// Files event `ev` for time `t` (always inlined: it is on every
    /// packet's path, and a call there cost ~4 % of a TLP run's
    /// instructions).
    #[inline(always)]
    pub fn push<E>(&mut self, t: Picos, ev: Ev<E>)
    where
        Q: EventQueue<Ev<E>>,
    {
        if t == self.watched {
            self.watched_hit = true;
        }
        if self.polls.may_meet(t) {
            self.polls_met(t);
        }
        self.pushes += 1;
        self.q.push(t, ev);
    }
    /// Files flag `flag` landing at `t`: in the batch of flags landing at
    /// `t` pushed last if nothing else was pushed since and no pending
    /// poll returns at `t` (it does what its push would do but queue an
    /// event: `flag_batch.rs`), else in a batch of its own.
    pub fn push_flag<E>(&mut self, t: Picos, flag: FlagAddr)
    where
        Q: EventQueue<Ev<E>>,
    {
        if !self.polls.meets(t)
            && let Some(b) = self.flag_batches.joinable(t, self.pushes)
        {
            if t == self.watched {
                self.watched_hit = true;
            }
            self.flag_batches.join(b, flag);
            return;
        }
        let b = self.flag_batches.open(t, flag);
        self.push(t, Ev::Flags(b));
        self.flag_batches.pushed(self.pushes);
    }
    /// A push for `t` meets pending polls: they were pushed before it, so
    /// they are made real first (out of line: `push` stays small enough to
    /// inline on the TLP path, which has no chains).
    #[cold]
    #[inline(never)]
    fn polls_met<E>(&mut self, t: Picos)
    where
        Q: EventQueue<Ev<E>>,
    {
        let mut v = std::mem::take(&mut self.made_real);
        self.polls.take_at(t, &mut v);
        for a in v.drain(..) {
            self.pushes += 1;
            self.q.push(t, Ev::PollDone(a));
        }
        self.made_real = v;
    }
    /// Actor `a` polls its flag in remote memory every `rtt` from now on,
    /// as a chain; its flags must not be in yet.
    pub fn start_polls(&mut self, a: ActorId, rtt: Picos) {
        let now = self.now;
        self.polls.start(a, now, rtt);
        if now + rtt == self.watched {
            self.watched_hit = true;
        }
    }
    /// Actor `a`'s flags are in: its pending poll (and those pending at the
    /// same time that pop before it) are made real.
    pub fn polls_seen<E>(&mut self, a: ActorId)
    where
        Q: EventQueue<Ev<E>>,
    {
        let mut v = std::mem::take(&mut self.made_real);
        if let Some(t) = self.polls.take_through(a, &mut v) {
            if t == self.watched {
                self.watched_hit = true;
            }
            for b in v.drain(..) {
                self.pushes += 1;
                self.q.push(t, Ev::PollDone(b));
            }
        }
        self.made_real = v;
    }
    /// Watches time `t` from now on (see [`World::watched`]).
    #[inline]
    pub fn watch(&mut self, t: Picos) {
        self.watched = t;
        self.watched_hit = false;
    }
    #[inline]
    pub fn tell(&mut self, o: Outcome) {
        self.out.push(o);
    }
}

pub(crate) struct Engine<'a, Q, T> {
    pub w: World<'a, Q>,
    pub transport: T,
    pub actors: Arena<ActorId, Actor>,
    pub events: u64,
    /// The collective whose spans are kept for the timeline.
    pub trace_epoch: Option<u32>,
    pub spans: Vec<Span>,
    /// Actors of one kernel launch that finished a collective and wait
    /// for the rest of it: launch → those waiting (one collective at a
    /// time: none goes on to the next before all have joined; the list is
    /// kept, empty, for the next collective's join).
    pub joins: crate::ids::FxMap<u32, Vec<ActorId>>,
    limits: LimitClock,
}

impl<'a, Q: EventQueue<Ev<T::Event>> + Default, T: Transport> Engine<'a, Q, T> {
    pub fn new(
        topo: &'a Topology,
        p: &'a ModelParams,
        actors: Vec<ActorSpec>,
        limits: RunLimits,
        opts: T::Options,
    ) -> Self {
        let fabric = Fabric::new(topo, p);
        let transport = T::new(&fabric, p, opts);
        Engine {
            w: World {
                p,
                topo,
                fabric,
                q: Q::default(),
                now: Picos::ZERO,
                xfers: Window::default(),
                groups: Window::default(),
                flags: Flags::default(),
                out: Vec::new(),
                moving: Default::default(),
                watched: Picos(u64::MAX),
                watched_hit: false,
                polls: PollChains::default(),
                made_real: vec![],
                pushes: 0,
                flag_batches: FlagBatches::default(),
            },
            transport,
            actors: Arena::from_vec(actors.into_iter().map(Actor::new).collect()),
            events: 0,
            trace_epoch: None,
            spans: vec![],
            joins: Default::default(),
            limits: LimitClock::new(limits),
        }
    }
}

impl<'a, Q: EventQueue<Ev<T::Event>>, T: Transport> Engine<'a, Q, T> {
    pub fn now(&self) -> Picos {
        self.w.now
    }

    /// Runs every actor's script to its end.
    pub fn run(&mut self) -> Result<(), RunError> {
        for a in self.actors.ids() {
            self.w.push(Picos::ZERO, Ev::Resume(a));
        }
        loop {
            let Some((t, ev)) = self.w.q.pop() else {
                if self.w.polls.is_empty() {
                    break;
                }
                // nothing else will happen: the chains poll on, a real
                // poll each round trip, to the run's limits
                let mut all = vec![];
                self.w.polls.take_all(&mut all);
                for (t, a) in all {
                    self.w.push(t, Ev::PollDone(a));
                }
                continue;
            };
            if t > self.w.polls.earliest() {
                let hit = self.w.polls.advance(t, self.w.watched);
                self.w.watched_hit |= hit;
            }
            self.w.now = t;
            self.events += 1;
            if let Some(hit) = self.limits.check(t, self.events) {
                return Err(RunError::Limit(hit));
            }
            match ev {
                Ev::Resume(a) => self.step(a),
                Ev::Fence(x) => self.fence_done(x),
                Ev::FlagAt(f) => self.flag_arrive(f),
                Ev::Flags(b) => self.flags_arrive(b),
                Ev::XferDone(x) => self.xfer_finished(x),
                Ev::PollDone(a) => self.poll_done(a),
                Ev::Net(e) => self.net(|t, w| t.handle(w, e)),
            }
        }
        for (i, a) in self.actors.iter().enumerate() {
            if !a.finished() {
                return Err(RunError::Deadlock {
                    actor: i,
                    step: a.pc,
                    waiting: a.waiting.map(|w| (w.count, w.flag.phase, w.flag.epoch)),
                });
            }
        }
        Ok(())
    }

    /// Calls the transport, then acts on what it told (in order, each
    /// handled completely before the next).
    pub(crate) fn net(&mut self, f: impl FnOnce(&mut T, &mut World<'a, Q>)) {
        f(&mut self.transport, &mut self.w);
        if self.w.out.is_empty() {
            return;
        }
        // the buffer is handed back once drained (a call made while acting
        // on these tells into a fresh one), not freed and allocated again
        // at every call that tells something
        let mut told = std::mem::take(&mut self.w.out);
        for o in told.drain(..) {
            match o {
                Outcome::Flag(f) => self.flag_arrive(f),
                Outcome::XferDone(x) => self.xfer_finished(x),
                Outcome::CheckPost(g) => self.check_post(g),
                Outcome::Polled { actor, wait, seen } => self.polled(actor, wait, seen),
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
    pub fn channel_use(&self) -> Vec<crate::binding::ChannelUse> {
        self.w
            .fabric
            .chans
            .ids()
            .map(|c| crate::binding::ChannelUse {
                spec: c,
                busy_ps: self.transport.busy_ps(c),
                bytes: self.transport.bytes(c),
                ruled_bytes: self.transport.ruled_bytes(c),
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
                let busy = self.transport.busy_ps(c);
                (self.w.fabric.chans[c].name.clone(), (busy / total).min(1.0))
            })
            .collect()
    }
}

/// Why a run stopped before every actor finished.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RunError {
    /// The queue ran dry with an actor still mid-script.
    Deadlock {
        actor: usize,
        step: usize,
        /// (flags awaited, phase, collective) if it was waiting.
        waiting: Option<(u32, u32, u32)>,
    },
    /// A stated run limit was reached.
    Limit(LimitHit),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Deadlock {
                actor,
                step,
                waiting,
            } => {
                write!(
                    f,
                    "the simulation deadlocked: actor {actor} stopped at step {step}"
                )?;
                if let Some((n, ph, e)) = waiting {
                    write!(f, " waiting for {n} flags of phase {ph} of collective {e}")?;
                }
                Ok(())
            }
            RunError::Limit(hit) => write!(f, "{hit}"),
        }
    }
}
