//! A monotone radix heap with 6-bit digits: the event queue of both fidelities.
//!
//! The binary radix heap ([`crate::engine::queue::RadixQueue`]) files an item by the
//! highest *bit* in which its time differs from the last popped time, so an
//! event scheduled 20 bits ahead can be re-bucketed up to 20 times before it
//! pops. Here an item is filed by the highest differing 6-bit *digit* (its
//! level, 0..11) and, within that level, by that digit's value (0..64): it
//! moves at most once per level, three or so times for the simulator's
//! picosecond horizons (4-bit digits: five or so). A one-word digit bitmap
//! per level and a level mask find the first non-empty bucket in a few
//! instructions, and a bucket of one item is popped without re-filing.
//! (8-bit digits move items less but spread them over 2048 buckets and
//! four bitmap words per level; measured slower in wall time.)
//!
//! Invariant: every item whose time equals the last popped time is in the
//! FIFO `zero`; every other item is in the bucket given by its time and the
//! last popped time. Popping with `zero` empty takes the first non-empty
//! bucket (all lower levels, and lower digits of its level, are empty), sets
//! the last time to that bucket's minimum and re-files its items in order;
//! the higher buckets stay valid because the new time agrees with the old on
//! every digit above the bucket's level. Items of equal time always share a
//! bucket and keep their push order in it, so equal times pop FIFO.

use crate::engine::queue::EventQueue;
use contend_topo::Picos;
use std::collections::VecDeque;

/// Bits per digit.
const BITS: usize = 6;
const LEVELS: usize = 64usize.div_ceil(BITS);
const DIGITS: usize = 1 << BITS;
const WORDS: usize = DIGITS.div_ceil(64);
/// Buckets of this level and above give their capacity back when emptied
/// (see [`WideRadixQueue::refill`]).
const RELEASE_LEVEL: usize = 4;

/// Monotone radix heap over times with 6-bit digits; pops in (time, push
/// order) like every [`EventQueue`].
#[derive(Debug)]
pub struct WideRadixQueue<T> {
    last: u64,
    len: usize,
    /// Bit `l` set: level `l` has a non-empty bucket.
    levels: u64,
    /// `occupied[l]` bit `d` set: bucket (`l`, `d`) is not empty.
    occupied: [[u64; WORDS]; LEVELS],
    zero: VecDeque<T>,
    /// Bucket (`l`, `d`) at index `l * DIGITS + d`. (An array, not a
    /// slice: its length is known, so filing by level and digit needs no
    /// bounds check.)
    buckets: Box<[Vec<(u64, T)>; LEVELS * DIGITS]>,
    scratch: Vec<(u64, T)>,
}

impl<T> Default for WideRadixQueue<T> {
    fn default() -> Self {
        WideRadixQueue {
            last: 0,
            len: 0,
            levels: 0,
            occupied: [[0; WORDS]; LEVELS],
            zero: VecDeque::new(),
            buckets: Box::new(std::array::from_fn(|_| Vec::new())),
            scratch: Vec::new(),
        }
    }
}

impl<T> WideRadixQueue<T> {
    #[inline]
    fn place(&mut self, key: u64, item: T) {
        let level = self.file(key, item);
        self.levels |= level;
    }

    /// Files `item` at time `key` by the last popped time: into `zero`, or
    /// into its bucket, marked occupied. Returns the bit its level sets in
    /// the level mask (none for `zero`), for the caller to store.
    #[inline(always)]
    fn file(&mut self, key: u64, item: T) -> u64 {
        let diff = key ^ self.last;
        if diff == 0 {
            self.zero.push_back(item);
            0
        } else {
            let level = (63 - diff.leading_zeros() as usize) / BITS;
            let digit = (key >> (level * BITS)) as usize & (DIGITS - 1);
            self.buckets[level * DIGITS + digit].push((key, item));
            self.occupied[level][digit >> 6] |= 1u64 << (digit & 63);
            1u64 << level
        }
    }

    /// Empties the first non-empty bucket into the lower levels and `zero`,
    /// advancing the last time to its minimum, and takes the first item of
    /// that time. Only called with `zero` empty and some bucket non-empty.
    /// A bucket of one item (the common case: events spread out in time)
    /// hands it over directly.
    ///
    /// Memory: a bucket below [`RELEASE_LEVEL`] (times less than 2^24 ps,
    /// ~17 µs, apart) swaps its items for the scratch buffer's capacity, so
    /// those few buckets, reused as time goes round their digits, keep
    /// what they grew to. A bucket at or above it is used once per digit
    /// as simulated time climbs; it gives its capacity back when emptied,
    /// so a long run does not keep a grown buffer for every high digit it
    /// has passed (those buckets are filled rarely: the reallocation costs
    /// next to nothing).
    #[inline]
    fn refill(&mut self) -> Option<T> {
        let level = self.levels.trailing_zeros() as usize;
        let occ = &mut self.occupied[level];
        let word = occ.iter().position(|&w| w != 0)?;
        let digit = word * 64 + occ[word].trailing_zeros() as usize;
        occ[word] &= occ[word] - 1;
        if occ.iter().all(|&w| w == 0) {
            self.levels &= !(1u64 << level);
        }
        let bucket = &mut self.buckets[level * DIGITS + digit];
        if bucket.len() == 1 {
            let (k, v) = bucket.pop()?;
            self.last = k;
            return Some(v);
        }
        if level >= RELEASE_LEVEL {
            let mut items = std::mem::take(bucket);
            self.spread(&mut items);
            return self.zero.pop_front();
        }
        let mut items = std::mem::take(&mut self.scratch);
        std::mem::swap(&mut items, bucket);
        self.spread(&mut items);
        self.scratch = items;
        self.zero.pop_front()
    }

    /// Sets the last time to the minimum of `items` (a bucket's, in push
    /// order) and re-files them all, leaving `items` empty. (Always
    /// inlined: out of line it cost ~0.7 % of a TLP run's instructions.)
    #[inline(always)]
    fn spread(&mut self, items: &mut Vec<(u64, T)>) {
        if let Some(min) = items.iter().map(|(k, _)| *k).min() {
            self.last = min;
        }
        // `place`, with the level mask gathered here and stored once
        let mut levels = 0;
        for (key, item) in items.drain(..) {
            levels |= self.file(key, item);
        }
        self.levels |= levels;
    }
}

impl<T> crate::engine::queue::Rebind for WideRadixQueue<T> {
    type With<U> = WideRadixQueue<U>;
}

impl<T> EventQueue<T> for WideRadixQueue<T> {
    #[inline]
    fn push(&mut self, time: Picos, item: T) {
        // A past time is a caller bug: it fails debug builds; release builds
        // clamp it to "now" (the event is delayed, the queue stays sound),
        // as RadixQueue does.
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

    #[inline]
    fn pop(&mut self) -> Option<(Picos, T)> {
        let v = match self.zero.pop_front() {
            Some(v) => v,
            None if self.len == 0 => return None,
            None => self.refill()?,
        };
        self.len -= 1;
        Some((Picos(self.last), v))
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::queue::tests::replay_against_heap;
    use proptest::prelude::*;

    /// Offsets ahead of "now" that hit every case: the same time, the low
    /// levels, a few digits ahead (the simulator's horizons) and
    /// far ahead (top levels).
    fn offset() -> impl Strategy<Value = u64> {
        prop_oneof![
            3 => Just(0u64),
            2 => 0u64..256,
            3 => 0u64..(1 << 20),
            1 => 0u64..(1 << 40),
            1 => 0u64..(1 << 52),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Interleaved pushes (never before the current time) and pops give
        /// the same sequence as the binary-heap reference, equal times included.
        #[test]
        fn wide_radix_matches_heap(ops in proptest::collection::vec((0u8..3, offset()), 1..600)) {
            replay_against_heap(WideRadixQueue::default(), &ops)?;
        }
    }

    #[test]
    fn equal_times_pop_in_insertion_order_across_levels() {
        let mut q = WideRadixQueue::default();
        // Equal times pushed while "now" is at different distances from
        // them: filed at level 2, then (after a pop) at level 0.
        for i in 0..5 {
            q.push(Picos(0x1_0005), i);
        }
        q.push(Picos(0x1_0000), 99);
        assert_eq!(q.pop(), Some((Picos(0x1_0000), 99)));
        for i in 5..10 {
            q.push(Picos(0x1_0005), i);
        }
        q.push(Picos(0x1_0003), 98);
        assert_eq!(q.pop(), Some((Picos(0x1_0003), 98)));
        let order: Vec<i32> = std::iter::from_fn(|| q.pop().map(|(_, v)| v)).collect();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }

    /// Buckets of the high levels hold no capacity once emptied, however
    /// many items passed through them; the low ones keep theirs for reuse.
    #[test]
    fn high_buckets_give_their_capacity_back() {
        let mut q = WideRadixQueue::default();
        let high = |q: &WideRadixQueue<u32>| -> usize {
            q.buckets[RELEASE_LEVEL * DIGITS..]
                .iter()
                .map(Vec::capacity)
                .sum()
        };
        let mut now = 0u64;
        for round in 1..=40u64 {
            // a batch far ahead (level 5 and up), spread a little
            let base = round << 32;
            for i in 0..500u32 {
                q.push(Picos(base + u64::from(i % 7)), i);
            }
            while let Some((t, _)) = q.pop() {
                assert!(t.0 >= now);
                now = t.0;
            }
            assert_eq!(high(&q), 0, "round {round}");
        }
        // items filed 1 ps apart (level 0): that bucket keeps its capacity
        q.push(Picos(now + 1), 0);
        q.push(Picos(now + 1), 1);
        q.push(Picos(now), 2);
        assert_eq!(q.pop(), Some((Picos(now), 2)));
        assert_eq!(q.pop(), Some((Picos(now + 1), 0)));
        assert!(
            q.buckets[..RELEASE_LEVEL * DIGITS]
                .iter()
                .any(|b| b.capacity() > 0)
        );
    }

    #[test]
    fn top_digit_times_pop_in_order() {
        let mut q = WideRadixQueue::default();
        let times = [u64::MAX, 1 << 63, (1 << 56) - 1, 1, 0];
        for (i, &t) in times.iter().enumerate() {
            q.push(Picos(t), i);
        }
        let got: Vec<u64> = std::iter::from_fn(|| q.pop().map(|(t, _)| t.0)).collect();
        assert_eq!(got, vec![0, 1, (1 << 56) - 1, 1 << 63, u64::MAX]);
    }
}
