//! What each protocol puts on the wire and how it steps through the
//! connection's buffer: LL's 16-byte lines of 8 data bytes and 8 flag bytes
//! (`union ncclLLFifoLine`, `src/include/device.h`), LL128's 128-byte lines
//! of 120 data bytes and one flag word (`NCCL_LL128_LINESIZE`,
//! `NCCL_LL128_DATAELEMS`, same file), Simple's data followed by a system
//! fence and a step counter (`postPeer`, `src/device/prims_simple.h`); the
//! buffer of `NCCL_STEPS` steps the sender may run ahead by before it waits
//! for the receiver (`waitPeer`, same file; `waitSend`,
//! `src/device/prims_ll.h`). All at v2.28.9-1, equal at v2.27.7-1 and
//! v2.29.7-1.

use crate::tuning::{Algorithm, Protocol};
use contend_topo::Bytes;

/// `NCCL_STEPS` (`src/include/device.h` v2.28.9-1): slots of a connection's buffer.
pub const NCCL_STEPS: u64 = 8;
/// `NCCL_LL128_LINEELEMS` (16 eight-byte words per 128-byte line) and
/// `NCCL_LL128_DATAELEMS` (15 of them data) (`src/include/device.h` v2.28.9-1).
pub const LL128_LINE_ELEMS: u64 = 16;
pub const LL128_DATA_ELEMS: u64 = 15;
/// `NCCL_LL128_SHMEM_ELEMS_PER_THREAD` (same file): sets LL128's grain.
const LL128_SHMEM_ELEMS_PER_THREAD: u64 = 8;
/// A 16-byte `ncclLLFifoLine` carries 8 data bytes (`data1`, `data2`) and
/// two 4-byte flags (`src/include/device.h` v2.28.9-1).
const LL_LINE: u64 = 16;
const LL_LINE_DATA: u64 = 8;

/// `ncclProtoGrainSize` (`src/include/device.h` v2.28.9-1): LL 16 B,
/// LL128 `WARP_SIZE × 8 / 16 × 15 × 8` = 1920 B, Simple 512 B.
pub fn grain(p: Protocol) -> Bytes {
    match p {
        Protocol::Ll => Bytes(16),
        Protocol::Ll128 => {
            Bytes(32 * LL128_SHMEM_ELEMS_PER_THREAD / LL128_LINE_ELEMS * LL128_DATA_ELEMS * 8)
        }
        Protocol::Simple => Bytes(512),
    }
}

/// Bytes on the wire for `data` bytes: LL whole lines, twice the data;
/// LL128 whole 128-byte lines for every 120 bytes; Simple the data.
pub fn wire_bytes(p: Protocol, data: Bytes) -> Bytes {
    match p {
        Protocol::Ll => Bytes(data.0.div_ceil(LL_LINE_DATA) * LL_LINE),
        Protocol::Ll128 => Bytes(data.0.div_ceil(LL128_DATA_ELEMS * 8) * LL128_LINE_ELEMS * 8),
        Protocol::Simple => data,
    }
}

/// Whether the receiver learns of the data from the data itself (LL and
/// LL128: a flag in every line, polled where the line lands) rather than
/// from a separate step counter written after a fence (Simple).
pub fn flags_inline(p: Protocol) -> bool {
    p != Protocol::Simple
}

/// Buffer steps one slice takes: ring Simple `ALLREDUCE_SLICESTEPS` (2),
/// otherwise 1 (`ProtoSimple<1,1>` for the tree; LL and LL128 step once per
/// primitive call).
pub fn steps_per_slice(a: Algorithm, p: Protocol) -> u64 {
    if a == Algorithm::Ring && p == Protocol::Simple {
        crate::schedule::ALLREDUCE_SLICESTEPS
    } else {
        1
    }
}

/// Slices per primitive call (`SlicePerChunk`): ring Simple
/// `ALLREDUCE_CHUNKSTEPS / ALLREDUCE_SLICESTEPS` (2), otherwise 1. Every
/// call steps through all of them, empty ones included.
pub fn slices_per_call(a: Algorithm, p: Protocol) -> u64 {
    if a == Algorithm::Ring && p == Protocol::Simple {
        crate::schedule::ALLREDUCE_CHUNKSTEPS / crate::schedule::ALLREDUCE_SLICESTEPS
    } else {
        1
    }
}

/// How many slices the sender may have in the receiver's buffer: slice `g`
/// waits until the receiver has released slice `g − lag`
/// (`waitPeer`: `head + NCCL_STEPS ≥ step + StepPerSlice`).
pub fn credit_lag(a: Algorithm, p: Protocol) -> u64 {
    NCCL_STEPS / steps_per_slice(a, p)
}

/// The data of one Simple primitive call of `data` bytes in its slices
/// (`genericOp`, `src/device/prims_simple.h` v2.28.9-1): `SlicePerChunk`
/// slices of `max(⌈data / SlicePerChunk⌉ in 16-element units,
/// stepSize × StepPerSlice / 32)`, the last ones short or empty.
pub fn simple_slices(a: Algorithm, data: Bytes, step: Bytes, elem: Bytes) -> Vec<Bytes> {
    let per_call = slices_per_call(a, Protocol::Simple);
    let sps = steps_per_slice(a, Protocol::Simple);
    let elem = elem.0.max(1);
    let nelem = data.0 / elem;
    let step_elems = step.0 / elem;
    let slice = (nelem.div_ceil(16 * per_call) * 16).max(step_elems * sps / 32);
    let mut out = Vec::new();
    let mut off = 0;
    for _ in 0..per_call {
        let s = slice.min(nelem.saturating_sub(off));
        out.push(Bytes(s * elem));
        off += s;
    }
    out
}

/// 16-byte loads each thread keeps in flight when a primitive reads what
/// arrived: Simple's `reduceCopy` unrolls `ncclCollUnroll` (4 below
/// compute capability 8.0, 6 on 12.x, else 8: `src/include/device.h`,
/// equal at v2.27.7-1, v2.28.9-1 and v2.29.7-1); LL polls one line per
/// thread at a time (`readLL`, `src/device/prims_ll.h`); LL128 loads a
/// thread's `NCCL_LL128_SHMEM_ELEMS_PER_THREAD` (8) words before it checks
/// their flag (`src/device/prims_ll128.h`), taken here as 8 loads in flight.
pub fn loads_in_flight(p: Protocol, compute_capability: u32) -> u32 {
    match p {
        Protocol::Simple => {
            if compute_capability >= 80 {
                if compute_capability / 10 == 12 { 6 } else { 8 }
            } else {
                4
            }
        }
        Protocol::Ll => 1,
        Protocol::Ll128 => LL128_SHMEM_ELEMS_PER_THREAD as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_framing_per_protocol() {
        assert_eq!(wire_bytes(Protocol::Ll, Bytes(2688)), Bytes(5376));
        assert_eq!(
            wire_bytes(Protocol::Ll, Bytes(4)),
            Bytes(16),
            "a whole line"
        );
        assert_eq!(wire_bytes(Protocol::Ll128, Bytes(120)), Bytes(128));
        assert_eq!(wire_bytes(Protocol::Ll128, Bytes(121)), Bytes(256));
        assert_eq!(wire_bytes(Protocol::Simple, Bytes(2688)), Bytes(2688));
        assert_eq!(grain(Protocol::Ll128), Bytes(1920));
        assert!(flags_inline(Protocol::Ll) && !flags_inline(Protocol::Simple));
    }

    #[test]
    fn simple_steps_slices_and_credits() {
        let step = Bytes(512 << 10);
        // a small call: one slice of everything, the second empty (32 KiB floor)
        assert_eq!(
            simple_slices(Algorithm::Ring, Bytes(2688), step, Bytes(2)),
            vec![Bytes(2688), Bytes(0)]
        );
        // a full chunk: two slices of 1 MiB
        assert_eq!(
            simple_slices(Algorithm::Ring, Bytes(2 << 20), step, Bytes(4)),
            vec![Bytes(1 << 20), Bytes(1 << 20)]
        );
        assert_eq!(
            simple_slices(Algorithm::Tree, Bytes(100_000), step, Bytes(4)),
            vec![Bytes(100_000)]
        );
        // ring Simple: 2 steps a slice, 4 slices in the 8-step buffer
        assert_eq!(credit_lag(Algorithm::Ring, Protocol::Simple), 4);
        assert_eq!(credit_lag(Algorithm::Tree, Protocol::Simple), 8);
        assert_eq!(credit_lag(Algorithm::Ring, Protocol::Ll), 8);
        assert_eq!(loads_in_flight(Protocol::Simple, 90), 8);
        assert_eq!(loads_in_flight(Protocol::Simple, 120), 6);
        assert_eq!(loads_in_flight(Protocol::Simple, 75), 4);
        assert_eq!(loads_in_flight(Protocol::Ll, 90), 1);
    }
}
