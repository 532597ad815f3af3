//! DESIGN 6, 7 — flags: counters per (actor, collective, phase), flag
//! writes, and waiting for them. A flag in the waiting GPU's own memory is
//! noticed `gpu.local_poll_ns` after it lands and costs no traffic; a flag
//! elsewhere (host memory) is polled by reads, one round trip each, which
//! the fidelity carries (at flow fidelity as a chain of polls,
//! `poll_chain.rs`, made real where it matters).

use crate::engine::ids::ActorId;
use std::collections::VecDeque;

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
/// A finished collective's row is dropped, so memory stays flat.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    actors: Vec<ActorFlags>,
    /// Rows of finished collectives, kept for reuse (no allocation per
    /// collective once the run has warmed up).
    spare: Vec<Vec<u32>>,
}

#[derive(Debug, Default)]
struct ActorFlags {
    /// The collective of `rows[0]`.
    base: u32,
    rows: VecDeque<Vec<u32>>,
}

impl Flags {
    pub fn count(&self, f: FlagAddr) -> u32 {
        let Some(af) = self.actors.get(f.to.ix()) else {
            return 0;
        };
        let Some(k) = f.epoch.checked_sub(af.base) else {
            return 0;
        };
        af.rows
            .get(k as usize)
            .and_then(|r| r.get(f.phase as usize))
            .copied()
            .unwrap_or(0)
    }
    /// One more flag at `f`; the new count.
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
        let k = k as usize;
        if k >= af.rows.len() {
            let spare = &mut self.spare;
            af.rows
                .resize_with(k + 1, || spare.pop().unwrap_or_default());
        }
        let row = &mut af.rows[k];
        let ph = f.phase as usize;
        if ph >= row.len() {
            row.resize(ph + 1, 0);
        }
        row[ph] += 1;
        row[ph]
    }
    /// Counter rows held, over every actor.
    #[cfg(test)]
    pub fn rows(&self) -> usize {
        self.actors.iter().map(|a| a.rows.len()).sum()
    }
    /// Actor `to` has finished collective `epoch` and every one before it:
    /// their counters go.
    pub fn retire(&mut self, to: ActorId, epoch: u32) {
        let Some(af) = self.actors.get_mut(to.ix()) else {
            return;
        };
        while af.base <= epoch {
            let Some(mut row) = af.rows.pop_front() else {
                af.base = epoch + 1;
                break;
            };
            row.clear();
            self.spare.push(row);
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
        assert_eq!(f.actors[1].rows.len(), 1);
    }
}
