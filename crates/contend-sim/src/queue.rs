//! Event queues keyed by (time, insertion sequence): events at equal times pop
//! in the order they were pushed, so runs are deterministic.
//!
//! [`RadixQueue`] is the fast one (a radix heap: discrete-event time never
//! goes backwards, so a monotone queue suffices); [`HeapQueue`] is the plain
//! binary-heap reference twin. A property test holds them to the same order.

use contend_topo::Picos;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

pub trait EventQueue<T> {
    /// Schedules `item` at `time`; `time` must not precede the last popped time.
    fn push(&mut self, time: Picos, item: T);
    fn pop(&mut self) -> Option<(Picos, T)>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Monotone radix heap over 128-bit keys (time << 64 | sequence).
#[derive(Debug)]
pub struct RadixQueue<T> {
    last: u128,
    seq: u64,
    len: usize,
    buckets: Vec<Vec<(u128, T)>>,
}

impl<T> Default for RadixQueue<T> {
    fn default() -> Self {
        RadixQueue { last: 0, seq: 0, len: 0, buckets: (0..129).map(|_| Vec::new()).collect() }
    }
}

impl<T> RadixQueue<T> {
    #[inline]
    fn bucket(last: u128, key: u128) -> usize {
        if key == last { 0 } else { 128 - (key ^ last).leading_zeros() as usize }
    }
}

impl<T> EventQueue<T> for RadixQueue<T> {
    #[inline]
    fn push(&mut self, time: Picos, item: T) {
        let key = ((time.0 as u128) << 64) | self.seq as u128;
        self.seq += 1;
        // A past time would break the monotone invariant; clamp to "now" so a
        // caller bug delays an event instead of corrupting the queue.
        let key = key.max(self.last);
        self.buckets[Self::bucket(self.last, key)].push((key, item));
        self.len += 1;
    }

    fn pop(&mut self) -> Option<(Picos, T)> {
        if self.len == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            let i = (1..129).find(|&i| !self.buckets[i].is_empty())?;
            let items = std::mem::take(&mut self.buckets[i]);
            let min = items.iter().map(|(k, _)| *k).min()?;
            self.last = min;
            for (k, v) in items {
                self.buckets[Self::bucket(min, k)].push((k, v));
            }
        }
        let (k, v) = self.buckets[0].pop()?;
        self.len -= 1;
        Some((Picos((k >> 64) as u64), v))
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
        HeapQueue { seq: 0, heap: BinaryHeap::new() }
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes (never before the current time) and pops give
        /// the same sequence from both queues.
        #[test]
        fn radix_matches_heap(ops in proptest::collection::vec((0u64..3, 0u64..1_000_000), 1..500)) {
            let mut fast = RadixQueue::default();
            let mut slow = HeapQueue::default();
            let mut now = 0u64;
            let mut id = 0u32;
            for (kind, dt) in ops {
                if kind == 0 {
                    let a = fast.pop();
                    let b = slow.pop();
                    prop_assert_eq!(a, b);
                    if let Some((t, _)) = a { now = t.0; }
                } else {
                    // equal times are common in the simulator: make them so here
                    let t = Picos(now + if kind == 1 { 0 } else { dt });
                    fast.push(t, id);
                    slow.push(t, id);
                    id += 1;
                }
            }
            while let Some(a) = fast.pop() {
                prop_assert_eq!(Some(a), slow.pop());
            }
            prop_assert!(slow.pop().is_none());
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
