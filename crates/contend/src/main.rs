//! `contend`: predict and measure allreduce under PCIe contention.

mod bench_cmd;
mod budget;
mod calib_cmd;
mod hw_cmd;
mod import_cmd;
mod interrupt;
mod jobs;
mod nccl_cmd;
mod nccl_p2p_sys;
mod output;
mod overwrite;
mod progress;
mod runner;
mod stream;
mod tui_cmd;
mod validate_cmd;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use contend_sim::{ModelParams, Run, RunSpec, runs_of};
use contend_topo::{Bytes, Topology, render_tree, shipped};
use contend_workload::{Algorithm, Fidelity, Scenario, Workload, default_scenario, load_scenario};
use runner::{Side, dedup, run_identity, run_journaled};
use std::path::{Path, PathBuf};
use stream::{StreamArgs, label};

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
    Bench(bench_cmd::BenchArgs),
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
    /// Read the output of nccl-tests, p2pBandwidthLatencyTest, nvbandwidth or p2pmark as contend's records.
    Import(import_cmd::ImportArgs),
    /// NCCL's own decisions for a topology (paths, transports, channels, algorithm per size), replicated from its sources.
    Nccl {
        #[command(subcommand)]
        cmd: nccl_cmd::NcclCommand,
    },
    /// The accuracy suite: published allreduce timings of PCIe boxes (validation/), measured vs predicted, medians, crossovers, the sources' claims.
    Validate(validate_cmd::ValidateArgs),
}

#[derive(Subcommand, Debug)]
enum TopoCommand {
    /// Print a topology as a tree with link rates (a file or a shipped name).
    Show { topology: String },
    /// Check a topology file and report the first problem with its location.
    Validate { topology: String },
    /// List the shipped topologies.
    List,
    /// Write a topology from what a box prints: nvidia-smi topo -m / -p2p, lspci -t/-tv/-vv, NCCL's topology XML, numactl, CUDA device lists.
    Import(import_cmd::TopoImportArgs),
}

#[derive(Args, Debug, Clone)]
struct ModelOpts {
    /// Use this topology instead of the scenario's (a file or a shipped name).
    #[arg(long)]
    topology: Option<String>,
    /// Model constants (TOML); defaults documented in `contend-sim`'s ModelParams.
    #[arg(long)]
    params: Option<PathBuf>,
    /// Fidelity; repeat for several (default: the scenario's; `sweep`: flow).
    #[arg(long, value_enum)]
    fidelity: Vec<FidelityArg>,
    /// No posted-write collapse anywhere: what if the platform's firmware
    /// were fixed (sets `platform.collapse = false` over the params).
    #[arg(long)]
    no_collapse: bool,
    /// Run even when the runs' estimated work passes the budget (about ten
    /// seconds on two cores; the error says the estimate); `sweep --plot`:
    /// also overwrite an existing FILE.
    #[arg(long)]
    force: bool,
}

/// NCCL's release and environment for the `nccl` algorithm, over the scenario's `[nccl]`.
#[derive(Args, Debug, Clone, Default)]
struct NcclOpts {
    /// An NCCL variable the replica models, NAME=value (repeatable), over the
    /// scenario's `[nccl]` table: NCCL_P2P_LEVEL=SYS, NCCL_PROTO=LL, NCCL_MAX_NCHANNELS=4.
    #[arg(long = "nccl-env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// The NCCL release whose rules the `nccl` algorithm follows: 2.27, 2.28 or 2.29
    /// (default: the scenario's, else 2.28).
    #[arg(long = "nccl-version", value_name = "VERSION")]
    version: Option<contend_nccl::NcclVersion>,
}

impl NcclOpts {
    /// The scenario under these overrides; an error when there are
    /// overrides and the scenario does not run `nccl`.
    fn apply(&self, sc: Scenario) -> Result<Scenario> {
        if self.env.is_empty() && self.version.is_none() {
            return Ok(sc);
        }
        if sc.workload().gap_and_skew().is_none() {
            bail!(
                "--nccl-env/--nccl-version change the `nccl` algorithm, which scenario `{}` does not run (a transfer workload runs no algorithm)",
                sc.name()
            );
        }
        if !sc.algorithms().contains(&Algorithm::Nccl) {
            bail!(
                "--nccl-env/--nccl-version change the `nccl` algorithm, which scenario `{}` does not run (its algorithms: {})",
                sc.name(),
                sc.algorithms()
                    .iter()
                    .map(|a| a.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let mut setup = sc.nccl().clone();
        if let Some(v) = self.version {
            setup.version = v;
        }
        for item in &self.env {
            let Some((k, v)) = item.split_once('=') else {
                bail!("--nccl-env {item}: write NAME=value");
            };
            setup
                .env
                .set_modelled(k.trim(), v)
                .map_err(|e| anyhow::anyhow!("--nccl-env {e}"))?;
        }
        Ok(sc.with_nccl(setup)?)
    }
}

/// One's own step over the scenario's, on any scenario.
#[derive(Args, Debug, Clone, Default)]
struct StepOpts {
    /// Ranks: the first N GPUs (the scenario's ranks, then the topology's others).
    #[arg(long, value_name = "N")]
    ranks: Option<usize>,
    /// The model's hidden size: the verify step's allreduce is hidden x tokens x dtype bytes.
    #[arg(long)]
    hidden: Option<u64>,
    /// Tokens per verify step (draft tokens + 1 for EAGLE).
    #[arg(long)]
    tokens: Option<u64>,
    /// Layers of the model.
    #[arg(long)]
    layers: Option<u32>,
    /// Allreduces per layer (2: after attention and after the MLP).
    #[arg(long)]
    allreduces_per_layer: Option<u32>,
    /// Element type: bf16, fp16 or fp32.
    #[arg(long)]
    dtype: Option<contend_workload::Dtype>,
    /// Every algorithm's launch: eager, graph (the step captured in one
    /// CUDA graph, replayed), or graph-each (a graph per call).
    #[arg(long)]
    launch: Option<contend_workload::LaunchMode>,
}

impl StepOpts {
    fn overrides(&self) -> contend_workload::StepOverrides {
        contend_workload::StepOverrides {
            ranks: self.ranks,
            hidden: self.hidden,
            tokens: self.tokens,
            layers: self.layers,
            allreduces_per_layer: self.allreduces_per_layer,
            dtype: self.dtype,
            launch: self.launch,
        }
    }
    /// The scenario with one's own step.
    fn apply(&self, sc: Scenario) -> Result<Scenario> {
        Ok(sc.with_step(&self.overrides())?)
    }
}

#[derive(Args, Debug)]
struct SimulateArgs {
    /// Scenario: a TOML file or a shipped name (`scenarios/`). Without it, the embedded default scenario.
    scenario: Option<PathBuf>,
    #[command(flatten)]
    model: ModelOpts,
    #[command(flatten)]
    nccl: NcclOpts,
    #[command(flatten)]
    step: StepOpts,
    #[command(flatten)]
    stream: StreamArgs,
    /// Output format (`jsonl`: each result as it completes, see --stream).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Args, Debug)]
struct SweepArgs {
    /// Scenario (a file or a shipped name) whose topology, ranks, algorithms, placements, kernel, launch, compute gap and skew to use (default: the embedded one).
    scenario: Option<PathBuf>,
    #[command(flatten)]
    model: ModelOpts,
    #[command(flatten)]
    nccl: NcclOpts,
    /// One's own step: --ranks, --dtype and --launch apply; --hidden and
    /// --tokens add the step's size (hidden x tokens x dtype) to the sizes.
    #[command(flatten)]
    step: StepOpts,
    /// Smallest size.
    #[arg(long, default_value = "1KiB", value_parser = Bytes::parse_size)]
    from: Bytes,
    /// Largest size.
    #[arg(long, default_value = "64MiB", value_parser = Bytes::parse_size)]
    to: Bytes,
    /// Step factor between sizes: any number above 1 (`1.5`, `1.414`);
    /// sizes round to whole bytes, repeats dropped.
    #[arg(long, default_value_t = 2.0)]
    factor: f64,
    /// These sizes instead of `--from`/`--to`/`--factor` (`1KiB,43008,64KiB`);
    /// sorted, repeats dropped.
    #[arg(long, value_delimiter = ',', value_parser = Bytes::parse_size, conflicts_with_all = ["from", "to", "factor"])]
    sizes: Vec<Bytes>,
    #[command(flatten)]
    stream: StreamArgs,
    /// Output format (`jsonl`: each result as it completes, see --stream).
    #[arg(long, value_enum, default_value_t = SweepFormat::Table)]
    format: SweepFormat,
    /// Also draw the sweep as an SVG chart in FILE (when the run completes,
    /// besides the normal output): median time per allreduce over size, a
    /// line per algorithm, NCCL's replica thick and black, a dashed line
    /// labelled `64 KiB: one-shot-pull → nccl` at every crossover the table
    /// marks; one panel per placement and fidelity that ran, stacked. An
    /// existing FILE is refused unless --force.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
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
    /// JSON Lines, a result per line as each completes (what --stream writes).
    Jsonl,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum SweepFormat {
    Table,
    Csv,
    Json,
    /// JSON Lines, a result per line as each completes (what --stream writes).
    Jsonl,
    /// nccl-tests style tables (one per algorithm and placement), to diff against nccl-tests logs.
    NcclTests,
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
        Command::Bench(a) => bench_cmd::run(a),
        Command::Hw { cmd } => hw_cmd::run(cmd),
        Command::Calibrate(a) => calib_cmd::calibrate(a),
        Command::Report(a) => calib_cmd::report(a),
        Command::Advise(a) => calib_cmd::advise(a),
        Command::Import(a) => import_cmd::run(a),
        Command::Tui(a) => tui_cmd::run(a),
        Command::Nccl { cmd } => nccl_cmd::run(cmd),
        Command::Validate(a) => validate_cmd::run(a),
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

fn simulate(a: SimulateArgs) -> Result<()> {
    let (sc, params, fids) = load(a.scenario.as_deref(), &a.model)?;
    let sc = a.step.apply(a.nccl.apply(sc)?)?;
    let specs = runs_of(&sc, &fids);
    // NCCL a second time with NCCL_P2P_LEVEL=SYS where its default level
    // stages pairs that have P2P through host memory (table and JSON)
    let second = match a.format {
        Format::Jsonl => None,
        _ => nccl_p2p_sys::variant(&sc, &fids)?,
    };
    let units = budget::units(&sc, &params, &specs)?;
    let side_units = match &second {
        Some(v) => budget::units(&v.scenario, &params, &v.specs)?,
        None => vec![],
    };
    let side_specs = second.as_ref().map_or(&[][..], |v| &v.specs[..]);
    // one budget for the whole command: the second NCCL runs beside the rest
    let all: Vec<(RunSpec, u64)> = specs
        .iter()
        .chain(side_specs)
        .copied()
        .zip(units.iter().chain(&side_units).copied())
        .collect();
    budget::check(&all, a.model.force)?;
    let side = second.as_ref().map(|v| Side {
        scenario: &v.scenario,
        specs: &v.specs,
        units: &side_units,
    });
    let format = a.format;
    run_journaled(
        "simulate",
        &sc,
        &params,
        (&specs, &units),
        side.as_ref(),
        &a.stream,
        format == Format::Jsonl,
        move |sc, runs, second| simulate_output(sc, runs, second, format),
    )?;
    Ok(())
}

fn simulate_output(sc: &Scenario, runs: &[Run], second: &[Run], format: Format) -> Result<String> {
    Ok(match format {
        Format::Json => output::json(sc, runs, second)? + "\n",
        Format::Table => output::table(sc, runs, second),
        Format::Jsonl => String::new(),
    })
}

fn sweep(a: SweepArgs) -> Result<()> {
    if let Some(p) = &a.plot {
        overwrite::check_writable(p, "--plot", a.model.force)?;
    }
    let (sc, params, fids) = load(a.scenario.as_deref(), &a.model)?;
    if a.step.layers.is_some() || a.step.allreduces_per_layer.is_some() {
        bail!(
            "--layers/--allreduces-per-layer: a sweep runs each size on its own, not a step (use simulate)"
        );
    }
    // the ranks and launch of one's own step; its shape only adds its size
    let sc = StepOpts {
        ranks: a.step.ranks,
        launch: a.step.launch,
        ..StepOpts::default()
    }
    .apply(a.nccl.apply(sc)?)?;
    // a sweep's allreduces are bf16 unless --dtype says: none below one element
    let dtype = a.step.dtype.unwrap_or(contend_workload::Dtype::Bf16);
    let step_size = match (a.step.hidden, a.step.tokens) {
        (None, None) => None,
        (h, t) => {
            let v = contend_workload::VerifyStep::default();
            let b = h
                .unwrap_or(v.hidden)
                .checked_mul(t.unwrap_or(v.tokens))
                .and_then(|x| x.checked_mul(dtype.size()))
                .ok_or_else(|| anyhow::anyhow!("--hidden x --tokens x dtype overflows"))?;
            Some(Bytes(b))
        }
    };
    let mut sizes = if a.sizes.is_empty() {
        contend_workload::ladder(a.from, a.to, a.factor)
    } else {
        contend_workload::size_list(&a.sizes)
    }
    .map_err(|e| anyhow::anyhow!("--{}: {e}", e.field))?;
    if let Some(b) = step_size {
        let mut asked = sizes.clone();
        asked.push(b);
        sizes = contend_workload::size_list(&asked)
            .map_err(|e| anyhow::anyhow!("--hidden/--tokens: {e}"))?;
    }
    contend_workload::at_least_one_element(&sizes, dtype).map_err(|e| {
        anyhow::anyhow!(
            "--{}: {e}",
            if a.sizes.is_empty() { "from" } else { "sizes" }
        )
    })?;
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
        dtype,
        repeats: 3,
        gap,
        skew,
    })?;
    let fids = if a.model.fidelity.is_empty() {
        vec![Fidelity::Flow]
    } else {
        fids
    };
    let specs = runs_of(&sc, &fids);
    let units = budget::units(&sc, &params, &specs)?;
    let all: Vec<(RunSpec, u64)> = specs.iter().copied().zip(units.iter().copied()).collect();
    budget::check(&all, a.model.force)?;
    let format = a.format;
    let runs = run_journaled(
        "sweep",
        &sc,
        &params,
        (&specs, &units),
        None,
        &a.stream,
        format == SweepFormat::Jsonl,
        move |sc, runs, _| sweep_output(sc, runs, format),
    )?;
    if let Some(p) = &a.plot {
        contend_advise::latency_chart::Chart::of_sweep(sc.name(), &sc.topology().name, &runs)
            .write(p)?;
        eprintln!("wrote the plot to {}", p.display());
    }
    Ok(())
}

fn sweep_output(sc: &Scenario, runs: &[Run], format: SweepFormat) -> Result<String> {
    Ok(match format {
        SweepFormat::Table => output::sweep_table(sc, runs),
        SweepFormat::Csv => output::sweep_csv(runs),
        SweepFormat::Json => output::json(sc, runs, &[])? + "\n",
        SweepFormat::Jsonl => String::new(),
        SweepFormat::NcclTests => contend_import::nccl_tests_table(
            &runs.iter().map(|r| r.record().clone()).collect::<Vec<_>>(),
        ),
    })
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
        TopoCommand::Import(a) => import_cmd::topo_import(a)?,
        TopoCommand::List => {
            for (s, _) in shipped::SHIPPED {
                let t = shipped::get(s).context("shipped topology")??;
                println!("{s:22} {}", t.name);
            }
        }
    }
    Ok(())
}
