//! The program each algorithm gives one rank (its loads, stores, flags
//! and barriers in order), on the context [`super::lower`] builds: one-shot
//! and two-shot, push and pull; the rings; hierarchical and island
//! two-shot over the groups of a switch or socket ([`groups`]); staged
//! push; the copy-engine ring.

use super::{Ctx, Loads, chunks};
use crate::program::{Access, Mover, Notify, Op, Phase, Program, Rank};
use crate::ring::RingSteps;
use contend_topo::{Bytes, NodeIdx, Topology};

// Exchange buffers are double-buffered (alternating parity per call, as in
// the kernels), so a rank may start the next call while a slow peer still
// reads this one: one-shot needs one barrier, two-shot two, none at the end.

pub(super) fn one_shot_pull(cx: &Ctx, r: usize, s: Bytes) -> Program {
    let mut p = Program {
        ring: None,
        ops: vec![Op::Launch],
    };
    let peers: Vec<usize> = cx.peers(r).collect();
    cx.stage(r, s, &mut p);
    cx.barrier(&peers, 0, &mut p);
    // sum_ranks: every peer's vector loaded, then added
    cx.fetch(&peers, |_| s, Loads::EveryPart, &mut p);
    p.ops.push(Op::Reduce {
        bytes: Bytes(2 * s.0),
    });
    p
}

pub(super) fn one_shot_push(cx: &Ctx, r: usize, s: Bytes) -> Program {
    let mut p = Program {
        ring: None,
        ops: vec![Op::Launch],
    };
    let peers: Vec<usize> = cx.peers(r).collect();
    // host placement: the reduce's sum_ranks loads every slot, then adds
    cx.push_exchange(r, &peers, |_| s, |_| s, Loads::EveryPart, 0, &mut p);
    let local = if cx.host() { 2 } else { cx.n() as u64 + 1 };
    p.ops.push(Op::Reduce {
        bytes: Bytes(local * s.0),
    });
    p
}

pub(super) fn two_shot_pull(cx: &Ctx, r: usize, s: Bytes) -> Program {
    let mut p = Program {
        ring: None,
        ops: vec![Op::Launch],
    };
    let peers: Vec<usize> = cx.peers(r).collect();
    let c = chunks(s, cx.n());
    // stage only the chunks the peers reduce (not my own)
    cx.stage(r, Bytes(s.0 - c[r].0), &mut p);
    cx.barrier(&peers, 0, &mut p);
    // reduce-scatter by sum_ranks; the all-gather copies one peer at a time
    cx.fetch(&peers, |_| c[r], Loads::EveryPart, &mut p);
    p.ops.push(Op::Reduce {
        bytes: Bytes(2 * c[r].0),
    });
    cx.stage(r, c[r], &mut p);
    cx.barrier(&peers, 1, &mut p);
    cx.fetch(&peers, |j| c[j], Loads::One, &mut p);
    p.ops.push(Op::LocalCopy { bytes: s });
    p
}

pub(super) fn two_shot_push(cx: &Ctx, r: usize, s: Bytes) -> Program {
    let mut p = Program {
        ring: None,
        ops: vec![Op::Launch],
    };
    let peers: Vec<usize> = cx.peers(r).collect();
    let c = chunks(s, cx.n());
    // reduce-scatter: chunk j of my input to rank j
    // host placement: the reduce loads every slot (sum_ranks), the final
    // copy-out one peer's chunk at a time
    cx.push_exchange(r, &peers, |j| c[j], |_| c[r], Loads::EveryPart, 0, &mut p);
    let local = if cx.host() { 2 } else { cx.n() as u64 + 1 };
    p.ops.push(Op::Reduce {
        bytes: Bytes(local * c[r].0),
    });
    // all-gather: my reduced chunk to every peer
    cx.push_exchange(r, &peers, |_| c[r], |j| c[j], Loads::One, 1, &mut p);
    p.ops.push(Op::LocalCopy { bytes: s });
    p
}

/// NCCL-style ring: 2(N-1) steps of one chunk each, every chunk cut into
/// slices that pipeline: a rank forwards slice j of step s as soon as slice j
/// of step s-1 has arrived. The steps are in closed form ([`RingSteps`]).
pub(super) fn ring(cx: &Ctx, r: usize, s: Bytes, slice: Bytes, ll: bool) -> Program {
    let next = (r + 1) % cx.n();
    Program {
        ops: vec![Op::Launch],
        ring: Some(RingSteps::new(
            r,
            cx.n(),
            s,
            slice,
            ll,
            (cx.buf(r), cx.buf(next)),
            cx.host(),
        )),
    }
}

/// Groups of ranks that share a PCIe switch, else a socket. `None` unless
/// there are two or more groups of equal size. Each group lists rank indices.
pub fn groups(topo: &Topology, gpus: &[NodeIdx]) -> Option<Vec<Vec<usize>>> {
    let key = |g: NodeIdx| -> Option<(u8, u32)> {
        if let Some(sw) = topo.parent_switch(g) {
            Some((0, sw.0))
        } else {
            topo.socket_of(g).map(|s| (1, s))
        }
    };
    let mut groups: Vec<((u8, u32), Vec<usize>)> = Vec::new();
    for (r, &g) in gpus.iter().enumerate() {
        let k = key(g)?;
        match groups.iter_mut().find(|(gk, _)| *gk == k) {
            Some((_, v)) => v.push(r),
            None => groups.push((k, vec![r])),
        }
    }
    let size = groups.first()?.1.len();
    (groups.len() >= 2 && groups.iter().all(|(_, v)| v.len() == size))
        .then(|| groups.into_iter().map(|(_, v)| v).collect())
}

/// Reduce inside the group by loads (one-shot among mates) into my gather
/// region, barrier with the same-position rank of every other group, then load
/// every group's sum — my own gather region included, which with host
/// placement is a load from host memory — and add them. With groups of one
/// (no switch or socket grouping) the first stage is only the publishing copy.
pub(super) fn hierarchical(cx: &Ctx, r: usize, s: Bytes, groups: &[Vec<usize>]) -> Program {
    let mut p = Program {
        ring: None,
        ops: vec![Op::Launch],
    };
    let Some((gi, pos)) = groups
        .iter()
        .enumerate()
        .find_map(|(gi, g)| g.iter().position(|&x| x == r).map(|pos| (gi, pos)))
    else {
        return one_shot_pull(cx, r, s);
    };
    let mates: Vec<usize> = groups[gi].iter().copied().filter(|&x| x != r).collect();
    let counterparts: Vec<usize> = groups
        .iter()
        .enumerate()
        .filter(|(g, _)| *g != gi)
        .map(|(_, g)| g[pos])
        .collect();
    if !mates.is_empty() {
        cx.stage(r, s, &mut p);
        cx.barrier(&mates, 0, &mut p);
        cx.fetch(&mates, |_| s, Loads::One, &mut p);
    }
    p.ops.push(Op::Reduce {
        bytes: Bytes(2 * s.0),
    });
    // publish the group sum in my gather region
    cx.stage(r, s, &mut p);
    cx.barrier(&counterparts, 1, &mut p);
    let mut inter = counterparts.clone();
    if cx.host() {
        inter.push(r);
    }
    cx.fetch(&inter, |_| s, Loads::One, &mut p);
    p.ops.push(Op::Reduce {
        bytes: Bytes(2 * s.0),
    });
    p
}

/// Island two-shot over `groups` (islands of equal size k, m of them): rank
/// r at position q of island g owns island chunk q (S/k). Reduce-scatter
/// inside the island by stores (chunk j of my input to the mate at position
/// j), then a two-shot push of chunk q among the m ranks at position q of
/// every island (sub-chunk h, S/(k·m), reduced by island h's rank), then the
/// all-gather inside the island. Per rank 2(k−1)/k·S inside the island and
/// 2(m−1)/m·S/k across islands. With islands of one (no switch or socket
/// grouping) the island stages vanish: a plain two-shot push.
pub(super) fn island_two_shot(cx: &Ctx, r: usize, s: Bytes, groups: &[Vec<usize>]) -> Program {
    let mut p = Program {
        ring: None,
        ops: vec![Op::Launch],
    };
    let Some((gi, pos)) = groups
        .iter()
        .enumerate()
        .find_map(|(gi, g)| g.iter().position(|&x| x == r).map(|pos| (gi, pos)))
    else {
        return two_shot_push(cx, r, s);
    };
    let island = &groups[gi];
    let (k, m) = (island.len(), groups.len());
    let position = |j: usize| island.iter().position(|&x| x == j).unwrap_or(0);
    let mates: Vec<usize> = island.iter().copied().filter(|&x| x != r).collect();
    // the same-position rank of every other island, and its island index
    let counterparts: Vec<usize> = groups
        .iter()
        .enumerate()
        .filter(|(h, _)| *h != gi)
        .map(|(_, g)| g[pos])
        .collect();
    let island_of = |j: usize| groups.iter().position(|g| g.contains(&j)).unwrap_or(0);
    let c = chunks(s, k);
    let d = chunks(c[pos], m);
    let local = |ranks: usize| if cx.host() { 2 } else { ranks as u64 + 1 };
    if !mates.is_empty() {
        cx.push_exchange(
            r,
            &mates,
            |j| c[position(j)],
            |_| c[pos],
            Loads::One,
            0,
            &mut p,
        );
        p.ops.push(Op::Reduce {
            bytes: Bytes(local(k) * c[pos].0),
        });
    }
    if !counterparts.is_empty() {
        cx.push_exchange(
            r,
            &counterparts,
            |j| d[island_of(j)],
            |_| d[gi],
            Loads::One,
            1,
            &mut p,
        );
        p.ops.push(Op::Reduce {
            bytes: Bytes(local(m) * d[gi].0),
        });
        cx.push_exchange(
            r,
            &counterparts,
            |_| d[gi],
            |j| d[island_of(j)],
            Loads::One,
            2,
            &mut p,
        );
    }
    if !mates.is_empty() {
        cx.push_exchange(
            r,
            &mates,
            |_| c[pos],
            |j| c[position(j)],
            Loads::One,
            3,
            &mut p,
        );
    }
    p.ops.push(Op::LocalCopy { bytes: s });
    p
}

/// Staged push (FlashInfer's PCIe-IPC `ipc_rsag_ring_push_param_kernel`):
/// two-shot push with each push phase cut into N−1 rounds; in round p every
/// rank stores only into rank (r + 1 + p) mod N — a permutation, so each GPU
/// has one outbound and one inbound stream — and a barrier of all ranks
/// after each round keeps them in the same round. The same bytes as
/// two-shot push, 2(N−1) barriers instead of two.
pub(super) fn staged_push(cx: &Ctx, r: usize, s: Bytes) -> Program {
    let mut p = Program {
        ring: None,
        ops: vec![Op::Launch],
    };
    let n = cx.n();
    let peers: Vec<usize> = cx.peers(r).collect();
    let c = chunks(s, n);
    let store = |to: usize, bytes: Bytes, p: &mut Program| {
        p.ops.push(Op::Post {
            parts: vec![(
                Access {
                    mem: cx.buf(to),
                    bytes,
                },
                Notify::None,
            )],
            mover: Mover::Sm,
        });
    };
    // reduce-scatter: chunk t of my input to rank t, one target per round
    for round in 0..n - 1 {
        let t = (r + 1 + round) % n;
        store(t, c[t], &mut p);
        cx.barrier(&peers, round as u32, &mut p);
    }
    cx.fetch_pushed(r, peers.iter().map(|_| c[r]), Loads::EveryPart, &mut p);
    let local = if cx.host() { 2 } else { n as u64 + 1 };
    p.ops.push(Op::Reduce {
        bytes: Bytes(local * c[r].0),
    });
    // all-gather: my reduced chunk to one target per round
    for round in 0..n - 1 {
        let t = (r + 1 + round) % n;
        store(t, c[r], &mut p);
        cx.barrier(&peers, (n - 1 + round) as u32, &mut p);
    }
    cx.fetch_pushed(r, peers.iter().map(|&j| c[j]), Loads::One, &mut p);
    p.ops.push(Op::LocalCopy { bytes: s });
    p
}

/// Copy-engine ring: a ring reduce-scatter then all-gather in 2(N−1) steps
/// whose chunks the copy engine moves into the next rank's memory (its
/// exchange slot while reducing, its output while gathering). After each
/// copy the rank launches a small kernel that flags the copy to the next
/// rank, waits for the previous rank's flag of the same step and, while
/// reducing, adds the received chunk to its input into its output. The
/// copy engine costs its setup per transfer; the SMs touch local memory only
/// (with host placement they load what arrived in host memory).
pub(super) fn ce_ring(cx: &Ctx, r: usize, s: Bytes) -> Program {
    let n = cx.n();
    let next = (r + 1) % n;
    let c = chunks(s, n);
    let chunk = |back: usize| c[(r + 2 * n - back) % n];
    let mut p = Program::default();
    let step = |p: &mut Program, send: Bytes, phase: usize| {
        p.ops.push(Op::Post {
            parts: vec![(
                Access {
                    mem: cx.buf(next),
                    bytes: send,
                },
                Notify::None,
            )],
            mover: Mover::CopyEngine,
        });
        p.ops.push(Op::Launch);
        p.ops.push(Op::Fence);
        p.ops.push(Op::Signal {
            to: vec![Rank(next as u32)],
            phase: Phase(phase as u32),
        });
        p.ops.push(Op::Wait {
            phase: Phase(phase as u32),
            count: 1,
        });
        p.ops.push(Op::Fence);
    };
    // reduce-scatter: step t sends chunk r − t, receives chunk r − t − 1
    for t in 0..n - 1 {
        step(&mut p, chunk(t), t);
        let recv = chunk(t + 1);
        cx.fetch_pushed(r, std::iter::once(recv), Loads::One, &mut p);
        let local = if cx.host() { 2 } else { 3 };
        p.ops.push(Op::Reduce {
            bytes: Bytes(local * recv.0),
        });
    }
    // all-gather: step t sends chunk r + 1 − t, receives chunk r − t
    for t in 0..n - 1 {
        step(&mut p, c[(r + 1 + n - t) % n], n - 1 + t);
        if cx.host() {
            let recv = chunk(t);
            cx.fetch_pushed(r, std::iter::once(recv), Loads::One, &mut p);
            p.ops.push(Op::LocalCopy { bytes: recv });
        }
    }
    p
}
