//! One result schema for the simulator, the hardware backend and NCCL, so
//! every comparison is like for like. Written as JSON (one object per line
//! for measurements: JSON Lines).

use crate::kinds::{Fidelity, LaunchMode, Placement};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Who produced a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The simulator.
    Sim,
    /// The hardware backend's own kernels.
    Hw,
    /// NCCL on hardware.
    Nccl,
}

/// Summary statistics of a set of timings, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub count: u32,
    pub median_ns: f64,
    pub p10_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
}

impl Stats {
    /// Statistics of `values` (nearest-rank percentiles). Empty input gives zeros.
    pub fn of(values: &[f64]) -> Stats {
        if values.is_empty() {
            return Stats::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let pct = |p: f64| -> f64 {
            let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
            v[rank.clamp(1, v.len()) - 1]
        };
        Stats {
            count: v.len() as u32,
            median_ns: pct(50.0),
            p10_ns: pct(10.0),
            p90_ns: pct(90.0),
            p99_ns: pct(99.0),
            min_ns: v[0],
            max_ns: v[v.len() - 1],
        }
    }
}

/// The busiest resource of a simulated run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkUse {
    /// `gpu0->rc0`, `rc0 fabric`, `mem0`.
    pub link: String,
    /// Busy fraction over the run, 0..1.
    pub utilisation: f64,
}

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
}

/// One result: a collective at one size (or a verify step, or a transfer)
/// with one algorithm, placement and fidelity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    pub source: Source,
    pub scenario: String,
    pub topology: String,
    /// `allreduce`, `verify-step` or `transfer`.
    pub workload: String,
    /// Algorithm name (`one-shot-pull`, ...), `nccl`, or the transfer op.
    pub algorithm: String,
    pub placement: Option<Placement>,
    pub fidelity: Option<Fidelity>,
    pub launch: LaunchMode,
    pub ranks: Vec<String>,
    /// Bytes per collective (or per transfer stream).
    pub size_bytes: u64,
    /// Wall time of the whole workload (all collectives), ns.
    pub total_ns: f64,
    /// Time of each collective (or each repeat), ns.
    pub per_op_ns: Vec<f64>,
    pub stats: Stats,
    /// Achieved bandwidth where it means something (transfers), GB/s.
    pub bandwidth_gbps: Option<f64>,
    /// Hardware: whether every rank's output matched the CPU reference.
    pub verified: Option<bool>,
    /// Simulator: events processed.
    pub events: Option<u64>,
    /// Simulator: wall time spent simulating, ns (not deterministic).
    pub wall_ns: Option<u64>,
    pub busiest_link: Option<LinkUse>,
    pub machine: Option<Machine>,
    /// Anything else worth keeping (blocks, threads, repeats, notes).
    #[serde(default)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Stats::of(&v);
        assert_eq!(
            (s.median_ns, s.p10_ns, s.p90_ns, s.p99_ns),
            (50.0, 10.0, 90.0, 99.0)
        );
        assert_eq!((s.min_ns, s.max_ns, s.count), (1.0, 100.0, 100));
        assert_eq!(Stats::of(&[]).count, 0);
        assert_eq!(Stats::of(&[7.0]).p99_ns, 7.0);
    }
}
