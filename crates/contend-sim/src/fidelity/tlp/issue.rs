//! DESIGN 2, 6 — issuing requests and stores at TLP fidelity: a group
//! issues round robin over its transfers while its window allows; reads
//! get a window slot back with their last completion, SM stores when the
//! TLP leaves the GPU (the store buffer). Paced SM stores are issued at
//! the rate the kernel's blocks issue them and become ready one store
//! visibility latency later, and carry that time to the link.

use super::packet::{Pkt, PktKind};
use super::{Tlp, TlpEv};
use crate::engine::ids::GroupId;
use crate::engine::{Agenda, Ev, Outcome, World};
use crate::model::gpu::Dir;
use contend_topo::{Bytes, Picos};
use contend_workload::Notify;
use std::collections::VecDeque;

/// A group's issue state at TLP fidelity.
#[derive(Clone, Debug, Default)]
pub(super) struct StoreBuffer {
    /// Round-robin position over the group's transfers.
    rr: usize,
    /// Departure times of stores whose store-buffer slot is not back yet.
    pub departs: VecDeque<Picos>,
    /// A `Depart` event is pending.
    depart_pending: bool,
    /// When the next paced store may be issued.
    next_issue: Picos,
}

impl Tlp {
    /// Issues requests or stores while the group's window allows.
    pub(super) fn issue<A: Agenda<TlpEv>>(&mut self, w: &mut World<'_, A>, g: GroupId) {
        loop {
            // the group, its store buffer and the picked transfer are each
            // looked up once per packet (a window's lookup is not free)
            let grp = &mut w.groups[g];
            if grp.window == 0 {
                break;
            }
            let n = grp.count as usize;
            let sb = &mut self.stores[g];
            let rr = sb.rr;
            let mut pick = None;
            for k in 0..n {
                let x = grp.xfer((rr + k) % n);
                let xf = &w.xfers[x];
                if !xf.local() && xf.issued < xf.total {
                    pick = Some((x, (rr + k + 1) % n));
                    break;
                }
            }
            let Some((x, rr)) = pick else { break };
            sb.rr = rr;
            grp.window -= 1;
            let xf = &mut w.xfers[x];
            let size = (xf.total - xf.issued).min(xf.req as u64) as u32;
            xf.issued += size as u64;
            let now = w.now;
            let ready = match grp.issue_rate {
                // an SM store: issued at the blocks' pace, on the link one
                // visibility latency later
                Some(rate) => {
                    sb.next_issue = sb.next_issue.max(now) + rate.time_for(Bytes(size as u64));
                    sb.next_issue + self.visibility
                }
                None => now,
            };
            let done_issuing = xf.issued == xf.total;
            let (dir, path, notify) = (xf.dir, xf.fwd(), xf.notify);
            if done_issuing {
                grp.unissued = grp.unissued.saturating_sub(1);
            }
            let kind = match dir {
                Dir::Read => PktKind::ReadReq { xfer: x },
                Dir::Write => PktKind::Write {
                    xfer: x,
                    last: done_issuing,
                },
            };
            let mut p = Pkt::new(kind, size, path, w.fabric.paths[path].first);
            p.ready = ready;
            let pk = self.pool.alloc(p);
            if self.opts.event_per_store && ready > now {
                // the reference: the store enters the link when it is issued
                w.push(ready, Ev::Net(TlpEv::Issued(pk)));
            } else {
                self.enqueue(w, pk);
            }
            if dir == Dir::Write && done_issuing && matches!(notify, Notify::After { .. }) {
                w.push(ready + w.p.gpu.fence_ns.to_picos(), Ev::Fence(x));
            }
        }
        w.tell(Outcome::CheckPost(g));
    }

    /// Hands store-buffer slots back in batches: one event when half the
    /// buffer (or the last outstanding store) has left, not one per TLP. The
    /// egress queue still holds the other half, so the link never starves.
    pub(super) fn schedule_depart<A: Agenda<TlpEv>>(&mut self, w: &mut World<'_, A>, g: GroupId) {
        let sb = &mut self.stores[g];
        let grp = &w.groups[g];
        if sb.depart_pending || sb.departs.is_empty() {
            return;
        }
        let all_issued = grp.unissued == 0;
        let k = if self.opts.release_per_store {
            1
        } else {
            // wait for more stores to be scheduled unless the buffer is full or done
            if grp.window > grp.window_init / 2 && !all_issued {
                return;
            }
            if all_issued {
                sb.departs.len()
            } else {
                (grp.window_init as usize / 2).clamp(1, sb.departs.len())
            }
        };
        let t = sb.departs[k - 1];
        sb.depart_pending = true;
        w.push(t, Ev::Net(TlpEv::Depart(g)));
    }

    /// Slots of stores that have left by now come back.
    pub(super) fn depart<A: Agenda<TlpEv>>(&mut self, w: &mut World<'_, A>, g: GroupId) {
        let now = w.now;
        let Some(sb) = self.stores.get_mut(g) else {
            debug_assert!(false, "a group ends only once its stores have departed");
            return;
        };
        sb.depart_pending = false;
        while sb.departs.front().is_some_and(|t| *t <= now) {
            sb.departs.pop_front();
            w.groups[g].window += 1;
        }
        self.issue(w, g);
        self.schedule_depart(w, g);
    }
}
