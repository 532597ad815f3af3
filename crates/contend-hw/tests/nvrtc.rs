//! Every kernel in kernels/ compiles with NVRTC for sm_90 (H200) and sm_120
//! (RTX PRO 6000 Blackwell). Needs no GPU, only libnvrtc on the loader path
//! (CI installs it from PyPI: see crates/contend-hw/CI.md). Without NVRTC the
//! compile tests are skipped with a printed reason, except when
//! `CONTEND_REQUIRE_NVRTC=1` (as .ci/run sets it): then they fail.

use contend_hw::kernels::{
    Arch, COMMON, ENTRY_POINTS, SOURCES, compile, compile_all, nvrtc_present,
};
use std::collections::BTreeSet;
use std::path::Path;

/// Whether NVRTC is there to compile with. Without it: false and a printed
/// reason, or a failure when `CONTEND_REQUIRE_NVRTC=1`.
fn have_nvrtc() -> bool {
    if nvrtc_present() {
        return true;
    }
    let msg = "NVRTC (libnvrtc.so.13) is not on the loader path; install it as crates/contend-hw/CI.md says";
    if std::env::var("CONTEND_REQUIRE_NVRTC").as_deref() == Ok("1") {
        panic!("{msg} (CONTEND_REQUIRE_NVRTC=1, so this is a failure)");
    }
    eprintln!("skipped: {msg} (set CONTEND_REQUIRE_NVRTC=1 to fail instead)");
    false
}

/// The limits, the integer typedefs and the argument struct come only from
/// the prelude contend_hw::abi generates: no kernel source defines them again.
#[test]
fn shared_definitions_live_only_in_rust() {
    let files = SOURCES
        .iter()
        .copied()
        .chain(std::iter::once(("common.cuh", COMMON)));
    for (file, src) in files {
        for (name, _, _) in contend_hw::abi::LIMITS {
            assert!(
                !src.contains(&format!("#define {name}")),
                "{file} defines {name}: it comes from contend_hw::abi"
            );
        }
        for needle in ["typedef unsigned", "struct ArArgs {"] {
            assert!(
                !src.contains(needle),
                "{file} declares `{needle}`: it comes from contend_hw::abi"
            );
        }
    }
}

#[test]
fn every_kernel_file_is_embedded() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("kernels/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cu"))
        .collect();
    let embedded: BTreeSet<String> = SOURCES.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(
        on_disk, embedded,
        "every kernels/*.cu must be listed in contend_hw::kernels::SOURCES"
    );
    let with_entries: BTreeSet<String> = ENTRY_POINTS.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(embedded, with_entries);
}

/// Every `extern "C"` kernel a file defines is one the backend loads (and
/// nothing it loads is missing), macro-generated allreduce kernels included.
#[test]
fn entry_points_match_the_sources() {
    for (file, src) in SOURCES {
        let mut found: BTreeSet<String> = BTreeSet::new();
        for line in src.lines() {
            let l = line.trim_start();
            if let Some(rest) = l.strip_prefix("extern \"C\" __global__ void ") {
                found.insert(rest.split('(').next().unwrap_or("").trim().to_string());
            }
            if let Some(rest) = l.strip_prefix("AR_KERNELS(") {
                let name = rest.trim_end_matches(')').trim();
                found.insert(format!("{name}_bf16"));
                found.insert(format!("{name}_f32"));
            }
        }
        found.retain(|n| !n.contains("NAME") && !n.starts_with("__launch_bounds__"));
        let listed: BTreeSet<String> = ENTRY_POINTS
            .iter()
            .find(|(f, _)| f == file)
            .map(|(_, e)| e.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default();
        assert_eq!(
            found, listed,
            "{file}: kernels defined vs contend_hw::kernels::ENTRY_POINTS"
        );
    }
}

#[test]
fn every_kernel_compiles_for_sm90_and_sm120() {
    if !have_nvrtc() {
        return;
    }
    for arch in ["sm_90", "sm_120"] {
        let arch = Arch::from_name(arch).unwrap();
        for (file, src) in SOURCES {
            let ptx = compile(file, src, arch).unwrap_or_else(|e| panic!("{e}"));
            let text = String::from_utf8_lossy(&ptx);
            let entries = ENTRY_POINTS
                .iter()
                .find(|(f, _)| f == file)
                .map(|(_, e)| *e)
                .unwrap_or(&[]);
            for name in entries {
                assert!(
                    text.contains(&format!(".entry {name}(")),
                    "{file} for {arch}: no kernel `{name}` in the PTX"
                );
            }
            // 16-byte vector accesses are really emitted.
            assert!(
                text.contains(".v4.u32"),
                "{file} for {arch}: no 16-byte vector access"
            );
            // No peer atomics: the allreduce kernels use atomics only on
            // their own counter (one atom.add per block), never elsewhere.
            let atoms = text.matches("atom.").count();
            if *file == "allreduce.cu" {
                assert!(
                    atoms <= entries.len(),
                    "{file}: {atoms} atomic instructions (one per kernel expected)"
                );
            } else {
                assert_eq!(atoms, 0, "{file}: atomics in the microbenchmarks");
            }
        }
    }
}

#[test]
fn a_broken_kernel_reports_the_compiler_log() {
    if !have_nvrtc() {
        return;
    }
    let e = compile(
        "broken.cu",
        "extern \"C\" __global__ void k() { undefined_thing(); }",
        Arch::from_name("sm_90").unwrap(),
    )
    .unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains("broken.cu") && s.contains("undefined_thing"),
        "{s}"
    );
}

/// What the devices compile once per architecture: every file, in order.
#[test]
fn compile_all_gives_every_file_for_the_arch() {
    if !have_nvrtc() {
        return;
    }
    let arch = Arch::from_cc(9, 0).unwrap();
    let ptx = compile_all(arch).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ptx.arch, arch);
    let files: Vec<&str> = ptx.files.iter().map(|(f, _)| *f).collect();
    let want: Vec<&str> = SOURCES.iter().map(|(f, _)| *f).collect();
    assert_eq!(files, want);
    for (file, image) in &ptx.files {
        assert_eq!(image.last(), Some(&0), "{file}: PTX must end with NUL");
    }
}
