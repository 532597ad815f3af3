//! DESIGN 6, 7 — flags: counters per (actor, collective, phase), flag
//! writes, and waiting for them. A flag in the waiting GPU's own memory is
//! noticed `gpu.local_poll_ns` after it lands and costs no traffic; a flag
//! elsewhere (host memory) is polled by reads, one round trip each, which
//! the transport carries.

use crate::engine::{Engine, Ev};
use crate::ids::{ActorId, FxMap};
use crate::params::ns;
use crate::queue::EventQueue;
use crate::transport::Transport;
use contend_workload::{MemLoc, Phase};

pub(crate) use crate::transport::tlp::packet::FlagAddr;

/// How many flags have reached each address.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    counts: FxMap<(ActorId, u32, u32), u32>,
}

impl Flags {
    pub fn count(&self, f: FlagAddr) -> u32 {
        self.counts
            .get(&(f.to, f.epoch, f.phase))
            .copied()
            .unwrap_or(0)
    }
    /// One more flag at `f`; the new count.
    pub fn add(&mut self, f: FlagAddr) -> u32 {
        let c = self.counts.entry((f.to, f.epoch, f.phase)).or_insert(0);
        *c += 1;
        *c
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
        if self.flag_is_local(f.to)
            && let Some(w) = self.actors[f.to].waiting
            && (w.flag.epoch, w.flag.phase) == (f.epoch, f.phase)
            && c >= w.count
        {
            self.actors[f.to].waiting = None;
            let at = self.w.now + ns(self.w.p.gpu.local_poll_ns);
            self.w.push(at, Ev::Resume(f.to));
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
