//! What a result measured and which resource was busiest: the names a
//! record's `algorithm` and `busiest` fields hold, parsed once when a file is
//! read.

use crate::kinds::{Algorithm, ProbeOp, TransferOp};
use contend_topo::NodeId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// What a result measured: an allreduce algorithm (contend's, the forced
/// rings, or `nccl`: NCCL's own, simulated or on hardware), a simulated
/// transfer stream, a hardware microbenchmark, or the aggregate of several
/// streams. In JSON the plain name (`one-shot-pull`, `nccl`, `store`,
/// `copy-h2d`, `aggregate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measured {
    Allreduce(Algorithm),
    /// A transfer stream as a scenario writes it (`ping-pong` is always this).
    Transfer(TransferOp),
    /// A hardware probe whose label says more than the stream op (`copy-h2d`).
    Probe(ProbeOp),
    /// The streams of one pattern, or of a whole transfer run, summed
    /// (`extra.pattern` says which; [`super::AggregateFacts`] the numbers).
    Aggregate,
}

impl Measured {
    pub fn name(self) -> &'static str {
        match self {
            Measured::Allreduce(a) => a.name(),
            Measured::Transfer(t) => t.name(),
            Measured::Probe(p) => p.name(),
            Measured::Aggregate => "aggregate",
        }
    }
    /// NCCL's allreduce (`nccl`).
    pub const NCCL: Measured = Measured::Allreduce(Algorithm::Nccl);

    /// The allreduce algorithm, if this is one.
    pub fn algorithm(self) -> Option<Algorithm> {
        match self {
            Measured::Allreduce(a) => Some(a),
            _ => None,
        }
    }
    /// The hardware probe this record's label names (`ping-pong` included).
    pub fn probe(self) -> Option<ProbeOp> {
        match self {
            Measured::Probe(p) => Some(p),
            Measured::Transfer(TransferOp::PingPong) => Some(ProbeOp::PingPong),
            _ => None,
        }
    }
    /// The record label of a probe: `ping-pong` is written as the transfer op.
    pub fn of_probe(p: ProbeOp) -> Measured {
        match p {
            ProbeOp::PingPong => Measured::Transfer(TransferOp::PingPong),
            p => Measured::Probe(p),
        }
    }
}

impl fmt::Display for Measured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Measured {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "aggregate" {
            return Ok(Measured::Aggregate);
        }
        if let Ok(a) = Algorithm::from_str(s) {
            return Ok(Measured::Allreduce(a));
        }
        if let Ok(t) = TransferOp::from_str(s) {
            return Ok(Measured::Transfer(t));
        }
        if let Ok(p) = ProbeOp::from_str(s) {
            return Ok(Measured::Probe(p));
        }
        let names: Vec<&str> = Algorithm::ALL
            .iter()
            .map(|a| a.name())
            .chain(TransferOp::ALL.iter().map(|t| t.name()))
            .chain(ProbeOp::ALL.iter().map(|p| p.name()))
            .chain(["aggregate"])
            .filter(|n| *n != "ping-pong" || s != "ping-pong")
            .collect();
        Err(format!(
            "unknown algorithm `{s}` (one of: {})",
            dedup(names).join(", ")
        ))
    }
}

fn dedup(v: Vec<&str>) -> Vec<&str> {
    let mut out: Vec<&str> = vec![];
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

string_serde!(Measured);

/// Which way traffic crosses a port or memory stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Way {
    /// Into the CPU (toward memory; into a root port).
    In,
    /// Out of the CPU (from memory; out of a root port).
    Out,
}

/// A resource of the simulated fabric that traffic competes for. In JSON
/// the simulator's channel name (`gpu0->rc0`, `rc0 p2p`, `rc0 to memory`,
/// `rc0 port gpu1 in`, `iod0 fabric`, `rc0~rc1 p2p`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// One direction of a link.
    Link { from: NodeId, to: NodeId },
    /// All P2P forwarding through a root complex.
    RootComplexP2p { rc: NodeId },
    /// A root complex passing traffic to (`In`) or from (`Out`) host memory.
    RootComplexMemory { rc: NodeId, way: Way },
    /// A root complex's forwarding latency (no rate).
    RootComplexForward { rc: NodeId },
    /// P2P entering (`In`) or leaving (`Out`) a root complex by the root
    /// port that leads to `port`.
    RootPort { rc: NodeId, port: NodeId, way: Way },
    /// P2P entering a root complex by the root port that leads to `port`,
    /// bound for the other socket.
    CrossSocketPort { rc: NodeId, port: NodeId },
    /// P2P crossing a socket's I/O-die fabric.
    DieFabric { die: NodeId },
    /// GPU P2P between sockets over the CPU link joining `a` and `b`.
    CrossSocket { a: NodeId, b: NodeId },
}

impl Resource {
    /// The nodes this resource belongs to: both ends of a link, or the root complex.
    pub fn nodes(&self) -> Vec<&NodeId> {
        match self {
            Resource::Link { from, to } => vec![from, to],
            Resource::RootComplexP2p { rc }
            | Resource::RootComplexMemory { rc, .. }
            | Resource::RootComplexForward { rc }
            | Resource::RootPort { rc, .. }
            | Resource::CrossSocketPort { rc, .. } => vec![rc],
            Resource::DieFabric { die } => vec![die],
            Resource::CrossSocket { a, b } => vec![a, b],
        }
    }
    /// What kind of resource it is, for people: `link`, `root port`, ...
    pub fn class(&self) -> &'static str {
        match self {
            Resource::Link { .. } => "link",
            Resource::RootComplexP2p { .. } => "root-complex P2P aggregate",
            Resource::RootComplexMemory { .. } => "root-complex memory path",
            Resource::RootComplexForward { .. } => "root-complex forwarding",
            Resource::RootPort { .. } => "root port",
            Resource::CrossSocketPort { .. } => "root port to the other socket",
            Resource::DieFabric { .. } => "I/O-die fabric",
            Resource::CrossSocket { .. } => "cross-socket P2P",
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let way = |w: &Way| match w {
            Way::In => "in",
            Way::Out => "out",
        };
        let s = match self {
            Resource::Link { from, to } => format!("{from}->{to}"),
            Resource::RootComplexP2p { rc } => format!("{rc} p2p"),
            Resource::RootComplexMemory { rc, way: Way::In } => format!("{rc} to memory"),
            Resource::RootComplexMemory { rc, way: Way::Out } => format!("{rc} from memory"),
            Resource::RootComplexForward { rc } => format!("{rc} forward"),
            Resource::RootPort { rc, port, way: w } => format!("{rc} port {port} {}", way(w)),
            Resource::CrossSocketPort { rc, port } => format!("{rc} port {port} cross"),
            Resource::DieFabric { die } => format!("{die} fabric"),
            Resource::CrossSocket { a, b } => format!("{a}~{b} p2p"),
        };
        f.pad(&s)
    }
}

impl FromStr for Resource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let id = |x: &str| NodeId(x.to_string());
        let bad = || {
            format!(
                "`{s}` names no resource (`a->b`, `rc p2p`, `rc to memory`, `rc from memory`, `rc forward`, `rc port dev in|out|cross`, `die fabric`, `a~b p2p`)"
            )
        };
        if let Some(x) = s.strip_suffix(" p2p") {
            return Ok(match x.split_once('~') {
                Some((a, b)) => Resource::CrossSocket { a: id(a), b: id(b) },
                None => Resource::RootComplexP2p { rc: id(x) },
            });
        }
        if let Some(rc) = s.strip_suffix(" to memory") {
            return Ok(Resource::RootComplexMemory {
                rc: id(rc),
                way: Way::In,
            });
        }
        if let Some(rc) = s.strip_suffix(" from memory") {
            return Ok(Resource::RootComplexMemory {
                rc: id(rc),
                way: Way::Out,
            });
        }
        if let Some(rc) = s.strip_suffix(" forward") {
            return Ok(Resource::RootComplexForward { rc: id(rc) });
        }
        if let Some(die) = s.strip_suffix(" fabric") {
            return Ok(Resource::DieFabric { die: id(die) });
        }
        if let Some((rc, rest)) = s.split_once(" port ") {
            let (port, w) = rest.rsplit_once(' ').ok_or_else(bad)?;
            let way = match w {
                "in" => Way::In,
                "out" => Way::Out,
                "cross" => {
                    return Ok(Resource::CrossSocketPort {
                        rc: id(rc),
                        port: id(port),
                    });
                }
                _ => return Err(bad()),
            };
            return Ok(Resource::RootPort {
                rc: id(rc),
                port: id(port),
                way,
            });
        }
        match s.split_once("->") {
            Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok(Resource::Link {
                from: id(a),
                to: id(b),
            }),
            _ => Err(bad()),
        }
    }
}

string_serde!(Resource);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for s in [
            "one-shot-pull",
            "nccl",
            "store",
            "ping-pong",
            "copy-h2d",
            "sm-load",
            "copy-read",
            "aggregate",
        ] {
            assert_eq!(Measured::from_str(s).unwrap().to_string(), s);
        }
        assert_eq!(
            Measured::from_str("ping-pong").unwrap().probe(),
            Some(ProbeOp::PingPong)
        );
        assert!(
            Measured::from_str("three-shot")
                .unwrap_err()
                .contains("unknown algorithm `three-shot`")
        );
        for s in [
            "gpu0->rc0",
            "rc0 p2p",
            "rc1 to memory",
            "rc1 from memory",
            "rc0 forward",
            "rc0 port sw0 in",
            "rc2 port gpu3 out",
            "iod0 fabric",
            "rc0~rc1 p2p",
        ] {
            assert_eq!(Resource::from_str(s).unwrap().to_string(), s);
        }
        assert!(Resource::from_str("gpu0").is_err());
    }
}
