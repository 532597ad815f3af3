//! The path for a new box, as a user runs it on a public one (the ASUS
//! ESC8000A-E12 page of tests/fixtures/real/machines): `contend topo import`
//! → `topo validate` and `simulate` → `contend import` → `calibrate` →
//! `advise --emit`.

mod common;
use common::contend;

const BOX: &str = "tests/fixtures/real/machines/stelline-asus-esc8000a-e12.md";

#[test]
fn a_public_pcie_box_from_import_to_emit() {
    let dir = std::env::temp_dir().join(format!("contend-import-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let topo = dir.join("box.toml");
    let topo_s = topo.display().to_string();

    let (ok, _, err) = contend(&["topo", "import", BOX, "--out", &topo_s]);
    assert!(ok, "{err}");
    assert!(
        err.contains("lspci -tv (4 GPUs under 8 host bridges)"),
        "{err}"
    );
    assert!(
        err.contains("warning: fill `bandwidth_gbps` of link mem0–iod0"),
        "{err}"
    );
    let text = std::fs::read_to_string(&topo).unwrap();
    assert!(
        text.starts_with("# Written by `contend topo import` from:"),
        "{text}"
    );
    assert!(
        text.contains(&format!("source = \"contend topo import of {BOX}")),
        "{text}"
    );

    let (ok, out, err) = contend(&["topo", "validate", &topo_s]);
    assert!(
        ok && out.contains("valid (12 nodes, 11 links, 4 GPUs)"),
        "{out}{err}"
    );
    let (ok, out, err) = contend(&["simulate", "--topology", &topo_s, "--fidelity", "flow"]);
    assert!(ok && out.contains("winner:"), "{out}{err}");

    let (ok, out, err) = contend(&["import", BOX]);
    assert!(
        ok && out.contains("p2pBandwidthLatencyTest, 36 record(s)"),
        "{out}{err}"
    );

    let cal = dir.join("cal");
    let (ok, out, err) = contend(&[
        "calibrate",
        BOX,
        "--topology",
        &topo_s,
        "--out",
        &cal.display().to_string(),
        "--bootstrap",
        "0",
    ]);
    assert!(ok, "{out}{err}");
    let params = cal.join("params.toml");
    assert!(params.exists(), "{out}");
    // one bandwidth matrix pins the link efficiency alone: the rest of the
    // default set keeps its defaults, each with why and what would pin it
    assert!(
        out.contains("fitted pcie.dllp_overhead from 36 fit figure(s): copy-peer to a GPU (12), copy-peer to a GPU, 2 streams (24)"),
        "{out}"
    );
    assert!(
        out.contains("kept pcie.link_latency_ns at 40: no fit figure moves by more than 1 %"),
        "{out}"
    );
    assert_eq!(out.matches("\nkept ").count(), 10, "{out}");
    let fit = std::fs::read_to_string(cal.join("fit.json")).unwrap();
    assert!(fit.contains("\"pinning\""), "{fit}");
    // a latency asked for by name is refused, and nothing is written
    let refused = dir.join("cal-latency");
    let (ok, out, err) = contend(&[
        "calibrate",
        BOX,
        "--topology",
        &topo_s,
        "--out",
        &refused.display().to_string(),
        "--fit",
        "pcie.link_latency_ns",
    ]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("cannot pin 1 of the 1 constant(s) asked for with --fit")
            && err.contains("`pcie.link_latency_ns`: no fit figure moves")
            && err.contains("pinned by round trips over PCIe")
            && err.contains("Nothing was written"),
        "{err}"
    );
    assert!(!refused.exists());

    let tuner = dir.join("nccl_tuner.conf");
    let (ok, _, err) = contend(&[
        "advise",
        "--topology",
        &topo_s,
        "--params",
        &params.display().to_string(),
        "--from",
        "4KiB",
        "--to",
        "64KiB",
        "--emit",
        "nccl-tuner-csv",
        "--out",
        &tuner.display().to_string(),
    ]);
    assert!(ok, "{err}");
    let conf = std::fs::read_to_string(&tuner).unwrap();
    assert!(
        conf.contains(&format!("params {} #", params.display())),
        "{conf}"
    );
    assert!(
        conf.lines().any(|l| l.starts_with("allreduce,0,")),
        "{conf}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cut_or_foreign_inputs_are_errors_that_say_where() {
    let (ok, _, err) = contend(&[
        "topo",
        "import",
        "tests/fixtures/real/nccl-topo/nccl-tests-256-h200-baremetal-cut.xml",
    ]);
    assert!(!ok);
    assert!(
        err.contains("baremetal-cut.xml:54:1: NCCL topology XML ends inside <nic>"),
        "{err}"
    );
    let (ok, _, err) = contend(&[
        "advise",
        "--topology",
        "pro6000-4x-1socket",
        "--emit",
        "nccl",
    ]);
    assert!(!ok && err.contains("unknown --emit kind `nccl`"), "{err}");
}
