//! The topology TOML format. See `topologies/README.md` for a guide; every
//! field is checked (numbers against the stated [`limits`](crate::limits))
//! and an error names the file, line, column and field.

use crate::error::{Lines, Location, TopoError, TopoErrorKind};
use crate::limits::{self, LimitError, MAX_LINKS, MAX_NODES};
use crate::model::{
    CollapsePer, CollapseSpec, CrossSocketP2p, GpuSpec, LinkKind, LinkSpec, Node, NodeId, NodeKind,
    P2pSpec, PcieSpec, RootComplexSpec, SwitchSpec, Topology, TopologySpec,
};
use crate::pcie::{PcieGen, VALID_PAYLOADS, VALID_RCBS};

const POW2: &str = "is not a power of two from 128 to 4096";
use crate::units::{Bytes, BytesPerSec, Picos};
use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    name: String,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    platform: Option<String>,
    #[serde(default)]
    p2p: Option<Spanned<RawP2p>>,
    #[serde(default, rename = "node")]
    nodes: Vec<Spanned<RawNode>>,
    #[serde(default, rename = "link")]
    links: Vec<Spanned<RawLink>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    id: Spanned<String>,
    kind: Spanned<String>,
    model: Option<String>,
    // Integers are read as TOML's own i64 and range-checked here, so a
    // negative or huge value gets the same message as any out-of-range one.
    sms: Option<Spanned<i64>>,
    memory_bandwidth_gbps: Option<Spanned<f64>>,
    socket: Option<Spanned<i64>>,
    p2p_bandwidth_gbps: Option<Spanned<f64>>,
    latency_ns: Option<Spanned<f64>>,
    posted_write_collapse: Option<Spanned<bool>>,
    chip: Option<Spanned<String>>,
    mrrs: Option<Spanned<i64>>,
    tags_10bit: Option<Spanned<bool>>,
    port_p2p_gbps: Option<Spanned<f64>>,
    collapse: Option<Spanned<RawCollapse>>,
    note: Option<String>,
}

/// `[p2p]`: `access = "all" | "none"`, or `missing = [["gpu0", "gpu4"], …]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawP2p {
    access: Option<Spanned<String>>,
    missing: Option<Vec<Spanned<Vec<String>>>>,
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCollapse {
    min_sources: Option<Spanned<i64>>,
    min_targets: Option<Spanned<i64>>,
    rate_gbps: Option<Spanned<f64>>,
    per: Option<Spanned<String>>,
    window_ns: Option<Spanned<f64>>,
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    a: Spanned<String>,
    b: Spanned<String>,
    kind: Spanned<String>,
    #[serde(rename = "gen")]
    generation: Option<Spanned<i64>>,
    width: Option<Spanned<i64>>,
    mps: Option<Spanned<i64>>,
    mrrs: Option<Spanned<i64>>,
    rcb: Option<Spanned<i64>>,
    bandwidth_gbps: Option<Spanned<f64>>,
    latency_ns: Option<Spanned<f64>>,
    protocol: Option<String>,
    p2p_bandwidth_gbps: Option<Spanned<f64>>,
    p2p_stream_gbps: Option<Spanned<f64>>,
    p2p_stream_knee: Option<Spanned<f64>>,
    p2p_stream_exponent: Option<Spanned<f64>>,
    note: Option<String>,
}

struct Ctx<'a> {
    file: &'a str,
    lines: Lines<'a>,
}

impl Ctx<'_> {
    fn loc<T>(&self, s: &Spanned<T>, field: &str) -> Location {
        Location::in_lines(self.file, &self.lines, s.span().start).with_field(field)
    }
    fn err<T>(&self, s: &Spanned<T>, field: &str, kind: TopoErrorKind) -> TopoError {
        TopoError::at(Some(self.loc(s, field)), kind)
    }
    fn required<'v, T>(
        &self,
        v: &'v Option<Spanned<T>>,
        whole: &Spanned<impl Sized>,
        field: &str,
        what: &str,
    ) -> Result<&'v Spanned<T>, TopoError> {
        v.as_ref().ok_or_else(|| {
            self.err(
                whole,
                field,
                TopoErrorKind::Invalid(format!("{what} needs `{field}`")),
            )
        })
    }
    fn invalid<T>(&self, s: &Spanned<T>, field: &str, message: String) -> TopoError {
        self.err(s, field, TopoErrorKind::Invalid(message))
    }
    fn limit<T>(&self, s: &Spanned<T>, field: &str, e: LimitError) -> TopoError {
        self.err(s, field, TopoErrorKind::Limit(e))
    }
    fn rate(&self, v: &Spanned<f64>, field: &str) -> Result<BytesPerSec, TopoError> {
        limits::bandwidth_gbps(*v.get_ref()).map_err(|e| self.limit(v, field, e))
    }
    fn opt_rate(
        &self,
        v: &Option<Spanned<f64>>,
        field: &str,
    ) -> Result<Option<BytesPerSec>, TopoError> {
        v.as_ref().map(|v| self.rate(v, field)).transpose()
    }
    fn opt_number(
        &self,
        v: &Option<Spanned<f64>>,
        field: &str,
        lo: f64,
        hi: f64,
    ) -> Result<Option<f64>, TopoError> {
        v.as_ref()
            .map(|s| {
                let x = *s.get_ref();
                if x.is_finite() && (lo..=hi).contains(&x) {
                    Ok(x)
                } else {
                    Err(self.invalid(
                        s,
                        field,
                        format!(
                            "{field} = {} is outside {lo}..={}",
                            limits::num(x),
                            limits::num(hi)
                        ),
                    ))
                }
            })
            .transpose()
    }
    fn count(&self, v: &Option<Spanned<i64>>, field: &str) -> Result<Option<u32>, TopoError> {
        v.as_ref()
            .map(|s| limits::count(*s.get_ref(), field).map_err(|e| self.limit(s, field, e)))
            .transpose()
    }
    fn collapse(
        &self,
        v: &Option<Spanned<RawCollapse>>,
    ) -> Result<Option<CollapseSpec>, TopoError> {
        let Some(c) = v else { return Ok(None) };
        let r = c.get_ref();
        let per = match r.per.as_ref().map(|p| p.get_ref().as_str()) {
            None | Some("port") => CollapsePer::Port,
            Some("pair") => CollapsePer::Pair,
            Some(other) => {
                let p = r.per.as_ref().expect("given");
                return Err(self.invalid(
                    p,
                    "collapse.per",
                    format!("collapse per `{other}`: `port` or `pair`"),
                ));
            }
        };
        Ok(Some(CollapseSpec {
            min_sources: self.count(&r.min_sources, "collapse.min_sources")?,
            min_targets: self.count(&r.min_targets, "collapse.min_targets")?,
            rate: self.opt_rate(&r.rate_gbps, "collapse.rate_gbps")?,
            per,
            window: r
                .window_ns
                .as_ref()
                .map(|s| {
                    limits::latency_ns(*s.get_ref())
                        .map_err(|e| self.limit(s, "collapse.window_ns", e))
                })
                .transpose()?,
            note: r.note.clone(),
        }))
    }
    fn p2p(&self, v: &Option<Spanned<RawP2p>>) -> Result<P2pSpec, TopoError> {
        let Some(p) = v else {
            return Ok(P2pSpec::FromModels);
        };
        let r = p.get_ref();
        match (&r.access, &r.missing) {
            (Some(a), Some(_)) => Err(self.invalid(
                a,
                "p2p.access",
                "`access` and `missing` both given: `access` is for every pair, `missing` lists the pairs without P2P".into(),
            )),
            (Some(a), None) => match a.get_ref().as_str() {
                "all" => Ok(P2pSpec::All),
                "none" => Ok(P2pSpec::None),
                other => Err(self.invalid(
                    a,
                    "p2p.access",
                    format!("access = `{other}`: `all` or `none`"),
                )),
            },
            (None, Some(pairs)) => pairs
                .iter()
                .map(|pair| match pair.get_ref().as_slice() {
                    [a, b] => Ok((
                        NodeId(a.clone()),
                        NodeId(b.clone()),
                        Some(self.loc(pair, "p2p.missing")),
                    )),
                    other => Err(self.invalid(
                        pair,
                        "p2p.missing",
                        format!("a pair is two GPU ids, not {}", other.len()),
                    )),
                })
                .collect::<Result<_, _>>()
                .map(P2pSpec::Missing),
            (None, None) => Err(self.invalid(
                p,
                "p2p",
                "`[p2p]` says neither `access` (\"all\" or \"none\") nor `missing` (pairs without P2P)".into(),
            )),
        }
    }
    fn latency(&self, v: &Option<Spanned<f64>>) -> Result<Option<Picos>, TopoError> {
        v.as_ref()
            .map(|s| limits::latency_ns(*s.get_ref()).map_err(|e| self.limit(s, "latency_ns", e)))
            .transpose()
    }
    fn socket(&self, v: &Option<Spanned<i64>>) -> Result<u32, TopoError> {
        v.as_ref().map_or(Ok(0), |s| {
            limits::socket(*s.get_ref()).map_err(|e| self.limit(s, "socket", e))
        })
    }
    fn forbid<T>(&self, v: &Option<Spanned<T>>, field: &str, kind: &str) -> Result<(), TopoError> {
        match v {
            Some(s) => Err(self.err(
                s,
                field,
                TopoErrorKind::Invalid(format!("`{field}` does not apply to a {kind}")),
            )),
            None => Ok(()),
        }
    }
}

/// Parses topology TOML text; `file` names it in errors.
pub fn parse_topology(file: &str, text: &str) -> Result<Topology, TopoError> {
    let raw: RawTopology = toml::from_str(text).map_err(|e| {
        TopoError::at(
            Some(Location::of_toml_error(file, text, &e)),
            TopoErrorKind::Syntax(e.message().trim().to_string()),
        )
    })?;
    let cx = Ctx {
        file,
        lines: Lines::new(text),
    };
    if let Some(n) = raw.nodes.get(MAX_NODES) {
        return Err(cx.invalid(
            n,
            "node",
            format!(
                "{} nodes: a topology has at most {MAX_NODES}",
                raw.nodes.len()
            ),
        ));
    }
    if let Some(l) = raw.links.get(MAX_LINKS) {
        return Err(cx.invalid(
            l,
            "link",
            format!(
                "{} links: a topology has at most {MAX_LINKS}",
                raw.links.len()
            ),
        ));
    }
    let mut spec = TopologySpec {
        file: Some(file.to_string()),
        name: raw.name,
        source: raw.source,
        platform: raw.platform,
        p2p: cx.p2p(&raw.p2p)?,
        p2p_note: raw.p2p.as_ref().and_then(|p| p.get_ref().note.clone()),
        ..Default::default()
    };
    for n in &raw.nodes {
        let r = n.get_ref();
        let kind = match r.kind.get_ref().as_str() {
            "gpu" => {
                let sms = cx.required(&r.sms, n, "sms", "a gpu")?;
                let bw = cx.required(
                    &r.memory_bandwidth_gbps,
                    n,
                    "memory_bandwidth_gbps",
                    "a gpu",
                )?;
                let sms_n = limits::sms(*sms.get_ref()).map_err(|e| cx.limit(sms, "sms", e))?;
                NodeKind::Gpu(GpuSpec {
                    model: r.model.clone().unwrap_or_else(|| "GPU".into()),
                    sms: sms_n,
                    memory_bandwidth: cx.rate(bw, "memory_bandwidth_gbps")?,
                    tags_10bit: r.tags_10bit.as_ref().is_none_or(|t| *t.get_ref()),
                })
            }
            "switch" => NodeKind::Switch(SwitchSpec {
                latency: cx.latency(&r.latency_ns)?,
                chip: r.chip.as_ref().map(|c| c.get_ref().clone()),
                mrrs: r
                    .mrrs
                    .as_ref()
                    .map(|m| {
                        u64::try_from(*m.get_ref())
                            .ok()
                            .filter(|b| VALID_PAYLOADS.contains(b))
                            .map(Bytes)
                            .ok_or_else(|| {
                                cx.invalid(m, "mrrs", format!("mrrs {} {POW2}", m.get_ref()))
                            })
                    })
                    .transpose()?,
                tags_10bit: r.tags_10bit.as_ref().is_none_or(|t| *t.get_ref()),
                collapse: cx.collapse(&r.collapse)?,
            }),
            "root_complex" => {
                let collapse = match (&r.collapse, &r.posted_write_collapse) {
                    (Some(_), Some(p)) => {
                        return Err(cx.invalid(
                            p,
                            "posted_write_collapse",
                            "give either `posted_write_collapse` or a `[node.collapse]` table, not both".into(),
                        ));
                    }
                    (None, Some(p)) if *p.get_ref() => Some(CollapseSpec {
                        min_sources: None,
                        min_targets: None,
                        rate: None,
                        per: CollapsePer::Port,
                        window: None,
                        note: None,
                    }),
                    _ => cx.collapse(&r.collapse)?,
                };
                NodeKind::RootComplex(RootComplexSpec {
                    socket: cx.socket(&r.socket)?,
                    p2p_bandwidth: cx.opt_rate(&r.p2p_bandwidth_gbps, "p2p_bandwidth_gbps")?,
                    latency: cx.latency(&r.latency_ns)?,
                    port_p2p_bandwidth: cx.opt_rate(&r.port_p2p_gbps, "port_p2p_gbps")?,
                    memory_bandwidth: cx
                        .opt_rate(&r.memory_bandwidth_gbps, "memory_bandwidth_gbps")?,
                    collapse,
                })
            }
            "host_memory" => NodeKind::HostMemory {
                socket: cx.socket(&r.socket)?,
                latency: cx.latency(&r.latency_ns)?,
            },
            "cpu_interconnect" => NodeKind::CpuInterconnect {
                socket: cx.socket(&r.socket)?,
                latency: cx.latency(&r.latency_ns)?,
                p2p_bandwidth: cx.opt_rate(&r.p2p_bandwidth_gbps, "p2p_bandwidth_gbps")?,
            },
            other => {
                return Err(cx.err(
                    &r.kind,
                    "kind",
                    TopoErrorKind::Invalid(format!(
                        "unknown node kind `{other}` (gpu, switch, root_complex, host_memory, cpu_interconnect)"
                    )),
                ));
            }
        };
        let kname = kind.name();
        if !matches!(kind, NodeKind::Gpu(_)) {
            cx.forbid(&r.sms, "sms", kname)?;
        }
        if !matches!(kind, NodeKind::Gpu(_) | NodeKind::RootComplex(_)) {
            cx.forbid(&r.memory_bandwidth_gbps, "memory_bandwidth_gbps", kname)?;
        }
        if !matches!(
            kind,
            NodeKind::RootComplex(_) | NodeKind::CpuInterconnect { .. }
        ) {
            cx.forbid(&r.p2p_bandwidth_gbps, "p2p_bandwidth_gbps", kname)?;
        }
        if !matches!(kind, NodeKind::RootComplex(_)) {
            cx.forbid(&r.port_p2p_gbps, "port_p2p_gbps", kname)?;
            cx.forbid(&r.posted_write_collapse, "posted_write_collapse", kname)?;
        }
        if !matches!(kind, NodeKind::RootComplex(_) | NodeKind::Switch(_)) {
            cx.forbid(&r.collapse, "collapse", kname)?;
        }
        if !matches!(kind, NodeKind::Switch(_)) {
            cx.forbid(&r.chip, "chip", kname)?;
            cx.forbid(&r.mrrs, "mrrs", kname)?;
        }
        if !matches!(kind, NodeKind::Switch(_) | NodeKind::Gpu(_)) {
            cx.forbid(&r.tags_10bit, "tags_10bit", kname)?;
        }
        if matches!(kind, NodeKind::Gpu(_)) {
            cx.forbid(&r.latency_ns, "latency_ns", kname)?;
        }
        if matches!(kind, NodeKind::Gpu(_) | NodeKind::Switch(_)) {
            cx.forbid(&r.socket, "socket", kname)?;
        }
        spec.nodes.push((
            Node {
                id: NodeId(r.id.get_ref().clone()),
                kind,
                note: r.note.clone(),
            },
            Some(cx.loc(&r.id, "id")),
        ));
    }
    for l in &raw.links {
        let r = l.get_ref();
        let what = format!("a {} link", r.kind.get_ref());
        let kind = match r.kind.get_ref().as_str() {
            "pcie" => {
                let g = cx.required(&r.generation, l, "gen", &what)?;
                let w = cx.required(&r.width, l, "width", &what)?;
                cx.forbid(
                    &r.bandwidth_gbps,
                    "bandwidth_gbps",
                    "PCIe link (its rate follows gen and width)",
                )?;
                cx.forbid(
                    &r.latency_ns,
                    "latency_ns",
                    "PCIe link (pcie.link_latency_ns in the model params)",
                )?;
                let generation = u8::try_from(*g.get_ref())
                    .ok()
                    .filter(|g| (1..=6).contains(g))
                    .ok_or_else(|| {
                        cx.invalid(
                            g,
                            "gen",
                            format!("PCIe generation {} does not exist (1 to 6)", g.get_ref()),
                        )
                    })?;
                let width = u8::try_from(*w.get_ref())
                    .ok()
                    .filter(|w| crate::pcie::VALID_WIDTHS.contains(w))
                    .ok_or_else(|| {
                        cx.invalid(
                            w,
                            "width",
                            format!(
                                "PCIe width x{} is impossible (x1, x2, x4, x8, x12 or x16)",
                                w.get_ref()
                            ),
                        )
                    })?;
                let bytes = |v: &Option<Spanned<i64>>,
                             field: &str,
                             default: u64,
                             ok: &[u64],
                             rule: &str| {
                    let Some(s) = v else {
                        return Ok(Bytes(default));
                    };
                    u64::try_from(*s.get_ref())
                        .ok()
                        .filter(|b| ok.contains(b))
                        .map(Bytes)
                        .ok_or_else(|| {
                            cx.invalid(s, field, format!("{field} {} {rule}", s.get_ref()))
                        })
                };
                LinkKind::Pcie(PcieSpec {
                    generation: PcieGen(generation),
                    width,
                    mps: bytes(&r.mps, "mps", 256, &VALID_PAYLOADS, POW2)?,
                    mrrs: bytes(&r.mrrs, "mrrs", 512, &VALID_PAYLOADS, POW2)?,
                    rcb: bytes(&r.rcb, "rcb", 64, &VALID_RCBS, "must be 64 or 128")?,
                })
            }
            "switch_fabric" => {
                for (v, f) in [(&r.generation, "gen"), (&r.width, "width")] {
                    cx.forbid(v, f, &what)?;
                }
                LinkKind::SwitchFabric {
                    bandwidth: cx.opt_rate(&r.bandwidth_gbps, "bandwidth_gbps")?,
                    latency: cx.latency(&r.latency_ns)?.unwrap_or(Picos::ZERO),
                }
            }
            "nvlink" | "cpu" | "memory" => {
                let bw = cx.required(&r.bandwidth_gbps, l, "bandwidth_gbps", &what)?;
                let bandwidth = cx.rate(bw, "bandwidth_gbps")?;
                let latency = cx.latency(&r.latency_ns)?.unwrap_or(Picos::ZERO);
                for (v, f) in [(&r.generation, "gen"), (&r.width, "width")] {
                    cx.forbid(v, f, &what)?;
                }
                match r.kind.get_ref().as_str() {
                    "nvlink" => LinkKind::Nvlink { bandwidth, latency },
                    "cpu" => LinkKind::Cpu {
                        protocol: r.protocol.clone().unwrap_or_else(|| "UPI".into()),
                        bandwidth,
                        latency,
                        p2p: CrossSocketP2p {
                            bandwidth: cx.opt_rate(&r.p2p_bandwidth_gbps, "p2p_bandwidth_gbps")?,
                            stream: cx.opt_rate(&r.p2p_stream_gbps, "p2p_stream_gbps")?,
                            knee: cx.opt_number(
                                &r.p2p_stream_knee,
                                "p2p_stream_knee",
                                1.0,
                                limits::MAX_NODES as f64 * limits::MAX_NODES as f64,
                            )?,
                            exponent: cx.opt_number(
                                &r.p2p_stream_exponent,
                                "p2p_stream_exponent",
                                0.0,
                                16.0,
                            )?,
                        },
                    },
                    _ => LinkKind::Memory { bandwidth },
                }
            }
            "die" => {
                for (v, f) in [(&r.generation, "gen"), (&r.width, "width")] {
                    cx.forbid(v, f, &what)?;
                }
                cx.forbid(&r.bandwidth_gbps, "bandwidth_gbps", &what)?;
                cx.forbid(
                    &r.latency_ns,
                    "latency_ns",
                    "die link (the cpu_interconnect's latency_ns is the crossing cost)",
                )?;
                LinkKind::Die
            }
            other => {
                return Err(cx.err(
                    &r.kind,
                    "kind",
                    TopoErrorKind::Invalid(format!(
                        "unknown link kind `{other}` (pcie, nvlink, cpu, memory, switch_fabric, die)"
                    )),
                ));
            }
        };
        if !matches!(kind, LinkKind::Cpu { .. }) {
            for (v, f) in [
                (&r.p2p_bandwidth_gbps, "p2p_bandwidth_gbps"),
                (&r.p2p_stream_gbps, "p2p_stream_gbps"),
                (&r.p2p_stream_knee, "p2p_stream_knee"),
                (&r.p2p_stream_exponent, "p2p_stream_exponent"),
            ] {
                cx.forbid(v, f, &what)?;
            }
        }
        for (v, f) in [(&r.mps, "mps"), (&r.mrrs, "mrrs"), (&r.rcb, "rcb")] {
            if let Some(s) = v
                && !matches!(kind, LinkKind::Pcie(_))
            {
                return Err(cx.err(
                    s,
                    f,
                    TopoErrorKind::Invalid(format!("`{f}` applies to PCIe links only")),
                ));
            }
        }
        let loc = Location::in_lines(file, &cx.lines, l.span().start);
        spec.links.push(LinkSpec {
            a: NodeId(r.a.get_ref().clone()),
            b: NodeId(r.b.get_ref().clone()),
            kind,
            note: r.note.clone(),
            location: Some(loc),
        });
        // Unknown node names: point at the field itself.
        for (s, f) in [(&r.a, "a"), (&r.b, "b")] {
            if !raw
                .nodes
                .iter()
                .any(|n| n.get_ref().id.get_ref() == s.get_ref())
            {
                return Err(cx.err(
                    s,
                    f,
                    TopoErrorKind::UnknownNode {
                        id: s.get_ref().clone(),
                    },
                ));
            }
        }
    }
    Topology::new(spec)
}

/// Reads and parses a topology file.
pub fn load_topology(path: &Path) -> Result<Topology, TopoError> {
    let name = path.display().to_string();
    let text = crate::bounded_read::read_text(path).map_err(|e| {
        let (line, column) = e.line_column();
        TopoError::at(
            Some(Location {
                file: name.clone(),
                line,
                column,
                field: None,
            }),
            TopoErrorKind::Io(e.reason()),
        )
    })?;
    parse_topology(&name, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root complex, its memory and `gpus` GPUs on it.
    fn flat(gpus: usize) -> String {
        let mut t = String::from(
            "name = \"big\"\n[[node]]\nid = \"rc0\"\nkind = \"root_complex\"\n\
             [[node]]\nid = \"mem0\"\nkind = \"host_memory\"\n\
             [[link]]\na = \"mem0\"\nb = \"rc0\"\nkind = \"memory\"\nbandwidth_gbps = 300\n",
        );
        for i in 0..gpus {
            t += &format!(
                "[[node]]\nid = \"gpu{i}\"\nkind = \"gpu\"\nsms = 132\nmemory_bandwidth_gbps = 4800\n\
                 [[link]]\na = \"gpu{i}\"\nb = \"rc0\"\nkind = \"pcie\"\ngen = 5\nwidth = 16\n"
            );
        }
        t
    }

    #[test]
    fn node_and_link_counts_are_bounded_and_the_largest_loads_quickly() {
        let t0 = std::time::Instant::now();
        let topo = parse_topology("big.toml", &flat(MAX_NODES - 2)).unwrap();
        assert_eq!(topo.gpus().len(), MAX_NODES - 2);
        assert!(t0.elapsed().as_secs_f64() < 5.0, "{:?}", t0.elapsed());
        let e = parse_topology("big.toml", &flat(MAX_NODES - 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("big.toml:") && e.contains("(field `node`)") && e.contains("at most 512"),
            "{e}"
        );
    }
}
