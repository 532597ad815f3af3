//! The measurement engine of allreduce on the hardware, shared by the
//! custom kernels and the NCCL baseline: inputs staged and drawn per
//! seed, results verified against the CPU reference, operations timed with
//! events, the verify step run eager and as a CUDA graph, all under a
//! watchdog that names a kernel that gave up or hangs.

#![allow(unsafe_code)]

use super::{Collective, fit_queue};
use crate::devices::{Devices, Timeouts};
use crate::driver::{self, Event, Gpu, Graph, HostMem};
use crate::error::HwError;
use crate::verify;
use contend_workload::{Dtype, LaunchMode};
use std::time::Instant;

/// Timings of one measurement (nanoseconds).
#[derive(Clone, Debug, Default)]
pub struct Timing {
    /// Per operation (or per step), the slowest rank's time.
    pub per_op_ns: Vec<f64>,
    /// First event to last, slowest rank (allreduce sweeps: the batch of
    /// `batch_ops` launches with no event between them).
    pub total_ns: f64,
    /// Host-synchronised latency (launch, wait), slowest rank, per try.
    pub sync_ns: Vec<f64>,
    /// Operations in the batch `total_ns` times (0: not a batch).
    pub batch_ops: usize,
}

fn hang(
    t: &Timeouts,
    c: &dyn Collective,
    what: &str,
    bytes: usize,
    detail: Option<String>,
) -> HwError {
    driver::poison();
    HwError::Hang {
        what: what.into(),
        algorithm: c.algorithm().to_string(),
        size: bytes as u64,
        ranks: format!("{:?}", c.gpu_ids()),
        limit_ms: t.watchdog_ms(),
        detail: detail.map(|d| format!(": {d}")).unwrap_or_default(),
    }
}

fn kernel_gave_up(
    t: &Timeouts,
    c: &dyn Collective,
    what: &str,
    bytes: usize,
) -> Result<(), HwError> {
    match c.gave_up() {
        Some(d) => Err(HwError::Hang {
            what: what.into(),
            algorithm: c.algorithm().to_string(),
            size: bytes as u64,
            ranks: format!("{:?}", c.gpu_ids()),
            limit_ms: t.kernel_ms(),
            detail: format!(": {d}"),
        }),
        None => Ok(()),
    }
}

fn slowest(per_rank: &[Vec<f64>]) -> Vec<f64> {
    let n = per_rank.iter().map(Vec::len).min().unwrap_or(0);
    (0..n)
        .map(|i| per_rank.iter().map(|v| v[i]).fold(0.0, f64::max))
        .collect()
}

/// Fresh inputs on every rank, outputs poisoned.
fn stage_inputs(
    t: &Timeouts,
    c: &dyn Collective,
    rank: usize,
    gpu: &Gpu,
    input: &[u8],
) -> Result<(), HwError> {
    c.input(rank).upload(input)?;
    let stream = c.stream(rank, gpu);
    c.output(rank).fill(0xff, stream)?;
    if !driver::sync_stream(stream, t.watchdog)? {
        return Err(HwError::Unsupported("GPU did not finish a memset".into()));
    }
    Ok(())
}

/// Checks every rank's output against the sum of the inputs.
fn check_all(
    c: &dyn Collective,
    dtype: Dtype,
    placement: &str,
    bytes: usize,
    inputs: &[Vec<u8>],
    outs: &[Vec<u8>],
) -> Result<(), HwError> {
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    for (r, out) in outs.iter().enumerate() {
        let checked = if c.exact() {
            verify::check_exact(dtype, &refs, out)
        } else {
            verify::check(dtype, &refs, out)
        };
        checked.map_err(|m| HwError::Mismatch {
            algorithm: c.algorithm().to_string(),
            placement: placement.into(),
            size: bytes as u64,
            rank: r,
            detail: m.to_string(),
        })?;
    }
    Ok(())
}

/// Every rank's fresh input; full-mantissa ones for a collective checked
/// bit for bit ([`verify::draw_input_fine`]).
fn draw_all(c: &dyn Collective, dtype: Dtype, bytes: usize, n: usize, seed: u64) -> Vec<Vec<u8>> {
    let draw = if c.exact() {
        verify::draw_input_fine
    } else {
        verify::draw_input
    };
    (0..n)
        .map(|r| {
            draw(
                dtype,
                bytes,
                seed.wrapping_add((r as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d)),
            )
        })
        .collect()
}

/// Runs one allreduce on every rank with fresh inputs and checks every output.
pub fn verify_once(
    devices: &Devices,
    c: &dyn Collective,
    dtype: Dtype,
    placement: &str,
    bytes: usize,
    seed: u64,
) -> Result<(), HwError> {
    let t = &devices.timeouts;
    c.ready(bytes)?;
    let ids = c.gpu_ids().to_vec();
    let inputs = draw_all(c, dtype, bytes, ids.len(), seed);
    let outs = devices.par(&ids, |r, g, gate| {
        stage_inputs(t, c, r, g, &inputs[r])?;
        gate.wait()?;
        let s = c.stream(r, g);
        c.launch(r, g, bytes, s)?;
        if !driver::sync_stream(s, t.watchdog)? {
            return Err(hang(t, c, "verification run", bytes, None));
        }
        c.output(r).download(bytes)
    })?;
    kernel_gave_up(t, c, "verification run", bytes)?;
    check_all(c, dtype, placement, bytes, &inputs, &outs)
}

/// Times `repeats` allreduces back to back (after `warmup`), each between
/// two events, and `sync_reps` host-synchronised ones.
///
/// Two back-to-back batches of `repeats` are queued behind a `hold` kernel
/// on every rank and released at once: the first with an event only at each
/// end (its mean per operation is what a stream of collectives costs; the
/// way nccl-tests times), the second with an event between every two
/// operations (the per-operation distribution; recording an event between
/// kernels stops the next launch from overlapping the previous kernel's
/// tail, so these times run a few microseconds above the batch mean). Both are so the GPUs run it at their own pace (launch latency
/// from the queue included, the host's enqueue cost not): what a stream of
/// eager launches costs when the host keeps ahead, as in a model's forward
/// pass. The host-synchronised tries (launch, wait, on every rank) are what
/// a caller that waits for each result sees.
pub fn time(
    devices: &Devices,
    c: &dyn Collective,
    bytes: usize,
    warmup: u32,
    repeats: u32,
    sync_reps: u32,
) -> Result<Timing, HwError> {
    let t = &devices.timeouts;
    c.ready(bytes)?;
    let ids = c.gpu_ids().to_vec();
    let most_here = ids
        .iter()
        .map(|g| ids.iter().filter(|h| *h == g).count())
        .max()
        .unwrap_or(1);
    let (warmup, repeats) = fit_queue(warmup, repeats, c.queued_ops(), most_here);
    let r = repeats.max(1) as usize;
    let release = HostMem::alloc(&devices.gpus, 64)?;
    let per_rank = devices.par(&ids, |rank, g, gate| {
        let s = c.stream(rank, g);
        let ev = Event::many(g, r + 1)?;
        let hold = g.func("hold")?;
        let (flag, limit): (u64, u64) = (release.dev[ids[rank]], 1_000_000_000);
        // SAFETY: hold(const u32* flag, u64 timeout_ns) reads one u32 at
        // `flag`: the first word of `release`, host memory mapped into this
        // GPU, which outlives the stream's work (the function waits for it
        // or lets the hold go before returning).
        unsafe { g.launch(hold, 1, 32, s, (&flag, &limit))? };
        for _ in 0..warmup {
            c.launch(rank, g, bytes, s)?;
        }
        // Batch 1: r launches back to back, an event only at each end.
        let batch = Event::many(g, 2)?;
        batch[0].record(s)?;
        for _ in 0..r {
            c.launch(rank, g, bytes, s)?;
        }
        batch[1].record(s)?;
        // Batch 2: r launches, each between two events (the distribution).
        ev[0].record(s)?;
        for i in 0..r {
            c.launch(rank, g, bytes, s)?;
            ev[i + 1].record(s)?;
        }
        gate.wait()?;
        if rank == 0 {
            release.write_u32(0, 1);
        }
        if !ev[r].wait(t.watchdog)? {
            return Err(hang(t, c, "timed allreduces", bytes, None));
        }
        let d = (0..r)
            .map(|i| ev[i].ns_until(&ev[i + 1]))
            .collect::<Result<Vec<_>, _>>()?;
        let total = batch[0].ns_until(&batch[1])?;
        let mut sync = Vec::with_capacity(sync_reps as usize);
        for _ in 0..sync_reps {
            gate.wait()?;
            let t0 = Instant::now();
            c.launch(rank, g, bytes, s)?;
            if !driver::sync_stream(s, t.watchdog)? {
                return Err(hang(t, c, "host-synchronised allreduce", bytes, None));
            }
            sync.push(t0.elapsed().as_nanos() as f64);
        }
        Ok((d, total, sync))
    });
    if per_rank.is_err() {
        // Let a held stream go before the buffers are freed.
        release.write_u32(0, 1);
    }
    let per_rank = per_rank?;
    kernel_gave_up(t, c, "timed allreduces", bytes)?;
    let d: Vec<Vec<f64>> = per_rank.iter().map(|x| x.0.clone()).collect();
    let s: Vec<Vec<f64>> = per_rank.iter().map(|x| x.2.clone()).collect();
    Ok(Timing {
        per_op_ns: slowest(&d),
        total_ns: per_rank.iter().map(|x| x.1).fold(0.0, f64::max),
        sync_ns: slowest(&s),
        batch_ops: r,
    })
}

/// The verify step: `ops` allreduces of `bytes` back to back (with an
/// optional spin of `delays[op][rank]` ns before each), launched eagerly or
/// as one CUDA graph per rank. First one checked step with fresh inputs,
/// then `warmup` steps, then `repeats` timed steps. `per_op_ns` holds the
/// step times.
#[allow(clippy::too_many_arguments)]
pub fn verify_step(
    devices: &Devices,
    c: &dyn Collective,
    dtype: Dtype,
    placement: &str,
    bytes: usize,
    delays: &[Vec<u64>],
    mode: LaunchMode,
    warmup: u32,
    repeats: u32,
    seed: u64,
) -> Result<Timing, HwError> {
    let what = match mode {
        LaunchMode::Eager => "verify step (eager)",
        LaunchMode::Graph => "verify step (CUDA graph)",
        LaunchMode::GraphEach => {
            return Err(HwError::Unsupported(
                "`launch = \"graph-each\"` (a CUDA graph per collective) is the simulator's: contend hw times a verify step eager or as one CUDA graph".into(),
            ));
        }
    };
    let t = &devices.timeouts;
    c.ready(bytes)?;
    let ids = c.gpu_ids().to_vec();
    let inputs = draw_all(c, dtype, bytes, ids.len(), seed);
    let r = repeats.max(1) as usize;
    let per_rank = devices.par(&ids, |rank, g, gate| {
        let s = c.stream(rank, g);
        let spin = g.func("spin")?;
        let step = || -> Result<(), HwError> {
            for d in delays {
                let ns: u64 = d.get(rank).copied().unwrap_or(0);
                if ns > 0 {
                    // SAFETY: spin(u64 ns) takes no address.
                    unsafe { g.launch(spin, 1, 32, s, (&ns,))? };
                }
                c.launch(rank, g, bytes, s)?;
            }
            Ok(())
        };
        let graph = match mode {
            LaunchMode::Graph => Some(Graph::capture(g, s, step)?),
            LaunchMode::Eager | LaunchMode::GraphEach => None,
        };
        let run = || match &graph {
            Some(gr) => gr.launch(s),
            None => step(),
        };
        // Checked step.
        stage_inputs(t, c, rank, g, &inputs[rank])?;
        gate.wait()?;
        run()?;
        if !driver::sync_stream(s, t.watchdog)? {
            return Err(hang(t, c, what, bytes, None));
        }
        let out = c.output(rank).download(bytes)?;
        gate.wait()?;
        for _ in 0..warmup {
            run()?;
        }
        let ev = Event::many(g, 2 * r)?;
        for i in 0..r {
            ev[2 * i].record(s)?;
            run()?;
            ev[2 * i + 1].record(s)?;
        }
        if !ev[2 * r - 1].wait(t.watchdog)? {
            return Err(hang(t, c, what, bytes, None));
        }
        let d = (0..r)
            .map(|i| ev[2 * i].ns_until(&ev[2 * i + 1]))
            .collect::<Result<Vec<_>, _>>()?;
        let total = ev[0].ns_until(&ev[2 * r - 1])?;
        Ok((out, d, total))
    })?;
    kernel_gave_up(t, c, what, bytes)?;
    let outs: Vec<Vec<u8>> = per_rank.iter().map(|x| x.0.clone()).collect();
    check_all(c, dtype, placement, bytes, &inputs, &outs)?;
    let d: Vec<Vec<f64>> = per_rank.iter().map(|x| x.1.clone()).collect();
    Ok(Timing {
        per_op_ns: slowest(&d),
        total_ns: per_rank.iter().map(|x| x.2).fold(0.0, f64::max),
        sync_ns: vec![],
        batch_ops: 0,
    })
}

/// Warm-up and timed repeats for a message size: more for small messages.
pub fn default_repeats(bytes: usize) -> (u32, u32, u32) {
    match bytes {
        b if b <= 1 << 20 => (20, 150, 50),
        b if b <= 16 << 20 => (5, 50, 10),
        _ => (3, 20, 5),
    }
}
