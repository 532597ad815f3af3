//! One rule for the records of the transfer microbenchmarks other tools
//! print (p2pBandwidthLatencyTest, nvbandwidth, p2pmark): a figure — an
//! engine moving `bytes` from one GPU to another or to host memory at a
//! rate, alone or beside other streams — becomes a transfer record whose
//! probe op is the one contend's own `hw probe` writes for the same
//! mechanism, so calibration twins it the same way.

use super::Tool;
use contend_workload::{
    Extra, GroupTag, LaunchMode, Machine, Measured, ProbeOp, ResultRecord, Source, Stats,
    WorkloadKind,
};

/// The other end of a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    Gpu(usize),
    Host,
}

/// One measured stream.
#[derive(Clone, Debug)]
pub(crate) struct Figure {
    pub op: ProbeOp,
    /// The GPU whose engine drives the stream.
    pub from: usize,
    pub to: End,
    pub bytes: u64,
    /// The stream's rate, GB/s (10^9 B/s).
    pub gbps: f64,
    /// Streams that ran at the same time, this one included.
    pub concurrent: u32,
    /// Ties the records of concurrent streams together.
    pub group: Option<String>,
    /// The tool's name for the test (`Bidirectional P2P=Enabled`).
    pub test: String,
    /// What the number is when it is not this stream's own rate.
    pub value: Option<String>,
}

/// What a run of a tool says about itself.
#[derive(Clone, Debug, Default)]
pub(crate) struct ToolRun {
    pub version: Option<String>,
    /// GPU names by device index, when printed.
    pub gpus: Vec<String>,
    pub pci: Vec<String>,
    pub host: Option<String>,
}

fn direction(op: ProbeOp) -> &'static str {
    match op {
        ProbeOp::CopyPeerRead | ProbeOp::SmLoad | ProbeOp::CopyH2d => "read",
        _ => "write",
    }
}

/// The record of one figure.
pub(crate) fn record(tool: Tool, run: &ToolRun, f: &Figure) -> ResultRecord {
    // ns (GB/s is bytes per ns), to a thousandth: the figure survives JSON
    let per_op = (f.bytes as f64 / f.gbps * 1000.0).round() / 1000.0;
    let mut extra = Extra::default();
    extra.import.format = Some(tool.name().to_string());
    extra.import.tool_version = run.version.clone();
    extra.import.test = Some(f.test.clone());
    extra.import.engine = Some(if f.op.is_kernel() { "sm" } else { "copy" }.to_string());
    extra.import.direction = Some(direction(f.op).to_string());
    extra.import.value = f.value.clone();
    extra.import.hosts = run.host.clone().map(|h| vec![h]);
    if f.concurrent > 1 {
        extra.stream.concurrent_streams = Some(f.concurrent);
        extra.kernel.group = f.group.clone().map(GroupTag::Label);
    }
    let machine = (!run.gpus.is_empty()).then(|| Machine {
        hostname: run.host.clone().unwrap_or_default(),
        gpus: run.gpus.clone(),
        pci_addresses: run.pci.clone(),
        ..Machine::default()
    });
    ResultRecord {
        source: Source::Hw,
        scenario: tool.name().to_string(),
        topology: String::new(),
        workload: WorkloadKind::Transfer,
        algorithm: Measured::of_probe(f.op),
        placement: None,
        fidelity: None,
        launch: LaunchMode::Eager,
        ranks: vec![
            format!("gpu{}", f.from),
            match f.to {
                End::Gpu(j) => format!("gpu{j}"),
                End::Host => "host".to_string(),
            },
        ],
        size_bytes: f.bytes,
        total_ns: per_op,
        per_op_ns: vec![per_op],
        stats: Stats::of(&[per_op]),
        bandwidth_gbps: Some(f.gbps),
        verified: None,
        events: None,
        wall_ns: None,
        busiest_link: None,
        machine,
        extra,
    }
}

/// A GB/s figure as printed: a positive finite number.
pub(crate) fn gbps(tok: &str) -> Option<f64> {
    tok.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
}
