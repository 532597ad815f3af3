//! Criterion benchmarks of the simulator: the event queues (radix heaps with
//! 1-bit and 4-bit digits vs plain binary heap) and whole verify steps at both
//! fidelities.
//! `contend bench` prints events per second for the full default scenario.

use contend_sim::queue::{EventQueue, HeapQueue, RadixQueue};
use contend_sim::wide_radix::WideRadixQueue;
use contend_sim::{ModelParams, RunSpec, simulate_one};
use contend_topo::Picos;
use contend_workload::{Algorithm, Fidelity, Placement, default_scenario};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

/// A hold-model workload like the simulator's: pop one, push one a little later.
fn churn<Q: EventQueue<u32> + Default>(n: usize) -> u64 {
    let mut q = Q::default();
    let mut x = 12345u64;
    for i in 0..4096u32 {
        q.push(Picos(i as u64 * 100), i);
    }
    let mut sum = 0;
    for _ in 0..n {
        let (t, v) = q.pop().unwrap();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        q.push(Picos(t.0 + 1 + x % 2_000_000), v);
        sum += v as u64;
    }
    sum
}

fn queues(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue_100k_hold");
    g.bench_function("radix", |b| {
        b.iter(|| black_box(churn::<RadixQueue<u32>>(100_000)))
    });
    g.bench_function("wide_radix", |b| {
        b.iter(|| black_box(churn::<WideRadixQueue<u32>>(100_000)))
    });
    g.bench_function("binary_heap", |b| {
        b.iter(|| black_box(churn::<HeapQueue<u32>>(100_000)))
    });
    g.finish();
}

fn verify_step(c: &mut Criterion) {
    let sc = default_scenario(None).unwrap();
    let p = ModelParams::default();
    let mut g = c.benchmark_group("verify_step_8gpu");
    g.sample_size(10);
    for (fid, alg) in [
        (Fidelity::Flow, Algorithm::OneShotPull),
        (Fidelity::Flow, Algorithm::RingLl),
        (Fidelity::Tlp, Algorithm::TwoShotPush),
    ] {
        let spec = RunSpec {
            algorithm: Some(alg),
            placement: Placement::Peer,
            fidelity: fid,
            size: None,
        };
        g.bench_function(format!("{fid}_{alg}"), |b| {
            b.iter(|| black_box(simulate_one(&sc, &p, spec).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, queues, verify_step);
criterion_main!(benches);
