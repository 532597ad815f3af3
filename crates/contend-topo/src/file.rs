//! The topology TOML format. See `topologies/README.md` for a guide; every
//! field is checked and an error names the file, line, column and field.

use crate::error::{Location, TopoError, TopoErrorKind};
use crate::model::{
    GpuSpec, LinkKind, Node, NodeId, NodeKind, PcieSpec, RootComplexSpec, Topology, TopologySpec,
};
use crate::pcie::PcieGen;
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
    sms: Option<Spanned<u32>>,
    memory_bandwidth_gbps: Option<Spanned<f64>>,
    socket: Option<u32>,
    p2p_bandwidth_gbps: Option<Spanned<f64>>,
    latency_ns: Option<Spanned<f64>>,
    posted_write_collapse: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    a: Spanned<String>,
    b: Spanned<String>,
    kind: Spanned<String>,
    #[serde(rename = "gen")]
    generation: Option<Spanned<u8>>,
    width: Option<Spanned<u8>>,
    mps: Option<Spanned<u64>>,
    mrrs: Option<Spanned<u64>>,
    rcb: Option<Spanned<u64>>,
    bandwidth_gbps: Option<Spanned<f64>>,
    latency_ns: Option<Spanned<f64>>,
    protocol: Option<String>,
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn loc<T>(&self, s: &Spanned<T>, field: &str) -> Location {
        Location::from_offset(self.file, self.text, s.span().start).with_field(field)
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
    fn rate(&self, v: &Spanned<f64>, field: &str) -> Result<BytesPerSec, TopoError> {
        let x = *v.get_ref();
        if !(x.is_finite() && x > 0.0) {
            return Err(self.err(
                v,
                field,
                TopoErrorKind::Zero {
                    field: field.to_string(),
                },
            ));
        }
        Ok(BytesPerSec::from_gbps(x))
    }
    fn latency(&self, v: &Option<Spanned<f64>>) -> Result<Option<Picos>, TopoError> {
        match v {
            None => Ok(None),
            Some(s) if s.get_ref().is_finite() && *s.get_ref() >= 0.0 => {
                Ok(Some(Picos::from_ns_f64(*s.get_ref())))
            }
            Some(s) => Err(self.err(
                s,
                "latency_ns",
                TopoErrorKind::Invalid("latency_ns must be zero or more".into()),
            )),
        }
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
        let loc = e.span().map(|s| Location::from_offset(file, text, s.start));
        TopoError::at(loc, TopoErrorKind::Syntax(e.message().trim().to_string()))
    })?;
    let cx = Ctx { file, text };
    let mut spec = TopologySpec {
        file: Some(file.to_string()),
        name: raw.name,
        source: raw.source,
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
                if *sms.get_ref() == 0 {
                    return Err(cx.err(
                        sms,
                        "sms",
                        TopoErrorKind::Zero {
                            field: "sms".into(),
                        },
                    ));
                }
                NodeKind::Gpu(GpuSpec {
                    model: r.model.clone().unwrap_or_else(|| "GPU".into()),
                    sms: *sms.get_ref(),
                    memory_bandwidth: cx.rate(bw, "memory_bandwidth_gbps")?,
                })
            }
            "switch" => NodeKind::Switch {
                latency: cx.latency(&r.latency_ns)?,
            },
            "root_complex" => NodeKind::RootComplex(RootComplexSpec {
                socket: r.socket.unwrap_or(0),
                p2p_bandwidth: r
                    .p2p_bandwidth_gbps
                    .as_ref()
                    .map(|v| cx.rate(v, "p2p_bandwidth_gbps"))
                    .transpose()?,
                latency: cx.latency(&r.latency_ns)?,
                posted_write_collapse: r.posted_write_collapse.unwrap_or(false),
            }),
            "host_memory" => NodeKind::HostMemory {
                socket: r.socket.unwrap_or(0),
                latency: cx.latency(&r.latency_ns)?,
            },
            "cpu_interconnect" => NodeKind::CpuInterconnect {
                socket: r.socket.unwrap_or(0),
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
            cx.forbid(&r.memory_bandwidth_gbps, "memory_bandwidth_gbps", kname)?;
        }
        if !matches!(kind, NodeKind::RootComplex(_)) {
            cx.forbid(&r.p2p_bandwidth_gbps, "p2p_bandwidth_gbps", kname)?;
        }
        if matches!(kind, NodeKind::Gpu(_) | NodeKind::CpuInterconnect { .. }) {
            cx.forbid(&r.latency_ns, "latency_ns", kname)?;
        }
        spec.nodes.push((
            Node {
                id: NodeId(r.id.get_ref().clone()),
                kind,
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
                let bytes = |v: &Option<Spanned<u64>>, d: u64| {
                    v.as_ref().map(|s| Bytes(*s.get_ref())).unwrap_or(Bytes(d))
                };
                cx.forbid(
                    &r.bandwidth_gbps,
                    "bandwidth_gbps",
                    "PCIe link (its rate follows gen and width)",
                )?;
                LinkKind::Pcie(PcieSpec {
                    generation: PcieGen(*g.get_ref()),
                    width: *w.get_ref(),
                    mps: bytes(&r.mps, 256),
                    mrrs: bytes(&r.mrrs, 512),
                    rcb: bytes(&r.rcb, 64),
                })
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
                    },
                    _ => LinkKind::Memory { bandwidth },
                }
            }
            other => {
                return Err(cx.err(
                    &r.kind,
                    "kind",
                    TopoErrorKind::Invalid(format!(
                        "unknown link kind `{other}` (pcie, nvlink, cpu, memory)"
                    )),
                ));
            }
        };
        // Field-precise checks on PCIe numbers before the model's generic ones.
        if let (LinkKind::Pcie(_), Some(w)) = (&kind, &r.width)
            && !crate::pcie::VALID_WIDTHS.contains(w.get_ref())
        {
            return Err(cx.err(
                w,
                "width",
                TopoErrorKind::Invalid(format!(
                    "PCIe width x{} is impossible (x1, x2, x4, x8, x12 or x16)",
                    w.get_ref()
                )),
            ));
        }
        if let (LinkKind::Pcie(_), Some(g)) = (&kind, &r.generation)
            && !(1..=6).contains(g.get_ref())
        {
            return Err(cx.err(
                g,
                "gen",
                TopoErrorKind::Invalid(format!(
                    "PCIe generation {} does not exist (1 to 6)",
                    g.get_ref()
                )),
            ));
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
        let loc = Location::from_offset(file, text, l.span().start);
        spec.links.push((
            NodeId(r.a.get_ref().clone()),
            NodeId(r.b.get_ref().clone()),
            kind,
            Some(loc),
        ));
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
    let text = std::fs::read_to_string(path).map_err(|e| {
        TopoError::at(
            Some(Location {
                file: name.clone(),
                line: 0,
                column: 0,
                field: None,
            }),
            TopoErrorKind::Io(e.to_string()),
        )
    })?;
    parse_topology(&name, &text)
}
