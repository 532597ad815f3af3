//! The stated limits of a run: simulated time, events, and events at one
//! instant (a run that stops advancing time). A run that reaches one ends
//! with an error naming it, never loops on; the defaults are far above any
//! verify step or sweep contend models.

use contend_topo::Picos;

/// Limits one run obeys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLimits {
    /// Simulated time a run may reach.
    pub max_time: Picos,
    /// Events a run may process.
    pub max_events: u64,
    /// Events in a row at one simulated instant (time stands still).
    pub max_events_per_instant: u64,
}

impl Default for RunLimits {
    /// One hour of simulated time, 2^36 events (hours of wall time), 10^8
    /// events at one instant.
    fn default() -> Self {
        RunLimits {
            max_time: Picos(3_600 * 1_000_000_000_000),
            max_events: 1 << 36,
            max_events_per_instant: 100_000_000,
        }
    }
}

/// Which limit a run reached, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitHit {
    Time { limit: Picos },
    Events { limit: u64, at: Picos },
    Instant { limit: u64, at: Picos },
}

impl std::fmt::Display for LimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitHit::Time { limit } => write!(
                f,
                "simulated time passed the run limit of {} s (RunLimits::max_time)",
                limit.0 / 1_000_000_000_000
            ),
            LimitHit::Events { limit, at } => write!(
                f,
                "the run processed {limit} events by simulated time {at} (RunLimits::max_events)"
            ),
            LimitHit::Instant { limit, at } => write!(
                f,
                "{limit} events in a row at simulated time {at} without time advancing (RunLimits::max_events_per_instant)"
            ),
        }
    }
}

/// Counts what [`RunLimits`] bounds as a run goes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LimitClock {
    limits: RunLimits,
    instant: Picos,
    at_instant: u64,
}

impl LimitClock {
    pub fn new(limits: RunLimits) -> LimitClock {
        LimitClock {
            limits,
            instant: Picos::ZERO,
            at_instant: 0,
        }
    }
    /// One more event at `t` (the `events`-th): the limit it reaches, if any.
    #[inline]
    pub fn check(&mut self, t: Picos, events: u64) -> Option<LimitHit> {
        if t == self.instant {
            self.at_instant += 1;
            if self.at_instant > self.limits.max_events_per_instant {
                return Some(LimitHit::Instant {
                    limit: self.limits.max_events_per_instant,
                    at: t,
                });
            }
        } else {
            self.instant = t;
            self.at_instant = 1;
        }
        if t > self.limits.max_time {
            return Some(LimitHit::Time {
                limit: self.limits.max_time,
            });
        }
        if events > self.limits.max_events {
            return Some(LimitHit::Events {
                limit: self.limits.max_events,
                at: t,
            });
        }
        None
    }
}
