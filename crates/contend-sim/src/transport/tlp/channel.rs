//! DESIGN 1, 3 — one direction of a link at TLP fidelity: queues per credit
//! class, serialization of each TLP's wire bytes at the link rate after
//! DLLP overhead, credits held at the receiver until the packet moves on,
//! and wake-ups when credit returns unblock a waiting queue.

use super::{Tlp, TlpEv};
use crate::collapse::{CollapseRule, Recent, Via};
use crate::credits::{Class, Credits, is_finite};
use crate::engine::{Ev, World};
use crate::fabric::ChannelSpec;
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
    /// Posted-write collapse bookkeeping (collapsing fabrics only).
    pub recent: Recent,
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
        }
    }

    /// Takes the channel for one packet from `start`; the serialization
    /// time (at the collapsed rate if the collapse rule fires for it).
    #[inline]
    pub fn occupy(
        &mut self,
        spec: &ChannelSpec,
        rule: &CollapseRule,
        collapse: Option<Via>,
        kind: TlpKind,
        data: u32,
        start: Picos,
    ) -> Picos {
        let wire = spec.wire(kind, data);
        let mut ser = spec.ser(wire);
        if spec.collapse
            && kind == TlpKind::Write
            && let Some((ingress, target)) = collapse
            && let Some(s) = rule.observe(&mut self.recent, ingress, target, start, wire)
        {
            ser = s;
        }
        self.busy_until = start + ser;
        self.busy += ser.0;
        ser
    }

    fn waiting(&self) -> bool {
        self.q.iter().any(|q| !q.is_empty())
    }
}

impl Tlp {
    /// The (ingress, target) the collapse rule sees for a packet at `hop` of its path.
    pub(super) fn collapse_of<Q>(
        w: &World<'_, Q>,
        path: crate::ids::PathId,
        hop: u16,
    ) -> Option<Via> {
        w.fabric.paths[path]
            .collapse_at
            .iter()
            .find(|(pos, _, _)| *pos == hop as usize)
            .map(|&(_, ing, t)| (ing, t))
    }

    /// Starts every queued packet the receiver has credits for. Packets go
    /// out back to back in arrival order (oldest first across the three
    /// credit classes); a packet that must wait for the channel is scheduled
    /// at the time the channel frees, so a busy channel costs no extra events.
    pub(super) fn try_start<Q: EventQueue<Ev<TlpEv>>>(&mut self, w: &mut World<'_, Q>, c: ChId) {
        let now = w.now;
        self.chans[c].credits.collect(now);
        loop {
            let ch = &self.chans[c];
            let mut best: Option<(u64, Class)> = None;
            for class in 0..3 {
                if let Some(&pk) = ch.q[class].front() {
                    let p = &self.pool.pkts[pk];
                    if ch.credits.allows(class, p.data()) && best.is_none_or(|(s, _)| p.seq < s) {
                        best = Some((p.seq, class));
                    }
                }
            }
            let Some((_, class)) = best else {
                // Blocked on credits: a credit return wakes the channel.
                let ch = &mut self.chans[c];
                if ch.waiting() && ch.credits.has_returns() {
                    let t = ch.credits.coalesced_return(self.fc_coalesce);
                    if ch.wake.is_none_or(|w| w > t) {
                        ch.wake = Some(t);
                        w.push(t, Ev::Net(TlpEv::Wake(c)));
                    }
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
                self.give_back(w, prev, class, d, start);
            }
            let spec = &w.fabric.chans[c];
            let collapse = Self::collapse_of(w, p.path, p.hop);
            let ser = self.chans[c].occupy(spec, &self.rule, collapse, p.kind.tlp(), data, start);
            let lat = spec.latency;
            self.pool.pkts[pk].held = Some((c, data));
            w.push(start + ser + lat, Ev::Net(TlpEv::Arrive(pk)));
            if let (0, super::PktKind::Write { xfer, .. }) = (p.hop, p.kind) {
                // the SM's store buffer slot frees when the TLP leaves the GPU
                let g = w.xfers[xfer].group;
                self.stores[g.ix()].departs.push_back(start);
                self.schedule_depart(w, g);
            }
        }
    }

    /// The receive buffer of channel `c` frees `data` bytes of `class` at
    /// `at`; the sender learns of it one link latency plus an UpdateFC later.
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
        let t = at + spec.latency + self.fc_delay;
        let ch = &mut self.chans[c];
        ch.credits.returning(t, class, data);
        // A non-empty queue means the channel waits for credits.
        if ch.wake.is_none() && ch.waiting() {
            let t = ch.credits.coalesced_return(self.fc_coalesce);
            ch.wake = Some(t);
            w.push(t, Ev::Net(TlpEv::Wake(c)));
        }
    }

    /// Puts a packet on the next link of its path, passing root-complex
    /// stages on the way inline ([`crate::root_complex::pass`]).
    pub(super) fn enqueue<Q: EventQueue<Ev<TlpEv>>>(&mut self, w: &mut World<'_, Q>, pk: PktId) {
        let mut p = self.pool.pkts[pk];
        loop {
            let c = w.fabric.paths[p.path].chans[p.hop as usize];
            let spec = &w.fabric.chans[c];
            if !spec.is_stage() {
                self.pool.pkts[pk] = p;
                self.chans[c].q[p.kind.class()].push_back(pk);
                self.try_start(w, c);
                return;
            }
            let collapse = Self::collapse_of(w, p.path, p.hop);
            let leave = crate::root_complex::pass(
                &mut self.chans[c],
                spec,
                &self.rule,
                collapse,
                p.kind.tlp(),
                p.data(),
                p.ready,
                w.now,
            );
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
