//! `contend calibrate`, `contend report`, `contend advise`: fit the model to
//! measurements, write the report, print algorithm thresholds.

use crate::stream::{Journal, StreamArgs, fingerprint};
use anyhow::{Context, Result};
use clap::builder::RangedU64ValueParser;
use clap::{Args, ValueEnum};
use contend_advise::advice_table;
use contend_advise::advise::Tolerance;
use contend_fit::calibrate::MAX_TLP_CHECKS;
use contend_fit::eval::{Which, by_placement, winners};
use contend_fit::fit::{MAX_BOOTSTRAP, MAX_FIT_ITERS};
use contend_fit::rig::load_rig;
use contend_fit::rig_fit::{RigOptions, calibrate_rig};
use contend_fit::rig_report::rig_markdown;
use contend_fit::{CalibStep, Checkpoint, Prediction};
use contend_fit::{
    CalibrateOptions, DEFAULT_SUBSET, FitOptions, NCCL_LOG_SUBSET, select, write_report,
};
use contend_sim::ModelParams;
use contend_topo::{Bytes, Topology};
use contend_workload::compare::DEFAULT_TIE_TOLERANCE;
use contend_workload::{Fidelity, Placement};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Measurement files: the hardware backend's JSON Lines (`.jsonl`), or any tool's output `contend import` reads
    /// (nccl-tests text or -J JSON, p2pBandwidthLatencyTest, nvbandwidth, p2pmark). A user's own nccl-tests log alone
    /// fits NCCL's twin: some sizes fitted, the rest held out.
    #[arg(required_unless_present = "public")]
    pub measurements: Vec<PathBuf>,
    /// A public rig's folder (`calibration/public/<rig>/`, with its
    /// figures.toml) to fit on its own figures, instead of measurement
    /// files; repeat for several rigs. Writes params.toml, report.md and
    /// report.json into each folder (or into `--out/<rig>`); files already
    /// there are overwritten only with --force.
    #[arg(long, conflicts_with_all = ["measurements", "topology"])]
    pub public: Vec<PathBuf>,
    /// Topology the measurements were taken on (a file or a shipped name).
    #[arg(long, required_unless_present = "public")]
    pub topology: Option<String>,
    /// Folder for params.toml and fit.json (with `--public`: for a folder per rig; default the rig's own).
    /// A folder that already holds them is refused unless --force.
    #[arg(long, required_unless_present = "public")]
    pub out: Option<PathBuf>,
    /// Overwrite the files of an earlier calibration in the output folder
    /// (params.toml, fit.json; with --public params.toml, report.md, report.json);
    /// and fit every constant asked for (or of the default set), pinned by the data or not, and write
    /// params.toml where a guard would refuse (a constant the data cannot pin, a fitted constant on a
    /// bound of its search range): each is a warning on standard error, in fit.json and in the report.
    #[arg(long)]
    pub force: bool,
    /// Starting constants (TOML); default: ModelParams' documented defaults.
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Constants to fit (repeat), each of which the data must pin (else refused unless --force);
    /// default: those of the default set the measurements pin, the others kept at their starting values.
    #[arg(long = "fit")]
    pub fit: Vec<String>,
    /// Nelder–Mead iterations of the main fit (1 to 100000).
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..=MAX_FIT_ITERS))]
    pub max_iters: u64,
    /// Bootstrap replicates for the uncertainty (0: none; at most 1000).
    #[arg(long, default_value_t = 24, value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_BOOTSTRAP as u64))]
    pub bootstrap: usize,
    /// Nelder–Mead iterations of each bootstrap refit (1 to 100000).
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=MAX_FIT_ITERS))]
    pub bootstrap_iters: u64,
    /// Held-out points re-simulated at TLP fidelity as a check (at most 1000).
    #[arg(long, default_value_t = 6, value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_TLP_CHECKS as u64))]
    pub tlp_checks: usize,
    /// Bootstrap seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// (Not with --public.)
    #[command(flatten)]
    pub stream: StreamArgs,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Calibration folder (holds fit.json from `contend calibrate`).
    pub dir: PathBuf,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum AdviseFormat {
    Table,
    Json,
    /// JSON Lines, a prediction per line as each completes (what --stream writes).
    Jsonl,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum PlacementArg {
    Peer,
    Host,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("written").args(["out", "plot"]).multiple(true)))]
pub struct AdviseArgs {
    /// Topology (a file or a shipped name); ranks are its first k GPUs for k = 2..=GPUs.
    #[arg(long)]
    pub topology: String,
    /// Model constants (e.g. a calibration's params.toml); default: ModelParams' defaults.
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Buffer placement.
    #[arg(long, value_enum, default_value_t = PlacementArg::Peer)]
    pub placement: PlacementArg,
    /// Smallest size.
    #[arg(long, default_value = "1KiB", value_parser = Bytes::parse_size)]
    pub from: Bytes,
    /// Largest size.
    #[arg(long, default_value = "64MiB", value_parser = Bytes::parse_size)]
    pub to: Bytes,
    /// Output format.
    #[arg(long, value_enum, default_value_t = AdviseFormat::Table)]
    pub format: AdviseFormat,
    /// Write the predictions in the form a consumer reads instead: nccl-tuner-csv, nccl-tuner-table,
    /// nccl-env, nccl-graph, vllm, sglang, flashinfer, trtllm, vidur.
    #[arg(long, value_parser = contend_advise::emit::EmitKind::parse)]
    pub emit: Option<contend_advise::emit::EmitKind>,
    /// Write the --emit output here (default: standard output); an existing file is refused unless --force.
    #[arg(long, requires = "emit")]
    pub out: Option<PathBuf>,
    /// Overwrite the --out or --plot file if it exists.
    #[arg(long, requires = "written")]
    pub force: bool,
    /// Also draw the advice as an SVG chart in FILE (when the run completes,
    /// besides the table or JSON): one panel per world size, stacked, each
    /// family's best time per allreduce over size (the legend names the
    /// algorithms that were its best), NCCL's replica thick and black, a
    /// dashed line labelled `64 KiB: one-shot → nccl` where one of the
    /// advice's ranges follows another. An existing FILE is refused unless
    /// --force.
    #[arg(long, value_name = "FILE.svg", conflicts_with = "emit")]
    pub plot: Option<PathBuf>,
    /// Predictions closer than this (percent) are a tie (default: from the
    /// fit's bootstrap when --params is a calibration's params.toml with its
    /// fit.json beside it, else 3 %, contend_workload::compare::DEFAULT_TIE_TOLERANCE).
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    pub tie_tolerance: Option<f64>,
    /// Also say what this engine can run here (vllm, sglang, flashinfer,
    /// trtllm, nccl): whether its custom allreduce runs on the box, its best
    /// choice per size and the loss of settling for it.
    #[arg(long, value_parser = contend_advise::engine_support::ServingEngine::parse)]
    pub engine: Option<contend_advise::engine_support::ServingEngine>,
    #[command(flatten)]
    pub stream: StreamArgs,
}

/// A percentage from 0 to 100, as a fraction.
fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a percentage"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("{v} % is outside 0..=100"));
    }
    Ok(v / 100.0)
}

/// The tie tolerance of `advise`: the flag's, else the bootstrap of the
/// calibration that wrote `params` (its fit.json beside it), else the default.
fn tie_tolerance(
    flag: Option<f64>,
    params_file: Option<&Path>,
    params: &ModelParams,
) -> Result<(Tolerance, String)> {
    if let Some(t) = flag {
        return Ok((Tolerance::Fixed(t), format!("fixed {t}")));
    }
    let fit_json = params_file
        .and_then(|p| p.parent())
        .map(|d| d.join("fit.json"));
    if let Some(fj) = fit_json.filter(|f| f.is_file()) {
        let text = contend_topo::bounded_read::read_text(&fj)?;
        let summary: contend_fit::FitSummary = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a calibration's fit.json", fj.display()))?;
        let (mut low, mut high) = (params.clone(), params.clone());
        let mut any = false;
        for c in &summary.constants {
            if let (Some(l), Some(h)) = (c.p05, c.p95) {
                let fp = select(std::slice::from_ref(&c.name))?;
                (fp[0].set)(&mut low, l);
                (fp[0].set)(&mut high, h);
                any = true;
            }
        }
        if any {
            return Ok((
                Tolerance::Bootstrap {
                    low: Box::new(low.clone()),
                    high: Box::new(high.clone()),
                },
                format!(
                    "bootstrap {} {}",
                    fingerprint(&low.to_toml()),
                    fingerprint(&high.to_toml())
                ),
            ));
        }
    }
    Ok((
        Tolerance::Fixed(DEFAULT_TIE_TOLERANCE),
        format!("fixed {DEFAULT_TIE_TOLERANCE}"),
    ))
}

fn topology(t: &str) -> Result<Topology> {
    Ok(contend_topo::shipped::resolve(t)?)
}

use crate::progress::stage_bar as progress_bar;

pub fn calibrate(a: CalibrateArgs) -> Result<()> {
    if !a.public.is_empty() {
        anyhow::ensure!(
            a.stream.stream.is_none() && a.stream.resume.is_none(),
            "--stream/--resume: a public rig's calibration is not streamed"
        );
        return calibrate_public(&a);
    }
    let (Some(topology_name), Some(out)) = (a.topology.as_deref(), a.out.as_ref()) else {
        anyhow::bail!("--topology and --out are needed with measurement files");
    };
    crate::overwrite::check_in(
        out,
        &["params.toml", "fit.json"],
        "--out a new folder",
        a.force,
    )?;
    let topo = topology(topology_name)?;
    let base = match &a.params {
        Some(p) => ModelParams::load(p)?,
        None => ModelParams::default(),
    };
    let names: Vec<String> = if a.fit.is_empty() {
        DEFAULT_SUBSET.iter().map(|s| s.to_string()).collect()
    } else {
        a.fit.clone()
    };
    let opts = CalibrateOptions {
        fit: FitOptions {
            max_iters: a.max_iters,
            bootstrap: a.bootstrap,
            bootstrap_iters: a.bootstrap_iters,
            seed: a.seed,
            fidelity: Fidelity::Flow,
        },
        params: select(&names)?,
        // a log-only fit: the constants asked for, else the log's own
        log_params: if a.fit.is_empty() {
            select(
                &NCCL_LOG_SUBSET
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>(),
            )?
        } else {
            select(&names)?
        },
        tlp_checks: a.tlp_checks,
        requested: !a.fit.is_empty(),
        force: a.force,
    };
    let files: Vec<&Path> = a.measurements.iter().map(|p| p.as_path()).collect();
    let mut inputs = vec![];
    for f in &files {
        let text = contend_topo::bounded_read::read_bytes(f)?;
        inputs.push(serde_json::json!([
            f.display().to_string(),
            fingerprint(&String::from_utf8_lossy(&text))
        ]));
    }
    let identity = serde_json::json!({
        "files": inputs,
        "topology": topology_name,
        "topology_fingerprint": fingerprint(&format!("{topo:?}")),
        "params_fingerprint": fingerprint(&base.to_toml()),
        "fit": names,
        "max_iters": a.max_iters,
        "bootstrap": a.bootstrap,
        "bootstrap_iters": a.bootstrap_iters,
        "tlp_checks": a.tlp_checks,
        "seed": a.seed,
    });
    let journal: std::sync::Arc<Journal<CalibStep>> =
        Journal::open("calibrate", identity, None, "steps", &a.stream, false)?;
    journal.on_signal(|_: &[CalibStep]| String::new());
    let sink = |s: &CalibStep| journal.record(s.clone());
    let checkpoint = Checkpoint::new(journal.resumed(), &sink);
    let (pb, cb) = progress_bar();
    let summary = contend_fit::calibrate::calibrate_resumable(
        &files,
        &topo,
        topology_name,
        &base,
        &opts,
        &cb,
        &checkpoint,
    );
    pb.finish_and_clear();
    let summary = summary?;
    journal.finish()?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let pp = out.join("params.toml");
    std::fs::write(
        &pp,
        format!(
            "# Fitted by `contend calibrate` on topology `{}` from {}.\n# The report: `contend report {}`.\n{}",
            topology_name,
            summary.files.join(", "),
            out.display(),
            summary.params_toml
        ),
    )
    .with_context(|| format!("writing {}", pp.display()))?;
    // The file must load as what `contend simulate --params` reads.
    ModelParams::load(&pp)?;
    let fp = out.join("fit.json");
    std::fs::write(&fp, serde_json::to_string_pretty(&summary)? + "\n")
        .with_context(|| format!("writing {}", fp.display()))?;

    println!(
        "fit: loss {:.4} -> {:.4} ({} iterations, {} simulations of the fit set, {} bootstrap refits)",
        summary.loss_default,
        summary.loss_fit,
        summary.iterations,
        summary.evaluations,
        summary.bootstrap
    );
    println!(
        "{:36} {:>12} {:>12} {:>26}",
        "constant", "default", "fitted", "bootstrap 5%..95%"
    );
    for c in summary
        .constants
        .iter()
        .chain(summary.local_efficiency.iter())
        .chain(summary.launch.iter())
    {
        let ci = match (c.p05, c.p95) {
            (Some(l), Some(h)) => format!("{l:.4}..{h:.4}"),
            _ => "-".into(),
        };
        println!(
            "{:36} {:>12.4} {:>12.4} {:>26}{}",
            c.name,
            c.default,
            c.value,
            ci,
            if c.at_bound { "  (at bound)" } else { "" }
        );
    }
    for p in &summary.pinning {
        if p.fitted && p.pinned {
            println!(
                "fitted {} from {} fit figure(s): {}",
                p.name,
                p.moves,
                p.figures.join(", ")
            );
        } else if p.fitted {
            println!("fitted anyway (--force) {}: {}", p.name, p.why);
        } else {
            println!(
                "kept {} at {}: {}; pinned by {}",
                p.name,
                fmt_start(p.start),
                p.why,
                p.pinned_by
            );
        }
    }
    let d = by_placement(&summary.points, Which::Default);
    let f = by_placement(&summary.points, Which::Fitted);
    println!("held-out absolute % error (median / p90 / max), allreduce + verify step:");
    for (pl, fs) in &f {
        let ds = d.get(pl).copied().unwrap_or_default();
        println!(
            "  {pl:5} n={:3}  default {:6.1} / {:6.1} / {:6.1}   fitted {:6.1} / {:6.1} / {:6.1}   target {}",
            fs.n,
            ds.median,
            ds.p90,
            ds.max,
            fs.median,
            fs.p90,
            fs.max,
            if fs.meets_target() { "met" } else { "NOT met" }
        );
    }
    let w = winners(&summary.points);
    println!("winner agreement: {}", contend_fit::eval::agreement(&w));
    for s in &summary.skipped {
        println!("not simulated: {s}");
    }
    // what the importers read and left out of other tools' output (text
    // inside a table, tests without a twin), each with its line
    for f in files
        .iter()
        .filter(|f| f.extension().is_none_or(|e| e != "jsonl"))
    {
        if let Ok(i) = contend_import::import::import_file(f) {
            for k in &i.skipped {
                println!("not read: {}:{}: {}: {}", i.file, k.line, k.what, k.why);
            }
        }
    }
    println!("wrote {} and {}", pp.display(), fp.display());
    // last, where they are seen: what a guard would have refused
    for w in &summary.warnings {
        eprintln!("warning: {w}");
    }
    Ok(())
}

/// A starting value as the constants table prints it, without trailing zeros.
fn fmt_start(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() { "0".into() } else { s.into() }
}

/// `contend calibrate --public DIR...`: each rig fitted on its own figures.
fn calibrate_public(a: &CalibrateArgs) -> Result<()> {
    let base = match &a.params {
        Some(p) => ModelParams::load(p)?,
        None => ModelParams::default(),
    };
    let free = if a.fit.is_empty() {
        None
    } else {
        Some(select(&a.fit)?)
    };
    let opts = RigOptions {
        fit: FitOptions {
            max_iters: a.max_iters,
            bootstrap: a.bootstrap,
            bootstrap_iters: a.bootstrap_iters,
            seed: a.seed,
            fidelity: Fidelity::Flow,
        },
        free,
        force: a.force,
    };
    let out_of = |dir: &PathBuf, rig: &str| match &a.out {
        Some(o) => o.join(rig),
        None => dir.clone(),
    };
    let rigs = a
        .public
        .iter()
        .map(|dir| load_rig(dir).map(|r| (dir, r)))
        .collect::<Result<Vec<_>, _>>()?;
    // refused before any rig is fitted
    for (dir, rig) in &rigs {
        let hint = if a.out.is_some() {
            "--out a new folder"
        } else {
            "--out DIR to write elsewhere (without it, the rig's own folder)"
        };
        crate::overwrite::check_in(
            &out_of(dir, rig.name()),
            &["params.toml", "report.md", "report.json"],
            hint,
            a.force,
        )?;
    }
    for (dir, rig) in rigs {
        let (pb, cb) = progress_bar();
        let summary = calibrate_rig(&rig, &base, &opts, &cb);
        pb.finish_and_clear();
        let summary = summary?;
        let out = out_of(dir, &summary.rig);
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        let mut command = format!("contend calibrate --public {}", dir.display());
        if let Some(p) = &a.params {
            command += &format!(" --params {}", p.display());
        }
        for f in &a.fit {
            command += &format!(" --fit {f}");
        }
        let pp = out.join("params.toml");
        std::fs::write(
            &pp,
            format!(
                "# Fitted by `{command}` on the rig's own figures ({}).\n# The report: report.md next to this file.\n{}",
                summary.figures_file, summary.params_toml
            ),
        )
        .with_context(|| format!("writing {}", pp.display()))?;
        // the file must load as what `contend simulate --params` reads
        ModelParams::load(&pp)?;
        let rp = out.join("report.md");
        std::fs::write(&rp, rig_markdown(&summary, &command))
            .with_context(|| format!("writing {}", rp.display()))?;
        let jp = out.join("report.json");
        std::fs::write(&jp, serde_json::to_string_pretty(&summary)? + "\n")
            .with_context(|| format!("writing {}", jp.display()))?;
        println!(
            "{}: {} fit figures, {} not expressible; error default median {:.1} % max {:.1} %, fitted median {:.1} % max {:.1} % ({} of {} within 15 %)",
            summary.rig,
            summary.results.len(),
            summary.skipped.len(),
            summary.default_errors.median_pct,
            summary.default_errors.max_pct,
            summary.fitted_errors.median_pct,
            summary.fitted_errors.max_pct,
            summary.fitted_errors.within,
            summary.fitted_errors.n
        );
        for c in &summary.constants {
            println!("  {:40} {:>10.4} -> {:>10.4}", c.name, c.default, c.value);
        }
        println!(
            "  wrote {}, {} and {}",
            pp.display(),
            rp.display(),
            jp.display()
        );
        for w in &summary.warnings {
            eprintln!("warning: {}: {w}", summary.rig);
        }
    }
    Ok(())
}

pub fn report(a: ReportArgs) -> Result<()> {
    let files = write_report(&a.dir)?;
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(())
}

pub fn advise(a: AdviseArgs) -> Result<()> {
    if let Some(out) = &a.out {
        crate::overwrite::check(out, "--out", a.force)?;
    }
    if let Some(p) = &a.plot {
        crate::overwrite::check_writable(p, "--plot", a.force)?;
    }
    let topo = topology(&a.topology)?;
    let params = match &a.params {
        Some(p) => ModelParams::load(p)?,
        None => ModelParams::default(),
    };
    // the one checked ladder, doubling: a bad bound names its flag
    let sizes: Vec<u64> = contend_workload::ladder(a.from, a.to, 2.0)
        .map_err(|e| anyhow::anyhow!("--{}: {e}", e.field))?
        .into_iter()
        .map(|b| b.0)
        .collect();
    let placement = match a.placement {
        PlacementArg::Peer => Placement::Peer,
        PlacementArg::Host => Placement::Host,
    };
    if let Some(kind) = a.emit {
        let label = a
            .params
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "defaults".into());
        let opts = contend_advise::emit::EmitOptions {
            kind,
            placement,
            sizes,
            stamp: contend_advise::emit::Stamp::new(&params, &label),
        };
        let (pb, cb) = progress_bar();
        let text = contend_advise::emit::emit(&topo, &params, &opts, &cb);
        pb.finish_and_clear();
        let text = text?;
        match &a.out {
            Some(out) => {
                std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
                eprintln!("wrote {kind} to {}", out.display());
            }
            None => print!("{text}"),
        }
        return Ok(());
    }
    if a.stream.stream.is_some() || a.stream.resume.is_some() {
        // checked before any work: --emit's predictions are not streamed
        anyhow::ensure!(
            a.emit.is_none(),
            "--stream/--resume stream the advice's predictions, not --emit's"
        );
    }
    let (tolerance, tolerance_id) = tie_tolerance(a.tie_tolerance, a.params.as_deref(), &params)?;
    let identity = serde_json::json!({
        "topology": topo.name,
        "topology_fingerprint": fingerprint(&format!("{topo:?}")),
        "params_fingerprint": fingerprint(&params.to_toml()),
        "placement": placement.name(),
        "sizes": sizes,
        "tolerance": tolerance_id,
    });
    let journal: std::sync::Arc<Journal<Prediction>> = Journal::open(
        "advise",
        identity,
        Some(contend_advise::advise::predictions(
            &topo, &sizes, &tolerance,
        )),
        "predictions",
        &a.stream,
        a.format == AdviseFormat::Jsonl,
    )?;
    let params_label = a.params.as_ref().map(|p| p.display().to_string());
    let render = {
        let (topo, sizes, format, label, tolerance, engine) = (
            topo.clone(),
            sizes.clone(),
            a.format,
            params_label.clone(),
            tolerance.clone(),
            a.engine,
        );
        move |done: &[Prediction]| {
            contend_advise::advise::advice_of(&topo, &tolerance, placement, &sizes, done)
                .ok()
                .and_then(|adv| {
                    advice_output(&topo, label.as_deref(), &tolerance, &adv, format, engine).ok()
                })
                .unwrap_or_default()
        }
    };
    journal.on_signal(render);
    let sink = |p: &Prediction| journal.record(p.clone());
    let checkpoint = Checkpoint::new(journal.resumed(), &sink);
    let (pb, cb) = progress_bar();
    let adv = contend_advise::advise::advise_resumable(
        &topo,
        &params,
        &tolerance,
        placement,
        &sizes,
        &cb,
        &checkpoint,
    );
    pb.finish_and_clear();
    let adv = adv?;
    journal.finish()?;
    print!(
        "{}",
        advice_output(
            &topo,
            params_label.as_deref(),
            &tolerance,
            &adv,
            a.format,
            a.engine,
        )?
    );
    if let Some(p) = &a.plot {
        contend_advise::latency_chart::Chart::of_advice(&topo.name, &adv).write(p)?;
        eprintln!("wrote the plot to {}", p.display());
    }
    Ok(())
}

fn advice_output(
    topo: &contend_topo::Topology,
    params: Option<&str>,
    tolerance: &Tolerance,
    adv: &[contend_advise::WorldAdvice],
    format: AdviseFormat,
    engine: Option<contend_advise::engine_support::ServingEngine>,
) -> Result<String> {
    use contend_advise::engine_support::{engine_advice, engine_section};
    Ok(match format {
        AdviseFormat::Table => {
            let mut t = advice_table(&topo.name, &tolerance.describe(adv), adv);
            if let Some(e) = engine {
                t.push_str(&engine_section(e, topo, adv));
            }
            t
        }
        AdviseFormat::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "topology": topo.name,
                "params": params,
                "tie_tolerance": tolerance.describe(adv),
                "advice": adv,
                "engine": engine.map(|e| adv
                    .iter()
                    .map(|w| engine_advice(e, topo, w))
                    .collect::<Vec<_>>()),
            }))? + "\n"
        }
        AdviseFormat::Jsonl => String::new(),
    })
}
