//! Published microbenchmark figures: the typed form of
//! `calibration/public/<rig>/figures.toml` (every field is documented in
//! `calibration/public/README.md`). The loader checks every field once —
//! known names for the enumerations, sizes that parse, ids unique within
//! the rig, a stream list or a pattern with the fields its kind needs,
//! `timed_by` a GPU of the figure's streams — and an error names the file,
//! line, column and field. What a figure *means* for the simulator (its
//! scenario and the number to compare) is [`crate::figure_twin`]'s.

use contend_import::CalibError;
use contend_topo::{Bytes, Location};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use toml::Spanned;

mod pattern;
use pattern::{RawPattern, pattern};

macro_rules! names {
    ($(#[$m:meta])* $name:ident, $what:literal { $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $var),+
        }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            pub fn name(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
            fn parse(s: &str) -> Result<$name, String> {
                $name::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| {
                    format!("unknown {} `{s}` (one of: {})", $what,
                        $name::ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", "))
                })
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.pad(self.name()) }
        }
    };
}

names!(
    /// Which engine moved the bytes.
    FigEngine, "engine" {
        /// The copy engine (cudaMemcpy*, torch `copy_`).
        Copy = "copy",
        /// SM loads and stores (kernels).
        Sm = "sm",
        /// Not stated by the source.
        Unknown = "unknown",
    }
);

names!(
    /// What the engine did, as executed.
    FigOp, "op" {
        Write = "write",
        Read = "read",
        /// Both directions of each pair at once, each pushed by its source.
        Bidirectional = "bidirectional",
        PingPong = "ping-pong",
        /// Host to device: the GPU's copy engine reads pinned host memory.
        H2d = "h2d",
        /// Device to host: the GPU's copy engine writes pinned host memory.
        D2h = "d2h",
    }
);

names!(
    /// The rtx6kpro PyTorch `copy_` harness (README § The torch copy_ harness).
    Harness, "harness" {
        /// Copies issued on a stream of the source GPU.
        TorchCopyWrite = "torch-copy-write",
        /// The "READ" runs: copies on the other GPU's default stream, executed as writes.
        TorchCopyRead = "torch-copy-read",
    }
);

names!(
    /// What the figure's value is.
    FigMetric, "metric" {
        /// One stream's bytes over its time, GB/s.
        PerStreamGbps = "per-stream-gbps",
        /// Total bytes over the time (p2pmark: the sum of per-GPU rates), GB/s.
        AggregateGbps = "aggregate-gbps",
        /// The mean of per-stream (per-GPU) rates, GB/s.
        MeanPerStreamGbps = "mean-per-stream-gbps",
        /// Half a GPU-resident flag round trip, ns.
        OneWayLatencyNs = "one-way-latency-ns",
        /// One dependent remote load, µs.
        RoundTripLatencyUs = "round-trip-latency-us",
        /// One small back-to-back copy-engine copy, µs.
        CopyLatencyUs = "copy-latency-us",
        /// A tool's score (a ratio).
        Score = "score",
    }
);

names!(
    /// How a `one-at-a-time` figure summarises the pairs it measured alone.
    OneAtATimeSummary, "summary" {
        Min = "min",
        Max = "max",
        Mean = "mean",
        Approximate = "approximate",
        Representative = "representative",
    }
);

impl FigMetric {
    /// The unit the value is in, for people.
    pub fn unit(self) -> &'static str {
        match self {
            FigMetric::PerStreamGbps | FigMetric::AggregateGbps | FigMetric::MeanPerStreamGbps => {
                "GB/s"
            }
            FigMetric::OneWayLatencyNs => "ns",
            FigMetric::RoundTripLatencyUs | FigMetric::CopyLatencyUs => "us",
            FigMetric::Score => "",
        }
    }
}

/// A pattern's sink: one GPU (or host memory), or each GPU in turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sink {
    Node(String),
    /// Every GPU of the pattern in turn, separate runs.
    Each,
}

/// Which streams a figure ran: listed, or a pattern.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Traffic {
    /// `[engine GPU, other end]` each, all at once.
    Streams {
        streams: Vec<(String, String)>,
    },
    AllToAll {
        gpus: Vec<String>,
    },
    Stagger {
        distance: u32,
        gpus: Vec<String>,
    },
    OneToMany {
        source: String,
        gpus: Vec<String>,
    },
    ManyToOne {
        sink: Sink,
        gpus: Vec<String>,
    },
    BidirectionalPairs {
        pairs: Vec<(String, String)>,
    },
    /// Each pair measured alone, the value a summary over them.
    OneAtATime {
        pairs: Vec<(String, String)>,
        summary: OneAtATimeSummary,
    },
    /// The source does not say which GPUs.
    Unstated {
        gpus: Vec<String>,
    },
}

/// One published number.
#[derive(Clone, Debug)]
pub struct Figure {
    pub id: String,
    pub what: String,
    pub source: String,
    pub tool: String,
    pub engine: FigEngine,
    pub op: FigOp,
    /// What the source calls the op when that differs from `op`.
    pub source_op: Option<FigOp>,
    pub harness: Option<Harness>,
    pub traffic: Traffic,
    /// Torch harness: the GPU whose `torch.cuda.synchronize()` stops the clock.
    pub timed_by: Option<String>,
    pub bytes: Option<Bytes>,
    pub value: f64,
    pub metric: FigMetric,
    pub fit: bool,
    /// The figure's own topology file (as written), when not the rig's.
    pub topology: Option<String>,
    /// For rigs without a topology: which box.
    pub box_name: Option<String>,
    pub note: Option<String>,
    /// Where the `[[figure]]` table is.
    pub location: Location,
    /// Where each field that was given is written.
    fields: BTreeMap<&'static str, Location>,
}

impl Figure {
    /// Where `field` is written (its table when the field is not).
    pub fn at(&self, field: &str) -> Location {
        self.fields
            .get(field)
            .cloned()
            .unwrap_or_else(|| self.location.clone().with_field(field))
    }
}

/// A rig's `figures.toml`.
#[derive(Clone, Debug)]
pub struct FigureFile {
    pub file: String,
    pub rig: String,
    /// The rig's default topology file, as written, and where.
    pub topology: Option<(String, Location)>,
    pub figures: Vec<Figure>,
}

impl FigureFile {
    /// The topology file a figure was measured on, as written.
    pub fn topology_of<'a>(&'a self, f: &'a Figure) -> Option<&'a str> {
        f.topology
            .as_deref()
            .or(self.topology.as_ref().map(|t| t.0.as_str()))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    rig: Spanned<String>,
    topology: Option<Spanned<String>>,
    #[serde(default, rename = "figure")]
    figures: Vec<Spanned<RawFigure>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFigure {
    id: Spanned<String>,
    what: Spanned<String>,
    source: Spanned<String>,
    tool: Spanned<String>,
    engine: Spanned<String>,
    op: Spanned<String>,
    source_op: Option<Spanned<String>>,
    harness: Option<Spanned<String>>,
    streams: Option<Spanned<Vec<Vec<String>>>>,
    pattern: Option<Spanned<RawPattern>>,
    timed_by: Option<Spanned<String>>,
    bytes: Option<Spanned<String>>,
    value: Spanned<f64>,
    metric: Spanned<String>,
    fit: Spanned<bool>,
    topology: Option<Spanned<String>>,
    #[serde(rename = "box")]
    box_name: Option<Spanned<String>>,
    note: Option<Spanned<String>>,
}

/// The largest value a figure may hold (no GB/s, ns or µs figure is near it).
pub const MAX_VALUE: f64 = 1e9;

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn loc<T>(&self, s: &Spanned<T>, field: &str) -> Location {
        Location::from_offset(self.file, self.text, s.span().start).with_field(field)
    }
    fn err<T>(&self, s: &Spanned<T>, field: &str, message: String) -> CalibError {
        CalibError::At {
            location: self.loc(s, field),
            message,
        }
    }
    fn pairs(
        &self,
        v: &[Vec<String>],
        at: &Spanned<impl Sized>,
        field: &str,
    ) -> Result<Vec<(String, String)>, CalibError> {
        if v.is_empty() {
            return Err(self.err(at, field, format!("`{field}` lists no pair")));
        }
        v.iter()
            .map(|p| match p.as_slice() {
                [a, b] if a.is_empty() || b.is_empty() => Err(self.err(
                    at,
                    field,
                    format!("a pair in `{field}` has an empty node id"),
                )),
                [a, b] if a == b => Err(self.err(
                    at,
                    field,
                    format!("pair [{a}, {b}] in `{field}`: a stream joins two different nodes"),
                )),
                [a, b] => Ok((a.clone(), b.clone())),
                _ => Err(self.err(
                    at,
                    field,
                    format!(
                        "`{field}` holds [{}]: each entry is a pair [from, to]",
                        p.join(", ")
                    ),
                )),
            })
            .collect()
    }
}

/// Parses a figures file's text.
pub fn parse_figures(file: &str, text: &str) -> Result<FigureFile, CalibError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| CalibError::At {
        location: Location::of_toml_error(file, text, &e),
        message: e.message().trim().to_string(),
    })?;
    let cx = Ctx { file, text };
    if raw.rig.get_ref().is_empty() {
        return Err(cx.err(&raw.rig, "rig", "the rig's name is empty".into()));
    }
    let mut seen: BTreeMap<String, Location> = BTreeMap::new();
    let mut figures = Vec::with_capacity(raw.figures.len());
    for (i, rf) in raw.figures.iter().enumerate() {
        let f = figure(&cx, rf, i)?;
        if let Some(first) = seen.get(&f.id) {
            return Err(cx.err(
                &rf.get_ref().id,
                "id",
                format!("figure id `{}` is used twice (first at {first})", f.id),
            ));
        }
        seen.insert(f.id.clone(), f.at("id"));
        figures.push(f);
    }
    Ok(FigureFile {
        file: file.to_string(),
        rig: raw.rig.get_ref().clone(),
        topology: raw
            .topology
            .as_ref()
            .map(|t| (t.get_ref().clone(), cx.loc(t, "topology"))),
        figures,
    })
}

/// Reads and parses a figures file.
pub fn load_figures(path: &Path) -> Result<FigureFile, CalibError> {
    let text = contend_topo::bounded_read::read_text(path).map_err(CalibError::Read)?;
    parse_figures(&path.display().to_string(), &text)
}

fn figure(cx: &Ctx<'_>, rf: &Spanned<RawFigure>, index: usize) -> Result<Figure, CalibError> {
    let r = rf.get_ref();
    let mut fields: BTreeMap<&'static str, Location> = BTreeMap::new();
    let mut note = |name: &'static str, loc: Location| {
        fields.insert(name, loc);
    };
    macro_rules! given {
        ($($f:ident),*) => { $( note(stringify!($f), cx.loc(&r.$f, stringify!($f))); )* };
    }
    macro_rules! maybe {
        ($($f:ident),*) => { $( if let Some(s) = &r.$f { note(stringify!($f), cx.loc(s, stringify!($f))); } )* };
    }
    given!(id, what, source, tool, engine, op, value, metric, fit);
    maybe!(
        source_op, harness, streams, pattern, timed_by, bytes, topology, box_name, note
    );
    let id = r.id.get_ref().clone();
    if id.is_empty() {
        return Err(cx.err(
            &r.id,
            "id",
            format!("figure #{} has an empty id", index + 1),
        ));
    }
    fn named<T>(
        cx: &Ctx<'_>,
        s: &Spanned<String>,
        field: &str,
        parse: fn(&str) -> Result<T, String>,
    ) -> Result<T, CalibError> {
        parse(s.get_ref()).map_err(|m| cx.err(s, field, m))
    }
    let engine: FigEngine = named(cx, &r.engine, "engine", FigEngine::parse)?;
    let op: FigOp = named(cx, &r.op, "op", FigOp::parse)?;
    let metric: FigMetric = named(cx, &r.metric, "metric", FigMetric::parse)?;
    let source_op = r
        .source_op
        .as_ref()
        .map(|s| named(cx, s, "source_op", FigOp::parse))
        .transpose()?;
    let harness = r
        .harness
        .as_ref()
        .map(|s| named(cx, s, "harness", Harness::parse))
        .transpose()?;
    let value = *r.value.get_ref();
    if !(value.is_finite() && value > 0.0 && value <= MAX_VALUE) {
        return Err(cx.err(
            &r.value,
            "value",
            format!("value = {value} is outside (0, {MAX_VALUE:e}]"),
        ));
    }
    let bytes = r
        .bytes
        .as_ref()
        .map(|b| Bytes::parse_size(b.get_ref()).map_err(|m| cx.err(b, "bytes", m.to_string())))
        .transpose()?;
    if let (Some(b), Some(s)) = (bytes, &r.bytes)
        && b.0 == 0
    {
        return Err(cx.err(s, "bytes", "a figure moves at least one byte".into()));
    }
    let traffic = match (&r.streams, &r.pattern) {
        (Some(s), None) => Traffic::Streams {
            streams: cx.pairs(s.get_ref(), s, "streams")?,
        },
        (None, Some(p)) => pattern(cx, p)?,
        (Some(s), Some(_)) => {
            return Err(cx.err(
                s,
                "streams",
                "a figure gives `streams` or a `pattern`, not both".into(),
            ));
        }
        (None, None) => {
            return Err(cx.err(
                rf,
                "streams",
                format!("figure `{id}` gives neither `streams` nor a `pattern`"),
            ));
        }
    };
    if let Some(t) = &r.timed_by {
        let named_in = match &traffic {
            Traffic::Streams { streams } => streams
                .iter()
                .any(|(a, b)| a == t.get_ref() || b == t.get_ref()),
            _ => false,
        };
        if !named_in {
            return Err(cx.err(
                t,
                "timed_by",
                format!(
                    "timed_by `{}` is not an end of the figure's streams",
                    t.get_ref()
                ),
            ));
        }
        if harness.is_none() {
            return Err(cx.err(
                t,
                "timed_by",
                "timed_by belongs to the torch harness: the figure names no `harness`".into(),
            ));
        }
    }
    let text = |s: &Option<Spanned<String>>| s.as_ref().map(|s| s.get_ref().clone());
    Ok(Figure {
        id,
        what: r.what.get_ref().clone(),
        source: r.source.get_ref().clone(),
        tool: r.tool.get_ref().clone(),
        engine,
        op,
        source_op,
        harness,
        traffic,
        timed_by: text(&r.timed_by),
        bytes,
        value,
        metric,
        fit: *r.fit.get_ref(),
        topology: text(&r.topology),
        box_name: text(&r.box_name),
        note: text(&r.note),
        location: cx.loc(rf, "figure"),
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "rig = \"r\"\ntopology = \"t.toml\"\n";
    const FIG: &str = "[[figure]]\nid = \"a\"\nwhat = \"w\"\nsource = \"s\"\ntool = \"p2pBandwidthLatencyTest\"\nengine = \"copy\"\nop = \"write\"\nstreams = [[\"gpu0\", \"gpu1\"]]\nbytes = \"64 MiB\"\nvalue = 53.9\nmetric = \"per-stream-gbps\"\nfit = true\n";

    fn err(text: &str) -> String {
        parse_figures("f.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn a_figure_loads_typed() {
        let f = parse_figures("f.toml", &format!("{HEAD}{FIG}")).unwrap();
        assert_eq!(f.rig, "r");
        let g = &f.figures[0];
        assert_eq!(
            (g.engine, g.op, g.metric, g.bytes),
            (
                FigEngine::Copy,
                FigOp::Write,
                FigMetric::PerStreamGbps,
                Some(Bytes(64 << 20))
            )
        );
        assert_eq!(
            g.traffic,
            Traffic::Streams {
                streams: vec![("gpu0".into(), "gpu1".into())]
            }
        );
        assert_eq!(g.location.line, 3);
        assert_eq!(g.at("bytes").line, 11);
        assert_eq!(f.topology_of(g), Some("t.toml"));
    }

    #[test]
    fn bad_fields_are_located() {
        let bad_op = format!("{HEAD}{}", FIG.replace("op = \"write\"", "op = \"push\""));
        let e = err(&bad_op);
        assert!(e.starts_with("f.toml:9:"), "{e}");
        assert!(
            e.contains("field `op`") || e.contains("(op)") || e.contains("op"),
            "{e}"
        );
        assert!(e.contains("unknown op `push`"), "{e}");
        let bad_bytes = format!("{HEAD}{}", FIG.replace("64 MiB", "64 parsecs"));
        assert!(
            err(&bad_bytes).contains("f.toml:11:"),
            "{}",
            err(&bad_bytes)
        );
        let twice = format!("{HEAD}{FIG}{FIG}");
        let e = err(&twice);
        assert!(e.contains("used twice (first at f.toml:4"), "{e}");
        let same = format!("{HEAD}{}", FIG.replace("\"gpu1\"", "\"gpu0\""));
        assert!(err(&same).contains("two different nodes"));
        let unknown = format!("{HEAD}{FIG}colour = \"red\"\n");
        assert!(err(&unknown).contains("colour"), "{}", err(&unknown));
        let timed = format!("{HEAD}{FIG}timed_by = \"gpu7\"\n");
        assert!(err(&timed).contains("not an end of the figure's streams"));
        let zero = format!("{HEAD}{}", FIG.replace("53.9", "0.0"));
        assert!(err(&zero).contains("f.toml:12:"), "{}", err(&zero));
    }

    #[test]
    fn patterns_need_their_fields() {
        let fig = FIG.replace(
            "streams = [[\"gpu0\", \"gpu1\"]]",
            "pattern = { kind = \"stagger\", gpus = [\"gpu0\", \"gpu1\", \"gpu2\"] }",
        );
        let e = err(&format!("{HEAD}{fig}"));
        assert!(
            e.contains("needs `distance`") && e.contains("f.toml:10:"),
            "{e}"
        );
        let fig = FIG.replace(
            "streams = [[\"gpu0\", \"gpu1\"]]",
            "pattern = { kind = \"all-to-all\", gpus = [\"gpu0\", \"gpu1\"] }",
        );
        let f = parse_figures("f.toml", &format!("{HEAD}{fig}")).unwrap();
        assert_eq!(
            f.figures[0].traffic,
            Traffic::AllToAll {
                gpus: vec!["gpu0".into(), "gpu1".into()]
            }
        );
        let fig = FIG.replace(
            "streams = [[\"gpu0\", \"gpu1\"]]",
            "pattern = { kind = \"ring\", gpus = [] }",
        );
        assert!(err(&format!("{HEAD}{fig}")).contains("unknown pattern kind `ring`"));
    }
}
