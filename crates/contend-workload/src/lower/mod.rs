//! Lowering: an allreduce algorithm over N ranks becomes N traffic programs.
//! (each algorithm's program for one rank: `programs.rs`).
//!
//! The buffers and flags follow the scenario's placement: with `peer`
//! placement rank j's exchange buffer and flags live in GPU j's memory; with
//! `host` placement they live in the host memory nearest GPU j, so stores and
//! loads of every rank cross its PCIe link and the root complex.

use crate::kinds::{Algorithm, Placement};
use crate::program::{Access, MemLoc, Mover, Notify, Op, Phase, Program, Rank};
use crate::scenario::KernelConfig;
use contend_nccl::NcclPlan;
use contend_topo::{Bytes, NodeIdx, Picos, Topology};
use serde::Serialize;
use thiserror::Error;

mod programs;
pub use programs::groups;
use programs::{
    ce_ring, hierarchical, island_two_shot, one_shot_pull, one_shot_push, ring, staged_push,
    two_shot_pull, two_shot_push,
};

/// Ring protocol settings (NCCL-like).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RingConfig {
    /// Largest slice of a chunk sent before its flag (Simple protocol).
    pub simple_slice: Bytes,
    /// Largest slice of data per flag set with the LL protocol.
    pub ll_slice: Bytes,
}

impl Default for RingConfig {
    fn default() -> Self {
        // NCCL's Simple protocol moves a 4 MiB buffer in 8 steps (512 KiB);
        // LL uses a 256 KiB buffer of 8 slots (16 KiB of data each after the
        // flags). Source: NCCL's documented buffer sizes (NCCL_BUFFSIZE,
        // NCCL_LL_BUFFSIZE defaults) and protocol description.
        RingConfig {
            simple_slice: Bytes(512 << 10),
            ll_slice: Bytes(16 << 10),
        }
    }
}

impl RingConfig {
    /// The slice a ring protocol cuts its chunks into (`None`: not a ring).
    pub fn slice_of(&self, alg: Algorithm) -> Option<Bytes> {
        match alg {
            Algorithm::RingLl => Some(self.ll_slice),
            Algorithm::RingSimple => Some(self.simple_slice),
            _ => None,
        }
    }
}

/// What a lowering needs besides the algorithm, ranks and size.
#[derive(Clone, Copy, Debug)]
pub struct LowerConfig<'a> {
    /// The forced rings' slices (`ring-ll`, `ring-simple`).
    pub ring: RingConfig,
    /// NCCL's decisions for these ranks (`contend_nccl::plan`): the `nccl`
    /// algorithm runs what they say.
    pub nccl: Option<&'a NcclPlan>,
    /// Bytes per element (NCCL splits a call by elements).
    pub elem: Bytes,
    /// A fixed software cost per NCCL step the `nccl` lowering charges per
    /// primitive call that sends (the model's `nccl.step_overhead_ns`;
    /// zero: none).
    pub nccl_step_overhead: Picos,
}

impl Default for LowerConfig<'_> {
    fn default() -> Self {
        LowerConfig {
            ring: RingConfig::default(),
            nccl: None,
            elem: Bytes(2),
            nccl_step_overhead: Picos::ZERO,
        }
    }
}

/// Slices per chunk of a ring over `ranks` ranks at `size`: the largest
/// chunk ([`chunks`]) cut into pieces of at most `slice` bytes (at least
/// 16, the kernels' vector). The ring's program holds 2(N-1) steps of this
/// many slices per rank.
pub fn ring_slices(size: Bytes, ranks: usize, slice: Bytes) -> u64 {
    let max_chunk = chunk_of(size, ranks.max(1), 0).0.max(1);
    max_chunk.div_ceil(slice.0.max(16))
}

/// Why a collective could not be lowered.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LowerError {
    #[error("the `nccl` algorithm needs NCCL's plan for the ranks (contend_nccl::plan)")]
    NcclWithoutPlan,
    #[error(
        "NCCL has no algorithm and protocol left for an allreduce of {0} (NCCL_ALGO/NCCL_PROTO disable them all)"
    )]
    NcclNoChoice(Bytes),
}

/// One collective lowered: the programs the ranks run (one per rank for
/// contend's kernels; one per rank and channel, and per half of a tree
/// block, for NCCL), the rank each runs on and where each one's flags live.
/// A program's [`Rank`] targets (flags, signals) are program indices.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Collective {
    pub algorithm: Algorithm,
    pub size: Bytes,
    pub programs: Vec<Program>,
    /// The rank (index into the ranks) each program runs on.
    pub rank_of: Vec<usize>,
    /// The kernel shape of each program where the lowering sets it (NCCL:
    /// one block of NCCL's threads per channel); `None`: the scenario's.
    pub shape: Vec<Option<KernelConfig>>,
    /// Where program p's flags are written (and polled).
    pub flag_loc: Vec<MemLoc>,
    /// A sentence when the algorithm fell back to another shape (for people).
    pub note: Option<String>,
}

/// How many loads each thread of the kernel keeps in flight in a fetch, as
/// `kernels/allreduce.cu` writes it.
#[derive(Clone, Copy)]
enum Loads {
    /// One per part: the kernel loads every peer's (or slot's) vector, then
    /// adds them (`sum_ranks`, unrolled over the ranks).
    EveryPart,
    /// One: a grid loop over one source at a time, or a loop whose trip
    /// count is only known at run time storing into a per-thread array
    /// (the hierarchical kernel).
    One,
}

struct Ctx<'a> {
    topo: &'a Topology,
    gpus: &'a [NodeIdx],
    placement: Placement,
}

impl Ctx<'_> {
    fn n(&self) -> usize {
        self.gpus.len()
    }
    /// Rank j's exchange buffer.
    fn buf(&self, j: usize) -> MemLoc {
        match self.placement {
            Placement::Peer => MemLoc::Device(self.gpus[j]),
            Placement::Host => MemLoc::Host(
                self.topo
                    .nearest_host_memory(self.gpus[j])
                    .unwrap_or(self.gpus[j]),
            ),
        }
    }
    fn host(&self) -> bool {
        self.placement == Placement::Host
    }
    fn peers(&self, r: usize) -> impl Iterator<Item = usize> + use<> {
        let n = self.n();
        (1..n).map(move |k| (r + k) % n)
    }
    /// Make the input visible to peers: a local copy into the registered
    /// buffer (peer) or a store stream into host memory (host).
    fn stage(&self, r: usize, bytes: Bytes, p: &mut Program) {
        if self.host() {
            p.ops.push(Op::Post {
                parts: vec![(
                    Access {
                        mem: self.buf(r),
                        bytes,
                    },
                    Notify::None,
                )],
                mover: Mover::Sm,
            });
        } else {
            p.ops.push(Op::LocalCopy { bytes });
        }
    }
    /// The kernels' barrier: release fence, a flag to each peer, wait for
    /// theirs, acquire fence.
    fn barrier(&self, with: &[usize], phase: u32, p: &mut Program) {
        if with.is_empty() {
            return;
        }
        p.ops.push(Op::Fence);
        p.ops.push(Op::Signal {
            to: with.iter().map(|&j| Rank(j as u32)).collect(),
            phase: Phase(phase),
        });
        p.ops.push(Op::Wait {
            phase: Phase(phase),
            count: with.len() as u32,
        });
        p.ops.push(Op::Fence);
    }
    /// One load op for all `parts`, in flight together (none if empty),
    /// each thread keeping `loads` loads in flight.
    fn fetch_parts(&self, parts: Vec<Access>, loads: Loads, p: &mut Program) {
        if !parts.is_empty() {
            let loads_per_thread = match loads {
                Loads::EveryPart => Some(parts.len() as u32),
                Loads::One => Some(1),
            };
            p.ops.push(Op::Fetch {
                parts,
                mover: Mover::Sm,
                loads_per_thread,
            });
        }
    }
    /// Loads `size(j)` bytes from the exchange buffer of every rank j in `from`.
    fn fetch(&self, from: &[usize], size: impl Fn(usize) -> Bytes, loads: Loads, p: &mut Program) {
        let parts = from
            .iter()
            .map(|&j| Access {
                mem: self.buf(j),
                bytes: size(j),
            })
            .collect();
        self.fetch_parts(parts, loads, p);
    }
    /// After flags arrived: with host placement the pushed data sits in host
    /// memory and must be loaded.
    fn fetch_pushed(
        &self,
        r: usize,
        sizes: impl Iterator<Item = Bytes>,
        loads: Loads,
        p: &mut Program,
    ) {
        if self.host() {
            let parts = sizes
                .map(|bytes| Access {
                    mem: self.buf(r),
                    bytes,
                })
                .collect();
            self.fetch_parts(parts, loads, p);
        }
    }
    /// The push kernels' exchange: store `out(j)` bytes into every peer j's
    /// buffer with a flag behind them (after the release fence), wait for
    /// every peer's flag, acquire fence; with host placement, load back what
    /// the peers pushed (`incoming(j)` bytes from each).
    #[allow(clippy::too_many_arguments)]
    fn push_exchange(
        &self,
        r: usize,
        peers: &[usize],
        out: impl Fn(usize) -> Bytes,
        incoming: impl Fn(usize) -> Bytes,
        loads: Loads,
        phase: u32,
        p: &mut Program,
    ) {
        let parts = peers
            .iter()
            .map(|&j| {
                (
                    Access {
                        mem: self.buf(j),
                        bytes: out(j),
                    },
                    Notify::After {
                        to: Rank(j as u32),
                        phase: Phase(phase),
                    },
                )
            })
            .collect();
        p.ops.push(Op::Post {
            parts,
            mover: Mover::Sm,
        });
        p.ops.push(Op::Wait {
            phase: Phase(phase),
            count: peers.len() as u32,
        });
        p.ops.push(Op::Fence); // the kernel's acquire fence after its wait
        self.fetch_pushed(r, peers.iter().map(|&j| incoming(j)), loads, p);
    }
}

/// Splits `size` into `n` chunks aligned to 16 B (the kernels' vector width).
pub fn chunks(size: Bytes, n: usize) -> Vec<Bytes> {
    let units = size.0.div_ceil(16);
    let base = units / n as u64;
    let extra = units % n as u64;
    let mut left = size.0;
    (0..n as u64)
        .map(|i| {
            let c = ((base + u64::from(i < extra)) * 16).min(left);
            left -= c;
            Bytes(c)
        })
        .collect()
}

/// Chunk `i` of [`chunks`]`(size, n)` without building the others: the
/// first `units % n` chunks hold one 16-byte unit more, the last ones may
/// be cut short by the size. O(1), for rings that cut every chunk into
/// thousands of slices (tests hold it to `chunks`).
pub fn chunk_of(size: Bytes, n: usize, i: usize) -> Bytes {
    let n = n.max(1) as u64;
    let i = i as u64;
    let units = size.0.div_ceil(16);
    let (base, extra) = (units / n, units % n);
    let before = (i * base + i.min(extra)).saturating_mul(16).min(size.0);
    let mine = (base + u64::from(i < extra)) * 16;
    Bytes(mine.min(size.0 - before))
}

/// Lowers one allreduce of `size` bytes over `gpus` (rank order).
pub fn lower(
    algorithm: Algorithm,
    topo: &Topology,
    gpus: &[NodeIdx],
    placement: Placement,
    size: Bytes,
    cfg: &LowerConfig,
) -> Result<Collective, LowerError> {
    let ring_cfg = cfg.ring;
    let cx = Ctx {
        topo,
        gpus,
        placement,
    };
    let n = gpus.len();
    if algorithm == Algorithm::Nccl && n > 1 {
        let plan = cfg.nccl.ok_or(LowerError::NcclWithoutPlan)?;
        return crate::nccl::lower_nccl(plan, topo, gpus, size, cfg);
    }
    let flag_loc = (0..n).map(|j| cx.buf(j)).collect();
    let mut note = None;
    let programs = if n <= 1 {
        vec![Program {
            ring: None,
            ops: vec![Op::Launch, Op::LocalCopy { bytes: size }],
        }]
    } else {
        match algorithm {
            Algorithm::OneShotPull => (0..n).map(|r| one_shot_pull(&cx, r, size)).collect(),
            Algorithm::OneShotPush => (0..n).map(|r| one_shot_push(&cx, r, size)).collect(),
            Algorithm::TwoShotPull => (0..n).map(|r| two_shot_pull(&cx, r, size)).collect(),
            // the lossless variant differs in its kernel's arithmetic only
            Algorithm::TwoShotPush | Algorithm::TwoShotPushFp32Acc => {
                (0..n).map(|r| two_shot_push(&cx, r, size)).collect()
            }
            Algorithm::StagedPush => (0..n).map(|r| staged_push(&cx, r, size)).collect(),
            Algorithm::CeRing => (0..n).map(|r| ce_ring(&cx, r, size)).collect(),
            Algorithm::RingLl => (0..n)
                .map(|r| ring(&cx, r, size, ring_cfg.ll_slice, true))
                .collect(),
            Algorithm::RingSimple => (0..n)
                .map(|r| ring(&cx, r, size, ring_cfg.simple_slice, false))
                .collect(),
            // more than one rank goes to the NCCL lowering above
            Algorithm::Nccl => vec![],
            Algorithm::Hierarchical => {
                let g = groups(topo, gpus).unwrap_or_else(|| {
                    // as the kernel does: every GPU its own group
                    note = Some(
                        "no two equal switch or socket groups: every GPU is its own group".into(),
                    );
                    (0..n).map(|r| vec![r]).collect()
                });
                (0..n).map(|r| hierarchical(&cx, r, size, &g)).collect()
            }
            Algorithm::IslandTwoShot => {
                let g = groups(topo, gpus).unwrap_or_else(|| {
                    // as the kernel does: every GPU its own island
                    note = Some(
                        "no two equal switch or socket islands: every GPU is its own island, so island two-shot is plain two-shot push"
                            .into(),
                    );
                    (0..n).map(|r| vec![r]).collect()
                });
                (0..n).map(|r| island_two_shot(&cx, r, size, &g)).collect()
            }
        }
    };
    let count = programs.len();
    Ok(Collective {
        algorithm,
        size,
        programs,
        rank_of: (0..count).collect(),
        shape: vec![None; count],
        flag_loc,
        note,
    })
}
