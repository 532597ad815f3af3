//! Measurements from the tools people already ran, as records of the
//! shared schema ([`ResultRecord`](contend_workload::ResultRecord)) that calibration, reports and the TUI
//! read: nccl-tests text ([`crate::nccl_tests`]) and JSON (`-J`),
//! p2pBandwidthLatencyTest (CUDA samples), nvbandwidth and p2pmark, beside
//! contend's own JSON Lines.
//!
//! Every record says what was measured (`extra.format`, `extra.test`, the
//! engine — copy engine or SM —, the direction, the concurrency, and, when
//! the tool printed a mean or a sum rather than the stream's own rate, what
//! the number is), so calibration builds the right twin. What an importer
//! does not turn into a record is listed with its line and the reason
//! ([`Skip`]); a line that looks like the tool's but does not parse is an
//! error naming the file and line.
//!
//! Inside a table — between its header and its end — a line that starts
//! like one of the table's rows (a number, or `GPU n` for p2pmark) and does
//! not parse is an error naming the file, line and column and what was
//! expected ([`CalibError::Row`]); other text there (a line another
//! process wrote into the output) is listed as skipped with its line. A
//! NUL byte anywhere is an error: no tool prints one. Every figure passes
//! one physics check ([`crate::measure::physics`]): a rate above the
//! fastest link, a time below 0.1 µs, a zero, negative or non-finite value
//! is an error naming where it is and why it is impossible
//! ([`CalibError::Impossible`]).

pub(crate) mod clean;
pub mod cuda_p2p;
pub(crate) mod imported;
pub mod nvbandwidth;
pub mod p2pmark;
mod probe;

pub use clean::{Noise, noise, prompt_command, strip_launcher};
pub use imported::{Imported, Skip, Tool};
pub(crate) use imported::{column, corrupt_row, impossible, row_error};

use crate::error::CalibError;
use contend_topo::Bytes;
use contend_workload::{Measured, WorkloadKind};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Which tool wrote `text` (`None`: none contend knows).
pub fn detect(text: &str) -> Option<Tool> {
    let head: String = text.chars().take(200_000).collect();
    let t = head.trim_start();
    if t.starts_with('{') {
        // one JSON document with nccl-tests' keys, else JSON Lines
        if head.contains("\"nccl_version\"") && head.contains("\"results\"") {
            return Some(Tool::NcclTestsJson);
        }
        return Some(Tool::Contend);
    }
    if head.contains("P2P (Peer-to-Peer) GPU Bandwidth Latency Test")
        || head.contains("P2P=Enabled Bandwidth")
        || head.contains("P2P=Disabled Bandwidth")
        || head.contains("P2P=Enabled Latency")
    {
        return Some(Tool::CudaP2p);
    }
    if head.contains("nvbandwidth Version")
        || head.contains("memcpy CE ")
        || head.contains("memcpy SM ")
    {
        return Some(Tool::Nvbandwidth);
    }
    let p2pmark_line = |l: &str| {
        let t: Vec<&str> = l.split_whitespace().collect();
        let probe = t.first().is_some_and(|x| {
            x.strip_prefix('+')
                .is_some_and(|k| k.trim_end_matches(':').parse::<usize>().is_ok())
        }) && t
            .get(1)
            .is_some_and(|x| x.contains("->") || x.contains("<-"));
        let ring = t.len() >= 7 && t[0] == "GPU" && t[2] == "->" && t[3] == "GPU" && t[6] == "GB/s";
        probe || ring
    };
    if head.lines().any(|l| p2pmark_line(strip_launcher(l)))
        || head.contains("=== Sequential P2P bandwidth")
        || head.contains("=== Sequential P2P latency")
        || head.contains("Topology probe: staggered")
        || head.contains("PCIe LINK SCORE")
    {
        return Some(Tool::P2pmark);
    }
    if head.lines().any(|l| {
        let l = strip_launcher(l).trim_start();
        let unhashed = l.trim_start_matches('#').trim_start();
        let header = unhashed.starts_with("size") && l.contains("count") && l.contains("type");
        header || unhashed.starts_with("nThread ")
    }) || head.contains("# nThread")
        || head.contains("# contend:")
    {
        return Some(Tool::NcclTests);
    }
    None
}

/// Reads one file of any known tool.
pub fn import_file(path: &Path) -> Result<Imported, CalibError> {
    let name = path.display().to_string();
    let text = contend_topo::bounded_read::read_text(path).map_err(CalibError::Read)?;
    import_text(&name, &text)
}

/// Reads one file's text (`file` names it in errors).
pub fn import_text(file: &str, text: &str) -> Result<Imported, CalibError> {
    // no tool prints a NUL byte: a file holding one is corrupt or binary
    if let Some(at) = text.find('\0') {
        let loc = contend_topo::Location::from_offset(file, text, at);
        return Err(CalibError::Row {
            file: file.to_string(),
            line: loc.line,
            column: Some(loc.column),
            message: "a NUL byte: no tool contend reads prints one, so the file is corrupt or binary (the line's figures cannot be trusted)".into(),
        });
    }
    let tool = detect(text).ok_or_else(|| CalibError::File {
        file: file.to_string(),
        message: "not the output of a tool contend reads (contend's JSON Lines, nccl-tests text or -J JSON, p2pBandwidthLatencyTest, nvbandwidth, p2pmark)".into(),
    })?;
    let out = match tool {
        Tool::Contend => {
            let mut out = Imported::new(file, tool);
            out.records = crate::jsonl::parse_jsonl(file, text)?;
            out
        }
        Tool::NcclTests => crate::nccl_tests::import_nccl_tests(file, text)?,
        Tool::NcclTestsJson => crate::nccl_tests::import_nccl_tests_json(file, text)?,
        Tool::CudaP2p => cuda_p2p::import(file, text)?,
        Tool::Nvbandwidth => nvbandwidth::import(file, text)?,
        Tool::P2pmark => p2pmark::import(file, text)?,
    };
    // every figure an importer made, against what any machine can do (the
    // importers check their cells as they read them; this catches the rest)
    for (line, r) in &out.records {
        if crate::measure::physics::applies(r) {
            crate::measure::physics::check_record(r, crate::measure::physics::Bounds::AnyBox)
                .map_err(|message| CalibError::Impossible {
                    file: file.to_string(),
                    line: *line,
                    column: None,
                    message: message.0,
                })?;
        }
    }
    if out.records.is_empty() {
        let why = out
            .skipped
            .iter()
            .take(3)
            .map(|s| format!("line {}: {}: {}", s.line, s.what, s.why))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(CalibError::File {
            file: file.to_string(),
            message: format!(
                "{} output with no measurement contend can use{}",
                tool.name(),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({why})")
                }
            ),
        });
    }
    Ok(out)
}

/// What one file holds, for people (`contend import`).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub file: String,
    pub tool: String,
    pub version: Option<String>,
    pub nccl_version: Option<String>,
    pub records: usize,
    /// Per test (collective or probe): records.
    pub tests: BTreeMap<String, usize>,
    /// GPU count and model names the output names.
    pub gpus: Option<usize>,
    pub gpu_models: Vec<String>,
    pub hosts: Vec<String>,
    /// Smallest and largest size, bytes.
    pub sizes: Option<(u64, u64)>,
    pub distinct_sizes: usize,
    pub skipped: Vec<Skip>,
    pub noise: BTreeMap<String, usize>,
}

impl Imported {
    /// What this import found.
    pub fn summary(&self) -> Summary {
        let recs = || self.records.iter().map(|r| &r.1);
        let mut tests: BTreeMap<String, usize> = BTreeMap::new();
        for r in recs() {
            let t =
                r.extra
                    .import
                    .test
                    .clone()
                    .unwrap_or_else(|| match (r.workload, r.algorithm) {
                        (WorkloadKind::Allreduce, Measured::NCCL) => "nccl allreduce".into(),
                        (w, a) => format!("{w} {a}"),
                    });
            *tests.entry(t).or_default() += 1;
        }
        let machine = recs().find_map(|r| r.machine.as_ref());
        let mut hosts: Vec<String> = recs()
            .flat_map(|r| {
                r.extra.import.hosts.clone().unwrap_or_else(|| {
                    r.machine
                        .as_ref()
                        .map(|m| m.hostname.clone())
                        .filter(|h| !h.is_empty())
                        .into_iter()
                        .collect()
                })
            })
            .collect();
        hosts.sort();
        hosts.dedup();
        let mut models: Vec<String> = machine.map(|m| m.gpus.clone()).unwrap_or_default();
        models.sort();
        models.dedup();
        let mut ids: Vec<&str> = recs()
            .flat_map(|r| r.ranks.iter().map(String::as_str))
            .filter(|g| g.starts_with("gpu"))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let gpus = machine
            .map(|m| m.gpus.len())
            .filter(|n| *n > 0)
            .or((!ids.is_empty()).then_some(ids.len()));
        let mut sizes: Vec<u64> = recs().map(|r| r.size_bytes).collect();
        sizes.sort_unstable();
        sizes.dedup();
        Summary {
            file: self.file.clone(),
            tool: self.tool.name().to_string(),
            version: self.version.clone(),
            nccl_version: recs().find_map(|r| r.extra.nccl.nccl_version.clone()),
            records: self.records.len(),
            tests,
            gpus,
            gpu_models: models,
            hosts,
            sizes: sizes.first().zip(sizes.last()).map(|(a, b)| (*a, *b)),
            distinct_sizes: sizes.len(),
            skipped: self.skipped.clone(),
            noise: self.noise.clone(),
        }
    }
}

impl Summary {
    /// The summary as lines for a terminal.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = write!(s, "{}: {}", self.file, self.tool);
        if let Some(v) = &self.version {
            let _ = write!(s, " {v}");
        }
        if let Some(v) = &self.nccl_version {
            let _ = write!(s, " (NCCL {v})");
        }
        let _ = writeln!(s, ", {} record(s)", self.records);
        for (t, n) in &self.tests {
            let _ = writeln!(s, "  {t}: {n}");
        }
        let gpus = match (self.gpus, self.gpu_models.as_slice()) {
            (Some(n), []) => format!("{n} GPU(s)"),
            (Some(n), m) => format!("{n} GPU(s): {}", m.join(", ")),
            (None, _) => "GPUs not stated".into(),
        };
        let hosts = match self.hosts.len() {
            0 => "host not stated".to_string(),
            1 => format!("host {}", self.hosts[0]),
            n => format!("{n} hosts ({}): not one box", self.hosts.join(", ")),
        };
        let _ = writeln!(s, "  {gpus}; {hosts}");
        if let Some((a, b)) = self.sizes {
            let _ = writeln!(
                s,
                "  sizes {} .. {} ({} distinct)",
                Bytes(a),
                Bytes(b),
                self.distinct_sizes
            );
        }
        for k in &self.skipped {
            let _ = writeln!(s, "  skipped line {}: {}: {}", k.line, k.what, k.why);
        }
        if !self.noise.is_empty() {
            let n: Vec<String> = self.noise.iter().map(|(k, v)| format!("{v} {k}")).collect();
            let _ = writeln!(s, "  not the tool's: {}", n.join(", "));
        }
        s
    }
}

/// Loads every file's records (any known tool), in order, each with its
/// file and line (`contend import`; calibrate and the TUI read through
/// [`crate::measure::read_records`]).
pub fn load_records(paths: &[&Path]) -> Result<Vec<Imported>, CalibError> {
    paths.iter().map(|p| import_file(p)).collect()
}

/// The records as JSON Lines (contend's format; `contend import --out`).
pub fn to_jsonl(imports: &[Imported]) -> Result<String, CalibError> {
    let mut s = String::new();
    for i in imports {
        for (_, r) in &i.records {
            let line = serde_json::to_string(r).map_err(|e| CalibError::File {
                file: i.file.clone(),
                message: format!("cannot write a record: {e}"),
            })?;
            s.push_str(&line);
            s.push('\n');
        }
    }
    Ok(s)
}
