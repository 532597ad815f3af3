//! The scenario TOML format: parsed into a [`ScenarioSpec`] with the span of
//! every field kept, then checked by the same rules as any other scenario
//! ([`super::validate`]); a failed check is reported at the line and column
//! of the field it names.

use super::validate::{self, FieldError};
use super::{
    AlgorithmConfig, KernelConfig, NcclSetup, Pattern, Scenario, ScenarioError, ScenarioSpec,
    Shape, Stream, VerifyStep, Workload,
};
use crate::kinds::{
    Algorithm, Dtype, Fidelity, LaunchMode, Launcher, PatternKind, Placement, TransferOp,
};
use crate::ladder::ladder;
use crate::skew::Skew;
use contend_nccl::NcclVersion;
use contend_topo::{Bytes, Location, NodeIdx, Picos, TopoError, Topology, load_topology, shipped};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use toml::Spanned;

mod built_in;
mod transfer;
use built_in::shipped_scenario;
pub use built_in::{
    DEFAULT_SCENARIO, DEFAULT_SCENARIO_NAME, default_scenario, shipped_scenario_names,
};
use transfer::{parse_pattern, parse_stream};

/// A string or a list of strings; the span of the whole value is kept.
type OneOrMany = Spanned<toml::Value>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    description: Option<String>,
    topology: Spanned<String>,
    ranks: Option<OneOrMany>,
    algorithms: Option<OneOrMany>,
    placement: Option<OneOrMany>,
    fidelity: Option<OneOrMany>,
    #[serde(default)]
    seed: Option<Spanned<u64>>,
    #[serde(default)]
    kernel: Option<Spanned<KernelConfig>>,
    launch: Option<Spanned<String>>,
    /// `per-rank` (default) or `one-thread`.
    launcher: Option<Spanned<String>>,
    /// `[algorithm.NAME]` tables.
    algorithm: Option<Spanned<RawAlgorithms>>,
    /// `[nccl]`: `version` and `NCCL_*` variables.
    nccl: Option<Spanned<RawNccl>>,
    workload: Spanned<RawWorkload>,
}

/// The `[nccl]` table by key.
type RawNccl = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

/// The `[algorithm.NAME]` tables by name.
type RawAlgorithms = BTreeMap<Spanned<String>, Spanned<RawAlgorithm>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlgorithm {
    launch: Option<Spanned<String>>,
    blocks: Option<Spanned<u32>>,
    threads: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    from: Spanned<Bytes>,
    to: Spanned<Bytes>,
    factor: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStream {
    from: Spanned<String>,
    to: Spanned<String>,
    op: Spanned<String>,
    bytes: Option<Spanned<Bytes>>,
    blocks: Option<Spanned<u32>>,
    threads: Option<Spanned<u32>>,
    iterations: Option<Spanned<u32>>,
    fence: Option<Spanned<bool>>,
    host_flags: Option<Spanned<bool>>,
    start_us: Option<Spanned<f64>>,
    repeat: Option<Spanned<u32>>,
}

/// `["gpu0", "gpu1"]` of a pattern's `pairs`.
type RawPair = Spanned<Vec<Spanned<String>>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPattern {
    kind: Spanned<String>,
    name: Option<Spanned<String>>,
    gpus: Option<OneOrMany>,
    distance: Option<Spanned<u32>>,
    source: Option<Spanned<String>>,
    sink: Option<Spanned<String>>,
    pairs: Option<Spanned<Vec<RawPair>>>,
    op: Spanned<String>,
    bytes: Option<Spanned<Bytes>>,
    blocks: Option<Spanned<u32>>,
    threads: Option<Spanned<u32>>,
    start_us: Option<Spanned<f64>>,
    repeat: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    kind: Spanned<String>,
    sizes: Option<Spanned<Vec<Bytes>>>,
    sweep: Option<Spanned<RawSweep>>,
    dtype: Option<Spanned<String>>,
    repeats: Option<Spanned<u32>>,
    layers: Option<Spanned<u32>>,
    allreduces_per_layer: Option<Spanned<u32>>,
    hidden: Option<Spanned<u64>>,
    tokens: Option<Spanned<u64>>,
    gap_us: Option<Spanned<f64>>,
    skew: Option<Spanned<Skew>>,
    #[serde(default, rename = "stream")]
    streams: Vec<Spanned<RawStream>>,
    #[serde(default, rename = "pattern")]
    patterns: Vec<Spanned<RawPattern>>,
}

/// The file being read and where each field of it is.
struct Cx<'a> {
    file: &'a str,
    text: &'a str,
    spans: HashMap<String, Range<usize>>,
}

impl Cx<'_> {
    fn at(&self, offset: usize, field: &str) -> Location {
        Location::from_offset(self.file, self.text, offset).with_field(field)
    }
    fn err<T>(&self, s: &Spanned<T>, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            location: Some(self.at(s.span().start, field)),
            message: message.into(),
        }
    }
    fn note<T>(&mut self, field: &str, s: &Spanned<T>) {
        self.spans.insert(field.to_string(), s.span());
    }
    fn note_opt<T>(&mut self, field: &str, s: &Option<Spanned<T>>) {
        if let Some(s) = s {
            self.note(field, s);
        }
    }
    /// A failed check, located at its field or the nearest enclosing one.
    fn locate(&self, e: FieldError) -> ScenarioError {
        let mut path = e.field.as_str();
        let offset = loop {
            if let Some(r) = self.spans.get(path) {
                break r.start;
            }
            match path.rfind(['.', '[']) {
                Some(i) => path = &path[..i],
                None => break 0,
            }
        };
        ScenarioError::Invalid {
            location: Some(self.at(offset, &e.field)),
            message: e.message,
        }
    }
    fn list<T: FromStr<Err = String> + Copy + PartialEq>(
        &mut self,
        v: &Option<OneOrMany>,
        field: &str,
        all: &[T],
        default: &[T],
    ) -> Result<Vec<T>, ScenarioError> {
        let Some(v) = v else {
            return Ok(default.to_vec());
        };
        self.note(field, v);
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

/// Parses a scenario. `base` is the folder relative paths resolve against;
/// a `topology` that is not a file there may name a shipped topology.
pub fn parse_scenario(
    file: &str,
    text: &str,
    base: Option<&Path>,
    topology_override: Option<Topology>,
) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = toml::from_str(text).map_err(|e| ScenarioError::Invalid {
        location: Some(Location::of_toml_error(file, text, &e)),
        message: e.message().trim().to_string(),
    })?;
    let mut cx = Cx {
        file,
        text,
        spans: HashMap::new(),
    };
    cx.note("name", &raw.name);
    cx.note("topology", &raw.topology);
    cx.note("workload", &raw.workload);
    cx.note_opt("seed", &raw.seed);
    cx.note_opt("kernel", &raw.kernel);
    // Results name the topology they ran on: an override's own name.
    let (topology, topology_ref, replaced_topology) = match topology_override {
        Some(t) => {
            let name = t.name.clone();
            (t, name, Some(raw.topology.get_ref().clone()))
        }
        None => (
            resolve_topology(&cx, &raw.topology, base)?,
            raw.topology.get_ref().clone(),
            None,
        ),
    };
    let ranks = parse_ranks(&mut cx, &raw.ranks, &topology)?;
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
        Some(s) => {
            cx.note("launch", s);
            LaunchMode::from_str(s.get_ref()).map_err(|e| cx.err(s, "launch", e))?
        }
    };
    let launcher = match &raw.launcher {
        None => Launcher::PerRank,
        Some(s) => {
            cx.note("launcher", s);
            Launcher::from_str(s.get_ref()).map_err(|e| cx.err(s, "launcher", e))?
        }
    };
    let kernel = raw
        .kernel
        .as_ref()
        .map_or_else(KernelConfig::default, |k| *k.get_ref());
    let per_algorithm = parse_per_algorithm(&mut cx, &raw.algorithm)?;
    let nccl = parse_nccl(&mut cx, &raw.nccl, base)?;
    if raw.nccl.is_none()
        && let Some(a) = &raw.algorithms
    {
        // NCCL's plan fails where the algorithm list asked for it
        cx.note("nccl", a);
    }
    let workload = parse_workload(&mut cx, &raw.workload, &topology, kernel)?;
    let spec = ScenarioSpec {
        name: raw.name.get_ref().clone(),
        description: raw.description,
        topology_ref,
        replaced_topology,
        topology,
        ranks,
        algorithms,
        placements,
        fidelities,
        seed: raw.seed.map_or(0, |s| *s.get_ref()),
        kernel,
        launch,
        launcher,
        per_algorithm,
        nccl,
        workload,
    };
    validate::check(&spec).map_err(|e| cx.locate(e))?;
    let plan = super::nccl::plan(&spec).map_err(|e| e.into_error(|f| cx.locate(f)))?;
    Ok(Scenario::from_checked(spec, plan))
}

/// `[nccl]`: `version = "2.28"`, `caller = "torch"` (or `"direct"`, the
/// default) and `NCCL_*` variables the replica models,
/// each a string or an integer (`NCCL_P2P_LEVEL = "SYS"`,
/// `NCCL_MAX_NCHANNELS = 4`); `NCCL_GRAPH_FILE` relative to the scenario's
/// folder. A key or value NCCL's parsing would not take is an error at it.
fn parse_nccl(
    cx: &mut Cx,
    v: &Option<Spanned<RawNccl>>,
    base: Option<&Path>,
) -> Result<NcclSetup, ScenarioError> {
    let mut out = NcclSetup::default();
    let Some(v) = v else {
        return Ok(out);
    };
    cx.note("nccl", v);
    for (key, value) in v.get_ref() {
        let k = key.get_ref().as_str();
        let field = format!("nccl.{k}");
        cx.note(&field, value);
        let text = match value.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => u8::from(*b).to_string(),
            toml::Value::Float(f) if k == "version" => f.to_string(),
            _ => {
                return Err(cx.err(value, &field, format!("`{k}` is a string or an integer")));
            }
        };
        if k == "version" {
            out.version = NcclVersion::from_str(&text).map_err(|e| cx.err(value, &field, e))?;
            continue;
        }
        if k == "caller" {
            out.caller = text.parse().map_err(|e| cx.err(value, &field, e))?;
            continue;
        }
        if !contend_nccl::MODELLED.contains(&k) && k != "NCCL_NVB_DISABLE" {
            let e = out.env.set_modelled(k, &text).unwrap_err();
            return Err(cx.err(
                key,
                &field,
                format!(
                    "`{k}` {} (the table takes `version`, `caller` and those)",
                    e.problem
                ),
            ));
        }
        let text = if k == "NCCL_GRAPH_FILE" {
            let p = Path::new(&text);
            match base {
                Some(b) if p.is_relative() => b.join(p).display().to_string(),
                _ => text,
            }
        } else {
            text
        };
        out.env
            .set_modelled(k, &text)
            .map_err(|e| cx.err(value, &field, e.to_string()))?;
    }
    Ok(out)
}

/// `[algorithm.NAME]` tables: launch mode and kernel shape per algorithm.
fn parse_per_algorithm(
    cx: &mut Cx,
    v: &Option<Spanned<RawAlgorithms>>,
) -> Result<BTreeMap<Algorithm, AlgorithmConfig>, ScenarioError> {
    let mut out = BTreeMap::new();
    let Some(v) = v else {
        return Ok(out);
    };
    cx.note("algorithm", v);
    for (name, t) in v.get_ref() {
        let alg = Algorithm::from_str(name.get_ref())
            .map_err(|e| cx.err(name, &format!("algorithm.{}", name.get_ref()), e))?;
        let f = |x: &str| format!("algorithm.{alg}.{x}");
        cx.note(&format!("algorithm.{alg}"), t);
        let r = t.get_ref();
        cx.note_opt(&f("blocks"), &r.blocks);
        cx.note_opt(&f("threads"), &r.threads);
        let launch = match &r.launch {
            None => None,
            Some(s) => {
                cx.note(&f("launch"), s);
                Some(LaunchMode::from_str(s.get_ref()).map_err(|e| cx.err(s, &f("launch"), e))?)
            }
        };
        out.insert(
            alg,
            AlgorithmConfig {
                launch,
                blocks: r.blocks.as_ref().map(|b| *b.get_ref()),
                threads: r.threads.as_ref().map(|b| *b.get_ref()),
            },
        );
    }
    Ok(out)
}

fn parse_ranks(
    cx: &mut Cx,
    v: &Option<OneOrMany>,
    topology: &Topology,
) -> Result<Vec<NodeIdx>, ScenarioError> {
    let gpus = topology.gpus();
    let Some(v) = v else {
        return Ok(gpus);
    };
    cx.note("ranks", v);
    match v.get_ref() {
        toml::Value::String(s) if s == "all" => return Ok(gpus),
        toml::Value::String(_) => {
            return Err(cx.err(v, "ranks", "`ranks` is \"all\" or a list of GPU ids"));
        }
        _ => {}
    }
    let mut out = Vec::new();
    for s in &strings(cx, v, "ranks")? {
        let idx = topology
            .lookup(s.get_ref())
            .filter(|i| matches!(topology.node(*i).kind, contend_topo::NodeKind::Gpu(_)))
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
    Ok(out)
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
        location: cx.at(t.span().start, "topology"),
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
    cx: &mut Cx,
    w: &Spanned<RawWorkload>,
    topo: &Topology,
    kernel: KernelConfig,
) -> Result<Workload, ScenarioError> {
    let r = w.get_ref();
    cx.note("workload.kind", &r.kind);
    cx.note_opt("workload.sizes", &r.sizes);
    cx.note_opt("workload.sweep", &r.sweep);
    cx.note_opt("workload.repeats", &r.repeats);
    cx.note_opt("workload.layers", &r.layers);
    cx.note_opt("workload.allreduces_per_layer", &r.allreduces_per_layer);
    cx.note_opt("workload.hidden", &r.hidden);
    cx.note_opt("workload.tokens", &r.tokens);
    cx.note_opt("workload.gap_us", &r.gap_us);
    cx.note_opt("workload.skew", &r.skew);
    if let Some(s) = &r.streams.first() {
        cx.note("workload.stream", s);
    }
    if let Some(s) = &r.patterns.first() {
        cx.note("workload.pattern", s);
    }
    let dtype = match &r.dtype {
        None => Dtype::Bf16,
        Some(s) => Dtype::from_str(s.get_ref()).map_err(|e| cx.err(s, "workload.dtype", e))?,
    };
    let gap = match &r.gap_us {
        None => Picos::ZERO,
        Some(g) if g.get_ref().is_finite() && *g.get_ref() >= 0.0 => {
            // saturates far above the limit the checks hold it to
            Picos::from_ns_f64(g.get_ref() * 1000.0)
        }
        Some(g) => return Err(cx.err(g, "workload.gap_us", "must be zero or more")),
    };
    let skew = r.skew.as_ref().map_or(Skew::None, |s| *s.get_ref());
    let only = |allowed: &[&str]| -> Result<(), ScenarioError> {
        let present: [(&str, bool); 10] = [
            ("sizes", r.sizes.is_some()),
            ("sweep", r.sweep.is_some()),
            ("repeats", r.repeats.is_some()),
            ("layers", r.layers.is_some()),
            ("allreduces_per_layer", r.allreduces_per_layer.is_some()),
            ("hidden", r.hidden.is_some()),
            ("tokens", r.tokens.is_some()),
            ("stream", !r.streams.is_empty()),
            ("pattern", !r.patterns.is_empty()),
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
                    let factor = s.factor.as_ref().map_or(2.0, |f| *f.get_ref());
                    ladder(*s.from.get_ref(), *s.to.get_ref(), factor)
                        .map_err(|e| {
                            let span = match e.field {
                                "from" => s.from.span(),
                                "to" => s.to.span(),
                                _ => s.factor.as_ref().map_or(sw.span(), |f| f.span()),
                            };
                            ScenarioError::Invalid {
                                location: Some(
                                    cx.at(span.start, &format!("workload.sweep.{}", e.field)),
                                ),
                                message: e.message,
                            }
                        })
                        .and_then(|sizes| {
                            // the smallest size is `from`: the error is there
                            validate::at_least_one_element(&sizes, dtype).map_err(|e| {
                                cx.err(&s.from, "workload.sweep.from", e.to_string())
                            })?;
                            Ok(sizes)
                        })?
                }
                _ => {
                    return Err(cx.err(
                        w,
                        "workload.sizes",
                        "an allreduce workload needs exactly one of `sizes` and `sweep`",
                    ));
                }
            };
            Ok(Workload::Allreduce {
                sizes,
                dtype,
                repeats: r.repeats.as_ref().map_or(1, |x| *x.get_ref()),
                gap,
                skew,
            })
        }
        "verify-step" => {
            only(&["layers", "allreduces_per_layer", "hidden", "tokens", "skew"])?;
            let d = VerifyStep::default();
            let get32 = |x: &Option<Spanned<u32>>, d: u32| x.as_ref().map_or(d, |v| *v.get_ref());
            let get64 = |x: &Option<Spanned<u64>>, d: u64| x.as_ref().map_or(d, |v| *v.get_ref());
            Ok(Workload::VerifyStep(VerifyStep {
                layers: get32(&r.layers, d.layers),
                allreduces_per_layer: get32(&r.allreduces_per_layer, d.allreduces_per_layer),
                hidden: get64(&r.hidden, d.hidden),
                tokens: get64(&r.tokens, d.tokens),
                dtype,
                gap,
                skew,
            }))
        }
        "transfer" => {
            only(&["stream", "pattern"])?;
            let mut streams = Vec::new();
            for (i, s) in r.streams.iter().enumerate() {
                streams.push(parse_stream(cx, i, s, topo, kernel)?);
            }
            let mut patterns = Vec::new();
            for (j, p) in r.patterns.iter().enumerate() {
                patterns.push(parse_pattern(cx, j, p, topo, kernel)?);
            }
            Ok(Workload::Transfer { streams, patterns })
        }
        other => Err(cx.err(
            &r.kind,
            "workload.kind",
            format!("unknown workload kind `{other}` (allreduce, verify-step, transfer)"),
        )),
    }
}

/// Reads and parses a scenario file; relative topology paths resolve from its
/// folder. A bare name that is no file (`transfer-gen5-write`, with or
/// without `.toml`) is the shipped scenario of that name.
pub fn load_scenario(
    path: &Path,
    topology_override: Option<Topology>,
) -> Result<Scenario, ScenarioError> {
    let name = path.display().to_string();
    let text = match contend_topo::bounded_read::read_text(path) {
        Ok(t) => t,
        Err(contend_topo::bounded_read::ReadError::Io { .. }) if !path.exists() => {
            return match shipped_scenario(path) {
                Some((stem, text)) => parse_scenario(
                    &format!("scenarios/{stem}.toml"),
                    text,
                    Some(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")),
                    topology_override,
                ),
                None => Err(ScenarioError::Invalid {
                    location: Some(Location {
                        file: name,
                        line: 0,
                        column: 0,
                        field: None,
                    }),
                    message: format!(
                        "no such scenario file, and no shipped scenario of that name (shipped: {})",
                        shipped_scenario_names().join(", ")
                    ),
                }),
            };
        }
        Err(e) => {
            let (line, column) = e.line_column();
            return Err(ScenarioError::Invalid {
                location: Some(Location {
                    file: name,
                    line,
                    column,
                    field: None,
                }),
                message: format!("cannot read scenario file: {}", e.reason()),
            });
        }
    };
    parse_scenario(&name, &text, path.parent(), topology_override)
}
