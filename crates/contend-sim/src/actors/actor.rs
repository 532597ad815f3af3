//! DESIGN 6, 7, 8 — actors and their scripts: one actor per rank (or stream
//! end) runs its traffic program op by op — kernel launch (eager or graph),
//! local reduce and copy, loads and stores (through [`crate::actors::transfer`]),
//! flag writes, system fences, waits — after the compute gap and arrival
//! skew before each collective, and records when each collective began and
//! ended, plus the spans of one collective for the timeline.

use crate::actors::flags::Waiting;
use crate::actors::script::ActorSpec;
use contend_topo::Picos;
use serde::Serialize;

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
