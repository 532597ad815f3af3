//! What a calibration refuses (`contend_fit::calibrate::guard`): only
//! the constants the measurements pin are fitted, each other kept with the
//! reason; a `--fit` constant the data cannot pin, or none pinned at all,
//! is refused; a fitted constant on a bound of its search range is
//! refused; an nccl-tests run whose ranks cannot be placed on the
//! topology's GPUs is refused, naming both counts. `force` turns each
//! refusal into a warning kept in the summary.

use contend_fit::calibrate::FitSummary;
use contend_fit::{
    CalibrateOptions, DEFAULT_SUBSET, FitOptions, NCCL_LOG_SUBSET, calibrate, select,
};
use contend_import::CalibError;
use contend_import::import::import_file;
use contend_import::measure::{Kind, load_measurements};
use contend_sim::ModelParams;
use contend_topo::{Topology, load_topology, parse_topology};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README walkthrough's box report (ASUS ESC8000A-E12, 4x RTX 6000
/// Ada): a p2pBandwidthLatencyTest run, its only measurements.
fn stelline() -> PathBuf {
    root().join("tests/fixtures/real/machines/stelline-asus-esc8000a-e12.md")
}

/// The walkthrough's `contend topo import` of the same report.
fn stelline_topology() -> Topology {
    let f = stelline();
    let text = std::fs::read_to_string(&f).unwrap();
    contend_topo::import::import_topology(&[(f.display().to_string(), text)], None)
        .unwrap()
        .topology
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fit-guard");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The options `contend calibrate` uses: `fit` the constants asked for
/// (`None`: the default sets).
fn opts(fit: Option<&[&str]>, force: bool) -> CalibrateOptions {
    let (params, log) = match fit {
        Some(f) => (names(f), names(f)),
        None => (names(DEFAULT_SUBSET), names(NCCL_LOG_SUBSET)),
    };
    CalibrateOptions {
        fit: FitOptions {
            max_iters: 200,
            bootstrap: 0,
            ..FitOptions::default()
        },
        params: select(&params).unwrap(),
        log_params: select(&log).unwrap(),
        tlp_checks: 0,
        requested: fit.is_some(),
        force,
    }
}

fn run(
    file: &Path,
    topo: &Topology,
    base: &ModelParams,
    o: &CalibrateOptions,
) -> Result<FitSummary, CalibError> {
    calibrate(&[file], topo, "box.toml", base, o, &|_, _, _| {})
}

fn fitted(s: &FitSummary) -> Vec<&str> {
    s.constants.iter().map(|c| c.name.as_str()).collect()
}

/// 36 copy bandwidths (12 one-way, 24 two-way) pin the link efficiency
/// and nothing else: it alone is fitted, every other constant of the
/// default set keeps its default, each with why and what would pin it.
#[test]
fn a_p2p_bandwidth_matrix_fits_the_link_efficiency_alone() {
    let topo = stelline_topology();
    let s = run(
        &stelline(),
        &topo,
        &ModelParams::default(),
        &opts(None, false),
    )
    .unwrap();
    assert_eq!(fitted(&s), ["pcie.dllp_overhead"]);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.pinning.len(), DEFAULT_SUBSET.len());
    let link = &s.pinning[0];
    assert_eq!(link.name, "pcie.dllp_overhead");
    assert!(link.pinned && link.fitted);
    assert_eq!(link.moves, 36);
    assert_eq!(
        link.figures,
        [
            "copy-peer to a GPU (12)",
            "copy-peer to a GPU, 2 streams (24)"
        ]
    );
    let p = ModelParams::from_toml("params.toml", &s.params_toml).unwrap();
    let d = ModelParams::default();
    for k in &s.pinning[1..] {
        assert!(!k.pinned && !k.fitted, "{k:?}");
        assert!(
            k.why.starts_with("no fit figure moves by more than 1 %"),
            "{k:?}"
        );
        assert!(!k.pinned_by.is_empty());
    }
    // what is kept is the default
    assert_eq!(p.pcie.link_latency_ns, d.pcie.link_latency_ns);
    assert_eq!(p.gpu.copy_setup_ns, d.gpu.copy_setup_ns);
    assert_ne!(p.pcie.dllp_overhead, d.pcie.dllp_overhead);

    // a latency asked for by name is refused: the bandwidths cannot pin it
    let e = run(
        &stelline(),
        &topo,
        &ModelParams::default(),
        &opts(Some(&["pcie.dllp_overhead", "pcie.link_latency_ns"]), false),
    )
    .unwrap_err();
    match &e {
        CalibError::Unpinned {
            unpinned,
            pinned,
            asked: 2,
            requested: true,
        } => {
            assert_eq!(unpinned[0].name, "pcie.link_latency_ns");
            assert_eq!(pinned, &["pcie.dllp_overhead"]);
        }
        other => panic!("{other:?}"),
    }
    let m = e.to_string();
    for part in [
        "cannot pin 1 of the 2 constant(s) asked for with --fit",
        "`pcie.link_latency_ns`: no fit figure moves by more than 1 %",
        "pinned by round trips over PCIe",
        "The data pins `pcie.dllp_overhead`",
        "--force",
    ] {
        assert!(m.contains(part), "`{part}` not in: {m}");
    }
    // ... and fitted anyway under force, with a warning
    let s = run(
        &stelline(),
        &topo,
        &ModelParams::default(),
        &opts(Some(&["pcie.dllp_overhead", "pcie.link_latency_ns"]), true),
    )
    .unwrap();
    assert_eq!(fitted(&s), ["pcie.dllp_overhead", "pcie.link_latency_ns"]);
    assert!(s.pinning[1].fitted && !s.pinning[1].pinned);
    assert!(
        s.warnings[0].contains("fitted anyway (--force)"),
        "{:?}",
        s.warnings
    );
}

/// Starting constants whose root-complex cap is below every measured
/// rate: no constant moves a figure, so nothing is pinned and nothing is
/// written.
#[test]
fn nothing_pinned_is_refused() {
    let mut base = ModelParams::default();
    base.root_complex.p2p_bandwidth_gbps = Some(20.0);
    let e = run(&stelline(), &stelline_topology(), &base, &opts(None, false)).unwrap_err();
    assert!(
        matches!(&e, CalibError::Unpinned { pinned, requested: false, .. } if pinned.is_empty()),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("the measurements pin none of the 11 constants calibration fits"),
        "{e}"
    );
}

/// The walkthrough's copies made 1.6 times slower than measured: no link
/// efficiency in the search range explains them, so the fitted one ends
/// on the range's upper bound, which is refused, and written with a
/// warning under force.
#[test]
fn a_constant_on_its_bound_is_refused_unless_forced() {
    let imported = import_file(&stelline()).unwrap();
    let mut text = String::new();
    for (_, mut r) in imported.records {
        r.stats.median_ns *= 1.6;
        r.total_ns *= 1.6;
        for t in &mut r.per_op_ns {
            *t *= 1.6;
        }
        if let Some(b) = &mut r.bandwidth_gbps {
            *b /= 1.6;
        }
        text += &(serde_json::to_string(&r).unwrap() + "\n");
    }
    let slow = scratch("slow-copies.jsonl");
    std::fs::write(&slow, text).unwrap();
    let topo = stelline_topology();
    let e = run(&slow, &topo, &ModelParams::default(), &opts(None, false)).unwrap_err();
    match &e {
        CalibError::OnBound { constants } => {
            assert_eq!(constants.len(), 1);
            let c = &constants[0];
            assert_eq!(c.name, "pcie.dllp_overhead");
            assert!(c.upper && c.bound == 0.35, "{c:?}");
        }
        other => panic!("{other:?}"),
    }
    let m = e.to_string();
    for part in [
        "`pcie.dllp_overhead` = 0.3",
        "on its upper bound 0.3500",
        "pinned by large transfers over PCIe",
        "--force",
        "Nothing was written",
    ] {
        assert!(m.contains(part), "`{part}` not in: {m}");
    }
    // under force the default set is fitted whole (pinned or not): the
    // link efficiency alone, to see its warning alone
    let s = run(
        &slow,
        &topo,
        &ModelParams::default(),
        &opts(Some(&["pcie.dllp_overhead"]), true),
    )
    .unwrap();
    assert!(s.constants[0].at_bound);
    assert_eq!(s.warnings.len(), 1);
    assert!(
        s.warnings[0].contains("on its upper bound") && s.warnings[0].contains("written anyway"),
        "{:?}",
        s.warnings
    );
}

/// The shipped 8x RTX 4090 topology with the PCI address of each GPU in
/// its note, as `contend topo import` writes it.
fn rtx4090_8x_at(buses: [&str; 8]) -> Topology {
    let mut text = std::fs::read_to_string(root().join("topologies/rtx4090-8x-gen4.toml")).unwrap();
    for (i, bus) in buses.iter().enumerate() {
        let node = format!("id = \"gpu{i}\"\nkind = \"gpu\"\n");
        assert!(text.contains(&node), "{node}");
        text = text.replace(&node, &format!("{node}note = \"PCI 0000:{bus}:00.0\"\n"));
    }
    parse_topology("rtx4090-8x-pci.toml", &text).unwrap()
}

fn tinygrad() -> PathBuf {
    root().join("tests/fixtures/real/nccl-tests/tinygrad-6x4090-prompt.log")
}

/// tinygrad's `all_reduce_perf -g 6` on a 6x RTX 4090 box, against an
/// 8-GPU topology: which 6 ran is unknown unless both name PCI addresses.
#[test]
fn a_six_gpu_run_on_an_eight_gpu_topology_is_placed_by_pci_address_or_refused() {
    let plain = load_topology(&root().join("topologies/rtx4090-8x-gen4.toml")).unwrap();
    let e = load_measurements(&[tinygrad().as_path()], &plain).unwrap_err();
    assert!(
        matches!(
            e,
            CalibError::RankMismatch {
                ranks: 6,
                gpus: 8,
                line: 15,
                ..
            }
        ),
        "{e:?}"
    );
    let m = e.to_string();
    for part in [
        "tinygrad-6x4090-prompt.log:15: rank mismatch",
        "the nccl-tests run has 6 ranks",
        "has 8 GPUs",
        "PCI 0x01, 0x42, 0x81, 0x82, 0xc1, 0xc2",
        "the topology's GPUs carry no PCI address",
        "a topology of the 6 GPUs that ran",
        "`-g 8`",
    ] {
        assert!(m.contains(part), "`{part}` not in: {m}");
    }
    // calibrate refuses it the same way, before any fit
    let e = run(
        &tinygrad(),
        &plain,
        &ModelParams::default(),
        &opts(None, true),
    )
    .unwrap_err();
    assert!(matches!(e, CalibError::RankMismatch { .. }), "{e:?}");

    // the GPUs at those addresses ran, whatever their CUDA order
    let box8 = rtx4090_8x_at(["01", "02", "42", "43", "81", "82", "c1", "c2"]);
    let ms = load_measurements(&[tinygrad().as_path()], &box8).unwrap();
    let want = ["gpu0", "gpu2", "gpu4", "gpu5", "gpu6", "gpu7"];
    assert_eq!(ms[0].record.ranks, want);
    assert!(matches!(&ms[0].kind, Kind::Allreduce { ranks, .. } if ranks == &want));

    // a device at an address the topology lacks: another box
    let other = rtx4090_8x_at(["01", "02", "41", "43", "81", "82", "c1", "c2"]);
    let e = load_measurements(&[tinygrad().as_path()], &other)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rank 1 of the 6-rank nccl-tests run ran on the GPU at PCI 0x42")
            && e.contains("different boxes"),
        "{e}"
    );
}

/// A run over every GPU of the topology keeps the CUDA order when the
/// topology names no addresses (as before).
#[test]
fn a_run_over_every_gpu_keeps_the_device_order() {
    let mut log = std::fs::read_to_string(tinygrad()).unwrap();
    log = log.replace("nGpus 6", "nGpus 8").replace(
        "#  Rank  5 Group  0 Pid  26230 on     tiny14 device  5 [0xc2] NVIDIA GeForce RTX 4090\n",
        "#  Rank  5 Group  0 Pid  26230 on     tiny14 device  5 [0xc2] NVIDIA GeForce RTX 4090\n#  Rank  6 Group  0 Pid  26230 on     tiny14 device  6 [0xc3] NVIDIA GeForce RTX 4090\n#  Rank  7 Group  0 Pid  26230 on     tiny14 device  7 [0xc4] NVIDIA GeForce RTX 4090\n",
    );
    let p = scratch("eight.log");
    std::fs::write(&p, log).unwrap();
    let plain = load_topology(&root().join("topologies/rtx4090-8x-gen4.toml")).unwrap();
    let ms = load_measurements(&[p.as_path()], &plain).unwrap();
    assert_eq!(
        ms[0].record.ranks,
        [
            "gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6", "gpu7"
        ]
    );
}
