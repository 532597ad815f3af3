//! NCCL's tuner plugin ABI, as its public headers lay it out (NVIDIA/nccl):
//!
//! - `src/include/plugin/tuner/tuner_v4.h` (v2.21 to v2.27 look for
//!   `ncclTunerPlugin_v4` first): `name`, `init(nRanks, nNodes, logFunction,
//!   context)`, `getCollInfo`, `destroy`.
//! - `src/include/plugin/tuner/tuner_v5.h` (v2.28.3-1, v2.29.7-1; read at
//!   v2.28.3-1 and at master 5067397, equal but for spacing):
//!   `init(context, commId, nRanks, nNodes, logFunction, nvlDomainInfo,
//!   constants)` with `ncclTunerConstants_v5_t` in and out, `getCollInfo`,
//!   `finalize`.
//! - `src/include/plugin/tuner/tuner_v6.h` (v2.30.3-1): v5's members and
//!   types, then an optional `getChunkSize` (NULL: NCCL keeps its own,
//!   `src/enqueue.cc` checks it before calling).
//!
//! NCCL (`src/plugin/tuner.cc`) takes the first of `ncclTunerPlugin_v6`,
//! `_v5`, `_v4`, `_v3`, `_v2` the library exports. Enumerations are C
//! `int`s; `ncclResult_t` values from `src/nccl.h.in`, log levels and
//! subsystems from `src/include/nccl_common.h`, table sizes and indices from
//! `tuner_v5.h` and `src/include/plugin/nccl_tuner.h` (all v2.28.3-1).

use std::ffi::{c_char, c_int, c_ulong, c_void};

/// `ncclResult_t`.
pub type NcclResult = c_int;
pub const SUCCESS: NcclResult = 0;
pub const SYSTEM_ERROR: NcclResult = 2;
pub const INTERNAL_ERROR: NcclResult = 3;
pub const INVALID_ARGUMENT: NcclResult = 4;
pub const INVALID_USAGE: NcclResult = 5;

/// `NCCL_NUM_ALGORITHMS_V5`, `NCCL_NUM_PROTOCOLS_V5`, `NCCL_NUM_HW_LINKS_V5`,
/// `NCCL_NUM_COMPCAPS_V5`, `NCCL_NUM_TUNING_SCALES_V5`.
pub const NUM_ALGORITHMS: usize = 7;
pub const NUM_PROTOCOLS: usize = 3;
pub const NUM_HW_LINKS: usize = 3;
pub const NUM_COMPCAPS: usize = 4;
pub const NUM_TUNING_SCALES: usize = 3;

/// `NCCL_ALGO_PROTO_IGNORE`: a cost-table entry NCCL will not select.
pub const ALGO_PROTO_IGNORE: f32 = -1.0;

/// `ncclDebugLogLevel`: `NCCL_LOG_WARN`, `NCCL_LOG_INFO`.
pub const LOG_WARN: c_int = 2;
pub const LOG_INFO: c_int = 3;
/// `ncclDebugLogSubSys`: `NCCL_INIT | NCCL_TUNING`, the subsystems NCCL
/// logs its own tuner plugin lines under.
pub const LOG_FLAGS: c_ulong = 0x1 | 0x40;

/// `ncclDebugLogger_t`: `void (*)(ncclDebugLogLevel level, unsigned long
/// flags, const char* file, int line, const char* fmt, ...)`.
pub type Logger = unsafe extern "C" fn(
    level: c_int,
    flags: c_ulong,
    file: *const c_char,
    line: c_int,
    fmt: *const c_char,
    ...
);

/// `ncclNvlDomainInfo_v5_t` (v6 is a typedef of it).
#[repr(C)]
#[derive(Debug)]
pub struct NvlDomainInfoV5 {
    pub n_nvl_domains: c_int,
    pub min_ranks_per_nvl_domain: c_int,
    pub max_ranks_per_nvl_domain: c_int,
}

/// `ncclTunerConstants_v5_t` (v6 is a typedef of it): latencies in µs,
/// bandwidths in GB/s, indexed `[algorithm][protocol]`,
/// `[hw link][algorithm][protocol]`, `[compcap][tuning scale]`.
#[repr(C)]
#[derive(Debug)]
pub struct TunerConstantsV5 {
    pub base_latencies: [[f64; NUM_PROTOCOLS]; NUM_ALGORITHMS],
    pub hw_latencies: [[[f64; NUM_PROTOCOLS]; NUM_ALGORITHMS]; NUM_HW_LINKS],
    pub ll_max_bws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
    pub per_ch_max_ring_ll128_bws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
    pub per_ch_max_tree_ll128_bws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
    pub per_ch_max_tree_bws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
    pub per_ch_max_nvls_tree_bws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
}

// 21 + 63 + 5 × 12 doubles, no padding.
const _: () = assert!(std::mem::size_of::<TunerConstantsV5>() == 144 * 8);
const _: () = assert!(std::mem::offset_of!(TunerConstantsV5, hw_latencies) == 21 * 8);
const _: () = assert!(std::mem::offset_of!(TunerConstantsV5, ll_max_bws) == 84 * 8);

/// v5/v6 `init`.
pub type InitV5 = unsafe extern "C" fn(
    ctx: *mut *mut c_void,
    comm_id: u64,
    n_ranks: usize,
    n_nodes: usize,
    log: Option<Logger>,
    nvl_domain_info: *mut NvlDomainInfoV5,
    constants: *mut TunerConstantsV5,
) -> NcclResult;

/// v4 `init`.
pub type InitV4 = unsafe extern "C" fn(
    n_ranks: usize,
    n_nodes: usize,
    log: Option<Logger>,
    ctx: *mut *mut c_void,
) -> NcclResult;

/// `getCollInfo` (v4, v5, v6): `collCostTable` is declared `float**` but
/// NCCL passes a `float[numAlgo][numProto]` array cast to it
/// (`src/enqueue.cc`, `ncclGetAlgoInfo`).
pub type GetCollInfo = unsafe extern "C" fn(
    ctx: *mut c_void,
    coll_type: c_int,
    n_bytes: usize,
    num_pipe_ops: c_int,
    coll_cost_table: *mut *mut f32,
    num_algo: c_int,
    num_proto: c_int,
    reg_buff: c_int,
    n_channels: *mut c_int,
) -> NcclResult;

/// v5/v6 `finalize`, v4 `destroy`.
pub type Finalize = unsafe extern "C" fn(ctx: *mut c_void) -> NcclResult;

/// v6 `getChunkSize`.
pub type GetChunkSize = unsafe extern "C" fn(
    ctx: *mut c_void,
    coll_type: c_int,
    n_bytes: usize,
    algo: c_int,
    proto: c_int,
    n_channels: c_int,
    chunk_size: *mut usize,
) -> NcclResult;

/// `ncclTuner_v4_t`.
#[repr(C)]
#[derive(Debug)]
pub struct TunerV4 {
    pub name: *const c_char,
    pub init: InitV4,
    pub get_coll_info: GetCollInfo,
    pub destroy: Finalize,
}

/// `ncclTuner_v5_t`.
#[repr(C)]
#[derive(Debug)]
pub struct TunerV5 {
    pub name: *const c_char,
    pub init: InitV5,
    pub get_coll_info: GetCollInfo,
    pub finalize: Finalize,
}

/// `ncclTuner_v6_t`.
#[repr(C)]
#[derive(Debug)]
pub struct TunerV6 {
    pub name: *const c_char,
    pub init: InitV5,
    pub get_coll_info: GetCollInfo,
    pub finalize: Finalize,
    pub get_chunk_size: Option<GetChunkSize>,
}

// SAFETY: the three structs are immutable statics whose `name` points to a
// NUL-terminated string literal ('static, never written); function
// pointers are Sync. Sharing them between NCCL's threads reads only.
unsafe impl Sync for TunerV4 {}
// SAFETY: as for TunerV4.
unsafe impl Sync for TunerV5 {}
// SAFETY: as for TunerV4.
unsafe impl Sync for TunerV6 {}
