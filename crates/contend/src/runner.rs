//! Running a command's list of simulations: every core busy with the
//! longest runs first, each result checked and streamed to the journal as
//! it ends (`--stream`, `--resume`), a progress bar, and on SIGINT/SIGTERM
//! the output of what is done.

use crate::progress;
use crate::stream::{Jobs, Journal, RunLine, StreamArgs, fingerprint};
use anyhow::Result;
use contend_sim::{ModelParams, Run, RunSpec, simulate_one};
use contend_workload::{Fidelity, Scenario};
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

/// Runs simulations in parallel, each checked as a job of `jobs` and
/// streamed to `journal` as it ends (those it resumed, checked when read,
/// are not run again), with a progress bar; the runs in the order of `specs`.
pub(crate) fn run_all(
    sc: &Scenario,
    params: &ModelParams,
    specs: &[RunSpec],
    jobs: &Jobs,
    journal: &Arc<Journal<RunLine>>,
) -> Result<Vec<Run>> {
    let mut done: Vec<Option<RunLine>> = vec![None; specs.len()];
    for l in journal.resumed() {
        let job = l.job();
        done[job] = Some(l);
    }
    let pending: Vec<usize> = (0..specs.len()).filter(|&i| done[i].is_none()).collect();
    let sizes_total = dedup(specs.iter().map(|s| s.size)).len();
    let bar = progress::RunBar::new(specs, &done, |i| work_estimate(sc, &specs[i]), sizes_total);
    let out = longest_first(
        &pending,
        |&i| work_estimate(sc, &specs[i]),
        |&i| {
            // checked before it is streamed or printed
            let r = simulate_one(sc, params, specs[i])
                .map_err(anyhow::Error::from)
                .and_then(|run| Ok((jobs.line(i, &run)?, run.record().events)));
            if let Ok((line, events)) = &r {
                journal.record(line.clone());
                bar.done(i, events.unwrap_or(0));
            }
            r.map(|(line, _)| line)
        },
    );
    bar.finish();
    for (k, r) in pending.iter().zip(out) {
        done[*k] = Some(r?);
    }
    journal.finish()?;
    Ok(specs
        .iter()
        .zip(done)
        .map(|(s, l)| l.expect("every run done").to_run(*s))
        .collect())
}

/// A run's relative cost, to start the longest first: the bytes it moves
/// (size times ranks, or the streams' bytes), times 64 at TLP fidelity (a
/// packet per event against a flow per transfer).
pub(crate) fn work_estimate(sc: &Scenario, spec: &RunSpec) -> u64 {
    let bytes = match spec.size {
        Some(b) => b.0.saturating_mul(sc.ranks().len() as u64),
        None => sc.streams().iter().map(|s| s.bytes.0).sum(),
    };
    let per = match spec.fidelity {
        Fidelity::Tlp => 64,
        Fidelity::Flow => 1,
    };
    bytes.saturating_add(1 << 20).saturating_mul(per)
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

/// Runs `specs` under a journal (each result streamed as it completes, see
/// `--stream`), renders what is done with `output` on SIGINT/SIGTERM, and
/// prints `output` of every run at the end.
pub(crate) fn run_journaled(
    command: &str,
    sc: &Scenario,
    params: &ModelParams,
    specs: &[RunSpec],
    stream: &StreamArgs,
    jsonl: bool,
    output: impl Fn(&Scenario, &[Run]) -> Result<String> + Clone + Send + Sync + 'static,
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
        move |lines: &[RunLine]| output(&sc, &runs_in_order(&specs, lines)).unwrap_or_default()
    };
    journal.on_signal(render);
    let runs = run_all(sc, params, specs, &jobs, &journal)?;
    print!("{}", output(sc, &runs)?);
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
