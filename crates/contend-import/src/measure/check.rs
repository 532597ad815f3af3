//! The checks a measured record passes before it is classified: its numbers
//! within the scenario limits, and the machine it names (GPUs, links,
//! targets) that of the topology it is said to come from. Each failure is
//! one sentence naming the field or node.

use contend_topo::{LinkKind, NodeIdx, NodeKind, Topology};
use contend_workload::ResultRecord;
use contend_workload::limits::{
    MAX_BLOCKS, MAX_COLLECTIVES, MAX_ITERATIONS, MAX_SIZE, MAX_STREAMS, launchable,
};

/// The numbers a twin is built from, against the scenario limits
/// ([`contend_workload::limits`]): an error names the field.
pub(super) fn check_numbers(r: &ResultRecord) -> Result<(), String> {
    // a launch probe moves no bytes
    let launch = r.algorithm.probe().is_some_and(|o| o.is_launch());
    if (r.size_bytes == 0 && !launch) || r.size_bytes > MAX_SIZE.0 {
        return Err(format!(
            "field `size_bytes`: {} B is outside 1..={} ({MAX_SIZE})",
            r.size_bytes, MAX_SIZE.0
        ));
    }
    let k = &r.extra.kernel;
    for (f, v) in [("extra.blocks", k.blocks), ("extra.grid", k.grid)] {
        if let Some(b) = v
            && !(1..=MAX_BLOCKS).contains(&b)
        {
            return Err(format!(
                "field `{f}`: {b} blocks is outside 1..={MAX_BLOCKS}"
            ));
        }
    }
    if let Some(t) = k.threads
        && !launchable(1, t)
    {
        return Err(format!(
            "field `extra.threads`: {t} threads per block is not a multiple of 32 from 32 to 1024"
        ));
    }
    let st = &r.extra.stream;
    if let Some(n) = st.iterations
        && !(1..=MAX_ITERATIONS).contains(&n)
    {
        return Err(format!(
            "field `extra.iterations`: {n} is outside 1..={MAX_ITERATIONS}"
        ));
    }
    if let Some(n) = st.concurrent_streams
        && !(1..=MAX_STREAMS as u32).contains(&n)
    {
        return Err(format!(
            "field `extra.concurrent_streams`: {n} is outside 1..={MAX_STREAMS}"
        ));
    }
    if let Some(n) = r.extra.timing.allreduces
        && !(1..=MAX_COLLECTIVES).contains(&u64::from(n))
    {
        return Err(format!(
            "field `extra.allreduces`: {n} is outside 1..={MAX_COLLECTIVES}"
        ));
    }
    Ok(())
}

/// Checks the record's machine fingerprint against the topology: one
/// host, the same GPU model ([`contend_topo::gpu_model`]), the GPU count
/// (a whole machine's fingerprint) or at most the topology's GPUs (an
/// imported run's devices), PCIe links and NVLinks.
pub(super) fn check_machine(r: &ResultRecord, topo: &Topology) -> Result<(), String> {
    if let Some(h) = &r.extra.import.hosts
        && h.len() > 1
    {
        return Err(format!(
            "the run spans {} hosts ({}): contend models one box, and a {}-host run is not one {}-rank machine (import each host's own measurements)",
            h.len(),
            h.join(", "),
            h.len(),
            r.ranks.len()
        ));
    }
    let Some(m) = &r.machine else {
        return Ok(());
    };
    let gpus = topo.gpus();
    let models: Vec<&str> = gpus
        .iter()
        .filter_map(|g| match &topo.node(*g).kind {
            NodeKind::Gpu(s) => Some(s.model.as_str()),
            _ => None,
        })
        .collect();
    for name in &m.gpus {
        let verdicts: Vec<Option<bool>> = models
            .iter()
            .map(|t| contend_topo::gpu_model::same_model(name, t))
            .collect();
        if !verdicts.is_empty() && verdicts.iter().all(|v| *v == Some(false)) {
            return Err(format!(
                "topology mismatch: measured on {name}, topology `{}` has {}: a log from one GPU model cannot calibrate another",
                topo.name,
                models.first().copied().unwrap_or("no GPU")
            ));
        }
    }
    let imported = r.extra.import.format.is_some();
    if imported && m.gpus.len() > gpus.len() {
        return Err(format!(
            "topology mismatch: the run used {} GPUs, topology `{}` has {}",
            m.gpus.len(),
            topo.name,
            gpus.len()
        ));
    }
    if !imported && !m.gpus.is_empty() && m.gpus.len() != gpus.len() {
        return Err(format!(
            "topology mismatch: the measured machine has {} GPUs ({}), topology `{}` has {}",
            m.gpus.len(),
            m.gpus.join(", "),
            topo.name,
            gpus.len()
        ));
    }
    for i in 0..m.pcie_links.len().max(m.pcie.len()) {
        let Some(&g) = gpus.get(i) else { continue };
        let Some(link) = m.pcie_link(i) else {
            continue;
        };
        let topo_link = topo.links().iter().find_map(|l| match &l.kind {
            LinkKind::Pcie(p) if l.a == g || l.b == g => Some((p.generation.0, p.width)),
            _ => None,
        });
        if let Some((tg, tw)) = topo_link
            && (u32::from(tg), u32::from(tw)) != (link.generation, link.width)
        {
            return Err(format!(
                "topology mismatch: GPU {i} measured on a {link} link, topology `{}` gives {} Gen{tg} x{tw}",
                topo.name,
                topo.node(g).id.0
            ));
        }
    }
    for (i, row) in m.link_matrix.iter().enumerate() {
        for (j, cell) in row.iter().enumerate() {
            if i >= j || i >= gpus.len() || j >= gpus.len() {
                continue;
            }
            let measured_nv = m.nvlinked(i, j).unwrap_or(false);
            let topo_nv = topo.links().iter().any(|l| {
                matches!(l.kind, LinkKind::Nvlink { .. })
                    && ((l.a == gpus[i] && l.b == gpus[j]) || (l.a == gpus[j] && l.b == gpus[i]))
            });
            if measured_nv != topo_nv {
                return Err(format!(
                    "topology mismatch: GPUs {i} and {j} are joined by `{cell}` on the measured machine, \
                     but topology `{}` {} an NVLink between {} and {}",
                    topo.name,
                    if topo_nv { "has" } else { "has no" },
                    topo.node(gpus[i]).id.0,
                    topo.node(gpus[j]).id.0
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn gpu_of(topo: &Topology, id: &str) -> Result<NodeIdx, String> {
    topo.lookup(id)
        .filter(|i| matches!(topo.node(*i).kind, NodeKind::Gpu(_)))
        .ok_or_else(|| {
            format!(
                "topology mismatch: `{id}` is not a GPU of topology `{}` (its GPUs: {})",
                topo.name,
                topo.gpus()
                    .iter()
                    .map(|g| topo.node(*g).id.0.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// The node a probe's target names: `host` is the GPU's nearest host memory.
pub(super) fn target_of(topo: &Topology, gpu: NodeIdx, id: &str) -> Result<String, String> {
    if id == "host" {
        return topo
            .nearest_host_memory(gpu)
            .map(|m| topo.node(m).id.0.clone())
            .ok_or_else(|| format!("topology `{}` has no host memory", topo.name));
    }
    match topo.lookup(id).map(|i| &topo.node(i).kind) {
        Some(NodeKind::Gpu(_) | NodeKind::HostMemory { .. }) => Ok(id.to_string()),
        _ => Err(format!(
            "topology mismatch: `{id}` is neither a GPU nor host memory of topology `{}`",
            topo.name
        )),
    }
}
