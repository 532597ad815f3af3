//! Invariants of the lowering, for every algorithm, rank count and size.

use contend_topo::{Bytes, Topology, shipped};
use contend_workload::{
    Access, Algorithm, Collective, LowerConfig, MemLoc, Mover, Notify, Op, PackedProgram,
    Placement, chunk_of, chunks, groups, lower,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Every shipped topology, parsed.
fn shipped_topologies() -> Vec<(&'static str, Topology)> {
    shipped::SHIPPED
        .iter()
        .map(|(name, _)| (*name, shipped::get(name).unwrap().unwrap()))
        .collect()
}

/// Flags sent to (rank, phase) and flags awaited at (rank, phase).
type FlagCounts = BTreeMap<(u32, u32), u32>;

fn flag_counts(c: &Collective) -> (FlagCounts, FlagCounts) {
    let mut sent = FlagCounts::new();
    let mut awaited = FlagCounts::new();
    for (r, p) in c.programs.iter().enumerate() {
        for op in p.iter() {
            let op = &*op;
            match op {
                Op::Signal { to, phase } => {
                    for to in to {
                        *sent.entry((to.0, phase.0)).or_default() += 1;
                    }
                }
                Op::Post { parts, .. } | Op::Stream { post: parts, .. } => {
                    for (_, nfy) in parts {
                        if let Notify::After { to, phase } | Notify::Inline { to, phase } = nfy {
                            *sent.entry((to.0, phase.0)).or_default() += 1;
                        }
                    }
                }
                Op::Wait { phase, count } => {
                    *awaited.entry((r as u32, phase.0)).or_default() += count
                }
                _ => {}
            }
        }
    }
    (sent, awaited)
}

/// Island two-shot's textbook volume per rank: 2(k−1)/k·S inside an island of
/// k, 2(m−1)/m·S/k across m islands (islands of one without groups).
fn island_volume(topo: &Topology, gpus: &[contend_topo::NodeIdx], s: f64) -> f64 {
    let n = gpus.len();
    let (k, m) = match groups(topo, gpus) {
        Some(g) => (g[0].len() as f64, g.len() as f64),
        None => (1.0, n as f64),
    };
    2.0 * (k - 1.0) / k * s + 2.0 * (m - 1.0) / m * s / k
}

proptest! {
    /// Every flag a program waits for is sent exactly as many times as it is
    /// awaited (no deadlock, no stray flag), on every shipped topology, and
    /// the bytes each rank moves match the algorithm's textbook volume.
    #[test]
    fn flags_balance_and_volumes_match(
        alg in proptest::sample::select(Algorithm::ALL.to_vec()),
        topo_i in 0usize..shipped::SHIPPED.len(),
        n in 2usize..=8,
        size in 16u64..(4 << 20),
        host in any::<bool>(),
    ) {
        let (_, topo) = &shipped_topologies()[topo_i];
        let all = topo.gpus();
        prop_assume!(all.len() >= 2);
        let n = n.min(all.len());
        let gpus: Vec<_> = all.into_iter().take(n).collect();
        let placement = if host { Placement::Host } else { Placement::Peer };
        let plan = contend_nccl::plan(topo, &gpus, &Default::default(), Default::default()).unwrap();
        let cfg = LowerConfig { nccl: Some(&plan), ..LowerConfig::default() };
        let c = lower(alg, topo, &gpus, placement, Bytes(size), &cfg).unwrap();
        if alg == Algorithm::Nccl {
            // one program per rank and channel the call uses (ring), or
            // per rank, channel and tree half
            let s = plan.schedule(Bytes(size), cfg.elem).unwrap();
            prop_assert!(c.programs.len() >= n * s.parts.len());
            prop_assert_eq!(c.programs.len(), c.rank_of.len());
            prop_assert!((0..n).all(|r| c.rank_of.contains(&r)));
            let (sent, awaited) = flag_counts(&c);
            for (k, want) in &awaited {
                prop_assert!(sent.get(k).copied().unwrap_or(0) >= *want, "{k:?} awaited {want}, sent {:?}", sent.get(k));
                // data flags (even phases) are sent exactly as often as awaited
                if k.1 % 2 == 0 {
                    prop_assert_eq!(sent.get(k).copied().unwrap_or(0), *want, "{:?}", k);
                }
            }
            for p in &c.programs {
                prop_assert_eq!(p.ops.first(), Some(&Op::Launch));
            }
            return Ok(());
        }
        prop_assert_eq!(c.programs.len(), n);
        for p in &c.programs {
            // a kernel launch first; the copy-engine ring starts with its first copy
            let first_ok = match alg {
                Algorithm::CeRing => matches!(
                    p.ops.first(),
                    Some(Op::Post { mover: Mover::CopyEngine, .. })
                ),
                _ => p.ops.first() == Some(&Op::Launch),
            };
            prop_assert!(first_ok, "{alg}: {:?}", p.ops.first());
        }
        let (sent, awaited) = flag_counts(&c);
        prop_assert_eq!(&sent, &awaited);
        // volume moved over links by rank 0 (peer placement: loads + stores)
        if !host {
            let v = c.programs[0].link_bytes().0 as f64;
            let s = size as f64;
            let nn = n as f64;
            let expect = match alg {
                Algorithm::OneShotPull | Algorithm::OneShotPush => (nn - 1.0) * s,
                Algorithm::TwoShotPull
                | Algorithm::TwoShotPush
                | Algorithm::TwoShotPushFp32Acc
                | Algorithm::StagedPush
                | Algorithm::CeRing
                | Algorithm::RingSimple => 2.0 * (nn - 1.0) / nn * s,
                Algorithm::RingLl => 4.0 * (nn - 1.0) / nn * s, // flags double the bytes
                Algorithm::IslandTwoShot => island_volume(topo, &gpus, s),
                Algorithm::Hierarchical => v, // depends on the grouping; checked below
                Algorithm::Nccl => v, // returned above; tests/nccl.rs checks its volumes
            };
            // chunks are 16-byte aligned: allow that rounding
            prop_assert!((v - expect).abs() <= 2.0 * 16.0 * nn * 2.0 + 0.02 * expect, "{alg}: {v} vs {expect}");
        }
    }

    /// Every lowered program, packed for running with the collective's
    /// others, gives every op (its
    /// ring's too) as the program gives it, and none past its end.
    #[test]
    fn packed_programs_give_the_programs_ops(
        alg in proptest::sample::select(Algorithm::ALL.to_vec()),
        topo_i in 0usize..shipped::SHIPPED.len(),
        n in 2usize..=8,
        size in prop_oneof![16u64..(4 << 20), (64u64 << 20)..(1 << 30)],
        host in any::<bool>(),
    ) {
        let (_, topo) = &shipped_topologies()[topo_i];
        let all = topo.gpus();
        prop_assume!(all.len() >= 2);
        let gpus: Vec<_> = all.into_iter().take(n).collect();
        let placement = if host { Placement::Host } else { Placement::Peer };
        let plan = contend_nccl::plan(topo, &gpus, &Default::default(), Default::default()).unwrap();
        let cfg = LowerConfig { nccl: Some(&plan), ..LowerConfig::default() };
        let c = lower(alg, topo, &gpus, placement, Bytes(size), &cfg).unwrap();
        // (packed together, op-major, as the simulator packs a collective's)
        let all = PackedProgram::pack_all(c.programs.clone());
        for (p, packed) in c.programs.into_iter().zip(all) {
            prop_assert_eq!(packed.len(), p.len());
            // (a ring of millions of slices: its first and last ops)
            let len = p.len();
            let some = (0..len.min(2000)).chain(len.saturating_sub(2000).max(2000)..len);
            for i in some {
                let want = p.op(i).unwrap();
                let got = packed.with_op(i, |v| v.to_op());
                prop_assert_eq!(got.as_ref(), Some(&*want), "{} op {}", alg, i);
            }
            prop_assert_eq!(packed.with_op(len, |v| v.to_op()), None);
        }
    }

    #[test]
    fn chunks_cover_the_size_in_16_byte_units(size in 0u64..(1 << 24), n in 1usize..16) {
        let c = chunks(Bytes(size), n);
        prop_assert_eq!(c.len(), n);
        prop_assert_eq!(c.iter().map(|b| b.0).sum::<u64>(), size);
        for b in &c[..n - 1] {
            prop_assert_eq!(b.0 % 16, 0);
        }
    }

    /// `chunk_of` (O(1), what the rings use per slice) is `chunks` (the
    /// reference) chunk by chunk.
    #[test]
    fn chunk_of_is_chunks_one_at_a_time(size in 0u64..(1 << 40), n in 1usize..5000) {
        let c = chunks(Bytes(size), n);
        // every index asked is a chunk (`1` is past the end when n = 1)
        for i in [0, 1, n / 2, n.saturating_sub(2), n - 1].into_iter().filter(|&i| i < n) {
            prop_assert_eq!(chunk_of(Bytes(size), n, i), c[i]);
        }
    }
}

/// Hierarchical on two sockets: each rank loads its 3 socket mates' inputs and
/// one counterpart's partial sum from the other socket — (4 − 1 + 1) · S —
/// instead of one-shot's 7 · S, and only S of it crosses sockets.
#[test]
fn hierarchical_reduces_inside_the_socket_first() {
    let topo = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
    let s = 43008;
    let c = lower(
        Algorithm::Hierarchical,
        &topo,
        &topo.gpus(),
        Placement::Peer,
        Bytes(s),
        &LowerConfig::default(),
    )
    .unwrap();
    assert!(c.note.is_none());
    assert_eq!(c.programs[0].link_bytes().0, 4 * s);
    // with one socket there are no groups: it says so and runs one-shot
    let one = shipped::get("pro6000-4x-1socket").unwrap().unwrap();
    let c = lower(
        Algorithm::Hierarchical,
        &one,
        &one.gpus(),
        Placement::Peer,
        Bytes(s),
        &LowerConfig::default(),
    )
    .unwrap();
    assert!(c.note.is_some());
    assert_eq!(c.programs[0].link_bytes().0, 3 * s);
}

/// The rank whose exchange memory `a` is (peer placement: its device).
fn owner(gpus: &[contend_topo::NodeIdx], a: &Access) -> usize {
    match a.mem {
        MemLoc::Device(g) => gpus.iter().position(|x| *x == g).expect("a rank's memory"),
        MemLoc::Host(_) => panic!("peer placement stores into device memory"),
    }
}

/// Island two-shot at the EAGLE-3 size on the 8-GPU PRO 6000 machines
/// (islands of 4: two sockets, or two switches): 2·3/4·S inside the island
/// and 2·1/2·S/4 across, 7S/4 in all — where hierarchical moves 4S and
/// one-shot 7S. Without islands (one socket) it is two-shot push, and says so.
#[test]
fn island_two_shot_moves_the_textbook_bytes_inside_and_across_islands() {
    let s = 43_008u64;
    for name in ["pro6000-8x-2socket", "pro6000-8x-2switch"] {
        let topo = shipped::get(name).unwrap().unwrap();
        let gpus = topo.gpus();
        let g = groups(&topo, &gpus).expect("two islands of four");
        assert_eq!((g.len(), g[0].len()), (2, 4), "{name}");
        let c = lower(
            Algorithm::IslandTwoShot,
            &topo,
            &gpus,
            Placement::Peer,
            Bytes(s),
            &LowerConfig::default(),
        )
        .unwrap();
        assert!(c.note.is_none());
        for (r, p) in c.programs.iter().enumerate() {
            let island: &Vec<usize> = g.iter().find(|i| i.contains(&r)).unwrap();
            let (mut inside, mut across) = (0, 0);
            for op in p.iter() {
                let op = &*op;
                if let Op::Post { parts, mover } = op {
                    assert_eq!(*mover, Mover::Sm);
                    for (a, _) in parts {
                        if island.contains(&owner(&gpus, a)) {
                            inside += a.bytes.0;
                        } else {
                            across += a.bytes.0;
                        }
                    }
                }
            }
            assert_eq!(inside, 2 * 3 * s / 4, "{name} rank {r} inside");
            assert_eq!(across, 2 * s / 2 / 4, "{name} rank {r} across");
            assert_eq!(p.link_bytes().0, 7 * s / 4);
        }
    }
    let one = shipped::get("pro6000-4x-1socket").unwrap().unwrap();
    let c = lower(
        Algorithm::IslandTwoShot,
        &one,
        &one.gpus(),
        Placement::Peer,
        Bytes(s),
        &LowerConfig::default(),
    )
    .unwrap();
    let note = c.note.expect("a note when there are no islands");
    assert!(note.contains("plain two-shot"), "{note}");
    assert_eq!(c.programs[0].link_bytes().0, 2 * 3 * s / 4);
}

/// Staged push: every data store of a round goes to one peer, the targets of
/// a round are a permutation (one inbound stream per rank), and a barrier
/// separates the rounds — for 2 to 8 ranks on every shipped topology.
#[test]
fn staged_push_has_one_outbound_and_one_inbound_transfer_per_rank_per_round() {
    for (name, topo) in shipped_topologies() {
        let all = topo.gpus();
        for n in 2..=all.len().min(8) {
            let gpus: Vec<_> = all.iter().copied().take(n).collect();
            let c = lower(
                Algorithm::StagedPush,
                &topo,
                &gpus,
                Placement::Peer,
                Bytes(1 << 20),
                &LowerConfig::default(),
            )
            .unwrap();
            // per rank: the target of each round's store
            let rounds: Vec<Vec<usize>> = c
                .programs
                .iter()
                .map(|p| {
                    let mut targets = vec![];
                    let mut waited = true;
                    for op in p.iter() {
                        let op = &*op;
                        match op {
                            Op::Post { parts, .. } => {
                                assert_eq!(parts.len(), 1, "{name} n={n}: one store per round");
                                assert!(waited, "{name} n={n}: two rounds without a barrier");
                                targets.push(owner(&gpus, &parts[0].0));
                                waited = false;
                            }
                            Op::Wait { .. } => waited = true,
                            Op::Fetch { .. } => panic!("{name}: staged push only stores"),
                            _ => {}
                        }
                    }
                    targets
                })
                .collect();
            for (r, t) in rounds.iter().enumerate() {
                assert_eq!(t.len(), 2 * (n - 1), "{name} n={n} rank {r}");
                for (k, &to) in t.iter().enumerate() {
                    assert_eq!(
                        to,
                        (r + 1 + k % (n - 1)) % n,
                        "{name} n={n} rank {r} round {k}"
                    );
                }
            }
            for k in 0..2 * (n - 1) {
                let mut inbound = vec![0; n];
                for t in &rounds {
                    inbound[t[k]] += 1;
                }
                assert!(
                    inbound.iter().all(|&x| x == 1),
                    "{name} n={n} round {k}: {inbound:?}"
                );
            }
        }
    }
}

/// The copy-engine ring: every byte that crosses a link is a copy-engine
/// store into the next rank, 2(N−1)/N·S per rank in 2(N−1) copies; the SMs
/// only reduce locally.
#[test]
fn ce_ring_moves_everything_by_copy_engine_to_the_next_rank() {
    let topo = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
    let gpus = topo.gpus();
    let s = 4u64 << 20;
    for n in 2..=8 {
        let c = lower(
            Algorithm::CeRing,
            &topo,
            &gpus[..n],
            Placement::Peer,
            Bytes(s),
            &LowerConfig::default(),
        )
        .unwrap();
        for (r, p) in c.programs.iter().enumerate() {
            let mut copies = 0u64;
            for op in p.iter() {
                let op = &*op;
                match op {
                    Op::Post { parts, mover } => {
                        assert_eq!(*mover, Mover::CopyEngine);
                        assert_eq!(parts.len(), 1);
                        assert_eq!(owner(&gpus, &parts[0].0), (r + 1) % n);
                        copies += 1;
                    }
                    Op::Fetch { .. } => panic!("peer placement: the SMs load nothing remote"),
                    _ => {}
                }
            }
            assert_eq!(copies, 2 * (n as u64 - 1));
            // 16-byte chunks: within a vector per copy of the exact share
            let want = 2 * (n as u64 - 1) * s / n as u64;
            let got = p.link_bytes().0;
            assert!(got.abs_diff(want) <= 16 * copies, "n={n}: {got} vs {want}");
        }
    }
}
