//! The discrete-event engine: actors (one per rank or stream) execute traffic
//! programs; their loads, stores and flags move through the fabric either as
//! individual TLPs (`tlp` fidelity: credits, queues, serialization at every
//! hop) or as fluid flows sharing bandwidth max-min fairly (`flow` fidelity).

use crate::fabric::{ChId, Fabric, PathId};
use crate::flow::FlowState;
use crate::params::{ModelParams, ns};
use crate::queue::EventQueue;
use contend_topo::{BytesPerSec, NodeIdx, NodeKind, Picos, TlpKind, Topology};
use contend_workload::{Access, Engine as Eng, Fidelity, MemLoc, Notify, Op, Phase};
use std::collections::VecDeque;

/// One step of an actor's script.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    /// Idle time before the next collective (compute gap plus skew).
    Delay(Picos),
    /// The actor arrives at collective `k` (records the time).
    Begin(u32),
    /// The actor finishes collective `k`.
    End,
    /// Index into the actor's op table.
    Op(u32),
}

/// Kinds of spans recorded for the timeline view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpanKind {
    Launch,
    Barrier,
    Load,
    Store,
    Reduce,
    Idle,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Span {
    pub actor: u32,
    pub kind: SpanKind,
    pub start_ns: f64,
    pub end_ns: f64,
}

pub(crate) struct ActorSpec {
    pub gpu: NodeIdx,
    pub flag_loc: MemLoc,
    pub blocks: u32,
    pub threads: u32,
    pub script: Vec<Step>,
    /// The ops `Step::Op` indexes (shared by every repetition of a program).
    pub ops: std::rc::Rc<[Op]>,
    pub eager: bool,
}

struct Actor {
    spec: ActorSpec,
    pc: usize,
    epoch: u32,
    waiting: Option<(u32, u32, u32)>,
    wait_since: Picos,
    span_start: Picos,
    span_kind: Option<SpanKind>,
    begin: Vec<Picos>,
    end: Vec<Picos>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum XKind {
    Read,
    Write,
}

struct Xfer {
    actor: u32,
    group: u32,
    kind: XKind,
    fwd: PathId,
    back: PathId,
    total: u64,
    issued: u64,
    done: u64,
    req: u32,
    notify: Notify,
    epoch: u32,
    local: bool,
}

struct Group {
    actor: u32,
    xfers: Vec<u32>,
    open: u32,
    window: u32,
    rr: usize,
    kind: XKind,
    /// Flags still to be written after the fence (post groups).
    flags_pending: u32,
    window_init: u32,
    done: bool,
    /// Transfers not yet fully issued.
    unissued: u32,
    /// Transfers that cross links (not local copies).
    remote: u32,
    /// Departure times of stores scheduled on the GPU's egress link whose
    /// store-buffer slot has not been handed back yet.
    departs: VecDeque<Picos>,
    /// A `Depart` event is pending.
    depart_pending: bool,
    /// SM stores: the rate the kernel's blocks can issue them at, and when
    /// the next store may be issued (`None`: not paced, e.g. copy engine).
    issue_rate: Option<BytesPerSec>,
    next_issue: Picos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PKind {
    Write,
    Flag,
    ReadReq,
    Cpl,
    PollReq,
    PollCpl,
}

impl PKind {
    fn tlp(self) -> TlpKind {
        match self {
            PKind::Write | PKind::Flag => TlpKind::Write,
            PKind::ReadReq | PKind::PollReq => TlpKind::ReadRequest,
            PKind::Cpl | PKind::PollCpl => TlpKind::Completion,
        }
    }
    /// Credit class: 0 posted, 1 non-posted, 2 completion.
    fn class(self) -> usize {
        match self {
            PKind::Write | PKind::Flag => 0,
            PKind::ReadReq | PKind::PollReq => 1,
            PKind::Cpl | PKind::PollCpl => 2,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Pkt {
    kind: PKind,
    payload: u32,
    path: PathId,
    hop: u16,
    /// Transfer (data), actor (flags and polls).
    owner: u32,
    /// For flags: (epoch, phase) and destination actor in `to`.
    epoch: u32,
    phase: u32,
    to: u32,
    /// Last completion of its request / last data packet of its transfer.
    last: bool,
    /// Credit held at the receiver of this channel (released on departure).
    held: Option<(ChId, u32)>,
    seq: u64,
    /// Not sent before this time (root-complex forwarding, memory access).
    ready: Picos,
}

struct Chan {
    busy_until: Picos,
    busy: u64,
    q: [VecDeque<u32>; 3],
    avail: [(i64, i64); 3],
    returns: VecDeque<(Picos, usize, u32)>,
    wake: Option<Picos>,
    /// Collapse bookkeeping: (ingress channel, target root complex, last seen).
    recent: Vec<(ChId, NodeIdx, Picos)>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    Resume(u32),
    Arrive(u32),
    Depart(u32),
    Wake(u32),
    Fence(u32),
    FlagAt {
        to: u32,
        epoch: u32,
        phase: u32,
    },
    FlowTick(u64),
    Reflow,
    XferDone(u32),
    PollDone {
        actor: u32,
        epoch: u32,
        phase: u32,
        count: u32,
    },
}

pub(crate) struct Engine<'a, Q: EventQueue<Ev>> {
    p: &'a ModelParams,
    topo: &'a Topology,
    fid: Fidelity,
    q: Q,
    pub now: Picos,
    pub events: u64,
    pub fabric: Fabric,
    chans: Vec<Chan>,
    actors: Vec<Actor>,
    flags: crate::fabric::FxMap<(u32, u32, u32), u32>,
    xfers: Vec<Xfer>,
    groups: Vec<Group>,
    pkts: Vec<Pkt>,
    free: Vec<u32>,
    seq: u64,
    flows: FlowState,
    pub trace_epoch: Option<u32>,
    pub spans: Vec<Span>,
    /// `pcie.fc_update_ns` as picoseconds (on the hot path).
    fc_delay: Picos,
}

const INF: i64 = i64::MAX / 4;

impl<'a, Q: EventQueue<Ev> + Default> Engine<'a, Q> {
    pub fn new(
        topo: &'a Topology,
        p: &'a ModelParams,
        fid: Fidelity,
        actors: Vec<ActorSpec>,
    ) -> Self {
        let fabric = Fabric::new(topo, p);
        let chans = fabric
            .chans
            .iter()
            .map(|c| Chan {
                busy_until: Picos::ZERO,
                busy: 0,
                q: Default::default(),
                avail: c
                    .credits
                    .map(|l| (l.hdr.map_or(INF, i64::from), l.data.map_or(INF, i64::from))),
                returns: VecDeque::new(),
                wake: None,
                recent: Vec::new(),
            })
            .collect();
        let flows = FlowState::new(fabric.chans.len());
        let actors = actors
            .into_iter()
            .map(|spec| Actor {
                spec,
                pc: 0,
                epoch: 0,
                waiting: None,
                wait_since: Picos::ZERO,
                span_start: Picos::ZERO,
                span_kind: None,
                begin: vec![],
                end: vec![],
            })
            .collect();
        Engine {
            p,
            topo,
            fid,
            q: Q::default(),
            now: Picos::ZERO,
            events: 0,
            fabric,
            chans,
            actors,
            flags: Default::default(),
            xfers: vec![],
            groups: vec![],
            pkts: vec![],
            free: vec![],
            seq: 0,
            flows,
            trace_epoch: None,
            spans: vec![],
            fc_delay: ns(p.pcie.fc_update_ns),
        }
    }

    /// Runs every actor's script to its end. Returns an error sentence if the
    /// run deadlocks (an actor waits for a flag nobody sends).
    pub fn run(&mut self) -> Result<(), String> {
        for a in 0..self.actors.len() as u32 {
            self.q.push(Picos::ZERO, Ev::Resume(a));
        }
        while let Some((t, ev)) = self.q.pop() {
            self.now = t;
            self.events += 1;
            match ev {
                Ev::Resume(a) => self.step(a),
                Ev::Arrive(pk) => self.arrive(pk),
                Ev::Wake(c) => {
                    if self.chans[c as usize].wake == Some(t) {
                        self.chans[c as usize].wake = None;
                    }
                    self.try_start(c);
                }
                Ev::Depart(g) => {
                    let now = self.now;
                    let grp = &mut self.groups[g as usize];
                    grp.depart_pending = false;
                    while grp.departs.front().is_some_and(|t| *t <= now) {
                        grp.departs.pop_front();
                        grp.window += 1;
                    }
                    self.issue(g);
                    self.schedule_depart(g);
                }
                Ev::Fence(x) => self.fence_done(x),
                Ev::FlagAt { to, epoch, phase } => self.flag_arrive(to, epoch, phase),
                Ev::FlowTick(v) => self.flow_tick(v),
                Ev::Reflow => {
                    self.flows.pending = None;
                    self.flows.advance(self.now, &self.fabric);
                    self.reflow();
                }
                Ev::XferDone(x) => self.xfer_finished(x),
                Ev::PollDone {
                    actor,
                    epoch,
                    phase,
                    count,
                } => {
                    if self.flag_count(actor, epoch, phase) >= count {
                        self.finish_wait(actor);
                    } else {
                        self.poll_flow(actor, epoch, phase, count);
                    }
                }
            }
        }
        for (i, a) in self.actors.iter().enumerate() {
            if a.pc < a.spec.script.len() {
                let what = match a.waiting {
                    Some((e, ph, n)) => {
                        format!(" waiting for {n} flags of phase {ph} of collective {e}")
                    }
                    None => String::new(),
                };
                return Err(format!(
                    "the simulation deadlocked: actor {i} stopped at step {}{what}",
                    a.pc
                ));
            }
        }
        Ok(())
    }

    pub fn actor_times(&self, a: usize) -> (&[Picos], &[Picos]) {
        (&self.actors[a].begin, &self.actors[a].end)
    }

    /// Busy fraction of every channel over `[0, end]`.
    pub fn utilisation(&self, end: Picos) -> Vec<(contend_workload::Resource, f64)> {
        let total = end.0.max(1) as f64;
        self.fabric
            .chans
            .iter()
            .enumerate()
            .filter(|(_, c)| c.rate.is_some())
            .map(|(i, c)| {
                let busy = match self.fid {
                    Fidelity::Tlp => self.chans[i].busy as f64,
                    Fidelity::Flow => self.flows.busy[i],
                };
                (c.name.clone(), (busy / total).min(1.0))
            })
            .collect()
    }

    fn push(&mut self, t: Picos, ev: Ev) {
        self.q.push(t, ev);
    }

    // ----- actors -------------------------------------------------------

    fn span(&mut self, a: u32, kind: Option<SpanKind>) {
        let now = self.now;
        let act = &mut self.actors[a as usize];
        if let (Some(k), Some(te)) = (act.span_kind, self.trace_epoch)
            && act.epoch == te
            && now > act.span_start
        {
            self.spans.push(Span {
                actor: a,
                kind: k,
                start_ns: act.span_start.as_ns_f64(),
                end_ns: now.as_ns_f64(),
            });
        }
        let act = &mut self.actors[a as usize];
        act.span_kind = kind;
        act.span_start = now;
    }

    fn local_time(&self, a: u32, bytes: u64) -> Picos {
        let gpu = self.actors[a as usize].spec.gpu;
        let bw = match &self.topo.node(gpu).kind {
            NodeKind::Gpu(g) => g.memory_bandwidth,
            _ => BytesPerSec::from_gbps(100.0),
        };
        bw.scale(self.p.gpu.local_efficiency)
            .time_for(contend_topo::Bytes(bytes))
    }

    /// Executes steps until the actor blocks.
    fn step(&mut self, a: u32) {
        loop {
            let (pc, len) = (
                self.actors[a as usize].pc,
                self.actors[a as usize].spec.script.len(),
            );
            if pc >= len {
                self.span(a, None);
                return;
            }
            self.actors[a as usize].pc += 1;
            match self.actors[a as usize].spec.script[pc] {
                Step::Delay(d) => {
                    self.span(a, Some(SpanKind::Idle));
                    if d > Picos::ZERO {
                        self.push(self.now + d, Ev::Resume(a));
                        return;
                    }
                }
                Step::Begin(k) => {
                    self.span(a, None);
                    let act = &mut self.actors[a as usize];
                    act.epoch = k;
                    act.begin.push(self.now);
                }
                Step::End => {
                    self.span(a, None);
                    self.actors[a as usize].end.push(self.now);
                }
                Step::Op(i) => {
                    let ops = self.actors[a as usize].spec.ops.clone();
                    if self.exec(a, &ops[i as usize]) {
                        return;
                    }
                }
            }
        }
    }

    /// Starts an op; true if the actor now blocks.
    fn exec(&mut self, a: u32, op: &Op) -> bool {
        match op {
            Op::Launch => {
                self.span(a, Some(SpanKind::Launch));
                let t = if self.actors[a as usize].spec.eager {
                    self.p.gpu.launch_eager_ns
                } else {
                    self.p.gpu.launch_graph_ns
                };
                self.push(self.now + ns(t), Ev::Resume(a));
                true
            }
            Op::Reduce { bytes } | Op::LocalCopy { bytes } => {
                self.span(a, Some(SpanKind::Reduce));
                let t = self.local_time(a, bytes.0);
                self.push(self.now + t, Ev::Resume(a));
                true
            }
            Op::Fetch { parts, engine } => {
                self.span(a, Some(SpanKind::Load));
                let parts: Vec<(Access, Notify)> =
                    parts.iter().map(|x| (*x, Notify::None)).collect();
                self.start_group(a, XKind::Read, &parts, *engine)
            }
            Op::Post { parts, engine } => {
                self.span(a, Some(SpanKind::Store));
                self.start_group(a, XKind::Write, parts, *engine)
            }
            Op::Signal { to, phase } => {
                self.span(a, Some(SpanKind::Barrier));
                let epoch = self.actors[a as usize].epoch;
                self.send_flag(a, to.0, epoch, phase.0);
                false
            }
            Op::Fence => {
                self.span(a, Some(SpanKind::Barrier));
                self.push(self.now + ns(self.p.gpu.fence_ns), Ev::Resume(a));
                true
            }
            Op::Wait { phase, count } => {
                self.span(a, Some(SpanKind::Barrier));
                self.start_wait(a, *phase, *count)
            }
        }
    }

    fn flag_count(&self, a: u32, epoch: u32, phase: u32) -> u32 {
        self.flags.get(&(a, epoch, phase)).copied().unwrap_or(0)
    }

    fn flag_is_local(&self, a: u32) -> bool {
        let s = &self.actors[a as usize].spec;
        s.flag_loc == MemLoc::Device(s.gpu)
    }

    fn start_wait(&mut self, a: u32, phase: Phase, count: u32) -> bool {
        let epoch = self.actors[a as usize].epoch;
        let act = &mut self.actors[a as usize];
        act.waiting = Some((epoch, phase.0, count));
        act.wait_since = self.now;
        if self.flag_is_local(a) {
            if self.flag_count(a, epoch, phase.0) >= count {
                self.actors[a as usize].waiting = None;
                self.push(self.now + ns(self.p.gpu.local_poll_ns), Ev::Resume(a));
            }
            // else: flag_arrive resumes it.
        } else {
            match self.fid {
                Fidelity::Tlp => self.send_poll(a, epoch, phase.0, count),
                Fidelity::Flow => self.poll_flow(a, epoch, phase.0, count),
            }
        }
        true
    }

    fn finish_wait(&mut self, a: u32) {
        if self.actors[a as usize].waiting.take().is_some() {
            self.push(self.now, Ev::Resume(a));
        }
    }

    fn flag_arrive(&mut self, to: u32, epoch: u32, phase: u32) {
        let c = self.flags.entry((to, epoch, phase)).or_insert(0);
        *c += 1;
        let c = *c;
        if self.flag_is_local(to)
            && let Some((e, ph, need)) = self.actors[to as usize].waiting
            && (e, ph) == (epoch, phase)
            && c >= need
        {
            self.actors[to as usize].waiting = None;
            self.push(self.now + ns(self.p.gpu.local_poll_ns), Ev::Resume(to));
        }
    }
}

// ----- transfers, packets and flows -----------------------------------------

impl<Q: EventQueue<Ev> + Default> Engine<'_, Q> {
    fn memory_latency(&self, node: NodeIdx) -> Picos {
        match &self.topo.node(node).kind {
            NodeKind::HostMemory { latency, .. } => {
                latency.unwrap_or(ns(self.p.host.memory_latency_ns))
            }
            _ => ns(self.p.gpu.memory_latency_ns),
        }
    }

    /// The rate this actor's blocks issue SM stores at (one block per SM).
    fn store_rate(&self, a: u32) -> BytesPerSec {
        let s = &self.actors[a as usize].spec;
        let sms = match &self.topo.node(s.gpu).kind {
            NodeKind::Gpu(g) => g.sms,
            _ => 1,
        };
        BytesPerSec::from_gbps(self.p.gpu.store_gbps_per_sm * s.blocks.min(sms) as f64)
    }

    /// Outstanding read requests a kernel of this actor can keep in flight.
    fn load_window(&self, a: u32, req: u32, nvlink: bool) -> u32 {
        let s = &self.actors[a as usize].spec;
        let sms = match &self.topo.node(s.gpu).kind {
            NodeKind::Gpu(g) => g.sms,
            _ => 1,
        };
        let g = &self.p.gpu;
        let per_block =
            (s.threads as u64 * g.bytes_per_thread as u64 * g.loads_in_flight_per_thread as u64)
                .div_ceil(req as u64) as u32;
        let w = s.blocks.min(sms) * per_block.clamp(1, g.max_outstanding_loads_per_sm);
        if nvlink {
            w
        } else {
            w.min(self.p.pcie.max_tags)
        }
    }

    /// Starts the transfers of a Fetch or Post; true if the actor blocks.
    fn start_group(
        &mut self,
        a: u32,
        kind: XKind,
        parts: &[(Access, Notify)],
        engine: Eng,
    ) -> bool {
        let gpu = self.actors[a as usize].spec.gpu;
        let epoch = self.actors[a as usize].epoch;
        let g = self.groups.len() as u32;
        let mut group = Group {
            actor: a,
            xfers: vec![],
            open: 0,
            window: 0,
            rr: 0,
            kind,
            flags_pending: 0,
            window_init: 0,
            done: false,
            unissued: 0,
            remote: 0,
            departs: VecDeque::new(),
            depart_pending: false,
            issue_rate: None,
            next_issue: Picos::ZERO,
        };
        let mut nvlink = true;
        for (acc, notify) in parts {
            let target = acc.mem.node();
            let x = self.xfers.len() as u32;
            let local = target == gpu || acc.bytes.0 == 0;
            let (fwd, back) = if local {
                (0, 0)
            } else {
                let fwd = self
                    .fabric
                    .path(self.topo, gpu, target)
                    .expect("validated topology routes every endpoint pair");
                let back = self
                    .fabric
                    .path(self.topo, target, gpu)
                    .expect("validated topology routes every endpoint pair");
                nvlink &= self.fabric.paths[fwd as usize].nvlink_only;
                (fwd, back)
            };
            let mps = if local {
                4096
            } else {
                self.fabric.paths[fwd as usize].mps
            };
            let req = match (kind, engine) {
                (XKind::Read, Eng::Sm) => self.p.gpu.load_request_bytes,
                (XKind::Read, Eng::CopyEngine) => self.p.gpu.copy_request_bytes,
                (XKind::Write, Eng::Sm) => self.p.gpu.store_tlp_bytes.min(mps),
                (XKind::Write, Eng::CopyEngine) => mps,
            };
            if matches!(notify, Notify::After { .. }) {
                group.flags_pending += 1;
            }
            self.xfers.push(Xfer {
                actor: a,
                group: g,
                kind,
                fwd,
                back,
                total: acc.bytes.0,
                issued: 0,
                done: 0,
                req,
                notify: *notify,
                epoch,
                local,
            });
            group.xfers.push(x);
            group.open += 1;
            if acc.bytes.0 > 0 {
                group.unissued += 1;
            }
            if !local {
                group.remote += 1;
            }
        }
        let req0 = self
            .xfers
            .get(group.xfers.first().map_or(0, |x| *x as usize))
            .map_or(128, |x| x.req);
        group.window = match (kind, engine) {
            (XKind::Read, Eng::Sm) => self.load_window(a, req0, nvlink),
            (XKind::Read, Eng::CopyEngine) | (XKind::Write, Eng::CopyEngine) => {
                self.p.gpu.copy_outstanding
            }
            (XKind::Write, Eng::Sm) => self.p.gpu.store_window,
        };
        group.window_init = group.window;
        if (kind, engine) == (XKind::Write, Eng::Sm) {
            group.issue_rate = Some(self.store_rate(a));
        }
        let xs = group.xfers.clone();
        if xs.is_empty() {
            return false;
        }
        self.groups.push(group);
        let setup = if engine == Eng::CopyEngine {
            ns(self.p.gpu.copy_setup_ns)
        } else {
            Picos::ZERO
        };
        for &x in &xs {
            let xf = &self.xfers[x as usize];
            if xf.local || xf.total == 0 {
                let t = self.local_time(a, xf.total);
                self.push(self.now + setup + t, Ev::XferDone(x));
            } else if self.fid == Fidelity::Flow {
                self.start_flow(x, setup);
            }
        }
        if self.fid == Fidelity::Tlp {
            self.issue(g);
        }
        true
    }

    fn alloc(&mut self, p: Pkt) -> u32 {
        let mut p = p;
        p.seq = self.seq;
        self.seq += 1;
        if let Some(i) = self.free.pop() {
            self.pkts[i as usize] = p;
            i
        } else {
            self.pkts.push(p);
            (self.pkts.len() - 1) as u32
        }
    }

    fn pkt(kind: PKind, payload: u32, path: PathId, owner: u32) -> Pkt {
        Pkt {
            kind,
            payload,
            path,
            hop: 0,
            owner,
            epoch: 0,
            phase: 0,
            to: 0,
            last: false,
            held: None,
            seq: 0,
            ready: Picos::ZERO,
        }
    }

    /// TLP fidelity: issue requests or stores while the group's window allows.
    fn issue(&mut self, g: u32) {
        loop {
            let grp = &self.groups[g as usize];
            if grp.window == 0 {
                break;
            }
            let n = grp.xfers.len();
            let mut pick = None;
            for k in 0..n {
                let x = grp.xfers[(grp.rr + k) % n];
                let xf = &self.xfers[x as usize];
                if !xf.local && xf.issued < xf.total {
                    pick = Some((x, (grp.rr + k + 1) % n));
                    break;
                }
            }
            let Some((x, rr)) = pick else { break };
            let grp = &mut self.groups[g as usize];
            grp.rr = rr;
            grp.window -= 1;
            let xf = &mut self.xfers[x as usize];
            let size = (xf.total - xf.issued).min(xf.req as u64) as u32;
            xf.issued += size as u64;
            // Paced SM stores become ready as the blocks issue them; the
            // egress link sends each no earlier than that.
            let now = self.now;
            let grp = &mut self.groups[g as usize];
            let ready = match grp.issue_rate {
                Some(rate) => {
                    grp.next_issue =
                        grp.next_issue.max(now) + rate.time_for(contend_topo::Bytes(size as u64));
                    grp.next_issue
                }
                None => now,
            };
            let xf = &mut self.xfers[x as usize];
            let done_issuing = xf.issued == xf.total;
            if done_issuing {
                let grp = &mut self.groups[g as usize];
                grp.unissued = grp.unissued.saturating_sub(1);
            }
            let (kind, path, notify) = (xf.kind, xf.fwd, xf.notify);
            let mut p = match kind {
                XKind::Read => Self::pkt(PKind::ReadReq, size, path, x),
                XKind::Write => Self::pkt(PKind::Write, size, path, x),
            };
            p.last = done_issuing;
            p.ready = ready;
            let pk = self.alloc(p);
            self.enqueue(pk);
            if kind == XKind::Write && done_issuing && matches!(notify, Notify::After { .. }) {
                self.push(ready + ns(self.p.gpu.fence_ns), Ev::Fence(x));
            }
        }
        self.check_write_group(g);
    }

    /// A post group completes once every store has left the GPU and every flag is out.
    fn check_write_group(&mut self, g: u32) {
        let grp = &self.groups[g as usize];
        if grp.kind != XKind::Write || grp.done || self.fid != Fidelity::Tlp {
            return;
        }
        let all_issued = grp.unissued == 0;
        if all_issued && grp.window == grp.window_init && grp.flags_pending == 0 {
            let grp = &mut self.groups[g as usize];
            grp.done = true;
            let a = grp.actor;
            self.push(self.now, Ev::Resume(a));
        }
    }

    fn fence_done(&mut self, x: u32) {
        let xf = &self.xfers[x as usize];
        let (a, g, epoch) = (xf.actor, xf.group, xf.epoch);
        if let Notify::After { to, phase } = xf.notify {
            self.send_flag(a, to.0, epoch, phase.0);
        }
        let grp = &mut self.groups[g as usize];
        grp.flags_pending = grp.flags_pending.saturating_sub(1);
        if self.fid == Fidelity::Tlp {
            self.check_write_group(g);
        } else {
            self.xfer_closed(x);
        }
    }

    /// Sends a flag write from actor `a` to the flag location of actor `to`.
    fn send_flag(&mut self, a: u32, to: u32, epoch: u32, phase: u32) {
        let gpu = self.actors[a as usize].spec.gpu;
        let dst = self.actors[to as usize].spec.flag_loc.node();
        if dst == gpu {
            self.push(self.now, Ev::FlagAt { to, epoch, phase });
            return;
        }
        let path = self
            .fabric
            .path(self.topo, gpu, dst)
            .expect("validated topology routes every endpoint pair");
        match self.fid {
            Fidelity::Tlp => {
                let mut p = Self::pkt(PKind::Flag, self.p.gpu.flag_bytes, path, a);
                (p.epoch, p.phase, p.to) = (epoch, phase, to);
                let pk = self.alloc(p);
                self.enqueue(pk);
            }
            Fidelity::Flow => {
                let t = self
                    .fabric
                    .one_way(path, TlpKind::Write, self.p.gpu.flag_bytes);
                self.push(self.now + t, Ev::FlagAt { to, epoch, phase });
            }
        }
    }

    /// TLP fidelity: one poll of a flag in remote memory.
    fn send_poll(&mut self, a: u32, epoch: u32, phase: u32, count: u32) {
        let gpu = self.actors[a as usize].spec.gpu;
        let dst = self.actors[a as usize].spec.flag_loc.node();
        let path = self
            .fabric
            .path(self.topo, gpu, dst)
            .expect("validated topology routes every endpoint pair");
        let mut p = Self::pkt(PKind::PollReq, self.p.gpu.flag_bytes, path, a);
        (p.epoch, p.phase, p.to) = (epoch, phase, count);
        let pk = self.alloc(p);
        self.enqueue(pk);
    }

    /// Flow fidelity: polls go out every round trip; the first poll that
    /// reads memory after the flag landed sees it.
    fn poll_flow(&mut self, a: u32, epoch: u32, phase: u32, count: u32) {
        let gpu = self.actors[a as usize].spec.gpu;
        let dst = self.actors[a as usize].spec.flag_loc.node();
        let fwd = self.fabric.path(self.topo, gpu, dst).expect("routes exist");
        let back = self.fabric.path(self.topo, dst, gpu).expect("routes exist");
        let rtt = self.fabric.one_way(fwd, TlpKind::ReadRequest, 0)
            + self.memory_latency(dst)
            + self
                .fabric
                .one_way(back, TlpKind::Completion, self.p.gpu.flag_bytes);
        self.push(
            self.now + rtt,
            Ev::PollDone {
                actor: a,
                epoch,
                phase,
                count,
            },
        );
    }

    // ----- TLP fidelity: channels ---------------------------------------

    /// Puts a packet on the next channel of its path. Root-complex stages
    /// (P2P forwarding, transit to memory) are passed inline: the packet
    /// takes its slot of the stage's bandwidth and latency now and becomes
    /// ready for the outgoing link at the end of it, costing no event.
    fn enqueue(&mut self, pk: u32) {
        let mut p = self.pkts[pk as usize];
        let path = p.path as usize;
        loop {
            let c = self.fabric.paths[path].chans[p.hop as usize];
            let spec = &self.fabric.chans[c as usize];
            if matches!(spec.kind, crate::fabric::ChKind::Link { .. }) {
                self.pkts[pk as usize] = p;
                self.chans[c as usize].q[p.kind.class()].push_back(pk);
                self.try_start(c);
                return;
            }
            let class = p.kind.class();
            let data = if class == 1 { 0 } else { p.payload };
            let wire = spec.wire(p.kind.tlp(), data);
            let mut ser = spec.ser(wire);
            let lat = spec.latency;
            let start = self.chans[c as usize].busy_until.max(p.ready).max(self.now);
            if spec.collapse && class == 0 {
                ser = self.collapse_ser(c, &p, wire, start).unwrap_or(ser);
            }
            let ch = &mut self.chans[c as usize];
            ch.busy_until = start + ser;
            ch.busy += ser.0;
            p.ready = start + ser + lat;
            p.hop += 1;
        }
    }

    /// The receive buffer of channel `c` frees `data` bytes of `class` at
    /// `at`; the sender learns of it one link latency plus an UpdateFC later.
    fn give_back(&mut self, c: ChId, class: usize, data: u32, at: Picos) {
        let spec = &self.fabric.chans[c as usize];
        if spec.credits[class].hdr.is_none() && spec.credits[class].data.is_none() {
            return;
        }
        let t = at + spec.latency + self.fc_delay;
        let ch = &mut self.chans[c as usize];
        // keep returns sorted by time (usually this appends)
        let pos = ch
            .returns
            .iter()
            .rposition(|r| r.0 <= t)
            .map_or(0, |p| p + 1);
        ch.returns.insert(pos, (t, class, data));
        // A non-empty queue means the channel waits for credits.
        if ch.wake.is_none() && ch.q.iter().any(|q| !q.is_empty()) {
            let t = Self::coalesced_return(ch, self.p.pcie.fc_coalesce);
            ch.wake = Some(t);
            self.q.push(t, Ev::Wake(c));
        }
    }

    /// When a credit-blocked sender next looks: once `k` credit returns are
    /// in (receivers coalesce UpdateFC DLLPs), or the last pending one.
    fn coalesced_return(ch: &Chan, k: u32) -> Picos {
        let k = (k.max(1) as usize).min(ch.returns.len());
        ch.returns
            .get(k.saturating_sub(1))
            .map_or(Picos::ZERO, |r| r.0)
    }

    /// Starts every queued packet the receiver has credits for. Packets go
    /// out back to back in arrival order (oldest first across the three
    /// credit classes); a packet that must wait for the channel is scheduled
    /// at the time the channel frees, so a busy channel costs no extra events.
    fn try_start(&mut self, c: ChId) {
        let now = self.now;
        {
            let ch = &mut self.chans[c as usize];
            while let Some(&(t, class, data)) = ch.returns.front() {
                if t > now {
                    break;
                }
                ch.returns.pop_front();
                ch.avail[class].0 += 1;
                ch.avail[class].1 += data as i64;
            }
        }
        loop {
            let ch = &mut self.chans[c as usize];
            let mut best: Option<(u64, usize)> = None;
            for class in 0..3 {
                if let Some(&pk) = ch.q[class].front() {
                    let p = &self.pkts[pk as usize];
                    let data = if class == 1 { 0 } else { p.payload as i64 };
                    let (h, d) = ch.avail[class];
                    if h >= 1 && d >= data && best.is_none_or(|(s, _)| p.seq < s) {
                        best = Some((p.seq, class));
                    }
                }
            }
            let Some((_, class)) = best else {
                // Blocked on credits: a credit return wakes the channel.
                if ch.q.iter().any(|q| !q.is_empty()) && !ch.returns.is_empty() {
                    let t = Self::coalesced_return(ch, self.p.pcie.fc_coalesce);
                    if ch.wake.is_none_or(|w| w > t) {
                        ch.wake = Some(t);
                        self.q.push(t, Ev::Wake(c));
                    }
                }
                return;
            };
            let pk = ch.q[class].pop_front().expect("head exists");
            let p = self.pkts[pk as usize];
            let data = if class == 1 { 0 } else { p.payload };
            if ch.avail[class].0 < INF {
                ch.avail[class].0 -= 1;
            }
            if ch.avail[class].1 < INF {
                ch.avail[class].1 -= data as i64;
            }
            let start = ch.busy_until.max(now).max(p.ready);
            if let Some((prev, d)) = p.held {
                self.give_back(prev, class, d, start);
            }
            let spec = &self.fabric.chans[c as usize];
            let wire = spec.wire(p.kind.tlp(), data);
            let mut ser = spec.ser(wire);
            if spec.collapse && class == 0 {
                ser = self.collapse_ser(c, &p, wire, start).unwrap_or(ser);
            }
            let lat = self.fabric.chans[c as usize].latency;
            let ch = &mut self.chans[c as usize];
            ch.busy_until = start + ser;
            ch.busy += ser.0;
            self.pkts[pk as usize].held = Some((c, data));
            self.q.push(start + ser + lat, Ev::Arrive(pk));
            if p.hop == 0 && p.kind == PKind::Write {
                // the SM's store buffer slot frees when the TLP leaves the GPU
                let g = self.xfers[p.owner as usize].group;
                self.groups[g as usize].departs.push_back(start);
                self.schedule_depart(g);
            }
        }
    }

    /// Hands store-buffer slots back in batches: one event when half the
    /// buffer (or the last outstanding store) has left, not one per TLP. The
    /// egress queue still holds the other half, so the link never starves.
    fn schedule_depart(&mut self, g: u32) {
        let grp = &mut self.groups[g as usize];
        if grp.depart_pending || grp.departs.is_empty() {
            return;
        }
        let all_issued = grp.unissued == 0;
        // wait for more stores to be scheduled unless the buffer is full or done
        if grp.window > grp.window_init / 2 && !all_issued {
            return;
        }
        let k = if all_issued {
            grp.departs.len()
        } else {
            (grp.window_init as usize / 2).clamp(1, grp.departs.len())
        };
        let t = grp.departs[k - 1];
        grp.depart_pending = true;
        self.q.push(t, Ev::Depart(g));
    }

    /// Posted-write collapse: serialization time at the collapsed rate when
    /// this packet's ingress port has written toward enough distinct root
    /// complexes within the window.
    fn collapse_ser(&mut self, c: ChId, p: &Pkt, wire: u32, now: Picos) -> Option<Picos> {
        let path = &self.fabric.paths[p.path as usize];
        let &(_, ingress, target) = path
            .collapse_at
            .iter()
            .find(|(pos, _, _)| *pos == p.hop as usize)?;
        let window = ns(self.p.root_complex.collapse_window_ns);
        let recent = &mut self.chans[c as usize].recent;
        recent.retain(|&(_, _, t)| now.saturating_sub(t) <= window);
        match recent
            .iter_mut()
            .find(|(i, tg, _)| *i == ingress && *tg == target)
        {
            Some(e) => e.2 = now,
            None => recent.push((ingress, target, now)),
        }
        let distinct = recent.iter().filter(|(i, _, _)| *i == ingress).count() as u32;
        (distinct >= self.p.root_complex.collapse_min_targets).then(|| {
            BytesPerSec::from_gbps(self.p.root_complex.collapse_gbps)
                .time_for(contend_topo::Bytes(wire as u64))
        })
    }

    fn arrive(&mut self, pk: u32) {
        let p = self.pkts[pk as usize];
        let path_len = self.fabric.paths[p.path as usize].chans.len();
        let hop = p.hop as usize + 1;
        if hop < path_len {
            self.pkts[pk as usize].hop = hop as u16;
            self.pkts[pk as usize].ready = self.now;
            self.enqueue(pk);
            return;
        }
        // At the destination: the receive buffer frees at once.
        if let Some((prev, d)) = p.held {
            self.give_back(prev, p.kind.class(), d, self.now);
            self.pkts[pk as usize].held = None;
        }
        match p.kind {
            PKind::Write => {
                let xf = &mut self.xfers[p.owner as usize];
                xf.done += p.payload as u64;
                if p.last
                    && let Notify::Inline { to, phase } = xf.notify
                {
                    let (a_to, epoch) = (to.0, xf.epoch);
                    self.flag_arrive(a_to, epoch, phase.0);
                }
                self.free.push(pk);
            }
            PKind::Flag => {
                self.flag_arrive(p.to, p.epoch, p.phase);
                self.free.push(pk);
            }
            PKind::ReadReq => self.mem_done(pk),
            PKind::PollReq => {
                // The poll reads memory now: snapshot whether the flags are in.
                let seen = self.flag_count(p.owner, p.epoch, p.phase) >= p.to;
                self.pkts[pk as usize].last = seen;
                self.mem_done(pk);
            }
            PKind::Cpl => {
                let x = p.owner;
                let xf = &mut self.xfers[x as usize];
                xf.done += p.payload as u64;
                let finished = xf.done >= xf.total;
                let g = xf.group;
                self.free.push(pk);
                if p.last {
                    self.groups[g as usize].window += 1;
                    self.issue(g);
                }
                if finished {
                    self.xfer_finished(x);
                }
            }
            PKind::PollCpl => {
                self.free.push(pk);
                let a = p.owner;
                if self.actors[a as usize].waiting.is_some() {
                    if p.last {
                        self.finish_wait(a);
                    } else {
                        self.send_poll(a, p.epoch, p.phase, p.to);
                    }
                }
            }
        }
    }

    fn path_end(&self, path: PathId) -> NodeIdx {
        let c = *self.fabric.paths[path as usize]
            .chans
            .last()
            .expect("paths are not empty");
        match self.fabric.chans[c as usize].kind {
            crate::fabric::ChKind::Link { link, dir } => {
                let l = self.topo.link(contend_topo::LinkIdx(link));
                if dir == 0 { l.b } else { l.a }
            }
            crate::fabric::ChKind::Fabric { rc } | crate::fabric::ChKind::Transit { rc } => rc,
        }
    }

    /// A read reached its completer: the completions go back along the
    /// reverse path, ready once the memory has been read.
    fn mem_done(&mut self, pk: u32) {
        let p = self.pkts[pk as usize];
        let completer = self.path_end(p.path);
        let ready = self.now + self.memory_latency(completer);
        if p.kind == PKind::PollReq {
            let gpu = self.actors[p.owner as usize].spec.gpu;
            let back = self
                .fabric
                .path(self.topo, completer, gpu)
                .expect("routes exist");
            let q = &mut self.pkts[pk as usize];
            q.kind = PKind::PollCpl;
            q.path = back;
            q.hop = 0;
            q.seq = self.seq;
            q.ready = ready;
            self.seq += 1;
            self.enqueue(pk);
            return;
        }
        let xf = &self.xfers[p.owner as usize];
        let back = xf.back;
        let cpl = self.completion_bytes(completer, back);
        let mut left = p.payload;
        let mut first = true;
        while left > 0 {
            let size = left.min(cpl);
            left -= size;
            let mut c = Self::pkt(PKind::Cpl, size, back, p.owner);
            c.last = left == 0;
            c.ready = ready;
            let id = if first {
                first = false;
                let s = self.seq;
                self.seq += 1;
                c.seq = s;
                self.pkts[pk as usize] = c;
                pk
            } else {
                self.alloc(c)
            };
            self.enqueue(id);
        }
    }

    /// A read transfer has all its data (or a flow-fidelity transfer drained).
    fn xfer_finished(&mut self, x: u32) {
        let xf = &self.xfers[x as usize];
        if xf.kind == XKind::Write && self.fid == Fidelity::Tlp && !xf.local {
            return;
        }
        if xf.kind == XKind::Write && self.fid == Fidelity::Tlp {
            // A local part of a post group: done once its local copy is.
            let g = xf.group;
            let xf = &mut self.xfers[x as usize];
            if xf.issued != xf.total {
                xf.issued = xf.total;
                let grp = &mut self.groups[g as usize];
                grp.unissued = grp.unissued.saturating_sub(1);
            }
            self.check_write_group(g);
            return;
        }
        if xf.kind == XKind::Write {
            // flow fidelity: the stores are out; flags follow.
            let (a, epoch, fwd) = (xf.actor, xf.epoch, xf.fwd);
            match xf.notify {
                Notify::After { .. } => {
                    self.push(self.now + ns(self.p.gpu.fence_ns), Ev::Fence(x));
                    return;
                }
                Notify::Inline { to, phase } => {
                    let t = if xf.local {
                        Picos::ZERO
                    } else {
                        self.fabric
                            .one_way(fwd, TlpKind::Write, self.p.gpu.store_tlp_bytes)
                    };
                    self.push(
                        self.now + t,
                        Ev::FlagAt {
                            to: to.0,
                            epoch,
                            phase: phase.0,
                        },
                    );
                }
                Notify::None => {}
            }
            let _ = a;
        }
        self.xfer_closed(x);
    }

    fn xfer_closed(&mut self, x: u32) {
        let g = self.xfers[x as usize].group;
        let grp = &mut self.groups[g as usize];
        grp.open = grp.open.saturating_sub(1);
        if grp.open == 0 && (grp.kind == XKind::Read || self.fid == Fidelity::Flow) {
            let a = grp.actor;
            self.push(self.now, Ev::Resume(a));
        }
    }

    // ----- flow fidelity --------------------------------------------------

    /// Payload of the completions `completer` returns along `back`: host
    /// memory splits at the root complex's completion boundary, a GPU returns
    /// up to the path's max payload.
    fn completion_bytes(&self, completer: NodeIdx, back: PathId) -> u32 {
        let bp = &self.fabric.paths[back as usize];
        if matches!(self.topo.node(completer).kind, NodeKind::HostMemory { .. }) {
            self.p.root_complex.host_completion_bytes.unwrap_or(bp.rcb)
        } else {
            bp.mps
        }
        .max(16)
    }

    /// Adds, for every rate-limited channel of `path`, the wire bytes it
    /// carries per payload byte: one `kind` TLP of `tlp_payload` per `per`
    /// bytes moved.
    fn path_uses(
        &self,
        path: PathId,
        kind: TlpKind,
        tlp_payload: u32,
        per: u32,
        uses: &mut Vec<(ChId, f64)>,
    ) {
        for &c in &self.fabric.paths[path as usize].chans {
            let s = &self.fabric.chans[c as usize];
            if s.rate.is_some() {
                uses.push((c, s.wire(kind, tlp_payload) as f64 / per as f64));
            }
        }
    }

    fn start_flow(&mut self, x: u32, setup: Picos) {
        let xf = &self.xfers[x as usize];
        let a = xf.actor;
        let (fwd, back, req) = (xf.fwd, xf.back, xf.req);
        let mut uses = Vec::new();
        let g = &self.groups[xf.group as usize];
        let remote = g.remote.max(1) as f64;
        let (rtt, cap) = match xf.kind {
            XKind::Read => {
                let completer = self.path_end(fwd);
                let cpl = self.completion_bytes(completer, back).min(req);
                // a header-only request per `req` bytes one way, completions back
                self.path_uses(fwd, TlpKind::ReadRequest, 0, req, &mut uses);
                self.path_uses(back, TlpKind::Completion, cpl, cpl, &mut uses);
                let rtt = self.fabric.one_way(fwd, TlpKind::ReadRequest, 0)
                    + self.memory_latency(completer)
                    + self.fabric.one_way(back, TlpKind::Completion, cpl);
                // Little's law on this transfer's share of the load window
                let share = g.window as f64 / remote;
                (rtt, share * req as f64 / (rtt.0.max(1) as f64 / 1e12))
            }
            XKind::Write => {
                self.path_uses(fwd, TlpKind::Write, req, req, &mut uses);
                let cap = g.issue_rate.map_or(f64::INFINITY, |r| r.0 as f64 / remote);
                (Picos::ZERO, cap)
            }
        };
        let collapse: Vec<(ChId, ChId, NodeIdx)> = if xf.kind == XKind::Write {
            let path = &self.fabric.paths[fwd as usize];
            path.collapse_at
                .iter()
                .map(|&(pos, ing, t)| (path.chans[pos], ing, t))
                .collect()
        } else {
            vec![]
        };
        let total = xf.total as f64;
        let _ = a;
        self.flows.advance(self.now, &self.fabric);
        self.flows.add(x, total, cap, uses, collapse, rtt, setup);
        // Flows starting at the same instant share one recompute.
        if self.flows.pending != Some(self.now) {
            self.flows.pending = Some(self.now);
            self.push(self.now, Ev::Reflow);
        }
    }

    fn reflow(&mut self) {
        let p = self.p;
        self.flows.recompute(&self.fabric, p);
        if let Some(t) = self.flows.next_finish(self.now) {
            let v = self.flows.version;
            self.push(t, Ev::FlowTick(v));
        }
    }

    fn flow_tick(&mut self, v: u64) {
        if v != self.flows.version {
            return;
        }
        self.flows.advance(self.now, &self.fabric);
        let done = self.flows.take_finished();
        for (x, tail) in done {
            self.push(self.now + tail, Ev::XferDone(x));
        }
        self.reflow();
    }
}
