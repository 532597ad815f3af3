//! DESIGN 1, 3 — one direction of a link at TLP fidelity: queues per credit
//! class, serialization of each TLP's wire bytes at the link rate after
//! DLLP overhead, credits held at the receiver until the packet moves on,
//! and wake-ups when credit returns unblock a waiting queue.

use super::{Tlp, TlpEv};
use crate::collapse::{Recent, Via};
use crate::credits::{Class, Credits, is_finite};
use crate::cross_socket::CrossState;
use crate::engine::{Ev, World};
use crate::fabric::{ChannelSpec, StageRule};
use crate::ids::{ChId, PktId};
use crate::queue::EventQueue;
use contend_topo::{Picos, TlpKind};
use std::collections::VecDeque;

/// A channel's state as the run goes.
#[derive(Debug)]
pub(crate) struct Chan {
    /// When the channel's last started packet has been serialized.
    pub busy_until: Picos,
    /// Picoseconds spent serializing so far.
    pub busy: u64,
    /// Packets waiting, per credit class, in arrival order.
    pub q: [VecDeque<PktId>; 3],
    /// Credits for the receiver at the channel's far end.
    pub credits: Credits,
    /// A wake-up already scheduled for this time.
    pub wake: Option<Picos>,
    /// Posted-write collapse bookkeeping (collapsing ports only).
    pub recent: Recent,
    /// Cross-socket stream bookkeeping (cross-socket stages only).
    pub cross: CrossState,
    /// Wire bytes that crossed it, and those its rule held (collapsed, or
    /// held by a stream cap).
    pub bytes: u64,
    pub ruled: u64,
}

impl Chan {
    pub fn new(spec: &ChannelSpec) -> Chan {
        Chan {
            busy_until: Picos::ZERO,
            busy: 0,
            q: Default::default(),
            credits: Credits::new(&spec.credits),
            wake: None,
            recent: Vec::new(),
            cross: CrossState::default(),
            bytes: 0,
            ruled: 0,
        }
    }

    /// Takes the channel for one packet from `start`: returns the
    /// serialization time it holds the channel for (at the collapsed or
    /// degraded rate where the stage's rule says so) and when it is through
    /// (later, where a cross-socket stream's own cap holds it).
    #[inline]
    pub fn occupy(
        &mut self,
        spec: &ChannelSpec,
        via: Option<Via>,
        kind: TlpKind,
        data: u32,
        start: Picos,
    ) -> (Picos, Picos) {
        let wire = spec.wire(kind, data);
        let mut ser = spec.ser(wire);
        let mut through = None;
        match (&spec.rule, via) {
            (StageRule::Collapse(rule), Some((source, target))) if kind == TlpKind::Write => {
                if let Some(s) = rule.observe(&mut self.recent, source, target, start, wire) {
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
        self.busy_until = start + ser;
        self.busy += ser.0;
        self.bytes += wire as u64;
        (ser, through.map_or(start + ser, |t| t.max(start + ser)))
    }

    fn waiting(&self) -> bool {
        self.q.iter().any(|q| !q.is_empty())
    }
}

impl Tlp {
    /// Starts every queued packet the receiver has credits for. Packets go
    /// out back to back in arrival order (oldest first across the three
    /// credit classes); a packet that must wait for the channel is scheduled
    /// at the time the channel frees, so a busy channel costs no extra events.
    pub(super) fn try_start<Q: EventQueue<Ev<TlpEv>>>(&mut self, w: &mut World<'_, Q>, c: ChId) {
        let now = w.now;
        self.chans[c].credits.collect(now);
        loop {
            let ch = &self.chans[c];
            // a packet is taken once it is ready by the time the channel
            // frees: one that becomes ready later (a paced store, a store
            // not yet visible) is left queued, holding neither the channel
            // nor credits, and wakes the channel when ready
            let free = ch.busy_until.max(now);
            let mut best: Option<(u64, Class)> = None;
            let mut ready_at: Option<Picos> = None;
            for class in 0..3 {
                if let Some(&pk) = ch.q[class].front() {
                    let p = &self.pool.pkts[pk];
                    if p.ready > free {
                        ready_at = Some(ready_at.map_or(p.ready, |t| t.min(p.ready)));
                    } else if ch.credits.allows(class, p.data())
                        && best.is_none_or(|(s, _)| p.seq < s)
                    {
                        best = Some((p.seq, class));
                    }
                }
            }
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
            let pk = ch.q[class].pop_front().expect("head exists");
            let p = self.pool.pkts[pk];
            let data = p.data();
            ch.credits.spend(class, data);
            let start = ch.busy_until.max(now).max(p.ready);
            if let Some((prev, d)) = p.held {
                // the upstream buffer frees when the packet moves on; the
                // latency of stages (and of a switch's forwarding) passed
                // since is pipeline, not buffer
                let freed = start.saturating_sub(p.pipeline);
                self.give_back(w, prev, class, d, freed);
            }
            let spec = &w.fabric.chans[c];
            let via = w.fabric.paths[p.path].via(p.hop);
            let (ser, _) = self.chans[c].occupy(spec, via, p.kind.tlp(), data, start);
            let (lat, pipeline) = (spec.latency, spec.pipeline);
            let q = &mut self.pool.pkts[pk];
            q.held = Some((c, data));
            q.pipeline = pipeline;
            w.push(start + ser + lat, Ev::Net(TlpEv::Arrive(pk)));
            if let (0, super::PktKind::Write { xfer, .. }) = (p.hop, p.kind) {
                // the SM's store buffer slot frees when the TLP leaves the GPU
                let g = w.xfers[xfer].group;
                self.stores[g].departs.push_back(start);
                self.schedule_depart(w, g);
            }
        }
    }

    /// The receive buffer of channel `c` frees `data` bytes of `class` at
    /// `at`; the sender learns of it one wire latency plus an UpdateFC later.
    pub(super) fn give_back<Q: EventQueue<Ev<TlpEv>>>(
        &mut self,
        w: &mut World<'_, Q>,
        c: ChId,
        class: Class,
        data: u32,
        at: Picos,
    ) {
        let spec = &w.fabric.chans[c];
        if !is_finite(&spec.credits, class) {
            return;
        }
        // (`at` may lie in the past by a pipeline's latency; the sender
        // cannot learn of it before now)
        // The UpdateFC DLLP crosses the wire only (a switch's forwarding
        // pipeline is not on its way).
        let t = (at + spec.latency.saturating_sub(spec.pipeline) + self.fc_delay).max(w.now);
        let ch = &mut self.chans[c];
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
    /// stages on the way inline ([`crate::root_complex::pass`]).
    pub(super) fn enqueue<Q: EventQueue<Ev<TlpEv>>>(&mut self, w: &mut World<'_, Q>, pk: PktId) {
        let mut p = self.pool.pkts[pk];
        let mut staged = false;
        loop {
            let c = w.fabric.paths[p.path].chans[p.hop as usize];
            let spec = &w.fabric.chans[c];
            if !spec.is_stage() {
                self.pool.pkts[pk] = p;
                if staged && p.ready > w.now {
                    // Out of the stages later than now: the packet joins the
                    // link's queue when it is out (one event for all the
                    // stages), not ahead of packets ready before it.
                    w.push(p.ready, Ev::Net(TlpEv::Staged(pk)));
                    return;
                }
                // in order of readiness: a store that carries a later ready
                // time (paced, not yet visible) does not hold back a packet
                // ready before it, as if each joined the queue when ready
                let q = &mut self.chans[c].q[p.kind.class()];
                let mut at = q.len();
                while at > 0 && self.pool.pkts[q[at - 1]].ready > p.ready {
                    at -= 1;
                }
                if at == q.len() {
                    q.push_back(pk);
                } else {
                    q.insert(at, pk);
                }
                self.try_start(w, c);
                return;
            }
            staged = true;
            let via = w.fabric.paths[p.path].via(p.hop);
            let leave = crate::root_complex::pass(
                &mut self.chans[c],
                spec,
                via,
                p.kind.tlp(),
                p.data(),
                p.ready,
                w.now,
            );
            // the stage's latency is pipeline, not buffer: the credit the
            // packet holds upstream comes back that much before it leaves
            p.pipeline += spec.latency;
            p.ready = leave;
            p.hop += 1;
            if self.opts.queued_stages {
                // the plain twin: an event where the packet leaves the stage
                self.pool.pkts[pk] = p;
                w.push(leave, Ev::Net(TlpEv::Staged(pk)));
                return;
            }
        }
    }
}
