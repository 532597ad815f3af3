//! One credit class's queue at a TLP channel: its head kept in the channel
//! itself, the packets behind it in a ring buffer. Choosing the next packet
//! to start reads the three classes' heads at every try; held inline they
//! are read with the channel's other fields, not through three buffers
//! (a `VecDeque`'s `front` also wraps its index: the choice spent more on
//! finding the heads than on comparing them).

use super::channel::Queued;
use std::collections::VecDeque;

/// Packets of one credit class waiting at a channel, in order of readiness
/// (see [`Lane::queue`]). The head is `head`; the rest follow in `rest`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lane {
    head: Option<Queued>,
    rest: VecDeque<Queued>,
}

impl Lane {
    /// The packet that goes next, if any.
    #[inline]
    pub fn front(&self) -> Option<&Queued> {
        self.head.as_ref()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Takes the head out; the next in line becomes the head.
    #[inline]
    pub fn pop_front(&mut self) -> Option<Queued> {
        let h = self.head.take()?;
        self.head = self.rest.pop_front();
        Some(h)
    }

    /// Puts a packet in order of readiness: after every packet ready at or
    /// before it, before those ready later (one that carries a later ready
    /// time does not hold back a packet ready before it, as if each joined
    /// when ready).
    #[inline]
    pub fn queue(&mut self, e: Queued) {
        let Some(h) = &self.head else {
            self.head = Some(e);
            return;
        };
        let rest = &mut self.rest;
        let mut at = rest.len();
        while at > 0 && rest[at - 1].ready > e.ready {
            at -= 1;
        }
        if at > 0 || h.ready <= e.ready {
            if at == rest.len() {
                rest.push_back(e);
            } else {
                rest.insert(at, e);
            }
        } else {
            // ready before every queued packet: the new head
            let old = self.head.replace(e).expect("a head");
            rest.push_front(old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fidelity::tlp::packet::PktId;
    use contend_topo::Picos;
    use proptest::prelude::*;

    /// The reference: one `VecDeque`, a packet inserted after the last one
    /// ready at or before it (the queue before the head moved inline).
    fn queue_plain(q: &mut VecDeque<Queued>, e: Queued) {
        let mut at = q.len();
        while at > 0 && q[at - 1].ready > e.ready {
            at -= 1;
        }
        q.insert(at, e);
    }

    proptest! {
        /// Queues and pops, ready times often equal and often out of
        /// order, give the lane the same packets in the same order as the
        /// plain queue, head and length alike at every step.
        #[test]
        fn lane_keeps_the_plain_queues_order(
            ops in proptest::collection::vec((0u8..3, 0u64..6), 1..300)
        ) {
            let mut lane = Lane::default();
            let mut plain = VecDeque::new();
            for (i, (op, ready)) in ops.into_iter().enumerate() {
                if op == 0 {
                    let a = lane.pop_front().map(|e| e.pk);
                    let b = plain.pop_front().map(|e: Queued| e.pk);
                    prop_assert_eq!(a, b);
                } else {
                    let e = Queued {
                        pk: PktId(i as u32),
                        data: 0,
                        seq: i as u64,
                        ready: Picos(ready),
                    };
                    lane.queue(e);
                    queue_plain(&mut plain, e);
                }
                prop_assert_eq!(lane.front().map(|e| e.pk), plain.front().map(|e| e.pk));
                prop_assert_eq!(lane.is_empty(), plain.is_empty());
                prop_assert_eq!(lane.rest.len() + usize::from(lane.head.is_some()), plain.len());
            }
            while let Some(e) = plain.pop_front() {
                prop_assert_eq!(lane.pop_front().map(|e| e.pk), Some(e.pk));
            }
            prop_assert!(lane.is_empty());
        }
    }
}
