//! Whether GPUs reach each other's memory directly (PCIe peer-to-peer):
//! a fact of the box, as the topology states it (`[p2p]`, written by `topo
//! import` from `nvidia-smi topo -p2p r`) or as the GPU model implies it
//! (GeForce cards get no P2P from the stock driver). Kernels that load or
//! store to a peer's buffers cannot run between GPUs without it; NCCL
//! stages through host memory instead.

use super::{NodeIdx, NodeKind, Topology};
use crate::gpu_model::geforce;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;

/// What a topology states about P2P (`[p2p]`), resolved to nodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub enum P2p {
    /// Nothing stated: every pair has P2P unless one of its GPUs is a
    /// GeForce model ([`geforce`]), whose stock driver gives none.
    #[default]
    FromModels,
    /// `access = "all"`: every pair (a datacenter or workstation GPU, or a
    /// GeForce card under a driver that enables P2P).
    All,
    /// `access = "none"`: no pair.
    None,
    /// `missing = [[a, b], …]`: these pairs lack it (each ordered low
    /// index first), the others have it.
    Missing(BTreeSet<(NodeIdx, NodeIdx)>),
}

/// Why two GPUs have no P2P.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum NoP2p {
    /// The topology says so (`[p2p]`).
    Stated,
    /// A GeForce model under the stock driver.
    StockDriver { model: String },
    /// The run sets `NCCL_P2P_DISABLE=1`, which is read as P2P not
    /// working on the box (NCCL's own switch; the topology says nothing).
    NcclP2pDisable,
}

impl fmt::Display for NoP2p {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoP2p::Stated => f.write_str("the topology's [p2p] says so"),
            NoP2p::StockDriver { model } => write!(
                f,
                "{model} is a GeForce card, without P2P under the stock driver \
                 (under a driver that enables it, write `[p2p] access = \"all\"` in the topology)"
            ),
            NoP2p::NcclP2pDisable => f.write_str(
                "NCCL_P2P_DISABLE=1 is set, read as P2P not working on this box \
                 (where it works and only NCCL should avoid it, this is too strict)",
            ),
        }
    }
}

/// A pair of GPUs without P2P, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PairWithoutP2p {
    pub a: NodeIdx,
    pub b: NodeIdx,
    pub why: NoP2p,
}

impl Topology {
    /// What the topology states about P2P.
    pub fn p2p(&self) -> &P2p {
        &self.p2p
    }

    /// Why GPUs `a` and `b` cannot reach each other's memory directly, or
    /// `None` when they can (a GPU always reaches its own).
    pub fn no_p2p(&self, a: NodeIdx, b: NodeIdx) -> Option<NoP2p> {
        if a == b {
            return None;
        }
        match &self.p2p {
            P2p::All => None,
            P2p::None => Some(NoP2p::Stated),
            P2p::Missing(pairs) => pairs
                .contains(&(a.min(b), a.max(b)))
                .then_some(NoP2p::Stated),
            P2p::FromModels => [a, b].into_iter().find_map(|g| match &self.node(g).kind {
                NodeKind::Gpu(s) if geforce(&s.model) => Some(NoP2p::StockDriver {
                    model: s.model.clone(),
                }),
                _ => None,
            }),
        }
    }

    /// Every pair of `gpus` without P2P, in order.
    pub fn pairs_without_p2p(&self, gpus: &[NodeIdx]) -> Vec<PairWithoutP2p> {
        let mut v = Vec::new();
        for (i, &a) in gpus.iter().enumerate() {
            for &b in &gpus[i + 1..] {
                if let Some(why) = self.no_p2p(a, b) {
                    v.push(PairWithoutP2p { a, b, why });
                }
            }
        }
        v
    }

    /// In words, the pairs of `gpus` without P2P and why (`no P2P between
    /// any pair of GPUs (…)`, `no P2P between gpu0–gpu4, gpu1–gpu4 (…)`);
    /// `None` where every pair has it.
    pub fn no_p2p_summary(&self, gpus: &[NodeIdx]) -> Option<String> {
        self.describe_no_p2p(&self.pairs_without_p2p(gpus), gpus.len())
    }

    /// In words, `missing` (pairs of `n` GPUs): which, and why the first is.
    pub fn describe_no_p2p(&self, missing: &[PairWithoutP2p], n: usize) -> Option<String> {
        let first = missing.first()?;
        let name = |g| &self.node(g).id;
        let pairs = if missing.len() == n * n.saturating_sub(1) / 2 {
            "any pair of GPUs".to_string()
        } else {
            let mut v: Vec<String> = missing
                .iter()
                .take(4)
                .map(|p| format!("{}–{}", name(p.a), name(p.b)))
                .collect();
            if missing.len() > 4 {
                v.push(format!("{} pairs in all", missing.len()));
            }
            v.join(", ")
        };
        let from = match (&first.why, &self.p2p_note) {
            (NoP2p::Stated, Some(n)) => format!(" ({n})"),
            _ => String::new(),
        };
        Some(format!("no P2P between {pairs}: {}{from}", first.why))
    }
}

/// `[p2p]` as written, by node id, before the topology is checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum P2pSpec {
    #[default]
    FromModels,
    All,
    None,
    /// Pairs without P2P, each with where it is written.
    Missing(Vec<(super::NodeId, super::NodeId, Option<crate::error::Location>)>),
}

impl P2pSpec {
    /// Resolved against the topology's nodes: every id a GPU, no pair of a
    /// GPU with itself.
    pub(super) fn resolve(
        &self,
        lookup: impl Fn(&super::NodeId) -> Option<(NodeIdx, bool)>,
    ) -> Result<P2p, crate::error::TopoError> {
        use crate::error::{TopoError, TopoErrorKind};
        Ok(match self {
            P2pSpec::FromModels => P2p::FromModels,
            P2pSpec::All => P2p::All,
            P2pSpec::None => P2p::None,
            P2pSpec::Missing(pairs) => {
                let mut set = BTreeSet::new();
                for (a, b, loc) in pairs {
                    let gpu = |id: &super::NodeId| match lookup(id) {
                        Some((i, true)) => Ok(i),
                        Some((_, false)) => Err(TopoError::at(
                            loc.clone(),
                            TopoErrorKind::Invalid(format!(
                                "`{id}` in a pair without P2P is not a GPU"
                            )),
                        )),
                        None => Err(TopoError::at(
                            loc.clone(),
                            TopoErrorKind::Invalid(format!(
                                "`{id}` in a pair without P2P is no node of the topology"
                            )),
                        )),
                    };
                    let (x, y) = (gpu(a)?, gpu(b)?);
                    if x == y {
                        return Err(TopoError::at(
                            loc.clone(),
                            TopoErrorKind::Invalid(format!(
                                "`{a}` paired with itself: a GPU always reaches its own memory"
                            )),
                        ));
                    }
                    set.insert((x.min(y), x.max(y)));
                }
                P2p::Missing(set)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_topology, shipped};

    /// The 8x RTX 4090 box without its `[p2p]` table, plus `extra`.
    fn geforce_box(extra: &str) -> Result<Topology, crate::TopoError> {
        let text = shipped::text("rtx4090-8x-gen4").unwrap();
        let start = text.find("[p2p]").unwrap();
        let end = text[start..].find("[[node]]").unwrap() + start;
        let text = format!("{}{}{extra}", &text[..start], &text[end..]);
        parse_topology("box.toml", &text)
    }

    #[test]
    fn a_geforce_box_has_no_p2p_unless_the_topology_says_so() {
        let t = geforce_box("").unwrap();
        let g = t.gpus();
        assert_eq!(t.p2p(), &P2p::FromModels);
        assert_eq!(t.pairs_without_p2p(&g).len(), 28);
        assert!(matches!(
            t.no_p2p(g[0], g[1]),
            Some(NoP2p::StockDriver { .. })
        ));
        assert_eq!(t.no_p2p(g[0], g[0]), None);
        let why = t.no_p2p_summary(&g).unwrap();
        assert!(why.starts_with("no P2P between any pair of GPUs"), "{why}");
        // a patched driver: stated
        let t = geforce_box("\n[p2p]\naccess = \"all\"\n").unwrap();
        assert!(t.pairs_without_p2p(&t.gpus()).is_empty());
        // one pair without it
        let t = geforce_box("\n[p2p]\nmissing = [[\"gpu1\", \"gpu0\"]]\n").unwrap();
        let g = t.gpus();
        assert_eq!(t.no_p2p(g[0], g[1]), Some(NoP2p::Stated));
        assert_eq!(t.no_p2p(g[0], g[2]), None);
        assert!(
            t.no_p2p_summary(&g).unwrap().contains("gpu0–gpu1"),
            "{:?}",
            t.no_p2p_summary(&g)
        );
        // a datacenter box: every pair
        let t = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
        assert!(t.pairs_without_p2p(&t.gpus()).is_empty());
    }

    #[test]
    fn a_wrong_p2p_table_is_located() {
        for (extra, want) in [
            ("\n[p2p]\naccess = \"some\"\n", "`all` or `none`"),
            (
                "\n[p2p]\naccess = \"all\"\nmissing = [[\"gpu0\", \"gpu1\"]]\n",
                "both given",
            ),
            ("\n[p2p]\nmissing = [[\"gpu0\", \"gpu9\"]]\n", "`gpu9`"),
            ("\n[p2p]\nmissing = [[\"gpu0\", \"rc0\"]]\n", "not a GPU"),
            ("\n[p2p]\nmissing = [[\"gpu0\", \"gpu0\"]]\n", "with itself"),
            ("\n[p2p]\nmissing = [[\"gpu0\"]]\n", "two GPU ids"),
            ("\n[p2p]\nnote = \"x\"\n", "neither"),
        ] {
            let e = geforce_box(extra).unwrap_err().to_string();
            assert!(e.starts_with("box.toml:"), "{extra}: {e}");
            assert!(e.contains(want), "{extra}: {e}");
        }
    }
}
