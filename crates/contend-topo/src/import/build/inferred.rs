//! Without a tree: host bridges and switches from `nvidia-smi topo -m`'s
//! relations (PHB/PXB/PIX classes), and a root complex per NUMA node for
//! GPUs no input places.

use super::{Gpu, Root, Warnings};
use crate::import::{Facts, Rel};
use std::collections::BTreeMap;

/// The switches `topo -m` implies: per GPU, its synthetic switches nearest
/// first; per switch, its parent switch.
#[derive(Default)]
pub(super) struct Synth {
    pub switches: BTreeMap<usize, Vec<usize>>,
    pub parent: BTreeMap<usize, Option<usize>>,
}

/// Places every GPU the tree did not on a root (and implied switches).
pub(super) fn infer(gpus: &mut [Gpu], facts: &Facts, w: &mut Warnings) -> Synth {
    let n = gpus.len();
    let matrix = &facts.matrix;
    let mut synth = Synth::default();
    let (synth_switches, synth_parent) = (&mut synth.switches, &mut synth.parent);
    let no_tree: Vec<usize> = (0..n).filter(|&i| gpus[i].root.is_none()).collect();
    let numa_only: Vec<usize> = (0..n)
        .filter(|&i| matches!(gpus[i].root, Some(Root::Numa(..))))
        .collect();
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
    synth
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
