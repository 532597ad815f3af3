//! The grid an allreduce kernel is launched with, defined once for the
//! hardware backend (which launches it) and the simulator (which should
//! model the blocks that really run).
//!
//! Every custom kernel walks its data in 16-byte vectors, one per thread per
//! step of a grid-stride loop, so a block of `threads` threads covers
//! `threads` vectors per step. The grid is the configured block count, or
//! fewer when one step of fewer blocks already covers the kernel's largest
//! loop (the same on every rank, since every rank runs the same partition).

use crate::kinds::Algorithm;
use crate::scenario::KernelConfig;
use contend_topo::Bytes;

/// Most blocks an allreduce kernel is launched with: the kernels' flag area
/// has one flag per block (contend-hw's `MAX_BLOCKS` is this constant).
pub const FLAG_BLOCKS: u32 = 1024;

/// 16-byte vectors of the largest per-rank loop of `algorithm`'s kernel for
/// an allreduce of `bytes` over `ranks` ranks in islands of `island` ranks
/// (`island` matters to the island kernel only; 1 when there are none).
///
/// - one-shot pull/push, hierarchical: the whole message;
/// - two-shot pull/push (and its fp32-accumulate variant), staged push, the
///   copy-engine ring's reduce kernels: one rank's chunk, 1/N of it;
/// - island two-shot: one rank's island chunk, 1/k of it (1/N with islands
///   of one rank, where it is a plain two-shot push);
/// - the NCCL rings and `nccl`: the whole message (NCCL picks its own grid).
pub fn kernel_work(algorithm: Algorithm, ranks: usize, island: usize, bytes: Bytes) -> u64 {
    let nvec = bytes.0 / 16;
    let n = ranks.max(1) as u64;
    match algorithm {
        Algorithm::TwoShotPull
        | Algorithm::TwoShotPush
        | Algorithm::TwoShotPushFp32Acc
        | Algorithm::StagedPush
        | Algorithm::CeRing => nvec.div_ceil(n),
        // islands of one: the cross-island stage is a plain two-shot push
        Algorithm::IslandTwoShot if island <= 1 => nvec.div_ceil(n),
        Algorithm::IslandTwoShot => nvec.div_ceil(island.min(ranks.max(1)) as u64),
        Algorithm::OneShotPull
        | Algorithm::OneShotPush
        | Algorithm::Hierarchical
        | Algorithm::RingLl
        | Algorithm::RingSimple
        | Algorithm::Nccl => nvec,
    }
}

/// Blocks launched for one allreduce: `kernel.blocks`, or fewer when there is
/// less work than one vector per thread per block
/// (`ceil(work / threads)`, at least 1), never more than [`FLAG_BLOCKS`].
pub fn launch_grid(
    algorithm: Algorithm,
    ranks: usize,
    island: usize,
    bytes: Bytes,
    kernel: KernelConfig,
) -> u32 {
    let work = kernel_work(algorithm, ranks, island, bytes);
    let need = work.div_ceil(u64::from(kernel.threads.max(1))).max(1);
    need.min(u64::from(kernel.blocks))
        .min(u64::from(FLAG_BLOCKS)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(blocks: u32, threads: u32) -> KernelConfig {
        KernelConfig { blocks, threads }
    }

    #[test]
    fn the_grid_follows_the_largest_loop_and_the_limits() {
        let mib4 = Bytes(4 << 20);
        // 4 MiB = 262144 vectors: one-shot needs 512 blocks of 512
        assert_eq!(
            launch_grid(Algorithm::OneShotPull, 8, 1, mib4, k(132, 512)),
            132
        );
        assert_eq!(
            launch_grid(Algorithm::OneShotPull, 8, 1, mib4, k(2048, 512)),
            512
        );
        // two-shot and its relatives: 1/8 of it
        for a in [
            Algorithm::TwoShotPull,
            Algorithm::TwoShotPush,
            Algorithm::TwoShotPushFp32Acc,
            Algorithm::StagedPush,
            Algorithm::CeRing,
        ] {
            assert_eq!(launch_grid(a, 8, 1, mib4, k(2048, 512)), 64, "{a}");
        }
        // island two-shot: 1/k, k = 4 ranks per island
        assert_eq!(
            launch_grid(Algorithm::IslandTwoShot, 8, 4, mib4, k(2048, 512)),
            128
        );
        // islands of one rank: a plain two-shot push
        assert_eq!(
            launch_grid(Algorithm::IslandTwoShot, 8, 1, mib4, k(2048, 512)),
            64
        );
        // small messages: one block; never zero
        assert_eq!(
            launch_grid(Algorithm::TwoShotPush, 8, 1, Bytes(1024), k(132, 512)),
            1
        );
        assert_eq!(
            launch_grid(Algorithm::OneShotPush, 2, 1, Bytes(0), k(132, 512)),
            1
        );
        // 43,008 B = 2688 vectors: 6 blocks of 512 for one-shot, 1 for two-shot over 8
        assert_eq!(
            launch_grid(Algorithm::OneShotPush, 8, 1, Bytes(43_008), k(132, 512)),
            6
        );
        assert_eq!(
            launch_grid(Algorithm::TwoShotPush, 8, 1, Bytes(43_008), k(132, 512)),
            1
        );
        // the flag area's bound
        assert_eq!(
            launch_grid(Algorithm::OneShotPull, 2, 1, Bytes(1 << 30), k(65_536, 32)),
            FLAG_BLOCKS
        );
    }
}
