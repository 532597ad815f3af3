//! `simulate`'s second NCCL. At its defaults NCCL allows P2P only up to
//! PXB (through PCIe switches): GPUs on different root ports or sockets are
//! staged through host memory (SHM), however well P2P works between them.
//! PCIe owners set `NCCL_P2P_LEVEL=SYS` to lift that, so where the
//! scenario leaves the level to NCCL and some pair is above it (with P2P
//! there to use), the same NCCL with `NCCL_P2P_LEVEL=SYS` runs beside it
//! and the table shows both, each with what binds it.

use anyhow::{Context, Result};
use contend_nccl::{LevelSource, P2pVerdict};
use contend_sim::{RunSpec, runs_of};
use contend_workload::{Algorithm, Fidelity, Scenario};

/// The variable and value the second NCCL runs with.
pub const LEVEL: (&str, &str) = ("NCCL_P2P_LEVEL", "SYS");

/// The second NCCL's scenario and runs.
pub struct P2pSys {
    pub scenario: Scenario,
    pub specs: Vec<RunSpec>,
}

/// The second NCCL for `sc` at `fidelities`, where it differs from the
/// first: `nccl` among the scenario's algorithms, the P2P level NCCL's own
/// (no `NCCL_P2P_LEVEL` or `NCCL_P2P_DISABLE` set), and a pair above it
/// that has P2P (the topology's `[p2p]` facts).
pub fn variant(sc: &Scenario, fidelities: &[Fidelity]) -> Result<Option<P2pSys>> {
    // a plan only where the scenario runs `nccl`
    let Some(plan) = sc.nccl_plan() else {
        return Ok(None);
    };
    if !matches!(
        plan.p2p.source,
        LevelSource::Default | LevelSource::AmdTwoGpus
    ) {
        return Ok(None);
    }
    let no_p2p = sc.no_p2p();
    let ranks = sc.ranks();
    // a pair above the level that has P2P: SYS changes its transport
    let lifted = plan.pairs.iter().any(|d| {
        let (a, b) = (ranks[d.from], ranks[d.to]);
        d.verdict == P2pVerdict::AboveLevel
            && !no_p2p
                .iter()
                .any(|p| (p.a, p.b) == (a, b) || (p.a, p.b) == (b, a))
    });
    if !lifted {
        return Ok(None);
    }
    let mut setup = sc.nccl().clone();
    setup
        .env
        .set_modelled(LEVEL.0, LEVEL.1)
        .context("the second NCCL's environment")?;
    let scenario = sc.with_nccl(setup)?;
    let specs = runs_of(&scenario, fidelities)
        .into_iter()
        .filter(|s| s.algorithm == Some(Algorithm::Nccl))
        .collect();
    Ok(Some(P2pSys { scenario, specs }))
}
