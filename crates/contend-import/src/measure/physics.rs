//! What a measured number can physically be: the one check every importer
//! runs on the figures it reads (each cell as it is parsed, so the error
//! names its column, and every record it makes), and that loading runs
//! again against the box's own links once a topology is known.
//!
//! - **No rate above the fastest link.** A stream between a GPU and another
//!   GPU or host memory never moves more per direction than the links at
//!   either of its ends carry. With a topology that is the sum of the
//!   rates ([`contend_topo::LinkKind::rate`]: PCIe by generation and
//!   width, [`contend_topo::pcie::raw_rate`]; NVLink, CPU and memory links
//!   as the file states them) of the links of each end, the smaller end
//!   binding. Without one it is the fastest any GPU has:
//!   [`FASTEST_LINK_GBPS`], NVLink 5 (PCIe peaks at Gen6 x16, 118 GB/s per
//!   direction). A GPU's transfer to itself is bounded by its memory
//!   instead: the topology's `memory_bandwidth`, else
//!   [`FASTEST_MEMORY_GBPS`].
//! - **No time below the floor** of [`TIME_FLOOR_NS`] (0.1 µs) for a timed
//!   collective, copy or kernel.
//! - **No zero, negative, NaN or infinite** time or rate. The rates
//!   nccl-tests derives from a row's time (`algbw`, `busbw`) are printed to
//!   two decimals, so `0.00` at small sizes is allowed; they are bounded by
//!   [`contend_topo::limits::MAX_BANDWIDTH`] (an allreduce on one GPU is a
//!   local copy, above any link, so no link bounds them).
//!
//! The rule applies to what importers make of other tools' output
//! ([`applies`]: records with `extra.import.format`); contend's own JSON
//! Lines keep the checks of [`super::classify`].

use contend_topo::limits::{MAX_BANDWIDTH, num};
use contend_topo::{NodeKind, PcieGen, Topology};
use contend_workload::{ResultRecord, WorkloadKind};

/// The most any GPU moves per direction over its links, GB/s: NVLink 5
/// (Blackwell: B200, GB200, B300), 18 links x 50 GB/s = 900 GB/s each way,
/// 1.8 TB/s bidirectional per GPU (NVIDIA's B200 and GB200 NVL72
/// datasheets). The fastest PCIe, Gen6 x16, carries 118 GB/s.
pub const FASTEST_LINK_GBPS: f64 = 900.0;

/// The fastest memory of any GPU, GB/s: HBM3e on B200 and B300, 8 TB/s
/// (NVIDIA's datasheets). Bounds a GPU's transfer to itself.
pub const FASTEST_MEMORY_GBPS: f64 = 8000.0;

/// The shortest time a measured collective, copy or kernel can take, ns
/// (0.1 µs). A kernel launch alone costs over 1 µs (back-to-back launches
/// in a CUDA graph about 1–2 µs; contend's `launch-graph` probe measures
/// it), a copy-engine transfer as much before its first byte, and CUDA
/// events resolve about 0.5 µs (CUDA Runtime API, `cudaEventElapsedTime`):
/// a figure ten times below the finest any of them resolves is not a
/// measurement.
pub const TIME_FLOOR_NS: f64 = 100.0;

/// What a measurement is checked against: any machine, or the box a
/// topology describes.
#[derive(Clone, Copy, Debug)]
pub enum Bounds<'t> {
    AnyBox,
    Box(&'t Topology),
}

/// The highest rate a stream can have, and why.
struct Ceiling {
    gbps: f64,
    why: String,
}

fn any_box(local: bool) -> Ceiling {
    if local {
        Ceiling {
            gbps: FASTEST_MEMORY_GBPS,
            why: format!(
                "the fastest memory of any GPU (HBM3e on B200/B300: {} GB/s)",
                num(FASTEST_MEMORY_GBPS)
            ),
        }
    } else {
        Ceiling {
            gbps: FASTEST_LINK_GBPS,
            why: format!(
                "the most any GPU moves per direction over its links (NVLink 5: 18 links x 50 GB/s = {} GB/s; PCIe peaks at Gen6 x16, {:.0} GB/s)",
                num(FASTEST_LINK_GBPS),
                contend_topo::pcie::raw_rate(PcieGen(6), 16).as_gbps()
            ),
        }
    }
}

/// The ceiling of a stream from `from` to `to` (node ids; `host`: the
/// GPU's nearest host memory) in `topo`, when both ends are found.
fn of_box(topo: &Topology, from: &str, to: &str) -> Option<Ceiling> {
    let a = topo.lookup(from)?;
    if from == to {
        return match &topo.node(a).kind {
            NodeKind::Gpu(g) => Some(Ceiling {
                gbps: g.memory_bandwidth.as_gbps(),
                why: format!("the memory bandwidth of {from} in topology `{}`", topo.name),
            }),
            _ => None,
        };
    }
    let b = if to == "host" {
        topo.nearest_host_memory(a)?
    } else {
        topo.lookup(to)?
    };
    let mut best: Option<Ceiling> = None;
    for end in [a, b] {
        let mut sum = 0.0;
        let mut parts = vec![];
        for l in topo.links().iter().filter(|l| l.a == end || l.b == end) {
            if let Some(r) = l.kind.rate() {
                sum += r.as_gbps();
                parts.push(format!("{} {}", l.kind.name(), num(r.as_gbps())));
            }
        }
        if sum <= 0.0 || best.as_ref().is_some_and(|c| c.gbps <= sum) {
            continue;
        }
        best = Some(Ceiling {
            gbps: sum,
            why: format!(
                "what the links of {} carry per direction in topology `{}` ({})",
                topo.node(end).id.0,
                topo.name,
                parts.join(" + ")
            ),
        });
    }
    best
}

/// A number that must be finite and above zero.
fn positive(what: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{what} {} is not a positive finite number", num(v)))
    }
}

/// Why a measured number is impossible: what it is and the rule it breaks
/// (`4000 GB/s from gpu0 to gpu1 is above 64 GB/s, …`). Importers place it
/// in a [`CalibError::Impossible`](crate::CalibError::Impossible) naming
/// the file, line and column.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Impossible(pub String);

impl From<String> for Impossible {
    fn from(why: String) -> Impossible {
        Impossible(why)
    }
}

/// It reads as its message.
impl std::ops::Deref for Impossible {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<Impossible> for String {
    fn from(e: Impossible) -> String {
        e.0
    }
}

/// A stream's rate, GB/s: above zero, finite, at most what the links at
/// its ends carry (`from == to`: a GPU's own memory). `from` and `to` are
/// node ids (`gpu3`, `host`); with [`Bounds::AnyBox`] only whether they
/// are the same matters.
pub fn stream_rate(gbps: f64, from: &str, to: &str, bounds: Bounds<'_>) -> Result<(), Impossible> {
    positive("rate", gbps)?;
    let local = from == to;
    let mut c = any_box(local);
    if let Bounds::Box(topo) = bounds
        && let Some(b) = of_box(topo, from, to)
        && b.gbps < c.gbps
    {
        c = b;
    }
    if gbps > c.gbps {
        return Err(Impossible(format!(
            "{} GB/s from {from} to {to} is above {} GB/s, {}",
            num(gbps),
            num(c.gbps),
            c.why
        )));
    }
    Ok(())
}

/// A rate a tool derives from a time (nccl-tests' `algbw`, `busbw`), GB/s:
/// finite, zero or more (printed to two decimals: `0.00` at small sizes),
/// at most [`MAX_BANDWIDTH`].
pub fn derived_rate(what: &str, gbps: f64) -> Result<(), Impossible> {
    let max = MAX_BANDWIDTH.as_gbps();
    if gbps.is_finite() && (0.0..=max).contains(&gbps) {
        Ok(())
    } else {
        Err(Impossible(format!(
            "{what} {} GB/s is not a rate from 0 to {} GB/s (100 TB/s, above any memory or link)",
            num(gbps),
            num(max)
        )))
    }
}

/// A measured time, ns: finite, at least [`TIME_FLOOR_NS`].
pub fn time_ns(what: &str, ns: f64) -> Result<(), Impossible> {
    positive(what, ns)?;
    if ns < TIME_FLOOR_NS {
        return Err(Impossible(format!(
            "{what} {} ns is below {} ns (0.1 us): no collective, copy or kernel completes that fast (a kernel launch alone costs over 1 us, and CUDA events resolve about 0.5 us)",
            num(ns),
            num(TIME_FLOOR_NS)
        )));
    }
    Ok(())
}

/// A measured time as a tool prints it, µs.
pub fn time_us(what: &str, us: f64) -> Result<(), Impossible> {
    positive(what, us)?;
    if us * 1000.0 < TIME_FLOOR_NS {
        return Err(Impossible(format!(
            "{what} {} us is below {} us: no collective, copy or kernel completes that fast (a kernel launch alone costs over 1 us, and CUDA events resolve about 0.5 us)",
            num(us),
            num(TIME_FLOOR_NS / 1000.0)
        )));
    }
    Ok(())
}

/// Whether the rule applies to `r`: a record an importer made of another
/// tool's output.
pub fn applies(r: &ResultRecord) -> bool {
    r.extra.import.format.is_some()
}

/// Every number of a record: its times, its rate against the box, the
/// rates printed beside its time. An error names the field.
pub fn check_record(r: &ResultRecord, bounds: Bounds<'_>) -> Result<(), Impossible> {
    let field = |f: &str| format!("field `{f}`:");
    let s = &r.stats;
    for (f, v) in [
        ("stats.median_ns", s.median_ns),
        ("stats.min_ns", s.min_ns),
        ("stats.p10_ns", s.p10_ns),
        ("stats.p90_ns", s.p90_ns),
        ("stats.p99_ns", s.p99_ns),
        ("stats.max_ns", s.max_ns),
        ("total_ns", r.total_ns),
    ] {
        time_ns(&field(f), v)?;
    }
    for (k, v) in r.per_op_ns.iter().enumerate() {
        time_ns(&field(&format!("per_op_ns[{k}]")), *v)?;
    }
    if let Some(v) = r.extra.timing.batch_mean_ns {
        time_ns(&field("extra.batch_mean_ns"), v)?;
    }
    let im = &r.extra.import;
    if let Some(v) = im.in_place_us {
        time_us(&field("extra.in_place_us"), v)?;
    }
    if let Some(v) = r.bandwidth_gbps {
        match (r.workload, r.ranks.as_slice()) {
            (WorkloadKind::Transfer, [from, to]) => stream_rate(v, from, to, bounds)
                .map_err(|e| Impossible(format!("{} {e}", field("bandwidth_gbps"))))?,
            _ => derived_rate(&field("bandwidth_gbps"), v)?,
        }
    }
    for (f, v) in [
        ("extra.algbw_gbps", r.extra.timing.algbw_gbps),
        ("extra.busbw_gbps", r.extra.timing.busbw_gbps),
        ("extra.in_place_algbw_gbps", im.in_place_algbw_gbps),
        ("extra.in_place_busbw_gbps", im.in_place_busbw_gbps),
    ] {
        if let Some(v) = v {
            derived_rate(&field(f), v)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_times_past_the_hardware_are_refused() {
        assert!(stream_rate(50.0, "gpu0", "gpu1", Bounds::AnyBox).is_ok());
        assert!(stream_rate(900.0, "gpu0", "gpu1", Bounds::AnyBox).is_ok());
        assert!(stream_rate(4200.0, "gpu0", "gpu0", Bounds::AnyBox).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e308, 900.5] {
            assert!(
                stream_rate(bad, "gpu0", "gpu1", Bounds::AnyBox).is_err(),
                "{bad}"
            );
        }
        let e = stream_rate(1e308, "gpu0", "gpu1", Bounds::AnyBox).unwrap_err();
        assert!(e.contains("1e308 GB/s") && e.contains("NVLink 5"), "{e}");
        assert!(time_us("time", 0.1).is_ok() && time_us("time", 8.9).is_ok());
        for bad in [0.0, 0.000001, 0.09, -3.0, f64::NAN, f64::INFINITY] {
            assert!(time_us("time", bad).is_err(), "{bad}");
        }
        assert!(derived_rate("algbw", 0.0).is_ok());
        assert!(derived_rate("algbw", 1e308).is_err());
    }
}
