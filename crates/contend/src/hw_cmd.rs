//! `contend hw {topo,probe,run,nccl}`: the hardware backend on the command
//! line. Results are JSON Lines in the shared result schema (one record per
//! line, flushed as measured); progress goes to stderr. On a machine without
//! an NVIDIA driver or GPU every subcommand fails with one sentence.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use contend_hw::{HwError, Options, Sink};
use contend_workload::limits::{MAX_COLLECTIVES, MAX_SIZE};
use std::path::{Path, PathBuf};

/// Run on the real machine: kernels, NCCL baseline, microbenchmarks.
#[derive(Debug, Subcommand)]
pub enum HwCommand {
    /// Write the live machine as a topology TOML (GPUs, PCI addresses, PCIe
    /// links, NVLink pairs) with the machine fingerprint in its header.
    Topo {
        /// Write the TOML here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run the microbenchmarks calibration needs: copy-engine bandwidth per
    /// direction and size, SM load/store bandwidth vs blocks (peer, host,
    /// local), flag round trips, several GPUs on host memory at once.
    Probe {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run a scenario's workload (allreduce sizes, verify step eager and as a
    /// CUDA graph, or transfer streams) with contend's own kernels, in every
    /// placement the scenario lists; every result checked against the CPU.
    Run {
        /// Scenario TOML file.
        scenario: PathBuf,
        /// Run on this topology instead of the scenario's: a file, a shipped
        /// name, or `live` (this machine as `contend hw topo` sees it) — how
        /// one scenario file serves 2-, 4- and 8-GPU machines.
        #[arg(long)]
        topology: Option<String>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run NCCL's allreduce over the scenario's sizes and ranks (NVLink
    /// multicast kept off; other NCCL_* variables are honoured and recorded).
    Nccl {
        /// Scenario TOML file (an allreduce or verify-step workload).
        scenario: PathBuf,
        /// As for `run`: a file, a shipped name, or `live`.
        #[arg(long)]
        topology: Option<String>,
        #[command(flatten)]
        run: RunArgs,
    },
}

/// Options shared by the measuring subcommands.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Write JSON Lines here instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A smoke test: fewer sizes, block counts and repeats.
    #[arg(long)]
    pub quick: bool,
    /// Timed repeats per measurement (default: by message size; 1 to 100000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=MAX_COLLECTIVES as i64))]
    pub repeats: Option<u32>,
    /// Skip allreduce sizes above this (`1 MiB`, `65536`; at most 64 GiB).
    #[arg(long, value_parser = parse_size)]
    pub max_size: Option<u64>,
}

/// A size flag: a whole number of bytes from 1 to the largest size contend runs.
fn parse_size(s: &str) -> Result<u64, String> {
    let b = contend_topo::Bytes::parse(s)?;
    if b.0 == 0 || b > MAX_SIZE {
        return Err(format!(
            "{} B is outside 1..={} ({MAX_SIZE})",
            b.0, MAX_SIZE.0
        ));
    }
    Ok(b.0)
}

impl RunArgs {
    fn options(&self) -> Options {
        Options {
            quick: self.quick,
            repeats: self.repeats,
            max_size: self.max_size,
        }
    }
}

/// Runs one `contend hw` subcommand.
pub fn run(cmd: HwCommand) -> Result<()> {
    match cmd {
        HwCommand::Topo { out } => {
            let (_rig, live) = contend_hw::open(false)?;
            let text = live.to_toml()?;
            if let Err(e) = contend_topo::parse_topology("live topology", &text) {
                bail!("the live topology does not parse ({e}); this is a bug in contend hw topo");
            }
            write_or_print(out.as_deref(), &text)?;
            eprintln!("machine: {}", serde_json::to_string(&live.machine())?);
            Ok(())
        }
        HwCommand::Probe { run } => {
            let (rig, live) = contend_hw::open(true)?;
            let mut sink = Sink::create(run.out.as_deref(), live.machine())?;
            let r = contend_hw::run::run_probe(&rig, &mut sink, &run.options());
            finish(sink, r)
        }
        HwCommand::Run {
            scenario,
            topology,
            run,
        } => {
            let (rig, live) = contend_hw::open(true)?;
            let sc = load_with(&scenario, topology.as_deref(), &live)?;
            let mut sink = Sink::create(run.out.as_deref(), live.machine())?;
            let r = contend_hw::run::run_scenario(&rig, &sc, &mut sink, &run.options());
            finish(sink, r)
        }
        HwCommand::Nccl {
            scenario,
            topology,
            run,
        } => {
            // Before any thread exists: NVLink multicast stays off.
            contend_hw::nccl::prepare_env();
            let (rig, live) = contend_hw::open(true)?;
            let sc = load_with(&scenario, topology.as_deref(), &live)?;
            let mut sink = Sink::create(run.out.as_deref(), live.machine())?;
            let r = contend_hw::run::run_nccl(&rig, &sc, &mut sink, &run.options());
            finish(sink, r)
        }
    }
}

/// The scenario, on the topology `--topology` names (a file, a shipped name,
/// or `live`), else on its own.
fn load_with(
    scenario: &Path,
    topology: Option<&str>,
    live: &contend_hw::topo::LiveMachine,
) -> Result<contend_workload::Scenario> {
    let topo = match topology {
        None => None,
        Some("live") => Some(live.topology()?),
        Some(t) => Some(contend_topo::shipped::resolve(t)?),
    };
    Ok(contend_workload::load_scenario(scenario, topo)?)
}

fn write_or_print(out: Option<&Path>, text: &str) -> Result<()> {
    match out {
        Some(p) => {
            std::fs::write(p, text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

fn finish(sink: Sink, r: Result<(), HwError>) -> Result<()> {
    sink.finish();
    eprintln!("{} record(s) written", sink.written);
    r?;
    if let Some(first) = sink.failures.first() {
        bail!(
            "{} measurement(s) failed, the first: {first}",
            sink.failures.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_every_subcommand_fails_with_one_sentence() {
        if contend_hw::driver::driver_present() {
            eprintln!("skipped: this machine has libcuda");
            return;
        }
        let want = "no CUDA driver found (libcuda.so could not be loaded): contend hw needs an NVIDIA GPU machine";
        let args = || RunArgs {
            out: None,
            quick: true,
            repeats: None,
            max_size: None,
        };
        let sc = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/hw-allreduce-h200x2.toml"
        ));
        for cmd in [
            HwCommand::Topo { out: None },
            HwCommand::Probe { run: args() },
            HwCommand::Run {
                scenario: sc.clone(),
                topology: None,
                run: args(),
            },
            HwCommand::Nccl {
                scenario: sc.clone(),
                topology: Some("live".into()),
                run: args(),
            },
        ] {
            let e = run(cmd).unwrap_err();
            assert_eq!(format!("{e:#}"), want);
        }
    }
}
