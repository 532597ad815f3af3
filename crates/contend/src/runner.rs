//! Running a command's list of simulations: every core busy with the
//! longest runs first, each result checked and streamed to the journal as
//! it ends (`--stream`, `--resume`), a progress bar, and on SIGINT/SIGTERM
//! the output of what is done.

use crate::progress;
use crate::stream::{Jobs, Journal, RunLine, StreamArgs, fingerprint};
use anyhow::Result;
use contend_sim::{ModelParams, Run, RunSpec, simulate_one};
use contend_workload::Scenario;
use std::sync::Arc;

pub(crate) fn dedup<T: PartialEq>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = vec![];
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// What decides a simulation run's results: a resume must match it.
pub(crate) fn run_identity(
    sc: &Scenario,
    params: &ModelParams,
    specs: &[RunSpec],
) -> serde_json::Value {
    let mut sizes: Vec<u64> = specs.iter().filter_map(|s| s.size.map(|b| b.0)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let fids: Vec<&str> = dedup(specs.iter().map(|s| s.fidelity.name()));
    serde_json::json!({
        "scenario": sc.name(),
        "topology": sc.topology().name,
        "scenario_fingerprint": fingerprint(&format!("{:?}", sc.spec())),
        "params_fingerprint": fingerprint(&params.to_toml()),
        "fidelities": fids,
        "sizes": sizes,
        "runs": specs.len(),
    })
}

/// The runs of `lines` in the order of `specs` (those done).
pub(crate) fn runs_in_order(specs: &[RunSpec], lines: &[RunLine]) -> Vec<Run> {
    let mut by_job: Vec<Option<&RunLine>> = vec![None; specs.len()];
    for l in lines {
        if let Some(slot) = by_job.get_mut(l.job()) {
            *slot = Some(l);
        }
    }
    by_job
        .into_iter()
        .enumerate()
        .filter_map(|(i, l)| l.map(|l| l.to_run(specs[i])))
        .collect()
}

/// Runs that share a command's cores with its journaled runs but are not
/// journaled themselves: `simulate`'s second NCCL, a variant scenario.
pub(crate) struct Side<'s> {
    pub scenario: &'s Scenario,
    pub specs: &'s [RunSpec],
    /// Each run's work units ([`crate::budget::units`]).
    pub units: &'s [u64],
}

/// A job of [`run_all`]: a run of the command's scenario, or of its side.
#[derive(Clone, Copy)]
enum Job {
    Main(usize),
    Side(usize),
}

/// What a job of [`run_all`] gives: the journal line of a run of the
/// scenario, or a side run.
enum Done {
    Main(RunLine),
    Side(Run),
}

/// Runs simulations in parallel, each checked as a job of `jobs` and
/// streamed to `journal` as it ends (those it resumed, checked when read,
/// are not run again), and `side`'s runs in the same pool, the costliest
/// (by `units`, the runs' estimated work) first whichever set it is in,
/// with one progress bar; the runs in the order of `specs`, and the
/// side's in the order of its specs.
pub(crate) fn run_all(
    sc: &Scenario,
    params: &ModelParams,
    (specs, units): (&[RunSpec], &[u64]),
    side: Option<&Side<'_>>,
    jobs: &Jobs,
    journal: &Arc<Journal<RunLine>>,
) -> Result<(Vec<Run>, Vec<Run>)> {
    let mut done: Vec<Option<RunLine>> = vec![None; specs.len()];
    for l in journal.resumed() {
        let job = l.job();
        done[job] = Some(l);
    }
    let side_specs = side.map_or(&[][..], |s| s.specs);
    let side_units = side.map_or(&[][..], |s| s.units);
    let mut todo: Vec<Job> = (0..specs.len())
        .filter(|&i| done[i].is_none())
        .map(Job::Main)
        .collect();
    todo.extend((0..side_specs.len()).map(Job::Side));
    // one bar over both sets: the side's runs after the scenario's
    let all_specs: Vec<RunSpec> = specs.iter().chain(side_specs).copied().collect();
    let all_units: Vec<u64> = units.iter().chain(side_units).copied().collect();
    let mut all_done: Vec<Option<()>> = done.iter().map(|d| d.as_ref().map(|_| ())).collect();
    all_done.resize(all_specs.len(), None);
    let sizes_total = dedup(specs.iter().map(|s| s.size)).len();
    let bar = progress::RunBar::new(&all_specs, &all_done, |i| all_units[i], sizes_total);
    let cost = |j: &Job| match *j {
        Job::Main(i) => units[i],
        Job::Side(k) => side_units[k],
    };
    let out = longest_first(&todo, cost, |j| match (*j, side) {
        (Job::Main(i), _) => {
            // checked before it is streamed or printed
            let r = simulate_one(sc, params, specs[i])
                .map_err(anyhow::Error::from)
                .and_then(|run| Ok((jobs.line(i, &run)?, run.record().events)));
            if let Ok((line, events)) = &r {
                journal.record(line.clone());
                bar.done(i, events.unwrap_or(0));
            }
            r.map(|(line, _)| Done::Main(line))
        }
        (Job::Side(k), Some(s)) => {
            let r = simulate_one(s.scenario, params, s.specs[k]);
            if let Ok(run) = &r {
                bar.done(specs.len() + k, run.record().events.unwrap_or(0));
            }
            r.map(Done::Side).map_err(anyhow::Error::from)
        }
        (Job::Side(_), None) => unreachable!("side jobs come from a side"),
    });
    bar.finish();
    let mut side_runs: Vec<Option<Run>> = vec![None; side_specs.len()];
    for (j, r) in todo.iter().zip(out) {
        match (j, r?) {
            (Job::Main(i), Done::Main(line)) => done[*i] = Some(line),
            (Job::Side(k), Done::Side(run)) => side_runs[*k] = Some(run),
            _ => unreachable!("a job's result is of its own set"),
        }
    }
    journal.finish()?;
    let runs = specs
        .iter()
        .zip(done)
        .map(|(s, l)| l.expect("every run done").to_run(*s))
        .collect();
    let side_runs = side_runs
        .into_iter()
        .map(|r| r.expect("every side run done"))
        .collect();
    Ok((runs, side_runs))
}

/// Runs `f` over `jobs` on every core, the jobs with the largest `cost`
/// started first (a sweep is bounded by its longest run; started last, it
/// runs alone), results in the order of `jobs`.
pub(crate) fn longest_first<J: Sync, R: Send>(
    jobs: &[J],
    cost: impl Fn(&J) -> u64,
    f: impl Fn(&J) -> R + Sync,
) -> Vec<R> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&jobs[i])));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<R>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let workers = rayon::current_num_threads().clamp(1, jobs.len().max(1));
    rayon::scope(|s| {
        for _ in 0..workers {
            s.spawn(|_| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&i) = order.get(k) else { break };
                    let r = f(&jobs[i]);
                    *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every job ran")
        })
        .collect()
}

/// Runs `specs` (each with its work `units`) under a journal (each result
/// streamed as it completes, see `--stream`) and `side`'s runs beside them
/// on the same cores, renders what is done with `output` on
/// SIGINT/SIGTERM, and prints `output` of every run (and the side's) at
/// the end.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_journaled(
    command: &str,
    sc: &Scenario,
    params: &ModelParams,
    (specs, units): (&[RunSpec], &[u64]),
    side: Option<&Side<'_>>,
    stream: &StreamArgs,
    jsonl: bool,
    output: impl Fn(&Scenario, &[Run], &[Run]) -> Result<String> + Clone + Send + Sync + 'static,
) -> Result<Vec<Run>> {
    let mut jobs = Jobs::new(sc, specs);
    let journal = Journal::open_checked(
        command,
        run_identity(sc, params, specs),
        Some(specs.len()),
        "runs",
        stream,
        jsonl,
        &mut |line, l: &RunLine| jobs.accept(line, l),
    )?;
    let render = {
        let (sc, specs, output) = (sc.clone(), specs.to_vec(), output.clone());
        // (the side's runs are not journaled: an interrupted run shows the
        // scenario's runs done)
        move |lines: &[RunLine]| output(&sc, &runs_in_order(&specs, lines), &[]).unwrap_or_default()
    };
    journal.on_signal(render);
    let (runs, side_runs) = run_all(sc, params, (specs, units), side, &jobs, &journal)?;
    print!("{}", output(sc, &runs, &side_runs)?);
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::longest_first;

    /// Results come back in the order of the jobs whatever order they ran
    /// in, and the costliest job is the first one started.
    #[test]
    fn longest_jobs_start_first_and_results_keep_their_order() {
        let jobs: Vec<u64> = vec![3, 50, 7, 1, 50, 9];
        // on one thread the start order is the whole story
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let started = std::sync::Mutex::new(vec![]);
        let out = one.install(|| {
            longest_first(
                &jobs,
                |&j| j,
                |&j| {
                    started.lock().unwrap().push(j);
                    j * 10
                },
            )
        });
        assert_eq!(out, vec![30, 500, 70, 10, 500, 90]);
        assert_eq!(started.into_inner().unwrap(), vec![50, 50, 9, 7, 3, 1]);
        // on several, every job runs once and the order of results holds
        let many: Vec<u64> = (0..200).map(|i| (i * 7919) % 101).collect();
        let out = longest_first(&many, |&j| j, |&j| j + 1);
        assert_eq!(out, many.iter().map(|j| j + 1).collect::<Vec<_>>());
    }
}
