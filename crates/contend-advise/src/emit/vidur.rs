//! Vidur's collective profile (microsoft/vidur
//! `data/profiling/network/<device>/all_reduce.csv` @e26eb8f, read with
//! pandas by `vidur/execution_time_predictor/sklearn_execution_time_predictor.py`
//! @16525b6): an unnamed index column, then
//! `time_stats.all_reduce.{min,max,mean,median,std}` in milliseconds, `rank`,
//! `num_workers`, `size` (bytes), `collective` (`all_reduce`),
//! `devices_per_node`, `max_devices_per_node`; the predictor keeps the rows
//! whose `num_workers` and `devices_per_node` are the tensor-parallel size.
//! pandas has no comment lines by default, so each row's comment is one more
//! column, `contend`, which the predictor does not read.

use super::{Candidate, EmitOptions, at, predict};
use crate::predict::algorithms;
use contend_fit::fit::Progress;
use contend_import::CalibError;
use contend_sim::ModelParams;
use contend_topo::Topology;
use contend_workload::{Algorithm, LaunchMode};
use std::fmt::Write as _;

/// The header Vidur's files have, and the comment column.
pub const HEADER: &str = ",time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,time_stats.all_reduce.median,time_stats.all_reduce.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node,contend";

pub fn vidur(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    let n = topo.gpus().len();
    let worlds: Vec<usize> = (2..=n).collect();
    let t = predict(
        topo,
        params,
        opts.placement,
        LaunchMode::Eager,
        &worlds,
        &opts.sizes,
        &algorithms(&[Algorithm::Nccl]),
        progress,
    )?;
    let mut s = String::new();
    let _ = writeln!(s, "{HEADER}");
    let mut i = 0;
    for &k in &worlds {
        for &z in &opts.sizes {
            let Some(ns) = at(&t, k, z, Candidate::Algorithm(Algorithm::Nccl)) else {
                continue;
            };
            let ms = ns / 1e6;
            let _ = writeln!(
                s,
                "{i},{ms},{ms},{ms},{ms},0.0,0,{k},{z},all_reduce,{k},{n},\"{}: NCCL allreduce of {z} B on {k} of {}, predicted median {:.1} us (min/max/mean are the median, std not modelled)\"",
                opts.stamp,
                topo.name.replace('"', "'"),
                ns / 1e3
            );
            i += 1;
        }
    }
    Ok(s)
}
