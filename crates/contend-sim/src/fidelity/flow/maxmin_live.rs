//! DESIGN 9 — the max-min problem the flow fidelity keeps across flow
//! starts and finishes ([`LiveMaxMin`]): flows and constraints in stable
//! slots, each constraint's users kept in flow order, solved round by round
//! as [`MaxMin::solve_flows`] solves the same flows, to the bit (a
//! property test here holds them together); or resumed from the first
//! round the changes since the last solve can reach
//! ([`LiveMaxMin::solve_resumed`], within rounding: another property test).

// named in the docs, and by the tests' solve from scratch
#[cfg(any(doc, test))]
use crate::fidelity::flow::maxmin::MaxMin;

/// A constraint of a [`LiveMaxMin`] numbered, in the order its saturations
/// are handled, by the first flow that uses it (as [`MaxMin::solve_flows`]
/// numbers channels met walking the flows in order); any other group `g`
/// comes after all of those, groups in order, each group's constraints by
/// their first flow.
pub const FIRST_MET: u32 = u32::MAX;

/// Holes a [`LiveMaxMin`]'s arena of uses may hold beyond its live rooms
/// before it is packed (none in tests, so that they pack it often).
#[cfg(not(test))]
const PACK_SLACK: usize = 4096;
#[cfg(test)]
const PACK_SLACK: usize = 0;

/// A max-min problem kept across flow changes: flows and constraints live in
/// stable slots, each constraint keeps its users in flow order and each flow
/// its uses, updated as flows come and go (not rebuilt per solve). Its
/// solve does, operation for operation, what [`MaxMin::solve_flows`] does
/// on the same flows in order with the constraints numbered as the flow
/// fidelity numbers them (see [`FIRST_MET`]): the same rates to the bit
/// (a property test holds them together). Flows are ordered by when they
/// were added.
#[derive(Clone, Debug, Default)]
pub struct LiveMaxMin {
    /// Per constraint: capacity, whether it takes part, its group, its users
    /// (flow slot, weight) in flow order, and whether it is in `live`.
    capacity: Vec<f64>,
    active: Vec<bool>,
    group: Vec<u32>,
    users: Vec<Vec<(u32, f64)>>,
    listed: Vec<bool>,
    /// Constraints that had a user when last looked at, and whether one may
    /// have lost its last since.
    live: Vec<u32>,
    emptied: bool,
    /// Per flow slot: its uses (constraint, weight) in order, at
    /// `uses[at..at + len]` in one arena with room for `room` (the solve
    /// walks them flow by flow: kept together, not one allocation each),
    /// when it was added, and whether it is removed (until the next flush).
    uses: Vec<(u32, f64)>,
    at: Vec<u32>,
    len: Vec<u32>,
    room: Vec<u32>,
    /// Arena entries that live flows' rooms hold, and a flow's uses on
    /// their way to a new room.
    held_room: usize,
    moving: Vec<(u32, f64)>,
    seq: Vec<u64>,
    dead: Vec<bool>,
    free: Vec<u32>,
    removed: Vec<u32>,
    next_seq: u64,
    /// The last solve's rate per flow slot.
    pub rate: Vec<f64>,
    frozen: Vec<bool>,
    cap: Vec<f64>,
    /// Per constraint, the solve's working state, and a mark.
    left: Vec<f64>,
    wsum: Vec<f64>,
    sat: Vec<bool>,
    mark: Vec<bool>,
    act: Vec<u32>,
    /// Open flows with a finite cap, in order.
    capped: Vec<u32>,
    touched: Vec<u32>,
    /// Constraints saturating in a round, with their numbering keys.
    cand: Vec<((u32, u64, u32), u32)>,
    /// Per constraint, its open weight when the last solve began (summed
    /// over its users then) and whether that sum is stale: its users
    /// changed, or a user's freezing at the start (a cap of 0) did. A
    /// constraint neither touched sums the same weights in the same order:
    /// the same sum, to the bit, without walking its users.
    open_sum: Vec<f64>,
    stale: Vec<bool>,
    /// Per flow slot, whether the last solve froze it at the start.
    was_zero: Vec<bool>,
    /// What [`LiveMaxMin::solve_resumed`] keeps of its last solve and of
    /// the changes since.
    trace: Trace,
    /// The changes since the last solve [`LiveMaxMin::solve_changed`]
    /// starts its search for the flows they reach from.
    changes: Changes,
}

mod component;
mod resumed;
use component::Changes;
use resumed::Trace;

impl LiveMaxMin {
    /// Constraints made so far (numbered from 0).
    pub fn constraints(&self) -> usize {
        self.capacity.len()
    }

    /// A new constraint (active, no users).
    pub fn constraint(&mut self, capacity: f64, group: u32) -> u32 {
        let r = self.capacity.len() as u32;
        self.capacity.push(capacity);
        self.active.push(true);
        self.group.push(group);
        self.users.push(vec![]);
        self.listed.push(false);
        self.left.push(capacity);
        self.wsum.push(0.0);
        self.sat.push(false);
        self.mark.push(false);
        self.open_sum.push(0.0);
        self.stale.push(true);
        self.trace.new_constraint(capacity);
        self.changes.new_constraint();
        r
    }

    pub fn set_capacity(&mut self, r: u32, capacity: f64) {
        let ri = r as usize;
        if self.capacity[ri].to_bits() != capacity.to_bits() {
            self.changes.constraint(r);
        }
        self.trace.capacity_changing(r, self.capacity[ri]);
        self.capacity[ri] = capacity;
    }

    /// An inactive constraint is left out of the solve (as if it did not
    /// exist), its users kept.
    pub fn set_active(&mut self, r: u32, active: bool) {
        if self.active[r as usize] != active {
            self.trace.unfollowed();
            self.changes.constraint(r);
        }
        self.active[r as usize] = active;
    }

    pub fn capacity(&self, r: u32) -> f64 {
        self.capacity[r as usize]
    }

    /// What the last solve left of constraint `r`'s capacity: within
    /// rounding of its capacity less what its users use at their rates,
    /// wherever a user takes part (a constraint none of whose users takes
    /// part is used by none: its users are at rate 0).
    pub fn left(&self, r: u32) -> f64 {
        self.left[r as usize]
    }

    pub fn is_active(&self, r: u32) -> bool {
        self.active[r as usize]
    }

    /// Constraint `r`'s users (flow slot, weight), in flow order.
    pub fn users(&self, r: u32) -> &[(u32, f64)] {
        &self.users[r as usize]
    }

    /// Whether flow slot `s` is removed and not yet flushed.
    pub fn is_removed(&self, s: u32) -> bool {
        self.dead[s as usize]
    }

    /// Flow slot `s`'s uses (constraint, weight), in order.
    pub fn uses_of(&self, s: u32) -> &[(u32, f64)] {
        let at = self.at[s as usize] as usize;
        &self.uses[at..at + self.len[s as usize] as usize]
    }

    /// A new flow (the last in order) using `uses` (constraint, weight) in
    /// order, with room for `more` uses added later; returns its slot.
    pub fn add_flow(&mut self, uses: &[(u32, f64)], more: usize) -> u32 {
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                self.at.push(0);
                self.len.push(0);
                self.room.push(0);
                self.seq.push(0);
                self.dead.push(false);
                self.rate.push(0.0);
                self.frozen.push(false);
                self.cap.push(0.0);
                self.was_zero.push(false);
                self.trace.new_slot();
                self.changes.new_slot();
                (self.at.len() - 1) as u32
            }
        };
        let si = s as usize;
        self.trace.flow_added(s);
        // not taking part until solved with a cap above 0 (which the
        // component solve takes for a change)
        self.cap[si] = 0.0;
        self.rate[si] = 0.0;
        self.frozen[si] = true;
        self.seq[si] = self.next_seq;
        self.next_seq += 1;
        let need = uses.len() + more;
        if (self.room[si] as usize) < need {
            self.place(s, need);
        }
        let at = self.at[si] as usize;
        self.uses[at..at + uses.len()].copy_from_slice(uses);
        self.len[si] = uses.len() as u32;
        self.held_room += self.room[si] as usize;
        for &(r, w) in uses {
            self.users[r as usize].push((s, w));
            self.stale[r as usize] = true;
            self.list(r);
        }
        s
    }

    /// Gives slot `s` a new room of `need` at the arena's end (its uses
    /// moved there), packing the arena first when it is mostly holes.
    fn place(&mut self, s: u32, need: usize) {
        let si = s as usize;
        let (at, len) = (self.at[si] as usize, self.len[si] as usize);
        let mut moving = std::mem::take(&mut self.moving);
        moving.clear();
        moving.extend_from_slice(&self.uses[at..at + len]);
        self.room[si] = 0;
        if self.uses.len() > 2 * self.held_room + PACK_SLACK {
            let mut packed = Vec::with_capacity(2 * self.held_room + need);
            for t in 0..self.at.len() {
                let (at, room) = (self.at[t] as usize, self.room[t] as usize);
                self.at[t] = packed.len() as u32;
                if self.len[t] > 0 {
                    packed.extend_from_slice(&self.uses[at..at + room]);
                } else {
                    // a slot with no uses keeps no room
                    self.room[t] = 0;
                }
            }
            self.held_room = packed.len();
            self.uses = packed;
        }
        let to = self.uses.len();
        self.uses.extend_from_slice(&moving);
        self.uses.resize(to + need, (u32::MAX, 0.0));
        self.at[si] = to as u32;
        self.room[si] = need as u32;
        self.moving = moving;
    }

    fn list(&mut self, r: u32) {
        if !self.listed[r as usize] {
            self.listed[r as usize] = true;
            self.live.push(r);
        }
    }

    /// Flow `s` also uses constraint `r` (last among its uses).
    pub fn add_use(&mut self, s: u32, r: u32, w: f64) {
        let si = s as usize;
        self.trace.use_added(s);
        self.changes.flow_bound(s, self.cap[si]);
        let len = self.len[si] as usize;
        if len == self.room[si] as usize {
            self.held_room -= self.room[si] as usize;
            self.place(s, len + 1);
            self.held_room += self.room[si] as usize;
        }
        self.uses[self.at[si] as usize + len] = (r, w);
        self.len[si] += 1;
        let seq = &self.seq;
        let users = &mut self.users[r as usize];
        let at = users.partition_point(|&(f, _)| seq[f as usize] < seq[si]);
        users.insert(at, (s, w));
        self.stale[r as usize] = true;
        self.list(r);
    }

    /// Constraint `r` loses all its users.
    pub fn clear_users(&mut self, r: u32) {
        self.stale[r as usize] = true;
        if !self.users[r as usize].is_empty() {
            self.trace.unfollowed();
            self.emptied = true;
        }
        for (s, _) in std::mem::take(&mut self.users[r as usize]) {
            // (its users lose a bound: theirs are among the changes)
            self.changes.flow_bound(s, self.cap[s as usize]);
            let (at, len) = (self.at[s as usize] as usize, self.len[s as usize] as usize);
            let mut kept = at;
            for i in at..at + len {
                if self.uses[i].0 != r {
                    self.uses[kept] = self.uses[i];
                    kept += 1;
                }
            }
            self.len[s as usize] = (kept - at) as u32;
        }
    }

    /// Flow `s` is gone (its slot is reused after the next flush).
    pub fn remove_flow(&mut self, s: u32) {
        self.dead[s as usize] = true;
        self.removed.push(s);
    }

    /// Drops the removed flows from their constraints' users. Every solve
    /// flushes first: the changes since the last solve are settled here
    /// (the component search of [`LiveMaxMin::solve_changed`] has read
    /// them before).
    pub fn flush(&mut self) {
        self.changes.settle();
        if self.removed.is_empty() {
            return;
        }
        for &s in &self.removed {
            let (at, len) = (self.at[s as usize] as usize, self.len[s as usize] as usize);
            for &(r, _) in &self.uses[at..at + len] {
                if !self.mark[r as usize] {
                    self.mark[r as usize] = true;
                    self.touched.push(r);
                }
            }
        }
        for &r in &self.touched {
            self.mark[r as usize] = false;
            self.stale[r as usize] = true;
            let dead = &self.dead;
            let users = &mut self.users[r as usize];
            users.retain(|&(s, _)| !dead[s as usize]);
            self.emptied |= users.is_empty();
        }
        self.touched.clear();
        for &s in &self.removed {
            self.len[s as usize] = 0;
            self.held_room -= self.room[s as usize] as usize;
            self.dead[s as usize] = false;
            self.free.push(s);
        }
        self.removed.clear();
    }

    /// Drops from the constraints listed as live those that have lost their
    /// last user (walked only when one may have).
    fn drop_unused(&mut self) {
        if !self.emptied {
            return;
        }
        self.emptied = false;
        let (users, listed) = (&self.users, &mut self.listed);
        self.live.retain(|&r| {
            let keep = !users[r as usize].is_empty();
            listed[r as usize] = keep;
            keep
        });
    }

    /// Where constraint `r` falls in the order saturations are handled in.
    #[inline(always)]
    fn key(&self, r: u32) -> (u32, u64, u32) {
        key_of(
            &self.users,
            &self.group,
            &self.seq,
            &self.uses,
            &self.at,
            &self.len,
            r,
        )
    }

    /// Max-min fair rates of the flows `slots` (all the flows, in the order
    /// they were added) with these caps, into [`LiveMaxMin::rate`].
    ///
    /// The rounds of [`MaxMin::solve_flows`] with less walked: a constraint
    /// leaves the walk once saturated or once its open weight is down to
    /// 1e-15 (weights only fall, so it can neither bound a round nor
    /// saturate again: its remaining capacity no longer matters); only
    /// flows with a finite cap are walked for caps (an infinite cap bounds
    /// nothing and never binds); and a flow takes its rate when it
    /// freezes (the level then, or its cap), not at every round.
    pub fn solve(&mut self, slots: &[u32], caps: &[f64]) {
        self.flush();
        self.drop_unused();
        let live = std::mem::take(&mut self.live);
        self.fill_over(slots, caps, &live);
        self.live = live;
    }

    /// [`LiveMaxMin::solve`]'s filling of the flows `slots` (in the order
    /// they were added) over the constraints `res`: all those with users,
    /// or (the component solve) those of the flows `slots` only, every
    /// user of which is among them.
    fn fill_over(&mut self, slots: &[u32], caps: &[f64], res: &[u32]) {
        // (the arrays as slices held in locals: their lengths and places
        // are read once, not again after every store to another array)
        let LiveMaxMin {
            capacity,
            active,
            group,
            users,
            uses,
            at,
            len,
            seq,
            rate,
            frozen,
            cap,
            left,
            wsum,
            sat,
            act,
            capped,
            cand,
            open_sum,
            stale,
            was_zero,
            ..
        } = self;
        let (capacity, active, group, users) = (&capacity[..], &active[..], &group[..], &users[..]);
        let (uses, at, len, seq) = (&uses[..], &at[..], &len[..], &seq[..]);
        let (rate, frozen, cap) = (&mut rate[..], &mut frozen[..], &mut cap[..]);
        let (left, wsum, sat) = (&mut left[..], &mut wsum[..], &mut sat[..]);
        let (open_sum, stale, was_zero) = (&mut open_sum[..], &mut stale[..], &mut was_zero[..]);
        let mut open = 0usize;
        capped.clear();
        // the least cap of the open capped flows: (least cap) - level is
        // the least of (cap - level), to the bit (rounding keeps order)
        let mut least_cap = f64::INFINITY;
        for (&s, &c) in slots.iter().zip(caps) {
            let si = s as usize;
            rate[si] = 0.0;
            cap[si] = c;
            let is_frozen = c <= 0.0;
            frozen[si] = is_frozen;
            if is_frozen != was_zero[si] {
                was_zero[si] = is_frozen;
                let a = at[si] as usize;
                for &(r, _) in &uses[a..a + len[si] as usize] {
                    stale[r as usize] = true;
                }
            }
            if !is_frozen {
                open += 1;
                if c.is_finite() {
                    capped.push(s);
                    least_cap = least_cap.min(c);
                }
            }
        }
        // each constraint's open weight, summed over its users in flow order
        // (a flow's repeated uses in its order), as the flows' uses walked
        // in order would sum it (again only where stale); and the least
        // saturation step of the constraints taking part
        act.clear();
        let mut least_step = f64::INFINITY;
        for &r in res {
            let ri = r as usize;
            sat[ri] = false;
            if stale[ri] {
                let mut sum = 0.0;
                for &(f, w) in &users[ri] {
                    if !frozen[f as usize] {
                        sum += w;
                    }
                }
                open_sum[ri] = sum;
                stale[ri] = false;
            }
            let sum = open_sum[ri];
            wsum[ri] = sum;
            if active[ri] && sum > 1e-15 {
                act.push(r);
                left[ri] = capacity[ri];
                least_step = least_step.min(capacity[ri] / sum);
            }
        }
        let mut level = 0.0f64;
        while open > 0 {
            // the least of every constraint's step and every open capped
            // flow's cap - level, worked out as the last round ended
            let delta = least_step.min(least_cap - level);
            if !delta.is_finite() {
                for &s in slots {
                    if !frozen[s as usize] {
                        rate[s as usize] = cap[s as usize];
                    }
                }
                break;
            }
            let delta = delta.max(0.0);
            level += delta;
            cand.clear();
            for &r in act.iter() {
                let ri = r as usize;
                left[ri] -= wsum[ri] * delta;
                if left[ri] <= capacity[ri] * 1e-12 {
                    cand.push((key_of(users, group, seq, uses, at, len, r), r));
                }
            }
            if cand.len() > 1 {
                cand.sort_unstable_by_key(|c| c.0);
            }
            for &(_, r) in cand.iter() {
                let ri = r as usize;
                // an earlier saturation this round may have emptied it
                if wsum[ri] > 1e-15 {
                    sat[ri] = true;
                    for &(f, _) in &users[ri] {
                        let fi = f as usize;
                        if !frozen[fi] {
                            rate[fi] = level;
                            open -= freeze(frozen, wsum, uses, at, len, f);
                        }
                    }
                }
            }
            // (every flow frozen: the filters below would change nothing
            // read after the fill, and no next round needs their least)
            if open == 0 {
                break;
            }
            // capped flows reaching their cap freeze, in order; those still
            // open give the next round its least cap
            least_cap = f64::INFINITY;
            capped.retain(|&s| {
                let si = s as usize;
                if frozen[si] {
                    return false;
                }
                if level >= cap[si] * (1.0 - 1e-12) {
                    rate[si] = cap[si];
                    open -= freeze(frozen, wsum, uses, at, len, s);
                    return false;
                }
                least_cap = least_cap.min(cap[si]);
                true
            });
            if open == 0 {
                break;
            }
            // constraints still taking part give the next round its least step
            least_step = f64::INFINITY;
            let (sat, wsum, left) = (&*sat, &*wsum, &*left);
            act.retain(|&r| {
                let ri = r as usize;
                let keep = !sat[ri] && wsum[ri] > 1e-15;
                if keep {
                    least_step = least_step.min(left[ri] / wsum[ri]);
                }
                keep
            });
        }
    }
}

/// Where constraint `r` falls in the order saturations are handled in
/// ([`LiveMaxMin::key`], from the arrays it reads).
#[inline(always)]
fn key_of(
    users: &[Vec<(u32, f64)>],
    group: &[u32],
    seq: &[u64],
    uses: &[(u32, f64)],
    at: &[u32],
    len: &[u32],
    r: u32,
) -> (u32, u64, u32) {
    let first = users[r as usize][0].0 as usize;
    let g = group[r as usize];
    if g == FIRST_MET {
        let a = at[first] as usize;
        let pos = uses[a..a + len[first] as usize]
            .iter()
            .position(|u| u.0 == r)
            .unwrap_or(0);
        (0, seq[first], pos as u32)
    } else {
        (g.saturating_add(1), seq[first], 0)
    }
}

/// Freezes flow slot `f` of a [`LiveMaxMin`]; 1 if it was open.
fn freeze(
    frozen: &mut [bool],
    wsum: &mut [f64],
    uses: &[(u32, f64)],
    at: &[u32],
    len: &[u32],
    f: u32,
) -> usize {
    let fi = f as usize;
    if frozen[fi] {
        return 0;
    }
    frozen[fi] = true;
    let at = at[fi] as usize;
    for &(r, w) in &uses[at..at + len[fi] as usize] {
        wsum[r as usize] -= w;
    }
    1
}

#[cfg(test)]
mod tests;
