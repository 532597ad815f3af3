//! What one AllReduce call runs: the channels it spreads over and the
//! elements each carries (`scheduleCollTasksToPlan`, `src/enqueue.cc`), the
//! chunk each channel moves per primitive call (`calcCollChunking`, same
//! file), the ring's loops over chunks (`runRing`, `src/device/all_reduce.h`)
//! and the tree's chunks and thread split (`runTreeSplit`, same file), all
//! at v2.28.9-1 and unchanged at v2.27.7-1 and v2.29.7-1 for AllReduce in
//! one node. The protocols' framing and stepping are in [`crate::protocol`].
//!
//! Sizes are bytes here (NCCL counts elements): a count of `c` elements of
//! `e` bytes is `c · e` bytes.

use crate::plan::{Buffers, NcclPlan};
use crate::protocol::{self, NCCL_STEPS};
use crate::tuning::{Algorithm, Protocol, SizeChoice};
use contend_topo::{Bytes, Picos};
use serde::Serialize;

/// `MinTrafficPerChannel` (`scheduleCollTasksToPlan`, `src/enqueue.cc`
/// v2.28.9-1): 16 KiB of traffic at least per channel.
const MIN_TRAFFIC_PER_CHANNEL: u64 = 16 << 10;
/// `ncclFuncTrafficPerByte` for AllReduce (`src/enqueue.cc` v2.28.9-1): 2.
const ALLREDUCE_TRAFFIC_PER_BYTE: u64 = 2;
/// `ALLREDUCE_CHUNKSTEPS` = `NCCL_STEPS/2` (`src/include/collectives.h`
/// v2.28.9-1): a ring Simple chunk is four steps of the buffer.
pub const ALLREDUCE_CHUNKSTEPS: u64 = NCCL_STEPS / 2;
/// `ALLREDUCE_SLICESTEPS` = `NCCL_STEPS/4` (same file): two steps per slice,
/// so two slices per chunk.
pub const ALLREDUCE_SLICESTEPS: u64 = NCCL_STEPS / 4;

/// The channels a lone AllReduce of `bytes` (elements of `elem` bytes)
/// uses, as `scheduleCollTasksToPlan` spreads it (`src/enqueue.cc`
/// v2.28.9-1): traffic of two bytes per byte (×4 more for LL) in cells of
/// 16 KiB of traffic, each channel filled up to the call's traffic over its
/// channel count. Returns the first channel and the bytes each channel
/// from it carries (empty when the call has no element).
pub fn channel_counts(
    bytes: Bytes,
    elem: Bytes,
    task_channels: usize,
    comm_channels: usize,
    p: Protocol,
) -> (usize, Vec<Bytes>) {
    let elem = elem.0.max(1);
    let count = bytes.0 / elem;
    if count == 0 {
        return (0, vec![]);
    }
    let n_max = comm_channels.max(1) as u64;
    // the call alone in its plan: its traffic over its channels
    let traffic_bytes = MIN_TRAFFIC_PER_CHANNEL.max(count * elem * ALLREDUCE_TRAFFIC_PER_BYTE);
    let kind_channels = (task_channels as u64).clamp(1, n_max);
    let per_channel = MIN_TRAFFIC_PER_CHANNEL.max(traffic_bytes / kind_channels);
    let mut channel_id: u64 = 0;
    let current: u64 = 0;
    let mut tpb = ALLREDUCE_TRAFFIC_PER_BYTE;
    if p == Protocol::Ll {
        tpb *= 4;
    }
    let cell = MIN_TRAFFIC_PER_CHANNEL.div_ceil(tpb).div_ceil(16) * 16;
    let per_cell = cell / elem;
    if per_cell == 0 {
        return (0, vec![]);
    }
    let cells = (count * elem).div_ceil(cell);
    let traffic_per_cell = cell * tpb;
    let mut cells_per_channel = cells.min(per_channel.div_ceil(traffic_per_cell));
    let mut cells_lo = if channel_id + 1 == n_max {
        cells
    } else {
        cells.min((per_channel - current).div_ceil(traffic_per_cell))
    };
    let mut n_mid = (cells - cells_lo) / cells_per_channel.max(1);
    let mut cells_hi = (cells - cells_lo) % cells_per_channel.max(1);
    let n_ch = u64::from(cells_lo != 0) + n_mid + u64::from(cells_hi != 0);
    if n_max < channel_id + n_ch {
        n_mid = n_max.saturating_sub(channel_id + 2);
        cells_per_channel = (cells - cells_lo) / (n_mid + 1);
        cells_hi = cells_per_channel + (cells - cells_lo) % (n_mid + 1);
    }
    if cells_hi == 0 && n_mid != 0 {
        cells_hi = cells_per_channel;
        n_mid -= 1;
    }
    if cells_lo == 0 {
        channel_id += 1;
        if n_mid == 0 {
            cells_lo = cells_hi;
            cells_hi = 0;
        } else {
            cells_lo = cells_per_channel;
            n_mid -= 1;
        }
    }
    let count_mid = if n_mid != 0 {
        cells_per_channel * per_cell
    } else {
        0
    };
    let mut count_lo = cells_lo * per_cell;
    let mut count_hi = cells_hi * per_cell;
    let excess = cells * per_cell - count;
    if count_hi != 0 {
        count_hi -= excess;
    } else {
        count_lo -= excess;
    }
    let mut counts = Vec::new();
    if count_lo != 0 {
        counts.push(count_lo);
    }
    counts.extend(std::iter::repeat_n(count_mid, n_mid as usize));
    if cells_hi != 0 {
        counts.push(count_hi);
    }
    if counts.is_empty() {
        counts.push(count_lo);
    }
    (
        channel_id as usize,
        counts.into_iter().map(|c| Bytes(c * elem)).collect(),
    )
}

/// The chunk one primitive call moves on a channel carrying `part` bytes
/// (`calcCollChunking`, `src/enqueue.cc` v2.28.9-1, called per channel
/// with one channel): a buffer step (`buffer / NCCL_STEPS`), four of them
/// for ring Simple, half of it for LL (flags), 15/16 of it for LL128; a
/// Tree LL128 chunk halves while the channel has too few chunks; rounded
/// down to the protocol's grain.
pub fn chunk_bytes(
    algorithm: Algorithm,
    protocol: Protocol,
    buffers: &Buffers,
    part: Bytes,
    n_ranks: usize,
) -> Bytes {
    let buff = match protocol {
        Protocol::Ll => buffers.ll,
        Protocol::Ll128 => buffers.ll128,
        Protocol::Simple => buffers.simple,
    };
    let step = buff.0 / NCCL_STEPS;
    let chunk_steps = if protocol == Protocol::Simple && algorithm == Algorithm::Ring {
        ALLREDUCE_CHUNKSTEPS
    } else {
        1
    };
    let mut chunk = step * chunk_steps;
    match protocol {
        Protocol::Ll => chunk /= 2,
        Protocol::Ll128 => {
            chunk = chunk / protocol::LL128_LINE_ELEMS * protocol::LL128_DATA_ELEMS;
        }
        Protocol::Simple => {}
    }
    if algorithm == Algorithm::Tree && protocol == Protocol::Ll128 {
        // one node: nNodes 1, ppn = nRanks, nstepsLL128 = 1 + 0.1 ppn
        let ppn = n_ranks.max(1) as f64;
        let nsteps = 1.0 + 0.1 * ppn;
        let per = |c: u64| (part.0 / c.max(1)) as f64;
        while per(chunk) < nsteps * 64.0 / ppn && chunk > 131_072 {
            chunk /= 2;
        }
        while per(chunk) < nsteps * 16.0 / ppn && chunk > 32_768 {
            chunk /= 2;
        }
    }
    let grain = protocol::grain(protocol).0;
    Bytes((chunk / grain * grain).max(grain))
}

/// One channel's share of a call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChannelPart {
    /// The communicator channel (its ring order and tree in
    /// [`crate::Channels`]).
    pub channel: usize,
    /// Bytes this channel reduces.
    pub bytes: Bytes,
    /// Bytes per primitive call ([`chunk_bytes`]).
    pub chunk: Bytes,
}

/// What one AllReduce call runs, decided by NCCL.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallSchedule {
    pub bytes: Bytes,
    pub elem: Bytes,
    pub choice: SizeChoice,
    /// The channels used, first to last.
    pub parts: Vec<ChannelPart>,
    /// NCCL's per-step hardware latency for the chosen algorithm and
    /// protocol on the graph's link type (`hwLat`, `src/graph/tuning.cc`).
    pub step_latency: Picos,
    pub n_ranks: usize,
}

impl NcclPlan {
    /// What NCCL runs for one AllReduce of `bytes` in elements of `elem`
    /// bytes; `None` with one rank (no algorithm).
    pub fn schedule(&self, bytes: Bytes, elem: Bytes) -> Option<CallSchedule> {
        let choice = self.choose_with(bytes, elem)?;
        let (lo, counts) = channel_counts(
            bytes,
            elem,
            choice.max_channels,
            self.channels.n_channels,
            choice.protocol,
        );
        let n = self.ranks.len();
        let parts = counts
            .into_iter()
            .enumerate()
            .map(|(i, b)| ChannelPart {
                channel: (lo + i).min(self.channels.n_channels.saturating_sub(1)),
                bytes: b,
                chunk: chunk_bytes(choice.algorithm, choice.protocol, &self.buffers, b, n),
            })
            .collect();
        let step_latency = self
            .model
            .entry(choice.algorithm, choice.protocol)
            .map_or(Picos::ZERO, |e| e.step_latency());
        Some(CallSchedule {
            bytes,
            elem,
            choice,
            parts,
            step_latency,
            n_ranks: n,
        })
    }
}

/// The ring's loops over one channel's `part` (`runRing`,
/// `src/device/all_reduce.h` v2.28.9-1): each loop reduces `n` chunks of at
/// most `chunk`; the last loop's chunk is the remainder over `n`, rounded up
/// to 16 bytes. For each loop, the bytes of chunk 0..n (the last ones may be
/// short or empty).
pub fn ring_loops(part: Bytes, chunk: Bytes, n: usize, elem: Bytes) -> Vec<Vec<Bytes>> {
    let n = n.max(1) as u64;
    let elem = elem.0.max(1);
    let count = part.0 / elem;
    let mut chunk_count = (chunk.0 / elem).max(1);
    let loop_count = n * chunk_count;
    let align = (16 / elem).max(1);
    let mut out = Vec::new();
    let mut off = 0u64;
    while off < count {
        let rem = count - off;
        if rem < loop_count {
            chunk_count = rem.div_ceil(n).div_ceil(align) * align;
        }
        out.push(
            (0..n)
                .map(|c| {
                    let start = c * chunk_count;
                    Bytes(chunk_count.min(rem.saturating_sub(start)) * elem)
                })
                .collect(),
        );
        off += loop_count;
    }
    out
}

/// The tree's chunks of one channel's `part` (`runTreeSplit`,
/// `src/device/all_reduce.h` v2.28.9-1): `chunk` at a time, the last one
/// the remainder.
pub fn tree_chunks(part: Bytes, chunk: Bytes) -> Vec<Bytes> {
    let c = chunk.0.max(1);
    let mut out = Vec::new();
    let mut off = 0;
    while off < part.0 {
        out.push(Bytes(c.min(part.0 - off)));
        off += c;
    }
    out
}

/// `runTreeSplit`'s threads (`src/device/all_reduce.h` v2.28.9-1): a rank
/// that is not the root reduces up with the first share of the block's
/// threads and broadcasts down with the rest — Simple half (64 more from
/// 256), LL and LL128 seven tenths in whole warps. Returns (up, down).
pub fn tree_split(protocol: Protocol, threads: u32) -> (u32, u32) {
    const WARP: u32 = 32;
    let up = match protocol {
        Protocol::Simple => {
            let h = threads / 2;
            if h >= 256 { h + 64 } else { h }
        }
        Protocol::Ll | Protocol::Ll128 => threads * 7 / (10 * WARP) * WARP,
    };
    let up = up.clamp(WARP.min(threads), threads);
    (up, threads.saturating_sub(up).max(WARP.min(threads)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_counts_add_up_and_fill_channels_in_order() {
        // 43,008 B bf16 over 2 channels, Simple: 86 KiB of traffic, 43 KiB
        // per channel, cells of 8 KiB of data: 3 cells on channel 0, the
        // rest on channel 1.
        let (lo, c) = channel_counts(Bytes(43_008), Bytes(2), 2, 2, Protocol::Simple);
        assert_eq!(lo, 0);
        assert_eq!(c.iter().map(|b| b.0).sum::<u64>(), 43_008);
        assert_eq!(c, vec![Bytes(3 * 8192), Bytes(43_008 - 3 * 8192)]);
        // a small call stays on one channel
        let (_, c) = channel_counts(Bytes(4096), Bytes(4), 2, 2, Protocol::Simple);
        assert_eq!(c, vec![Bytes(4096)]);
        // LL: four times the traffic per byte, cells of 2 KiB: eight
        // channels' worth of traffic overflows onto all 24 (one cell on
        // each but the last, which takes the rest)
        let (lo, c) = channel_counts(Bytes(64 << 10), Bytes(4), 8, 24, Protocol::Ll);
        assert_eq!(c.iter().map(|b| b.0).sum::<u64>(), 64 << 10);
        assert_eq!((lo, c.len()), (0, 24), "{c:?}");
        assert_eq!(
            (c[0], c[22], c[23]),
            (Bytes(2048), Bytes(2048), Bytes(9 * 2048))
        );
        assert_eq!(
            channel_counts(Bytes(1), Bytes(4), 2, 2, Protocol::Ll).1,
            vec![]
        );
    }

    #[test]
    fn chunks_follow_calc_coll_chunking() {
        let b = Buffers {
            ll: Bytes(512 << 10),
            ll128: Bytes(120 * 640 * 8 * 8),
            simple: Bytes(4 << 20),
            simple_step: Bytes(512 << 10),
            p2p_chunk: Bytes(128 << 10),
        };
        let mib = Bytes(64 << 20);
        assert_eq!(
            chunk_bytes(Algorithm::Ring, Protocol::Simple, &b, mib, 8),
            Bytes(2 << 20)
        );
        assert_eq!(
            chunk_bytes(Algorithm::Tree, Protocol::Simple, &b, mib, 8),
            Bytes(512 << 10)
        );
        assert_eq!(
            chunk_bytes(Algorithm::Ring, Protocol::Ll, &b, mib, 8),
            Bytes(32 << 10)
        );
        // 600 KiB step, 15/16 data, rounded down to the 1920 B grain
        let ll128 = chunk_bytes(Algorithm::Ring, Protocol::Ll128, &b, mib, 8);
        assert_eq!(ll128.0 % 1920, 0);
        assert_eq!(ll128, Bytes(614_400 / 16 * 15 / 1920 * 1920));
        // Tree LL128 halves on a small channel share
        assert!(chunk_bytes(Algorithm::Tree, Protocol::Ll128, &b, Bytes(1 << 20), 8) < ll128);
    }

    #[test]
    fn ring_loops_cover_the_part_once() {
        // one loop: 8 ranks, 21,504 B of bf16 → chunks of 2,688 B
        let l = ring_loops(Bytes(21_504), Bytes(2 << 20), 8, Bytes(2));
        assert_eq!(l.len(), 1);
        assert!(l[0].iter().all(|c| *c == Bytes(2688)));
        // several loops: 2 ranks, 9 MiB of fp32 in 2 MiB chunks → 4 MiB per
        // loop, then 1 MiB split in two
        let l = ring_loops(Bytes(9 << 20), Bytes(2 << 20), 2, Bytes(4));
        assert_eq!(l.len(), 3);
        assert_eq!(l[2], vec![Bytes(512 << 10), Bytes(512 << 10)]);
        let total: u64 = l.iter().flatten().map(|b| b.0).sum();
        assert_eq!(total, 9 << 20);
        // remainder rounded to 16 B: the last chunks are short or empty
        let l = ring_loops(Bytes(40), Bytes(2 << 20), 8, Bytes(4));
        let total: u64 = l.iter().flatten().map(|b| b.0).sum();
        assert_eq!(total, 40);
        assert_eq!(l[0][0], Bytes(16));
        assert_eq!(l[0][3], Bytes(0));
    }

    #[test]
    fn tree_chunks_and_split() {
        assert_eq!(
            tree_chunks(Bytes(1_200_000), Bytes(512 << 10)),
            vec![Bytes(524_288), Bytes(524_288), Bytes(151_424)]
        );
        assert_eq!(tree_split(Protocol::Simple, 640), (384, 256));
        assert_eq!(tree_split(Protocol::Simple, 256), (128, 128));
        assert_eq!(tree_split(Protocol::Ll, 640), (448, 192));
    }
}
