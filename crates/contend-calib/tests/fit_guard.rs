//! An nccl-tests run's ranks on the topology's GPUs
//! (`contend_calib::measure`): a run over fewer GPUs than the topology has
//! is placed by its devices' PCI addresses where both sides name them, and
//! refused, naming both counts, where they do not.

use contend_calib::CalibError;
use contend_calib::measure::{Kind, load_measurements};
use contend_topo::{Topology, load_topology, parse_topology};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fit-guard");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
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
