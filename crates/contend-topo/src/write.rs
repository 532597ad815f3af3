//! Writing a topology as TOML: the file model ([`TopologyFile`]) a
//! validated [`Topology`] turns back into, serialized with serde. Reading
//! the written text gives the same topology (a test holds them together).

use crate::model::{CollapsePer, CollapseSpec, LinkKind, NodeIdx, NodeKind, P2p, Topology};
use serde::Serialize;

/// A topology as its TOML file says it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TopologyFile {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p2p: Option<P2pEntry>,
    pub node: Vec<NodeEntry>,
    pub link: Vec<LinkEntry>,
}

/// The `[p2p]` table: `access` or `missing`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct P2pEntry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<[String; 2]>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One `[[node]]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NodeEntry {
    pub id: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sms: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bandwidth_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p2p_bandwidth_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mrrs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags_10bit: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_p2p_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Last: TOML writes tables after plain keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collapse: Option<CollapseEntry>,
}

/// A `[node.collapse]` table.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CollapseEntry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_sources: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_targets: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_gbps: Option<f64>,
    pub per: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl CollapseEntry {
    fn of(c: &CollapseSpec) -> CollapseEntry {
        CollapseEntry {
            min_sources: c.min_sources,
            min_targets: c.min_targets,
            rate_gbps: c.rate.map(|r| r.as_gbps()),
            per: match c.per {
                CollapsePer::Port => "port".into(),
                CollapsePer::Pair => "pair".into(),
            },
            window_ns: c.window.map(|w| w.as_ns_f64()),
            note: c.note.clone(),
        }
    }
}

/// One `[[link]]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LinkEntry {
    pub a: String,
    pub b: String,
    pub kind: String,
    #[serde(rename = "gen", skip_serializing_if = "Option::is_none")]
    pub generation: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mrrs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcb: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p2p_bandwidth_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p2p_stream_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p2p_stream_knee: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p2p_stream_exponent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl TopologyFile {
    /// The TOML text (serde's; the loader reads it back).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| format!("# cannot write this topology: {e}\n"))
    }
}

impl Topology {
    /// The file model of this topology.
    pub fn to_file(&self) -> TopologyFile {
        let node = self
            .nodes()
            .iter()
            .map(|n| {
                let mut e = NodeEntry {
                    id: n.id.0.clone(),
                    kind: n.kind.name().to_string(),
                    note: n.note.clone(),
                    ..NodeEntry::default()
                };
                match &n.kind {
                    NodeKind::Gpu(g) => {
                        e.model = Some(g.model.clone());
                        e.sms = Some(g.sms);
                        e.memory_bandwidth_gbps = Some(g.memory_bandwidth.as_gbps());
                        e.tags_10bit = (!g.tags_10bit).then_some(false);
                    }
                    NodeKind::Switch(sw) => {
                        e.latency_ns = sw.latency.map(|l| l.as_ns_f64());
                        e.chip = sw.chip.clone();
                        e.mrrs = sw.mrrs.map(|m| m.0);
                        e.tags_10bit = (!sw.tags_10bit).then_some(false);
                        e.collapse = sw.collapse.as_ref().map(CollapseEntry::of);
                    }
                    NodeKind::RootComplex(rc) => {
                        e.socket = Some(rc.socket);
                        e.p2p_bandwidth_gbps = rc.p2p_bandwidth.map(|b| b.as_gbps());
                        e.latency_ns = rc.latency.map(|l| l.as_ns_f64());
                        e.port_p2p_gbps = rc.port_p2p_bandwidth.map(|b| b.as_gbps());
                        e.memory_bandwidth_gbps = rc.memory_bandwidth.map(|b| b.as_gbps());
                        e.collapse = rc.collapse.as_ref().map(CollapseEntry::of);
                    }
                    NodeKind::HostMemory { socket, latency } => {
                        e.socket = Some(*socket);
                        e.latency_ns = latency.map(|l| l.as_ns_f64());
                    }
                    NodeKind::CpuInterconnect {
                        socket,
                        latency,
                        p2p_bandwidth,
                    } => {
                        e.socket = Some(*socket);
                        e.latency_ns = latency.map(|l| l.as_ns_f64());
                        e.p2p_bandwidth_gbps = p2p_bandwidth.map(|b| b.as_gbps());
                    }
                }
                e
            })
            .collect();
        let link = self
            .links()
            .iter()
            .map(|l| {
                let mut e = LinkEntry {
                    a: self.node(l.a).id.0.clone(),
                    b: self.node(l.b).id.0.clone(),
                    kind: l.kind.name().to_string(),
                    note: l.note.clone(),
                    ..LinkEntry::default()
                };
                match &l.kind {
                    LinkKind::Pcie(p) => {
                        e.generation = Some(p.generation.0);
                        e.width = Some(p.width);
                        e.mps = Some(p.mps.0);
                        e.mrrs = Some(p.mrrs.0);
                        e.rcb = Some(p.rcb.0);
                    }
                    LinkKind::Nvlink { bandwidth, latency } => {
                        e.bandwidth_gbps = Some(bandwidth.as_gbps());
                        e.latency_ns = Some(latency.as_ns_f64());
                    }
                    LinkKind::Cpu {
                        protocol,
                        bandwidth,
                        latency,
                        p2p,
                    } => {
                        e.protocol = Some(protocol.clone());
                        e.bandwidth_gbps = Some(bandwidth.as_gbps());
                        e.latency_ns = Some(latency.as_ns_f64());
                        e.p2p_bandwidth_gbps = p2p.bandwidth.map(|b| b.as_gbps());
                        e.p2p_stream_gbps = p2p.stream.map(|b| b.as_gbps());
                        e.p2p_stream_knee = p2p.knee;
                        e.p2p_stream_exponent = p2p.exponent;
                    }
                    LinkKind::Memory { bandwidth } => {
                        e.bandwidth_gbps = Some(bandwidth.as_gbps());
                    }
                    LinkKind::SwitchFabric { bandwidth, latency } => {
                        e.bandwidth_gbps = bandwidth.map(|b| b.as_gbps());
                        e.latency_ns = Some(latency.as_ns_f64());
                    }
                    LinkKind::Die => {}
                }
                e
            })
            .collect();
        let id = |n: NodeIdx| self.node(n).id.0.clone();
        let p2p = match self.p2p() {
            P2p::FromModels => None,
            P2p::All => Some(P2pEntry {
                access: Some("all".into()),
                ..Default::default()
            }),
            P2p::None => Some(P2pEntry {
                access: Some("none".into()),
                ..Default::default()
            }),
            P2p::Missing(pairs) => Some(P2pEntry {
                missing: Some(pairs.iter().map(|&(a, b)| [id(a), id(b)]).collect()),
                ..Default::default()
            }),
        }
        .map(|e| P2pEntry {
            note: self.p2p_note.clone(),
            ..e
        });
        TopologyFile {
            name: self.name.clone(),
            source: self.source.clone(),
            platform: self.platform.clone(),
            p2p,
            node,
            link,
        }
    }

    /// The topology as TOML that [`crate::parse_topology`] reads back.
    pub fn to_toml(&self) -> String {
        self.to_file().to_toml()
    }
}

#[cfg(test)]
mod tests {
    use crate::{parse_topology, shipped};

    #[test]
    fn every_shipped_topology_round_trips_through_its_toml() {
        for (stem, _) in shipped::SHIPPED {
            let t = shipped::get(stem).unwrap().unwrap();
            let text = t.to_toml();
            let back = parse_topology(&format!("{stem}.written.toml"), &text)
                .unwrap_or_else(|e| panic!("{stem}: {e}\n{text}"));
            assert_eq!(back.nodes(), t.nodes(), "{stem}");
            assert_eq!(back.links(), t.links(), "{stem}");
            assert_eq!(back.p2p(), t.p2p(), "{stem}");
            assert_eq!((back.name, back.source), (t.name, t.source));
        }
    }
}
