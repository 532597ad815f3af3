//! DESIGN (time) — what actors and the fidelity share: the time, the
//! agenda (`agenda.rs`), the fabric, the live transfers, groups and flag
//! counters, and the outcomes a fidelity tells the engine; with the events
//! the engine dispatches ([`Ev`]) and those outcomes ([`Outcome`]).

use super::agenda::Agenda;
use crate::actors::flags::{FlagAddr, Flags, Waiting};
use crate::actors::transfer::{Group, Xfer};
use crate::engine::ids::{ActorId, FlagBatchId, GroupId, Window, XferId};
use crate::model::fabric::Fabric;
use crate::params::ModelParams;
use contend_topo::{Picos, Topology};

/// An event: for the actors, or for the fidelity (`Net`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev<E> {
    /// The actor continues its script.
    Resume(ActorId),
    /// The fence after a store stream has passed; its flag goes out.
    Fence(XferId),
    /// A flag lands.
    FlagAt(FlagAddr),
    /// A transfer is done (local parts, drained flows).
    XferDone(XferId),
    /// The fidelity's own event.
    Net(E),
}

/// What a fidelity tells the engine.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Outcome {
    /// A flag reached its address.
    Flag(FlagAddr),
    /// Flags reached their addresses, one after another: a batch the agenda
    /// keeps ([`Agenda::landed`](crate::engine::Agenda::landed)), landed by
    /// the engine straight from it (not an outcome per flag: a flag copied
    /// into an outcome and read back cost a store-forwarding stall each,
    /// ~15 % of a 64-GPU staged push at flow fidelity).
    Flags(FlagBatchId),
    /// A transfer is done: every byte of a read has arrived (TLP), or a
    /// flow drained at its tick's own time (flow: told where its event
    /// would have popped, see `fidelity/flow/agenda.rs`).
    XferDone(XferId),
    /// A post group's stores may all have left the GPU.
    CheckPost(GroupId),
    /// A poll came back; `seen`: the flags were in when memory was read.
    Polled {
        actor: ActorId,
        wait: Waiting,
        seen: bool,
    },
    /// A poll came back that read memory now: it sees the flags if they
    /// are in.
    PolledNow(ActorId),
}

/// What actors and the fidelity share.
pub(crate) struct World<'a, A> {
    pub p: &'a ModelParams,
    pub topo: &'a Topology,
    pub fabric: Fabric,
    /// The events to come, as the fidelity keeps them (`agenda.rs`).
    pub agenda: A,
    pub now: Picos,
    /// Live transfers and groups (freed when they end).
    pub xfers: Window<XferId, Xfer>,
    pub groups: Window<GroupId, Group>,
    pub flags: Flags,
    /// What the fidelity told the engine during its last call.
    pub out: Vec<Outcome>,
    /// How long remote data was moving (some transfer group open).
    pub moving: crate::report::binding::Moving,
}

impl<'a, A> World<'a, A> {
    pub fn new(topo: &'a Topology, p: &'a ModelParams, agenda: A) -> Self {
        World {
            p,
            topo,
            fabric: Fabric::new(topo, p),
            agenda,
            now: Picos::ZERO,
            xfers: Window::default(),
            groups: Window::default(),
            flags: Flags::default(),
            out: Vec::new(),
            moving: Default::default(),
        }
    }

    /// Files event `ev` for time `t` (always inlined: it is on every
    /// packet's path, and a call there cost ~4 % of a TLP run's
    /// instructions).
    #[inline(always)]
    pub fn push<E>(&mut self, t: Picos, ev: Ev<E>)
    where
        A: Agenda<E>,
    {
        self.agenda.push(t, ev);
    }

    #[inline]
    pub fn tell(&mut self, o: Outcome) {
        self.out.push(o);
    }
}
