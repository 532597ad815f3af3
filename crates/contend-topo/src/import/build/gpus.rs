//! The GPUs the inputs name (by bus ID where any input gives one), and
//! each one's PCIe chain from the tree (lspci) or NCCL's XML.

use super::{Gpu, Root, Warnings};
use crate::error::{TopoError, TopoErrorKind};
use crate::import::pci::{Bdf, datasheet, model_of_device_id, model_of_lspci_name};
use crate::import::{DevKind, Facts, Port, Up, Warning};

/// The GPUs' bus IDs in bus order (empty when no input gives one) and the
/// GPUs, their chains not walked yet.
pub(super) fn gpus(
    facts: &mut Facts,
    sources: &[String],
    w: &mut Warnings,
) -> Result<(Vec<Bdf>, Vec<Gpu>), TopoError> {
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
        if let Some(m) = &facts.gpu_model
            && let Some(said) = names
                .iter()
                .find(|n| crate::gpu_model::same_model(m, n) == Some(false))
        {
            w.1.push(Warning {
                field: format!("the model of gpu{i}"),
                message: format!("the inputs name it {said}, --gpu-model says {m}: {m} is written"),
            });
        }
        // the user's model first and alone; else the first name the
        // datasheet table knows, else the fullest name
        let sheet = match &facts.gpu_model {
            Some(m) => datasheet(m),
            None => names.iter().find_map(|n| datasheet(n)),
        };
        let model = match &facts.gpu_model {
            Some(m) => m.clone(),
            None => names
                .iter()
                .find(|n| datasheet(n).is_some())
                .or(names.first())
                .cloned()
                .unwrap_or_else(|| "GPU".into()),
        };
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
            bridges: vec![],
            root: None,
            port: None,
        });
    }
    Ok((bdfs, gpus))
}

/// Each GPU's switches (nearest first), root and NUMA node from its chain
/// of bridges ([`Facts::ancestry_until`], the one walk up the tree).
pub(super) fn chains(
    gpus: &mut [Gpu],
    facts: &Facts,
    bdfs: &[Bdf],
    w: &mut Warnings,
) -> Result<(), TopoError> {
    let dev = |b: &Bdf| facts.devices.get(b);
    for g in gpus.iter_mut() {
        let Some(b) = g.bdf else { continue };
        let up = facts.ancestry_until(b, |_| false)?;
        let chain = up.bridges;
        let end = match up.top {
            Some(Up::Host(d, bus)) => Some(Root::Host(d, bus)),
            Some(Up::Numa(n)) => Some(Root::Numa(n, 0)),
            Some(Up::Bridge(_)) | None => None,
        };
        g.bridges = chain.clone();
        if end.is_none() {
            if !chain.is_empty() {
                w.add(
                    format!("gpu{}", gpus_index(bdfs, b)),
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
    Ok(())
}

fn gpus_index(bdfs: &[Bdf], b: Bdf) -> usize {
    bdfs.iter().position(|x| *x == b).unwrap_or(0)
}
