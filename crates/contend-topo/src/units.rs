//! Unit newtypes. Simulated time is an integer number of picoseconds; sizes
//! are bytes; rates are bytes per second. No bare integers or floats cross an
//! API for these quantities.
//!
//! Arithmetic never wraps: sums saturate at the type's maximum
//! ([`Picos::MAX`], `Bytes(u64::MAX)`), conversions from file floats have a
//! checked form (`try_from_*`, `None` for NaN, negative or too large values)
//! and a saturating one, and rate arithmetic saturates instead of truncating.
//! The [`limits`](crate::limits) keep every value a file can give far below
//! the point where saturation starts.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use thiserror::Error;

/// 2^64 as a float (exact): every non-negative float below it fits in a `u64`.
const U64_END: f64 = 18_446_744_073_709_551_616.0;

/// A point in or span of simulated time, in picoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Picos(pub u64);

impl Picos {
    pub const ZERO: Picos = Picos(0);
    pub const MAX: Picos = Picos(u64::MAX);
    /// Nanoseconds (saturating at [`Picos::MAX`]).
    pub const fn from_ns(ns: u64) -> Self {
        Picos(ns.saturating_mul(1_000))
    }
    /// Microseconds (saturating at [`Picos::MAX`]).
    pub const fn from_us(us: u64) -> Self {
        Picos(us.saturating_mul(1_000_000))
    }
    /// Nanoseconds given as a float, rounded to the nearest picosecond;
    /// `None` for NaN, a negative value or one past [`Picos::MAX`].
    pub fn try_from_ns_f64(ns: f64) -> Option<Self> {
        let ps = (ns * 1_000.0).round();
        (0.0..U64_END).contains(&ps).then_some(Picos(ps as u64))
    }
    /// Nanoseconds given as a float, rounded to the nearest picosecond,
    /// saturating: NaN and negative values are zero, huge ones [`Picos::MAX`].
    /// Values from files go through [`Picos::try_from_ns_f64`] and the
    /// [`limits`](crate::limits) instead.
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
    pub fn checked_add(self, o: Picos) -> Option<Picos> {
        self.0.checked_add(o.0).map(Picos)
    }
}

/// Saturates at [`Picos::MAX`]: simulated time never wraps round to a small
/// number (a run that gets there is stopped by the engine's time limit).
impl Add for Picos {
    type Output = Picos;
    fn add(self, o: Picos) -> Picos {
        Picos(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Picos {
    fn add_assign(&mut self, o: Picos) {
        *self = *self + o;
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

/// A span of time in (fractional) nanoseconds, as model constants are
/// written in files (`latency_ns = 40.0`): a float, read and written as the
/// bare number (`serde(transparent)`). Simulated time is [`Picos`]; the one
/// way across is [`Nanos::to_picos`].
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Nanos(f64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0.0);
    pub const fn new(ns: f64) -> Self {
        Nanos(ns)
    }
    /// The number of nanoseconds.
    pub const fn get(self) -> f64 {
        self.0
    }
    /// Simulated time: rounded to the nearest picosecond (halves away from
    /// zero), saturating ([`Picos::from_ns_f64`]: NaN and negative spans are
    /// zero, huge ones [`Picos::MAX`]).
    pub fn to_picos(self) -> Picos {
        Picos::from_ns_f64(self.0)
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

    /// Parses `43008`, `42 KiB`, `64MiB`, `1.5 MB`, `512B`. Whole numbers
    /// are exact (no float rounding); a size past `u64::MAX` bytes, a
    /// negative or fractional number of bytes is an error.
    pub fn parse_size(s: &str) -> Result<Bytes, BytesParseError> {
        let t = s.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let num = num.replace('_', "");
        let text = || s.to_string();
        let not_a_size = || BytesParseError::NotASize { text: text() };
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kib" => 1 << 10,
            "m" | "mib" => 1 << 20,
            "g" | "gib" => 1 << 30,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            _ if num.is_empty() => return Err(not_a_size()),
            other => {
                return Err(BytesParseError::UnknownUnit {
                    unit: other.to_string(),
                    text: text(),
                });
            }
        };
        let too_big = || BytesParseError::TooBig { text: text() };
        if num.bytes().all(|c| c.is_ascii_digit()) {
            // exact: digits only
            let n: u128 = match num.parse() {
                Ok(n) => n,
                Err(_) if num.is_empty() => return Err(not_a_size()),
                Err(_) => return Err(too_big()),
            };
            return n
                .checked_mul(u128::from(mult))
                .and_then(|v| u64::try_from(v).ok())
                .map(Bytes)
                .ok_or_else(too_big);
        }
        let num: f64 = num.parse().map_err(|_| not_a_size())?;
        let v = num * mult as f64;
        if !v.is_finite() || v < 0.0 || v.fract() != 0.0 {
            return Err(BytesParseError::NotWhole { text: text() });
        }
        if v >= U64_END {
            return Err(too_big());
        }
        Ok(Bytes(v as u64))
    }
}

/// Why a text is not a size ([`Bytes::parse_size`]); each names the text as given.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BytesParseError {
    #[error("`{text}` is not a size (try `43008`, `42 KiB` or `64 MiB`)")]
    NotASize { text: String },
    #[error("unknown size unit `{unit}` in `{text}` (use B, KiB, MiB, GiB, KB, MB, GB)")]
    UnknownUnit { unit: String, text: String },
    #[error("`{text}` is more bytes than contend can count")]
    TooBig { text: String },
    #[error("`{text}` is not a whole number of bytes")]
    NotWhole { text: String },
}

/// A whole number of bytes (`43008`) or a string with a unit (`"42 KiB"`).
impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size: a whole number of bytes or a string such as \"64 MiB\"")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Bytes, E> {
                Ok(Bytes(n))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Bytes, E> {
                u64::try_from(n)
                    .map(Bytes)
                    .map_err(|_| E::custom(format!("a size cannot be negative ({n})")))
            }
            fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<Bytes, E> {
                Err(E::custom(format!(
                    "{x} is not a whole number of bytes (write `43008` or \"42 KiB\")"
                )))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Bytes, E> {
                Bytes::parse_size(s).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Saturates at `u64::MAX` bytes.
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        *self = *self + o;
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1 << 30 && b.is_multiple_of(1 << 30) {
            write!(f, "{} GiB", b >> 30)
        } else if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
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
    /// GB/s given as a float, rounded to a whole byte per second,
    /// saturating: NaN and negative values are zero, huge ones `u64::MAX`.
    /// Values from files go through [`BytesPerSec::try_from_gbps`] and the
    /// [`limits`](crate::limits) instead.
    pub fn from_gbps(gb_per_s: f64) -> Self {
        BytesPerSec((gb_per_s * 1e9).round().max(0.0) as u64)
    }
    /// GB/s given as a float; `None` for NaN, a negative value or one past `u64::MAX` B/s.
    pub fn try_from_gbps(gb_per_s: f64) -> Option<Self> {
        let b = (gb_per_s * 1e9).round();
        (0.0..U64_END).contains(&b).then_some(BytesPerSec(b as u64))
    }
    pub fn as_gbps(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Time to move `b` at this rate, rounded up to a whole picosecond.
    /// A zero rate never finishes: [`Picos::MAX`]; a time past it saturates there.
    pub fn time_for(self, b: Bytes) -> Picos {
        if self.0 == 0 {
            return Picos::MAX;
        }
        let num = b.0 as u128 * 1_000_000_000_000u128;
        Picos(u64::try_from(num.div_ceil(self.0 as u128)).unwrap_or(u64::MAX))
    }
    /// Bytes moved in `t` at this rate (rounded down, saturating at `u64::MAX`).
    pub fn bytes_in(self, t: Picos) -> Bytes {
        let b = self.0 as u128 * t.0 as u128 / 1_000_000_000_000u128;
        Bytes(u64::try_from(b).unwrap_or(u64::MAX))
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
        assert_eq!(Bytes::parse_size("43008").unwrap(), Bytes(43008));
        assert_eq!(Bytes::parse_size("42 KiB").unwrap(), Bytes(43008));
        assert_eq!(Bytes::parse_size("64MiB").unwrap(), Bytes(64 << 20));
        assert_eq!(Bytes::parse_size("1.5 KB").unwrap(), Bytes(1500));
        assert_eq!(
            Bytes::parse_size("12 parsecs"),
            Err(BytesParseError::UnknownUnit {
                unit: "parsecs".into(),
                text: "12 parsecs".into()
            })
        );
        assert!(Bytes::parse_size("0.5").is_err());
        assert_eq!(Bytes(43008).to_string(), "42 KiB");
        assert_eq!(Bytes(64 << 30).to_string(), "64 GiB");
        assert_eq!(Bytes(3 << 29).to_string(), "1536 MiB");
    }

    #[test]
    fn sizes_are_exact_and_never_saturate_silently() {
        assert_eq!(
            Bytes::parse_size("18446744073709551615"),
            Ok(Bytes(u64::MAX))
        );
        assert_eq!(
            Bytes::parse_size("9007199254740993"),
            Ok(Bytes(9_007_199_254_740_993))
        );
        for bad in [
            "18446744073709551616",
            "99999999999999999999999999999 GiB",
            "17179869184 GiB",
            "1e400",
            "",
            "KiB",
            "-1",
            "1.5e3",
        ] {
            assert!(Bytes::parse_size(bad).is_err(), "{bad}");
        }
        let e = Bytes::parse_size("18446744073709551616").unwrap_err();
        assert!(matches!(e, BytesParseError::TooBig { .. }), "{e:?}");
        assert!(e.to_string().contains("more bytes"), "{e}");
    }

    #[test]
    fn unit_arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(Picos::MAX + Picos(1), Picos::MAX);
        let mut t = Picos(u64::MAX - 1);
        t += Picos(5);
        assert_eq!(t, Picos::MAX);
        assert_eq!(Picos::from_ns(u64::MAX), Picos::MAX);
        assert_eq!(Picos::from_us(u64::MAX / 2), Picos::MAX);
        assert_eq!(Bytes(u64::MAX) + Bytes(1), Bytes(u64::MAX));
        // 64 GiB at 1 B/s: longer than u64 picoseconds count
        assert_eq!(BytesPerSec(1).time_for(Bytes(64 << 30)), Picos::MAX);
        assert_eq!(BytesPerSec(u64::MAX).bytes_in(Picos::MAX), Bytes(u64::MAX));
        assert_eq!(Picos::try_from_ns_f64(1.5), Some(Picos(1500)));
        for bad in [f64::NAN, -1.0, f64::INFINITY, 1e17, 1e308] {
            assert_eq!(Picos::try_from_ns_f64(bad), None, "{bad}");
            assert_eq!(BytesPerSec::try_from_gbps(bad * 1e3), None, "{bad}");
        }
        assert_eq!(Picos::from_ns_f64(f64::NAN), Picos::ZERO);
        assert_eq!(
            BytesPerSec::try_from_gbps(2.0),
            Some(BytesPerSec(2_000_000_000))
        );
    }

    #[test]
    fn nanos_read_and_write_as_the_bare_number_and_round_to_picos() {
        #[derive(Serialize, Deserialize)]
        struct T {
            latency_ns: Nanos,
        }
        let t: T = toml::from_str("latency_ns = 40.5").unwrap();
        assert_eq!(t.latency_ns, Nanos::new(40.5));
        assert_eq!(toml::to_string(&t).unwrap().trim(), "latency_ns = 40.5");
        for v in [
            0.0,
            40.0,
            0.0004,
            0.0005,
            1818.0,
            123.4565,
            1e9,
            -3.0,
            f64::NAN,
        ] {
            assert_eq!(Nanos::new(v).to_picos(), Picos::from_ns_f64(v));
        }
        assert_eq!(Nanos::new(0.0005).to_picos(), Picos(1));
    }
}
