//! `contend nccl` as a user runs it.

mod common;
use common::contend;

#[test]
fn explain_says_what_nccl_does_and_why() {
    let (ok, out, err) = contend(&["nccl", "explain", "pro6000-8x-2switch", "--size", "42KiB"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("gpu0→gpu4: SHM, path PHB above P2P level PXB"),
        "{out}"
    );
    assert!(out.contains("ring LL"), "{out}");
    let (ok, out, err) = contend(&[
        "nccl",
        "explain",
        "pro6000-8x-2socket",
        "--env",
        "NCCL_P2P_LEVEL=SYS",
        "--version",
        "2.29",
        "--format",
        "json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["plan"]["version"], "V2_29");
    assert_eq!(v["plan"]["ring"]["fallback"], true);
}

#[test]
fn explain_rejects_bad_input_with_one_clear_error() {
    let (ok, _, err) = contend(&[
        "nccl",
        "explain",
        "pro6000-8x-2socket",
        "--env",
        "NCCL_P2P_LEVEL=NODE",
    ]);
    assert!(
        !ok && err.contains("NCCL_P2P_LEVEL=NODE") && err.contains("PHB"),
        "{err}"
    );
    let (ok, _, err) = contend(&[
        "nccl",
        "explain",
        "pro6000-8x-2socket",
        "--ranks",
        "gpu0,gpu9",
    ]);
    assert!(!ok && err.contains("gpu9"), "{err}");
}

#[test]
fn log_reads_a_public_log() {
    let (ok, out, err) = contend(&[
        "nccl",
        "log",
        "tests/fixtures/nccl-logs/rtx5090-2x-genoa.log",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["channel_counts"]["coll"], 2);
}
