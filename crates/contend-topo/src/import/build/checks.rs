//! What the topology cannot say or an input contradicts: peers that
//! `nvidia-smi topo -p2p` says cannot reach each other, and `topo -m`'s
//! relations against the tree written.

use super::{Ctx, Warnings};
use crate::import::{Rel, Warning};
use std::collections::BTreeMap;

/// `nvidia-smi topo -p2p` pairs without peer access (no topology field:
/// a warning naming what to simulate instead).
pub(super) fn peer_access(cx: &Ctx<'_>, w: &mut Warnings) {
    for p in &cx.facts.p2p {
        let mut bad: BTreeMap<String, usize> = BTreeMap::new();
        for (i, row) in p.cells.iter().enumerate() {
            for (j, c) in row.iter().enumerate() {
                if i != j && c != "OK" && c != "X" {
                    *bad.entry(c.clone()).or_default() += 1;
                }
            }
        }
        if !bad.is_empty() {
            let kinds: Vec<String> = bad
                .iter()
                .map(|(k, v)| format!("{k} ({}) for {v} pairs", p2p_meaning(k)))
                .collect();
            w.1.push(Warning {
                field: "peer access (no topology field)".into(),
                message: format!(
                    "nvidia-smi topo -p2p{} ({}:{}): {}; the topology has no field for it: simulate NCCL with NCCL_P2P_DISABLE=1 (it stages through host memory) and prefer contend's host-staged algorithms",
                    p.kind.as_deref().map(|k| format!(" {k}")).unwrap_or_default(),
                    p.file,
                    p.line,
                    kinds.join(", ")
                ),
            });
        }
    }
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
