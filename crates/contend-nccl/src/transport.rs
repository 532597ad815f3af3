//! Transport per peer: replicates the choice `ncclTransportP2pSetup` makes
//! by asking each transport's `canConnect` in order P2P, SHM, NET
//! (`src/transport.cc`), with `p2pCanConnect` / `p2pSendSetup`
//! (`src/transport/p2p.cc`) and `shmCanConnect` (`src/transport/shm.cc`),
//! unchanged at v2.27.7-1, v2.28.9-1, v2.29.7-1.
//!
//! P2P when the pair passes the P2P check ([`crate::p2p`]); it writes into
//! the peer's buffer unless the read flag is set. SHM (a buffer in host
//! memory both GPUs reach) when P2P is refused, unless `NCCL_SHM_DISABLE=1`.
//! Otherwise NET (the socket transport inside one host).

use crate::env::{NcclEnv, ProcessModel};
use crate::p2p::P2pVerdict;
use crate::tuning::Protocol;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How NCCL maps the peer's buffer for P2P (`p2pSendSetup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum P2pMechanism {
    /// Both ranks in one process: the peer's pointer itself.
    DirectPointer,
    /// Another process, cuMem handles (the default since 2.19 with CUDA 12.2+ drivers).
    Cumem,
    /// Another process, legacy CUDA IPC (`NCCL_CUMEM_ENABLE=0`).
    Ipc,
}

/// The transport NCCL uses from one rank to a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Transport {
    /// GPU-to-GPU: the sender writes into the receiver's buffer, or with
    /// `read` the receiver reads from the sender's.
    P2p {
        read: bool,
        mechanism: P2pMechanism,
        /// The intermediate rank of an NVB path (`P2P/indirect`).
        via: Option<usize>,
    },
    /// Staged through a buffer in host memory.
    Shm,
    /// The network transport (sockets inside one host).
    Net,
}

impl Transport {
    /// The transport as NCCL names it after `via` in its
    /// `Channel xx/y : a[b] -> c[d] via ...` lines.
    pub fn log_label(&self) -> String {
        match self {
            Transport::P2p {
                via: Some(r), read, ..
            } => {
                format!("P2P/indirect/{r}{}", if *read { "/read" } else { "" })
            }
            Transport::P2p {
                read, mechanism, ..
            } => format!(
                "P2P/{}{}",
                match mechanism {
                    P2pMechanism::DirectPointer => "direct pointer",
                    P2pMechanism::Cumem => "CUMEM",
                    P2pMechanism::Ipc => "IPC",
                },
                if *read { "/read" } else { "" }
            ),
            Transport::Shm => "SHM/direct/direct".into(),
            Transport::Net => "NET/Socket".into(),
        }
    }

    /// The kind alone: `P2P`, `SHM`, `NET`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::P2p { .. } => "P2P",
            Transport::Shm => "SHM",
            Transport::Net => "NET",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::P2p { read: true, .. } => f.write_str("P2P read"),
            Transport::P2p { .. } => f.write_str("P2P write"),
            Transport::Shm => f.write_str("SHM"),
            Transport::Net => f.write_str("NET"),
        }
    }
}

/// Where a connection's receive buffer lives: who writes across a link
/// and who reads across one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BufferAt {
    /// The receiver's device memory: the sender stores across, the
    /// receiver reads locally (P2P write; LL and LL128 of every P2P
    /// connection).
    Receiver,
    /// The sender's device memory: the sender stores locally, the receiver
    /// loads across (P2P read, Simple only: `p2pSendSetup` allocates the
    /// Simple buffer on the sender when `read` is set, `src/transport/p2p.cc`
    /// v2.28.9-1).
    Sender,
    /// Host memory on the receiver's side: the sender stores into host
    /// memory, the receiver loads it back (SHM: `NCCL_SHM_LOCALITY`
    /// defaults to the receive side and `NCCL_SHM_USE_CUDA_MEMCPY` to 0,
    /// so the kernels move the data themselves, `src/transport/shm.cc`
    /// v2.28.9-1).
    ReceiverHost,
}

/// A transport as results record it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportKind {
    P2pWrite,
    P2pRead,
    Shm,
    Net,
}

impl TransportKind {
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::P2pWrite => "P2P write",
            TransportKind::P2pRead => "P2P read",
            TransportKind::Shm => "SHM",
            TransportKind::Net => "NET",
        }
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Transport {
    /// Where the receive buffer of protocol `p` lives.
    pub fn buffer(&self, p: Protocol) -> BufferAt {
        match self {
            Transport::P2p { read: true, .. } if p == Protocol::Simple => BufferAt::Sender,
            Transport::P2p { .. } | Transport::Net => BufferAt::Receiver,
            Transport::Shm => BufferAt::ReceiverHost,
        }
    }
    /// Whether the connection's step counters live in host memory (SHM:
    /// the receiver's `ncclRecvMem` and the sender's `ncclSendMem` are host
    /// allocations, each on its owner's side, `src/transport/shm.cc`
    /// v2.28.9-1); P2P keeps each in its owner's device memory.
    pub fn flags_in_host(&self) -> bool {
        matches!(self, Transport::Shm)
    }
    pub fn transport_kind(&self) -> TransportKind {
        match self {
            Transport::P2p { read: true, .. } => TransportKind::P2pRead,
            Transport::P2p { .. } => TransportKind::P2pWrite,
            Transport::Shm => TransportKind::Shm,
            Transport::Net => TransportKind::Net,
        }
    }
}

/// The transport for a pair with this P2P verdict.
pub(crate) fn choose(
    verdict: P2pVerdict,
    read: bool,
    via: Option<usize>,
    env: &NcclEnv,
) -> Transport {
    if verdict == P2pVerdict::Allowed {
        let mechanism = if env.host.processes == ProcessModel::OneProcess && !env.p2p_direct_disable
        {
            P2pMechanism::DirectPointer
        } else if env.cumem_enable.unwrap_or(true) {
            P2pMechanism::Cumem
        } else {
            P2pMechanism::Ipc
        };
        return Transport::P2p {
            read,
            mechanism,
            via,
        };
    }
    if !env.shm_disable {
        return Transport::Shm;
    }
    Transport::Net
}
