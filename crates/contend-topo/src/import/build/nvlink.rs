//! NVLink: per GPU pair from `nvidia-smi topo -m` (NV#) or NCCL's XML,
//! through NVSwitch as a link per pair; GB/s per link by generation.

use super::{Ctx, Warnings};
use crate::import::Rel;
use crate::import::Warning;
use crate::import::pci::Bdf;
use crate::write::{LinkEntry, TopologyFile};
use std::collections::BTreeMap;

pub(super) fn write(cx: &Ctx<'_>, file: &mut TopologyFile, w: &mut Warnings) {
    let (gpus, bdfs) = (cx.gpus, cx.bdfs);
    let dev = |b: &Bdf| cx.dev(b);
    let matrix = &cx.facts.matrix;
    let mut nv: BTreeMap<(usize, usize), (u32, &str)> = BTreeMap::new();
    if let Some(m) = &matrix {
        for (i, row) in m.cells.iter().enumerate() {
            for (j, c) in row.iter().enumerate() {
                if let Rel::Nv(k) = c
                    && i < j
                {
                    nv.insert((i, j), (*k, "nvidia-smi topo -m"));
                }
            }
        }
    }
    let index_of = |t: &str| Bdf::parse(t).and_then(|b| bdfs.iter().position(|x| *x == b));
    let mut nvswitch: Vec<(usize, u32)> = Vec::new();
    for (i, g) in gpus.iter().enumerate() {
        let Some(d) = g.bdf.and_then(|b| dev(&b)) else {
            continue;
        };
        let total: u32 = d.nvlinks.iter().filter(|l| l.2).map(|l| l.1).sum();
        if total > 0 {
            nvswitch.push((i, total));
        }
        for (t, k, sw) in &d.nvlinks {
            if let (false, Some(j)) = (*sw, index_of(t))
                && i != j
            {
                nv.entry((i.min(j), i.max(j))).or_insert((*k, "NCCL XML"));
            }
        }
    }
    if nvswitch.len() > 1 && nv.is_empty() {
        for (x, &(i, ki)) in nvswitch.iter().enumerate() {
            for &(j, kj) in &nvswitch[x + 1..] {
                nv.insert((i, j), (ki.min(kj), "NCCL XML via NVSwitch"));
            }
        }
        w.1.push(Warning {
            field: "NVLink through NVSwitch (no topology field)".into(),
            message: "written as a link per GPU pair with the GPU's NVLink count, as nvidia-smi topo -m shows it (NV18); the switches' shared capacity is not modelled".into(),
        });
    }
    for ((i, j), (k, from)) in nv {
        let cc = gpus[i].cc;
        let per = nvlink_gbps(cc).unwrap_or_else(|| {
            w.add(
                format!("link gpu{i}–gpu{j}"),
                "bandwidth_gbps",
                "the GPU's NVLink generation is unknown: written as 25 GB/s per link per direction",
            );
            25.0
        });
        file.link.push(LinkEntry {
            a: format!("gpu{i}"),
            b: format!("gpu{j}"),
            kind: "nvlink".into(),
            bandwidth_gbps: Some(f64::from(k) * per),
            latency_ns: Some(0.0),
            note: Some(format!("{k} NVLinks x {per} GB/s per direction ({from})")),
            ..LinkEntry::default()
        });
    }
}

/// GB/s per direction per NVLink: NVLink 2/3/4 (V100, A100, H100) 25,
/// GA102's bridge 14.0625 (112.5 GB/s over 4 links both ways), NVLink 5
/// (Blackwell) 50 (NVIDIA NVLink pages: 300, 600, 900, 1800 GB/s per GPU
/// over 6, 12, 18, 18 links, both directions).
fn nvlink_gbps(cc: Option<u32>) -> Option<f64> {
    match cc? {
        86 => Some(14.0625),
        c if c >= 100 => Some(50.0),
        c if c >= 70 => Some(25.0),
        _ => None,
    }
}
