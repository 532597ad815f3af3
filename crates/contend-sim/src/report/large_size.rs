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

use crate::params::ModelParams;
use crate::run::{RunSpec, SimError, simulate_one};
use contend_topo::Bytes;
use contend_workload::{
    Algorithm, Fidelity, Placement, ResultRecord, Scenario, ScenarioError, Workload, ring_slices,
};

/// Why a large-size time could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LargeSizeError {
    /// A size the line is drawn through did not simulate.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The scenario at the sizes the line is drawn through is not valid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// Slices per chunk up to which a ring is simulated slice by slice.
pub const MAX_DIRECT_SLICES: u64 = 8;

/// Loops per channel (ring) or chunks (tree) up to which NCCL's own
/// allreduce is simulated directly: past them its line is drawn through
/// one and two whole loops of every channel (on 16 ranks with NCCL's
/// 4 channels and 2 MiB Simple chunks, 128 and 256 MiB).
pub const MAX_DIRECT_NCCL_LOOPS: u64 = 2;

/// How a collective's time is taken from its run.
pub type Metric = fn(&ResultRecord) -> f64;

/// The time of `alg` at `size` on the scenario's ranks, every slice
/// simulated, remembered for the last few sets of constants a fit tried
/// (a private memo): a fit evaluation whose twins extend their lines
/// through the same two sizes simulates them once.
#[allow(clippy::too_many_arguments)]
pub fn direct_time(
    sc: &Scenario,
    params: &ModelParams,
    alg: Algorithm,
    placement: Placement,
    fidelity: Fidelity,
    size: Bytes,
    metric: Metric,
) -> Result<f64, LargeSizeError> {
    // everything the run depends on but the scenario's own size list
    let shape = match sc.workload() {
        Workload::Allreduce {
            dtype,
            repeats,
            gap,
            skew,
            ..
        } => format!("{dtype}|{repeats}|{gap:?}|{skew:?}"),
        other => format!("{other:?}"),
    };
    let key = format!(
        "{}|{:?}|{alg}|{placement}|{fidelity}|{}|{:?}|{:?}|{}|{shape}|{}|{:p}",
        sc.topology().name,
        sc.ranks(),
        size.0,
        sc.launch_of(alg),
        sc.kernel_of(alg),
        sc.seed(),
        sc.nccl().describe(),
        metric as *const (),
    );
    let fp = fingerprint(params);
    if let Some(t) = MEMO.get(fp, &key) {
        return Ok(t);
    }
    let t = direct_time_uncached(sc, params, alg, placement, fidelity, size, metric)?;
    MEMO.put(fp, key, t);
    Ok(t)
}

/// A hash of every constant (their TOML).
fn fingerprint(params: &ModelParams) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    params.to_toml().hash(&mut h);
    h.finish()
}

/// Simulated times by constants and twin: the results of the last
/// [`MEMO_GENERATIONS`] sets of constants (a fit moves on, so older ones
/// are dropped), each the value [`direct_time_uncached`] gives.
pub(crate) struct Memo {
    inner: std::sync::Mutex<MemoState>,
}

/// The generations kept (oldest first) and the times by (generation, twin).
type MemoState = (
    std::collections::VecDeque<u64>,
    std::collections::BTreeMap<(u64, String), f64>,
);

/// Sets of constants whose results are kept.
const MEMO_GENERATIONS: usize = 8;

static MEMO: Memo = Memo {
    inner: std::sync::Mutex::new((
        std::collections::VecDeque::new(),
        std::collections::BTreeMap::new(),
    )),
};

impl Memo {
    fn get(&self, fp: u64, key: &str) -> Option<f64> {
        let g = self.inner.lock().ok()?;
        g.1.get(&(fp, key.to_string())).copied()
    }
    fn put(&self, fp: u64, key: String, t: f64) {
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        if !g.0.contains(&fp) {
            g.0.push_back(fp);
            while g.0.len() > MEMO_GENERATIONS {
                if let Some(old) = g.0.pop_front() {
                    g.1.retain(|k, _| k.0 != old);
                }
            }
        }
        g.1.insert((fp, key), t);
    }
}

/// The time of `alg` at `size`, every slice simulated (the reference).
pub fn direct_time_uncached(
    sc: &Scenario,
    params: &ModelParams,
    alg: Algorithm,
    placement: Placement,
    fidelity: Fidelity,
    size: Bytes,
    metric: Metric,
) -> Result<f64, LargeSizeError> {
    let sc = at_sizes(sc, &[size])?;
    let sc: &Scenario = &sc;
    let spec = RunSpec {
        algorithm: Some(alg),
        placement,
        fidelity,
        size: Some(size),
    };
    let run = simulate_one(sc, params, spec)?;
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
) -> Result<f64, LargeSizeError> {
    let line = if alg == Algorithm::Nccl {
        nccl_extrapolation_sizes(sc, size, MAX_DIRECT_NCCL_LOOPS)
    } else {
        extrapolation_sizes(params, alg, sc.ranks().len(), size, max_slices)
    };
    let Some((lo, hi)) = line else {
        return direct_time(sc, params, alg, placement, fidelity, size, metric);
    };
    let t_lo = direct_time(sc, params, alg, placement, fidelity, lo, metric)?;
    let t_hi = direct_time(sc, params, alg, placement, fidelity, hi, metric)?;
    let per_byte = (t_hi - t_lo) / (hi.0 - lo.0) as f64;
    Ok(t_hi + per_byte * (size.0 - hi.0) as f64)
}

/// NCCL's own allreduce (`nccl`) past `max_units` loops (ring) or chunks
/// (tree) per channel: every further loop repeats the same primitive calls
/// on every channel, so the time is affine in the size while NCCL's
/// decision (algorithm, protocol, channels, chunk) stays. The line is
/// drawn through the two sizes of `max_units` / 2 and `max_units` whole
/// loops (or twice, four times as many, up to half the size asked for)
/// where NCCL decides as it does at `size`; `None` (simulate directly)
/// when `size` is that small, the scenario runs no NCCL, or no such pair
/// exists.
pub fn nccl_extrapolation_sizes(
    sc: &Scenario,
    size: Bytes,
    max_units: u64,
) -> Option<(Bytes, Bytes)> {
    use contend_nccl::{Algorithm as NcclAlgorithm, CallSchedule};
    let plan = sc.nccl_plan()?;
    let elem = match sc.workload() {
        Workload::Allreduce { dtype, .. } => Bytes(dtype.size()),
        _ => return None,
    };
    let target = plan.schedule(size, elem)?;
    let n = target.n_ranks.max(1) as u64;
    let per_unit = |c: &CallSchedule, chunk: u64| match c.choice.algorithm {
        NcclAlgorithm::Ring => Some(n * chunk),
        NcclAlgorithm::Tree => Some(chunk),
        _ => None,
    };
    let chunk = target.parts.first()?.chunk.0.max(1);
    let unit = per_unit(&target, chunk)?;
    let units = target
        .parts
        .iter()
        .map(|p| p.bytes.0.div_ceil(unit))
        .max()?;
    let m0 = max_units.max(2) & !1;
    if units <= m0 {
        return None;
    }
    let same = |c: &CallSchedule| {
        c.choice.algorithm == target.choice.algorithm
            && c.choice.protocol == target.choice.protocol
            && c.parts.len() == target.parts.len()
            && c.parts.iter().all(|p| p.chunk.0 == chunk)
    };
    let nch = target.parts.len() as u64;
    let mut m = m0;
    while m.checked_mul(unit)?.checked_mul(nch)? <= size.0 / 2 {
        let hi = m * unit * nch;
        let lo = hi / 2;
        let ok = [lo, hi]
            .iter()
            .all(|&b| plan.schedule(Bytes(b), elem).is_some_and(|c| same(&c)));
        if ok {
            return Some((Bytes(lo), Bytes(hi)));
        }
        m *= 2;
    }
    None
}

/// A lower bound of a ring's time at `size`, ns, from its bytes alone:
/// each rank sends 2(N-1) chunks (LL twice the bytes: a flag with every
/// 8 bytes) through the fastest link of its GPU, which no run can beat
/// (links carry at most their raw rate). Past the size where another
/// protocol already beats it, the ring need not be simulated at all; the
/// tests hold every simulated ring above it.
pub fn ring_lower_bound_ns(sc: &Scenario, alg: Algorithm, size: Bytes) -> f64 {
    let n = sc.ranks().len();
    if n < 2 {
        return 0.0;
    }
    let wire = if alg == Algorithm::RingLl { 2.0 } else { 1.0 };
    let topo = sc.topology();
    let smallest_chunk = contend_workload::chunk_of(size, n, n - 1).0 as f64;
    sc.ranks()
        .iter()
        .map(|&g| {
            let rate = topo
                .links()
                .iter()
                .filter(|l| l.a == g || l.b == g)
                .filter_map(|l| l.kind.rate())
                .map(|r| r.as_gbps())
                .fold(0.0, f64::max);
            if rate > 0.0 {
                wire * 2.0 * (n - 1) as f64 * smallest_chunk / rate
            } else {
                0.0
            }
        })
        .fold(f64::INFINITY, f64::min)
}

/// The scenario with its allreduce workload at `sizes` (itself when it is
/// already, or when it is another workload).
fn at_sizes<'a>(
    sc: &'a Scenario,
    sizes: &[Bytes],
) -> Result<std::borrow::Cow<'a, Scenario>, LargeSizeError> {
    use std::borrow::Cow;
    match sc.workload() {
        Workload::Allreduce {
            sizes: now,
            dtype,
            repeats,
            gap,
            skew,
        } => {
            if now.as_slice() == sizes {
                return Ok(Cow::Borrowed(sc));
            }
            sc.with_workload(Workload::Allreduce {
                sizes: sizes.to_vec(),
                dtype: *dtype,
                repeats: *repeats,
                gap: *gap,
                skew: *skew,
            })
            .map(Cow::Owned)
            .map_err(LargeSizeError::from)
        }
        _ => Ok(Cow::Borrowed(sc)),
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

    /// No simulated ring beats the lower bound its bytes set.
    #[test]
    fn rings_never_beat_their_byte_bound() {
        let p = ModelParams::default();
        for (topo, ranks) in [
            ("pro6000-8x-2switch", 8),
            ("pro6000-8x-2socket", 8),
            ("h200-2x", 2),
        ] {
            let sc = scenario(topo, ranks);
            for alg in [Algorithm::RingLl, Algorithm::RingSimple] {
                for size in [Bytes(4096), Bytes::kib(512), Bytes(8 << 20)] {
                    let t = direct_time_uncached(
                        &sc,
                        &p,
                        alg,
                        Placement::Peer,
                        Fidelity::Flow,
                        size,
                        median,
                    )
                    .unwrap();
                    let b = ring_lower_bound_ns(&sc, alg, size);
                    assert!(
                        b > 0.0 && t >= b,
                        "{topo} {alg} {size}: simulated {t} ns below the bound {b} ns"
                    );
                }
            }
        }
    }

    /// The remembered time is the simulated one, for each set of constants.
    #[test]
    fn remembered_times_are_the_simulated_ones() {
        let sc = scenario("pro6000-8x-2switch", 4);
        let mut p = ModelParams::default();
        for dllp in [0.05, 0.2] {
            p.pcie.dllp_overhead = dllp;
            let size = Bytes::kib(256);
            let a = Algorithm::RingSimple;
            let fresh =
                direct_time_uncached(&sc, &p, a, Placement::Peer, Fidelity::Flow, size, median)
                    .unwrap();
            for _ in 0..2 {
                let m =
                    direct_time(&sc, &p, a, Placement::Peer, Fidelity::Flow, size, median).unwrap();
                assert_eq!(m, fresh);
            }
        }
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

    /// NCCL's own allreduce extended from two sizes of whole loops agrees
    /// with simulating every loop, and a small call is simulated directly.
    #[test]
    fn extended_nccl_agrees_with_the_reference() {
        let p = ModelParams::default();
        for (topo, ranks) in [("pro6000-8x-2switch", 4), ("pro6000-8x-2socket", 4)] {
            let t = shipped::get(topo).unwrap().unwrap();
            let sc = Scenario::new(ScenarioSpec {
                ranks: t.gpus()[..ranks].to_vec(),
                algorithms: vec![Algorithm::Nccl],
                ..ScenarioSpec::new(
                    "large-nccl",
                    t,
                    Workload::Allreduce {
                        sizes: vec![Bytes(64 << 20)],
                        dtype: Dtype::Fp32,
                        repeats: 2,
                        gap: Picos::ZERO,
                        skew: Skew::None,
                    },
                )
            })
            .unwrap();
            assert_eq!(
                nccl_extrapolation_sizes(&sc, Bytes::kib(64), MAX_DIRECT_NCCL_LOOPS),
                None
            );
            // twenty whole loops of every channel, and a part loop
            let plan = sc.nccl_plan().unwrap();
            let c = plan.schedule(Bytes(64 << 20), Bytes(4)).unwrap();
            let loop_bytes = ranks as u64 * c.parts[0].chunk.0 * c.parts.len() as u64;
            let size = Bytes(20 * loop_bytes + loop_bytes / 3);
            let (lo, hi) = nccl_extrapolation_sizes(&sc, size, MAX_DIRECT_NCCL_LOOPS)
                .unwrap_or_else(|| panic!("{topo}: the test must exercise the line"));
            assert!(lo < hi && hi.0 <= size.0 / 2, "{lo} {hi}");
            let a = Algorithm::Nccl;
            let fid = Fidelity::Flow;
            let reference =
                direct_time_uncached(&sc, &p, a, Placement::Peer, fid, size, median).unwrap();
            let fast = allreduce_time(&sc, &p, a, Placement::Peer, fid, size, median, 8).unwrap();
            let err = (fast / reference - 1.0).abs();
            assert!(
                err < 0.02,
                "{topo} nccl {size}: extended {fast} vs simulated {reference} ns ({:.2} %)",
                err * 100.0
            );
        }
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
                    direct_time_uncached(&sc, &p, alg, Placement::Peer, fid, size, median).unwrap();
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
