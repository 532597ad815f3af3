//! Golden results: every shipped scenario, at TLP fidelity (both placements
//! where a collective runs) and at flow fidelity, against the JSON committed
//! under `tests/golden/`. A refactor of the simulator must keep TLP results
//! byte-identical (`wall_ns` aside) and flow results within 0.1 % per op.
//!
//! Every run of every document goes to one pool on every core, the
//! costliest first by the work estimate commands order their runs by, and
//! each document's wall time is printed (`--nocapture`). `cargo test` runs
//! the quick scenarios; `CONTEND_GOLDEN=all cargo test --release -p
//! contend-sim --test golden` runs every one (`.ci/run` does), and
//! `CONTEND_GOLDEN=plan` prints each document's estimated work and
//! simulates nothing. `CONTEND_GOLDEN=bless` rewrites the files,
//! (`CONTEND_GOLDEN_ROOT=<repo>` when the test binary runs elsewhere),
//! and `CONTEND_GOLDEN=bless-new` writes only the missing ones (a scenario
//! added since) and checks the others; with `CONTEND_GOLDEN_ONLY=stem,...`
//! it does so for those scenarios only and simulates nothing else. Every
//! document is checked before the test fails, and the failure names each
//! that differs.
//!
//! The golden files hold the algorithms that existed when they were made.
//! A shipped scenario with `algorithms = "all"` (or a list naming an
//! algorithm added since) now also runs the newer ones; their records are
//! left out of the comparison ([`known_only`]), so every record of an older
//! algorithm must still match byte for byte (TLP) or within 0.1 % (flow),
//! and the newer ones are held by their own tests (the lowering's volumes,
//! contend-sim's tests/algorithms.rs) until the files are blessed again.

use contend_sim::estimate::work_units;
use contend_sim::{ModelParams, RunSpec, runs_of, simulate_one};
use contend_workload::{Fidelity, Placement, Scenario, Workload, load_scenario};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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

/// One golden file's runs: a shipped scenario at one fidelity (both
/// placements where a collective runs).
struct Doc {
    stem: String,
    fidelity: Fidelity,
    sc: Scenario,
    specs: Vec<RunSpec>,
}

impl Doc {
    fn of(path: &Path, fidelity: Fidelity) -> Doc {
        let mut sc = load_scenario(path, None).unwrap();
        if !matches!(sc.workload(), Workload::Transfer { .. }) {
            let mut spec = sc.spec();
            spec.placements = vec![Placement::Peer, Placement::Host];
            sc = Scenario::new(spec).unwrap();
        }
        let specs = runs_of(&sc, &[fidelity]);
        Doc {
            stem: path.file_stem().unwrap().to_str().unwrap().to_string(),
            fidelity,
            sc,
            specs,
        }
    }

    /// The golden document from its runs' records (in the order of its
    /// runs): every record, `wall_ns` removed, as pretty JSON.
    fn document(runs: Vec<Vec<serde_json::Value>>) -> String {
        let records: Vec<serde_json::Value> = runs.into_iter().flatten().collect();
        serde_json::to_string_pretty(&records).unwrap() + "\n"
    }
}

/// A run's records and how long it took.
type RunOut = (Vec<serde_json::Value>, Duration);

/// The records of run `i` of `doc`, `wall_ns` removed, and how long it took.
fn run_records(doc: &Doc, i: usize) -> RunOut {
    let t = Instant::now();
    let run = simulate_one(&doc.sc, &ModelParams::default(), doc.specs[i]).unwrap();
    let recs = run
        .records
        .into_iter()
        .map(|mut r| {
            r.wall_ns = None;
            serde_json::to_value(&r).unwrap()
        })
        .collect();
    (recs, t.elapsed())
}

/// Every run of every document, on every core, the costliest first (by
/// the estimate a command orders its runs by,
/// [`contend_sim::estimate::work_units`]): a document's runs do not wait
/// for the document before them, and a long run is not started last to
/// run alone. Per document: its runs' records in order, and the wall time
/// its runs took together.
fn run_docs(docs: &[Doc]) -> Vec<(Vec<Vec<serde_json::Value>>, Duration)> {
    let p = ModelParams::default();
    let mut jobs: Vec<(usize, usize, u64)> = vec![];
    for (d, doc) in docs.iter().enumerate() {
        for (i, spec) in doc.specs.iter().enumerate() {
            jobs.push((d, i, work_units(&doc.sc, &p, *spec).unwrap()));
        }
    }
    jobs.sort_by_key(|&(d, i, u)| (std::cmp::Reverse(u), d, i));
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Vec<Option<RunOut>>>> = docs
        .iter()
        .map(|d| Mutex::new(vec![None; d.specs.len()]))
        .collect();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(d, i, _)) = jobs.get(k) else { break };
                    let out = run_records(&docs[d], i);
                    done[d].lock().unwrap()[i] = Some(out);
                }
            });
        }
    });
    done.into_iter()
        .map(|m| {
            let runs: Vec<RunOut> = m
                .into_inner()
                .unwrap()
                .into_iter()
                .map(|r| r.expect("every run ran"))
                .collect();
            let wall = runs.iter().map(|(_, w)| *w).sum();
            (runs.into_iter().map(|(r, _)| r).collect(), wall)
        })
        .collect()
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
/// else that is not a timing is equal. The first difference, said, where
/// not.
fn flow_close(stem: &str, want: &str, got: &str) -> Result<(), String> {
    let (w, g): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(want).unwrap(),
        serde_json::from_str(got).unwrap(),
    );
    let (w, g) = (w.as_array().unwrap(), g.as_array().unwrap());
    if w.len() != g.len() {
        return Err(format!("{stem}: record count {} -> {}", w.len(), g.len()));
    }
    for (a, b) in w.iter().zip(g) {
        let (pa, pb) = (
            a["per_op_ns"].as_array().unwrap(),
            b["per_op_ns"].as_array().unwrap(),
        );
        if pa.len() != pb.len() {
            return Err(format!("{stem}: per-op count {} -> {}", pa.len(), pb.len()));
        }
        for (x, y) in pa.iter().zip(pb) {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            if (x - y).abs() > 1e-3 * x.abs().max(1.0) {
                return Err(format!(
                    "{stem} {}: flow per-op {x} -> {y} moved more than 0.1 %",
                    a["algorithm"]
                ));
            }
        }
        for k in ["algorithm", "placement", "size_bytes", "ranks", "scenario"] {
            if a[k] != b[k] {
                return Err(format!("{stem}: {k} {} -> {}", a[k], b[k]));
            }
        }
    }
    Ok(())
}

/// A flow document agrees with itself, and a per-op time moved by more
/// than 0.1 % is named.
#[test]
fn flow_documents_are_held_within_a_tenth_of_a_percent() {
    let doc = |t: f64| {
        serde_json::to_string_pretty(&serde_json::json!([{
            "algorithm": "ring-ll", "placement": "peer", "size_bytes": 1024,
            "ranks": 8, "scenario": "s", "per_op_ns": [1000.0, t]
        }]))
        .unwrap()
    };
    assert_eq!(flow_close("s", &doc(2000.0), &doc(2000.0)), Ok(()));
    assert_eq!(flow_close("s", &doc(2000.0), &doc(2001.9)), Ok(()));
    let err = flow_close("s", &doc(2000.0), &doc(2002.5)).unwrap_err();
    assert!(err.contains("moved more than 0.1 %"), "{err}");
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
    let plan = mode == "plan";
    let all = bless || bless_new || plan || mode == "all";
    let only = std::env::var("CONTEND_GOLDEN_ONLY").ok();
    let mut docs = vec![];
    for path in scenarios() {
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        if !all && SLOW.contains(&stem.as_str()) {
            continue;
        }
        // `CONTEND_GOLDEN_ONLY=a,b` with `bless-new`: bless the missing
        // files of these scenarios only, without simulating the others
        if bless_new
            && only
                .as_ref()
                .is_some_and(|only| !only.split(',').any(|s| s.trim() == stem))
        {
            continue;
        }
        for fid in [Fidelity::Tlp, Fidelity::Flow] {
            docs.push(Doc::of(&path, fid));
        }
    }
    if plan {
        // what the set costs, by the estimate its runs are ordered by
        let p = ModelParams::default();
        let mut total = 0u64;
        for d in &docs {
            let u: u64 = d
                .specs
                .iter()
                .map(|s| work_units(&d.sc, &p, *s).unwrap())
                .sum();
            total += u;
            eprintln!("{:>14} units  {}.{}", u, d.stem, d.fidelity);
        }
        eprintln!("{total:>14} units  in all ({} files)", docs.len());
        return;
    }
    let t = Instant::now();
    let results = run_docs(&docs);
    let mut checked = 0;
    let mut failed = vec![];
    for (doc, (runs, wall)) in docs.iter().zip(results) {
        let (stem, fid) = (&doc.stem, doc.fidelity);
        eprintln!("{:>9.1} s  {stem}.{fid}", wall.as_secs_f64());
        let got = Doc::document(runs);
        let f = file(stem, fid);
        if bless || (bless_new && !f.exists()) {
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, &got).unwrap();
            eprintln!("wrote {}", f.display());
            continue;
        }
        let want = std::fs::read_to_string(&f)
            .unwrap_or_else(|e| panic!("{}: {e} (bless with CONTEND_GOLDEN=bless)", f.display()));
        let got = known_only(&want, &got);
        let verdict = match fid {
            Fidelity::Tlp => (want != got).then(|| {
                format!(
                    "{stem}: TLP results differ from {} (byte for byte)",
                    f.display()
                )
            }),
            Fidelity::Flow => flow_close(stem, &want, &got).err(),
        };
        failed.extend(verdict);
        checked += 1;
    }
    eprintln!(
        "{checked} golden files checked in {:.1} s on {} cores",
        t.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(
        bless || bless_new || checked >= 20,
        "only {checked} golden files checked"
    );
}
