//! A TLP channel's queues, one per credit class: each class's head kept
//! in the channel itself (the three side by side), the packets behind it
//! in a ring buffer. Choosing the next packet to start reads the three
//! heads at every try, and every hop asks whether anything waits; held
//! inline they are read with the channel's other fields, not through three
//! buffers (a `VecDeque`'s `front` also wraps its index: the choice spent
//! more on finding the heads than on comparing them).

use super::channel::Queued;
use super::credits::Class;
use std::collections::VecDeque;

/// Packets waiting at a channel, per credit class, each class in order of
/// readiness (see [`Lanes::queue`]). A class's head is in `heads` (the
/// three side by side: whether anything waits is one look), the rest
/// follow in its `rest`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lanes {
    heads: [Option<Queued>; 3],
    rest: [VecDeque<Queued>; 3],
}

impl Lanes {
    /// The packet of `class` that goes next, if any.
    #[inline]
    pub fn front(&self, class: Class) -> Option<&Queued> {
        self.heads[class].as_ref()
    }

    /// Whether any packet waits, of any class.
    #[inline]
    pub fn any(&self) -> bool {
        self.heads.iter().any(Option::is_some)
    }

    /// Takes the head of `class` out; the next in line becomes the head.
    #[inline]
    pub fn pop_front(&mut self, class: Class) -> Option<Queued> {
        let h = self.heads[class].take()?;
        self.heads[class] = self.rest[class].pop_front();
        Some(h)
    }

    /// Puts a packet of `class` in order of readiness: after every packet
    /// ready at or before it, before those ready later (one that carries
    /// a later ready time does not hold back a packet ready before it, as
    /// if each joined when ready).
    #[inline]
    pub fn queue(&mut self, class: Class, e: Queued) {
        let head = &mut self.heads[class];
        let Some(h) = head else {
            *head = Some(e);
            return;
        };
        let rest = &mut self.rest[class];
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
            let old = head.replace(e).expect("a head");
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
        /// Queues and pops over the three classes, ready times often equal
        /// and often out of order, give the lanes the same packets in the
        /// same order as three plain queues, heads and lengths alike at
        /// every step.
        #[test]
        fn lanes_keep_the_plain_queues_order(
            ops in proptest::collection::vec((0u8..3, 0usize..3, 0u64..6), 1..300)
        ) {
            let mut lanes = Lanes::default();
            let mut plain: [VecDeque<Queued>; 3] = Default::default();
            for (i, (op, class, ready)) in ops.into_iter().enumerate() {
                if op == 0 {
                    let a = lanes.pop_front(class).map(|e| e.pk);
                    let b = plain[class].pop_front().map(|e| e.pk);
                    prop_assert_eq!(a, b);
                } else {
                    let e = Queued {
                        pk: PktId(i as u32),
                        data: 0,
                        seq: i as u64,
                        ready: Picos(ready),
                    };
                    lanes.queue(class, e);
                    queue_plain(&mut plain[class], e);
                }
                for (c, q) in plain.iter().enumerate() {
                    prop_assert_eq!(lanes.front(c).map(|e| e.pk), q.front().map(|e| e.pk));
                    let len = lanes.rest[c].len() + usize::from(lanes.heads[c].is_some());
                    prop_assert_eq!(len, q.len());
                }
                prop_assert_eq!(lanes.any(), plain.iter().any(|q| !q.is_empty()));
            }
            for (c, q) in plain.iter_mut().enumerate() {
                while let Some(e) = q.pop_front() {
                    prop_assert_eq!(lanes.pop_front(c).map(|e| e.pk), Some(e.pk));
                }
            }
            prop_assert!(!lanes.any());
        }
    }
}
