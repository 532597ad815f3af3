//! The simulated twin of a published figure: the transfer scenario that
//! reproduces what the tool ran (its streams or pattern, the engine and op
//! as executed, the size, on the figure's topology) and the number of the
//! run that is the figure's value — read the way the tool computes it
//! (`calibration/public/README.md` § How the tools measure):
//!
//! | tool, metric | readout |
//! |---|---|
//! | one stream's GB/s | the stream's bytes over its time |
//! | torch harness aggregate | every stream's bytes over the time the `timed_by` GPU's `torch.cuda.synchronize()` returns: when the last copy issued from it or into it (through its default stream) ends |
//! | p2pmark all-GPUs aggregate | the sum over reading GPUs of their bytes over their last stream's end |
//! | other aggregates (p2pBandwidthLatencyTest bidirectional, host DMA) | every byte over the span from the first start to the last end |
//! | mean per stream | the mean of the streams' rates |
//! | GPU-resident ping-pong | half a round trip |
//! | a dependent remote load, a small copy | one op's time (median over repeats) |
//!
//! A figure the model cannot express is not twinned: [`Expressed::Skipped`]
//! says why, and the rig report lists and counts it.

use crate::figures::{FigEngine, FigMetric, FigOp, Figure, Harness, Sink, Traffic};
use crate::twin::PredictError;
use contend_sim::{ModelParams, RunSpec, simulate_one};
use contend_topo::{Bytes, NodeIdx, NodeKind, Topology};
use contend_workload::{
    Fidelity, KernelConfig, Measured, Pattern, Placement, ResultRecord, Scenario, ScenarioSpec,
    Shape, Stream, TransferOp, Workload,
};
use serde::{Deserialize, Serialize};

/// Size a bandwidth figure whose source gives none is simulated at: 256 MiB,
/// the torch harness's size on the same pages; every figure of this kind is
/// a single large flow, whose rate is flat above a few MiB.
pub const UNSTATED_BYTES: Bytes = Bytes(256 << 20);
/// Back-to-back ops of a latency twin (the tools run 100 copies or 10,000
/// loads; the model's op time is steady after the first).
pub const LATENCY_REPEATS: u32 = 8;
/// Round trips of a ping-pong twin.
pub const PING_PONGS: u32 = 20;
/// The kernel of p2pmark's latency reader: one thread (the model's
/// smallest launchable block is one warp; one warp's 16-byte slots cover the
/// 128-byte line with a single request).
pub const LATENCY_KERNEL: KernelConfig = KernelConfig {
    blocks: 1,
    threads: 32,
};

/// How the run's records become the figure's value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Readout {
    /// The one stream's bytes over its time, GB/s.
    StreamRate,
    /// Every stream's bytes over the span from the first start to the last end, GB/s.
    BytesOverSpan,
    /// Every stream's bytes over the time the clock GPU's work ends: the
    /// last end of a stream from or into it (the torch harness), GB/s.
    BytesOverClock { gpu: u32 },
    /// Sum over engine GPUs of their streams' bytes over their last end (p2pmark), GB/s.
    PerGpuRates,
    /// The mean of the streams' rates, GB/s.
    MeanStreamRate,
    /// Half a ping-pong round trip, ns.
    OneWayNs,
    /// One op's time (median over the repeats), us.
    OpUs,
}

impl Readout {
    /// Its kind, without the clock GPU: `stream-rate`, `bytes-over-clock`, …
    pub fn kind(self) -> &'static str {
        match self {
            Readout::StreamRate => "stream-rate",
            Readout::BytesOverSpan => "bytes-over-span",
            Readout::BytesOverClock { .. } => "bytes-over-clock",
            Readout::PerGpuRates => "per-gpu-rates",
            Readout::MeanStreamRate => "mean-stream-rate",
            Readout::OneWayNs => "one-way",
            Readout::OpUs => "op-time",
        }
    }
}

/// A figure and the scenario that reproduces it.
#[derive(Clone, Debug)]
pub struct FigureTwin {
    pub scenario: Scenario,
    pub readout: Readout,
    /// Assumptions the twin makes beyond the figure's fields, for the report.
    pub assumed: Vec<String>,
}

/// A twin, or why the model cannot express the figure.
#[derive(Clone, Debug)]
pub enum Expressed {
    Twin(Box<FigureTwin>),
    Skipped(String),
}

/// What stops a twin from being built: a figure that names a node its
/// topology lacks (bad data, located) — everything else is a skip.
#[derive(Clone, Debug)]
pub struct TwinError {
    pub field: &'static str,
    pub message: String,
}

fn skip(why: impl Into<String>) -> Result<Expressed, TwinError> {
    Ok(Expressed::Skipped(why.into()))
}

/// The twin of `f` measured on `topo`.
pub fn figure_twin(f: &Figure, topo: &Topology) -> Result<Expressed, TwinError> {
    let node = |id: &str, field: &'static str| {
        topo.lookup(id).ok_or_else(|| TwinError {
            field,
            message: format!("`{id}` is not a node of topology `{}`", topo.name),
        })
    };
    let gpu = |id: &str, field: &'static str| {
        let n = node(id, field)?;
        match topo.node(n).kind {
            NodeKind::Gpu(_) => Ok(n),
            _ => Err(TwinError {
                field,
                message: format!("`{id}` is not a GPU of topology `{}`", topo.name),
            }),
        }
    };
    let mut assumed = vec![];
    if f.metric == FigMetric::Score {
        return skip("a score is a ratio of other figures, not a transfer");
    }
    if f.engine == FigEngine::Unknown {
        return skip("the source does not say which engine moved the bytes");
    }
    let op = match (f.engine, f.op) {
        (FigEngine::Copy, FigOp::Write | FigOp::Bidirectional | FigOp::D2h) => TransferOp::Copy,
        (FigEngine::Copy, FigOp::Read | FigOp::H2d) => TransferOp::CopyRead,
        (FigEngine::Sm, FigOp::Write) => TransferOp::Store,
        (FigEngine::Sm, FigOp::Read) => TransferOp::Load,
        (FigEngine::Sm, FigOp::PingPong) => TransferOp::PingPong,
        (FigEngine::Copy, FigOp::PingPong) => {
            return skip("a copy-engine ping-pong (cudaMemcpy round trips) is not a model op");
        }
        (FigEngine::Sm, FigOp::H2d | FigOp::D2h | FigOp::Bidirectional) => {
            return skip(format!("an SM `{}` is not a model op", f.op));
        }
        (FigEngine::Unknown, _) => unreachable!("skipped above"),
    };
    let latency = matches!(
        f.metric,
        FigMetric::OneWayLatencyNs | FigMetric::RoundTripLatencyUs | FigMetric::CopyLatencyUs
    );
    let bytes = match (f.bytes, latency) {
        (Some(b), _) => b,
        (None, false) => {
            assumed.push(format!(
                "bytes not stated: {UNSTATED_BYTES} (a large flow's rate is flat in size)"
            ));
            UNSTATED_BYTES
        }
        (None, true) => return skip("a latency figure without the size of its op"),
    };
    // the streams as the figure runs them (patterns kept as patterns)
    let mut streams: Vec<Stream> = vec![];
    let mut patterns: Vec<Pattern> = vec![];
    let kernel = if op == TransferOp::Load && latency {
        LATENCY_KERNEL
    } else {
        KernelConfig::default()
    };
    let stream = |from, to| Stream {
        kernel,
        ..Stream::new(from, to, op, bytes)
    };
    let gpus_of = |ids: &[String]| -> Result<Vec<NodeIdx>, TwinError> {
        ids.iter().map(|g| gpu(g, "pattern")).collect()
    };
    let pattern = |shape: Shape| Pattern {
        shape,
        name: None,
        op,
        bytes,
        kernel,
        repeat: 1,
        start: contend_topo::Picos::ZERO,
    };
    match &f.traffic {
        Traffic::Streams { streams: list } => {
            if op == TransferOp::PingPong {
                let [(a, b), (c, d)] = list.as_slice() else {
                    return skip("a ping-pong figure lists its two directions, [a, b] and [b, a]");
                };
                if (a, b) != (d, c) {
                    return skip("a ping-pong's two streams are one pair's two directions");
                }
                streams.push(Stream {
                    iterations: PING_PONGS,
                    kernel: KernelConfig {
                        blocks: 1,
                        threads: 32,
                    },
                    ..Stream::new(gpu(a, "streams")?, gpu(b, "streams")?, op, bytes)
                });
            } else {
                for (a, b) in list {
                    streams.push(stream(gpu(a, "streams")?, node(b, "streams")?));
                }
            }
        }
        Traffic::AllToAll { gpus } => patterns.push(pattern(Shape::AllToAll {
            gpus: gpus_of(gpus)?,
        })),
        Traffic::Stagger { distance, gpus } => patterns.push(pattern(Shape::Stagger {
            gpus: gpus_of(gpus)?,
            distance: *distance,
        })),
        Traffic::OneToMany { source, gpus } if !gpus.is_empty() => {
            patterns.push(pattern(Shape::OneToMany {
                source: gpu(source, "pattern")?,
                gpus: gpus_of(gpus)?,
            }))
        }
        Traffic::ManyToOne {
            sink: Sink::Node(s),
            gpus,
        } => patterns.push(pattern(Shape::ManyToOne {
            sink: node(s, "pattern")?,
            gpus: gpus_of(gpus)?,
        })),
        Traffic::BidirectionalPairs { pairs } => {
            let pairs = pairs
                .iter()
                .map(|(a, b)| Ok((gpu(a, "pattern")?, gpu(b, "pattern")?)))
                .collect::<Result<_, TwinError>>()?;
            patterns.push(pattern(Shape::BidirectionalPairs { pairs }))
        }
        Traffic::OneToMany { .. } => return skip("the peers of the one-to-many are not stated"),
        Traffic::ManyToOne {
            sink: Sink::Each, ..
        } => return skip("one value over separate runs (each GPU as the sink in turn)"),
        Traffic::OneAtATime { summary, .. } => {
            return skip(format!(
                "a {summary} over pairs measured one at a time, not one run"
            ));
        }
        Traffic::Unstated { .. } => return skip("the source does not say which GPUs ran"),
    }
    let count = streams.len()
        + patterns
            .iter()
            .map(|p| p.shape.count() as usize)
            .sum::<usize>();
    // the torch harness's serialisation (README § The torch copy_ harness, 2 and 3)
    if let (Some(h), Traffic::Streams { streams: list }) = (f.harness, &f.traffic) {
        // write runs: copies into one GPU chain through its default stream;
        // "READ" runs: an executing GPU's copies share its default stream
        let (read, what) = match h {
            Harness::TorchCopyWrite => (false, "destination"),
            Harness::TorchCopyRead => (true, "executing GPU"),
        };
        let mut ends: Vec<&String> = list
            .iter()
            .map(|(from, to)| if read { from } else { to })
            .collect();
        ends.sort();
        if let Some(w) = ends.windows(2).find(|w| w[0] == w[1]) {
            return skip(format!(
                "torch harness: {what} {} appears in more than one pair, so its copies run one at a time on one stream (not all at once)",
                w[0]
            ));
        }
    }
    let readout = match f.metric {
        FigMetric::PerStreamGbps if count == 1 => Readout::StreamRate,
        FigMetric::PerStreamGbps => {
            return skip(
                "a per-stream rate of several concurrent streams that the figure does not single out",
            );
        }
        FigMetric::AggregateGbps => match (&f.timed_by, f.harness) {
            (Some(g), Some(_)) => Readout::BytesOverClock {
                gpu: gpu(g, "timed_by")?.0,
            },
            _ if f.tool.starts_with("p2pmark") => Readout::PerGpuRates,
            _ => Readout::BytesOverSpan,
        },
        FigMetric::MeanPerStreamGbps => Readout::MeanStreamRate,
        FigMetric::OneWayLatencyNs if op == TransferOp::PingPong => Readout::OneWayNs,
        FigMetric::OneWayLatencyNs => {
            return skip("a one-way latency of an op that is not a ping-pong");
        }
        FigMetric::RoundTripLatencyUs | FigMetric::CopyLatencyUs if count > 1 => {
            return skip(
                "a latency under load of single-thread readers, one kernel per peer on each GPU at once (p2pmark's effective latency): on every published rig it is the sum of the GPU's isolated round trips to its peers (within 6 %), so one GPU's readers take turns, where the model runs the kernels side by side; no model mechanism serialises one GPU's remote loads across kernels",
            );
        }
        FigMetric::RoundTripLatencyUs | FigMetric::CopyLatencyUs => {
            for s in &mut streams {
                s.repeat = LATENCY_REPEATS;
            }
            Readout::OpUs
        }
        FigMetric::Score => unreachable!("skipped above"),
    };
    let mut spec = ScenarioSpec::new(
        &format!("figure {}", f.id),
        topo.clone(),
        Workload::Transfer { streams, patterns },
    );
    spec.kernel = kernel;
    let scenario = Scenario::new(spec).map_err(|e| TwinError {
        field: "streams",
        message: e.to_string(),
    })?;
    Ok(Expressed::Twin(Box::new(FigureTwin {
        scenario,
        readout,
        assumed,
    })))
}

/// The streams' records of a transfer run (aggregates dropped).
fn stream_records(run: &[ResultRecord]) -> impl Iterator<Item = &ResultRecord> {
    run.iter()
        .filter(|r| matches!(r.algorithm, Measured::Transfer(_)))
}

impl FigureTwin {
    /// The figure's value as the model predicts it under `params`.
    pub fn predict(&self, params: &ModelParams, fidelity: Fidelity) -> Result<f64, PredictError> {
        let spec = RunSpec {
            algorithm: None,
            placement: Placement::Peer,
            fidelity,
            size: None,
        };
        let run = simulate_one(&self.scenario, params, spec)?;
        self.read(&run.records)
    }

    /// Reads the figure's value off a run's records.
    pub fn read(&self, records: &[ResultRecord]) -> Result<f64, PredictError> {
        let streams: Vec<&ResultRecord> = stream_records(records).collect();
        let sc = self.scenario.streams();
        if streams.len() != sc.len() || streams.is_empty() {
            return Err(PredictError::StreamCount {
                records: streams.len(),
                streams: sc.len(),
            });
        }
        // (from, to, bytes, end ns, rate GB/s) per stream
        let rows: Vec<(NodeIdx, NodeIdx, f64, f64, f64)> = sc
            .iter()
            .zip(&streams)
            .map(|(s, r)| {
                let bytes = s.bytes.0 as f64 * s.repeat as f64;
                let end = s.start.as_ns_f64() + r.total_ns;
                (s.from, s.to, bytes, end, r.bandwidth_gbps.unwrap_or(0.0))
            })
            .collect();
        let total: f64 = rows.iter().map(|r| r.2).sum();
        let positive = |value: f64, what: &'static str| {
            if value.is_finite() && value > 0.0 {
                Ok(value)
            } else {
                Err(PredictError::NotPositive { what, value })
            }
        };
        let v = match self.readout {
            Readout::StreamRate => rows[0].4,
            Readout::BytesOverSpan => {
                let first = sc
                    .iter()
                    .map(|s| s.start.as_ns_f64())
                    .fold(f64::MAX, f64::min);
                let last = rows.iter().map(|r| r.3).fold(0.0, f64::max);
                total / positive(last - first, "span")?
            }
            Readout::BytesOverClock { gpu } => {
                let g = NodeIdx(gpu);
                let clock = rows
                    .iter()
                    .filter(|r| r.0 == g || r.1 == g)
                    .map(|r| r.3)
                    .fold(0.0, f64::max);
                total / positive(clock, "clock")?
            }
            Readout::PerGpuRates => {
                let mut engines: Vec<NodeIdx> = rows.iter().map(|r| r.0).collect();
                engines.sort();
                engines.dedup();
                engines
                    .iter()
                    .map(|&e| {
                        let mine = rows.iter().filter(|r| r.0 == e);
                        let bytes: f64 = mine.clone().map(|r| r.2).sum();
                        let end = mine.map(|r| r.3).fold(0.0, f64::max);
                        positive(end, "per-GPU time").map(|t| bytes / t)
                    })
                    .sum::<Result<f64, PredictError>>()?
            }
            Readout::MeanStreamRate => rows.iter().map(|r| r.4).sum::<f64>() / rows.len() as f64,
            Readout::OneWayNs => streams[0].stats.median_ns / 2.0,
            Readout::OpUs => streams[0].stats.median_ns / 1000.0,
        };
        positive(v, "value")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::parse_figures;
    use contend_topo::parse_topology;

    /// Four GPUs on one switch under one root complex, host memory.
    fn topo() -> Topology {
        let mut t = String::from(
            "name = \"t\"\n[[node]]\nid = \"rc0\"\nkind = \"root_complex\"\n[[node]]\nid = \"mem0\"\nkind = \"host_memory\"\n[[node]]\nid = \"sw0\"\nkind = \"switch\"\n[[link]]\na = \"mem0\"\nb = \"rc0\"\nkind = \"memory\"\nbandwidth_gbps = 500\n[[link]]\na = \"sw0\"\nb = \"rc0\"\nkind = \"pcie\"\ngen = 5\nwidth = 16\n",
        );
        for i in 0..4 {
            t += &format!(
                "[[node]]\nid = \"gpu{i}\"\nkind = \"gpu\"\nsms = 188\nmemory_bandwidth_gbps = 1792\n[[link]]\na = \"gpu{i}\"\nb = \"sw0\"\nkind = \"pcie\"\ngen = 5\nwidth = 16\n"
            );
        }
        parse_topology("t.toml", &t).unwrap()
    }

    /// A fit figure by `tool` and `engine` with the other fields in `body`.
    fn figure(tool: &str, engine: &str, body: &str) -> Figure {
        let text = format!(
            "rig = \"r\"\n[[figure]]\nid = \"f\"\nwhat = \"w\"\nsource = \"s\"\ntool = \"{tool}\"\nengine = \"{engine}\"\nvalue = 50.0\nfit = true\n{body}"
        );
        parse_figures("f.toml", &text)
            .unwrap_or_else(|e| panic!("{e}"))
            .figures
            .remove(0)
    }

    fn expressed(tool: &str, engine: &str, body: &str) -> Expressed {
        figure_twin(&figure(tool, engine, body), &topo()).unwrap()
    }

    fn twin(tool: &str, engine: &str, body: &str) -> FigureTwin {
        match expressed(tool, engine, body) {
            Expressed::Twin(t) => *t,
            Expressed::Skipped(why) => panic!("skipped: {why}"),
        }
    }

    fn skipped(tool: &str, engine: &str, body: &str) -> String {
        match expressed(tool, engine, body) {
            Expressed::Skipped(why) => why,
            Expressed::Twin(_) => panic!("twinned"),
        }
    }

    const TORCH: &str = "torch copy_";

    #[test]
    fn the_torch_harness_serialises_copies_into_one_gpu_so_they_are_skipped() {
        let w = skipped(
            TORCH,
            "copy",
            "bytes = \"64 MiB\"\nop = \"write\"\nharness = \"torch-copy-write\"\nstreams = [[\"gpu0\", \"gpu2\"], [\"gpu1\", \"gpu2\"]]\ntimed_by = \"gpu1\"\nmetric = \"aggregate-gbps\"\n",
        );
        assert!(w.contains("destination gpu2"), "{w}");
        // "READ" runs: the executing GPU's copies share its default stream
        let r = skipped(
            TORCH,
            "copy",
            "bytes = \"64 MiB\"\nop = \"write\"\nsource_op = \"read\"\nharness = \"torch-copy-read\"\nstreams = [[\"gpu3\", \"gpu0\"], [\"gpu3\", \"gpu1\"]]\ntimed_by = \"gpu1\"\nmetric = \"aggregate-gbps\"\n",
        );
        assert!(r.contains("executing GPU gpu3"), "{r}");
        // one source to two destinations runs at once (a stream per pair)
        twin(
            TORCH,
            "copy",
            "bytes = \"64 MiB\"\nop = \"write\"\nharness = \"torch-copy-write\"\nstreams = [[\"gpu0\", \"gpu1\"], [\"gpu0\", \"gpu2\"]]\ntimed_by = \"gpu0\"\nmetric = \"aggregate-gbps\"\n",
        );
    }

    fn run(t: &FigureTwin) -> Vec<ResultRecord> {
        let spec = RunSpec {
            algorithm: None,
            placement: Placement::Peer,
            fidelity: Fidelity::Flow,
            size: None,
        };
        simulate_one(&t.scenario, &ModelParams::default(), spec)
            .unwrap()
            .records
    }

    #[test]
    fn the_clock_stops_when_the_timed_gpus_copies_end() {
        // gpu0 -> gpu1 runs alone; gpu2 -> gpu3 and gpu2 -> gpu0 share
        // gpu2's link; the clock is gpu1's, whose only copy is the first
        let t = twin(
            TORCH,
            "copy",
            "bytes = \"64 MiB\"\nop = \"write\"\nharness = \"torch-copy-write\"\nstreams = [[\"gpu0\", \"gpu1\"], [\"gpu2\", \"gpu3\"], [\"gpu2\", \"gpu0\"]]\ntimed_by = \"gpu1\"\nmetric = \"aggregate-gbps\"\n",
        );
        assert_eq!(t.readout, Readout::BytesOverClock { gpu: 4 });
        let recs = run(&t);
        let v = t.read(&recs).unwrap();
        let s: Vec<&ResultRecord> = stream_records(&recs).collect();
        assert!(
            s[0].total_ns < s[1].total_ns,
            "the timed GPU's copy ends first"
        );
        // all three copies' bytes over the end of gpu1's only copy
        let bytes = 3.0 * (64u64 << 20) as f64;
        assert!((v - bytes / s[0].total_ns).abs() < 1e-6 * v, "{v}");
        // the span would have waited for the shared pair
        let span = FigureTwin {
            readout: Readout::BytesOverSpan,
            ..t.clone()
        };
        assert!(span.read(&recs).unwrap() < v);
    }

    #[test]
    fn p2pmark_sums_per_gpu_rates() {
        let body = "bytes = \"64 MiB\"\nop = \"read\"\npattern = { kind = \"all-to-all\", gpus = [\"gpu0\", \"gpu1\", \"gpu2\"] }\nmetric = \"aggregate-gbps\"\n";
        assert_eq!(twin(TORCH, "copy", body).readout, Readout::BytesOverSpan);
        let t = twin("p2pmark 3c39f36", "copy", body);
        assert_eq!(t.readout, Readout::PerGpuRates);
        assert_eq!(t.scenario.streams().len(), 6);
        assert!(
            t.scenario
                .streams()
                .iter()
                .all(|s| s.op == TransferOp::CopyRead)
        );
        let recs = run(&t);
        let s: Vec<&ResultRecord> = stream_records(&recs).collect();
        // each reader: its two streams' bytes over the later end
        let want: f64 = s
            .chunks(2)
            .map(|c| 2.0 * (64u64 << 20) as f64 / c[0].total_ns.max(c[1].total_ns))
            .sum();
        let v = t.read(&recs).unwrap();
        assert!((v - want).abs() < 1e-6 * want, "{v} vs {want}");
    }

    #[test]
    fn latencies_and_ping_pongs_read_one_op() {
        let pp = twin(
            "gpu_latency.cu",
            "sm",
            "bytes = \"4 B\"\nop = \"ping-pong\"\nstreams = [[\"gpu0\", \"gpu1\"], [\"gpu1\", \"gpu0\"]]\nmetric = \"one-way-latency-ns\"\n",
        );
        assert_eq!(pp.readout, Readout::OneWayNs);
        assert_eq!(pp.scenario.streams().len(), 1);
        let recs = run(&pp);
        let one_way = pp.read(&recs).unwrap();
        assert_eq!(one_way, recs[0].stats.median_ns / 2.0);
        assert!(one_way > 100.0 && one_way < 5000.0, "{one_way}");
        let load = twin(
            "p2pmark --latency",
            "sm",
            "bytes = \"128 B\"\nop = \"read\"\nstreams = [[\"gpu0\", \"gpu1\"]]\nmetric = \"round-trip-latency-us\"\n",
        );
        assert_eq!(load.readout, Readout::OpUs);
        assert_eq!(load.scenario.streams()[0].repeat, LATENCY_REPEATS);
        assert_eq!(load.scenario.streams()[0].kernel, LATENCY_KERNEL);
        let us = load.read(&run(&load)).unwrap();
        assert!(us > 0.1 && us < 10.0, "{us}");
        // the loaded latency of p2pmark has no twin, and says why
        let why = skipped(
            "p2pmark --latency",
            "sm",
            "bytes = \"128 B\"\nop = \"read\"\npattern = { kind = \"all-to-all\", gpus = [\"gpu0\", \"gpu1\", \"gpu2\"] }\nmetric = \"round-trip-latency-us\"\n",
        );
        assert!(why.contains("effective latency"), "{why}");
        // a node the topology lacks is an error of the figure, not a skip
        let f = figure(
            TORCH,
            "copy",
            "bytes = \"64 MiB\"\nop = \"write\"\nstreams = [[\"gpu0\", \"gpu9\"]]\nmetric = \"per-stream-gbps\"\n",
        );
        let e = figure_twin(&f, &topo()).unwrap_err();
        assert_eq!(e.field, "streams");
        assert!(e.message.contains("`gpu9` is not a node"), "{}", e.message);
    }
}
