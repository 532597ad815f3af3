//! An imported nccl-tests run's ranks on the topology's GPUs.
//!
//! The importer names a plain log's ranks `gpu0`, `gpu1`, ... by CUDA
//! device: positions, not the topology's GPUs. A run over every GPU of the
//! topology keeps that order. A run over fewer (`all_reduce_perf -g 6` on
//! an 8-GPU box, or `CUDA_VISIBLE_DEVICES`) is placed by its devices' PCI
//! addresses (the `# Rank` lines' `[0x01]` or `[0000:01:00]`) on the
//! topology's GPUs that carry theirs (`contend topo import` writes `PCI
//! 0000:01:00.0` in each GPU's note); where either side lacks them, which
//! of the GPUs ran is unknown and the run is refused, naming both counts
//! and what to do. Where both sides have them, every rank is the GPU at
//! its address, and a device at an address no GPU of the topology has is
//! refused (a log of another box).

use crate::error::CalibError;
use crate::measure::{Kind, Measurement};
use crate::nccl_tests::LOG_SCENARIO;
use contend_topo::{NodeKind, Topology};

/// A PCI address, `(domain, bus)`: the domain where the text gives one.
type Pci = (Option<u32>, u32);

/// A GPU of the topology: its id, and its PCI address as its note gives
/// it (the text, and parsed).
struct TopoGpu {
    id: String,
    pci: Option<(String, Pci)>,
}

/// A PCI address as the tools print it: `0x01` (bus only), `0000:01:00`,
/// `0000:01:00.0`, `01:00.0`.
fn address(s: &str) -> Option<Pci> {
    let s = s.trim().trim_matches(|c| c == '[' || c == ']');
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u32::from_str_radix(h, 16).ok().map(|b| (None, b));
    }
    let parts: Vec<&str> = s.split(':').collect();
    let hex = |t: &str| u32::from_str_radix(t, 16).ok();
    match parts.as_slice() {
        [d, b, _] => Some((Some(hex(d)?), hex(b)?)),
        [b, _] => Some((None, hex(b)?)),
        _ => None,
    }
}

/// The PCI address a topology GPU's note gives (`PCI 0000:01:00.0; ...`).
fn gpu_address(note: Option<&str>) -> Option<(String, Pci)> {
    let n = note?;
    let at = n.find("PCI ")?;
    let tok = n[at + 4..]
        .split_whitespace()
        .next()?
        .trim_end_matches([';', ',']);
    address(tok).map(|a| (tok.to_string(), a))
}

fn same(a: Pci, b: Pci) -> bool {
    a.1 == b.1 && (a.0.is_none() || b.0.is_none() || a.0 == b.0)
}

/// Whether a measurement is a collective of a plain nccl-tests log, its
/// ranks positions.
fn positional(m: &Measurement) -> bool {
    matches!(m.kind, Kind::Allreduce { .. } | Kind::VerifyStep { .. })
        && m.record.scenario == LOG_SCENARIO
        && matches!(
            m.record.extra.import.format.as_deref(),
            Some("nccl-tests" | "nccl-tests-json")
        )
}

/// Places the ranks of every imported nccl-tests collective of `ms` on
/// the topology's GPUs (the module's rule), or the first that cannot be
/// placed is an error at its line.
pub(super) fn place_ranks(ms: &mut [Measurement], topo: &Topology) -> Result<(), CalibError> {
    let gpus: Vec<TopoGpu> = topo
        .gpus()
        .iter()
        .map(|&g| {
            let n = topo.node(g);
            let note = match &n.kind {
                NodeKind::Gpu(_) => n.note.as_deref(),
                _ => None,
            };
            TopoGpu {
                id: n.id.0.clone(),
                pci: gpu_address(note),
            }
        })
        .collect();
    let topo_addressed = !gpus.is_empty() && gpus.iter().all(|g| g.pci.is_some());
    for m in ms.iter_mut().filter(|m| positional(m)) {
        let n = m.record.ranks.len();
        let pci: Vec<String> = m
            .record
            .machine
            .as_ref()
            .map(|mc| mc.pci_addresses.clone())
            .unwrap_or_default();
        let run_addressed = pci.len() == n && pci.iter().all(|p| address(p).is_some());
        let mismatch = |message: String| CalibError::RankMismatch {
            file: m.file.clone(),
            line: m.line,
            ranks: n,
            gpus: gpus.len(),
            message,
        };
        if run_addressed && topo_addressed {
            let mut placed = vec![];
            for (k, p) in pci.iter().enumerate() {
                let a = address(p).expect("checked above");
                let Some(g) = gpus
                    .iter()
                    .find(|g| g.pci.as_ref().is_some_and(|(_, b)| same(a, *b)))
                else {
                    return Err(mismatch(format!(
                        "rank mismatch: rank {k} of the {n}-rank nccl-tests run ran on the GPU at PCI {p}, and none of the {} GPUs of topology `{}` is there (theirs: {}): the log and the topology are of different boxes",
                        gpus.len(),
                        topo.name,
                        gpus.iter()
                            .map(|g| format!(
                                "{} {}",
                                g.id,
                                g.pci.as_ref().map_or("?", |a| a.0.as_str())
                            ))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                };
                placed.push(g.id.clone());
            }
            set_ranks(m, placed);
            continue;
        }
        if n == gpus.len() {
            continue;
        }
        let devices = if pci.is_empty() {
            "the log lists no devices (`# Rank` lines)".to_string()
        } else if !topo_addressed {
            format!(
                "the run's devices are at PCI {}, but the topology's GPUs carry no PCI address",
                pci.join(", ")
            )
        } else {
            "the log's `# Rank` lines give no PCI address for every rank".to_string()
        };
        return Err(mismatch(format!(
            "rank mismatch: the nccl-tests run has {n} ranks, topology `{}` has {} GPUs, and nothing says which {n} of the {} ran ({devices}). Calibrate against a topology of the {n} GPUs that ran, or one whose GPUs name their PCI addresses (`contend topo import` of the box's `nvidia-smi topo -m` and `lspci -tv` writes them), or run nccl-tests over all {} GPUs (`-g {}`)",
            topo.name,
            gpus.len(),
            gpus.len(),
            gpus.len(),
            gpus.len()
        )));
    }
    Ok(())
}

fn set_ranks(m: &mut Measurement, placed: Vec<String>) {
    match &mut m.kind {
        Kind::Allreduce { ranks, .. } | Kind::VerifyStep { ranks, .. } => *ranks = placed.clone(),
        _ => {}
    }
    m.record.ranks = placed;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_as_the_tools_print_them() {
        assert_eq!(address("0x01"), Some((None, 1)));
        assert_eq!(address("[0xc2]"), Some((None, 0xc2)));
        assert_eq!(address("0000:84:00"), Some((Some(0), 0x84)));
        assert_eq!(address("0001:41:00.0"), Some((Some(1), 0x41)));
        assert_eq!(address("41:00.0"), Some((None, 0x41)));
        assert_eq!(address(""), None);
        assert_eq!(
            gpu_address(Some("PCI 0000:c1:00.0; sm_89; 142 SMs")).map(|a| a.1),
            Some((Some(0), 0xc1))
        );
        assert_eq!(gpu_address(Some("two GPUs per quadrant")), None);
        assert!(same((None, 1), (Some(0), 1)));
        assert!(!same((Some(1), 1), (Some(0), 1)));
    }
}
