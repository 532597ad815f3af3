//! `report.md` and its SVG charts from a calibration folder's `fit.json`:
//! held-out errors (default and fitted constants), winner agreement, the
//! verdict, the fitted constants with their uncertainty, the machine
//! fingerprint, and measured vs predicted latency over size per algorithm
//! and placement (the charts drawn by `report_charts.rs`).

use crate::calibrate::{FitSummary, PointResult};
use crate::eval::{
    ErrStats, Which, by_algorithm, by_placement, held_out, ranges, residuals, winners,
};
use crate::report_charts::{error_chart, latency_chart, probe_chart, series};
use contend_import::CalibError;
use contend_import::measure::{Kind, Role};
use contend_topo::Bytes;
use contend_workload::compare::DEFAULT_TIE_TOLERANCE;
use contend_workload::{LaunchMode, Placement};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Reads `DIR/fit.json`.
pub fn load_summary(dir: &Path) -> Result<FitSummary, CalibError> {
    let p = dir.join("fit.json");
    let text = contend_topo::bounded_read::read_text(&p).map_err(CalibError::Read)?;
    parse_summary(&p.display().to_string(), &text)
}

/// Parses a `fit.json` (`file` names it in errors) and checks every number
/// the report computes with. A bad file (cut short, hand-edited, a value of
/// the wrong type or out of range) is an error naming the file, the line
/// and column where serde can tell, and the field.
pub fn parse_summary(file: &str, text: &str) -> Result<FitSummary, CalibError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let s: FitSummary = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.to_string();
        // serde_json appends " at line L column C": the location says it
        let message = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(m, _)| m)
            .to_string();
        let field = if path.is_empty() || path == "." {
            contend_topo::named_field(&message)
        } else {
            Some(path)
        };
        CalibError::At {
            location: contend_topo::Location {
                file: file.to_string(),
                line: inner.line(),
                column: inner.column(),
                field,
            },
            message: if inner.is_eof() {
                format!("not a fit summary: the file is cut short ({message})")
            } else {
                format!("not a fit summary: {message}")
            },
        }
    })?;
    s.check().map_err(|(field, message)| CalibError::At {
        location: contend_topo::Location {
            file: file.to_string(),
            line: 0,
            column: 0,
            field: Some(field),
        },
        message,
    })?;
    Ok(s)
}

fn us(ns: f64) -> String {
    let u = ns / 1000.0;
    if u >= 100.0 {
        format!("{u:.0} µs")
    } else {
        format!("{u:.1} µs")
    }
}

fn stats_cells(s: Option<&ErrStats>) -> String {
    match s {
        Some(s) if s.n > 0 => format!("{:.1} | {:.1} | {:.1}", s.median, s.p90, s.max),
        _ => "- | - | -".into(),
    }
}

fn fmt_value(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// Writes `DIR/report.md` and its charts; returns the files written.
pub fn write_report(dir: &Path) -> Result<Vec<PathBuf>, CalibError> {
    let s = load_summary(dir)?;
    let mut written = vec![];
    let placements: BTreeSet<Placement> = held_out(&s.points)
        .filter_map(|p| p.collective().map(|c| c.2))
        .collect();
    for pl in &placements {
        let ser = series(&s.points, *pl);
        let lp = dir.join(format!("latency-{pl}.svg"));
        latency_chart(
            &lp,
            &format!("Allreduce (bf16), {pl} placement: measured vs predicted"),
            &ser,
        )?;
        written.push(lp);
        let ep = dir.join(format!("error-{pl}.svg"));
        error_chart(
            &ep,
            &format!("Held-out error per point, {pl} placement (lines at 10 % and 25 %)"),
            &ser,
        )?;
        written.push(ep);
    }
    let pp = dir.join("probes.svg");
    probe_chart(&pp, &s.points)?;
    written.push(pp);

    // A hand-written diagnosis (`notes.md` beside fit.json) goes right after
    // the headline numbers.
    let notes = contend_topo::bounded_read::read_text(&dir.join("notes.md")).ok();
    let md = render_markdown(&s, &placements, notes.as_deref());
    let rp = dir.join("report.md");
    std::fs::write(&rp, md).map_err(|e| CalibError::io(&rp, e))?;
    written.push(rp);
    Ok(written)
}

/// The Markdown text of the report (charts referenced by relative path).
pub fn render_markdown(
    s: &FitSummary,
    placements: &BTreeSet<Placement>,
    notes: Option<&str>,
) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Calibration report: {}\n", s.topology_name);
    let _ = writeln!(
        o,
        "Generated by `contend report` from `fit.json` (written by `contend calibrate`). Topology file: `{}`. Measurements: {}.\n",
        s.topology_file,
        s.files
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        o,
        "The fit used only the microbenchmarks (`contend hw probe` transfers); every allreduce and verify-step measurement below is held out: predicted, never fitted on. Predictions at {} fidelity.\n",
        s.fidelity
    );

    forced_warnings(&mut o, &s.warnings);

    // Headline.
    let d = by_placement(&s.points, Which::Default);
    let f = by_placement(&s.points, Which::Fitted);
    o.push_str("## Held-out error (allreduce and verify step)\n\n");
    o.push_str("Absolute percent error of the predicted time per allreduce (per verify step for verify steps). Target: median ≤ 10 %, p90 ≤ 25 % per placement.\n\n");
    o.push_str("| placement | points | default: median | p90 | max | fitted: median | p90 | max | target met (fitted) |\n|---|---|---|---|---|---|---|---|---|\n");
    for pl in placements {
        let fs = f.get(pl);
        let _ = writeln!(
            o,
            "| {pl} | {} | {} | {} | {} |",
            fs.map_or(0, |x| x.n),
            stats_cells(d.get(pl)),
            stats_cells(fs),
            if fs.is_some_and(|x| x.meets_target()) {
                "yes"
            } else {
                "**no**"
            }
        );
    }
    o.push('\n');

    if let Some(n) = notes {
        o.push_str("## Diagnosis (notes.md)\n\n");
        o.push_str(n.trim_end());
        o.push_str("\n\n");
    }

    // Verdict.
    let w = winners(&s.points);
    o.push_str("## Verdict: which algorithm to use up to which size on this machine\n\n");
    o.push_str("From the measurements (bf16 allreduce, eager launches; NCCL included where measured: with P2P for `peer`, with `NCCL_P2P_DISABLE=1` for `host`).\n\n");
    for pl in placements {
        let rows: Vec<(u64, String)> = w
            .iter()
            .filter(|r| {
                r.workload == "allreduce" && r.placement == *pl && r.launch == LaunchMode::Eager
            })
            .map(|r| (r.size, r.hw.clone()))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(o, "- **{pl}**:");
        for (a, b, alg) in ranges(&rows) {
            let _ = writeln!(o, "  - {} – {}: `{alg}`", Bytes(a), Bytes(b));
        }
        let model: Vec<(u64, String)> = w
            .iter()
            .filter(|r| {
                r.workload == "allreduce" && r.placement == *pl && r.launch == LaunchMode::Eager
            })
            .filter_map(|r| r.fitted.clone().map(|a| (r.size, a)))
            .collect();
        let _ = writeln!(
            o,
            "  - the fitted model says: {}",
            ranges(&model)
                .iter()
                .map(|(a, b, alg)| format!("{}–{} `{alg}`", Bytes(*a), Bytes(*b)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for r in w.iter().filter(|r| r.workload == "verify-step") {
        let _ = writeln!(
            o,
            "- verify step ({}, {}): fastest measured `{}` ({}); fitted model picks `{}`",
            r.placement,
            r.launch,
            r.hw,
            us(r.hw_ns),
            r.fitted.as_deref().unwrap_or("-")
        );
    }
    o.push('\n');

    // Winner agreement.
    o.push_str("## Winner agreement\n\n");
    let ag = crate::eval::agreement(&w);
    let _ = writeln!(
        o,
        "The model picks the hardware's winner at {}/{n} (default constants) and {}/{n} (fitted) of the (workload, placement, size, launch) cells; counting ties, {}/{n} and {}/{n}: a cell agrees when the hardware's winner is within {:.1} % of the model's fastest, or the model's pick within {:.1} % of the hardware's fastest (`advise` says \"tie\" there). The margin column is how much slower the hardware's runner-up was: a small margin makes a miss cheap.\n",
        ag.default,
        ag.fitted,
        ag.default_with_ties,
        ag.fitted_with_ties,
        DEFAULT_TIE_TOLERANCE * 100.0,
        DEFAULT_TIE_TOLERANCE * 100.0,
        n = ag.cells
    );
    o.push_str("| workload | placement | size | launch | hardware winner | margin % | default picks | fitted picks |\n|---|---|---|---|---|---|---|---|\n");
    for r in &w {
        let mark = |m: &Option<String>, which: Which| match m {
            Some(a) if *a == r.hw => format!("{a} ✓"),
            Some(a) if r.agrees_with_ties(which) => format!("{a} (tie)"),
            Some(a) => format!("{a} ✗"),
            None => "-".into(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {:.1} | {} | {} |",
            r.workload,
            r.placement,
            Bytes(r.size),
            r.launch,
            r.hw,
            r.hw_margin_pct,
            mark(&r.default, Which::Default),
            mark(&r.fitted, Which::Fitted)
        );
    }
    o.push('\n');

    // Charts.
    o.push_str("## Measured vs predicted\n\n");
    for pl in placements {
        let _ = writeln!(
            o,
            "![latency, {pl}](latency-{pl}.svg)\n\nDots: measured; bold lines: fitted model; faint lines: default constants.\n\n![error, {pl}](error-{pl}.svg)\n"
        );
    }

    // Per algorithm.
    o.push_str("## Held-out error per algorithm\n\n| workload | algorithm | placement | points | default: median | p90 | max | fitted: median | p90 | max |\n|---|---|---|---|---|---|---|---|---|---|\n");
    let da = by_algorithm(&s.points, Which::Default);
    for ((wl, a, pl), fs) in by_algorithm(&s.points, Which::Fitted) {
        let ds = da.get(&(wl.clone(), a.clone(), pl));
        let _ = writeln!(
            o,
            "| {wl} | {a} | {pl} | {} | {} | {} |",
            fs.n,
            stats_cells(ds),
            stats_cells(Some(&fs))
        );
    }
    o.push('\n');

    // Residual pattern.
    o.push_str("## Residuals over size (fitted constants, bf16 allreduce)\n\nSigned error, percent: positive means the model is too slow. A pattern that grows with size points at a bandwidth mechanism, one that shrinks at a fixed cost.\n\n");
    let res = residuals(&s.points, Which::Fitted);
    let sizes: BTreeSet<u64> = res.values().flatten().map(|x| x.0).collect();
    let _ = write!(o, "| placement | algorithm |");
    for z in &sizes {
        let _ = write!(o, " {} |", Bytes(*z).to_string().replace(' ', ""));
    }
    o.push_str("\n|---|---|");
    for _ in &sizes {
        o.push_str("---|");
    }
    o.push('\n');
    for ((pl, a), v) in &res {
        let _ = write!(o, "| {pl} | {a} |");
        for z in &sizes {
            match v.iter().find(|x| x.0 == *z) {
                Some((_, e)) => {
                    let _ = write!(o, " {e:+.0} |");
                }
                None => o.push_str(" |"),
            }
        }
        o.push('\n');
    }
    o.push('\n');

    // Constants.
    o.push_str("## Fitted constants\n\nUncertainty: 5th–95th percentile over bootstrap refits (points resampled with replacement). A wide interval means the microbenchmarks do not pin the constant down (several constants trade off against each other).\n\n| constant | default | fitted | bootstrap 5 % – 95 % | note |\n|---|---|---|---|---|\n");
    for c in s
        .constants
        .iter()
        .chain(s.local_efficiency.iter())
        .chain(s.launch.iter())
    {
        let ci = match (c.p05, c.p95) {
            (Some(a), Some(b)) => format!("{} – {}", fmt_value(a), fmt_value(b)),
            _ => "-".into(),
        };
        let note = if c.name == "gpu.local_efficiency" {
            "closed form from local-memory SM loads"
        } else if s.launch.iter().any(|l| l.name == c.name) {
            "closed form: median per launch of the launch probe"
        } else if c.at_bound {
            "at a search bound"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {ci} | {note} |",
            c.name,
            fmt_value(c.default),
            fmt_value(c.value)
        );
    }
    let _ = writeln!(
        o,
        "\nLoss (weighted mean squared log ratio on the fit set): {:.4} with the default constants, {:.4} fitted ({} Nelder–Mead iterations, {} simulations of the fit set, {} bootstrap refits). `gpu.launch_graph_ns` is not fitted: no microbenchmark runs a CUDA graph.\n",
        s.loss_default, s.loss_fit, s.iterations, s.evaluations, s.bootstrap
    );

    if !s.pinning.is_empty() {
        let _ = writeln!(
            o,
            "## What the data pins

A constant is fitted when moving it across the middle of its search range moves a fit figure by more than {:.0} %, in a way the constants fitted before it do not (so no more constants are fitted than the figures have independent values); the others keep their starting values (the defaults, or `--params`).

| constant | fitted | from the fit figures | why | pinned by |\n|---|---|---|---|---|",
            crate::fit::pin::PINNED * 100.0
        );
        for p in &s.pinning {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} |",
                p.name,
                if p.fitted && p.pinned {
                    "yes".to_string()
                } else if p.fitted {
                    "yes, not pinned (--force)".to_string()
                } else {
                    format!("no: kept at {}", fmt_value(p.start))
                },
                if p.figures.is_empty() {
                    "-".to_string()
                } else {
                    p.figures.join(", ")
                },
                p.why.replace('|', "\\|"),
                p.pinned_by.replace('|', "\\|")
            );
        }
        o.push('\n');
    }

    // Probe fit.
    o.push_str("## Fit set: microbenchmarks\n\n![probes](probes.svg)\n\n| probe | measured | default | fitted | fitted error % |\n|---|---|---|---|---|\n");
    for p in s.points.iter().filter(|p| p.role == Role::Fit) {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            p.label,
            us(p.measured_ns),
            p.default_ns.map_or("-".into(), us),
            p.fitted_ns.map_or("-".into(), us),
            p.fitted_ns.map_or("-".into(), |v| format!(
                "{:+.1}",
                100.0 * (v - p.measured_ns) / p.measured_ns
            ))
        );
    }
    o.push('\n');
    if !s.skipped.is_empty() {
        o.push_str("Not simulated (the model cannot express them):\n\n");
        for k in &s.skipped {
            let _ = writeln!(o, "- {k}");
        }
        o.push('\n');
    }
    let local: Vec<&PointResult> = s
        .points
        .iter()
        .filter(|p| matches!(p.kind, Kind::Local { .. }))
        .collect();
    if !local.is_empty() {
        let _ = writeln!(
            o,
            "{} local-memory probes (a GPU loading or storing its own memory) feed `gpu.local_efficiency` in closed form.\n",
            local.len()
        );
    }

    // TLP.
    if !s.tlp_checks.is_empty() {
        o.push_str("## Flow vs TLP fidelity (fitted constants)\n\n| point | flow | tlp | difference % |\n|---|---|---|---|\n");
        for t in &s.tlp_checks {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {:+.1} |",
                t.label,
                us(t.flow_ns),
                us(t.tlp_ns),
                100.0 * (t.flow_ns - t.tlp_ns) / t.tlp_ns
            );
        }
        o.push('\n');
    }

    // Machine.
    o.push_str("## Machine fingerprint\n\n");
    match &s.machine {
        Some(m) => {
            let _ = writeln!(
                o,
                "| field | value |\n|---|---|\n| host | {} |\n| GPUs | {} |\n| PCI | {} |\n| driver / CUDA | {} / {} |\n| GPU links | {} |\n| PCIe | {} |\n",
                m.hostname,
                m.gpus.join(", "),
                m.pci_addresses.join(", "),
                m.driver,
                m.cuda,
                m.link_matrix
                    .iter()
                    .map(|r| r.join(" "))
                    .collect::<Vec<_>>()
                    .join(" / "),
                m.pcie_links.join(", ")
            );
        }
        None => o.push_str("No fingerprint in the measurements.\n\n"),
    }
    o.push_str("## Twins\n\nEach measurement is paired with a simulated twin on the same topology, ranks, placement, algorithm, size, kernel shape (the blocks the backend actually launched) and launch mode. SM probes add one `gpu.launch_eager_ns` to the simulated transfer (the simulator's transfer streams model no launch; the hardware's per-op time holds one). Host-to-device copies are twinned by device-to-host copies (the simulator's copy engine only pushes). NCCL is twinned by the faster of the model's ring protocols (LL, Simple).\n");
    o
}

/// The section a report opens with when `--force` wrote what a guard
/// refuses: each warning, its first line a bullet and the rest under it
/// (nothing when there are none). Calibration and rig reports alike.
pub(crate) fn forced_warnings(o: &mut String, warnings: &[String]) {
    if warnings.is_empty() {
        return;
    }
    o.push_str(
        "## Warnings: written with --force\n\nA guard refuses these; `--force` wrote the constants anyway. What they say is not the box's.\n\n",
    );
    for w in warnings {
        let mut lines = w.lines();
        let _ = writeln!(o, "- {}", lines.next().unwrap_or(""));
        for l in lines {
            let _ = writeln!(o, "  - {}", l.trim());
        }
    }
    o.push('\n');
}
