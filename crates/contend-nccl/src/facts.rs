//! NCCL's decisions for one AllReduce call as a result record keeps them:
//! from the replica's plan (the simulator's `nccl` algorithm) or from what
//! NCCL itself printed (`contend hw nccl`, `NCCL_DEBUG=INFO`), in one typed
//! shape so the two compare field by field.

use crate::log::{LogTransport, NcclLog};
use crate::plan::NcclPlan;
use crate::schedule::CallSchedule;
use crate::transport::TransportKind;
use crate::tuning::{Algorithm, Protocol};
use serde::{Deserialize, Serialize};

/// Who made the decisions a record carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecidedBy {
    /// contend-nccl's replica of NCCL's rules.
    Replica,
    /// NCCL's own `NCCL_DEBUG=INFO` output.
    Log,
}

/// One connection a call's rings or trees use: from rank, to rank, how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Connection {
    pub from: usize,
    pub to: usize,
    pub transport: TransportKind,
}

/// NCCL's decisions for one AllReduce call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallFacts {
    pub decided_by: DecidedBy,
    /// The release (`2.28` for the replica's rules, `2.28.3` from a log).
    pub version: String,
    pub bytes: u64,
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    /// The channels the call ran on, first and last.
    pub channel_lo: usize,
    pub channel_hi: usize,
    /// The communicator's channels (`comm->nChannels`), where known.
    pub comm_channels: Option<usize>,
    /// Threads per block, where known (NCCL's INFO log does not print them).
    pub threads: Option<u32>,
    /// The connections the call's channels use (deduplicated, sorted).
    pub connections: Vec<Connection>,
}

impl CallFacts {
    /// The replica's decisions for the call `s` plans.
    pub fn from_plan(plan: &NcclPlan, s: &CallSchedule) -> CallFacts {
        let mut connections = Vec::new();
        let used: Vec<usize> = s.parts.iter().map(|p| p.channel).collect();
        for (a, b, chans) in plan.connections() {
            if !chans.iter().any(|c| used.contains(c)) {
                continue;
            }
            // a ring uses its next links; a tree its links up and down
            let on_ring = used.iter().any(|&c| {
                let r = &plan.channels.rings[c];
                r.iter()
                    .position(|&x| x == a)
                    .is_some_and(|i| r[(i + 1) % r.len()] == b)
            });
            let on_tree = used.iter().any(|&c| {
                let t = &plan.channels.trees[c];
                t[a].up == Some(b) || t[b].up == Some(a)
            });
            let uses = match s.choice.algorithm {
                Algorithm::Tree => on_tree,
                _ => on_ring,
            };
            if !uses {
                continue;
            }
            if let Some(p) = plan.pair(a, b) {
                connections.push(Connection {
                    from: a,
                    to: b,
                    transport: p.transport.transport_kind(),
                });
            }
        }
        connections.sort();
        connections.dedup();
        CallFacts {
            decided_by: DecidedBy::Replica,
            version: plan.version.to_string(),
            bytes: s.bytes.0,
            algorithm: s.choice.algorithm,
            protocol: s.choice.protocol,
            channel_lo: s.parts.first().map_or(0, |p| p.channel),
            channel_hi: s.parts.last().map_or(0, |p| p.channel),
            comm_channels: Some(plan.channels.n_channels),
            threads: Some(s.choice.threads),
            connections,
        }
    }

    /// What NCCL printed for a call of `bytes`: the first per-call TUNING
    /// line of that size, the channel count and the connections of the
    /// log. `None` when the log has no line for the size.
    pub fn from_log(log: &NcclLog, bytes: u64) -> Option<CallFacts> {
        let call = log.calls.iter().find(|c| c.bytes == bytes)?;
        let (lo, hi) = call.channels.unwrap_or((0, 0));
        let mut connections: Vec<Connection> = log
            .connections
            .iter()
            .filter_map(|c| {
                let transport = match &c.transport {
                    LogTransport::P2p { read: true, .. } => TransportKind::P2pRead,
                    LogTransport::P2p { .. } => TransportKind::P2pWrite,
                    LogTransport::Shm { .. } => TransportKind::Shm,
                    LogTransport::Net { .. } => TransportKind::Net,
                    LogTransport::CollNet | LogTransport::Other(_) => return None,
                };
                Some(Connection {
                    from: c.from,
                    to: c.to,
                    transport,
                })
            })
            .collect();
        connections.sort();
        connections.dedup();
        Some(CallFacts {
            decided_by: DecidedBy::Log,
            version: log.version.as_ref().map_or_else(
                || "?".to_string(),
                |v| format!("{}.{}.{}", v.major, v.minor, v.patch),
            ),
            bytes,
            algorithm: call.algorithm,
            protocol: call.protocol,
            channel_lo: lo,
            channel_hi: hi,
            comm_channels: log.channel_counts.map(|c| c.coll),
            threads: None,
            connections,
        })
    }

    /// Channels the call ran on.
    pub fn channels_used(&self) -> usize {
        self.channel_hi.saturating_sub(self.channel_lo) + 1
    }

    /// `SHM on 8 connections` / `P2P write 6, SHM 2`.
    pub fn transports(&self) -> String {
        let mut counts: Vec<(TransportKind, usize)> = Vec::new();
        for c in &self.connections {
            match counts.iter_mut().find(|(k, _)| *k == c.transport) {
                Some((_, n)) => *n += 1,
                None => counts.push((c.transport, 1)),
            }
        }
        counts.sort();
        match counts.as_slice() {
            [] => "no connections".into(),
            [(k, n)] => format!("{k} on {n} connection{}", if *n == 1 { "" } else { "s" }),
            many => many
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}
