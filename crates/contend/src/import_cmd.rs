//! `contend import`: what the output of the tools people already ran
//! holds, as contend's records (`--out` writes them as JSON Lines).

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use contend_import::import::{import_file, to_jsonl};
use std::path::PathBuf;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum ImportFormat {
    Table,
    Json,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Files as the tools printed them (pasted logs welcome): nccl-tests
    /// text or its `-J` JSON, p2pBandwidthLatencyTest, nvbandwidth,
    /// p2pmark, or contend's own JSON Lines.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write every record as contend's JSON Lines here; an existing file is refused unless --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Overwrite the --out file if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
    /// What to print about each file.
    #[arg(long, value_enum, default_value_t = ImportFormat::Table)]
    pub format: ImportFormat,
}

pub fn run(a: ImportArgs) -> Result<()> {
    if let Some(out) = &a.out {
        crate::overwrite::check(out, "--out", a.force)?;
    }
    let imports = a
        .files
        .iter()
        .map(|f| import_file(f))
        .collect::<Result<Vec<_>, _>>()?;
    match a.format {
        ImportFormat::Table => {
            for i in &imports {
                print!("{}", i.summary().render());
            }
        }
        ImportFormat::Json => {
            let s: Vec<_> = imports.iter().map(|i| i.summary()).collect();
            println!("{}", serde_json::to_string_pretty(&s)?);
        }
    }
    if let Some(out) = &a.out {
        let text = to_jsonl(&imports)?;
        std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
        let n: usize = imports.iter().map(|i| i.records.len()).sum();
        eprintln!("wrote {n} record(s) to {}", out.display());
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct TopoImportArgs {
    /// What the box printed, one machine (pasted reports welcome; each file
    /// is searched for every format): `nvidia-smi topo -m`, `nvidia-smi topo
    /// -p2p rw`, `nvidia-smi`, `lspci -tv`, `lspci -vv`, NCCL_TOPO_DUMP_FILE's
    /// XML, `numactl --hardware`, p2pBandwidthLatencyTest or nvbandwidth.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the topology TOML here (default: standard output); an existing file is refused unless --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Overwrite the --out file if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
    /// The topology's `name` (default: from the GPUs and the files).
    #[arg(long)]
    pub name: Option<String>,
    /// Every GPU's model (`"RTX 5090"`), over what the files say: a `topo
    /// -m` paste names none (or add `nvidia-smi -L` to the files).
    #[arg(long)]
    pub gpu_model: Option<String>,
}

/// `contend topo import`: the topology, what each file gave and what to
/// fill by hand (on standard error).
pub fn topo_import(a: TopoImportArgs) -> Result<()> {
    if let Some(out) = &a.out {
        crate::overwrite::check(out, "--out", a.force)?;
    }
    let inputs = a
        .files
        .iter()
        .map(|f| {
            contend_topo::bounded_read::read_text(f)
                .map(|t| (f.display().to_string(), t))
                .map_err(anyhow::Error::from)
        })
        .collect::<Result<Vec<_>>>()?;
    let t = contend_topo::import::import_topology_with(
        &inputs,
        &contend_topo::import::ImportOptions {
            name: a.name.as_deref(),
            gpu_model: a.gpu_model.as_deref(),
        },
    )?;
    for f in &t.found {
        eprintln!("{}: {}", f.file, f.what.join("; "));
    }
    eprintln!(
        "topology: {} ({} GPUs, {} nodes, {} links)",
        t.file.name,
        t.topology.gpus().len(),
        t.topology.nodes().len(),
        t.topology.links().len()
    );
    for w in &t.warnings {
        eprintln!("warning: {w}");
    }
    let text = t.to_toml();
    match &a.out {
        Some(out) => {
            std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
            eprintln!("wrote {}", out.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}
