//! `contend topo import`: a topology from what users can paste about a box —
//! `nvidia-smi topo -m` (and `-p2p r|w|rw`), the `nvidia-smi` table,
//! `lspci -t`/`-tv` and `lspci -vv` (link capability and status, payload
//! and read request sizes, NUMA node, 10-bit tags, ACS), NCCL's topology XML
//! (`NCCL_TOPO_DUMP_FILE`), `numactl --hardware` and the device lists of
//! p2pBandwidthLatencyTest and nvbandwidth. Every input is scanned for every
//! format (a pasted report holds several), and the inputs of one machine
//! merge: the PCIe tree from lspci or NCCL's XML, relations and NUMA nodes
//! from `topo -m`, link rates from `lspci -vv`, GPU models from whichever
//! names them. What no input tells is written as a placeholder and reported
//! as a [`Warning`] naming the node or link and the field to fill; the
//! result always passes [`crate::parse_topology`].
//!
//! ```
//! use contend_topo::import::import_topology;
//! let smi = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n\
//!            GPU0\t X \tPHB\t0-63\t0\n\
//!            GPU1\tPHB\t X \t0-63\t0\n";
//! let t = import_topology(&[("smi.txt".into(), smi.into())], None).unwrap();
//! assert_eq!(t.topology.gpus().len(), 2);
//! assert!(t.warnings.iter().any(|w| w.field.contains("sms")));
//! ```

mod build;
mod facts;
mod lspci;
mod nccl_xml;
pub mod pci;
mod smi;

pub use smi::{CudaDevice, cuda_device_line};

pub(crate) use facts::{At, DevKind, Device, Facts, Matrix, P2p, Port, Rel, Up, merge};

use crate::error::{Location, TopoError, TopoErrorKind};
use crate::model::Topology;
use crate::write::TopologyFile;

use std::collections::BTreeSet;
use std::fmt;

/// Something the inputs did not tell, and which field of the written file
/// to fill with the right value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// `node gpu0 sms`, `link mem0–iod0 bandwidth_gbps`, `links gpu0…gpu3 mps`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fill {}: {}", self.field, self.message)
    }
}

/// What one input held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub file: String,
    /// One line per format found (`lspci -tv: 4 GPUs under 4 host bridges`).
    pub what: Vec<String>,
}

/// An imported topology: the file, the validated topology, what each input
/// gave and what to fill by hand.
#[derive(Clone, Debug)]
pub struct ImportedTopology {
    pub file: TopologyFile,
    pub topology: Topology,
    pub found: Vec<Found>,
    pub warnings: Vec<Warning>,
}

impl ImportedTopology {
    /// The topology TOML, after comment lines naming the inputs and every
    /// warning.
    pub fn to_toml(&self) -> String {
        let mut s = String::from("# Written by `contend topo import` from:\n");
        for f in &self.found {
            s += &format!("#   {}: {}\n", f.file, f.what.join("; "));
        }
        if !self.warnings.is_empty() {
            s += "# To fill by hand (placeholders are written now):\n";
            for w in &self.warnings {
                s += &format!("#   {w}\n");
            }
        }
        s + &self.file.to_toml()
    }
}

/// A located error in an input.
pub(crate) fn located(file: &str, line: usize, message: String) -> TopoError {
    TopoError::at(
        Some(Location {
            file: file.to_string(),
            line,
            column: 1,
            field: None,
        }),
        TopoErrorKind::Syntax(message),
    )
}

/// The lines of a pasted text without what pasting adds: markdown quotes
/// (`> `) and diff markers of quoted patches are kept out of the table
/// parsers' way; line numbers are kept.
fn plain_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(|l| {
            let t = l.trim_end_matches('\r');
            t.strip_prefix("> ").unwrap_or(t)
        })
        .collect()
}

/// Imports a topology from `(name, text)` inputs of one machine;
/// `name` names the topology (default: from the GPUs and the inputs).
pub fn import_topology(
    inputs: &[(String, String)],
    name: Option<&str>,
) -> Result<ImportedTopology, TopoError> {
    import_topology_with(
        inputs,
        &ImportOptions {
            name,
            gpu_model: None,
        },
    )
}

/// What the user says beside the inputs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImportOptions<'a> {
    /// The topology's name (default: from the GPUs and the inputs).
    pub name: Option<&'a str>,
    /// Every GPU's model (`RTX 5090`), over what the inputs say: for a
    /// `topo -m` paste, which names none.
    pub gpu_model: Option<&'a str>,
}

/// [`import_topology`] with the user's [`ImportOptions`].
pub fn import_topology_with(
    inputs: &[(String, String)],
    opts: &ImportOptions<'_>,
) -> Result<ImportedTopology, TopoError> {
    let name = opts.name;
    let mut facts = Facts {
        gpu_model: opts.gpu_model.map(str::to_string),
        ..Facts::default()
    };
    let mut found = Vec::new();
    for (file, text) in inputs {
        let lines = plain_lines(text);
        let mut what = Vec::new();
        smi::scan(file, &lines, &mut facts, &mut what)?;
        lspci::scan(file, &lines, &mut facts, &mut what)?;
        nccl_xml::scan(file, text, &mut facts, &mut what)?;
        if what.is_empty() {
            return Err(TopoError::at(
                Some(Location {
                    file: file.clone(),
                    line: 0,
                    column: 0,
                    field: None,
                }),
                TopoErrorKind::Invalid(
                    "nothing to import: no nvidia-smi topo -m or table, lspci -t/-tv/-vv, NCCL topology XML, numactl --hardware or CUDA device list in it".into(),
                ),
            ));
        }
        found.push(Found {
            file: file.clone(),
            what,
        });
    }
    let hosts: BTreeSet<&String> = facts.hosts.values().collect();
    if hosts.len() > 1 {
        let list: Vec<String> = facts
            .hosts
            .iter()
            .map(|(f, h)| format!("{f}: host_hash {h}"))
            .collect();
        return Err(TopoError::at(
            None,
            TopoErrorKind::Invalid(format!(
                "the inputs come from {} machines ({}); import one machine at a time",
                hosts.len(),
                list.join(", ")
            )),
        ));
    }
    let sources: Vec<String> = found.iter().map(|f| f.file.clone()).collect();
    build::build(facts, found, &sources, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_with_nothing_to_import_is_an_error() {
        let e = import_topology(&[("x.txt".into(), "hello\n".into())], None).unwrap_err();
        assert!(e.to_string().starts_with("x.txt: nothing to import"), "{e}");
    }
}
