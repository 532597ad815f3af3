//! DESIGN 1, 3 — one direction of a link at TLP fidelity: queues per credit
//! class, serialization of each TLP's wire bytes at the link rate after
//! DLLP overhead, credits held at the receiver until the packet moves on,
//! and wake-ups when credit returns unblock a waiting queue.

use super::lane::Lanes;
use super::packet::PktId;
use super::{Tlp, TlpEv};
use crate::engine::ids::ChId;
use crate::engine::{Agenda, Ev, World};
use crate::fidelity::tlp::credits::{Class, Credits, is_finite};
use crate::model::channel::{ChannelSpec, Serial, StageRule};
use crate::model::collapse::{Recent, Via};
use crate::model::cross_socket::CrossState;
use contend_topo::{Picos, TlpKind};

/// What the per-packet path reads of a channel's spec, kept beside its
/// state (the spec, with its name, is large and read rarely).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fixed {
    pub serial: Serial,
    pub latency: Picos,
    pub pipeline: Picos,
    /// A stage, passed inline ([`ChannelSpec::is_stage`]).
    pub stage: bool,
    /// A stage that only delays ([`ChannelSpec::is_delay`]).
    pub delay: bool,
    /// The channel has a rule (collapse, cross-socket) that sees the path.
    pub ruled: bool,
    /// Per class: the receiver's buffer is finite (its credits come back).
    pub finite: [bool; 3],
}

impl Fixed {
    fn of(spec: &ChannelSpec) -> Fixed {
        Fixed {
            serial: spec.serial(),
            latency: spec.latency,
            pipeline: spec.pipeline,
            stage: spec.is_stage(),
            delay: spec.is_delay(),
            ruled: !matches!(spec.rule, StageRule::None),
            finite: [0, 1, 2].map(|class| is_finite(&spec.credits, class)),
        }
    }
}

/// A packet waiting in a channel's queue, with what choosing the next one
/// to start reads (so the choice never looks into the packet pool).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Queued {
    pub pk: PktId,
    /// Payload bytes the credits count.
    pub data: u32,
    /// Arrival order across the credit classes.
    pub seq: u64,
    /// Not sent before this time.
    pub ready: Picos,
}

/// A channel's state as the run goes.
#[derive(Debug)]
pub(crate) struct Chan {
    pub fixed: Fixed,
    /// When the channel's last started packet has been serialized.
    pub busy_until: Picos,
    /// Picoseconds spent serializing so far.
    pub busy: u64,
    /// Packets waiting, per credit class, in order of readiness.
    pub q: Lanes,
    /// Credits for the receiver at the channel's far end.
    pub credits: Credits,
    /// A wake-up already scheduled for this time.
    pub wake: Option<Picos>,
    /// Posted-write collapse bookkeeping (collapsing ports only). Boxed,
    /// as `cross`: only ruled channels read them, and inline they made a
    /// channel eleven cache lines where the per-packet fields fit in a few.
    pub recent: Box<Recent>,
    /// Cross-socket stream bookkeeping (cross-socket stages only).
    pub cross: Box<CrossState>,
    /// Wire bytes that crossed it, and those its rule held (collapsed, or
    /// held by a stream cap).
    pub bytes: u64,
    pub ruled: u64,
}

impl Chan {
    pub fn new(spec: &ChannelSpec) -> Chan {
        Chan {
            fixed: Fixed::of(spec),
            busy_until: Picos::ZERO,
            busy: 0,
            q: Default::default(),
            credits: Credits::new(&spec.credits),
            wake: None,
            recent: Box::default(),
            cross: Box::default(),
            bytes: 0,
            ruled: 0,
        }
    }

    /// Takes the channel for one packet from `start`: returns the
    /// serialization time it holds the channel for (at the collapsed or
    /// degraded rate where the stage's rule says so) and when it is through
    /// (later, where a cross-socket stream's own cap holds it). `spec` is
    /// read only for a channel with a rule. (Always inlined: the hop's
    /// hottest call; the compiler's own choice left it out of line.)
    #[inline(always)]
    pub fn occupy(
        &mut self,
        spec: &ChannelSpec,
        via: Option<Via>,
        kind: TlpKind,
        data: u32,
        start: Picos,
    ) -> (Picos, Picos) {
        let wire = self.fixed.serial.wire(kind, data);
        let mut ser = self.fixed.serial.ser(wire);
        let mut through = None;
        if self.fixed.ruled {
            match (&spec.rule, via) {
                (StageRule::Collapse(rule), Some((source, target))) => {
                    // a posted write costs its wire bytes; a read request,
                    // where the port collapses per TLP, what a write of
                    // the rule's request bytes would
                    let cost = match kind {
                        TlpKind::Write => Some(wire),
                        TlpKind::ReadRequest => rule
                            .request_bytes()
                            .map(|b| self.fixed.serial.wire(TlpKind::Write, b)),
                        _ => None,
                    };
                    if let Some(cost) = cost
                        && let Some(s) = rule.observe(&mut self.recent, source, target, start, cost)
                    {
                        ser = s;
                        self.ruled += wire as u64;
                    }
                }
                (StageRule::CrossSocket(rule), Some(key)) => {
                    let (s, t, held) = rule.observe(&mut self.cross, key, start, wire);
                    ser = s;
                    if held {
                        self.ruled += wire as u64;
                    }
                    through = Some(t);
                }
                _ => {}
            }
        }
        self.busy_until = start + ser;
        self.busy += ser.0;
        self.bytes += wire as u64;
        (ser, through.map_or(start + ser, |t| t.max(start + ser)))
    }

    fn waiting(&self) -> bool {
        self.q.any()
    }

    /// Puts a packet in its class's queue in order of readiness: one that
    /// carries a later ready time (paced, not yet visible) does not hold
    /// back a packet ready before it, as if each joined when ready.
    #[inline]
    fn queue(&mut self, class: Class, e: Queued) {
        self.q.queue(class, e);
    }
}

impl Tlp {
    /// Starts every queued packet the receiver has credits for. Packets go
    /// out back to back in arrival order (oldest first across the three
    /// credit classes); a packet that must wait for the channel is scheduled
    /// at the time the channel frees, so a busy channel costs no extra events.
    pub(super) fn try_start<A: Agenda<TlpEv>>(&mut self, w: &mut World<'_, A>, c: ChId) {
        let now = w.now;
        let ch = &mut self.chans[c];
        ch.credits.collect(now);
        loop {
            let ch = &self.chans[c];
            // a packet is taken once it is ready by the time the channel
            // frees: one that becomes ready later (a paced store, a store
            // not yet visible) is left queued, holding neither the channel
            // nor credits, and wakes the channel when ready
            let free = ch.busy_until.max(now);
            let mut best: Option<(u64, Class)> = None;
            let mut ready_at: Option<Picos> = None;
            // one pass over the three queue heads, read where they are
            // (not copied out first), the loop written out
            let mut look = |class: Class| {
                let Some(h) = ch.q.front(class) else {
                    return;
                };
                if h.ready > free {
                    ready_at = Some(ready_at.map_or(h.ready, |t| t.min(h.ready)));
                } else if ch.credits.allows(class, h.data) && best.is_none_or(|(s, _)| h.seq < s) {
                    best = Some((h.seq, class));
                }
            };
            look(0);
            look(1);
            look(2);
            let Some((_, class)) = best else {
                // Blocked on credits (a credit return wakes the channel) or
                // waiting for a packet to become ready.
                let ch = &mut self.chans[c];
                let credit = (ch.waiting() && ch.credits.has_returns())
                    .then(|| ch.credits.coalesced_return(self.fc_coalesce));
                let t = match (credit, ready_at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                if let Some(t) = t
                    && ch.wake.is_none_or(|w| w > t)
                {
                    ch.wake = Some(t);
                    w.push(t, Ev::Net(TlpEv::Wake(c)));
                }
                return;
            };
            let ch = &mut self.chans[c];
            let e = ch.q.pop_front(class).expect("head exists");
            self.start(w, c, class, e.pk, e.data, e.ready, free);
        }
    }

    /// Starts packet `pk` (of `class`, `data` credited bytes, ready at
    /// `ready`) on channel `c`, free from `free`, whose receiver has the
    /// credits for it: spends them, hands the upstream buffer back,
    /// occupies the channel and schedules the arrival.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn start<A: Agenda<TlpEv>>(
        &mut self,
        w: &mut World<'_, A>,
        c: ChId,
        class: Class,
        pk: PktId,
        data: u32,
        ready: Picos,
        free: Picos,
    ) {
        let ch = &mut self.chans[c];
        ch.credits.spend(class, data);
        let start = free.max(ready);
        let p = &mut self.pool.pkts[pk];
        // (the kind's fields are read only for a store leaving its GPU: the
        // kind is not copied whole)
        let (held, path, at, tlp) = (p.held, p.path, p.at, p.kind.tlp());
        let h = w.fabric.hops[at as usize];
        let store = match p.kind {
            super::PktKind::Write { xfer, .. } if h.hop == 0 => Some(xfer),
            _ => None,
        };
        let fixed = ch.fixed;
        crate::study::start_trace::record(crate::study::start_trace::ChannelStart {
            at: start,
            chan: c.0,
            path: path.0,
            hop: h.hop,
            class: class as u8,
        });
        p.held = Some(c);
        if let Some(prev) = held {
            // the upstream buffer frees when the packet moves on; the
            // latency of stages (and of a switch's forwarding) passed
            // since is pipeline, not buffer
            let freed = start.saturating_sub(h.pipeline);
            self.give_back(w, prev, class, data, freed);
        }
        let via = if fixed.ruled { h.via } else { None };
        let ch = &mut self.chans[c];
        let (ser, _) = ch.occupy(&w.fabric.chans[c], via, tlp, data, start);
        w.push(start + ser + fixed.latency, Ev::Net(TlpEv::Arrive(pk)));
        if let Some(xfer) = store {
            // the SM's store buffer slot frees when the TLP leaves the GPU
            let g = w.xfers[xfer].group;
            self.stores[g].departs.push_back(start);
            self.schedule_depart(w, g);
        }
    }

    /// The receive buffer of channel `c` frees `data` bytes of `class` at
    /// `at`; the sender learns of it one wire latency plus an UpdateFC later.
    /// (Always inlined: it runs at every hop past the first, and the call
    /// cost ~0.5 % of a TLP run's instructions.)
    #[inline(always)]
    pub(super) fn give_back<A: Agenda<TlpEv>>(
        &mut self,
        w: &mut World<'_, A>,
        c: ChId,
        class: Class,
        data: u32,
        at: Picos,
    ) {
        let ch = &mut self.chans[c];
        let fixed = &ch.fixed;
        if !fixed.finite[class] {
            return;
        }
        // (`at` may lie in the past by a pipeline's latency; the sender
        // cannot learn of it before now)
        // The UpdateFC DLLP crosses the wire only (a switch's forwarding
        // pipeline is not on its way).
        let t = (at + fixed.latency.saturating_sub(fixed.pipeline) + self.fc_delay).max(w.now);
        ch.credits.returning(t, class, data);
        // A non-empty queue means the channel waits for credits.
        if ch.waiting() {
            let t = ch.credits.coalesced_return(self.fc_coalesce);
            if ch.wake.is_none_or(|w| w > t) {
                ch.wake = Some(t);
                w.push(t, Ev::Net(TlpEv::Wake(c)));
            }
        }
    }

    /// Puts a packet on the next link of its path, passing root-complex
    /// stages on the way inline ([`pass_stage`]).
    pub(super) fn enqueue<A: Agenda<TlpEv>>(&mut self, w: &mut World<'_, A>, pk: PktId) {
        let p = &self.pool.pkts[pk];
        let (kind, data, seq) = (p.kind, p.data(), p.seq);
        let (mut at, mut ready) = (p.at, p.ready);
        let mut staged = false;
        loop {
            let h = w.fabric.hops[at as usize];
            let c = h.chan;
            let ch = &mut self.chans[c];
            if !ch.fixed.stage {
                if staged {
                    let p = &mut self.pool.pkts[pk];
                    (p.at, p.ready) = (at, ready);
                    if ready > w.now {
                        // Out of the stages later than now: the packet joins
                        // the link's queue when it is out (one event for all
                        // the stages), not ahead of packets ready before it.
                        w.push(ready, Ev::Net(TlpEv::Staged(pk)));
                        return;
                    }
                }
                let class = kind.class();
                if !self.opts.queued_start && !ch.waiting() {
                    // An empty channel: the packet goes straight out if it
                    // is ready by the time the channel frees and its
                    // receiver has credits, as `try_start` would start it
                    // from the queue (nothing else is queued to go first
                    // or to wait for a credit return afterwards).
                    let now = w.now;
                    ch.credits.collect(now);
                    let free = ch.busy_until.max(now);
                    if ready <= free && ch.credits.allows(class, data) {
                        self.start(w, c, class, pk, data, ready, free);
                        return;
                    }
                }
                let e = Queued {
                    pk,
                    data,
                    seq,
                    ready,
                };
                ch.queue(class, e);
                self.try_start(w, c);
                return;
            }
            staged = true;
            let via = if ch.fixed.ruled { h.via } else { None };
            let leave = pass_stage(ch, &w.fabric.chans[c], via, kind.tlp(), data, ready, w.now);
            // (the stage's latency is pipeline, not buffer: the credit the
            // packet holds upstream comes back that much before it leaves,
            // see `Path::pipeline`)
            ready = leave;
            at += 1;
            if self.opts.queued_stages {
                // the reference: an event where the packet leaves the stage
                let p = &mut self.pool.pkts[pk];
                (p.at, p.ready) = (at, ready);
                w.push(leave, Ev::Net(TlpEv::Staged(pk)));
                return;
            }
        }
    }
}

/// A packet of `kind` with `data` payload bytes, ready at `ready`, passes
/// stage `spec` (state `ch`; `spec` is read only for a stage's rule) now. `via`: what the stage's rule sees of the
/// packet's path. Returns when it leaves. (Always inlined: it runs once
/// a stage passed, ~950 k times in a one-shot-pull step of 8 layers, and
/// out of line its call cost ~1 % of a TLP run's instructions.)
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pass_stage(
    ch: &mut Chan,
    spec: &ChannelSpec,
    via: Option<Via>,
    kind: TlpKind,
    data: u32,
    ready: Picos,
    now: Picos,
) -> Picos {
    let latency = ch.fixed.latency;
    if ch.fixed.delay {
        // a stage that only delays (an I/O die crossing, a forwarding
        // latency) holds no slot: packets passing it never wait for each other
        return ready.max(now) + latency;
    }
    let start = ch.busy_until.max(ready).max(now);
    let (_, through) = ch.occupy(spec, via, kind, data, start);
    through + latency
}
