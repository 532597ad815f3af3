//! `contend bench`: events per second and wall time of the simulator on a
//! scenario (the default verify step), each fidelity or only those named.

use super::{
    FidelityArg, Format, ModelOpts, label, load, output, progress, run_identity, work_estimate,
};
use crate::stream::{Journal, StreamArgs};
use anyhow::{Result, bail};
use contend_sim::{RunSpec, runs_of, simulate_one};
use contend_workload::{Algorithm, Fidelity, Scenario};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

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
    };
    let (sc, params, _) = load(a.scenario.as_deref(), &model)?;
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
    let journal: Arc<Journal<BenchLine>> = Journal::open(
        "bench",
        run_identity(&sc, &params, &specs),
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
    let bar = progress::RunBar::new(&specs, &done, |i| work_estimate(&sc, &specs[i]), 0);
    for (i, spec) in specs.iter().enumerate() {
        if done[i].is_some() {
            continue;
        }
        let t = Instant::now();
        let run = simulate_one(&sc, &params, *spec)?;
        let wall = t.elapsed();
        let events = run.record().events.unwrap_or(0);
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
