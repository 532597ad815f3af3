//! DESIGN 6, 7 — what flags and polls do to a rank: a wait begins, a flag
//! lands (noticed `gpu.local_poll_ns` later where it is local, else by the
//! rank's next poll), a poll comes back, a flag write leaves. The counters
//! and addresses are `actors/flags.rs`.

use crate::actors::flags::{FlagAddr, Waiting};
use crate::engine::FidelityModel;
use crate::engine::ids::{ActorId, FlagBatchId};
use crate::engine::{Agenda, Queue};
use crate::engine::{Engine, Ev};
use contend_topo::NodeIdx;
use contend_workload::{MemLoc, Phase, Rank};

impl<Q: Queue<T::Event>, T: FidelityModel> Engine<'_, Q, T> {
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
                let at = now + self.w.p.gpu.local_poll_ns.to_picos();
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

    /// Flags landed at their addresses, one after another: batch `b` the
    /// agenda keeps (out of line: where the fidelity tells none, as the TLP
    /// fidelity, acting on what it told stays small).
    #[inline(never)]
    pub(crate) fn flags_landed(&mut self, b: FlagBatchId) {
        let list = self.w.agenda.landed(b);
        for &f in &list {
            self.flag_arrive(f);
        }
        self.w.agenda.landed_done(b, list);
    }

    /// A flag landed at its address.
    #[inline]
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
            let at = self.w.now + self.w.p.gpu.local_poll_ns.to_picos();
            self.w.push(at, Ev::Resume(f.to));
        } else {
            // its pending poll, if the agenda keeps it aside, reads memory
            // after now
            self.w.agenda.flags_in(f.to);
        }
    }

    /// Sends flag writes from actor `a` to the flag location of each actor
    /// of `to`, one after another (a barrier's: one call for all, not a
    /// call per flag, whose entering and leaving were most of a flag's
    /// cost in the engine).
    pub(crate) fn signal(&mut self, a: ActorId, to: &[Rank], epoch: u32, phase: u32) {
        let gpu = self.actors[a].spec.kernel.gpu;
        for &to in to {
            self.flag_from(a, gpu, ActorId(to.0), epoch, phase);
        }
    }

    /// Sends a flag write from actor `a` to the flag location of actor `to`.
    pub(crate) fn send_flag(&mut self, a: ActorId, to: ActorId, epoch: u32, phase: u32) {
        let gpu = self.actors[a].spec.kernel.gpu;
        self.flag_from(a, gpu, to, epoch, phase);
    }

    /// Sends a flag write from actor `a`, on `gpu`, to the flag location
    /// of actor `to`.
    #[inline(always)]
    fn flag_from(&mut self, a: ActorId, gpu: NodeIdx, to: ActorId, epoch: u32, phase: u32) {
        let dst = self.actors[to].spec.flag_loc.node();
        let flag = FlagAddr { to, epoch, phase };
        if dst == gpu {
            let now = self.w.now;
            self.w.push(now, Ev::FlagAt(flag));
            return;
        }
        // (`net`, written out: inlined here, a barrier's flags cost no
        // call each)
        self.fidelity.send_flag(&mut self.w, a, gpu, dst, flag);
        if !self.w.out.is_empty() {
            self.act_on_told();
        }
    }
}
