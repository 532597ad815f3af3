//! nvbandwidth (NVIDIA/nvbandwidth), read as `testcases_ce.cpp` (read at
//! 040fd28) runs its tests and `output.cpp` prints them: `Running NAME.`,
//! a title (`memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)`), the
//! column indices, one row per source (`0` alone for the host), values or
//! `N/A`, then `SUM NAME total`. The title's arrow is not the direction
//! (the read test prints `->`, the write test `<-`); the test's name is:
//!
//! - `device_to_device_memcpy_write_ce`: the row GPU's copy engine copies
//!   its buffer into the column GPU's (`copy-peer` row -> column);
//! - `device_to_device_memcpy_read_ce`: the column GPU's buffer into the
//!   row GPU's, in the row GPU's context (`copy-peer-read`, row <- column);
//! - `host_to_device_memcpy_ce` / `device_to_host_memcpy_ce`: the column
//!   GPU's copy engine with pinned host memory (`copy-h2d` / `copy-d2h`);
//! - each figure is one copy at a time, "the median bandwidth" of 3 trials
//!   of `loopCount` copies (README);
//! - the buffer is `-b`/`--bufferSize` MiB when the pasted command says
//!   so, else the version's default: 64 MiB in v0.2 (its `-h`), 512 MiB in
//!   later releases (current README) — an assumption the record states.
//!
//! Bidirectional tests (a measured copy beside an interfering one of
//! another size), the all-to-one / one-to-all / all-host patterns, the SM
//! tests (a copy kernel whose grid is not printed), local copies and
//! latency tests are listed as skipped with that reason.

use super::probe::{End, Figure, ToolRun, gbps, record};
use super::{Imported, Tool, noise, prompt_command, strip_launcher};
use crate::error::CalibError;
use contend_workload::ProbeOp;

/// What a test measures, or why it has no twin.
fn test_op(name: &str) -> Result<(ProbeOp, bool), &'static str> {
    // (op, rows are GPUs)
    Ok(match name {
        "device_to_device_memcpy_write_ce" => (ProbeOp::CopyPeer, true),
        "device_to_device_memcpy_read_ce" => (ProbeOp::CopyPeerRead, true),
        "host_to_device_memcpy_ce" => (ProbeOp::CopyH2d, false),
        "device_to_host_memcpy_ce" => (ProbeOp::CopyD2h, false),
        n if n.contains("bidirectional") => {
            return Err(
                "bidirectional: a measured copy beside an interfering copy of another size; no twin",
            );
        }
        n if n.contains("latency") => {
            return Err("a latency test (pointer chasing), not a copy; no twin yet");
        }
        n if n.ends_with("_sm") => {
            return Err("an SM copy kernel whose launch shape is not printed");
        }
        n if n.contains("all_to") || n.contains("to_all") || n.contains("one_to") => {
            return Err(
                "a pattern of concurrent copies whose other streams are not printed; no twin",
            );
        }
        _ => return Err("a test contend does not twin"),
    })
}

/// The buffer of `version` when the command does not set it, bytes.
fn default_buffer(version: Option<&str>) -> u64 {
    let old = version
        .and_then(|v| v.trim_start_matches('v').split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|minor| minor <= 4);
    if old { 64 << 20 } else { 512 << 20 }
}

/// One matrix row of the test being read.
#[allow(clippy::too_many_arguments)]
fn take_row(
    out: &mut Imported,
    figures: &mut Vec<(usize, Figure, Option<String>)>,
    test: &Option<(usize, String)>,
    title: &Option<String>,
    cols: &Option<Vec<usize>>,
    n: usize,
    toks: &[String],
    at: &[usize],
    file: &str,
) -> Result<(), CalibError> {
    let err = |message: String| CalibError::Record {
        file: file.to_string(),
        line: n,
        message,
    };
    let (Some((tline, name)), Some(ti), Some(c)) = (test, title, cols) else {
        return Ok(());
    };
    let row: usize = toks[0].parse().unwrap_or(0);
    if toks.len() != c.len() + 1 {
        return Err(err(format!(
            "row {row} of `{ti}` has {} values, the header has {} columns: a truncated or cut row",
            toks.len() - 1,
            c.len()
        )));
    }
    let (op, gpu_rows) = match test_op(name) {
        Ok(x) => x,
        Err(why) => {
            if !out.skipped.iter().any(|s| s.line == *tline) {
                out.skip(*tline, name.clone(), why);
            }
            return Ok(());
        }
    };
    for (k, &col) in c.iter().enumerate() {
        let v = toks[k + 1].as_str();
        if v == "N/A" {
            continue;
        }
        let value = gbps(v).ok_or_else(|| {
            super::row_error(
                file,
                n,
                at.get(k + 1).copied(),
                format!("`{v}` (row {row}, column {col} of `{ti}`) is not a positive number"),
            )
        })?;
        let (from, to) = if gpu_rows {
            (row, End::Gpu(col))
        } else {
            (col, End::Host)
        };
        let to_id = match to {
            End::Gpu(j) => format!("gpu{j}"),
            End::Host => "host".to_string(),
        };
        crate::measure::physics::stream_rate(
            value,
            &format!("gpu{from}"),
            &to_id,
            crate::measure::physics::Bounds::AnyBox,
        )
        .map_err(|m| {
            super::impossible(
                file,
                n,
                at.get(k + 1).copied(),
                format!("`{v}` (row {row}, column {col} of `{ti}`): {m}"),
            )
        })?;
        figures.push((
            n,
            Figure {
                op,
                from,
                to,
                bytes: 0,
                gbps: value,
                concurrent: 1,
                group: None,
                test: name.clone(),
                value: None,
            },
            None,
        ));
    }
    Ok(())
}

/// Reads nvbandwidth output.
pub fn import(file: &str, text: &str) -> Result<Imported, CalibError> {
    let mut out = Imported::new(file, Tool::Nvbandwidth);
    let mut run = ToolRun::default();
    let mut buffer: Option<u64> = None;
    let mut test: Option<(usize, String)> = None;
    let mut title: Option<String> = None;
    let mut cols: Option<Vec<usize>> = None;
    let mut figures: Vec<(usize, Figure, Option<String>)> = vec![];
    // matrix rows before anything named their test (waiting for `SUM`),
    // with their tokens' columns
    type Pending = (usize, Vec<String>, Vec<usize>);
    let mut unnamed: Vec<Pending> = vec![];
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let t = strip_launcher(raw).trim();
        let err = |message: String| CalibError::Record {
            file: file.to_string(),
            line: n,
            message,
        };
        if let Some(c) = prompt_command(t) {
            let toks: Vec<&str> = c.split_whitespace().collect();
            for (k, tok) in toks.iter().enumerate() {
                let v = if let Some(v) = tok.strip_prefix("--bufferSize=") {
                    Some(v)
                } else if ["-b", "--bufferSize"].contains(tok) {
                    toks.get(k + 1).copied()
                } else {
                    None
                };
                if let Some(v) = v {
                    let mib = v
                        .parse::<u64>()
                        .ok()
                        .filter(|m| (1..=(1 << 20)).contains(m))
                        .ok_or_else(|| err(format!("buffer size `{v}` is not a MiB count")))?;
                    buffer = Some(mib << 20);
                }
            }
            out.count_noise(super::Noise::Prompt);
            continue;
        }
        if let Some(v) = t.strip_prefix("nvbandwidth Version:") {
            out.version = Some(v.trim().to_string());
            run.version = out.version.clone();
            continue;
        }
        if let Some(d) = contend_topo::import::cuda_device_line(t) {
            // `Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)`
            if d.index != run.gpus.len() {
                return Err(err(format!(
                    "device {} listed after {} devices: the list is out of order",
                    d.index,
                    run.gpus.len()
                )));
            }
            run.gpus.push(d.name);
            run.pci
                .push(d.bdf.map(|b| b.to_string()).unwrap_or_default());
            continue;
        }
        if let Some(name) = t.strip_prefix("Running ") {
            unnamed.clear();
            let name = name.trim_end_matches('.').trim().to_string();
            if let Err(why) = test_op(&name) {
                out.skip(n, name.clone(), why);
            }
            test = Some((n, name));
            title = None;
            cols = None;
            continue;
        }
        if let Some(name) = t.strip_prefix("Waiving ") {
            out.skip(
                n,
                name.trim_end_matches('.').to_string(),
                "nvbandwidth waived it (no peer mapping, or not supported here)",
            );
            continue;
        }
        if t.starts_with("memcpy ") && t.contains("bandwidth") {
            title = Some(t.to_string());
            cols = None;
            continue;
        }
        if let Some(rest) = t.strip_prefix("SUM ") {
            // `SUM name total` closes a block; it names the test when no
            // `Running` line did (a pasted excerpt)
            let name = rest.split_whitespace().next().unwrap_or("").to_string();
            if test.is_none() && !name.is_empty() {
                let rows = std::mem::take(&mut unnamed);
                test = Some((n, name));
                for (rn, toks, at) in rows {
                    take_row(
                        &mut out,
                        &mut figures,
                        &test,
                        &title,
                        &cols,
                        rn,
                        &toks,
                        &at,
                        file,
                    )?;
                }
            }
            test = None;
            title = None;
            cols = None;
            continue;
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        // inside a table (its title read, `SUM` not yet): a line that
        // starts like the column header or a row must be one
        let row_like = toks
            .first()
            .is_some_and(|x| x.starts_with(|c: char| c.is_ascii_digit()));
        if let Some(ti) = &title
            && (row_like || cols.is_some())
            && let Some(e) = super::corrupt_row(file, n, raw, &format!("inside the table `{ti}`"))
        {
            return Err(e);
        }
        if title.is_some()
            && cols.is_none()
            && !toks.is_empty()
            && toks.iter().all(|x| x.parse::<usize>().is_ok())
        {
            cols = Some(toks.iter().map(|x| x.parse().unwrap_or(0)).collect());
            continue;
        }
        if let Some(ti) = &title
            && row_like
        {
            let first = toks[0];
            let bad = toks.iter().find(|x| x.parse::<usize>().is_err());
            let (at, message) = match (&cols, bad) {
                (None, Some(b)) => (
                    super::column(raw, b),
                    format!(
                        "`{b}` in the column header of `{ti}`: the line under the title lists the column indices (`0 1 2 ...`)"
                    ),
                ),
                (Some(_), _) if first.parse::<usize>().is_err() => (
                    super::column(raw, first),
                    format!(
                        "`{first}` (column 1 of a row of `{ti}`) is not a device number: a row starts with its GPU (or `0` for the host)"
                    ),
                ),
                _ => (0, String::new()),
            };
            if !message.is_empty() {
                return Err(super::row_error(file, n, Some(at), message));
            }
        }
        if title.is_some()
            && cols.is_some()
            && toks.first().is_some_and(|x| x.parse::<usize>().is_ok())
        {
            let owned: Vec<String> = toks.iter().map(|x| x.to_string()).collect();
            let at: Vec<usize> = toks.iter().map(|x| super::column(raw, x)).collect();
            if test.is_some() {
                take_row(
                    &mut out,
                    &mut figures,
                    &test,
                    &title,
                    &cols,
                    n,
                    &owned,
                    &at,
                    file,
                )?;
            } else {
                unnamed.push((n, owned, at));
            }
            continue;
        }
        // other text inside a table whose rows are read: listed
        if let Some(ti) = &title
            && !t.is_empty()
            && noise(t).is_none()
            && test.as_ref().is_none_or(|(_, name)| test_op(name).is_ok())
        {
            out.skip(
                n,
                format!("text inside the table `{ti}`"),
                format!(
                    "not a row of the table and not nvbandwidth's (`{}`)",
                    t.chars().take(60).collect::<String>()
                ),
            );
            continue;
        }
        if let Some(kind) = noise(t) {
            out.count_noise(kind);
        } else {
            *out.noise.entry("other text".into()).or_default() += 1;
        }
    }
    let (bytes, note) = match buffer {
        Some(b) => (b, None),
        None => {
            let b = default_buffer(out.version.as_deref());
            (
                b,
                Some(format!(
                    "the buffer size is not printed: {} MiB, the default of {}, assumed; median of 3 trials",
                    b >> 20,
                    out.version.as_deref().unwrap_or("a release after v0.4")
                )),
            )
        }
    };
    out.records = figures
        .into_iter()
        .map(|(n, mut f, _)| {
            f.bytes = bytes;
            f.value = note.clone();
            (n, record(Tool::Nvbandwidth, &run, &f))
        })
        .collect();
    Ok(out)
}
