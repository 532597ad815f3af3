//! The reference of the search ([`super::Searcher`]): the replica as
//! first written, path looked up in [`Paths`] at every step and the next
//! GPUs sorted afresh at every step (`ncclTopoSearchNextGpuSort`), kept
//! to check the fast one against. [`super::drive`] runs both, so the
//! tests below compare whole `ncclTopoCompute` results and the recursion
//! steps spent, on every shipped topology, the synthetic 32- and 64-GPU
//! ones, and random PCIe trees.

use super::{Order, Pattern, Recursion, SearchGraph, Walk, better};
use crate::paths::{PathType, Paths};
use crate::system::{LinkType, NodeKind, System};

struct Searcher<'a> {
    sys: &'a System,
    paths: &'a Paths,
    /// Remaining bandwidth per link during the search.
    bw: Vec<f32>,
    /// Per GPU, the channels (bits) it is already in.
    used: Vec<u64>,
    intel: bool,
    /// The search's remaining budget (`*time` in NCCL): -1 once a perfect
    /// solution is found, 0 when spent.
    time: i64,
    steps: u64,
}

impl<'a> Searcher<'a> {
    pub(super) fn new(sys: &'a System, paths: &'a Paths) -> Searcher<'a> {
        Searcher {
            sys,
            paths,
            bw: sys.links.iter().map(|l| l.bw).collect(),
            used: vec![0; sys.gpus.len()],
            intel: sys.cpu.is_intel(),
            time: 0,
            steps: 0,
        }
    }

    fn ngpus(&self) -> usize {
        self.sys.gpus.len()
    }

    /// `followPath`: charges `bw` on the first `max_steps` links of the
    /// path from GPU `g1` to GPU `g2`; returns how many it could.
    fn follow(&mut self, g1: usize, g2: usize, max_steps: usize, bw: f32) -> usize {
        let path = self
            .paths
            .get(self.sys.gpus[g1], self.sys.gpus[g2])
            .expect("GPUs reach each other");
        let mut pci_bw = bw;
        if self.intel && path.ptype == PathType::Phb {
            let through_cpu = path.links.iter().any(|&l| {
                matches!(
                    self.sys.nodes[self.sys.links[l].to].kind,
                    NodeKind::Cpu { .. }
                )
            });
            if through_cpu {
                // INTEL_P2P_OVERHEAD(bw) = bw*6/5 (`src/graph/topo.h`): Intel
                // root complexes split P2P into 64 B TLPs.
                pci_bw = bw * 6.0 / 5.0;
            }
        }
        for step in 0..max_steps {
            let l = path.links[step];
            let fw = if self.sys.links[l].ltype == LinkType::Pci {
                pci_bw
            } else {
                bw
            };
            if self.bw[l] < fw {
                return step;
            }
            // SUB_ROUND: keep three decimals against float drift.
            self.bw[l] = ((self.bw[l] - fw) * 1000.0).round() / 1000.0;
        }
        max_steps
    }

    /// `ncclTopoFollowPath` between GPUs (`from: None` is the search start).
    fn follow_path(
        &mut self,
        g: &mut SearchGraph,
        from: Option<usize>,
        to: usize,
        mult: f32,
    ) -> bool {
        let Some(g1) = from else {
            return true;
        };
        let (path_type, rev_type, count) = {
            let p = self
                .paths
                .get(self.sys.gpus[g1], self.sys.gpus[to])
                .expect("path");
            let r = self
                .paths
                .get(self.sys.gpus[to], self.sys.gpus[g1])
                .expect("path");
            (p.ptype, r.ptype, p.hops())
        };
        if path_type >= PathType::Dis {
            return false;
        }
        if mult == 1.0 && path_type > g.type_intra {
            return false;
        }
        if mult == 1.0 && g.pattern.is_tree() && rev_type > g.type_intra {
            return false;
        }
        let bw = g.bw_intra * mult;
        let step = self.follow(g1, to, count, bw);
        if step < count {
            self.follow(g1, to, step, -bw);
            return false;
        }
        g.n_hops += (mult * count as f32) as i64;
        true
    }

    fn replay_gpu(&self, g: &SearchGraph, step: isize) -> usize {
        let n = self.ngpus();
        let rank = g.intra[(g.n_channels - 1) * n + (step + 1) as usize];
        self.sys.gpu_of_rank(rank)
    }

    /// `ncclTopoSearchNextGpuSort` for one node: unused GPUs by path
    /// bandwidth (truncated to an integer), then fewer hops, then distance
    /// from the current GPU's index.
    fn next_sorted(&self, g: &SearchGraph, gpu: usize) -> Vec<usize> {
        let n = self.ngpus();
        let flag = 1u64 << g.n_channels;
        let mut scores: Vec<(i64, usize, usize, usize)> = Vec::new();
        for i in 1..n {
            let h = (gpu + i) % n;
            let p = self
                .paths
                .get(self.sys.gpus[gpu], self.sys.gpus[h])
                .expect("path");
            if p.hops() == 0 || self.used[h] & flag != 0 {
                continue;
            }
            scores.push((p.bw as i64, p.hops(), i, h));
        }
        scores.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        scores.into_iter().map(|s| s.3).collect()
    }

    fn try_gpu(
        &mut self,
        g: &mut SearchGraph,
        save: &mut SearchGraph,
        step: usize,
        walk: Walk,
        from: Option<usize>,
        to: usize,
    ) {
        let flag = 1u64 << g.n_channels;
        if self.follow_path(g, from, to, 1.0) {
            self.used[to] ^= flag;
            self.rec_gpu(g, save, to, step, walk);
            self.used[to] ^= flag;
            self.follow_path(g, from, to, -1.0);
        }
    }

    fn rec_gpu(
        &mut self,
        g: &mut SearchGraph,
        save: &mut SearchGraph,
        gpu: usize,
        step: usize,
        walk: Walk,
    ) {
        if self.time <= 0 {
            return;
        }
        self.time -= 1;
        self.steps += 1;
        let n = self.ngpus();
        if step == n {
            g.n_channels += 1;
            if better(g, save) {
                *save = g.clone();
                if g.n_channels == g.max_channels {
                    self.time = -1;
                }
            }
            if g.n_channels < g.max_channels {
                self.rec(g, save);
            }
            g.n_channels -= 1;
            return;
        }
        g.intra[g.n_channels * n + step] = self.sys.rank_of_gpu(gpu);
        if step + 1 < n {
            let next = match walk.order {
                Order::Pci => vec![step + 1],
                Order::Replay => vec![self.replay_gpu(g, step as isize)],
                Order::Normal => self.next_sorted(g, gpu),
            };
            for h in next {
                self.try_gpu(g, save, step + 1, walk, Some(gpu), h);
            }
        } else if walk.back_to_first == Some(step) {
            let first = self.sys.gpu_of_rank(g.intra[g.n_channels * n]);
            if self.follow_path(g, Some(gpu), first, 1.0) {
                let w = Walk {
                    back_to_first: None,
                    ..walk
                };
                self.rec_gpu(g, save, first, step + 1, w);
                self.follow_path(g, Some(gpu), first, -1.0);
            }
        } else {
            let w = Walk {
                back_to_first: None,
                ..walk
            };
            self.rec_gpu(g, save, gpu, n, w);
        }
    }
}

impl Recursion for Searcher<'_> {
    fn set_time(&mut self, time: i64) {
        self.time = time;
    }
    fn time(&self) -> i64 {
        self.time
    }
    fn steps(&self) -> u64 {
        self.steps
    }
    fn rec(&mut self, g: &mut SearchGraph, save: &mut SearchGraph) {
        let n = self.ngpus();
        let back_to_first = (g.pattern == Pattern::Ring).then(|| n - 1);
        let walk = |order| Walk {
            back_to_first,
            order,
        };
        if g.n_channels == 0 {
            self.try_gpu(g, save, 0, walk(Order::Pci), None, 0);
        } else {
            let first = self.replay_gpu(g, -1);
            self.try_gpu(g, save, 0, walk(Order::Replay), None, first);
        }
        if !g.same_channels || g.n_channels == 0 {
            for start in 0..n {
                self.try_gpu(g, save, 0, walk(Order::Normal), None, start);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{
        MAXCHANNELS, Pattern, Recursion, Search, SearchGraph, Searcher as Fast, Tables, drive,
    };
    use super::Searcher as Reference;
    use crate::env::{CpuArch, GpuP2p, NcclEnv};
    use crate::paths::{self, Paths};
    use crate::system::{self, System};
    use crate::version::NcclVersion;
    use contend_topo::{Topology, load_topology, parse_topology};

    /// System and paths as [`crate::plan::plan`] builds them for every GPU
    /// in file order: NCCL's system, paths, and the CPU detour of pairs
    /// without P2P. `None` when contend-nccl cannot build the system.
    fn inputs(topo: &Topology, env: &NcclEnv) -> Option<(System, Paths, u32)> {
        let cpu = env.host.cpu.unwrap_or_else(|| CpuArch::infer(topo).0);
        let sys = system::build(topo, &topo.gpus(), &env.host, cpu).ok()?;
        let mut paths = paths::compute(&sys, env.nvb_disable);
        let policy = crate::p2p::policy(&sys, env);
        crate::p2p::divert(&sys, &mut paths, policy, env);
        let cc = (0..sys.gpus.len()).map(|g| sys.cc_of_gpu(g)).min()?;
        Some((sys, paths, cc))
    }

    /// One `ncclTopoCompute` by both searches: the same graph (every field,
    /// the working copy of the channels and the hop count included) and
    /// the same number of recursion steps.
    fn compare(s: &Search, what: &str) -> (SearchGraph, u64) {
        let tables = Tables::new(s.sys, s.paths);
        let mut fast = Fast::new(&tables, s.sys);
        let mut reference = Reference::new(s.sys, s.paths);
        let a = drive(s, &mut fast);
        let b = drive(s, &mut reference);
        assert_eq!(a.0, b.0, "{what}: graphs differ");
        assert_eq!(a.1, b.1, "{what}: budget spent differs");
        assert_eq!(fast.steps(), reference.steps());
        a
    }

    /// The ring search, then the tree search with the ring's channel
    /// count (as plan.rs runs them), and a plain tree and a split tree.
    /// Returns the steps spent in all.
    fn compare_all(sys: &System, paths: &Paths, cc: u32, version: NcclVersion, what: &str) -> u64 {
        let search = |pattern, min_channels, max_channels| Search {
            sys,
            paths,
            pattern,
            min_channels,
            max_channels,
            cc_min: cc,
            version,
        };
        let (ring, mut steps) = compare(
            &search(Pattern::Ring, 1, MAXCHANNELS / 2),
            &format!("{what} ring"),
        );
        let nc = ring.n_channels;
        for (pattern, min, max) in [
            (Pattern::BalancedTree, nc, nc),
            (Pattern::Tree, 1, MAXCHANNELS / 2),
            (Pattern::SplitTree, 1, MAXCHANNELS / 2),
        ] {
            steps += compare(&search(pattern, min, max), &format!("{what} {pattern:?}")).1;
        }
        steps
    }

    fn topo_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../topologies")
    }

    fn env_with(vars: &[&str], cpu: Option<CpuArch>, cc: Option<u32>, p2p: GpuP2p) -> NcclEnv {
        let mut env = NcclEnv::from_assignments(vars).expect("valid variables");
        env.host.cpu = cpu;
        env.host.compute_capability = cc;
        env.host.gpu_p2p = p2p;
        env
    }

    #[test]
    fn fast_search_equals_reference_on_every_shipped_topology() {
        let mut files: Vec<_> = [topo_dir(), topo_dir().join("public")]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).expect("topologies folder"))
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .filter(|p| !p.to_string_lossy().contains("synthetic-"))
            .collect();
        files.sort();
        let mut built = 0;
        for f in &files {
            let topo = load_topology(f).expect("shipped topologies parse");
            let envs = [
                env_with(&[], None, None, GpuP2p::Supported),
                env_with(&["NCCL_P2P_LEVEL=SYS"], None, None, GpuP2p::Supported),
                env_with(&[], Some(CpuArch::IntelSkylake), None, GpuP2p::Supported),
                env_with(&[], Some(CpuArch::Amd), Some(90), GpuP2p::NotSupported),
                env_with(&["NCCL_P2P_DISABLE=1"], None, Some(100), GpuP2p::Supported),
            ];
            for (i, env) in envs.iter().enumerate() {
                let Some((sys, paths, cc)) = inputs(&topo, env) else {
                    continue;
                };
                if i == 0 {
                    built += 1;
                }
                for v in [NcclVersion::V2_27, NcclVersion::V2_28, NcclVersion::V2_29] {
                    compare_all(
                        &sys,
                        &paths,
                        cc,
                        v,
                        &format!("{} env {i} {v:?}", f.display()),
                    );
                }
            }
        }
        assert!(
            built >= 20 && built == files.len(),
            "built {built} of {} shipped topologies",
            files.len()
        );
    }

    #[test]
    fn fast_search_equals_reference_on_synthetic_32_and_64_gpus() {
        for (name, envs) in [
            (
                "synthetic-32x-4switch-2socket.toml",
                vec![
                    env_with(&[], None, None, GpuP2p::Supported),
                    env_with(
                        &[],
                        Some(CpuArch::IntelSapphireRapids),
                        Some(90),
                        GpuP2p::Supported,
                    ),
                ],
            ),
            (
                "synthetic-64x-8switch-2socket.toml",
                vec![env_with(&[], None, None, GpuP2p::Supported)],
            ),
        ] {
            let topo = load_topology(&topo_dir().join(name)).expect("parses");
            for (i, env) in envs.iter().enumerate() {
                let (sys, paths, cc) = inputs(&topo, env).expect("builds");
                let (ring, steps) = compare(
                    &Search {
                        sys: &sys,
                        paths: &paths,
                        pattern: Pattern::Ring,
                        min_channels: 1,
                        max_channels: MAXCHANNELS / 2,
                        cc_min: cc,
                        version: NcclVersion::V2_28,
                    },
                    &format!("{name} env {i} ring"),
                );
                let tree = compare(
                    &Search {
                        sys: &sys,
                        paths: &paths,
                        pattern: Pattern::BalancedTree,
                        min_channels: ring.n_channels,
                        max_channels: ring.n_channels,
                        cc_min: cc,
                        version: NcclVersion::V2_28,
                    },
                    &format!("{name} env {i} tree"),
                );
                // Many GPUs spend NCCL's budget: the case the fast search is for.
                assert!(steps + tree.1 > 100_000, "{name}: {steps} steps");
            }
        }
    }

    /// A small seeded generator (SplitMix64): no dependency, same trees
    /// every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A random PCIe tree: 1–2 sockets (UPI or xGMI between them), 1–2 root
    /// complexes per socket, under each GPUs on root ports and/or 1–2
    /// switches (some nested under a parent switch) of 1–4 GPUs, Gen4 or
    /// Gen5 at x8 or x16, at most `max_gpus` GPUs, sometimes NVLink pairs.
    fn random_tree(rng: &mut Rng, max_gpus: usize) -> String {
        let mut nodes = String::new();
        let mut links = String::new();
        let model = ["L40S", "H200", "RTX PRO 6000 Blackwell", "A100"][rng.below(4) as usize];
        let sockets = 1 + rng.below(2);
        let intel = rng.below(2) == 0;
        let mut gpus = 0usize;
        let pcie = |rng: &mut Rng, a: &str, b: &str, links: &mut String| {
            let gen_ = 4 + rng.below(2);
            let width = [8, 16, 16][rng.below(3) as usize];
            *links += &format!(
                "[[link]]\na = \"{a}\"\nb = \"{b}\"\nkind = \"pcie\"\ngen = {gen_}\nwidth = {width}\n"
            );
        };
        let mut gpu_ids: Vec<String> = Vec::new();
        for s in 0..sockets {
            nodes += &format!(
                "[[node]]\nid = \"iod{s}\"\nkind = \"cpu_interconnect\"\nsocket = {s}\n\
                 [[node]]\nid = \"mem{s}\"\nkind = \"host_memory\"\nsocket = {s}\n"
            );
            links += &format!(
                "[[link]]\na = \"mem{s}\"\nb = \"iod{s}\"\nkind = \"memory\"\nbandwidth_gbps = 300\n"
            );
            for r in 0..1 + rng.below(2) {
                let rc = format!("rc{s}_{r}");
                nodes +=
                    &format!("[[node]]\nid = \"{rc}\"\nkind = \"root_complex\"\nsocket = {s}\n");
                links += &format!("[[link]]\na = \"{rc}\"\nb = \"iod{s}\"\nkind = \"die\"\n");
                let mut parents = vec![rc.clone()];
                for w in 0..rng.below(3) {
                    let sw = format!("sw{s}_{r}_{w}");
                    nodes += &format!("[[node]]\nid = \"{sw}\"\nkind = \"switch\"\n");
                    let up = parents[rng.below(parents.len() as u64) as usize].clone();
                    pcie(rng, &sw, &up, &mut links);
                    parents.push(sw);
                }
                for p in parents {
                    // At least one GPU: a topology needs one.
                    let count = rng.below(4) + u64::from(gpus == 0);
                    for _ in 0..count {
                        if gpus >= max_gpus {
                            break;
                        }
                        let id = format!("gpu{gpus}");
                        nodes += &format!(
                            "[[node]]\nid = \"{id}\"\nkind = \"gpu\"\nmodel = \"{model}\"\n\
                             sms = 100\nmemory_bandwidth_gbps = 1000\n"
                        );
                        pcie(rng, &id, &p, &mut links);
                        gpu_ids.push(id);
                        gpus += 1;
                    }
                }
            }
        }
        if sockets == 2 {
            let protocol = if intel { "UPI" } else { "xGMI" };
            links += &format!(
                "[[link]]\na = \"iod0\"\nb = \"iod1\"\nkind = \"cpu\"\nprotocol = \"{protocol}\"\n\
                 bandwidth_gbps = 100\nlatency_ns = 200\n"
            );
        }
        if gpu_ids.len() >= 2 && rng.below(4) == 0 {
            for _ in 0..1 + rng.below(3) {
                let a = rng.below(gpu_ids.len() as u64) as usize;
                let b = rng.below(gpu_ids.len() as u64) as usize;
                let key = format!(
                    "a = \"{}\"\nb = \"{}\"\nkind = \"nvlink\"",
                    gpu_ids[a], gpu_ids[b]
                );
                let rev = format!(
                    "a = \"{}\"\nb = \"{}\"\nkind = \"nvlink\"",
                    gpu_ids[b], gpu_ids[a]
                );
                if a != b && !links.contains(&key) && !links.contains(&rev) {
                    let bw = 50 * (1 + rng.below(8));
                    links += &format!("[[link]]\n{key}\nbandwidth_gbps = {bw}\nlatency_ns = 700\n");
                }
            }
        }
        format!("name = \"random tree\"\n{nodes}{links}")
    }

    #[test]
    fn fast_search_equals_reference_on_random_pcie_trees() {
        let mut rng = Rng(0x5eed_2026);
        let mut checked = 0;
        let mut spent = 0;
        let cpus = [
            None,
            Some(CpuArch::IntelSkylake),
            Some(CpuArch::IntelEmeraldRapids),
            Some(CpuArch::Amd),
        ];
        for case in 0..120 {
            let max_gpus = if case % 10 == 9 { 12 } else { 8 };
            let text = random_tree(&mut rng, max_gpus);
            let topo = match parse_topology("random.toml", &text) {
                Ok(t) => t,
                Err(e) => panic!("case {case}: generator wrote a bad topology: {e}\n{text}"),
            };
            let vars: &[&str] = match rng.below(3) {
                0 => &[],
                1 => &["NCCL_P2P_LEVEL=SYS"],
                _ => &["NCCL_P2P_LEVEL=PHB"],
            };
            let cpu = cpus[rng.below(4) as usize];
            let cc = [None, Some(80), Some(90), Some(100)][rng.below(4) as usize];
            let env = env_with(vars, cpu, cc, GpuP2p::Supported);
            let Some((sys, paths, cc)) = inputs(&topo, &env) else {
                continue;
            };
            let v =
                [NcclVersion::V2_27, NcclVersion::V2_28, NcclVersion::V2_29][rng.below(3) as usize];
            spent += compare_all(&sys, &paths, cc, v, &format!("case {case}\n{text}\n"));
            checked += 1;
        }
        assert!(checked >= 100, "only {checked} random trees built");
        assert!(spent > 0);
    }
}
