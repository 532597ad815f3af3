//! Patterns of transfer streams (`[[workload.pattern]]`): the shapes people
//! measure with p2pmark, nvbandwidth and p2pBandwidthLatencyTest — all to
//! all, a staggered distance, one to many, many to one, bidirectional pairs
//! — over any set of GPUs. A pattern expands into ordinary [`Stream`]s when
//! the scenario is built; its streams are checked like any other and its
//! results are summed in an aggregate record.

use super::{KernelConfig, Stream};
use crate::kinds::{PatternKind, TransferOp};
use contend_topo::{Bytes, NodeIdx, Picos, Topology};
use serde::Serialize;
use std::ops::Range;

/// Which ordered pairs a pattern covers. GPUs are in the order the pattern
/// lists them (the topology's GPU order for `gpus = "all"`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Shape {
    /// Every ordered pair of `gpus`: n·(n−1) streams, by source then target.
    AllToAll { gpus: Vec<NodeIdx> },
    /// `gpus[i]` → `gpus[(i + distance) mod n]` for every i: n streams.
    Stagger { gpus: Vec<NodeIdx>, distance: u32 },
    /// `source` → every GPU of `gpus` but itself.
    OneToMany { source: NodeIdx, gpus: Vec<NodeIdx> },
    /// Every GPU of `gpus` but `sink` → `sink` (a GPU or host memory).
    ManyToOne { sink: NodeIdx, gpus: Vec<NodeIdx> },
    /// `a → b` and `b → a` for each pair, in the order given.
    BidirectionalPairs { pairs: Vec<(NodeIdx, NodeIdx)> },
}

impl Shape {
    pub fn kind(&self) -> PatternKind {
        match self {
            Shape::AllToAll { .. } => PatternKind::AllToAll,
            Shape::Stagger { .. } => PatternKind::Stagger,
            Shape::OneToMany { .. } => PatternKind::OneToMany,
            Shape::ManyToOne { .. } => PatternKind::ManyToOne,
            Shape::BidirectionalPairs { .. } => PatternKind::BidirectionalPairs,
        }
    }

    /// How many streams the shape expands into, without expanding it
    /// (saturating: the checks bound it before anything is allocated).
    pub fn count(&self) -> u64 {
        match self {
            Shape::AllToAll { gpus } => {
                let n = gpus.len() as u64;
                n.saturating_mul(n.saturating_sub(1))
            }
            Shape::Stagger { gpus, .. } => gpus.len() as u64,
            Shape::OneToMany { source: x, gpus } | Shape::ManyToOne { sink: x, gpus } => {
                gpus.iter().filter(|g| *g != x).count() as u64
            }
            Shape::BidirectionalPairs { pairs } => (pairs.len() as u64).saturating_mul(2),
        }
    }

    /// The `(from, to)` pairs, in stream order.
    pub fn pairs(&self) -> Vec<(NodeIdx, NodeIdx)> {
        match self {
            Shape::AllToAll { gpus } => gpus
                .iter()
                .flat_map(|&a| gpus.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
                .collect(),
            Shape::Stagger { gpus, distance } => {
                let n = gpus.len();
                (0..n)
                    .map(|i| (gpus[i], gpus[(i + *distance as usize % n.max(1)) % n]))
                    .collect()
            }
            Shape::OneToMany { source, gpus } => gpus
                .iter()
                .filter(|g| *g != source)
                .map(|&g| (*source, g))
                .collect(),
            Shape::ManyToOne { sink, gpus } => gpus
                .iter()
                .filter(|g| *g != sink)
                .map(|&g| (g, *sink))
                .collect(),
            Shape::BidirectionalPairs { pairs } => {
                pairs.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).collect()
            }
        }
    }
}

/// A pattern of streams: which pairs, and what each stream does (as one
/// `[[workload.stream]]` would say it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pattern {
    pub shape: Shape,
    /// What its aggregate record calls it (default: the kind, with the
    /// distance, source or sink: `stagger +3`, `one-to-many gpu0`).
    pub name: Option<String>,
    /// A bandwidth op (`copy`, `copy-read`, `load`, `store`).
    pub op: TransferOp,
    pub bytes: Bytes,
    pub kernel: KernelConfig,
    pub repeat: u32,
    pub start: Picos,
}

impl Pattern {
    pub fn kind(&self) -> PatternKind {
        self.shape.kind()
    }

    /// Its streams, in the order of [`Shape::pairs`].
    pub fn streams(&self) -> Vec<Stream> {
        self.shape
            .pairs()
            .into_iter()
            .map(|(from, to)| Stream {
                from,
                to,
                op: self.op,
                bytes: self.bytes,
                kernel: self.kernel,
                iterations: 1,
                fence: false,
                host_flags: false,
                start: self.start,
                repeat: self.repeat,
            })
            .collect()
    }

    /// The default label: the kind and what sets it apart.
    fn default_label(&self, topo: &Topology) -> String {
        let name = |n: NodeIdx| {
            topo.nodes()
                .get(n.0 as usize)
                .map_or_else(|| format!("node #{}", n.0), |x| x.id.0.clone())
        };
        match &self.shape {
            Shape::Stagger { distance, .. } => format!("stagger +{distance}"),
            Shape::OneToMany { source, .. } => format!("one-to-many {}", name(*source)),
            Shape::ManyToOne { sink, .. } => format!("many-to-one {}", name(*sink)),
            s => s.kind().name().to_string(),
        }
    }
}

/// The streams one pattern expanded into.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PatternStreams {
    /// Its index among the workload's patterns.
    pub pattern: usize,
    /// What its aggregate record calls it: the pattern's `name`, else its
    /// default label; a label two patterns share gets ` #index` appended.
    pub label: String,
    pub kind: PatternKind,
    /// Its streams: a range of [`Scenario::streams`](super::Scenario::streams).
    pub streams: Range<usize>,
}

/// Every stream of a transfer workload — the explicit streams, then each
/// pattern's in pattern order — and where each pattern's streams are.
pub(super) fn expand(
    topo: &Topology,
    streams: &[Stream],
    patterns: &[Pattern],
) -> (Vec<Stream>, Vec<PatternStreams>) {
    let mut all = streams.to_vec();
    let labels: Vec<String> = patterns
        .iter()
        .map(|p| p.name.clone().unwrap_or_else(|| p.default_label(topo)))
        .collect();
    let mut groups = vec![];
    for (j, p) in patterns.iter().enumerate() {
        let start = all.len();
        all.extend(p.streams());
        let shared = labels.iter().filter(|l| **l == labels[j]).count() > 1;
        groups.push(PatternStreams {
            pattern: j,
            label: if shared {
                format!("{} #{j}", labels[j])
            } else {
                labels[j].clone()
            },
            kind: p.kind(),
            streams: start..all.len(),
        });
    }
    (all, groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus(n: u32) -> Vec<NodeIdx> {
        (0..n).map(NodeIdx).collect()
    }

    #[test]
    fn shapes_expand_to_the_pairs_they_name() {
        let a2a = Shape::AllToAll { gpus: gpus(4) };
        assert_eq!(a2a.pairs().len(), 12);
        assert_eq!(a2a.count(), 12);
        assert_eq!(
            a2a.pairs()[..3],
            [(0, 1), (0, 2), (0, 3)].map(|(a, b)| (NodeIdx(a), NodeIdx(b)))
        );
        let st = Shape::Stagger {
            gpus: gpus(8),
            distance: 3,
        };
        let want: Vec<(NodeIdx, NodeIdx)> =
            (0..8).map(|i| (NodeIdx(i), NodeIdx((i + 3) % 8))).collect();
        assert_eq!(st.pairs(), want);
        assert_eq!(st.count(), 8);
        let one = Shape::OneToMany {
            source: NodeIdx(2),
            gpus: gpus(4),
        };
        assert_eq!(
            one.pairs(),
            [(2, 0), (2, 1), (2, 3)].map(|(a, b)| (NodeIdx(a), NodeIdx(b)))
        );
        let many = Shape::ManyToOne {
            sink: NodeIdx(9),
            gpus: gpus(3),
        };
        assert_eq!(many.count(), 3);
        assert!(many.pairs().iter().all(|p| p.1 == NodeIdx(9)));
        let bi = Shape::BidirectionalPairs {
            pairs: vec![(NodeIdx(0), NodeIdx(1)), (NodeIdx(2), NodeIdx(3))],
        };
        assert_eq!(
            bi.pairs(),
            [(0, 1), (1, 0), (2, 3), (3, 2)].map(|(a, b)| (NodeIdx(a), NodeIdx(b)))
        );
    }
}
