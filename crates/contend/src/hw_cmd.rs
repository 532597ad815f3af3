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
        /// Write the TOML here instead of stdout; an existing file is refused unless --force.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Overwrite the --out file if it exists.
        #[arg(long, requires = "out")]
        force: bool,
    },
    /// Run the microbenchmarks calibration needs: copy-engine bandwidth per
    /// direction and size, SM load/store bandwidth vs blocks (peer, host,
    /// local), flag round trips, several GPUs on host memory at once.
    Probe {
        /// Only these probe groups (comma-separated): copy, sm-vs-blocks,
        /// sm-load-vs-size, ping-pong, concurrent, launch (empty kernels
        /// back to back, as one CUDA graph, and as a one-kernel graph
        /// launched per call), nccl-latency (NCCL's
        /// allreduce of 4 to 256 B over every GPU); default: all.
        #[arg(long, value_delimiter = ',', value_parser = parse_probe_group)]
        only: Vec<String>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run a scenario's workload (allreduce sizes, verify step eager and as a
    /// CUDA graph, or transfer streams) with contend's own kernels, in every
    /// placement the scenario lists; every result checked against the CPU.
    Run {
        /// Scenario: a TOML file or a shipped name.
        scenario: PathBuf,
        /// Run on this topology instead of the scenario's: a file, a shipped
        /// name, or `live` (this machine as `contend hw topo` sees it) — how
        /// one scenario file serves 2-, 4- and 8-GPU machines.
        #[arg(long)]
        topology: Option<String>,
        /// Run N ranks (2 to 8) of the scenario concurrently on GPU 0, each
        /// with its own stream and buffers (device memory for `peer`, mapped
        /// host memory for `host`), every rank's result checked against the
        /// CPU reference: the multi-rank kernels verified on one GPU. The N
        /// ranks stand for N of the scenario's ranks spread evenly over its
        /// list, so their islands carry over. A kernel whose N grids could
        /// not all be resident at once is refused. Records are marked
        /// `emulated`; calibration, reports and the TUI leave them out.
        #[arg(long, value_name = "N", value_parser = parse_emulate_ranks)]
        emulate_ranks: Option<usize>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run NCCL's allreduce over the scenario's sizes and ranks (NVLink
    /// multicast kept off; other NCCL_* variables are honoured and recorded).
    /// First a decision pass in a process of its own: one untimed call per
    /// size under NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,ENV,
    /// into NCCL_DEBUG_FILE), whose log says NCCL's transports, channels and
    /// per-call algorithm and protocol; each record keeps them
    /// (`extra.nccl_decisions`). The timed runs log nothing.
    Nccl {
        /// Scenario: a TOML file or a shipped name (an allreduce or verify-step workload).
        scenario: PathBuf,
        /// As for `run`: a file, a shipped name, or `live`.
        #[arg(long)]
        topology: Option<String>,
        /// Keep NCCL's INFO log of the decision pass in this file (default:
        /// a temporary file, removed once parsed).
        #[arg(long)]
        nccl_log: Option<PathBuf>,
        /// Skip the decision pass: the records carry no NCCL decisions.
        #[arg(long)]
        no_decisions: bool,
        /// Run NCCL with this tuner plugin (NCCL_TUNER_PLUGIN set to its
        /// absolute path for the decision pass and the timed runs), e.g.
        /// target/release/libcontend_tuner.so. The decision pass's log says
        /// whether NCCL loaded it (the run stops if it did not) and what the
        /// plugin said; each record keeps it (`extra.nccl_tuner`).
        #[arg(long, value_name = "PATH")]
        tuner: Option<PathBuf>,
        /// The table contend's tuner plugin reads (CONTEND_TUNER_TABLE),
        /// from `contend advise --emit nccl-tuner-table`.
        #[arg(long, value_name = "PATH", requires = "tuner")]
        tuner_table: Option<PathBuf>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// The decision pass of `hw nccl` (run by it, under NCCL_DEBUG=INFO):
    /// one checked, untimed allreduce per size.
    #[command(hide = true)]
    NcclDecisions {
        scenario: PathBuf,
        #[arg(long)]
        topology: Option<String>,
        #[command(flatten)]
        run: RunArgs,
    },
}

/// Runs the decision pass of `hw nccl` as a child process of this binary
/// under NCCL's INFO logging into `log`, and parses what NCCL wrote.
fn decision_pass(
    scenario: &Path,
    topology: Option<&str>,
    run: &RunArgs,
    log: &Path,
) -> Result<contend_nccl::log::NcclLog> {
    let exe = std::env::current_exe().map_err(|e| {
        anyhow::anyhow!("cannot find this program to run NCCL's decision pass: {e}")
    })?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["hw", "nccl-decisions"]).arg(scenario);
    if let Some(t) = topology {
        cmd.args(["--topology", t]);
    }
    if run.quick {
        cmd.arg("--quick");
    }
    if let Some(m) = run.max_size {
        cmd.args(["--max-size", &m.to_string()]);
    }
    for (k, v) in contend_hw::nccl::capture_env(log) {
        cmd.env(k, v);
    }
    let status = cmd
        .status()
        .map_err(|e| anyhow::anyhow!("NCCL's decision pass did not start: {e}"))?;
    if !status.success() {
        bail!("NCCL's decision pass failed ({status}); `--no-decisions` measures without it");
    }
    Ok(contend_hw::nccl::read_decisions(log)?)
}

/// A `--only` group.
fn parse_probe_group(s: &str) -> Result<String, String> {
    let g = s.trim().to_string();
    contend_hw::run::check_probe_groups(std::slice::from_ref(&g)).map_err(|e| e.to_string())?;
    Ok(g)
}

/// `--emulate-ranks`: 2 to 8.
fn parse_emulate_ranks(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of ranks"))?;
    contend_hw::run::check_emulate_ranks(n).map_err(|e| e.to_string())
}

/// Options shared by the measuring subcommands.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Write JSON Lines here instead of stdout; an existing file is refused unless --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Overwrite the --out file if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
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
    let b = contend_topo::Bytes::parse_size(s).map_err(|e| e.to_string())?;
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
            emulate_ranks: None,
            probes: None,
        }
    }
}

/// The scenario file checked before anything looks for a GPU: loaded in
/// full on its own topology or the one `--topology` names; with
/// `--topology live` (known only once the driver runs) its TOML is checked
/// here and its ranks against the machine later.
fn precheck(scenario: &Path, topology: Option<&str>) -> Result<()> {
    match topology {
        Some("live") => {
            let file = scenario.display().to_string();
            let text = contend_topo::bounded_read::read_text(scenario).map_err(|e| {
                anyhow::anyhow!("{file}: cannot read scenario file: {}", e.reason())
            })?;
            if let Err(e) = text.parse::<toml::Table>() {
                let at = contend_topo::Location::of_toml_error(&file, &text, &e);
                bail!("{at}: {}", e.message());
            }
            Ok(())
        }
        Some(t) => {
            let topo = contend_topo::shipped::resolve(t)?;
            contend_workload::load_scenario(scenario, Some(topo))?;
            Ok(())
        }
        None => {
            contend_workload::load_scenario(scenario, None)?;
            Ok(())
        }
    }
}

/// Runs one `contend hw` subcommand.
pub fn run(cmd: HwCommand) -> Result<()> {
    // every input file is checked before the driver is looked for
    match &cmd {
        HwCommand::Run {
            scenario, topology, ..
        }
        | HwCommand::Nccl {
            scenario, topology, ..
        }
        | HwCommand::NcclDecisions {
            scenario, topology, ..
        } => precheck(scenario, topology.as_deref())?,
        HwCommand::Topo { .. } | HwCommand::Probe { .. } => {}
    }
    // and so is the file it would write
    match &cmd {
        HwCommand::Topo {
            out: Some(out),
            force,
        } => crate::overwrite::check(out, "--out", *force)?,
        HwCommand::Run { run, .. } | HwCommand::Nccl { run, .. } | HwCommand::Probe { run, .. } => {
            if let Some(out) = &run.out {
                crate::overwrite::check(out, "--out", run.force)?;
            }
        }
        _ => {}
    }
    match cmd {
        HwCommand::Topo { out, .. } => {
            let (_devices, live) = contend_hw::open(false)?;
            let text = live.to_toml()?;
            if let Err(e) = contend_topo::parse_topology("live topology", &text) {
                bail!("the live topology does not parse ({e}); this is a bug in contend hw topo");
            }
            write_or_print(out.as_deref(), &text)?;
            eprintln!("machine: {}", serde_json::to_string(&live.machine())?);
            Ok(())
        }
        HwCommand::Probe { only, run } => {
            // NCCL's latency probe: NVLink multicast stays off, as for `hw nccl`
            contend_hw::nccl::prepare_env();
            let (devices, live) = contend_hw::open(true)?;
            let mut sink = Sink::create(run.out.as_deref(), live.machine())?;
            let opts = Options {
                probes: (!only.is_empty()).then_some(only),
                ..run.options()
            };
            let r = contend_hw::run::run_probe(&devices, &mut sink, &opts);
            finish(sink, r)
        }
        HwCommand::Run {
            scenario,
            topology,
            emulate_ranks,
            run,
        } => {
            if emulate_ranks.is_some() {
                // Before the driver starts: a hardware queue per rank stream.
                contend_hw::run::prepare_emulation_env();
            }
            let (devices, live) = contend_hw::open(true)?;
            let sc = load_with(&scenario, topology.as_deref(), &live)?;
            let mut sink = Sink::create(run.out.as_deref(), live.machine())?;
            let opts = Options {
                emulate_ranks,
                ..run.options()
            };
            let r = contend_hw::run::run_scenario(&devices, &sc, &mut sink, &opts);
            finish(sink, r)
        }
        HwCommand::Nccl {
            scenario,
            topology,
            nccl_log,
            no_decisions,
            tuner,
            tuner_table,
            run,
        } => {
            // Before any thread exists: NVLink multicast stays off, the
            // tuner plugin named.
            contend_hw::nccl::prepare_env();
            if let Some(t) = &tuner {
                contend_hw::nccl::use_tuner(t, tuner_table.as_deref())?;
                if no_decisions {
                    eprintln!(
                        "--no-decisions: nothing will say whether NCCL loaded the tuner plugin"
                    );
                }
            }
            let (devices, live) = contend_hw::open(true)?;
            let sc = load_with(&scenario, topology.as_deref(), &live)?;
            let decisions = if no_decisions {
                None
            } else {
                let path = nccl_log.clone().unwrap_or_else(|| {
                    std::env::temp_dir().join(format!("contend-nccl-{}.log", std::process::id()))
                });
                let log = decision_pass(&scenario, topology.as_deref(), &run, &path);
                if nccl_log.is_none() {
                    let _ = std::fs::remove_file(&path);
                } else {
                    eprintln!("NCCL's INFO log: {}", path.display());
                }
                let log = log?;
                eprintln!(
                    "NCCL's decisions: {} connection(s), {} per-call line(s), version {}",
                    log.connections.len(),
                    log.calls.len(),
                    log.version.as_ref().map_or("?", |v| v.text.as_str())
                );
                if let Some(t) = &tuner {
                    eprintln!("NCCL's log: {}", contend_hw::nccl::tuner_line(&log.tuner));
                    for l in &log.tuner.contend {
                        eprintln!("  contend-tuner: {l}");
                    }
                    if !log.tuner.loaded() {
                        bail!(
                            "NCCL did not load the tuner plugin {} (see its INFO log with --nccl-log)",
                            t.display()
                        );
                    }
                }
                Some(log)
            };
            let mut sink = Sink::create(run.out.as_deref(), live.machine())?;
            let r = contend_hw::run::run_nccl(
                &devices,
                &sc,
                &mut sink,
                &run.options(),
                decisions.as_ref(),
            );
            finish(sink, r)
        }
        HwCommand::NcclDecisions {
            scenario,
            topology,
            run,
        } => {
            contend_hw::nccl::prepare_env();
            let (devices, live) = contend_hw::open(true)?;
            let sc = load_with(&scenario, topology.as_deref(), &live)?;
            Ok(contend_hw::run::run_nccl_once(
                &devices,
                &sc,
                &run.options(),
            )?)
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
            force: false,
            quick: true,
            repeats: None,
            max_size: None,
        };
        let sc = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/hw-allreduce-h200x2.toml"
        ));
        for cmd in [
            HwCommand::Topo {
                out: None,
                force: false,
            },
            HwCommand::Probe {
                only: vec![],
                run: args(),
            },
            HwCommand::Run {
                scenario: sc.clone(),
                topology: None,
                emulate_ranks: None,
                run: args(),
            },
            HwCommand::Run {
                scenario: sc.clone(),
                topology: None,
                emulate_ranks: Some(4),
                run: args(),
            },
            HwCommand::Nccl {
                scenario: sc.clone(),
                topology: Some("live".into()),
                nccl_log: None,
                no_decisions: false,
                tuner: None,
                tuner_table: None,
                run: args(),
            },
            HwCommand::NcclDecisions {
                scenario: sc.clone(),
                topology: None,
                run: args(),
            },
        ] {
            let e = run(cmd).unwrap_err();
            assert_eq!(format!("{e:#}"), want);
        }
    }

    #[test]
    fn a_missing_tuner_plugin_is_named_before_any_gpu_is_looked_for() {
        use clap::Parser;
        #[derive(Parser, Debug)]
        struct T {
            #[command(subcommand)]
            cmd: HwCommand,
        }
        let e = T::try_parse_from(["t", "nccl", "s.toml", "--tuner-table", "t.toml"]).unwrap_err();
        assert!(e.to_string().contains("--tuner <PATH>"), "{e}");
        // a scenario that loads (every command checks it first)
        let ok = T::try_parse_from([
            "t",
            "nccl",
            "hw-allreduce",
            "--tuner",
            "/nonexistent/libcontend_tuner.so",
            "--tuner-table",
            "t.toml",
        ])
        .unwrap();
        let e = run(ok.cmd).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.starts_with("/nonexistent/libcontend_tuner.so: the tuner plugin:"),
            "{msg}"
        );
    }

    #[test]
    fn a_broken_scenario_is_reported_before_any_gpu_is_looked_for() {
        let dir = std::env::temp_dir().join(format!("contend-hw-pre-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.toml");
        let good = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/hw-allreduce-h200x2.toml"
        ))
        .unwrap()
        .replace("[workload]", "[workload]\nrepeats = \"many\"");
        std::fs::write(&bad, &good).unwrap();
        let args = || RunArgs {
            out: None,
            force: false,
            quick: true,
            repeats: None,
            max_size: None,
        };
        for topology in [None, Some("h200-2x".to_string())] {
            let e = run(HwCommand::Run {
                scenario: bad.clone(),
                topology,
                emulate_ranks: None,
                run: args(),
            })
            .unwrap_err();
            let e = format!("{e:#}");
            assert!(e.contains("bad.toml:") && !e.contains("CUDA"), "{e}");
        }
        // with the live machine's topology: the TOML is checked first
        std::fs::write(&bad, "name = \"x\"\n[workload\n").unwrap();
        let e = format!(
            "{:#}",
            run(HwCommand::Nccl {
                scenario: bad.clone(),
                topology: Some("live".into()),
                nccl_log: None,
                no_decisions: true,
                tuner: None,
                tuner_table: None,
                run: args(),
            })
            .unwrap_err()
        );
        assert!(
            e.contains("bad.toml:2:") && e.contains("field `workload`"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn emulate_ranks_takes_2_to_8() {
        assert_eq!(parse_emulate_ranks("2"), Ok(2));
        assert_eq!(parse_emulate_ranks(" 8 "), Ok(8));
        for bad in ["0", "1", "9", "64"] {
            let e = parse_emulate_ranks(bad).unwrap_err();
            assert!(e.contains("cannot be emulated"), "{e}");
        }
        let e = parse_emulate_ranks("four").unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        // clap refuses before anything looks for a driver
        use clap::Parser;
        #[derive(Parser, Debug)]
        struct T {
            #[command(subcommand)]
            cmd: HwCommand,
        }
        let e = T::try_parse_from(["t", "run", "s.toml", "--emulate-ranks", "9"]).unwrap_err();
        assert!(e.to_string().contains("cannot be emulated"), "{e}");
        let e = T::try_parse_from(["t", "probe", "--only", "launch,warp-drive"]).unwrap_err();
        assert!(
            e.to_string().contains("unknown probe group `warp-drive`"),
            "{e}"
        );
        let ok = T::try_parse_from(["t", "probe", "--only", "launch,nccl-latency"]).unwrap();
        assert!(
            matches!(&ok.cmd, HwCommand::Probe { only, .. } if only == &["launch", "nccl-latency"])
        );
        let ok = T::try_parse_from(["t", "run", "s.toml", "--emulate-ranks", "4"]).unwrap();
        assert!(matches!(
            ok.cmd,
            HwCommand::Run {
                emulate_ranks: Some(4),
                ..
            }
        ));
    }
}
