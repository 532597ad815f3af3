//! Where a run's traffic went: the simulator's resources mapped back onto
//! the topology's links (one resource per direction) and root complexes
//! (their P2P forwarding between root ports).

use contend_topo::{LinkIdx, NodeIdx, NodeKind, Topology};
use contend_workload::Resource;
use std::collections::BTreeMap;

/// Busy fraction of every link direction and root-complex fabric of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Heat {
    /// Per link: busy fraction of the a→b and b→a directions.
    pub links: BTreeMap<LinkIdx, [f64; 2]>,
    /// Per root complex: busy fraction of its P2P forwarding.
    pub fabric: BTreeMap<NodeIdx, f64>,
    /// Resources the tree has no place for (kept for the links table).
    pub unmapped: Vec<(Resource, f64)>,
}

/// What a simulator resource stands for on the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Link(LinkIdx, usize),
    Fabric(NodeIdx),
}

/// Resource → link direction or fabric, built from a topology.
#[derive(Clone, Debug, Default)]
pub struct ChannelMap {
    by_resource: BTreeMap<Resource, Channel>,
}

impl ChannelMap {
    pub fn new(topo: &Topology) -> ChannelMap {
        let mut by_resource = BTreeMap::new();
        for l in topo.links() {
            let (a, b) = (topo.node(l.a).id.clone(), topo.node(l.b).id.clone());
            let link = |from, to| Resource::Link { from, to };
            by_resource.insert(link(a.clone(), b.clone()), Channel::Link(l.idx, 0));
            by_resource.insert(link(b, a), Channel::Link(l.idx, 1));
        }
        for (i, n) in topo.nodes().iter().enumerate() {
            if matches!(n.kind, NodeKind::RootComplex(_)) {
                by_resource.insert(
                    Resource::RootComplexP2p { rc: n.id.clone() },
                    Channel::Fabric(NodeIdx(i as u32)),
                );
            }
        }
        ChannelMap { by_resource }
    }

    pub fn get(&self, r: &Resource) -> Option<Channel> {
        self.by_resource.get(r).copied()
    }

    /// Maps a run's utilisation list.
    pub fn heat(&self, utilisation: &[(Resource, f64)]) -> Heat {
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
        let r = |s: &str| s.parse::<Resource>().unwrap();
        assert_eq!(m.get(&r("gpu0->rc0")), Some(Channel::Link(l0, 0)));
        assert_eq!(m.get(&r("rc0->gpu0")), Some(Channel::Link(l0, 1)));
        assert_eq!(
            m.get(&r("rc1 p2p")),
            topo.lookup("rc1").map(Channel::Fabric)
        );
        let h = m.heat(&[
            (r("gpu0->rc0"), 0.25),
            (r("rc0->gpu0"), 0.5),
            (r("rc0 p2p"), 0.6),
            (r("x->y"), 0.1),
        ]);
        assert_eq!(h.link(l0), Some(0.5));
        assert_eq!(h.max(), 0.6);
        assert_eq!(h.unmapped.len(), 1);
    }
}
