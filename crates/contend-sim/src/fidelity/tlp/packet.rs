//! DESIGN 1, 2 — TLPs in flight: what each kind carries (posted writes and
//! flags, non-posted read and poll requests, their completions), its credit
//! class, and the pool that recycles packet slots.

use crate::actors::flags::FlagAddr;
use crate::engine::ids::{ActorId, Arena, ChId, PathId, XferId, id};
use crate::fidelity::tlp::credits::Class;
use contend_topo::{Picos, TlpKind};

id!(
    /// A TLP in flight (a slot of the packet pool).
    PktId
);

/// What a packet is, with what only that kind carries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum PktKind {
    /// Data of a store stream; `last`: the stream's final packet.
    Write { xfer: XferId, last: bool },
    /// A flag write.
    Flag { flag: FlagAddr },
    /// A read request for `payload` bytes of a transfer.
    ReadReq { xfer: XferId },
    /// Read data; `last`: the last completion of its request.
    Cpl { xfer: XferId, last: bool },
    /// A poll of `flag` by `actor` (on GPU `back_to`), which waits for
    /// `count` of them.
    PollReq {
        actor: ActorId,
        flag: FlagAddr,
        count: u32,
        back_to: contend_topo::NodeIdx,
    },
    /// The poll's answer: whether the flags were in when memory was read.
    PollCpl {
        actor: ActorId,
        flag: FlagAddr,
        count: u32,
        seen: bool,
    },
}

impl PktKind {
    pub fn tlp(self) -> TlpKind {
        match self {
            PktKind::Write { .. } | PktKind::Flag { .. } => TlpKind::Write,
            PktKind::ReadReq { .. } | PktKind::PollReq { .. } => TlpKind::ReadRequest,
            PktKind::Cpl { .. } | PktKind::PollCpl { .. } => TlpKind::Completion,
        }
    }
    /// Credit class: 0 posted, 1 non-posted, 2 completion.
    pub fn class(self) -> Class {
        match self.tlp() {
            TlpKind::Write => 0,
            TlpKind::ReadRequest => 1,
            TlpKind::Completion => 2,
        }
    }
}

/// One cache line: the per-hop path reads a packet once per hop.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(crate) struct Pkt {
    pub kind: PktKind,
    pub payload: u32,
    pub path: PathId,
    /// The hop of `path` it is on (or queued for), as an index into
    /// [`Fabric::hops`](crate::model::fabric::Fabric::hops).
    pub at: u32,
    /// The channel at whose receiver the packet holds credit for its
    /// [`data`](Pkt::data) (released when it moves on; the latency passed
    /// since, which is pipeline, not buffer, is the path's
    /// [`pipeline`](crate::model::fabric::Path::pipeline)).
    pub held: Option<ChId>,
    /// Arrival order across a channel's credit classes.
    pub seq: u64,
    /// Not sent before this time (root-complex forwarding, memory access,
    /// SM store issue).
    pub ready: Picos,
}

impl Pkt {
    /// A packet at the first hop of `path`, which is `first` in
    /// [`Fabric::hops`](crate::model::fabric::Fabric::hops).
    pub fn new(kind: PktKind, payload: u32, path: PathId, first: u32) -> Pkt {
        Pkt {
            kind,
            payload,
            path,
            at: first,
            held: None,
            seq: 0,
            ready: Picos::ZERO,
        }
    }
    /// Payload bytes the credits count (requests carry none).
    #[inline]
    pub fn data(&self) -> u32 {
        if self.kind.class() == 1 {
            0
        } else {
            self.payload
        }
    }
}

/// Packet slots, reused once a packet is delivered, and the arrival-order
/// counter.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    pub pkts: Arena<PktId, Pkt>,
    free: Vec<PktId>,
    seq: u64,
}

impl Pool {
    /// The next arrival-order number.
    #[inline]
    pub fn next_seq(&mut self) -> u64 {
        let s = self.seq;
        self.seq += 1;
        s
    }
    /// Stores a new packet (numbered in arrival order) and returns its slot.
    pub fn alloc(&mut self, mut p: Pkt) -> PktId {
        p.seq = self.next_seq();
        if let Some(i) = self.free.pop() {
            self.pkts[i] = p;
            i
        } else {
            self.pkts.push(p)
        }
    }
    /// The packet was delivered: its slot may be reused.
    pub fn release(&mut self, pk: PktId) {
        self.free.push(pk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet fills one cache line, no more.
    #[test]
    fn a_packet_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Pkt>(), 64);
        assert_eq!(std::mem::align_of::<Pkt>(), 64);
    }
}
