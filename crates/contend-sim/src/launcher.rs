//! DESIGN 6–7 — when a kernel launch lets its blocks run. In a CUDA graph
//! a kernel node costs `gpu.launch_graph_ns`. Eager, a thread per rank
//! (one process per rank) costs `gpu.launch_eager_ns` per collective, every
//! rank at once. Eager from one host thread for every GPU (nccl-tests `-g
//! N`, p2pmark), the thread launches collective k of rank r after every
//! earlier launch of every rank: it is ready at (k·N + r + 1) launches from
//! the start, whatever the GPUs are doing (the host runs ahead of them),
//! and the kernel starts when it is ready and the rank has reached it, the
//! GPU's own start of an enqueued kernel (`gpu.launch_graph_ns`) after. So
//! back-to-back calls come no faster than N launches each: nccl-tests'
//! flat floor of small sizes, about N × 3 µs.
//!
//! Constants: `contend hw probe --only launch` on two lent H100 hosts
//! (calibration/h100x1/): 3.0 and 3.4 µs per eager launch back to back
//! (the default, 3.2, their mean), 0.8 µs per kernel of a replayed graph.

use crate::params::ModelParams;
use contend_topo::Picos;

/// One host thread launching every rank: this actor's rank and the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OneThread {
    pub rank: u32,
    pub ranks: u32,
}

/// When a launch reached at `now` for collective `epoch` lets the kernel run.
pub(crate) fn launch_done(
    now: Picos,
    eager: bool,
    one_thread: Option<OneThread>,
    epoch: u32,
    p: &ModelParams,
) -> Picos {
    let ns = |v: f64| Picos::from_ns_f64(v);
    match (eager, one_thread) {
        (false, _) => now + ns(p.gpu.launch_graph_ns),
        (true, None) => now + ns(p.gpu.launch_eager_ns),
        (true, Some(h)) => {
            let launches = u64::from(epoch) * u64::from(h.ranks) + u64::from(h.rank) + 1;
            let ready = Picos::from_ns_f64(p.gpu.launch_eager_ns * launches as f64);
            ready.max(now) + ns(p.gpu.launch_graph_ns)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_serialises_every_ranks_launch_call_after_call() {
        let mut p = ModelParams::default();
        p.gpu.launch_eager_ns = 3000.0;
        p.gpu.launch_graph_ns = 800.0;
        let h = |rank| Some(OneThread { rank, ranks: 8 });
        let us = |t: Picos| t.as_ns_f64() / 1e3;
        // call 0: rank 0 after one launch, rank 7 after eight
        assert_eq!(us(launch_done(Picos::ZERO, true, h(0), 0, &p)), 3.8);
        assert_eq!(us(launch_done(Picos::ZERO, true, h(7), 0, &p)), 24.8);
        // call 5 of rank 2, reached early: (5·8 + 3) launches of 3 µs
        assert_eq!(us(launch_done(Picos::ZERO, true, h(2), 5, &p)), 129.8);
        // reached after the host was ready: the GPU's start only
        let late = Picos::from_ns(500_000);
        assert_eq!(us(launch_done(late, true, h(2), 5, &p)), 500.8);
        // a thread per rank: one launch each, all at once; a graph: its node
        assert_eq!(us(launch_done(late, true, None, 5, &p)), 503.0);
        assert_eq!(us(launch_done(late, false, h(2), 5, &p)), 500.8);
    }
}
