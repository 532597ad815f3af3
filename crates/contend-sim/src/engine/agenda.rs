//! DESIGN (time) — the agenda: the event queue as the engine sees it. The
//! engine pushes and pops events and says when a rank's awaited flags are
//! in; a fidelity supplies the agenda it runs on: the TLP fidelity the
//! queue as it is with each event packed in one word ([`Packed`]; its
//! reference, the queue as it is, [`Plain`]), the flow fidelity the queue
//! wrapped with what it keeps beside it (remote polls as chains, flags
//! that share an event: `fidelity/flow/agenda.rs`). So the engine carries
//! nothing one fidelity alone needs.

use super::ids::{ActorId, FlagBatchId, XferId};
use super::queue::{EventQueue, Rebind};
use super::world::Ev;
use crate::actors::flags::FlagAddr;
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
    /// The flags of batch `b`, in the order they land (an agenda that
    /// batches flags; the engine lands each, then hands the list back with
    /// [`Agenda::landed_done`]). No batch can be joined any more.
    fn landed(&mut self, _b: FlagBatchId) -> Vec<FlagAddr> {
        unreachable!("only an agenda that batches flags tells of a batch")
    }
    /// The list of batch `b`, its flags landed, for the agenda to reuse.
    fn landed_done(&mut self, _b: FlagBatchId, _list: Vec<FlagAddr>) {}
}

/// A queue that may serve as an agenda: the queue of events of a fidelity
/// whose events are `E` (or, [`Rebind`]ed, of those events packed).
pub(crate) trait Queue<E>: EventQueue<Ev<E>> + Default + Rebind {}

impl<E, Q: EventQueue<Ev<E>> + Default + Rebind> Queue<E> for Q {}

/// The queue as it is: every push is one event. The reference of
/// [`Packed`] (the TLP fidelity's agenda), held to it by this module's
/// property test.
#[derive(Default)]
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the reference, built by the tests only")
)]
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

/// A fidelity's event packed in one word: `pack` gives a value below
/// 2^60 that `unpack` turns back into the event.
pub(crate) trait PackedEvent: Copy {
    fn pack(self) -> u64;
    fn unpack(word: u64) -> Self;
}

/// Bits of a packed word that say which [`Ev`] it is.
const TAG_BITS: u32 = 4;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

/// The queue as it is, each event packed in one word ([`PackedEvent`]):
/// a queue entry (time, event) of 16 bytes instead of 24, so the queue
/// moves a third fewer bytes. Flag addresses (12 bytes, the reason an
/// [`Ev`] is 16) wait in a side table while their event is queued; the
/// word holds their slot. Pops the same events in the same order as
/// [`Plain`] (a property test holds them to it).
#[derive(Default)]
pub(crate) struct Packed<Q> {
    q: Q,
    /// Flag addresses of queued [`Ev::FlagAt`] events, by slot.
    flags: Vec<FlagAddr>,
    /// Slots of `flags` free for reuse.
    free: Vec<u32>,
}

impl<Q> Packed<Q> {
    #[inline]
    fn pack<E: PackedEvent>(&mut self, ev: Ev<E>) -> u64 {
        let (tag, payload) = match ev {
            Ev::Resume(a) => (0, u64::from(a.0)),
            Ev::Fence(x) => (1, u64::from(x.0)),
            Ev::FlagAt(f) => {
                let slot = match self.free.pop() {
                    Some(s) => {
                        self.flags[s as usize] = f;
                        s
                    }
                    None => {
                        self.flags.push(f);
                        u32::try_from(self.flags.len() - 1).expect("fewer than 2^32 flags queued")
                    }
                };
                (2, u64::from(slot))
            }
            Ev::XferDone(x) => (3, u64::from(x.0)),
            Ev::Net(e) => {
                let w = e.pack();
                debug_assert!(w < 1 << (64 - TAG_BITS), "a packed event fits 60 bits");
                (4, w)
            }
        };
        payload << TAG_BITS | tag
    }

    #[inline]
    fn unpack<E: PackedEvent>(&mut self, w: u64) -> Ev<E> {
        let payload = w >> TAG_BITS;
        match w & TAG_MASK {
            0 => Ev::Resume(ActorId(payload as u32)),
            1 => Ev::Fence(XferId(payload as u32)),
            2 => {
                self.free.push(payload as u32);
                Ev::FlagAt(self.flags[payload as usize])
            }
            3 => Ev::XferDone(XferId(payload as u32)),
            _ => Ev::Net(E::unpack(payload)),
        }
    }
}

impl<E: PackedEvent, Q: EventQueue<u64>> Agenda<E> for Packed<Q> {
    #[inline(always)]
    fn push(&mut self, t: Picos, ev: Ev<E>) {
        let w = self.pack(ev);
        self.q.push(t, w);
    }
    #[inline]
    fn pop(&mut self) -> Option<(Picos, Ev<E>)> {
        let (t, w) = self.q.pop()?;
        Some((t, self.unpack(w)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ids::{ActorId, XferId};
    use crate::engine::queue::HeapQueue;
    use proptest::prelude::*;

    /// A stand-in fidelity event: any 32-bit value under one of 6 variants.
    #[derive(Clone, Copy, Debug)]
    struct Tiny(u8, u32);
    impl PackedEvent for Tiny {
        fn pack(self) -> u64 {
            u64::from(self.1) << 3 | u64::from(self.0)
        }
        fn unpack(w: u64) -> Tiny {
            Tiny((w & 7) as u8, (w >> 3) as u32)
        }
    }

    fn event() -> impl Strategy<Value = Ev<Tiny>> {
        prop_oneof![
            any::<u32>().prop_map(|a| Ev::Resume(ActorId(a))),
            any::<u32>().prop_map(|x| Ev::Fence(XferId(x))),
            (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(a, epoch, phase)| {
                Ev::FlagAt(FlagAddr {
                    to: ActorId(a),
                    epoch,
                    phase,
                })
            }),
            any::<u32>().prop_map(|x| Ev::XferDone(XferId(x))),
            (0u8..6, any::<u32>()).prop_map(|(v, x)| Ev::Net(Tiny(v, x))),
            (0u8..6, any::<u32>()).prop_map(|(v, x)| Ev::Net(Tiny(v, x))),
        ]
    }

    proptest! {
        /// Packed pops the very events Plain pops, in the same order,
        /// over interleaved pushes (flag slots reused) and pops.
        #[test]
        fn packed_pops_what_plain_pops(
            ops in proptest::collection::vec((any::<bool>(), 0u64..50, event()), 1..400)
        ) {
            let mut plain: Plain<HeapQueue<Ev<Tiny>>> = Plain::default();
            let mut packed: Packed<HeapQueue<u64>> = Packed::default();
            let mut now = 0;
            for (pop, dt, ev) in ops {
                if pop {
                    let a = Agenda::<Tiny>::pop(&mut plain);
                    let b = Agenda::<Tiny>::pop(&mut packed);
                    prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
                    if let Some((t, _)) = a {
                        now = t.0;
                    }
                } else {
                    plain.push(Picos(now + dt), ev);
                    packed.push(Picos(now + dt), ev);
                }
            }
            loop {
                let a = Agenda::<Tiny>::pop(&mut plain);
                let b = Agenda::<Tiny>::pop(&mut packed);
                prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
                if a.is_none() {
                    break;
                }
            }
        }
    }
}
