//! One case of the accuracy suite (`validation/<case>/case.toml`): a public
//! measurement of allreduce on a PCIe box, cited, with the scenario that
//! reproduces each measured series and the claims its source makes.
//! Parsed once into types that cannot be built invalid: every series names a
//! scenario that loads, an algorithm that exists, sizes of at least one byte
//! and times above zero; every crossover and claim names series of the case
//! and is true of the measured rows (a claim the table contradicts is a
//! transcription error, refused with its line).

use crate::error::ValidateError;
use contend_topo::{Bytes, Location};
use contend_workload::{Algorithm, Scenario, load_scenario};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The file a case folder holds.
pub const CASE_FILE: &str = "case.toml";

/// Which error statistic a series counts towards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// NCCL as NCCL runs (`nccl`).
    Nccl,
    /// A custom one-shot allreduce (push or pull).
    OneShot,
    /// Any other custom kernel (two-shot, copy-engine ring, ...).
    Custom,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Nccl => "nccl",
            Group::OneShot => "one-shot",
            Group::Custom => "custom",
        }
    }
    fn parse(s: &str) -> Option<Group> {
        [Group::Nccl, Group::OneShot, Group::Custom]
            .into_iter()
            .find(|g| g.name() == s)
    }
}

/// One measured row: bytes per rank and the time per call.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Row {
    pub size: Bytes,
    pub measured_us: f64,
}

/// One measured series and the scenario whose algorithm reproduces it.
#[derive(Debug)]
pub struct Series {
    pub name: String,
    pub group: Group,
    pub algorithm: Algorithm,
    /// The scenario file as written in the case (relative to the case folder).
    pub scenario_file: String,
    /// That scenario, loaded (its sizes are replaced by the rows' sizes when
    /// the case runs).
    pub scenario: Scenario,
    /// Sorted by size, one row per size.
    pub rows: Vec<Row>,
}

/// Where two series' times cross: `small` is faster below, `large` above.
#[derive(Clone, Debug)]
pub struct Crossover {
    pub small: usize,
    pub large: usize,
}

/// A claim the source makes: `faster` beats `slower` at every measured size
/// from `from` to `to` (both series measured there).
#[derive(Clone, Debug)]
pub struct Claim {
    pub text: String,
    pub faster: usize,
    pub slower: usize,
    pub from: Bytes,
    pub to: Bytes,
}

/// A case: its source, its series, crossovers and claims.
#[derive(Debug)]
pub struct Case {
    pub id: String,
    pub title: String,
    pub source: String,
    /// How an ambiguous source was read, one sentence each.
    pub readings: Vec<String>,
    pub dir: PathBuf,
    /// The model constants this case runs with (a rig's fitted params where
    /// the repository has that box's), else none: the defaults.
    pub params_file: Option<PathBuf>,
    pub series: Vec<Series>,
    pub crossovers: Vec<Crossover>,
    pub claims: Vec<Claim>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    id: String,
    title: String,
    source: String,
    #[serde(default)]
    readings: Vec<String>,
    params: Option<Spanned<String>>,
    #[serde(rename = "series")]
    series: Vec<Spanned<RawSeries>>,
    #[serde(default, rename = "crossover")]
    crossovers: Vec<Spanned<RawCrossover>>,
    #[serde(default, rename = "claim")]
    claims: Vec<Spanned<RawClaim>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSeries {
    name: Spanned<String>,
    group: Spanned<String>,
    scenario: Spanned<String>,
    algorithm: Spanned<String>,
    /// `[bytes, µs]` per row.
    rows: Vec<Spanned<(i64, f64)>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCrossover {
    small: Spanned<String>,
    large: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaim {
    text: String,
    faster: Spanned<String>,
    slower: Spanned<String>,
    from: Spanned<i64>,
    to: Option<Spanned<i64>>,
}

/// Reads every case folder of `root` (each sub-folder with a `case.toml`),
/// in name order.
pub fn load_suite(root: &Path) -> Result<Vec<Case>, ValidateError> {
    let entries = std::fs::read_dir(root).map_err(|e| ValidateError::Read {
        path: root.display().to_string(),
        message: e.to_string(),
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(CASE_FILE).is_file())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(ValidateError::Read {
            path: root.display().to_string(),
            message: format!("no case folder (a folder with a {CASE_FILE}) in it"),
        });
    }
    dirs.iter().map(|d| load_case(d)).collect()
}

/// Reads one case folder.
pub fn load_case(dir: &Path) -> Result<Case, ValidateError> {
    let path = dir.join(CASE_FILE);
    let file = path.display().to_string();
    let text = contend_topo::bounded_read::read_text(&path).map_err(|e| ValidateError::Read {
        path: file.clone(),
        message: e.reason(),
    })?;
    let raw: RawCase = toml::from_str(&text).map_err(|e| ValidateError::At {
        location: Location::of_toml_error(&file, &text, &e),
        message: e.message().to_string(),
    })?;
    let at = |span: std::ops::Range<usize>, field: &str| {
        Location::from_offset(&file, &text, span.start).with_field(field)
    };
    let err = |span: std::ops::Range<usize>, field: &str, message: String| ValidateError::At {
        location: at(span, field),
        message,
    };

    let params_file = match &raw.params {
        None => None,
        Some(p) => {
            let f = resolve(dir, p.get_ref()).ok_or_else(|| {
                err(
                    p.span(),
                    "params",
                    format!(
                        "params file `{}` not found in {} or a folder above it",
                        p.get_ref(),
                        dir.display()
                    ),
                )
            })?;
            Some(f)
        }
    };

    if raw.series.is_empty() {
        return Err(err(
            0..0,
            "series",
            "a case needs at least one [[series]]".into(),
        ));
    }
    let mut series: Vec<Series> = Vec::new();
    for s in &raw.series {
        let span = s.span();
        let s = s.get_ref();
        let name = s.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(err(
                s.name.span(),
                "series.name",
                "empty series name".into(),
            ));
        }
        if series.iter().any(|o| o.name == name) {
            return Err(err(
                s.name.span(),
                "series.name",
                format!("a second series named `{name}`"),
            ));
        }
        let group = Group::parse(s.group.get_ref()).ok_or_else(|| {
            err(
                s.group.span(),
                "series.group",
                format!(
                    "unknown group `{}` (nccl, one-shot, custom)",
                    s.group.get_ref()
                ),
            )
        })?;
        let algorithm: Algorithm = s
            .algorithm
            .get_ref()
            .parse()
            .map_err(|m| err(s.algorithm.span(), "series.algorithm", m))?;
        let scen_path = resolve(dir, s.scenario.get_ref()).ok_or_else(|| {
            err(
                s.scenario.span(),
                "series.scenario",
                format!(
                    "scenario file `{}` not found in {}",
                    s.scenario.get_ref(),
                    dir.display()
                ),
            )
        })?;
        let scenario = load_scenario(&scen_path, None).map_err(|e| {
            err(
                s.scenario.span(),
                "series.scenario",
                format!("scenario `{}`: {e}", s.scenario.get_ref()),
            )
        })?;
        if scenario.workload().dtype().is_none() {
            return Err(err(
                s.scenario.span(),
                "series.scenario",
                "the scenario runs transfers, not a collective".into(),
            ));
        }
        let mut rows: Vec<Row> = Vec::new();
        for r in &s.rows {
            let (size, us) = *r.get_ref();
            if size < 1 {
                return Err(err(
                    r.span(),
                    "series.rows",
                    format!("size {size} B: a row's size is at least one byte"),
                ));
            }
            if !(us.is_finite() && us > 0.0) {
                return Err(err(
                    r.span(),
                    "series.rows",
                    format!("time {us} µs: a measured time is finite and above zero"),
                ));
            }
            let size = Bytes(size as u64);
            if rows.iter().any(|o| o.size == size) {
                return Err(err(
                    r.span(),
                    "series.rows",
                    format!("size {} B measured twice", size.0),
                ));
            }
            rows.push(Row {
                size,
                measured_us: us,
            });
        }
        if rows.is_empty() {
            return Err(err(span, "series.rows", "a series needs rows".into()));
        }
        rows.sort_by_key(|r| r.size);
        series.push(Series {
            name,
            group,
            algorithm,
            scenario_file: s.scenario.get_ref().clone(),
            scenario,
            rows,
        });
    }

    let find = |n: &Spanned<String>, field: &str| -> Result<usize, ValidateError> {
        series
            .iter()
            .position(|s| s.name == n.get_ref().trim())
            .ok_or_else(|| {
                err(
                    n.span(),
                    field,
                    format!(
                        "no series named `{}` (series: {})",
                        n.get_ref(),
                        series
                            .iter()
                            .map(|s| s.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    };
    let mut crossovers = Vec::new();
    for c in &raw.crossovers {
        let c = c.get_ref();
        let small = find(&c.small, "crossover.small")?;
        let large = find(&c.large, "crossover.large")?;
        if small == large {
            return Err(err(
                c.large.span(),
                "crossover.large",
                "a crossover is between two different series".into(),
            ));
        }
        if crate::score::crossing(&measured_pairs(&series[small], &series[large])).is_none() {
            return Err(err(
                c.small.span(),
                "crossover.small",
                format!(
                    "the measured rows do not cross: `{}` is not faster below and `{}` above at the sizes both measured",
                    series[small].name, series[large].name
                ),
            ));
        }
        crossovers.push(Crossover { small, large });
    }
    let mut claims = Vec::new();
    for c in &raw.claims {
        let span = c.span();
        let c = c.get_ref();
        let faster = find(&c.faster, "claim.faster")?;
        let slower = find(&c.slower, "claim.slower")?;
        let from = *c.from.get_ref();
        let to = c.to.as_ref().map_or(i64::MAX, |t| *t.get_ref());
        if from < 1 || to < from {
            return Err(err(
                c.from.span(),
                "claim.from",
                format!("the claim's sizes {from}..{to} are not a range of at least one byte"),
            ));
        }
        let claim = Claim {
            text: c.text.clone(),
            faster,
            slower,
            from: Bytes(from as u64),
            to: Bytes(to as u64),
        };
        let pairs = claim_pairs(&claim, &series);
        if pairs.is_empty() {
            return Err(err(
                span,
                "claim",
                "no size in the claim's range where both series were measured".into(),
            ));
        }
        if let Some((s, f, w)) = pairs.iter().find(|(_, f, w)| f >= w) {
            return Err(err(
                span,
                "claim",
                format!(
                    "the measured rows contradict the claim at {} B: `{}` {f} µs, `{}` {w} µs",
                    s.0, series[faster].name, series[slower].name
                ),
            ));
        }
        claims.push(claim);
    }

    Ok(Case {
        id: raw.id,
        title: raw.title,
        source: raw.source,
        readings: raw.readings,
        dir: dir.to_path_buf(),
        params_file,
        series,
        crossovers,
        claims,
    })
}

/// `(size, a's µs, b's µs)` at every size both series measured.
pub(crate) fn measured_pairs(a: &Series, b: &Series) -> Vec<(Bytes, f64, f64)> {
    a.rows
        .iter()
        .filter_map(|ra| {
            b.rows
                .iter()
                .find(|rb| rb.size == ra.size)
                .map(|rb| (ra.size, ra.measured_us, rb.measured_us))
        })
        .collect()
}

/// The measured `(size, faster's µs, slower's µs)` in a claim's range.
fn claim_pairs(c: &Claim, series: &[Series]) -> Vec<(Bytes, f64, f64)> {
    measured_pairs(&series[c.faster], &series[c.slower])
        .into_iter()
        .filter(|(s, _, _)| *s >= c.from && *s <= c.to)
        .collect()
}

/// A path written in a case file: relative to the case folder or a folder
/// above it (the repository root).
fn resolve(dir: &Path, written: &str) -> Option<PathBuf> {
    contend_topo::relative_path::find_upwards(dir, written)
}
