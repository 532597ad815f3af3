//! PCIe link arithmetic: per-direction rate by generation and width, and the
//! per-packet overheads of the PCI Express Base Specification (see
//! `docs/PCIE-FACTS.md`).

use crate::units::{Bytes, BytesPerSec};
use serde::{Deserialize, Serialize};

/// A PCIe generation, 1 to 6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PcieGen(pub u8);

impl PcieGen {
    /// Transfer rate per lane in GT/s (PCIe Base Spec 1.0–6.0).
    pub fn gt_per_s(self) -> f64 {
        match self.0 {
            1 => 2.5,
            2 => 5.0,
            3 => 8.0,
            4 => 16.0,
            5 => 32.0,
            _ => 64.0,
        }
    }

    /// Fraction of the raw bit rate left for TLPs by the line encoding:
    /// 8b/10b up to Gen2, 128b/130b for Gen3–5, and for Gen6 the 256 B FLIT
    /// of which 236 B carry TLPs (the rest is DLP, CRC and FEC).
    pub fn encoding_efficiency(self) -> f64 {
        match self.0 {
            1 | 2 => 8.0 / 10.0,
            3..=5 => 128.0 / 130.0,
            _ => 236.0 / 256.0,
        }
    }
}

/// Per-direction rate of TLP bytes on the wire (before DLLP/SKP overhead).
/// Gen5 x16: 63.0 GB/s; Gen4 x16: 31.5 GB/s.
pub fn raw_rate(generation: PcieGen, width: u8) -> BytesPerSec {
    let bits = generation.gt_per_s() * 1e9 * width as f64 * generation.encoding_efficiency();
    BytesPerSec((bits / 8.0).round() as u64)
}

/// Bytes a TLP costs on the wire beyond its payload.
/// Framing token with sequence number 4 B + header (3 DW = 12 B for
/// completions and 32-bit addresses, 4 DW = 16 B for 64-bit addresses) +
/// LCRC 4 B. Memory write or read request with a 64-bit address: 24 B;
/// completion with data: 20 B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TlpKind {
    /// Posted memory write (64-bit address).
    Write,
    /// Non-posted memory read request (64-bit address), header only.
    ReadRequest,
    /// Completion with data.
    Completion,
}

impl TlpKind {
    pub const fn overhead(self) -> Bytes {
        match self {
            TlpKind::Write | TlpKind::ReadRequest => Bytes(24),
            TlpKind::Completion => Bytes(20),
        }
    }
    /// Wire size of one TLP of this kind carrying `payload`.
    pub fn wire_size(self, payload: Bytes) -> Bytes {
        match self {
            TlpKind::ReadRequest => self.overhead(),
            _ => Bytes(payload.0 + self.overhead().0),
        }
    }
}

/// Link widths the spec defines (lanes).
pub const VALID_WIDTHS: [u8; 6] = [1, 2, 4, 8, 12, 16];
/// Max payload and max read request sizes the spec defines (bytes).
pub const VALID_PAYLOADS: [u64; 6] = [128, 256, 512, 1024, 2048, 4096];
/// Read completion boundaries the spec defines (bytes).
pub const VALID_RCBS: [u64; 2] = [64, 128];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_rates_match_the_spec_table() {
        let gbps = |g, w| raw_rate(PcieGen(g), w).as_gbps();
        assert!((gbps(1, 16) - 4.0).abs() < 0.02);
        assert!((gbps(3, 16) - 15.75).abs() < 0.02);
        assert!((gbps(4, 16) - 31.5).abs() < 0.02);
        assert!((gbps(5, 16) - 63.0).abs() < 0.02);
        assert!((gbps(5, 8) - 31.5).abs() < 0.02);
        assert!((gbps(6, 16) - 118.0).abs() < 0.02);
    }

    #[test]
    fn tlp_overheads() {
        assert_eq!(TlpKind::Write.wire_size(Bytes(256)), Bytes(280));
        assert_eq!(TlpKind::Completion.wire_size(Bytes(64)), Bytes(84));
        assert_eq!(TlpKind::ReadRequest.wire_size(Bytes(512)), Bytes(24));
    }
}
