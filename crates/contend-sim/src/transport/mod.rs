//! DESIGN 9 — two fidelities as two transports behind one trait: how the
//! bytes of transfers, flags and polls cross the fabric. [`tlp::Tlp`] moves
//! every TLP hop by hop with credits and queues (the reference);
//! [`flow::Flow`] moves fluid flows at max-min fair rates (fast). A
//! transport schedules its own events and answers the engine with events
//! and [`Outcome`](crate::engine::Outcome)s; it never calls into actors.

pub(crate) mod flow;
pub(crate) mod tlp;

use crate::engine::{Ev, World};
use crate::fabric::Fabric;
use crate::flags::{FlagAddr, Waiting};
use crate::ids::{ActorId, ChId, GroupId, XferId};
use crate::params::ModelParams;
use crate::queue::EventQueue;
use contend_topo::{NodeIdx, Picos};

pub(crate) trait Transport: Sized {
    /// The transport's own events.
    type Event: Copy + std::fmt::Debug;
    /// Switches of its optimisations (each has a plain twin).
    type Options: Copy + Default;

    /// Whether a post ends when its stores have left the GPU (the transport
    /// models the SM store buffer), or when its data has drained.
    const STORE_BUFFER: bool;

    fn new(fabric: &Fabric, p: &ModelParams, opts: Self::Options) -> Self;

    /// A remote transfer of a starting group, its first byte `setup` after
    /// now (copy-engine setup; for SM stores also the store visibility
    /// latency, which the TLP transport charges per store instead).
    fn begin_xfer<Q: EventQueue<Ev<Self::Event>>>(
        &mut self,
        w: &mut World<'_, Q>,
        x: XferId,
        setup: Picos,
    );

    /// Every transfer of group `g` is in place; its mover starts moving
    /// `setup` after now (a copy engine's setup).
    fn begin_group<Q: EventQueue<Ev<Self::Event>>>(
        &mut self,
        w: &mut World<'_, Q>,
        g: GroupId,
        setup: Picos,
    );

    /// Group `g` has ended and been freed: what the transport kept for it
    /// goes too.
    fn group_freed(&mut self, _g: GroupId) {}

    /// A flag write from `from` (on GPU `gpu`) to the memory at `dst`: an
    /// SM store, on the link one store visibility latency from now.
    fn send_flag<Q: EventQueue<Ev<Self::Event>>>(
        &mut self,
        w: &mut World<'_, Q>,
        from: ActorId,
        gpu: NodeIdx,
        dst: NodeIdx,
        flag: FlagAddr,
    );

    /// One poll by `actor` on GPU `gpu` of its flags in the memory at `at`.
    fn poll<Q: EventQueue<Ev<Self::Event>>>(
        &mut self,
        w: &mut World<'_, Q>,
        actor: ActorId,
        gpu: NodeIdx,
        at: NodeIdx,
        wait: Waiting,
    );

    /// One of its own events.
    fn handle<Q: EventQueue<Ev<Self::Event>>>(&mut self, w: &mut World<'_, Q>, ev: Self::Event);

    /// Busy time of channel `c` so far, picoseconds.
    fn busy_ps(&self, c: ChId) -> f64;

    /// Bytes that crossed channel `c` (wire bytes at TLP; payload at flow,
    /// counted on channels with a stage rule only).
    fn bytes(&self, c: ChId) -> f64;

    /// Of those, the bytes its stage rule held: posted writes at the
    /// collapsed rate, cross-socket P2P held by its stream cap.
    fn ruled_bytes(&self, c: ChId) -> f64;
}
