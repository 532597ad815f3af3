//! DESIGN 6, 7 — transfers and groups: a Fetch or Post op starts one
//! transfer per access, all in one group that shares the op's request
//! window; the op ends when the group does. A read group ends when its last
//! byte has arrived; a post group when its stores are out and its flags
//! sent — "out" meaning left the GPU where the fidelity models the SM
//! store buffer (TLP), drained where it does not (flow).

use crate::engine::ids::{ActorId, GroupId, PathId, Window, XferId};
use crate::model::gpu::Dir;
use contend_topo::BytesPerSec;
use contend_workload::Notify;

/// One access of an op: `total` bytes between the actor's GPU and one
/// memory location.
#[derive(Clone, Debug)]
pub(crate) struct Xfer {
    pub actor: ActorId,
    pub group: GroupId,
    pub dir: Dir,
    /// (there, back) paths; `None` for local or empty accesses.
    pub paths: Option<(PathId, PathId)>,
    pub total: u64,
    pub issued: u64,
    pub done: u64,
    /// Bytes per request or write TLP.
    pub req: u32,
    pub notify: Notify,
    /// The collective this transfer belongs to (flags carry it).
    pub epoch: u32,
    /// Its group has ended while packets of it were still on their way:
    /// it is freed when the last one lands ([`Xfer::settled`]).
    pub orphan: bool,
}

impl Xfer {
    pub fn local(&self) -> bool {
        self.paths.is_none()
    }
    /// The path there (remote transfers only).
    pub fn fwd(&self) -> PathId {
        self.paths.expect("a remote transfer has paths").0
    }
    pub fn back(&self) -> PathId {
        self.paths.expect("a remote transfer has paths").1
    }
    /// Nothing of it is on its way any more: every byte a fidelity
    /// carries for it has landed (local parts carry none).
    pub fn settled(&self) -> bool {
        self.local() || self.done >= self.total
    }
}

/// A fidelity delivered bytes of transfer `x`: an orphan that has now
/// settled is freed (the one place transfers die after their group).
pub(crate) fn delivered(xfers: &mut Window<XferId, Xfer>, x: XferId) {
    if xfers[x].orphan && xfers[x].settled() {
        xfers.remove(x);
    }
}

/// The transfers of one op.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub actor: ActorId,
    /// Its transfers: `count` consecutive ids from `first`.
    pub first: XferId,
    pub count: u32,
    pub dir: Dir,
    /// Transfers not yet closed.
    pub open: u32,
    /// Requests (reads) or store TLPs (writes) that may still be issued, and
    /// the window it started with.
    pub window: u32,
    pub window_init: u32,
    /// Flags still to be written after the fence (post groups).
    pub flags_pending: u32,
    pub done: bool,
    /// Transfers not yet fully issued.
    pub unissued: u32,
    /// Transfers that cross links (not local copies).
    pub remote: u32,
    /// SM stores: the rate the kernel's blocks issue them at (`None`: not
    /// paced, e.g. the copy engine).
    pub issue_rate: Option<BytesPerSec>,
    /// Counted in the world's moving time until it ends.
    pub moving: bool,
}

impl Group {
    /// Its `k`-th transfer.
    #[inline]
    pub fn xfer(&self, k: usize) -> XferId {
        XferId(self.first.0 + k as u32)
    }
    pub fn xfers(&self) -> impl Iterator<Item = XferId> + use<> {
        let first = self.first.0;
        (first..first + self.count).map(XferId)
    }
}
