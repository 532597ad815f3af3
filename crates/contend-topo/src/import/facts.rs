//! What the inputs of one machine said, merged: the devices of the PCIe
//! tree (each parent as lspci and as NCCL's XML gave it), `topo -m`'s
//! relations and `-p2p` matrices, the CUDA device lists, CPUs and NUMA
//! nodes, and the one walk up the tree every importer step uses (bounded:
//! a loop or a chain deeper than PCIe allows is a located error).

use super::pci::Bdf;
use super::{Warning, located};
use crate::error::{TopoError, TopoErrorKind};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The link relation `nvidia-smi topo -m` prints between two devices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rel {
    Me,
    Sys,
    Node,
    Phb,
    Pxb,
    Pix,
    Nv(u32),
}

impl Rel {
    pub(crate) fn parse(s: &str) -> Option<Rel> {
        Some(match s {
            "X" => Rel::Me,
            "SYS" | "SOC" => Rel::Sys,
            "NODE" => Rel::Node,
            "PHB" => Rel::Phb,
            "PXB" => Rel::Pxb,
            "PIX" => Rel::Pix,
            _ => Rel::Nv(s.strip_prefix("NV")?.parse().ok()?),
        })
    }
    pub(crate) fn name(&self) -> String {
        match self {
            Rel::Me => "X".into(),
            Rel::Sys => "SYS".into(),
            Rel::Node => "NODE".into(),
            Rel::Phb => "PHB".into(),
            Rel::Pxb => "PXB".into(),
            Rel::Pix => "PIX".into(),
            Rel::Nv(n) => format!("NV{n}"),
        }
    }
}

/// `nvidia-smi topo -m` between GPUs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Matrix {
    pub file: String,
    pub line: usize,
    pub cells: Vec<Vec<Rel>>,
    /// `NUMA Affinity` per GPU.
    pub numa: Vec<Option<i64>>,
}

/// `nvidia-smi topo -p2p …` between GPUs (`OK`, `GNS`, `CNS`, `TNS`, `NS`,
/// `DR`, `U`).
#[derive(Clone, Debug, Default)]
pub(crate) struct P2p {
    pub file: String,
    pub line: usize,
    /// `r`, `w`, `rw`, `n`, `a` when the paste says which.
    pub kind: Option<String>,
    pub cells: Vec<Vec<String>>,
}

/// Where an input said something: its file and line (1-based).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct At {
    pub file: String,
    pub line: usize,
}

impl At {
    pub fn new(file: &str, line: usize) -> At {
        At {
            file: file.to_string(),
            line,
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// How a device hangs in the PCIe tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Up {
    Bridge(Bdf),
    /// A host bridge: domain and root bus.
    Host(u16, u8),
    /// NCCL's XML: directly under the CPU of a NUMA node (which host
    /// bridge it does not say).
    Numa(i64),
}

impl fmt::Display for Up {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Up::Bridge(b) => write!(f, "bridge {b}"),
            Up::Host(d, bus) => write!(f, "host bridge [{d:04x}:{bus:02x}]"),
            Up::Numa(n) if *n >= 0 => write!(f, "the CPU of NUMA node {n}"),
            Up::Numa(_) => write!(f, "a CPU"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DevKind {
    Gpu,
    Bridge,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Port {
    Root,
    Upstream,
    Downstream,
    Endpoint,
    /// A PCI switch as NCCL's XML writes it: one node for the upstream port
    /// and its downstream ports.
    NcclSwitch,
}

/// One PCI function, as the inputs describe it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Device {
    /// The parent lspci draws.
    pub up: Option<Up>,
    /// Where lspci draws it.
    pub up_at: Option<At>,
    /// The parent NCCL's XML gives (a switch is one node there).
    pub xml_up: Option<Up>,
    /// The `<pci>` that gives it.
    pub xml_up_at: Option<At>,
    pub name: Option<String>,
    pub kind: Option<DevKind>,
    pub port: Option<Port>,
    /// `LnkCap`: generation, width.
    pub cap: Option<(u8, u8)>,
    /// `LnkSta`: generation, width, downgraded.
    pub sta: Option<(u8, u8, bool)>,
    /// NCCL's `link_speed`/`link_width`.
    pub xml_link: Option<(Option<u8>, Option<u8>)>,
    pub mps: Option<u64>,
    pub mrrs: Option<u64>,
    pub numa: Option<i64>,
    pub tags_10bit: Option<bool>,
    pub acs_redirect: Option<bool>,
    pub device_id: Option<u16>,
    pub cc: Option<u32>,
    /// NVLinks: target bus ID (a GPU's, or an NVSwitch's), count, NVSwitch.
    pub nvlinks: Vec<(String, u32, bool)>,
    /// Which inputs said something about it.
    pub told: BTreeSet<String>,
}

/// A CPU (NUMA node) as NCCL's XML writes it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cpu {
    pub vendor: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
}

/// Everything the inputs said, merged.
#[derive(Clone, Debug, Default)]
pub(crate) struct Facts {
    pub devices: BTreeMap<Bdf, Device>,
    pub matrix: Option<Matrix>,
    pub p2p: Vec<P2p>,
    /// CUDA/nvidia-smi device index → name and bus ID.
    pub cuda: BTreeMap<usize, (String, Option<Bdf>, String)>,
    pub numa_nodes: Option<u32>,
    pub cpus: BTreeMap<i64, Cpu>,
    /// NCCL's `host_hash` per input.
    pub hosts: BTreeMap<String, String>,
    /// The GPU model the user named (`topo import --gpu-model`), over
    /// what the inputs say.
    pub gpu_model: Option<String>,
    pub platform: Vec<String>,
    pub warnings: Vec<Warning>,
}

impl Device {
    /// The parent the tree is built from (lspci's, else NCCL's XML's) and
    /// where the input gives it.
    pub fn parent(&self) -> Option<(Up, Option<&At>)> {
        match (self.up, self.xml_up) {
            (Some(u), _) => Some((u, self.up_at.as_ref())),
            (None, Some(u)) => Some((u, self.xml_up_at.as_ref())),
            (None, None) => None,
        }
    }
}

/// The most bridges above a device: a PCIe hierarchy spends a bus number
/// per level and a domain has 256.
pub(crate) const MAX_PCIE_DEPTH: usize = 256;

/// A device's way up the PCIe tree as the inputs give it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ancestry {
    /// The bridges above it, nearest first.
    pub bridges: Vec<Bdf>,
    /// Where the chain ends: a host bridge or a NUMA node's CPU; `None`
    /// where the inputs stop (a cut tree, or `stop` held).
    pub top: Option<Up>,
}

impl Facts {
    /// The device at `bdf`, created empty if new, marked as told by `file`.
    pub(crate) fn device(&mut self, bdf: Bdf, file: &str) -> &mut Device {
        let d = self.devices.entry(bdf).or_default();
        d.told.insert(file.to_string());
        d
    }

    /// The walk up the PCIe tree from `from`: every walk the importer does
    /// over the parents it read is this one. Each device is visited once
    /// and at most [`MAX_PCIE_DEPTH`] bridges are climbed, so a device
    /// that is its own parent or ancestor, or a chain deeper than a PCIe
    /// hierarchy can be, is an error naming where the inputs say so —
    /// never a loop. The walk ends early (with no `top`) at a bridge for
    /// which `stop` holds.
    pub(crate) fn ancestry_until(
        &self,
        from: Bdf,
        stop: impl Fn(&Bdf) -> bool,
    ) -> Result<Ancestry, TopoError> {
        let mut out = Ancestry::default();
        // the path so far (`from` then the bridges) and each one's place in it
        let mut on_path: BTreeMap<Bdf, usize> = BTreeMap::from([(from, 0)]);
        let mut cur = from;
        loop {
            let Some((up, at)) = self.devices.get(&cur).and_then(Device::parent) else {
                return Ok(out);
            };
            let Up::Bridge(p) = up else {
                out.top = Some(up);
                return Ok(out);
            };
            if let Some(&k) = on_path.get(&p) {
                let path: Vec<Bdf> = std::iter::once(from)
                    .chain(out.bridges.iter().copied())
                    .collect();
                return Err(self.cycle(&path[k..], at));
            }
            if out.bridges.len() >= MAX_PCIE_DEPTH {
                return Err(self.too_deep(from));
            }
            on_path.insert(p, out.bridges.len() + 1);
            out.bridges.push(p);
            if stop(&p) {
                return Ok(out);
            }
            cur = p;
        }
    }

    /// Every device's way up ends: the whole tree the inputs give is a
    /// tree, below GPUs or not.
    /// Each device is walked up only to the first bridge already checked,
    /// whose depth (bridges above it) is kept, so the depth bound holds for
    /// every device at the cost of one step per device.
    pub(crate) fn check_tree(&self) -> Result<(), TopoError> {
        let mut depth: BTreeMap<Bdf, usize> = BTreeMap::new();
        for b in self.devices.keys() {
            if depth.contains_key(b) {
                continue;
            }
            let a = self.ancestry_until(*b, |p| depth.contains_key(p))?;
            let m = a.bridges.len();
            // above the last bridge: its known depth where the walk stopped
            // at it, else none (a host bridge, a CPU, or a cut tree)
            let base = match (a.top, a.bridges.last()) {
                (None, Some(last)) => depth.get(last).copied().unwrap_or(0),
                _ => 0,
            };
            if m + base > MAX_PCIE_DEPTH {
                return Err(self.too_deep(*b));
            }
            depth.insert(*b, m + base);
            for (k, p) in a.bridges.iter().enumerate() {
                depth.entry(*p).or_insert(m - 1 - k + base);
            }
        }
        Ok(())
    }

    /// The error for a chain deeper than PCIe allows, at where the input
    /// gives `from`'s parent.
    fn too_deep(&self, from: Bdf) -> TopoError {
        let at = self
            .devices
            .get(&from)
            .and_then(Device::parent)
            .and_then(|(_, a)| a);
        at_or_none(
            at,
            format!(
                "pci busid {from} has more than {MAX_PCIE_DEPTH} bridges above it: deeper than a PCIe hierarchy can be (a bus number per level, 256 per domain)"
            ),
        )
    }

    /// The error for a loop: `path[0]` hangs under `path[1]`, … and the
    /// last under `path[0]` again, as `at` says.
    fn cycle(&self, path: &[Bdf], at: Option<&At>) -> TopoError {
        let first = path[0];
        let what = if path.len() == 1 {
            "it is nested in itself".to_string()
        } else {
            let hops: Vec<String> = path
                .iter()
                .enumerate()
                .map(|(k, b)| {
                    let parent = path.get(k + 1).copied().unwrap_or(first);
                    let said = self
                        .devices
                        .get(b)
                        .and_then(Device::parent)
                        .and_then(|(_, a)| a)
                        .map(|a| format!(" at {a}"))
                        .unwrap_or_default();
                    format!("{b} under {parent}{said}")
                })
                .collect();
            hops.join(", ")
        };
        at_or_none(
            at,
            format!(
                "pci busid {first} is its own ancestor ({what}): a PCIe tree has no loop (is the input edited, or two dumps spliced?)"
            ),
        )
    }
}

/// A located error where the input is known, else one without a place.
fn at_or_none(at: Option<&At>, message: String) -> TopoError {
    match at {
        Some(a) => located(&a.file, a.line, message),
        None => TopoError::at(None, TopoErrorKind::Syntax(message)),
    }
}

/// Sets `slot` from `v` unless it is set; a different value is noted.
pub(crate) fn merge<T: PartialEq + fmt::Display + Clone>(
    slot: &mut Option<T>,
    v: T,
    what: impl FnOnce() -> String,
    notes: &mut Vec<Warning>,
) {
    match slot {
        None => *slot = Some(v),
        Some(old) if *old != v => notes.push(Warning {
            field: what(),
            message: format!("the inputs disagree ({old} and {v}); the first is kept"),
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bdf(s: &str) -> Bdf {
        Bdf::parse(s).unwrap()
    }

    /// Facts with `child` under bridge `parent`, as `at` (lspci's parent,
    /// else NCCL's XML's) says.
    fn under(f: &mut Facts, child: &str, parent: Up, at: (&str, usize), lspci: bool) {
        let d = f.devices.entry(bdf(child)).or_default();
        let a = Some(At::new(at.0, at.1));
        if lspci {
            (d.up, d.up_at) = (Some(parent), a);
        } else {
            (d.xml_up, d.xml_up_at) = (Some(parent), a);
        }
    }

    #[test]
    fn the_walk_up_climbs_to_the_host_bridge() {
        let mut f = Facts::default();
        under(
            &mut f,
            "03:00.0",
            Up::Bridge(bdf("02:00.0")),
            ("t", 3),
            true,
        );
        under(
            &mut f,
            "02:00.0",
            Up::Bridge(bdf("01:00.0")),
            ("t", 2),
            true,
        );
        under(&mut f, "01:00.0", Up::Host(0, 0), ("t", 1), true);
        let a = f.ancestry_until(bdf("03:00.0"), |_| false).unwrap();
        assert_eq!(a.bridges, vec![bdf("02:00.0"), bdf("01:00.0")]);
        assert_eq!(a.top, Some(Up::Host(0, 0)));
        // cut where `stop` holds, and where the inputs stop
        let a = f
            .ancestry_until(bdf("03:00.0"), |b| *b == bdf("02:00.0"))
            .unwrap();
        assert_eq!((a.bridges, a.top), (vec![bdf("02:00.0")], None));
        f.check_tree().unwrap();
    }

    #[test]
    fn a_loop_across_two_inputs_is_located_not_walked_forever() {
        // lspci puts 02:00.0 under 01:00.0; NCCL's XML (another file) puts
        // 01:00.0, which lspci does not draw, under 02:00.0
        let mut f = Facts::default();
        under(
            &mut f,
            "04:00.0",
            Up::Bridge(bdf("02:00.0")),
            ("tree.txt", 9),
            true,
        );
        under(
            &mut f,
            "02:00.0",
            Up::Bridge(bdf("01:00.0")),
            ("tree.txt", 8),
            true,
        );
        under(
            &mut f,
            "01:00.0",
            Up::Bridge(bdf("02:00.0")),
            ("dump.xml", 5),
            false,
        );
        let e = f
            .ancestry_until(bdf("04:00.0"), |_| false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "dump.xml:5:1: pci busid 0000:02:00.0 is its own ancestor (0000:02:00.0 under 0000:01:00.0 at tree.txt:8, 0000:01:00.0 under 0000:02:00.0 at dump.xml:5): a PCIe tree has no loop (is the input edited, or two dumps spliced?)"
        );
        assert!(f.check_tree().is_err());
        // its own parent, where no input says: an error without a place
        let mut f = Facts::default();
        f.devices.entry(bdf("01:00.0")).or_default().up = Some(Up::Bridge(bdf("01:00.0")));
        let e = f.check_tree().unwrap_err();
        assert!(e.location.is_none());
        assert!(
            e.to_string()
                .starts_with("pci busid 0000:01:00.0 is its own ancestor (it is nested in itself)"),
            "{e}"
        );
    }

    #[test]
    fn a_chain_deeper_than_pcie_allows_is_an_error() {
        let mut f = Facts::default();
        let n = MAX_PCIE_DEPTH + 2;
        let b = |k: usize| Bdf {
            domain: (k / 256) as u16,
            bus: (k % 256) as u8,
            dev: 0,
            func: 0,
        };
        for k in 0..n {
            let up = if k + 1 < n {
                Up::Bridge(b(k + 1))
            } else {
                Up::Host(0, 0)
            };
            under(&mut f, &b(k).to_string(), up, ("deep.xml", k + 1), false);
        }
        let e = f.check_tree().unwrap_err().to_string();
        assert!(e.contains("has more than 256 bridges above it"), "{e}");
        // the other way round: the shallow devices come first in bus order,
        // so each walk stops at its parent, already checked, and the depth
        // kept for it tells
        let chain = |len: usize| {
            let mut f = Facts::default();
            for k in 0..len {
                let up = if k == 0 {
                    Up::Host(0, 0)
                } else {
                    Up::Bridge(b(k - 1))
                };
                under(&mut f, &b(k).to_string(), up, ("deep.xml", k + 1), false);
            }
            f
        };
        let e = chain(n).check_tree().unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "deep.xml:{}:1: pci busid {} has more than 256 bridges above it",
                MAX_PCIE_DEPTH + 2,
                b(MAX_PCIE_DEPTH + 1)
            )),
            "{e}"
        );
        // at the bound, it is a tree
        chain(MAX_PCIE_DEPTH + 1).check_tree().unwrap();
    }
}
