//! The families the advice groups contend's algorithms into (one-shot,
//! two-shot, …, NCCL): the typed key of its per-size choices and ranges,
//! with the one place each family's name (for people and JSON) is written.

use contend_workload::Algorithm;
use serde::{Serialize, Serializer};
use std::fmt;

/// A family of algorithms in the advice.
/// JSON writes its [`Family::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    OneShot,
    TwoShot,
    Hierarchical,
    IslandTwoShot,
    StagedPush,
    CeRing,
    /// contend's own ring kernels (NCCL's rings are in [`Family::Nccl`]).
    Ring,
    /// NCCL as its replica decides.
    Nccl,
}

impl Family {
    /// `one-shot`, `two-shot`, `hierarchical`, `island-two-shot`,
    /// `staged-push`, `ce-ring`, `ring`, `nccl`.
    pub fn name(self) -> &'static str {
        match self {
            Family::OneShot => "one-shot",
            Family::TwoShot => "two-shot",
            Family::Hierarchical => "hierarchical",
            Family::IslandTwoShot => "island-two-shot",
            Family::StagedPush => "staged-push",
            Family::CeRing => "ce-ring",
            Family::Ring => "ring",
            Family::Nccl => "nccl",
        }
    }
}

impl Serialize for Family {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The family an algorithm belongs to in the advice.
pub fn family(a: Algorithm) -> Family {
    match a {
        Algorithm::OneShotPull | Algorithm::OneShotPush => Family::OneShot,
        Algorithm::TwoShotPull | Algorithm::TwoShotPush | Algorithm::TwoShotPushFp32Acc => {
            Family::TwoShot
        }
        Algorithm::Hierarchical => Family::Hierarchical,
        Algorithm::IslandTwoShot => Family::IslandTwoShot,
        Algorithm::StagedPush => Family::StagedPush,
        Algorithm::CeRing => Family::CeRing,
        Algorithm::RingLl | Algorithm::RingSimple => Family::Ring,
        Algorithm::Nccl => Family::Nccl,
    }
}

/// A range's family as the advice's JSON writes it: its name, or `tie`
/// (`None`).
pub(crate) fn family_or_tie<S: Serializer>(f: &Option<Family>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(f.map_or("tie", Family::name))
}
