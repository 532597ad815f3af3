//! The resumed solve of a [`LiveMaxMin`] ([`LiveMaxMin::solve_resumed`]):
//! progressive filling restarted at the first round the changes since the
//! last solve can reach, the rounds below it kept (see [`Trace`]); its
//! reference is [`LiveMaxMin::solve`], every solve from round 0 (a
//! property test here holds them together within 1e-9, and checks the
//! resumed rates are a max-min fair allocation).

use super::LiveMaxMin;

/// A flow slot's round in a [`Trace`]: not frozen yet, frozen at the start
/// (a cap of 0), or removed since the last solve after freezing in a round.
const OPEN: u32 = u32::MAX;
const AT_START: u32 = u32::MAX - 1;
const GONE: u32 = u32::MAX - 2;
/// A constraint's saturation round in a [`Trace`]: none.
const NO_ROUND: u32 = u32::MAX;

/// Resumed solves in a row at most: the next starts from round 0 (the
/// capacity left that the resumed solves keep, given back and taken again
/// over many solves, gathers rounding; a solve from round 0 starts it
/// afresh from the capacities).
const RESUMES_MAX: u32 = 1024;

/// Relative margin of the levels and capacities a change is compared with
/// (the solve's own tolerances are 1e-12): a change is taken to touch the
/// first round whose level comes within it (earlier is safe, only slower).
const MARGIN: f64 = 1e-9;

/// Flows from which a solve resumes the last one's filling: with fewer,
/// keeping its trajectory costs more than the rounds it saves (the default
/// 8-GPU verify step at flow: 1,346 M instructions solving from round 0,
/// 1,436 M resumed, by cachegrind); the 32- and 64-GPU ones have thousands.
const RESUME_FROM_FLOWS: usize = 512;

/// The trajectory of the last progressive filling (each round's level and
/// the flows it froze in freeze order; per flow its round, per constraint
/// its saturation round and open users) and the changes made since (flows
/// added, uses added to them, capacities changed, and whether a change it
/// does not follow was made). The state the last solve ended in (each
/// constraint's capacity left, every flow frozen at its rate) is kept in the
/// solver's own arrays: a solve that finds every change unable to touch
/// the rounds below `k` rolls that state back to the start of round `k`
/// (the flows frozen from round `k` on open again and give back what they
/// took above that round's level), applies the changes and fills from
/// there: below the lowest level any change can affect, every saturation
/// is the one a solve from scratch makes.
#[derive(Clone, Debug, Default)]
pub(super) struct Trace {
    /// Whether the rounds recorded are the last solve's, and resumed
    /// solves since a solve from round 0.
    valid: bool,
    resumes: u32,
    /// A change the resumed solve does not follow was made (a constraint
    /// turned on or off, its users cleared, a use added to a flow solved
    /// before): the next solve starts from round 0.
    full: bool,
    /// Per round, its level when it ended (infinite: the round that gave
    /// the open flows their infinite caps).
    level: Vec<f64>,
    /// Per round, the flows it froze in order, at `froze[froze_at[i]..
    /// froze_at[i + 1]]`.
    froze: Vec<u32>,
    froze_at: Vec<usize>,
    /// Per flow slot, its round ([`OPEN`], [`AT_START`], [`GONE`] or a
    /// round) and whether it was added since the last solve; those added.
    round: Vec<u32>,
    fresh: Vec<bool>,
    added: Vec<u32>,
    /// Per constraint, the round it saturated in ([`NO_ROUND`]: none), its
    /// open users (its open weight is 0 exactly when none), its capacity at
    /// the last solve where changed since, and those changed.
    sat_round: Vec<u32>,
    open_users: Vec<u32>,
    old_cap: Vec<f64>,
    cap_marked: Vec<bool>,
    cap_changed: Vec<u32>,
    /// Constraints made by the last solve.
    constraints: usize,
    /// Per constraint, the open weight joining it, and a mark; those marked.
    join_w: Vec<f64>,
    join_mark: Vec<bool>,
    joined: Vec<u32>,
    /// Per constraint, whether a resumed solve's changes touched it; those.
    touch_mark: Vec<bool>,
    touched: Vec<u32>,
    /// Flows open again or for the first time, and open flows at the
    /// restored round.
    joiners: Vec<u32>,
    open: Vec<u32>,
}

/// What a change to the kept problem means for the trace.
impl Trace {
    /// A new constraint with this capacity.
    pub(super) fn new_constraint(&mut self, capacity: f64) {
        self.sat_round.push(NO_ROUND);
        self.old_cap.push(capacity);
        self.cap_marked.push(false);
        self.join_w.push(0.0);
        self.join_mark.push(false);
        self.open_users.push(0);
        self.touch_mark.push(false);
    }

    /// A new flow slot.
    pub(super) fn new_slot(&mut self) {
        self.round.push(OPEN);
        self.fresh.push(false);
    }

    /// A flow added in slot `s` (with no rounds recorded the next solve
    /// starts from round 0 and needs no account of the changes).
    #[inline]
    pub(super) fn flow_added(&mut self, s: u32) {
        let si = s as usize;
        self.round[si] = OPEN;
        if self.valid && !self.fresh[si] {
            self.fresh[si] = true;
            self.added.push(s);
        }
    }

    /// Constraint `r`'s capacity, `old` until now, is about to change.
    #[inline]
    pub(super) fn capacity_changing(&mut self, r: u32, old: f64) {
        let ri = r as usize;
        if self.valid && !self.cap_marked[ri] {
            self.cap_marked[ri] = true;
            self.old_cap[ri] = old;
            self.cap_changed.push(r);
        }
    }

    /// A use added to flow slot `s`: one solved before is a change the
    /// resumed solve does not follow.
    pub(super) fn use_added(&mut self, s: u32) {
        if !self.fresh[s as usize] {
            self.full = true;
        }
    }

    /// A change the resumed solve does not follow (a constraint turned on
    /// or off, its users cleared): the next solve starts from round 0.
    pub(super) fn unfollowed(&mut self) {
        self.full = true;
    }
}

/// The resumed solve: progressive filling restarted at the first round a
/// change since the last solve can affect (see `Trace`, this module's record of the last filling).
impl LiveMaxMin {
    /// Max-min fair rates of the flows `slots` (all the flows, in the order
    /// they were added) with these caps, into [`LiveMaxMin::rate`], as
    /// [`LiveMaxMin::solve`] gives them to within rounding (the same rules
    /// and tolerances decide the same saturations): the rounds below the
    /// first one a change since the last solve can reach are kept, the
    /// rest filled again from the state that round began in.
    ///
    /// Why the kept rounds stand: a constraint saturates below level `L`
    /// only if its capacity left reaches 0 there; a change moves the
    /// capacity left of the constraints it touches only, and (i) a flow that
    /// leaves or stops (cap to 0) gives back what it used, so its constraints
    /// reach 0 no sooner, while it froze at its rate: the rounds before
    /// the one it froze in stand; (ii) a flow that joins (or starts) takes
    /// `w × level` of each of its constraints, whose capacity left reaches 0
    /// at the first round end where `left - w × level` does (all joiners of
    /// a constraint together), and freezes at its cap if not sooner; (iii) a
    /// cap that changes binds no sooner than the lesser of the flow's old
    /// rate and the new cap (and not at all where the flow froze on a
    /// constraint below both); (iv) a capacity that grows moves its
    /// constraint's saturation only, one that shrinks as joiners do.
    /// Constraints turned on or off, their users cleared, or a use added to
    /// a flow already solved: the solve starts from round 0.
    ///
    /// With fewer than `RESUME_FROM_FLOWS` (512) flows it solves from round 0
    /// untraced ([`LiveMaxMin::solve_untraced`]).
    pub fn solve_resumed(&mut self, slots: &[u32], caps: &[f64]) {
        if slots.len() < RESUME_FROM_FLOWS {
            self.solve_untraced(slots, caps);
        } else {
            self.solve_resuming(slots, caps);
        }
    }

    /// A resumed solve wherever the changes allow one (else from round 0,
    /// traced).
    fn solve_resuming(&mut self, slots: &[u32], caps: &[f64]) {
        match self.resume_round(slots, caps) {
            Some(k) if k > 0 => {
                self.trace.resumes += 1;
                self.resume(k);
            }
            // nothing kept: filling from the capacities is the cheaper
            // start (no flow given back what it took)
            _ => {
                self.trace.resumes = 0;
                self.start(slots, caps);
            }
        }
        self.trace.constraints = self.capacity.len();
        self.settle_trace();
    }

    /// Solves from round 0 as [`LiveMaxMin::solve`] does, recording no
    /// rounds: the next [`LiveMaxMin::solve_resumed`] starts from round 0
    /// too (the plain solve where few flows make a trace cost more than
    /// it saves).
    pub fn solve_untraced(&mut self, slots: &[u32], caps: &[f64]) {
        self.solve(slots, caps);
        self.untraced();
    }

    /// A solve recorded no rounds: the next [`LiveMaxMin::solve_resumed`]
    /// starts from round 0.
    pub(super) fn untraced(&mut self) {
        self.trace.valid = false;
        self.trace.resumes = 0;
        self.settle_trace();
    }

    /// The changes since the last solve are taken in: none is pending.
    fn settle_trace(&mut self) {
        let t = &mut self.trace;
        for &s in &t.added {
            t.fresh[s as usize] = false;
        }
        t.added.clear();
        for &r in &t.cap_changed {
            t.cap_marked[r as usize] = false;
        }
        t.cap_changed.clear();
        for &r in &t.joined {
            t.join_mark[r as usize] = false;
            t.join_w[r as usize] = 0.0;
        }
        t.joined.clear();
        t.full = false;
    }

    /// The first round of the last solve a change since can affect (the
    /// number of rounds: none can), or `None` where the solve must start
    /// from round 0. Takes in the new caps, notes the flows that join the
    /// filling (added or started) and marks those removed after freezing
    /// in a round. Before the flush: the removed flows are still there.
    fn resume_round(&mut self, slots: &[u32], caps: &[f64]) -> Option<usize> {
        let t = &mut self.trace;
        if !t.valid || t.full || t.resumes >= RESUMES_MAX {
            return None;
        }
        let rounds = t.level.len();
        let level = &t.level;
        let round_of = |l: f64| level.partition_point(|&x| x < l * (1.0 - MARGIN));
        let mut k = rounds;
        for &s in &self.removed {
            let si = s as usize;
            if t.fresh[si] {
                continue;
            }
            match t.round[si] {
                AT_START => {}
                OPEN | GONE => return None,
                f => {
                    k = k.min(f as usize);
                    t.round[si] = GONE;
                }
            }
        }
        t.joiners.clear();
        for (&s, &c) in slots.iter().zip(caps) {
            let si = s as usize;
            let old = self.cap[si];
            let join = if t.fresh[si] {
                self.cap[si] = c;
                if c <= 0.0 {
                    self.rate[si] = 0.0;
                    self.frozen[si] = true;
                    t.round[si] = AT_START;
                    continue;
                }
                true
            } else {
                if c == old {
                    continue;
                }
                self.cap[si] = c;
                match (old > 0.0, c > 0.0) {
                    (false, false) => false,
                    (false, true) => true,
                    (true, false) => {
                        match t.round[si] {
                            OPEN | AT_START | GONE => return None,
                            f => k = k.min(f as usize),
                        }
                        false
                    }
                    (true, true) => {
                        let r = self.rate[si];
                        // frozen on a constraint below both caps: neither binds
                        if r >= old.min(c) * (1.0 - MARGIN) {
                            k = k.min(round_of(r.min(c)));
                        }
                        false
                    }
                }
            };
            if join {
                k = k.min(round_of(c));
                t.joiners.push(s);
                let at = self.at[si] as usize;
                for &(r, w) in &self.uses[at..at + self.len[si] as usize] {
                    let ri = r as usize;
                    if !t.join_mark[ri] {
                        t.join_mark[ri] = true;
                        t.joined.push(r);
                    }
                    t.join_w[ri] += w;
                }
            }
        }
        for &r in &t.cap_changed {
            if !t.join_mark[r as usize] {
                t.join_mark[r as usize] = true;
                t.joined.push(r);
            }
        }
        for &r in &t.joined {
            let ri = r as usize;
            if !self.active[ri] || k == 0 {
                continue;
            }
            let w = t.join_w[ri];
            let now = self.capacity[ri];
            let (base, grow, sat) = if ri >= t.constraints {
                (now, 0.0, NO_ROUND)
            } else if t.cap_marked[ri] {
                (t.old_cap[ri], now - t.old_cap[ri], t.sat_round[ri])
            } else {
                (now, 0.0, t.sat_round[ri])
            };
            if grow > 0.0 {
                k = k.min(sat as usize);
            }
            if w <= 0.0 && grow >= 0.0 {
                continue;
            }
            // the first round (before `k` and its saturation round) whose
            // end leaves no room: what the flows solved before took of it
            // by a round's end grows with the round, as the joiners' share
            // does, so the room left falls round by round and the first
            // round without any is found by bisection
            let hi = k.min(sat as usize);
            let users = &self.users[ri];
            let (rate, fresh) = (&self.rate, &t.fresh);
            let no_room = |j: usize| {
                let l = level[j];
                let mut taken = 0.0;
                for &(f, uw) in users {
                    let fi = f as usize;
                    let x = rate[fi];
                    if fresh[fi] || x <= 0.0 {
                        continue;
                    }
                    taken += uw * x.min(l);
                }
                let join = if w > 0.0 { w * l } else { 0.0 };
                base - taken + grow - join <= now * MARGIN
            };
            let (mut lo, mut up) = (0, hi);
            while lo < up {
                let mid = lo + (up - lo) / 2;
                if no_room(mid) {
                    up = mid;
                } else {
                    lo = mid + 1;
                }
            }
            k = k.min(lo).min(sat as usize);
        }
        Some(k)
    }

    /// Marks constraint `r` touched by a resumed solve's changes.
    fn touch(t: &mut Trace, r: u32) {
        if !t.touch_mark[r as usize] {
            t.touch_mark[r as usize] = true;
            t.touched.push(r);
        }
    }

    /// Rolls the state the last solve ended in back to the start of its
    /// round `k`, applies the changes since, and fills from there.
    fn resume(&mut self, k: usize) {
        let mut t = std::mem::take(&mut self.trace);
        let level = if k == 0 { 0.0 } else { t.level[k - 1] };
        t.open.clear();
        t.touched.clear();
        self.capped.clear();
        let mut least_cap = f64::INFINITY;
        // flows frozen from round k on open again at `level` (or, gone or
        // stopped, give back all they took); before the flush, while the
        // gone ones still have their uses
        for i in t.froze_at[k]..t.froze.len() {
            let s = t.froze[i];
            let si = s as usize;
            let x = self.rate[si];
            let open = t.round[si] != GONE && self.cap[si] > 0.0;
            let at = self.at[si] as usize;
            for &(r, w) in &self.uses[at..at + self.len[si] as usize] {
                let ri = r as usize;
                // (an unbounded flow took nothing of a constraint taking part)
                let took = if x.is_finite() { w * x } else { 0.0 };
                if open {
                    self.left[ri] += took - w * level;
                    self.wsum[ri] += w;
                    t.open_users[ri] += 1;
                } else {
                    self.left[ri] += took;
                }
                Self::touch(&mut t, r);
            }
            if !open {
                if t.round[si] != GONE {
                    t.round[si] = AT_START;
                    self.rate[si] = 0.0;
                }
                continue;
            }
            self.frozen[si] = false;
            t.round[si] = OPEN;
            t.open.push(s);
            let c = self.cap[si];
            if c.is_finite() {
                self.capped.push(s);
                least_cap = least_cap.min(c);
            }
        }
        self.flush();
        for i in 0..t.joiners.len() {
            let s = t.joiners[i];
            let si = s as usize;
            self.frozen[si] = false;
            self.rate[si] = 0.0;
            t.round[si] = OPEN;
            t.open.push(s);
            let c = self.cap[si];
            if c.is_finite() {
                self.capped.push(s);
                least_cap = least_cap.min(c);
            }
            let at = self.at[si] as usize;
            for &(r, w) in &self.uses[at..at + self.len[si] as usize] {
                let ri = r as usize;
                self.wsum[ri] += w;
                t.open_users[ri] += 1;
                self.left[ri] -= w * level;
                Self::touch(&mut t, r);
            }
        }
        for i in 0..t.cap_changed.len() {
            let r = t.cap_changed[i];
            let ri = r as usize;
            self.left[ri] += self.capacity[ri] - t.old_cap[ri];
            Self::touch(&mut t, r);
        }
        // the constraints taking part at the start of round k: those touched
        // with open users that had not saturated before it (every constraint
        // with open users then has one frozen from round k on, or joining)
        self.act.clear();
        for i in 0..t.touched.len() {
            let r = t.touched[i];
            let ri = r as usize;
            t.touch_mark[ri] = false;
            if t.sat_round[ri] != NO_ROUND && t.sat_round[ri] as usize >= k {
                t.sat_round[ri] = NO_ROUND;
            }
            if t.open_users[ri] == 0 {
                self.wsum[ri] = 0.0;
            }
            if self.active[ri] && self.wsum[ri] > 1e-15 {
                debug_assert_eq!(
                    t.sat_round[ri], NO_ROUND,
                    "constraint {r} saturated before round {k}"
                );
                self.sat[ri] = false;
                self.act.push(r);
            }
        }
        t.level.truncate(k);
        t.froze.truncate(t.froze_at[k]);
        t.froze_at.truncate(k + 1);
        let open = t.open.len();
        self.trace = t;
        self.fill(open, least_cap, level);
    }

    /// The state at the start of round 0, and a fill from there.
    fn start(&mut self, slots: &[u32], caps: &[f64]) {
        self.flush();
        self.drop_unused();
        let mut t = std::mem::take(&mut self.trace);
        t.sat_round.fill(NO_ROUND);
        t.open_users.fill(0);
        self.left.copy_from_slice(&self.capacity);
        self.wsum.fill(0.0);
        t.open.clear();
        self.capped.clear();
        let mut least_cap = f64::INFINITY;
        for (&s, &c) in slots.iter().zip(caps) {
            let si = s as usize;
            self.rate[si] = 0.0;
            self.cap[si] = c;
            let frozen = c <= 0.0;
            self.frozen[si] = frozen;
            if frozen {
                t.round[si] = AT_START;
            } else {
                t.round[si] = OPEN;
                t.open.push(s);
                if c.is_finite() {
                    self.capped.push(s);
                    least_cap = least_cap.min(c);
                }
            }
        }
        self.act.clear();
        for &r in &self.live {
            let ri = r as usize;
            let (mut sum, mut n) = (0.0, 0);
            for &(f, w) in &self.users[ri] {
                if !self.frozen[f as usize] {
                    sum += w;
                    n += 1;
                }
            }
            self.wsum[ri] = sum;
            t.open_users[ri] = n;
            if self.active[ri] && sum > 1e-15 {
                self.act.push(r);
                self.sat[ri] = false;
            }
        }
        t.level.clear();
        t.froze.clear();
        t.froze_at.clear();
        t.froze_at.push(0);
        t.valid = true;
        let open = t.open.len();
        self.trace = t;
        self.fill(open, least_cap, 0.0);
    }

    /// Progressive filling from the state set up at `level` (as
    /// [`LiveMaxMin::solve`] fills: the same rules and tolerances),
    /// recording each round.
    fn fill(&mut self, mut open: usize, mut least_cap: f64, mut level: f64) {
        let mut t = std::mem::take(&mut self.trace);
        while open > 0 {
            let round = t.level.len() as u32;
            let mut least_step = f64::INFINITY;
            for &r in &self.act {
                let ri = r as usize;
                least_step = least_step.min(self.left[ri] / self.wsum[ri]);
            }
            let delta = least_step.min(least_cap - level);
            if !delta.is_finite() {
                for i in 0..t.open.len() {
                    let s = t.open[i];
                    let si = s as usize;
                    if !self.frozen[si] {
                        self.rate[si] = self.cap[si];
                        t.round[si] = round;
                        t.froze.push(s);
                        freeze_counted(self, &mut t, s);
                    }
                }
                t.level.push(f64::INFINITY);
                t.froze_at.push(t.froze.len());
                break;
            }
            let delta = delta.max(0.0);
            level += delta;
            let mut cand = std::mem::take(&mut self.cand);
            cand.clear();
            for &r in &self.act {
                let ri = r as usize;
                self.left[ri] -= self.wsum[ri] * delta;
                if self.left[ri] <= self.capacity[ri] * 1e-12 {
                    cand.push((self.key(r), r));
                }
            }
            if cand.len() > 1 {
                cand.sort_unstable_by_key(|c| c.0);
            }
            for &(_, r) in &cand {
                let ri = r as usize;
                // an earlier saturation this round may have emptied it
                if self.wsum[ri] > 1e-15 {
                    self.sat[ri] = true;
                    t.sat_round[ri] = round;
                    for i in 0..self.users[ri].len() {
                        let f = self.users[ri][i].0;
                        let fi = f as usize;
                        if !self.frozen[fi] {
                            self.rate[fi] = level;
                            t.round[fi] = round;
                            t.froze.push(f);
                            open -= freeze_counted(self, &mut t, f);
                        }
                    }
                }
            }
            self.cand = cand;
            // capped flows reaching their cap freeze, in order
            least_cap = f64::INFINITY;
            let mut capped = std::mem::take(&mut self.capped);
            let mut kept = 0;
            for i in 0..capped.len() {
                let s = capped[i];
                let si = s as usize;
                if self.frozen[si] {
                    continue;
                }
                if level >= self.cap[si] * (1.0 - 1e-12) {
                    self.rate[si] = self.cap[si];
                    t.round[si] = round;
                    t.froze.push(s);
                    open -= freeze_counted(self, &mut t, s);
                    continue;
                }
                least_cap = least_cap.min(self.cap[si]);
                capped[kept] = s;
                kept += 1;
            }
            capped.truncate(kept);
            self.capped = capped;
            let (sat, wsum) = (&self.sat, &self.wsum);
            self.act
                .retain(|&r| !sat[r as usize] && wsum[r as usize] > 1e-15);
            t.level.push(level);
            t.froze_at.push(t.froze.len());
        }
        self.trace = t;
    }
}

/// Freezes flow slot `f` of a [`LiveMaxMin`] in a resumed solve, counting
/// its constraints' open users (an open weight with none is 0 exactly);
/// 1 if it was open.
fn freeze_counted(m: &mut LiveMaxMin, t: &mut Trace, f: u32) -> usize {
    let fi = f as usize;
    if m.frozen[fi] {
        return 0;
    }
    m.frozen[fi] = true;
    let at = m.at[fi] as usize;
    for &(r, w) in &m.uses[at..at + m.len[fi] as usize] {
        let ri = r as usize;
        t.open_users[ri] -= 1;
        m.wsum[ri] = if t.open_users[ri] == 0 {
            0.0
        } else {
            m.wsum[ri] - w
        };
    }
    1
}

#[cfg(test)]
mod tests;
