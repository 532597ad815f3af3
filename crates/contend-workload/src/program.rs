//! Per-rank traffic programs: what each rank does for one collective, as a
//! sequence of operations the simulator executes in order.

use crate::ring::RingSteps;
use contend_topo::{Bytes, NodeIdx, Picos};
use serde::Serialize;
use std::borrow::Cow;
use std::rc::Rc;

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

/// An op borrowed for running: an [`Op`] with its lists as slices, into a
/// [`PackedProgram`]'s shared lists or an [`Op`]'s own (see [`Op::view`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OpRef<'a> {
    Launch,
    Fetch {
        parts: &'a [Access],
        mover: Mover,
        loads_per_thread: Option<u32>,
    },
    Post {
        parts: &'a [(Access, Notify)],
        mover: Mover,
    },
    Stream {
        fetch: &'a [Access],
        post: &'a [(Access, Notify)],
        mover: Mover,
        loads_per_thread: Option<u32>,
    },
    Signal {
        to: &'a [Rank],
        phase: Phase,
    },
    Fence,
    Wait {
        phase: Phase,
        count: u32,
    },
    Reduce {
        bytes: Bytes,
    },
    LocalCopy {
        bytes: Bytes,
    },
    Overhead {
        time: Picos,
    },
}

impl Op {
    /// This op borrowed, its lists as slices.
    pub fn view(&self) -> OpRef<'_> {
        match self {
            Op::Launch => OpRef::Launch,
            Op::Fetch {
                parts,
                mover,
                loads_per_thread,
            } => OpRef::Fetch {
                parts,
                mover: *mover,
                loads_per_thread: *loads_per_thread,
            },
            Op::Post { parts, mover } => OpRef::Post {
                parts,
                mover: *mover,
            },
            Op::Stream {
                fetch,
                post,
                mover,
                loads_per_thread,
            } => OpRef::Stream {
                fetch,
                post,
                mover: *mover,
                loads_per_thread: *loads_per_thread,
            },
            Op::Signal { to, phase } => OpRef::Signal { to, phase: *phase },
            Op::Fence => OpRef::Fence,
            Op::Wait { phase, count } => OpRef::Wait {
                phase: *phase,
                count: *count,
            },
            Op::Reduce { bytes } => OpRef::Reduce { bytes: *bytes },
            Op::LocalCopy { bytes } => OpRef::LocalCopy { bytes: *bytes },
            Op::Overhead { time } => OpRef::Overhead { time: *time },
        }
    }
}

impl OpRef<'_> {
    /// The op this view borrows, owned again.
    pub fn to_op(self) -> Op {
        match self {
            OpRef::Launch => Op::Launch,
            OpRef::Fetch {
                parts,
                mover,
                loads_per_thread,
            } => Op::Fetch {
                parts: parts.to_vec(),
                mover,
                loads_per_thread,
            },
            OpRef::Post { parts, mover } => Op::Post {
                parts: parts.to_vec(),
                mover,
            },
            OpRef::Stream {
                fetch,
                post,
                mover,
                loads_per_thread,
            } => Op::Stream {
                fetch: fetch.to_vec(),
                post: post.to_vec(),
                mover,
                loads_per_thread,
            },
            OpRef::Signal { to, phase } => Op::Signal {
                to: to.to_vec(),
                phase,
            },
            OpRef::Fence => Op::Fence,
            OpRef::Wait { phase, count } => Op::Wait { phase, count },
            OpRef::Reduce { bytes } => Op::Reduce { bytes },
            OpRef::LocalCopy { bytes } => Op::LocalCopy { bytes },
            OpRef::Overhead { time } => Op::Overhead { time },
        }
    }
}

/// An op of a [`PackedProgram`]: its lists as places in the program's
/// shared lists (at most 24 bytes, where an [`Op`] takes 64 and a heap
/// block per list).
#[derive(Clone, Copy, Debug)]
enum Packed {
    Launch,
    Fetch {
        at: u32,
        len: u16,
        mover: Mover,
        loads_per_thread: Option<u32>,
    },
    Post {
        at: u32,
        len: u16,
        mover: Mover,
    },
    Stream {
        fetch_at: u32,
        post_at: u32,
        fetch_len: u16,
        post_len: u16,
        mover: Mover,
        loads_per_thread: Option<u32>,
    },
    Signal {
        at: u32,
        len: u16,
        phase: Phase,
    },
    Fence,
    Wait {
        phase: Phase,
        count: u32,
    },
    Reduce {
        bytes: Bytes,
    },
    LocalCopy {
        bytes: Bytes,
    },
    Overhead {
        time: Picos,
    },
    /// A list too long (or a place too far) to pack: the op is read from
    /// the program.
    Unpacked,
}

const _: () = assert!(std::mem::size_of::<Packed>() <= 24);

/// A [`Program`] packed for running: its ops small and side by side, their
/// lists in three lists shared by all the ops. A simulator walks every op
/// of every rank once per collective; an [`Op`] of 64 bytes with a heap
/// block per list makes that walk two cache misses an op where the
/// programs outgrow the caches (128 NCCL programs of ~630 ops at 64 GPUs).
/// The programs of one collective are packed together
/// ([`PackedProgram::pack_all`]) op-major: op `i` of every program side
/// by side, then op `i + 1`, their lists in that order too. Their ranks
/// go through their ops in step (a ring's steps, a kernel's rounds), so
/// the ops read one after the other lie together.
/// [`PackedProgram::with_op`] gives each op as [`Program::op`] gives it
/// (a test holds every lowered program's packed ops to its own).
#[derive(Clone, Debug, Default)]
pub struct PackedProgram {
    store: Rc<Store>,
    /// This program's place among those packed together.
    column: usize,
    /// The program packed: its ring's ops, and the ops not packed.
    program: Program,
}

/// The packed ops of programs packed together: op `i` of program `p` at
/// `ops[i * stride + p]` (an op past a program's end is a filler, never
/// read), their lists in the three lists.
#[derive(Debug, Default)]
struct Store {
    ops: Vec<Packed>,
    stride: usize,
    fetch: Vec<Access>,
    post: Vec<(Access, Notify)>,
    to: Vec<Rank>,
}

/// Where a list of `len` entries starting at `at` of a shared list packs
/// (none: it does not).
fn place(at: usize, len: usize) -> Option<(u32, u16)> {
    Some((u32::try_from(at).ok()?, u16::try_from(len).ok()?))
}

impl PackedProgram {
    /// `program`'s ops packed.
    pub fn new(program: Program) -> PackedProgram {
        let mut all = PackedProgram::pack_all(vec![program]);
        all.pop().expect("one program packed")
    }

    /// `programs` packed together, op-major (see [`PackedProgram`]), in
    /// their order.
    pub fn pack_all(programs: Vec<Program>) -> Vec<PackedProgram> {
        let stride = programs.len();
        let longest = programs.iter().map(|p| p.ops.len()).max().unwrap_or(0);
        let mut store = Store {
            ops: Vec::with_capacity(longest * stride),
            stride,
            ..Store::default()
        };
        for i in 0..longest {
            for p in &programs {
                let packed = match p.ops.get(i) {
                    Some(op) => store.pack(op).unwrap_or(Packed::Unpacked),
                    None => Packed::Launch,
                };
                store.ops.push(packed);
            }
        }
        let store = Rc::new(store);
        programs
            .into_iter()
            .enumerate()
            .map(|(column, program)| PackedProgram {
                store: Rc::clone(&store),
                column,
                program,
            })
            .collect()
    }

    /// The program packed.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// How many ops it has (its ring's included).
    pub fn len(&self) -> usize {
        self.program.len()
    }

    /// Whether it has no ops.
    pub fn is_empty(&self) -> bool {
        self.program.is_empty()
    }

    /// `f` of op `i`, borrowed from the packed lists (a ring's worked out
    /// for the call, [`RingSteps::with_op`]); none past the end: what
    /// [`Program::op`] gives, viewed.
    #[inline]
    pub fn with_op<R>(&self, i: usize, f: impl FnOnce(OpRef<'_>) -> R) -> Option<R> {
        let Some(at) = i.checked_sub(self.program.ops.len()) else {
            return self.packed_op(i, f);
        };
        self.program.ring.as_ref()?.with_op(at, f)
    }

    /// `f` of op `i`, one of `ops`, from the packed lists.
    #[inline]
    fn packed_op<R>(&self, i: usize, f: impl FnOnce(OpRef<'_>) -> R) -> Option<R> {
        let st = &*self.store;
        let s = |at: u32, len: u16| at as usize..at as usize + len as usize;
        let op = match st.ops[i * st.stride + self.column] {
            Packed::Launch => OpRef::Launch,
            Packed::Fetch {
                at,
                len,
                mover,
                loads_per_thread,
            } => OpRef::Fetch {
                parts: &st.fetch[s(at, len)],
                mover,
                loads_per_thread,
            },
            Packed::Post { at, len, mover } => OpRef::Post {
                parts: &st.post[s(at, len)],
                mover,
            },
            Packed::Stream {
                fetch_at,
                post_at,
                fetch_len,
                post_len,
                mover,
                loads_per_thread,
            } => OpRef::Stream {
                fetch: &st.fetch[s(fetch_at, fetch_len)],
                post: &st.post[s(post_at, post_len)],
                mover,
                loads_per_thread,
            },
            Packed::Signal { at, len, phase } => OpRef::Signal {
                to: &st.to[s(at, len)],
                phase,
            },
            Packed::Fence => OpRef::Fence,
            Packed::Wait { phase, count } => OpRef::Wait { phase, count },
            Packed::Reduce { bytes } => OpRef::Reduce { bytes },
            Packed::LocalCopy { bytes } => OpRef::LocalCopy { bytes },
            Packed::Overhead { time } => OpRef::Overhead { time },
            Packed::Unpacked => self.program.ops[i].view(),
        };
        Some(f(op))
    }
}

impl Store {
    /// `op` packed, its lists appended to the shared ones (none where a
    /// list does not pack: nothing appended then).
    fn pack(&mut self, op: &Op) -> Option<Packed> {
        Some(match op {
            Op::Launch => Packed::Launch,
            Op::Fetch {
                parts,
                mover,
                loads_per_thread,
            } => {
                let (at, len) = place(self.fetch.len(), parts.len())?;
                self.fetch.extend_from_slice(parts);
                Packed::Fetch {
                    at,
                    len,
                    mover: *mover,
                    loads_per_thread: *loads_per_thread,
                }
            }
            Op::Post { parts, mover } => {
                let (at, len) = place(self.post.len(), parts.len())?;
                self.post.extend_from_slice(parts);
                Packed::Post {
                    at,
                    len,
                    mover: *mover,
                }
            }
            Op::Stream {
                fetch,
                post,
                mover,
                loads_per_thread,
            } => {
                let (fetch_at, fetch_len) = place(self.fetch.len(), fetch.len())?;
                let (post_at, post_len) = place(self.post.len(), post.len())?;
                self.fetch.extend_from_slice(fetch);
                self.post.extend_from_slice(post);
                Packed::Stream {
                    fetch_at,
                    post_at,
                    fetch_len,
                    post_len,
                    mover: *mover,
                    loads_per_thread: *loads_per_thread,
                }
            }
            Op::Signal { to, phase } => {
                let (at, len) = place(self.to.len(), to.len())?;
                self.to.extend_from_slice(to);
                Packed::Signal {
                    at,
                    len,
                    phase: *phase,
                }
            }
            Op::Fence => Packed::Fence,
            Op::Wait { phase, count } => Packed::Wait {
                phase: *phase,
                count: *count,
            },
            Op::Reduce { bytes } => Packed::Reduce { bytes: *bytes },
            Op::LocalCopy { bytes } => Packed::LocalCopy { bytes: *bytes },
            Op::Overhead { time } => Packed::Overhead { time: *time },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(n: u32, bytes: u64) -> Access {
        Access {
            mem: MemLoc::Device(NodeIdx(n)),
            bytes: Bytes(bytes),
        }
    }

    /// Every kind of op, a list too long to pack among them: each op as
    /// packed is the op itself, and the lists of the ops after the long
    /// one are still theirs.
    #[test]
    fn packed_ops_are_the_programs_ops() {
        let after = Notify::After {
            to: Rank(3),
            phase: Phase(2),
        };
        let long: Vec<Access> = (0..70_000).map(|i| access(i % 7, u64::from(i))).collect();
        let ops = vec![
            Op::Launch,
            Op::Fetch {
                parts: vec![access(1, 10), access(2, 20)],
                mover: Mover::Sm,
                loads_per_thread: Some(4),
            },
            Op::Post {
                parts: vec![(access(3, 30), after), (access(4, 40), Notify::None)],
                mover: Mover::CopyEngine,
            },
            Op::Fetch {
                parts: long,
                mover: Mover::Sm,
                loads_per_thread: None,
            },
            Op::Stream {
                fetch: vec![access(5, 50)],
                post: vec![(
                    access(6, 60),
                    Notify::Inline {
                        to: Rank(1),
                        phase: Phase(4),
                    },
                )],
                mover: Mover::Sm,
                loads_per_thread: None,
            },
            Op::Signal {
                to: vec![Rank(0), Rank(2)],
                phase: Phase(1),
            },
            Op::Fence,
            Op::Wait {
                phase: Phase(1),
                count: 2,
            },
            Op::Reduce { bytes: Bytes(7) },
            Op::LocalCopy { bytes: Bytes(8) },
            Op::Overhead { time: Picos(9) },
            Op::Post {
                parts: vec![],
                mover: Mover::Sm,
            },
        ];
        let program = Program::from(ops.clone());
        let packed = PackedProgram::new(program.clone());
        assert!(matches!(packed.store.ops[3], Packed::Unpacked));
        assert_eq!(packed.len(), ops.len());
        for (i, op) in ops.iter().enumerate() {
            assert_eq!(
                packed.with_op(i, |v| v.to_op()).as_ref(),
                Some(op),
                "op {i}"
            );
            assert_eq!(packed.with_op(i, |v| v == op.view()), Some(true));
        }
        assert_eq!(packed.with_op(ops.len(), |v| v.to_op()), None);
        assert_eq!(packed.program(), &program);
    }

    /// Programs of different lengths packed together: each gives its own
    /// ops, and none past its end (the fillers of the shorter ones are
    /// never read).
    #[test]
    fn programs_packed_together_give_their_own_ops() {
        let programs: Vec<Program> = (0..4u32)
            .map(|p| {
                let mut ops = vec![Op::Launch];
                for i in 0..(3 * p) {
                    ops.push(Op::Post {
                        parts: vec![(access(p, u64::from(i)), Notify::None); p as usize],
                        mover: Mover::Sm,
                    });
                    ops.push(Op::Signal {
                        to: vec![Rank(p); i as usize],
                        phase: Phase(i),
                    });
                }
                Program::from(ops)
            })
            .collect();
        let packed = PackedProgram::pack_all(programs.clone());
        assert_eq!(packed.len(), programs.len());
        for (p, q) in programs.iter().zip(&packed) {
            for (i, op) in p.ops.iter().enumerate() {
                assert_eq!(q.with_op(i, |v| v.to_op()).as_ref(), Some(op));
            }
            assert_eq!(q.with_op(p.ops.len(), |v| v.to_op()), None);
        }
    }
}
