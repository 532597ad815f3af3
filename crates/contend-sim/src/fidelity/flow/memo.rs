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

/// Where a solved flow set lies in the memo's arenas: its set at
/// `sets[at..at + len]`, its rates and held rules at `rates[solved..]`
/// and `held[solved..]` (stored once, looked up without copying); and the
/// solve stored before it under the same hash ([`NO_SOLVED`]: none).
#[derive(Clone, Copy, Debug)]
struct Solved {
    at: usize,
    len: usize,
    solved: usize,
    next: u32,
}

/// The end of a hash's chain of solves.
const NO_SOLVED: u32 = u32::MAX;

/// Solved flow sets (each flow as kind × 4 + started + 2 × in first
/// window, in order) with the rates and held rules their solve gave.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    /// A set's hash → the last solve stored under it (each solve names
    /// the one before it: a chain per hash, in one arena, so a store
    /// allocates nothing once the arenas have grown), and the arenas the
    /// sets, rates and held rules lie in.
    by_hash: FxMap<u64, u32>,
    solved: Vec<Solved>,
    sets: Vec<u32>,
    rates: Vec<f64>,
    held: Vec<Option<ChId>>,
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

    /// The rates and held rules of `set` (hashing to `hash`) where it was
    /// solved before (a hit, counted).
    #[inline]
    pub fn find(&mut self, hash: u64, set: &[u32]) -> Option<(&[f64], &[Option<ChId>])> {
        // (a set is stored only where its lookup missed: at most one
        // solve of the chain holds it, found in whichever order)
        let mut i = *self.by_hash.get(&hash)?;
        let e = loop {
            let e = self.solved.get(i as usize)?;
            if &self.sets[e.at..e.at + e.len] == set {
                break *e;
            }
            i = e.next;
        };
        self.hits += 1;
        Some((
            &self.rates[e.solved..e.solved + e.len],
            &self.held[e.solved..e.solved + e.len],
        ))
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
        if self.solved.len() >= MEMO_MAX || self.sets.len() + set.len() > MEMO_MAX_FLOWS {
            self.by_hash.clear();
            self.solved.clear();
            self.sets.clear();
            self.rates.clear();
            self.held.clear();
        }
        let i = self.solved.len() as u32;
        let next = self.by_hash.insert(hash, i).unwrap_or(NO_SOLVED);
        self.solved.push(Solved {
            at: self.sets.len(),
            len: set.len(),
            solved: self.rates.len(),
            next,
        });
        self.sets.extend_from_slice(set);
        self.rates.extend(rates);
        self.held.extend(held);
    }
}
