//! `contend`: predict and measure allreduce under PCIe contention.

mod calib_cmd;
mod hw_cmd;
mod nccl_cmd;
mod output;
mod tui_cmd;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use contend_sim::{ModelParams, Run, RunSpec, runs_of, simulate_one};
use contend_topo::{Bytes, Topology, render_tree, shipped};
use contend_workload::{
    Algorithm, Fidelity, Placement, Scenario, Workload, default_scenario, load_scenario,
};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(name = "contend", version, about = "Predict and measure allreduce under PCIe contention", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a scenario (default: the EAGLE-3 verify step on 8x RTX PRO 6000, two sockets).
    Simulate(SimulateArgs),
    /// Sweep allreduce sizes x algorithms and mark where the winner changes.
    Sweep(SweepArgs),
    /// Show or validate topology files.
    Topo {
        #[command(subcommand)]
        cmd: TopoCommand,
    },
    /// Measure the simulator itself: events per second and wall time for the default verify step.
    Bench(BenchArgs),
    /// Run on the real machine: contend's kernels, the NCCL baseline, microbenchmarks, the live topology.
    Hw {
        #[command(subcommand)]
        cmd: hw_cmd::HwCommand,
    },
    /// Explore topologies and scenarios in a terminal UI.
    Tui(tui_cmd::TuiArgs),
    /// Fit the model's constants to measurements (microbenchmarks) and predict the held-out allreduces, or a public rig's on its published figures (`--public`).
    Calibrate(calib_cmd::CalibrateArgs),
    /// Write a calibration folder's Markdown report with SVG charts.
    Report(calib_cmd::ReportArgs),
    /// Print which allreduce algorithm wins up to which size, per world size.
    Advise(calib_cmd::AdviseArgs),
    /// NCCL's own decisions for a topology (paths, transports, channels, algorithm per size), replicated from its sources.
    Nccl {
        #[command(subcommand)]
        cmd: nccl_cmd::NcclCommand,
    },
}

#[derive(Subcommand, Debug)]
enum TopoCommand {
    /// Print a topology as a tree with link rates (a file or a shipped name).
    Show { topology: String },
    /// Check a topology file and report the first problem with its location.
    Validate { topology: String },
    /// List the shipped topologies.
    List,
}

#[derive(Args, Debug, Clone)]
struct ModelOpts {
    /// Use this topology instead of the scenario's (a file or a shipped name).
    #[arg(long)]
    topology: Option<String>,
    /// Model constants (TOML); defaults documented in `contend-sim`'s ModelParams.
    #[arg(long)]
    params: Option<PathBuf>,
    /// Fidelity; repeat for several (default: the scenario's).
    #[arg(long, value_enum)]
    fidelity: Vec<FidelityArg>,
    /// No posted-write collapse anywhere: what if the platform's firmware
    /// were fixed (sets `platform.collapse = false` over the params).
    #[arg(long)]
    no_collapse: bool,
}

#[derive(Args, Debug)]
struct SimulateArgs {
    /// Scenario file (TOML). Without it, the embedded default scenario.
    scenario: Option<PathBuf>,
    #[command(flatten)]
    model: ModelOpts,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Args, Debug)]
struct SweepArgs {
    /// Scenario whose topology, ranks, algorithms and placements to use (default: the embedded one).
    scenario: Option<PathBuf>,
    #[command(flatten)]
    model: ModelOpts,
    /// Smallest size.
    #[arg(long, default_value = "1KiB", value_parser = parse_bytes)]
    from: Bytes,
    /// Largest size.
    #[arg(long, default_value = "64MiB", value_parser = parse_bytes)]
    to: Bytes,
    /// Step factor between sizes: any number above 1 (`1.5`, `1.414`);
    /// sizes round to whole bytes, repeats dropped.
    #[arg(long, default_value_t = 2.0)]
    factor: f64,
    /// These sizes instead of `--from`/`--to`/`--factor` (`1KiB,43008,64KiB`);
    /// sorted, repeats dropped.
    #[arg(long, value_delimiter = ',', value_parser = parse_bytes, conflicts_with_all = ["from", "to", "factor"])]
    sizes: Vec<Bytes>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SweepFormat::Table)]
    format: SweepFormat,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Scenario to time (default: the embedded verify step).
    scenario: Option<PathBuf>,
    /// Model constants (TOML).
    #[arg(long)]
    params: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum FidelityArg {
    Tlp,
    Flow,
}

impl From<FidelityArg> for Fidelity {
    fn from(f: FidelityArg) -> Fidelity {
        match f {
            FidelityArg::Tlp => Fidelity::Tlp,
            FidelityArg::Flow => Fidelity::Flow,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum Format {
    Table,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum SweepFormat {
    Table,
    Csv,
    Json,
    /// nccl-tests style tables (one per algorithm and placement), to diff against nccl-tests logs.
    NcclTests,
}

fn parse_bytes(s: &str) -> Result<Bytes, String> {
    Bytes::parse(s)
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Simulate(a) => simulate(a),
        Command::Sweep(a) => sweep(a),
        Command::Topo { cmd } => topo(cmd),
        Command::Bench(a) => bench(a),
        Command::Hw { cmd } => hw_cmd::run(cmd),
        Command::Calibrate(a) => calib_cmd::calibrate(a),
        Command::Report(a) => calib_cmd::report(a),
        Command::Advise(a) => calib_cmd::advise(a),
        Command::Tui(a) => tui_cmd::run(a),
        Command::Nccl { cmd } => nccl_cmd::run(cmd),
    }
}

/// A topology from a file path or a shipped name.
fn resolve_topology(t: &str) -> Result<Topology> {
    Ok(contend_topo::shipped::resolve(t)?)
}

fn load(
    scenario: Option<&Path>,
    model: &ModelOpts,
) -> Result<(Scenario, ModelParams, Vec<Fidelity>)> {
    let topo = model
        .topology
        .as_deref()
        .map(resolve_topology)
        .transpose()?;
    let sc = match scenario {
        Some(p) => load_scenario(p, topo)?,
        None => default_scenario(topo)?,
    };
    let mut params = match &model.params {
        Some(p) => ModelParams::load(p)?,
        None => ModelParams::default(),
    };
    if model.no_collapse {
        params.platform.collapse = false;
    }
    let fids = if model.fidelity.is_empty() {
        sc.fidelities().to_vec()
    } else {
        dedup(model.fidelity.iter().map(|f| (*f).into()))
    };
    Ok((sc, params, fids))
}

fn dedup<T: PartialEq>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = vec![];
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// Runs simulations in parallel (order of results = order of specs), with progress.
fn run_all(sc: &Scenario, params: &ModelParams, specs: Vec<RunSpec>) -> Result<Vec<Run>> {
    let pb = ProgressBar::new(specs.len() as u64);
    pb.set_style(
        ProgressStyle::with_template("{spinner} simulating [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let out: Vec<_> = specs
        .into_par_iter()
        .map(|spec| {
            let r = simulate_one(sc, params, spec);
            pb.inc(1);
            r
        })
        .collect();
    pb.finish_and_clear();
    out.into_iter()
        .map(|r| r.map_err(anyhow::Error::from))
        .collect()
}

fn simulate(a: SimulateArgs) -> Result<()> {
    let (sc, params, fids) = load(a.scenario.as_deref(), &a.model)?;
    let runs = run_all(&sc, &params, runs_of(&sc, &fids))?;
    match a.format {
        Format::Json => println!("{}", output::json(&sc, &runs)?),
        Format::Table => print!("{}", output::table(&sc, &runs)),
    }
    Ok(())
}

fn sweep(a: SweepArgs) -> Result<()> {
    let (sc, params, fids) = load(a.scenario.as_deref(), &a.model)?;
    let sizes = if a.sizes.is_empty() {
        contend_workload::ladder(a.from, a.to, a.factor)
    } else {
        contend_workload::size_list(&a.sizes)
    }
    .map_err(|e| anyhow::anyhow!("--{}: {e}", e.field))?;
    let Some((gap, skew)) = sc.workload().gap_and_skew() else {
        bail!(
            "{}: a sweep needs a collective scenario, not a transfer scenario",
            a.scenario
                .as_deref()
                .map_or(contend_workload::DEFAULT_SCENARIO_NAME.into(), |p| p
                    .display()
                    .to_string())
        )
    };
    let sc = sc.with_workload(Workload::Allreduce {
        sizes,
        dtype: contend_workload::Dtype::Bf16,
        repeats: 3,
        gap,
        skew,
    })?;
    let fids = if a.model.fidelity.is_empty() {
        vec![Fidelity::Flow]
    } else {
        fids
    };
    let runs = run_all(&sc, &params, runs_of(&sc, &fids))?;
    match a.format {
        SweepFormat::Table => print!("{}", output::sweep_table(&sc, &runs)),
        SweepFormat::Csv => print!("{}", output::sweep_csv(&runs)),
        SweepFormat::Json => println!("{}", output::json(&sc, &runs)?),
        SweepFormat::NcclTests => print!(
            "{}",
            contend_calib::nccl_tests_table(
                &runs.iter().map(|r| r.record().clone()).collect::<Vec<_>>()
            )
        ),
    }
    Ok(())
}

fn topo(cmd: TopoCommand) -> Result<()> {
    match cmd {
        TopoCommand::Show { topology } => {
            let t = resolve_topology(&topology)?;
            print!("{}", render_tree(&t));
        }
        TopoCommand::Validate { topology } => {
            let t = resolve_topology(&topology)?;
            println!(
                "{topology}: valid ({} nodes, {} links, {} GPUs)",
                t.nodes().len(),
                t.links().len(),
                t.gpus().len()
            );
        }
        TopoCommand::List => {
            for (s, _) in shipped::SHIPPED {
                let t = shipped::get(s).context("shipped topology")??;
                println!("{s:22} {}", t.name);
            }
        }
    }
    Ok(())
}

fn bench(a: BenchArgs) -> Result<()> {
    let model = ModelOpts {
        topology: None,
        params: a.params.clone(),
        fidelity: vec![],
        no_collapse: false,
    };
    let (sc, params, _) = load(a.scenario.as_deref(), &model)?;
    let mut rows = vec![];
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        for spec in runs_of(&sc, &[fid]) {
            let t = Instant::now();
            let run = simulate_one(&sc, &params, spec)?;
            let wall = t.elapsed();
            let rec = run.record();
            let events = rec.events.unwrap_or(0);
            rows.push(output::BenchRow {
                algorithm: spec
                    .algorithm
                    .map_or("transfer".into(), |a: Algorithm| a.name().to_string()),
                placement: spec.placement,
                fidelity: fid,
                events,
                wall_ms: wall.as_secs_f64() * 1e3,
                events_per_sec: events as f64 / wall.as_secs_f64().max(1e-9),
            });
        }
    }
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Table => print!("{}", output::bench_table(&sc, &rows)),
    }
    let _ = Placement::Peer;
    Ok(())
}
