//! `contend import`: what the output of the tools people already ran
//! holds, as contend's records (`--out` writes them as JSON Lines).

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use contend_calib::import::{import_file, to_jsonl};
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
    /// Write every record as contend's JSON Lines here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What to print about each file.
    #[arg(long, value_enum, default_value_t = ImportFormat::Table)]
    pub format: ImportFormat,
}

pub fn run(a: ImportArgs) -> Result<()> {
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
