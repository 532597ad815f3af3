//! The hardware backend writes the shared result schema: records survive a
//! JSON Lines round trip through the sink, lines from other writers parse,
//! and broken lines are reported with their line number.

use contend_hw::{LiveMachine, Sink};
use contend_workload::jsonl::parse_records;
use contend_workload::{
    Algorithm, Extra, LaunchMode, Measured, Placement, ResultRecord, Source, Stats, WorkloadKind,
};

fn read_records(text: &str) -> Result<Vec<ResultRecord>, String> {
    parse_records("out.jsonl", text)
        .map(|v| v.into_iter().map(|(_, r)| r).collect())
        .map_err(|e| e.to_string())
}

fn sample(size: u64) -> ResultRecord {
    let per_op: Vec<f64> = (0..50).map(|i| 8000.0 + f64::from(i) * 10.0).collect();
    let mut extra = Extra::default();
    extra.kernel.blocks = Some(132);
    extra.kernel.grid = Some(1);
    ResultRecord {
        source: Source::Hw,
        scenario: "hw-allreduce-h200x2".into(),
        topology: "h200-2x".into(),
        workload: WorkloadKind::Allreduce,
        algorithm: Measured::Allreduce(Algorithm::OneShotPull),
        placement: Some(Placement::Peer),
        fidelity: None,
        launch: LaunchMode::Eager,
        ranks: vec!["gpu0".into(), "gpu1".into()],
        size_bytes: size,
        total_ns: per_op.iter().sum(),
        stats: Stats::of(&per_op),
        per_op_ns: per_op,
        bandwidth_gbps: None,
        verified: Some(true),
        events: None,
        wall_ns: None,
        busiest_link: None,
        machine: None,
        extra,
    }
}

#[test]
fn records_round_trip_through_the_sink() {
    let dir = std::env::temp_dir().join(format!("contend-hw-test-{}", std::process::id()));
    let path = dir.join("out.jsonl");
    let live = LiveMachine {
        hostname: "test".into(),
        driver: "580.159.04".into(),
        cuda: "13.0".into(),
        link_matrix: vec![
            vec!["X".into(), "NV18".into()],
            vec!["NV18".into(), "X".into()],
        ],
        ..Default::default()
    };
    let mut sink = Sink::create(Some(&path), live.machine()).unwrap();
    for s in [1024, 65536] {
        sink.write(sample(s)).unwrap();
    }
    // Written and flushed line by line: readable before the sink is dropped.
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2);
    let back = read_records(&text).unwrap();
    let mut want = sample(1024);
    want.machine = Some(live.machine());
    assert_eq!(back[0], want);
    assert_eq!(back[1].size_bytes, 65536);
    assert_eq!(back[0].machine.as_ref().unwrap().link_matrix[0][1], "NV18");
    drop(sink);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn lines_without_extra_parse_and_bad_lines_are_located() {
    let mut v = serde_json::to_value(sample(4096)).unwrap();
    v.as_object_mut().unwrap().remove("extra");
    let line = serde_json::to_string(&v).unwrap();
    let recs = read_records(&format!("{line}\n\n{line}\n")).unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].extra, Extra::default());
    let err = read_records(&format!("{line}\n{{\"source\": \"hw\"}}\n")).unwrap_err();
    assert!(err.starts_with("out.jsonl:2:"), "{err}");
}
