//! The columns of a perf table: which groups (out of place, in place)
//! and columns a header names, every layout nccl-tests has printed
//! ([`parse_header`]), and a row's figures read by them ([`parse_row`]).

use super::TYPES;
use crate::error::CalibError;

/// A column group: out of place or in place.
#[derive(Clone, Copy, Debug)]
pub(super) struct Group {
    pub(super) time: usize,
    pub(super) algbw: usize,
    pub(super) busbw: usize,
    pub(super) check: Option<(usize, Check)>,
    /// Index of `i_min` (then `i_max`, `i_p99`, `i_cv%`).
    pub(super) per_iter: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Check {
    /// `#wrong`: wrong elements (`N/A` when not checked).
    Wrong,
    /// The old `error`: the largest deviation.
    Error,
}

/// The columns a header names.
#[derive(Clone, Debug)]
pub(super) struct Columns {
    pub(super) line: usize,
    pub(super) redop: Option<usize>,
    pub(super) root: Option<usize>,
    pub(super) groups: Vec<Group>,
    /// Data tokens a row has.
    pub(super) tokens: usize,
    pub(super) cputime: bool,
}

pub(super) fn parse_header(file: &str, line: usize, toks: &[&str]) -> Result<Columns, CalibError> {
    let err = |message: String| CalibError::Record {
        file: file.to_string(),
        line,
        message,
    };
    if toks.len() < 3 || toks[0] != "size" || toks[1] != "count" || toks[2] != "type" {
        return Err(err(
            "an nccl-tests column header starts `size count type`".into()
        ));
    }
    let mut i = 3;
    let mut redop = None;
    let mut root = None;
    if toks.get(i) == Some(&"redop") {
        redop = Some(i);
        i += 1;
    }
    if toks.get(i) == Some(&"root") {
        root = Some(i);
        i += 1;
    }
    let mut groups = vec![];
    let mut tokens = i;
    let mut cputime = false;
    while i < toks.len() {
        match toks[i] {
            "time" | "cputime" => {
                cputime |= toks[i] == "cputime";
                let want = |k: usize, name: &str| {
                    if toks.get(k) == Some(&name) {
                        Ok(k)
                    } else {
                        Err(err(format!(
                            "column {} of the header is `{}`, expected `{name}` after `time`",
                            k + 1,
                            toks.get(k).unwrap_or(&"(end of line)")
                        )))
                    }
                };
                let algbw = want(i + 1, "algbw")?;
                let busbw = want(i + 2, "busbw")?;
                let mut k = i + 3;
                let check = match toks.get(k) {
                    Some(&"#wrong") => Some((k, Check::Wrong)),
                    Some(&"error") => Some((k, Check::Error)),
                    _ => None,
                };
                if check.is_some() {
                    k += 1;
                }
                let per_iter = (toks.get(k) == Some(&"i_min")).then_some(k);
                if per_iter.is_some() {
                    for (o, name) in ["i_max", "i_p99", "i_cv%"].iter().enumerate() {
                        want(k + 1 + o, name)?;
                    }
                    k += 4;
                }
                groups.push(Group {
                    time: i,
                    algbw,
                    busbw,
                    check,
                    per_iter,
                });
                i = k;
                tokens = k;
            }
            // `%Y-%m-%d %H:%M:%S`: two tokens in a row
            "timestamp" if i + 1 == toks.len() => {
                tokens += 2;
                i += 1;
            }
            other => {
                return Err(err(format!(
                    "unknown column `{other}` in the nccl-tests header (known: size count type redop root time|cputime algbw busbw #wrong|error i_min i_max i_p99 i_cv% timestamp)"
                )));
            }
        }
    }
    if groups.is_empty() {
        return Err(err("the header names no `time` column".into()));
    }
    Ok(Columns {
        line,
        redop,
        root,
        groups,
        tokens,
        cputime,
    })
}

/// One group's figures of a row.
#[derive(Clone, Copy, Debug)]
pub(super) struct Perf {
    pub(super) time_us: f64,
    pub(super) algbw: f64,
    pub(super) busbw: f64,
    /// Wrong elements; `None`: not checked (`N/A`).
    pub(super) wrong: Option<u64>,
    pub(super) error: Option<f64>,
    /// min, max, p99 of the per-iteration times, µs.
    pub(super) per_iter: Option<(f64, f64, f64)>,
}

#[derive(Clone, Debug)]
pub(super) struct Row {
    pub(super) size: u64,
    pub(super) count: u64,
    pub(super) ty: &'static str,
    pub(super) tsize: u64,
    pub(super) dtype: Option<&'static str>,
    pub(super) redop: String,
    pub(super) root: Option<i64>,
    pub(super) out: Perf,
    pub(super) inplace: Option<Perf>,
}

pub(super) fn parse_row(
    file: &str,
    line: usize,
    raw: &str,
    cols: &Columns,
    f: &[&str],
) -> Result<Row, CalibError> {
    // `k`: the token at fault (its column in the file and in the table)
    let err = |k: Option<usize>, message: String| {
        crate::import::imported::row_error(
            file,
            line,
            k.and_then(|k| f.get(k))
                .map(|t| crate::import::imported::column(raw, t)),
            message,
        )
    };
    let impossible = |k: usize, message: String| {
        crate::import::imported::impossible(
            file,
            line,
            f.get(k).map(|t| crate::import::imported::column(raw, t)),
            message,
        )
    };
    let size = f[0].parse::<u64>().map_err(|_| {
        err(
            Some(0),
            format!(
                "size `{}` (column 1 of the table) is not a byte count: a row of the table under line {} starts with its size in bytes",
                f[0], cols.line
            ),
        )
    })?;
    let count = match f.get(1) {
        Some(c) => c.parse::<u64>().map_err(|_| {
            err(
                Some(1),
                format!("count `{c}` (column 2 of the table) is not an element count"),
            )
        })?,
        None => 0,
    };
    if let Some(t) = f.get(2)
        && !TYPES.iter().any(|x| x.0 == *t)
    {
        return Err(err(
            Some(2),
            format!(
                "type `{t}` (column 3 of the table) is not one nccl-tests prints (expected one of: {})",
                TYPES.iter().map(|x| x.0).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    if f.len() != cols.tokens {
        return Err(err(
            None,
            format!(
                "expected {} columns as the header on line {} names them, found {}: a truncated or cut row",
                cols.tokens,
                cols.line,
                f.len()
            ),
        ));
    }
    let num = |k: usize, what: &str| -> Result<f64, CalibError> {
        f[k].parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| {
                err(
                    Some(k),
                    format!(
                        "{what} `{}` (column {} of the table) is not a number",
                        f[k],
                        k + 1
                    ),
                )
            })
    };
    // a time (µs) or a printed rate, through the physics check
    let time = |k: usize, what: &str| -> Result<f64, CalibError> {
        let us = num(k, what)?;
        // an allreduce of 0 bytes is skipped (NCCL times nothing)
        if size > 0 {
            crate::measure::physics::time_us(&format!("{what} (column {})", k + 1), us)
                .map_err(|m| impossible(k, m.0))?;
        }
        Ok(us)
    };
    let rate = |k: usize, what: &str| -> Result<f64, CalibError> {
        let v = num(k, what)?;
        crate::measure::physics::derived_rate(&format!("{what} (column {})", k + 1), v)
            .map_err(|m| impossible(k, m.0))?;
        Ok(v)
    };
    let &(ty, tsize, dtype) = TYPES
        .iter()
        .find(|t| t.0 == f[2])
        .ok_or_else(|| err(Some(2), format!("unknown nccl-tests type `{}`", f[2])))?;
    let redop = cols.redop.map_or("none".to_string(), |k| f[k].to_string());
    let root = match cols.root {
        Some(k) => Some(f[k].parse::<i64>().map_err(|_| {
            err(
                Some(k),
                format!("root `{}` (column {}) is not a rank", f[k], k + 1),
            )
        })?),
        None => None,
    };
    let perf = |g: &Group| -> Result<Perf, CalibError> {
        let time_us = time(g.time, "time")?;
        let (wrong, error) = match g.check {
            None => (None, None),
            Some((k, _)) if f[k] == "N/A" => (None, None),
            Some((k, Check::Wrong)) => {
                let w = num(k, "#wrong")?;
                if w.fract() != 0.0 {
                    return Err(err(
                        Some(k),
                        format!("#wrong `{}` (column {}) is not a count", f[k], k + 1),
                    ));
                }
                (Some(w as u64), None)
            }
            Some((k, Check::Error)) => (None, Some(num(k, "error")?)),
        };
        let per_iter = match g.per_iter {
            Some(k) => Some((
                time(k, "i_min")?,
                time(k + 1, "i_max")?,
                time(k + 2, "i_p99")?,
            )),
            None => None,
        };
        Ok(Perf {
            time_us,
            algbw: rate(g.algbw, "algbw")?,
            busbw: rate(g.busbw, "busbw")?,
            wrong,
            error,
            per_iter,
        })
    };
    let out = perf(&cols.groups[0])?;
    let inplace = cols.groups.get(1).map(perf).transpose()?;
    Ok(Row {
        size,
        count,
        ty,
        tsize,
        dtype,
        redop,
        root,
        out,
        inplace,
    })
}
