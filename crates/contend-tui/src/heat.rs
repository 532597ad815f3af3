//! Where a run's traffic went: the simulator's channel names mapped back onto
//! the topology's links (one channel per direction, `a->b` and `b->a`) and
//! root complexes (`<rc> p2p`, the forwarding fabric between root ports).

use contend_topo::{LinkIdx, NodeIdx, NodeKind, Topology};
use std::collections::BTreeMap;

/// Busy fraction of every link direction and root-complex fabric of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Heat {
    /// Per link: busy fraction of the a→b and b→a directions.
    pub links: BTreeMap<LinkIdx, [f64; 2]>,
    /// Per root complex: busy fraction of its P2P forwarding.
    pub fabric: BTreeMap<NodeIdx, f64>,
    /// Channels the topology has no place for (kept for the links table).
    pub unmapped: Vec<(String, f64)>,
}

/// What a simulator channel name stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Link(LinkIdx, usize),
    Fabric(NodeIdx),
}

/// Channel name → link direction or fabric, built from a topology.
#[derive(Clone, Debug, Default)]
pub struct ChannelMap {
    by_name: BTreeMap<String, Channel>,
}

impl ChannelMap {
    pub fn new(topo: &Topology) -> ChannelMap {
        let mut by_name = BTreeMap::new();
        for l in topo.links() {
            let (a, b) = (&topo.node(l.a).id, &topo.node(l.b).id);
            by_name.insert(format!("{a}->{b}"), Channel::Link(l.idx, 0));
            by_name.insert(format!("{b}->{a}"), Channel::Link(l.idx, 1));
        }
        for (i, n) in topo.nodes().iter().enumerate() {
            if matches!(n.kind, NodeKind::RootComplex(_)) {
                by_name.insert(format!("{} p2p", n.id), Channel::Fabric(NodeIdx(i as u32)));
            }
        }
        ChannelMap { by_name }
    }

    pub fn get(&self, name: &str) -> Option<Channel> {
        self.by_name.get(name).copied()
    }

    /// Maps a run's utilisation list.
    pub fn heat(&self, utilisation: &[(String, f64)]) -> Heat {
        let mut h = Heat::default();
        for (name, u) in utilisation {
            match self.get(name) {
                Some(Channel::Link(l, d)) => h.links.entry(l).or_insert([0.0; 2])[d] = *u,
                Some(Channel::Fabric(n)) => {
                    h.fabric.insert(n, *u);
                }
                None => h.unmapped.push((name.clone(), *u)),
            }
        }
        h
    }
}

impl Heat {
    /// The busier direction of a link.
    pub fn link(&self, l: LinkIdx) -> Option<f64> {
        self.links.get(&l).map(|d| d[0].max(d[1]))
    }
    /// The busiest figure anywhere (links and fabrics).
    pub fn max(&self) -> f64 {
        self.links
            .values()
            .flat_map(|d| d.iter().copied())
            .chain(self.fabric.values().copied())
            .fold(0.0, f64::max)
    }
}

/// How hot a busy fraction is, for colour and markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Idle,
    Low,
    Warm,
    Hot,
}

pub fn level(u: f64) -> Level {
    if u >= 0.40 {
        Level::Hot
    } else if u >= 0.15 {
        Level::Warm
    } else if u > 0.0 {
        Level::Low
    } else {
        Level::Idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_topo::shipped;

    #[test]
    fn every_channel_of_a_run_maps_onto_the_topology() {
        let topo = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
        let m = ChannelMap::new(&topo);
        let l0 = topo.links()[0].idx;
        assert_eq!(m.get("gpu0->rc0"), Some(Channel::Link(l0, 0)));
        assert_eq!(m.get("rc0->gpu0"), Some(Channel::Link(l0, 1)));
        assert_eq!(m.get("rc1 p2p"), topo.lookup("rc1").map(Channel::Fabric));
        let h = m.heat(&[
            ("gpu0->rc0".into(), 0.25),
            ("rc0->gpu0".into(), 0.5),
            ("rc0 p2p".into(), 0.6),
            ("x".into(), 0.1),
        ]);
        assert_eq!(h.link(l0), Some(0.5));
        assert_eq!(h.max(), 0.6);
        assert_eq!(h.unmapped.len(), 1);
    }
}
