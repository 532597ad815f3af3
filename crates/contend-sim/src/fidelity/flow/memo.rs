//! DESIGN 9 — the memo of solved flow sets: the flow fidelity's rates
//! are a pure function of its flows in order (kind, started or not,
//! through its first window or not), so a flow set solved before gets the
//! rates (and held rules) that solve gave, looked up by the set's hash
//! (a ring's pattern of slices repeats). Its luck is watched: while it
//! seldom hits (many GPUs' flow sets seldom repeat) it is left off for a
//! while, lookups and stores both. Its reference
//! (`FlowOptions::full_solve`) solves every time: the same rates to the
//! bit (tests/references.rs).

use crate::engine::ids::{ChId, FxMap};

/// Solved flow sets kept at most, and flows over all of them (then the
/// memo starts over: memory stays bounded whatever the traffic, however
/// many flows a set has). A verify step's `nccl` at 8 GPUs solves about
/// 25,000 distinct sets: kept whole, 4,096 at a time lost most of their
/// hits at each start over.
const MEMO_MAX: usize = 1 << 16;
const MEMO_MAX_FLOWS: usize = 1 << 20;

/// Recomputes per window of the memo's luck: a window with fewer than one
/// hit in [`MEMO_POOR`] lookups turns the memo off for the next
/// `MEMO_WINDOW << n` recomputes (n: poor windows in a row, to
/// [`MEMO_BACKOFF_MAX`]), where a lookup that misses costs hashing and
/// storing a set of every flow (many GPUs' flow sets seldom repeat).
/// Exact either way: a hit gives what the solve would. (One in 32 kept
/// the memo on for a 64-GPU `ring-ll` once its key left out the idle
/// flows at a set's end, at +8.6 % instructions: hashing and storing
/// hundreds of flows a recompute costs more than the component solves a
/// few hits save; one in 4 keeps it off there and on for 8 GPUs, where
/// three lookups in four hit.)
const MEMO_WINDOW: u32 = 256;
const MEMO_POOR: u32 = 4;
const MEMO_BACKOFF_MAX: u32 = 8;

/// Where a solved flow set lies in the memo's arena: its flows at
/// `kept[at..at + len]`; and the solve stored before it under the same
/// hash, in `older` ([`NO_SOLVED`]: none). The last solve stored under a
/// hash is kept in the hash's own entry, so a hit reads no list of
/// solves, only the hash table and its run of flows.
#[derive(Clone, Copy, Debug)]
struct Solved {
    at: usize,
    len: usize,
    next: u32,
}

/// The end of a hash's chain of solves.
const NO_SOLVED: u32 = u32::MAX;

/// One flow of a solved set: its entry in the set (kind × 4 + started +
/// 2 × in first window), the rule channel holding it ([`NOT_HELD`]:
/// none) and its rate, side by side: a hit compares and reads one run of
/// these (the set, rates and held rules in three arenas were three places
/// in memory to miss in the cache, a fourth for the solve's record).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kept {
    entry: u32,
    held: u32,
    rate: f64,
}

/// No rule holds the flow (in [`Kept`]).
const NOT_HELD: u32 = u32::MAX;

impl Kept {
    /// The rate the solve gave the flow.
    #[inline]
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The rule channel the solve found holding the flow.
    #[inline]
    pub fn held(&self) -> Option<ChId> {
        (self.held != NOT_HELD).then_some(ChId(self.held))
    }
}

/// Solved flow sets (each flow as kind × 4 + started + 2 × in first
/// window, in order) with the rates and held rules their solve gave.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    /// A set's hash → the last solve stored under it (each solve names
    /// the one before it under that hash, in `older`: a chain per hash in
    /// one list, so a store allocates nothing once the lists have grown),
    /// solves stored, and the arena the solved sets' flows lie in.
    by_hash: FxMap<u64, Solved>,
    older: Vec<Solved>,
    stored: usize,
    kept: Vec<Kept>,
    /// Its luck: lookups and hits this window, recomputes left with it
    /// off, and poor windows in a row.
    tries: u32,
    hits: u32,
    off: u64,
    poor: u32,
}

impl Memo {
    /// Whether the memo is in use at the next recompute.
    #[inline]
    pub fn is_on(&self) -> bool {
        self.off == 0
    }

    /// A recompute that may use the memo: `false` (and one recompute less
    /// to go) while it is off; else the lookup is counted in its luck.
    #[inline]
    pub fn take_part(&mut self) -> bool {
        if self.off > 0 {
            self.off -= 1;
            return false;
        }
        self.tries += 1;
        if self.tries == MEMO_WINDOW {
            if self.hits * MEMO_POOR < MEMO_WINDOW {
                self.off = u64::from(MEMO_WINDOW) << self.poor;
                self.poor = (self.poor + 1).min(MEMO_BACKOFF_MAX);
            } else {
                self.poor = 0;
            }
            self.tries = 0;
            self.hits = 0;
        }
        true
    }

    /// The hash a set is kept under.
    #[inline]
    pub fn hash(set: &[u32]) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<crate::engine::ids::FxHasher>::default().hash_one(set)
    }

    /// The flows of `set` (hashing to `hash`), each with the rate and held
    /// rule its solve gave, where it was solved before (a hit, counted).
    #[inline]
    pub fn find(&mut self, hash: u64, set: &[u32]) -> Option<&[Kept]> {
        // (a set is stored only where its lookup missed: at most one
        // solve of the chain holds it, found in whichever order)
        let mut e = *self.by_hash.get(&hash)?;
        loop {
            let kept = &self.kept[e.at..e.at + e.len];
            if e.len == set.len() && kept.iter().zip(set).all(|(k, &s)| k.entry == s) {
                break;
            }
            e = *self.older.get(e.next as usize)?;
        }
        self.hits += 1;
        Some(&self.kept[e.at..e.at + e.len])
    }

    /// Keeps what the solve of `set` (hashing to `hash`) gave, each
    /// flow's rate and held rule (starting over first where the memo is
    /// full).
    pub fn store(
        &mut self,
        hash: u64,
        set: &[u32],
        rates: impl Iterator<Item = f64>,
        held: impl Iterator<Item = Option<ChId>>,
    ) {
        if self.stored >= MEMO_MAX || self.kept.len() + set.len() > MEMO_MAX_FLOWS {
            self.by_hash.clear();
            self.older.clear();
            self.stored = 0;
            self.kept.clear();
        }
        self.stored += 1;
        let mut e = Solved {
            at: self.kept.len(),
            len: set.len(),
            next: NO_SOLVED,
        };
        self.kept
            .extend(set.iter().zip(rates.zip(held)).map(|(&entry, (rate, h))| {
                debug_assert!(
                    h.is_none_or(|c| c.0 != NOT_HELD),
                    "a channel number below 2^32 - 1"
                );
                Kept {
                    entry,
                    held: h.map_or(NOT_HELD, |c| c.0),
                    rate,
                }
            }));
        debug_assert_eq!(self.kept.len(), e.at + e.len, "a rate and a rule per flow");
        if let Some(last) = self.by_hash.get_mut(&hash) {
            e.next = self.older.len() as u32;
            self.older.push(*last);
            *last = e;
        } else {
            self.by_hash.insert(hash, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets stored under one hash are each found (the hash's chain), with
    /// the rates and held rules stored for them; a set not stored (a
    /// prefix of one, one longer) is not, nor one under another hash.
    #[test]
    fn sets_under_one_hash_are_each_found() {
        let mut m = Memo::default();
        let held = [None, Some(ChId(4)), None];
        m.store(
            7,
            &[1, 2, 3],
            [1.0, 2.0, f64::INFINITY].into_iter(),
            held.into_iter(),
        );
        m.store(
            7,
            &[5, 6],
            [0.5, 0.0].into_iter(),
            [Some(ChId(0)), None].into_iter(),
        );
        m.store(9, &[1, 2, 3], [3.0; 3].into_iter(), [None; 3].into_iter());
        let k = m.find(7, &[1, 2, 3]).expect("stored");
        let rates: Vec<f64> = k.iter().map(Kept::rate).collect();
        assert_eq!(rates, vec![1.0, 2.0, f64::INFINITY]);
        assert_eq!(k.iter().map(Kept::held).collect::<Vec<_>>(), held);
        let k = m.find(7, &[5, 6]).expect("stored");
        assert_eq!((k[0].rate(), k[0].held()), (0.5, Some(ChId(0))));
        assert_eq!((k[1].rate(), k[1].held()), (0.0, None));
        assert_eq!(m.find(9, &[1, 2, 3]).expect("stored")[0].rate(), 3.0);
        assert!(m.find(7, &[1, 2]).is_none());
        assert!(m.find(7, &[5, 6, 7]).is_none());
        assert!(m.find(8, &[5, 6]).is_none());
    }
}
