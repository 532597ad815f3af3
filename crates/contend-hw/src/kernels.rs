//! The CUDA sources in `kernels/`, embedded in the binary and compiled at run
//! time by NVRTC for the GPU's architecture, once per process and
//! architecture (the PTX is cached; each GPU context then loads it).

#![allow(unsafe_code)]

use crate::error::HwError;
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The prelude prepended to every kernel file.
pub const COMMON: &str = include_str!("../../../kernels/common.cuh");

/// Every kernel file of `kernels/`: (file name, source).
pub const SOURCES: &[(&str, &str)] = &[
    (
        "allreduce.cu",
        include_str!("../../../kernels/allreduce.cu"),
    ),
    (
        "microbench.cu",
        include_str!("../../../kernels/microbench.cu"),
    ),
];

/// Every `extern "C"` kernel the backend launches, by file.
pub const ENTRY_POINTS: &[(&str, &[&str])] = &[
    (
        "allreduce.cu",
        &[
            "one_shot_pull_bf16",
            "one_shot_pull_f32",
            "one_shot_push_bf16",
            "one_shot_push_f32",
            "two_shot_pull_bf16",
            "two_shot_pull_f32",
            "two_shot_push_bf16",
            "two_shot_push_f32",
            "hierarchical_bf16",
            "hierarchical_f32",
        ],
    ),
    (
        "microbench.cu",
        &[
            "sm_load",
            "sm_store",
            "ping",
            "pong",
            "ping_fenced",
            "pong_fenced",
            "spin",
            "hold",
        ],
    ),
];

/// Whether libnvrtc can be loaded (never panics).
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the library by its candidate names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// `sm_90` for compute capability 9.0, and so on.
pub fn arch_name(major: i32, minor: i32) -> String {
    format!("sm_{major}{minor}")
}

fn static_arch(arch: &str) -> &'static str {
    static ARCHES: OnceLock<Mutex<Vec<&'static str>>> = OnceLock::new();
    let mut v = ARCHES
        .get_or_init(|| Mutex::new(Vec::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(a) = v.iter().find(|a| **a == arch) {
        return a;
    }
    let leaked: &'static str = Box::leak(arch.to_string().into_boxed_str());
    v.push(leaked);
    leaked
}

/// Extra include folders for NVRTC: `CONTEND_CUDA_INCLUDE` (colon separated)
/// and /usr/local/cuda/include where it exists. The kernels include no
/// header today; this keeps a future `#include <cuda_bf16.h>` working.
fn include_paths() -> Vec<String> {
    let mut v: Vec<String> = std::env::var("CONTEND_CUDA_INCLUDE")
        .map(|s| {
            s.split(':')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if std::path::Path::new("/usr/local/cuda/include").is_dir() {
        v.push("/usr/local/cuda/include".into());
    }
    v
}

/// Full source NVRTC sees for one kernel file: the prelude generated from
/// [`crate::abi`] (typedefs, limits, argument structs and their layout
/// checks), `kernels/common.cuh`, then the file.
pub fn full_source(file: &str, src: &str) -> String {
    let abi = crate::abi::prelude();
    format!("{abi}#line 1 \"common.cuh\"\n{COMMON}\n#line 1 \"{file}\"\n{src}")
}

/// Compiles one kernel file to PTX for `arch` (`sm_90`, `sm_120`, ...).
pub fn compile(file: &str, src: &str, arch: &str) -> Result<Vec<u8>, HwError> {
    compile_text(file, full_source(file, src), arch)
}

/// Compiles `text` (prelude included) as kernel file `file`.
fn compile_text(file: &str, text: String, arch: &str) -> Result<Vec<u8>, HwError> {
    if !nvrtc_present() {
        return Err(HwError::NoNvrtc);
    }
    let opts = CompileOptions {
        arch: Some(static_arch(arch)),
        include_paths: include_paths(),
        options: vec!["--std=c++17".into(), "-default-device".into()],
        name: Some(file.to_string()),
        ..Default::default()
    };
    let ptx = compile_ptx_with_opts(text, opts).map_err(|e| HwError::Compile {
        file: file.into(),
        arch: arch.into(),
        log: compile_log(&e),
    })?;
    let mut bytes = ptx
        .as_bytes()
        .map(<[u8]>::to_vec)
        .unwrap_or_else(|| ptx.to_src().into_bytes());
    if bytes.last() != Some(&0) {
        bytes.push(0);
    }
    Ok(bytes)
}

fn compile_log(e: &cudarc::nvrtc::CompileError) -> String {
    match e {
        cudarc::nvrtc::CompileError::CompileError { log, .. } => {
            log.to_string_lossy().trim().to_string()
        }
        other => format!("{other:?}"),
    }
}

/// PTX of every kernel file for `arch`, compiled once per process.
pub fn ptx_for(arch: &str) -> Result<Vec<(&'static str, Vec<u8>)>, HwError> {
    type Cache = Mutex<HashMap<String, Vec<(&'static str, Vec<u8>)>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = c.get(arch) {
        return Ok(v.clone());
    }
    let mut out = Vec::new();
    for (file, src) in SOURCES {
        out.push((*file, compile(file, src, arch)?));
    }
    c.insert(arch.to_string(), out.clone());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have_nvrtc() -> bool {
        if nvrtc_present() {
            return true;
        }
        assert!(
            std::env::var("CONTEND_REQUIRE_NVRTC").as_deref() != Ok("1"),
            "NVRTC is not on the loader path and CONTEND_REQUIRE_NVRTC=1"
        );
        eprintln!("skipped: NVRTC (libnvrtc.so.13) is not on the loader path");
        false
    }

    /// The prelude's layout checks really run: a struct size that differs
    /// from Rust's stops the compilation with a message naming it.
    #[test]
    fn a_layout_that_differs_from_rust_does_not_compile() {
        if !have_nvrtc() {
            return;
        }
        let (file, src) = SOURCES[0];
        let good = full_source(file, src);
        let want = format!(
            "sizeof(ArArgs) == {}",
            std::mem::size_of::<crate::abi::ArArgs>()
        );
        assert!(good.contains(&want), "{good}");
        let bad = good.replace(&want, "sizeof(ArArgs) == 200");
        let e = compile_text(file, bad, "sm_90").unwrap_err().to_string();
        assert!(e.contains("size of ArArgs differs"), "{e}");
        let bad = good.replace("sizeof(ArArgs::nvec) == 8", "sizeof(ArArgs::nvec) == 4");
        let e = compile_text(file, bad, "sm_90").unwrap_err().to_string();
        assert!(e.contains("size of ArArgs::nvec differs"), "{e}");
    }
}
