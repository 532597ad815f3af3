//! The CUDA sources in `kernels/`, embedded in the binary and compiled at run
//! time by NVRTC for the GPU's architecture. Nothing is cached here: opening the devices
//! ([`crate::Devices::open`]) compiles once per distinct architecture among its
//! GPUs ([`compile_all`]) and each GPU loads the result into its own context
//! and keeps the module and its functions ([`crate::driver::Gpu`]).

#![allow(unsafe_code)]

use crate::error::HwError;
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};
use std::fmt;

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
            "island_two_shot_bf16",
            "island_two_shot_f32",
            "staged_push_bf16",
            "staged_push_f32",
            "two_shot_push_fp32acc_bf16",
            "two_shot_push_fp32acc_f32",
            "ce_ring_step_bf16",
            "ce_ring_step_f32",
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

/// A GPU architecture NVRTC compiles for (`sm_90`, ...), one of [`ARCHES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Arch {
    name: &'static str,
    major: i32,
    minor: i32,
}

macro_rules! arches {
    ($( ($major:literal, $minor:literal) ),* $(,)?) => {
        /// Every architecture the backend can compile for: compute
        /// capabilities 7.0 to 12.1 (NVRTC itself may refuse the oldest).
        pub const ARCHES: &[Arch] = &[
            $( Arch {
                name: concat!("sm_", stringify!($major), stringify!($minor)),
                major: $major,
                minor: $minor,
            }, )*
        ];
    };
}

arches![
    (7, 0),
    (7, 2),
    (7, 5),
    (8, 0),
    (8, 6),
    (8, 7),
    (8, 9),
    (9, 0),
    (10, 0),
    (10, 1),
    (10, 3),
    (11, 0),
    (12, 0),
    (12, 1),
];

impl Arch {
    /// The architecture of a GPU of compute capability `major.minor`.
    pub fn from_cc(major: i32, minor: i32) -> Result<Arch, HwError> {
        ARCHES
            .iter()
            .find(|a| (a.major, a.minor) == (major, minor))
            .copied()
            .ok_or_else(|| HwError::UnknownArch(format!("sm_{major}{minor}")))
    }

    /// `sm_90` and so on.
    pub fn from_name(name: &str) -> Result<Arch, HwError> {
        ARCHES
            .iter()
            .find(|a| a.name == name)
            .copied()
            .ok_or_else(|| HwError::UnknownArch(name.to_string()))
    }

    /// `sm_90` and so on.
    pub fn name(self) -> &'static str {
        self.name
    }

    /// Compute capability (major, minor).
    pub fn cc(self) -> (i32, i32) {
        (self.major, self.minor)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
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

/// Compiles one kernel file to PTX for `arch`.
pub fn compile(file: &str, src: &str, arch: Arch) -> Result<Vec<u8>, HwError> {
    compile_text(file, full_source(file, src), arch)
}

/// Compiles `text` (prelude included) as kernel file `file`.
fn compile_text(file: &str, text: String, arch: Arch) -> Result<Vec<u8>, HwError> {
    if !nvrtc_present() {
        return Err(HwError::NoNvrtc);
    }
    let opts = CompileOptions {
        arch: Some(arch.name()),
        include_paths: include_paths(),
        options: vec!["--std=c++17".into(), "-default-device".into()],
        name: Some(file.to_string()),
        ..Default::default()
    };
    let ptx = compile_ptx_with_opts(text, opts).map_err(|e| HwError::Compile {
        file: file.into(),
        arch: arch.name().into(),
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

/// The PTX of every kernel file for one architecture.
#[derive(Clone, Debug)]
pub struct Ptx {
    pub arch: Arch,
    /// (file name, NUL-terminated PTX), one per entry of [`SOURCES`].
    pub files: Vec<(&'static str, Vec<u8>)>,
}

/// Compiles every kernel file for `arch`.
pub fn compile_all(arch: Arch) -> Result<Ptx, HwError> {
    let files = SOURCES
        .iter()
        .map(|(file, src)| Ok((*file, compile(file, src, arch)?)))
        .collect::<Result<_, HwError>>()?;
    Ok(Ptx { arch, files })
}

/// The kernels [`ENTRY_POINTS`] lists for `file`.
pub fn entry_points(file: &str) -> &'static [&'static str] {
    ENTRY_POINTS
        .iter()
        .find(|(f, _)| *f == file)
        .map(|(_, n)| *n)
        .unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm90() -> Arch {
        Arch::from_name("sm_90").unwrap()
    }

    #[test]
    fn arches_come_from_a_fixed_table() {
        let h200 = Arch::from_cc(9, 0).unwrap();
        assert_eq!(h200.name(), "sm_90");
        assert_eq!(h200, sm90());
        let blackwell = Arch::from_cc(12, 0).unwrap();
        assert_eq!(blackwell.to_string(), "sm_120");
        assert_eq!(blackwell.cc(), (12, 0));
        for a in ARCHES {
            assert_eq!(Arch::from_cc(a.major, a.minor).unwrap(), *a);
            assert_eq!(Arch::from_name(a.name()).unwrap(), *a);
            assert_eq!(a.name(), format!("sm_{}{}", a.major, a.minor));
        }
        let e = Arch::from_cc(9, 9).unwrap_err().to_string();
        assert!(e.starts_with("GPU architecture sm_99 "), "{e}");
        assert!(!e.contains('\n'));
        assert!(Arch::from_name("compute_90").is_err());
    }

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
        let e = compile_text(file, bad, sm90()).unwrap_err().to_string();
        assert!(e.contains("size of ArArgs differs"), "{e}");
        let bad = good.replace("sizeof(ArArgs::nvec) == 8", "sizeof(ArArgs::nvec) == 4");
        let e = compile_text(file, bad, sm90()).unwrap_err().to_string();
        assert!(e.contains("size of ArArgs::nvec differs"), "{e}");
    }
}
