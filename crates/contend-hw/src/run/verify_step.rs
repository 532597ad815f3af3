//! A verify step on the hardware: the step's gaps and skew drawn as the
//! simulator draws them, the launch modes each algorithm is timed with, and
//! one timed, verified step written as a record (custom kernels and NCCL
//! alike).

use super::*;

pub(super) fn step_delays(
    sc: &Scenario,
    ops: usize,
    n: usize,
    gap: contend_topo::Picos,
    skew: &contend_workload::Skew,
) -> Vec<Vec<u64>> {
    let s = skew.sample(sc.seed(), ops, n);
    s.iter()
        .map(|row| row.iter().map(|p| (gap.0 + p.0) / 1000).collect())
        .collect()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn verify_step_one(
    devices: &Devices,
    sc: &Scenario,
    sink: &mut Sink,
    c: &dyn Collective,
    dtype: Dtype,
    pl: Option<Placement>,
    size: usize,
    ops: usize,
    delays: &[Vec<u64>],
    mode: LaunchMode,
    opts: &Options,
    source: Source,
    names: &[String],
) -> Result<(), HwError> {
    let label = format!(
        "verify step {} {} {mode}",
        c.algorithm(),
        pl.map_or("-", |p| p.name())
    );
    let reps = opts.repeats.unwrap_or(if opts.quick { 5 } else { 30 });
    let seed = fresh_seed(sc.seed());
    match allreduce::verify_step(
        devices,
        c,
        dtype,
        pl.map_or("nccl", |p| p.name()),
        size,
        delays,
        mode,
        2,
        reps,
        seed,
    ) {
        Ok(t) => {
            let med = Stats::of(&t.per_op_ns).median_ns;
            let mut extra = Extra::default();
            c.describe(size, &mut extra);
            let tf = &mut extra.timing;
            tf.dtype = Some(dtype);
            tf.allreduces = Some(ops as u32);
            tf.per_allreduce_median_ns = Some(med / ops.max(1) as f64);
            tf.repeats = Some(t.per_op_ns.len() as u32);
            tf.seed = Some(seed);
            tf.gap_and_skew = Some(delays.iter().flatten().any(|d| *d > 0));
            tf.timing = Some("per_op_ns: one whole verify step per entry (CUDA events around the step), slowest rank; total_ns: median step".into());
            if source == Source::Hw {
                custom_extra(c, &mut extra);
            }
            let mut t2 = t.clone();
            t2.total_ns = med;
            let rec = record(
                source,
                sc.name(),
                sc.topology_ref(),
                WorkloadKind::VerifyStep,
                c.algorithm(),
                pl,
                mode,
                names.to_vec(),
                size as u64,
                &t2,
                None,
                Some(true),
                extra,
            );
            sink.note(&format!(
                "{label}: step median {} ({} per allreduce), verified",
                us(med),
                us(med / ops.max(1) as f64)
            ));
            sink.write(rec)?;
        }
        Err(e) => soft(sink, &label, e)?,
    }
    sink.step(&label);
    Ok(())
}

/// The launch modes a verify step is measured with: the algorithm's own
/// `launch` where the scenario gives one, else both (eager and CUDA graph).
pub(super) fn verify_modes(sc: &Scenario, alg: Algorithm) -> Vec<LaunchMode> {
    match sc.algorithm_config(alg).and_then(|c| c.launch) {
        Some(m) => vec![m],
        None => vec![LaunchMode::Eager, LaunchMode::Graph],
    }
}
