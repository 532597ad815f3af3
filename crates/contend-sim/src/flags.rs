//! DESIGN 6, 7 — flags: counters per (actor, collective, phase), flag
//! writes, and waiting for them. A flag in the waiting GPU's own memory is
//! noticed `gpu.local_poll_ns` after it lands and costs no traffic; a flag
//! elsewhere (host memory) is polled by reads, one round trip each, which
//! the transport carries (at flow fidelity as a chain of polls,
//! `poll_chain.rs`, made real where it matters).

use crate::engine::{Engine, Ev};
use crate::ids::ActorId;
use crate::params::ns;
use crate::queue::EventQueue;
use crate::transport::Transport;
use contend_workload::{MemLoc, Phase};
use std::collections::VecDeque;

pub(crate) use crate::transport::tlp::packet::FlagAddr;

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

impl<Q: EventQueue<Ev<T::Event>>, T: Transport> Engine<'_, Q, T> {
    fn flag_is_local(&self, a: ActorId) -> bool {
        let s = &self.actors[a].spec;
        s.flag_loc == MemLoc::Device(s.kernel.gpu)
    }

    /// Starts waiting for `count` flags of `phase`; the actor blocks.
    pub(crate) fn start_wait(&mut self, a: ActorId, phase: Phase, count: u32) -> bool {
        let flag = FlagAddr {
            to: a,
            epoch: self.actors[a].epoch,
            phase: phase.0,
        };
        let w = Waiting { flag, count };
        let now = self.w.now;
        let act = &mut self.actors[a];
        act.waiting = Some(w);
        act.wait_since = now;
        if self.flag_is_local(a) {
            if self.w.flags.count(flag) >= count {
                self.actors[a].waiting = None;
                let at = now + ns(self.w.p.gpu.local_poll_ns);
                self.w.push(at, Ev::Resume(a));
            }
            // else: flag_arrive resumes it.
        } else {
            self.poll(a, w);
        }
        true
    }

    /// One poll of a flag in remote memory.
    pub(crate) fn poll(&mut self, a: ActorId, w: Waiting) {
        let s = &self.actors[a].spec;
        let (gpu, at) = (s.kernel.gpu, s.flag_loc.node());
        self.net(|t, world| t.poll(world, a, gpu, at, w));
    }

    /// A poll of `a`'s flags in remote memory came back (flow fidelity):
    /// it sees them if they were in when it read memory.
    pub(crate) fn poll_done(&mut self, a: ActorId) {
        if let Some(w) = self.actors[a].waiting {
            let seen = self.w.flags.count(w.flag) >= w.count;
            self.polled(a, w, seen);
        }
    }

    /// A poll came back: done if it saw the flags, else poll again.
    pub(crate) fn polled(&mut self, a: ActorId, w: Waiting, seen: bool) {
        if self.actors[a].waiting.is_some() {
            if seen {
                self.finish_wait(a);
            } else {
                self.poll(a, w);
            }
        }
    }

    pub(crate) fn finish_wait(&mut self, a: ActorId) {
        if self.actors[a].waiting.take().is_some() {
            let now = self.w.now;
            self.w.push(now, Ev::Resume(a));
        }
    }

    /// A flag landed at its address.
    pub(crate) fn flag_arrive(&mut self, f: FlagAddr) {
        let c = self.w.flags.add(f);
        let Some(w) = self.actors[f.to].waiting else {
            return;
        };
        if (w.flag.epoch, w.flag.phase) != (f.epoch, f.phase) || c < w.count {
            return;
        }
        if self.flag_is_local(f.to) {
            self.actors[f.to].waiting = None;
            let at = self.w.now + ns(self.w.p.gpu.local_poll_ns);
            self.w.push(at, Ev::Resume(f.to));
        } else if !self.w.polls.is_empty() {
            // its pending poll (if it is a chain's) reads memory after now
            self.w.polls_seen(f.to);
        }
    }

    /// Sends a flag write from actor `a` to the flag location of actor `to`.
    pub(crate) fn send_flag(&mut self, a: ActorId, to: ActorId, epoch: u32, phase: u32) {
        let gpu = self.actors[a].spec.kernel.gpu;
        let dst = self.actors[to].spec.flag_loc.node();
        let flag = FlagAddr { to, epoch, phase };
        if dst == gpu {
            let now = self.w.now;
            self.w.push(now, Ev::FlagAt(flag));
            return;
        }
        self.net(|t, w| t.send_flag(w, a, gpu, dst, flag));
    }
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
