//! The stated limits of a scenario: every number a file or flag gives is
//! checked against these when the scenario is built, so nothing downstream
//! can overflow, allocate without bound or run without end. Each is far
//! beyond any machine contend models; a value past one is a located error.

use contend_topo::{Bytes, Picos};

/// Largest allreduce or transfer size: 64 GiB (more than any GPU's memory
/// holds twice over for the exchange).
pub const MAX_SIZE: Bytes = Bytes(64 << 30);
/// Most sizes in one sweep or size list.
pub const MAX_SIZES: usize = 4096;
/// Largest step factor of a size ladder (a sweep): a larger one leaves
/// more than three orders of magnitude between two sizes.
pub const MAX_FACTOR: u64 = 1024;
/// Most collectives one run simulates back to back (repeats, or the
/// allreduces of a verify step).
pub const MAX_COLLECTIVES: u64 = 100_000;
/// Most collectives of one run over all its sizes (sizes times repeats):
/// each keeps its time in the run's records, and every one is simulated.
pub const MAX_RUN_COLLECTIVES: u64 = 1_000_000;
/// Longest compute gap between two collectives, largest skew parameter,
/// and latest start of a transfer stream (`start_us`): 1 s.
pub const MAX_GAP: Picos = Picos(1_000_000_000_000);
/// Most ping-pong round trips of one stream.
pub const MAX_ITERATIONS: u32 = 1_000_000;
/// Most streams in one transfer workload (patterns' streams included).
pub const MAX_STREAMS: usize = 4096;
/// Most times one stream runs its op back to back (`repeat`): as many as
/// the collectives of one run.
pub const MAX_REPEAT: u32 = 100_000;
/// Most ops the streams of one transfer workload run in all: the sum over
/// streams of `repeat` (times `iterations` for a ping-pong), so the
/// simulator's scripts stay bounded whatever the stream count.
pub const MAX_TRANSFER_OPS: u64 = 10_000_000;
/// Most blocks a kernel may be given (CUDA allows more; no collective
/// kernel needs more than a few per SM).
pub const MAX_BLOCKS: u32 = 65_536;
/// Most threads per block (CUDA's limit); threads come in warps of 32.
pub const MAX_THREADS: u32 = 1024;

/// Whether a kernel of `blocks` x `threads` can be launched: 1 to
/// [`MAX_BLOCKS`] blocks of a multiple of 32 threads up to [`MAX_THREADS`].
pub fn launchable(blocks: u32, threads: u32) -> bool {
    (1..=MAX_BLOCKS).contains(&blocks)
        && (32..=MAX_THREADS).contains(&threads)
        && threads.is_multiple_of(32)
}
