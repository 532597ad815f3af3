//! The merged facts as a topology file. Node ids: `gpu0…` in PCI bus order
//! (nvidia-smi's index, and the order contend's NCCL replica takes for bus
//! order), `sw0…` per PCI switch (its upstream port; NCCL's XML gives one
//! node per switch too), `rcBB` per host bridge (root bus `BB`; AMD's
//! quadrants and Intel's stacks are separate host bridges), `iodS` when a
//! socket has several, `memS` per socket. A NUMA node is written as a
//! socket. What no input gives is a placeholder with a [`Warning`].

use super::pci::{Bdf, Datasheet, datasheet, model_of_device_id, model_of_lspci_name};
use super::{DevKind, Device, Facts, Found, ImportedTopology, Port, Rel, Up, Warning};
use crate::error::{TopoError, TopoErrorKind};
use crate::file::parse_topology;
use crate::write::{LinkEntry, NodeEntry, TopologyFile};
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

fn min_link(a: Option<(u8, u8)>, b: Option<(u8, u8)>) -> Option<(u8, u8)> {
    match (a, b) {
        (Some((g1, w1)), Some((g2, w2))) => Some((g1.min(g2), w1.min(w2))),
        (x, None) | (None, x) => x,
    }
}

/// A host bridge's id: `rcBB` (root bus), `rcDDDD_BB` off domain 0.
fn rc_id(root: Root) -> String {
    match root {
        Root::Host(0, bus) => format!("rc{bus:02x}"),
        Root::Host(d, bus) => format!("rc{d:04x}_{bus:02x}"),
        Root::Numa(n, k) | Root::Class(n, k) => format!("rc_numa{n}_{k}"),
    }
}

/// Union-find over GPU indices joined where `join` holds for their relation.
fn classes(cells: &[Vec<Rel>], members: &[usize], join: impl Fn(&Rel) -> bool) -> Vec<Vec<usize>> {
    let mut parent: BTreeMap<usize, usize> = members.iter().map(|&m| (m, m)).collect();
    fn find(p: &mut BTreeMap<usize, usize>, x: usize) -> usize {
        let mut r = x;
        while p[&r] != r {
            r = p[&r];
        }
        p.insert(x, r);
        r
    }
    for &i in members {
        for &j in members {
            if i < j && cells.get(i).and_then(|r| r.get(j)).is_some_and(&join) {
                let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                parent.insert(a.max(b), a.min(b));
            }
        }
    }
    let mut out: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &m in members {
        let r = find(&mut parent, m);
        out.entry(r).or_default().push(m);
    }
    out.into_values().collect()
}

pub(crate) fn build(
    mut facts: Facts,
    found: Vec<Found>,
    sources: &[String],
    name: Option<&str>,
) -> Result<ImportedTopology, TopoError> {
    let mut w = Warnings(Default::default(), std::mem::take(&mut facts.warnings));
    let invalid = |m: String| TopoError::at(None, TopoErrorKind::Invalid(m));

    // GPUs: by bus ID where any input names one.
    for (name, bdf, _) in facts.cuda.values() {
        if let Some(b) = bdf {
            let d = facts.devices.entry(*b).or_default();
            if d.kind != Some(DevKind::Bridge) {
                d.kind = Some(DevKind::Gpu);
            }
            if d.name.is_none() {
                d.name = Some(name.clone());
            }
        }
    }
    let bdfs: Vec<Bdf> = facts
        .devices
        .iter()
        .filter(|(_, d)| d.kind == Some(DevKind::Gpu))
        .map(|(b, _)| *b)
        .collect();
    let matrix_n = facts.matrix.as_ref().map(|m| m.cells.len());
    let n = if !bdfs.is_empty() {
        bdfs.len()
    } else {
        matrix_n
            .or((!facts.cuda.is_empty()).then_some(facts.cuda.len()))
            .unwrap_or(0)
    };
    if n == 0 {
        return Err(invalid(format!(
            "no GPU in the inputs ({}): nvidia-smi topo -m, lspci -tv/-vv, NCCL's XML or a CUDA device list names them",
            sources.join(", ")
        )));
    }
    if let (Some(m), false) = (matrix_n, bdfs.is_empty())
        && m != n
    {
        let mf = facts
            .matrix
            .as_ref()
            .map(|m| m.file.clone())
            .unwrap_or_default();
        return Err(invalid(format!(
            "the inputs disagree on the GPUs: nvidia-smi topo -m ({mf}) has {m}, the PCI inputs name {n} ({}): are they one machine?",
            bdfs.iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    for (i, (name, bdf, file)) in &facts.cuda {
        if let (Some(b), Some(sorted)) = (bdf, bdfs.get(*i))
            && b != sorted
        {
            w.1.push(Warning {
                field: format!("the order of gpu{i}"),
                message: format!(
                    "{file} lists device {i} ({name}) at {b}, the {i}-th GPU by bus ID is {sorted}: CUDA's order is not bus order (CUDA_DEVICE_ORDER=FASTEST_FIRST); the file is in bus order (nvidia-smi's)"
                ),
            });
        }
    }

    let dev = |b: &Bdf| facts.devices.get(b);
    let mut gpus: Vec<Gpu> = Vec::new();
    for i in 0..n {
        let bdf = bdfs.get(i).copied();
        let d = bdf.and_then(|b| dev(&b));
        let cuda = facts
            .cuda
            .values()
            .find(|(_, b, _)| bdf.is_some() && *b == bdf)
            .or_else(|| bdfs.is_empty().then(|| facts.cuda.get(&i)).flatten());
        // names, fullest first: a benchmark's list, lspci's, NCCL's device ID
        let mut names: Vec<String> = Vec::new();
        if let Some((nm, _, _)) = cuda
            && !nm.contains("...")
            && !nm.contains('…')
        {
            names.push(nm.clone());
        }
        if let Some(nm) = d.and_then(|d| d.name.as_deref()) {
            names.push(model_of_lspci_name(nm));
        }
        if let Some(m) = d.and_then(|d| d.device_id).and_then(model_of_device_id) {
            names.push(m.to_string());
        }
        if let Some((nm, _, _)) = cuda {
            names.push(nm.trim_end_matches("...").trim_end_matches('…').to_string());
        }
        let sheet = names.iter().find_map(|n| datasheet(n));
        let model = names
            .iter()
            .find(|n| datasheet(n).is_some())
            .or(names.first())
            .cloned()
            .unwrap_or_else(|| "GPU".into());
        let numa = d.and_then(|d| d.numa).or_else(|| {
            facts
                .matrix
                .as_ref()
                .and_then(|m| m.numa.get(i).copied().flatten())
        });
        gpus.push(Gpu {
            bdf,
            model,
            sheet,
            cc: d.and_then(|d| d.cc).or(sheet.map(|s| s.cc)),
            numa,
            switches: vec![],
            root: None,
            port: None,
        });
    }

    // The PCIe chain of each GPU from the tree (lspci) or NCCL's XML.
    let up_of = |d: &Device| d.up.or(d.xml_up);
    for g in gpus.iter_mut() {
        let Some(b) = g.bdf else { continue };
        let mut chain: Vec<Bdf> = Vec::new();
        let mut cur = b;
        let mut end = None;
        for _ in 0..64 {
            match dev(&cur).and_then(up_of) {
                Some(Up::Bridge(p)) => {
                    chain.push(p);
                    cur = p;
                }
                Some(Up::Host(d, bus)) => {
                    end = Some(Root::Host(d, bus));
                    break;
                }
                Some(Up::Numa(n)) => {
                    end = Some(Root::Numa(n, 0));
                    break;
                }
                None => break,
            }
        }
        if end.is_none() {
            if !chain.is_empty() {
                w.add(
                    format!("gpu{}", gpus_index(&bdfs, b)),
                    "PCIe path",
                    "the tree above it is cut: its bridges lead to no host bridge",
                );
            }
            continue;
        }
        g.port = chain.first().copied();
        // top-down: root port, then upstream/downstream pairs; NCCL's switch
        // nodes are switches by themselves
        let top: Vec<Bdf> = chain.iter().rev().copied().collect();
        let mut switches = Vec::new();
        let host_rooted = matches!(end, Some(Root::Host(..)));
        for (k, p) in top.iter().enumerate() {
            let port = dev(p).and_then(|d| d.port);
            let is_switch = match port {
                Some(Port::NcclSwitch) | Some(Port::Upstream) => true,
                Some(Port::Downstream) | Some(Port::Root) => false,
                _ if host_rooted => k % 2 == 1,
                _ => true,
            };
            if is_switch {
                switches.push(*p);
            }
        }
        switches.reverse();
        g.switches = switches;
        g.root = end;
        if g.numa.is_none() {
            g.numa = chain
                .iter()
                .find_map(|p| dev(p).and_then(|d| d.numa))
                .or(match end {
                    Some(Root::Numa(n, _)) if n >= 0 => Some(n),
                    _ => None,
                });
        }
    }

    // Without a tree: host bridges and switches from topo -m's relations.
    let matrix = facts.matrix.clone();
    let no_tree: Vec<usize> = (0..n).filter(|&i| gpus[i].root.is_none()).collect();
    let numa_only: Vec<usize> = (0..n)
        .filter(|&i| matches!(gpus[i].root, Some(Root::Numa(..))))
        .collect();
    let mut synth_switches: BTreeMap<usize, Vec<usize>> = BTreeMap::new(); // gpu -> synthetic switch ids, nearest first
    let mut synth_parent: BTreeMap<usize, Option<usize>> = BTreeMap::new(); // switch -> parent switch
    if let Some(m) = &matrix {
        // NCCL's XML folds host bridges into the NUMA node: topo -m splits them
        if !numa_only.is_empty() {
            for (k, class) in classes(&m.cells, &numa_only, |r| {
                matches!(r, Rel::Pix | Rel::Pxb | Rel::Phb | Rel::Me)
            })
            .into_iter()
            .enumerate()
            {
                for i in class {
                    if let Some(Root::Numa(nn, _)) = gpus[i].root {
                        gpus[i].root = Some(Root::Numa(nn, k));
                    }
                }
            }
        }
        if !no_tree.is_empty() {
            let mut next_switch = 0usize;
            for (k, host) in classes(&m.cells, &no_tree, |r| {
                matches!(r, Rel::Pix | Rel::Pxb | Rel::Phb)
            })
            .into_iter()
            .enumerate()
            {
                let numa = host.iter().find_map(|&i| gpus[i].numa).unwrap_or(-1);
                for &i in &host {
                    gpus[i].root = Some(Root::Class(numa, k + 1));
                }
                for upper in classes(&m.cells, &host, |r| matches!(r, Rel::Pix | Rel::Pxb)) {
                    if upper.len() < 2 {
                        continue;
                    }
                    let lower = classes(&m.cells, &upper, |r| matches!(r, Rel::Pix));
                    if lower.len() == 1 {
                        let s = next_switch;
                        next_switch += 1;
                        synth_parent.insert(s, None);
                        for &i in &upper {
                            synth_switches.entry(i).or_default().push(s);
                        }
                        continue;
                    }
                    let top = next_switch;
                    next_switch += 1;
                    synth_parent.insert(top, None);
                    for l in lower {
                        if l.len() >= 2 {
                            let s = next_switch;
                            next_switch += 1;
                            synth_parent.insert(s, Some(top));
                            for &i in &l {
                                synth_switches.entry(i).or_default().push(s);
                            }
                        }
                        for &i in &l {
                            synth_switches.entry(i).or_default().push(top);
                        }
                    }
                }
            }
            w.add(
                "the switches and root complexes",
                "PCIe tree",
                format!(
                    "nvidia-smi topo -m ({}) gives relations, not buses: host bridges (PHB/PXB/PIX classes), switches (PIX, PXB) and NUMA nodes inferred; lspci -tv gives the tree",
                    m.file
                ),
            );
        }
    }
    for g in gpus.iter_mut().filter(|g| g.root.is_none()) {
        g.root = Some(Root::Class(g.numa.unwrap_or(-1), 0));
    }
    if gpus
        .iter()
        .any(|g| matches!(g.root, Some(Root::Class(_, 0))))
    {
        w.add(
            "the root complexes",
            "PCIe tree",
            "no input gives the PCIe structure (lspci -t, nvidia-smi topo -m or NCCL's XML): every GPU is written directly on one root complex per NUMA node",
        );
    }
    if matrix.is_none() && gpus.iter().any(|g| matches!(g.root, Some(Root::Numa(..)))) {
        w.add(
            "the root complexes under NCCL's CPUs",
            "PCIe tree",
            "NCCL's XML folds every host bridge of a NUMA node into its CPU, so whether GPUs share a root complex (PHB) or not (NODE) it does not say: written as one root complex per NUMA node (nvidia-smi topo -m or lspci -t splits them)",
        );
    }

    // Sockets: NUMA nodes, renumbered densely.
    let mut roots: BTreeMap<Root, Option<i64>> = BTreeMap::new();
    for g in &gpus {
        let r = g.root.expect("set");
        let e = roots.entry(r).or_insert(None);
        if e.is_none() {
            *e = g.numa;
        }
    }
    let numas: BTreeSet<i64> = roots.values().flatten().copied().collect();
    if roots.values().any(|v| v.is_none()) {
        let only_one = facts.numa_nodes == Some(1) || roots.len() == 1;
        if !only_one {
            w.add(
                roots
                    .iter()
                    .filter(|(_, v)| v.is_none())
                    .map(|(r, _)| match r {
                        Root::Host(..) => rc_id(*r),
                        _ => "the implied root complexes".into(),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                "socket",
                "no input gives the NUMA node of its GPUs (lspci -vv `NUMA node`, topo -m `NUMA Affinity`): written on socket 0",
            );
        }
    }
    // ids: host bridges by bus; implied root complexes numbered per NUMA node
    let mut rc_names: BTreeMap<Root, String> = BTreeMap::new();
    let mut per_numa: BTreeMap<i64, Vec<Root>> = BTreeMap::new();
    for r in roots.keys() {
        match r {
            Root::Host(..) => {
                rc_names.insert(*r, rc_id(*r));
            }
            Root::Numa(n, _) | Root::Class(n, _) => per_numa.entry(*n).or_default().push(*r),
        }
    }
    for (n, rs) in &per_numa {
        for (k, r) in rs.iter().enumerate() {
            let base = if *n >= 0 {
                format!("rc_numa{n}")
            } else {
                "rc".into()
            };
            let id = if rs.len() == 1 && *n >= 0 {
                base
            } else {
                format!("{base}_{k}")
            };
            rc_names.insert(*r, id);
        }
    }
    let rc_id = |r: Root| rc_names[&r].clone();
    let socket_of_numa: BTreeMap<i64, u32> = numas
        .iter()
        .enumerate()
        .map(|(k, n)| (*n, k as u32))
        .collect();
    let socket = |r: &Root| {
        roots[r]
            .and_then(|n| socket_of_numa.get(&n).copied())
            .unwrap_or(0)
    };
    let n_sockets = roots.keys().map(&socket).collect::<BTreeSet<_>>();
    if numas.len() > 2 || facts.numa_nodes.is_some_and(|k| k > 2) {
        w.add(
            "the root complexes, iods and memories",
            "socket",
            "NUMA nodes are written as sockets: with NPS2/NPS4 or SNC several NUMA nodes share a socket (set `socket` and join their root complexes on one iod)",
        );
    }

    let mut file = TopologyFile::default();
    // GPUs
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

    // Switches: real ones keyed by bridge, synthetic by number.
    let mut sw_ids: BTreeMap<Bdf, String> = BTreeMap::new();
    for b in gpus
        .iter()
        .flat_map(|g| g.switches.iter())
        .collect::<BTreeSet<_>>()
    {
        let id = format!("sw{}", sw_ids.len());
        sw_ids.insert(*b, id);
    }
    let synth_base = sw_ids.len();
    let synth_id = |s: usize| format!("sw{}", synth_base + s);
    for (b, id) in &sw_ids {
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
    for s in synth_parent.keys() {
        file.node.push(NodeEntry {
            id: synth_id(*s),
            kind: "switch".into(),
            note: Some("a PCI switch nvidia-smi topo -m implies (PIX/PXB)".into()),
            ..NodeEntry::default()
        });
    }
    // Root complexes, iods, memories.
    let mut by_socket: BTreeMap<u32, Vec<Root>> = BTreeMap::new();
    for r in roots.keys() {
        by_socket.entry(socket(r)).or_default().push(*r);
    }
    for r in roots.keys() {
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
    let hub = |s: u32| -> String {
        let rs = &by_socket[&s];
        if rs.len() == 1 {
            rc_id(rs[0])
        } else {
            format!("iod{s}")
        }
    };
    for (s, rs) in &by_socket {
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

    // Links.
    let pcie = |a: String, b: String, gw: (u8, u8), mps: u64, mrrs: u64, note: String| LinkEntry {
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
    };
    let mut acs: BTreeSet<Bdf> = BTreeSet::new();
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
        let mut path = g.bdf.into_iter().collect::<Vec<_>>();
        let mut cur = g.bdf;
        while let Some(b) = cur {
            cur = match dev(&b).and_then(up_of) {
                Some(Up::Bridge(p)) => {
                    path.push(p);
                    Some(p)
                }
                _ => None,
            };
        }
        for b in path {
            if dev(&b).and_then(|d| d.acs_redirect) == Some(true) {
                acs.insert(b);
            }
        }
        file.link
            .push(pcie(id, parent, gw, mps, mrrs, note.join("; ")));
    }
    // switch uplinks
    let gpu_link = |sw_gpu: Option<usize>| -> (u8, u8) {
        sw_gpu
            .and_then(|i| file.link.get(i))
            .map(|l| (l.generation.unwrap_or(4), 16))
            .unwrap_or((4, 16))
    };
    let mut uplinks = Vec::new();
    for (b, id) in &sw_ids {
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
    for (s, p) in &synth_parent {
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
    if !acs.is_empty() {
        w.1.push(Warning {
            field: "ACS (no topology field)".into(),
            message: format!(
                "lspci -vv ACSCtl ReqRedir+/CmpltRedir+ at {}: peer traffic below them is redirected up to the root complex, which the topology cannot say; disable ACS redirect for P2P (NCCL's troubleshooting guide) or model the switch ports as root-complex hops",
                acs.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    // CPU side
    let vendor = facts
        .cpus
        .values()
        .find_map(|c| c.vendor.clone())
        .or_else(|| {
            facts.devices.values().find_map(|d| {
                let n = d.name.as_deref()?;
                if n.contains("Advanced Micro Devices") {
                    Some("AuthenticAMD".into())
                } else if n.starts_with("Intel Corporation") && d.kind != Some(DevKind::Gpu) {
                    Some("GenuineIntel".into())
                } else {
                    None
                }
            })
        });
    for (s, rs) in &by_socket {
        if rs.len() > 1 {
            for r in rs {
                file.link.push(LinkEntry {
                    a: rc_id(*r),
                    b: format!("iod{s}"),
                    kind: "die".into(),
                    ..LinkEntry::default()
                });
            }
        }
    }
    let sockets: Vec<u32> = by_socket.keys().copied().collect();
    for pair in sockets.windows(2) {
        let (proto, example) = match vendor.as_deref() {
            Some("AuthenticAMD") => (
                "xGMI",
                "EPYC 9004/9005: 3–4 xGMI x16 links of 32 Gb/s, 192–256 GB/s per direction",
            ),
            Some("GenuineIntel") => (
                "UPI",
                "Xeon 4th/5th gen: 3–4 UPI links of 16–20 GT/s, ~ 96–160 GB/s per direction",
            ),
            _ => (
                "UPI",
                "the CPU vendor is in no input either: set `protocol`",
            ),
        };
        let (a, b) = (hub(pair[0]), hub(pair[1]));
        w.add(
            format!("link {a}–{b}"),
            "bandwidth_gbps",
            format!(
                "the CPU link's rate is in no input: written as 128 GB/s, a placeholder ({example})"
            ),
        );
        file.link.push(LinkEntry {
            a,
            b,
            kind: "cpu".into(),
            protocol: Some(proto.into()),
            bandwidth_gbps: Some(128.0),
            note: Some("placeholder rate".into()),
            ..LinkEntry::default()
        });
    }
    for s in &sockets {
        let h = hub(*s);
        w.add(
            format!("link mem{s}–{h}"),
            "bandwidth_gbps",
            "host memory bandwidth is in no input: written as 300 GB/s, a placeholder (channels × MT/s × 8 B, e.g. 12 × DDR5-4800 = 460.8 GB/s)",
        );
        file.link.push(LinkEntry {
            a: format!("mem{s}"),
            b: h,
            kind: "memory".into(),
            bandwidth_gbps: Some(300.0),
            note: Some("placeholder rate".into()),
            ..LinkEntry::default()
        });
    }
    // NVLink
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
    // Peer access
    for p in &facts.p2p {
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
    // topo -m against the tree
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

fn gpus_index(bdfs: &[Bdf], b: Bdf) -> usize {
    bdfs.iter().position(|x| *x == b).unwrap_or(0)
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
