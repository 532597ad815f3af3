//! A figure's traffic pattern (`[figure.pattern]`): its raw TOML form and
//! the check that turns it into a [`Traffic`] (the fields each kind needs
//! and takes, GPU ids, a stagger's distance, pairs, a one-at-a-time
//! summary), an error naming the file, line, column and field.

use super::{Ctx, OneAtATimeSummary, Sink, Traffic};
use contend_import::CalibError;
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPattern {
    kind: Spanned<String>,
    gpus: Option<Vec<String>>,
    distance: Option<Spanned<i64>>,
    source: Option<String>,
    sink: Option<String>,
    pairs: Option<Vec<Vec<String>>>,
    summary: Option<Spanned<String>>,
}

/// The traffic a `[figure.pattern]` table describes, checked.
pub(super) fn pattern(cx: &Ctx<'_>, p: &Spanned<RawPattern>) -> Result<Traffic, CalibError> {
    let r = p.get_ref();
    let kind = r.kind.get_ref().as_str();
    let need = |given: bool, field: &str| {
        if !given {
            Err(cx.err(
                p,
                &format!("pattern.{field}"),
                format!("a `{kind}` pattern needs `{field}`"),
            ))
        } else {
            Ok(())
        }
    };
    let refuse = |present: bool, field: &str| {
        if present {
            Err(cx.err(
                p,
                &format!("pattern.{field}"),
                format!("a `{kind}` pattern takes no `{field}`"),
            ))
        } else {
            Ok(())
        }
    };
    let gpus = || r.gpus.clone().unwrap_or_default();
    let listed = |field: &str| -> Result<Vec<String>, CalibError> {
        let g = gpus();
        if g.iter().any(|x| x.is_empty()) {
            return Err(cx.err(
                p,
                &format!("pattern.{field}"),
                "an empty GPU id in `gpus`".into(),
            ));
        }
        Ok(g)
    };
    let t = match kind {
        "all-to-all" | "unstated" => {
            refuse(r.distance.is_some(), "distance")?;
            refuse(r.source.is_some(), "source")?;
            refuse(r.sink.is_some(), "sink")?;
            refuse(r.pairs.is_some(), "pairs")?;
            refuse(r.summary.is_some(), "summary")?;
            if kind == "all-to-all" {
                need(r.gpus.is_some(), "gpus")?;
                let gpus = listed("gpus")?;
                if gpus.len() < 2 {
                    return Err(cx.err(
                        p,
                        "pattern.gpus",
                        "an all-to-all pattern names two GPUs or more".into(),
                    ));
                }
                Traffic::AllToAll { gpus }
            } else {
                Traffic::Unstated {
                    gpus: listed("gpus")?,
                }
            }
        }
        "stagger" => {
            need(r.distance.is_some(), "distance")?;
            need(r.gpus.is_some(), "gpus")?;
            let d = r.distance.as_ref().expect("checked");
            let gpus = listed("gpus")?;
            let distance = u32::try_from(*d.get_ref())
                .ok()
                .filter(|&k| k >= 1 && (k as usize) < gpus.len().max(2))
                .ok_or_else(|| {
                    cx.err(
                        d,
                        "pattern.distance",
                        format!(
                            "distance = {} is outside 1..{} (the pattern's GPUs)",
                            d.get_ref(),
                            gpus.len()
                        ),
                    )
                })?;
            Traffic::Stagger { distance, gpus }
        }
        "one-to-many" => {
            need(r.source.is_some(), "source")?;
            Traffic::OneToMany {
                source: r.source.clone().expect("checked"),
                gpus: listed("gpus")?,
            }
        }
        "many-to-one" => {
            need(r.sink.is_some(), "sink")?;
            let sink = match r.sink.as_deref() {
                Some("each") => Sink::Each,
                Some(s) => Sink::Node(s.to_string()),
                None => unreachable!("checked"),
            };
            Traffic::ManyToOne {
                sink,
                gpus: listed("gpus")?,
            }
        }
        "bidirectional-pairs" => {
            need(r.pairs.is_some(), "pairs")?;
            Traffic::BidirectionalPairs {
                pairs: cx.pairs(r.pairs.as_deref().unwrap_or(&[]), p, "pattern.pairs")?,
            }
        }
        "one-at-a-time" => {
            need(r.pairs.is_some(), "pairs")?;
            need(r.summary.is_some(), "summary")?;
            let s = r.summary.as_ref().expect("checked");
            Traffic::OneAtATime {
                pairs: cx.pairs(r.pairs.as_deref().unwrap_or(&[]), p, "pattern.pairs")?,
                summary: OneAtATimeSummary::parse(s.get_ref())
                    .map_err(|m| cx.err(s, "pattern.summary", m))?,
            }
        }
        other => {
            return Err(cx.err(
                &r.kind,
                "pattern.kind",
                format!(
                    "unknown pattern kind `{other}` (one of: all-to-all, stagger, one-to-many, many-to-one, bidirectional-pairs, one-at-a-time, unstated)"
                ),
            ));
        }
    };
    Ok(t)
}
