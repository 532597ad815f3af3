//! The NCCL baseline: one communicator per GPU in this one process
//! (ncclCommInitAll), driven by the same engine as the custom kernels, so
//! sizes, ranks, verification and timing are like for like.
//!
//! NVLink multicast (NVLS) stays off: [`prepare_env`] sets
//! `NCCL_NVLS_ENABLE=0` unless the caller already did. Other `NCCL_*`
//! variables (for example `NCCL_P2P_DISABLE=1`) are honoured and recorded.
//!
//! NCCL's decisions come from NCCL itself: a pass run with [`capture_env`]
//! (`NCCL_DEBUG=INFO`, the subsystems that print topology, graphs,
//! channels, transports and the per-call algorithm and protocol, into
//! `NCCL_DEBUG_FILE`), whose log [`read_decisions`] parses with
//! contend-nccl's parser; [`NcclTeam::decisions`] then puts each call's
//! into its record ([`attach_decisions`]). The capture runs apart from the
//! timed runs (`contend hw nccl` runs it as a child process), since NCCL
//! reads its debug settings once per process and its per-call lines cost
//! host time.

#![allow(unsafe_code)]

use crate::allreduce::Collective;
use crate::devices::Devices;
use crate::driver::{DevMem, Gpu, StreamRef};
use crate::error::HwError;
use contend_nccl::log::NcclLog;
use contend_workload::Dtype;
use cudarc::nccl::{result, sys};
use std::ffi::c_void;
use std::path::Path;

/// Sets `NCCL_NVLS_ENABLE=0` for this process. Call before any thread starts
/// (at the top of the command), as environment changes are not thread safe.
pub fn prepare_env() {
    if std::env::var("NCCL_NVLS_ENABLE").as_deref() != Ok("0") {
        // SAFETY: called from the main thread before other threads exist.
        unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    }
}

/// `NCCL_DEBUG_SUBSYS` of the capture: the init and environment lines
/// (version, ranks, rings, trees, channel counts, transports per
/// connection, the variables NCCL read), the graph dumps (topology, paths,
/// search results) and tuning (the model table and the per-call algorithm
/// and protocol line).
pub const DEBUG_SUBSYS: &str = "INIT,GRAPH,TUNING,ENV";

/// The variables a decision capture runs under: INFO level, the
/// subsystems above, the log into `log` (a file NCCL creates, not the
/// process's output).
pub fn capture_env(log: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("NCCL_DEBUG", "INFO".to_string()),
        ("NCCL_DEBUG_SUBSYS", DEBUG_SUBSYS.to_string()),
        ("NCCL_DEBUG_FILE", log.display().to_string()),
    ]
}

/// Reads and parses a captured `NCCL_DEBUG=INFO` log; an unreadable file
/// or a decision line that does not parse is an error naming file and line.
pub fn read_decisions(log: &Path) -> Result<NcclLog, HwError> {
    let text = contend_topo::bounded_read::read_text(log).map_err(|e| HwError::Io {
        path: log.display().to_string(),
        message: format!("cannot read NCCL's log: {}", e.reason()),
    })?;
    contend_nccl::log::parse(&log.display().to_string(), &text).map_err(|e| HwError::Io {
        path: log.display().to_string(),
        message: e.to_string(),
    })
}

/// Puts NCCL's decisions for a call of `bytes` into a record: its
/// algorithm, protocol and channels as the per-call line says, the
/// transports of every connection, and a line for people. Nothing when the
/// log has no line for that size. Where `NCCL_TUNER_PLUGIN` was set or NCCL
/// loaded a tuner plugin, the plugin's lines too (`extra.nccl_tuner`,
/// for every size), said at the end of the line for people.
pub fn attach_decisions(log: &NcclLog, bytes: u64, extra: &mut contend_workload::Extra) {
    // a tuner plugin is news when NCCL took one or was told to look for one
    // (`Could not find: libnccl-tuner.so` is every plain run's line)
    let asked = log.env.iter().any(|(k, _)| k == TUNER_VAR);
    let tuner = (log.tuner.loaded() || asked).then(|| tuner_line(&log.tuner));
    if let Some(f) = contend_nccl::CallFacts::from_log(log, bytes) {
        extra.nccl.line = Some(format!(
            "nccl {} (NCCL's log): {}; {} {} on channels {}..{}{}{}",
            f.version,
            f.transports(),
            f.algorithm,
            f.protocol,
            f.channel_lo,
            f.channel_hi,
            f.comm_channels
                .map(|c| format!(" of {c}"))
                .unwrap_or_default(),
            tuner.as_ref().map(|t| format!("; {t}")).unwrap_or_default()
        ));
        extra.nccl.decisions = Some(f);
    }
    if tuner.is_some() {
        extra.nccl.tuner = Some(log.tuner.clone());
    }
}

/// The tuner plugin in a few words: loaded (name, ABI, from where) or why not.
pub fn tuner_line(t: &contend_nccl::log::LogTuner) -> String {
    if t.loaded() {
        format!(
            "tuner plugin {} (v{}) loaded{}",
            t.name.as_deref().unwrap_or("?"),
            t.abi.map_or("?".to_string(), |v| v.to_string()),
            t.loaded_from
                .as_ref()
                .map(|p| format!(" from {p}"))
                .unwrap_or_default()
        )
    } else {
        format!(
            "no tuner plugin loaded{}",
            t.failures
                .first()
                .map(|f| format!(": {f}"))
                .unwrap_or_default()
        )
    }
}

/// The variable that names NCCL's tuner plugin (`src/plugin/tuner.cc`).
pub const TUNER_VAR: &str = "NCCL_TUNER_PLUGIN";

/// Points NCCL at the tuner plugin `lib` (and the contend plugin at
/// `table`, through `CONTEND_TUNER_TABLE`) for this process and its
/// children: absolute paths, so NCCL opens that file and no other. Call
/// before any thread starts, as [`prepare_env`].
pub fn use_tuner(lib: &Path, table: Option<&Path>) -> Result<(), HwError> {
    let abs = |p: &Path, what: &str| {
        std::fs::canonicalize(p).map_err(|e| HwError::Io {
            path: p.display().to_string(),
            message: format!("{what}: {e}"),
        })
    };
    let lib = abs(lib, "the tuner plugin")?;
    // SAFETY: called from the main thread before other threads exist.
    unsafe { std::env::set_var(TUNER_VAR, &lib) };
    if let Some(t) = table {
        let t = abs(t, "the tuner table")?;
        // SAFETY: as above.
        unsafe { std::env::set_var("CONTEND_TUNER_TABLE", &t) };
    }
    Ok(())
}

/// Every `NCCL_*` variable of the environment, for the record.
pub fn nccl_env() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("NCCL_"))
        .collect();
    v.sort();
    v
}

/// Whether libnccl can be found the way cudarc looks for it.
pub fn nccl_present() -> bool {
    // SAFETY: only dlopens candidate names.
    unsafe { sys::is_culib_present() }
}

/// NCCL's version, e.g. `2.28.3`.
pub fn version() -> Result<String, HwError> {
    if !nccl_present() {
        return Err(HwError::NoNccl);
    }
    let v = result::get_nccl_version().map_err(|e| HwError::Nccl {
        call: "ncclGetVersion",
        code: format!("{e:?}"),
    })?;
    Ok(format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100))
}

/// Communicators and buffers for a team of GPUs.
#[derive(Debug)]
pub struct NcclTeam {
    ids: Vec<usize>,
    comms: Vec<sys::ncclComm_t>,
    input: Vec<DevMem>,
    output: Vec<DevMem>,
    dtype: Dtype,
    pub version: String,
    /// NCCL's own decisions for these ranks (a captured log), put into
    /// each record.
    pub decisions: Option<NcclLog>,
}

// SAFETY: each communicator is used by one thread at a time (its rank's).
unsafe impl Send for NcclTeam {}
unsafe impl Sync for NcclTeam {}

impl NcclTeam {
    pub fn new(
        devices: &Devices,
        ids: &[usize],
        cap: usize,
        dtype: Dtype,
    ) -> Result<NcclTeam, HwError> {
        let version = version()?;
        if dtype == Dtype::Fp16 {
            return Err(HwError::Unsupported(
                "the NCCL baseline here runs bf16 and fp32".into(),
            ));
        }
        let mut comms: Vec<sys::ncclComm_t> = vec![std::ptr::null_mut(); ids.len()];
        let devlist: Vec<i32> = ids
            .iter()
            .map(|&i| devices.gpus[i].ordinal as i32)
            .collect();
        // SAFETY: `comms` has room for one communicator per device.
        unsafe { result::comm_init_all(comms.as_mut_ptr(), ids.len() as i32, devlist.as_ptr()) }
            .map_err(|e| HwError::Nccl {
                call: "ncclCommInitAll",
                code: format!("{e:?}"),
            })?;
        let dev = |bytes| {
            ids.iter()
                .map(|&i| DevMem::alloc(&devices.gpus[i], bytes))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(NcclTeam {
            ids: ids.to_vec(),
            comms,
            input: dev(cap)?,
            output: dev(cap)?,
            dtype,
            version,
            decisions: None,
        })
    }
}

impl Collective for NcclTeam {
    fn algorithm(&self) -> contend_workload::Measured {
        contend_workload::Measured::NCCL
    }
    fn gpu_ids(&self) -> &[usize] {
        &self.ids
    }
    fn input(&self, rank: usize) -> &DevMem {
        &self.input[rank]
    }
    fn output(&self, rank: usize) -> &DevMem {
        &self.output[rank]
    }
    fn launch(
        &self,
        rank: usize,
        _gpu: &Gpu,
        bytes: usize,
        stream: StreamRef<'_>,
    ) -> Result<(), HwError> {
        let (dt, es) = match self.dtype {
            Dtype::Bf16 => (sys::ncclDataType_t::ncclBfloat16, 2),
            _ => (sys::ncclDataType_t::ncclFloat32, 4),
        };
        // SAFETY: buffers hold at least `bytes`; the stream belongs to this rank's GPU.
        unsafe {
            result::all_reduce(
                self.input[rank].ptr as *const c_void,
                self.output[rank].ptr as *mut c_void,
                bytes / es,
                dt,
                sys::ncclRedOp_t::ncclSum,
                self.comms[rank],
                stream.raw() as sys::cudaStream_t,
            )
        }
        .map(|_| ())
        .map_err(|e| HwError::Nccl {
            call: "ncclAllReduce",
            code: format!("{e:?}"),
        })
    }
    fn describe(&self, bytes: usize, extra: &mut contend_workload::Extra) {
        extra.nccl.nccl_version = Some(self.version.clone());
        extra.nccl.env.extend(nccl_env());
        if let Some(log) = &self.decisions {
            attach_decisions(log, bytes as u64, extra);
        }
    }
}

impl Drop for NcclTeam {
    fn drop(&mut self) {
        if crate::driver::is_poisoned() {
            return;
        }
        for c in self.comms.drain(..) {
            if !c.is_null() {
                // SAFETY: created by ncclCommInitAll, destroyed once.
                let _ = unsafe { result::comm_destroy(c) };
            }
        }
    }
}
