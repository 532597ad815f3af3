//! Per-rank traffic programs: what each rank does for one collective, as a
//! sequence of operations the simulator executes in order.

use crate::ring::RingSteps;
use contend_topo::{Bytes, NodeIdx, Picos};
use serde::Serialize;
use std::borrow::Cow;

/// The program a flag or signal goes to: a rank's position in the
/// scenario's rank list (0..N) for contend's kernels, one of the
/// collective's programs in general (NCCL runs one per rank and channel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Rank(pub u32);

/// A place data lives: a GPU's device memory or a host memory node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum MemLoc {
    Device(NodeIdx),
    Host(NodeIdx),
}

impl MemLoc {
    pub fn node(self) -> NodeIdx {
        match self {
            MemLoc::Device(n) | MemLoc::Host(n) => n,
        }
    }
}

/// One contiguous access to a memory location.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Access {
    pub mem: MemLoc,
    pub bytes: Bytes,
}

/// A flag a rank waits on: the collective's phase, counted per waiting rank.
/// The simulator adds the collective's sequence number (an epoch), so flags of
/// consecutive collectives never alias — as the kernels' alternating slots do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Phase(pub u32);

/// How a store stream tells its receiver it is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Notify {
    /// No flag.
    None,
    /// A separate flag write after the data (ordered behind it; a system fence
    /// precedes it): NCCL Simple, the one-/two-shot push kernels.
    After { to: Rank, phase: Phase },
    /// The flag travels inside the data (NCCL LL: 8 B flag per 8 B of data,
    /// the receiver polls the data itself).
    Inline { to: Rank, phase: Phase },
}

/// What moves a transfer's bytes: the kernel's SMs or the copy engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Mover {
    /// SM loads/stores issued by the kernel's threads.
    Sm,
    /// The copy engine (DMA).
    CopyEngine,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Op {
    /// A kernel launch (eager or graph node, per the scenario).
    Launch,
    /// Loads from one or more locations, all in flight together; the op ends
    /// when every byte has arrived. `loads_per_thread`: the 16-byte loads
    /// each thread of the kernel keeps in flight, as the kernel unrolls them
    /// (one per peer where it loads every peer's vector before it adds
    /// them); `None` where no kernel of this repository says (transfer
    /// streams, NCCL's rings): the model's `gpu.loads_in_flight_per_thread`.
    Fetch {
        parts: Vec<Access>,
        #[serde(rename = "engine")]
        mover: Mover,
        loads_per_thread: Option<u32>,
    },
    /// Stores to one or more locations, all in flight together; the op ends
    /// when every store has been issued (posted writes). Each part may carry
    /// a flag for its receiver.
    Post {
        parts: Vec<(Access, Notify)>,
        #[serde(rename = "engine")]
        mover: Mover,
    },
    /// Loads and stores in flight together: a kernel streaming what it
    /// reads into what it writes (NCCL's `reduceCopy` loads a slice from
    /// one connection's buffer while it stores into the next one's). Ends
    /// when both have; each part as in [`Op::Fetch`] and [`Op::Post`].
    Stream {
        fetch: Vec<Access>,
        post: Vec<(Access, Notify)>,
        #[serde(rename = "engine")]
        mover: Mover,
        loads_per_thread: Option<u32>,
    },
    /// A flag write to each rank of `to`, in order (after everything this
    /// rank posted before it): a barrier's to all its peers is one op.
    Signal { to: Vec<Rank>, phase: Phase },
    /// A system-scope memory fence (`__threadfence_system()`): the kernels'
    /// barriers fence before their flags (release) and after their waits (acquire).
    Fence,
    /// Wait until `count` flags of `phase` have reached this rank.
    Wait { phase: Phase, count: u32 },
    /// Local arithmetic over `bytes` of input read from and written to local
    /// memory (memory bound).
    Reduce { bytes: Bytes },
    /// A local copy within device memory.
    LocalCopy { bytes: Bytes },
    /// A fixed time the rank spends that no modelled resource explains:
    /// NCCL's software cost per step (the model's
    /// `nccl.step_overhead_ns`), the one cost no modelled resource explains.
    Overhead { time: Picos },
}

/// What one rank does for one collective: `ops`, then a ring's steps in
/// closed form where it runs one ([`RingSteps`]: a ring of millions of
/// slices holds its parameters, not its ops).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Program {
    pub ops: Vec<Op>,
    pub ring: Option<RingSteps>,
}

impl From<Vec<Op>> for Program {
    fn from(ops: Vec<Op>) -> Program {
        Program { ops, ring: None }
    }
}

impl Program {
    /// How many ops it has (its ring's included).
    pub fn len(&self) -> usize {
        self.ops.len() + self.ring.as_ref().map_or(0, RingSteps::len)
    }

    /// Whether it has no ops.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Op `i`: borrowed from `ops`, worked out for a ring's (none past the end).
    pub fn op(&self, i: usize) -> Option<Cow<'_, Op>> {
        match self.ops.get(i) {
            Some(op) => Some(Cow::Borrowed(op)),
            None => self
                .ring
                .as_ref()
                .and_then(|r| r.op(i - self.ops.len()))
                .map(Cow::Owned),
        }
    }

    /// `f` of op `i`, the op borrowed where it lies in `ops` (a ring's
    /// worked out for the call); none past the end. The simulator's actors
    /// run every op this way: no `Cow` made and moved per op.
    pub fn with_op<R>(&self, i: usize, f: impl FnOnce(&Op) -> R) -> Option<R> {
        match self.ops.get(i) {
            Some(op) => Some(f(op)),
            None => self.op(i).map(|op| f(&op)),
        }
    }

    /// Every op in order.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, Op>> {
        (0..self.len()).map_while(|i| self.op(i))
    }

    /// Bytes this program moves over links (fetched plus posted, not local).
    pub fn link_bytes(&self) -> Bytes {
        let mut b = Bytes::ZERO;
        for op in self.iter() {
            match &*op {
                Op::Fetch { parts, .. } => parts.iter().for_each(|a| b += a.bytes),
                Op::Post { parts, .. } => parts.iter().for_each(|(a, _)| b += a.bytes),
                Op::Stream { fetch, post, .. } => {
                    fetch.iter().for_each(|a| b += a.bytes);
                    post.iter().for_each(|(a, _)| b += a.bytes);
                }
                _ => {}
            }
        }
        b
    }
}
