//! `contend nccl`: what NCCL itself decides for a topology, version and
//! environment (`contend-nccl`), and what an `NCCL_DEBUG=INFO` log says it
//! decided.

use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use contend_nccl::{CpuArch, GpuP2p, NcclEnv, NcclVersion, ProcessModel};
use contend_topo::{Bytes, NodeIdx, shipped};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum NcclCommand {
    /// NCCL's decisions and the reason for each: path and transport per GPU
    /// pair, rings, trees and channels, algorithm and protocol per size.
    Explain(ExplainArgs),
    /// Read an NCCL_DEBUG=INFO log and print the decisions it records (JSON).
    Log(LogArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum Format {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Topology: a file or a shipped name (`contend topo list`).
    topology: String,
    /// Message size to show NCCL's choice for (repeatable): 43008, 42KiB, 64MiB.
    #[arg(long = "size", value_parser = Bytes::parse_size)]
    sizes: Vec<Bytes>,
    /// An NCCL variable, NAME=value (repeatable): NCCL_P2P_LEVEL=SYS.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// The NCCL release whose rules apply: 2.27, 2.28 or 2.29.
    #[arg(long = "version", default_value = "2.28")]
    nccl_version: NcclVersion,
    /// The ranks' GPUs in rank order, by id (default: every GPU in file order).
    #[arg(long, value_delimiter = ',')]
    ranks: Vec<String>,
    /// The CPU as NCCL classifies it: intel-bdw, intel-skl, intel-srp,
    /// intel-erp, amd, zhaoxin, zhaoxin-yongfeng, power, arm (default: from
    /// the topology's CPU links, else amd).
    #[arg(long)]
    cpu: Option<String>,
    /// CUDA compute capability ×10, e.g. 90 (default: from the GPU model).
    #[arg(long)]
    cc: Option<u32>,
    /// The driver reports no GPU P2P between the GPUs (GeForce).
    #[arg(long)]
    no_gpu_p2p: bool,
    /// One process per rank (torchrun, vLLM) rather than one for all GPUs.
    #[arg(long)]
    process_per_rank: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Args, Debug)]
pub struct LogArgs {
    /// The log file.
    log: PathBuf,
}

pub fn run(cmd: NcclCommand) -> Result<()> {
    match cmd {
        NcclCommand::Explain(a) => explain(a),
        NcclCommand::Log(a) => {
            let text = contend_topo::bounded_read::read_text(&a.log)?;
            let log = contend_nccl::log::parse(&a.log.display().to_string(), &text)?;
            println!("{}", serde_json::to_string_pretty(&log)?);
            Ok(())
        }
    }
}

fn explain(a: ExplainArgs) -> Result<()> {
    let topo = shipped::resolve(&a.topology)?;
    let mut env = NcclEnv::from_assignments(&a.env)?;
    if let Some(c) = &a.cpu {
        env.host.cpu = Some(CpuArch::parse(c)?);
    }
    env.host.compute_capability = a.cc;
    if a.no_gpu_p2p {
        env.host.gpu_p2p = GpuP2p::NotSupported;
    }
    if a.process_per_rank {
        env.host.processes = ProcessModel::ProcessPerRank;
    }
    let ranks: Vec<NodeIdx> = if a.ranks.is_empty() {
        contend_nccl::all_gpus(&topo)
    } else {
        let mut v = Vec::new();
        for id in &a.ranks {
            match topo.lookup(id) {
                Some(n) => v.push(n),
                None => bail!("--ranks: `{id}` is not a node of {}", a.topology),
            }
        }
        v
    };
    let plan = contend_nccl::plan(&topo, &ranks, &env, a.nccl_version).map_err(|e| match e {
        // this command, unlike a scenario, can be told the capability
        contend_nccl::NcclError::UnknownComputeCapability { .. } => {
            anyhow::anyhow!("{}: {e}, or pass --cc (90 for H100/H200)", a.topology)
        }
        e => e.into(),
    })?;
    match a.format {
        Format::Text => print!("{}", contend_nccl::explain(&plan, &a.sizes)),
        Format::Json => {
            let table = plan.table(&a.sizes);
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({ "plan": plan, "sizes": table }))?
            );
        }
    }
    Ok(())
}
