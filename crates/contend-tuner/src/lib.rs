//! # contend-tuner
//!
//! An NCCL tuner plugin built from contend's model: NCCL dlopens it
//! (`NCCL_TUNER_PLUGIN=/path/to/libcontend_tuner.so`) and, for every
//! collective, hands it its cost table (µs per algorithm and protocol) to
//! rewrite and asks for a channel count. At each communicator's init the
//! plugin reads the table `contend advise --emit nccl-tuner-table` wrote
//! (path in `CONTEND_TUNER_TABLE`), keeps the entry for the communicator's
//! rank and node count, and (tuner ABI v5+) replaces NCCL's base latencies
//! for it; per call it writes contend's predicted times into the entries
//! NCCL left selectable and asks for the channels of the one NCCL will then
//! pick ([`tuner`]). Without a table, an entry for the communicator, or a
//! range for a call, NCCL's own choice stands, said once in NCCL's log
//! ([`log`]). A malformed table fails init with its file, line, column and
//! field in NCCL's log.
//!
//! Exported: `ncclTunerPlugin_v6` (NCCL 2.30), `ncclTunerPlugin_v5`
//! (2.28, 2.29), `ncclTunerPlugin_v4` (2.21 to 2.27), laid out as [`abi`]
//! cites. Every export catches panics: none crosses into NCCL.
//!
//! Besides contend-hw's CUDA and NCCL calls, this is the one crate of the
//! workspace with `unsafe` code (the C boundary: the exported structs, raw
//! pointers from NCCL, NCCL's variadic logger); every block says why it
//! holds (`clippy::undocumented_unsafe_blocks` is denied here).

#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod abi;
pub mod log;
pub mod tuner;

use abi::{
    INTERNAL_ERROR, INVALID_ARGUMENT, INVALID_USAGE, Logger, NcclResult, NvlDomainInfoV5, SUCCESS,
    SYSTEM_ERROR, TunerConstantsV5, TunerV4, TunerV5, TunerV6,
};
use log::Log;
use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use tuner::{InitError, TABLE_VAR, Tuner};

/// The plugin's name, as NCCL prints it (`TUNER/Plugin: Using contend (v5)`).
const NAME: &CStr = c"contend";

/// The most algorithms or protocols a cost table may have (NCCL's are 7 × 3).
const MAX_TABLE_SIDE: c_int = 16;

/// Runs `f`, turning a panic into `on_panic` and a WARN line.
fn guard(log: Option<Log>, on_panic: NcclResult, f: impl FnOnce() -> NcclResult) -> NcclResult {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            if let Some(l) = log {
                let _ = catch_unwind(|| l.warn(&format!("internal error: {msg}")));
            }
            on_panic
        }
    }
}

/// The shared init of every ABI version; `constants` null for v4.
///
/// # Safety
/// `ctx` is null or writable; `constants` is null or points to NCCL's
/// constants of this communicator, writable for the call.
unsafe fn init_common(
    abi: u32,
    ctx: *mut *mut c_void,
    comm_id: u64,
    n_ranks: usize,
    n_nodes: usize,
    logger: Option<Logger>,
    constants: *mut TunerConstantsV5,
) -> NcclResult {
    let log = Log::new(logger);
    guard(Some(log), INTERNAL_ERROR, || {
        if ctx.is_null() {
            log.warn("init without a context to fill");
            return INVALID_ARGUMENT;
        }
        let path = std::env::var_os(TABLE_VAR)
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from);
        log.info(&format!(
            "tuner ABI v{abi}, communicator {comm_id:#018x}, {n_ranks} ranks on {n_nodes} node(s)"
        ));
        let t = match Tuner::load(path.as_deref(), n_ranks, n_nodes, log) {
            Ok(t) => t,
            Err(InitError::Read) => return SYSTEM_ERROR,
            Err(InitError::Malformed) => return INVALID_USAGE,
        };
        if constants.is_null() {
            log.info(if abi >= 5 {
                "NCCL passed no constants: its base latencies stay"
            } else {
                "tuner ABI v4 hands no constants: NCCL's base latencies stay"
            });
        } else {
            // SAFETY: non-null, and NCCL hands its communicator's
            // constants for the duration of init (`src/init.cc`).
            t.set_constants(unsafe { &mut *constants });
        }
        let b = Box::new(t);
        // SAFETY: `ctx` is non-null and NCCL's `&comm->tunerContext`.
        unsafe { *ctx = Box::into_raw(b).cast() };
        SUCCESS
    })
}

/// v5 and v6 `init`.
unsafe extern "C" fn init_v6(
    ctx: *mut *mut c_void,
    comm_id: u64,
    n_ranks: usize,
    n_nodes: usize,
    logger: Option<Logger>,
    _nvl: *mut NvlDomainInfoV5,
    constants: *mut TunerConstantsV5,
) -> NcclResult {
    // SAFETY: NCCL's contract for init (tuner_v6.h): a context slot and
    // its constants.
    unsafe { init_common(6, ctx, comm_id, n_ranks, n_nodes, logger, constants) }
}

unsafe extern "C" fn init_v5(
    ctx: *mut *mut c_void,
    comm_id: u64,
    n_ranks: usize,
    n_nodes: usize,
    logger: Option<Logger>,
    _nvl: *mut NvlDomainInfoV5,
    constants: *mut TunerConstantsV5,
) -> NcclResult {
    // SAFETY: NCCL's contract for init (tuner_v5.h), as for v6.
    unsafe { init_common(5, ctx, comm_id, n_ranks, n_nodes, logger, constants) }
}

unsafe extern "C" fn init_v4(
    n_ranks: usize,
    n_nodes: usize,
    logger: Option<Logger>,
    ctx: *mut *mut c_void,
) -> NcclResult {
    // SAFETY: NCCL's contract for init (tuner_v4.h): a context slot, no
    // constants (null).
    unsafe { init_common(4, ctx, 0, n_ranks, n_nodes, logger, std::ptr::null_mut()) }
}

/// `getCollInfo` of every version.
unsafe extern "C" fn get_coll_info(
    ctx: *mut c_void,
    coll_type: c_int,
    n_bytes: usize,
    _num_pipe_ops: c_int,
    coll_cost_table: *mut *mut f32,
    num_algo: c_int,
    num_proto: c_int,
    _reg_buff: c_int,
    n_channels: *mut c_int,
) -> NcclResult {
    // SAFETY: `ctx` is null or what init stored: a live Box<Tuner> until
    // finalize, which NCCL calls after the communicator's last call.
    let Some(t) = (unsafe { ctx.cast::<Tuner>().as_ref() }) else {
        return INVALID_ARGUMENT;
    };
    // A panic leaves NCCL's table as it was (the plugin works on a copy):
    // NCCL's own choice, with a WARN line.
    guard(Some(t.log()), SUCCESS, || {
        if coll_cost_table.is_null()
            || n_channels.is_null()
            || !(1..=MAX_TABLE_SIDE).contains(&num_algo)
            || !(1..=MAX_TABLE_SIDE).contains(&num_proto)
        {
            t.log().warn(&format!(
                "getCollInfo with a cost table of {num_algo} x {num_proto} at {coll_cost_table:p}, channels at {n_channels:p}: left to NCCL"
            ));
            return INVALID_ARGUMENT;
        }
        let len = (num_algo * num_proto) as usize;
        let base = coll_cost_table.cast::<f32>();
        // SAFETY: NCCL passes its `float[numAlgo][numProto]` array cast to
        // `float**` (src/enqueue.cc): `len` contiguous floats, valid and
        // not otherwise touched for the call.
        let table = unsafe { std::slice::from_raw_parts_mut(base, len) };
        let mut copy = table.to_vec();
        if let Some(ch) = t.costs(coll_type, n_bytes as u64, &mut copy, num_proto as usize) {
            // SAFETY: non-null, NCCL's `&nMaxChannels` for the call.
            unsafe { *n_channels = ch };
        }
        table.copy_from_slice(&copy);
        SUCCESS
    })
}

/// v5/v6 `finalize`, v4 `destroy`.
unsafe extern "C" fn finalize(ctx: *mut c_void) -> NcclResult {
    if ctx.is_null() {
        return SUCCESS;
    }
    guard(None, INTERNAL_ERROR, || {
        // SAFETY: a non-null `ctx` is the Box init leaked; NCCL finalizes
        // each communicator's context once.
        drop(unsafe { Box::from_raw(ctx.cast::<Tuner>()) });
        SUCCESS
    })
}

/// The symbol NCCL 2.30 looks for first.
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static ncclTunerPlugin_v6: TunerV6 = TunerV6 {
    name: NAME.as_ptr(),
    init: init_v6,
    get_coll_info,
    finalize,
    // NCCL keeps its own chunk sizes
    get_chunk_size: None,
};

/// The symbol NCCL 2.28 and 2.29 look for first.
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static ncclTunerPlugin_v5: TunerV5 = TunerV5 {
    name: NAME.as_ptr(),
    init: init_v5,
    get_coll_info,
    finalize,
};

/// The symbol NCCL 2.21 to 2.27 look for first.
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static ncclTunerPlugin_v4: TunerV4 = TunerV4 {
    name: NAME.as_ptr(),
    init: init_v4,
    get_coll_info,
    destroy: finalize,
};
