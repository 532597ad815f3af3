//! Point-to-point traffic on the hardware: the transfer workload's streams
//! and the microbenchmark set of `contend hw probe` that calibration needs
//! (copy-engine bandwidth per direction and size, SM load/store bandwidth vs
//! blocks for peer, host and local targets, flag round trips, several GPUs
//! on host memory at once).

#![allow(unsafe_code)]

use crate::devices::{Devices, Gate, Timeouts};
use crate::driver::{self, DevMem, Event, Gpu, HostMem, StreamRef};
use crate::error::HwError;
use contend_workload::KernelConfig;
use contend_workload::{ProbeOp, ProbeTarget};
use std::time::{Duration, Instant};

/// Where a transfer's traffic goes (or comes from, for loads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Memory of GPU `i` of the devices (the driving GPU's own memory when it is itself).
    Gpu(usize),
    /// Pinned host memory mapped into the GPUs.
    Host,
}

/// What a transfer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Copy engine of the GPU, the target's memory into the GPU's (host:
    /// H2D; another GPU: `cuMemcpyPeerAsync` with the GPU as destination,
    /// on its stream — a pull).
    CopyIn,
    /// Copy engine from the GPU's memory to the target (host: D2H; other GPU: cuMemcpyPeerAsync).
    CopyOut,
    /// SM loads of the target's memory.
    Load,
    /// SM stores into the target's memory.
    Store,
    /// Flag ping-pong with the target (a GPU answers with a kernel, the host with a CPU thread).
    PingPong,
}

/// One stream of traffic driven by GPU `from`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    pub from: usize,
    pub to: Target,
    pub op: Op,
    pub bytes: usize,
    pub kernel: KernelConfig,
    /// Ping-pong: round trips per timed repeat.
    pub iterations: u32,
    /// Ping-pong with a GPU: flags in host memory instead of each GPU's own memory.
    pub flags_in_host: bool,
    /// Ping-pong: a system fence before every flag and after every wait
    /// (what the allreduce barriers do).
    pub fenced: bool,
}

impl Spec {
    /// The probe this stream is (`copy-h2d`, `copy-d2h`, `copy-peer`, ...).
    pub fn probe(&self) -> ProbeOp {
        match (self.op, self.to) {
            (Op::CopyIn, Target::Host) => ProbeOp::CopyH2d,
            (Op::CopyIn, Target::Gpu(_)) => ProbeOp::CopyPeerRead,
            (Op::CopyOut, Target::Host) => ProbeOp::CopyD2h,
            (Op::CopyOut, Target::Gpu(_)) => ProbeOp::CopyPeer,
            (Op::Load, _) => ProbeOp::SmLoad,
            (Op::Store, _) => ProbeOp::SmStore,
            (Op::PingPong, _) => ProbeOp::PingPong,
        }
    }
    /// `copy-h2d`, `copy-d2h`, `copy-peer`, `sm-load`, `sm-store`, `ping-pong`.
    pub fn label(&self) -> &'static str {
        self.probe().name()
    }
    /// `local`, `peer` or `host`.
    pub fn target_kind(&self) -> ProbeTarget {
        match self.to {
            Target::Host => ProbeTarget::Host,
            Target::Gpu(j) if j == self.from => ProbeTarget::Local,
            Target::Gpu(_) => ProbeTarget::Peer,
        }
    }
}

/// What one stream measured (ns).
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Per repeat: one transfer of `bytes`, or one round trip (ping-pong).
    pub per_op_ns: Vec<f64>,
    pub total_ns: f64,
    /// Host-synchronised time of one transfer (launch/enqueue to done).
    pub sync_ns: Vec<f64>,
}

/// Buffers of one stream.
struct Bufs {
    dev_src: Option<DevMem>,
    dev_dst: Option<DevMem>,
    host: Option<HostMem>,
    sink: DevMem,
    /// Ping-pong flags: (initiator's flag, responder's flag, status).
    flag_a: Option<DevMem>,
    flag_b: Option<DevMem>,
    host_flags: Option<HostMem>,
}

fn alloc(devices: &Devices, s: &Spec) -> Result<Bufs, HwError> {
    let g = &devices.gpus[s.from];
    let mut b = Bufs {
        dev_src: None,
        dev_dst: None,
        host: None,
        sink: DevMem::alloc(g, 16)?,
        flag_a: None,
        flag_b: None,
        host_flags: None,
    };
    match (s.op, s.to) {
        (Op::CopyIn, Target::Host) => {
            b.host = Some(HostMem::alloc(&devices.gpus, s.bytes)?);
            b.dev_dst = Some(DevMem::alloc(g, s.bytes)?);
        }
        (Op::CopyIn, Target::Gpu(j)) => {
            b.dev_src = Some(DevMem::alloc(&devices.gpus[j], s.bytes)?);
            b.dev_dst = Some(DevMem::alloc(g, s.bytes)?);
        }
        (Op::CopyOut, Target::Host) => {
            b.dev_src = Some(DevMem::alloc(g, s.bytes)?);
            b.host = Some(HostMem::alloc(&devices.gpus, s.bytes)?);
        }
        (Op::CopyOut, Target::Gpu(j)) => {
            b.dev_src = Some(DevMem::alloc(g, s.bytes)?);
            b.dev_dst = Some(DevMem::alloc(&devices.gpus[j], s.bytes)?);
        }
        (Op::Load | Op::Store, Target::Host) => {
            b.host = Some(HostMem::alloc(&devices.gpus, s.bytes)?)
        }
        (Op::Load | Op::Store, Target::Gpu(j)) => {
            if j != s.from && !devices.p2p[s.from][j].access {
                return Err(HwError::Unsupported(format!(
                    "GPU {} cannot reach GPU {j} by P2P",
                    s.from
                )));
            }
            b.dev_dst = Some(DevMem::alloc(&devices.gpus[j], s.bytes)?);
        }
        (Op::PingPong, Target::Gpu(j)) => {
            if j == s.from {
                return Err(HwError::Unsupported(
                    "a ping-pong needs two different agents".into(),
                ));
            }
            if s.flags_in_host {
                b.host_flags = Some(HostMem::alloc(&devices.gpus, 4096)?);
            } else {
                if !devices.p2p[s.from][j].access || !devices.p2p[j][s.from].access {
                    return Err(HwError::Unsupported(format!(
                        "GPUs {} and {j} cannot reach each other by P2P",
                        s.from
                    )));
                }
                b.flag_a = Some(DevMem::alloc(g, 16)?);
                b.flag_b = Some(DevMem::alloc(&devices.gpus[j], 16)?);
            }
            if b.host_flags.is_none() {
                b.host_flags = Some(HostMem::alloc(&devices.gpus, 4096)?); // status words
            }
        }
        (Op::PingPong, Target::Host) => b.host_flags = Some(HostMem::alloc(&devices.gpus, 4096)?),
    }
    Ok(b)
}

// Host flag layout (u32 index): 0 initiator's flag, 16 responder's flag,
// 32 initiator status, 48 responder status (separate 64 B lines).
const HF_A: usize = 0;
const HF_B: usize = 16;
const HF_STATUS_PING: usize = 32;
const HF_STATUS_PONG: usize = 48;

/// One transfer (or one ping-pong repeat) enqueued on `stream`, a stream of
/// GPU `s.from`.
///
/// Every buffer it hands the driver or a kernel is one of `b`, allocated
/// for `s` by [`alloc`] (at least `s.bytes` long; flags 16 B of device
/// memory each or 4096 B of host memory), and `b` outlives the work: the
/// callers wait for the streams before they return, and `b` is dropped
/// after that ([`run_concurrent`]).
fn enqueue(
    devices: &Devices,
    s: &Spec,
    b: &Bufs,
    stream: StreamRef<'_>,
    aux: Option<&driver::Stream>,
    base: u32,
) -> Result<(), HwError> {
    let g = &devices.gpus[s.from];
    let nvec = (s.bytes / 16) as u64;
    let missing = || HwError::Unsupported(format!("{} without its buffers", s.label()));
    match (s.op, s.to) {
        (Op::CopyIn, Target::Gpu(j)) => match (&b.dev_dst, &b.dev_src) {
            (Some(dst), Some(src)) => {
                driver::copy_peer_async(dst, g, src, &devices.gpus[j], s.bytes, stream)
            }
            _ => Err(missing()),
        },
        (Op::CopyIn, Target::Host) => {
            let (Some(h), Some(d)) = (&b.host, &b.dev_dst) else {
                return Err(missing());
            };
            // SAFETY: `h` is pinned host memory and `d` device memory of
            // this GPU, both `s.bytes` long and alive until the stream has
            // passed the copy (see above); only this stream touches them.
            unsafe { driver::copy_htod_async(d.ptr, h.host, s.bytes, stream) }
        }
        (Op::CopyOut, Target::Host) => {
            let (Some(d), Some(h)) = (&b.dev_src, &b.host) else {
                return Err(missing());
            };
            // SAFETY: as for CopyIn from host memory, the other way.
            unsafe { driver::copy_dtoh_async(h.host, d.ptr, s.bytes, stream) }
        }
        (Op::CopyOut, Target::Gpu(j)) => match (&b.dev_dst, &b.dev_src) {
            (Some(dst), Some(src)) => {
                driver::copy_peer_async(dst, &devices.gpus[j], src, g, s.bytes, stream)
            }
            _ => Err(missing()),
        },
        (Op::Load | Op::Store, _) => {
            let ptr: u64 = match (s.to, &b.host, &b.dev_dst) {
                (Target::Host, Some(h), _) => h.dev[s.from],
                (Target::Gpu(_), _, Some(d)) => d.ptr,
                _ => {
                    return Err(HwError::Unsupported(
                        "transfer without a target buffer".into(),
                    ));
                }
            };
            if s.op == Op::Load {
                let sink: u64 = b.sink.ptr;
                // SAFETY: sm_load(const uint4* src, u64 nvec, u32* sink)
                // loads `nvec` 16-byte vectors from `ptr` (`s.bytes` of host
                // memory mapped into this GPU, its own memory, or a peer's
                // with peer access checked in alloc) and may store one u32
                // at `sink` (16 B of its own memory).
                unsafe {
                    g.launch(
                        g.func("sm_load")?,
                        s.kernel.blocks,
                        s.kernel.threads,
                        stream,
                        (&ptr, &nvec, &sink),
                    )
                }
            } else {
                let pattern: u32 = base;
                // SAFETY: sm_store(uint4* dst, u64 nvec, u32 pattern) stores
                // `nvec` 16-byte vectors at `ptr` (as for sm_load).
                unsafe {
                    g.launch(
                        g.func("sm_store")?,
                        s.kernel.blocks,
                        s.kernel.threads,
                        stream,
                        (&ptr, &nvec, &pattern),
                    )
                }
            }
        }
        (Op::PingPong, to) => {
            let hf = b
                .host_flags
                .as_ref()
                .ok_or_else(|| HwError::Unsupported("ping-pong without flags".into()))?;
            let timeout = devices.timeouts.kernel_ns();
            let at = |gpu: usize, idx: usize| hf.dev[gpu] + 4 * idx as u64;
            // Where each side's flag lives, as each GPU addresses it.
            let (a_flag, b_flag_for_init, b_flag_for_resp, a_flag_for_resp) =
                match (to, &b.flag_a, &b.flag_b) {
                    (Target::Gpu(_), Some(fa), Some(fb)) => (fa.ptr, fb.ptr, fb.ptr, fa.ptr),
                    (Target::Gpu(j), _, _) => {
                        (at(s.from, HF_A), at(s.from, HF_B), at(j, HF_B), at(j, HF_A))
                    }
                    (Target::Host, _, _) => (at(s.from, HF_A), at(s.from, HF_B), 0, 0),
                };
            let iters: u32 = s.iterations;
            // ping(remote, local, base, iters, timeout, status): the initiator
            // stores into the responder's flag and polls its own.
            let launch_ping = |gpu: &Gpu,
                               remote: u64,
                               local: u64,
                               status: u64,
                               name: &str,
                               st: StreamRef<'_>|
             -> Result<(), HwError> {
                // SAFETY: ping/pong(u32* remote, const u32* local, u32 base,
                // u32 iters, u64 timeout_ns, u32* status) touch one u32 at
                // each address: the flags (16 B of device memory of either
                // GPU, with peer access both ways checked in alloc, or words
                // of `hf`, host memory mapped into both) and a status word of
                // `hf`, as `gpu` addresses them.
                unsafe {
                    gpu.launch(
                        gpu.func(name)?,
                        1,
                        32,
                        st,
                        (&remote, &local, &base, &iters, &timeout, &status),
                    )
                }
            };
            if let Target::Gpu(j) = to {
                let resp = &devices.gpus[j];
                let st = aux.ok_or_else(|| {
                    HwError::Unsupported("ping-pong without a responder stream".into())
                })?;
                resp.bind()?;
                let r = launch_ping(
                    resp,
                    a_flag_for_resp,
                    b_flag_for_resp,
                    at(j, HF_STATUS_PONG),
                    if s.fenced { "pong_fenced" } else { "pong" },
                    st.handle(),
                );
                g.bind()?;
                r?;
            }
            launch_ping(
                g,
                b_flag_for_init,
                a_flag,
                at(s.from, HF_STATUS_PING),
                if s.fenced { "ping_fenced" } else { "ping" },
                stream,
            )
        }
    }
}

/// CPU side of a GPU-host ping-pong: answers `rounds` flags.
fn host_responder(
    hf: &HostMem,
    rounds: u32,
    limit: Duration,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(), HwError> {
    for k in 1..=rounds {
        let t0 = Instant::now();
        loop {
            let v = hf.read_u32(HF_B);
            if (v.wrapping_sub(k) as i32) >= 0 {
                break;
            }
            if stop.load(std::sync::atomic::Ordering::Relaxed) || t0.elapsed() > limit {
                return Err(HwError::Unsupported(format!(
                    "host responder: no ping {k} within {} ms",
                    limit.as_millis()
                )));
            }
            std::hint::spin_loop();
        }
        hf.write_u32(HF_A, k);
    }
    Ok(())
}

fn check_status(t: &Timeouts, s: &Spec, b: &Bufs) -> Result<(), HwError> {
    if let Some(hf) = &b.host_flags {
        let (p, q) = (hf.read_u32(HF_STATUS_PING), hf.read_u32(HF_STATUS_PONG));
        if p != 0 || q != 0 {
            return Err(HwError::Hang {
                what: "flag ping-pong".into(),
                algorithm: "ping-pong".into(),
                size: s.bytes as u64,
                ranks: format!("gpu{} <-> {:?}", s.from, s.to),
                limit_ms: t.kernel_ms(),
                detail: format!(": initiator status {p:#x}, responder status {q:#x}"),
            });
        }
    }
    Ok(())
}

/// Empty kernels per timed launch batch of the launch probe.
pub const LAUNCH_KERNELS: usize = 100;

/// How the launch probe launches its empty kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchProbe {
    /// Back to back from the host.
    Eager,
    /// Captured from the same launches into one CUDA graph, replayed.
    Graph,
    /// One kernel captured into a graph, the graph launched back to back
    /// from the host (a graph per collective).
    GraphEach,
}

/// The launch probe on GPU `gpu`: `kernels` empty kernels (`spin(0)`, one
/// warp) launched as `how` says, between two events, `repeats` times after
/// a warm-up: the per-launch time of each repeat, ns.
pub fn launch_overhead(
    devices: &Devices,
    gpu: usize,
    how: LaunchProbe,
    kernels: usize,
    repeats: usize,
) -> Result<Vec<f64>, HwError> {
    let t = &devices.timeouts;
    let (k, r) = (kernels.max(1), repeats.max(1));
    let what = match how {
        LaunchProbe::Eager => "launch probe (eager)",
        LaunchProbe::Graph => "launch probe (CUDA graph)",
        LaunchProbe::GraphEach => "launch probe (a CUDA graph per kernel)",
    };
    let hang = || {
        driver::poison();
        HwError::Hang {
            what: what.into(),
            algorithm: "spin".into(),
            size: 0,
            ranks: format!("gpu{gpu}"),
            limit_ms: t.watchdog_ms(),
            detail: String::new(),
        }
    };
    let out = devices.par(&[gpu], |_, g, _gate| {
        let s = g.stream();
        let spin = g.func("spin")?;
        let zero: u64 = 0;
        let launches = |n: usize| -> Result<(), HwError> {
            for _ in 0..n {
                // SAFETY: spin(u64 ns) takes no address.
                unsafe { g.launch(spin, 1, 32, s, (&zero,))? };
            }
            Ok(())
        };
        let graph = match how {
            LaunchProbe::Graph => Some(driver::Graph::capture(g, s, || launches(k))?),
            LaunchProbe::GraphEach => Some(driver::Graph::capture(g, s, || launches(1))?),
            LaunchProbe::Eager => None,
        };
        let run = || match (&graph, how) {
            (Some(gr), LaunchProbe::GraphEach) => (0..k).try_for_each(|_| gr.launch(s)),
            (Some(gr), _) => gr.launch(s),
            (None, _) => launches(k),
        };
        run()?;
        if !driver::sync_stream(s, t.watchdog)? {
            return Err(hang());
        }
        let ev = Event::many(g, 2 * r)?;
        for i in 0..r {
            ev[2 * i].record(s)?;
            run()?;
            ev[2 * i + 1].record(s)?;
        }
        if !ev[2 * r - 1].wait(t.watchdog)? {
            return Err(hang());
        }
        (0..r)
            .map(|i| Ok(ev[2 * i].ns_until(&ev[2 * i + 1])? / k as f64))
            .collect::<Result<Vec<f64>, HwError>>()
    })?;
    Ok(out.into_iter().next().unwrap_or_default())
}

fn hang(t: &Timeouts, s: &Spec, what: &str) -> HwError {
    driver::poison();
    HwError::Hang {
        what: what.into(),
        algorithm: s.label().into(),
        size: s.bytes as u64,
        ranks: format!("gpu{} -> {:?}", s.from, s.to),
        limit_ms: t.watchdog_ms(),
        detail: String::new(),
    }
}

/// Runs `specs` together (one thread each, released at once): `warmup`,
/// then `repeats` timed transfers each between two events, then `sync_reps`
/// host-synchronised ones. Ping-pong repeats are `iterations` round trips
/// each and report the time of one round trip.
pub fn run_concurrent(
    devices: &Devices,
    specs: &[Spec],
    warmup: u32,
    repeats: u32,
    sync_reps: u32,
) -> Result<Vec<Measured>, HwError> {
    let bufs: Vec<Bufs> = specs
        .iter()
        .map(|s| alloc(devices, s))
        .collect::<Result<_, _>>()?;
    let gate = Gate::new(specs.len());
    let release = HostMem::alloc(&devices.gpus, 64)?;
    let r = repeats.max(1) as usize;
    let results: Vec<Result<Measured, HwError>> = std::thread::scope(|sc| {
        let handles: Vec<_> = specs
            .iter()
            .zip(&bufs)
            .enumerate()
            .map(|(k, (s, b))| {
                let (gate, release) = (&gate, &release);
                sc.spawn(move || {
                    let out =
                        one_stream(devices, s, b, gate, release, k == 0, warmup, r, sync_reps);
                    if out.is_err() {
                        gate.abort();
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(HwError::Unsupported("a transfer thread panicked".into()))
                })
            })
            .collect()
    });
    release.write_u32(0, 1);
    let mut out = Vec::new();
    for (res, (s, b)) in results.into_iter().zip(specs.iter().zip(&bufs)) {
        check_status(&devices.timeouts, s, b)?;
        out.push(res?);
    }
    Ok(out)
}

/// One stream's measurement. The timed batch is queued behind a `hold`
/// kernel and released for all streams at once (so concurrent streams
/// really overlap, and small transfers run at the GPU's pace rather than
/// the host's enqueue pace).
#[allow(clippy::too_many_arguments)]
fn one_stream(
    devices: &Devices,
    s: &Spec,
    b: &Bufs,
    gate: &Gate,
    release: &HostMem,
    first: bool,
    warmup: u32,
    r: usize,
    sync_reps: u32,
) -> Result<Measured, HwError> {
    let t = &devices.timeouts;
    let g = &devices.gpus[s.from];
    g.bind()?;
    let stream = g.new_stream()?;
    let aux = match (s.op, s.to) {
        (Op::PingPong, Target::Gpu(j)) => Some(devices.gpus[j].new_stream()?),
        _ => None,
    };
    g.bind()?;
    let ping_host = s.op == Op::PingPong && s.to == Target::Host;
    let iters = s.iterations.max(1);
    let total_rounds = (warmup as usize + r + sync_reps as usize) as u32 * iters;
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| -> Result<Measured, HwError> {
        let responder = if ping_host {
            let hf = b
                .host_flags
                .as_ref()
                .ok_or_else(|| HwError::Unsupported("no host flags".into()))?;
            let stop = &stop;
            Some(sc.spawn(move || host_responder(hf, total_rounds, t.kernel, stop)))
        } else {
            None
        };
        let body = || -> Result<Measured, HwError> {
            let mut base = 0u32;
            let next = |b0: &mut u32| {
                let v = *b0;
                *b0 += iters;
                v
            };
            let ev = Event::many(g, r + 1)?;
            let hold = g.func("hold")?;
            let (flag, limit): (u64, u64) = (release.dev[s.from], 1_000_000_000);
            // SAFETY: hold(const u32* flag, u64 timeout_ns) reads one u32 at
            // `flag`: the first word of `release`, host memory mapped into
            // this GPU, which run_concurrent keeps until every stream is done.
            unsafe { g.launch(hold, 1, 32, stream.handle(), (&flag, &limit))? };
            for _ in 0..warmup {
                let bs = next(&mut base);
                enqueue(devices, s, b, stream.handle(), aux.as_ref(), bs)?;
            }
            ev[0].record(stream.handle())?;
            for i in 0..r {
                let bs = next(&mut base);
                enqueue(devices, s, b, stream.handle(), aux.as_ref(), bs)?;
                ev[i + 1].record(stream.handle())?;
            }
            gate.wait()?;
            if first {
                release.write_u32(0, 1);
            }
            if !ev[r].wait(t.watchdog)? {
                return Err(hang(t, s, "timed transfers"));
            }
            let per = if s.op == Op::PingPong {
                f64::from(iters)
            } else {
                1.0
            };
            let d = (0..r)
                .map(|i| ev[i].ns_until(&ev[i + 1]).map(|x| x / per))
                .collect::<Result<Vec<_>, _>>()?;
            let total = ev[0].ns_until(&ev[r])?;
            let mut sync = vec![];
            for _ in 0..sync_reps {
                let bs = next(&mut base);
                let t0 = Instant::now();
                enqueue(devices, s, b, stream.handle(), aux.as_ref(), bs)?;
                if !driver::sync_stream(stream.handle(), t.watchdog)? {
                    return Err(hang(t, s, "host-synchronised transfer"));
                }
                sync.push(t0.elapsed().as_nanos() as f64 / per);
            }
            if let Some(a) = &aux
                && !driver::sync_stream(a.handle(), t.watchdog)?
            {
                return Err(hang(t, s, "ping-pong responder"));
            }
            Ok(Measured {
                per_op_ns: d,
                total_ns: total,
                sync_ns: sync,
            })
        };
        let res = body();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = responder {
            let rr = h
                .join()
                .unwrap_or_else(|_| Err(HwError::Unsupported("host responder panicked".into())));
            res.as_ref().ok().map(|_| rr).transpose()?;
        }
        res
    })
}

/// Sizes from `from` to `to` multiplying by `factor`.
pub fn sizes(from: usize, to: usize, factor: usize) -> Vec<usize> {
    let mut v = vec![];
    let mut x = from;
    while x <= to {
        v.push(x);
        x *= factor.max(2);
    }
    v
}
