//! DESIGN 6, 7 — what transfers do to a rank: a Fetch or Post op starts a
//! group of transfers, the fidelity moves them, and the group ends (its
//! fence, its flag) when every transfer is done. The transfer and group
//! records are `actors/transfer.rs`.

use crate::actors::transfer::{Group, Xfer};
use crate::engine::FidelityModel;
use crate::engine::Queue;
use crate::engine::ids::{ActorId, GroupId, XferId};
use crate::engine::{Engine, Ev};
use crate::model::gpu::{self, Dir, Kernel};
use contend_topo::{BytesPerSec, Picos, TlpKind};
use contend_workload::{Access, Mover, Notify};

impl<Q: Queue<T::Event>, T: FidelityModel> Engine<'_, Q, T> {
    /// Starts the transfers of a Fetch (`dir` Read, each thread keeping
    /// `loads_per_thread` loads in flight where the kernel says) or Post
    /// (Write); true if the actor now blocks.
    pub(crate) fn start_group(
        &mut self,
        a: ActorId,
        dir: Dir,
        parts: impl IntoIterator<Item = (Access, Notify)>,
        mover: Mover,
        loads_per_thread: Option<u32>,
    ) -> bool {
        let k: Kernel = self.actors[a].spec.kernel;
        let epoch = self.actors[a].epoch;
        let w = &mut self.w;
        let g = w.groups.next_id();
        let mut group = Group {
            actor: a,
            first: w.xfers.next_id(),
            count: 0,
            dir,
            open: 0,
            window: 0,
            window_init: 0,
            flags_pending: 0,
            done: false,
            unissued: 0,
            remote: 0,
            issue_rate: None,
            moving: false,
        };
        // the fewest tags the group's PCIe paths allow (None: NVLink only)
        let mut tags: Option<u32> = None;
        for (acc, notify) in parts {
            let target = acc.mem.node();
            let local = target == k.gpu || acc.bytes.0 == 0;
            let paths = (!local).then(|| {
                let fwd = w.fabric.route(w.topo, k.gpu, target);
                let back = w.fabric.route(w.topo, target, k.gpu);
                let path = &w.fabric.paths[fwd];
                if !path.nvlink_only {
                    tags = Some(tags.map_or(path.max_tags, |t| t.min(path.max_tags)));
                }
                (fwd, back)
            });
            let (mps, mrrs) = match paths {
                None => (w.p.fabric.no_pcie_mps, w.p.fabric.no_pcie_mps),
                Some((fwd, _)) => (w.fabric.paths[fwd].mps, w.fabric.paths[fwd].mrrs),
            };
            if matches!(notify, Notify::After { .. }) {
                group.flags_pending += 1;
            }
            let x = w.xfers.push(Xfer {
                actor: a,
                group: g,
                dir,
                paths,
                total: acc.bytes.0,
                issued: 0,
                done: 0,
                req: gpu::request_bytes(w.p, dir, mover, mps, mrrs),
                notify,
                epoch,
                orphan: false,
            });
            debug_assert_eq!(x, group.xfer(group.count as usize));
            group.count += 1;
            group.open += 1;
            if acc.bytes.0 > 0 {
                group.unissued += 1;
            }
            if !local {
                group.remote += 1;
            }
        }
        if group.count == 0 {
            return false;
        }
        let first = group.first;
        let req0 = w.xfers[first].req;
        group.window = gpu::window(w.topo, w.p, k, dir, mover, req0, tags, loads_per_thread);
        let sm_stores = (dir, mover) == (Dir::Write, Mover::Sm);
        if sm_stores {
            let rate = gpu::store_rate(w.topo, w.p, k);
            group.issue_rate = Some(rate);
            // the stores the visibility pipeline holds, at the pace the
            // GPU's egress link takes them: the window grows by them
            let egress = group
                .xfers()
                .find_map(|x| w.xfers[x].paths)
                .and_then(|(fwd, _)| w.fabric.paths[fwd].chans.first().copied())
                .and_then(|c| w.fabric.chans[c].rate);
            let pace = egress.map_or(rate, |e| BytesPerSec(e.0.min(rate.0)));
            group.window += gpu::store_pipeline_slots(w.p, pace, req0);
        }
        group.window_init = group.window;
        let xs = group.xfers();
        self.actors[a].groups_open += 1;
        if group.remote > 0 {
            group.moving = true;
            w.moving.start(w.now);
        }
        w.groups.push(group);
        let setup = gpu::setup(w.p, mover);
        // remote SM stores reach the link one visibility latency after they
        // are issued (the TLP fidelity charges it per store, in `issue`)
        let start = if sm_stores {
            setup + gpu::store_visibility(w.p)
        } else {
            setup
        };
        for x in xs {
            let xf = &self.w.xfers[x];
            if xf.local() || xf.total == 0 {
                let t = gpu::local_time(self.w.topo, self.w.p, k.gpu, xf.total);
                let at = self.w.now + setup + t;
                self.w.push(at, Ev::XferDone(x));
            } else {
                self.net(|f, w| f.begin_xfer(w, x, start));
            }
        }
        self.net(|f, w| f.begin_group(w, g, setup));
        true
    }

    /// A transfer has all its data (reads), a local part is done, or a
    /// flow-fidelity store stream has drained.
    pub(crate) fn xfer_finished(&mut self, x: XferId) {
        let xf = &self.w.xfers[x];
        match (xf.dir, T::STORE_BUFFER) {
            // the store buffer tracks remote stores; they never finish here
            (Dir::Write, true) if !xf.local() => {}
            (Dir::Write, true) => {
                // a local part of a post group: done once its local copy is
                let g = xf.group;
                let xf = &mut self.w.xfers[x];
                if xf.issued != xf.total {
                    xf.issued = xf.total;
                    let grp = &mut self.w.groups[g];
                    grp.unissued = grp.unissued.saturating_sub(1);
                }
                self.check_post(g);
            }
            (Dir::Write, false) => {
                // the stores are out (drained: every byte has landed); flags follow
                let xf = &mut self.w.xfers[x];
                xf.done = xf.total;
                let xf = &self.w.xfers[x];
                let epoch = xf.epoch;
                match xf.notify {
                    Notify::After { .. } => {
                        let at = self.w.now + self.w.p.gpu.fence_ns.to_picos();
                        self.w.push(at, Ev::Fence(x));
                        return;
                    }
                    Notify::Inline { to, phase } => {
                        let t = if xf.local() {
                            Picos::ZERO
                        } else {
                            self.w.fabric.one_way(
                                xf.fwd(),
                                TlpKind::Write,
                                self.w.p.gpu.store_tlp_bytes,
                            )
                        };
                        let flag = crate::actors::flags::FlagAddr {
                            to: ActorId(to.0),
                            epoch,
                            phase: phase.0,
                        };
                        let at = self.w.now + t;
                        self.w.push(at, Ev::FlagAt(flag));
                    }
                    Notify::None => {}
                }
                self.xfer_closed(x);
            }
            (Dir::Read, _) => {
                // every byte has arrived (a flow says so when it drains)
                let xf = &mut self.w.xfers[x];
                xf.done = xf.done.max(xf.total);
                self.xfer_closed(x)
            }
        }
    }

    fn xfer_closed(&mut self, x: XferId) {
        let g = self.w.xfers[x].group;
        let grp = &mut self.w.groups[g];
        grp.open = grp.open.saturating_sub(1);
        if grp.open == 0 && (grp.dir == Dir::Read || !T::STORE_BUFFER) {
            let a = grp.actor;
            self.group_over(g);
            self.group_ended(a);
        }
    }

    /// One of the actor's groups has ended: it resumes once every group of
    /// its op has (a stream op runs a load and a store group together).
    fn group_ended(&mut self, a: ActorId) {
        let act = &mut self.actors[a];
        act.groups_open = act.groups_open.saturating_sub(1);
        if act.groups_open == 0 {
            let now = self.w.now;
            self.w.push(now, Ev::Resume(a));
        }
    }

    /// A post group completes once every store has left the GPU and every
    /// flag is out (fidelities with a store buffer).
    pub(crate) fn check_post(&mut self, g: GroupId) {
        // (a group told of twice in one call may have ended at the first)
        let Some(grp) = self.w.groups.get(g) else {
            return;
        };
        if grp.dir != Dir::Write || grp.done || !T::STORE_BUFFER {
            return;
        }
        if grp.unissued == 0 && grp.window == grp.window_init && grp.flags_pending == 0 {
            let grp = &mut self.w.groups[g];
            grp.done = true;
            let a = grp.actor;
            self.group_over(g);
            self.group_ended(a);
        }
    }

    /// Group `g` has ended: its time stops counting as moving, and it is
    /// freed with its transfers (those with packets still on their way
    /// when they land, [`delivered`]).
    fn group_over(&mut self, g: GroupId) {
        let now = self.w.now;
        let Some(grp) = self.w.groups.remove(g) else {
            return;
        };
        if grp.moving {
            self.w.moving.stop(now);
        }
        for x in grp.xfers() {
            let xf = &mut self.w.xfers[x];
            if xf.settled() {
                self.w.xfers.remove(x);
            } else {
                xf.orphan = true;
            }
        }
        self.fidelity.group_freed(g);
    }

    /// The fence after a store stream has passed: its flag goes out.
    pub(crate) fn fence_done(&mut self, x: XferId) {
        let xf = &self.w.xfers[x];
        let (a, g, epoch) = (xf.actor, xf.group, xf.epoch);
        if let Notify::After { to, phase } = xf.notify {
            self.send_flag(a, ActorId(to.0), epoch, phase.0);
        }
        let grp = &mut self.w.groups[g];
        grp.flags_pending = grp.flags_pending.saturating_sub(1);
        if T::STORE_BUFFER {
            self.check_post(g);
        } else {
            self.xfer_closed(x);
        }
    }
}
