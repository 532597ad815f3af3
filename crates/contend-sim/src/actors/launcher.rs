//! DESIGN 6–7 — when a kernel launch lets its blocks run. In a CUDA graph
//! of the whole step a kernel node costs `gpu.launch_graph_ns`. A launch
//! call per collective costs the call's own time: `gpu.launch_eager_ns`
//! eager, `gpu.launch_graph_each_ns` for a graph of one collective launched
//! per call (p2pmark's custom allreduce), after the caller's own host time
//! (torch.distributed's around NCCL: `nccl.torch_call_ns`). With a thread
//! per rank (one process per rank) every rank pays it at once. From one
//! host thread for every GPU (nccl-tests `-g N`, p2pmark's NCCL), the thread
//! makes call k of rank r after every earlier call of every rank: it is
//! ready at k·N + r + 1 calls from the start, whatever the GPUs are doing
//! (the host runs ahead of them), and the kernel starts when it is ready
//! and the rank has reached it, the GPU's own start of an enqueued kernel
//! (`gpu.launch_graph_ns`) after. So back-to-back calls come no faster than
//! N calls each: nccl-tests' flat floor of small sizes, about N × 3 µs.
//!
//! Constants: `contend hw probe --only launch` on lent H100 hosts
//! (calibration/h100x1/): 3.0 and 3.4 µs per eager launch back to back
//! (the default, 3.2, their mean), 0.8 µs per kernel of a replayed graph,
//! and 1.8 µs per call of a one-kernel graph launched back to back
//! (`launch-graph-each`, three runs: calibration/h100x1/
//! h100x1-probe-launch-each-*.jsonl).

use crate::params::ModelParams;
use contend_topo::{Nanos, Picos};
use contend_workload::LaunchMode;

/// One host thread launching every rank: this actor's rank and the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OneThread {
    pub rank: u32,
    pub ranks: u32,
}

/// Whether `mode` makes a host launch call per collective (eager, a graph
/// per call), not a node of a graph replayed whole.
pub(crate) fn per_call(mode: LaunchMode) -> bool {
    match mode {
        LaunchMode::Eager | LaunchMode::GraphEach => true,
        LaunchMode::Graph => false,
    }
}

/// When a launch reached at `now` for collective `epoch` lets the kernel
/// run. `caller` is the host time the caller spends per call before the
/// launch call (torch.distributed's around NCCL), paid per call like it.
pub(crate) fn launch_done(
    now: Picos,
    mode: LaunchMode,
    one_thread: Option<OneThread>,
    caller: Picos,
    epoch: u32,
    p: &ModelParams,
) -> Picos {
    let call = Nanos::new(
        caller.as_ns_f64()
            + match mode {
                LaunchMode::Eager => p.gpu.launch_eager_ns.get(),
                LaunchMode::GraphEach => p.gpu.launch_graph_each_ns.get(),
                LaunchMode::Graph => return now + p.gpu.launch_graph_ns.to_picos(),
            },
    );
    match one_thread {
        None => now + call.to_picos(),
        Some(h) => {
            let calls = u64::from(epoch) * u64::from(h.ranks) + u64::from(h.rank) + 1;
            let ready = Nanos::new(call.get() * calls as f64).to_picos();
            ready.max(now) + p.gpu.launch_graph_ns.to_picos()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_serialises_every_ranks_launch_call_after_call() {
        let mut p = ModelParams::default();
        p.gpu.launch_eager_ns = Nanos::new(3000.0);
        p.gpu.launch_graph_ns = Nanos::new(800.0);
        p.gpu.launch_graph_each_ns = Nanos::new(2500.0);
        let h = |rank| Some(OneThread { rank, ranks: 8 });
        // when the kernel runs, in µs
        let at = |now: Picos, mode, one, caller: Picos, epoch| {
            launch_done(now, mode, one, caller, epoch, &p).as_ns_f64() / 1e3
        };
        let (zero, late) = (Picos::ZERO, Picos::from_ns(500_000));
        use LaunchMode::{Eager, Graph, GraphEach};
        // call 0: rank 0 after one launch, rank 7 after eight
        assert_eq!(at(zero, Eager, h(0), zero, 0), 3.8);
        assert_eq!(at(zero, Eager, h(7), zero, 0), 24.8);
        // call 5 of rank 2, reached early: (5·8 + 3) launches of 3 µs
        assert_eq!(at(zero, Eager, h(2), zero, 5), 129.8);
        // reached after the host was ready: the GPU's start only
        assert_eq!(at(late, Eager, h(2), zero, 5), 500.8);
        // a thread per rank: one launch each, all at once; a graph: its node
        assert_eq!(at(late, Eager, None, zero, 5), 503.0);
        assert_eq!(at(late, Graph, h(2), zero, 5), 500.8);
        // a graph per call: its call time, per call, like an eager launch
        assert_eq!(at(late, GraphEach, None, zero, 5), 502.5);
        assert_eq!(at(zero, GraphEach, h(2), zero, 5), 108.3);
        // a caller's own host time (torch.distributed's) adds to every call,
        // eager or a graph per call, and to nothing inside a graph
        let torch = Picos::from_ns(20_000);
        assert_eq!(at(late, Eager, None, torch, 5), 523.0);
        // one thread: rank 2's call 5 is ready after 43 calls of 23 µs
        assert_eq!(at(zero, Eager, h(2), torch, 5), 989.8);
        assert_eq!(at(late, Graph, None, torch, 5), 500.8);
    }
}
