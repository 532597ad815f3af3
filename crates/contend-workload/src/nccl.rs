//! The `nccl` algorithm as traffic programs: what NCCL runs for one
//! AllReduce, as contend-nccl's replica decides it ([`NcclPlan::schedule`]:
//! algorithm, protocol, channels and their shares, chunks), with each
//! protocol's costs:
//!
//! - one program per rank and channel (one block each, NCCL's threads), the
//!   channels in parallel, each its own ring in the plan's ring order — or,
//!   for the tree, its chain with the block split in an up half (reduce
//!   toward the root) and a down half (broadcast from it), the root one
//!   program doing both;
//! - per connection the transport NCCL picked: P2P write (the sender stores
//!   into the receiver's memory), P2P read (Simple: the receiver loads from
//!   the sender's), SHM (the sender stores into host memory on the
//!   receiver's side, the receiver loads it back; step counters in host
//!   memory, polled by reads);
//! - LL: 16-byte lines of 8 data bytes, flags inline (a step moves whole:
//!   the line-by-line forwarding inside it is not modelled); LL128:
//!   128-byte lines of 120; Simple: slices, each followed by a system fence
//!   and its step counter (a separate flag);
//! - flow control: the receiver posts its head after every slice and a
//!   sender waits while `NCCL_STEPS` steps are outstanding;
//! - a software cost per step where the model has one
//!   (`nccl.step_overhead_ns`, zero by default), once per hop — per
//!   primitive call that sends, the 2(n−1) steps of NCCL's model — on its
//!   critical path: after the call's data has arrived, before its result
//!   goes on (a call that only sends, before it sends). NCCL's own
//!   per-step latency (`hwLat`) is its model of the mechanisms above and is
//!   never charged as time: the replica uses it for NCCL's decisions only.
//!
//! The mechanisms and constants are contend-nccl's ([`contend_nccl::schedule`],
//! [`contend_nccl::protocol`], [`contend_nccl::Transport::buffer`]), each
//! citing NCCL's source; this file only turns them into traffic.

use crate::lower::{Collective, LowerConfig, LowerError};
use crate::program::{Access, MemLoc, Mover, Notify, Op, Phase, Program, Rank};
use crate::scenario::KernelConfig;
use contend_nccl::protocol::{self, NCCL_STEPS};
use contend_nccl::schedule::{self, CallSchedule};
use contend_nccl::{Algorithm, BufferAt, NcclPlan, Protocol, Transport};
use contend_topo::{Bytes, NodeIdx, Picos, Topology};
use std::collections::HashMap;

/// Phase of the data flag of slice `g` on a connection (even).
fn data_phase(g: u64) -> Phase {
    Phase((2 * g) as u32)
}
/// Phase of the receiver's head (credit) for slice `g` (odd).
fn credit_phase(g: u64) -> Phase {
    Phase((2 * g + 1) as u32)
}

/// Which half of a tree block a program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Half {
    /// A ring channel, or the tree root's whole block.
    Whole,
    Up,
    Down,
}

/// One end of a connection as a program sees it.
#[derive(Clone, Copy)]
struct End {
    /// The program on the other side.
    peer: u32,
    /// Where the data of this connection lands.
    buffer: MemLoc,
    /// Whether this program must load it across a link (host memory, or
    /// the sender's memory with P2P read).
    fetch: bool,
}

struct Cx<'a> {
    plan: &'a NcclPlan,
    topo: &'a Topology,
    gpus: &'a [NodeIdx],
    s: &'a CallSchedule,
    step_latency: Picos,
    /// Loads in flight per thread when a primitive reads what arrived.
    loads: u32,
    /// Program index of (part, rank, half).
    ids: HashMap<(usize, usize, Half), u32>,
}

impl Cx<'_> {
    fn proto(&self) -> Protocol {
        self.s.choice.protocol
    }
    fn algo(&self) -> Algorithm {
        self.s.choice.algorithm
    }
    fn host_of(&self, r: usize) -> MemLoc {
        MemLoc::Host(
            self.topo
                .nearest_host_memory(self.gpus[r])
                .unwrap_or(self.gpus[r]),
        )
    }
    fn transport(&self, from: usize, to: usize) -> Transport {
        self.plan
            .pair(from, to)
            .map_or(Transport::Shm, |p| p.transport)
    }
    /// Where the data of `from → to` lands, and whether `to` loads it across.
    fn buffer(&self, from: usize, to: usize) -> (MemLoc, bool) {
        match self.transport(from, to).buffer(self.proto()) {
            BufferAt::Receiver => (MemLoc::Device(self.gpus[to]), false),
            BufferAt::Sender => (MemLoc::Device(self.gpus[from]), true),
            BufferAt::ReceiverHost => (self.host_of(to), true),
        }
    }
    /// Where a program on rank `r` whose step counters belong to the
    /// connection `from → to` polls them. LL and LL128 receivers poll the
    /// data lines themselves: the read that finds a line complete is the
    /// load of its data, which the program's fetch models, so their flag is
    /// noticed where the program runs and no separate poll is charged.
    fn flags_of(&self, r: usize, from: usize, to: usize) -> MemLoc {
        if self.transport(from, to).flags_in_host() && !protocol::flags_inline(self.proto()) {
            self.host_of(r)
        } else {
            MemLoc::Device(self.gpus[r])
        }
    }
    fn id(&self, part: usize, rank: usize, half: Half) -> u32 {
        self.ids[&(part, rank, half)]
    }
}

/// A program being written, with its connection counters.
struct Writer {
    ops: Vec<Op>,
    /// Slices received on the incoming connection, sent on the outgoing one.
    got: u64,
    sent: u64,
}

impl Writer {
    fn new() -> Writer {
        Writer {
            ops: vec![Op::Launch],
            got: 0,
            sent: 0,
        }
    }
}

/// What a primitive call does locally with what it received.
#[derive(Clone, Copy, PartialEq)]
enum Work {
    /// Reduce the received data with the input (and store the result).
    Reduce,
    /// Copy the received data to the output.
    Copy,
    /// Nothing (a send from the input).
    None,
}

/// One primitive call of `data` bytes: receive from `recv` (if any),
/// `work`, send to `send` (if any).
fn call(cx: &Cx, w: &mut Writer, data: Bytes, recv: Option<End>, send: Option<End>, work: Work) {
    let (a, p) = (cx.algo(), cx.proto());
    // NCCL's per-step latency, once per hop (a call that sends: 2(n−1) on
    // a ring rank, as NCCL's model counts them), on the critical path:
    // between the call's data arriving and its result going on (a call
    // that only sends pays it before it sends)
    let mut overhead = (cx.step_latency > Picos::ZERO && send.is_some()).then_some(Op::Overhead {
        time: cx.step_latency,
    });
    if recv.is_none()
        && let Some(o) = overhead.take()
    {
        w.ops.push(o);
    }
    let lag = protocol::credit_lag(a, p);
    let slices: Vec<Bytes> = if p == Protocol::Simple {
        let step = Bytes(cx.plan.buffers.simple.0 / NCCL_STEPS);
        protocol::simple_slices(a, data, step, cx.s.elem)
    } else {
        vec![data]
    };
    for slice in slices {
        let (g_in, g_out) = (w.got, w.sent);
        if slice.0 > 0 {
            if send.is_some() && g_out >= lag {
                w.ops.push(Op::Wait {
                    phase: credit_phase(g_out - lag),
                    count: 1,
                });
            }
            // a slice moves whole: LL's line-by-line forwarding inside a
            // step is not modelled (cut into trips, each would wait for its
            // stores to land in the fluid model, which NCCL's posted LL
            // stores never do)
            {
                let piece = slice;
                let wire = protocol::wire_bytes(p, piece);
                let mut fetch = vec![];
                if let Some(inc) = recv {
                    w.ops.push(Op::Wait {
                        phase: data_phase(g_in),
                        count: 1,
                    });
                    if let Some(o) = overhead.take() {
                        w.ops.push(o);
                    }
                    if inc.fetch {
                        fetch.push(Access {
                            mem: inc.buffer,
                            bytes: wire,
                        });
                    }
                }
                match (recv.is_some(), work) {
                    (true, Work::Reduce) => w.ops.push(Op::Reduce {
                        bytes: Bytes(3 * piece.0),
                    }),
                    (true, Work::Copy) => w.ops.push(Op::LocalCopy { bytes: piece }),
                    _ => {}
                }
                let post: Vec<(Access, Notify)> = send
                    .map(|out| {
                        let to = Rank(out.peer);
                        let phase = data_phase(g_out);
                        let notify = if protocol::flags_inline(p) {
                            Notify::Inline { to, phase }
                        } else {
                            Notify::After { to, phase }
                        };
                        (
                            Access {
                                mem: out.buffer,
                                bytes: wire,
                            },
                            notify,
                        )
                    })
                    .into_iter()
                    .collect();
                // what arrives in host (or the sender's) memory is loaded
                // while the result is stored onward, as reduceCopy streams
                match (fetch.is_empty(), post.is_empty()) {
                    (false, false) => w.ops.push(Op::Stream {
                        fetch,
                        post,
                        mover: Mover::Sm,
                        loads_per_thread: Some(cx.loads),
                    }),
                    (false, true) => w.ops.push(Op::Fetch {
                        parts: fetch,
                        mover: Mover::Sm,
                        loads_per_thread: Some(cx.loads),
                    }),
                    (true, false) => w.ops.push(Op::Post {
                        parts: post,
                        mover: Mover::Sm,
                    }),
                    (true, true) => {}
                }
            }
        }
        // the receiver releases every slot it steps through, empty ones too
        if let Some(inc) = recv {
            w.ops.push(Op::Signal {
                to: vec![Rank(inc.peer)],
                phase: credit_phase(g_in),
            });
            w.got += 1;
        }
        if send.is_some() {
            w.sent += 1;
        }
    }
}

/// Lowers NCCL's AllReduce of `size` over `gpus` as `plan` decides it.
pub(crate) fn lower_nccl(
    plan: &NcclPlan,
    topo: &Topology,
    gpus: &[NodeIdx],
    size: Bytes,
    cfg: &LowerConfig,
) -> Result<Collective, LowerError> {
    let n = gpus.len();
    let s = plan
        .schedule(size, cfg.elem)
        .ok_or(LowerError::NcclNoChoice(size))?;
    let step_latency = cfg.nccl_step_overhead;
    // program slots: ring one per (part, rank); tree the root whole, the
    // others an up and a down half
    let tree = s.choice.algorithm == Algorithm::Tree;
    let mut slots: Vec<(usize, usize, Half)> = Vec::new();
    for (pi, part) in s.parts.iter().enumerate() {
        for r in 0..n {
            // a ring rank, or the tree's root, runs whole
            if !tree || plan.channels.trees[part.channel][r].up.is_none() {
                slots.push((pi, r, Half::Whole));
            } else {
                slots.push((pi, r, Half::Up));
                slots.push((pi, r, Half::Down));
            }
        }
    }
    let ids = slots
        .iter()
        .enumerate()
        .map(|(i, k)| (*k, i as u32))
        .collect();
    let cx = Cx {
        plan,
        topo,
        gpus,
        s: &s,
        step_latency,
        loads: protocol::loads_in_flight(
            s.choice.protocol,
            plan.ranks.first().map_or(0, |r| r.compute_capability),
        ),
        ids,
    };
    let threads = s.choice.threads;
    let mut programs = Vec::with_capacity(slots.len());
    let mut rank_of = Vec::with_capacity(slots.len());
    let mut shape = Vec::with_capacity(slots.len());
    let mut flag_loc = Vec::with_capacity(slots.len());
    for &(pi, r, half) in &slots {
        let (prog, flags, t) = if tree {
            tree_program(&cx, pi, r, half)
        } else {
            ring_program(&cx, pi, r)
        };
        programs.push(prog);
        rank_of.push(r);
        shape.push(Some(KernelConfig {
            blocks: 1,
            threads: if tree { t } else { threads },
        }));
        flag_loc.push(flags);
    }
    Ok(Collective {
        algorithm: crate::kinds::Algorithm::Nccl,
        size,
        programs,
        rank_of,
        shape,
        flag_loc,
        note: None,
    })
}

/// Rank `r`'s block on ring part `pi` (`runRing`): send, n−2 reduce-sends,
/// a reduce-copy-send, n−2 copy-sends, a receive, per loop.
fn ring_program(cx: &Cx, pi: usize, r: usize) -> (Program, MemLoc, u32) {
    let n = cx.gpus.len();
    let part = &cx.s.parts[pi];
    let order = &cx.plan.channels.rings[part.channel];
    let ix = order.iter().position(|&x| x == r).unwrap_or(0);
    let next = order[(ix + 1) % n];
    let prev = order[(ix + n - 1) % n];
    let (out_buf, _) = cx.buffer(r, next);
    let (in_buf, in_fetch) = cx.buffer(prev, r);
    let send = End {
        peer: cx.id(pi, next, Half::Whole),
        buffer: out_buf,
        fetch: false,
    };
    let recv = End {
        peer: cx.id(pi, prev, Half::Whole),
        buffer: in_buf,
        fetch: in_fetch,
    };
    let threads = cx.s.choice.threads;
    let mut w = Writer::new();
    let md = |c: usize| c % n;
    for chunks in schedule::ring_loops(part.bytes, part.chunk, n, cx.s.elem) {
        call(
            cx,
            &mut w,
            chunks[md(ix + n - 1)],
            None,
            Some(send),
            Work::None,
        );
        for j in 2..n {
            call(
                cx,
                &mut w,
                chunks[md(ix + n - j)],
                Some(recv),
                Some(send),
                Work::Reduce,
            );
        }
        call(cx, &mut w, chunks[ix], Some(recv), Some(send), Work::Reduce);
        for j in 1..n - 1 {
            call(
                cx,
                &mut w,
                chunks[md(ix + n - j)],
                Some(recv),
                Some(send),
                Work::Copy,
            );
        }
        call(cx, &mut w, chunks[md(ix + 1)], Some(recv), None, Work::Copy);
    }
    (Program::from(w.ops), cx.flags_of(r, prev, r), threads)
}

/// Rank `r`'s block (or half block) on tree part `pi` (`runTreeSplit`):
/// up the chain reducing, down it copying; the root reduces what comes up
/// and sends the result down.
fn tree_program(cx: &Cx, pi: usize, r: usize, half: Half) -> (Program, MemLoc, u32) {
    let part = &cx.s.parts[pi];
    let node = cx.plan.channels.trees[part.channel][r];
    let threads = cx.s.choice.threads;
    let (up_t, down_t) = schedule::tree_split(cx.s.choice.protocol, threads);
    let chunks = schedule::tree_chunks(part.bytes, part.chunk);
    let mut w = Writer::new();
    // the program that receives what rank `x` sends up, and the one that
    // sends down to `x`'s down half
    let up_of = |x: usize| {
        if cx.plan.channels.trees[part.channel][x].up.is_none() {
            cx.id(pi, x, Half::Whole)
        } else {
            cx.id(pi, x, Half::Up)
        }
    };
    let down_of = |x: usize| {
        if cx.plan.channels.trees[part.channel][x].up.is_none() {
            cx.id(pi, x, Half::Whole)
        } else {
            cx.id(pi, x, Half::Down)
        }
    };
    let end_to = |to: usize, peer: u32| End {
        peer,
        buffer: cx.buffer(r, to).0,
        fetch: false,
    };
    let end_from = |from: usize, peer: u32| {
        let (buffer, fetch) = cx.buffer(from, r);
        End {
            peer,
            buffer,
            fetch,
        }
    };
    let (flags, t) = match half {
        Half::Whole => {
            // the root: receive up from the child, reduce, send down to it
            let child = node.down;
            let recv = child.map(|c| end_from(c, up_of(c)));
            let send = child.map(|c| end_to(c, down_of(c)));
            for &c in &chunks {
                if recv.is_some() {
                    call(cx, &mut w, c, recv, send, Work::Reduce);
                }
            }
            let flags = match child {
                Some(c) => cx.flags_of(r, c, r),
                None => MemLoc::Device(cx.gpus[r]),
            };
            (flags, threads)
        }
        Half::Up => {
            let parent = node.up.unwrap_or(r);
            let send = Some(end_to(parent, up_of(parent)));
            let recv = node.down.map(|c| end_from(c, up_of(c)));
            let work = if recv.is_some() {
                Work::Reduce
            } else {
                Work::None
            };
            for &c in &chunks {
                call(cx, &mut w, c, recv, send, work);
            }
            let flags = match node.down {
                Some(c) => cx.flags_of(r, c, r),
                None => cx.flags_of(r, r, parent),
            };
            (flags, up_t)
        }
        Half::Down => {
            let parent = node.up.unwrap_or(r);
            let recv = Some(end_from(parent, down_of(parent)));
            let send = node.down.map(|c| end_to(c, down_of(c)));
            for &c in &chunks {
                call(cx, &mut w, c, recv, send, Work::Copy);
            }
            (cx.flags_of(r, parent, r), down_t)
        }
    };
    (Program::from(w.ops), flags, t)
}
