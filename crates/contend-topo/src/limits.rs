//! The stated limits of a topology. Every number a topology file (or a
//! [`TopologySpec`](crate::TopologySpec) a program fills in) gives is checked
//! against these when the topology is built, so nothing downstream can
//! overflow, divide by zero or run without end: a latency of 1 s summed over
//! every hop of every route and every collective of a run stays far inside
//! the `u64` picoseconds of [`Picos`], and no rate is so low that moving the
//! largest allreduce takes longer than `u64` picoseconds can count.
//!
//! Each limit is far beyond any machine contend models; a value past one is
//! an error naming the file, line, column and field. The checks live here,
//! once: the TOML loader runs them on each field where it is written, and
//! [`Topology::new`](crate::Topology::new) runs them again on every spec.

use crate::units::{BytesPerSec, Picos};
use thiserror::Error;

/// Most nodes in one topology (GPUs, switches, root complexes, memories,
/// interconnects together). The largest shipped machine has 14.
pub const MAX_NODES: usize = 512;
/// Most links in one topology.
pub const MAX_LINKS: usize = 2048;
/// Most SMs one GPU may have (an H200 has 132, an RTX PRO 6000 188).
pub const MAX_SMS: u32 = 1024;
/// Largest socket number (sockets are counted from 0).
pub const MAX_SOCKET: u32 = 255;
/// Longest latency of one node or link: 1 s (real ones are below 1 µs).
pub const MAX_LATENCY: Picos = Picos(1_000_000_000_000);
/// Lowest bandwidth of a link, a GPU's memory or a root complex: 1 MB/s
/// (0.001 GB/s). Moving the largest allreduce (64 GiB) at this rate takes
/// under a day of simulated time, well inside `u64` picoseconds.
pub const MIN_BANDWIDTH: BytesPerSec = BytesPerSec(1_000_000);
/// Highest bandwidth: 100 TB/s (100,000 GB/s; HBM3e is below 5 TB/s).
pub const MAX_BANDWIDTH: BytesPerSec = BytesPerSec(100_000_000_000_000);

/// A number past one of the limits, naming the value and the limit. The
/// file loader and [`Topology::new`](crate::Topology::new) add the place.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum LimitError {
    /// A latency a file gives (ns) past [`MAX_LATENCY`].
    #[error(
        "latency {} ns is above the limit of {} ns (1 s)",
        num(*ns),
        MAX_LATENCY.as_ns_f64()
    )]
    LatencyAboveLimit { ns: f64 },
    /// A latency a file gives that is no number from 0 to [`MAX_LATENCY`]
    /// (negative, NaN, infinite or past what [`Picos`] can count).
    #[error(
        "latency {} ns must be a number from 0 to {} ns",
        num(*ns),
        MAX_LATENCY.as_ns_f64()
    )]
    LatencyNotANumber { ns: f64 },
    /// A latency a program gives (a spec's [`Picos`]) past [`MAX_LATENCY`].
    #[error(
        "latency {} ns is above the limit of {} ns (1 s)",
        latency.as_ns_f64(),
        MAX_LATENCY.as_ns_f64()
    )]
    SpecLatencyAboveLimit { latency: Picos },
    /// A bandwidth (GB/s) outside [`MIN_BANDWIDTH`] to [`MAX_BANDWIDTH`].
    #[error(
        "bandwidth {} GB/s must be from {} to {} GB/s",
        num(*gbps),
        MIN_BANDWIDTH.as_gbps(),
        MAX_BANDWIDTH.as_gbps()
    )]
    Bandwidth { gbps: f64 },
    /// An SM count outside 1 to [`MAX_SMS`].
    #[error("sms = {n}: a GPU has 1 to {MAX_SMS} SMs")]
    Sms { n: i64 },
    /// A count of nodes (`field`) outside 1 to [`MAX_NODES`].
    #[error("{field} = {n}: 1 to {MAX_NODES}")]
    Count { field: String, n: i64 },
    /// A socket number outside 0 to [`MAX_SOCKET`].
    #[error("socket = {n}: sockets are numbered 0 to {MAX_SOCKET}")]
    Socket { n: i64 },
}

/// A latency in nanoseconds as a file gives it, checked: finite, zero or
/// more, at most [`MAX_LATENCY`].
pub fn latency_ns(ns: f64) -> Result<Picos, LimitError> {
    match Picos::try_from_ns_f64(ns) {
        Some(p) if p <= MAX_LATENCY => Ok(p),
        _ if ns.is_finite() && ns > 0.0 => Err(LimitError::LatencyAboveLimit { ns }),
        _ => Err(LimitError::LatencyNotANumber { ns }),
    }
}

/// A number for an error message: plain when short, `1e308` when not.
pub fn num(x: f64) -> String {
    if x.is_finite() && x != 0.0 && !(1e-6..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// A latency already in picoseconds (a spec built in a program), checked.
pub fn latency(p: Picos) -> Result<(), LimitError> {
    if p <= MAX_LATENCY {
        Ok(())
    } else {
        Err(LimitError::SpecLatencyAboveLimit { latency: p })
    }
}

/// A bandwidth in GB/s as a file gives it, checked: finite, from
/// [`MIN_BANDWIDTH`] to [`MAX_BANDWIDTH`].
pub fn bandwidth_gbps(gbps: f64) -> Result<BytesPerSec, LimitError> {
    match BytesPerSec::try_from_gbps(gbps) {
        Some(b) if bandwidth(b).is_ok() => Ok(b),
        _ => Err(LimitError::Bandwidth { gbps }),
    }
}

/// A bandwidth already in bytes per second (a spec built in a program), checked.
pub fn bandwidth(b: BytesPerSec) -> Result<(), LimitError> {
    if (MIN_BANDWIDTH..=MAX_BANDWIDTH).contains(&b) {
        Ok(())
    } else {
        Err(LimitError::Bandwidth { gbps: b.as_gbps() })
    }
}

/// A GPU's SM count, checked: 1 to [`MAX_SMS`].
pub fn sms(n: i64) -> Result<u32, LimitError> {
    match u32::try_from(n) {
        Ok(n) if (1..=MAX_SMS).contains(&n) => Ok(n),
        _ => Err(LimitError::Sms { n }),
    }
}

/// A count of nodes (collapse thresholds), checked: 1 to [`MAX_NODES`].
pub fn count(n: i64, field: &str) -> Result<u32, LimitError> {
    match u32::try_from(n) {
        Ok(k) if (1..=MAX_NODES as u32).contains(&k) => Ok(k),
        _ => Err(LimitError::Count {
            field: field.to_string(),
            n,
        }),
    }
}

/// A socket number, checked: 0 to [`MAX_SOCKET`].
pub fn socket(n: i64) -> Result<u32, LimitError> {
    match u32::try_from(n) {
        Ok(n) if n <= MAX_SOCKET => Ok(n),
        _ => Err(LimitError::Socket { n }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_reject_what_cannot_be_simulated() {
        assert_eq!(latency_ns(250.0), Ok(Picos(250_000)));
        assert_eq!(latency_ns(0.0), Ok(Picos::ZERO));
        assert_eq!(latency_ns(1e9), Ok(MAX_LATENCY));
        for bad in [
            -1.0,
            f64::NAN,
            f64::INFINITY,
            1e9 + 1.0,
            9_223_372_036_854_775_807.0,
            1e308,
        ] {
            assert!(latency_ns(bad).is_err(), "{bad}");
        }
        assert!(
            latency_ns(1e10)
                .unwrap_err()
                .to_string()
                .contains("above the limit")
        );
        assert_eq!(
            latency_ns(-1.0),
            Err(LimitError::LatencyNotANumber { ns: -1.0 })
        );
        assert_eq!(bandwidth_gbps(63.0), Ok(BytesPerSec(63_000_000_000)));
        assert_eq!(bandwidth_gbps(0.001), Ok(MIN_BANDWIDTH));
        assert_eq!(bandwidth_gbps(100_000.0), Ok(MAX_BANDWIDTH));
        for bad in [0.0, -1.0, 1e-4, f64::NAN, f64::INFINITY, 1e5 + 1.0, 1e308] {
            assert!(bandwidth_gbps(bad).is_err(), "{bad}");
        }
        assert_eq!(sms(188), Ok(188));
        assert!(sms(0).is_err() && sms(-1).is_err() && sms(1025).is_err());
        assert!(sms(i64::MAX).is_err() && sms(4_294_967_297).is_err());
        assert_eq!(socket(0), Ok(0));
        assert!(socket(-1).is_err() && socket(256).is_err() && socket(4_294_967_297).is_err());
    }
}
