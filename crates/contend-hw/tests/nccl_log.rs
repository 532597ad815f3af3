//! The capture and parse path of `contend hw nccl`'s decision pass, without
//! a GPU: the variables the pass runs under, reading NCCL's log back, and
//! each record keeping NCCL's decisions for its size.

use contend_hw::nccl::{DEBUG_SUBSYS, attach_decisions, capture_env, read_decisions};
use contend_nccl::{Algorithm, DecidedBy, Protocol, TransportKind};
use contend_workload::Extra;
use std::path::{Path, PathBuf};

/// The public `NCCL_DEBUG=INFO` run of nccl-tests on 2× RTX 5090
/// (`tests/fixtures/nccl-logs`, its README gives the source).
fn public_log() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nccl-logs/rtx5090-2x-genoa.log")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("contend-hw-nccl-log-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn the_pass_logs_every_decision_subsystem_into_a_file() {
    let env = capture_env(Path::new("/tmp/x/nccl.log"));
    let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("NCCL_DEBUG"), Some("INFO"));
    assert_eq!(get("NCCL_DEBUG_FILE"), Some("/tmp/x/nccl.log"));
    let subsys = get("NCCL_DEBUG_SUBSYS").unwrap();
    for s in ["INIT", "GRAPH", "TUNING", "ENV"] {
        assert!(
            subsys.split(',').any(|x| x == s),
            "{s} missing from {subsys}"
        );
    }
    assert_eq!(subsys, DEBUG_SUBSYS);
}

#[test]
fn a_captured_log_puts_ncclss_decisions_into_the_record() {
    // The public log holds the init decisions (SHM between the two GPUs,
    // two channels) but no per-call line: this NCCL run had no TUNING. Add
    // the per-call lines NCCL 2.28 prints with it, in its format
    // ("%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}",
    // src/enqueue.cc v2.28.9-1), as the decision pass's log has them.
    let mut text = std::fs::read_to_string(public_log()).unwrap();
    text.push_str(
        "GENOA-06:4766:4766 [0] NCCL INFO AllReduce: 43008 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}\n",
    );
    text.push_str(
        "GENOA-06:4766:4766 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}\n",
    );
    let path = tmp("captured.log");
    std::fs::write(&path, &text).unwrap();
    let log = read_decisions(&path).unwrap();
    let mut extra = Extra::default();
    attach_decisions(&log, 43_008, &mut extra);
    let f = extra
        .nccl
        .decisions
        .as_ref()
        .expect("decisions for 43008 B");
    assert_eq!(f.decided_by, DecidedBy::Log);
    assert_eq!(f.version, "2.25.1");
    assert_eq!(
        (f.algorithm, f.protocol),
        (Algorithm::Ring, Protocol::Simple)
    );
    assert_eq!(
        (f.channel_lo, f.channel_hi, f.comm_channels),
        (0, 1, Some(2))
    );
    // both directions between the two GPUs, through host memory
    assert_eq!(f.connections.len(), 2);
    assert!(
        f.connections
            .iter()
            .all(|c| c.transport == TransportKind::Shm)
    );
    let line = extra.nccl.line.as_deref().unwrap();
    assert!(
        line.starts_with(
            "nccl 2.25.1 (NCCL's log): SHM on 2 connections; ring Simple on channels 0..1 of 2"
        ),
        "{line}"
    );
    let mut small = Extra::default();
    attach_decisions(&log, 1024, &mut small);
    assert_eq!(small.nccl.decisions.unwrap().protocol, Protocol::Ll);
    // a size NCCL printed no line for gets none
    let mut none = Extra::default();
    attach_decisions(&log, 4096, &mut none);
    assert!(none.nccl.decisions.is_none() && none.nccl.line.is_none());
    // no tuner plugin asked for: its `Could not find` line is no news
    assert!(extra.nccl.tuner.is_none() && none.nccl.tuner.is_none());
    // and the record's JSON keeps them
    let json = serde_json::to_value(&extra).unwrap();
    assert_eq!(json["nccl_decisions"]["protocol"], "Simple");
    let back: Extra = serde_json::from_value(json).unwrap();
    assert_eq!(back.nccl.decisions, extra.nccl.decisions);
}

#[test]
fn a_missing_or_broken_log_is_a_located_error() {
    let e = read_decisions(Path::new("/no/such/nccl.log"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("/no/such/nccl.log: cannot read NCCL's log"),
        "{e}"
    );
    let path = tmp("broken.log");
    std::fs::write(
        &path,
        "h:1:1 [0] NCCL INFO NCCL version 2.28.3+cuda12.9\nh:1:1 [0] NCCL INFO AllReduce: lots Bytes -> Algo RING proto SIMPLE\n",
    )
    .unwrap();
    let e = read_decisions(&path).unwrap_err().to_string();
    assert!(e.contains("broken.log:2"), "{e}");
}

#[test]
fn a_tuner_plugin_in_the_log_goes_into_every_record() {
    // NCCL 2.28.3's lines (src/plugin/tuner.cc, tuner_v5.cc) around a call
    let text = "\
h:1:1 [0] NCCL INFO NCCL version 2.28.3+cuda12.9
h:1:1 [0] NCCL INFO NCCL_TUNER_PLUGIN set by environment to /x/libcontend_tuner.so
h:1:1 [0] NCCL INFO TUNER/Plugin: Using contend (v5)
h:1:1 [0] NCCL INFO Successfully loaded external tuner plugin /x/libcontend_tuner.so
h:1:1 [0] NCCL INFO contend-tuner: table /t.toml (s) has no entry for 1 ranks on 1 node(s) (it has ranks/nodes 2/1): NCCL's own choices for every call of this communicator
h:1:1 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}
";
    let p = tmp("tuner.log");
    std::fs::write(&p, text).unwrap();
    let log = read_decisions(&p).unwrap();
    for bytes in [1024, 4096] {
        let mut e = Extra::default();
        attach_decisions(&log, bytes, &mut e);
        let t = e.nccl.tuner.as_ref().unwrap();
        assert!(t.loaded() && t.abi == Some(5), "{t:?}");
        assert!(t.contend[0].contains("no entry for 1 ranks"), "{t:?}");
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["nccl_tuner"]["name"], "contend");
        let back: Extra = serde_json::from_value(json).unwrap();
        assert_eq!(back.nccl.tuner, e.nccl.tuner);
        if bytes == 1024 {
            let line = e.nccl.line.unwrap();
            assert!(
                line.ends_with("; tuner plugin contend (v5) loaded from /x/libcontend_tuner.so"),
                "{line}"
            );
        } else {
            assert!(e.nccl.line.is_none());
        }
    }
    // asked for, not loaded: said so
    std::fs::write(
        &p,
        "h:1:1 [0] NCCL INFO NCCL_TUNER_PLUGIN set by environment to /y/nope.so\n\
         h:1:1 [0] NCCL INFO TUNER/Plugin: Could not find: /y/nope.so\n\
         h:1:1 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}\n",
    )
    .unwrap();
    let log = read_decisions(&p).unwrap();
    let mut e = Extra::default();
    attach_decisions(&log, 1024, &mut e);
    assert!(!e.nccl.tuner.as_ref().unwrap().loaded());
    let line = e.nccl.line.unwrap();
    assert!(
        line.ends_with("; no tuner plugin loaded: TUNER/Plugin: Could not find: /y/nope.so"),
        "{line}"
    );
}
