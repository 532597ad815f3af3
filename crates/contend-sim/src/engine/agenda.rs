//! DESIGN (time) — the agenda: the event queue as the engine sees it. The
//! engine pushes and pops events and says when a rank's awaited flags are
//! in; a fidelity supplies the agenda it runs on: the TLP fidelity the
//! queue as it is ([`Plain`]), the flow fidelity the queue wrapped with
//! what it keeps beside it (remote polls as chains, flags that share an
//! event: `fidelity/flow/agenda.rs`). So the engine carries nothing one
//! fidelity alone needs.

use super::ids::ActorId;
use super::queue::EventQueue;
use super::world::Ev;
use contend_topo::Picos;

/// The event queue of a run, as the engine uses it. Equal times pop in
/// push order.
pub(crate) trait Agenda<E> {
    /// Files `ev` for time `t` (not before the last popped time).
    fn push(&mut self, t: Picos, ev: Ev<E>);
    /// The next event, or none when the run has nothing left to do.
    fn pop(&mut self) -> Option<(Picos, Ev<E>)>;
    /// The flags rank `a` waits for are all in (an agenda that keeps the
    /// rank's polls aside makes its pending one real).
    #[inline]
    fn flags_in(&mut self, _a: ActorId) {}
}

/// A queue that may serve as an agenda: the queue of events of a fidelity
/// whose events are `E`.
pub(crate) trait Queue<E>: EventQueue<Ev<E>> + Default {}

impl<E, Q: EventQueue<Ev<E>> + Default> Queue<E> for Q {}

/// The queue as it is: every push is one event.
#[derive(Default)]
pub(crate) struct Plain<Q>(Q);

impl<E, Q: EventQueue<Ev<E>>> Agenda<E> for Plain<Q> {
    #[inline(always)]
    fn push(&mut self, t: Picos, ev: Ev<E>) {
        self.0.push(t, ev);
    }
    #[inline]
    fn pop(&mut self) -> Option<(Picos, Ev<E>)> {
        self.0.pop()
    }
}
