//! DESIGN 6, 7, 8 — what a Resume does to a rank: the engine runs the
//! actor's script op by op (launches, local work, loads and stores through
//! `rank_transfers.rs`, flag writes, fences, waits) until it blocks, and
//! keeps the spans of the traced collective for the timeline. The actor's
//! data is `actors/actor.rs`.

use crate::actors::actor::{Span, SpanKind};
use crate::actors::script::Step;
use crate::engine::FidelityModel;
use crate::engine::Queue;
use crate::engine::ids::ActorId;
use crate::engine::{Engine, Ev};
use crate::model::gpu::{self, Dir};
use contend_topo::Picos;
use contend_workload::{Notify, OpRef};

/// Spans kept for the timeline at most: the first of the traced
/// collective (a ring of a 4 GiB allreduce has millions; memory stays flat).
const SPANS_MAX: usize = 1 << 18;

impl<Q: Queue<T::Event>, T: FidelityModel> Engine<'_, Q, T> {
    /// Ends the actor's current span and starts one of `kind`; the ended
    /// one is kept for the timeline if it is of the traced collective.
    fn span(&mut self, a: ActorId, kind: Option<SpanKind>) {
        let now = self.w.now;
        let act = &mut self.actors[a];
        let epoch = act.epoch;
        if let (Some(span), Some(te)) = (act.switch_span(kind, now), self.trace_epoch)
            && epoch == te
            && self.spans.len() < SPANS_MAX
        {
            self.spans.push(Span {
                actor: a.0,
                kind: span.0,
                start_ns: span.1.as_ns_f64(),
                end_ns: now.as_ns_f64(),
            });
        }
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
    fn exec(&mut self, a: ActorId, op: OpRef<'_>) -> bool {
        let p = self.w.p;
        match op {
            OpRef::Launch => {
                self.span(a, Some(SpanKind::Launch));
                let act = &self.actors[a];
                let done = crate::actors::launcher::launch_done(
                    self.w.now,
                    act.spec.mode,
                    act.spec.one_thread,
                    act.spec.caller,
                    act.epoch,
                    p,
                );
                self.resume_after(a, done - self.w.now)
            }
            OpRef::Reduce { bytes } | OpRef::LocalCopy { bytes } => {
                self.span(a, Some(SpanKind::Reduce));
                let gpu = self.actors[a].spec.kernel.gpu;
                let t = gpu::local_time(self.w.topo, p, gpu, bytes.0);
                self.resume_after(a, t)
            }
            OpRef::Fetch {
                parts,
                mover,
                loads_per_thread,
            } => {
                self.span(a, Some(SpanKind::Load));
                let parts = parts.iter().map(|x| (*x, Notify::None));
                self.start_group(a, Dir::Read, parts, mover, loads_per_thread)
            }
            OpRef::Post { parts, mover } => {
                self.span(a, Some(SpanKind::Store));
                self.start_group(a, Dir::Write, parts.iter().copied(), mover, None)
            }
            OpRef::Stream {
                fetch,
                post,
                mover,
                loads_per_thread,
            } => {
                self.span(a, Some(SpanKind::Store));
                let reads = fetch.iter().map(|x| (*x, Notify::None));
                let r = self.start_group(a, Dir::Read, reads, mover, loads_per_thread);
                let w = self.start_group(a, Dir::Write, post.iter().copied(), mover, None);
                r || w
            }
            OpRef::Signal { to, phase } => {
                self.span(a, Some(SpanKind::Barrier));
                let epoch = self.actors[a].epoch;
                self.signal(a, to, epoch, phase.0);
                false
            }
            OpRef::Fence => {
                self.span(a, Some(SpanKind::Barrier));
                self.resume_after(a, p.gpu.fence_ns.to_picos())
            }
            OpRef::Overhead { time } => {
                self.span(a, Some(SpanKind::Barrier));
                self.resume_after(a, time)
            }
            OpRef::Wait { phase, count } => {
                self.span(a, Some(SpanKind::Barrier));
                self.start_wait(a, phase, count)
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
