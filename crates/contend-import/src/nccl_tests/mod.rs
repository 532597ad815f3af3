//! nccl-tests logs as a source of measurements, and predictions printed in
//! the same format so they can be diffed against a user's logs.
//!
//! The table every `*_perf` binary prints (sizes in bytes, times in µs, one
//! row per size with out-of-place and in-place columns):
//!
//! ```text
//! #                                                              out-of-place                       in-place
//! #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//! #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
//!        43008         21504  bfloat16     sum      -1    11.21    3.84    3.84      0    11.02    3.90    3.90      0
//! ```
//!
//! The columns are read from the header line, so every layout nccl-tests
//! has printed parses: the old one without `root` and with an `error`
//! column (the largest deviation) instead of `#wrong`; `cputime` (`-C`);
//! the per-iteration columns (`i_min i_max i_p99 i_cv%`); the trailing
//! timestamp. A log may hold several runs and collectives (each run starts
//! at its `# nThread` line; the collective is named by `# Collective test
//! starting:`, by the command that ran it, or, failing both, by what its
//! rows are), shell prompts, NCCL INFO lines, mpirun noise and markdown
//! fences ([`crate::import`]'s rules).
//!
//! Each allreduce row becomes one [`ResultRecord`] (source `nccl`,
//! algorithm `nccl`, the out-of-place time as its median; the in-place
//! columns in `extra`); a row whose out-of-place or in-place result was
//! wrong (`#wrong` above 0, or a table whose footer reports out-of-bounds
//! values) is skipped and listed, since a wrong result's time is never
//! used. Other collectives are listed as skipped: the model simulates
//! allreduce. A `# contend: key=value ...` comment line (written by
//! [`nccl_tests_table`]) names the algorithm, placement, source and ranks
//! of the rows after it, so exported predictions parse back to what they
//! were.

use crate::error::CalibError;
use crate::import::clean::{Noise, noise, prompt_command, strip_launcher};
use crate::import::imported::{Imported, Tool};
use contend_workload::{
    Dtype, Extra, LaunchMode, Machine, Measured, Placement, ResultRecord, Source, Stats,
    WorkloadKind,
};
use std::collections::BTreeMap;
use std::str::FromStr;

mod columns;
mod json;
mod table;

use columns::{Columns, Perf, Row, parse_header, parse_row};

pub use json::{import_nccl_tests_json, nccl_tests_json};
pub use table::nccl_tests_table;

const HEADER: &str = "#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
";

/// The scenario of a plain log's records (no `# contend:` line named
/// one): their ranks are positions (`gpu0`.. by CUDA device), not the
/// names of a topology's GPUs ([`crate::measure`] places them).
pub const LOG_SCENARIO: &str = "nccl-tests";

/// nccl-tests' type names and their sizes.
const TYPES: &[(&str, u64, Option<&str>)] = &[
    ("int8", 1, None),
    ("uint8", 1, None),
    ("half", 2, Some("fp16")),
    ("bfloat16", 2, Some("bf16")),
    ("int32", 4, None),
    ("uint32", 4, None),
    ("float", 4, Some("fp32")),
    ("int64", 8, None),
    ("uint64", 8, None),
    ("double", 8, Some("fp64")),
    ("f8e4m3", 1, None),
    ("f8e5m2", 1, None),
];

/// Time as nccl-tests prints it (two decimals, fewer for long times).
fn fmt_time(us: f64) -> String {
    if us < 10_000.0 {
        format!("{us:7.2}")
    } else if us < 100_000.0 {
        format!("{us:7.1}")
    } else {
        format!("{us:7.0}")
    }
}

/// What the `# contend:` lines say about the rows after them.
#[derive(Clone, Debug, Default)]
struct Context {
    algorithm: Option<Measured>,
    placement: Option<Placement>,
    source: Option<Source>,
    ranks: Option<Vec<String>>,
    scenario: Option<String>,
    graph: bool,
}

/// A device of a run (`#  Rank  3 Group  0 Pid 123 on host device  3 [0x06] NVIDIA H200`).
#[derive(Clone, Debug)]
struct Device {
    host: String,
    device: Option<usize>,
    pci: String,
    name: String,
}

/// One invocation of a `*_perf` binary.
#[derive(Clone, Debug, Default)]
struct Run {
    /// nThread x nGpus (per process).
    per_process: Option<usize>,
    graph: bool,
    devices: Vec<Device>,
    collective: Option<String>,
    /// `mpirun -np N`.
    processes: Option<usize>,
}

/// What the text around the tables said.
#[derive(Clone, Debug, Default)]
struct Session {
    tool_version: Option<String>,
    nccl_version: Option<String>,
    env: BTreeMap<String, String>,
    /// The collective and process count of the commands since the last run.
    pending_collective: Option<String>,
    pending_processes: Option<usize>,
    pending_graph: bool,
}

fn parse_contend_line(
    file: &str,
    line: usize,
    rest: &str,
    cx: &mut Context,
) -> Result<(), CalibError> {
    let err = |message: String| CalibError::Record {
        file: file.to_string(),
        line,
        message,
    };
    for kv in rest.split_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(err(format!(
                "`{kv}` in a `# contend:` line is not key=value"
            )));
        };
        match k {
            "algorithm" => cx.algorithm = Some(Measured::from_str(v).map_err(err)?),
            "placement" => {
                cx.placement = if v == "-" {
                    None
                } else {
                    Some(Placement::from_str(v).map_err(err)?)
                }
            }
            "source" => {
                cx.source = Some(match v {
                    "sim" => Source::Sim,
                    "hw" => Source::Hw,
                    "nccl" => Source::Nccl,
                    _ => return Err(err(format!("unknown source `{v}` (sim, hw, nccl)"))),
                })
            }
            "ranks" => cx.ranks = Some(v.split(',').map(str::to_string).collect()),
            "scenario" => cx.scenario = Some(v.to_string()),
            "launch" => cx.graph = v == "graph",
            _ => return Err(err(format!("unknown key `{k}` in a `# contend:` line"))),
        }
    }
    Ok(())
}

/// The `*_perf` binary a command runs, its `-np`, and `-G`.
fn read_command(cmd: &str, s: &mut Session) {
    let toks: Vec<&str> = cmd.split_whitespace().collect();
    for (i, t) in toks.iter().enumerate() {
        let base = t.rsplit('/').next().unwrap_or(t);
        if base.ends_with("_perf") || base.ends_with("_perf_mpi") {
            s.pending_collective = Some(base.trim_end_matches("_mpi").to_string());
        }
        let next = toks.get(i + 1).and_then(|v| v.parse::<usize>().ok());
        match *t {
            "-np" | "-n" | "--np" | "-N" if s.pending_collective.is_none() => {
                if let Some(n) = next {
                    s.pending_processes = Some(n);
                }
            }
            "-G" | "--cudagraph" => s.pending_graph = next.is_some_and(|g| g > 0),
            _ => {}
        }
    }
}

/// NCCL's version code (`22703`) as a release (`2.27.3`).
fn nccl_code(code: u64) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, (code / 100) % 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, (code / 100) % 10, code % 100)
    }
}

/// The NCCL facts of an NCCL INFO line: its version, an `NCCL_*`
/// variable set by the environment.
fn read_nccl_line(t: &str, s: &mut Session) {
    if let Some(i) = t.find("NCCL version ") {
        let v = t[i + 13..].split_whitespace().next().unwrap_or("");
        if !v.is_empty() && s.nccl_version.is_none() {
            s.nccl_version = Some(v.split('+').next().unwrap_or(v).to_string());
        }
    }
    if let Some(i) = t.find(" set by environment to ") {
        let name = t[..i].split_whitespace().last().unwrap_or("");
        let value = t[i + 23..].trim();
        if name.starts_with("NCCL_") && !value.is_empty() {
            s.env.insert(name.to_string(), value.to_string());
        }
    }
}

/// A table row, or what is left of one: a byte count and an element
/// count, then (if anything) a type nccl-tests prints.
fn looks_like_row(f: &[&str]) -> bool {
    f.len() >= 2
        && f[0].parse::<u64>().is_ok()
        && f[1].parse::<u64>().is_ok()
        && f.get(2).is_none_or(|t| TYPES.iter().any(|x| x.0 == *t))
}

/// Whether a token starts like a number (a row's size column).
fn starts_like_number(t: &str) -> bool {
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    t.starts_with(|c: char| c.is_ascii_digit() || c == '.')
}

/// The start of a line, for a message.
fn excerpt(line: &str) -> String {
    let mut e: String = line.chars().take(60).collect();
    if e.len() < line.len() {
        e.push_str("...");
    }
    e
}

/// The collective a table's rows are, when nothing named it.
fn infer_collective(row: &Row, ranks: usize) -> &'static str {
    let elems = row.count.saturating_mul(row.tsize);
    match (row.redop.as_str(), row.root) {
        ("none", Some(r)) if r >= 0 => "broadcast_perf",
        ("none", _) => "a non-reducing collective (all_gather, alltoall, sendrecv...)",
        (_, Some(r)) if r >= 0 => "reduce_perf",
        _ if elems == row.size => "all_reduce_perf",
        _ if elems.saturating_mul(ranks as u64) == row.size => "reduce_scatter_perf",
        _ => "an unknown collective",
    }
}

/// Reads an nccl-tests log: records of its allreduce rows, and what was skipped.
pub fn import_nccl_tests(file: &str, text: &str) -> Result<Imported, CalibError> {
    let mut out = Imported::new(file, Tool::NcclTests);
    let mut cx = Context::default();
    let mut s = Session::default();
    let mut run: Option<Run> = None;
    let mut table: Option<(Columns, Vec<(usize, Row)>)> = None;
    // between a table's header and its footer (`# Out of bounds values`,
    // `# Avg bus bandwidth`): a line there that starts like a row must be one
    let mut in_body = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = strip_launcher(raw).trim();
        if let Some(kind) = noise(line) {
            match kind {
                Noise::Prompt => {
                    if let Some(c) = prompt_command(line) {
                        read_command(c, &mut s);
                    }
                }
                Noise::Nccl => read_nccl_line(line, &mut s),
                _ => {}
            }
            out.count_noise(kind);
            continue;
        }
        let err = |message: String| CalibError::Record {
            file: file.to_string(),
            line: n,
            message,
        };
        // GitHub renders a pasted `# ...` line as a heading and drops the
        // `#`: the comment lines nccl-tests starts with a known word still read
        let unhashed = {
            let f: Vec<&str> = line.split_whitespace().collect();
            let header = f.first() == Some(&"size") && f.contains(&"count") && f.contains(&"type");
            let rank =
                f.first() == Some(&"Rank") && line.contains(" on ") && line.contains(" device ");
            let known = ["nThread", "nccl-tests", "Collective", "Out", "Avg"]
                .contains(f.first().unwrap_or(&""))
                || line.starts_with("Using devices");
            (header || rank || known).then_some(line)
        };
        if let Some(c) = line.strip_prefix('#').or(unhashed) {
            let c = c.trim();
            let toks: Vec<&str> = c.split_whitespace().collect();
            if let Some(rest) = c.strip_prefix("contend:") {
                parse_contend_line(file, n, rest, &mut cx)?;
            } else if let Some(v) = c.strip_prefix("nccl-tests version ") {
                let mut it = v.split_whitespace();
                s.tool_version = it.next().map(str::to_string);
                for kv in it {
                    if let Some(code) = kv.strip_prefix("nccl-library=")
                        && let Ok(code) = code.parse::<u64>()
                    {
                        s.nccl_version = Some(nccl_code(code));
                    }
                }
            } else if let Some(name) = c.strip_prefix("Collective test starting:") {
                in_body = false;
                finish(file, &mut out, &cx, &s, run.as_ref(), table.take())?;
                s.pending_collective = Some(name.trim().to_string());
            } else if toks.first() == Some(&"size") && toks.contains(&"count") {
                finish(file, &mut out, &cx, &s, run.as_ref(), table.take())?;
                table = Some((parse_header(file, n, &toks)?, vec![]));
                in_body = true;
            } else if toks.first() == Some(&"nThread") {
                in_body = false;
                finish(file, &mut out, &cx, &s, run.as_ref(), table.take())?;
                let get = |k: &str| {
                    toks.iter()
                        .position(|x| *x == k)
                        .and_then(|p| toks.get(p + 1))
                        .and_then(|v| v.parse::<u64>().ok())
                };
                let max = contend_topo::limits::MAX_NODES as u64;
                let per_process = match (get("nThread"), get("nGpus")) {
                    (Some(t), Some(g)) => match t.checked_mul(g) {
                        Some(k) if (1..=max).contains(&k) => Some(k as usize),
                        _ => {
                            return Err(err(format!(
                                "nThread x nGpus is not a rank count from 1 to {max}"
                            )));
                        }
                    },
                    _ => None,
                };
                run = Some(Run {
                    per_process,
                    graph: get("graph:").is_some_and(|g| g > 0) || s.pending_graph,
                    devices: vec![],
                    collective: s.pending_collective.take(),
                    processes: s.pending_processes.take(),
                });
                s.pending_graph = false;
            } else if let Some(r) = c.strip_prefix("Rank") {
                // `Rank  0 Group  0 Pid  123 on  host device  0 [0x06] NVIDIA H200`
                let host = r
                    .split(" on ")
                    .nth(1)
                    .and_then(|x| x.split_whitespace().next())
                    .unwrap_or("")
                    .to_string();
                let device = r
                    .split(" device ")
                    .nth(1)
                    .and_then(|x| x.split_whitespace().next())
                    .and_then(|x| x.parse::<usize>().ok());
                let pci = r
                    .split('[')
                    .nth(1)
                    .and_then(|x| x.split(']').next())
                    .unwrap_or("")
                    .to_string();
                let name = r.split(']').nth(1).unwrap_or("").trim().to_string();
                run.get_or_insert_with(Run::default).devices.push(Device {
                    host,
                    device,
                    pci,
                    name,
                });
            } else if c.starts_with("Avg bus bandwidth") {
                in_body = false;
            } else if let Some(rest) = c.strip_prefix("Out of bounds values :") {
                // the footer of the table above
                in_body = false;
                let bad = rest
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
                if bad > 0
                    && let Some((cols, rows)) = table.take()
                {
                    let k = rows.len();
                    out.skip(
                        cols.line,
                        format!("the table of {k} row(s) under this header"),
                        format!(
                            "its footer (line {n}) reports {bad} out-of-bounds value(s): results were wrong, so no timing of the table is used"
                        ),
                    );
                }
            }
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if in_body && let Some((col, ch)) = crate::import::imported::control_char(raw) {
            return Err(crate::import::imported::row_error(
                file,
                n,
                Some(col),
                format!(
                    "a control character (U+{:04X}) inside the table under line {}: no tool prints one in a row (a corrupt line)",
                    ch as u32,
                    table.as_ref().map_or(0, |t| t.0.line)
                ),
            ));
        }
        if looks_like_row(&f) {
            match table.as_mut() {
                Some((cols, rows)) => {
                    let row = parse_row(file, n, raw, cols, &f)?;
                    rows.push((n, row));
                }
                None => {
                    return Err(err(
                        "a data row before the nccl-tests column header (`#  size  count  type  redop ...`): not an nccl-tests log"
                            .into(),
                    ));
                }
            }
            continue;
        }
        if in_body && let Some((cols, rows)) = table.as_mut() {
            // a row that does not parse: which column, what was expected
            if f.first().is_some_and(|t| starts_like_number(t)) {
                let row = parse_row(file, n, raw, cols, &f)?;
                rows.push((n, row));
                continue;
            }
            // text another process wrote into the table: listed
            if !line.contains("_perf") {
                out.skip(
                    n,
                    format!("text inside the table under line {}", cols.line),
                    format!(
                        "not a row of the table and not nccl-tests' (`{}`)",
                        excerpt(line)
                    ),
                );
                continue;
            }
        }
        // a command pasted without a prompt, or text that is not the tool's
        if line.contains("_perf") {
            read_command(line, &mut s);
            out.count_noise(Noise::Prompt);
        } else {
            *out.noise.entry("other text".into()).or_default() += 1;
        }
    }
    finish(file, &mut out, &cx, &s, run.as_ref(), table.take())?;
    out.version = s.tool_version.clone();
    Ok(out)
}

/// Turns a finished table's rows into records (allreduce) or skips.
fn finish(
    file: &str,
    out: &mut Imported,
    cx: &Context,
    s: &Session,
    run: Option<&Run>,
    table: Option<(Columns, Vec<(usize, Row)>)>,
) -> Result<(), CalibError> {
    let Some((cols, rows)) = table else {
        return Ok(());
    };
    let Some(&(first_line, ref first)) = rows.first() else {
        return Ok(());
    };
    let err = |line: usize, message: String| CalibError::Record {
        file: file.to_string(),
        line,
        message,
    };
    let default_run = Run::default();
    let run = run.unwrap_or(&default_run);
    // the `# Rank` lines, or threads x GPUs x processes; nccl-tests' JSON
    // report names one device per process, so the larger count wins
    let launched = run
        .per_process
        .map(|g| g.saturating_mul(run.processes.unwrap_or(1)));
    let n_ranks = match (&cx.ranks, run.devices.len(), launched) {
        (Some(r), _, _) => r.len(),
        (None, d, Some(g)) if d > 0 => d.max(g),
        (None, d, None) if d > 0 => d,
        (None, _, Some(g)) => g,
        _ => {
            return Err(err(
                first_line,
                "no rank count: neither an `# nThread .. nGpus ..` line, `# Rank` lines nor a `# contend: ranks=` line before the table"
                    .into(),
            ));
        }
    };
    let collective = match (&run.collective, &s.pending_collective, cx.algorithm) {
        (Some(c), _, _) | (None, Some(c), _) => c.clone(),
        (None, None, Some(_)) => "all_reduce_perf".to_string(),
        (None, None, None) => infer_collective(first, n_ranks).to_string(),
    };
    if collective != "all_reduce_perf" {
        out.skip(
            cols.line,
            format!("{} row(s) of {collective}", rows.len()),
            "contend simulates allreduce only",
        );
        return Ok(());
    }
    let mut hosts: Vec<String> = run
        .devices
        .iter()
        .map(|d| d.host.clone())
        .filter(|h| !h.is_empty())
        .collect();
    hosts.sort();
    hosts.dedup();
    // ranks by CUDA device on one host; by rank across hosts
    let devices: Vec<Option<usize>> = run.devices.iter().map(|d| d.device).collect();
    let mut distinct = devices.clone();
    distinct.sort();
    distinct.dedup();
    let by_device = hosts.len() <= 1
        && devices.len() == n_ranks
        && devices.iter().all(Option::is_some)
        && distinct.len() == devices.len();
    let ranks: Vec<String> = match &cx.ranks {
        Some(r) => r.clone(),
        None if by_device => devices
            .iter()
            .map(|d| format!("gpu{}", d.unwrap_or(0)))
            .collect(),
        None => (0..n_ranks).map(|k| format!("gpu{k}")).collect(),
    };
    // every rank's GPU; a report that names fewer devices than ranks
    // (one per process) stands for the others with its first, its PCI
    // addresses unknown
    let complete = run.devices.len() == n_ranks;
    let machine = run.devices.first().map(|first| Machine {
        hostname: hosts.first().cloned().unwrap_or_default(),
        gpus: if complete {
            run.devices.iter().map(|d| d.name.clone()).collect()
        } else {
            vec![first.name.clone(); n_ranks]
        },
        pci_addresses: if complete && run.devices.iter().any(|d| !d.pci.is_empty()) {
            run.devices.iter().map(|d| d.pci.clone()).collect()
        } else {
            vec![]
        },
        ..Machine::default()
    });
    for (n, row) in rows {
        if row.size == 0 {
            out.skip(
                n,
                "0 B row",
                "an allreduce of 0 bytes: NCCL returns without moving data, so there is nothing to time",
            );
            continue;
        }
        if row.redop == "none"
            || row.root.is_some_and(|r| r != -1)
            || row.count.checked_mul(row.tsize) != Some(row.size)
        {
            return Err(err(
                n,
                format!(
                    "not an allreduce row (redop {}, root {}, {} x {} for {} B)",
                    row.redop,
                    row.root.map_or("-".to_string(), |r| r.to_string()),
                    row.count,
                    row.ty,
                    row.size
                ),
            ));
        }
        if row.out.time_us <= 0.0 {
            return Err(err(
                n,
                format!("time {} us is not positive", row.out.time_us),
            ));
        }
        let wrong_out = row.out.wrong.unwrap_or(0);
        let wrong_in = row.inplace.and_then(|p| p.wrong).unwrap_or(0);
        if wrong_out > 0 || wrong_in > 0 {
            out.skip(
                n,
                format!("{} B row", row.size),
                format!(
                    "{wrong_out} wrong element(s) out of place, {wrong_in} in place: a wrong result's time is never used"
                ),
            );
            continue;
        }
        // to a thousandth of a ns: the figure's µs survive export and import
        let ns = (row.out.time_us * 1e6).round() / 1000.0;
        let mut stats = Stats::of(&[ns]);
        if let Some((lo, hi, p99)) = row.out.per_iter {
            stats.min_ns = lo * 1000.0;
            stats.max_ns = hi * 1000.0;
            stats.p99_ns = p99 * 1000.0;
        }
        let mut extra = Extra::default();
        let im = &mut extra.import;
        im.format = Some(Tool::NcclTests.name().into());
        im.tool_version = s.tool_version.clone();
        im.test = Some(collective.clone());
        im.hosts = (!hosts.is_empty()).then(|| hosts.clone());
        im.count = Some(row.count);
        im.element_type = Some(row.ty.to_string());
        im.redop = Some(row.redop.clone());
        im.max_error = row.out.error;
        if let Some(ip) = row.inplace {
            im.in_place_us = Some(ip.time_us);
            im.in_place_algbw_gbps = Some(ip.algbw);
            im.in_place_busbw_gbps = Some(ip.busbw);
            im.in_place_wrong = ip.wrong;
            im.in_place_max_error = ip.error;
        }
        if cols.cputime {
            im.value = Some("cputime: host time per call (nccl-tests -C)".into());
        }
        extra.timing.dtype = row.dtype.and_then(|d| Dtype::from_str(d).ok());
        extra.timing.algbw_gbps = Some(row.out.algbw);
        extra.timing.busbw_gbps = Some(row.out.busbw);
        extra.nccl.nccl_version = s.nccl_version.clone();
        extra.nccl.env = s.env.clone();
        let graph = cx.graph || run.graph;
        out.records.push((
            n,
            ResultRecord {
                source: cx.source.unwrap_or(Source::Nccl),
                scenario: cx.scenario.clone().unwrap_or_else(|| LOG_SCENARIO.into()),
                topology: String::new(),
                workload: WorkloadKind::Allreduce,
                algorithm: cx.algorithm.unwrap_or(Measured::NCCL),
                placement: cx.placement,
                fidelity: None,
                launch: if graph {
                    LaunchMode::Graph
                } else {
                    LaunchMode::Eager
                },
                ranks: ranks.clone(),
                size_bytes: row.size,
                total_ns: ns,
                per_op_ns: vec![ns],
                stats,
                bandwidth_gbps: None,
                verified: row.out.wrong.map(|w| w == 0),
                events: None,
                wall_ns: None,
                busiest_link: None,
                machine: machine.clone(),
                extra,
            },
        ));
    }
    Ok(())
}

/// Parses every allreduce row of an nccl-tests log into records (what
/// [`import_nccl_tests`] returns, without the list of what it skipped).
pub fn parse_nccl_tests(file: &str, text: &str) -> Result<Vec<(usize, ResultRecord)>, CalibError> {
    Ok(import_nccl_tests(file, text)?.records)
}
