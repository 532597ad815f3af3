//! `contend hw nccl`: NCCL as the baseline, over the same sizes and ranks
//! as the custom kernels, and the decision capture that runs before it.

use super::*;

/// The sizes `contend hw nccl` runs for the scenario, and their element type.
fn nccl_sizes(sc: &Scenario, opts: &Options) -> Result<(Vec<u64>, Dtype), HwError> {
    match sc.workload() {
        Workload::Allreduce { dtype, .. } => Ok((allreduce_sizes(sc, opts), *dtype)),
        Workload::VerifyStep(v) => Ok((vec![v.size().0], v.dtype)),
        Workload::Transfer { .. } => Err(HwError::Scenario(
            "NCCL runs allreduce and verify-step workloads, not transfers".into(),
        )),
    }
}

/// The decision capture of `contend hw nccl` (run in a process of its own
/// under [`crate::nccl::capture_env`]): one checked NCCL allreduce of each
/// size the timed run will take, untimed, so NCCL's INFO log holds its
/// init decisions and one per-call line per size.
pub fn run_nccl_once(devices: &Devices, sc: &Scenario, opts: &Options) -> Result<(), HwError> {
    let ids = rank_gpus(sc, devices)?;
    let (sizes, dtype) = nccl_sizes(sc, opts)?;
    let max = sizes.iter().copied().max().unwrap_or(16) as usize;
    let team = NcclTeam::new(devices, &ids, max, dtype)?;
    for &size in &sizes {
        allreduce::verify_once(devices, &team, dtype, "nccl", size as usize, sc.seed())?;
    }
    Ok(())
}

/// `contend hw nccl`: NCCL's allreduce over the scenario's sizes and ranks
/// (an allreduce or verify-step workload); `decisions`, NCCL's own log of
/// a capture pass, puts each call's decisions into its record.
pub fn run_nccl(
    devices: &Devices,
    sc: &Scenario,
    sink: &mut Sink,
    opts: &Options,
    decisions: Option<&contend_nccl::log::NcclLog>,
) -> Result<(), HwError> {
    let ids = rank_gpus(sc, devices)?;
    let names = sc.rank_names();
    if sc.nccl().caller == contend_workload::NcclCaller::Torch {
        sink.note(
            "nccl: called through NCCL's C API here; `[nccl] caller = \"torch\"` (torch.distributed's host path per call) is the simulator's, so these times leave it out",
        );
    }
    match sc.workload() {
        Workload::Allreduce { dtype, .. } => {
            let sizes = allreduce_sizes(sc, opts);
            let max = sizes.iter().copied().max().unwrap_or(16) as usize;
            let mut team = NcclTeam::new(devices, &ids, max, *dtype)?;
            team.decisions = decisions.cloned();
            sink.note(&format!(
                "NCCL {} with {}",
                team.version,
                crate::nccl::nccl_env()
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
            sink.plan(sizes.len() as u64);
            let of = SizeRun {
                source: Source::Nccl,
                measured: Measured::NCCL,
                placement: None,
                label: "nccl".into(),
                names: &names,
            };
            for &size in &sizes {
                allreduce_record(devices, sc, sink, &team, *dtype, size, opts, &of)?;
            }
        }
        Workload::VerifyStep(v) => {
            let (size, dtype) = (v.size().0 as usize, &v.dtype);
            let ops = v.allreduces() as usize;
            let delays = step_delays(sc, ops, ids.len(), v.gap, &v.skew);
            let mut team = NcclTeam::new(devices, &ids, size, *dtype)?;
            team.decisions = decisions.cloned();
            sink.plan(2);
            for mode in [LaunchMode::Eager, LaunchMode::Graph] {
                verify_step_one(
                    devices,
                    sc,
                    sink,
                    &team,
                    *dtype,
                    None,
                    size,
                    ops,
                    &delays,
                    mode,
                    opts,
                    Source::Nccl,
                    &names,
                )?;
            }
        }
        Workload::Transfer { .. } => {
            return Err(HwError::Scenario(
                "NCCL runs allreduce and verify-step workloads, not transfers".into(),
            ));
        }
    }
    Ok(())
}
