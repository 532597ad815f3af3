//! DESIGN 5, 9, 10 — flags on collapsing ports at flow fidelity. A flag is
//! a posted write but no flow: where its path crosses a collapsing port,
//! the port's rule counts its (source, target root complex) from when it
//! gets there until the rule's window after, as the TLP fidelity's
//! sightings do packet by packet ([`crate::model::collapse`]). A sighting makes
//! the rule fire and shares no rate; the rates change where one starts or
//! ends (a tick: [`FlagSights::next`]).

use crate::engine::ids::ChId;
use contend_topo::{NodeIdx, Picos};

/// A flag seen by a collapsing port: its channel, source, target root
/// complex, and when the port counts it (`from` until `until`).
#[derive(Clone, Copy, Debug)]
struct Sight {
    chan: ChId,
    source: NodeIdx,
    target: NodeIdx,
    from: Picos,
    until: Picos,
}

/// The sightings pending or live, in the order sent.
#[derive(Debug, Default)]
pub(crate) struct FlagSights {
    sights: Vec<Sight>,
    /// When they were last looked at (those starting or ending since
    /// change their rules).
    at: Picos,
    /// What [`FlagSights::seen_on`] hands out.
    seen: Vec<(NodeIdx, NodeIdx)>,
}

impl FlagSights {
    /// A flag reaches collapsing channel `chan` at `from`, from `source`
    /// toward root complex `target`: the port counts it until `until`.
    pub fn add(&mut self, chan: ChId, source: NodeIdx, target: NodeIdx, from: Picos, until: Picos) {
        self.sights.push(Sight {
            chan,
            source,
            target,
            from,
            until,
        });
    }

    /// None pending or live: the rates are a function of the flows alone.
    pub fn is_empty(&self) -> bool {
        self.sights.is_empty()
    }

    /// Looks at them at `now`: the channels of those that started or ended
    /// since the last look go into `changed` (one that came and went
    /// between two looks changed nothing); those over leave.
    pub fn update(&mut self, now: Picos, changed: &mut Vec<ChId>) {
        let since = std::mem::replace(&mut self.at, now);
        self.sights.retain(|s| {
            let (started, over) = (s.from <= now, s.until <= now);
            if (over && s.from <= since) || (!over && started && s.from > since) {
                changed.push(s.chan);
            }
            !over
        });
    }

    /// When the next one starts or ends after `now`.
    pub fn next(&self, now: Picos) -> Option<Picos> {
        self.sights
            .iter()
            .map(|s| if s.from > now { s.from } else { s.until })
            .min()
    }

    /// What channel `chan`'s rule sees of flags at `now`: (source, target)
    /// of every live sighting there.
    pub fn seen_on(&mut self, chan: ChId, now: Picos) -> &[(NodeIdx, NodeIdx)] {
        self.seen.clear();
        self.seen.extend(
            self.sights
                .iter()
                .filter(|s| s.chan == chan && s.from <= now)
                .map(|s| (s.source, s.target)),
        );
        &self.seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sighting changes its rule where it starts and where it ends, not
    /// where it came and went between two looks; the next change is the
    /// soonest start or end; only live ones are seen.
    #[test]
    fn sightings_change_their_rules_where_they_start_and_end() {
        let (c, d) = (ChId(1), ChId(2));
        let (g0, rc) = (NodeIdx(0), NodeIdx(9));
        let mut f = FlagSights::default();
        f.add(c, g0, rc, Picos(10), Picos(30));
        f.add(d, g0, rc, Picos(12), Picos(14));
        assert_eq!(f.next(Picos(0)), Some(Picos(10)));
        assert!(f.seen_on(c, Picos(5)).is_empty());
        let mut changed = vec![];
        f.update(Picos(20), &mut changed);
        // c started; d came and went unseen
        assert_eq!(changed, vec![c]);
        assert_eq!(f.seen_on(c, Picos(20)), &[(g0, rc)]);
        assert_eq!(f.next(Picos(20)), Some(Picos(30)));
        changed.clear();
        f.update(Picos(30), &mut changed);
        assert_eq!(changed, vec![c]);
        assert!(f.is_empty());
    }
}
