//! What a prediction is of: the typed key of the prediction table
//! ([`crate::predict::Times`]) that advice and every emitter read — one of
//! contend's algorithms, or NCCL under settings an emitter weighs — and the
//! one place each key's label (for people and files) is written.

use contend_nccl::{Algorithm as NcclAlgorithm, Protocol};
use contend_workload::Algorithm;
use std::cmp::Ordering;
use std::fmt;

/// One thing the emitters compare, the key of the prediction table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Candidate {
    /// One of contend's algorithms (NCCL's own with its defaults included).
    Algorithm(Algorithm),
    /// NCCL under settings an emitter weighs.
    Nccl(NcclVariant),
}

/// NCCL run with some of its settings forced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum NcclVariant {
    /// One algorithm and protocol (`NCCL_ALGO`, `NCCL_PROTO`).
    Forced(Forced),
    /// One of the environments `nccl-env` weighs: the variables set.
    Env(&'static [(&'static str, &'static str)]),
    /// NCCL's ring over a ring graph file (`NCCL_GRAPH_FILE`).
    Graph(RingOrder),
}

/// NCCL forced to one algorithm and protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Forced {
    pub algorithm: NcclAlgorithm,
    pub protocol: Protocol,
}

impl Forced {
    /// The order NCCL numbers them in.
    fn key(&self) -> (usize, usize) {
        (self.algorithm as usize, self.protocol as usize)
    }

    /// `ring,ll`: the algorithm and protocol columns of NCCL's example
    /// tuner config.
    pub fn csv(&self) -> String {
        format!(
            "{},{}",
            self.algorithm,
            self.protocol.nccl_name().to_ascii_lowercase()
        )
    }
}

impl PartialOrd for Forced {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Forced {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl fmt::Display for Forced {
    /// `ring/ll`, `tree/simple`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            self.algorithm,
            self.protocol.nccl_name().to_ascii_lowercase()
        )
    }
}

/// The GPUs' order in a candidate ring graph of `nccl-graph`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum RingOrder {
    /// The channels NCCL's own ring search finds.
    NcclSearch,
    /// The GPUs in the topology file's order.
    FileOrder,
    /// The GPUs sorted by socket, root complex and switch (PCIe locality).
    Locality,
}

impl RingOrder {
    pub fn name(self) -> &'static str {
        match self {
            RingOrder::NcclSearch => "NCCL's own ring search",
            RingOrder::FileOrder => "GPUs in file order",
            RingOrder::Locality => "GPUs by socket, root complex and switch",
        }
    }
}

/// `NCCL's defaults`, or the variables set: `NCCL_PROTO=LL`.
pub(crate) fn env_label(e: &[(&str, &str)]) -> String {
    if e.is_empty() {
        "NCCL's defaults".into()
    } else {
        e.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Display for Candidate {
    /// The label people and files see: the algorithm's name
    /// (`one-shot-pull`, `nccl`), `ring/ll`, `NCCL_PROTO=LL`, `GPUs in file
    /// order`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Candidate::Algorithm(a) => f.write_str(a.name()),
            Candidate::Nccl(NcclVariant::Forced(x)) => write!(f, "{x}"),
            Candidate::Nccl(NcclVariant::Env(e)) => f.write_str(&env_label(e)),
            Candidate::Nccl(NcclVariant::Graph(o)) => f.write_str(o.name()),
        }
    }
}

impl From<Algorithm> for Candidate {
    fn from(a: Algorithm) -> Candidate {
        Candidate::Algorithm(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_the_names_files_carry() {
        let f = Forced {
            algorithm: NcclAlgorithm::Ring,
            protocol: Protocol::Ll128,
        };
        assert_eq!(
            Candidate::Nccl(NcclVariant::Forced(f)).to_string(),
            "ring/ll128"
        );
        assert_eq!(f.csv(), "ring,ll128");
        assert_eq!(
            Candidate::Algorithm(Algorithm::OneShotPull).to_string(),
            "one-shot-pull"
        );
        assert_eq!(
            Candidate::Nccl(NcclVariant::Env(&[])).to_string(),
            "NCCL's defaults"
        );
        assert_eq!(
            Candidate::Nccl(NcclVariant::Env(&[("NCCL_PROTO", "LL")])).to_string(),
            "NCCL_PROTO=LL"
        );
    }
}
