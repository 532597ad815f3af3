//! What the `contend hw` commands run: a scenario's workload with the custom
//! kernels, NCCL over the same sizes and ranks, and the probe set
//! (`probe_set.rs`); every
//! result written as a [`ResultRecord`] the moment it is measured.

use crate::allreduce::{self, Collective, Custom, Team, Timing};
use crate::devices::Devices;
use crate::error::{EmulationError, HwError};
use crate::nccl::NcclTeam;
use crate::output::Sink;
use crate::probe::{self, Op, Spec, Target};
use contend_topo::NodeKind;
use contend_workload::{
    Algorithm, Dtype, Extra, GroupTag, LaunchMode, Measured, Placement, ResultRecord, Scenario,
    Source, Stats, TransferOp, Workload, WorkloadKind,
};

mod nccl;
mod probe_set;
mod transfer;
mod verify_step;
pub use nccl::{run_nccl, run_nccl_once};
pub use probe_set::{NCCL_LATENCY_SIZES, PROBE_GROUPS, check_probe_groups, run_probe};
use transfer::{aggregate_line, transfer_line, transfer_record};
use verify_step::{step_delays, verify_modes, verify_step_one};

/// Knobs of a run.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Fewer sizes, block counts and repeats (a smoke test).
    pub quick: bool,
    /// Timed repeats per measurement (default: by size).
    pub repeats: Option<u32>,
    /// Skip allreduce sizes above this many bytes.
    pub max_size: Option<u64>,
    /// `hw run --emulate-ranks N`: run N ranks of the scenario on GPU 0
    /// ([`emulated_ranks`] picks which), each on its own stream with its own
    /// buffers; records are marked emulated.
    pub emulate_ranks: Option<usize>,
    /// `hw probe --only`: the probe groups to run ([`PROBE_GROUPS`]); `None`: all.
    pub probes: Option<Vec<String>>,
}

/// The range `--emulate-ranks` takes: 2 to the kernels' MAX_RANKS.
pub fn check_emulate_ranks(n: usize) -> Result<usize, EmulationError> {
    if (2..=crate::abi::MAX_RANKS).contains(&n) {
        Ok(n)
    } else {
        Err(EmulationError::RankCount { n })
    }
}

/// Which of a scenario's `count` ranks (by position) `n` emulated ranks
/// stand for: spread evenly over the list (`i * count / n`), all of them
/// when `n == count`. Spreading keeps the topology's islands: of 8 GPUs in
/// two islands of 4, 4 emulated ranks are 2 + 2 and 2 are 1 + 1.
pub fn emulated_ranks(count: usize, n: usize) -> Result<Vec<usize>, EmulationError> {
    check_emulate_ranks(n)?;
    if n > count {
        return Err(EmulationError::FewerScenarioRanks { n, count });
    }
    Ok((0..n).map(|i| i * count / n).collect())
}

/// Hardware work queues the driver opens per GPU (`CUDA_DEVICE_MAX_CONNECTIONS`,
/// default 8) before emulated ranks run: with more streams than queues, two
/// ranks' kernels can share a queue, and a kernel spinning on a flag then
/// blocks the very kernel that would set it. 32 (the most) covers
/// MAX_RANKS rank streams and the GPU's own. Call before the driver
/// initialises and before any thread starts; a value already set is kept.
pub fn prepare_emulation_env() {
    crate::driver::set_env_if_unset("CUDA_DEVICE_MAX_CONNECTIONS", "32");
}

/// The scenario the emulated ranks run: `n` of `sc`'s ranks
/// ([`emulated_ranks`]), and their record names (`gpu0/<rank>`).
fn emulated_scenario(sc: &Scenario, n: usize) -> Result<(Scenario, Vec<String>), HwError> {
    if matches!(sc.workload(), Workload::Transfer { .. }) {
        return Err(HwError::Scenario(
            "--emulate-ranks runs allreduce and verify-step workloads, not transfers".into(),
        ));
    }
    let pick = emulated_ranks(sc.ranks().len(), n)?;
    let mut spec = sc.spec();
    spec.ranks = pick.iter().map(|&i| sc.ranks()[i]).collect();
    let sub = Scenario::new(spec).map_err(|e| HwError::Scenario(e.to_string()))?;
    let names = sub
        .rank_names()
        .iter()
        .map(|r| format!("gpu0/{r}"))
        .collect();
    Ok((sub, names))
}

/// A fresh seed for inputs: the scenario's seed mixed with the clock.
fn fresh_seed(base: u64) -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    base ^ t.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15
}

/// Index among the devices of the GPU of each rank: the k-th GPU node of the scenario's topology
/// is CUDA device k.
pub fn rank_gpus(sc: &Scenario, devices: &Devices) -> Result<Vec<usize>, HwError> {
    let gpus = sc.topology().gpus();
    sc.ranks()
        .iter()
        .map(|r| {
            let k = gpus
                .iter()
                .position(|g| g == r)
                .ok_or_else(|| HwError::Scenario("a rank is not a GPU".into()))?;
            if k >= devices.len() {
                return Err(HwError::Unsupported(format!(
                    "scenario `{}` needs GPU {k} ({}) but this machine has {} GPU(s)",
                    sc.name(),
                    sc.topology().node(*r).id.0,
                    devices.len()
                )));
            }
            Ok(k)
        })
        .collect()
}

/// Ranks per group for the hierarchical kernel: the model's groups (same
/// switch, else same socket) when they are equal blocks of consecutive
/// ranks; otherwise 1 (each GPU its own group, the case of a 2-GPU machine
/// under one root complex: then the kernel is a one-shot pull of the
/// inputs, staged through the gather region).
pub fn hierarchical_group(sc: &Scenario) -> u32 {
    match contend_workload::groups(sc.topology(), sc.ranks()) {
        Some(gs) => {
            let g = gs[0].len();
            let consecutive = gs
                .iter()
                .enumerate()
                .all(|(k, grp)| grp.iter().enumerate().all(|(i, &r)| r == k * g + i));
            if consecutive { g as u32 } else { 1 }
        }
        None => 1,
    }
}

#[allow(clippy::too_many_arguments)]
fn record(
    source: Source,
    scenario: &str,
    topology: &str,
    workload: WorkloadKind,
    algorithm: Measured,
    placement: Option<Placement>,
    launch: LaunchMode,
    ranks: Vec<String>,
    size: u64,
    t: &Timing,
    bandwidth: Option<f64>,
    verified: Option<bool>,
    mut extra: Extra,
) -> ResultRecord {
    let stats = Stats::of(&t.per_op_ns);
    if !t.sync_ns.is_empty() {
        let s = Stats::of(&t.sync_ns);
        extra.timing.sync_median_ns = Some(s.median_ns);
        extra.timing.sync_p10_ns = Some(s.p10_ns);
        extra.timing.sync_p90_ns = Some(s.p90_ns);
    }
    ResultRecord {
        source,
        scenario: scenario.into(),
        topology: topology.into(),
        workload,
        algorithm,
        placement,
        fidelity: None,
        launch,
        ranks,
        size_bytes: size,
        total_ns: t.total_ns,
        per_op_ns: t.per_op_ns.clone(),
        stats,
        bandwidth_gbps: bandwidth,
        verified,
        events: None,
        wall_ns: None,
        busiest_link: None,
        machine: None,
        extra,
    }
}

fn us(ns: f64) -> String {
    format!("{:.1} us", ns / 1000.0)
}

/// Handles a failed measurement: fatal errors stop the run, others are noted.
/// Writes a verified allreduce record and says so on the progress line.
fn write_verified(sink: &mut Sink, label: &str, rec: ResultRecord) -> Result<(), HwError> {
    sink.note(&format!(
        "{label}: median {} (p10 {}, p90 {}), verified",
        us(rec.stats.median_ns),
        us(rec.stats.p10_ns),
        us(rec.stats.p90_ns)
    ));
    sink.write(rec)
}

fn soft(sink: &mut Sink, what: &str, e: HwError) -> Result<(), HwError> {
    if e.is_fatal() {
        return Err(e);
    }
    sink.fail(format!("{what}: {e}"));
    Ok(())
}

fn allreduce_sizes(sc: &Scenario, opts: &Options) -> Vec<u64> {
    match sc.workload() {
        Workload::Allreduce { sizes, .. } => {
            let mut v: Vec<u64> = sizes
                .iter()
                .map(|b| b.0)
                .filter(|b| opts.max_size.is_none_or(|m| *b <= m))
                .collect();
            if opts.quick && v.len() > 3 {
                v = vec![v[0], v[v.len() / 2], v[v.len() - 1]];
            }
            v
        }
        _ => vec![],
    }
}

/// `contend hw run`: the scenario's workload with the custom kernels.
pub fn run_scenario(
    devices: &Devices,
    sc: &Scenario,
    sink: &mut Sink,
    opts: &Options,
) -> Result<(), HwError> {
    let emulated;
    let (sc, ids, names) = match opts.emulate_ranks {
        None => (sc, rank_gpus(sc, devices)?, sc.rank_names()),
        Some(n) => {
            let (sub, names) = emulated_scenario(sc, n)?;
            emulated = sub;
            sink.note(&format!(
                "emulating {n} ranks ({}) on GPU 0 ({}, {} SMs): one stream and one set of buffers per rank; timings are marked emulated",
                emulated.rank_names().join(" "),
                devices.gpus[0].name,
                devices.gpus[0].sms
            ));
            (&emulated, vec![0; n], names)
        }
    };
    let algs: Vec<Algorithm> = sc
        .algorithms()
        .iter()
        .copied()
        .filter(|a| a.has_custom_kernel())
        .collect();
    for a in sc.algorithms().iter().filter(|a| !a.has_custom_kernel()) {
        sink.note(&format!(
            "{a}: no kernel of ours (NCCL is its twin: run `contend hw nccl`)"
        ));
    }
    let group = hierarchical_group(sc);
    match sc.workload() {
        Workload::Allreduce { dtype, .. } => {
            let sizes = allreduce_sizes(sc, opts);
            let max = sizes.iter().copied().max().unwrap_or(16) as usize;
            sink.plan((sc.placements().len() * algs.len() * sizes.len()) as u64);
            for &pl in sc.placements() {
                let team = match Team::new(devices, &ids, pl, max, group) {
                    Ok(t) => t,
                    Err(e) => {
                        soft(sink, &format!("{pl} placement"), e)?;
                        continue;
                    }
                };
                for &alg in &algs {
                    let mode = sc.launch_of(alg);
                    if mode != LaunchMode::Eager {
                        sink.note(&format!(
                            "{alg}: allreduce sizes are timed with eager launches (`launch = \"{mode}\"` applies to verify steps)"
                        ));
                    }
                    let c = match Custom::new(&team, alg, *dtype, sc.kernel_of(alg)) {
                        Ok(c) => c,
                        Err(e) => {
                            soft(sink, &format!("{alg} {pl}"), e)?;
                            for _ in &sizes {
                                sink.step(alg.name());
                            }
                            continue;
                        }
                    };
                    let of = SizeRun {
                        source: Source::Hw,
                        measured: Measured::Allreduce(alg),
                        placement: Some(pl),
                        label: format!("{alg} {pl}"),
                        names: &names,
                    };
                    for &size in &sizes {
                        allreduce_record(devices, sc, sink, &c, *dtype, size, opts, &of)?;
                    }
                }
            }
        }
        Workload::VerifyStep(v) => {
            let (size, dtype) = (v.size().0 as usize, &v.dtype);
            let ops = v.allreduces() as usize;
            let delays = step_delays(sc, ops, ids.len(), v.gap, &v.skew);
            let modes: usize = algs.iter().map(|a| verify_modes(sc, *a).len()).sum();
            sink.plan((sc.placements().len() * modes) as u64);
            for &pl in sc.placements() {
                let team = match Team::new(devices, &ids, pl, size, group) {
                    Ok(t) => t,
                    Err(e) => {
                        soft(sink, &format!("{pl} placement"), e)?;
                        continue;
                    }
                };
                for &alg in &algs {
                    let c = match Custom::new(&team, alg, *dtype, sc.kernel_of(alg)) {
                        Ok(c) => c,
                        Err(e) => {
                            soft(sink, &format!("{alg} {pl}"), e)?;
                            continue;
                        }
                    };
                    for mode in verify_modes(sc, alg) {
                        verify_step_one(
                            devices,
                            sc,
                            sink,
                            &c,
                            *dtype,
                            Some(pl),
                            size,
                            ops,
                            &delays,
                            mode,
                            opts,
                            Source::Hw,
                            &names,
                        )?;
                    }
                }
            }
        }
        Workload::Transfer { .. } => {
            let streams = sc.streams();
            let mut specs = vec![];
            let gpus = sc.topology().gpus();
            if streams
                .iter()
                .any(|s| s.start > contend_topo::Picos::ZERO || s.repeat > 1)
            {
                sink.note(
                    "the hardware starts every stream at once and times each one `--repeats` times: `start_us` and `repeat` are the simulator's",
                );
            }
            for st in streams {
                let from = gpus
                    .iter()
                    .position(|g| *g == st.from)
                    .ok_or_else(|| HwError::Scenario("a stream starts at a non-GPU".into()))?;
                let to = match &sc.topology().node(st.to).kind {
                    NodeKind::Gpu(_) => {
                        Target::Gpu(gpus.iter().position(|g| *g == st.to).unwrap_or(0))
                    }
                    _ => Target::Host,
                };
                for k in [from, if let Target::Gpu(j) = to { j } else { from }] {
                    if k >= devices.len() {
                        return Err(HwError::Unsupported(format!(
                            "scenario `{}` needs GPU {k} but this machine has {} GPU(s)",
                            sc.name(),
                            devices.len()
                        )));
                    }
                }
                let op = match st.op {
                    TransferOp::Copy => Op::CopyOut,
                    TransferOp::CopyRead => Op::CopyIn,
                    TransferOp::Load => Op::Load,
                    TransferOp::Store => Op::Store,
                    TransferOp::PingPong => Op::PingPong,
                };
                specs.push(Spec {
                    from,
                    to,
                    op,
                    bytes: st.bytes.0 as usize,
                    kernel: st.kernel,
                    iterations: st.iterations,
                    flags_in_host: false,
                    fenced: false,
                });
            }
            sink.plan(1);
            let (w, r, s) = if opts.quick {
                (1, 5, 3)
            } else {
                (2, opts.repeats.unwrap_or(20), 5)
            };
            let ms = probe::run_concurrent(devices, &specs, w, r, s)?;
            let mut recs = vec![];
            for (st, (spec, m)) in streams.iter().zip(specs.iter().zip(&ms)) {
                let ranks = vec![
                    sc.topology().node(st.from).id.0.clone(),
                    sc.topology().node(st.to).id.0.clone(),
                ];
                let rec = transfer_record(
                    sc.name(),
                    sc.topology_ref(),
                    spec,
                    m,
                    ranks,
                    specs.len(),
                    "scenario",
                );
                sink.note(&transfer_line(&rec));
                recs.push(rec.clone());
                sink.write(rec)?;
            }
            // Aggregates are printed, not written: the records a calibration
            // reads stay one per measured stream.
            for g in sc.pattern_streams() {
                let members: Vec<&ResultRecord> = recs[g.streams.clone()].iter().collect();
                if let Some(a) = ResultRecord::aggregate(&g.label, &members) {
                    sink.note(&aggregate_line(&a));
                }
            }
            sink.step("transfer streams");
        }
    }
    Ok(())
}

/// Whose allreduce a size's record is: the source and what it measured,
/// the placement (ours only), the progress label's start, the ranks.
struct SizeRun<'a> {
    source: Source,
    measured: Measured,
    placement: Option<Placement>,
    label: String,
    names: &'a [String],
}

/// One allreduce size of `c`: measured, its verified record written (a
/// failure that is not fatal noted instead), the progress stepped. Our
/// kernels' records (those with a placement) carry [`custom_extra`] too.
#[allow(clippy::too_many_arguments)]
fn allreduce_record(
    devices: &Devices,
    sc: &Scenario,
    sink: &mut Sink,
    c: &dyn Collective,
    dtype: Dtype,
    size: u64,
    opts: &Options,
    of: &SizeRun<'_>,
) -> Result<(), HwError> {
    let label = format!("{} {size} B", of.label);
    let tag = of.placement.map_or("nccl", |p| p.name());
    match measure_allreduce(devices, c, dtype, tag, size as usize, sc.seed(), opts) {
        Ok((t, seeds)) => {
            let mut extra = Extra::default();
            c.describe(size as usize, &mut extra);
            common_extra(dtype, size, &t, seeds, &mut extra);
            if of.placement.is_some() {
                custom_extra(c, &mut extra);
            }
            let rec = record(
                of.source,
                sc.name(),
                sc.topology_ref(),
                WorkloadKind::Allreduce,
                of.measured,
                of.placement,
                LaunchMode::Eager,
                of.names.to_vec(),
                size,
                &t,
                None,
                Some(true),
                extra,
            );
            write_verified(sink, &label, rec)?;
        }
        Err(e) => soft(sink, &label, e)?,
    }
    sink.step(&label);
    Ok(())
}

/// What only our kernels' records say: the exact check's zero tolerance and
/// the emulation's caveat.
fn custom_extra(c: &dyn Collective, extra: &mut Extra) {
    if c.exact() {
        extra.timing.tolerance = Some(0.0);
    }
    if extra.kernel.emulated == Some(true)
        && let Some(t) = &mut extra.timing.timing
    {
        t.push_str("; emulated: every rank on one GPU, each on its own stream, so these are not the timings of a machine with that many GPUs");
    }
}

fn common_extra(dtype: Dtype, size: u64, t: &Timing, seeds: Vec<u64>, extra: &mut Extra) {
    let med = Stats::of(&t.per_op_ns).median_ns;
    let tf = &mut extra.timing;
    tf.dtype = Some(dtype);
    tf.repeats = Some(t.per_op_ns.len() as u32);
    tf.algbw_gbps = Some(if med > 0.0 { size as f64 / med } else { 0.0 });
    tf.tolerance = Some(crate::verify::tolerance(dtype));
    tf.batch_ops = Some(t.batch_ops as u32);
    tf.batch_mean_ns = Some(if t.batch_ops > 0 {
        t.total_ns / t.batch_ops as f64
    } else {
        0.0
    });
    tf.seeds = Some(seeds);
    tf.timing = Some("per_op_ns/stats: CUDA events between every two of a held batch of back-to-back eager launches, slowest rank; total_ns: a held batch of batch_ops launches with events only at its ends (batch_mean_ns = total_ns / batch_ops); sync_*: host clock around launch + wait on every rank".into());
}

/// Verify (fresh inputs), time, verify again (fresh inputs: catches stale
/// data left by the timed runs).
fn measure_allreduce(
    devices: &Devices,
    c: &dyn Collective,
    dtype: Dtype,
    placement: &str,
    size: usize,
    seed: u64,
    opts: &Options,
) -> Result<(Timing, Vec<u64>), HwError> {
    let (mut w, mut r, mut s) = allreduce::default_repeats(size);
    if let Some(x) = opts.repeats {
        r = x;
    }
    if opts.quick {
        (w, r, s) = (3, r.min(20), s.min(5));
    }
    let s1 = fresh_seed(seed);
    allreduce::verify_once(devices, c, dtype, placement, size, s1)?;
    let t = allreduce::time(devices, c, size, w, r, s)?;
    let s2 = fresh_seed(seed ^ 0x5555);
    allreduce::verify_once(devices, c, dtype, placement, size, s2)?;
    Ok((t, vec![s1, s2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emulated_ranks_spread_over_the_scenario_and_keep_its_islands() {
        assert_eq!(emulated_ranks(8, 8), Ok((0..8).collect::<Vec<_>>()));
        assert_eq!(emulated_ranks(8, 4), Ok(vec![0, 2, 4, 6]));
        assert_eq!(emulated_ranks(8, 2), Ok(vec![0, 4]));
        assert_eq!(emulated_ranks(2, 2), Ok(vec![0, 1]));
        assert_eq!(emulated_ranks(6, 4), Ok(vec![0, 1, 3, 4]));
        let e = emulated_ranks(4, 8).unwrap_err();
        assert_eq!(e, EmulationError::FewerScenarioRanks { n: 8, count: 4 });
        assert!(e.to_string().contains("the scenario has 4 rank(s)"), "{e}");
        for n in [0, 1, 9] {
            assert!(check_emulate_ranks(n).is_err(), "{n}");
            assert!(emulated_ranks(16, n).is_err(), "{n}");
        }
        // on the emulate scenario's two switches of four: islands of 1, 2, 4
        let sc = contend_workload::load_scenario(
            std::path::Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../scenarios/hw-emulate.toml"
            )),
            None,
        )
        .unwrap();
        for (n, group) in [(2, 1), (4, 2), (8, 4)] {
            let (sub, names) = emulated_scenario(&sc, n).unwrap();
            assert_eq!(names.len(), n);
            assert!(names[0].starts_with("gpu0/"), "{names:?}");
            assert_eq!(hierarchical_group(&sub), group, "{n} ranks");
        }
    }
}
