//! What the inputs say beside the tree, and what contradicts it: peers
//! that `nvidia-smi topo -p2p` says cannot reach each other (the
//! topology's `[p2p]`), and `topo -m`'s relations against the tree written.

use super::{Ctx, Warnings};
use crate::import::{Rel, Warning};
use crate::write::{P2pEntry, TopologyFile};
use std::collections::{BTreeMap, BTreeSet};

/// `nvidia-smi topo -p2p r|w|rw` pairs without peer access, written as
/// the topology's `[p2p]` (every pair `OK`: `access = "all"`; none:
/// `"none"`; else the pairs `missing`). `-p2p n` (NVLink) and `a`
/// (atomics) say nothing of PCIe loads and stores; an unknown cell (`U`)
/// is warned and taken as access. A GeForce box imported without `-p2p`
/// gets the model's rule (no P2P under the stock driver) and a warning
/// that says how to state otherwise.
pub(super) fn peer_access(cx: &Ctx<'_>, file: &mut TopologyFile, w: &mut Warnings) {
    let n = cx.gpus.len();
    let mut missing: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut seen: Vec<String> = vec![];
    for p in &cx.facts.p2p {
        if matches!(p.kind.as_deref(), Some("n" | "a")) {
            continue;
        }
        seen.push(format!(
            "nvidia-smi topo -p2p{} ({}:{})",
            p.kind
                .as_deref()
                .map(|k| format!(" {k}"))
                .unwrap_or_default(),
            p.file,
            p.line
        ));
        let mut bad: BTreeMap<String, usize> = BTreeMap::new();
        for (i, row) in p.cells.iter().enumerate().take(n) {
            for (j, c) in row.iter().enumerate().take(n) {
                if i == j || c == "OK" || c == "X" {
                    continue;
                }
                *bad.entry(c.clone()).or_default() += 1;
                if c != "U" {
                    missing.insert((i.min(j), i.max(j)));
                }
            }
        }
        if !bad.is_empty() {
            let kinds: Vec<String> = bad
                .iter()
                .map(|(k, v)| format!("{k} ({}) for {v} pairs", p2p_meaning(k)))
                .collect();
            w.1.push(Warning {
                field: "`[p2p]` if the driver differs".into(),
                message: format!(
                    "{}: {}; written as `[p2p]`: custom kernels run with their buffers in host memory between those GPUs and NCCL goes through host memory (SHM){}",
                    seen.last().expect("pushed"),
                    kinds.join(", "),
                    if bad.contains_key("U") {
                        "; a `U` (unknown) pair is taken as having P2P"
                    } else {
                        ""
                    }
                ),
            });
        }
    }
    if seen.is_empty() {
        if let Some(g) = cx.gpus.iter().find(|g| crate::gpu_model::geforce(&g.model)) {
            w.1.push(Warning {
                field: "`[p2p]` if the driver differs".into(),
                message: format!(
                    "{} is a GeForce card: without P2P under the stock driver, so contend runs custom kernels with their buffers in host memory and NCCL through SHM. Under a driver that enables P2P (tinygrad's or aikitoria's open-gpu-kernel-modules), write `[p2p] access = \"all\"`, or import `nvidia-smi topo -p2p r` beside `topo -m`",
                    g.model
                ),
            });
        }
        return;
    }
    let pairs = n * n.saturating_sub(1) / 2;
    let note = Some(format!("from {}", seen.join(", ")));
    file.p2p = Some(if missing.is_empty() {
        P2pEntry {
            access: Some("all".into()),
            missing: None,
            note,
        }
    } else if missing.len() == pairs {
        P2pEntry {
            access: Some("none".into()),
            missing: None,
            note,
        }
    } else {
        P2pEntry {
            access: None,
            missing: Some(
                missing
                    .iter()
                    .map(|(a, b)| [format!("gpu{a}"), format!("gpu{b}")])
                    .collect(),
            ),
            note,
        }
    });
}

/// Every GPU pair's `topo -m` relation against the one the written tree
/// gives (the tree is written; a disagreement is warned).
pub(super) fn matrix_against_tree(cx: &Ctx<'_>, w: &mut Warnings) {
    let gpus = cx.gpus;
    let n = gpus.len();
    let (sw_ids, synth_switches) = (&cx.sw.ids, &cx.synth.switches);
    let synth_id = |s: usize| cx.sw.synth_id(s);
    let socket = |r: &super::Root| cx.roots.socket(r);
    let matrix = &cx.facts.matrix;
    if let Some(m) = &matrix {
        let sw_chain = |i: usize| -> Vec<String> {
            let g = &gpus[i];
            let mut v: Vec<String> = g.switches.iter().map(|s| sw_ids[s].clone()).collect();
            if let Some(s) = synth_switches.get(&i) {
                v.extend(s.iter().map(|s| synth_id(*s)));
            }
            v
        };
        let sock = |i: usize| socket(&gpus[i].root.expect("set"));
        for i in 0..n {
            for j in i + 1..n {
                let Some(said) = m.cells.get(i).and_then(|r| r.get(j)) else {
                    continue;
                };
                if matches!(said, Rel::Nv(_) | Rel::Me) {
                    continue;
                }
                let (a, b) = (sw_chain(i), sw_chain(j));
                let expect = if !a.is_empty() && a.first() == b.first() {
                    Rel::Pix
                } else if a.iter().any(|s| b.contains(s)) {
                    Rel::Pxb
                } else if gpus[i].root == gpus[j].root {
                    Rel::Phb
                } else if sock(i) == sock(j) {
                    Rel::Node
                } else {
                    Rel::Sys
                };
                if *said != expect {
                    w.1.push(Warning {
                        field: format!("the path gpu{i}–gpu{j}"),
                        message: format!(
                            "nvidia-smi topo -m ({}:{}) says {}, the written tree gives {}: check the PCIe tree (the tree is written)",
                            m.file,
                            m.line,
                            said.name(),
                            expect.name()
                        ),
                    });
                }
            }
        }
    }
}

fn p2p_meaning(k: &str) -> &'static str {
    match k {
        "CNS" => "chipset not supported",
        "GNS" => "GPU not supported",
        "TNS" => "topology not supported",
        "NS" => "not supported",
        "DR" => "disabled by regkey",
        _ => "unknown",
    }
}
