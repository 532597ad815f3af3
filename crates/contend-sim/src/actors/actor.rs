//! DESIGN 6, 7, 8 — actors and their scripts: one actor per rank (or stream
//! end) runs its traffic program op by op — kernel launch (eager or graph),
//! local reduce and copy, loads and stores (through [`crate::actors::transfer`]),
//! flag writes, system fences, waits — after the compute gap and arrival
//! skew before each collective, and records when each collective began and
//! ended, plus the spans of one collective for the timeline.

use crate::actors::flags::Waiting;
use crate::model::gpu::Kernel;
use contend_topo::Picos;
use contend_workload::{MemLoc, Program};
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
    pub script: crate::actors::script::Script,
    /// The program whose ops `Step::Op` indexes (shared by every
    /// repetition; a ring's ops worked out as the actor reaches them).
    pub ops: Rc<Program>,
    /// How its kernel is launched (eager, a graph node, a graph per call).
    pub mode: contend_workload::LaunchMode,
    /// One host thread launches every rank (a launch call per collective:
    /// eager or a graph per call).
    pub one_thread: Option<crate::actors::launcher::OneThread>,
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

    /// Ends the current span at `now` and starts one of `kind`: the span
    /// ended (its kind and start), if there was one and it lasted.
    pub fn switch_span(&mut self, kind: Option<SpanKind>, now: Picos) -> Option<(SpanKind, Picos)> {
        let ended = self
            .span_kind
            .filter(|_| now > self.span_start)
            .map(|k| (k, self.span_start));
        self.span_kind = kind;
        self.span_start = now;
        ended
    }
}
