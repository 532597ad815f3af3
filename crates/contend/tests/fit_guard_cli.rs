//! What `contend calibrate` refuses, as a user meets it: an nccl-tests
//! run whose ranks cannot be placed on the topology's GPUs, and a fitted
//! constant on a bound of its search range. A refusal exits 1 with the
//! reason and writes nothing; `--force` writes params.toml with the
//! warning on standard error, in fit.json and in the report.

mod common;
use common::contend;
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fit-guard-cli");
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// tinygrad's `all_reduce_perf -g 6` against the shipped 8-GPU 4090
/// topology, whose GPUs carry no PCI address: refused at the row's line,
/// naming both counts and what to do.
#[test]
fn a_six_gpu_log_against_an_eight_gpu_topology_is_refused() {
    let out = scratch("six-of-eight");
    let log = "tests/fixtures/real/nccl-tests/tinygrad-6x4090-prompt.log";
    let (ok, stdout, err) = contend(&[
        "calibrate",
        log,
        "--topology",
        "topologies/rtx4090-8x-gen4.toml",
        "--out",
        &out.display().to_string(),
        "--force",
    ]);
    assert!(!ok, "{stdout}");
    for part in [
        &format!("{log}:15: rank mismatch"),
        "the nccl-tests run has 6 ranks",
        "has 8 GPUs",
        "a topology of the 6 GPUs that ran",
    ] {
        assert!(err.contains(part), "`{part}` not in: {err}");
    }
    assert!(!out.exists(), "{err}");
}

/// The walkthrough's p2pBandwidthLatencyTest with every copy 1.6 times
/// slower: the link efficiency it pins ends on the top of its range.
#[test]
fn a_constant_on_its_bound_is_refused_and_written_with_a_warning_under_force() {
    let dir = scratch("bound");
    std::fs::create_dir_all(&dir).unwrap();
    let records = dir.join("box.jsonl");
    let (ok, _, err) = contend(&[
        "import",
        "tests/fixtures/real/machines/stelline-asus-esc8000a-e12.md",
        "--out",
        &records.display().to_string(),
    ]);
    assert!(ok, "{err}");
    let topo = dir.join("box.toml");
    let (ok, _, err) = contend(&[
        "topo",
        "import",
        "tests/fixtures/real/machines/stelline-asus-esc8000a-e12.md",
        "--out",
        &topo.display().to_string(),
    ]);
    assert!(ok, "{err}");
    let slow: String = std::fs::read_to_string(&records)
        .unwrap()
        .lines()
        .map(|l| {
            let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
            r["total_ns"] = (r["total_ns"].as_f64().unwrap() * 1.6).into();
            r["stats"]["median_ns"] = (r["stats"]["median_ns"].as_f64().unwrap() * 1.6).into();
            let per: Vec<f64> = (r["per_op_ns"].as_array().unwrap().iter())
                .map(|x| x.as_f64().unwrap() * 1.6)
                .collect();
            r["per_op_ns"] = per.into();
            if let Some(b) = r["bandwidth_gbps"].as_f64() {
                r["bandwidth_gbps"] = (b / 1.6).into();
            }
            r.to_string() + "\n"
        })
        .collect();
    let slow_file = dir.join("slow.jsonl");
    std::fs::write(&slow_file, slow).unwrap();
    let cal = dir.join("cal");
    let args = |force: bool| {
        let mut a = vec![
            "calibrate".to_string(),
            slow_file.display().to_string(),
            "--topology".into(),
            topo.display().to_string(),
            "--out".into(),
            cal.display().to_string(),
            "--bootstrap".into(),
            "0".into(),
        ];
        if force {
            a.extend([
                "--fit".into(),
                "pcie.dllp_overhead".into(),
                "--force".into(),
            ]);
        }
        a
    };
    let run = |a: Vec<String>| contend(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let (ok, out, err) = run(args(false));
    assert!(!ok, "{out}");
    for part in [
        "1 fitted constant(s) on a bound of the search range",
        "`pcie.dllp_overhead` = 0.3",
        "on its upper bound 0.3500 (range 0 to 0.3500)",
        "pinned by large transfers over PCIe",
        "--force",
        "Nothing was written",
    ] {
        assert!(err.contains(part), "`{part}` not in: {err}");
    }
    assert!(!cal.exists(), "{err}");

    let (ok, out, err) = run(args(true));
    assert!(ok, "{out}{err}");
    assert!(
        err.contains("warning: 1 fitted constant(s) on a bound")
            && err.contains("written anyway (--force)"),
        "{err}"
    );
    assert!(out.contains("(at bound)"), "{out}");
    assert!(cal.join("params.toml").is_file());
    let fit = std::fs::read_to_string(cal.join("fit.json")).unwrap();
    assert!(fit.contains("\"warnings\""), "{fit}");
    let (ok, _, err) = contend(&["report", &cal.display().to_string()]);
    assert!(ok, "{err}");
    let md = std::fs::read_to_string(cal.join("report.md")).unwrap();
    assert!(
        md.contains("## Warnings: written with --force") && md.contains("## What the data pins"),
        "{md}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
