//! DESIGN 14 — what binds a collective, read from the run: the ranks'
//! time in launches and barriers (from the traced collective's spans), then
//! every rate-limited resource's busy fraction over the time remote data was
//! moving (some transfer group open), and the bytes each stage rule held
//! (writes at a collapsed rate, cross-socket P2P held by its stream cap).
//!
//! The order of the tests is the rule:
//! 1. launches and barriers take more than half the ranks' busy time: `Sync`;
//! 2. most writes through a collapsing port went collapsed: `Collapse`;
//! 3. most bytes across a socket link were held by their stream's cap:
//!    `CrossSocketStream` (a capped stream leaves its link part-idle);
//! 4. a resource was busy most of the time data moved: `Resource`;
//! 5. nothing ran full: loads waited on their round trips (`ReadWindow`) or
//!    stores on their issue rate and latency (`StoreIssue`), whichever the
//!    ranks spent longer in.

use crate::actors::actor::{Span, SpanKind};
use crate::engine::ids::ChId;
use crate::model::channel::StageRule;
use crate::model::fabric::Fabric;
use contend_topo::Picos;
use contend_workload::Binding;

/// Launches and barriers above this share of the ranks' busy time bind.
pub const SYNC_SHARE: f64 = 0.5;
/// A resource busy this fraction of the moving time binds.
pub const BUSY: f64 = 0.6;
/// A collapsing port binds when this share of the writes through it went
/// at the collapsed rate (a few GB/s against a link's 50: those writes set
/// the time).
pub const COLLAPSED_SHARE: f64 = 0.5;

/// How long remote data was moving: the union of the times some transfer
/// group was open.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Moving {
    open: u32,
    since: Picos,
    total: Picos,
}

impl Moving {
    pub fn start(&mut self, now: Picos) {
        if self.open == 0 {
            self.since = now;
        }
        self.open += 1;
    }

    pub fn stop(&mut self, now: Picos) {
        self.open = self.open.saturating_sub(1);
        if self.open == 0 {
            self.total += now - self.since;
        }
    }

    /// The moving time up to `now`.
    pub fn total(&self, now: Picos) -> Picos {
        if self.open > 0 {
            self.total + (now - self.since)
        } else {
            self.total
        }
    }
}

/// What one channel did over the run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChannelUse {
    pub spec: ChId,
    pub busy_ps: f64,
    pub bytes: f64,
    pub ruled_bytes: f64,
}

/// The rule above, on one run.
pub(crate) fn binding(
    fabric: &Fabric,
    uses: &[ChannelUse],
    moving: Picos,
    spans: &[Span],
) -> Binding {
    let time = |kinds: &[SpanKind]| -> f64 {
        spans
            .iter()
            .filter(|s| kinds.contains(&s.kind))
            .map(|s| s.end_ns - s.start_ns)
            .sum()
    };
    let sync = time(&[SpanKind::Launch, SpanKind::Barrier]);
    let (load, store) = (time(&[SpanKind::Load]), time(&[SpanKind::Store]));
    let work = sync + load + store + time(&[SpanKind::Reduce]);
    if work > 0.0 && sync / work > SYNC_SHARE {
        return Binding::Sync {
            share: round3(sync / work),
        };
    }
    let moving = moving.0.max(1) as f64;
    let busy = |u: &ChannelUse| (u.busy_ps / moving).min(1.0);
    let rated = || uses.iter().filter(|u| fabric.chans[u.spec].rate.is_some());
    // the busiest, ties to the first by name
    let top = |it: &mut dyn Iterator<Item = &ChannelUse>| -> Option<ChannelUse> {
        it.fold(None, |best: Option<ChannelUse>, u| match best {
            Some(b) if busy(&b) >= busy(u) => Some(b),
            _ => Some(*u),
        })
    };
    let name = |u: &ChannelUse| fabric.chans[u.spec].name.clone();
    // the collapsing port whose traffic went collapsed the most
    let share = |u: &ChannelUse| u.ruled_bytes / u.bytes.max(1.0);
    let collapsed = uses
        .iter()
        .filter(|u| matches!(fabric.chans[u.spec].rule, StageRule::Collapse(_)))
        .fold(None, |best: Option<&ChannelUse>, u| match best {
            Some(b) if share(b) >= share(u) => Some(b),
            _ => Some(u),
        });
    if let Some(u) = collapsed.filter(|u| share(u) >= COLLAPSED_SHARE) {
        return Binding::Collapse {
            resource: name(u),
            share: round3(share(u)),
        };
    }
    // a cross-socket stage most of whose bytes its stream cap held
    let held = uses.iter().find(|u| {
        matches!(fabric.chans[u.spec].rule, StageRule::CrossSocket(_))
            && share(u) >= COLLAPSED_SHARE
    });
    if let Some(u) = held {
        return Binding::CrossSocketStream { resource: name(u) };
    }
    let busiest = top(&mut rated());
    if let Some(u) = busiest.filter(|u| busy(u) >= BUSY) {
        return Binding::Resource {
            resource: name(&u),
            busy: round3(busy(&u)),
        };
    }
    let busiest = round3(busiest.map_or(0.0, |u| busy(&u)));
    if load >= store {
        Binding::ReadWindow { busiest }
    } else {
        Binding::StoreIssue { busiest }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moving_time_is_the_union_of_open_groups() {
        let mut m = Moving::default();
        m.start(Picos(10));
        m.start(Picos(20));
        m.stop(Picos(30));
        assert_eq!(m.total(Picos(35)), Picos(25));
        m.stop(Picos(40));
        m.start(Picos(100));
        m.stop(Picos(110));
        assert_eq!(m.total(Picos(500)), Picos(40));
    }
}
