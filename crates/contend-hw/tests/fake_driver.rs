//! A library that loads as libcuda but lacks the driver's functions (a stub,
//! some other library under that name, a driver too old) makes opening the
//! machine fail with one sentence naming the library and the missing symbol,
//! and nothing panics (cudarc's loader would panic on the first call, and
//! the default panic hook would print a backtrace even if it were caught).
//!
//! The fake libcuda.so is a tiny cdylib built with rustc at test time; the
//! test runs itself again with LD_LIBRARY_PATH pointing at it, so the loader
//! finds it before any real driver. Linux only; skipped with a printed
//! reason when rustc cannot build the library.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

const CHILD: &str = "CONTEND_FAKE_DRIVER_CHILD";

/// Builds `dir/libcuda.so` exporting `symbols` (functions returning 0).
fn fake_libcuda(dir: &Path, symbols: &[&str]) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut src = String::new();
    for s in symbols {
        src.push_str(&format!(
            "#[no_mangle] pub extern \"C\" fn {s}() -> i32 {{ 0 }}\n"
        ));
    }
    let rs = dir.join("fake.rs");
    std::fs::write(&rs, src).map_err(|e| e.to_string())?;
    let lib = dir.join("libcuda.so");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .args(["--crate-type", "cdylib", "--edition", "2021", "-o"])
        .arg(&lib)
        .arg(&rs)
        .output()
        .map_err(|e| format!("rustc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "rustc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(lib)
}

/// Runs the `child` test of this binary with only `dir` on the loader path;
/// its stdout and stderr together.
fn run_child(dir: &Path) -> String {
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("LD_LIBRARY_PATH", dir)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run the test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child failed:\n{text}");
    text
}

/// In the child process: open the machine and print the error.
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let e = contend_hw::open(false).expect_err("a fake libcuda cannot open");
    println!("ERROR: {e}");
}

fn check(case: &str, symbols: &[&str], missing: &str) {
    let dir = std::env::temp_dir().join(format!(
        "contend-fake-libcuda-{}-{case}",
        std::process::id()
    ));
    let lib = match fake_libcuda(&dir, symbols) {
        Ok(lib) => lib,
        Err(why) => {
            eprintln!("skipped: cannot build a fake libcuda.so ({why})");
            return;
        }
    };
    let out = run_child(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let want = format!(
        "ERROR: the CUDA driver library {} has no `{missing}`: ",
        lib.display()
    );
    // The test harness may print "test child ... " on the same line.
    let line = out
        .lines()
        .find_map(|l| l.find("ERROR: ").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("no error line:\n{out}"));
    assert!(line.starts_with(&want), "{line}\nwanted {want}");
    assert!(!out.contains("panicked"), "{out}");
    assert!(!out.contains("stack backtrace"), "{out}");
}

#[test]
fn a_libcuda_without_cuinit_is_one_sentence() {
    check("empty", &["someOtherFunction"], "cuInit");
}

#[test]
fn a_libcuda_missing_a_later_symbol_names_it() {
    check(
        "partial",
        &["cuInit", "cuDeviceGetCount"],
        "cuDriverGetVersion",
    );
}
