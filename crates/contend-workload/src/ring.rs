//! DESIGN 7 — the ring lowering in closed form: NCCL-style rings run 2(N-1)
//! steps of one chunk each, every chunk cut into slices that pipeline (a
//! rank forwards slice j of step s as soon as slice j of step s-1 has
//! arrived). A ring of a large allreduce has millions of slices, so its
//! program holds the ring's parameters ([`RingSteps`]) and works each op
//! out from its position when asked ([`RingSteps::op`]): memory stays flat
//! however large the allreduce. Its reference, every op written out, is
//! in the tests below.

use crate::lower::{chunk_of, chunks, ring_slices};
use crate::program::{Access, MemLoc, Mover, Notify, Op, OpRef, Phase, Rank};
use contend_topo::Bytes;
use serde::Serialize;

/// One rank's ring after its launch, in closed form: step 0 posts every
/// slice of its own chunk; each later step waits for a slice, loads it
/// back (host placement), reduces it (reduce-scatter) or copies it
/// (all-gather) and posts it on; a last round takes in the final slices.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RingSteps {
    /// This rank and the ring's size.
    rank: usize,
    n: usize,
    /// Slices per chunk.
    m: usize,
    /// The LL protocol (flags inline, twice the bytes on the wire).
    ll: bool,
    /// The ring's chunks, in rank order.
    chunks: Vec<Bytes>,
    /// This rank's exchange buffer and the next rank's.
    own: MemLoc,
    next: MemLoc,
    /// Host placement: pushed data sits in host memory and is loaded back.
    host: bool,
}

/// Where an op index falls: (step, slice, op within the slice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct At {
    step: usize,
    slice: usize,
    k: usize,
}

impl RingSteps {
    /// Rank `rank`'s ring over `n` ranks (at least 2) at `size`, cut in
    /// slices of at most `slice` bytes.
    pub(crate) fn new(
        rank: usize,
        n: usize,
        size: Bytes,
        slice: Bytes,
        ll: bool,
        bufs: (MemLoc, MemLoc),
        host: bool,
    ) -> RingSteps {
        RingSteps {
            rank,
            n,
            m: ring_slices(size, n, slice) as usize,
            ll,
            chunks: chunks(size, n),
            own: bufs.0,
            next: bufs.1,
            host,
        }
    }

    fn steps(&self) -> usize {
        2 * (self.n - 1)
    }
    /// Ops per slice of a middle step (wait, load back, reduce or copy, post).
    fn per_mid(&self) -> usize {
        3 + usize::from(self.host)
    }
    /// Ops per slice of the last round (wait, load back, copy).
    fn per_last(&self) -> usize {
        2 + usize::from(self.host)
    }

    /// How many ops it has.
    pub fn len(&self) -> usize {
        let m = self.m;
        m + (self.steps() - 1) * m * self.per_mid() + m * self.per_last()
    }

    /// Whether it has no ops (never: a ring has at least one slice).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn at(&self, i: usize) -> Option<At> {
        let m = self.m;
        if i < m {
            return Some(At {
                step: 0,
                slice: i,
                k: 0,
            });
        }
        let i = i - m;
        let mid = (self.steps() - 1) * m * self.per_mid();
        if i < mid {
            let per = self.per_mid();
            return Some(At {
                step: 1 + i / (m * per),
                slice: (i % (m * per)) / per,
                k: i % per,
            });
        }
        let i = i - mid;
        (i < m * self.per_last()).then(|| At {
            step: self.steps(),
            slice: i / self.per_last(),
            k: i % self.per_last(),
        })
    }

    fn chunk_at(&self, step: usize) -> usize {
        let n = self.n;
        (self.rank + n - step % n) % n
    }
    fn slice_of(&self, chunk: usize, j: usize) -> Bytes {
        chunk_of(self.chunks[chunk], self.m, j)
    }
    fn phase(&self, step: usize, j: usize) -> Phase {
        Phase((step * self.m + j) as u32)
    }

    /// Op `i` (none past the end): [`RingSteps::with_op`]'s, owned.
    pub fn op(&self, i: usize) -> Option<Op> {
        self.with_op(i, |v| v.to_op())
    }

    /// `f` of op `i`, its one part on the stack (none past the end), no
    /// list allocated per op (the simulator's actors run a ring's ops this
    /// way; a test holds every op to the ring written out).
    pub fn with_op<R>(&self, i: usize, f: impl FnOnce(OpRef<'_>) -> R) -> Option<R> {
        let At { step, slice: j, k } = self.at(i)?;
        let incoming = || self.slice_of(self.chunk_at(step), j);
        // op k of the slice, with the load back (host placement) at 1
        let k = if !self.host && k >= 1 { k + 1 } else { k };
        let last = step == self.steps();
        let post = || [self.post(step, j)];
        Some(match (step, k) {
            (0, _) => f(OpRef::Post {
                parts: &post(),
                mover: Mover::Sm,
            }),
            (_, 0) => f(OpRef::Wait {
                phase: self.phase(step - 1, j),
                count: 1,
            }),
            (_, 1) => f(OpRef::Fetch {
                parts: &[Access {
                    mem: self.own,
                    bytes: incoming(),
                }],
                mover: Mover::Sm,
                loads_per_thread: None,
            }),
            (s, 2) if s < self.n && !last => f(OpRef::Reduce {
                bytes: Bytes(3 * incoming().0),
            }),
            (_, 2) => f(OpRef::LocalCopy { bytes: incoming() }),
            _ => f(OpRef::Post {
                parts: &post(),
                mover: Mover::Sm,
            }),
        })
    }

    /// The part slice `j` of `step` posts to the next rank, its flag
    /// inline (LL) or after it (Simple).
    fn post(&self, step: usize, j: usize) -> (Access, Notify) {
        let out = self.slice_of(self.chunk_at(step), j);
        let wire = if self.ll { Bytes(out.0 * 2) } else { out };
        let to = Rank(((self.rank + 1) % self.n) as u32);
        let phase = self.phase(step, j);
        let notify = if self.ll {
            Notify::Inline { to, phase }
        } else {
            Notify::After { to, phase }
        };
        (
            Access {
                mem: self.next,
                bytes: wire,
            },
            notify,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_topo::NodeIdx;

    /// The reference: the ring written out op by op, as the lowering
    /// built it before the closed form.
    #[allow(clippy::too_many_arguments)]
    fn written_out(
        r: usize,
        n: usize,
        s: Bytes,
        slice: Bytes,
        ll: bool,
        own: MemLoc,
        next_buf: MemLoc,
        host: bool,
    ) -> Vec<Op> {
        let next = (r + 1) % n;
        let c = chunks(s, n);
        let m = ring_slices(s, n, slice) as usize;
        let slices: Vec<Vec<Bytes>> = c.iter().map(|&k| chunks(k, m)).collect();
        let steps = 2 * (n - 1);
        let chunk_at = |s: usize| (r + n - s % n) % n;
        let slice_of = |chunk: usize, j: usize| slices[chunk][j];
        let phase = |step: usize, j: usize| Phase((step * m + j) as u32);
        let fetch = |bytes: Bytes, ops: &mut Vec<Op>| {
            if host {
                ops.push(Op::Fetch {
                    parts: vec![Access { mem: own, bytes }],
                    mover: Mover::Sm,
                    loads_per_thread: None,
                });
            }
        };
        let mut ops = vec![];
        for step in 0..steps {
            for j in 0..m {
                if step > 0 {
                    let incoming = slice_of(chunk_at(step), j);
                    ops.push(Op::Wait {
                        phase: phase(step - 1, j),
                        count: 1,
                    });
                    fetch(incoming, &mut ops);
                    if step < n {
                        ops.push(Op::Reduce {
                            bytes: Bytes(3 * incoming.0),
                        });
                    } else {
                        ops.push(Op::LocalCopy { bytes: incoming });
                    }
                }
                let out = slice_of(chunk_at(step), j);
                let wire = if ll { Bytes(out.0 * 2) } else { out };
                let to = Rank(next as u32);
                let notify = if ll {
                    Notify::Inline {
                        to,
                        phase: phase(step, j),
                    }
                } else {
                    Notify::After {
                        to,
                        phase: phase(step, j),
                    }
                };
                ops.push(Op::Post {
                    parts: vec![(
                        Access {
                            mem: next_buf,
                            bytes: wire,
                        },
                        notify,
                    )],
                    mover: Mover::Sm,
                });
            }
        }
        for j in 0..m {
            let incoming = slice_of(chunk_at(steps), j);
            ops.push(Op::Wait {
                phase: phase(steps - 1, j),
                count: 1,
            });
            fetch(incoming, &mut ops);
            ops.push(Op::LocalCopy { bytes: incoming });
        }
        ops
    }

    /// The closed form gives every op the written-out ring has, in order,
    /// and nothing past its end (as an op and viewed): ring sizes, ranks, sizes that leave short
    /// and empty slices, both protocols, both placements.
    #[test]
    fn a_ring_in_closed_form_matches_it_written_out() {
        for n in [2, 3, 4, 8] {
            for size in [1u64, 16, 100, 4096, 43_008, 1 << 20, 3_000_017] {
                for slice in [Bytes(16), Bytes(1000), Bytes(16 << 10)] {
                    for ll in [false, true] {
                        for host in [false, true] {
                            for r in 0..n {
                                let own = if host {
                                    MemLoc::Host(NodeIdx(99))
                                } else {
                                    MemLoc::Device(NodeIdx(r as u32))
                                };
                                let next = if host {
                                    own
                                } else {
                                    MemLoc::Device(NodeIdx(((r + 1) % n) as u32))
                                };
                                let s = Bytes(size);
                                let want = written_out(r, n, s, slice, ll, own, next, host);
                                if want.len() > 20_000 {
                                    continue;
                                }
                                let ring = RingSteps::new(r, n, s, slice, ll, (own, next), host);
                                assert_eq!(ring.len(), want.len(), "n {n} size {size} r {r}");
                                for (i, op) in want.iter().enumerate() {
                                    assert_eq!(ring.op(i).as_ref(), Some(op), "op {i}");
                                    // viewed, its part on the stack: the same op
                                    let viewed = ring.with_op(i, |v| v.to_op());
                                    assert_eq!(viewed.as_ref(), Some(op), "op {i} viewed");
                                }
                                assert_eq!(ring.op(want.len()), None);
                                assert_eq!(ring.with_op(want.len(), |v| v.to_op()), None);
                            }
                        }
                    }
                }
            }
        }
    }
}
