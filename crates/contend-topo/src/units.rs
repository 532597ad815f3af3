//! Unit newtypes. Simulated time is an integer number of picoseconds; sizes
//! are bytes; rates are bytes per second. No bare integers or floats cross an
//! API for these quantities.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in or span of simulated time, in picoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Picos(pub u64);

impl Picos {
    pub const ZERO: Picos = Picos(0);
    pub const MAX: Picos = Picos(u64::MAX);
    pub const fn from_ns(ns: u64) -> Self {
        Picos(ns * 1_000)
    }
    pub const fn from_us(us: u64) -> Self {
        Picos(us * 1_000_000)
    }
    /// Nanoseconds given as a float (a file value), rounded to the nearest picosecond.
    pub fn from_ns_f64(ns: f64) -> Self {
        Picos((ns * 1_000.0).round().max(0.0) as u64)
    }
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / 1_000.0
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1_000_000.0
    }
    pub fn saturating_sub(self, o: Picos) -> Picos {
        Picos(self.0.saturating_sub(o.0))
    }
}

impl Add for Picos {
    type Output = Picos;
    fn add(self, o: Picos) -> Picos {
        Picos(self.0 + o.0)
    }
}
impl AddAssign for Picos {
    fn add_assign(&mut self, o: Picos) {
        self.0 += o.0;
    }
}
impl Sub for Picos {
    type Output = Picos;
    fn sub(self, o: Picos) -> Picos {
        Picos(self.0 - o.0)
    }
}
impl fmt::Display for Picos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.as_ns_f64();
        if ns >= 1_000_000.0 {
            write!(f, "{:.3} ms", ns / 1_000_000.0)
        } else if ns >= 1_000.0 {
            write!(f, "{:.2} us", ns / 1_000.0)
        } else {
            write!(f, "{ns:.0} ns")
        }
    }
}

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);
    pub const fn kib(n: u64) -> Bytes {
        Bytes(n << 10)
    }
    pub const fn mib(n: u64) -> Bytes {
        Bytes(n << 20)
    }
    pub fn min(self, o: Bytes) -> Bytes {
        Bytes(self.0.min(o.0))
    }

    /// Parses `43008`, `42 KiB`, `64MiB`, `1.5 MB`, `512B`.
    pub fn parse(s: &str) -> Result<Bytes, String> {
        let t = s.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let num: f64 = num
            .replace('_', "")
            .parse()
            .map_err(|_| format!("`{s}` is not a size (try `43008`, `42 KiB` or `64 MiB`)"))?;
        let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "k" | "kib" => 1024.0,
            "m" | "mib" => 1024.0 * 1024.0,
            "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
            "kb" => 1e3,
            "mb" => 1e6,
            "gb" => 1e9,
            other => {
                return Err(format!(
                    "unknown size unit `{other}` in `{s}` (use B, KiB, MiB, GiB, KB, MB, GB)"
                ));
            }
        };
        let v = num * mult;
        if !v.is_finite() || v < 0.0 || v.fract() != 0.0 {
            return Err(format!("`{s}` is not a whole number of bytes"));
        }
        Ok(Bytes(v as u64))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(Bytes(n)),
            Raw::Str(s) => Bytes::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0 + o.0)
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        self.0 += o.0;
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
            write!(f, "{} MiB", b >> 20)
        } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
            write!(f, "{} KiB", b >> 10)
        } else {
            write!(f, "{b} B")
        }
    }
}

/// A rate in bytes per second (decimal: 1 GB/s = 1e9 B/s).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct BytesPerSec(pub u64);

impl BytesPerSec {
    pub fn from_gbps(gb_per_s: f64) -> Self {
        BytesPerSec((gb_per_s * 1e9).round().max(0.0) as u64)
    }
    pub fn as_gbps(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Time to move `b` at this rate, rounded up to a whole picosecond.
    /// A zero rate never finishes: [`Picos::MAX`].
    pub fn time_for(self, b: Bytes) -> Picos {
        if self.0 == 0 {
            return Picos::MAX;
        }
        let num = b.0 as u128 * 1_000_000_000_000u128;
        Picos(num.div_ceil(self.0 as u128) as u64)
    }
    /// Bytes moved in `t` at this rate (rounded down).
    pub fn bytes_in(self, t: Picos) -> Bytes {
        Bytes((self.0 as u128 * t.0 as u128 / 1_000_000_000_000u128) as u64)
    }
    /// Scales the rate by a factor (efficiencies, shares).
    pub fn scale(self, f: f64) -> Self {
        BytesPerSec((self.0 as f64 * f).round().max(0.0) as u64)
    }
}

impl fmt::Display for BytesPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1} GB/s", self.as_gbps())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_for_rounds_up_and_is_exact_for_round_numbers() {
        let r = BytesPerSec::from_gbps(1.0);
        assert_eq!(r.time_for(Bytes(1)), Picos(1000));
        assert_eq!(BytesPerSec(3).time_for(Bytes(1)), Picos(333_333_333_334));
        assert_eq!(BytesPerSec(0).time_for(Bytes(1)), Picos::MAX);
        assert_eq!(r.bytes_in(Picos::from_us(1)), Bytes(1000));
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(Bytes::parse("43008").unwrap(), Bytes(43008));
        assert_eq!(Bytes::parse("42 KiB").unwrap(), Bytes(43008));
        assert_eq!(Bytes::parse("64MiB").unwrap(), Bytes(64 << 20));
        assert_eq!(Bytes::parse("1.5 KB").unwrap(), Bytes(1500));
        assert!(Bytes::parse("12 parsecs").unwrap_err().contains("parsecs"));
        assert!(Bytes::parse("0.5").is_err());
        assert_eq!(Bytes(43008).to_string(), "42 KiB");
    }
}
