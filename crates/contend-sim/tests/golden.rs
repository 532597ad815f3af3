//! Golden results: every shipped scenario, at TLP fidelity (both placements
//! where a collective runs) and at flow fidelity, against the JSON committed
//! under `tests/golden/`. A refactor of the simulator must keep TLP results
//! byte-identical (`wall_ns` aside) and flow results within 0.1 % per op.
//!
//! The full set runs in minutes in release (about 23 on a shared 2-core
//! machine since the hw scenarios run nine kernels at up to 64 MiB at TLP
//! fidelity); `cargo test` runs the
//! quick scenarios, `CONTEND_GOLDEN=all cargo test --release -p contend-sim
//! --test golden` runs every one, `CONTEND_GOLDEN=bless` rewrites the files,
//! (`CONTEND_GOLDEN_ROOT=<repo>` when the test binary runs elsewhere),
//! and `CONTEND_GOLDEN=bless-new` writes only the missing ones (a scenario
//! added since) and checks the others; with `CONTEND_GOLDEN_ONLY=stem,...`
//! it writes those scenarios' missing files and simulates nothing else.
//!
//! The golden files hold the algorithms that existed when they were made.
//! A shipped scenario with `algorithms = "all"` (or a list naming an
//! algorithm added since) now also runs the newer ones; their records are
//! left out of the comparison ([`known_only`]), so every record of an older
//! algorithm must still match byte for byte (TLP) or within 0.1 % (flow),
//! and the newer ones are held by their own tests (the lowering's volumes,
//! contend-sim's tests/algorithms.rs) until the files are blessed again.

use contend_sim::{ModelParams, runs_of, simulate_one};
use contend_workload::{Fidelity, Placement, Scenario, Workload, load_scenario};
use std::path::{Path, PathBuf};

/// The repository: `CONTEND_GOLDEN_ROOT` where the test binary runs away
/// from the tree it was built in (blessing on a machine with more cores).
fn root() -> PathBuf {
    match std::env::var_os("CONTEND_GOLDEN_ROOT") {
        Some(r) => PathBuf::from(r),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    }
}

/// Scenarios too slow for a debug-profile `cargo test` (TLP at 64 MiB).
const SLOW: &[&str] = &[
    "allreduce-sweep-pro6000-2socket",
    "hw-allreduce",
    "hw-allreduce-h200x2",
    "hw-allreduce-fp32-h200x2",
    "hw-emulate",
];

fn scenarios() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

/// The golden document of one scenario at one fidelity: every record of every
/// run, `wall_ns` removed, as pretty JSON.
fn golden(path: &Path, fidelity: Fidelity) -> String {
    let mut sc = load_scenario(path, None).unwrap();
    if !matches!(sc.workload(), Workload::Transfer { .. }) {
        let mut spec = sc.spec();
        spec.placements = vec![Placement::Peer, Placement::Host];
        sc = Scenario::new(spec).unwrap();
    }
    let p = ModelParams::default();
    let specs = runs_of(&sc, &[fidelity]);
    // runs are independent: spread them over the cores, keep their order
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(vec![None; specs.len()]);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(spec) = specs.get(i) else { break };
                    let run = simulate_one(&sc, &p, *spec).unwrap();
                    let recs: Vec<serde_json::Value> = run
                        .records
                        .into_iter()
                        .map(|mut r| {
                            r.wall_ns = None;
                            serde_json::to_value(&r).unwrap()
                        })
                        .collect();
                    done.lock().unwrap()[i] = Some(recs);
                }
            });
        }
    });
    let records: Vec<serde_json::Value> = done
        .into_inner()
        .unwrap()
        .into_iter()
        .flat_map(|r| r.unwrap())
        .collect();
    serde_json::to_string_pretty(&records).unwrap() + "\n"
}

fn file(stem: &str, fidelity: Fidelity) -> PathBuf {
    root()
        .join("tests/golden")
        .join(format!("{stem}.{fidelity}.json"))
}

/// The records of `got` (a golden document) whose algorithm occurs in
/// `want`, as pretty JSON in the same form: what the golden file can be
/// compared with when algorithms were added after it was made.
fn known_only(want: &str, got: &str) -> String {
    let (w, g): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(want).unwrap(),
        serde_json::from_str(got).unwrap(),
    );
    let known: Vec<&serde_json::Value> = w
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["algorithm"])
        .collect();
    let kept: Vec<&serde_json::Value> = g
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| known.contains(&&r["algorithm"]))
        .collect();
    serde_json::to_string_pretty(&kept).unwrap() + "\n"
}

/// Per-op times of the flow golden and now agree within 0.1 %; everything
/// else that is not a timing is equal.
fn flow_close(stem: &str, want: &str, got: &str) {
    let (w, g): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(want).unwrap(),
        serde_json::from_str(got).unwrap(),
    );
    let (w, g) = (w.as_array().unwrap(), g.as_array().unwrap());
    assert_eq!(w.len(), g.len(), "{stem}: record count");
    for (a, b) in w.iter().zip(g) {
        let (pa, pb) = (
            a["per_op_ns"].as_array().unwrap(),
            b["per_op_ns"].as_array().unwrap(),
        );
        assert_eq!(pa.len(), pb.len(), "{stem}: per-op count");
        for (x, y) in pa.iter().zip(pb) {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-3 * x.abs().max(1.0),
                "{stem} {}: flow per-op {x} -> {y} moved more than 0.1 %",
                a["algorithm"]
            );
        }
        for k in ["algorithm", "placement", "size_bytes", "ranks", "scenario"] {
            assert_eq!(a[k], b[k], "{stem}: {k}");
        }
    }
}

/// The filter keeps the older records in their order and form and drops
/// only algorithms the golden file never had.
#[test]
fn records_of_newer_algorithms_are_left_out_of_the_comparison() {
    let want = serde_json::to_string_pretty(&serde_json::json!([
        {"algorithm": "one-shot-pull", "t": 1},
        {"algorithm": "ring-ll", "t": 2}
    ]))
    .unwrap()
        + "\n";
    let got = serde_json::to_string_pretty(&serde_json::json!([
        {"algorithm": "one-shot-pull", "t": 1},
        {"algorithm": "staged-push", "t": 9},
        {"algorithm": "ring-ll", "t": 2},
        {"algorithm": "ce-ring", "t": 9}
    ]))
    .unwrap()
        + "\n";
    assert_eq!(known_only(&want, &got), want);
    assert_eq!(known_only(&want, &want), want);
}

#[test]
fn shipped_scenarios_match_their_golden_results() {
    let mode = std::env::var("CONTEND_GOLDEN").unwrap_or_default();
    let bless = mode == "bless";
    let bless_new = mode == "bless-new";
    let all = bless || bless_new || mode == "all";
    let mut checked = 0;
    let mut paths = scenarios();
    // the slow ones last
    paths.sort_by_key(|p| SLOW.iter().any(|s| p.file_stem().is_some_and(|f| f == *s)));
    for path in paths {
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        if !all && SLOW.contains(&stem.as_str()) {
            continue;
        }
        // `CONTEND_GOLDEN_ONLY=a,b` with `bless-new`: bless the missing
        // files of these scenarios only, without simulating the others
        if bless_new
            && std::env::var("CONTEND_GOLDEN_ONLY")
                .is_ok_and(|only| !only.split(',').any(|s| s.trim() == stem))
        {
            continue;
        }
        for fid in [Fidelity::Tlp, Fidelity::Flow] {
            let got = golden(&path, fid);
            let f = file(&stem, fid);
            if bless || (bless_new && !f.exists()) {
                std::fs::create_dir_all(f.parent().unwrap()).unwrap();
                std::fs::write(&f, &got).unwrap();
                eprintln!("wrote {}", f.display());
                continue;
            }
            let want = std::fs::read_to_string(&f).unwrap_or_else(|e| {
                panic!("{}: {e} (bless with CONTEND_GOLDEN=bless)", f.display())
            });
            let got = known_only(&want, &got);
            match fid {
                Fidelity::Tlp => assert!(
                    want == got,
                    "{stem}: TLP results differ from {} (byte for byte)",
                    f.display()
                ),
                Fidelity::Flow => flow_close(&stem, &want, &got),
            }
            checked += 1;
        }
    }
    assert!(
        bless || bless_new || checked >= 20,
        "only {checked} golden files checked"
    );
}
