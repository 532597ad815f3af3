//! DESIGN 1, 4, 5 — a channel as the fabric describes it: what it models
//! (a link direction, a root-complex stage), its rate, latency, credits and
//! stage rule, and how it sizes and times a packet ([`Serial`]). The fabric
//! (`fabric.rs`) builds them; root complexes (`root_complex.rs`) add their
//! stages; both fidelities read them.

use crate::model::collapse::CollapseRule;
use crate::model::credit_limits::CreditLimit;
use crate::model::cross_socket::CrossSocketRule;
use contend_topo::{Bytes, BytesPerSec, Picos, TlpKind};
use contend_workload::Resource;

/// What a channel models.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ChKind {
    /// One direction of a link: (link index, 0 for a→b / 1 for b→a).
    Link { link: u32, dir: u8 },
    /// A root-complex, die or cross-socket stage, passed inline at TLP fidelity.
    Stage,
}

/// A rule that changes a channel's rate with the traffic on it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum StageRule {
    None,
    /// Posted writes collapse (a switch uplink or a root port in).
    Collapse(CollapseRule),
    /// Cross-socket P2P: stream cap and degradation with concurrent streams.
    CrossSocket(CrossSocketRule),
}

#[derive(Clone, Debug)]
pub(crate) struct ChannelSpec {
    pub name: Resource,
    pub kind: ChKind,
    /// Bytes per second on the wire after DLLP overhead; `None`: no limit.
    pub rate: Option<BytesPerSec>,
    pub latency: Picos,
    /// TLP framing applies (PCIe links); other channels carry payload only.
    pub pcie: bool,
    /// Receiver buffer per type: posted, non-posted, completion.
    pub credits: [CreditLimit; 3],
    pub rule: StageRule,
    /// Smallest unit a non-PCIe channel moves (`fabric.min_wire_bytes`).
    pub min_wire: u32,
    /// Picoseconds per byte << 32 (0 for channels with no rate limit).
    pub ps_per_byte_fp: u64,
    /// The part of `latency` that is the receiver's forwarding pipeline (a
    /// switch's port-to-port latency: PHY and crossbar stages), not time in
    /// its receive buffer: credits come back that much before the packet
    /// leaves.
    pub pipeline: Picos,
}

fn ps_per_byte_fp(rate: Option<BytesPerSec>) -> u64 {
    match rate {
        Some(r) if r.0 > 0 => ((1_000_000_000_000u128 << 32) / r.0 as u128) as u64,
        Some(_) => u64::MAX >> 16,
        None => 0,
    }
}

impl ChannelSpec {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: Resource,
        kind: ChKind,
        rate: Option<BytesPerSec>,
        latency: Picos,
        pcie: bool,
        credits: [CreditLimit; 3],
        rule: StageRule,
        min_wire: u32,
    ) -> ChannelSpec {
        ChannelSpec {
            name,
            kind,
            rate,
            latency,
            pcie,
            credits,
            rule,
            min_wire,
            ps_per_byte_fp: ps_per_byte_fp(rate),
            pipeline: Picos::ZERO,
        }
    }

    /// How the channel sizes and times a packet (what the TLP fidelity
    /// keeps beside each channel's state: the spec itself is large).
    #[inline]
    pub fn serial(&self) -> Serial {
        Serial {
            pcie: self.pcie,
            min_wire: self.min_wire,
            ps_per_byte_fp: self.ps_per_byte_fp,
        }
    }
    /// Bytes a packet occupies on this channel.
    #[inline]
    pub fn wire(&self, kind: TlpKind, payload: u32) -> u32 {
        self.serial().wire(kind, payload)
    }
    /// Serialization time of `wire` bytes (see [`Serial::ser`]).
    #[inline]
    pub fn ser(&self, wire: u32) -> Picos {
        self.serial().ser(wire)
    }
    /// A stage with no rate and no rule: a pure delay.
    #[inline]
    pub fn is_delay(&self) -> bool {
        self.is_stage() && self.rate.is_none() && matches!(self.rule, StageRule::None)
    }

    /// A stage (passed inline, see [`crate::model::root_complex`]).
    #[inline]
    pub fn is_stage(&self) -> bool {
        self.kind == ChKind::Stage
    }
}

/// A channel's wire size and serialization rule, the one place both are
/// computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Serial {
    pcie: bool,
    min_wire: u32,
    ps_per_byte_fp: u64,
}

impl Serial {
    /// Bytes a packet occupies on the channel: TLP framing on PCIe, else
    /// the payload, at least the channel's smallest unit.
    #[inline]
    pub fn wire(self, kind: TlpKind, payload: u32) -> u32 {
        if self.pcie {
            kind.wire_size(Bytes(payload as u64)).0 as u32
        } else {
            payload.max(self.min_wire)
        }
    }
    /// Serialization time of `wire` bytes: fixed-point picoseconds per byte
    /// (32 fractional bits), rounded up; exact to well under a picosecond.
    #[inline]
    pub fn ser(self, wire: u32) -> Picos {
        Picos((wire as u64 * self.ps_per_byte_fp).div_ceil(1 << 32))
    }
}
