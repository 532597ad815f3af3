//! Impossible and unreadable measurements as a user runs them: `contend
//! import` and `contend calibrate` on a real output with one figure made
//! impossible or one row unreadable exit 1 (not a panic's 101) with an
//! error naming the file and line, and calibrate writes no params.toml.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch folder under the target directory (cargo's place for test files).
fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-measure");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A real output (`tests/fixtures/real/`) with `from` replaced by `to`,
/// written to the scratch folder as `name` (appending `append`); its path
/// and the line edited.
fn edited(real: &str, name: &str, from: &str, to: &str, append: &str) -> (String, usize) {
    let text = std::fs::read_to_string(root().join("tests/fixtures/real").join(real)).unwrap();
    let at = text
        .find(from)
        .unwrap_or_else(|| panic!("`{from}` not in {real}"));
    let line = text[..at].matches('\n').count() + 1;
    let p = scratch().join(name);
    std::fs::write(&p, text.replacen(from, to, 1) + append).unwrap();
    (p.display().to_string(), line)
}

/// Runs `contend`; it must exit 1 (an error, not a panic's 101). Returns
/// standard error.
fn fails(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "contend {args:?}: {err}{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!err.contains("panicked"), "contend {args:?}: {err}");
    err
}

fn has(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "expected `{p}` in: {err}");
    }
}

/// A user's own nccl-tests log whose second size took 0.000001 µs: calibrate
/// used to fit on it, print a 942,226,000 % error and write params.toml.
#[test]
fn calibrate_refuses_an_nccl_tests_time_below_the_floor_and_writes_nothing() {
    let row = "    67108864      16777216     float     sum      -1   0.000001   15.25   25.42      0   4410.5   15.22   25.36      0\n";
    let (f, line) = edited(
        "nccl-tests/tinygrad-6x4090-prompt.log",
        "mine.log",
        "# Out of bounds values : 0 OK",
        &format!("{row}# Out of bounds values : 0 OK"),
        "",
    );
    let out = scratch().join("calib-floor");
    let _ = std::fs::remove_dir_all(&out);
    let e = fails(&[
        "calibrate",
        &f,
        "--topology",
        "topologies/rtx4090-8x-gen4.toml",
        "--out",
        &out.display().to_string(),
        "--bootstrap",
        "0",
        "--max-iters",
        "2",
        "--tlp-checks",
        "0",
    ]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "impossible measurement",
            "0.000001 us is below 0.1 us",
        ],
    );
    assert!(
        !out.join("params.toml").exists(),
        "params.toml written: {e}"
    );
    assert!(!out.join("fit.json").exists(), "fit.json written: {e}");
}

/// A p2pBandwidthLatencyTest cell of 1e308 GB/s used to become a 0 ns record.
#[test]
fn import_and_calibrate_refuse_a_bandwidth_cell_of_1e308() {
    let (f, line) = edited(
        "p2pbandwidthlatencytest/tinygrad-6x4090-bidirectional.txt",
        "p2p-1e308.txt",
        "50.31",
        "1e308",
        "",
    );
    let e = fails(&["import", &f]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "impossible measurement",
            "1e308",
            "above 900 GB/s",
        ],
    );
    let out = scratch().join("calib-1e308");
    let _ = std::fs::remove_dir_all(&out);
    let e = fails(&[
        "calibrate",
        &f,
        "--topology",
        "topologies/rtx4090-8x-gen4.toml",
        "--out",
        &out.display().to_string(),
        "--bootstrap",
        "0",
        "--max-iters",
        "2",
        "--tlp-checks",
        "0",
    ]);
    has(&e, &[&format!("{f}:{line}:"), "impossible measurement"]);
    assert!(
        !out.join("params.toml").exists(),
        "params.toml written: {e}"
    );
}

/// An nccl-tests row with a dtype typo used to be filed as other text and
/// its size to vanish.
#[test]
fn import_names_the_column_of_a_row_that_does_not_parse() {
    let row = "        1024           256     float     sum      -1    147.1    0.01    0.01      0    123.1    0.01    0.02      0";
    let (f, line) = edited(
        "nccl-tests/ztan-2host-16xh100.md",
        "flaot.md",
        row,
        &row.replacen("float", "flaot", 1),
        "",
    );
    let col = row.find("float").unwrap() + 1;
    let e = fails(&["import", &f]);
    has(
        &e,
        &[
            &format!("{f}:{line}:{col}: type `flaot` (column 3 of the table)"),
            "expected one of",
        ],
    );
}
