//! DESIGN 6 — remote polls without an event per round trip (flow
//! fidelity; the reference, a `PollDone` event per round trip, is
//! `FlowOptions::poll_every_round_trip`).
//!
//! An actor waiting on a flag in remote memory polls it every round trip:
//! the poll coming back at issue time + k × round trip is the first that
//! can see the flag. A poll that does not see it only sends the next one,
//! so a *chain* of polls is kept here as its pending poll's return time,
//! and a real `PollDone` event is pushed only where its place among the
//! events matters, exactly where today's repeated polls put it:
//!
//! - when the flag count reaches the awaited count: the pending poll sees
//!   it (it reads memory after the flag landed: a flag landing at its very
//!   time was pushed before it, else the push below would have made it
//!   real already);
//! - when anything else is pushed for the pending poll's time: the pending
//!   poll was pushed before that event (at the previous round trip), so it
//!   is made real first and pops before it;
//! - when the queue runs dry: the chain would go on polling to the run's
//!   limits, and does, one real poll per round trip.
//!
//! Between those, no event can tell a pending poll's place: it sits after
//! every event at its time (each was pushed before it), and the poll it
//! sends next was pushed after every event its own time pushed. Chains
//! pending at the same time pop in the order of their pushes: the longer
//! round trip first (pushed at an earlier time); equal round trips run in
//! step, the later-started chain first (its poll went out at a real event,
//! before the other chain's pending poll of that instant returned), chains
//! started at one instant in start order. A pending poll's (virtual) push
//! for the time the flow fidelity watches counts as a push for it.

use crate::engine::ids::ActorId;
use contend_topo::Picos;

/// One actor's chain of polls that have not seen the flag.
#[derive(Clone, Copy, Debug)]
struct Chain {
    actor: ActorId,
    /// The pending poll's return time.
    next: Picos,
    /// The round trip (never zero).
    rtt: Picos,
    /// When the chain's first poll went out, and the how-manyth chain
    /// start that was.
    start: Picos,
    nth: u64,
}

impl Chain {
    /// Order among chains pending at the same time (see the module docs).
    fn order(&self) -> (std::cmp::Reverse<Picos>, std::cmp::Reverse<Picos>, u64) {
        use std::cmp::Reverse;
        (Reverse(self.rtt), Reverse(self.start), self.nth)
    }
}

/// The chains of polls of every actor polling (at most one per actor).
#[derive(Debug)]
pub(crate) struct PollChains {
    chains: Vec<Chain>,
    /// Earliest and latest pending time (`MAX` and zero when none).
    lo: Picos,
    hi: Picos,
    started: u64,
    /// Chains being taken (a buffer reused: no allocation per take).
    taken: Vec<Chain>,
}

impl Default for PollChains {
    fn default() -> Self {
        PollChains {
            chains: vec![],
            lo: Picos(u64::MAX),
            hi: Picos::ZERO,
            started: 0,
            taken: vec![],
        }
    }
}

impl PollChains {
    pub fn is_empty(&self) -> bool {
        self.chains.is_empty()
    }

    /// Whether a push for `t` may meet a pending poll.
    #[inline]
    pub fn may_meet(&self, t: Picos) -> bool {
        t >= self.lo && t <= self.hi
    }

    /// Whether a push for `t` meets a pending poll (one returns at `t`).
    #[inline]
    pub fn meets(&self, t: Picos) -> bool {
        self.may_meet(t) && self.chains.iter().any(|c| c.next == t)
    }

    /// The earliest pending time (`MAX` when none).
    #[inline]
    pub fn earliest(&self) -> Picos {
        self.lo
    }

    fn bounds(&mut self) {
        self.lo = self
            .chains
            .iter()
            .map(|c| c.next)
            .min()
            .unwrap_or(Picos(u64::MAX));
        self.hi = self
            .chains
            .iter()
            .map(|c| c.next)
            .max()
            .unwrap_or(Picos::ZERO);
    }

    /// Actor `actor` sends its first poll at `now`; it returns `rtt` later.
    pub fn start(&mut self, actor: ActorId, now: Picos, rtt: Picos) {
        debug_assert!(rtt > Picos::ZERO && !self.chains.iter().any(|c| c.actor == actor));
        let next = now + rtt;
        self.chains.push(Chain {
            actor,
            next,
            rtt,
            start: now,
            nth: self.started,
        });
        self.started += 1;
        self.lo = self.lo.min(next);
        self.hi = self.hi.max(next);
    }

    /// Time has reached `t` (an event at `t` pops): every poll returning
    /// before it did not see its flag and sent the next; whether a chain's
    /// pending poll is now one for `watched`.
    pub fn advance(&mut self, t: Picos, watched: Picos) -> bool {
        let mut hit = false;
        for c in &mut self.chains {
            if c.next < t {
                let k = (t.0 - c.next.0).div_ceil(c.rtt.0);
                c.next = Picos(c.next.0 + k * c.rtt.0);
                hit |= c.next == watched;
            }
        }
        self.bounds();
        hit
    }

    /// Takes the chains pending at `t`, their actors into `out` in the
    /// order their polls pop.
    pub fn take_at(&mut self, t: Picos, out: &mut Vec<ActorId>) {
        if !self.chains.iter().any(|c| c.next == t) {
            return;
        }
        self.take_where(|c| c.next == t, out);
    }

    /// Takes `actor`'s chain and every chain pending at the same time whose
    /// poll pops before its, into `out` in pop order, with that time
    /// (none: `actor` has no chain).
    pub fn take_through(&mut self, actor: ActorId, out: &mut Vec<ActorId>) -> Option<Picos> {
        let i = self.chains.iter().position(|c| c.actor == actor)?;
        let mine = self.chains[i];
        let key = mine.order();
        let before = |c: &Chain| c.next == mine.next && c.order() <= key;
        // (mostly no other chain pending then pops before it: its own is
        // taken alone, the others kept in order, the bounds worked out
        // again only where it held one)
        if self.chains.iter().filter(|c| before(c)).count() == 1 {
            self.chains.remove(i);
            out.push(actor);
            if mine.next == self.lo || mine.next == self.hi {
                self.bounds();
            }
            return Some(mine.next);
        }
        self.take_where(before, out);
        Some(mine.next)
    }

    /// Takes the chains `take` picks, their actors into `out` in the order
    /// their polls pop (all pending at one time).
    fn take_where(&mut self, take: impl Fn(&Chain) -> bool, out: &mut Vec<ActorId>) {
        let at = &mut self.taken;
        self.chains.retain(|c| {
            let here = take(c);
            if here {
                at.push(*c);
            }
            !here
        });
        at.sort_by_key(Chain::order);
        out.extend(at.drain(..).map(|c| c.actor));
        self.bounds();
    }

    /// Takes every chain, into `out` as (time, actor) in pop order.
    pub fn take_all(&mut self, out: &mut Vec<(Picos, ActorId)>) {
        self.chains.sort_by_key(|c| (c.next, c.order()));
        out.extend(self.chains.drain(..).map(|c| (c.next, c.actor)));
        self.bounds();
    }

    /// Whether `actor` has a chain.
    #[cfg(test)]
    fn has(&self, actor: ActorId) -> bool {
        self.chains.iter().any(|c| c.actor == actor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOWHERE: Picos = Picos(u64::MAX);

    /// A chain's pending poll steps by whole round trips from its start:
    /// an event at a poll's time finds it still pending, one after moves
    /// it to the first return at or after the event.
    #[test]
    fn a_chain_steps_by_whole_round_trips() {
        let mut p = PollChains::default();
        p.start(ActorId(3), Picos(100), Picos(40));
        assert_eq!(p.earliest(), Picos(140));
        assert!(!p.advance(Picos(140), NOWHERE));
        assert_eq!(
            p.earliest(),
            Picos(140),
            "an event at its time: still pending"
        );
        assert!(
            p.advance(Picos(141), Picos(180)),
            "now pending at the watched time"
        );
        assert_eq!(p.earliest(), Picos(180));
        p.advance(Picos(1_000), NOWHERE);
        assert_eq!(p.earliest(), Picos(1_020));
        assert!(p.may_meet(Picos(1_020)) && !p.may_meet(Picos(1_019)));
        assert!(p.meets(Picos(1_020)) && !p.meets(Picos(1_000)));
        let mut out = vec![];
        p.take_at(Picos(1_020), &mut out);
        assert_eq!(out, vec![ActorId(3)]);
        assert!(p.is_empty() && !p.may_meet(Picos(1_020)));
    }

    /// A chain no other pending at its time pops before is taken alone:
    /// the chains after it at that time and elsewhere kept, the bounds
    /// following the chains left (as the take of several leaves them).
    #[test]
    fn a_chain_taken_alone_leaves_the_others_and_the_bounds() {
        let mut p = PollChains::default();
        p.start(ActorId(0), Picos(0), Picos(100)); // 100
        p.start(ActorId(1), Picos(0), Picos(50)); // 50
        p.start(ActorId(2), Picos(0), Picos(70)); // 70, pops first at 70
        p.start(ActorId(3), Picos(0), Picos(70)); // 70, pops after 2
        let mut out = vec![];
        assert_eq!(p.take_through(ActorId(2), &mut out), Some(Picos(70)));
        assert_eq!(out, vec![ActorId(2)]);
        assert!(p.has(ActorId(3)) && p.meets(Picos(70)));
        assert!(p.may_meet(Picos(50)) && p.may_meet(Picos(100)));
        assert!(!p.may_meet(Picos(49)) && !p.may_meet(Picos(101)));
        out.clear();
        assert_eq!(p.take_through(ActorId(0), &mut out), Some(Picos(100)));
        assert_eq!(out, vec![ActorId(0)]);
        assert!(!p.may_meet(Picos(100)) && p.may_meet(Picos(70)));
        out.clear();
        assert_eq!(p.take_through(ActorId(1), &mut out), Some(Picos(50)));
        assert_eq!(p.earliest(), Picos(70));
        assert_eq!(p.take_through(ActorId(3), &mut out), Some(Picos(70)));
        assert_eq!(out, vec![ActorId(1), ActorId(3)]);
        assert!(p.is_empty() && p.earliest() == NOWHERE && !p.may_meet(Picos(70)));
    }

    /// Chains pending at one time pop as their pushes did: the longer round
    /// trip first, then the later start, then start order; the prefix
    /// through one actor's chain is taken, the rest left.
    #[test]
    fn chains_at_one_time_pop_in_push_order() {
        let mut p = PollChains::default();
        p.start(ActorId(0), Picos(0), Picos(100)); // 100, 200, 300
        p.start(ActorId(1), Picos(100), Picos(100)); // 200, 300 (later start)
        p.start(ActorId(2), Picos(100), Picos(100)); // same start, started after 1
        p.start(ActorId(3), Picos(150), Picos(150)); // 300: longest round trip
        p.start(ActorId(4), Picos(0), Picos(7)); // elsewhere
        p.advance(Picos(300), NOWHERE);
        let mut out = vec![];
        assert_eq!(p.take_through(ActorId(1), &mut out), Some(Picos(300)));
        assert_eq!(out, vec![ActorId(3), ActorId(1)]);
        assert!(p.has(ActorId(0)) && p.has(ActorId(2)) && !p.has(ActorId(3)));
        out.clear();
        p.take_at(Picos(300), &mut out);
        assert_eq!(out, vec![ActorId(2), ActorId(0)]);
        let mut all = vec![];
        p.take_all(&mut all);
        assert_eq!(all, vec![(Picos(301), ActorId(4))]);
        assert_eq!(p.take_through(ActorId(4), &mut out), None);
    }
}
