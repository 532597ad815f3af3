//! The hostile-input issue's results that cannot be: an allreduce smaller
//! than one element (it simulated in 0.00 us under `nccl`, won a sweep and
//! printed `inf` GB/s), and `--resume` lines that are not a job of the run
//! (another size, a relabelled algorithm, a placement or fidelity the run
//! does not have) or whose times are no times (`-1e300`, 0). Each ends
//! within a second with exit 1 and an error naming the flag, or the file,
//! line and field, never a panic or a printed result.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch folder under the target directory (cargo's place for test files).
fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-results");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn contend(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

/// Runs `contend`, which must fail with exit 1 (not a panic's 101) within
/// a second, printing nothing on standard output; returns its stderr.
fn fails(args: &[&str]) -> String {
    let t0 = Instant::now();
    let out = contend(args);
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "contend {args:?} exited with {:?}: {err}",
        out.status.code()
    );
    assert!(!err.contains("panicked"), "contend {args:?}: {err}");
    assert!(
        took < Duration::from_secs(1),
        "contend {args:?} took {took:?}: {err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("winner") && !stdout.contains("GB/s") && !stdout.contains("\"result\""),
        "contend {args:?} printed results: {stdout}"
    );
    err
}

fn has(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "expected `{p}` in: {err}");
    }
}

/// A shipped file with each `from` replaced by its `to`, written to the
/// scratch folder as `name`; returns its path and the line first changed.
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

#[test]
fn a_sweep_from_below_one_element_names_the_flag() {
    // nccl simulated 1 B in 0.00 us, won the sweep with a crossover
    let e = fails(&["sweep", "--from", "1B", "--to", "8B"]);
    has(
        &e,
        &["--from: ", "size 1 B is below one element of bf16 = 2 B"],
    );
    // and nccl-tests' table printed `inf` GB/s
    let e = fails(&[
        "sweep",
        "--from",
        "1B",
        "--to",
        "8B",
        "--format",
        "nccl-tests",
    ]);
    has(
        &e,
        &["--from: ", "size 1 B is below one element of bf16 = 2 B"],
    );
    let e = fails(&["sweep", "--sizes", "4KiB,1,43008"]);
    has(
        &e,
        &["--sizes: ", "size 1 B is below one element of bf16 = 2 B"],
    );
    // one element is an allreduce (and so is a size between elements:
    // contend's kernels move the bytes as given, NCCL whole elements)
    for sizes in ["2", "3"] {
        let ok = contend(&["sweep", "--sizes", sizes, "--format", "csv"]);
        let err = String::from_utf8_lossy(&ok.stderr);
        assert!(ok.status.success(), "--sizes {sizes}: {err}");
        let csv = String::from_utf8_lossy(&ok.stdout);
        assert!(csv.lines().count() > 1, "{csv}");
        for row in csv.lines().skip(1) {
            let median: f64 = row.split(',').nth(4).unwrap().parse().unwrap();
            assert!(median > 0.0 && median.is_finite(), "{row}");
        }
    }
}

#[test]
fn a_scenario_size_below_one_element_is_located() {
    let (f, line) = edited(
        "scenarios/allreduce-sweep-pro6000-2socket.toml",
        "sweep-from-1.toml",
        &[(r#"from = "1 KiB""#, r#"from = "1 B""#)],
    );
    let e = fails(&["simulate", &f]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "(field `workload.sweep.from`)",
            "size 1 B is below one element of bf16 = 2 B",
        ],
    );
    // an fp32 allreduce of 2 B is half an element
    let (f, line) = edited(
        "scenarios/hw-allreduce-fp32-h200x2.toml",
        "fp32-2b.toml",
        &[(r#"sizes = ["4 KiB","#, r#"sizes = ["2 B","#)],
    );
    let e = fails(&["simulate", &f]);
    has(
        &e,
        &[
            &format!("{f}:{line}:"),
            "(field `workload.sizes`)",
            "size 2 B is below one element of fp32 = 4 B",
        ],
    );
}

/// A finished stream of `args` (run once per test binary and name).
fn stream_of(name: &str, args: &[&str]) -> (PathBuf, String) {
    let p = scratch().join(name);
    let _ = std::fs::remove_file(&p);
    let out = contend(&[args, &["--stream", p.to_str().unwrap()]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&p).unwrap();
    (p, text)
}

/// `text` with result line `n` (1-based, the header is line 1) changed by
/// `edit`, written as `name`; returns its path.
fn with_line(text: &str, n: usize, name: &str, edit: impl Fn(&mut Value)) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut v: Value = serde_json::from_str(&lines[n - 1]).unwrap();
    edit(&mut v);
    lines[n - 1] = v.to_string();
    let p = scratch().join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p.display().to_string()
}

const SWEEP: [&str; 5] = ["sweep", "--sizes", "1KiB,4KiB", "--fidelity", "flow"];

fn resume(args: &[&str], f: &str) -> String {
    fails(&[args, &["--resume", f]].concat())
}

#[test]
fn a_resumed_line_of_another_size_or_algorithm_is_located() {
    let (_, text) = stream_of("sweep.jsonl", &SWEEP);
    let rec = |v: &mut Value| v["result"]["records"][0].take();
    let set = |key: &'static str, x: Value| {
        move |v: &mut Value| {
            let mut r = rec(v);
            r[key] = x.clone();
            v["result"]["records"][0] = r;
        }
    };
    // a size the run does not have: kept as a 12345 B row, a slot never run
    let f = with_line(&text, 2, "size.jsonl", set("size_bytes", 12345.into()));
    let e = resume(&SWEEP, &f);
    has(
        &e,
        &[
            &format!("{f}:2: "),
            "size 12345 B is not a size of this run (sizes: 1 KiB, 4 KiB)",
        ],
    );
    // a size of the run, but not this line's run
    let line3: Value = serde_json::from_str(text.lines().nth(2).unwrap()).unwrap();
    let theirs = line3["result"]["records"][0]["size_bytes"]
        .as_u64()
        .unwrap();
    let other = if theirs == 1024 { 4096 } else { 1024 };
    let f = with_line(&text, 3, "size2.jsonl", set("size_bytes", other.into()));
    let e = resume(&SWEEP, &f);
    let run = line3["result"]["run"].as_str().unwrap();
    has(&e, &[&format!("{f}:3: "), &format!("`{run}`"), "size"]);
    // relabelled to another algorithm: two nccl columns, one never run
    let line2: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    let alg = line2["result"]["records"][0]["algorithm"].as_str().unwrap();
    let to = if alg == "nccl" { "ce-ring" } else { "nccl" };
    let f = with_line(&text, 2, "alg.jsonl", set("algorithm", to.into()));
    let e = resume(&SWEEP, &f);
    has(
        &e,
        &[
            &format!("{f}:2: "),
            &format!("algorithm {to}"),
            &format!("`{}`", line2["result"]["run"].as_str().unwrap()),
        ],
    );
    // the label too: the job's label is not that
    let f = with_line(&text, 2, "label.jsonl", |v| {
        let run = v["result"]["run"].as_str().unwrap().replacen(alg, to, 1);
        v["result"]["run"] = run.into();
        let mut r = rec(v);
        r["algorithm"] = to.into();
        v["result"]["records"][0] = r;
    });
    let e = resume(&SWEEP, &f);
    has(&e, &[&format!("{f}:2: "), "run "]);
    // a placement and a fidelity the run does not have
    let f = with_line(&text, 2, "fid.jsonl", set("fidelity", "tlp".into()));
    let e = resume(&SWEEP, &f);
    has(
        &e,
        &[
            &format!("{f}:2: "),
            "fidelity tlp is not a fidelity of this run (fidelities: flow)",
        ],
    );
    let host = text
        .lines()
        .position(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["result"]["records"][0]["placement"] == "peer"
        })
        .unwrap()
        + 1;
    let f = with_line(&text, host, "pl.jsonl", set("placement", "host".into()));
    let e = resume(&SWEEP, &f);
    has(
        &e,
        &[
            &format!("{f}:{host}: "),
            "placement host is not a placement of this run (placements: peer)",
        ],
    );
    // a job index past the run's, and one given twice
    let f = with_line(&text, 2, "job.jsonl", |v| v["result"]["job"] = 99.into());
    let e = resume(&SWEEP, &f);
    has(
        &e,
        &[&format!("{f}:2: "), "run 99 is not one of this run's 24"],
    );
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, lines[1]);
    lines.pop(); // the end line: the copy makes one more
    let p = scratch().join("twice.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let f = p.display().to_string();
    let e = resume(&SWEEP, &f);
    has(&e, &[&format!("{f}:4: "), "already at line 2"]);
}

#[test]
fn a_resumed_time_that_is_no_time_is_located_and_never_printed() {
    let (_, text) = stream_of("times.jsonl", &SWEEP);
    let line2: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    let alg = line2["result"]["records"][0]["algorithm"]
        .as_str()
        .unwrap()
        .to_string();
    for (name, field, x) in [
        ("neg.jsonl", "total_ns", serde_json::json!(-1e300)),
        ("zero.jsonl", "total_ns", serde_json::json!(0.0)),
        ("median.jsonl", "median_ns", serde_json::json!(-1e300)),
        ("huge.jsonl", "total_ns", serde_json::json!(1e300)),
    ] {
        let f = with_line(&text, 2, name, |v| {
            let r = &mut v["result"]["records"][0];
            if field == "median_ns" {
                r["stats"][field] = x.clone();
            } else {
                r[field] = x.clone();
            }
        });
        let e = resume(&SWEEP, &f);
        let shown = if field == "median_ns" {
            "stats.median_ns"
        } else {
            field
        };
        has(&e, &[&format!("{f}:2: "), &alg, shown]);
        // never a 300-digit number
        assert!(!e.contains("0000000000"), "{e}");
        if name != "huge.jsonl" {
            has(&e, &["above zero"]);
        }
    }
    // the whole stream resumes, and prints what the run prints
    let (p, _) = stream_of("times-ok.jsonl", &SWEEP);
    let whole = contend(&SWEEP);
    let again = contend(&[&SWEEP[..], &["--resume", p.to_str().unwrap()]].concat());
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(whole.stdout, again.stdout);
}

#[test]
fn a_resumed_verify_step_line_of_another_size_is_located() {
    // the verify step's runs have no size of their own: the step's is theirs
    let args = ["simulate", "--fidelity", "flow"];
    let (_, text) = stream_of("verify.jsonl", &args);
    let f = with_line(&text, 2, "verify-size.jsonl", |v| {
        v["result"]["records"][0]["size_bytes"] = 12345.into();
    });
    let e = resume(&args, &f);
    has(
        &e,
        &[
            &format!("{f}:2: "),
            "size 12345 B is not a size of this run (sizes: 42 KiB)",
        ],
    );
}
