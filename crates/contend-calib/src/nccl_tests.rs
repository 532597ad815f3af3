//! nccl-tests logs as a second source of measurements, and predictions
//! printed in the same format so they can be diffed against a user's logs.
//!
//! The table `all_reduce_perf` prints (sizes in bytes, times in µs, one
//! row per size with out-of-place and in-place columns):
//!
//! ```text
//! #                                                              out-of-place                       in-place
//! #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//! #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
//!        43008         21504  bfloat16     sum      -1    11.21    3.84    3.84      0    11.02    3.90    3.90      0
//! ```
//!
//! Each row becomes one [`ResultRecord`] (source `nccl`, algorithm `nccl`,
//! the out-of-place time as its median; the in-place columns in `extra`).
//! A `# contend: key=value ...` comment line (written by
//! [`nccl_tests_table`]) names the algorithm, placement, source and ranks of
//! the rows after it, so exported predictions parse back to what they were.

use crate::error::CalibError;
use contend_workload::{
    Dtype, Extra, LaunchMode, Machine, Measured, Placement, ResultRecord, Source, Stats,
    WorkloadKind,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::str::FromStr;

const HEADER: &str = "#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
";

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

#[derive(Clone, Debug, Default)]
struct Context {
    algorithm: Option<Measured>,
    placement: Option<Placement>,
    source: Option<Source>,
    ranks: Option<Vec<String>>,
    scenario: Option<String>,
    n_gpus: Option<usize>,
    graph: bool,
    host: Option<String>,
    devices: Vec<(String, String)>,
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

/// Parses every table row of an nccl-tests log into records.
pub fn parse_nccl_tests(file: &str, text: &str) -> Result<Vec<(usize, ResultRecord)>, CalibError> {
    let mut cx = Context::default();
    let mut out = vec![];
    let mut saw_header = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let err = |message: String| CalibError::Record {
            file: file.to_string(),
            line: n,
            message,
        };
        if let Some(c) = line.strip_prefix('#') {
            let c = c.trim();
            if let Some(rest) = c.strip_prefix("contend:") {
                parse_contend_line(file, n, rest, &mut cx)?;
            } else if c.starts_with("size") && c.contains("count") && c.contains("redop") {
                saw_header = true;
            } else if c.starts_with("nThread") {
                let w: Vec<&str> = c.split_whitespace().collect();
                let get = |k: &str| {
                    w.iter()
                        .position(|x| *x == k)
                        .and_then(|p| w.get(p + 1))
                        .and_then(|v| v.parse::<usize>().ok())
                };
                let threads = get("nThread").unwrap_or(1);
                // ranks = threads x GPUs per thread, at most a topology's nodes
                let max = contend_topo::limits::MAX_NODES;
                cx.n_gpus = match get("nGpus").map(|g| g.checked_mul(threads)) {
                    None => None,
                    Some(Some(n)) if (1..=max).contains(&n) => Some(n),
                    Some(_) => {
                        return Err(err(format!(
                            "nThread x nGpus is not a rank count from 1 to {max}"
                        )));
                    }
                };
                cx.graph = get("graph:").is_some_and(|g| g > 0);
            } else if let Some(r) = c.strip_prefix("Rank") {
                // `Rank  0 Group  0 Pid  123 on  host device  0 [0x06] NVIDIA H200`
                let host = r
                    .split(" on ")
                    .nth(1)
                    .and_then(|s| s.split_whitespace().next())
                    .map(str::to_string);
                let pci = r
                    .split('[')
                    .nth(1)
                    .and_then(|s| s.split(']').next())
                    .unwrap_or("")
                    .to_string();
                let name = r.split(']').nth(1).unwrap_or("").trim().to_string();
                cx.host = host.or(cx.host.take());
                cx.devices.push((name, pci));
            }
            continue;
        }
        if !saw_header {
            return Err(err(
                "a data row before the nccl-tests column header (`#  size  count  type  redop ...`): not an nccl-tests log"
                    .into(),
            ));
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 13 {
            return Err(err(format!(
                "expected 13 columns (size count type redop root, then time algbw busbw #wrong out of place and in place), found {}: truncated or not an allreduce table",
                f.len()
            )));
        }
        let num = |k: usize, what: &str| -> Result<f64, CalibError> {
            f[k].parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| err(format!("{what} `{}` is not a number", f[k])))
        };
        let size = f[0]
            .parse::<u64>()
            .map_err(|_| err(format!("size `{}` is not a byte count", f[0])))?;
        let count = f[1]
            .parse::<u64>()
            .map_err(|_| err(format!("count `{}` is not an element count", f[1])))?;
        let (ty, tsize, dtype) = TYPES
            .iter()
            .find(|t| t.0 == f[2])
            .copied()
            .ok_or_else(|| err(format!("unknown nccl-tests type `{}`", f[2])))?;
        if f[3] == "none" || f[4] != "-1" || count.checked_mul(tsize) != Some(size) {
            return Err(err(format!(
                "not an allreduce row (redop {}, root {}, {count} x {ty} for {size} B)",
                f[3], f[4]
            )));
        }
        let t = num(5, "time")?;
        if t <= 0.0 {
            return Err(err(format!("time {t} us is not positive")));
        }
        let wrong = |k: usize| -> Result<Option<u64>, CalibError> {
            if f[k] == "N/A" {
                Ok(None)
            } else {
                f[k].parse::<u64>()
                    .map(Some)
                    .map_err(|_| err(format!("#wrong `{}` is not a count", f[k])))
            }
        };
        let w_out = wrong(8)?;
        let w_in = wrong(12)?;
        let ranks = match (&cx.ranks, cx.devices.len(), cx.n_gpus) {
            (Some(r), _, _) => r.clone(),
            (None, d, _) if d > 0 => (0..d).map(|k| format!("gpu{k}")).collect(),
            (None, _, Some(g)) => (0..g).map(|k| format!("gpu{k}")).collect(),
            _ => {
                return Err(err(
                    "no rank count: neither an `# nThread .. nGpus ..` line, `# Rank` lines nor a `# contend: ranks=` line before the table"
                        .into(),
                ));
            }
        };
        let machine = (!cx.devices.is_empty()).then(|| Machine {
            hostname: cx.host.clone().unwrap_or_default(),
            gpus: cx.devices.iter().map(|d| d.0.clone()).collect(),
            pci_addresses: cx.devices.iter().map(|d| d.1.clone()).collect(),
            ..Machine::default()
        });
        let ns = t * 1000.0;
        let mut extra = Extra::default();
        extra.import.format = Some("nccl-tests".into());
        extra.import.count = Some(count);
        extra.import.element_type = Some(ty.to_string());
        extra.import.redop = Some(f[3].to_string());
        extra.timing.dtype = dtype.and_then(|d| Dtype::from_str(d).ok());
        extra.timing.algbw_gbps = Some(num(6, "algbw")?);
        extra.timing.busbw_gbps = Some(num(7, "busbw")?);
        extra.import.in_place_us = Some(num(9, "in-place time")?);
        extra.import.in_place_algbw_gbps = Some(num(10, "in-place algbw")?);
        extra.import.in_place_busbw_gbps = Some(num(11, "in-place busbw")?);
        extra.import.in_place_wrong = w_in;
        let source = cx.source.unwrap_or(Source::Nccl);
        out.push((
            n,
            ResultRecord {
                source,
                scenario: cx.scenario.clone().unwrap_or_else(|| "nccl-tests".into()),
                topology: String::new(),
                workload: WorkloadKind::Allreduce,
                algorithm: cx.algorithm.unwrap_or(Measured::NCCL),
                placement: cx.placement,
                fidelity: None,
                launch: if cx.graph {
                    LaunchMode::Graph
                } else {
                    LaunchMode::Eager
                },
                ranks,
                size_bytes: size,
                total_ns: ns,
                per_op_ns: vec![ns],
                stats: Stats::of(&[ns]),
                bandwidth_gbps: None,
                verified: w_out.map(|w| w == 0),
                events: None,
                wall_ns: None,
                busiest_link: None,
                machine,
                extra,
            },
        ));
    }
    Ok(out)
}

/// Allreduce records as nccl-tests tables: one table per (source,
/// algorithm, placement), sizes ascending. Sizes are bytes, times µs, algbw
/// = size / time, busbw = algbw x 2(n-1)/n as nccl-tests computes them.
/// Records without in-place figures repeat the out-of-place ones.
pub fn nccl_tests_table(records: &[ResultRecord]) -> String {
    type Key = (
        Source,
        Measured,
        Option<Placement>,
        Vec<String>,
        LaunchMode,
        String,
    );
    let mut order: Vec<Key> = vec![];
    let mut groups: BTreeMap<usize, Vec<&ResultRecord>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.workload == WorkloadKind::Allreduce)
    {
        let k: Key = (
            r.source,
            r.algorithm,
            r.placement,
            r.ranks.clone(),
            r.launch,
            r.scenario.clone(),
        );
        let i = match order.iter().position(|o| *o == k) {
            Some(i) => i,
            None => {
                order.push(k);
                order.len() - 1
            }
        };
        groups.entry(i).or_default().push(r);
    }
    let mut s = String::new();
    for (i, (source, alg, pl, ranks, launch, scenario)) in order.iter().enumerate() {
        let mut rows = groups.remove(&i).unwrap_or_default();
        rows.sort_by_key(|r| r.size_bytes);
        let n = ranks.len().max(1) as f64;
        let src = match source {
            Source::Sim => "sim",
            Source::Hw => "hw",
            Source::Nccl => "nccl",
        };
        let _ = writeln!(
            s,
            "# nThread 1 nGpus {} minBytes {} maxBytes {} step: 2(factor) warmup iters: 0 iters: 1 agg iters: 1 validation: 0 graph: {}",
            ranks.len(),
            rows.first().map_or(0, |r| r.size_bytes),
            rows.last().map_or(0, |r| r.size_bytes),
            u8::from(*launch == LaunchMode::Graph)
        );
        let _ = writeln!(
            s,
            "# contend: source={src} algorithm={alg} placement={} ranks={} scenario={}",
            pl.map_or("-".to_string(), |p| p.to_string()),
            ranks.join(","),
            if scenario.is_empty() { "-" } else { scenario }
        );
        if let Some(m) = rows.iter().find_map(|r| r.machine.as_ref())
            && !m.gpus.is_empty()
        {
            s.push_str("#\n# Using devices\n");
            for (k, g) in m.gpus.iter().enumerate() {
                let pci = m.pci_addresses.get(k).map_or("", |p| p.as_str());
                let host = if m.hostname.is_empty() {
                    "-"
                } else {
                    &m.hostname
                };
                let _ = writeln!(
                    s,
                    "#  Rank {k:2} Group  0 Pid      0 on {host:>10} device {k:2} [{pci}] {g}"
                );
            }
        }
        s.push_str("#\n");
        s.push_str(HEADER);
        for r in rows {
            let ty = r
                .extra
                .import
                .element_type
                .clone()
                .or_else(|| {
                    let d = r.extra.timing.dtype.unwrap_or(Dtype::Bf16).name();
                    TYPES
                        .iter()
                        .find(|t| t.2 == Some(d))
                        .map(|t| t.0.to_string())
                })
                .unwrap_or_else(|| "bfloat16".into());
            let tsize = TYPES.iter().find(|t| t.0 == ty).map_or(2, |t| t.1);
            let us = r.stats.median_ns / 1000.0;
            let alg_bw = |us: f64| r.size_bytes as f64 / (us * 1000.0);
            let bus = |a: f64| a * 2.0 * (n - 1.0) / n;
            let (t, i) = (&r.extra.timing, &r.extra.import);
            let (ab, bb) = (
                t.algbw_gbps.unwrap_or(alg_bw(us)),
                t.busbw_gbps.unwrap_or(bus(alg_bw(us))),
            );
            let ip = i.in_place_us.unwrap_or(us);
            let (iab, ibb) = (
                i.in_place_algbw_gbps.unwrap_or(alg_bw(ip)),
                i.in_place_busbw_gbps.unwrap_or(bus(alg_bw(ip))),
            );
            let wrong = |v: Option<bool>| match v {
                Some(true) => "0".to_string(),
                Some(false) => "1".to_string(),
                None => "N/A".to_string(),
            };
            let w_in = i
                .in_place_wrong
                .map_or_else(|| wrong(r.verified), |w| w.to_string());
            let redop = i.redop.as_deref().unwrap_or("sum");
            let _ = writeln!(
                s,
                "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {}  {:6.2}  {:6.2}  {:>5}  {}  {:6.2}  {:6.2}  {:>5}",
                r.size_bytes,
                r.size_bytes / tsize,
                ty,
                redop,
                -1,
                fmt_time(us),
                ab,
                bb,
                wrong(r.verified),
                fmt_time(ip),
                iab,
                ibb,
                w_in
            );
        }
        s.push_str("#\n");
    }
    s
}
