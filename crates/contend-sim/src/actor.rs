//! DESIGN 6, 7, 8 — actors and their scripts: one actor per rank (or stream
//! end) runs its traffic program op by op — kernel launch (eager or graph),
//! local reduce and copy, loads and stores (through [`crate::transfer`]),
//! flag writes, system fences, waits — after the compute gap and arrival
//! skew before each collective, and records when each collective began and
//! ended, plus the spans of one collective for the timeline.

use crate::engine::{Engine, Ev};
use crate::flags::Waiting;
use crate::gpu::{self, Dir, Kernel};
use crate::ids::ActorId;
use crate::params::ns;
use crate::queue::EventQueue;
use crate::transport::Transport;
use contend_topo::Picos;
use contend_workload::{MemLoc, Notify, Op, Program};
use serde::Serialize;
use std::rc::Rc;

/// One step of an actor's script.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Step {
    /// Idle time before the next collective (compute gap plus skew).
    Delay(Picos),
    /// The actor arrives at collective `k` (records the time).
    Begin(u32),
    /// The actor finishes collective `k`.
    End,
    /// Wait for the other programs of this rank's kernel launch to finish
    /// the collective too: a launch ends when its last block does, and the
    /// next one on the GPU's stream starts after it (NCCL's channels).
    Join,
    /// Index into the actor's op table.
    Op(u32),
}

/// Kinds of spans recorded for the timeline view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpanKind {
    Launch,
    Barrier,
    Load,
    Store,
    Reduce,
    Idle,
}

/// What one actor did from `start_ns` to `end_ns` of the traced collective.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Span {
    pub actor: u32,
    pub kind: SpanKind,
    pub start_ns: f64,
    pub end_ns: f64,
}

/// What an actor runs and where.
#[derive(Clone, Debug)]
pub(crate) struct ActorSpec {
    pub kernel: Kernel,
    pub flag_loc: MemLoc,
    pub script: crate::script::Script,
    /// The program whose ops `Step::Op` indexes (shared by every
    /// repetition; a ring's ops worked out as the actor reaches them).
    pub ops: Rc<Program>,
    /// How its kernel is launched (eager, a graph node, a graph per call).
    pub mode: contend_workload::LaunchMode,
    /// One host thread launches every rank (a launch call per collective:
    /// eager or a graph per call).
    pub one_thread: Option<crate::launcher::OneThread>,
    /// The caller's own host time per call before the launch
    /// (torch.distributed's around NCCL; zero for a direct call).
    pub caller: Picos,
    /// The kernel launch this actor is a block of (its rank), and how many
    /// actors that launch has (1: it alone).
    pub launch: (u32, u32),
}

#[derive(Debug)]
pub(crate) struct Actor {
    pub spec: ActorSpec,
    pub pc: usize,
    pub epoch: u32,
    pub waiting: Option<Waiting>,
    pub wait_since: Picos,
    /// Transfer groups of the current op still running (two for a stream op).
    pub groups_open: u32,
    span_start: Picos,
    span_kind: Option<SpanKind>,
    /// When each collective began and ended.
    pub begin: Vec<Picos>,
    pub end: Vec<Picos>,
}

impl Actor {
    pub fn new(spec: ActorSpec) -> Actor {
        Actor {
            spec,
            pc: 0,
            epoch: 0,
            waiting: None,
            wait_since: Picos::ZERO,
            groups_open: 0,
            span_start: Picos::ZERO,
            span_kind: None,
            begin: vec![],
            end: vec![],
        }
    }
    /// Whether the script has run to its end.
    pub fn finished(&self) -> bool {
        self.pc >= self.spec.script.len()
    }
}

/// Spans kept for the timeline at most: the first of the traced
/// collective (a ring of a 4 GiB allreduce has millions; memory stays flat).
const SPANS_MAX: usize = 1 << 18;

impl<Q: EventQueue<Ev<T::Event>>, T: Transport> Engine<'_, Q, T> {
    /// Ends the actor's current span and starts one of `kind`.
    fn span(&mut self, a: ActorId, kind: Option<SpanKind>) {
        let now = self.w.now;
        let act = &mut self.actors[a];
        if let (Some(k), Some(te)) = (act.span_kind, self.trace_epoch)
            && act.epoch == te
            && now > act.span_start
            && self.spans.len() < SPANS_MAX
        {
            self.spans.push(Span {
                actor: a.0,
                kind: k,
                start_ns: act.span_start.as_ns_f64(),
                end_ns: now.as_ns_f64(),
            });
        }
        let act = &mut self.actors[a];
        act.span_kind = kind;
        act.span_start = now;
    }

    /// Executes steps until the actor blocks.
    pub(crate) fn step(&mut self, a: ActorId) {
        loop {
            let act = &self.actors[a];
            let pc = act.pc;
            let Some(s) = act.spec.script.step(pc) else {
                // the script has run to its end
                self.span(a, None);
                return;
            };
            self.actors[a].pc += 1;
            match s {
                Step::Delay(d) => {
                    self.span(a, Some(SpanKind::Idle));
                    if d > Picos::ZERO {
                        let at = self.w.now + d;
                        self.w.push(at, Ev::Resume(a));
                        return;
                    }
                }
                Step::Begin(k) => {
                    self.span(a, None);
                    let now = self.w.now;
                    let act = &mut self.actors[a];
                    act.epoch = k;
                    act.begin.push(now);
                }
                Step::End => {
                    self.span(a, None);
                    let now = self.w.now;
                    self.actors[a].end.push(now);
                    // it never waits on this collective's flags again
                    let epoch = self.actors[a].epoch;
                    self.w.flags.retire(a, epoch);
                }
                Step::Join => {
                    let (group, size) = self.actors[a].spec.launch;
                    if size > 1 {
                        self.span(a, Some(SpanKind::Barrier));
                        let waiting = self.joins.entry(group).or_default();
                        waiting.push(a);
                        if waiting.len() < size as usize {
                            return;
                        }
                        // (the list goes back empty: no allocation next time)
                        let mut all = std::mem::take(waiting);
                        let now = self.w.now;
                        for b in all.drain(..).filter(|b| *b != a) {
                            self.w.push(now, Ev::Resume(b));
                        }
                        self.joins.insert(group, all);
                    }
                }
                Step::Op(i) => {
                    let prog = self.actors[a].spec.ops.clone();
                    if prog.with_op(i as usize, |op| self.exec(a, op)) == Some(true) {
                        return;
                    }
                }
            }
        }
    }

    /// Starts an op; true if the actor now blocks.
    fn exec(&mut self, a: ActorId, op: &Op) -> bool {
        let p = self.w.p;
        match op {
            Op::Launch => {
                self.span(a, Some(SpanKind::Launch));
                let act = &self.actors[a];
                let done = crate::launcher::launch_done(
                    self.w.now,
                    act.spec.mode,
                    act.spec.one_thread,
                    act.spec.caller,
                    act.epoch,
                    p,
                );
                self.resume_after(a, done - self.w.now)
            }
            Op::Reduce { bytes } | Op::LocalCopy { bytes } => {
                self.span(a, Some(SpanKind::Reduce));
                let gpu = self.actors[a].spec.kernel.gpu;
                let t = gpu::local_time(self.w.topo, p, gpu, bytes.0);
                self.resume_after(a, t)
            }
            Op::Fetch {
                parts,
                engine,
                loads_per_thread,
            } => {
                self.span(a, Some(SpanKind::Load));
                let parts = parts.iter().map(|x| (*x, Notify::None));
                self.start_group(a, Dir::Read, parts, *engine, *loads_per_thread)
            }
            Op::Post { parts, engine } => {
                self.span(a, Some(SpanKind::Store));
                self.start_group(a, Dir::Write, parts.iter().copied(), *engine, None)
            }
            Op::Stream {
                fetch,
                post,
                engine,
                loads_per_thread,
            } => {
                self.span(a, Some(SpanKind::Store));
                let reads = fetch.iter().map(|x| (*x, Notify::None));
                let r = self.start_group(a, Dir::Read, reads, *engine, *loads_per_thread);
                let w = self.start_group(a, Dir::Write, post.iter().copied(), *engine, None);
                r || w
            }
            Op::Signal { to, phase } => {
                self.span(a, Some(SpanKind::Barrier));
                let epoch = self.actors[a].epoch;
                for to in to {
                    self.send_flag(a, ActorId(to.0), epoch, phase.0);
                }
                false
            }
            Op::Fence => {
                self.span(a, Some(SpanKind::Barrier));
                self.resume_after(a, ns(p.gpu.fence_ns))
            }
            Op::Overhead { time } => {
                self.span(a, Some(SpanKind::Barrier));
                self.resume_after(a, *time)
            }
            Op::Wait { phase, count } => {
                self.span(a, Some(SpanKind::Barrier));
                self.start_wait(a, *phase, *count)
            }
        }
    }

    /// The actor blocks for `d`; true.
    fn resume_after(&mut self, a: ActorId, d: Picos) -> bool {
        let at = self.w.now + d;
        self.w.push(at, Ev::Resume(a));
        true
    }
}
