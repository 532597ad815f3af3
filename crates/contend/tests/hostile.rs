//! The input-safety issue's list of hostile inputs, each as a user runs it:
//! every one ends within a second with an error that names the file and
//! line (or the flag, or the field) and says why, never a panic, a hang or
//! a wrong answer. (A libcuda without `cuInit`: `contend-hw/tests/fake_driver.rs`.)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch folder under the target directory (cargo's place for test files).
fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A shipped file with `from` replaced by `to` (which must occur), written
/// to the scratch folder as `name`; returns its path and the line changed.
fn edited(shipped: &str, name: &str, edits: &[(&str, &str)]) -> (String, usize) {
    let mut text = std::fs::read_to_string(root().join(shipped)).unwrap();
    let mut line = 0;
    for (from, to) in edits {
        let at = text
            .find(from)
            .unwrap_or_else(|| panic!("`{from}` not in {shipped}"));
        if line == 0 {
            line = text[..at].matches('\n').count() + 1;
        }
        text = text.replacen(from, to, 1);
    }
    let p = scratch().join(name);
    std::fs::write(&p, text).unwrap();
    (p.display().to_string(), line)
}

/// Runs `contend` and returns its standard error; it must fail (exit 1 or
/// clap's 2, not a panic's 101) within a second.
fn fails(args: &[&str]) -> String {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code();
    assert!(
        matches!(code, Some(1 | 2)),
        "contend {args:?} exited with {code:?}: {err}"
    );
    assert!(!err.contains("panicked"), "contend {args:?}: {err}");
    assert!(
        took < Duration::from_secs(1),
        "contend {args:?} took {took:?}: {err}"
    );
    err
}

fn has(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "expected `{p}` in: {err}");
    }
}

const SWEEP: &str = "scenarios/allreduce-sweep-pro6000-2socket.toml";
const VERIFY: &str = "scenarios/eagle3-verify-pro6000-2socket.toml";
const PARAMS: &str = "calibration/h200x2/params.toml";

#[test]
fn a_sweep_to_u64_max_names_the_flag() {
    // never ended (release) or panicked (debug)
    let e = fails(&["sweep", "--to", "18446744073709551615"]);
    has(
        &e,
        &["--to: ", "above the largest size contend runs (64 GiB)"],
    );
    let e = fails(&["sweep", "--to", "18446744073709551616"]);
    has(&e, &["--to", "more bytes than contend can count"]);
    let e = fails(&["sweep", "--factor", "18014398509481984"]);
    has(
        &e,
        &["--factor: ", "factor must be above 1 and at most 1024"],
    );
}

#[test]
fn a_sweep_factor_of_2_pow_54_is_located() {
    // wrapped to 0 and looped forever
    let (f, line) = edited(
        SWEEP,
        "factor.toml",
        &[("factor = 4", "factor = 18014398509481984")],
    );
    let e = fails(&["simulate", &f]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "(field `workload.sweep.factor`)",
            "factor must be above 1 and at most 1024",
        ],
    );
}

#[test]
fn verify_step_counts_and_sizes_are_located() {
    // aborted on a 100 GB allocation
    let (f, line) = edited(
        VERIFY,
        "per-layer.toml",
        &[(
            "allreduces_per_layer = 2",
            "allreduces_per_layer = 4294967295",
        )],
    );
    let e = fails(&["simulate", &f]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "(field `workload.allreduces_per_layer`)",
            "at most 100000 in one step",
        ],
    );
    // silently became a 0-byte allreduce and exited 0
    let (f, line) = edited(
        VERIFY,
        "hidden.toml",
        &[("hidden = 7168", "hidden = 9223372036854775808")],
    );
    let e = fails(&["simulate", &f]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "(field `workload.hidden`)",
            "above the largest size contend runs",
        ],
    );
    // printed "step time 0.00 us"
    let (f, line) = edited(
        VERIFY,
        "layers.toml",
        &[
            ("layers = 61", "layers = 65536"),
            ("allreduces_per_layer = 2", "allreduces_per_layer = 65536"),
        ],
    );
    let e = fails(&["simulate", &f]);
    has(
        &e,
        &[
            &format!("{f}:{}:", line + 1),
            "65536 layers x 65536 allreduces = 4294967296 allreduces: at most 100000",
        ],
    );
    // ran with no end
    let (f, line) = edited(VERIFY, "gap.toml", &[("gap_us = 20.0", "gap_us = 1e14")]);
    let e = fails(&["simulate", &f]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "(field `workload.gap_us`)",
            "above the limit of 1000000 us",
        ],
    );
}

#[test]
fn zero_repeats_is_an_error_not_one() {
    let (f, line) = edited(SWEEP, "repeats.toml", &[("repeats = 3", "repeats = 0")]);
    let e = fails(&["simulate", &f]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "(field `workload.repeats`)",
            "repeats must be 1 or more",
        ],
    );
    // the hardware flag too (checked before any GPU is opened)
    let e = fails(&[
        "hw",
        "run",
        "scenarios/hw-smoke-h200x2.toml",
        "--repeats",
        "0",
    ]);
    has(&e, &["--repeats", "0 is not in 1..=100000"]);
}

#[test]
fn a_link_latency_that_would_wrap_simulated_time_is_located() {
    // made an allreduce faster: simulated time wrapped
    let (f, line) = edited(
        "topologies/pro6000-8x-2socket.toml",
        "latency.toml",
        &[("latency_ns = 250.0", "latency_ns = 9223372036854775807")],
    );
    let e = fails(&["simulate", "--topology", &f, "--fidelity", "flow"]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "(field `latency_ns`)",
            "above the limit of 1000000000 ns (1 s)",
        ],
    );
    let e = fails(&["topo", "validate", &f]);
    has(&e, &[&format!("{f}:{line}:"), "(field `latency_ns`)"]);
}

#[test]
fn a_flag_larger_than_a_tlp_is_located() {
    // ran forever at TLP fidelity with host flags; deadlocked with peer ones
    let (f, line) = edited(
        PARAMS,
        "flag.toml",
        &[("flag_bytes = 8", "flag_bytes = 32769")],
    );
    // flags in device memory (ping-pong), in both placements (hw-smoke)
    for scenario in [
        "scenarios/transfer-pingpong.toml",
        "scenarios/hw-smoke-h200x2.toml",
    ] {
        let e = fails(&["simulate", "--params", &f, "--fidelity", "tlp", scenario]);
        has(
            &e,
            &[
                &format!("{f}:{line}:"),
                "(field `gpu.flag_bytes`)",
                "is outside 1..=4096",
                "one TLP",
            ],
        );
    }
}

#[test]
fn calibration_refuses_values_that_do_not_fit_their_type() {
    // `extra.grid = 4294967297` became 1 block through `as u32`
    let hw = std::fs::read_to_string(root().join("calibration/h200x2/hw.jsonl")).unwrap();
    let first = hw.lines().next().unwrap();
    let (key, _) = first
        .split_once(r#""grid":"#)
        .expect("a grid in hw.jsonl's first record");
    let rest = &first[key.len() + r#""grid":"#.len()..];
    let n = rest.find(|c: char| !c.is_ascii_digit()).unwrap();
    let bad = format!("{key}\"grid\":4294967297{}", &rest[n..]);
    let f = scratch().join("grid.jsonl");
    std::fs::write(&f, format!("{first}\n{bad}\n")).unwrap();
    let f = f.display().to_string();
    let out = scratch().join("calib-out");
    let e = fails(&[
        "calibrate",
        &f,
        "--topology",
        "h200-2x",
        "--out",
        &out.display().to_string(),
    ]);
    has(&e, &[&format!("{f}:2:"), "field `extra.grid`"]);
}

#[test]
fn report_on_a_hand_edited_fit_json_is_located() {
    // called `.expect` on what it read
    let dir = scratch().join("report");
    std::fs::create_dir_all(&dir).unwrap();
    let fit = std::fs::read_to_string(root().join("calibration/h200x2/report/fit.json")).unwrap();
    let fp = dir.join("fit.json");
    let d = dir.display().to_string();
    std::fs::write(&fp, &fit[..fit.len() / 3]).unwrap();
    let e = fails(&["report", &d]);
    has(&e, &[&format!("{}:", fp.display()), "cut short"]);
    let mut v: serde_json::Value = serde_json::from_str(&fit).unwrap();
    v["points"][0]["measured_ns"] = serde_json::json!(-1.0);
    std::fs::write(&fp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let e = fails(&["report", &d]);
    has(
        &e,
        &[
            &fp.display().to_string(),
            "(field `points[0].measured_ns`)",
            "is not a time",
        ],
    );
    v["points"][0]["measured_ns"] = serde_json::json!({"fast": true});
    std::fs::write(&fp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let e = fails(&["report", &d]);
    has(
        &e,
        &[
            &format!("{}:", fp.display()),
            "(field `points[0].measured_ns`)",
        ],
    );
}
