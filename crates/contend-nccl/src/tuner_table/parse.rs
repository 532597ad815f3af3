//! Reading a table file: the TOML as written (`Raw*`, every value with
//! its span), then each value through the builders the emitter uses, an
//! error naming the file, line, column and field of the first that breaks
//! a rule.

use super::*;
use toml::Spanned;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    format: Spanned<String>,
    stamp: Spanned<String>,
    topology: Spanned<String>,
    nccl: Spanned<String>,
    #[serde(default)]
    comm: Vec<Spanned<RawComm>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawComm {
    ranks: Spanned<usize>,
    nodes: Spanned<usize>,
    note: Option<Spanned<String>>,
    #[serde(default)]
    base_latency: Vec<Spanned<RawBase>>,
    #[serde(default)]
    range: Vec<Spanned<RawRange>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBase {
    algorithm: Spanned<String>,
    protocol: Spanned<String>,
    us: Spanned<f64>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRange {
    collective: Spanned<String>,
    min_bytes: Spanned<u64>,
    max_bytes: Spanned<u64>,
    cost: Vec<Spanned<RawCost>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCost {
    algorithm: Spanned<String>,
    protocol: Spanned<String>,
    us: Spanned<[f64; 2]>,
    channels: Spanned<u32>,
}

struct Cx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Cx<'_> {
    fn at<T>(&self, s: &Spanned<T>, field: &str, message: impl Into<String>) -> TableError {
        TableError {
            location: Location::from_offset(self.file, self.text, s.span().start).with_field(field),
            message: message.into(),
        }
    }
    /// A builder's problem, at the span of the field it names, else at `whole`.
    fn problem<W>(&self, whole: &Spanned<W>, spans: &[(&str, usize)], p: Problem) -> TableError {
        let at = spans
            .iter()
            .find(|(f, _)| *f == p.field)
            .map(|x| x.1)
            .unwrap_or(whole.span().start);
        TableError {
            location: Location::from_offset(self.file, self.text, at).with_field(p.field),
            message: p.message,
        }
    }
    fn algorithm(&self, s: &Spanned<String>) -> Result<Algorithm, TableError> {
        Algorithm::from_log_name(s.get_ref()).ok_or_else(|| {
            self.at(
                s,
                "algorithm",
                format!(
                    "unknown algorithm `{}` (one of: {})",
                    s.get_ref(),
                    Algorithm::ALL.map(algorithm_name).join(", ")
                ),
            )
        })
    }
    fn protocol(&self, s: &Spanned<String>) -> Result<Protocol, TableError> {
        Protocol::from_log_name(s.get_ref()).ok_or_else(|| {
            self.at(
                s,
                "protocol",
                format!(
                    "unknown protocol `{}` (one of: ll, ll128, simple)",
                    s.get_ref()
                ),
            )
        })
    }
}

/// Reads a table; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<TunerTable, TableError> {
    let raw: RawTable = toml::from_str(text).map_err(|e| TableError {
        location: Location::of_toml_error(file, text, &e),
        message: e.message().to_string(),
    })?;
    let cx = Cx { file, text };
    if raw.format.get_ref() != FORMAT {
        return Err(cx.at(
            &raw.format,
            "format",
            format!(
                "`{}` is not `{FORMAT}`, the format this build reads",
                raw.format.get_ref()
            ),
        ));
    }
    let mut t = TunerTable::new(
        raw.stamp.get_ref(),
        raw.topology.get_ref(),
        raw.nccl.get_ref(),
    )
    .map_err(|p| {
        cx.problem(
            &raw.stamp,
            &[
                ("stamp", raw.stamp.span().start),
                ("topology", raw.topology.span().start),
                ("nccl", raw.nccl.span().start),
            ],
            p,
        )
    })?;
    for c in &raw.comm {
        let rc = c.get_ref();
        let mut comm = CommTable::new(
            *rc.ranks.get_ref(),
            *rc.nodes.get_ref(),
            rc.note.as_ref().map(|n| n.get_ref().clone()),
        )
        .map_err(|p| {
            let mut spans = vec![
                ("ranks", rc.ranks.span().start),
                ("nodes", rc.nodes.span().start),
            ];
            if let Some(n) = &rc.note {
                spans.push(("note", n.span().start));
            }
            cx.problem(c, &spans, p)
        })?;
        for b in &rc.base_latency {
            let rb = b.get_ref();
            let v = BaseLatency::new(
                cx.algorithm(&rb.algorithm)?,
                cx.protocol(&rb.protocol)?,
                *rb.us.get_ref(),
            )
            .and_then(|v| comm.add_base_latency(v));
            v.map_err(|p| {
                cx.problem(
                    b,
                    &[
                        ("us", rb.us.span().start),
                        ("algorithm", rb.algorithm.span().start),
                    ],
                    p,
                )
            })?;
        }
        for r in &rc.range {
            let rr = r.get_ref();
            let coll = Collective::parse(rr.collective.get_ref()).ok_or_else(|| {
                cx.at(
                    &rr.collective,
                    "collective",
                    format!(
                        "unknown collective `{}` (one of: {})",
                        rr.collective.get_ref(),
                        Collective::ALL.map(|c| c.name()).join(", ")
                    ),
                )
            })?;
            let range_spans = [
                ("min_bytes", rr.min_bytes.span().start),
                ("max_bytes", rr.max_bytes.span().start),
            ];
            let mut range = SizeRange::new(coll, *rr.min_bytes.get_ref(), *rr.max_bytes.get_ref())
                .map_err(|p| cx.problem(r, &range_spans, p))?;
            for k in &rr.cost {
                let rk = k.get_ref();
                let v = Cost::new(
                    cx.algorithm(&rk.algorithm)?,
                    cx.protocol(&rk.protocol)?,
                    *rk.us.get_ref(),
                    *rk.channels.get_ref(),
                )
                .and_then(|v| range.add_cost(v));
                v.map_err(|p| {
                    cx.problem(
                        k,
                        &[
                            ("us", rk.us.span().start),
                            ("channels", rk.channels.span().start),
                        ],
                        p,
                    )
                })?;
            }
            let cost_span = [("cost", r.span().start)];
            comm.add_range(range).map_err(|p| {
                let spans: Vec<(&str, usize)> =
                    range_spans.iter().chain(&cost_span).copied().collect();
                cx.problem(r, &spans, p)
            })?;
        }
        t.add_comm(comm)
            .map_err(|p| cx.problem(c, &[("ranks", rc.ranks.span().start)], p))?;
    }
    Ok(t)
}
