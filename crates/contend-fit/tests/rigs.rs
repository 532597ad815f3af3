//! The public rigs (`calibration/public/<rig>/`): every fit figure of every
//! rig with a topology reproduced by its twin with the rig's committed
//! params (`params.toml`, written by `contend calibrate --public`) within
//! 15 %, the median over all of them within 7 % (issue 12's bar); the
//! committed reports agree with the committed params; collapse fires on
//! each rig's published trigger patterns, with the rig's own magnitude,
//! and not on its controls; and one small rig refitted from scratch gives
//! its committed constants back.

use contend_fit::figures::load_figures;
use contend_fit::fit::FitOptions;
use contend_fit::rig::{Rig, Use, load_rig};
use contend_fit::rig_fit::{
    RigOptions, RigSummary, TOLERANCE_PCT, calibrate_rig, choose_free, documented_collapse_gbps,
};
use contend_sim::ModelParams;
use contend_workload::Fidelity;
use std::path::{Path, PathBuf};

fn public() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../calibration/public")
}

/// Every rig folder (those with a figures file).
fn rig_dirs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(public())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("figures.toml").is_file())
        .collect();
    v.sort();
    v
}

fn params_of(dir: &Path) -> ModelParams {
    ModelParams::load(&dir.join("params.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn pct(pred: f64, measured: f64) -> f64 {
    (pred / measured - 1.0) * 100.0
}

#[test]
fn every_rig_with_fit_figures_and_a_topology_has_committed_params_and_reports() {
    let mut fitted = 0;
    for dir in rig_dirs() {
        let rig = load_rig(&dir).unwrap_or_else(|e| panic!("{e}"));
        let twins = rig.twins().len();
        let has = dir.join("params.toml").is_file();
        assert_eq!(
            twins > 0,
            has,
            "{}: {twins} fit figures with a twin, params.toml {}",
            rig.name(),
            if has { "present" } else { "missing" }
        );
        if has {
            fitted += 1;
            assert!(dir.join("report.md").is_file() && dir.join("report.json").is_file());
        }
    }
    assert_eq!(fitted, 7, "the seven rigs with fit figures and topologies");
}

#[test]
fn committed_params_reproduce_every_fit_figure_within_15_percent() {
    let mut all = vec![];
    for dir in rig_dirs() {
        if !dir.join("params.toml").is_file() {
            continue;
        }
        let rig = load_rig(&dir).unwrap();
        let p = params_of(&dir);
        let pred = rig.predict(&p, Fidelity::Flow).unwrap();
        let mut bad = vec![];
        for ((i, _), v) in rig.twins().iter().zip(&pred) {
            let f = &rig.file.figures[*i];
            let e = pct(*v, f.value);
            all.push(e.abs());
            if e.abs() > TOLERANCE_PCT {
                bad.push(format!(
                    "{} measured {} predicted {v:.3} ({e:+.1} %)",
                    f.id, f.value
                ));
            }
        }
        assert!(bad.is_empty(), "{}:\n{}", rig.name(), bad.join("\n"));
    }
    all.sort_by(f64::total_cmp);
    let median = all[all.len() / 2];
    assert!(all.len() > 700, "{} fit figures", all.len());
    assert!(
        median <= 7.0,
        "median {median:.2} % over {} figures",
        all.len()
    );
}

#[test]
fn committed_reports_match_the_committed_params_and_list_every_skip() {
    for dir in rig_dirs() {
        if !dir.join("params.toml").is_file() {
            continue;
        }
        let rig = load_rig(&dir).unwrap();
        let text = std::fs::read_to_string(dir.join("report.json")).unwrap();
        let s: RigSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(s.rig, rig.name());
        // the params the report shows are the committed ones
        assert_eq!(
            ModelParams::from_toml("report", &s.params_toml).unwrap(),
            params_of(&dir),
            "{}: report.json and params.toml disagree (re-run contend calibrate --public)",
            rig.name()
        );
        let twins = rig.twins();
        assert_eq!(s.results.len(), twins.len(), "{}", rig.name());
        let pred = rig.predict(&params_of(&dir), Fidelity::Flow).unwrap();
        let def = rig
            .predict(&ModelParams::default(), Fidelity::Flow)
            .unwrap();
        for (((i, _), r), (p, d)) in twins.iter().zip(&s.results).zip(pred.iter().zip(&def)) {
            let f = &rig.file.figures[*i];
            assert_eq!(r.id, f.id);
            assert_eq!(r.measured, f.value);
            assert!(
                (r.fitted / p - 1.0).abs() < 1e-9,
                "{}: {} vs {p}",
                f.id,
                r.fitted
            );
            assert!(
                (r.default / d - 1.0).abs() < 1e-9,
                "{}: {} vs {d}",
                f.id,
                r.default
            );
        }
        // every fit figure without a twin is listed with its reason
        let skipped: Vec<(&str, &str)> = rig
            .uses
            .iter()
            .zip(&rig.file.figures)
            .filter_map(|(u, f)| match u {
                Use::Skipped(why) => Some((f.id.as_str(), why.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(skipped.len(), s.skipped.len(), "{}", rig.name());
        for ((id, why), k) in skipped.iter().zip(&s.skipped) {
            assert_eq!((*id, *why), (k.id.as_str(), k.reason.as_str()));
            assert!(!why.is_empty());
        }
        assert_eq!(
            s.results.len() + s.skipped.len() + s.no_topology,
            s.fit_figures,
            "{}: every fit figure is twinned, skipped or without a topology",
            rig.name()
        );
    }
}

/// The figure's prediction with collapse on and off (what if the firmware were fixed).
fn on_off(rig: &Rig, p: &ModelParams, id: &str) -> (f64, f64, f64) {
    let twins = rig.twins();
    let (i, t) = twins
        .iter()
        .find(|(i, _)| rig.file.figures[*i].id == id)
        .unwrap_or_else(|| panic!("{}: no fit figure `{id}`", rig.name()));
    let mut off = p.clone();
    off.platform.collapse = false;
    (
        rig.file.figures[*i].value,
        t.predict(p, Fidelity::Flow).unwrap(),
        t.predict(&off, Fidelity::Flow).unwrap(),
    )
}

/// Each rig's published trigger patterns collapse in the model (a small
/// fraction of what the same flows get with collapse off), at the
/// measured rate; its published controls do not (collapse off changes
/// nothing). The lists are the figures the sources label so
/// (`COLLAPSE trigger`, `control`, `does not collapse`), and the model's
/// collapse rate is the rig's own (within 15 % of what its topologies state).
#[test]
fn collapse_fires_on_each_rigs_triggers_and_not_on_its_controls() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "asus-esc8000a-e13p",
            &[
                "collapse-test-2flow-same-vs-2roots-write",
                "collapse-test-4flow-same-vs-4dst-write",
                "cross-chip-2-same-uplink",
            ],
            &[
                "no-collapse-same-gpu-2roots",
                "no-collapse-same-vs-same-root",
                "no-collapse-reverse",
                "collapse-test-2flow-same-vs-2roots-read",
                "collapse-test-4flow-same-vs-4dst-read",
                "collapse-test-2flow-diff-vs-write",
                "cross-chip-2-diff-uplink",
                "cross-chip-4-1to1",
                "cross-chip-8-bidir",
            ],
        ),
        (
            "wrx90-pm50100-16gpu",
            &[
                "old-3root-sw1-to-sw2+sw3-write",
                "old-3root-sw1-to-sw2+sw4-write",
                "cr-4root-collapse-2-write",
                "cr-4root-collapse-3-write",
            ],
            &[
                "old-3root-sw1-to-sw2+sw3-read",
                "old-3root-sw1-to-sw2+sw4-read",
                "old-3root-sw1-to-sw3+sw4-write",
                "old-3root-sw2-to-sw3+sw4-write",
                "old-3root-sw1-to-sw2-only-write",
                "old-3root-sw1-to-sw3-only-write",
                "old-3root-sw1-sw2-and-sw3-sw4-write",
                "cr-4root-control-write",
                "cr-4root-collapse-2-read",
                "cr-4root-healthy-indep-write",
                "cr-probe-plus4",
                "3root-now-sw1-to-sw2+sw3-write",
                "3root-now-sw1-to-sw2+sw4-write",
            ],
        ),
    ];
    for (name, triggers, controls) in cases {
        let dir = public().join(name);
        let rig = load_rig(&dir).unwrap();
        let p = params_of(&dir);
        let stated = documented_collapse_gbps(&rig).expect("the rig's topologies state a rate");
        let rate = p
            .platform
            .collapse_gbps
            .expect("the rig's params carry its collapse rate");
        assert!(
            (rate / stated - 1.0).abs() < 0.15,
            "{name}: fitted collapse {rate} GB/s vs stated {stated}"
        );
        for id in *triggers {
            let (measured, on, off) = on_off(&rig, &p, id);
            assert!(
                on < 0.4 * off,
                "{name} {id}: {on} with collapse, {off} without"
            );
            assert!(
                pct(on, measured).abs() <= TOLERANCE_PCT,
                "{name} {id}: {on} vs measured {measured}"
            );
        }
        for id in *controls {
            let (_, on, off) = on_off(&rig, &p, id);
            assert!((on / off - 1.0).abs() < 1e-3, "{name} {id}: {on} vs {off}");
        }
    }
}

/// The rule that frees a rig's constants (`contend_fit::fit::pin`, one
/// rule with the measurement files' calibration) decides for every rig
/// what its committed report says, reason for reason.
#[test]
fn the_rule_frees_the_committed_constants_of_every_rig() {
    for dir in rig_dirs() {
        if !dir.join("params.toml").is_file() {
            continue;
        }
        let rig = load_rig(&dir).unwrap();
        let text = std::fs::read_to_string(dir.join("report.json")).unwrap();
        let s: RigSummary = serde_json::from_str(&text).unwrap();
        let now = choose_free(&rig, &ModelParams::default(), Fidelity::Flow).unwrap();
        assert_eq!(now.len(), s.choices.len(), "{}", rig.name());
        for ((_, c), k) in now.iter().zip(&s.choices) {
            assert_eq!(
                (&c.name, c.free, c.moves, &c.why),
                (&k.name, k.free, k.moves, &k.why),
                "{}",
                rig.name()
            );
        }
    }
}

/// The fit is deterministic: refitting the GENOAD24QM32 rig (one free
/// constant) from scratch gives the committed params back.
#[test]
fn a_small_rig_refits_to_its_committed_params() {
    let dir = public().join("genoad24qm32-pm50100-16gpu");
    let rig = load_rig(&dir).unwrap();
    let opts = RigOptions {
        fit: FitOptions {
            bootstrap: 0,
            ..FitOptions::default()
        },
        free: None,
        force: false,
    };
    let s = calibrate_rig(&rig, &ModelParams::default(), &opts, &|_, _, _| {}).unwrap();
    let committed = params_of(&dir);
    for c in &s.constants {
        let p = ModelParams::from_toml("refit", &s.params_toml).unwrap();
        let name = c.name.as_str();
        let (a, b) = match name {
            "pcie.dllp_overhead" => (p.pcie.dllp_overhead, committed.pcie.dllp_overhead),
            other => panic!("unexpected free constant {other} for this rig"),
        };
        assert!((a - b).abs() < 1e-9, "{name}: refit {a} vs committed {b}");
    }
    assert_eq!(s.fitted_errors.n, rig.twins().len());
    assert!(s.fitted_errors.max_pct <= TOLERANCE_PCT);
    // the rig's figures file loads on its own too
    load_figures(&dir.join("figures.toml")).unwrap();
}

/// A figure naming a GPU its topology lacks is an error at the figure's
/// field; a topology file that is not there, at the file's `topology`.
#[test]
fn a_rig_folder_with_bad_figures_is_a_located_error() {
    let dir = std::env::temp_dir().join(format!("contend-rig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let topo = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../topologies/public/genoad24qm32-pm50100-16gpu.toml"),
    )
    .unwrap();
    std::fs::write(dir.join("t.toml"), topo).unwrap();
    let figs = "rig = \"bad\"\ntopology = \"t.toml\"\n\n[[figure]]\nid = \"a\"\nwhat = \"w\"\nsource = \"s\"\ntool = \"torch copy_\"\nengine = \"copy\"\nop = \"write\"\nstreams = [[\"gpu0\", \"gpu99\"]]\nbytes = \"256 MiB\"\nvalue = 56.3\nmetric = \"per-stream-gbps\"\nfit = true\n";
    std::fs::write(dir.join("figures.toml"), figs).unwrap();
    let e = load_rig(&dir).unwrap_err().to_string();
    assert!(
        e.contains("figures.toml:11:") && e.contains("(field `streams`)") && e.contains("gpu99"),
        "{e}"
    );
    std::fs::write(
        dir.join("figures.toml"),
        figs.replace("t.toml", "missing.toml"),
    )
    .unwrap();
    let e = load_rig(&dir).unwrap_err().to_string();
    assert!(
        e.contains("figures.toml:2:") && e.contains("missing.toml") && e.contains("not found"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
