//! Scenario files: which machine, which ranks, which algorithms, placement,
//! fidelity, seed and workload. One scenario feeds the simulator and the
//! hardware backend alike.

use crate::kinds::{Algorithm, Dtype, Fidelity, LaunchMode, Placement};
use crate::skew::Skew;
use contend_topo::{
    Bytes, Location, NodeIdx, NodeKind, Picos, TopoError, Topology, load_topology, shipped,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use thiserror::Error;
use toml::Spanned;

/// A scenario that cannot be used, and where.
#[derive(Debug, Error)]
pub enum ScenarioError {
    #[error("{}{message}", location.as_ref().map(|l| format!("{l}: ")).unwrap_or_default())]
    Invalid {
        location: Option<Location>,
        message: String,
    },
    #[error("{0}")]
    Topology(#[from] TopoError),
    #[error("{location}: in the topology it names: {topo}")]
    InTopology { location: Location, topo: TopoError },
}

/// Kernel shape for the custom allreduce kernels and SM microbenchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    pub blocks: u32,
    pub threads: u32,
}

impl Default for KernelConfig {
    fn default() -> Self {
        // vLLM's custom allreduce launches 36 blocks of 512 threads by default.
        KernelConfig {
            blocks: 36,
            threads: 512,
        }
    }
}

/// What a transfer stream does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransferOp {
    /// Copy-engine DMA from `from`'s memory to `to`.
    Copy,
    /// SM loads by `from` of `to`'s memory.
    Load,
    /// SM stores by `from` into `to`'s memory.
    Store,
    /// Flag ping-pong: `from` writes a flag at `to`, `to` answers; `iterations` round trips.
    PingPong,
}

/// One stream of a `transfer` workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stream {
    pub from: NodeIdx,
    pub to: NodeIdx,
    pub op: TransferOp,
    pub bytes: Bytes,
    pub kernel: KernelConfig,
    pub iterations: u32,
    /// Ping-pong only: a system fence before every flag and after every wait,
    /// as the allreduce kernels' barriers do.
    pub fence: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Workload {
    /// Allreduces of each size, `repeats` times back to back.
    Allreduce {
        sizes: Vec<Bytes>,
        dtype: Dtype,
        repeats: u32,
        gap: Picos,
        skew: Skew,
    },
    /// An EAGLE verify step.
    VerifyStep(VerifyStep),
    /// Point-to-point streams, all started together.
    Transfer { streams: Vec<Stream> },
}

/// An EAGLE verify step: layers × allreduces_per_layer allreduces of
/// hidden × tokens × dtype bytes, each after a compute gap and arrival skew.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct VerifyStep {
    pub layers: u32,
    pub allreduces_per_layer: u32,
    pub hidden: u64,
    pub tokens: u64,
    pub dtype: Dtype,
    pub gap: Picos,
    pub skew: Skew,
}

impl Default for VerifyStep {
    /// EAGLE-3 on a 61-layer model: 61 × 2 allreduces of 7168 × 3 × bf16
    /// (43,008 B), back to back.
    fn default() -> Self {
        VerifyStep {
            layers: 61,
            allreduces_per_layer: 2,
            hidden: 7168,
            tokens: 3,
            dtype: Dtype::Bf16,
            gap: Picos::ZERO,
            skew: Skew::None,
        }
    }
}

impl VerifyStep {
    /// Bytes per allreduce.
    pub fn size(&self) -> Bytes {
        Bytes(self.hidden * self.tokens * self.dtype.size())
    }
    /// Allreduces in one step.
    pub fn allreduces(&self) -> u32 {
        self.layers * self.allreduces_per_layer
    }
}

impl Workload {
    pub fn kind_name(&self) -> &'static str {
        match self {
            Workload::Allreduce { .. } => "allreduce",
            Workload::VerifyStep(_) => "verify-step",
            Workload::Transfer { .. } => "transfer",
        }
    }
}

/// A validated scenario: topology loaded, ranks resolved, every name checked.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    /// What the file said (`pro6000-8x-2socket` or a path).
    pub topology_ref: String,
    pub topology: Topology,
    pub ranks: Vec<NodeIdx>,
    pub algorithms: Vec<Algorithm>,
    pub placements: Vec<Placement>,
    pub fidelities: Vec<Fidelity>,
    pub seed: u64,
    pub kernel: KernelConfig,
    pub launch: LaunchMode,
    pub workload: Workload,
}

impl Scenario {
    pub fn rank_names(&self) -> Vec<String> {
        self.ranks
            .iter()
            .map(|r| self.topology.node(*r).id.0.clone())
            .collect()
    }
}

/// A string or a list of strings; the span of the whole value is kept.
type OneOrMany = Spanned<toml::Value>;

/// The strings of a `"x"` or `["x", "y"]` value, or an error at the field.
fn strings(cx: &Cx, v: &OneOrMany, field: &str) -> Result<Vec<Spanned<String>>, ScenarioError> {
    let one = |x: &toml::Value| x.as_str().map(|s| Spanned::new(v.span(), s.to_string()));
    let items = match v.get_ref() {
        toml::Value::String(s) => vec![Spanned::new(v.span(), s.clone())],
        toml::Value::Array(a) => a
            .iter()
            .map(one)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| cx.err(v, field, format!("`{field}` must hold strings")))?,
        _ => {
            return Err(cx.err(
                v,
                field,
                format!("`{field}` is a string or a list of strings"),
            ));
        }
    };
    if items.is_empty() {
        return Err(cx.err(v, field, format!("`{field}` is an empty list")));
    }
    Ok(items)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: String,
    description: Option<String>,
    topology: Spanned<String>,
    ranks: Option<OneOrMany>,
    algorithms: Option<OneOrMany>,
    placement: Option<OneOrMany>,
    fidelity: Option<OneOrMany>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    kernel: Option<Spanned<KernelConfig>>,
    launch: Option<Spanned<String>>,
    workload: Spanned<RawWorkload>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    from: Spanned<Bytes>,
    to: Spanned<Bytes>,
    #[serde(default = "two")]
    factor: u64,
}
fn two() -> u64 {
    2
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStream {
    from: Spanned<String>,
    to: Spanned<String>,
    op: Spanned<String>,
    bytes: Option<Bytes>,
    blocks: Option<u32>,
    threads: Option<u32>,
    iterations: Option<u32>,
    fence: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    kind: Spanned<String>,
    sizes: Option<Spanned<Vec<Bytes>>>,
    sweep: Option<Spanned<RawSweep>>,
    dtype: Option<Spanned<String>>,
    repeats: Option<u32>,
    layers: Option<u32>,
    allreduces_per_layer: Option<u32>,
    hidden: Option<u64>,
    tokens: Option<u64>,
    gap_us: Option<Spanned<f64>>,
    skew: Option<Spanned<Skew>>,
    #[serde(default, rename = "stream")]
    streams: Vec<Spanned<RawStream>>,
}

struct Cx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Cx<'_> {
    fn err<T>(&self, s: &Spanned<T>, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            location: Some(
                Location::from_offset(self.file, self.text, s.span().start).with_field(field),
            ),
            message: message.into(),
        }
    }
    fn list<T: FromStr<Err = String> + Copy + PartialEq>(
        &self,
        v: &Option<OneOrMany>,
        field: &str,
        all: &[T],
        default: &[T],
    ) -> Result<Vec<T>, ScenarioError> {
        let Some(v) = v else {
            return Ok(default.to_vec());
        };
        let items = strings(self, v, field)?;
        if items.len() == 1 && items[0].get_ref() == "all" {
            return Ok(all.to_vec());
        }
        let mut out: Vec<T> = vec![];
        for s in &items {
            let t = T::from_str(s.get_ref()).map_err(|e| self.err(s, field, e))?;
            if out.contains(&t) {
                return Err(self.err(s, field, format!("`{}` is listed twice", s.get_ref())));
            }
            out.push(t);
        }
        Ok(out)
    }
}

/// Parses a scenario. `base` is the folder relative paths resolve against;
/// a `topology` that is not a file there may name a shipped topology.
pub fn parse_scenario(
    file: &str,
    text: &str,
    base: Option<&Path>,
    topology_override: Option<Topology>,
) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = toml::from_str(text).map_err(|e| ScenarioError::Invalid {
        location: e.span().map(|s| Location::from_offset(file, text, s.start)),
        message: e.message().trim().to_string(),
    })?;
    let cx = Cx { file, text };
    // Results name the topology they ran on: an override's own name.
    let (topology, topology_ref) = match topology_override {
        Some(t) => {
            let name = t.name.clone();
            (t, name)
        }
        None => (
            resolve_topology(&cx, &raw.topology, base)?,
            raw.topology.get_ref().clone(),
        ),
    };
    let gpus = topology.gpus();
    let ranks = match &raw.ranks {
        None => gpus.clone(),
        Some(v) if v.get_ref().as_str() == Some("all") => gpus.clone(),
        Some(v) if v.get_ref().is_str() => {
            return Err(cx.err(v, "ranks", "`ranks` is \"all\" or a list of GPU ids"));
        }
        Some(v) => {
            let mut out = Vec::new();
            for s in &strings(&cx, v, "ranks")? {
                let idx = topology
                    .lookup(s.get_ref())
                    .filter(|i| matches!(topology.node(*i).kind, NodeKind::Gpu(_)))
                    .ok_or_else(|| {
                        cx.err(
                            s,
                            "ranks",
                            format!(
                                "`{}` is not a GPU of topology `{}`",
                                s.get_ref(),
                                topology.name
                            ),
                        )
                    })?;
                if out.contains(&idx) {
                    return Err(cx.err(s, "ranks", format!("`{}` is listed twice", s.get_ref())));
                }
                out.push(idx);
            }
            out
        }
    };
    let algorithms = cx.list(
        &raw.algorithms,
        "algorithms",
        Algorithm::ALL,
        Algorithm::ALL,
    )?;
    let placements = cx.list(
        &raw.placement,
        "placement",
        Placement::ALL,
        &[Placement::Peer],
    )?;
    let fidelities = cx.list(&raw.fidelity, "fidelity", Fidelity::ALL, &[Fidelity::Flow])?;
    let launch = match &raw.launch {
        None => LaunchMode::Eager,
        Some(s) => LaunchMode::from_str(s.get_ref()).map_err(|e| cx.err(s, "launch", e))?,
    };
    let kernel = match &raw.kernel {
        None => KernelConfig::default(),
        Some(k) => {
            let v = *k.get_ref();
            if v.blocks == 0 || v.threads == 0 || v.threads > 1024 || v.threads % 32 != 0 {
                return Err(cx.err(
                    k,
                    "kernel",
                    "blocks must be > 0 and threads a multiple of 32 from 32 to 1024",
                ));
            }
            v
        }
    };
    let workload = parse_workload(&cx, &raw.workload, &topology, kernel)?;
    Ok(Scenario {
        name: raw.name,
        description: raw.description,
        topology_ref,
        topology,
        ranks,
        algorithms,
        placements,
        fidelities,
        seed: raw.seed,
        kernel,
        launch,
        workload,
    })
}

fn resolve_topology(
    cx: &Cx,
    t: &Spanned<String>,
    base: Option<&Path>,
) -> Result<Topology, ScenarioError> {
    let name = t.get_ref();
    let path: PathBuf = base
        .map(|b| b.join(name))
        .unwrap_or_else(|| PathBuf::from(name));
    let wrap = |topo: TopoError| ScenarioError::InTopology {
        location: Location::from_offset(cx.file, cx.text, t.span().start).with_field("topology"),
        topo,
    };
    if path.is_file() {
        return load_topology(&path).map_err(wrap);
    }
    let stem = Path::new(name)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(name);
    match shipped::get(stem) {
        Some(r) => r.map_err(wrap),
        None => Err(cx.err(
            t,
            "topology",
            format!(
                "`{name}` is neither a file ({}) nor a shipped topology ({})",
                path.display(),
                shipped::SHIPPED
                    .iter()
                    .map(|(s, _)| *s)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

fn parse_workload(
    cx: &Cx,
    w: &Spanned<RawWorkload>,
    topo: &Topology,
    kernel: KernelConfig,
) -> Result<Workload, ScenarioError> {
    let r = w.get_ref();
    let dtype = match &r.dtype {
        None => Dtype::Bf16,
        Some(s) => Dtype::from_str(s.get_ref()).map_err(|e| cx.err(s, "workload.dtype", e))?,
    };
    let gap = match &r.gap_us {
        None => Picos::ZERO,
        Some(g) if g.get_ref().is_finite() && *g.get_ref() >= 0.0 => {
            Picos::from_ns_f64(g.get_ref() * 1000.0)
        }
        Some(g) => return Err(cx.err(g, "workload.gap_us", "must be zero or more")),
    };
    let skew = match &r.skew {
        None => Skew::None,
        Some(s) => {
            s.get_ref()
                .validate()
                .map_err(|e| cx.err(s, "workload.skew", e))?;
            *s.get_ref()
        }
    };
    let only = |allowed: &[&str]| -> Result<(), ScenarioError> {
        let present: [(&str, bool); 9] = [
            ("sizes", r.sizes.is_some()),
            ("sweep", r.sweep.is_some()),
            ("repeats", r.repeats.is_some()),
            ("layers", r.layers.is_some()),
            ("allreduces_per_layer", r.allreduces_per_layer.is_some()),
            ("hidden", r.hidden.is_some()),
            ("tokens", r.tokens.is_some()),
            ("stream", !r.streams.is_empty()),
            ("skew", r.skew.is_some()),
        ];
        for (f, p) in present {
            if p && !allowed.contains(&f) {
                return Err(cx.err(
                    w,
                    &format!("workload.{f}"),
                    format!("`{f}` does not apply to a `{}` workload", r.kind.get_ref()),
                ));
            }
        }
        Ok(())
    };
    match r.kind.get_ref().as_str() {
        "allreduce" => {
            only(&["sizes", "sweep", "repeats", "skew"])?;
            let sizes = match (&r.sizes, &r.sweep) {
                (Some(s), None) => s.get_ref().clone(),
                (None, Some(sw)) => {
                    let s = sw.get_ref();
                    let (from, to) = (*s.from.get_ref(), *s.to.get_ref());
                    if from.0 == 0 || to < from {
                        return Err(cx.err(
                            &s.from,
                            "workload.sweep.from",
                            "sweep needs 0 < from <= to",
                        ));
                    }
                    if s.factor < 2 {
                        return Err(cx.err(
                            sw,
                            "workload.sweep.factor",
                            "factor must be 2 or more",
                        ));
                    }
                    let mut v = vec![];
                    let mut x = from.0;
                    while x <= to.0 {
                        v.push(Bytes(x));
                        x *= s.factor;
                    }
                    v
                }
                _ => {
                    return Err(cx.err(
                        w,
                        "workload.sizes",
                        "an allreduce workload needs exactly one of `sizes` and `sweep`",
                    ));
                }
            };
            if let Some(s) = &r.sizes
                && (s.get_ref().is_empty() || s.get_ref().iter().any(|b| b.0 == 0))
            {
                return Err(cx.err(
                    s,
                    "workload.sizes",
                    "sizes must be a non-empty list of sizes above zero",
                ));
            }
            Ok(Workload::Allreduce {
                sizes,
                dtype,
                repeats: r.repeats.unwrap_or(1).max(1),
                gap,
                skew,
            })
        }
        "verify-step" => {
            only(&["layers", "allreduces_per_layer", "hidden", "tokens", "skew"])?;
            let d = VerifyStep::default();
            let (layers, per, hidden, tokens) = (
                r.layers.unwrap_or(d.layers),
                r.allreduces_per_layer.unwrap_or(d.allreduces_per_layer),
                r.hidden.unwrap_or(d.hidden),
                r.tokens.unwrap_or(d.tokens),
            );
            if layers == 0 || per == 0 || hidden == 0 || tokens == 0 {
                return Err(cx.err(
                    w,
                    "workload",
                    "layers, allreduces_per_layer, hidden and tokens must be above zero",
                ));
            }
            Ok(Workload::VerifyStep(VerifyStep {
                layers,
                allreduces_per_layer: per,
                hidden,
                tokens,
                dtype,
                gap,
                skew,
            }))
        }
        "transfer" => {
            only(&["stream"])?;
            if r.streams.is_empty() {
                return Err(cx.err(
                    w,
                    "workload.stream",
                    "a transfer workload needs at least one [[workload.stream]]",
                ));
            }
            let mut streams = Vec::new();
            for s in &r.streams {
                let sr = s.get_ref();
                let node = |f: &Spanned<String>, field: &str| -> Result<NodeIdx, ScenarioError> {
                    let id = f.get_ref();
                    let idx = topo.lookup(id).ok_or_else(|| {
                        cx.err(
                            f,
                            field,
                            format!("`{id}` is not a node of topology `{}`", topo.name),
                        )
                    })?;
                    if !topo.node(idx).kind.is_endpoint() {
                        return Err(cx.err(
                            f,
                            field,
                            format!(
                                "`{id}` is a {}; streams run between GPUs and host memory",
                                topo.node(idx).kind.name()
                            ),
                        ));
                    }
                    Ok(idx)
                };
                let from = node(&sr.from, "workload.stream.from")?;
                let to = node(&sr.to, "workload.stream.to")?;
                if !matches!(topo.node(from).kind, NodeKind::Gpu(_)) {
                    return Err(cx.err(
                        &sr.from,
                        "workload.stream.from",
                        "a stream is driven by a GPU",
                    ));
                }
                if from == to {
                    return Err(cx.err(
                        &sr.to,
                        "workload.stream.to",
                        "a stream needs two different endpoints",
                    ));
                }
                let op = match sr.op.get_ref().as_str() {
                    "copy" => TransferOp::Copy,
                    "load" => TransferOp::Load,
                    "store" => TransferOp::Store,
                    "ping-pong" => TransferOp::PingPong,
                    other => {
                        return Err(cx.err(
                            &sr.op,
                            "workload.stream.op",
                            format!("unknown op `{other}` (copy, load, store, ping-pong)"),
                        ));
                    }
                };
                let bytes = sr.bytes.unwrap_or(Bytes(if op == TransferOp::PingPong {
                    8
                } else {
                    64 << 20
                }));
                if bytes.0 == 0 {
                    return Err(cx.err(s, "workload.stream.bytes", "bytes must be above zero"));
                }
                let k = KernelConfig {
                    blocks: sr.blocks.unwrap_or(kernel.blocks),
                    threads: sr.threads.unwrap_or(kernel.threads),
                };
                if k.blocks == 0
                    || k.threads == 0
                    || !k.threads.is_multiple_of(32)
                    || k.threads > 1024
                {
                    return Err(cx.err(
                        s,
                        "workload.stream.blocks",
                        "blocks must be > 0 and threads a multiple of 32 up to 1024",
                    ));
                }
                if let Some(f) = &sr.fence
                    && op != TransferOp::PingPong
                {
                    return Err(cx.err(
                        f,
                        "workload.stream.fence",
                        "`fence` applies to ping-pong streams only",
                    ));
                }
                streams.push(Stream {
                    from,
                    to,
                    op,
                    bytes,
                    kernel: k,
                    iterations: sr.iterations.unwrap_or(100).max(1),
                    fence: sr.fence.as_ref().is_some_and(|f| *f.get_ref()),
                });
            }
            Ok(Workload::Transfer { streams })
        }
        other => Err(cx.err(
            &r.kind,
            "workload.kind",
            format!("unknown workload kind `{other}` (allreduce, verify-step, transfer)"),
        )),
    }
}

/// Reads and parses a scenario file; relative topology paths resolve from its folder.
pub fn load_scenario(
    path: &Path,
    topology_override: Option<Topology>,
) -> Result<Scenario, ScenarioError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Invalid {
        location: Some(Location {
            file: name.clone(),
            line: 0,
            column: 0,
            field: None,
        }),
        message: format!("cannot read scenario file: {e}"),
    })?;
    parse_scenario(&name, &text, path.parent(), topology_override)
}

/// The embedded default: the EAGLE-3 verify step on 8× RTX PRO 6000, two sockets.
pub const DEFAULT_SCENARIO: &str =
    include_str!("../../../scenarios/eagle3-verify-pro6000-2socket.toml");
pub const DEFAULT_SCENARIO_NAME: &str = "scenarios/eagle3-verify-pro6000-2socket.toml";

pub fn default_scenario(topology_override: Option<Topology>) -> Result<Scenario, ScenarioError> {
    parse_scenario(
        DEFAULT_SCENARIO_NAME,
        DEFAULT_SCENARIO,
        None,
        topology_override,
    )
}
