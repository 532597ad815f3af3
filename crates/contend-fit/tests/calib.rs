//! Calibration end to end on small inputs: bad measurement files get located
//! errors, nccl-tests logs round-trip, a fit on data simulated with known
//! constants recovers them, and the report writes its Markdown and charts.

use contend_fit::eval::{Which, by_placement};
use contend_fit::fit::FitOptions;
use contend_fit::twin::build_twin;
use contend_fit::{CalibrateOptions, calibrate, select, write_report};
use contend_import::measure::load_measurements;
use contend_import::{CalibError, nccl_tests_table, parse_nccl_tests};
use contend_sim::ModelParams;
use contend_topo::{Nanos, Topology, load_topology};
use contend_workload::{Fidelity, ResultRecord};
use serde_json::json;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}
fn h200x2() -> Topology {
    load_topology(&root().join("topologies/h200-2x.toml")).unwrap()
}
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("contend-calib-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn load_err(name: &str) -> String {
    let p = fixture(name);
    match load_measurements(&[p.as_path()], &h200x2()) {
        Ok(ms) => panic!("{name}: expected an error, got {} measurements", ms.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn truncated_line_is_located() {
    let e = load_err("bad/truncated.jsonl");
    assert!(
        e.contains("truncated.jsonl:3: field `ranks`: the record is cut short"),
        "{e}"
    );
}

#[test]
fn unknown_scenario_is_refused() {
    let e = load_err("bad/unknown-scenario.jsonl");
    assert!(
        e.contains("unknown-scenario.jsonl:2: field `workload`: unknown variant `gemm`"),
        "{e}"
    );
}

#[test]
fn unknown_algorithm_is_refused() {
    let e = load_err("bad/unknown-algorithm.jsonl");
    assert!(
        e.contains(
            "unknown-algorithm.jsonl:1: field `algorithm`: unknown algorithm `three-shot-pull`"
        ),
        "{e}"
    );
}

#[test]
fn mismatched_topology_is_refused() {
    let e = load_err("bad/mismatched-topology.jsonl");
    assert!(
        e.contains(
            "mismatched-topology.jsonl:1: topology mismatch: the measured machine has 8 GPUs"
        ),
        "{e}"
    );
    let e = load_err("bad/too-many-ranks.jsonl");
    assert!(
        e.contains("too-many-ranks.jsonl:1: topology mismatch: 4 ranks measured"),
        "{e}"
    );
    // A single-GPU topology cannot describe two-GPU measurements either.
    let one = load_topology(&root().join("topologies/h200-1x.toml")).unwrap();
    let p = root().join("calibration/h200x2/probe.jsonl");
    let e = load_measurements(&[p.as_path()], &one)
        .unwrap_err()
        .to_string();
    assert!(e.contains("probe.jsonl:1: topology mismatch"), "{e}");
}

#[test]
fn bad_file_never_fits() {
    let good = root().join("calibration/h200x2/probe.jsonl");
    let bad = fixture("bad/truncated.jsonl");
    let opts = CalibrateOptions {
        fit: FitOptions {
            max_iters: 2,
            bootstrap: 0,
            ..FitOptions::default()
        },
        params: select(&["gpu.launch_eager_ns".into()]).unwrap(),
        log_params: vec![],
        tlp_checks: 0,
        requested: true,
        force: false,
    };
    let r = calibrate(
        &[good.as_path(), bad.as_path()],
        &h200x2(),
        "h200-2x",
        &ModelParams::default(),
        &opts,
        &|_, _, _| {},
    );
    assert!(r.is_err());
}

#[test]
fn measured_files_pair() {
    let files: Vec<PathBuf> = [
        "probe.jsonl",
        "hw.jsonl",
        "nccl.jsonl",
        "nccl-p2p-disabled.jsonl",
    ]
    .iter()
    .map(|f| root().join("calibration/h200x2").join(f))
    .collect();
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let ms = load_measurements(&paths, &h200x2()).unwrap();
    assert!(ms.len() > 300);
    for m in ms.iter().take(5) {
        assert!(build_twin(m, &h200x2()).is_ok());
    }
}

#[test]
fn nccl_tests_log_round_trips() {
    let text = std::fs::read_to_string(fixture("nccl-tests-h200x2.log")).unwrap();
    let a: Vec<ResultRecord> = parse_nccl_tests("log", &text)
        .unwrap()
        .into_iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(a.len(), 17);
    assert_eq!(a[0].size_bytes, 1024);
    assert_eq!(a[0].ranks, vec!["gpu0", "gpu1"]);
    assert_eq!(a[0].algorithm, contend_workload::Measured::NCCL);
    assert_eq!(a[16].stats.median_ns, 250_910.0);
    assert_eq!(a[0].machine.as_ref().unwrap().gpus.len(), 2);
    let out = nccl_tests_table(&a);
    let b: Vec<ResultRecord> = parse_nccl_tests("again", &out)
        .unwrap()
        .into_iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(a, b);
    // ... and they are measurements calibration accepts on the topology.
    let p = fixture("nccl-tests-h200x2.log");
    let ms = load_measurements(&[p.as_path()], &h200x2()).unwrap();
    assert_eq!(ms.len(), 17);
}

#[test]
fn nccl_tests_errors_are_located() {
    let e = parse_nccl_tests(
        "x.log",
        "        1024   512  bfloat16 sum -1 8.0 0.1 0.1 0 8.0 0.1 0.1 0\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("x.log:1: a data row before the nccl-tests column header"),
        "{e}"
    );
    let text = std::fs::read_to_string(fixture("nccl-tests-h200x2.log")).unwrap();
    let cut: String =
        text.lines().take(14).collect::<Vec<_>>().join("\n") + "\n    4096  2048  bfloat16\n";
    let e = parse_nccl_tests("cut.log", &cut).unwrap_err().to_string();
    assert!(e.contains("cut.log:15: expected 13 columns"), "{e}");
}

fn probe(
    alg: &str,
    to: &str,
    placement: Option<&str>,
    bytes: u64,
    blocks: Option<u32>,
) -> serde_json::Value {
    let mut extra = json!({"concurrent_streams": 1, "group": "synthetic", "target": placement.unwrap_or("local")});
    if let Some(b) = blocks {
        extra["blocks"] = json!(b);
        extra["threads"] = json!(512);
    }
    if alg == "ping-pong" {
        extra["iterations"] = json!(20);
    }
    json!({
        "source": "hw", "scenario": "probe", "topology": "synthetic", "workload": "transfer",
        "algorithm": alg, "placement": placement, "fidelity": null, "launch": "eager",
        "ranks": ["gpu0", to], "size_bytes": bytes, "total_ns": 1.0, "per_op_ns": [1.0],
        "stats": {"count": 1, "median_ns": 1.0, "p10_ns": 1.0, "p90_ns": 1.0, "p99_ns": 1.0, "min_ns": 1.0, "max_ns": 1.0},
        "bandwidth_gbps": null, "verified": null, "events": null, "wall_ns": null, "busiest_link": null,
        "machine": null, "extra": extra
    })
}

fn allreduce(alg: &str, bytes: u64, grid: u32) -> serde_json::Value {
    let mut v = probe(alg, "gpu1", Some("host"), bytes, None);
    v["workload"] = json!("allreduce");
    v["scenario"] = json!("synthetic-allreduce");
    v["ranks"] = json!(["gpu0", "gpu1"]);
    v["verified"] = json!(true);
    v["extra"] = json!({"grid": grid, "blocks": 132, "threads": 512, "dtype": "bf16"});
    v
}

/// Writes probe records whose times the simulator produced with `truth`.
fn synthetic(dir: &Path, truth: &ModelParams) -> PathBuf {
    let topo = h200x2();
    let mut recs = vec![];
    for b in [4096, 1 << 20, 64 << 20] {
        recs.push(probe("copy-d2h", "host", Some("host"), b, None));
    }
    for blocks in [1, 2, 132] {
        recs.push(probe(
            "sm-load",
            "host",
            Some("host"),
            16 << 20,
            Some(blocks),
        ));
    }
    recs.push(probe("sm-load", "host", Some("host"), 4096, Some(132)));
    recs.push(probe("sm-store", "host", Some("host"), 16 << 20, Some(132)));
    recs.push(host_flag_ping_pong());
    recs.push(allreduce("one-shot-pull", 65536, 8));
    recs.push(allreduce("two-shot-push", 1 << 20, 64));
    let template = dir.join("template.jsonl");
    let text: String = recs.iter().map(|r| r.to_string() + "\n").collect();
    std::fs::write(&template, text).unwrap();
    let ms = load_measurements(&[template.as_path()], &topo).unwrap();
    let mut out = String::new();
    for (m, mut r) in ms.iter().zip(recs) {
        let t = build_twin(m, &topo)
            .unwrap()
            .unwrap()
            .predict(truth, Fidelity::Flow)
            .unwrap();
        r["stats"]["median_ns"] = json!(t);
        r["per_op_ns"] = json!([t]);
        out.push_str(&(r.to_string() + "\n"));
    }
    let p = dir.join("synthetic.jsonl");
    std::fs::write(&p, out).unwrap();
    p
}

#[test]
fn fit_recovers_known_constants_and_reports() {
    let dir = tmp("recover");
    let mut truth = ModelParams::default();
    truth.pcie.dllp_overhead = 0.15;
    truth.gpu.launch_eager_ns = Nanos::new(6500.0);
    truth.gpu.copy_setup_ns = Nanos::new(3200.0);
    truth.host.memory_latency_ns = Nanos::new(700.0);
    let file = synthetic(&dir, &truth);
    let names: Vec<String> = [
        "pcie.dllp_overhead",
        "gpu.launch_eager_ns",
        "gpu.copy_setup_ns",
        "host.memory_latency_ns",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let opts = CalibrateOptions {
        fit: FitOptions {
            max_iters: 200,
            bootstrap: 2,
            bootstrap_iters: 20,
            seed: 1,
            fidelity: Fidelity::Flow,
        },
        params: select(&names).unwrap(),
        log_params: vec![],
        tlp_checks: 1,
        requested: true,
        force: false,
    };
    let s = calibrate(
        &[file.as_path()],
        &h200x2(),
        "topologies/h200-2x.toml",
        &ModelParams::default(),
        &opts,
        &|_, _, _| {},
    )
    .unwrap();
    assert!(
        s.loss_fit < 1e-4 && s.loss_fit < s.loss_default,
        "loss {} -> {}",
        s.loss_default,
        s.loss_fit
    );
    let want = [0.15, 6500.0, 3200.0, 700.0];
    for (c, w) in s.constants.iter().zip(want) {
        let rel = (c.value - w).abs() / w;
        assert!(
            rel < 0.05,
            "{} fitted {} (true {w}, default {})",
            c.name,
            c.value,
            c.default
        );
    }
    // The held-out allreduces, simulated with the same truth, are predicted
    // almost exactly by the fitted constants and worse by the defaults.
    let f = by_placement(&s.points, Which::Fitted);
    let d = by_placement(&s.points, Which::Default);
    let host = contend_workload::Placement::Host;
    assert!(f[&host].max < 2.0, "{:?}", f[&host]);
    assert!(d[&host].median > f[&host].median);
    let p = ModelParams::from_toml("params.toml", &s.params_toml).unwrap();
    assert!((p.gpu.launch_eager_ns.get() - 6500.0).abs() < 325.0);

    // Report: fit.json in, report.md and charts out.
    std::fs::write(dir.join("fit.json"), serde_json::to_string(&s).unwrap()).unwrap();
    let files = write_report(&dir).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Held-out error"), "{md}");
    assert!(md.contains("`gpu.launch_eager_ns`"));
    assert!(md.contains("latency-host.svg"));
    for f in ["latency-host.svg", "error-host.svg", "probes.svg"] {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(svg.contains("<svg"), "{f}");
        assert!(files.iter().any(|p| p.ends_with(f)));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records from JSON values, through the real loader, on the H200 pair.
fn classify_values(name: &str, recs: &[serde_json::Value]) -> Result<usize, String> {
    let text: String = recs.iter().map(|r| r.to_string() + "\n").collect();
    let recs = contend_import::measure::parse_jsonl(name, &text).map_err(|e| e.to_string())?;
    contend_import::measure::classify(name, recs, &h200x2())
        .map(|v| v.len())
        .map_err(|e| e.to_string())
}

#[test]
fn out_of_range_numbers_in_records_name_file_line_and_field() {
    let good = allreduce("one-shot-pull", 65536, 8);
    assert_eq!(
        classify_values("m.jsonl", std::slice::from_ref(&good)),
        Ok(1)
    );
    let cases: Vec<(serde_json::Value, &str)> = vec![
        // once truncated by `as u32` to 1 block
        (
            json!({"extra": {"grid": 4294967297u64}}),
            "field `extra.grid`",
        ),
        (json!({"extra": {"grid": 0}}), "field `extra.grid`"),
        (json!({"extra": {"grid": 65537}}), "field `extra.grid`"),
        (json!({"extra": {"threads": 33}}), "field `extra.threads`"),
        (json!({"size_bytes": 1u64 << 40}), "field `size_bytes`"),
        (json!({"size_bytes": 0}), "field `size_bytes`"),
        (json!({"size_bytes": -1}), "field `size_bytes`"),
        (
            json!({"size_bytes": 18446744073709551616.0}),
            "field `size_bytes`",
        ),
        (
            json!({"stats": {"median_ns": -5.0}}),
            "field `stats.median_ns`",
        ),
        (
            json!({"extra": {"allreduces": 0}, "workload": "verify-step"}),
            "field `extra.allreduces`",
        ),
    ];
    for (patch, want) in cases {
        let mut r = good.clone();
        merge(&mut r, &patch);
        let e = classify_values("m.jsonl", &[good.clone(), r]).unwrap_err();
        assert!(
            e.starts_with("m.jsonl:2:") && e.contains(want),
            "{patch}: {e}"
        );
    }
    let mut p = probe("ping-pong", "host", Some("host"), 4, None);
    p["extra"]["iterations"] = json!(0);
    let e = classify_values("p.jsonl", &[p]).unwrap_err();
    assert!(
        e.starts_with("p.jsonl:1:") && e.contains("field `extra.iterations`"),
        "{e}"
    );
}

/// `patch` laid over `v`, objects merged key by key.
fn merge(v: &mut serde_json::Value, patch: &serde_json::Value) {
    match (v, patch) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, x) in b {
                merge(a.entry(k.clone()).or_insert(serde_json::Value::Null), x);
            }
        }
        (v, p) => *v = p.clone(),
    }
}

#[test]
fn nccl_tests_rank_counts_cannot_overflow() {
    let text = std::fs::read_to_string(fixture("nccl-tests-h200x2.log")).unwrap();
    let bad = text.replacen("nThread 1", "nThread 18446744073709551615", 1);
    assert_ne!(bad, text, "the fixture has an `nThread 1` line");
    let e = parse_nccl_tests("big.log", &bad).unwrap_err().to_string();
    assert!(e.starts_with("big.log:") && e.contains("rank count"), "{e}");
}

#[test]
fn a_hand_edited_fit_json_is_a_located_error() {
    let file = root().join("calibration/h200x2/report/fit.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let parse = |t: &str| contend_fit::report::parse_summary("fit.json", t).map(|_| ());
    parse(&text).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        (
            "/points/3/measured_ns",
            json!(0.0),
            "fit.json (field `points[3].measured_ns`)",
        ),
        (
            "/points/3/fitted_ns",
            json!(-1.0),
            "fit.json (field `points[3].fitted_ns`)",
        ),
        (
            "/points/3/default_ns",
            json!(1e300),
            "fit.json (field `points[3].default_ns`)",
        ),
        (
            "/points/3/kind/bytes",
            json!(0),
            "fit.json (field `points[3].kind.bytes`)",
        ),
        (
            "/points/3/kind/blocks",
            json!(4294967297u64),
            "(field `points[3].kind`)",
        ),
        (
            "/points/3/measured_ns",
            json!("fast"),
            "(field `points[3].measured_ns`)",
        ),
        ("/loss_fit", json!(null), "(field `loss_fit`)"),
    ];
    for (at, bad, want) in cases {
        let old = v.pointer(at).cloned().unwrap_or(serde_json::Value::Null);
        *v.pointer_mut(at).unwrap_or_else(|| panic!("{at}")) = bad.clone();
        let e = parse(&serde_json::to_string_pretty(&v).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("fit.json") && e.contains(want),
            "{at} = {bad}: {e}"
        );
        *v.pointer_mut(at).unwrap() = old;
    }
    let e = parse(&text[..text.len() / 2]).unwrap_err().to_string();
    assert!(e.starts_with("fit.json:") && e.contains("cut short"), "{e}");
    let e = parse("{}").unwrap_err().to_string();
    assert!(e.contains("field `topology_name`"), "{e}");
}

/// `contend hw probe`'s GPU-GPU ping-pong with both flags in host memory.
fn host_flag_ping_pong() -> serde_json::Value {
    let mut v = probe("ping-pong", "gpu1", Some("peer"), 4, None);
    v["extra"]["flags"] = json!("host memory");
    v
}

/// The GPU-GPU ping-pong with flags in host memory is fitted on, its twin
/// storing into and polling host memory (its own time, at least two stores'
/// visibility and posted writes); the GPU-host one, which a CPU thread
/// answers, is set aside with the reason and has no twin.
#[test]
fn host_flag_ping_pong_is_fitted_and_the_cpu_answered_one_set_aside() {
    use contend_import::measure::Role;
    let dir = tmp("host-flags");
    let plain = probe("ping-pong", "gpu1", Some("peer"), 4, None);
    let cpu = probe("ping-pong", "host", Some("host"), 4, None);
    let p = dir.join("pp.jsonl");
    std::fs::write(&p, format!("{}\n{plain}\n{cpu}\n", host_flag_ping_pong())).unwrap();
    let topo = h200x2();
    let ms = load_measurements(&[p.as_path()], &topo).unwrap();
    assert_eq!(ms[0].role, Role::Fit);
    assert_eq!(ms[0].label(), "ping-pong gpu0->gpu1 4 B host flags");
    assert_eq!(ms[1].label(), "ping-pong gpu0->gpu1 4 B");
    match &ms[2].role {
        Role::Skipped(why) => assert!(
            why.starts_with("GPU-host ping-pong: a CPU thread answers"),
            "{why}"
        ),
        other => panic!("the GPU-host ping-pong is {other:?}"),
    }
    assert!(build_twin(&ms[2], &topo).unwrap().is_none(), "no twin");
    let p = ModelParams::default();
    let rt = |i: usize| {
        build_twin(&ms[i], &topo)
            .unwrap()
            .unwrap()
            .predict(&p, Fidelity::Flow)
            .unwrap()
    };
    let (host, dev) = (rt(0), rt(1));
    let floor = 2.0
        * (p.gpu.store_visibility_ns.get()
            + p.pcie.link_latency_ns.get()
            + p.root_complex.latency_ns.get());
    assert!(
        host > floor && (host - dev).abs() > 100.0,
        "host flags {host} ns, device flags {dev} ns, floor {floor} ns"
    );
}

/// Records of `contend hw run --emulate-ranks` (every rank on one GPU) load
/// from any machine's folder but are never fitted on nor predicted: they are
/// skipped with the reason, even with ranks and a machine that do not match
/// the topology.
#[test]
fn emulated_records_are_skipped_with_the_reason() {
    let dir = tmp("emulated");
    let mut em = allreduce("staged-push", 1 << 20, 16);
    em["ranks"] = json!(["gpu0/gpu0", "gpu0/gpu2", "gpu0/gpu4", "gpu0/gpu6"]);
    em["extra"]["emulated"] = json!(true);
    em["machine"] = json!({"hostname": "h", "gpus": ["NVIDIA H200"], "pci_addresses": [],
        "driver": "", "cuda": "", "link_matrix": [], "pcie_links": ["Gen5 x16"]});
    let real = allreduce("two-shot-push", 1 << 20, 64);
    let p = dir.join("emulate-4.jsonl");
    std::fs::write(&p, format!("{em}\n{real}\n")).unwrap();
    let ms = load_measurements(&[p.as_path()], &h200x2()).unwrap();
    assert_eq!(ms.len(), 2);
    match &ms[0].role {
        contend_import::measure::Role::Skipped(why) => {
            assert!(
                why.starts_with("emulated: 4 ranks ran concurrently on one GPU"),
                "{why}"
            )
        }
        other => panic!("an emulated record is {other:?}"),
    }
    assert!(build_twin(&ms[0], &h200x2()).unwrap().is_none(), "no twin");
    assert_eq!(ms[1].role, contend_import::measure::Role::HeldOut);
}

/// An `nccl-latency` record of `bytes` over `ranks`, P2P off, as `contend
/// hw probe` writes it.
fn nccl_latency(bytes: u64, ranks: &[&str], ns: f64) -> serde_json::Value {
    let mut v = probe("nccl-latency", "gpu1", None, bytes, None);
    v["source"] = json!("nccl");
    v["workload"] = json!("allreduce");
    v["ranks"] = json!(ranks);
    v["verified"] = json!(true);
    v["per_op_ns"] = json!([ns]);
    v["stats"]["median_ns"] = json!(ns);
    v["extra"] = json!({"dtype": "fp32", "nccl_version": "2.28.3", "NCCL_P2P_DISABLE": "1", "NCCL_NVLS_ENABLE": "0"});
    v
}

fn launch(alg: &str, per: &[f64]) -> serde_json::Value {
    let mut v = probe(alg, "gpu0", None, 0, None);
    v["ranks"] = json!(["gpu0"]);
    v["per_op_ns"] = json!(per);
    v["stats"]["median_ns"] = json!(per[per.len() / 2]);
    v["extra"] = json!({"batch_ops": 100});
    v
}

#[test]
fn ncclss_latency_probe_fits_its_step_scale_and_launches_are_closed_form() {
    use contend_import::measure::{AlgoRef, Kind, Role};
    let topo = h200x2();
    let dir = tmp("nccl-probes");
    // classification: two ranks fit, one rank is skipped, launches are direct
    let recs = [
        nccl_latency(64, &["gpu0", "gpu1"], 1.0),
        nccl_latency(64, &["gpu0"], 1.0),
        launch("launch-graph", &[900.0, 1000.0, 1100.0]),
        launch("launch-eager", &[3900.0, 4100.0, 4300.0]),
    ];
    let text: String = recs.iter().map(|r| r.to_string() + "\n").collect();
    let parsed = contend_import::measure::parse_jsonl("p.jsonl", &text).unwrap();
    let ms = contend_import::measure::classify("p.jsonl", parsed, &topo).unwrap();
    assert_eq!(ms[0].role, Role::Fit);
    assert!(matches!(
        &ms[0].kind,
        Kind::Allreduce {
            algorithm: AlgoRef::Nccl,
            ..
        }
    ));
    assert!(matches!(&ms[1].role, Role::Skipped(why) if why.contains("one GPU")));
    assert_eq!(ms[2].role, Role::Direct);
    assert!(matches!(&ms[3].kind, Kind::Launch { gpu, .. } if gpu == "gpu0"));
    // the twin runs what NCCL decides under the record's version and variables
    let twin = build_twin(&ms[0], &topo).unwrap().unwrap();
    assert_eq!(
        twin.scenario.algorithms(),
        &[contend_workload::Algorithm::Nccl]
    );
    assert!(twin.scenario.nccl().env.p2p_disable);
    assert_eq!(
        twin.scenario.nccl().version,
        contend_nccl::NcclVersion::V2_28
    );
    assert!(build_twin(&ms[2], &topo).unwrap().is_none());

    // a fit on probes simulated with a known per-step cost finds it again
    let mut truth = ModelParams::default();
    truth.nccl.step_overhead_ns = Nanos::new(2000.0);
    let mut out = String::new();
    for b in [4u64, 16, 64, 256] {
        let mut r = nccl_latency(b, &["gpu0", "gpu1"], 1.0);
        let text = r.to_string() + "\n";
        let parsed = contend_import::measure::parse_jsonl("t.jsonl", &text).unwrap();
        let m = contend_import::measure::classify("t.jsonl", parsed, &topo).unwrap();
        let t = build_twin(&m[0], &topo)
            .unwrap()
            .unwrap()
            .predict(&truth, Fidelity::Flow)
            .unwrap();
        r["per_op_ns"] = json!([t]);
        r["stats"]["median_ns"] = json!(t);
        out.push_str(&(r.to_string() + "\n"));
    }
    out.push_str(&(launch("launch-graph", &[900.0, 1000.0, 1100.0]).to_string() + "\n"));
    let file = dir.join("nccl-latency.jsonl");
    std::fs::write(&file, out).unwrap();
    let opts = CalibrateOptions {
        fit: FitOptions {
            max_iters: 150,
            bootstrap: 0,
            bootstrap_iters: 1,
            seed: 1,
            fidelity: Fidelity::Flow,
        },
        params: select(&["nccl.step_overhead_ns".to_string()]).unwrap(),
        log_params: vec![],
        tlp_checks: 0,
        requested: true,
        force: false,
    };
    let s = calibrate(
        &[file.as_path()],
        &topo,
        "calibration/h200x2/topo.toml",
        &ModelParams::default(),
        &opts,
        &|_, _, _| {},
    )
    .unwrap();
    let c = &s.constants[0];
    assert_eq!(c.name, "nccl.step_overhead_ns");
    assert!((c.value - 2000.0).abs() < 200.0, "fitted {}", c.value);
    // the graph launch in closed form: the median per launch
    assert_eq!(s.launch.len(), 1);
    assert_eq!(s.launch[0].name, "gpu.launch_graph_ns");
    assert_eq!(s.launch[0].value, 1000.0);
    // without NCCL probes in the fit set the cost stays where it was
    let plain = dir.join("plain.jsonl");
    // a 1 MiB copy in 30 us (a copy setup the fit's range holds)
    let mut copy = probe("copy-d2h", "host", Some("host"), 1 << 20, None);
    copy["stats"]["median_ns"] = json!(30_000.0);
    copy["per_op_ns"] = json!([30_000.0]);
    std::fs::write(
        &plain,
        launch("launch-graph", &[1000.0]).to_string() + "\n" + &(copy.to_string() + "\n"),
    )
    .unwrap();
    let e = calibrate(
        &[plain.as_path()],
        &topo,
        "calibration/h200x2/topo.toml",
        &ModelParams::default(),
        &opts,
        &|_, _, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("nccl-latency"), "{e}");
    // asked for by name beside one the copy pins, it is refused too ...
    let mut both = opts.clone();
    both.params = select(&["nccl.step_overhead_ns".into(), "gpu.copy_setup_ns".into()]).unwrap();
    let run = |o: &CalibrateOptions| {
        calibrate(
            &[plain.as_path()],
            &topo,
            "calibration/h200x2/topo.toml",
            &ModelParams::default(),
            o,
            &|_, _, _| {},
        )
    };
    let e = run(&both).unwrap_err();
    assert!(
        matches!(&e, CalibError::Unpinned { unpinned, pinned, requested: true, .. }
            if unpinned.len() == 1 && unpinned[0].name == "nccl.step_overhead_ns"
                && pinned == &["gpu.copy_setup_ns"]),
        "{e:?}"
    );
    // ... and of the default set the copy's constant alone is fitted, the
    // step overhead kept where it was, with the reason
    both.requested = false;
    let s = run(&both).unwrap();
    let names: Vec<&str> = s.constants.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["gpu.copy_setup_ns"]);
    let kept = s.pinning.iter().find(|p| !p.fitted).unwrap();
    assert_eq!(kept.name, "nccl.step_overhead_ns");
    assert!(kept.why.contains("no fit figure moves"), "{}", kept.why);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}
