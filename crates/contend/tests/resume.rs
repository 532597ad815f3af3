//! Long runs survive Ctrl-C: SIGINT after the first results keeps every
//! finished result on disk, exits non-zero, and `--resume` completes the
//! run with the output an uninterrupted run prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn contend(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn result_lines(p: &Path) -> usize {
    std::fs::read_to_string(p)
        .map(|t| {
            t.split_inclusive('\n')
                .filter(|l| l.ends_with('\n') && l.starts_with("{\"result\""))
                .count()
        })
        .unwrap_or(0)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("contend-resume-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    let _ = std::fs::remove_file(&p);
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// Runs `args` whole; then with `--stream`, SIGINT once `after` results
/// are on disk, then `--resume`. Returns (whole stdout, resumed stdout).
fn interrupt_and_resume(args: &[&str], stream: &Path, after: usize) -> (String, String) {
    let ready = |t: &str| t.matches("{\"result\"").count() >= after;
    let whole = contend(args);
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    (
        String::from_utf8_lossy(&whole.stdout).into_owned(),
        interrupted_then_resumed(args, stream, &ready),
    )
}

/// `args` with `--stream`, SIGINT once the stream is `ready`, then
/// `--resume`: the resumed run's stdout.
fn interrupted_then_resumed(args: &[&str], stream: &Path, ready: &dyn Fn(&str) -> bool) -> String {
    let s = stream.to_str().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(args)
        .args(["--stream", s])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !ready(&std::fs::read_to_string(stream).unwrap_or_default()) {
        assert!(
            t.elapsed() < Duration::from_secs(300),
            "no results after 300 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(130),
        "SIGINT exits 130 (the run ended first?): {err}"
    );
    // every line on disk is whole and the count is the one stderr gives
    let text = std::fs::read_to_string(stream).unwrap();
    assert!(text.ends_with('\n'));
    for l in text.lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap();
    }
    assert!(!text.contains("\"complete\""), "interrupted, not complete");
    let kept = result_lines(stream);
    assert!(kept > 0);
    assert!(
        err.contains(&format!("interrupted: {kept} ")),
        "stderr counts the {kept} results kept: {err}"
    );
    assert!(err.contains(&format!("--resume {s}")), "{err}");
    let resumed = contend(&[args, &["--resume", s]].concat());
    let rerr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{rerr}");
    let text = std::fs::read_to_string(stream).unwrap();
    assert!(text.ends_with("}\n") && text.lines().last().unwrap().starts_with("{\"complete\""));
    // the results kept were not run again: a line per result, once
    let n = result_lines(stream);
    let total: usize = text.lines().last().unwrap()[12..]
        .trim_end_matches('}')
        .parse()
        .unwrap();
    assert_eq!(n, total, "each result once");
    String::from_utf8_lossy(&resumed.stdout).into_owned()
}

#[test]
fn an_interrupted_sweep_resumes_to_the_same_table() {
    // 2 B (one bf16 element) to 64 MiB: the 2 B–4 GiB sweep's shape (every
    // algorithm, sizes from latency- to bandwidth-bound, the largest run
    // first) in seconds
    let f = tmp("sweep.jsonl");
    let args = ["sweep", "--from", "2B", "--to", "64MiB"];
    let (whole, resumed) = interrupt_and_resume(&args, &f, 3);
    assert!(whole.contains("winner"), "{whole}");
    assert_eq!(whole, resumed);
    // a resume of another run is refused, naming what differs
    let other = contend(&[
        "sweep",
        "--from",
        "2B",
        "--to",
        "32MiB",
        "--resume",
        f.to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&other.stderr);
    assert!(!other.status.success() && e.contains("sizes: file"), "{e}");
    // and the same sweep as CSV and JSON resumes from the finished file
    for format in ["csv", "json"] {
        let a = contend(&[&args[..], &["--format", format]].concat());
        let b = contend(
            &[
                &args[..],
                &["--format", format, "--resume", f.to_str().unwrap()],
            ]
            .concat(),
        );
        let strip = |o: &std::process::Output| {
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            if format == "json" {
                let mut v: serde_json::Value = serde_json::from_str(&s).unwrap();
                for r in v["results"].as_array_mut().unwrap() {
                    r.as_object_mut().unwrap().remove("wall_ns");
                }
                v.to_string()
            } else {
                s
            }
        };
        assert_eq!(strip(&a), strip(&b), "{format}");
    }
}

#[test]
fn an_interrupted_advise_resumes_to_the_same_advice() {
    let f = tmp("advise.jsonl");
    let args = [
        "advise",
        "--topology",
        "pro6000-4x-1socket",
        "--from",
        "1KiB",
        "--to",
        "256MiB",
    ];
    let (whole, resumed) = interrupt_and_resume(&args, &f, 3);
    assert!(whole.contains("world size 4"), "{whole}");
    assert_eq!(whole, resumed);
}

#[test]
fn an_interrupted_calibrate_resumes_to_the_same_fit() {
    let a = tmp("cal-a");
    let b = tmp("cal-b");
    let f = tmp("calibrate.jsonl");
    let common = |out: &Path| {
        vec![
            "calibrate".to_string(),
            "calibration/h200x2/probe.jsonl".into(),
            "calibration/h200x2/hw.jsonl".into(),
            "--topology".into(),
            "topologies/h200-2x.toml".into(),
            "--out".into(),
            out.to_str().unwrap().to_string(),
            // the lent machine's fit sets constants on their bounds (the
            // README's "What calibrate refuses"): written with warnings
            "--force".into(),
        ]
    };
    // the whole run into a, the interrupted and resumed one into b
    let whole = contend(&common(&a).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let args_b = common(&b);
    let args_b: Vec<&str> = args_b.iter().map(String::as_str).collect();
    // interrupted in the bootstrap: the pairing and the fit are resumed
    let resumed =
        interrupted_then_resumed(&args_b, &f, &|t: &str| t.contains("\"step\":\"refit\""));
    // the interrupted run wrote nothing but its stream
    let show = |s: &str, dir: &Path| s.replace(dir.to_str().unwrap(), "OUT");
    assert_eq!(
        show(&String::from_utf8_lossy(&whole.stdout), &a),
        show(&resumed, &b)
    );
    assert!(resumed.contains("winner agreement"), "{resumed}");
    for file in ["params.toml", "fit.json"] {
        let x = std::fs::read_to_string(a.join(file)).unwrap();
        let y = std::fs::read_to_string(b.join(file)).unwrap();
        assert_eq!(show(&x, &a), show(&y, &b), "{file}");
    }
}
