//! DESIGN 10 — GPU P2P between sockets: its own limits beside the CPU link's
//! rate. A stream (one source GPU to one destination) gets at most the
//! stream cap (a single cross-socket flow stays well below link rate on
//! public dual-EPYC boxes); all cross-socket P2P over the link shares the
//! P2P cap; and beyond `knee` concurrent streams the inter-socket P2P path
//! thrashes, its throughput scaled by (knee / streams)^exponent. The rule's
//! constants are per link (topology) with defaults in
//! `ModelParams.cross_socket`; calibration fits them on microbenchmarks.
//!
//! "Concurrent" is what each fidelity can see: streams with packets within
//! the window of each other (TLP), flows active now (flow).

use crate::engine::ids::FxMap;
use crate::model::sightings::Sightings;
use crate::params::ModelParams;
use contend_topo::{Bytes, BytesPerSec, CrossSocketP2p, NodeIdx, Picos};

/// One CPU link's cross-socket P2P rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CrossSocketRule {
    /// Cap on all cross-socket P2P (both directions), or the link's rate.
    pub base: BytesPerSec,
    pub stream: Option<BytesPerSec>,
    knee: f64,
    exponent: f64,
    window: Picos,
}

/// A cross-socket stream: source endpoint, destination endpoint.
pub(crate) type StreamKey = (NodeIdx, NodeIdx);

/// What the TLP fidelity remembers per cross-socket stage: the streams
/// sighted within the window ([`Sightings`]: a stage's packets pass it at
/// non-decreasing start times, so sightings are counted off as they
/// expire), and when each stream's cap next allows a packet.
#[derive(Clone, Debug, Default)]
pub(crate) struct CrossState {
    streams: Sightings<StreamKey>,
    /// Per stream slot: when its cap next allows a packet.
    free: Vec<Picos>,
    /// The last few (streams seen, wire bytes) and their time on the
    /// shared stage, and the last few wire bytes and their time at the
    /// stream cap: packets come in few sizes, and the division (and the
    /// shared rate's rounding) is dear. (One entry each thrashed: requests
    /// and completions take turns on a stage.)
    shared_memo: Memo<(usize, u32)>,
    cap_memo: Memo<u32>,
}

/// Entries a [`Memo`] keeps.
const MEMO: usize = 4;

/// The last few keys looked up and their times (replaced in turn).
#[derive(Clone, Debug, Default)]
struct Memo<K> {
    items: [Option<(K, Picos)>; MEMO],
    next: usize,
}

impl<K: Copy + PartialEq> Memo<K> {
    /// The time remembered for `key`, else `compute`d and remembered.
    #[inline]
    fn get(&mut self, key: K, compute: impl FnOnce() -> Picos) -> Picos {
        if let Some((_, t)) = self.items.iter().flatten().find(|(k, _)| *k == key) {
            return *t;
        }
        let t = compute();
        self.items[self.next] = Some((key, t));
        self.next = (self.next + 1) % MEMO;
        t
    }
}

impl CrossState {
    /// Stream `key` is seen at `start`: streams last seen more than
    /// `window` before it leave the window. Returns its slot and the
    /// streams within the window (it included).
    #[inline]
    fn see(&mut self, key: StreamKey, start: Picos, window: Picos) -> (usize, usize) {
        let seen = self.streams.see(key, start, window, |_| {});
        if seen.new {
            self.free.push(Picos::ZERO);
        }
        (seen.slot as usize, self.streams.live())
    }
}

impl CrossSocketRule {
    pub fn of(link: &CrossSocketP2p, link_rate: BytesPerSec, p: &ModelParams) -> CrossSocketRule {
        let x = &p.cross_socket;
        CrossSocketRule {
            base: link
                .bandwidth
                .or(x.p2p_bandwidth_gbps.map(BytesPerSec::from_gbps))
                .unwrap_or(link_rate),
            stream: link.stream.or(x.stream_gbps.map(BytesPerSec::from_gbps)),
            knee: link.knee.unwrap_or(x.stream_knee),
            exponent: link.exponent.unwrap_or(x.stream_exponent),
            window: x.window_ns.to_picos(),
        }
    }

    /// Whether the rule limits anything beyond the link itself.
    pub fn is_active(&self, link_rate: BytesPerSec) -> bool {
        self.base < link_rate || self.stream.is_some() || self.exponent > 0.0
    }

    /// The throughput factor with `n` concurrent streams.
    #[inline]
    pub fn factor(&self, n: usize) -> f64 {
        let n = n as f64;
        if n <= self.knee || self.exponent == 0.0 {
            1.0
        } else {
            (self.knee / n).powf(self.exponent)
        }
    }

    /// The shared rate with `n` concurrent streams.
    pub fn rate(&self, n: usize) -> BytesPerSec {
        self.base.scale(self.factor(n))
    }

    /// TLP fidelity: a packet of `wire` bytes of stream `key` takes the
    /// shared stage at `start` (when the stage is free). Returns how long it
    /// holds the shared stage (at the rate for the streams seen now) and
    /// when its stream's cap lets it through — the two are independent, so a
    /// stream held by its own cap never holds the others — and whether the
    /// cap held it (its stream's previous packet was still passing).
    pub fn observe(
        &self,
        st: &mut CrossState,
        key: StreamKey,
        start: Picos,
        wire: u32,
    ) -> (Picos, Picos, bool) {
        let (slot, n) = st.see(key, start, self.window);
        let b = Bytes(wire as u64);
        let ser = st.shared_memo.get((n, wire), || self.rate(n).time_for(b));
        let (through, held) = match self.stream {
            Some(cap) => {
                let pass = st.cap_memo.get(wire, || cap.time_for(b));
                let free = &mut st.free[slot];
                let held = *free > start;
                let done = start.max(*free) + pass;
                *free = done;
                (done, held)
            }
            None => (start + ser, false),
        };
        (ser, through, held)
    }

    /// Flow fidelity: the flows on the stage now, as (flow, stream). The
    /// shared resource's capacity (bytes per second), and each stream's
    /// flows with its cap.
    pub fn resources(&self, members: &[(usize, StreamKey)]) -> (f64, Vec<(f64, Vec<usize>)>) {
        // streams in the order they first appear
        let mut at: FxMap<StreamKey, usize> = Default::default();
        let mut streams: Vec<(StreamKey, Vec<usize>)> = vec![];
        for &(f, k) in members {
            let i = *at.entry(k).or_insert_with(|| {
                streams.push((k, vec![]));
                streams.len() - 1
            });
            streams[i].1.push(f);
        }
        let shared = self.rate(streams.len()).0 as f64;
        let per = match self.stream {
            Some(cap) => streams
                .into_iter()
                .map(|(_, v)| (cap.0 as f64, v))
                .collect(),
            None => vec![],
        };
        (shared, per)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference of [`CrossState::see`]: every stream's last
    /// sighting, all of them looked over at every packet.
    fn see_by_scan(
        recent: &mut Vec<(StreamKey, Picos)>,
        key: StreamKey,
        start: Picos,
        window: Picos,
    ) -> usize {
        recent.retain(|&(_, t)| start.saturating_sub(t) <= window);
        match recent.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = start,
            None => recent.push((key, start)),
        }
        recent.len()
    }

    proptest! {
        /// Streams counted as their sightings expire match a scan of every
        /// stream at every packet, over starts that never go back (some
        /// equal, some past the window), with the stream caps they keep.
        #[test]
        fn expiring_sightings_count_as_a_scan_does(
            steps in proptest::collection::vec((0u32..6, 0u64..3, 0u64..40_000), 1..300),
            window in 0u64..30_000,
        ) {
            let window = Picos(window);
            let rule = CrossSocketRule {
                base: BytesPerSec::from_gbps(100.0),
                stream: Some(BytesPerSec::from_gbps(30.0)),
                knee: 2.0,
                exponent: 1.0,
                window,
            };
            let mut st = CrossState::default();
            let mut recent = vec![];
            let mut free: FxMap<StreamKey, Picos> = Default::default();
            let mut start = Picos::ZERO;
            for (k, same, dt) in steps {
                if same != 0 {
                    start += Picos(dt);
                }
                let key = (NodeIdx(k % 3), NodeIdx(k / 3));
                let n = see_by_scan(&mut recent, key, start, window);
                let wire = 64 + 100 * k;
                let (ser, through, held) = rule.observe(&mut st, key, start, wire);
                prop_assert_eq!(st.streams.live(), n);
                prop_assert_eq!(ser, rule.rate(n).time_for(Bytes(wire as u64)));
                let f = free.entry(key).or_insert(Picos::ZERO);
                let done = start.max(*f) + rule.stream.unwrap().time_for(Bytes(wire as u64));
                prop_assert_eq!((through, held), (done, *f > start));
                *f = done;
            }
        }
    }

    #[test]
    fn throughput_falls_past_the_knee_and_streams_keep_their_cap() {
        let link = CrossSocketP2p {
            bandwidth: Some(BytesPerSec::from_gbps(95.0)),
            stream: Some(BytesPerSec::from_gbps(38.0)),
            knee: Some(8.0),
            exponent: Some(3.0),
        };
        let r = CrossSocketRule::of(
            &link,
            BytesPerSec::from_gbps(256.0),
            &ModelParams::default(),
        );
        assert_eq!(r.factor(1), 1.0);
        assert_eq!(r.factor(8), 1.0);
        assert!((r.factor(16) - 0.125).abs() < 1e-12);
        let (a, b) = (NodeIdx(0), NodeIdx(1));
        let (shared, per) = r.resources(&[(0, (a, b)), (1, (a, b))]);
        assert_eq!(shared, 95e9);
        assert_eq!(per, vec![(38e9, vec![0, 1])]);
        // TLP: back-to-back packets of one stream are spaced by its cap
        let mut st = CrossState::default();
        let (_, t0, held0) = r.observe(&mut st, (a, b), Picos::ZERO, 380);
        let (_, t1, held1) = r.observe(&mut st, (a, b), Picos::ZERO, 380);
        assert_eq!(t0, Picos(10_000)); // 380 B at 38 GB/s = 10 ns
        assert_eq!(t1, Picos(20_000));
        // the second waited for the first: held by the cap
        assert!(!held0 && held1);
        // one that comes after its stream's last packet has passed is not
        let (_, t2, held2) = r.observe(&mut st, (a, b), Picos(30_000), 380);
        assert_eq!((t2, held2), (Picos(40_000), false));
    }

    /// A packet's time on the shared stage follows the streams seen with
    /// it, whatever size the packet before it had (the stage remembers the
    /// last size's time).
    #[test]
    fn shared_time_follows_the_streams_seen() {
        let link = CrossSocketP2p {
            bandwidth: Some(BytesPerSec::from_gbps(100.0)),
            stream: None,
            knee: Some(1.0),
            exponent: Some(1.0),
        };
        let r = CrossSocketRule::of(
            &link,
            BytesPerSec::from_gbps(256.0),
            &ModelParams::default(),
        );
        let (a, b, c) = (NodeIdx(0), NodeIdx(1), NodeIdx(2));
        let mut st = CrossState::default();
        let (s1, ..) = r.observe(&mut st, (a, b), Picos::ZERO, 500);
        assert_eq!(s1, Picos(5_000)); // 500 B at 100 GB/s
        let (s2, ..) = r.observe(&mut st, (a, b), Picos(1), 500);
        assert_eq!(s2, s1);
        // a second stream: the shared rate halves for the same size
        let (s3, ..) = r.observe(&mut st, (a, c), Picos(2), 500);
        assert_eq!(s3, Picos(10_000));
        let (s4, ..) = r.observe(&mut st, (a, c), Picos(3), 250);
        assert_eq!(s4, Picos(5_000));
        // the first stream's last packet falls out of the window: one stream
        let late = Picos(2) + ModelParams::default().cross_socket.window_ns.to_picos() + Picos(1);
        let (s5, ..) = r.observe(&mut st, (a, c), late, 250);
        assert_eq!(s5, Picos(2_500));
    }
}
