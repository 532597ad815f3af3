//! The PCIe links: each GPU's to the switch or root complex above it
//! (generation and width from lspci -vv's LnkCap, LnkSta or NCCL's XML,
//! MPS and MRRS from DevCtl), each switch's uplink, and ACS redirect where
//! lspci shows it.

use super::{Ctx, Root, Warnings, up_of};
use crate::import::pci::Bdf;
use crate::import::{Up, Warning};
use crate::write::{LinkEntry, TopologyFile};
use std::collections::BTreeSet;

pub(super) fn write(cx: &Ctx<'_>, file: &mut TopologyFile, w: &mut Warnings) {
    let mut acs: BTreeSet<Bdf> = BTreeSet::new();
    // GPU `i`'s link is this one plus `i`
    let first = file.link.len();
    gpu_links(cx, file, w, &mut acs);
    uplinks(cx, first, file, w, &mut acs);
    if !acs.is_empty() {
        w.1.push(Warning {
            field: "ACS (no topology field)".into(),
            message: format!(
                "lspci -vv ACSCtl ReqRedir+/CmpltRedir+ at {}: peer traffic below them is redirected up to the root complex, which the topology cannot say; disable ACS redirect for P2P (NCCL's troubleshooting guide) or model the switch ports as root-complex hops",
                acs.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")
            ),
        });
    }
}

/// A PCIe link entry (RCB 64 B: lspci gives no completion boundary).
fn pcie(a: String, b: String, gw: (u8, u8), mps: u64, mrrs: u64, note: String) -> LinkEntry {
    LinkEntry {
        a,
        b,
        kind: "pcie".into(),
        generation: Some(gw.0),
        width: Some(gw.1),
        mps: Some(mps),
        mrrs: Some(mrrs),
        rcb: Some(64),
        note: Some(note),
        ..LinkEntry::default()
    }
}

/// Each GPU's link to the switch or root complex above it, in GPU order;
/// bridges with ACS redirect on its way up into `acs`.
fn gpu_links(cx: &Ctx<'_>, file: &mut TopologyFile, w: &mut Warnings, acs: &mut BTreeSet<Bdf>) {
    let gpus = cx.gpus;
    let dev = |b: &Bdf| cx.dev(b);
    let rc_id = |r: Root| cx.roots.rc_id(r);
    let (sw_ids, synth_id) = (&cx.sw.ids, |s: usize| cx.sw.synth_id(s));
    let synth_switches = &cx.synth.switches;
    for (i, g) in gpus.iter().enumerate() {
        let id = format!("gpu{i}");
        let parent = if let Some(s) = g.switches.first() {
            sw_ids[s].clone()
        } else if let Some(s) = synth_switches.get(&i).and_then(|v| v.first()) {
            synth_id(*s)
        } else {
            rc_id(g.root.expect("set"))
        };
        let d = g.bdf.and_then(|b| dev(&b));
        let port = g.port.and_then(|p| dev(&p));
        let mut note = Vec::new();
        let cap = min_link(d.and_then(|d| d.cap), port.and_then(|p| p.cap));
        let sta = d.and_then(|d| d.sta);
        let xml = d.and_then(|d| d.xml_link);
        let gw = match (cap, sta, xml) {
            (Some((cg, cw)), sta, _) => {
                let width = match sta {
                    Some((_, sw, _)) if sw < cw => {
                        note.push(format!(
                            "LnkSta width x{sw} below LnkCap x{cw}: written at x{sw}"
                        ));
                        sw
                    }
                    _ => cw,
                };
                if let Some((sg, _, down)) = sta
                    && sg < cg
                {
                    note.push(format!(
                        "LnkSta Gen{sg}{} while idle, written at LnkCap Gen{cg}",
                        if down { " (downgraded)" } else { "" }
                    ));
                }
                note.insert(
                    0,
                    format!(
                        "lspci -vv LnkCap Gen{cg} x{cw}{}",
                        if port.and_then(|p| p.cap).is_some() {
                            " (lower of GPU and port)"
                        } else {
                            ""
                        }
                    ),
                );
                (cg, width)
            }
            (None, Some((sg, sw, _)), _) => {
                note.push(format!("lspci -vv LnkSta Gen{sg} x{sw} (no LnkCap)"));
                (sg, sw)
            }
            (None, None, Some((xg, xw))) => {
                let gen_ = xg.or(g.sheet.map(|s| s.pcie_gen)).unwrap_or(4);
                let width = xw.unwrap_or(16);
                if let (Some(xg), Some(s)) = (xg, g.sheet)
                    && xg < s.pcie_gen
                {
                    w.add(
                        format!("link {id}–{parent}"),
                        "gen",
                        format!(
                            "NCCL's XML says Gen{xg}, below the {}'s Gen{}: NCCL writes NVML's current link for a GPU, which an idle GPU trains down (lspci -vv LnkCap tells)",
                            s.model, s.pcie_gen
                        ),
                    );
                }
                note.push(format!("NCCL XML link_speed/link_width Gen{gen_} x{width}"));
                (gen_, width)
            }
            (None, None, None) => {
                let gen_ = g.sheet.map(|s| s.pcie_gen).unwrap_or(4);
                w.add(
                    format!("link {id}–{parent}"),
                    "gen`, `width",
                    format!(
                        "no input gives the link (lspci -vv LnkCap does): written as the GPU's x16 at Gen{gen_}{}",
                        g.sheet.map(|s| format!(" ({})", s.source)).unwrap_or_else(|| " (a placeholder)".into())
                    ),
                );
                note.push("gen and width assumed".into());
                (gen_, 16)
            }
        };
        let (mps, mrrs) = match (d.and_then(|d| d.mps), d.and_then(|d| d.mrrs)) {
            (Some(m), Some(r))
                if [128, 256, 512, 1024, 2048, 4096].contains(&m)
                    && [128, 256, 512, 1024, 2048, 4096].contains(&r) =>
            {
                note.push(format!("DevCtl MaxPayload {m}, MaxReadReq {r}"));
                (m, r)
            }
            _ => {
                w.add(
                    format!("link {id}–{parent}"),
                    "mps`, `mrrs",
                    "no input gives DevCtl's MaxPayload/MaxReadReq (lspci -vv does): written as 256/512",
                );
                (256, 512)
            }
        };
        // the GPU and the bridges above it (walked once, in `gpus::chains`)
        for b in g.bdf.iter().chain(g.bridges.iter()) {
            if dev(b).and_then(|d| d.acs_redirect) == Some(true) {
                acs.insert(*b);
            }
        }
        file.link
            .push(pcie(id, parent, gw, mps, mrrs, note.join("; ")));
    }
}

/// Each switch's uplink: real ones from lspci -vv or NCCL's XML, implied
/// ones at their GPUs' generation (GPU `i`'s link is `file.link[first + i]`).
fn uplinks(
    cx: &Ctx<'_>,
    first: usize,
    file: &mut TopologyFile,
    w: &mut Warnings,
    acs: &mut BTreeSet<Bdf>,
) {
    let gpus = cx.gpus;
    let dev = |b: &Bdf| cx.dev(b);
    let rc_id = |r: Root| cx.roots.rc_id(r);
    let (sw_ids, synth_id) = (&cx.sw.ids, |s: usize| cx.sw.synth_id(s));
    let (synth_switches, synth_parent) = (&cx.synth.switches, &cx.synth.parent);
    let gpu_link = |sw_gpu: Option<usize>| -> (u8, u8) {
        sw_gpu
            .and_then(|i| file.link.get(first + i))
            .map(|l| (l.generation.unwrap_or(4), 16))
            .unwrap_or((4, 16))
    };
    let mut uplinks = Vec::new();
    for (b, id) in sw_ids {
        let owner = gpus
            .iter()
            .position(|g| g.switches.contains(b))
            .expect("a GPU's");
        let g = &gpus[owner];
        let k = g.switches.iter().position(|s| s == b).expect("listed");
        let parent = g
            .switches
            .get(k + 1)
            .map(|s| sw_ids[s].clone())
            .unwrap_or_else(|| rc_id(g.root.expect("set")));
        let d = dev(b);
        let above = d.and_then(up_of).and_then(|u| match u {
            Up::Bridge(p) => dev(&p),
            _ => None,
        });
        let cap = min_link(d.and_then(|d| d.cap), above.and_then(|a| a.cap));
        let (gw, note) = match (cap, d.and_then(|d| d.xml_link)) {
            (Some(c), _) => (
                c,
                format!("lspci -vv LnkCap Gen{} x{} (upstream port {b})", c.0, c.1),
            ),
            (None, Some((Some(xg), xw))) => (
                (xg, xw.unwrap_or(16)),
                format!(
                    "NCCL XML link_speed/link_width Gen{xg} x{}",
                    xw.unwrap_or(16)
                ),
            ),
            _ => {
                let gw = gpu_link(Some(owner));
                w.add(
                    format!("link {id}–{parent}"),
                    "gen`, `width",
                    format!("no input gives the switch's uplink (lspci -vv of upstream port {b} does): written as Gen{} x16, its GPUs' generation", gw.0),
                );
                (gw, "uplink assumed".into())
            }
        };
        uplinks.push(pcie(id.clone(), parent, gw, 256, 512, note));
        if d.and_then(|d| d.acs_redirect) == Some(true) {
            acs.insert(*b);
        }
    }
    for (s, p) in synth_parent {
        let parent = match p {
            Some(p) => synth_id(*p),
            None => {
                let i = synth_switches
                    .iter()
                    .find(|(_, v)| v.contains(s))
                    .map(|(i, _)| *i)
                    .expect("has GPUs");
                rc_id(gpus[i].root.expect("set"))
            }
        };
        let i = synth_switches
            .iter()
            .find(|(_, v)| v.contains(s))
            .map(|(i, _)| *i);
        let gw = gpu_link(i);
        w.add(
            format!("link {}–{parent}", synth_id(*s)),
            "gen`, `width",
            format!("a switch nvidia-smi topo -m implies: its uplink is in no input, written as Gen{} x16", gw.0),
        );
        uplinks.push(pcie(
            synth_id(*s),
            parent,
            gw,
            256,
            512,
            "uplink assumed".into(),
        ));
    }
    file.link.extend(uplinks);
}

fn min_link(a: Option<(u8, u8)>, b: Option<(u8, u8)>) -> Option<(u8, u8)> {
    match (a, b) {
        (Some((g1, w1)), Some((g2, w2))) => Some((g1.min(g2), w1.min(w2))),
        (x, None) | (None, x) => x,
    }
}
