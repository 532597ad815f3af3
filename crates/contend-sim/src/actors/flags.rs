//! DESIGN 6, 7 — flags: counters per (actor, collective, phase), flag
//! writes, and waiting for them. A flag in the waiting GPU's own memory is
//! noticed `gpu.local_poll_ns` after it lands and costs no traffic; a flag
//! elsewhere (host memory) is polled by reads, one round trip each, which
//! the fidelity carries (at flow fidelity as a chain of polls,
//! `poll_chain.rs`, made real where it matters).

use crate::engine::ids::ActorId;

/// A flag's address: which actor's flags, which collective, which phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlagAddr {
    pub to: ActorId,
    pub epoch: u32,
    pub phase: u32,
}

/// How many flags have reached each address: per actor, one row of
/// counters per collective from the oldest one it has not finished (flags
/// may arrive for collectives it has not begun), one counter per phase.
/// A finished collective's row is cleared for reuse, so memory stays flat.
///
/// An actor's rows lie in one buffer, a ring of rows of one width (the
/// most phases seen), so a flag costs two dependent reads (the actor, its
/// counter), not four (a list of rows each in a buffer of its own): a
/// 64-GPU barrier lands 4,032 flags.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    actors: Vec<ActorFlags>,
}

#[derive(Debug, Default)]
struct ActorFlags {
    /// The collective of the first row.
    base: u32,
    /// Rows in use (from the first, `head`).
    rows: usize,
    /// Ring index of the first row.
    head: usize,
    /// Counters per row.
    width: usize,
    /// Ring slots for rows less one (slots: a power of two; no slots
    /// before any flag, when `width` is 0 too).
    mask: usize,
    /// `slots * width` counters, row `k` (the collective `base + k`) at
    /// ring index `(head + k) % slots`; the rows not in use are zero.
    counts: Vec<u32>,
}

impl ActorFlags {
    /// Ring slots for rows (a power of two, or 0 before any flag).
    fn slots(&self) -> usize {
        if self.width == 0 { 0 } else { self.mask + 1 }
    }

    /// Index of row `k`'s counter `ph`, if held.
    #[inline]
    fn at(&self, k: usize, ph: usize) -> Option<usize> {
        (k < self.rows && ph < self.width).then(|| ((self.head + k) & self.mask) * self.width + ph)
    }

    /// Makes room for row `k` and counter `ph` (rows grow in number to a
    /// power of two, and in width to the phases seen): the rows are laid
    /// out again from ring index 0.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, k: usize, ph: usize) {
        let rows = self.rows.max(k + 1);
        let width = self.width.max(ph + 1);
        let slots = rows.next_power_of_two().max(self.slots());
        let mut counts = vec![0; slots * width];
        for r in 0..self.rows {
            let from = ((self.head + r) & self.mask) * self.width;
            counts[r * width..r * width + self.width]
                .copy_from_slice(&self.counts[from..from + self.width]);
        }
        (self.counts, self.width, self.mask) = (counts, width, slots - 1);
        (self.head, self.rows) = (0, rows);
    }
}

impl Flags {
    pub fn count(&self, f: FlagAddr) -> u32 {
        let Some(af) = self.actors.get(f.to.ix()) else {
            return 0;
        };
        let Some(k) = f.epoch.checked_sub(af.base) else {
            return 0;
        };
        af.at(k as usize, f.phase as usize)
            .map_or(0, |i| af.counts[i])
    }
    /// One more flag at `f`; the new count. (Always inlined: a barrier
    /// lands thousands in a row.)
    #[inline(always)]
    pub fn add(&mut self, f: FlagAddr) -> u32 {
        let i = f.to.ix();
        if i >= self.actors.len() {
            self.actors.resize_with(i + 1, Default::default);
        }
        let af = &mut self.actors[i];
        // a flag for a collective its receiver has finished counts for no
        // one (nothing waits on it again)
        let Some(k) = f.epoch.checked_sub(af.base) else {
            return 0;
        };
        let (k, ph) = (k as usize, f.phase as usize);
        let ix = match af.at(k, ph) {
            Some(ix) => ix,
            None => {
                if k >= af.rows && k < af.slots() && ph < af.width {
                    // the ring has room: the row is zero, in use from now
                    af.rows = k + 1;
                } else {
                    af.grow(k, ph);
                }
                af.at(k, ph).expect("room was made")
            }
        };
        af.counts[ix] += 1;
        af.counts[ix]
    }
    /// Counter rows held, over every actor.
    #[cfg(test)]
    pub fn rows(&self) -> usize {
        self.actors.iter().map(|a| a.rows).sum()
    }
    /// Actor `to` has finished collective `epoch` and every one before it:
    /// their counters go.
    pub fn retire(&mut self, to: ActorId, epoch: u32) {
        let Some(af) = self.actors.get_mut(to.ix()) else {
            return;
        };
        while af.base <= epoch {
            if af.rows == 0 {
                af.base = epoch + 1;
                break;
            }
            let from = af.head * af.width;
            af.counts[from..from + af.width].fill(0);
            af.head = (af.head + 1) & af.mask;
            af.rows -= 1;
            af.base += 1;
        }
    }
}

/// What an actor waits for: `count` flags at `flag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Waiting {
    pub flag: FlagAddr,
    pub count: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(to: u32, epoch: u32, phase: u32) -> FlagAddr {
        FlagAddr {
            to: ActorId(to),
            epoch,
            phase,
        }
    }

    /// Counts per address, early flags for later collectives kept, a
    /// finished collective's counters dropped.
    #[test]
    fn flags_count_per_address_and_finished_collectives_go() {
        let mut f = Flags::default();
        assert_eq!(f.add(at(1, 0, 2)), 1);
        assert_eq!(f.add(at(1, 0, 2)), 2);
        assert_eq!(f.add(at(1, 3, 0)), 1, "early, for a later collective");
        assert_eq!(f.count(at(1, 0, 2)), 2);
        assert_eq!(f.count(at(1, 0, 1)), 0);
        assert_eq!(f.count(at(0, 0, 2)), 0);
        f.retire(ActorId(1), 0);
        assert_eq!(f.count(at(1, 0, 2)), 0);
        assert_eq!(f.count(at(1, 3, 0)), 1);
        f.retire(ActorId(1), 5);
        assert_eq!(f.count(at(1, 3, 0)), 0);
        assert_eq!(
            f.add(at(1, 4, 0)),
            0,
            "a finished collective counts for no one"
        );
        assert_eq!(f.add(at(1, 6, 0)), 1);
        assert_eq!(f.actors[1].rows, 1);
    }

    /// The plain twin: a counter per address in a map, an actor's
    /// finished collectives remembered as a floor (as `Flags` does, only
    /// for actors up to the highest one a flag was added for: others hold
    /// no counters to drop).
    #[derive(Default)]
    struct MapFlags {
        counts: std::collections::HashMap<(u32, u32, u32), u32>,
        floor: std::collections::HashMap<u32, u32>,
        seen: Option<u32>,
    }

    impl MapFlags {
        fn live(&self, f: FlagAddr) -> bool {
            self.floor.get(&f.to.0).is_none_or(|&fl| f.epoch >= fl)
        }
        fn count(&self, f: FlagAddr) -> u32 {
            let c = self.counts.get(&(f.to.0, f.epoch, f.phase));
            if self.live(f) {
                c.copied().unwrap_or(0)
            } else {
                0
            }
        }
        fn add(&mut self, f: FlagAddr) -> u32 {
            self.seen = self.seen.max(Some(f.to.0));
            if !self.live(f) {
                return 0;
            }
            let c = self.counts.entry((f.to.0, f.epoch, f.phase)).or_default();
            *c += 1;
            *c
        }
        fn retire(&mut self, to: ActorId, epoch: u32) {
            if self.seen.is_none_or(|m| to.0 > m) {
                return;
            }
            let fl = self.floor.entry(to.0).or_default();
            *fl = (*fl).max(epoch + 1);
        }
    }

    proptest::proptest! {
        /// The ring of rows counts as the map does, over flags for
        /// collectives ahead and behind, phases growing the rows' width,
        /// and retirements (one collective or several at once).
        #[test]
        fn ring_rows_count_as_a_map_does(
            ops in proptest::collection::vec((0u8..4, 0u32..3, 0u32..12, 0u32..40), 1..500)
        ) {
            let (mut ring, mut map) = (Flags::default(), MapFlags::default());
            let mut done = [0u32; 3];
            for (op, to, ahead, phase) in ops {
                // epochs near each actor's first unfinished collective
                let epoch = (done[to as usize] + ahead).saturating_sub(2);
                let f = at(to, epoch, phase);
                match op {
                    0 | 1 => proptest::prop_assert_eq!(ring.add(f), map.add(f)),
                    2 => proptest::prop_assert_eq!(ring.count(f), map.count(f)),
                    _ => {
                        let upto = done[to as usize] + ahead % 3;
                        ring.retire(ActorId(to), upto);
                        map.retire(ActorId(to), upto);
                        done[to as usize] = upto + 1;
                    }
                }
            }
            for to in 0..3 {
                for epoch in 0..done[to as usize] + 14 {
                    for phase in 0..40 {
                        let f = at(to, epoch, phase);
                        proptest::prop_assert_eq!(ring.count(f), map.count(f));
                    }
                }
            }
        }
    }
}
