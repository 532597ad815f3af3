//! `contend tui`: the terminal UI over a topology and a scenario.

use anyhow::{Context, Result, bail};
use contend_sim::ModelParams;
use contend_topo::Topology;
use contend_tui::{App, ThreadWorker, check_measurements, measurements_beside};
use contend_workload::{default_scenario, load_scenario};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct TuiArgs {
    /// Topology to explore: a file or a shipped name (default: the scenario's,
    /// else 8x RTX PRO 6000 on two sockets).
    topology: Option<String>,
    /// Scenario (a TOML file or a shipped name) to start from: ranks, algorithms, placement, workload.
    /// Without it: the EAGLE-3 verify step on all GPUs, every algorithm, flow fidelity.
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// Model constants (TOML), e.g. a calibrated params.toml; measurement
    /// files (*.jsonl) beside it are laid over the charts.
    #[arg(long)]
    params: Option<PathBuf>,
    /// Measured results to lay over the charts: any file calibrate reads
    /// (JSON Lines of result records from `contend hw run --out`, `contend hw
    /// nccl --out`, `contend import --out`, or a tool's output as `contend
    /// import` reads it: nccl-tests text or -J JSON, p2pBandwidthLatencyTest,
    /// nvbandwidth, p2pmark).
    #[arg(long)]
    measurements: Option<PathBuf>,
}

fn topology(t: &str) -> Result<Topology> {
    Ok(contend_topo::shipped::resolve(t)?)
}

pub fn run(args: TuiArgs) -> Result<()> {
    let topo = args.topology.as_deref().map(topology).transpose()?;
    let sc = match &args.scenario {
        Some(p) => load_scenario(p, topo)?,
        None => default_scenario(topo)?,
    };
    let params = match &args.params {
        Some(p) => ModelParams::load(p)?,
        None => ModelParams::default(),
    };
    let mut measurements = vec![];
    let files = match (&args.measurements, &args.params) {
        (Some(m), _) => vec![m.clone()],
        (None, Some(p)) => measurements_beside(p),
        (None, None) => vec![],
    };
    for f in &files {
        // What calibrate reads, read the way it reads it: contend's JSON
        // Lines, or any tool's output `contend import` reads.
        let recs = contend_import::measure::read_records(f)?;
        check_measurements(&f.display().to_string(), &recs)?;
        measurements.extend(recs.into_iter().map(|r| r.1));
    }
    if !std::io::stdout().is_terminal() {
        bail!("contend tui draws on a terminal, and standard output is not one");
    }
    let worker = ThreadWorker::start().context("cannot start the simulation worker thread")?;
    let mut app = App::new(sc, params, measurements, Box::new(worker));
    contend_tui::run(&mut app)?;
    Ok(())
}
