//! The table `contend advise --emit nccl-tuner-table` writes and contend's
//! NCCL tuner plugin (`crates/contend-tuner`) reads at init: for each
//! communicator shape (rank count, node count), for each collective and
//! size range, contend's predicted time of every NCCL algorithm and
//! protocol it predicted and the channels to give each; and, for the tuner
//! ABI v5 and later, NCCL base latencies (`baseLatencies`,
//! `ncclTunerConstants_v5_t`, NVIDIA/nccl `src/include/plugin/tuner/tuner_v5.h`
//! v2.28.3-1) for that communicator.
//!
//! ```toml
//! format = "contend-nccl-tuner-table/1"
//! stamp = "contend 0.1.0, params defaults #1234abcd"
//! topology = "pro6000-4x-1socket"
//! nccl = "2.28"
//!
//! [[comm]]
//! ranks = 2
//! nodes = 1
//! note = "…"                       # optional; the plugin logs it
//!
//! [[comm.base_latency]]            # v5+: baseLatencies[algorithm][protocol], µs
//! algorithm = "ring"
//! protocol = "ll"
//! us = 6.2
//!
//! [[comm.range]]                   # sizes min_bytes..=max_bytes of one collective
//! collective = "allreduce"
//! min_bytes = 1024
//! max_bytes = 2048
//! cost = [ { algorithm = "ring", protocol = "ll", us = [12.1, 12.9], channels = 2 } ]
//! ```
//!
//! A cost's `us` holds the predicted times at `min_bytes` and at
//! `max_bytes`; a size between costs the straight line between them.
//! Ranges of one collective are in increasing order and do not overlap;
//! sizes outside every range have no entry (the plugin leaves those calls
//! to NCCL). Every rule of the format is checked here, once, by the
//! builders both the emitter and [`parse`] go through, so a table that
//! exists is a valid one; a file that breaks a rule is refused with its
//! file, line, column and field.

use crate::tuning::{Algorithm, Protocol};
use contend_topo::Location;
use std::fmt::{self, Write as _};
use thiserror::Error;

mod parse;
pub use parse::parse;

/// The `format` value of this version of the table.
pub const FORMAT: &str = "contend-nccl-tuner-table/1";

/// The most channels NCCL runs a collective on (`MAXCHANNELS` 64,
/// `src/include/device.h` v2.28.3-1).
pub const MAX_CHANNELS: u32 = 64;

/// The collectives NCCL asks a tuner about (`ncclFunc_t`,
/// `src/include/nccl_common.h` v2.28.3-1: the first five, which
/// `NCCL_NUM_FUNCTIONS` counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Collective {
    Broadcast,
    Reduce,
    AllGather,
    ReduceScatter,
    AllReduce,
}

impl Collective {
    pub const ALL: [Collective; 5] = [
        Collective::Broadcast,
        Collective::Reduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::AllReduce,
    ];
    /// Its `ncclFunc_t` value.
    pub fn func(self) -> i32 {
        self as i32
    }
    pub fn from_func(f: i32) -> Option<Collective> {
        usize::try_from(f)
            .ok()
            .and_then(|i| Collective::ALL.get(i).copied())
    }
    /// The name the table writes (the example tuner plugin's spelling).
    pub fn name(self) -> &'static str {
        [
            "broadcast",
            "reduce",
            "allgather",
            "reducescatter",
            "allreduce",
        ][self as usize]
    }
    pub fn parse(s: &str) -> Option<Collective> {
        Collective::ALL.into_iter().find(|c| c.name() == s)
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The table's spelling of an algorithm: NCCL's log name in lower case
/// (`ring`, `tree`, `nvls_tree`, …).
pub fn algorithm_name(a: Algorithm) -> String {
    a.log_name().to_ascii_lowercase()
}

/// The table's spelling of a protocol: `ll`, `ll128`, `simple`.
pub fn protocol_name(p: Protocol) -> String {
    p.log_name().to_ascii_lowercase()
}

/// A rule an item breaks: the field to blame and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub field: &'static str,
    pub message: String,
}

impl Problem {
    fn new(field: &'static str, message: impl Into<String>) -> Problem {
        Problem {
            field,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.field, self.message)
    }
}

fn time_ok(field: &'static str, us: f64) -> Result<(), Problem> {
    if us.is_finite() && us >= 0.0 {
        Ok(())
    } else {
        Err(Problem::new(
            field,
            format!("{us} is not a time in µs (finite, 0 or more)"),
        ))
    }
}

/// One algorithm and protocol's predicted time over a range, and its channels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    algorithm: Algorithm,
    protocol: Protocol,
    us: [f64; 2],
    channels: u32,
}

impl Cost {
    /// `us`: the predicted times at the range's first and last size.
    pub fn new(
        algorithm: Algorithm,
        protocol: Protocol,
        us: [f64; 2],
        channels: u32,
    ) -> Result<Cost, Problem> {
        time_ok("us", us[0])?;
        time_ok("us", us[1])?;
        if channels == 0 || channels > MAX_CHANNELS {
            return Err(Problem::new(
                "channels",
                format!("{channels} channels: NCCL runs 1 to {MAX_CHANNELS}"),
            ));
        }
        Ok(Cost {
            algorithm,
            protocol,
            us,
            channels,
        })
    }
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
    pub fn us(&self) -> [f64; 2] {
        self.us
    }
    pub fn channels(&self) -> u32 {
        self.channels
    }
}

/// The sizes `min_bytes..=max_bytes` of one collective.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeRange {
    collective: Collective,
    min_bytes: u64,
    max_bytes: u64,
    costs: Vec<Cost>,
}

impl SizeRange {
    pub fn new(collective: Collective, min_bytes: u64, max_bytes: u64) -> Result<Self, Problem> {
        if min_bytes > max_bytes {
            return Err(Problem::new(
                "max_bytes",
                format!("{max_bytes} is below min_bytes {min_bytes}"),
            ));
        }
        Ok(SizeRange {
            collective,
            min_bytes,
            max_bytes,
            costs: Vec::new(),
        })
    }
    /// Adds a cost; one per algorithm and protocol.
    pub fn add_cost(&mut self, c: Cost) -> Result<(), Problem> {
        if self
            .costs
            .iter()
            .any(|x| x.algorithm == c.algorithm && x.protocol == c.protocol)
        {
            return Err(Problem::new(
                "cost",
                format!(
                    "{}/{} has two costs in one range",
                    algorithm_name(c.algorithm),
                    protocol_name(c.protocol)
                ),
            ));
        }
        if self.min_bytes == self.max_bytes && c.us[0] != c.us[1] {
            return Err(Problem::new(
                "us",
                "a range of one size has one time: both values must be equal",
            ));
        }
        self.costs.push(c);
        Ok(())
    }
    pub fn collective(&self) -> Collective {
        self.collective
    }
    pub fn min_bytes(&self) -> u64 {
        self.min_bytes
    }
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }
    pub fn costs(&self) -> &[Cost] {
        &self.costs
    }
    pub fn contains(&self, bytes: u64) -> bool {
        (self.min_bytes..=self.max_bytes).contains(&bytes)
    }
    /// A cost's time at `bytes` (inside the range): the straight line
    /// between its two ends.
    pub fn time_at(&self, c: &Cost, bytes: u64) -> f64 {
        if self.max_bytes == self.min_bytes {
            return c.us[0];
        }
        let f = (bytes.clamp(self.min_bytes, self.max_bytes) - self.min_bytes) as f64
            / (self.max_bytes - self.min_bytes) as f64;
        c.us[0] + (c.us[1] - c.us[0]) * f
    }
}

/// A replacement for NCCL's `baseLatencies[algorithm][protocol]`, µs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BaseLatency {
    algorithm: Algorithm,
    protocol: Protocol,
    us: f64,
}

impl BaseLatency {
    pub fn new(algorithm: Algorithm, protocol: Protocol, us: f64) -> Result<Self, Problem> {
        time_ok("us", us)?;
        Ok(BaseLatency {
            algorithm,
            protocol,
            us,
        })
    }
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
    pub fn us(&self) -> f64 {
        self.us
    }
}

/// Everything for one communicator shape.
#[derive(Clone, Debug, PartialEq)]
pub struct CommTable {
    ranks: usize,
    nodes: usize,
    note: Option<String>,
    base_latencies: Vec<BaseLatency>,
    ranges: Vec<SizeRange>,
}

impl CommTable {
    pub fn new(ranks: usize, nodes: usize, note: Option<String>) -> Result<Self, Problem> {
        if ranks == 0 {
            return Err(Problem::new("ranks", "a communicator has 1 rank or more"));
        }
        if nodes == 0 || nodes > ranks {
            return Err(Problem::new(
                "nodes",
                format!("{nodes} nodes for {ranks} ranks: 1 to {ranks}"),
            ));
        }
        if let Some(n) = &note
            && n.contains(['\n', '\r'])
        {
            return Err(Problem::new("note", "a note is one line"));
        }
        Ok(CommTable {
            ranks,
            nodes,
            note,
            base_latencies: Vec::new(),
            ranges: Vec::new(),
        })
    }
    /// Adds a base latency; one per algorithm and protocol.
    pub fn add_base_latency(&mut self, b: BaseLatency) -> Result<(), Problem> {
        if self
            .base_latencies
            .iter()
            .any(|x| x.algorithm == b.algorithm && x.protocol == b.protocol)
        {
            return Err(Problem::new(
                "algorithm",
                format!(
                    "{}/{} has two base latencies",
                    algorithm_name(b.algorithm),
                    protocol_name(b.protocol)
                ),
            ));
        }
        self.base_latencies.push(b);
        Ok(())
    }
    /// Adds a range: with at least one cost, after (and apart from) the
    /// last range of its collective.
    pub fn add_range(&mut self, r: SizeRange) -> Result<(), Problem> {
        if r.costs.is_empty() {
            return Err(Problem::new("cost", "a range needs at least one cost"));
        }
        if let Some(prev) = self
            .ranges
            .iter()
            .rev()
            .find(|x| x.collective == r.collective)
            && r.min_bytes <= prev.max_bytes
        {
            return Err(Problem::new(
                "min_bytes",
                format!(
                    "{} starts at {} B, inside or before the previous {} range {}..={} B: ranges go up and do not overlap",
                    r.collective, r.min_bytes, r.collective, prev.min_bytes, prev.max_bytes
                ),
            ));
        }
        self.ranges.push(r);
        Ok(())
    }
    pub fn ranks(&self) -> usize {
        self.ranks
    }
    pub fn nodes(&self) -> usize {
        self.nodes
    }
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }
    pub fn base_latencies(&self) -> &[BaseLatency] {
        &self.base_latencies
    }
    pub fn ranges(&self) -> &[SizeRange] {
        &self.ranges
    }
    /// The range holding a call of `bytes` of `collective`, if any.
    pub fn range(&self, collective: Collective, bytes: u64) -> Option<&SizeRange> {
        self.ranges
            .iter()
            .find(|r| r.collective == collective && r.contains(bytes))
    }
}

/// A whole table.
#[derive(Clone, Debug, PartialEq)]
pub struct TunerTable {
    stamp: String,
    topology: String,
    nccl: String,
    comms: Vec<CommTable>,
}

impl TunerTable {
    /// `stamp`: which model said it; `topology`: for which machine;
    /// `nccl`: the NCCL release whose rules the predictions followed.
    pub fn new(stamp: &str, topology: &str, nccl: &str) -> Result<Self, Problem> {
        for (field, v) in [("stamp", stamp), ("topology", topology), ("nccl", nccl)] {
            if v.contains(['\n', '\r']) {
                return Err(Problem::new(field, "one line"));
            }
        }
        Ok(TunerTable {
            stamp: stamp.to_string(),
            topology: topology.to_string(),
            nccl: nccl.to_string(),
            comms: Vec::new(),
        })
    }
    /// Adds a communicator shape; one per (ranks, nodes).
    pub fn add_comm(&mut self, c: CommTable) -> Result<(), Problem> {
        if self
            .comms
            .iter()
            .any(|x| x.ranks == c.ranks && x.nodes == c.nodes)
        {
            return Err(Problem::new(
                "ranks",
                format!(
                    "{} ranks on {} node(s) are in the table twice",
                    c.ranks, c.nodes
                ),
            ));
        }
        self.comms.push(c);
        Ok(())
    }
    pub fn stamp(&self) -> &str {
        &self.stamp
    }
    pub fn topology(&self) -> &str {
        &self.topology
    }
    pub fn nccl(&self) -> &str {
        &self.nccl
    }
    pub fn comms(&self) -> &[CommTable] {
        &self.comms
    }
    /// The entry for a communicator of `ranks` ranks on `nodes` nodes.
    pub fn comm(&self, ranks: usize, nodes: usize) -> Option<&CommTable> {
        self.comms
            .iter()
            .find(|c| c.ranks == ranks && c.nodes == nodes)
    }

    /// The table as TOML, `header` lines first as comments.
    pub fn to_toml(&self, header: &[String]) -> String {
        let q = |s: &str| toml_string(s);
        let mut s = String::new();
        for h in header {
            for l in h.lines() {
                let _ = writeln!(s, "# {l}");
            }
        }
        let _ = writeln!(s, "format = {}", q(FORMAT));
        let _ = writeln!(s, "stamp = {}", q(&self.stamp));
        let _ = writeln!(s, "topology = {}", q(&self.topology));
        let _ = writeln!(s, "nccl = {}", q(&self.nccl));
        for c in &self.comms {
            let _ = writeln!(s, "\n[[comm]]\nranks = {}\nnodes = {}", c.ranks, c.nodes);
            if let Some(n) = &c.note {
                let _ = writeln!(s, "note = {}", q(n));
            }
            for b in &c.base_latencies {
                let _ = writeln!(
                    s,
                    "\n[[comm.base_latency]]\nalgorithm = {}\nprotocol = {}\nus = {}",
                    q(&algorithm_name(b.algorithm)),
                    q(&protocol_name(b.protocol)),
                    float(b.us)
                );
            }
            for r in &c.ranges {
                let _ = writeln!(
                    s,
                    "\n[[comm.range]]\ncollective = {}\nmin_bytes = {}\nmax_bytes = {}\ncost = [",
                    q(r.collective.name()),
                    r.min_bytes,
                    r.max_bytes
                );
                for k in &r.costs {
                    let _ = writeln!(
                        s,
                        "  {{ algorithm = {}, protocol = {}, us = [{}, {}], channels = {} }},",
                        q(&algorithm_name(k.algorithm)),
                        q(&protocol_name(k.protocol)),
                        float(k.us[0]),
                        float(k.us[1]),
                        k.channels
                    );
                }
                let _ = writeln!(s, "]");
            }
        }
        s
    }
}

/// A TOML basic string.
fn toml_string(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for ch in v.chars() {
        match ch {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(s, "\\u{:04X}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// A TOML float with four decimals (0.1 ns).
fn float(v: f64) -> String {
    format!("{v:.4}")
}

/// A table file that cannot be used, and where.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{location}: {message}")]
pub struct TableError {
    pub location: Location,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> TunerTable {
        let mut t = TunerTable::new("contend test", "box \"a\"", "2.28").unwrap();
        let mut c = CommTable::new(2, 1, Some("two ranks".into())).unwrap();
        c.add_base_latency(BaseLatency::new(Algorithm::Ring, Protocol::Ll, 6.25).unwrap())
            .unwrap();
        let mut r = SizeRange::new(Collective::AllReduce, 1024, 2048).unwrap();
        r.add_cost(Cost::new(Algorithm::Ring, Protocol::Ll, [10.0, 12.0], 2).unwrap())
            .unwrap();
        r.add_cost(Cost::new(Algorithm::Tree, Protocol::Simple, [20.0, 20.5], 4).unwrap())
            .unwrap();
        c.add_range(r).unwrap();
        t.add_comm(c).unwrap();
        t
    }

    #[test]
    fn writes_what_it_reads() {
        let t = small();
        let text = t.to_toml(&["header".into()]);
        assert!(text.starts_with("# header\n"), "{text}");
        let back = parse("t.toml", &text).unwrap();
        assert_eq!(back, t);
        let c = back.comm(2, 1).unwrap();
        let r = c.range(Collective::AllReduce, 1536).unwrap();
        assert!((r.time_at(&r.costs()[0], 1536) - 11.0).abs() < 1e-9);
        assert!(c.range(Collective::AllReduce, 2049).is_none());
        assert!(c.range(Collective::AllGather, 1536).is_none());
        assert!(back.comm(2, 2).is_none());
    }

    #[test]
    fn a_broken_rule_is_located() {
        let text = small().to_toml(&[]);
        let cases = [
            ("channels = 2", "channels = 0", "channels", "1 to 64"),
            ("max_bytes = 2048", "max_bytes = 1000", "max_bytes", "below"),
            ("us = 6.2500", "us = -1.0", "us", "not a time"),
            (
                "protocol = \"ll\",",
                "protocol = \"ll64\",",
                "protocol",
                "ll64",
            ),
            ("nodes = 1", "nodes = 3", "nodes", "3 nodes for 2 ranks"),
            (
                "format = \"contend-nccl-tuner-table/1\"",
                "format = \"x\"",
                "format",
                "not",
            ),
        ];
        for (from, to, field, says) in cases {
            assert!(text.contains(from), "{from}");
            let bad = text.replacen(from, to, 1);
            let e = parse("t.toml", &bad).unwrap_err();
            let line = bad.lines().position(|l| l.contains(to)).unwrap() + 1;
            assert_eq!(e.location.line, line, "{e}");
            assert_eq!(e.location.field.as_deref(), Some(field), "{e}");
            assert!(e.message.contains(says), "{e}");
        }
        // a second range overlapping the first
        let twice = format!(
            "{text}\n[[comm.range]]\ncollective = \"allreduce\"\nmin_bytes = 2000\nmax_bytes = 4096\ncost = [ {{ algorithm = \"ring\", protocol = \"ll\", us = [1.0, 2.0], channels = 1 }} ]\n"
        );
        let e = parse("t.toml", &twice).unwrap_err();
        assert_eq!(e.location.field.as_deref(), Some("min_bytes"), "{e}");
        assert!(e.message.contains("do not overlap"), "{e}");
        // a syntax error keeps its line and column
        let e = parse("t.toml", "format = \n").unwrap_err();
        assert_eq!((e.location.file.as_str(), e.location.line), ("t.toml", 1));
        // an unknown field
        let e = parse(
            "t.toml",
            &text.replacen("nodes = 1", "nodes = 1\nnods = 2", 1),
        )
        .unwrap_err();
        assert!(e.message.contains("nods"), "{e}");
    }
}
