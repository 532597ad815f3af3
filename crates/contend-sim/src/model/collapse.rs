//! DESIGN 5, 10 — posted-write collapse, the one rule both fidelities use,
//! set per platform on the switch or root complex that shows it: when
//! posted writes from `min_sources` or more distinct source GPUs pass the
//! watched port (a switch's uplink, or a root port into a root complex)
//! toward `min_targets` or more distinct destination root complexes at
//! once, those writes get the collapsed rate — together (`per = port`) or
//! per (source, destination root complex) pair (`per = pair`).
//!
//! Where the port collapses per TLP (`root_complex.collapse_request_bytes`
//! above 0), the read requests it passes toward other root complexes count
//! with the writes: they make the rule fire, and each takes the collapsed
//! rate as a posted write of that many bytes would. Completions are never
//! affected, nor are requests where the constant is 0.
//!
//! "At once" is what each fidelity can see: at TLP fidelity, packets seen
//! within the rule's window of each other; at flow fidelity, flows active at
//! the same instant (a fluid flow is seen continuously), and flags — posted
//! writes that are no flow — for the rule's window from when they reach
//! the port (they make the rule fire and share no rate).

use crate::engine::ids::FxMap;
use crate::model::sightings::Sightings;
use crate::params::ModelParams;
use contend_topo::{
    Bytes, BytesPerSec, CollapsePer, CollapseSpec, NodeIdx, NodeKind, Picos, Route, Topology,
};

/// The root complex a path's posted writes are bound for: the last root
/// complex the route enters (else the first it leaves).
pub(crate) fn target_root_complex(
    topo: &Topology,
    from: NodeIdx,
    route: &Route,
) -> Option<NodeIdx> {
    let is_rc = |n: &NodeIdx| matches!(topo.node(*n).kind, NodeKind::RootComplex(_));
    route
        .hops
        .iter()
        .rev()
        .map(|h| h.to)
        .chain(std::iter::once(from))
        .find(is_rc)
        .or_else(|| route.hops.iter().rev().map(|h| h.from).find(is_rc))
}

/// One collapsing port's rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CollapseRule {
    min_sources: usize,
    min_targets: usize,
    gbps: f64,
    per: CollapsePer,
    window: Picos,
    /// What a read request costs the port, in posted-write payload bytes
    /// (0: requests pass untouched).
    request_bytes: u32,
}

/// What a stage's rule sees of a packet's path: (source endpoint, target
/// root complex) for collapse, (source, destination) for cross-socket P2P.
pub(crate) type Via = (NodeIdx, NodeIdx);

/// What a collapsing port remembers at TLP fidelity: the (source, target)
/// pairs sighted within the window ([`Sightings`]: a port's writes pass it
/// at non-decreasing times, so sightings are counted off as they expire),
/// and how many sources and targets those pairs have.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recent {
    pairs: Sightings<(NodeIdx, NodeIdx)>,
    /// Per pair slot: its source's and target's slots.
    ends: Vec<(u32, u32)>,
    /// Each source's and target's slot in `per_source` / `per_target`.
    source_slot: FxMap<NodeIdx, u32>,
    target_slot: FxMap<NodeIdx, u32>,
    /// Pairs within the window per source and per target.
    per_source: Vec<u32>,
    per_target: Vec<u32>,
    /// Sources and targets within the window.
    sources: usize,
    targets: usize,
}

fn slot_of(map: &mut FxMap<NodeIdx, u32>, counts: &mut Vec<u32>, n: NodeIdx) -> u32 {
    *map.entry(n).or_insert_with(|| {
        counts.push(0);
        (counts.len() - 1) as u32
    })
}

impl Recent {
    /// Pair (`source`, `target`) writes at `now`: pairs last seen more
    /// than `window` before leave the window. Returns the (pairs, sources,
    /// targets) within it, this one included.
    #[inline]
    fn see(
        &mut self,
        source: NodeIdx,
        target: NodeIdx,
        now: Picos,
        window: Picos,
    ) -> (usize, usize, usize) {
        let Recent {
            pairs,
            ends,
            source_slot,
            target_slot,
            per_source,
            per_target,
            sources,
            targets,
        } = self;
        let seen = pairs.see((source, target), now, window, |s| {
            let (src, tgt) = ends[s as usize];
            let n = &mut per_source[src as usize];
            *n -= 1;
            *sources -= (*n == 0) as usize;
            let n = &mut per_target[tgt as usize];
            *n -= 1;
            *targets -= (*n == 0) as usize;
        });
        if seen.new {
            ends.push((
                slot_of(source_slot, per_source, source),
                slot_of(target_slot, per_target, target),
            ));
        }
        if seen.entered {
            let (src, tgt) = ends[seen.slot as usize];
            let n = &mut per_source[src as usize];
            *sources += (*n == 0) as usize;
            *n += 1;
            let n = &mut per_target[tgt as usize];
            *targets += (*n == 0) as usize;
            *n += 1;
        }
        (pairs.live(), *sources, *targets)
    }
}

fn distinct<T: std::hash::Hash + Eq + Copy>(it: impl Iterator<Item = T>) -> usize {
    let mut seen: crate::engine::ids::FxSet<T> = Default::default();
    for x in it {
        seen.insert(x);
    }
    seen.len()
}

impl CollapseRule {
    /// The rule of a port the topology marks (`spec`), as the constants
    /// say: none when `platform.collapse` is off; the rate
    /// `platform.collapse_gbps` where set, else the topology's, else
    /// `root_complex.collapse_gbps`; the other unset fields from
    /// `root_complex`'s defaults. The one place a collapse rule is made.
    pub fn of(spec: Option<&CollapseSpec>, p: &ModelParams) -> Option<CollapseRule> {
        let spec = spec.filter(|_| p.platform.collapse)?;
        let rc = &p.root_complex;
        let gbps = p
            .platform
            .collapse_gbps
            .or(spec.rate.map(|r| r.as_gbps()))
            .unwrap_or(rc.collapse_gbps);
        Some(CollapseRule {
            min_sources: spec.min_sources.unwrap_or(rc.collapse_min_sources) as usize,
            min_targets: spec.min_targets.unwrap_or(rc.collapse_min_targets) as usize,
            gbps,
            per: spec.per,
            window: spec.window.unwrap_or(rc.collapse_window_ns.to_picos()),
            request_bytes: rc.collapse_request_bytes.round() as u32,
        })
    }

    /// What a read request costs the port, as the payload bytes of a
    /// posted write that costs the same; `None` where requests pass
    /// untouched.
    #[inline]
    pub fn request_bytes(&self) -> Option<u32> {
        (self.request_bytes > 0).then_some(self.request_bytes)
    }

    /// Whether this many distinct sources and targets collapse the port.
    #[inline]
    pub fn fires(&self, sources: usize, targets: usize) -> bool {
        sources >= self.min_sources && targets >= self.min_targets
    }

    /// TLP fidelity: a posted write of `wire` bytes (or a read request that
    /// costs as much, [`CollapseRule::request_bytes`]) from `source` toward
    /// `target` passes the port at `now`. Returns its serialization time
    /// at the collapsed rate if the rule fires.
    pub fn observe(
        &self,
        recent: &mut Recent,
        source: NodeIdx,
        target: NodeIdx,
        now: Picos,
        wire: u32,
    ) -> Option<Picos> {
        let (live, sources, targets) = recent.see(source, target, now, self.window);
        if !self.fires(sources, targets) {
            return None;
        }
        let pairs = match self.per {
            CollapsePer::Port => 1.0,
            CollapsePer::Pair => live as f64,
        };
        Some(BytesPerSec::from_gbps(self.gbps * pairs).time_for(Bytes(wire as u64)))
    }

    /// How long after a packet passes the rule still counts its source and
    /// target.
    #[inline]
    pub fn window(&self) -> Picos {
        self.window
    }

    /// Flow fidelity: the flows whose writes (or read requests) pass the
    /// port now, as (flow, source, target), and the (source, target) of
    /// posted writes that are no flow (flags) seen within the window.
    /// Returns, if the rule fires, each group of flows that shares a
    /// collapsed rate (bytes per second), in a fixed order: what was only
    /// seen makes the rule fire and shares no rate.
    pub fn collapsed_groups(
        &self,
        members: &[(usize, NodeIdx, NodeIdx)],
        seen: &[(NodeIdx, NodeIdx)],
    ) -> Vec<(f64, Vec<usize>)> {
        if members.is_empty() {
            return vec![];
        }
        let sources = distinct(members.iter().map(|m| m.1).chain(seen.iter().map(|s| s.0)));
        let targets = distinct(members.iter().map(|m| m.2).chain(seen.iter().map(|s| s.1)));
        if !self.fires(sources, targets) {
            return vec![];
        }
        match self.per {
            CollapsePer::Port => vec![(self.gbps * 1e9, members.iter().map(|m| m.0).collect())],
            CollapsePer::Pair => {
                // pairs in the order they first appear
                let mut at: FxMap<(NodeIdx, NodeIdx), usize> = Default::default();
                let mut pairs: Vec<(f64, Vec<usize>)> = vec![];
                for &(f, s, t) in members {
                    let i = *at.entry((s, t)).or_insert_with(|| {
                        pairs.push((self.gbps * 1e9, vec![]));
                        pairs.len() - 1
                    });
                    pairs[i].1.push(f);
                }
                pairs
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference of [`Recent::see`]: every pair's last sighting, all
    /// of them looked over (and their sources and targets counted in sets)
    /// at every write.
    fn see_by_scan(
        recent: &mut Vec<(NodeIdx, NodeIdx, Picos)>,
        source: NodeIdx,
        target: NodeIdx,
        now: Picos,
        window: Picos,
    ) -> (usize, usize, usize) {
        recent.retain(|&(_, _, t)| now.saturating_sub(t) <= window);
        match recent
            .iter_mut()
            .find(|(s, tg, _)| *s == source && *tg == target)
        {
            Some(e) => e.2 = now,
            None => recent.push((source, target, now)),
        }
        let sources = distinct(recent.iter().map(|e| e.0));
        let targets = distinct(recent.iter().map(|e| e.1));
        (recent.len(), sources, targets)
    }

    proptest! {
        /// Pairs, sources and targets counted as their sightings expire
        /// match a scan of every pair at every write, over times that
        /// never go back (some equal, some past the window).
        #[test]
        fn expiring_sightings_count_as_a_scan_does(
            steps in proptest::collection::vec((0u32..4, 0u32..3, 0u64..3, 0u64..40_000), 1..300),
            window in 0u64..30_000,
        ) {
            let window = Picos(window);
            let mut recent = Recent::default();
            let mut scan = vec![];
            let mut now = Picos::ZERO;
            for (s, t, same, dt) in steps {
                if same != 0 {
                    now += Picos(dt);
                }
                let (s, t) = (NodeIdx(s), NodeIdx(10 + t));
                let want = see_by_scan(&mut scan, s, t, now, window);
                prop_assert_eq!(recent.see(s, t, now, window), want);
            }
        }
    }

    fn spec(min_sources: u32, per: CollapsePer) -> CollapseSpec {
        CollapseSpec {
            min_sources: Some(min_sources),
            min_targets: Some(2),
            rate: Some(BytesPerSec::from_gbps(2.7)),
            per,
            window: None,
            note: None,
        }
    }

    fn rule(min_sources: u32, per: CollapsePer) -> CollapseRule {
        CollapseRule::of(Some(&spec(min_sources, per)), &ModelParams::default())
            .expect("collapse is on by default")
    }

    #[test]
    fn the_platform_constants_replace_the_topology_and_can_turn_collapse_off() {
        let mut p = ModelParams::default();
        let s = spec(2, CollapsePer::Port);
        assert_eq!(CollapseRule::of(Some(&s), &p).unwrap().gbps, 2.7);
        assert!(CollapseRule::of(None, &p).is_none());
        p.platform.collapse_gbps = Some(3.1);
        assert_eq!(CollapseRule::of(Some(&s), &p).unwrap().gbps, 3.1);
        let unrated = CollapseSpec {
            rate: None,
            ..s.clone()
        };
        assert_eq!(CollapseRule::of(Some(&unrated), &p).unwrap().gbps, 3.1);
        p.platform.collapse_gbps = None;
        assert_eq!(
            CollapseRule::of(Some(&unrated), &p).unwrap().gbps,
            p.root_complex.collapse_gbps
        );
        p.platform.collapse = false;
        assert!(CollapseRule::of(Some(&s), &p).is_none());
    }

    #[test]
    fn collapse_needs_enough_sources_and_targets_at_once() {
        let (g0, g1, rc2, rc3) = (NodeIdx(0), NodeIdx(1), NodeIdx(2), NodeIdx(3));
        let r = rule(2, CollapsePer::Port);
        // one GPU to two root complexes: no collapse with min_sources = 2
        let mut recent = Recent::default();
        assert!(r.observe(&mut recent, g0, rc2, Picos(0), 280).is_none());
        assert!(r.observe(&mut recent, g0, rc3, Picos(1), 280).is_none());
        // a second GPU: collapse
        assert!(r.observe(&mut recent, g1, rc3, Picos(2), 280).is_some());
        // long after: the window forgets, no collapse
        let late = Picos::from_us(100);
        assert!(r.observe(&mut recent, g1, rc3, late, 280).is_none());
        // two GPUs to one root complex: no collapse
        assert!(
            r.collapsed_groups(&[(0, g0, rc2), (1, g1, rc2)], &[])
                .is_empty()
        );
        let g = r.collapsed_groups(&[(0, g0, rc2), (1, g1, rc3)], &[]);
        assert_eq!(g, vec![(2.7e9, vec![0, 1])]);
        let p = rule(2, CollapsePer::Pair)
            .collapsed_groups(&[(0, g0, rc2), (1, g1, rc3), (2, g1, rc3)], &[]);
        assert_eq!(p, vec![(2.7e9, vec![0]), (2.7e9, vec![1, 2])]);
        // a flag seen from a second GPU toward a second root complex makes
        // one flow's writes collapse, and shares no rate; seen alone, it
        // collapses nothing
        assert!(r.collapsed_groups(&[(0, g0, rc2)], &[]).is_empty());
        assert_eq!(
            r.collapsed_groups(&[(0, g0, rc2)], &[(g1, rc3)]),
            vec![(2.7e9, vec![0])]
        );
        assert!(r.collapsed_groups(&[], &[(g0, rc2), (g1, rc3)]).is_empty());
    }
}
