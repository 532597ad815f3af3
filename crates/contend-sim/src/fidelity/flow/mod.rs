//! DESIGN 9 — flow fidelity, the fast one: each remote transfer is a
//! fluid flow sharing channel bandwidth max-min fairly ([`crate::fidelity::flow::maxmin`]),
//! recomputed when flows start or end (not where the flows that joined
//! change nothing: not started yet, meeting no rule, and their start's
//! tick still ahead, see `FlowOptions::recompute_every_start`); a read's
//! first window of requests
//! goes out at once (the links bound it), the rest at its window's rate
//! (Little's law), and it drains one round trip before it completes; flags
//! and polls take their unloaded one-way or round-trip time.

mod agenda;
pub(crate) mod flag_batch;
pub mod maxmin;
pub mod maxmin_live;
pub mod maxmin_reference;
mod memo;
pub(crate) mod poll_chain;
mod state;

use self::agenda::FlowAgenda;
use self::flag_batch::FlagBatchId;
use self::state::FlowState;
use crate::actors::flags::{FlagAddr, Waiting};
use crate::engine::FidelityModel;
use crate::engine::ids::{ActorId, ChId, FxMap, GroupId, XferId};
use crate::engine::{Ev, Outcome, Queue, World};
use crate::model::channel::StageRule;
use crate::model::fabric::Fabric;
use crate::model::gpu::{self, Dir};
use crate::params::ModelParams;
use contend_topo::{NodeIdx, Picos, TlpKind};

/// The flow fidelity's own events.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FlowEv {
    /// The next flow drains (stale unless it is the live tick, by its number).
    Tick(u64),
    /// Flows started at this instant: recompute the rates once.
    Reflow,
    /// Flags land, one after another (`flag_batch.rs`).
    Flags(FlagBatchId),
    /// A poll of the actor's flag in remote memory came back
    /// (`poll_chain.rs`).
    PollDone(ActorId),
}

/// Switches of the flow fidelity's optimisations (its max-min solver's
/// reference is tested in [`crate::fidelity::flow::maxmin`]). `true` selects the reference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowOptions {
    /// Solve the rates at every recompute instead of keeping the last
    /// rates when only flows that change nothing joined since (not
    /// started, meeting no rule), or looking the flow set up among those
    /// solved before.
    pub full_solve: bool,
    /// Push a new tick at every recompute, the one before going stale,
    /// instead of keeping the pending tick when it falls at the same time
    /// and nothing was pushed for that time after it.
    pub tick_every_recompute: bool,
    /// Build the max-min problem from the flows at every solve instead of
    /// keeping it across flow starts and finishes.
    pub rebuild_problem: bool,
    /// Push a poll event every round trip of a remote poll, each sending
    /// the next until one sees the flags, instead of keeping the polls as
    /// a chain and pushing only the one that sees them (or one whose place
    /// among the events matters: `poll_chain.rs`).
    pub poll_every_round_trip: bool,
    /// Work the rates out again at every instant flows start at, instead
    /// of keeping them where only flows that change nothing joined since
    /// they were last worked out (not started, meeting no rule) and no
    /// flow starts, drains or leaves its first window by then (the next
    /// tick is still worked out, for the new flows' starts).
    pub recompute_every_start: bool,
    /// Solve max-min from round 0 at every solve instead of resuming the
    /// last solve's progressive filling at the first round a change since
    /// can affect (`LiveMaxMin::solve_resumed`; rates within rounding).
    pub full_max_min: bool,
    /// Fill every flow at every solve instead of only the flows the
    /// changes since the last solve reach through the resources they
    /// share, where those are at most half (`LiveMaxMin::solve_changed`;
    /// rates within rounding).
    pub whole_max_min: bool,
    /// Push an event for every flag instead of one for the flags landing
    /// at one time whose pushes follow one another (a barrier's, at each
    /// latency of its paths: `flag_batch.rs`).
    pub flag_event_each: bool,
    /// Hand every stale tick to the engine, which pops it as an event that
    /// does nothing, instead of the agenda dropping it at its pop where an
    /// event follows it (`agenda.rs`: the next event's time is no earlier,
    /// so the engine's time ends where it would).
    pub stale_tick_events: bool,
    /// Push an event for every drained flow's completion instead of
    /// telling the engine of those due at the tick's own time where
    /// nothing was pushed for that time since the tick was: no event waits
    /// behind the tick then, so each would have been the next to pop.
    pub xfer_done_events: bool,
    /// Key the memo of solved flow sets by the whole set instead of
    /// leaving out the flows at its end that have not started and meet
    /// no rule (they add nothing to a solve: `FlowState::memo_key`).
    pub memo_whole_set: bool,
}

/// What a flow start looks up once per [`Ask`]: its interned kind, its
/// tail (a read's last round trip) and the bytes of its first window.
type Asked = (u32, Picos, f64);

pub(crate) struct Flow {
    flows: FlowState,
    /// Buffers reused by every flow start and drain (no allocation there).
    uses: Vec<(ChId, f64)>,
    rules: Vec<(ChId, NodeIdx, NodeIdx, f64)>,
    finished: Vec<(XferId, Picos)>,
    /// Kind, tail and first window of each flow asked for so far.
    asked: FxMap<Ask, Asked>,
    /// Per forward path, the last ask made on it and its answer: the
    /// flows of one path mostly ask the same (a group's transfers to one
    /// peer), so most starts find their answer here, one load, instead of
    /// in `asked` (a cache of it: the same answers).
    last_ask: Vec<Option<(Ask, Asked)>>,
    /// The live tick: its time and number (every other tick is stale).
    live: Option<(Picos, u64)>,
    /// Ticks numbered so far.
    ticks: u64,
    tick_every_recompute: bool,
    poll_every_round_trip: bool,
    recompute_every_start: bool,
    flag_event_each: bool,
    stale_tick_events: bool,
    xfer_done_events: bool,
    /// Per path: what a flag along it needs (`None`: not worked out).
    flag_paths: Vec<Option<FlagPath>>,
    /// Per path there: a poll's round trip (there, memory, back).
    poll_rtt: Vec<Option<Picos>>,
}

/// What a flag along a path needs, worked out once per path (a barrier
/// sends thousands along each; reading the path itself for each cost a
/// cache miss per flag).
#[derive(Clone, Copy, Debug)]
struct FlagPath {
    /// Its one-way time (store visibility, then the path unloaded).
    time: Picos,
    /// The path passes a collapsing port, where the flag counts.
    collapses: bool,
}

/// Entry `i` of a per-path table (`None`: not worked out yet), worked out
/// by `f` the first time.
#[inline]
fn per_path<T: Copy>(table: &mut Vec<Option<T>>, i: usize, f: impl FnOnce() -> T) -> T {
    if i >= table.len() {
        table.resize(i + 1, None);
    }
    *table[i].get_or_insert_with(f)
}

impl FidelityModel for Flow {
    type Event = FlowEv;
    type Options = FlowOptions;
    type Agenda<Q: Queue<FlowEv>> = FlowAgenda<Q>;
    const STORE_BUFFER: bool = false;

    fn new(fabric: &Fabric, p: &ModelParams, opts: FlowOptions) -> Flow {
        let _ = p;
        Flow {
            flows: FlowState::new(fabric.chans.len(), opts),
            uses: vec![],
            rules: vec![],
            finished: vec![],
            asked: Default::default(),
            last_ask: vec![],
            live: None,
            ticks: 0,
            tick_every_recompute: opts.tick_every_recompute,
            poll_every_round_trip: opts.poll_every_round_trip,
            recompute_every_start: opts.recompute_every_start,
            flag_event_each: opts.flag_event_each,
            stale_tick_events: opts.stale_tick_events,
            xfer_done_events: opts.xfer_done_events,
            flag_paths: vec![],
            poll_rtt: vec![],
        }
    }

    fn begin_xfer<Q: Queue<FlowEv>>(
        &mut self,
        w: &mut World<'_, FlowAgenda<Q>>,
        x: XferId,
        setup: Picos,
    ) {
        let xf = &w.xfers[x];
        let g = &w.groups[xf.group];
        // everything the flow's kind and tail follow from
        let ask = Ask {
            read: xf.dir == Dir::Read,
            fwd: xf.fwd().0,
            back: xf.back().0,
            req: xf.req,
            window: g.window,
            remote: g.remote,
            issue_rate: g.issue_rate.map_or(u64::MAX, |r| r.0),
        };
        let total = xf.total as f64;
        let (kind, tail, first) = self.answer(w, x, ask);
        self.flows.advance(w.now);
        self.flows.add(x, total, kind, first, tail, setup);
        // Flows starting at the same instant share one recompute.
        if self.flows.pending != Some(w.now) {
            self.flows.pending = Some(w.now);
            w.push(w.now, Ev::Net(FlowEv::Reflow));
        }
    }

    fn begin_group<Q: Queue<FlowEv>>(
        &mut self,
        _: &mut World<'_, FlowAgenda<Q>>,
        _: GroupId,
        _: Picos,
    ) {
        // every flow started with its transfer
    }

    fn send_flag<Q: Queue<FlowEv>>(
        &mut self,
        w: &mut World<'_, FlowAgenda<Q>>,
        _from: ActorId,
        gpu: NodeIdx,
        dst: NodeIdx,
        flag: FlagAddr,
    ) {
        let path = w.fabric.route(w.topo, gpu, dst);
        let (fabric, p) = (&w.fabric, w.p);
        let fp = per_path(&mut self.flag_paths, path.ix(), || FlagPath {
            time: gpu::store_visibility(p) + fabric.one_way(path, TlpKind::Write, p.gpu.flag_bytes),
            collapses: !fabric.paths[path].collapse_at.is_empty(),
        });
        let t = fp.time;
        if self.flag_event_each {
            w.push(w.now + t, Ev::FlagAt(flag));
        } else {
            w.agenda.push_flag(w.now + t, flag);
        }
        // A flag is a posted write: a collapsing port it passes counts its
        // source and target for the rule's window from when it gets there,
        // as the TLP fidelity's sightings do; the rates change then (a tick).
        if !fp.collapses {
            return;
        }
        let mut sighted = false;
        for &(pos, source, target) in &w.fabric.paths[path].collapse_at {
            let c = w.fabric.paths[path].chans[pos];
            if let StageRule::Collapse(rule) = &w.fabric.chans[c].rule {
                let there = w.now
                    + gpu::store_visibility(w.p)
                    + w.fabric
                        .one_way_to(path, pos, TlpKind::Write, w.p.gpu.flag_bytes);
                self.flows
                    .sight(c, source, target, there, there + rule.window());
                sighted = true;
            }
        }
        if sighted {
            self.flows.advance(w.now);
            self.next_tick(w);
        }
    }

    /// Polls go out every round trip; the first that reads memory after
    /// the flag landed sees it. Unless the flags are in already, the polls
    /// are kept as a chain (`poll_chain.rs`) rather than pushed one by one.
    fn poll<Q: Queue<FlowEv>>(
        &mut self,
        w: &mut World<'_, FlowAgenda<Q>>,
        actor: ActorId,
        gpu: NodeIdx,
        at: NodeIdx,
        wait: Waiting,
    ) {
        // (a path there is one pair of endpoints: it names the way back)
        let fwd = w.fabric.route(w.topo, gpu, at);
        let rtt = match self.poll_rtt.get(fwd.ix()) {
            Some(&Some(t)) => t,
            _ => {
                let back = w.fabric.route(w.topo, at, gpu);
                let (fabric, topo, p) = (&w.fabric, w.topo, w.p);
                per_path(&mut self.poll_rtt, fwd.ix(), || {
                    fabric.one_way(fwd, TlpKind::ReadRequest, 0)
                        + gpu::memory_latency(topo, p, at)
                        + fabric.one_way(back, TlpKind::Completion, p.gpu.flag_bytes)
                })
            }
        };
        if self.poll_every_round_trip
            || rtt == Picos::ZERO
            || w.flags.count(wait.flag) >= wait.count
        {
            w.push(w.now + rtt, Ev::Net(FlowEv::PollDone(actor)));
        } else {
            w.agenda.start_polls(actor, w.now, rtt);
        }
    }

    fn handle<Q: Queue<FlowEv>>(&mut self, w: &mut World<'_, FlowAgenda<Q>>, ev: FlowEv) {
        match ev {
            FlowEv::Flags(b) => w.tell(Outcome::Flags(b)),
            FlowEv::PollDone(a) => w.tell(Outcome::PolledNow(a)),
            FlowEv::Reflow => {
                self.flows.pending = None;
                self.flows.advance(w.now);
                // Only flows that change nothing joined since the rates were
                // worked out, and the next tick (every start, drain and
                // first window's end comes with one) is still ahead: the
                // rates stand, the new flows at 0 until their start's tick.
                let ahead = self.live.is_none_or(|(t, _)| t > w.now);
                if self.flows.idle_joined && ahead && !self.recompute_every_start {
                    self.next_tick(w);
                } else {
                    self.reflow(w);
                }
            }
            FlowEv::Tick(n) => {
                if self.live.map(|l| l.1) != Some(n) {
                    return;
                }
                // Nothing was pushed for now since this tick was (the
                // events pushed for now before it have popped): no event
                // waits behind it, so a completion due now would pop next,
                // after this call's pushes. The engine is told of it as
                // this call returns instead, where it would have popped.
                let alone = w.agenda.unmet(w.now) && !self.xfer_done_events;
                self.set_live(w, None);
                self.flows.advance(w.now);
                self.flows.take_finished(&mut self.finished, &w.fabric);
                for &(x, tail) in &self.finished {
                    if alone && tail == Picos::ZERO {
                        w.tell(Outcome::XferDone(x));
                    } else {
                        w.push(w.now + tail, Ev::XferDone(x));
                    }
                }
                self.reflow(w);
            }
        }
    }

    fn busy_ps(&self, c: ChId) -> f64 {
        self.flows.busy[c.ix()]
    }

    fn bytes(&self, c: ChId) -> f64 {
        self.flows.bytes[c.ix()]
    }

    fn ruled_bytes(&self, c: ChId) -> f64 {
        self.flows.ruled[c.ix()]
    }
}

/// What a transfer's flow follows from: direction, paths, request size,
/// and its group's window, remote transfers and store rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Ask {
    read: bool,
    fwd: u32,
    back: u32,
    req: u32,
    window: u32,
    remote: u32,
    issue_rate: u64,
}

impl Flow {
    /// What a flow asking `ask` gets (its kind, tail and first window):
    /// from the last ask on its forward path where that is the same, else
    /// from the asks so far, else worked out (and kept in both).
    fn answer<Q: Queue<FlowEv>>(
        &mut self,
        w: &World<'_, FlowAgenda<Q>>,
        x: XferId,
        ask: Ask,
    ) -> Asked {
        let i = ask.fwd as usize;
        if let Some(Some((a, k))) = self.last_ask.get(i)
            && *a == ask
        {
            // (every debug run checks the cache against what it caches)
            debug_assert_eq!(self.asked.get(&ask), Some(k), "the last ask on path {i}");
            return *k;
        }
        let k = match self.asked.get(&ask) {
            Some(&k) => k,
            None => {
                let k = self.kind_of(w, x);
                self.asked.insert(ask, k);
                k
            }
        };
        if i >= self.last_ask.len() {
            self.last_ask.resize(i + 1, None);
        }
        self.last_ask[i] = Some((ask, k));
        k
    }

    /// The interned kind of transfer `x`'s flow and its tail (a read's
    /// last round trip).
    fn kind_of<Q: Queue<FlowEv>>(&mut self, w: &World<'_, FlowAgenda<Q>>, x: XferId) -> Asked {
        let xf = &w.xfers[x];
        let (fwd, back, req) = (xf.fwd(), xf.back(), xf.req);
        let g = &w.groups[xf.group];
        let remote = g.remote.max(1) as f64;
        let uses = &mut self.uses;
        uses.clear();
        // (round trip, the flow's cap, the bytes of its first window)
        let (rtt, cap, first) = match xf.dir {
            Dir::Read => {
                let completer = w.fabric.paths[fwd].end;
                let bp = &w.fabric.paths[back];
                let cpl = gpu::completion_bytes(w.topo, w.p, completer, bp.mps, bp.rcb).min(req);
                // a header-only request per `req` bytes one way, completions back
                w.fabric.uses(fwd, TlpKind::ReadRequest, 0, req, uses);
                w.fabric.uses(back, TlpKind::Completion, cpl, cpl, uses);
                let rtt = w.fabric.one_way(fwd, TlpKind::ReadRequest, 0)
                    + gpu::memory_latency(w.topo, w.p, completer)
                    + w.fabric.one_way(back, TlpKind::Completion, cpl);
                // Little's law on this transfer's share of the load window,
                // from its second window on: the first window's requests
                // all go out at once, and their round trip is the tail
                let share = g.window as f64 / remote;
                let window = share * req as f64;
                (rtt, window / (rtt.0.max(1) as f64 / 1e12), window)
            }
            Dir::Write => {
                w.fabric.uses(fwd, TlpKind::Write, req, req, uses);
                let cap = g.issue_rate.map_or(f64::INFINITY, |r| r.0 as f64 / remote);
                (Picos::ZERO, cap, 0.0)
            }
        };
        // the rules the flow's paths meet: collapse (posted writes, and a
        // read's requests where the port collapses per TLP) and
        // cross-socket P2P, there and back
        let rules = &mut self.rules;
        rules.clear();
        // A stream is counted once, on the path its data takes: a write's
        // forward path, a read's completions. A collapsing port counts what
        // a path sends up through it: a write's data, a read's requests
        // (each `req` bytes of data asks one request of the port's
        // request cost).
        let (data, sent) = match xf.dir {
            Dir::Write => (&w.fabric.paths[fwd], &w.fabric.paths[fwd]),
            Dir::Read => (&w.fabric.paths[back], &w.fabric.paths[fwd]),
        };
        for &(pos, s, t) in &sent.collapse_at {
            let c = sent.chans[pos];
            let StageRule::Collapse(rule) = &w.fabric.chans[c].rule else {
                continue;
            };
            let weight = match xf.dir {
                Dir::Write => Some(1.0),
                Dir::Read => rule.request_bytes().map(|b| b as f64 / req as f64),
            };
            if let Some(weight) = weight {
                rules.push((c, s, t, weight));
            }
        }
        rules.extend(
            data.cross_at
                .iter()
                .map(|&(pos, s, t)| (data.chans[pos], s, t, 1.0)),
        );
        (self.flows.intern(cap, &self.uses, &self.rules), rtt, first)
    }

    fn reflow<Q: Queue<FlowEv>>(&mut self, w: &mut World<'_, FlowAgenda<Q>>) {
        self.flows.recompute(&w.fabric);
        self.next_tick(w);
    }

    /// The tick for the next flow to drain (or start, or leave its first
    /// window) at the rates as they are.
    fn next_tick<Q: Queue<FlowEv>>(&mut self, w: &mut World<'_, FlowAgenda<Q>>) {
        // the next drain, start or first window's end, or the next flag a
        // collapsing port stops counting
        let next = match (self.flows.next_finish(w.now), self.flows.next_sight(w.now)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // The pending tick stands for the new one when it falls at the same
        // time and nothing was pushed for that time since it: it pops where
        // the new one would.
        if let (Some(t), Some((at, _))) = (next, self.live)
            && t == at
            && w.agenda.unmet(t)
            && !self.tick_every_recompute
        {
            return;
        }
        self.set_live(w, None);
        if let Some(t) = next {
            self.ticks += 1;
            w.push(t, Ev::Net(FlowEv::Tick(self.ticks)));
            self.set_live(w, Some((t, self.ticks)));
            w.agenda.watch(t);
        }
    }

    /// The live tick is now `live` (none: every tick pushed is stale); the
    /// agenda is told which one is live, so that it drops the others
    /// (unless the reference, `FlowOptions::stale_tick_events`, is on).
    #[inline]
    fn set_live<Q: Queue<FlowEv>>(
        &mut self,
        w: &mut World<'_, FlowAgenda<Q>>,
        live: Option<(Picos, u64)>,
    ) {
        self.live = live;
        if !self.stale_tick_events {
            w.agenda.live_tick(live.map_or(agenda::NO_TICK, |l| l.1));
        }
    }
}
