//! DESIGN 6, 11 — the GPU side: SM loads and stores of 16 B per thread
//! coalesced into requests, the outstanding-load window of the kernel's
//! blocks, the rate its blocks issue stores at and the latency before a
//! store reaches the link, local memory bandwidth for reduces and copies,
//! the copy engine's requests, and memory latency behind a read.

use crate::params::ModelParams;
use contend_topo::{Bytes, BytesPerSec, NodeIdx, NodeKind, Picos, Topology};
use contend_workload::Mover;

/// The kernel shape an actor runs with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kernel {
    pub gpu: NodeIdx,
    pub blocks: u32,
    pub threads: u32,
}

fn sms(topo: &Topology, gpu: NodeIdx) -> u32 {
    match &topo.node(gpu).kind {
        NodeKind::Gpu(g) => g.sms,
        _ => 1,
    }
}

/// Time of a memory-bound local kernel over `bytes` (reduce, local copy).
pub(crate) fn local_time(topo: &Topology, p: &ModelParams, gpu: NodeIdx, bytes: u64) -> Picos {
    match &topo.node(gpu).kind {
        NodeKind::Gpu(g) => g
            .memory_bandwidth
            .scale(p.gpu.local_efficiency)
            .time_for(Bytes(bytes)),
        // actors run on GPUs (a validated scenario's ranks and stream ends)
        _ => Picos::ZERO,
    }
}

/// The rate a kernel's blocks issue SM stores at (one block per SM).
pub(crate) fn store_rate(topo: &Topology, p: &ModelParams, k: Kernel) -> BytesPerSec {
    BytesPerSec::from_gbps(p.gpu.store_gbps_per_sm * k.blocks.min(sms(topo, k.gpu)) as f64)
}

/// Outstanding read requests of `req` bytes a kernel can keep in flight
/// when each thread keeps `loads_per_thread` 16-byte loads in flight (as
/// the kernel unrolls them: one per peer for the allreduce kernels'
/// `sum_ranks`; `None`, for transfer streams and NCCL's rings, takes
/// `gpu.loads_in_flight_per_thread`); at most `gpu.max_outstanding_loads_per_sm`
/// per block; PCIe tags bound it (`tags`: the fewest its paths allow; `None`
/// when every path is NVLink).
pub(crate) fn load_window(
    topo: &Topology,
    p: &ModelParams,
    k: Kernel,
    req: u32,
    tags: Option<u32>,
    loads_per_thread: Option<u32>,
) -> u32 {
    let g = &p.gpu;
    let loads = loads_per_thread
        .unwrap_or(g.loads_in_flight_per_thread)
        .clamp(1, ModelParams::MAX_LOADS_PER_THREAD);
    let per_block =
        (k.threads as u64 * g.bytes_per_thread as u64 * loads as u64).div_ceil(req as u64) as u32;
    let w = k.blocks.min(sms(topo, k.gpu)) * per_block.clamp(1, g.max_outstanding_loads_per_sm);
    match tags {
        None => w,
        Some(t) => w.min(t),
    }
}

/// Whether transfers read or write remote memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Read,
    Write,
}

/// Bytes per request (read) or write TLP of one transfer: SM loads
/// coalesce into `gpu.load_request_bytes`, SM stores into
/// `gpu.store_tlp_bytes` (at most the path's MPS), the copy engine reads
/// `gpu.copy_request_bytes` (at most the path's MRRS) and writes
/// max-payload TLPs.
pub(crate) fn request_bytes(p: &ModelParams, dir: Dir, mover: Mover, mps: u32, mrrs: u32) -> u32 {
    match (dir, mover) {
        (Dir::Read, Mover::Sm) => p.gpu.load_request_bytes,
        (Dir::Read, Mover::CopyEngine) => p.gpu.copy_request_bytes.min(mrrs),
        (Dir::Write, Mover::Sm) => p.gpu.store_tlp_bytes.min(mps),
        (Dir::Write, Mover::CopyEngine) => mps,
    }
}

/// Requests (or store TLPs) a group of transfers may have outstanding:
/// reads (SM or copy engine) at most the tags their paths allow.
#[allow(clippy::too_many_arguments)]
pub(crate) fn window(
    topo: &Topology,
    p: &ModelParams,
    k: Kernel,
    dir: Dir,
    mover: Mover,
    req: u32,
    tags: Option<u32>,
    loads_per_thread: Option<u32>,
) -> u32 {
    match (dir, mover) {
        (Dir::Read, Mover::Sm) => load_window(topo, p, k, req, tags, loads_per_thread),
        // a copy engine's reads are non-posted requests too: each holds a
        // tag until its completions are back
        (Dir::Read, Mover::CopyEngine) => {
            tags.map_or(p.gpu.copy_outstanding, |t| p.gpu.copy_outstanding.min(t))
        }
        (Dir::Write, Mover::CopyEngine) => p.gpu.copy_outstanding,
        (Dir::Write, Mover::Sm) => p.gpu.store_window,
    }
}

/// The store visibility latency: an SM store (data or flag) enters the
/// GPU's egress link this long after it is issued.
pub(crate) fn store_visibility(p: &ModelParams) -> Picos {
    p.gpu.store_visibility_ns.to_picos()
}

/// Store-window slots the visibility pipeline holds when stores of `req`
/// bytes flow at `rate` (Little's law): the window grows by them, so the
/// latency delays stores and never throttles them.
pub(crate) fn store_pipeline_slots(p: &ModelParams, rate: BytesPerSec, req: u32) -> u32 {
    let in_flight = rate.0 as f64 * store_visibility(p).0 as f64 / 1e12;
    (in_flight / req.max(1) as f64)
        .ceil()
        .min(crate::params::ModelParams::MAX_WINDOW as f64) as u32
}

/// Copy-engine setup per transfer (none for SM traffic).
pub(crate) fn setup(p: &ModelParams, mover: Mover) -> Picos {
    match mover {
        Mover::CopyEngine => p.gpu.copy_setup_ns.to_picos(),
        Mover::Sm => Picos::ZERO,
    }
}

/// Latency of the memory that serves a read at `node`.
pub(crate) fn memory_latency(topo: &Topology, p: &ModelParams, node: NodeIdx) -> Picos {
    match &topo.node(node).kind {
        NodeKind::HostMemory { latency, .. } => {
            latency.unwrap_or(p.host.memory_latency_ns.to_picos())
        }
        _ => p.gpu.memory_latency_ns.to_picos(),
    }
}

/// Payload of the completions `completer` returns: host memory as the
/// root complex returns them (`root_complex.host_completion_bytes`, else
/// split at the completion boundary, `rcb` of the path back), a GPU up to
/// the path's max payload; never above the path's max payload, never below
/// `fabric.min_completion_bytes`.
pub(crate) fn completion_bytes(
    topo: &Topology,
    p: &ModelParams,
    completer: NodeIdx,
    mps: u32,
    rcb: u32,
) -> u32 {
    if matches!(topo.node(completer).kind, NodeKind::HostMemory { .. }) {
        p.root_complex.host_completion_bytes.unwrap_or(rcb).min(mps)
    } else {
        mps
    }
    .max(p.fabric.min_completion_bytes)
}
