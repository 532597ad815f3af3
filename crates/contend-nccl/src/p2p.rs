//! The P2P level and the per-pair P2P check: replicates `ncclGetLevel`,
//! `ncclTopoCheckP2p` and the CPU diversion of `ncclTopoComputePaths`
//! (`addInterStep`) in `src/graph/paths.cc` (same rules at v2.27.7-1,
//! v2.28.9-1, v2.29.7-1).
//!
//! - Default level PXB: no P2P through a host bridge or farther.
//! - AMD x86 with at most two GPUs in the communicator: SYS.
//! - `NCCL_P2P_DISABLE=1` makes it LOC; otherwise `NCCL_P2P_LEVEL` replaces it.
//! - A pair within the level still needs the driver's P2P (NVML status).
//! - P2P read only on NVLink between two SM80 GPUs (`NCCL_P2P_READ_ENABLE`
//!   overrides, `src/transport/p2p.cc`).
//! - A pair without P2P has its path rerouted through the CPU nearest the
//!   destination GPU: the type becomes PHB (same CPU) or SYS.

use crate::env::{GpuP2p, NcclEnv, P2pLevel};
use crate::paths::{Path, PathType, Paths, merge};
use crate::system::{NodeKind, System};
use serde::Serialize;

/// Where the P2P level came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LevelSource {
    /// NCCL's default, PXB.
    Default,
    /// AMD x86 and at most two GPUs: SYS.
    AmdTwoGpus,
    /// `NCCL_P2P_DISABLE=1`: LOC.
    P2pDisable,
    /// `NCCL_P2P_LEVEL`.
    Env(P2pLevel),
}

/// The farthest path type P2P may take, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct P2pPolicy {
    pub level: PathType,
    pub source: LevelSource,
}

pub(crate) fn policy(sys: &System, env: &NcclEnv) -> P2pPolicy {
    if env.p2p_disable {
        return P2pPolicy {
            level: PathType::Loc,
            source: LevelSource::P2pDisable,
        };
    }
    if let Some(l) = env.p2p_level {
        return P2pPolicy {
            level: l.level,
            source: LevelSource::Env(l),
        };
    }
    if sys.cpu.is_amd() && sys.gpus.len() <= 2 {
        return P2pPolicy {
            level: PathType::Sys,
            source: LevelSource::AmdTwoGpus,
        };
    }
    P2pPolicy {
        level: PathType::Pxb,
        source: LevelSource::Default,
    }
}

/// Why a pair may or may not use P2P.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum P2pVerdict {
    /// The path type is within the level and the driver allows it.
    Allowed,
    /// The path type is farther than the level.
    AboveLevel,
    /// Within the level, but NVML reports P2P unsupported for the pair.
    DriverRefuses,
}

/// `ncclTopoCheckP2p` for NCCL GPU indices `g1 → g2`, given the current
/// paths. Returns the verdict, the read flag and the intermediate GPU of an
/// NVB path.
pub(crate) fn check(
    sys: &System,
    paths: &Paths,
    g1: usize,
    g2: usize,
    policy: P2pPolicy,
    env: &NcclEnv,
) -> (P2pVerdict, bool, Option<usize>) {
    let path = paths
        .get(sys.gpus[g1], sys.gpus[g2])
        .expect("GPUs of one system reach each other");
    let mut intermediate = None;
    if path.hops() == 2 {
        let mid = sys.links[path.links[0]].to;
        if let NodeKind::Gpu { .. } = sys.nodes[mid].kind {
            intermediate = sys.gpus.iter().position(|&n| n == mid);
        }
    }
    let mut verdict = if path.ptype <= policy.level {
        P2pVerdict::Allowed
    } else {
        P2pVerdict::AboveLevel
    };
    if verdict == P2pVerdict::Allowed
        && g1 != g2
        && (env.host.gpu_p2p == GpuP2p::NotSupported || sys.no_p2p(g1, g2))
    {
        verdict = P2pVerdict::DriverRefuses;
    }
    let mut read =
        path.ptype == PathType::Nvl && sys.cc_of_gpu(g1) == 80 && sys.cc_of_gpu(g2) == 80;
    if let Some(r) = env.p2p_read_enable {
        read = r;
    }
    (verdict, read, intermediate)
}

/// The CPU nearest a GPU: fewest hops, first in NCCL's CPU order
/// (`ncclGetLocalCpu`).
pub(crate) fn local_cpu(sys: &System, paths: &Paths, g: usize) -> usize {
    let mut best: Option<(usize, usize)> = None;
    for &c in &sys.cpus {
        if let Some(p) = paths.get(sys.gpus[g], c) {
            let h = p.hops();
            if h > 0 && best.is_none_or(|(_, bh)| h < bh) {
                best = Some((c, h));
            }
        }
    }
    best.map(|(c, _)| c).unwrap_or(sys.cpus[0])
}

/// Reroutes every pair without P2P through the CPU nearest its destination
/// (`addInterStep(system, CPU, cpu, GPU, p, GPU, g)`), and returns each
/// ordered pair's verdict from the direct paths.
pub(crate) fn divert(
    sys: &System,
    paths: &mut Paths,
    policy: P2pPolicy,
    env: &NcclEnv,
) -> Vec<Vec<P2pVerdict>> {
    let n = sys.gpus.len();
    let mut verdicts = vec![vec![P2pVerdict::Allowed; n]; n];
    for g in 0..n {
        for (p, row) in verdicts.iter_mut().enumerate() {
            let (v, _, _) = check(sys, paths, p, g, policy, env);
            row[g] = v;
            if v != P2pVerdict::Allowed {
                let cpu = local_cpu(sys, paths, g);
                let up = paths
                    .get(sys.gpus[p], cpu)
                    .expect("GPU reaches its CPU")
                    .clone();
                let down = paths
                    .get(cpu, sys.gpus[g])
                    .expect("CPU reaches GPU")
                    .clone();
                let mut links = up.links.clone();
                links.extend_from_slice(&down.links);
                paths.set(
                    sys.gpus[p],
                    sys.gpus[g],
                    Path {
                        links,
                        bw: up.bw.min(down.bw),
                        ptype: merge(up.ptype, down.ptype),
                    },
                );
            }
        }
    }
    verdicts
}
