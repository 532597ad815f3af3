//! Keys sighted at non-decreasing times, and how many were sighted within a
//! window of the last one: what the TLP fidelity's collapse rule (pairs at
//! a port, [`crate::model::collapse`]) and cross-socket rule (streams at a stage,
//! [`crate::model::cross_socket`]) count. Sightings never go back in time, so a
//! key leaves the window for good once its last sighting is older than the
//! window before the latest: sightings are kept in time order and counted
//! off as they expire (no scan of every key, per sighting).

use crate::engine::ids::FxMap;
use contend_topo::Picos;
use std::collections::VecDeque;
use std::hash::Hash;

/// Keys by slot (in the order first seen), each one's last sighting, and
/// those within the window.
#[derive(Clone, Debug)]
pub(crate) struct Sightings<K> {
    /// Each key's slot, in the order first seen.
    slot: FxMap<K, u32>,
    /// Per slot: its last sighting, and whether that is within the window.
    keys: Vec<Key>,
    /// Sightings (time, slot) in time order, none older than the window
    /// before the last one, at most one per slot and time.
    seen: VecDeque<(Picos, u32)>,
    /// Slots within the window.
    live: usize,
    /// The last sighting's time (they never go back).
    #[cfg(debug_assertions)]
    last: Picos,
}

impl<K> Default for Sightings<K> {
    fn default() -> Self {
        Sightings {
            slot: FxMap::default(),
            keys: Vec::new(),
            seen: VecDeque::new(),
            live: 0,
            #[cfg(debug_assertions)]
            last: Picos::ZERO,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Key {
    last: Picos,
    live: bool,
}

/// What one sighting found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sighting {
    /// The key's slot (slots are numbered from 0 in the order first seen).
    pub slot: u32,
    /// The key was never seen before (its slot is new: the next number).
    pub new: bool,
    /// The key entered the window (it was not within it before).
    pub entered: bool,
}

impl<K: Hash + Eq + Copy> Sightings<K> {
    /// Key `key` is seen at `now` (never before the last sighting): keys
    /// last seen more than `window` before leave the window, each reported
    /// to `left` by slot, in the order their last sightings came.
    #[inline(always)]
    pub fn see(
        &mut self,
        key: K,
        now: Picos,
        window: Picos,
        mut left: impl FnMut(u32),
    ) -> Sighting {
        #[cfg(debug_assertions)]
        {
            debug_assert!(now >= self.last, "sightings never go back in time");
            self.last = now;
        }
        let lo = now.saturating_sub(window);
        while let Some(&(t, s)) = self.seen.front() {
            if t >= lo {
                break;
            }
            self.seen.pop_front();
            let k = &mut self.keys[s as usize];
            if k.live && k.last == t {
                k.live = false;
                self.live -= 1;
                left(s);
            }
        }
        let keys = &mut self.keys;
        let mut new = false;
        let s = *self.slot.entry(key).or_insert_with(|| {
            new = true;
            keys.push(Key {
                last: Picos::ZERO,
                live: false,
            });
            (keys.len() - 1) as u32
        });
        let k = &mut self.keys[s as usize];
        let entered = !k.live;
        if entered {
            k.live = true;
            self.live += 1;
            self.seen.push_back((now, s));
        } else if k.last != now {
            self.seen.push_back((now, s));
        }
        k.last = now;
        Sighting {
            slot: s,
            new,
            entered,
        }
    }

    /// Keys within the window of the last sighting.
    #[inline]
    pub fn live(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Keys within the window, and those reported leaving it, match a
        /// scan of every key's last sighting at every sighting, over times
        /// that never go back (some equal, some past the window).
        #[test]
        fn counted_off_as_a_scan_does(
            steps in proptest::collection::vec((0u32..6, 0u64..3, 0u64..40_000), 1..300),
            window in 0u64..30_000,
        ) {
            let window = Picos(window);
            let mut s = Sightings::default();
            let mut last: Vec<(u32, Picos)> = vec![];
            let mut slots: Vec<u32> = vec![];
            let mut now = Picos::ZERO;
            for (key, same, dt) in steps {
                if same != 0 {
                    now += Picos(dt);
                }
                let was: Vec<u32> = last.iter().map(|e| e.0).collect();
                last.retain(|&(_, t)| now.saturating_sub(t) <= window);
                let mut gone: Vec<u32> = was
                    .into_iter()
                    .filter(|k| !last.iter().any(|e| e.0 == *k))
                    .collect();
                let entered = !last.iter().any(|e| e.0 == key);
                match last.iter_mut().find(|e| e.0 == key) {
                    Some(e) => e.1 = now,
                    None => last.push((key, now)),
                }
                let mut left = vec![];
                let got = s.see(key, now, window, |slot| left.push(slots[slot as usize]));
                let new = !slots.contains(&key);
                if new {
                    slots.push(key);
                }
                prop_assert_eq!(slots[got.slot as usize], key);
                prop_assert_eq!((got.new, got.entered), (new, entered));
                left.sort_unstable();
                gone.sort_unstable();
                prop_assert_eq!(left, gone);
                prop_assert_eq!(s.live(), last.len());
            }
        }
    }
}
