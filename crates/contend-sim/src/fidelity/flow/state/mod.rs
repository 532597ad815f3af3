//! DESIGN 9 — the fluid state of flow fidelity: each transfer is a flow
//! over the channels of its path, using `coef × rate` of each (its wire
//! bytes per payload byte there), capped per flow (reads: Little's law on
//! their share of the load window, from their second window on: the first
//! window's requests all go out at once, so only the links bound its
//! bytes), advanced between recomputes; the rules
//! of stages that change with the traffic ([`StageRule`]) give their
//! resources: posted writes through a collapsing port share the collapse
//! rule's rate, cross-socket P2P gets the rate for its concurrent streams
//! and each stream its cap.
//!
//! What a flow asks of the fabric (cap, channel uses, rules) is interned
//! once as a [`Kind`], so starting a flow allocates nothing; and since the
//! rates are a pure function of the flows in order (kind, started or not,
//! through its first window or not),
//! a recompute looks the flow set up in a memo of earlier solves
//! ([`Memo`], `memo.rs`; keyed without the flows at the set's end that
//! have not started and meet no rule, which add nothing to a solve:
//! `recall.rs`) and solves only a set it has not seen, and keeps
//! the last rates where only idle flows joined. The reference
//! (`FlowOptions::full_solve`) solves every time; all give the same rates
//! to the bit.
//!
//! A solve works on a problem kept across flow starts and finishes
//! ([`LiveMaxMin`]): a flow joins it with its kind's uses when first
//! solved and leaves it when it drains; cross-socket streams are counted
//! as they come and go; a collapsing channel's groups are worked out
//! again only when its flows change. The reference
//! (`FlowOptions::rebuild_problem`) builds the problem from the flows at
//! every solve; both give the same rates to the bit. The solve fills only
//! the flows the changes since the last one reach through the resources
//! they share, where those are few ([`LiveMaxMin::solve_changed`]; its
//! reference, `FlowOptions::whole_max_min`, fills every flow), and
//! otherwise resumes the last one's progressive filling at the first
//! round a change since can reach ([`LiveMaxMin::solve_resumed`]; its
//! reference, `FlowOptions::full_max_min`, fills every flow from round 0
//! every time): the same rates to within rounding (the memo's and the
//! rebuilt problem's references are to the bit with `full_max_min`).
//! Every debug build solves a copy of the kept problem from round 0 as
//! well, the full solve, and checks each rate of the incremental solve
//! against it (1e-9 relative, as the solvers' property tests).

mod flag_sights;
mod kept;
mod rebuilt;
mod recall;

use self::flag_sights::FlagSights;
use self::kept::{CollapseLive, CrossLive};
use super::memo::Memo;
use crate::engine::ids::FxMap;
use crate::engine::ids::{ChId, XferId};
use crate::fidelity::flow::maxmin::MaxMin;
use crate::fidelity::flow::maxmin_live::LiveMaxMin;
use crate::model::fabric::Fabric;
use contend_topo::{NodeIdx, Picos};

/// What a flow asks of the fabric: its cap, the channels it uses
/// (`coef` wire bytes per payload byte), and the rule channels it meets
/// with what the rule sees of its path and what the flow uses of the
/// rule's rate per payload byte (collapse entries only for posted writes,
/// weight 1, and for reads where the port counts requests, weight the
/// request cost over the request size; cross-socket entries weight 1).
#[derive(Debug)]
pub(crate) struct Kind {
    pub cap: f64,
    pub uses: Vec<(ChId, f64)>,
    pub rules: Vec<(ChId, NodeIdx, NodeIdx, f64)>,
}

/// A flow as every pass over the flows reads it (what only its end reads
/// is in [`FlowEnd`], alongside: the passes walk fewer bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flow {
    /// Bytes still to move.
    pub remaining: f64,
    pub rate: f64,
    /// Index into the interned kinds.
    pub kind: u32,
    /// The cap binds once `remaining` is down to this: the bytes above it
    /// are the first window, requested at once, bounded by the links alone
    /// (0 for flows whose cap binds from their first byte: writes, whose
    /// cap is the rate their stores issue at).
    pub capped_below: f64,
    /// Not started before this time (copy-engine setup).
    pub start: Picos,
    /// The rule channel holding the flow at its current rate, if any
    /// (collapsed writes, a cross-socket stream at its cap).
    pub held: Option<ChId>,
    /// Its slot in the kept problem ([`NO_SLOT`]: not in it yet).
    pub slot: u32,
}

/// What a flow's end reads of it: its transfer, the bytes it started
/// with, and the time from draining to completion (a read's last round
/// trip); at the same index in [`FlowState::ends`] as the flow in
/// [`FlowState::flows`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlowEnd {
    pub xfer: XferId,
    pub bytes: f64,
    pub tail: Picos,
}

/// A stage rule holds its flows at their rates when they use this share
/// of its rate or more.
const HELD: f64 = 0.999;

/// A flow not yet in the kept problem.
pub(crate) const NO_SLOT: u32 = u32::MAX;

impl Flow {
    /// Whether the flow still drains its first window (half a byte of
    /// slack, as [`FlowState::take_finished`] allows).
    fn in_first_window(&self) -> bool {
        self.remaining > self.capped_below + 0.5
    }

    /// The flow's own cap now (its kind's `cap`): none through its first
    /// window.
    fn cap_now(&self, cap: f64) -> f64 {
        if self.in_first_window() {
            f64::INFINITY
        } else {
            cap
        }
    }
}

#[derive(Debug)]
pub(crate) struct FlowState {
    pub flows: Vec<Flow>,
    /// Each flow's end, in the flows' order.
    pub ends: Vec<FlowEnd>,
    pub kinds: Vec<Kind>,
    /// Kind key (see [`FlowState::intern`]) → index into `kinds`.
    kind_of: FxMap<Vec<u64>, u32>,
    key: Vec<u64>,
    pub last: Picos,
    /// Busy time per channel, picoseconds-equivalent (for utilisation).
    pub busy: Vec<f64>,
    /// Payload bytes per rule channel (channels with a stage rule only),
    /// and those its rule held.
    pub bytes: Vec<f64>,
    pub ruled: Vec<f64>,
    /// Channel → its resource in the solve under way (`u32::MAX`: none),
    /// and the channels set there (reset after).
    slot: Vec<u32>,
    touched: Vec<ChId>,
    /// Per kind (the first `prepared`), its cap and its uses of rated
    /// channels: (channel, coef, channel rate), at
    /// `rated[rated_at[k]..rated_at[k + 1]]` (flat: a solve reads them for
    /// every flow).
    kind_cap: Vec<f64>,
    rated: Vec<(ChId, f64, f64)>,
    rated_at: Vec<usize>,
    prepared: usize,
    /// What a solve gives the solver: caps per flow, capacity per
    /// resource, the uses flow by flow (resource, coef) with offsets; and
    /// what it meets on rule channels.
    caps: Vec<f64>,
    capacity: Vec<f64>,
    uses: Vec<(u32, f64)>,
    start: Vec<usize>,
    on_rules: Vec<(ChId, usize, NodeIdx, NodeIdx, f64)>,
    members: Vec<(usize, NodeIdx, NodeIdx)>,
    streams: Vec<(usize, (NodeIdx, NodeIdx))>,
    /// Rule resources, numbered from 0 until the channels' are counted:
    /// their capacities, (flow, rule resource) by flow, where each flow's
    /// entries went in `uses`, and each cross-socket channel's shared rate.
    rule_cap: Vec<f64>,
    rule_uses: Vec<(usize, u32, f64)>,
    rule_pos: Vec<usize>,
    shared: Vec<(ChId, f64)>,
    /// Rule resources whose flows the rule holds when they are full:
    /// (channel, resource).
    watched: Vec<(ChId, usize)>,
    solver: MaxMin,
    /// Solved flow sets, and the flow set now (kind × 4 + started + 2 ×
    /// in first window, in order) where the memo or the idle-join check
    /// needs it.
    memo: Memo,
    set: Vec<u32>,
    /// The set last given rates (by a solve or the memo), and whether it
    /// was built then and every flow of it is still there (no flow gone
    /// since).
    last_set: Vec<u32>,
    last_whole: bool,
    /// Since the rates were last worked out, only flows that change
    /// nothing have joined (not started, meeting no rule) and none has
    /// gone: the last rates stand (else the set is not worth checking).
    pub idle_joined: bool,
    /// The last rates solved or remembered gave some flow an unbounded
    /// rate (no rated channel and no cap bound it; kept where the last
    /// rates stand): [`FlowState::recompute`] takes such flows through
    /// their first window, and skips the pass where none is.
    unbounded: bool,
    /// The problem kept across flow changes (the reference,
    /// `FlowOptions::rebuild_problem`, builds it from the flows at every
    /// solve): channel `c` is resource `c`, rule resources come after.
    live: LiveMaxMin,
    /// Flows gone since the kept problem last saw them: (slot, kind).
    gone: Vec<(u32, u32)>,
    /// Per channel with a rule, what the kept problem knows of it.
    cross: FxMap<ChId, CrossLive>,
    collapse: FxMap<ChId, CollapseLive>,
    dirty: Vec<ChId>,
    /// Rule resources the kept problem made: (resource, channel).
    rule_res: Vec<(u32, ChId)>,
    /// Per flow slot, the rule holding it; flow slots and caps in order.
    held_of: Vec<Option<ChId>>,
    slots: Vec<u32>,
    scratch: Vec<(u32, f64)>,
    rule_members: Vec<(usize, NodeIdx, NodeIdx)>,
    /// Build the problem from the flows at every solve (the reference).
    rebuild: bool,
    /// Flows just over: (kind, bytes moved).
    over: Vec<(u32, f64)>,
    /// Solve every recompute (the reference of the memo).
    full_solve: bool,
    /// Key the memo by the whole flow set (the reference of
    /// [`FlowState::memo_key`]).
    memo_whole_set: bool,
    /// Solve the kept problem from round 0 every time (the reference of
    /// the resumed solve).
    full_max_min: bool,
    /// Fill every flow at every solve (the reference of the component
    /// solve).
    whole_max_min: bool,
    /// A recompute is already scheduled for this time.
    pub pending: Option<Picos>,
    /// Flags seen on collapsing ports ([`FlagSights`]), and the channels
    /// whose rules their starts and ends changed.
    pub(super) flag_sights: FlagSights,
    sights_changed: Vec<ChId>,
}

impl FlowState {
    pub fn new(chans: usize, opts: super::FlowOptions) -> FlowState {
        FlowState {
            flows: vec![],
            ends: vec![],
            kinds: vec![],
            kind_of: Default::default(),
            key: vec![],
            last: Picos::ZERO,
            busy: vec![0.0; chans],
            bytes: vec![0.0; chans],
            ruled: vec![0.0; chans],
            slot: vec![],
            touched: vec![],
            kind_cap: vec![],
            rated: vec![],
            rated_at: vec![0],
            prepared: 0,
            caps: vec![],
            capacity: vec![],
            uses: vec![],
            start: vec![],
            on_rules: vec![],
            members: vec![],
            streams: vec![],
            rule_cap: vec![],
            rule_uses: vec![],
            rule_pos: vec![],
            shared: vec![],
            watched: vec![],
            solver: MaxMin::default(),
            memo: Memo::default(),
            set: vec![],
            last_set: vec![],
            last_whole: false,
            idle_joined: false,
            unbounded: false,
            live: LiveMaxMin::default(),
            gone: vec![],
            cross: Default::default(),
            collapse: Default::default(),
            dirty: vec![],
            rule_res: vec![],
            held_of: vec![],
            slots: vec![],
            scratch: vec![],
            rule_members: vec![],
            rebuild: opts.rebuild_problem,
            over: vec![],
            full_solve: opts.full_solve,
            memo_whole_set: opts.memo_whole_set,
            full_max_min: opts.full_max_min,
            whole_max_min: opts.whole_max_min,
            pending: None,
            flag_sights: FlagSights::default(),
            sights_changed: vec![],
        }
    }

    /// Moves every flow forward to `now` at its current rate.
    pub fn advance(&mut self, now: Picos) {
        let dt = now.0.saturating_sub(self.last.0) as f64 / 1e12;
        if dt > 0.0 {
            for f in &mut self.flows {
                if f.start > self.last {
                    continue;
                }
                f.remaining -= f.rate * dt;
                if let Some(c) = f.held {
                    self.ruled[c.ix()] += f.rate * dt;
                }
            }
        }
        self.last = now;
    }

    /// A flow that moved `moved` bytes is over: the channels it used were
    /// busy for them (counted once, not at every advance).
    fn account(&mut self, kind: u32, moved: f64, fabric: &Fabric) {
        let k = &self.kinds[kind as usize];
        for &(c, _, _, _) in &k.rules {
            self.bytes[c.ix()] += moved;
        }
        for &(c, w) in &k.uses {
            if let Some(r) = fabric.chans[c].rate {
                self.busy[c.ix()] += moved * w / r.0 as f64 * 1e12;
            }
        }
    }

    /// The kind of a flow with this cap, these uses and rules (interned:
    /// the same ask gets the same index).
    pub fn intern(
        &mut self,
        cap: f64,
        uses: &[(ChId, f64)],
        rules: &[(ChId, NodeIdx, NodeIdx, f64)],
    ) -> u32 {
        self.key.clear();
        self.key.push(cap.to_bits());
        self.key.push(uses.len() as u64);
        for &(c, w) in uses {
            self.key.push(c.0 as u64);
            self.key.push(w.to_bits());
        }
        for &(c, a, b, w) in rules {
            self.key.push(c.0 as u64);
            self.key.push(a.0 as u64);
            self.key.push(b.0 as u64);
            self.key.push(w.to_bits());
        }
        if let Some(&k) = self.kind_of.get(self.key.as_slice()) {
            return k;
        }
        let k = self.kinds.len() as u32;
        self.kinds.push(Kind {
            cap,
            uses: uses.to_vec(),
            rules: rules.to_vec(),
        });
        self.kind_of.insert(self.key.clone(), k);
        k
    }

    /// A flow of `bytes` whose first `uncapped` bytes its cap does not
    /// bound (a read's first window).
    pub fn add(
        &mut self,
        xfer: XferId,
        bytes: f64,
        kind: u32,
        uncapped: f64,
        tail: Picos,
        setup: Picos,
    ) {
        let start = self.last + setup;
        if start <= self.last || !self.kinds[kind as usize].rules.is_empty() {
            self.idle_joined = false;
        }
        self.flows.push(Flow {
            remaining: bytes,
            rate: 0.0,
            kind,
            capped_below: (bytes - uncapped.clamp(0.0, bytes)).max(0.0),
            start,
            held: None,
            slot: NO_SLOT,
        });
        self.ends.push(FlowEnd { xfer, bytes, tail });
    }

    /// A flag reaches collapsing channel `c` at `from`, from `source`
    /// toward root complex `target`: the port's rule counts the pair until
    /// `until` ([`FlagSights`]).
    pub fn sight(&mut self, c: ChId, source: NodeIdx, target: NodeIdx, from: Picos, until: Picos) {
        self.flag_sights.add(c, source, target, from, until);
    }

    /// When the next flag a collapsing port counts starts or ends.
    pub fn next_sight(&self, now: Picos) -> Option<Picos> {
        self.flag_sights.next(now)
    }

    /// New rates for every flow: from the memo where this flow set was
    /// solved before, else solved (and remembered).
    pub fn recompute(&mut self, fabric: &Fabric) {
        let mut changed = std::mem::take(&mut self.sights_changed);
        self.flag_sights.update(self.last, &mut changed);
        for c in changed.drain(..) {
            self.collapse_changed(c);
        }
        self.sights_changed = changed;
        self.rates(fabric);
        // A first window no rated channel bounds goes out and lands at once:
        // the flow is through it, and its cap binds from there (no flow
        // is unbounded: none is, and the pass is saved).
        if !self.unbounded {
            return;
        }
        let mut jumped = false;
        for f in &mut self.flows {
            if f.rate.is_infinite() && f.in_first_window() {
                f.remaining = f.capped_below;
                jumped = true;
            }
        }
        if jumped {
            self.rates(fabric);
        }
    }

    /// Each kind's cap and uses of rated channels, with their rates (once
    /// per kind).
    fn prepare(&mut self, fabric: &Fabric) {
        for k in &self.kinds[self.prepared..] {
            self.kind_cap.push(k.cap);
            for &(c, w) in &k.uses {
                if let Some(r) = fabric.chans[c].rate {
                    self.rated.push((c, w, r.0 as f64));
                }
            }
            self.rated_at.push(self.rated.len());
        }
        self.prepared = self.kinds.len();
    }

    /// Max-min fair rates of the flows now, solved on the kept problem or
    /// (the reference) on one built from the flows.
    fn solve(&mut self, fabric: &Fabric) {
        self.prepare(fabric);
        if self.rebuild {
            self.solve_rebuilt(fabric)
        } else {
            self.solve_kept(fabric)
        }
    }

    /// When the next flow drains (or a delayed flow starts). One rounding
    /// for all the flows: a time rounds up to whole picoseconds, which
    /// keeps the order of times, so the soonest rounded is the soonest
    /// rounded up (the reference, [`FlowState::next_finish_each`], rounds
    /// every flow's).
    pub fn next_finish(&self, now: Picos) -> Option<Picos> {
        // (the soonest delayed start kept as a plain minimum, and whether
        // there is one)
        let mut start = u64::MAX;
        let mut delayed = false;
        let mut drain = f64::INFINITY;
        let mut any = false;
        for f in &self.flows {
            if f.start > now {
                start = start.min(f.start.0);
                delayed = true;
            } else if f.rate > 0.0 && f.rate.is_finite() {
                // drained, or through its first window (its cap binds from there)
                let to = if f.in_first_window() {
                    f.remaining - f.capped_below
                } else {
                    f.remaining.max(0.0)
                };
                drain = drain.min(to / f.rate * 1e12);
                any = true;
            } else if f.rate.is_infinite() {
                return Some(now);
            }
        }
        let soonest = delayed.then_some(Picos(start));
        if any {
            let t = now + Picos(drain.ceil() as u64);
            return Some(soonest.map_or(t, |s| s.min(t)));
        }
        soonest
    }

    /// [`FlowState::next_finish`] rounding every flow's time (the reference).
    #[cfg(test)]
    pub fn next_finish_each(&self, now: Picos) -> Option<Picos> {
        self.flows
            .iter()
            .filter_map(|f| {
                if f.start > now {
                    Some(f.start)
                } else if f.rate > 0.0 && f.rate.is_finite() {
                    // drained, or through its first window (its cap binds from there)
                    let to = if f.in_first_window() {
                        f.remaining - f.capped_below
                    } else {
                        f.remaining.max(0.0)
                    };
                    Some(now + Picos((to / f.rate * 1e12).ceil() as u64))
                } else if f.rate.is_infinite() {
                    Some(now)
                } else {
                    None
                }
            })
            .min()
    }

    /// Removes drained flows into `out`: (transfer, tail latency).
    pub fn take_finished(&mut self, out: &mut Vec<(XferId, Picos)>, fabric: &Fabric) {
        out.clear();
        let last = self.last;
        let done = |f: &Flow| f.start <= last && (f.remaining <= 0.5 || f.rate.is_infinite());
        // (a tick where only flows start or leave their first window drains
        // none: nothing to keep in order; the flows before the first one
        // drained stay where they are)
        let Some(first) = self.flows.iter().position(done) else {
            return;
        };
        self.last_whole = false;
        self.idle_joined = false;
        let mut over = std::mem::take(&mut self.over);
        // the flows left keep their order: each run of them between drained
        // ones moves down over the drained ones before it, in one move
        let n = self.flows.len();
        let (mut kept, mut i) = (first, first);
        while i < n {
            let f = self.flows[i];
            if !done(&f) {
                let run = i;
                while i < n && !done(&self.flows[i]) {
                    i += 1;
                }
                self.flows.copy_within(run..i, kept);
                self.ends.copy_within(run..i, kept);
                kept += i - run;
                continue;
            }
            let end = self.ends[i];
            i += 1;
            out.push((end.xfer, end.tail));
            // an unbounded flow (no rated channel, no cap) drains the
            // instant it starts and keeps no channel busy
            let moved = if f.rate.is_infinite() {
                0.0
            } else {
                end.bytes - f.remaining
            };
            over.push((f.kind, moved));
            if f.slot != NO_SLOT {
                self.gone.push((f.slot, f.kind));
            }
        }
        self.flows.truncate(kept);
        self.ends.truncate(kept);
        for &(k, moved) in &over {
            self.account(k, moved, fabric);
        }
        over.clear();
        self.over = over;
    }
}

#[cfg(test)]
mod next_finish_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// One rounding for all the flows gives the time rounding each
        /// flow's does: flows delayed, draining, through their first
        /// window, stopped and unbounded.
        #[test]
        fn one_rounding_matches_rounding_each_flow(
            flows in proptest::collection::vec(
                (0u8..5, 1.0f64..1e9, 0.0f64..1e9, 1e3f64..1e12, 0u64..5_000_000),
                0..40,
            ),
            now in 0u64..1_000_000,
        ) {
            let mut st = FlowState::new(1, Default::default());
            for (i, &(case, bytes, below, rate, start)) in flows.iter().enumerate() {
                let remaining = bytes * 0.5;
                st.flows.push(Flow {
                    remaining,
                    rate: match case {
                        0 => 0.0,
                        1 if i % 7 == 0 => f64::INFINITY,
                        _ => rate,
                    },
                    kind: 0,
                    capped_below: if case == 2 { below.min(remaining) } else { 0.0 },
                    start: Picos(if case == 3 { start } else { 0 }),
                    held: None,
                    slot: NO_SLOT,
                });
            }
            let now = Picos(now);
            prop_assert_eq!(st.next_finish(now), st.next_finish_each(now));
        }
    }
}
