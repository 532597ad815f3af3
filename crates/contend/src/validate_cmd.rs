//! `contend validate`: the accuracy suite (`validation/`), every row's
//! measured and predicted time, each group's median and p90 |error|, the
//! crossovers and the sources' claims, as a table or JSON.

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use contend_sim::ModelParams;
use contend_validate::{CaseResult, Group, ParamsChoice, SuiteResult, load_suite, run_suite};
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// The suite: a folder of case folders, each with a case.toml (default: `validation/` of the repository)
    dir: Option<PathBuf>,
    /// Only this case (its id, e.g. K2); repeatable
    #[arg(long = "case")]
    cases: Vec<String>,
    /// Model constants for every case, in place of each case's own (a public rig's fitted params, else the defaults)
    #[arg(long, conflicts_with = "default_params")]
    params: Option<PathBuf>,
    /// The model's default constants for every case
    #[arg(long)]
    default_params: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = ValidateFormat::Table)]
    format: ValidateFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
enum ValidateFormat {
    Table,
    Json,
}

pub fn run(a: ValidateArgs) -> Result<()> {
    let dir = match a.dir {
        Some(d) => d,
        None => {
            let d = PathBuf::from("validation");
            if !d.is_dir() {
                bail!(
                    "no `validation/` folder here: run from the repository root, or name the suite's folder"
                );
            }
            d
        }
    };
    let mut cases = load_suite(&dir)?;
    if !a.cases.is_empty() {
        for want in &a.cases {
            if !cases.iter().any(|c| c.id.eq_ignore_ascii_case(want)) {
                bail!(
                    "--case {want}: no such case in {} (cases: {})",
                    dir.display(),
                    cases
                        .iter()
                        .map(|c| c.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        cases.retain(|c| a.cases.iter().any(|w| c.id.eq_ignore_ascii_case(w)));
    }
    let choice = match (&a.params, a.default_params) {
        (Some(p), _) => ParamsChoice::These(Box::new(
            ModelParams::load(p).with_context(|| format!("--params {}", p.display()))?,
        )),
        (None, true) => ParamsChoice::Defaults,
        (None, false) => ParamsChoice::CaseOwn,
    };
    let result = run_suite(&cases, &choice)?;
    match a.format {
        ValidateFormat::Json => println!("{}", serde_json::to_string_pretty(&result)?),
        ValidateFormat::Table => print!("{}", table(&result)),
    }
    Ok(())
}

fn size(b: f64) -> String {
    let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (u, n) in units {
        if b >= u as f64 {
            let v = b / u as f64;
            return if (v - v.round()).abs() < 0.005 {
                format!("{} {n}", v.round())
            } else {
                format!("{v:.1} {n}")
            };
        }
    }
    format!("{} B", b.round())
}

fn case_table(out: &mut String, c: &CaseResult) {
    let _ = writeln!(out, "{}: {}", c.id, c.title);
    let _ = writeln!(out, "  source: {}", c.source);
    let _ = writeln!(
        out,
        "  params: {}",
        c.params.as_deref().unwrap_or("the model's defaults")
    );
    let _ = writeln!(
        out,
        "  {:<20} {:>10} {:>12} {:>12} {:>8}",
        "series", "size", "measured µs", "predicted µs", "error"
    );
    for r in &c.rows {
        let _ = writeln!(
            out,
            "  {:<20} {:>10} {:>12.1} {:>12.1} {:>+7.0}%",
            r.series,
            size(r.size_bytes as f64),
            r.measured_us,
            r.predicted_us,
            r.error_pct
        );
    }
    for x in &c.crossovers {
        let pred = match (x.predicted_bytes, &x.predicted_note) {
            (Some(p), _) => format!(
                "predicted {} ({:.2}x)",
                size(p),
                x.ratio.unwrap_or(f64::NAN)
            ),
            (None, Some(n)) => format!("predicted: none ({n})"),
            (None, None) => "predicted: none".into(),
        };
        let _ = writeln!(
            out,
            "  crossover {} -> {}: measured {}, {pred}",
            x.small,
            x.large,
            size(x.measured_bytes)
        );
    }
    for k in &c.claims {
        let verdict = if k.holds {
            "holds".to_string()
        } else {
            format!(
                "FAILS at {}",
                k.contradicted_at
                    .iter()
                    .map(|s| size(*s as f64))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let _ = writeln!(out, "  claim \"{}\": {verdict}", k.text);
    }
    out.push('\n');
}

fn table(r: &SuiteResult) -> String {
    let mut out = String::new();
    for c in &r.cases {
        case_table(&mut out, c);
    }
    let _ = writeln!(
        out,
        "{:<10} {:>5} {:>12} {:>9} {:>9} {:>14}",
        "group", "rows", "median |err|", "p90 |err|", "max |err|", "median signed"
    );
    for g in [Group::Nccl, Group::OneShot, Group::Custom] {
        let s = r.group(g);
        if s.rows == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "{:<10} {:>5} {:>11.0}% {:>8.0}% {:>8.0}% {:>+13.0}%",
            g.name(),
            s.rows,
            s.median_abs_pct,
            s.p90_abs_pct,
            s.max_abs_pct,
            s.median_signed_pct
        );
    }
    out
}
