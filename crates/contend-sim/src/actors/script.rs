//! DESIGN 7, 8 — what each actor runs: a collective lowered to one program
//! per rank (`contend_workload::lower`), repeated once per collective after
//! the compute gap and that rank's arrival skew; or the ops of a transfer
//! stream (a ping-pong between two GPUs is two actors). A [`Script`] is in
//! closed form: each step is worked out from its position when the actor
//! reaches it, so a run of many collectives holds one program per actor
//! and one idle time per collective, not a step list per collective.

use crate::actors::launcher::OneThread;
use crate::model::gpu::Kernel;
use crate::params::ModelParams;
use contend_topo::{Bytes, NodeKind, Picos};
use contend_workload::{
    Access, Algorithm, Launcher, LowerConfig, LowerError, MemLoc, Mover, NcclCaller, Notify, Op,
    PackedProgram, Phase, Placement, Program, Rank, Scenario, Skew, Stream, TransferOp, groups,
    launch_grid, lower,
};
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

/// What an actor runs and where.
#[derive(Clone, Debug)]
pub(crate) struct ActorSpec {
    pub kernel: Kernel,
    pub flag_loc: MemLoc,
    pub script: Script,
    /// The program whose ops `Step::Op` indexes (shared by every
    /// repetition; a ring's ops worked out as the actor reaches them),
    /// packed: every actor walks its ops once per collective.
    pub ops: Rc<PackedProgram>,
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

/// An actor's steps: an optional lead delay, then `repeats` frames of
/// [idle delay] [Begin(k)] Op(0)..Op(ops-1) [Join] [End].
#[derive(Clone, Debug, Default)]
pub(crate) struct Script {
    /// A delay before everything (a stream's start).
    pub lead: Option<Picos>,
    pub repeats: u32,
    /// Idle time before each repetition (empty: no idle step).
    pub idle: Vec<Picos>,
    /// Begin and End steps around each repetition.
    pub timed: bool,
    /// A Join step after the ops.
    pub join: bool,
    pub ops: u32,
}

impl Script {
    fn frame(&self) -> usize {
        usize::from(!self.idle.is_empty())
            + 2 * usize::from(self.timed)
            + usize::from(self.join)
            + self.ops as usize
    }
    /// How many steps it has.
    pub fn len(&self) -> usize {
        usize::from(self.lead.is_some()) + self.repeats as usize * self.frame()
    }
    /// Step `pc` (none past the end).
    #[inline]
    pub fn step(&self, pc: usize) -> Option<Step> {
        let mut i = pc;
        if let Some(d) = self.lead {
            if i == 0 {
                return Some(Step::Delay(d));
            }
            i -= 1;
        }
        let f = self.frame();
        if f == 0 || i / f >= self.repeats as usize {
            return None;
        }
        let (k, mut j) = (i / f, i % f);
        if !self.idle.is_empty() {
            if j == 0 {
                return Some(Step::Delay(self.idle[k]));
            }
            j -= 1;
        }
        if self.timed {
            if j == 0 {
                return Some(Step::Begin(k as u32));
            }
            j -= 1;
        }
        if j < self.ops as usize {
            return Some(Step::Op(j as u32));
        }
        j -= self.ops as usize;
        if self.join && j == 0 {
            return Some(Step::Join);
        }
        Some(Step::End)
    }
}

/// What the lowering needs from the scenario and the model constants.
pub(crate) fn lower_config<'a>(sc: &'a Scenario, p: &ModelParams) -> LowerConfig<'a> {
    LowerConfig {
        ring: p.ring.config(),
        nccl: sc.nccl_plan(),
        elem: Bytes(sc.workload().dtype().map_or(2, |d| d.size())),
        nccl_step_overhead: p.nccl.step_overhead_ns.to_picos(),
    }
}

/// The actors of `count` collectives of `alg` at `size` (one per program
/// of the lowering: a rank, or NCCL's rank and channel), and the
/// lowering's note (a fallback it took).
#[allow(clippy::too_many_arguments)]
pub(crate) fn collective(
    sc: &Scenario,
    p: &ModelParams,
    alg: Algorithm,
    placement: Placement,
    size: Bytes,
    count: usize,
    gap: Picos,
    skew: &Skew,
) -> Result<(Vec<ActorSpec>, Option<String>), LowerError> {
    let mut c = lower(
        alg,
        sc.topology(),
        sc.ranks(),
        placement,
        size,
        &lower_config(sc, p),
    )?;
    let delays = skew.sample(sc.seed(), count, sc.ranks().len());
    let mode = sc.launch_of(alg);
    let one_thread =
        crate::actors::launcher::per_call(mode) && sc.launcher() == Launcher::OneThread;
    let caller = match (alg, sc.nccl().caller) {
        (Algorithm::Nccl, NcclCaller::Torch) => p.nccl.torch_call_ns.to_picos(),
        _ => Picos::ZERO,
    };
    // the grid the hardware backend launches for this size (fewer blocks
    // when there is little work); NCCL's rings keep the configured shape
    let mut kernel = sc.kernel_of(alg);
    if alg.has_custom_kernel() {
        let island = groups(sc.topology(), sc.ranks()).map_or(1, |g| g[0].len());
        kernel.blocks = launch_grid(alg, sc.ranks().len(), island, size, kernel);
    }
    let per_rank = |r: usize| c.rank_of.iter().filter(|x| **x == r).count() as u32;
    // each program moves into its actor (a huge ring's ops are not copied)
    // (packed together: the ranks go through their ops in step)
    let programs = PackedProgram::pack_all(std::mem::take(&mut c.programs));
    let actors = programs
        .into_iter()
        .enumerate()
        .map(|(i, prog)| {
            let r = c.rank_of[i];
            let gpu = sc.ranks()[r];
            let shape = c.shape[i].unwrap_or(kernel);
            // before each collective the gap and the rank's skew; the rank's
            // kernel ends with its last block (Join)
            let script = Script {
                lead: None,
                repeats: delays.len() as u32,
                idle: delays.iter().map(|row| gap + row[r]).collect(),
                timed: true,
                join: true,
                ops: prog.len() as u32,
            };
            ActorSpec {
                kernel: Kernel {
                    gpu,
                    blocks: shape.blocks,
                    threads: shape.threads,
                },
                flag_loc: c.flag_loc[i],
                script,
                ops: Rc::new(prog),
                mode,
                one_thread: one_thread.then_some(OneThread {
                    rank: r as u32,
                    ranks: sc.ranks().len() as u32,
                }),
                caller,
                launch: (r as u32, per_rank(r)),
            }
        })
        .collect();
    Ok((actors, c.note))
}

/// Actors a stream needs: a GPU-to-GPU ping-pong has a partner.
pub(crate) fn stream_actor_count(sc: &Scenario, s: &Stream) -> usize {
    let to_gpu = matches!(sc.topology().node(s.to).kind, NodeKind::Gpu(_));
    if s.op == TransferOp::PingPong && to_gpu {
        2
    } else {
        1
    }
}

/// The actors of every stream, in order (a ping-pong's partner right after it).
pub(crate) fn streams(sc: &Scenario, streams: &[Stream]) -> Vec<ActorSpec> {
    // transfer streams have no algorithm: the scenario-wide launch mode
    let mode = sc.launch();
    let mut out = vec![];
    for s in streams {
        let base = out.len() as u32;
        out.extend(stream(sc, s, base, mode));
    }
    out
}

/// The actors of one stream; `base` is the index its first actor gets.
fn stream(
    sc: &Scenario,
    s: &Stream,
    base: u32,
    mode: contend_workload::LaunchMode,
) -> Vec<ActorSpec> {
    let mem = if matches!(sc.topology().node(s.to).kind, NodeKind::Gpu(_)) {
        MemLoc::Device(s.to)
    } else {
        MemLoc::Host(s.to)
    };
    let acc = Access {
        mem,
        bytes: s.bytes,
    };
    // An actor that waits for the stream's start, then times each repeat
    // of its ops as collective k.
    let me = |ops: Vec<Op>| {
        let script = Script {
            lead: (s.start > Picos::ZERO).then_some(s.start),
            repeats: s.repeat,
            idle: vec![],
            timed: true,
            join: false,
            ops: ops.len() as u32,
        };
        ActorSpec {
            kernel: Kernel {
                gpu: s.from,
                blocks: s.kernel.blocks,
                threads: s.kernel.threads,
            },
            flag_loc: MemLoc::Device(s.from),
            script,
            ops: Rc::new(PackedProgram::new(Program::from(ops))),
            mode,
            one_thread: None,
            caller: Picos::ZERO,
            launch: (base, 1),
        }
    };
    let post = |mover| Op::Post {
        parts: vec![(acc, Notify::None)],
        mover,
    };
    match s.op {
        TransferOp::Copy => vec![me(vec![post(Mover::CopyEngine)])],
        // the copy engine of `from` reads `to`'s memory: read requests out,
        // completions back over the reverse direction
        TransferOp::CopyRead => vec![me(vec![Op::Fetch {
            parts: vec![acc],
            mover: Mover::CopyEngine,
            loads_per_thread: None,
        }])],
        // the model's loads in flight per thread (what the probes were fitted with)
        TransferOp::Load => vec![me(vec![Op::Fetch {
            parts: vec![acc],
            mover: Mover::Sm,
            loads_per_thread: None,
        }])],
        TransferOp::Store => vec![me(vec![post(Mover::Sm)])],
        TransferOp::PingPong if matches!(mem, MemLoc::Host(_)) => {
            // GPU and host memory: write a flag, read it back (a read cannot
            // pass the write, so it returns once the write has landed).
            let mut ops = vec![];
            for _ in 0..s.iterations {
                ops.push(post(Mover::Sm));
                ops.push(Op::Fetch {
                    parts: vec![acc],
                    mover: Mover::Sm,
                    loads_per_thread: None,
                });
            }
            vec![me(ops)]
        }
        TransferOp::PingPong => {
            // Two GPUs: this actor and its partner right after it, each
            // waiting at its own flag: in its own memory, or with
            // `host_flags` in host memory (one buffer mapped into both),
            // which each polls across its link.
            let (a, b) = (Rank(base), Rank(base + 1));
            let flags_at = |gpu| match sc.topology().nearest_host_memory(s.from) {
                Some(host) if s.host_flags => MemLoc::Host(host),
                _ => MemLoc::Device(gpu),
            };
            let mut pa = vec![];
            let mut pb = vec![];
            for i in 0..s.iterations {
                // fenced: release fence before the flag, acquire after the
                // wait, on both sides (the kernels' barrier fences)
                if s.fence {
                    pa.push(Op::Fence);
                }
                pa.push(Op::Signal {
                    to: vec![b],
                    phase: Phase(i),
                });
                pa.push(Op::Wait {
                    phase: Phase(i),
                    count: 1,
                });
                pb.push(Op::Wait {
                    phase: Phase(i),
                    count: 1,
                });
                if s.fence {
                    pa.push(Op::Fence);
                    pb.push(Op::Fence);
                    pb.push(Op::Fence);
                }
                pb.push(Op::Signal {
                    to: vec![a],
                    phase: Phase(i),
                });
            }
            // the partner answers every repeat (its flags carry the
            // repeat's epoch, so it counts repeats as the initiator does)
            let script = Script {
                lead: None,
                repeats: s.repeat,
                idle: vec![],
                timed: s.repeat > 1,
                join: false,
                ops: pb.len() as u32,
            };
            let partner = ActorSpec {
                kernel: Kernel {
                    gpu: s.to,
                    blocks: 1,
                    threads: 32,
                },
                flag_loc: flags_at(s.to),
                script,
                ops: Rc::new(PackedProgram::new(Program::from(pb))),
                mode,
                one_thread: None,
                caller: Picos::ZERO,
                launch: (base + 1, 1),
            };
            let initiator = ActorSpec {
                flag_loc: flags_at(s.from),
                ..me(pa)
            };
            vec![initiator, partner]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: every step written out, frame after frame.
    fn written_out(sc: &Script) -> Vec<Step> {
        let mut v = vec![];
        if let Some(d) = sc.lead {
            v.push(Step::Delay(d));
        }
        for k in 0..sc.repeats {
            if !sc.idle.is_empty() {
                v.push(Step::Delay(sc.idle[k as usize]));
            }
            if sc.timed {
                v.push(Step::Begin(k));
            }
            v.extend((0..sc.ops).map(Step::Op));
            if sc.join {
                v.push(Step::Join);
            }
            if sc.timed {
                v.push(Step::End);
            }
        }
        v
    }

    /// The closed form gives every step the written-out script has, and
    /// nothing past its end, for every shape a script takes.
    #[test]
    fn a_script_in_closed_form_matches_it_written_out() {
        for lead in [None, Some(Picos(7))] {
            for timed in [false, true] {
                for join in [false, true] {
                    for idle in [false, true] {
                        for ops in [0, 1, 5] {
                            for repeats in [0, 1, 3] {
                                let sc = Script {
                                    lead,
                                    repeats,
                                    idle: if idle {
                                        (0..repeats).map(|k| Picos(100 + k as u64)).collect()
                                    } else {
                                        vec![]
                                    },
                                    timed,
                                    join,
                                    ops,
                                };
                                let want = written_out(&sc);
                                assert_eq!(sc.len(), want.len(), "{sc:?}");
                                for (pc, st) in want.iter().enumerate() {
                                    assert_eq!(sc.step(pc), Some(*st), "{sc:?} at {pc}");
                                }
                                assert_eq!(sc.step(want.len()), None, "{sc:?}");
                            }
                        }
                    }
                }
            }
        }
    }
}
