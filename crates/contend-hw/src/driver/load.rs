//! Finding and loading the CUDA driver without a panic: whether libcuda
//! loads, whether it has every symbol the backend calls (cudarc looks each
//! up on its first call and panics where one is missing), `cuInit`, and the
//! driver's CUDA version.

#![allow(unsafe_code)]

use super::{ck, err_name};
use crate::error::HwError;
use cudarc::driver::sys;

/// Whether libcuda can be loaded (tries to dlopen it; never panics).
pub fn driver_present() -> bool {
    // SAFETY: only dlopens the library under its candidate names.
    unsafe { sys::is_culib_present() }
}

/// Every libcuda symbol the backend calls. cudarc looks each one up on its
/// first call and panics if the library lacks it, so [`init`] checks them
/// all first (a unit test keeps this list complete).
pub const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDeviceGetCount",
    "cuDriverGetVersion",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetPCIBusId",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDeviceCanAccessPeer",
    "cuDeviceGetP2PAttribute",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuCtxEnablePeerAccess",
    "cuStreamCreate",
    "cuStreamQuery",
    "cuStreamDestroy_v2",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuFuncGetAttribute",
    "cuLaunchKernel",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemsetD8Async",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyPeerAsync",
    "cuMemcpyAsync",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuMemHostAlloc",
    "cuMemHostGetDevicePointer_v2",
    "cuMemFreeHost",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventElapsedTime_v2",
    "cuEventDestroy_v2",
    "cuGraphInstantiateWithFlags",
    "cuGraphUpload",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuGraphDestroy",
];

/// The first of `symbols` that `has` says the library lacks.
fn first_missing<'a>(symbols: &[&'a str], has: impl Fn(&str) -> bool) -> Option<&'a str> {
    symbols.iter().copied().find(|s| !has(s))
}

/// The path of the libcuda this process loaded, as the loader mapped it
/// (Linux), else its usual name.
fn loaded_libcuda() -> String {
    std::fs::read_to_string("/proc/self/maps")
        .ok()
        .and_then(|maps| {
            maps.lines()
                .filter_map(|l| l.split_whitespace().nth(5))
                .find(|path| {
                    std::path::Path::new(path)
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("libcuda.so"))
                })
                .map(str::to_string)
        })
        .unwrap_or_else(|| "libcuda.so".to_string())
}

/// Loads and initialises the driver; the number of GPUs it sees.
///
/// A library that loads but lacks a symbol the backend calls (not a
/// driver, a stub, or too old) is [`HwError::DriverSymbol`], found before
/// any call into it, so nothing panics.
pub fn init() -> Result<usize, HwError> {
    if !driver_present() {
        return Err(HwError::NoDriver);
    }
    // SAFETY: the library is present, so culib() loads it (trying the same
    // names as driver_present) instead of panicking; looking a symbol up
    // runs no code of the library.
    let lib = unsafe { sys::culib() };
    let has = |name: &str| unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_ok();
    if let Some(symbol) = first_missing(REQUIRED_SYMBOLS, has) {
        return Err(HwError::DriverSymbol {
            library: loaded_libcuda(),
            symbol,
        });
    }
    let r = unsafe { sys::cuInit(0) };
    match r {
        sys::CUresult::CUDA_SUCCESS => {}
        sys::CUresult::CUDA_ERROR_NO_DEVICE => {
            return Err(HwError::NoDevice("cuInit: CUDA_ERROR_NO_DEVICE".into()));
        }
        other => return Err(HwError::NoDevice(format!("cuInit: {}", err_name(other)))),
    }
    let mut n = 0;
    ck(unsafe { sys::cuDeviceGetCount(&mut n) }, "cuDeviceGetCount")?;
    if n <= 0 {
        return Err(HwError::NoDevice("the driver sees 0 GPUs".into()));
    }
    Ok(n as usize)
}

/// CUDA version the driver supports, e.g. `13.0`.
pub fn driver_cuda_version() -> Result<String, HwError> {
    let mut v = 0;
    ck(
        unsafe { sys::cuDriverGetVersion(&mut v) },
        "cuDriverGetVersion",
    )?;
    Ok(format!("{}.{}", v / 1000, (v % 1000) / 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `sys::cu*` function the crate calls is checked by `init`.
    #[test]
    fn every_driver_call_is_a_required_symbol() {
        // every source file of the crate, its folders' too
        let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
        let mut files = vec![];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        assert!(
            files.iter().any(|f| f.ends_with("driver/memory.rs")),
            "{files:?}"
        );
        let mut used = std::collections::BTreeSet::new();
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices("sys::cu") {
                let name: String = text[i + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // Calls only: not types (`cudaStream_t` of NCCL) nor the
                // loader (`culib`).
                let call = text[i + 5 + name.len()..].starts_with('(');
                if call && !name.starts_with("cuda") && name != "culib" {
                    used.insert(name);
                }
            }
        }
        assert!(used.contains("cuInit") && used.len() > 30, "{used:?}");
        let required: std::collections::BTreeSet<String> =
            REQUIRED_SYMBOLS.iter().map(|s| s.to_string()).collect();
        let missing: Vec<&String> = used.difference(&required).collect();
        assert!(
            missing.is_empty(),
            "add to driver::REQUIRED_SYMBOLS: {missing:?}"
        );
        assert_eq!(required.len(), REQUIRED_SYMBOLS.len(), "listed twice");
    }

    #[test]
    fn a_library_without_a_symbol_is_one_sentence() {
        assert_eq!(first_missing(REQUIRED_SYMBOLS, |_| true), None);
        assert_eq!(first_missing(REQUIRED_SYMBOLS, |_| false), Some("cuInit"));
        let symbol = first_missing(REQUIRED_SYMBOLS, |s| s != "cuGraphUpload").unwrap();
        assert_eq!(symbol, "cuGraphUpload");
        let e = HwError::DriverSymbol {
            library: "/opt/fake/libcuda.so".into(),
            symbol: "cuInit",
        };
        let msg = e.to_string();
        assert!(
            msg.starts_with("the CUDA driver library /opt/fake/libcuda.so has no `cuInit`"),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
        assert!(!e.is_fatal());
    }
}
