//! `p2pBandwidthLatencyTest` of the CUDA samples, read as its source
//! writes it (NVIDIA/cuda-samples
//! `Samples/5_Domain_Specific/p2pBandwidthLatencyTest/p2pBandwidthLatencyTest.cu`,
//! read at ca37378):
//!
//! - every bandwidth cell is 5 back-to-back `cudaMemcpyPeerAsync` of
//!   `numElems` ints (40,000,000 unless `--numElems=` says otherwise: 160
//!   MB) behind a blocking kernel, timed by events on the stream of the
//!   row's GPU i;
//! - "P2P Writes" (and the older plain "P2P=Enabled Bandwidth"): row i,
//!   column j copies i's buffer into j's on i's stream: i's copy engine
//!   pushes posted writes (`copy-peer` i -> j);
//! - "P2P Reads" (`--p2p_read`): j's buffer into i's, on i's stream: i's
//!   copy engine pulls (`copy-peer-read` i <- j);
//! - "Bidirectional": j -> i on a stream of j and i -> j on a stream of i
//!   at once, each pushed by its source; the cell is the sum of both, so
//!   each of the two concurrent streams is recorded at half of it;
//! - `--sm_copy` runs a copy kernel whose grid the occupancy API picks (not
//!   printed), so its cells are listed as skipped;
//! - "P2P=Disabled" copies are staged through host memory by the driver,
//!   and a pair that "CANNOT Access Peer" falls back to the same: no P2P
//!   twin, listed as skipped; so are diagonals (a GPU copying to itself,
//!   counted read + write);
//! - latency cells are 100 back-to-back 16-byte copies, GPU time / 100: a
//!   per-copy issue time of the copy engine, which the copy probe's twin
//!   (one isolated copy) does not measure, listed as skipped; the `CPU`
//!   rows are the host's enqueue time.

use super::probe::{End, Figure, ToolRun, gbps, record};
use super::{Imported, Tool, noise, prompt_command, strip_launcher};
use crate::error::CalibError;
use contend_workload::ProbeOp;

/// `numElems` when the command line does not set it.
const DEFAULT_ELEMS: u64 = 40_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Section {
    Connectivity,
    UniDisabled,
    UniWrites,
    UniReads,
    BidiDisabled,
    BidiEnabled,
    Latency,
}

fn section_of(line: &str) -> Option<Section> {
    let l = line.trim();
    Some(if l.starts_with("P2P Connectivity Matrix") {
        Section::Connectivity
    } else if l.starts_with("Unidirectional P2P=Disabled Bandwidth") {
        Section::UniDisabled
    } else if l.starts_with("Unidirectional P2P=Enabled Bandwidth (P2P Reads)") {
        Section::UniReads
    } else if l.starts_with("Unidirectional P2P=Enabled Bandwidth") {
        Section::UniWrites
    } else if l.starts_with("Bidirectional P2P=Disabled Bandwidth") {
        Section::BidiDisabled
    } else if l.starts_with("Bidirectional P2P=Enabled Bandwidth") {
        Section::BidiEnabled
    } else if l.starts_with("P2P=Disabled Latency") || l.starts_with("P2P=Enabled Latency") {
        Section::Latency
    } else {
        return None;
    })
}

/// Reads p2pBandwidthLatencyTest output.
pub fn import(file: &str, text: &str) -> Result<Imported, CalibError> {
    let mut out = Imported::new(file, Tool::CudaP2p);
    let mut run = ToolRun::default();
    let mut elems = DEFAULT_ELEMS;
    let mut sm_copy = false;
    let mut access: Vec<Vec<Option<bool>>> = vec![];
    // (section, its title line, title, matrix label `D\D`/`GPU`/`CPU`, columns)
    let mut cur: Option<(Section, usize, String)> = None;
    let mut cols: Option<(String, Vec<usize>)> = None;
    let mut figures: Vec<(usize, Figure)> = vec![];
    let mut skipped_cells: Vec<(usize, String, usize, &'static str)> = vec![];
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = strip_launcher(raw).trim_end();
        let t = line.trim();
        let err = |message: String| CalibError::Record {
            file: file.to_string(),
            line: n,
            message,
        };
        if let Some(c) = prompt_command(t) {
            for tok in c.split_whitespace() {
                if let Some(v) = tok.strip_prefix("--numElems=") {
                    elems =
                        v.parse::<u64>().ok().filter(|e| *e > 0).ok_or_else(|| {
                            err(format!("--numElems={v} is not an element count"))
                        })?;
                }
                if tok == "--sm_copy" {
                    sm_copy = true;
                }
            }
            out.count_noise(super::Noise::Prompt);
            continue;
        }
        if let Some(s) = section_of(t) {
            cur = Some((s, n, t.to_string()));
            cols = None;
            continue;
        }
        if let Some(rest) = t.strip_prefix("Device: ") {
            let d = contend_topo::import::cuda_device_line(t)
                .ok_or_else(|| err(format!("`Device: {rest}` has no device number")))?;
            // `Device: 0, NVIDIA GeForce RTX 4090, pciBusID: 2, pciDeviceID: 0, pciDomainID:0`
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
        if let Some(rest) = t.strip_prefix("Device=") {
            // `Device=0 CAN Access Peer Device=1`
            let mut it = rest.split_whitespace();
            let a = it.next().and_then(|x| x.parse::<usize>().ok());
            let can = it.next() == Some("CAN");
            let b = rest
                .rsplit("Device=")
                .next()
                .and_then(|x| x.trim().parse::<usize>().ok());
            match (a, b) {
                (Some(a), Some(b)) if set(&mut access, a, b, can) => continue,
                _ => {
                    return Err(err(format!(
                        "`{t}` names no device pair of at most {MAX_DEVICES} devices"
                    )));
                }
            }
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        if let Some(first) = toks.first()
            && ["D\\D", "GPU", "CPU"].contains(first)
            && toks.len() > 1
            && toks[1..].iter().all(|x| x.parse::<usize>().is_ok())
        {
            let c: Vec<usize> = toks[1..].iter().map(|x| x.parse().unwrap_or(0)).collect();
            cols = Some((first.to_string(), c));
            continue;
        }
        // inside a matrix (its title read), a line that starts like a row
        // must be one: which column, what was expected
        let row_like = toks
            .first()
            .is_some_and(|x| x.starts_with(|c: char| c.is_ascii_digit()));
        if let Some((_, title_line, title)) = &cur
            && (row_like || cols.is_some())
            && let Some(e) = super::corrupt_row(
                file,
                n,
                raw,
                &format!("inside the matrix `{title}` (line {title_line})"),
            )
        {
            return Err(e);
        }
        if row_like && let Some(first) = toks.first() {
            let at = Some(super::column(raw, first));
            match (&cur, &cols, first.parse::<usize>()) {
                (Some((_, _, title)), Some(_), Err(_)) => {
                    return Err(super::row_error(
                        file,
                        n,
                        at,
                        format!(
                            "`{first}` (column 1 of a row of `{title}`) is not a device number: a row starts with its GPU"
                        ),
                    ));
                }
                (Some((_, title_line, title)), None, _) => {
                    return Err(super::row_error(
                        file,
                        n,
                        at,
                        format!(
                            "a matrix row of `{title}` (line {title_line}) before its column header (`D\\D 0 1 ...`, or `GPU 0 1 ...` for latency)"
                        ),
                    ));
                }
                (None, Some((label, _)), _) => {
                    return Err(super::row_error(
                        file,
                        n,
                        at,
                        format!(
                            "a matrix row under a `{label}` column header with no title above it naming its test (`Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)` ...)"
                        ),
                    ));
                }
                _ => {}
            }
        }
        if let (Some((sec, title_line, title)), Some((label, c))) = (&cur, &cols)
            && let Some(first) = toks.first()
            && let Ok(row) = first.parse::<usize>()
        {
            if toks.len() != c.len() + 1 {
                return Err(err(format!(
                    "row {row} of `{title}` has {} values, the matrix header has {} columns: a truncated or cut row",
                    toks.len() - 1,
                    c.len()
                )));
            }
            for (k, &col) in c.iter().enumerate() {
                let v = toks[k + 1];
                if *sec == Section::Connectivity {
                    let can = v == "1";
                    if row != col && !set(&mut access, row, col, can) {
                        return Err(err(format!(
                            "device {row} or {col} is past {MAX_DEVICES} devices"
                        )));
                    }
                    continue;
                }
                let Some(value) = gbps(v) else {
                    return Err(super::row_error(
                        file,
                        n,
                        Some(super::column(raw, v)),
                        format!(
                            "`{v}` (row {row}, column {col} of `{title}`) is not a positive number"
                        ),
                    ));
                };
                // the physics: each stream's rate (a bidirectional cell
                // sums two, one each way); latency cells are times
                if *sec != Section::Latency {
                    let (per, note) = if matches!(sec, Section::BidiEnabled | Section::BidiDisabled)
                    {
                        (value / 2.0, ", half of the bidirectional sum")
                    } else {
                        (value, "")
                    };
                    crate::measure::physics::stream_rate(
                        per,
                        &format!("gpu{row}"),
                        &format!("gpu{col}"),
                        crate::measure::physics::Bounds::AnyBox,
                    )
                    .map_err(|m| {
                        super::impossible(
                            file,
                            n,
                            Some(super::column(raw, v)),
                            format!("`{v}` (row {row}, column {col} of `{title}`{note}): {m}"),
                        )
                    })?;
                }
                let why = if *sec == Section::Latency {
                    Some(if label == "CPU" {
                        "the CPU rows: the host's time to enqueue a copy"
                    } else {
                        "100 back-to-back 16-byte copies per cell (a per-copy issue time); the copy probe's twin is one isolated copy"
                    })
                } else if row == col {
                    Some("a GPU copying to itself (local memory, read + write counted)")
                } else if matches!(sec, Section::UniDisabled | Section::BidiDisabled) {
                    Some("P2P disabled: the driver stages the copy through host memory")
                } else if access.get(row).and_then(|r| r.get(col)).copied().flatten() == Some(false)
                {
                    Some(
                        "the pair CANNOT Access Peer: the copy falls back to staging through host memory",
                    )
                } else if sm_copy {
                    Some(
                        "--sm_copy: a copy kernel whose grid the occupancy API picks (not printed)",
                    )
                } else {
                    None
                };
                if let Some(why) = why {
                    skipped_cells.push((*title_line, title.clone(), n, why));
                    continue;
                }
                let bytes = elems.saturating_mul(4);
                match sec {
                    Section::UniWrites | Section::UniReads => {
                        let read = *sec == Section::UniReads;
                        figures.push((
                            n,
                            Figure {
                                op: if read {
                                    ProbeOp::CopyPeerRead
                                } else {
                                    ProbeOp::CopyPeer
                                },
                                from: row,
                                to: End::Gpu(col),
                                bytes,
                                gbps: value,
                                concurrent: 1,
                                group: None,
                                test: title.clone(),
                                value: None,
                            },
                        ));
                    }
                    Section::BidiEnabled => {
                        let group = format!("bidirectional {row}<->{col} (line {n})");
                        for (from, to) in [(row, col), (col, row)] {
                            figures.push((
                                n,
                                Figure {
                                    op: ProbeOp::CopyPeer,
                                    from,
                                    to: End::Gpu(to),
                                    bytes,
                                    gbps: value / 2.0,
                                    concurrent: 2,
                                    group: Some(group.clone()),
                                    test: title.clone(),
                                    value: Some(format!(
                                        "half of the bidirectional sum {value} GB/s of {row}<->{col}"
                                    )),
                                },
                            ));
                        }
                    }
                    _ => {}
                }
            }
            continue;
        }
        if let Some(kind) = noise(t) {
            out.count_noise(kind);
        } else {
            *out.noise.entry("other text".into()).or_default() += 1;
        }
        // a matrix ends at the first text that is neither a row nor blank
        // (the test's NOTE, a closing fence, what was pasted after it),
        // and with it its test
        if !t.is_empty() && cols.is_some() {
            cols = None;
            cur = None;
        }
    }
    // one entry per matrix and reason
    let mut seen: Vec<(usize, &'static str, usize)> = vec![];
    for (line, _, _, why) in &skipped_cells {
        match seen.iter_mut().find(|s| s.0 == *line && s.1 == *why) {
            Some(s) => s.2 += 1,
            None => seen.push((*line, why, 1)),
        }
    }
    for (line, why, k) in seen {
        let title = skipped_cells
            .iter()
            .find(|c| c.0 == line)
            .map(|c| c.1.clone())
            .unwrap_or_default();
        out.skip(line, format!("{k} cell(s) of `{title}`"), why);
    }
    out.records = figures
        .iter()
        .map(|(n, f)| (*n, record(Tool::CudaP2p, &run, f)))
        .collect();
    Ok(out)
}

/// Most devices a matrix may name (a topology's node limit).
const MAX_DEVICES: usize = contend_topo::limits::MAX_NODES;

/// Records whether `a` can access `b`; `false` when either is past [`MAX_DEVICES`].
fn set(m: &mut Vec<Vec<Option<bool>>>, a: usize, b: usize, v: bool) -> bool {
    if a >= MAX_DEVICES || b >= MAX_DEVICES {
        return false;
    }
    let n = a.max(b) + 1;
    if m.len() < n {
        m.resize(n, vec![]);
    }
    for r in m.iter_mut() {
        if r.len() < n {
            r.resize(n, None);
        }
    }
    m[a][b] = Some(v);
    true
}
