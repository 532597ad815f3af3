//! DESIGN 3 — flow-control credits at TLP fidelity: what a sender holds
//! against the limits its receiver advertises
//! ([`crate::model::credit_limits`]), and the credit returns (UpdateFC) that
//! come back one link latency plus `pcie.fc_update_ns` after the receiver
//! frees its buffer.

use crate::model::credit_limits::CreditLimit;
use contend_topo::Picos;
use std::collections::VecDeque;

/// "Infinite" credit count: larger than any sum of packets (2^61: a run
/// would spend it only after ~10^18 packets).
const INF: i64 = i64::MAX / 4;

/// Credit class of a TLP type: 0 posted, 1 non-posted, 2 completion.
pub(crate) type Class = usize;

/// What a sender holds for one receiver, and the returns on their way back.
#[derive(Clone, Debug)]
pub(crate) struct Credits {
    /// (header credits, data bytes) available per class.
    avail: [(i64, i64); 3],
    /// (time it reaches the sender, class, data bytes), sorted by time.
    /// (The class in a byte: an entry is 16 bytes, not 24.)
    returns: VecDeque<(Picos, u8, u32)>,
}

impl Credits {
    pub fn new(limits: &[CreditLimit; 3]) -> Credits {
        Credits {
            avail: limits.map(|l| (l.hdr.map_or(INF, i64::from), l.data.map_or(INF, i64::from))),
            returns: VecDeque::new(),
        }
    }

    /// Takes in every return that has reached the sender by `now`.
    #[inline]
    pub fn collect(&mut self, now: Picos) {
        while let Some(&(t, class, data)) = self.returns.front() {
            if t > now {
                break;
            }
            self.returns.pop_front();
            let a = &mut self.avail[class as usize];
            a.0 += 1;
            a.1 += data as i64;
        }
    }

    /// Whether one TLP of `class` with `data` payload bytes may go.
    #[inline]
    pub fn allows(&self, class: Class, data: u32) -> bool {
        let (h, d) = self.avail[class];
        h >= 1 && d >= data as i64
    }

    /// Spends the credits of one TLP. (An infinite count is spent from
    /// too, without a test: it stays above any sum of packets, so what
    /// [`allows`](Credits::allows) answers is the same.)
    #[inline]
    pub fn spend(&mut self, class: Class, data: u32) {
        let a = &mut self.avail[class];
        a.0 -= 1;
        a.1 -= data as i64;
    }

    /// A return arriving at `t` (kept sorted, after those at the same
    /// time; returns mostly come in time order, and then this appends).
    #[inline(always)]
    pub fn returning(&mut self, t: Picos, class: Class, data: u32) {
        let class = class as u8;
        if self.returns.back().is_none_or(|r| r.0 <= t) {
            self.returns.push_back((t, class, data));
            return;
        }
        let pos = self
            .returns
            .iter()
            .rposition(|r| r.0 <= t)
            .map_or(0, |p| p + 1);
        self.returns.insert(pos, (t, class, data));
    }

    pub fn has_returns(&self) -> bool {
        !self.returns.is_empty()
    }

    /// When a credit-blocked sender next looks: once `k` credit returns are
    /// in (receivers coalesce UpdateFC DLLPs), or the last pending one.
    pub fn coalesced_return(&self, k: u32) -> Picos {
        let k = (k.max(1) as usize).min(self.returns.len());
        self.returns
            .get(k.saturating_sub(1))
            .map_or(Picos::ZERO, |r| r.0)
    }
}

/// Whether a receiver's buffer for `class` is finite (only then do its
/// credits come back as returns).
pub(crate) fn is_finite(limits: &[CreditLimit; 3], class: Class) -> bool {
    limits[class].hdr.is_some() || limits[class].data.is_some()
}
