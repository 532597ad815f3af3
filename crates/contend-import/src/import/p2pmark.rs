//! p2pmark (lukealonso/p2pmark and its voipmonitor fork), read as its
//! `p2pmark.cu` measures and prints in two generations (read in the
//! repository's history):
//!
//! - up to 3c39f36: 64 MiB copies; the **topology probe** has every GPU i
//!   *read* GPU (i+k) mod N at once (`+k  0<-k 1<-k+1 ...  AVG avg  TOTAL
//!   total`, the copy on the reader's stream: `copy-peer-read`); **single
//!   reader** (`GPU r reads from all peers: X GB/s`: N-1 concurrent reads);
//!   **all GPUs read all peers** (`GPU i: X GB/s`: N(N-1) concurrent reads);
//! - from 78d9dfd: 160,000,000-byte copies (`Each transfer: 152 MB`);
//!   every pattern *writes* (the copy on the writer's stream, its copy
//!   engine pushing: `copy-peer`): the probe prints `0->k ...`; **single
//!   GPU writes to all peers** (`GPU w writes to all peers: X`); **ring**
//!   (`GPU i -> GPU j: X GB/s`, one per GPU, all at once: each its own
//!   rate); **all-to-all** (`GPU i: X GB/s`).
//! - both: the **sequential** NxN matrix (`Dst->` header, row s column d: s
//!   copies into d on s's stream, `copy-peer`).
//!
//! The probe prints only the mean and the sum of the per-GPU rates, so
//! each of its N concurrent streams is recorded at the mean; a reader's or
//! writer's total over its N-1 streams is split evenly; the records say
//! so (`extra.value`). Lines are recognised by their own shape, so the
//! blocks people quote without p2pmark's `===` headings still read; a
//! probe line edited to `+k: X GB/s avg (T total)` names its GPU count
//! (T / X) and takes its direction from the rest of the file's output.
//! Scores and totals are derived and skipped; so is the latency mode
//! (single-thread remote loads, which no contend probe twins yet).

use super::probe::{End, Figure, ToolRun, gbps, record};
use super::{Imported, Tool, noise, strip_launcher};
use crate::error::CalibError;
use contend_workload::ProbeOp;

/// The most GPUs a line may name (a topology's node limit).
const MAX_GPUS: usize = contend_topo::limits::MAX_NODES;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Section {
    Sequential,
    /// `GPU r reads from all peers` / `GPU w writes to all peers`.
    OneToAll,
    /// `GPU i: X GB/s`: every GPU to every peer.
    AllToAll,
    Latency,
    Other,
}

/// Which generation's direction a line shows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Dir {
    Read,
    Write,
}

impl Dir {
    fn op(self) -> ProbeOp {
        match self {
            Dir::Read => ProbeOp::CopyPeerRead,
            Dir::Write => ProbeOp::CopyPeer,
        }
    }
}

/// One measured pattern, before the copy size and direction are settled.
#[derive(Clone, Debug)]
struct Block {
    line: usize,
    test: String,
    /// (engine GPU, other GPU, rate GB/s).
    streams: Vec<(usize, usize, f64)>,
    value: Option<String>,
    /// `None`: the file's direction.
    dir: Option<Dir>,
}

/// Reads p2pmark output.
pub fn import(file: &str, text: &str) -> Result<Imported, CalibError> {
    let mut scan = Scan::new(file);
    for (i, raw) in text.lines().enumerate() {
        scan.line(i + 1, raw, strip_launcher(raw).trim())?;
    }
    scan.finish()
}

/// Lines that sum or score the figures around them (skipped, named).
const DERIVED: [&str; 13] = [
    "Effective system bandwidth",
    "Total system bandwidth",
    "Total all-to-all bandwidth",
    "Total ring bandwidth",
    "Total:",
    "PCIe LINK SCORE",
    "DENSE INTERCONNECT SCORE",
    "Average 1:1 latency",
    "EFFECTIVE LATENCY",
    "Min latency",
    "Mean latency",
    "P2P LATENCY",
    "LOADED LATENCY",
];

/// What the lines read so far have given: the blocks measured, and what
/// waits for the whole file (the GPU count, the copy size, the direction).
struct Scan<'a> {
    file: &'a str,
    out: Imported,
    ngpu: Option<usize>,
    size: Option<u64>,
    sec: Section,
    /// The direction the file's lines show (a heading or a probe's pairs).
    dir_seen: Option<Dir>,
    seq_cols: Option<Vec<usize>>,
    blocks: Vec<Block>,
    /// Edited probe lines waiting for the file's direction: (line, k, n, avg).
    edited: Vec<(usize, usize, usize, f64)>,
    /// The ring block being read.
    ring: Option<Block>,
    /// `GPU i: X GB/s` rows of the all-GPUs test: (line, GPU, rate).
    per_gpu: Vec<(usize, usize, f64)>,
    /// One GPU to or from all peers: (line, GPU, rate, direction).
    one_to_all: Vec<(usize, usize, f64, Dir)>,
}

type Err<'e> = &'e dyn Fn(String) -> CalibError;

impl<'a> Scan<'a> {
    fn new(file: &'a str) -> Scan<'a> {
        Scan {
            file,
            out: Imported::new(file, Tool::P2pmark),
            ngpu: None,
            size: None,
            sec: Section::Other,
            dir_seen: None,
            seq_cols: None,
            blocks: vec![],
            edited: vec![],
            ring: None,
            per_gpu: vec![],
            one_to_all: vec![],
        }
    }

    /// Line `n` (`t`: `raw` trimmed, launcher prefix gone).
    fn line(&mut self, n: usize, raw: &str, t: &str) -> Result<(), CalibError> {
        let file = self.file;
        let err = |message: String| CalibError::Record {
            file: file.to_string(),
            line: n,
            message,
        };
        // a figure through the physics check: the token, what it is
        let rate = |tok: &str, what: String| -> Result<f64, CalibError> {
            let at = Some(super::column(raw, tok));
            let v = gbps(tok).ok_or_else(|| {
                super::row_error(file, n, at, format!("`{tok}` ({what}) is not a rate"))
            })?;
            crate::measure::physics::stream_rate(
                v,
                "gpu0",
                "gpu1",
                crate::measure::physics::Bounds::AnyBox,
            )
            .map_err(|m| super::impossible(file, n, at, format!("`{tok}` ({what}): {m}")))?;
            Ok(v)
        };
        let toks: Vec<&str> = t.split_whitespace().collect();
        // inside a section of rows, a line that starts like one (`GPU n`)
        // must be one
        let row_section = matches!(
            self.sec,
            Section::Sequential | Section::OneToAll | Section::AllToAll
        );
        let gpu_like = toks.first() == Some(&"GPU");
        if (gpu_like || (row_section && toks.first() == Some(&"Dst->")))
            && let Some(e) = super::corrupt_row(file, n, raw, "in a row of p2pmark's output")
        {
            return Err(e);
        }
        if row_section && gpu_like && gpu_row(&toks).is_none() {
            let tok = toks.get(1).copied().unwrap_or("");
            return Err(super::row_error(
                file,
                n,
                Some(super::column(raw, toks.get(1).copied().unwrap_or(toks[0]))),
                format!(
                    "`GPU {tok}`: a row of this section starts with `GPU n` (n a GPU number below {MAX_GPUS})"
                ),
            ));
        }
        // a ring block ends at the first line that is not one of its own
        let ring_line = ring_stream(&toks, &err)?;
        if let Some((a, b, _)) = ring_line {
            rate(toks[5], format!("the ring stream GPU {a} -> GPU {b}"))?;
        }
        if ring_line.is_none()
            && let Some(b) = self.ring.take()
        {
            self.blocks.push(b);
        }
        if let Some((a, b, v)) = ring_line {
            self.dir_seen = Some(Dir::Write);
            self.ring
                .get_or_insert_with(|| Block {
                    line: n,
                    test: "ring".into(),
                    streams: vec![],
                    value: None,
                    dir: Some(Dir::Write),
                })
                .streams
                .push((a, b, v));
            return Ok(());
        }
        if self.counts(t) || self.heading(n, t) {
            return Ok(());
        }
        if let Some(d) = DERIVED.iter().find(|d| t.starts_with(*d)) {
            self.out.skip(
                n,
                d.trim_end_matches(':').to_string(),
                "derived from the figures around it (a sum or a score)",
            );
            return Ok(());
        }
        if self.sec == Section::Latency {
            if !t.is_empty() {
                *self
                    .out
                    .noise
                    .entry("latency-mode line".into())
                    .or_default() += 1;
            }
            return Ok(());
        }
        // the topology probe, with or without its heading
        if let Some(k) = toks
            .first()
            .and_then(|x| x.strip_prefix('+'))
            .and_then(|x| x.trim_end_matches(':').parse::<usize>().ok())
        {
            // the mean: the first number after the pairs
            if let Some(avg) = toks[1..]
                .iter()
                .find(|x| x.trim_start_matches('(').parse::<f64>().is_ok())
            {
                rate(
                    avg.trim_start_matches('('),
                    format!("the mean per-GPU rate of probe round +{k}"),
                )?;
            }
            return self.probe(n, k, &toks, &err);
        }
        match self.sec {
            Section::Sequential => {
                if let Some(row) = gpu_row(&toks) {
                    for (k, v) in toks.iter().enumerate().skip(2) {
                        if *v != "-" {
                            rate(
                                v,
                                format!("GPU {row}'s cell {} of the sequential matrix", k - 1),
                            )?;
                        }
                    }
                }
                self.sequential(n, t, &toks, &err)?
            }
            Section::OneToAll => {
                let split = t
                    .split_once("reads from all peers:")
                    .map(|x| (x.1, Dir::Read))
                    .or_else(|| {
                        t.split_once("writes to all peers:")
                            .map(|x| (x.1, Dir::Write))
                    });
                match (gpu_row(&toks), split) {
                    (Some(r), Some((v, d))) => {
                        let tok = v.split_whitespace().next().unwrap_or("");
                        let v = rate(tok, format!("GPU {r}'s total over all peers"))?;
                        self.one_to_all.push((n, r, v, d));
                    }
                    (Some(r), None) => {
                        return Err(super::row_error(
                            file,
                            n,
                            None,
                            format!(
                                "GPU {r}'s row: expected `GPU {r} reads from all peers: X GB/s` (or `writes to all peers:`)"
                            ),
                        ));
                    }
                    _ => count(&mut self.out, t),
                }
            }
            Section::AllToAll => match (gpu_row(&toks), toks.get(2)) {
                (Some(r), Some(v)) if toks.get(3) == Some(&"GB/s") => {
                    let v = rate(v, format!("GPU {r}'s rate to all peers"))?;
                    self.per_gpu.push((n, r, v));
                }
                (Some(r), _) => {
                    return Err(super::row_error(
                        file,
                        n,
                        None,
                        format!("GPU {r}'s row: expected `GPU {r}: X GB/s`"),
                    ));
                }
                _ => count(&mut self.out, t),
            },
            _ => count(&mut self.out, t),
        }
        Ok(())
    }

    /// `Found N GPUs` and `Each transfer: M MB`: whether `t` was one.
    fn counts(&mut self, t: &str) -> bool {
        if let Some(rest) = t.strip_prefix("Found ")
            && let Some(k) = rest.strip_suffix(" GPUs").or(rest.strip_suffix(" GPU"))
        {
            self.ngpu = k.trim().parse().ok().filter(|g| (1..=MAX_GPUS).contains(g));
            return true;
        }
        if let Some(rest) = t.strip_prefix("Each transfer:")
            && let Some(mb) = rest
                .split_whitespace()
                .next()
                .and_then(|x| x.parse::<u64>().ok())
        {
            // 160,000,000 B prints as 152 (MiB, rounded down)
            self.size = Some(if mb == 152 { 160_000_000 } else { mb << 20 });
            return true;
        }
        false
    }

    /// A `=== … ===` heading: the section it opens, and the direction its
    /// words give; whether `t` was one.
    fn heading(&mut self, n: usize, t: &str) -> bool {
        if !(t.starts_with("===") && t.ends_with("===") && t.len() > 6) {
            return false;
        }
        let h = t.trim_matches('=').trim();
        self.sec = if h.contains("LATENCY MODE") || h.ends_with("(us)") {
            if !self
                .out
                .skipped
                .iter()
                .any(|s| s.what.starts_with("latency mode"))
            {
                self.out.skip(
                    n,
                    format!("latency mode: `{h}`"),
                    "single-thread remote loads of one 128-byte line: no contend probe twins them yet",
                );
            }
            Section::Latency
        } else if h.starts_with("Sequential P2P bandwidth") {
            Section::Sequential
        } else if h.starts_with("Single reader") || h.starts_with("Single GPU writes") {
            Section::OneToAll
        } else if h.starts_with("All GPUs read all peers") || h.starts_with("All-to-all") {
            if h.starts_with("All GPUs read") {
                self.dir_seen.get_or_insert(Dir::Read);
            } else {
                self.dir_seen = Some(Dir::Write);
            }
            Section::AllToAll
        } else {
            if h.contains("staggered writes") || h.contains("writes to next") {
                self.dir_seen = Some(Dir::Write);
            } else if h.contains("staggered reads") {
                self.dir_seen.get_or_insert(Dir::Read);
            }
            Section::Other
        };
        self.seq_cols = None;
        true
    }

    /// A topology probe line `+k …`: its pairs at the mean rate, or (an
    /// edited line without pairs) its GPU count from the total, kept for
    /// the file's direction.
    fn probe(&mut self, n: usize, k: usize, toks: &[&str], err: Err<'_>) -> Result<(), CalibError> {
        let (pairs, dir) = probe_pairs(toks, err)?;
        let nums: Vec<f64> = toks[1..]
            .iter()
            .filter_map(|x| x.trim_start_matches('(').parse::<f64>().ok())
            .collect();
        let avg = nums.first().copied().filter(|v| v.is_finite() && *v > 0.0);
        let Some(avg) = avg else {
            return Err(err(format!("probe round +{k} has no rate")));
        };
        if pairs.is_empty() {
            // `+k: X GB/s avg (T total)`: T / X GPUs, the file's direction
            match nums.get(1).map(|total| (total / avg).round() as usize) {
                Some(g) if (2..=MAX_GPUS).contains(&g) && k < g => {
                    self.edited.push((n, k, g, avg));
                }
                _ => self.out.skip(
                    n,
                    format!("topology probe +{k}"),
                    "the line names neither its reader/writer pairs nor its total (an edited copy of p2pmark's output)",
                ),
            }
            return Ok(());
        }
        self.dir_seen.get_or_insert(dir);
        self.blocks.push(Block {
            line: n,
            test: format!("topology probe +{k}"),
            value: Some(format!(
                "the mean of {} concurrent per-GPU rates (p2pmark prints only the mean)",
                pairs.len()
            )),
            streams: pairs.iter().map(|&(a, b)| (a, b, avg)).collect(),
            dir: Some(dir),
        });
        Ok(())
    }

    /// A line of the sequential matrix: its `Dst->` header or a row, each
    /// cell a copy of its own.
    fn sequential(
        &mut self,
        n: usize,
        t: &str,
        toks: &[&str],
        err: Err<'_>,
    ) -> Result<(), CalibError> {
        if toks.first() == Some(&"Dst->") {
            let c = toks[1..]
                .iter()
                .map(|g| {
                    g.strip_prefix("GPU")
                        .and_then(|x| x.parse::<usize>().ok())
                        .filter(|x| *x < MAX_GPUS)
                        .ok_or_else(|| err(format!("`{g}` is not a GPU column")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            self.seq_cols = Some(c);
            return Ok(());
        }
        let Some(row) = gpu_row(toks) else {
            count(&mut self.out, t);
            return Ok(());
        };
        let Some(c) = &self.seq_cols else {
            return Err(err("a matrix row before the `Dst->` header".into()));
        };
        let vals = &toks[2..];
        if vals.len() != c.len() {
            return Err(err(format!(
                "row GPU {row} has {} values, the header has {} columns: a truncated or cut row",
                vals.len(),
                c.len()
            )));
        }
        for (k, &d) in c.iter().enumerate() {
            if vals[k] == "-" || d == row {
                continue;
            }
            let v = gbps(vals[k]).ok_or_else(|| {
                err(format!(
                    "`{}` (GPU {row} -> GPU {d}) is not a positive number",
                    vals[k]
                ))
            })?;
            self.blocks.push(Block {
                line: n,
                test: "sequential".into(),
                streams: vec![(row, d, v)],
                value: None,
                dir: Some(Dir::Write),
            });
        }
        Ok(())
    }

    /// The blocks that needed the whole file (the GPU count, its
    /// direction), then every block's streams as records.
    fn finish(mut self) -> Result<Imported, CalibError> {
        if let Some(b) = self.ring.take() {
            self.blocks.push(b);
        }
        let seen_max = self
            .blocks
            .iter()
            .flat_map(|b| b.streams.iter().map(|s| s.0.max(s.1) + 1))
            .chain(self.one_to_all.iter().map(|s| s.1 + 1))
            .chain(self.per_gpu.iter().map(|s| s.1 + 1))
            .max()
            .unwrap_or(0);
        let g_all = self.ngpu.unwrap_or(seen_max).max(seen_max);
        self.spread_totals(g_all)?;
        self.edited_probes();
        self.records();
        Ok(self.out)
    }

    /// One GPU's total to or from all peers, and each GPU's in the
    /// all-GPUs test, split evenly over its `g_all - 1` streams.
    fn spread_totals(&mut self, g_all: usize) -> Result<(), CalibError> {
        for &(line, r, v, d) in &self.one_to_all {
            if g_all < 2 {
                break;
            }
            self.blocks.push(Block {
                line,
                test: match d {
                    Dir::Read => "single reader".into(),
                    Dir::Write => "single GPU writes to all peers".into(),
                },
                streams: (1..g_all)
                    .map(|k| (r, (r + k) % g_all, v / (g_all - 1) as f64))
                    .collect(),
                value: Some(format!(
                    "GPU {r}'s {v} GB/s over {} concurrent streams, split evenly",
                    g_all - 1
                )),
                dir: Some(d),
            });
        }
        let per_gpu = &self.per_gpu;
        if per_gpu.is_empty() {
            return Ok(());
        }
        if per_gpu.len() != g_all {
            return Err(CalibError::Record {
                file: self.file.to_string(),
                line: per_gpu[0].0,
                message: format!(
                    "the all-GPUs test lists {} of {g_all} GPUs: truncated",
                    per_gpu.len()
                ),
            });
        }
        let mut streams = vec![];
        for &(_, r, v) in per_gpu {
            streams.extend((1..g_all).map(|k| (r, (r + k) % g_all, v / (g_all - 1) as f64)));
        }
        self.blocks.push(Block {
            line: per_gpu[0].0,
            test: "all GPUs to all peers".into(),
            value: Some(format!(
                "each GPU's rate over its {} concurrent streams, split evenly; {} streams in all",
                g_all - 1,
                streams.len()
            )),
            streams,
            dir: None,
        });
        Ok(())
    }

    /// Edited probe lines at the file's direction (skipped when no line
    /// gives it).
    fn edited_probes(&mut self) {
        for (line, k, g, avg) in std::mem::take(&mut self.edited) {
            match self.dir_seen {
                Some(d) => self.blocks.push(Block {
                    line,
                    test: format!("topology probe +{k}"),
                    streams: (0..g).map(|i| (i, (i + k) % g, avg)).collect(),
                    value: Some(format!(
                        "the mean of {g} concurrent per-GPU rates; the pairs are p2pmark's (GPU i and GPU i+{k} mod {g}), the line lists none"
                    )),
                    dir: Some(d),
                }),
                None => self.out.skip(
                    line,
                    format!("topology probe +{k}"),
                    "an edited line without pairs, and no other line of the file says whether this p2pmark reads or writes",
                ),
            }
        }
    }

    /// Every block's streams as records, at the copy size printed (else
    /// the generation's) and the block's direction (else the file's).
    fn records(&mut self) {
        let (bytes, size_note) = match (self.size, self.dir_seen) {
            (Some(b), _) => (b, None),
            (None, Some(Dir::Write)) => (
                160_000_000,
                Some(
                    "160,000,000 B per copy (the writing generation's TRANSFER_SIZE; not printed here)",
                ),
            ),
            (None, _) => (
                64 << 20,
                Some("64 MiB per copy (TRANSFER_SIZE up to 3c39f36; not printed here)"),
            ),
        };
        let run = ToolRun::default();
        let mut records = vec![];
        for b in &self.blocks {
            let Some(dir) = b.dir.or(self.dir_seen) else {
                self.out.skip(
                    b.line,
                    b.test.clone(),
                    "no line of the file says whether this p2pmark reads or writes",
                );
                continue;
            };
            let conc = b.streams.len() as u32;
            let group = (conc > 1).then(|| format!("{} (line {})", b.test, b.line));
            for &(a, other, v) in &b.streams {
                let value = match (&b.value, size_note) {
                    (Some(x), Some(s)) => Some(format!("{x}; {s}")),
                    (Some(x), None) => Some(x.clone()),
                    (None, Some(s)) => Some(s.to_string()),
                    (None, None) => None,
                };
                let f = Figure {
                    op: dir.op(),
                    from: a,
                    to: End::Gpu(other),
                    bytes,
                    gbps: v,
                    concurrent: conc,
                    group: group.clone(),
                    test: b.test.clone(),
                    value,
                };
                records.push((b.line, record(Tool::P2pmark, &run, &f)));
            }
        }
        self.out.records = records;
    }
}

/// `GPU 0 -> GPU 1: 51.40 GB/s` (the ring test of the writing generation).
fn ring_stream(toks: &[&str], err: Err<'_>) -> Result<Option<(usize, usize, f64)>, CalibError> {
    if toks.len() < 6 || toks[0] != "GPU" || toks[2] != "->" || toks[3] != "GPU" {
        return Ok(None);
    }
    let (Some(b), Some(v)) = (toks[4].strip_suffix(':'), toks.get(5)) else {
        return Ok(None);
    };
    if toks.get(6) != Some(&"GB/s") {
        return Ok(None);
    }
    let a = gpu(toks[1], err)?;
    let b = gpu(b, err)?;
    let v = gbps(v).ok_or_else(|| err(format!("`{v}` is not a rate")))?;
    Ok(Some((a, b, v)))
}

/// The `0<-3` (reads) or `0->3` (writes) pairs of a probe line: (engine, other).
fn probe_pairs(toks: &[&str], err: Err<'_>) -> Result<(Vec<(usize, usize)>, Dir), CalibError> {
    let mut pairs = vec![];
    let mut dir = Dir::Read;
    for t in toks {
        if let Some((a, b)) = t.split_once("<-") {
            pairs.push((gpu(a, err)?, gpu(b, err)?));
            dir = Dir::Read;
        } else if let Some((a, b)) = t.split_once("->") {
            pairs.push((gpu(a, err)?, gpu(b, err)?));
            dir = Dir::Write;
        }
    }
    Ok((pairs, dir))
}

/// `GPU 3:` (or `GPU 3 reads ...`): the GPU a row is about.
fn gpu_row(toks: &[&str]) -> Option<usize> {
    if toks.first() != Some(&"GPU") {
        return None;
    }
    toks.get(1)?
        .trim_end_matches(':')
        .parse::<usize>()
        .ok()
        .filter(|g| *g < MAX_GPUS)
}

fn gpu(x: &str, err: Err<'_>) -> Result<usize, CalibError> {
    x.parse::<usize>()
        .ok()
        .filter(|g| *g < MAX_GPUS)
        .ok_or_else(|| err(format!("`{x}` is not a GPU number")))
}

fn count(out: &mut Imported, t: &str) {
    match noise(t) {
        Some(k) => out.count_noise(k),
        None => *out.noise.entry("other text".into()).or_default() += 1,
    }
}
