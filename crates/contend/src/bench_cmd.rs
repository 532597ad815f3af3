//! `contend bench`: events per second and wall time of the simulator on a
//! scenario (the default verify step), each fidelity or only those named.

use super::{
    FidelityArg, Format, ModelOpts, StepOpts, budget, label, load, output, progress, run_identity,
};
use crate::stream::{Journal, StreamArgs};
use anyhow::{Result, bail};
use contend_sim::{RunSpec, runs_of, simulate_one};
use contend_workload::{Algorithm, Fidelity, Scenario};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub(crate) struct BenchArgs {
    /// Scenario to time, a file or a shipped name, at both fidelities (default: the embedded verify step).
    scenario: Option<PathBuf>,
    /// Model constants (TOML).
    #[arg(long)]
    params: Option<PathBuf>,
    /// Use this topology instead of the scenario's (a file or a shipped
    /// name; `topologies/synthetic-64x-8switch-2socket.toml` times 64
    /// GPUs, `topologies/synthetic-32x-4switch-2socket.toml` 32).
    #[arg(long)]
    topology: Option<String>,
    /// Time only this fidelity; repeat for several (default: tlp and flow).
    #[arg(long, value_enum)]
    fidelity: Vec<FidelityArg>,
    /// Time each run this many times and report its fastest wall time (a
    /// shared machine's noise only ever adds time); every repeat must give
    /// the same events, or the bench stops: a run is deterministic.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    #[command(flatten)]
    step: StepOpts,
    #[command(flatten)]
    stream: StreamArgs,
    /// Output format (`jsonl`: each row as it completes, see --stream).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

/// One bench row as a stream holds it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct BenchLine {
    job: usize,
    run: String,
    row: output::BenchRow,
}

pub(crate) fn run(a: BenchArgs) -> Result<()> {
    let model = ModelOpts {
        topology: a.topology.clone(),
        params: a.params.clone(),
        fidelity: vec![],
        no_collapse: false,
        // bench times long runs on purpose: no budget
        force: true,
    };
    let (sc, params, _) = load(a.scenario.as_deref(), &model)?;
    let sc = a.step.apply(sc)?;
    let fidelities: Vec<Fidelity> = if a.fidelity.is_empty() {
        vec![Fidelity::Tlp, Fidelity::Flow]
    } else {
        [FidelityArg::Tlp, FidelityArg::Flow]
            .into_iter()
            .filter(|f| a.fidelity.contains(f))
            .map(Fidelity::from)
            .collect()
    };
    let specs: Vec<RunSpec> = fidelities
        .iter()
        .flat_map(|&f| runs_of(&sc, &[f]))
        .collect();
    let mut identity = run_identity(&sc, &params, &specs);
    // (only where it is not 1: streams written before --repeat resume)
    if a.repeat > 1 {
        identity["repeat"] = a.repeat.into();
    }
    let journal: Arc<Journal<BenchLine>> = Journal::open(
        "bench",
        identity,
        Some(specs.len()),
        "runs",
        &a.stream,
        a.format == Format::Jsonl,
    )?;
    let render = {
        let (sc, format) = (sc.clone(), a.format);
        move |lines: &[BenchLine]| bench_output(&sc, lines, format).unwrap_or_default()
    };
    journal.on_signal(render);
    let mut done: Vec<Option<BenchLine>> = vec![None; specs.len()];
    for l in journal.resumed() {
        match specs.get(l.job) {
            Some(spec) if label(spec) == l.run => {
                let job = l.job;
                done[job] = Some(l);
            }
            _ => bail!(
                "--resume: run {} `{}` is not one of this bench's",
                l.job,
                l.run
            ),
        }
    }
    let units = budget::units(&sc, &params, &specs)?;
    let bar = progress::RunBar::new(&specs, &done, |i| units[i], 0);
    for (i, spec) in specs.iter().enumerate() {
        if done[i].is_some() {
            continue;
        }
        let (events, wall) = timed(a.repeat, || {
            let run = simulate_one(&sc, &params, *spec)?;
            Ok(run.record().events.unwrap_or(0))
        })
        .map_err(|e| e.context(format!("bench run {}", label(spec))))?;
        let line = BenchLine {
            job: i,
            run: label(spec),
            row: output::BenchRow {
                algorithm: spec
                    .algorithm
                    .map_or("transfer".into(), |a: Algorithm| a.name().to_string()),
                placement: spec.placement,
                fidelity: spec.fidelity,
                events,
                wall_ms: wall.as_secs_f64() * 1e3,
                events_per_sec: events as f64 / wall.as_secs_f64().max(1e-9),
                repeats: a.repeat,
            },
        };
        journal.record(line.clone());
        bar.done(i, events);
        done[i] = Some(line);
    }
    bar.finish();
    journal.finish()?;
    let lines: Vec<BenchLine> = done.into_iter().flatten().collect();
    print!("{}", bench_output(&sc, &lines, a.format)?);
    Ok(())
}

/// Runs `run` `repeat` times (at least once): the events it gave, each
/// time the same, and its fastest wall time.
fn timed(repeat: u32, mut run: impl FnMut() -> Result<u64>) -> Result<(u64, Duration)> {
    let mut best: Option<(u64, Duration)> = None;
    for i in 0..repeat.max(1) {
        let t = Instant::now();
        let events = run()?;
        let wall = t.elapsed();
        best = Some(match best {
            None => (events, wall),
            Some((first, _)) if first != events => bail!(
                "repeat {} gave {events} events, the first {first}: the simulator is not \
                 deterministic for this run",
                i + 1
            ),
            Some((first, fastest)) => (first, fastest.min(wall)),
        });
    }
    Ok(best.expect("at least one repeat"))
}

fn bench_output(sc: &Scenario, lines: &[BenchLine], format: Format) -> Result<String> {
    let mut lines: Vec<&BenchLine> = lines.iter().collect();
    lines.sort_by_key(|l| l.job);
    let rows: Vec<&output::BenchRow> = lines.iter().map(|l| &l.row).collect();
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(&rows)? + "\n",
        Format::Table => output::bench_table(sc, &rows),
        Format::Jsonl => String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// The fastest of the repeats is kept, and every repeat runs.
    #[test]
    fn timed_keeps_the_fastest_repeat() {
        let calls = Cell::new(0u32);
        let (events, wall) = timed(3, || {
            calls.set(calls.get() + 1);
            // the second repeat is the fastest
            let nap = if calls.get() == 2 { 1 } else { 30 };
            std::thread::sleep(Duration::from_millis(nap));
            Ok(42)
        })
        .unwrap();
        assert_eq!((events, calls.get()), (42, 3));
        assert!(wall < Duration::from_millis(30), "{wall:?}");
    }

    /// A repeat that gives other events stops the bench, naming both.
    #[test]
    fn timed_refuses_a_run_whose_events_change() {
        let calls = Cell::new(0u64);
        let err = timed(2, || {
            calls.set(calls.get() + 1);
            Ok(100 + calls.get())
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("repeat 2 gave 102 events, the first 101"),
            "{err}"
        );
    }
}
