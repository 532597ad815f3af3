//! The simulated time of an allreduce at a size too large to simulate
//! slice by slice.
//!
//! A ring cuts every chunk (size / ranks) into slices of
//! `ModelParams.ring` (512 KiB Simple, 16 KiB LL) and its program holds
//! 2(N-1) steps of them per rank: an 8 GiB allreduce over 16 ranks is
//! 32,768 LL slices per chunk, a million posts per rank, and the run's
//! events and memory grow with it (measured before this file existed:
//! `contend calibrate` on a 16-GPU nccl-tests log up to 8 GiB sat at
//! "pairing" for over 10 minutes at 1.6-4.1 GB resident).
//!
//! Past [`MAX_DIRECT_SLICES`] slices per chunk the ring's pipeline is full:
//! each further slice of every chunk adds the same time, so the time is
//! affine in the size. The twin then simulates the two sizes where a chunk
//! is exactly [`MAX_DIRECT_SLICES`] / 2 and [`MAX_DIRECT_SLICES`] slices
//! and extends the line through them to the size asked for.
//! [`direct_time`] is the reference (every slice simulated); the tests
//! hold the two together. Algorithms that do not slice (one-shot, two-shot,
//! the copy-engine ring...) move each chunk as one transfer and are always
//! simulated directly.

use contend_sim::{ModelParams, RunSpec, simulate_one};
use contend_topo::Bytes;
use contend_workload::{
    Algorithm, Fidelity, Placement, ResultRecord, Scenario, Workload, ring_slices,
};

/// Slices per chunk up to which a ring is simulated slice by slice.
pub const MAX_DIRECT_SLICES: u64 = 64;

/// How a collective's time is taken from its run.
pub(crate) type Metric = fn(&ResultRecord) -> f64;

/// The time of `alg` at `size` on the scenario's ranks, every slice
/// simulated (the reference).
pub fn direct_time(
    sc: &Scenario,
    params: &ModelParams,
    alg: Algorithm,
    placement: Placement,
    fidelity: Fidelity,
    size: Bytes,
    metric: Metric,
) -> Result<f64, String> {
    let sc = at_sizes(sc, &[size])?;
    let spec = RunSpec {
        algorithm: Some(alg),
        placement,
        fidelity,
        size: Some(size),
    };
    let run = simulate_one(&sc, params, spec).map_err(|e| e.to_string())?;
    Ok(metric(run.record()))
}

/// The sizes the line is drawn through for `alg` on `ranks` ranks, or
/// `None` when `size` is simulated directly (not a ring, or at most
/// `max_slices` slices per chunk).
pub fn extrapolation_sizes(
    params: &ModelParams,
    alg: Algorithm,
    ranks: usize,
    size: Bytes,
    max_slices: u64,
) -> Option<(Bytes, Bytes)> {
    let slice = params.ring.config().slice_of(alg)?;
    let max_slices = max_slices.max(2) & !1;
    if ring_slices(size, ranks, slice) <= max_slices {
        return None;
    }
    // whole slices in every chunk: the two runs are on the line
    let unit = slice.0.max(16).checked_mul(ranks as u64)?;
    let hi = unit.checked_mul(max_slices)?;
    Some((Bytes(hi / 2), Bytes(hi)))
}

/// The time of `alg` at `size`: simulated directly, or for a ring past
/// `max_slices` slices per chunk, extended from the two sizes of
/// [`extrapolation_sizes`].
#[allow(clippy::too_many_arguments)]
pub fn allreduce_time(
    sc: &Scenario,
    params: &ModelParams,
    alg: Algorithm,
    placement: Placement,
    fidelity: Fidelity,
    size: Bytes,
    metric: Metric,
    max_slices: u64,
) -> Result<f64, String> {
    let Some((lo, hi)) = extrapolation_sizes(params, alg, sc.ranks().len(), size, max_slices)
    else {
        return direct_time(sc, params, alg, placement, fidelity, size, metric);
    };
    let t_lo = direct_time(sc, params, alg, placement, fidelity, lo, metric)?;
    let t_hi = direct_time(sc, params, alg, placement, fidelity, hi, metric)?;
    let per_byte = (t_hi - t_lo) / (hi.0 - lo.0) as f64;
    Ok(t_hi + per_byte * (size.0 - hi.0) as f64)
}

/// The scenario with its allreduce workload at `sizes` (other workloads
/// are returned as they are).
fn at_sizes(sc: &Scenario, sizes: &[Bytes]) -> Result<Scenario, String> {
    match sc.workload() {
        Workload::Allreduce {
            sizes: now,
            dtype,
            repeats,
            gap,
            skew,
        } => {
            if now.as_slice() == sizes {
                return Ok(sc.clone());
            }
            sc.with_workload(Workload::Allreduce {
                sizes: sizes.to_vec(),
                dtype: *dtype,
                repeats: *repeats,
                gap: *gap,
                skew: skew.clone(),
            })
            .map_err(|e| e.to_string())
        }
        _ => Ok(sc.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_topo::{Picos, shipped};
    use contend_workload::{Dtype, ScenarioSpec, Skew};

    fn scenario(topo: &str, ranks: usize) -> Scenario {
        let t = shipped::get(topo).unwrap().unwrap();
        let workload = Workload::Allreduce {
            sizes: vec![Bytes::kib(64)],
            dtype: Dtype::Bf16,
            repeats: 2,
            gap: Picos::ZERO,
            skew: Skew::None,
        };
        Scenario::new(ScenarioSpec {
            ranks: t.gpus()[..ranks].to_vec(),
            ..ScenarioSpec::new("large", t, workload)
        })
        .unwrap()
    }

    fn median(r: &ResultRecord) -> f64 {
        r.stats.median_ns
    }

    #[test]
    fn only_rings_past_the_slice_count_are_extended() {
        let p = ModelParams::default();
        assert_eq!(
            extrapolation_sizes(&p, Algorithm::OneShotPush, 8, Bytes(8 << 30), 64),
            None
        );
        // 8 ranks x 64 slices of 16 KiB: 8 MiB is still direct
        assert_eq!(
            extrapolation_sizes(&p, Algorithm::RingLl, 8, Bytes(8 << 20), 64),
            None
        );
        assert_eq!(
            extrapolation_sizes(&p, Algorithm::RingLl, 8, Bytes(8 << 30), 64),
            Some((Bytes(4 << 20), Bytes(8 << 20)))
        );
    }

    /// The line through two sizes predicts what simulating every slice
    /// gives, for both ring protocols, on a switch and on two sockets,
    /// within 2 % (the threshold lowered so the reference stays cheap).
    #[test]
    fn extended_rings_agree_with_the_reference() {
        let p = ModelParams::default();
        for (topo, ranks) in [("pro6000-8x-2switch", 8), ("pro6000-8x-2socket", 4)] {
            let sc = scenario(topo, ranks);
            for (alg, size) in [
                (Algorithm::RingLl, Bytes(ranks as u64 * 16 * (16 << 10))),
                (
                    Algorithm::RingSimple,
                    Bytes(ranks as u64 * 24 * (512 << 10)),
                ),
            ] {
                let fid = Fidelity::Flow;
                let reference =
                    direct_time(&sc, &p, alg, Placement::Peer, fid, size, median).unwrap();
                let fast =
                    allreduce_time(&sc, &p, alg, Placement::Peer, fid, size, median, 8).unwrap();
                assert!(
                    extrapolation_sizes(&p, alg, ranks, size, 8).is_some(),
                    "{topo} {alg}: the test must exercise the line"
                );
                let err = (fast / reference - 1.0).abs();
                assert!(
                    err < 0.02,
                    "{topo} {alg} {size}: extended {fast} vs simulated {reference} ns ({:.2} %)",
                    err * 100.0
                );
            }
        }
    }
}
