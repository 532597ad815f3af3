//! DESIGN 7, 8 — what each actor runs: a collective lowered to one program
//! per rank (`contend_workload::lower`), repeated once per collective after
//! the compute gap and that rank's arrival skew; or the ops of a transfer
//! stream (a ping-pong between two GPUs is two actors).

use crate::actor::{ActorSpec, Step};
use crate::gpu::Kernel;
use crate::params::ModelParams;
use contend_topo::{Bytes, NodeKind, Picos};
use contend_workload::{
    Access, Algorithm, Engine as Mover, LowerConfig, MemLoc, Notify, Op, Phase, Placement, Rank,
    Scenario, Skew, Stream, TransferOp, groups, launch_grid, lower,
};

/// What the lowering needs from the scenario and the model constants.
pub(crate) fn lower_config<'a>(sc: &'a Scenario, p: &ModelParams) -> LowerConfig<'a> {
    LowerConfig {
        ring: p.ring.config(),
        nccl: sc.nccl_plan(),
        elem: Bytes(sc.workload().dtype().map_or(2, |d| d.size())),
        nccl_step_scale: p.nccl.step_latency_scale,
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
) -> Result<(Vec<ActorSpec>, Option<String>), String> {
    let c = lower(
        alg,
        sc.topology(),
        sc.ranks(),
        placement,
        size,
        &lower_config(sc, p),
    )
    .map_err(|e| e.to_string())?;
    let delays = skew.sample(sc.seed(), count, sc.ranks().len());
    let eager = sc.launch_of(alg) == contend_workload::LaunchMode::Eager;
    // the grid the hardware backend launches for this size (fewer blocks
    // when there is little work); NCCL's rings keep the configured shape
    let mut kernel = sc.kernel_of(alg);
    if alg.has_custom_kernel() {
        let island = groups(sc.topology(), sc.ranks()).map_or(1, |g| g[0].len());
        kernel.blocks = launch_grid(alg, sc.ranks().len(), island, size, kernel);
    }
    let per_rank = |r: usize| c.rank_of.iter().filter(|x| **x == r).count() as u32;
    let actors = c
        .programs
        .iter()
        .enumerate()
        .map(|(i, prog)| {
            let r = c.rank_of[i];
            let gpu = sc.ranks()[r];
            let shape = c.shape[i].unwrap_or(kernel);
            let n = prog.ops.len() as u32;
            let mut script = Vec::with_capacity(count * (n as usize + 4));
            for (k, row) in delays.iter().enumerate() {
                script.push(Step::Delay(gap + row[r]));
                script.push(Step::Begin(k as u32));
                script.extend((0..n).map(Step::Op));
                // the rank's kernel ends with its last block
                script.push(Step::Join);
                script.push(Step::End);
            }
            ActorSpec {
                kernel: Kernel {
                    gpu,
                    blocks: shape.blocks,
                    threads: shape.threads,
                },
                flag_loc: c.flag_loc[i],
                script,
                ops: prog.ops.clone().into(),
                eager,
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
    let eager = sc.launch() == contend_workload::LaunchMode::Eager;
    let mut out = vec![];
    for s in streams {
        let base = out.len() as u32;
        out.extend(stream(sc, s, base, eager));
    }
    out
}

/// The actors of one stream; `base` is the index its first actor gets.
fn stream(sc: &Scenario, s: &Stream, base: u32, eager: bool) -> Vec<ActorSpec> {
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
        let mut script = Vec::with_capacity(s.repeat as usize * (ops.len() + 2) + 1);
        if s.start > Picos::ZERO {
            script.push(Step::Delay(s.start));
        }
        for k in 0..s.repeat {
            script.push(Step::Begin(k));
            script.extend((0..ops.len() as u32).map(Step::Op));
            script.push(Step::End);
        }
        ActorSpec {
            kernel: Kernel {
                gpu: s.from,
                blocks: s.kernel.blocks,
                threads: s.kernel.threads,
            },
            flag_loc: MemLoc::Device(s.from),
            script,
            ops: ops.into(),
            eager,
            launch: (base, 1),
        }
    };
    let post = |engine| Op::Post {
        parts: vec![(acc, Notify::None)],
        engine,
    };
    match s.op {
        TransferOp::Copy => vec![me(vec![post(Mover::CopyEngine)])],
        // the copy engine of `from` reads `to`'s memory: read requests out,
        // completions back over the reverse direction
        TransferOp::CopyRead => vec![me(vec![Op::Fetch {
            parts: vec![acc],
            engine: Mover::CopyEngine,
            loads_per_thread: None,
        }])],
        // the model's loads in flight per thread (what the probes were fitted with)
        TransferOp::Load => vec![me(vec![Op::Fetch {
            parts: vec![acc],
            engine: Mover::Sm,
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
                    engine: Mover::Sm,
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
                    to: b,
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
                    to: a,
                    phase: Phase(i),
                });
            }
            // the partner answers every repeat (its flags carry the
            // repeat's epoch, so it counts repeats as the initiator does)
            let mut script = Vec::with_capacity(s.repeat as usize * (pb.len() + 2));
            for k in 0..s.repeat {
                if s.repeat > 1 {
                    script.push(Step::Begin(k));
                }
                script.extend((0..pb.len() as u32).map(Step::Op));
                if s.repeat > 1 {
                    script.push(Step::End);
                }
            }
            let partner = ActorSpec {
                kernel: Kernel {
                    gpu: s.to,
                    blocks: 1,
                    threads: 32,
                },
                flag_loc: flags_at(s.to),
                script,
                ops: pb.into(),
                eager,
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
