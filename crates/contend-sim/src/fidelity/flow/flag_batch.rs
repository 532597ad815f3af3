//! DESIGN 6, 7 — flags sent together land in one event (flow fidelity; the
//! reference, an event per flag, is `FlowOptions::flag_event_each`).
//!
//! A barrier of N ranks sends N − 1 flags from each rank at one instant,
//! N (N − 1) in all; at flow fidelity a flag is a latency, so each would be
//! an event of its own (a 64-GPU staged push: 126 barriers of 4,032 flags
//! per allreduce). Flags landing at the same time whose pushes follow one
//! another, with nothing else pushed in between, pop one after the other
//! (equal times pop in push order) with nothing between them. So they can
//! share one event, taken in push order: a flag whose push would follow
//! the last one's joins the batch of its landing time made since, if any.
//!
//! A joining flag does what its push would have done but queue an event:
//! it counts as a push for the time the flow fidelity watches. A flag
//! whose push would make a pending remote poll real (`poll_chain.rs`)
//! starts a batch of its own, pushed as usual. Between two flags of a
//! batch the event loop does nothing: time stands, and no pending poll
//! can fall before it.

use crate::actors::flags::FlagAddr;
pub(crate) use crate::engine::ids::FlagBatchId;
use contend_topo::Picos;

/// Open batches kept at most: ranks of a barrier sending their flags one
/// after another, with nothing else pushed in between, would each add
/// their own, and the search for a flag's batch is linear (forgetting
/// open batches only makes more events, never other results).
const OPEN_MAX: usize = 16;

/// The batches of flags in the queue: each batch's flags in push order,
/// and the batches a flag may still join.
#[derive(Debug, Default)]
pub(crate) struct FlagBatches {
    /// Per batch id, its flags (empty: the slot is free).
    lists: Vec<Vec<FlagAddr>>,
    free: Vec<FlagBatchId>,
    /// The batches made since the last push of anything else, with their
    /// landing times (one per distinct latency of a barrier's paths, for
    /// each rank whose flags follow; at most [`OPEN_MAX`]).
    open: Vec<(Picos, FlagBatchId)>,
    /// The world's push count when the last batch was pushed.
    stamp: u64,
}

impl FlagBatches {
    /// The open batch landing at `t` if nothing else was pushed since the
    /// open batches were (`pushes`: the world's push count now).
    #[inline]
    pub fn joinable(&mut self, t: Picos, pushes: u64) -> Option<FlagBatchId> {
        if pushes != self.stamp {
            self.open.clear();
            return None;
        }
        self.open.iter().rev().find(|o| o.0 == t).map(|o| o.1)
    }

    /// Adds `flag` to batch `b`.
    #[inline]
    pub fn join(&mut self, b: FlagBatchId, flag: FlagAddr) {
        self.lists[b.ix()].push(flag);
    }

    /// A new batch landing at `t`, of `flag` alone, to be pushed now.
    pub fn open(&mut self, t: Picos, flag: FlagAddr) -> FlagBatchId {
        let b = match self.free.pop() {
            Some(b) => b,
            None => {
                self.lists.push(Vec::new());
                FlagBatchId::from(self.lists.len() - 1)
            }
        };
        self.lists[b.ix()].push(flag);
        if self.open.len() == OPEN_MAX {
            self.open.clear();
        }
        self.open.push((t, b));
        b
    }

    /// The batch just opened was pushed; `pushes`: the world's push count
    /// with it.
    #[inline]
    pub fn pushed(&mut self, pushes: u64) {
        self.stamp = pushes;
    }

    /// Batch `b` pops: its flags, in push order (give the list back with
    /// [`FlagBatches::give_back`]). No batch can be joined any more.
    pub fn take(&mut self, b: FlagBatchId) -> Vec<FlagAddr> {
        self.open.clear();
        std::mem::take(&mut self.lists[b.ix()])
    }

    /// The list of a batch taken, emptied, for slot `b` to reuse (no
    /// allocation per batch once the run has warmed up).
    pub fn give_back(&mut self, b: FlagBatchId, mut list: Vec<FlagAddr>) {
        list.clear();
        self.lists[b.ix()] = list;
        self.free.push(b);
    }

    /// Batch slots made over the run (each list kept for reuse).
    #[cfg(test)]
    pub fn slots(&self) -> usize {
        self.lists.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ids::ActorId;

    fn flag(to: u32) -> FlagAddr {
        FlagAddr {
            to: ActorId(to),
            epoch: 0,
            phase: 0,
        }
    }

    /// Flags join the batch of their landing time while nothing else is
    /// pushed; a push of anything else, or the batch popping, closes them.
    #[test]
    fn flags_join_only_while_nothing_else_is_pushed() {
        let mut b = FlagBatches::default();
        let mut pushes = 0;
        assert_eq!(b.joinable(Picos(10), pushes), None);
        let x = b.open(Picos(10), flag(1));
        pushes += 1;
        b.pushed(pushes);
        assert_eq!(b.joinable(Picos(20), pushes), None, "another time");
        let y = b.open(Picos(20), flag(2));
        pushes += 1;
        b.pushed(pushes);
        assert_eq!(b.joinable(Picos(10), pushes), Some(x));
        b.join(x, flag(3));
        assert_eq!(b.joinable(Picos(20), pushes), Some(y));
        b.join(y, flag(4));
        pushes += 1; // something else is pushed
        assert_eq!(b.joinable(Picos(10), pushes), None);
        assert_eq!(b.joinable(Picos(10), pushes), None, "closed for good");
        assert_eq!(b.take(x), vec![flag(1), flag(3)]);
        assert_eq!(b.take(y), vec![flag(2), flag(4)]);
    }

    /// A batch popping closes the open ones; its slot and list are reused.
    #[test]
    fn a_popped_batch_closes_the_open_ones_and_its_slot_is_reused() {
        let mut b = FlagBatches::default();
        let x = b.open(Picos(10), flag(1));
        b.pushed(1);
        let l = b.take(x);
        assert_eq!(l, vec![flag(1)]);
        assert_eq!(b.joinable(Picos(10), 1), None);
        b.give_back(x, l);
        let y = b.open(Picos(30), flag(5));
        assert_eq!(y, x, "the free slot is reused");
        assert_eq!(b.slots(), 1);
        assert_eq!(b.take(y), vec![flag(5)]);
    }
}
