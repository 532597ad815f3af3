//! The `contend` binary as a user runs it.

use std::path::PathBuf;

mod common;
use common::{contend, root};

fn without_wall(mut v: serde_json::Value) -> serde_json::Value {
    for key in ["results", "nccl_p2p_level_sys"] {
        for r in v[key].as_array_mut().into_iter().flatten() {
            r.as_object_mut().unwrap().remove("wall_ns");
        }
    }
    v
}

#[test]
fn default_simulation_json_parses_and_repeats_byte_for_byte() {
    let (ok, a, err) = contend(&["simulate", "--fidelity", "flow", "--format", "json"]);
    assert!(ok, "{err}");
    let (_, b, _) = contend(&["simulate", "--fidelity", "flow", "--format", "json"]);
    let (va, vb): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&a).unwrap(),
        serde_json::from_str(&b).unwrap(),
    );
    let results = va["results"].as_array().unwrap();
    let algorithms = contend_workload::Algorithm::ALL.len();
    assert_eq!(algorithms, 12);
    assert_eq!(results.len(), algorithms, "one result per algorithm");
    for r in results {
        for field in [
            "algorithm",
            "fidelity",
            "total_ns",
            "per_op_ns",
            "events",
            "wall_ns",
        ] {
            assert!(r.get(field).is_some(), "missing {field}");
        }
        assert_eq!(r["per_op_ns"].as_array().unwrap().len(), 122);
        assert_eq!(r["size_bytes"], 43008);
    }
    let (sa, sb) = (
        serde_json::to_string(&without_wall(va)).unwrap(),
        serde_json::to_string(&without_wall(vb)).unwrap(),
    );
    assert_eq!(sa, sb);
}

#[test]
fn simulate_prints_nccls_choices_and_takes_overrides() {
    // the default: NCCL stages through host memory on this machine
    let (ok, out, err) = contend(&["simulate", "--fidelity", "flow"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("nccl      NCCL 2.28 (rules of v2.28.9-1), no NCCL_* variables set"),
        "{out}"
    );
    assert!(
        out.contains("    nccl 2.28: SHM on 8 connections; ring Simple on 2 of 2 channels"),
        "{out}"
    );
    // NCCL_P2P_LEVEL=SYS on the command line: P2P writes, said so
    let (ok, sys, err) = contend(&[
        "simulate",
        "--fidelity",
        "flow",
        "--nccl-env",
        "NCCL_P2P_LEVEL=SYS",
        "--nccl-version",
        "2.29",
    ]);
    assert!(ok, "{err}");
    assert!(
        sys.contains("NCCL 2.29 (rules of v2.29.7-1), NCCL_P2P_LEVEL=SYS"),
        "{sys}"
    );
    assert!(
        sys.contains("nccl 2.29: P2P write on 8 connections"),
        "{sys}"
    );
    assert!(
        sys.contains("path SYS within P2P level SYS (NCCL_P2P_LEVEL)"),
        "{sys}"
    );
    // the shipped SYS variant says the same from its [nccl] table
    let (ok, file, err) = contend(&[
        "simulate",
        "scenarios/eagle3-verify-pro6000-2socket-p2p-sys.toml",
        "--fidelity",
        "flow",
    ]);
    assert!(ok, "{err}");
    assert!(
        file.contains("nccl 2.28: P2P write on 8 connections"),
        "{file}"
    );
    // mistakes are refused with the reason
    let (ok, _, err) = contend(&["simulate", "--nccl-env", "NCCL_P2P_LEVLE=SYS"]);
    assert!(
        !ok && err.contains("not a variable the NCCL replica models"),
        "{err}"
    );
    let (ok, _, err) = contend(&["simulate", "--nccl-env", "NCCL_P2P_LEVEL=sys"]);
    assert!(!ok && err.contains("write `SYS`"), "{err}");
    let (ok, _, err) = contend(&["simulate", "--nccl-version", "2.18"]);
    assert!(!ok && err.contains("2.27, 2.28 or 2.29"), "{err}");
    let (ok, _, err) = contend(&[
        "simulate",
        "scenarios/transfer-shared-link.toml",
        "--nccl-env",
        "NCCL_P2P_LEVEL=SYS",
    ]);
    assert!(!ok && err.contains("does not run"), "{err}");
}

/// Where NCCL's default P2P level (PXB) stages pairs that have P2P through
/// host memory, `simulate` runs NCCL again with `NCCL_P2P_LEVEL=SYS` and
/// shows it under the `nccl` row: the same time as running with that
/// variable, its own decision line; nothing where the scenario sets the
/// level or no pair is above it.
#[test]
fn simulate_shows_nccl_with_p2p_level_sys_beside_its_defaults() {
    let time_of = |out: &str, name: &str| -> String {
        let line = out
            .lines()
            .find(|l| {
                l.strip_prefix("  ")
                    .and_then(|r| r.strip_prefix(name))
                    .is_some_and(|r| r.starts_with("  "))
            })
            .unwrap_or_else(|| panic!("no `{name}` row in:\n{out}"));
        line[2 + name.len()..]
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (ok, out, err) = contend(&["simulate", "--fidelity", "flow"]);
    assert!(ok, "{err}");
    let second = out
        .lines()
        .position(|l| l.starts_with("  nccl P2P_LEVEL=SYS "))
        .unwrap_or_else(|| panic!("no second NCCL row in:\n{out}"));
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[second - 1].contains("nccl 2.28: SHM on 8 connections"),
        "{out}"
    );
    assert!(
        lines[second + 1].contains("nccl 2.28: P2P write on 8 connections"),
        "{out}"
    );
    let (ok, sys, err) = contend(&[
        "simulate",
        "--fidelity",
        "flow",
        "--nccl-env",
        "NCCL_P2P_LEVEL=SYS",
    ]);
    assert!(ok, "{err}");
    assert_eq!(time_of(&out, "nccl P2P_LEVEL=SYS"), time_of(&sys, "nccl"));
    assert_ne!(time_of(&out, "nccl"), time_of(&sys, "nccl"));
    // the level set by the user: one NCCL, theirs
    assert!(!sys.contains("nccl P2P_LEVEL=SYS"), "{sys}");
    // JSON: its records apart from the results
    let (ok, json, err) = contend(&["simulate", "--fidelity", "flow", "--format", "json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let second = v["nccl_p2p_level_sys"].as_array().unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0]["algorithm"], "nccl");
    assert_eq!(v["results"].as_array().unwrap().len(), 12);
    // four GPUs under one switch: every pair within PXB, one NCCL
    let plx = root().join("validation/k3-v100-4x-plx/topology.toml");
    let (ok, one, err) = contend(&[
        "simulate",
        "--fidelity",
        "flow",
        "--topology",
        plx.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(!one.contains("nccl P2P_LEVEL=SYS"), "{one}");
}

#[test]
fn tlp_json_repeats_byte_for_byte() {
    let run = || {
        let (ok, s, err) = contend(&[
            "simulate",
            "scenarios/transfer-shared-link.toml",
            "--fidelity",
            "tlp",
            "--format",
            "json",
        ]);
        assert!(ok, "{err}");
        serde_json::to_string(&without_wall(serde_json::from_str(&s).unwrap())).unwrap()
    };
    assert_eq!(run(), run());
}

#[test]
fn topologies_show_as_trees() {
    let (ok, list, _) = contend(&["topo", "list"]);
    assert!(ok);
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap();
        let (ok, tree, err) = contend(&["topo", "show", name]);
        assert!(ok, "{err}");
        insta::assert_snapshot!(format!("topo_show_{name}"), tree);
        let (ok, v, _) = contend(&["topo", "validate", &format!("topologies/{name}.toml")]);
        assert!(ok && v.contains("valid"));
    }
}

/// The summaries of the shipped scenarios at flow fidelity: a model change
/// shows up here as a reviewed snapshot diff.
#[test]
fn shipped_scenario_summaries() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let rel = format!("scenarios/{}", f.file_name().unwrap().to_str().unwrap());
        let (ok, out, err) = contend(&["simulate", &rel, "--fidelity", "flow"]);
        assert!(ok, "{rel}: {err}");
        insta::assert_snapshot!(
            format!("simulate_{}", f.file_stem().unwrap().to_str().unwrap()),
            out
        );
    }
}

#[test]
fn sweep_marks_crossovers() {
    let (ok, out, err) = contend(&["sweep", "--from", "1KiB", "--to", "16MiB", "--factor", "4"]);
    assert!(ok, "{err}");
    assert!(out.contains("winner"));
    assert!(out.contains("<- crossover"), "{out}");
    let (ok, csv, _) = contend(&["sweep", "--from", "1KiB", "--to", "4KiB", "--format", "csv"]);
    assert!(ok);
    let algorithms = contend_workload::Algorithm::ALL.len();
    assert_eq!(
        csv.lines().count(),
        1 + 3 * algorithms,
        "3 sizes x every algorithm"
    );
}

#[test]
fn sweep_takes_any_factor_above_one_or_a_list_of_sizes() {
    let sizes = |args: &[&str]| {
        let mut a = vec!["sweep", "--format", "csv"];
        a.extend_from_slice(args);
        let (ok, csv, err) = contend(&a);
        assert!(ok, "{args:?}: {err}");
        let mut v: Vec<u64> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().parse().unwrap())
            .collect();
        v.dedup();
        v
    };
    assert_eq!(
        sizes(&["--from", "1KiB", "--to", "4KiB", "--factor", "1.5"]),
        [1024, 1536, 2304, 3456]
    );
    assert_eq!(
        sizes(&["--sizes", "64KiB,1KiB,43008"]),
        [1024, 43008, 65536]
    );
    for (args, want) in [
        (
            vec!["sweep", "--factor", "1"],
            "--factor: factor must be above 1",
        ),
        (vec!["sweep", "--sizes", "1KiB,0"], "--sizes: size 0"),
        (
            vec!["sweep", "--sizes", "1KiB", "--factor", "3"],
            "cannot be used with",
        ),
    ] {
        let (ok, _, err) = contend(&args);
        assert!(!ok && err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn bad_input_is_one_clear_error_and_no_panic() {
    for (args, want) in [
        (
            vec!["simulate", "tests/fixtures/scenario/unknown-algorithm.toml"],
            "unknown-algorithm.toml:4:14 (field `algorithms`)",
        ),
        (
            vec![
                "topo",
                "validate",
                "tests/fixtures/topology/pcie-cycle.toml",
            ],
            "pcie-cycle.toml:43:1",
        ),
        (
            vec!["simulate", "--params", "does-not-exist.toml"],
            "cannot read params file",
        ),
        (
            vec!["topo", "show", "no-such-machine"],
            "neither a topology file nor a shipped topology",
        ),
        (vec!["sweep", "--from", "12 parsecs"], "parsecs"),
    ] {
        let (ok, _, err) = contend(&args);
        assert!(!ok, "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `contend tui --measurements` reads every file calibrate reads, through
/// the same reader: nccl-tests text, nccl-tests `-J` JSON (whatever its
/// name), contend's JSON Lines. Standard output is not a terminal here, so
/// a file that loads ends at the terminal check; one that does not is a
/// located error.
#[test]
fn tui_measurements_read_what_calibrate_reads() {
    let dir = std::env::temp_dir().join(format!("contend-tui-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // nccl-tests -J output, saved under a JSON Lines name
    let json = dir.join("nccl-tests-run.jsonl");
    std::fs::write(
        &json,
        r#"{"version":2,"start_time":"2025-01-01 00:00:00","args":["./build/all_reduce_perf","-b","1K"],"env":[],"nccl_version":22703,
"config":{"nthreads":1,"ngpus":2,"minimum_bytes":1024,"maximum_bytes":1024,"step_factor":2,"warmup_iters":5,"iterations":3,"aggregated_iterations":1,"validation":1,"graph":0,"blocking_collectives":"false","per_iter_timing":"true","parallel_init":"false",
"devices":[{"rank":0,"group":0,"pid":1,"hostname":"box","device":0,"device_hex":"0000:01:00","device_info":"NVIDIA H200"}]},
"results":[{"size":1024,"count":512,"type":"bfloat16","redop":"sum","root":"    -1","out_of_place":{"time":10.000000,"alg_bw":0.1,"bus_bw":0.1,"nwrong":0.000000},"out_of_place_per_iter":{"min_us":9.0,"max_us":11.0,"avg_us":10.0,"p50_us":10.0,"p95_us":11.0,"p99_us":11.0,"stdev_us":0.8,"cv_pct":8.0,"times_us":[9.0,10.0,11.0]},"in_place":{"time":10.5,"alg_bw":0.1,"bus_bw":0.1,"nwrong":0.000000},"actual_iterations":3,"experiment_name":""}],
"out_of_bounds":{"count":0,"okay":"true"},"average_bus_bandwidth":{"bandwidth":0.1,"okay":"unchecked"},"errors":[],"end_time":"2025-01-01 00:00:01"}"#,
    )
    .unwrap();
    let files = [
        root().join("tests/fixtures/real/nccl-tests/tinygrad-6x4090-prompt.log"),
        root().join("calibration/h200x2/nccl-p2p-disabled.jsonl"),
        json.clone(),
    ];
    for f in &files {
        let n = contend_import::measure::read_records(f)
            .unwrap_or_else(|e| panic!("calibrate cannot read {}: {e}", f.display()))
            .len();
        assert!(n > 0);
        let (ok, _, err) = contend(&["tui", "h200-2x", "--measurements", f.to_str().unwrap()]);
        assert!(
            !ok && err.contains("draws on a terminal"),
            "{}: {err}",
            f.display()
        );
    }
    // what neither reads is one located error, before the terminal check
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"source\": \"hw\"}\n").unwrap();
    let (ok, _, err) = contend(&["tui", "h200-2x", "--measurements", bad.to_str().unwrap()]);
    assert!(
        !ok && err.contains("bad.jsonl:1") && !err.contains("terminal"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
