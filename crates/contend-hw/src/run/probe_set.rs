//! The probe set of `contend hw probe` ([`run_probe`]): the
//! microbenchmarks calibration fits on, in the groups `--only` picks
//! from ([`PROBE_GROUPS`]), each result written the moment it is
//! measured.

use super::{common_extra, measure_allreduce, record, soft, transfer_line, transfer_record, us};
use crate::Options;
use crate::allreduce::{Collective, Timing};
use crate::devices::Devices;
use crate::error::{HwError, UnknownProbeGroup};
use crate::nccl::NcclTeam;
use crate::output::Sink;
use crate::probe::{self, LaunchProbe, Op, Spec, Target};
use contend_workload::{
    Dtype, Extra, KernelConfig, LaunchMode, Measured, ProbeOp, Source, WorkloadKind,
};

/// The groups of `contend hw probe`, in the order they run.
pub const PROBE_GROUPS: [&str; 7] = [
    "copy",
    "sm-vs-blocks",
    "sm-load-vs-size",
    "ping-pong",
    "concurrent",
    "launch",
    "nccl-latency",
];

/// Checks a `--only` list against [`PROBE_GROUPS`].
pub fn check_probe_groups(v: &[String]) -> Result<(), UnknownProbeGroup> {
    match v.iter().find(|g| !PROBE_GROUPS.contains(&g.as_str())) {
        Some(g) => Err(UnknownProbeGroup { group: g.clone() }),
        None => Ok(()),
    }
}

impl Options {
    /// Whether `hw probe` runs the job group `group` (`ping-pong-fenced`
    /// belongs to `ping-pong`, `concurrent-host` to `concurrent`).
    fn probes(&self, group: &str) -> bool {
        self.probes
            .as_ref()
            .is_none_or(|v| v.iter().any(|g| group.starts_with(g.as_str())))
    }
}

/// `contend hw probe`: the microbenchmarks calibration needs.
pub fn run_probe(devices: &Devices, sink: &mut Sink, opts: &Options) -> Result<(), HwError> {
    let n = devices.len();
    let names: Vec<String> = (0..n).map(|i| format!("gpu{i}")).collect();
    let host = "host".to_string();
    let q = opts.quick;
    let copy_sizes = if q {
        vec![4 << 10, 1 << 20, 64 << 20]
    } else {
        probe::sizes(4 << 10, 256 << 20, 4)
    };
    let big = if q { 64 << 20 } else { 256 << 20 };
    let threads = 512;
    let sms = devices.gpus[0].sms.max(1);
    let block_counts: Vec<u32> = if q {
        vec![8, sms]
    } else {
        vec![1, 2, 4, 8, 16, 32, sms / 2, sms, 2 * sms, 4 * sms, 8 * sms]
    };
    let (w, r, s) = if q {
        (1, 5, 3)
    } else {
        (2, opts.repeats.unwrap_or(20), 10)
    };
    let peer = (n >= 2 && devices.p2p[0][1].access).then_some(1usize);
    let kc = |blocks| KernelConfig { blocks, threads };
    let mut jobs: Vec<(String, Vec<Spec>)> = vec![];
    let one = |op, to, bytes, blocks| Spec {
        from: 0,
        to,
        op,
        bytes,
        kernel: kc(blocks),
        iterations: 1000,
        flags_in_host: false,
        fenced: false,
    };
    // 1. Copy engines per direction and size.
    for &b in &copy_sizes {
        jobs.push(("copy".into(), vec![one(Op::CopyIn, Target::Host, b, 1)]));
        jobs.push(("copy".into(), vec![one(Op::CopyOut, Target::Host, b, 1)]));
        if let Some(p) = peer {
            jobs.push(("copy".into(), vec![one(Op::CopyOut, Target::Gpu(p), b, 1)]));
        }
    }
    // 2. SM loads and stores vs blocks, per target.
    let mut targets = vec![Target::Gpu(0), Target::Host];
    if let Some(p) = peer {
        targets.insert(1, Target::Gpu(p));
    }
    for &t in &targets {
        for op in [Op::Load, Op::Store] {
            for &bl in &block_counts {
                jobs.push(("sm-vs-blocks".into(), vec![one(op, t, big, bl)]));
            }
        }
    }
    // 3. SM loads vs size (host and peer), one block per SM.
    for &t in targets.iter().filter(|t| **t != Target::Gpu(0)) {
        for &b in &copy_sizes {
            jobs.push(("sm-load-vs-size".into(), vec![one(Op::Load, t, b, sms)]));
        }
    }
    // 4. Flag round trips.
    if let Some(p) = peer {
        jobs.push((
            "ping-pong".into(),
            vec![Spec {
                iterations: 1000,
                ..one(Op::PingPong, Target::Gpu(p), 4, 1)
            }],
        ));
        // with the barriers' fences: what a system fence costs
        jobs.push((
            "ping-pong-fenced".into(),
            vec![Spec {
                iterations: 1000,
                fenced: true,
                ..one(Op::PingPong, Target::Gpu(p), 4, 1)
            }],
        ));
        jobs.push((
            "ping-pong".into(),
            vec![Spec {
                iterations: 1000,
                flags_in_host: true,
                ..one(Op::PingPong, Target::Gpu(p), 4, 1)
            }],
        ));
    }
    jobs.push((
        "ping-pong".into(),
        vec![Spec {
            iterations: 1000,
            ..one(Op::PingPong, Target::Host, 4, 1)
        }],
    ));
    // 5. Several GPUs at once on host memory (and both directions of the peer link).
    if n >= 2 {
        let all = |op, to: &dyn Fn(usize) -> Target, blocks| {
            (0..n)
                .map(|g| Spec {
                    from: g,
                    to: to(g),
                    op,
                    bytes: big,
                    kernel: kc(blocks),
                    iterations: 1,
                    flags_in_host: false,
                    fenced: false,
                })
                .collect::<Vec<_>>()
        };
        jobs.push((
            "concurrent-host".into(),
            all(Op::Load, &|_| Target::Host, sms),
        ));
        jobs.push((
            "concurrent-host".into(),
            all(Op::Store, &|_| Target::Host, sms),
        ));
        jobs.push((
            "concurrent-host".into(),
            all(Op::CopyIn, &|_| Target::Host, 1),
        ));
        jobs.push((
            "concurrent-host".into(),
            all(Op::CopyOut, &|_| Target::Host, 1),
        ));
        if peer.is_some() {
            jobs.push((
                "concurrent-peer".into(),
                all(Op::Load, &|g| Target::Gpu((g + 1) % n), sms),
            ));
        }
    }
    jobs.retain(|(g, _)| opts.probes(g));
    let extra_steps = if opts.probes("launch") { 2 } else { 0 }
        + if opts.probes("nccl-latency") {
            NCCL_LATENCY_SIZES.len()
        } else {
            0
        };
    sink.plan((jobs.len() + extra_steps) as u64);
    for (group, specs) in jobs {
        let label = format!("{group}: {} {} B", specs[0].label(), specs[0].bytes);
        match probe::run_concurrent(devices, &specs, w, r, s) {
            Ok(ms) => {
                let mut agg = 0.0;
                for (spec, m) in specs.iter().zip(&ms) {
                    let to = match spec.to {
                        Target::Host => host.clone(),
                        Target::Gpu(j) => names[j].clone(),
                    };
                    let rec = transfer_record(
                        "probe",
                        "live",
                        spec,
                        m,
                        vec![names[spec.from].clone(), to],
                        specs.len(),
                        &group,
                    );
                    agg += rec.bandwidth_gbps.unwrap_or(0.0);
                    sink.note(&transfer_line(&rec));
                    sink.write(rec)?;
                }
                if specs.len() > 1 {
                    sink.note(&format!(
                        "  {group} {}: {} streams, {agg:.1} GB/s together",
                        specs[0].label(),
                        specs.len()
                    ));
                }
            }
            Err(e) => soft(sink, &label, e)?,
        }
        sink.step(&label);
    }
    // 6. Kernel launches on GPU 0: back to back, as one CUDA graph, and as
    // a graph of one kernel launched per call.
    let lr = if q { 5 } else { 20 };
    let launches = if opts.probes("launch") {
        vec![
            (LaunchProbe::Eager, ProbeOp::LaunchEager),
            (LaunchProbe::Graph, ProbeOp::LaunchGraph),
            (LaunchProbe::GraphEach, ProbeOp::LaunchGraphEach),
        ]
    } else {
        vec![]
    };
    for (how, op) in launches {
        let label = format!("launch: {} x{}", op.name(), probe::LAUNCH_KERNELS);
        match probe::launch_overhead(devices, 0, how, probe::LAUNCH_KERNELS, lr) {
            Ok(per) => {
                let t = Timing {
                    total_ns: per.iter().sum::<f64>() * probe::LAUNCH_KERNELS as f64,
                    per_op_ns: per,
                    sync_ns: vec![],
                    batch_ops: 0,
                };
                let mut extra = Extra::default();
                extra.timing.batch_ops = Some(probe::LAUNCH_KERNELS as u32);
                extra.timing.repeats = Some(lr as u32);
                extra.timing.timing = Some(format!(
                    "per_op_ns: per launch, {} empty kernels (spin(0), 1 x 32) {} between two events, per repeat",
                    probe::LAUNCH_KERNELS,
                    match how {
                        LaunchProbe::Graph => "replayed as one CUDA graph",
                        LaunchProbe::GraphEach =>
                            "each captured as a one-kernel CUDA graph, the graph launched back to back from the host",
                        LaunchProbe::Eager => "launched back to back from the host",
                    }
                ));
                let rec = record(
                    Source::Hw,
                    "probe",
                    "live",
                    WorkloadKind::Transfer,
                    Measured::Probe(op),
                    None,
                    match how {
                        LaunchProbe::Eager => LaunchMode::Eager,
                        LaunchProbe::Graph | LaunchProbe::GraphEach => LaunchMode::Graph,
                    },
                    vec![names[0].clone()],
                    0,
                    &t,
                    None,
                    None,
                    extra,
                );
                sink.note(&format!("{label}: {} per launch", us(rec.stats.median_ns)));
                sink.write(rec)?;
            }
            Err(e) => soft(sink, &label, e)?,
        }
        sink.step(&label);
    }
    // 7. NCCL's latency at sizes below any sweep, over every GPU.
    if opts.probes("nccl-latency") {
        nccl_latency_probe(devices, sink, opts, &names)?;
    }
    Ok(())
}

/// Sizes of NCCL's latency probe, bytes of fp32: below the held-out sweeps
/// (which start at 1 KiB), so the fit and the held-out points never share one.
pub const NCCL_LATENCY_SIZES: [u64; 4] = [4, 16, 64, 256];

/// `nccl-latency`: NCCL's allreduce of a few bytes over every GPU of the
/// machine, timed like the sweeps; says so and moves on when NCCL is missing.
fn nccl_latency_probe(
    devices: &Devices,
    sink: &mut Sink,
    opts: &Options,
    names: &[String],
) -> Result<(), HwError> {
    if !crate::nccl::nccl_present() {
        sink.note(&format!("nccl-latency: skipped: {}", HwError::NoNccl));
        return Ok(());
    }
    let ids: Vec<usize> = (0..devices.len()).collect();
    let max = *NCCL_LATENCY_SIZES.iter().max().unwrap_or(&4) as usize;
    let team = match NcclTeam::new(devices, &ids, max, Dtype::Fp32) {
        Ok(t) => t,
        Err(e) => return soft(sink, "nccl-latency", e),
    };
    for &size in &NCCL_LATENCY_SIZES {
        let label = format!("nccl-latency {size} B x{} GPUs", ids.len());
        match measure_allreduce(devices, &team, Dtype::Fp32, "nccl", size as usize, 1, opts) {
            Ok((t, seeds)) => {
                let mut extra = Extra::default();
                team.describe(size as usize, &mut extra);
                common_extra(Dtype::Fp32, size, &t, seeds, &mut extra);
                let rec = record(
                    Source::Nccl,
                    "probe",
                    "live",
                    WorkloadKind::Allreduce,
                    Measured::Probe(ProbeOp::NcclLatency),
                    None,
                    LaunchMode::Eager,
                    names.to_vec(),
                    size,
                    &t,
                    None,
                    Some(true),
                    extra,
                );
                sink.note(&format!("{label}: {}", us(rec.stats.median_ns)));
                sink.write(rec)?;
            }
            Err(e) => soft(sink, &label, e)?,
        }
        sink.step(&label);
    }
    Ok(())
}
