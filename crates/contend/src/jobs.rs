//! Which results a `--resume` file may hold: the jobs of a `simulate` or
//! `sweep` run (size, algorithm, placement, fidelity), each result line
//! matched to one with sane values before the journal keeps it.

use anyhow::{Context, Result, anyhow, bail};
use contend_sim::{Run, RunSpec};
use contend_topo::Bytes;
use contend_workload::{
    Algorithm, Fidelity, Measured, Placement, ResultRecord, Scenario, Workload,
};
use serde::{Deserialize, Serialize};

/// A run's label in its stream line (`one-shot-pull peer flow 4 KiB`,
/// `transfer peer tlp`), for the lines written and the lines read back:
/// the run's own name ([`RunSpec`]'s `Display`, which the simulator's
/// errors use too).
pub fn label(spec: &RunSpec) -> String {
    spec.to_string()
}

/// One finished simulation as a stream holds it: which run (its index in
/// the run list and its [`label`]) and what it produced. Made only by
/// [`Jobs::line`] and read back only through [`Jobs::accept`], so every
/// record the outputs (table, CSV, JSON, nccl-tests' table) and the stream
/// ever see has been through [`Jobs::check`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunLine {
    job: usize,
    run: String,
    records: Vec<ResultRecord>,
    note: Option<String>,
}

impl RunLine {
    /// The run's index in the run list.
    pub fn job(&self) -> usize {
        self.job
    }
    /// The run rebuilt (what the outputs read: spec, records, note).
    pub fn to_run(&self, spec: RunSpec) -> Run {
        Run {
            spec,
            records: self.records.clone(),
            utilisation: vec![],
            timeline: vec![],
            note: self.note.clone(),
        }
    }
}

/// What a result is, as the simulator fills its record in for a run:
/// algorithm (or none: a transfer's streams), placement, fidelity, size.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Identity {
    algorithm: Option<Algorithm>,
    placement: Option<Placement>,
    fidelity: Option<Fidelity>,
    size: Option<u64>,
}

/// The jobs of one `simulate` or `sweep` run: what each of its lines must
/// be, and the lines read back so far.
pub struct Jobs {
    specs: Vec<RunSpec>,
    /// The size of runs with none of their own (a verify step's).
    step_size: Option<u64>,
    /// The line each job was read from, on a resume.
    seen: Vec<Option<usize>>,
}

/// The distinct values of `v` in order, for an error: all of them, or
/// the first eight and the last of a long list.
fn list<T: PartialEq + std::fmt::Display>(v: impl Iterator<Item = T>) -> String {
    let mut out: Vec<T> = vec![];
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    brief(out.iter().map(ToString::to_string).collect())
}

fn brief(v: Vec<String>) -> String {
    if v.len() <= 10 {
        return v.join(", ");
    }
    format!(
        "{}, …, {} ({} in all)",
        v[..8].join(", "),
        v[v.len() - 1],
        v.len()
    )
}

impl Jobs {
    pub fn new(sc: &Scenario, specs: &[RunSpec]) -> Jobs {
        Jobs {
            specs: specs.to_vec(),
            step_size: match sc.workload() {
                Workload::VerifyStep(v) => Some(v.size().0),
                _ => None,
            },
            seen: vec![None; specs.len()],
        }
    }

    /// What the records of `spec` are. NCCL places its buffers itself (its
    /// transports) and a transfer's streams name no placement: their
    /// records have none, as contend-sim's `summary::records` writes them.
    fn identity(&self, spec: &RunSpec) -> Identity {
        Identity {
            algorithm: spec.algorithm,
            placement: spec
                .algorithm
                .filter(|a| *a != Algorithm::Nccl)
                .map(|_| spec.placement),
            fidelity: Some(spec.fidelity),
            size: spec
                .algorithm
                .and(spec.size.map(|b| b.0).or(self.step_size)),
        }
    }

    /// The stream line of job `job` for its finished run, checked.
    pub fn line(&self, job: usize, run: &Run) -> Result<RunLine> {
        let spec = self.specs.get(job).context("a job of the run")?;
        let l = RunLine {
            job,
            run: label(spec),
            records: run.records.clone(),
            note: run.note.clone(),
        };
        self.check(&l)?;
        Ok(l)
    }

    /// The check every result goes through before anything writes it: the
    /// line is a job of this run (its index, label, and each record's
    /// algorithm, placement, fidelity and size those of that job) and each
    /// record holds sane numbers ([`ResultRecord::check`]).
    pub fn check(&self, l: &RunLine) -> Result<()> {
        let Some(spec) = self.specs.get(l.job) else {
            bail!(
                "run {} is not one of this run's {}",
                l.job,
                self.specs.len()
            );
        };
        let want = label(spec);
        if l.run != want {
            bail!(
                "run {} is `{}` in the file, `{want}` in this run",
                l.job,
                l.run
            );
        }
        let it = format!("run {} (`{want}`)", l.job);
        let id = self.identity(spec);
        if l.records.is_empty() || (id.algorithm.is_some() && l.records.len() != 1) {
            bail!(
                "{it} has {} records, not {}",
                l.records.len(),
                if id.algorithm.is_some() {
                    "one"
                } else {
                    "one or more"
                }
            );
        }
        for r in &l.records {
            self.matches(&it, &id, r)?;
            r.check()?;
        }
        Ok(())
    }

    /// Whether record `r` is a result of the job `it` whose identity is
    /// `id`; else which of its fields is not, and whether the run has that
    /// value at all.
    fn matches(&self, it: &str, id: &Identity, r: &ResultRecord) -> Result<()> {
        // the run's identities, for the error only (a sweep has thousands)
        let ids = || self.specs.iter().map(|s| self.identity(s));
        let not = |what: &str, whats: &str, shown: String, in_run: bool, all: String| {
            Err(if in_run {
                anyhow!("{what} {shown} is not that of {it}")
            } else {
                anyhow!("{what} {shown} is not a {what} of this run ({whats}: {all})")
            })
        };
        let none = || "(none)".to_string();
        match (id.algorithm, r.algorithm) {
            (Some(a), Measured::Allreduce(b)) if a == b => {}
            (None, Measured::Transfer(_) | Measured::Aggregate) => {}
            (_, m) => {
                let in_run = ids().any(|i| i.algorithm.map(Measured::Allreduce) == Some(m));
                let all = list(ids().map(|i| i.algorithm.map_or("transfer", |a| a.name())));
                return not("algorithm", "algorithms", m.to_string(), in_run, all);
            }
        }
        if r.placement != id.placement {
            let in_run = ids().any(|i| i.placement == r.placement);
            let all = list(self.specs.iter().map(|s| s.placement));
            let shown = r.placement.map_or_else(none, |p| p.to_string());
            return not("placement", "placements", shown, in_run, all);
        }
        if r.fidelity != id.fidelity {
            let in_run = ids().any(|i| i.fidelity == r.fidelity);
            let all = list(self.specs.iter().map(|s| s.fidelity));
            let shown = r.fidelity.map_or_else(none, |f| f.to_string());
            return not("fidelity", "fidelities", shown, in_run, all);
        }
        if let Some(size) = id.size
            && r.size_bytes != size
        {
            let mut sizes: Vec<u64> = ids().filter_map(|i| i.size).collect();
            sizes.sort_unstable();
            sizes.dedup();
            let in_run = sizes.binary_search(&r.size_bytes).is_ok();
            let all = brief(sizes.into_iter().map(|b| Bytes(b).to_string()).collect());
            return not(
                "size",
                "sizes",
                Bytes(r.size_bytes).to_string(),
                in_run,
                all,
            );
        }
        Ok(())
    }

    /// A line read back from a stream at `line_no`: [`Jobs::check`], and a
    /// job not read back before.
    pub fn accept(&mut self, line_no: usize, l: &RunLine) -> Result<()> {
        self.check(l)?;
        if let Some(first) = self.seen[l.job] {
            bail!("run {} (`{}`) is already at line {first}", l.job, l.run);
        }
        self.seen[l.job] = Some(line_no);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sizes of an allreduce, every algorithm, flow fidelity: the jobs
    /// and the first one simulated.
    fn sweep_jobs() -> (Jobs, Vec<RunSpec>, Run) {
        let sc = contend_workload::default_scenario(None).unwrap();
        let Some((gap, skew)) = sc.workload().gap_and_skew() else {
            panic!()
        };
        let sc = sc
            .with_workload(Workload::Allreduce {
                sizes: vec![Bytes(1024), Bytes(4096)],
                dtype: contend_workload::Dtype::Bf16,
                repeats: 1,
                gap,
                skew,
            })
            .unwrap();
        let specs = contend_sim::runs_of(&sc, &[Fidelity::Flow]);
        let run =
            contend_sim::simulate_one(&sc, &contend_sim::ModelParams::default(), specs[0]).unwrap();
        (Jobs::new(&sc, &specs), specs, run)
    }

    /// Every line, written or read back, is a job of the run with sane
    /// times: the one check between a result and every writer.
    #[test]
    fn a_line_is_its_jobs_with_sane_times_or_an_error() {
        let (mut jobs, specs, run) = sweep_jobs();
        assert_eq!(label(&specs[0]), "one-shot-pull peer flow 1 KiB");
        let l = jobs.line(0, &run).unwrap();
        assert_eq!(
            (l.job(), l.run.as_str()),
            (0, "one-shot-pull peer flow 1 KiB")
        );
        assert_eq!(l.to_run(specs[0]).records, run.records);
        // the run of job 0 is not job 1's
        let e = jobs.line(1, &run).unwrap_err();
        assert_eq!(
            e.to_string(),
            "algorithm one-shot-pull is not that of run 1 (`one-shot-push peer flow 1 KiB`)"
        );
        // a time of zero is never a line (so never streamed nor printed)
        let mut zero = run.clone();
        zero.records[0].total_ns = 0.0;
        let e = jobs.line(0, &zero).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("one-shot-pull at 1 KiB (peer, flow): `total_ns` = 0.0 is not a time"),
            "{e}"
        );
        // read back: checked the same, and once per job
        jobs.accept(2, &l).unwrap();
        assert_eq!(
            jobs.accept(5, &l).unwrap_err().to_string(),
            "run 0 (`one-shot-pull peer flow 1 KiB`) is already at line 2"
        );
        let mut other = l.clone();
        other.records[0].size_bytes = 3;
        assert_eq!(
            jobs.check(&other).unwrap_err().to_string(),
            "size 3 B is not a size of this run (sizes: 1 KiB, 4 KiB)"
        );
        other.records[0].size_bytes = 4096;
        assert_eq!(
            jobs.check(&other).unwrap_err().to_string(),
            "size 4 KiB is not that of run 0 (`one-shot-pull peer flow 1 KiB`)"
        );
        let mut two = l.clone();
        two.records.push(two.records[0].clone());
        assert!(
            jobs.check(&two)
                .unwrap_err()
                .to_string()
                .contains("has 2 records, not one")
        );
    }

    #[test]
    fn long_lists_are_cut_in_errors() {
        assert_eq!(list([1, 2, 1, 3].into_iter()), "1, 2, 3");
        let long = list(0..4096);
        assert_eq!(long, "0, 1, 2, 3, 4, 5, 6, 7, …, 4095 (4096 in all)");
    }
}
