//! A rig calibration's report for people (`report.md`): what was fitted
//! and why, every fit figure measured against its prediction with the
//! default and the fitted constants, and every figure the model did not
//! take, with the reason. `report.json` ([`RigSummary`]) has the same for
//! scripts.

use crate::rig_fit::{ErrorStats, RigSummary, TOLERANCE_PCT};
use std::fmt::Write;

fn num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn stats(s: &ErrorStats) -> String {
    format!(
        "median {:.1} %, max {:.1} %, {} of {} within {TOLERANCE_PCT:.0} %",
        s.median_pct, s.max_pct, s.within, s.n
    )
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The Markdown report; `command` is the command line that made it.
pub fn rig_markdown(s: &RigSummary, command: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Rig calibration: {}\n", s.rig);
    let _ = writeln!(
        o,
        "Written by `{command}` from `{}` on {}. Every number below is the model's, \
         at {} fidelity; the figures' sources are in the figures file.\n",
        s.figures_file,
        s.topologies
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", "),
        s.fidelity
    );
    crate::report::forced_warnings(&mut o, &s.warnings);
    let _ = writeln!(o, "## Summary\n");
    let _ = writeln!(
        o,
        "- figures: {} ({} with `fit = true`, {} with `fit = false`)",
        s.figures, s.fit_figures, s.not_fit
    );
    let _ = writeln!(
        o,
        "- fit figures the model reproduces: {}; not expressible: {}; without a topology: {}",
        s.results.len(),
        s.skipped.len(),
        s.no_topology
    );
    let _ = writeln!(o, "- default constants: {}", stats(&s.default_errors));
    let _ = writeln!(o, "- fitted constants: {}", stats(&s.fitted_errors));
    let _ = writeln!(
        o,
        "- loss (mean squared log ratio, each of a family's n figures weighing 1/√n): {:.5} at the start, {:.5} fitted; {} Nelder–Mead iterations, {} simulations of the fit set, {} bootstrap refits\n",
        s.loss_default, s.loss_fit, s.iterations, s.evaluations, s.bootstrap
    );
    let _ = writeln!(o, "## Constants\n");
    let _ = writeln!(
        o,
        "| constant | default | fitted | bootstrap 5 %..95 % | search range |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---|");
    for c in &s.constants {
        let ci = match (c.p05, c.p95) {
            (Some(a), Some(b)) => format!("{}..{}", num(a), num(b)),
            _ => "-".into(),
        };
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {ci} | {}..{}{} |",
            c.name,
            num(c.default),
            num(c.value),
            num(c.lo_bound),
            num(c.hi_bound),
            if c.at_bound { " (fit at a bound)" } else { "" }
        );
    }
    let _ = writeln!(
        o,
        "\nAn unset cap's default is written as the top of its range. Which candidates \
         the rule made free (`crates/contend-fit/src/rig_fit.rs`):\n"
    );
    let _ = writeln!(o, "| candidate | free | why |");
    let _ = writeln!(o, "|---|---|---|");
    for c in &s.choices {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} |",
            c.name,
            if c.free { "yes" } else { "no" },
            cell(&c.why)
        );
    }
    let _ = writeln!(o, "\n## Figures\n");
    let _ = writeln!(
        o,
        "Error = predicted / measured − 1. Family: the group a figure's fit weight is shared in.\n"
    );
    let _ = writeln!(
        o,
        "| figure | what | unit | measured | default | error | fitted | error | family |"
    );
    let _ = writeln!(o, "|---|---|---|---:|---:|---:|---:|---:|---|");
    for r in &s.results {
        let flag = if r.fitted_error_pct.abs() > TOLERANCE_PCT {
            " **!**"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {:+.1} % | {} | {:+.1} %{flag} | {} |",
            r.id,
            cell(&r.what),
            r.unit,
            num(r.measured),
            num(r.default),
            r.default_error_pct,
            num(r.fitted),
            r.fitted_error_pct,
            r.family
        );
    }
    let assumed: Vec<&crate::rig_fit::FigureResult> =
        s.results.iter().filter(|r| !r.assumed.is_empty()).collect();
    if !assumed.is_empty() {
        let _ = writeln!(
            o,
            "\nAssumptions of the twins beyond the figures' fields:\n"
        );
        for r in assumed {
            let _ = writeln!(o, "- `{}`: {}", r.id, r.assumed.join("; "));
        }
    }
    let _ = writeln!(
        o,
        "\n## Fit figures the model cannot express ({})\n",
        s.skipped.len()
    );
    if s.skipped.is_empty() {
        let _ = writeln!(o, "None.");
    }
    for k in &s.skipped {
        let _ = writeln!(o, "- `{}`: {}", k.id, k.reason);
    }
    o
}
