//! DESIGN 9 — TLP fidelity, the reference: every TLP is an event
//! at every hop; links serialize wire bytes ([`channel`]), receivers hold
//! credits ([`crate::fidelity::tlp::credits`]), root complexes forward ([`crate::model::root_complex`]),
//! requests wait a round trip for their completions, and SM stores pass the
//! store buffer ([`issue`]).

pub(crate) mod channel;
mod credits;
mod issue;
mod lane;
pub(crate) mod packet;

use self::channel::Chan;
use self::issue::StoreBuffer;
use self::packet::PktId;
use self::packet::{Pkt, PktKind, Pool};
use crate::actors::flags::{FlagAddr, Waiting};
use crate::engine::FidelityModel;
use crate::engine::ids::{ActorId, Arena, ChId, GroupId, PathId, Window, XferId};
use crate::engine::queue::Rebind;
use crate::engine::{Agenda, Ev, Outcome, Packed, PackedEvent, Queue, World};
use crate::model::fabric::Fabric;
use crate::model::gpu;
use crate::params::ModelParams;
use contend_topo::{NodeIdx, Picos};
use contend_workload::Notify;

/// The TLP fidelity's own events.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TlpEv {
    /// A packet reaches the far end of its current channel.
    Arrive(PktId),
    /// Store-buffer slots of a group come free.
    Depart(GroupId),
    /// A credit-blocked channel looks again.
    Wake(ChId),
    /// A packet is out of the root-complex stages it passed inline and joins
    /// its next link's queue (the reference: it leaves one stage).
    Staged(PktId),
    /// Twin of paced stores: an SM store is issued; a flag store has
    /// become visible.
    Issued(PktId),
    /// A copy engine's setup is over: its group starts issuing.
    Begin(GroupId),
}

impl PackedEvent for TlpEv {
    /// The variant in the low 3 bits, its id above.
    #[inline]
    fn pack(self) -> u64 {
        let (v, id) = match self {
            TlpEv::Arrive(p) => (0, p.0),
            TlpEv::Depart(g) => (1, g.0),
            TlpEv::Wake(c) => (2, c.0),
            TlpEv::Staged(p) => (3, p.0),
            TlpEv::Issued(p) => (4, p.0),
            TlpEv::Begin(g) => (5, g.0),
        };
        u64::from(id) << 3 | v
    }
    #[inline]
    fn unpack(w: u64) -> TlpEv {
        let id = (w >> 3) as u32;
        match w & 7 {
            0 => TlpEv::Arrive(PktId(id)),
            1 => TlpEv::Depart(GroupId(id)),
            2 => TlpEv::Wake(ChId(id)),
            3 => TlpEv::Staged(PktId(id)),
            4 => TlpEv::Issued(PktId(id)),
            _ => TlpEv::Begin(GroupId(id)),
        }
    }
}

/// The TLP fidelity's agenda over the event queue `Q`: its events packed
/// in one word ([`Packed`]), in the same kind of queue.
pub(crate) type TlpAgenda<Q> = Packed<<Q as Rebind>::With<u64>>;

/// Switches of the TLP fidelity's optimisations. Each `true` selects the
/// reference the optimisation is tested against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlpOptions {
    /// Root-complex stages cost an event each instead of being passed inline.
    pub queued_stages: bool,
    /// Store-buffer slots are handed back one per departed store instead
    /// of in batches of half the buffer.
    pub release_per_store: bool,
    /// Every paced SM store is an event at its issue time instead of a
    /// packet that carries its ready time.
    pub event_per_store: bool,
    /// Every packet joins its channel's queue and is started from there,
    /// even on an empty channel it could go straight out on.
    pub queued_start: bool,
}

pub(crate) struct Tlp {
    chans: Arena<ChId, Chan>,
    pool: Pool,
    /// Per live group (ids like the world's groups).
    stores: Window<GroupId, StoreBuffer>,
    fc_delay: Picos,
    fc_coalesce: u32,
    /// Store visibility latency of SM stores and flags.
    visibility: Picos,
    /// Per request path, once a request has taken it: what its completer
    /// answers with ([`Tlp::completer`]).
    completers: Vec<Option<Completer>>,
    opts: TlpOptions,
}

/// What the completer at the end of a request path answers with: its
/// memory's latency, and for a read coming back along `back` (the path
/// back, whose first hop is `back_first`), the completions' payload.
/// (Looked up once per path, not per request: the lookups read the
/// topology's node and the paths, and convert the latency from ns.)
#[derive(Clone, Copy, Debug)]
struct Completer {
    latency: Picos,
    back: PathId,
    back_first: u32,
    cpl: u32,
}

impl FidelityModel for Tlp {
    type Event = TlpEv;
    type Options = TlpOptions;
    type Agenda<Q: Queue<TlpEv>> = TlpAgenda<Q>;
    const STORE_BUFFER: bool = true;

    fn new(fabric: &Fabric, p: &ModelParams, opts: TlpOptions) -> Tlp {
        Tlp {
            chans: Arena::from_vec(fabric.chans.iter().map(Chan::new).collect()),
            pool: Pool::default(),
            stores: Window::default(),
            fc_delay: p.pcie.fc_update_ns.to_picos(),
            fc_coalesce: p.pcie.fc_coalesce,
            visibility: gpu::store_visibility(p),
            completers: Vec::new(),
            opts,
        }
    }

    fn begin_xfer<Q: Queue<TlpEv>>(
        &mut self,
        _: &mut World<'_, TlpAgenda<Q>>,
        _: XferId,
        _: Picos,
    ) {
        // TLPs are issued for the whole group at once (`begin_group`)
    }

    fn begin_group<Q: Queue<TlpEv>>(
        &mut self,
        w: &mut World<'_, TlpAgenda<Q>>,
        g: GroupId,
        setup: Picos,
    ) {
        let id = self.stores.push(StoreBuffer::default());
        debug_assert_eq!(g, id, "groups begin in order");
        if setup == Picos::ZERO {
            self.issue(w, g);
        } else {
            w.push(w.now + setup, Ev::Net(TlpEv::Begin(g)));
        }
    }

    fn group_freed(&mut self, g: GroupId) {
        self.stores.remove(g);
    }

    fn send_flag<Q: Queue<TlpEv>>(
        &mut self,
        w: &mut World<'_, TlpAgenda<Q>>,
        _from: ActorId,
        gpu: NodeIdx,
        dst: NodeIdx,
        flag: FlagAddr,
    ) {
        let path = w.fabric.route(w.topo, gpu, dst);
        let first = w.fabric.paths[path].first;
        let pk = self.pool.alloc(Pkt::new(
            PktKind::Flag { flag },
            w.p.gpu.flag_bytes,
            path,
            first,
        ));
        // a flag is an SM store: it joins the egress queue once visible
        if self.visibility > Picos::ZERO {
            w.push(w.now + self.visibility, Ev::Net(TlpEv::Issued(pk)));
        } else {
            self.enqueue(w, pk);
        }
    }

    fn poll<Q: Queue<TlpEv>>(
        &mut self,
        w: &mut World<'_, TlpAgenda<Q>>,
        actor: ActorId,
        gpu: NodeIdx,
        at: NodeIdx,
        wait: Waiting,
    ) {
        let path = w.fabric.route(w.topo, gpu, at);
        let kind = PktKind::PollReq {
            actor,
            flag: wait.flag,
            count: wait.count,
            back_to: gpu,
        };
        let first = w.fabric.paths[path].first;
        let pk = self
            .pool
            .alloc(Pkt::new(kind, w.p.gpu.flag_bytes, path, first));
        self.enqueue(w, pk);
    }

    fn handle<Q: Queue<TlpEv>>(&mut self, w: &mut World<'_, TlpAgenda<Q>>, ev: TlpEv) {
        match ev {
            TlpEv::Arrive(pk) => self.arrive(w, pk),
            TlpEv::Wake(c) => {
                if self.chans[c].wake == Some(w.now) {
                    self.chans[c].wake = None;
                }
                self.try_start(w, c);
            }
            TlpEv::Depart(g) => self.depart(w, g),
            TlpEv::Staged(pk) | TlpEv::Issued(pk) => self.enqueue(w, pk),
            TlpEv::Begin(g) => self.issue(w, g),
        }
    }

    fn busy_ps(&self, c: ChId) -> f64 {
        self.chans[c].busy as f64
    }

    fn bytes(&self, c: ChId) -> f64 {
        self.chans[c].bytes as f64
    }

    fn ruled_bytes(&self, c: ChId) -> f64 {
        self.chans[c].ruled as f64
    }
}

impl Tlp {
    /// A packet reached the far end of its channel: on to the next one, or
    /// delivered.
    fn arrive<A: Agenda<TlpEv>>(&mut self, w: &mut World<'_, A>, pk: PktId) {
        let p = &mut self.pool.pkts[pk];
        if !w.fabric.hops[p.at as usize].last {
            p.at += 1;
            p.ready = w.now;
            self.enqueue(w, pk);
            return;
        }
        // At the destination: the receive buffer frees at once.
        let (held, kind, payload, data) = (p.held.take(), p.kind, p.payload, p.data());
        if let Some(prev) = held {
            self.give_back(w, prev, kind.class(), data, w.now);
        }
        match kind {
            PktKind::Write { xfer, last } => {
                let xf = &mut w.xfers[xfer];
                xf.done += payload as u64;
                if last && let Notify::Inline { to, phase } = xf.notify {
                    let flag = FlagAddr {
                        to: ActorId(to.0),
                        epoch: xf.epoch,
                        phase: phase.0,
                    };
                    w.tell(Outcome::Flag(flag));
                }
                crate::actors::transfer::delivered(&mut w.xfers, xfer);
                self.pool.release(pk);
            }
            PktKind::Flag { flag } => {
                w.tell(Outcome::Flag(flag));
                self.pool.release(pk);
            }
            PktKind::ReadReq { .. } | PktKind::PollReq { .. } => self.mem_done(w, pk),
            PktKind::Cpl { xfer, last } => {
                let xf = &mut w.xfers[xfer];
                xf.done += payload as u64;
                let finished = xf.done >= xf.total;
                let g = xf.group;
                self.pool.release(pk);
                if last {
                    w.groups[g].window += 1;
                    self.issue(w, g);
                }
                if finished {
                    w.tell(Outcome::XferDone(xfer));
                }
            }
            PktKind::PollCpl {
                actor,
                flag,
                count,
                seen,
            } => {
                self.pool.release(pk);
                w.tell(Outcome::Polled {
                    actor,
                    wait: Waiting { flag, count },
                    seen,
                });
            }
        }
    }

    /// A read reached its completer: the completions go back along the
    /// reverse path, ready once the memory has been read. A poll reads
    /// memory now: whether the flags are in is fixed at this moment.
    fn mem_done<A: Agenda<TlpEv>>(&mut self, w: &mut World<'_, A>, pk: PktId) {
        let p = &self.pool.pkts[pk];
        let (path, kind, payload) = (p.path, p.kind, p.payload);
        match kind {
            PktKind::PollReq {
                actor,
                flag,
                count,
                back_to,
            } => {
                let completer = w.fabric.paths[path].end;
                let ready = w.now + gpu::memory_latency(w.topo, w.p, completer);
                let seen = w.flags.count(flag) >= count;
                let back = w.fabric.route(w.topo, completer, back_to);
                let seq = self.pool.next_seq();
                let q = &mut self.pool.pkts[pk];
                q.kind = PktKind::PollCpl {
                    actor,
                    flag,
                    count,
                    seen,
                };
                q.path = back;
                q.at = w.fabric.paths[back].first;
                q.seq = seq;
                q.ready = ready;
                self.enqueue(w, pk);
            }
            PktKind::ReadReq { xfer } => {
                let back = w.xfers[xfer].back();
                let Completer {
                    latency,
                    back_first,
                    cpl,
                    ..
                } = self.completer(w, path, back);
                let ready = w.now + latency;
                let mut left = payload;
                let mut first = true;
                while left > 0 {
                    let size = left.min(cpl);
                    left -= size;
                    let kind = PktKind::Cpl {
                        xfer,
                        last: left == 0,
                    };
                    let mut c = Pkt::new(kind, size, back, back_first);
                    c.ready = ready;
                    let id = if first {
                        first = false;
                        c.seq = self.pool.next_seq();
                        self.pool.pkts[pk] = c;
                        pk
                    } else {
                        self.pool.alloc(c)
                    };
                    self.enqueue(w, id);
                }
            }
            _ => unreachable!("only requests reach memory"),
        }
    }

    /// What the completer of request path `path` answers a read with that
    /// comes back along `back`: remembered per path (and looked up again
    /// should a path's reads come back another way).
    #[inline]
    fn completer<A: Agenda<TlpEv>>(
        &mut self,
        w: &World<'_, A>,
        path: PathId,
        back: PathId,
    ) -> Completer {
        let i = path.ix();
        if let Some(Some(c)) = self.completers.get(i)
            && c.back == back
        {
            return *c;
        }
        let completer = w.fabric.paths[path].end;
        let bp = &w.fabric.paths[back];
        let c = Completer {
            latency: gpu::memory_latency(w.topo, w.p, completer),
            back,
            back_first: bp.first,
            cpl: gpu::completion_bytes(w.topo, w.p, completer, bp.mps, bp.rcb),
        };
        if self.completers.len() <= i {
            self.completers.resize(i + 1, None);
        }
        self.completers[i] = Some(c);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every TLP event, ids at both ends of their range, comes back from
    /// its packed word as it went in.
    #[test]
    fn tlp_events_unpack_as_packed() {
        for id in [0, 1, 12345, u32::MAX - 1, u32::MAX] {
            for ev in [
                TlpEv::Arrive(PktId(id)),
                TlpEv::Depart(GroupId(id)),
                TlpEv::Wake(ChId(id)),
                TlpEv::Staged(PktId(id)),
                TlpEv::Issued(PktId(id)),
                TlpEv::Begin(GroupId(id)),
            ] {
                let w = ev.pack();
                assert!(w < 1 << 60);
                assert_eq!(format!("{:?}", TlpEv::unpack(w)), format!("{ev:?}"));
            }
        }
    }
}
