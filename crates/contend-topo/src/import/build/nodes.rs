//! The topology's nodes: GPUs (model, SMs and memory bandwidth from the
//! datasheet table), switches (real ones keyed by their upstream bridge,
//! then those `topo -m` implies), root complexes, iods and memories.

use super::{Ctx, Gpu, Root, Warnings};
use crate::import::pci::Bdf;
use crate::write::{NodeEntry, TopologyFile};
use std::collections::{BTreeMap, BTreeSet};

/// The switches' node ids: `sw0…` for the real ones in bridge order, then
/// the synthetic ones by number.
pub(super) struct Switches {
    pub ids: BTreeMap<Bdf, String>,
    synth_base: usize,
}

impl Switches {
    pub fn of(gpus: &[Gpu]) -> Switches {
        let mut sw_ids: BTreeMap<Bdf, String> = BTreeMap::new();
        for b in gpus
            .iter()
            .flat_map(|g| g.switches.iter())
            .collect::<BTreeSet<_>>()
        {
            let id = format!("sw{}", sw_ids.len());
            sw_ids.insert(*b, id);
        }
        Switches {
            synth_base: sw_ids.len(),
            ids: sw_ids,
        }
    }

    /// A synthetic switch's node id.
    pub fn synth_id(&self, s: usize) -> String {
        format!("sw{}", self.synth_base + s)
    }
}

pub(super) fn write(cx: &Ctx<'_>, file: &mut TopologyFile, w: &mut Warnings) {
    let gpus = cx.gpus;
    let dev = |b: &Bdf| cx.dev(b);
    for (i, g) in gpus.iter().enumerate() {
        let id = format!("gpu{i}");
        let (sms, mem, note) = match g.sheet {
            Some(s) => (
                s.sms,
                s.memory_gbps,
                format!("{} SMs, {} GB/s: {}", s.sms, s.memory_gbps, s.source),
            ),
            None => {
                let why = if g.model == "GPU" {
                    w.add(&id, "model", "no input names the GPU model (nvidia-smi, lspci -tv/-vv or a benchmark's device list does): written as `GPU`");
                    "no input names the GPU model".to_string()
                } else {
                    format!(
                        "the GPU model ({}) is not in contend's datasheet table",
                        g.model
                    )
                };
                w.add(&id, "sms", format!("{why}: written as 100 (a placeholder)"));
                w.add(
                    &id,
                    "memory_bandwidth_gbps",
                    format!("{why}: written as 1000 (a placeholder)"),
                );
                (
                    100,
                    1000.0,
                    "SMs and memory bandwidth are placeholders".into(),
                )
            }
        };
        let tags = g.bdf.and_then(|b| dev(&b)).and_then(|d| d.tags_10bit);
        let mut notes = vec![];
        if let Some(b) = g.bdf {
            notes.push(format!("PCI {b}"));
        }
        if let Some(cc) = g.cc {
            notes.push(format!("sm_{cc}"));
        }
        notes.push(note);
        if tags == Some(false) {
            notes.push("10-bit tags off (lspci -vv DevCtl2 10BitTagReq-)".into());
        }
        file.node.push(NodeEntry {
            id,
            kind: "gpu".into(),
            model: Some(g.model.clone()),
            sms: Some(sms),
            memory_bandwidth_gbps: Some(mem),
            tags_10bit: tags.filter(|t| !t),
            note: Some(notes.join("; ")),
            ..NodeEntry::default()
        });
    }

    let sw_ids = &cx.sw.ids;
    let synth_id = |s: usize| cx.sw.synth_id(s);
    for (b, id) in sw_ids {
        let d = dev(b);
        let chip = d
            .and_then(|d| d.name.as_deref())
            .filter(|n| !n.is_empty())
            .map(|n| n.trim_start_matches("PCI bridge: ").to_string());
        file.node.push(NodeEntry {
            id: id.clone(),
            kind: "switch".into(),
            chip,
            note: Some(format!("PCI switch, upstream port {b}")),
            ..NodeEntry::default()
        });
    }
    for s in cx.synth.parent.keys() {
        file.node.push(NodeEntry {
            id: synth_id(*s),
            kind: "switch".into(),
            note: Some("a PCI switch nvidia-smi topo -m implies (PIX/PXB)".into()),
            ..NodeEntry::default()
        });
    }
    let rc_id = |r: Root| cx.roots.rc_id(r);
    let socket = |r: &Root| cx.roots.socket(r);
    for r in cx.roots.all() {
        let note = match r {
            Root::Host(d, b) => format!("host bridge [{d:04x}:{b:02x}]"),
            Root::Numa(n, _) => format!("the host bridge(s) of NUMA node {n} (NCCL's XML)"),
            Root::Class(n, k) if *k > 0 => {
                format!("a host bridge nvidia-smi topo -m implies (NUMA node {n})")
            }
            Root::Class(n, _) => format!("NUMA node {n}'s root complex (structure unknown)"),
        };
        file.node.push(NodeEntry {
            id: rc_id(*r),
            kind: "root_complex".into(),
            socket: Some(socket(r)),
            note: Some(note),
            ..NodeEntry::default()
        });
    }
    for (s, rs) in &cx.roots.by_socket {
        if rs.len() > 1 {
            file.node.push(NodeEntry {
                id: format!("iod{s}"),
                kind: "cpu_interconnect".into(),
                socket: Some(*s),
                note: Some(format!("joins the {} host bridges of socket {s}; crossing latency not measured (model default)", rs.len())),
                ..NodeEntry::default()
            });
        }
        file.node.push(NodeEntry {
            id: format!("mem{s}"),
            kind: "host_memory".into(),
            socket: Some(*s),
            note: Some("host memory of this socket".into()),
            ..NodeEntry::default()
        });
    }
}
