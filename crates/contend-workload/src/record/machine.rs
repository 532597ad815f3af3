//! The machine a hardware measurement was taken on ([`Machine`]): the
//! sentences the hardware backend writes for people (`pcie_links`,
//! `link_matrix`) and, beside them, the same facts typed for code
//! ([`Machine::pcie`], [`Machine::nvlinks`]), with the one reading of each
//! that code uses ([`Machine::pcie_link`], [`Machine::nvlinked`]). Records
//! written before the typed facts existed are read from the sentences.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The machine a measurement was taken on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: String,
    pub gpus: Vec<String>,
    pub pci_addresses: Vec<String>,
    pub driver: String,
    pub cuda: String,
    /// `link_matrix[i][j]`: how GPU i reaches GPU j (`X`, `NV18`, `PIX`, `SYS`, ...).
    pub link_matrix: Vec<Vec<String>>,
    /// PCIe link of each GPU to the host, e.g. `Gen5 x16`.
    pub pcie_links: Vec<String>,
    /// `pcie_links` typed: each GPU's PCIe link to the host, `None` where
    /// the backend could not read it (`unknown`). Empty in records written
    /// before it existed; read it through [`Machine::pcie_link`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pcie: Vec<Option<PcieLinkState>>,
    /// NVLink links between GPU i and GPU j (0: none), as the hardware
    /// backend counted them for the topology it writes. Empty in records
    /// written before it existed (and where nothing counted links); read it
    /// through [`Machine::nvlinked`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvlinks: Vec<Vec<u32>>,
}

/// A GPU's PCIe link as the driver reports it: generation and width.
/// Written for people as `Gen5 x16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PcieLinkState {
    pub generation: u32,
    pub width: u32,
}

impl PcieLinkState {
    /// Reads `Gen5 x16` (the sentence [`fmt::Display`] writes); `None` for
    /// anything else (`unknown`).
    pub fn parse(s: &str) -> Option<PcieLinkState> {
        let mut it = s.split_whitespace();
        let generation = it.next()?.strip_prefix("Gen")?.parse().ok()?;
        let width = it.next()?.strip_prefix('x')?.parse().ok()?;
        Some(PcieLinkState { generation, width })
    }
}

impl fmt::Display for PcieLinkState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gen{} x{}", self.generation, self.width)
    }
}

impl Machine {
    /// GPU `i`'s PCIe link: the typed fact, or in a record written before it
    /// existed, read from the sentence in `pcie_links`. `None`: unknown.
    pub fn pcie_link(&self, i: usize) -> Option<PcieLinkState> {
        if self.pcie.is_empty() {
            self.pcie_links.get(i).and_then(|s| PcieLinkState::parse(s))
        } else {
            self.pcie.get(i).copied().flatten()
        }
    }

    /// Whether GPUs `i` and `j` are joined by NVLink: the typed count, or in
    /// a record written before it existed, the `link_matrix` cell (`NV18`).
    /// `None`: the record does not say.
    pub fn nvlinked(&self, i: usize, j: usize) -> Option<bool> {
        if self.nvlinks.is_empty() {
            let cell = self.link_matrix.get(i)?.get(j)?;
            Some(cell.starts_with("NV"))
        } else {
            Some(*self.nvlinks.get(i)?.get(j)? > 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record written before the typed facts reads them from the
    /// sentences; one written after reads the typed facts; and the typed
    /// facts are left out of the JSON when absent, so records without them
    /// are written as before.
    #[test]
    fn typed_facts_and_sentences_agree_old_and_new() {
        let old: Machine = serde_json::from_str(
            r#"{"hostname":"h","gpus":["a","b"],"pci_addresses":[],"driver":"d","cuda":"c",
                "link_matrix":[["X","NV18"],["NV18","X"]],"pcie_links":["Gen5 x16","unknown"]}"#,
        )
        .unwrap();
        let gen5 = PcieLinkState {
            generation: 5,
            width: 16,
        };
        assert_eq!(old.pcie_link(0), Some(gen5));
        assert_eq!(old.pcie_link(1), None);
        assert_eq!(old.nvlinked(0, 1), Some(true));
        assert_eq!(old.nvlinked(0, 2), None);
        assert_eq!(gen5.to_string(), "Gen5 x16");
        assert!(!serde_json::to_string(&old).unwrap().contains("nvlinks"));

        let new = Machine {
            pcie: vec![Some(gen5), None],
            nvlinks: vec![vec![0, 0], vec![0, 0]],
            ..old
        };
        let back: Machine = serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert_eq!(back, new);
        assert_eq!(back.pcie_link(0), Some(gen5));
        // the typed count wins over the sentence
        assert_eq!(back.nvlinked(0, 1), Some(false));
    }
}
