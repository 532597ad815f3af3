//! The merged facts as a topology file. Node ids: `gpu0…` in PCI bus order
//! (nvidia-smi's index, and the order contend's NCCL replica takes for bus
//! order), `sw0…` per PCI switch (its upstream port; NCCL's XML gives one
//! node per switch too), `rcBB` per host bridge (root bus `BB`; AMD's
//! quadrants and Intel's stacks are separate host bridges), `iodS` when a
//! socket has several, `memS` per socket. A NUMA node is written as a
//! socket. What no input gives is a placeholder with a [`Warning`].
//!
//! One phase per file, in the order [`build`] runs them: the GPUs and their
//! PCIe chains ([`gpus`]), switches and host bridges from `topo -m` alone
//! ([`inferred`]), root complexes and sockets ([`roots`]), the nodes
//! ([`nodes`]), the PCIe links ([`pcie_links`]), the CPU side
//! ([`cpu_links`]), NVLink ([`nvlink`]), and what the topology cannot say
//! or an input contradicts ([`checks`]).

mod checks;
mod cpu_links;
mod gpus;
mod inferred;
mod nodes;
mod nvlink;
mod pcie_links;
mod roots;

use self::inferred::Synth;
use self::nodes::Switches;
use self::roots::Roots;
use super::pci::{Bdf, Datasheet};
use super::{Device, Facts, Found, ImportedTopology, Up, Warning};
use crate::error::TopoError;
use crate::file::parse_topology;
use crate::write::TopologyFile;
use std::collections::{BTreeMap, BTreeSet};

/// Where a GPU's PCIe chain ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Root {
    Host(u16, u8),
    /// NCCL's XML only: a NUMA node's CPU; `usize`: the host-bridge class
    /// `topo -m` splits it into.
    Numa(i64, usize),
    /// No tree: a host-bridge class of `topo -m`, or 0 for one per NUMA node.
    Class(i64, usize),
}

/// One GPU as the inputs describe it.
struct Gpu {
    bdf: Option<Bdf>,
    model: String,
    sheet: Option<Datasheet>,
    cc: Option<u32>,
    numa: Option<i64>,
    /// Switches above it, nearest first (their key bridges).
    switches: Vec<Bdf>,
    /// Every bridge above it, nearest first.
    bridges: Vec<Bdf>,
    root: Option<Root>,
    /// The bridge port right above it (for the link's far end).
    port: Option<Bdf>,
}

/// Warnings gathered by field and message, subjects joined.
#[derive(Default)]
struct Warnings(BTreeMap<(String, String), Vec<String>>, Vec<Warning>);

impl Warnings {
    fn add(&mut self, subject: impl Into<String>, field: &str, message: impl Into<String>) {
        self.0
            .entry((field.to_string(), message.into()))
            .or_default()
            .push(subject.into());
    }
    fn done(self) -> Vec<Warning> {
        let mut out = self.1;
        for ((field, message), subjects) in self.0 {
            out.push(Warning {
                field: format!("`{field}` of {}", subjects.join(", ")),
                message,
            });
        }
        out
    }
}

/// What every phase after the GPUs' reads: the facts, the GPUs as found,
/// the switches and host bridges inferred, the root complexes and the
/// switches' ids.
struct Ctx<'a> {
    facts: &'a Facts,
    /// GPUs' bus IDs in bus order (empty when no input gives them).
    bdfs: &'a [Bdf],
    gpus: &'a [Gpu],
    synth: &'a Synth,
    roots: &'a Roots,
    sw: &'a Switches,
}

impl Ctx<'_> {
    fn dev(&self, b: &Bdf) -> Option<&Device> {
        self.facts.devices.get(b)
    }
}

/// The bridge above a device: from the tree (lspci) or NCCL's XML.
fn up_of(d: &Device) -> Option<Up> {
    d.parent().map(|(u, _)| u)
}

pub(crate) fn build(
    mut facts: Facts,
    found: Vec<Found>,
    sources: &[String],
    name: Option<&str>,
) -> Result<ImportedTopology, TopoError> {
    let mut w = Warnings(Default::default(), std::mem::take(&mut facts.warnings));
    facts.check_tree()?;
    let (bdfs, mut gpus) = gpus::gpus(&mut facts, sources, &mut w)?;
    gpus::chains(&mut gpus, &facts, &bdfs, &mut w)?;
    let synth = inferred::infer(&mut gpus, &facts, &mut w);
    let roots = Roots::of(&gpus, &facts, &mut w);
    let sw = Switches::of(&gpus);
    let cx = Ctx {
        facts: &facts,
        bdfs: &bdfs,
        gpus: &gpus,
        synth: &synth,
        roots: &roots,
        sw: &sw,
    };
    let mut file = TopologyFile::default();
    nodes::write(&cx, &mut file, &mut w);
    pcie_links::write(&cx, &mut file, &mut w);
    cpu_links::write(&cx, &mut file, &mut w);
    nvlink::write(&cx, &mut file, &mut w);
    checks::peer_access(&cx, &mut file, &mut w);
    checks::matrix_against_tree(&cx, &mut w);

    let n = gpus.len();
    let n_sockets = &roots.sockets;
    let model = gpus.first().map(|g| g.model.clone()).unwrap_or_default();
    let all_same = gpus.iter().all(|g| g.model == model);
    file.name = name.map(String::from).unwrap_or_else(|| {
        format!(
            "{}x {}{} ({} socket{}), imported from {}",
            n,
            model,
            if all_same { "" } else { " and others" },
            n_sockets.len(),
            if n_sockets.len() == 1 { "" } else { "s" },
            sources.join(", ")
        )
    });
    let mut src: Vec<String> = found
        .iter()
        .map(|f| format!("{} ({})", f.file, f.what.join("; ")))
        .collect();
    let sheets: BTreeSet<&str> = gpus
        .iter()
        .filter_map(|g| g.sheet.map(|s| s.source))
        .collect();
    src.extend(sheets.iter().map(|s| s.to_string()));
    file.source = Some(format!("contend topo import of {}", src.join("; ")));
    if !facts.platform.is_empty() {
        file.platform = Some(facts.platform.join("; "));
    }
    let text = file.to_toml();
    let topology = parse_topology(&file.name, &text)?;
    Ok(ImportedTopology {
        file,
        topology,
        found,
        warnings: w.done(),
    })
}
