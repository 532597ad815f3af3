//! Event queues keyed by (time, insertion sequence): events at equal times pop
//! in the order they were pushed, so runs are deterministic.
//!
//! [`RadixQueue`] is a radix heap with one-bit digits (discrete-event time
//! never goes backwards, so a monotone queue suffices); [`HeapQueue`] is the
//! plain binary-heap reference. A property test holds them to the same
//! order. [`crate::engine::wide_radix::WideRadixQueue`] (6-bit digits, fewer moves
//! per item) is the queue both fidelities run on (at flow fidelity 0.2-8 %
//! fewer instructions than with [`RadixQueue`], by cachegrind on the
//! verify steps of 8 and 64 GPUs); [`RadixQueue`] stays as its simpler
//! form, which the queue benchmark compares it with.

use contend_topo::Picos;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

pub trait EventQueue<T> {
    /// Schedules `item` at `time`; `time` must not precede the last popped time.
    fn push(&mut self, time: Picos, item: T);
    fn pop(&mut self) -> Option<(Picos, T)>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The same kind of queue over items of another type (an agenda may keep
/// its events packed in fewer bytes than the engine's `Ev` (`engine/world.rs`)).
pub trait Rebind {
    type With<U>: EventQueue<U> + Default;
}

impl<T> Rebind for RadixQueue<T> {
    type With<U> = RadixQueue<U>;
}

impl<T> Rebind for HeapQueue<T> {
    type With<U> = HeapQueue<U>;
}

/// Monotone radix heap over times. Bucket `i` holds items whose time's
/// highest bit differing from the last popped time is bit `i - 1`; a bitmask
/// finds the first non-empty bucket in one instruction. Buckets are appended
/// to and redistributed in order, and bucket 0 (time equal to the last
/// popped) is a FIFO, so equal times pop in insertion order.
#[derive(Debug)]
pub struct RadixQueue<T> {
    last: u64,
    len: usize,
    /// Bit i set: bucket i + 1 is not empty.
    mask: u64,
    zero: VecDeque<T>,
    buckets: Vec<Vec<(u64, T)>>,
    scratch: Vec<(u64, T)>,
}

impl<T> Default for RadixQueue<T> {
    fn default() -> Self {
        RadixQueue {
            last: 0,
            len: 0,
            mask: 0,
            zero: VecDeque::new(),
            buckets: (0..64).map(|_| Vec::new()).collect(),
            scratch: Vec::new(),
        }
    }
}

impl<T> RadixQueue<T> {
    #[inline]
    fn place(&mut self, key: u64, item: T) {
        if key == self.last {
            self.zero.push_back(item);
        } else {
            let b = 63 - (key ^ self.last).leading_zeros() as usize;
            self.buckets[b].push((key, item));
            self.mask |= 1u64 << b;
        }
    }
}

impl<T> EventQueue<T> for RadixQueue<T> {
    #[inline]
    fn push(&mut self, time: Picos, item: T) {
        // A past time would break the monotone invariant: a caller bug. It
        // fails debug builds; release builds clamp it to "now" (the event is
        // delayed, the queue stays sound).
        debug_assert!(
            time.0 >= self.last,
            "event pushed at {} ps, before the current time {} ps",
            time.0,
            self.last
        );
        let key = time.0.max(self.last);
        self.place(key, item);
        self.len += 1;
    }

    fn pop(&mut self) -> Option<(Picos, T)> {
        if self.len == 0 {
            return None;
        }
        if self.zero.is_empty() {
            let i = self.mask.trailing_zeros() as usize;
            let mut items = std::mem::take(&mut self.scratch);
            std::mem::swap(&mut items, &mut self.buckets[i]);
            self.mask &= !(1u64 << i);
            self.last = items.iter().map(|(k, _)| *k).min()?;
            for (k, v) in items.drain(..) {
                self.place(k, v);
            }
            self.scratch = items;
        }
        let v = self.zero.pop_front()?;
        self.len -= 1;
        Some((Picos(self.last), v))
    }

    fn len(&self) -> usize {
        self.len
    }
}

struct Keyed<T>(u64, u64, T);
impl<T> PartialEq for Keyed<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl<T> Eq for Keyed<T> {}
impl<T> PartialOrd for Keyed<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Keyed<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.0, self.1).cmp(&(o.0, o.1))
    }
}

/// The reference: a binary heap of (time, sequence).
pub struct HeapQueue<T> {
    seq: u64,
    heap: BinaryHeap<Reverse<Keyed<T>>>,
}

impl<T> std::fmt::Debug for HeapQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HeapQueue({} events)", self.heap.len())
    }
}

impl<T> Default for HeapQueue<T> {
    fn default() -> Self {
        HeapQueue {
            seq: 0,
            heap: BinaryHeap::new(),
        }
    }
}

impl<T> EventQueue<T> for HeapQueue<T> {
    fn push(&mut self, time: Picos, item: T) {
        self.heap.push(Reverse(Keyed(time.0, self.seq, item)));
        self.seq += 1;
    }
    fn pop(&mut self) -> Option<(Picos, T)> {
        self.heap.pop().map(|Reverse(Keyed(t, _, v))| (Picos(t), v))
    }
    fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Replays `ops` on `fast` and on the binary-heap reference: `(0, _)` pops
    /// from both (the same item must come out), `(_, dt)` pushes at `dt`
    /// after the current time; then both drain in the same order. The
    /// check every fast queue's property test runs.
    pub(crate) fn replay_against_heap<Q: EventQueue<u32>>(
        mut fast: Q,
        ops: &[(u8, u64)],
    ) -> Result<(), TestCaseError> {
        let mut slow = HeapQueue::default();
        let mut now = 0u64;
        let mut id = 0u32;
        for &(kind, dt) in ops {
            if kind == 0 {
                let a = fast.pop();
                let b = slow.pop();
                prop_assert_eq!(a, b);
                if let Some((t, _)) = a {
                    now = t.0;
                }
            } else {
                let t = Picos(now + dt);
                fast.push(t, id);
                slow.push(t, id);
                id += 1;
            }
            prop_assert_eq!(fast.len(), slow.len());
        }
        while let Some(a) = fast.pop() {
            prop_assert_eq!(Some(a), slow.pop());
        }
        prop_assert!(slow.pop().is_none());
        prop_assert!(fast.is_empty());
        Ok(())
    }

    proptest! {
        /// Interleaved pushes (never before the current time) and pops give
        /// the same sequence from both queues.
        #[test]
        fn radix_matches_heap(ops in proptest::collection::vec((0u8..3, 0u64..1_000_000), 1..500)) {
            // equal times are common in the simulator: make them so here
            let ops: Vec<(u8, u64)> = ops
                .into_iter()
                .map(|(kind, dt)| (kind, if kind == 1 { 0 } else { dt }))
                .collect();
            replay_against_heap(RadixQueue::default(), &ops)?;
        }
    }

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = RadixQueue::default();
        for i in 0..10 {
            q.push(Picos(5), i);
        }
        q.push(Picos(1), 99);
        assert_eq!(q.pop(), Some((Picos(1), 99)));
        let order: Vec<i32> = std::iter::from_fn(|| q.pop().map(|(_, v)| v)).collect();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }
}
