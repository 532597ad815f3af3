//! One result schema for the simulator, the hardware backend and NCCL, so
//! every comparison is like for like. Written as JSON (one object per line
//! for measurements: JSON Lines, see [`crate::jsonl`]).
//!
//! Every field is typed: what was measured ([`Measured`]), which resource
//! was busiest ([`Resource`]) and the facts beyond the common fields
//! ([`Extra`]). Their JSON is the flat strings and keys earlier files used,
//! so committed data loads unchanged.

use crate::kinds::WorkloadKind;
use crate::kinds::{Fidelity, LaunchMode, Placement};
use serde::{Deserialize, Serialize};

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
            count: v.len().min(u32::MAX as usize) as u32,
            median_ns: pct(50.0),
            p10_ns: pct(10.0),
            p90_ns: pct(90.0),
            p99_ns: pct(99.0),
            min_ns: v[0],
            max_ns: v[v.len() - 1],
        }
    }
}

/// Implements `Serialize`/`Deserialize` through `Display`/`FromStr`: the
/// type is a string in JSON, parsed once when a file is read.
macro_rules! string_serde {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

mod check;
mod facts;
mod machine;
mod name;

pub use check::{BadResult, Quantity};

pub use facts::{
    AggregateFacts, Binding, Extra, GroupTag, ImportFacts, KernelFacts, LinkUse, NcclFacts,
    SimFacts, StreamFacts, TimingFacts,
};
pub use machine::{Machine, PcieLinkState};
pub use name::{Measured, Resource, Way};

/// One result: a collective at one size (or a verify step, or a transfer)
/// with one algorithm, placement and fidelity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    pub source: Source,
    pub scenario: String,
    pub topology: String,
    pub workload: WorkloadKind,
    /// The algorithm (`one-shot-pull`, ...), `nccl`, or the transfer op.
    pub algorithm: Measured,
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
    /// Facts beyond the common fields (kernel shape, timing method, notes).
    #[serde(default)]
    pub extra: Extra,
}

impl ResultRecord {
    /// The aggregate of transfer-stream records (one pattern's, or a whole
    /// run's): `extra.aggregate_gbps` the sum of their bandwidths, the
    /// slowest, median and fastest stream, the stream count; `size_bytes`
    /// every byte they moved, `total_ns` from the first start to the last
    /// finish and `bandwidth_gbps` the one over the other (below the sum
    /// when streams end at different times); one `per_op_ns` entry per
    /// stream (its own time).
    /// Records without a bandwidth (ping-pong) are left out; `None` when no
    /// record has one. The common fields come from the first record.
    pub fn aggregate(pattern: &str, streams: &[&ResultRecord]) -> Option<ResultRecord> {
        let with_bw: Vec<&ResultRecord> = streams
            .iter()
            .copied()
            .filter(|r| r.bandwidth_gbps.is_some())
            .collect();
        let first = *with_bw.first()?;
        let mut bw: Vec<f64> = with_bw.iter().filter_map(|r| r.bandwidth_gbps).collect();
        let sum = round3(bw.iter().sum());
        bw.sort_by(f64::total_cmp);
        let median = bw[(bw.len().div_ceil(2)).max(1) - 1];
        let start = |r: &ResultRecord| r.extra.stream.start_us.unwrap_or(0.0) * 1e3;
        let begin = with_bw
            .iter()
            .map(|r| start(r))
            .fold(f64::INFINITY, f64::min);
        let end = with_bw
            .iter()
            .map(|r| start(r) + r.total_ns)
            .fold(0.0, f64::max);
        let per_op: Vec<f64> = with_bw.iter().map(|r| r.total_ns).collect();
        let bytes = with_bw.iter().fold(0u64, |b, r| {
            b.saturating_add(r.size_bytes.saturating_mul(r.per_op_ns.len().max(1) as u64))
        });
        let mut extra = Extra::default();
        extra.stream.pattern = Some(pattern.to_string());
        extra.aggregate = AggregateFacts {
            streams: Some(with_bw.len().min(u32::MAX as usize) as u32),
            aggregate_gbps: Some(sum),
            min_gbps: Some(bw[0]),
            median_gbps: Some(median),
            max_gbps: Some(bw[bw.len() - 1]),
        };
        let span = end - begin;
        Some(ResultRecord {
            algorithm: Measured::Aggregate,
            size_bytes: bytes,
            total_ns: round3(span),
            stats: Stats::of(&per_op),
            per_op_ns: per_op,
            bandwidth_gbps: Some(round3(bytes as f64 / span.max(1e-9))),
            verified: None,
            machine: None,
            extra,
            ..first.clone()
        })
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::TransferOp;

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

    #[test]
    fn extra_keeps_flat_sorted_keys_and_rejects_unknown_ones() {
        let text = r#"{"threads":512,"NCCL_P2P_DISABLE":"1","blocks":132,"group":2,"batch_mean_ns":7.5,"nccl_version":"2.28.3"}"#;
        let e: Extra = serde_json::from_str(text).unwrap();
        assert_eq!(e.kernel.blocks, Some(132));
        assert_eq!(e.kernel.emulated, None);
        let em: Extra = serde_json::from_str(r#"{"emulated":true,"grid":4}"#).unwrap();
        assert_eq!(em.kernel.emulated, Some(true));
        assert_eq!(
            serde_json::to_string(&em).unwrap(),
            r#"{"emulated":true,"grid":4}"#
        );
        assert_eq!(e.kernel.group, Some(GroupTag::Ranks(2)));
        assert_eq!(e.nccl.var("NCCL_P2P_DISABLE"), Some("1"));
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"NCCL_P2P_DISABLE":"1","batch_mean_ns":7.5,"blocks":132,"group":2,"nccl_version":"2.28.3","threads":512}"#
        );
        let bad = serde_json::from_str::<Extra>(r#"{"blocks":1,"colour":"red"}"#).unwrap_err();
        assert!(
            bad.to_string().contains("unknown field `extra.colour`"),
            "{bad}"
        );
        // out of range for the field's type: an error, never a truncation
        assert!(serde_json::from_str::<Extra>(r#"{"grid":4294967297}"#).is_err());
    }

    fn stream(bw: Option<f64>, total_ns: f64, start_us: Option<f64>) -> ResultRecord {
        ResultRecord {
            source: Source::Sim,
            scenario: "s".into(),
            topology: "t".into(),
            workload: WorkloadKind::Transfer,
            algorithm: Measured::Transfer(TransferOp::Copy),
            placement: None,
            fidelity: Some(Fidelity::Flow),
            launch: LaunchMode::Eager,
            ranks: vec![],
            size_bytes: 1000,
            total_ns,
            per_op_ns: vec![total_ns / 2.0; 2],
            stats: Stats::default(),
            bandwidth_gbps: bw,
            verified: None,
            events: Some(7),
            wall_ns: None,
            busiest_link: None,
            machine: None,
            extra: Extra {
                stream: StreamFacts {
                    start_us,
                    ..StreamFacts::default()
                },
                ..Extra::default()
            },
        }
    }

    #[test]
    fn aggregates_sum_streams_and_span_their_offsets() {
        let (a, b, c) = (
            stream(Some(2.0), 1000.0, None),
            stream(Some(4.0), 500.0, Some(1.0)),
            stream(None, 100.0, None), // a ping-pong: no bandwidth, left out
        );
        let agg = ResultRecord::aggregate("p", &[&a, &b, &c]).unwrap();
        let f = &agg.extra.aggregate;
        assert_eq!(agg.algorithm, Measured::Aggregate);
        assert_eq!(
            (
                f.streams,
                f.aggregate_gbps,
                f.min_gbps,
                f.median_gbps,
                f.max_gbps
            ),
            (Some(2), Some(6.0), Some(2.0), Some(2.0), Some(4.0))
        );
        // 2 repeats x 1000 B each; from 0 to 1 us + 500 ns
        assert_eq!((agg.size_bytes, agg.total_ns), (4000, 1500.0));
        assert_eq!(agg.bandwidth_gbps, Some(2.667));
        assert_eq!(agg.per_op_ns, [1000.0, 500.0]);
        assert_eq!(agg.events, Some(7));
        assert_eq!(agg.extra.stream.pattern.as_deref(), Some("p"));
        assert!(ResultRecord::aggregate("p", &[&c]).is_none());
        // the record round-trips through JSON with its new keys
        let text = serde_json::to_string(&agg).unwrap();
        assert!(text.contains(r#""aggregate_gbps":6.0"#) && text.contains(r#""pattern":"p""#));
        assert_eq!(serde_json::from_str::<ResultRecord>(&text).unwrap(), agg);
    }
}
