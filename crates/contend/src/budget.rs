//! The work budget of a command that simulates: the runs' estimated work
//! ([`contend_sim::estimate`]) summed before any starts, and a run past
//! [`WORK_BUDGET`] refused with the estimate unless `--force` allows it.
//! Runs go to every core at once but one run has one core, so a single
//! run may have half the budget (the development machine's two cores).

use anyhow::{Result, bail};
use contend_sim::estimate::{WORK_BUDGET, work_units};
use contend_sim::{ModelParams, RunSpec};
use contend_workload::Scenario;

/// Each run's estimated work units ([`work_units`]): what the budget sums,
/// and what orders runs on the cores, the costliest first.
pub fn units(sc: &Scenario, params: &ModelParams, specs: &[RunSpec]) -> Result<Vec<u64>> {
    specs
        .iter()
        .map(|s| Ok(work_units(sc, params, *s)?))
        .collect()
}

/// Refuses `runs` (each with its [`units`]) when their estimated work
/// passes the budget and `force` is not given. The budget is about ten
/// seconds on the development machine's two cores; the refusal says how
/// many budgets the run would take.
pub fn check(runs: &[(RunSpec, u64)], force: bool) -> Result<()> {
    let mut total: u64 = 0;
    let mut largest: Option<(u64, &RunSpec)> = None;
    for (s, u) in runs {
        let u = *u;
        total = total.saturating_add(u);
        if largest.is_none_or(|(l, _)| u > l) {
            largest = Some((u, s));
        }
    }
    let (lu, ls) = match largest {
        Some(l) => l,
        None => return Ok(()),
    };
    if force || (total <= WORK_BUDGET && lu <= ONE_RUN_BUDGET) {
        return Ok(());
    }
    let what = if total > WORK_BUDGET {
        format!(
            "this run is estimated at {} work units over {} run{}, {:.1} times the budget of {} (about ten seconds on two cores)",
            sci(total),
            runs.len(),
            if runs.len() == 1 { "" } else { "s" },
            total as f64 / WORK_BUDGET as f64,
            sci(WORK_BUDGET),
        )
    } else {
        format!(
            "one run is estimated at {} work units, {:.1} times the budget of {} for one run (a run has one core: half of the budget of about ten seconds on two cores)",
            sci(lu),
            lu as f64 / ONE_RUN_BUDGET as f64,
            sci(ONE_RUN_BUDGET),
        )
    };
    bail!(
        "{what}: the largest is {} {} {}{} at {} units. Ask for fewer sizes, repeats, ranks or algorithms{}, or pass --force to run it anyway",
        ls.algorithm.map_or("transfer", |a| a.name()),
        ls.placement,
        ls.fidelity,
        ls.size.map(|b| format!(" {b}")).unwrap_or_default(),
        sci(lu),
        if runs
            .iter()
            .any(|(s, _)| s.fidelity == contend_workload::Fidelity::Tlp)
        {
            ", use --fidelity flow"
        } else {
            ""
        },
    )
}

/// The most one run may take: half the budget, a run having one of the
/// two cores the budget is measured on.
const ONE_RUN_BUDGET: u64 = WORK_BUDGET / 2;

/// `2.5e8`, `1.1e12`: a large count short.
fn sci(x: u64) -> String {
    format!("{:.1e}", x as f64)
}
