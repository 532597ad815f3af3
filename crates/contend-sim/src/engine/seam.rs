//! DESIGN 9 — the seam between the engine and a fidelity: how the bytes of
//! transfers, flags and polls cross the fabric. The TLP fidelity
//! (`fidelity/tlp/`) moves every TLP hop by hop with credits and queues
//! (the reference); the flow fidelity (`fidelity/flow/`) moves fluid flows
//! at max-min fair rates (fast). A fidelity schedules its own events on the
//! agenda it supplies and answers the engine with [`Outcome`]s; it never
//! calls into actors.

use super::agenda::{Agenda, Queue};
#[cfg(doc)]
use super::world::Outcome;
use super::world::World;
use crate::actors::flags::{FlagAddr, Waiting};
use crate::engine::ids::{ActorId, ChId, GroupId, XferId};
use crate::model::fabric::Fabric;
use crate::params::ModelParams;
use contend_topo::{NodeIdx, Picos};

pub(crate) trait FidelityModel: Sized {
    /// The fidelity's own events.
    type Event: Copy + std::fmt::Debug;
    /// Switches of its optimisations (each has a reference).
    type Options: Copy + Default;
    /// The agenda it runs on, over the event queue `Q` (`agenda.rs`).
    type Agenda<Q: Queue<Self::Event>>: Agenda<Self::Event> + Default;

    /// Whether a post ends when its stores have left the GPU (the fidelity
    /// models the SM store buffer), or when its data has drained.
    const STORE_BUFFER: bool;

    fn new(fabric: &Fabric, p: &ModelParams, opts: Self::Options) -> Self;

    /// A remote transfer of a starting group, its first byte `setup` after
    /// now (copy-engine setup; for SM stores also the store visibility
    /// latency, which the TLP fidelity charges per store instead).
    fn begin_xfer<Q: Queue<Self::Event>>(
        &mut self,
        w: &mut World<'_, Self::Agenda<Q>>,
        x: XferId,
        setup: Picos,
    );

    /// Every transfer of group `g` is in place; its mover starts moving
    /// `setup` after now (a copy engine's setup).
    fn begin_group<Q: Queue<Self::Event>>(
        &mut self,
        w: &mut World<'_, Self::Agenda<Q>>,
        g: GroupId,
        setup: Picos,
    );

    /// Group `g` has ended and been freed: what the fidelity kept for it
    /// goes too.
    fn group_freed(&mut self, _g: GroupId) {}

    /// A flag write from `from` (on GPU `gpu`) to the memory at `dst`: an
    /// SM store, on the link one store visibility latency from now.
    fn send_flag<Q: Queue<Self::Event>>(
        &mut self,
        w: &mut World<'_, Self::Agenda<Q>>,
        from: ActorId,
        gpu: NodeIdx,
        dst: NodeIdx,
        flag: FlagAddr,
    );

    /// One poll by `actor` on GPU `gpu` of its flags in the memory at `at`.
    fn poll<Q: Queue<Self::Event>>(
        &mut self,
        w: &mut World<'_, Self::Agenda<Q>>,
        actor: ActorId,
        gpu: NodeIdx,
        at: NodeIdx,
        wait: Waiting,
    );

    /// One of its own events.
    fn handle<Q: Queue<Self::Event>>(
        &mut self,
        w: &mut World<'_, Self::Agenda<Q>>,
        ev: Self::Event,
    );

    /// Busy time of channel `c` so far, picoseconds.
    fn busy_ps(&self, c: ChId) -> f64;

    /// Bytes that crossed channel `c` (wire bytes at TLP; payload at flow,
    /// counted on channels with a stage rule only).
    fn bytes(&self, c: ChId) -> f64;

    /// Of those, the bytes its stage rule held: posted writes at the
    /// collapsed rate, cross-socket P2P held by its stream cap.
    fn ruled_bytes(&self, c: ChId) -> f64;
}
