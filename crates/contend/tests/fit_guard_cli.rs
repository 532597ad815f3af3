//! What `contend calibrate` refuses, as a user meets it: an nccl-tests
//! run whose ranks cannot be placed on the topology's GPUs. A refusal
//! exits 1 with the reason and writes nothing.

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
