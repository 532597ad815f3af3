//! `ncclTopoCompute` for one node: the search's inputs (`ncclTopoSearchInit`'s
//! bandwidths, the per-channel speeds by compute capability, the budgets)
//! and its loop over speeds, path types and patterns, each search run by
//! a [`Recursion`] (the fast one of `search.rs`, or in tests its reference),
//! then `ncclTopoDupChannels` (`src/graph/search.cc` v2.28.9-1).

use super::{Pattern, Recursion, SearchGraph, Searcher, Tables};
use crate::paths::{PathType, Paths};
use crate::system::{LinkType, System};
use crate::version::NcclVersion;

/// The per-channel speeds NCCL tries inside one node (`speedArrayIntra`,
/// `sm90SpeedArrayIntra`, `sm100SpeedArrayIntra`, `src/graph/search.cc`
/// v2.28.9-1; v2.29.7-1 adds 45.0 to the SM100 list).
pub(crate) fn intra_speeds(cc_min: u32, version: NcclVersion) -> &'static [f32] {
    const DEFAULT: [f32; 13] = [
        40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0,
    ];
    const SM90: [f32; 11] = [
        60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0,
    ];
    const SM100: [f32; 11] = [
        90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0,
    ];
    const SM100_V229: [f32; 12] = [
        90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0,
    ];
    if cc_min >= 100 {
        if version >= NcclVersion::V2_29 {
            &SM100_V229
        } else {
            &SM100
        }
    } else if cc_min >= 90 {
        &SM90
    } else {
        &DEFAULT
    }
}

// Search budgets (`NCCL_SEARCH_*TIMEOUT`, `src/graph/search.cc` v2.28.9-1).
const GLOBAL_TIMEOUT: i64 = 1 << 19;
const TIMEOUT: i64 = 1 << 14;
const TIMEOUT_TREE: i64 = 1 << 14;
const TIMEOUT_SAMECHANNELS: i64 = 1 << 8;

/// `system->maxBw` and `system->totalBw` (`ncclTopoSearchInit`): the best
/// GPU-to-GPU path, and the best GPU's PCI link or NVLink total.
pub(crate) fn max_and_total_bw(sys: &System, paths: &Paths) -> (f32, f32) {
    if sys.gpus.len() == 1 {
        return (crate::paths::LOC_BW, crate::paths::LOC_BW);
    }
    let (mut max_bw, mut total_bw) = (0.0f32, 0.0f32);
    for &g in &sys.gpus {
        for &h in &sys.gpus {
            if let Some(p) = paths.get(g, h)
                && p.hops() > 0
            {
                max_bw = max_bw.max(p.bw);
            }
        }
        let (mut nvl, mut pci) = (0.0f32, 0.0f32);
        for &l in &sys.nodes[g].links {
            match sys.links[l].ltype {
                LinkType::Nvl => nvl += sys.links[l].bw,
                LinkType::Pci => pci = sys.links[l].bw,
                _ => {}
            }
        }
        total_bw = total_bw.max(pci.max(nvl));
    }
    (max_bw, total_bw)
}

/// `ncclTopoDupChannels`: a graph of at least 25 GB/s per channel gets its
/// channels doubled (up to its maximum) at a proportionally lower
/// bandwidth — except after Ampere with more than 4 channels under 50 GB/s
/// (thresholds as in `src/graph/search.cc` at v2.27.7-1, v2.28.9-1, v2.29.7-1).
fn dup_channels(g: &mut SearchGraph, cc_min: u32, ngpus: usize) {
    if g.n_channels == 0 || g.bw_intra < 25.0 {
        return;
    }
    if cc_min > 80 && g.bw_intra < 50.0 && g.n_channels > 4 {
        return;
    }
    let dup = (g.n_channels * 2).min(g.max_channels);
    let n = g.n_channels;
    for i in 0..(dup - n) * ngpus {
        g.intra[n * ngpus + i] = g.intra[i];
    }
    let div = dup.div_ceil(n) as f32;
    g.bw_intra /= div;
    g.bw_inter /= div;
    g.n_channels = dup;
}

/// The path type one step farther (`typeIntra += 1`).
fn next_type(t: PathType) -> PathType {
    PathType::ALL
        .get(t.code() as usize + 1)
        .copied()
        .unwrap_or(PathType::Dis)
}

/// Whether NVLink splits the GPUs in two NVLink domains (`ncclTopoSplitNvLink`).
fn split_nvlink(sys: &System, paths: &Paths) -> bool {
    let n = sys.gpus.len();
    let mut domain: Vec<usize> = (0..n).collect();
    for g in 0..n {
        let d = domain[g];
        for (p, dp) in domain.iter_mut().enumerate().skip(g + 1) {
            if paths.get(sys.gpus[g], sys.gpus[p]).map(|x| x.ptype) == Some(PathType::Nvl) {
                *dp = d;
            }
        }
    }
    let mut count = vec![0usize; n];
    for d in &domain {
        count[*d] += 1;
    }
    count.iter().filter(|&&c| c > 1).count() == 2
}

/// `ncclTopoCompute` for one node.
pub(crate) fn compute(
    sys: &System,
    paths: &Paths,
    pattern: Pattern,
    min_channels: usize,
    max_channels: usize,
    cc_min: u32,
    version: NcclVersion,
) -> SearchGraph {
    let tables = Tables::new(sys, paths);
    let mut searcher = Searcher::new(&tables, sys);
    let search = Search {
        sys,
        paths,
        pattern,
        min_channels,
        max_channels,
        cc_min,
        version,
    };
    drive(&search, &mut searcher).0
}

/// The inputs of one `ncclTopoCompute`.
#[derive(Clone, Copy)]
pub(super) struct Search<'a> {
    pub(super) sys: &'a System,
    pub(super) paths: &'a Paths,
    pub(super) pattern: Pattern,
    pub(super) min_channels: usize,
    pub(super) max_channels: usize,
    pub(super) cc_min: u32,
    pub(super) version: NcclVersion,
}

/// `ncclTopoCompute`'s loop over speeds, path types and patterns, each
/// search run by `searcher`; returns the graph and the recursion steps
/// spent.
pub(super) fn drive(s: &Search, searcher: &mut impl Recursion) -> (SearchGraph, u64) {
    let Search {
        sys,
        paths,
        pattern,
        min_channels,
        max_channels,
        cc_min,
        version,
    } = *s;
    let n = sys.gpus.len();
    let mut graph = SearchGraph::new(pattern, min_channels, max_channels, n);
    let (mut min_type, mut max_type) = (PathType::Loc, PathType::Sys);
    if n > 1 {
        min_type = PathType::Sys;
        max_type = PathType::Loc;
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    let t = paths.get(sys.gpus[a], sys.gpus[b]).expect("path").ptype;
                    min_type = min_type.min(t);
                    max_type = max_type.max(t);
                }
            }
        }
    }
    graph.type_intra = min_type;
    graph.type_inter = PathType::Pix;
    if n == 1 && pattern != Pattern::Ring {
        graph.pattern = Pattern::Tree;
    }
    if graph.pattern == Pattern::Ring
        && split_nvlink(sys, paths)
        && graph.max_channels >= 2
        && graph.min_channels == 1
    {
        graph.min_channels = 2;
    }
    let mut tmp = graph.clone();
    let speeds = intra_speeds(cc_min, version);
    let ns = speeds.len();
    let (max_bw, total_bw_sys) = max_and_total_bw(sys, paths);
    let mut total_bw = total_bw_sys;
    if n > 1 && pattern != Pattern::Ring {
        total_bw = (f64::from(total_bw) * (n as f64 / (n - 1) as f64)) as f32;
    }
    let mut si = 0;
    while (speeds[si] > max_bw || speeds[si] * graph.min_channels as f32 > total_bw) && si < ns - 1
    {
        si += 1;
    }
    tmp.bw_intra = speeds[si];
    tmp.bw_inter = speeds[si];
    let amd = sys.cpu.is_amd();
    let mut global_timeout = GLOBAL_TIMEOUT;
    let mut pass = 1;
    loop {
        // search:
        let budget = if tmp.same_channels {
            TIMEOUT_SAMECHANNELS
        } else if tmp.pattern == Pattern::Tree {
            TIMEOUT_TREE
        } else {
            TIMEOUT
        };
        searcher.set_time(budget);
        tmp.n_channels = 0;
        global_timeout -= budget;
        searcher.rec(&mut tmp, &mut graph);
        let mut time = searcher.time();
        let mut done = time == -1 || graph.n_channels as f32 * graph.bw_inter >= total_bw_sys;
        if !done && pass == 1 {
            if tmp.same_channels && !(amd && tmp.type_intra == PathType::Sys) {
                tmp.same_channels = false;
                continue;
            }
            tmp.same_channels = true;
            global_timeout += time;
            if global_timeout < 0 && graph.n_channels > 0 {
                done = true;
            }
            if !done {
                if cc_min >= 90 && tmp.pattern == Pattern::BalancedTree {
                    tmp.pattern = Pattern::Tree;
                    continue;
                }
                tmp.pattern = graph.pattern;
                if tmp.type_intra < max_type
                    && (graph.n_channels == 0 || tmp.type_intra < graph.type_intra)
                {
                    tmp.type_intra = next_type(tmp.type_intra);
                    if tmp.type_intra < PathType::Dis {
                        continue;
                    }
                }
                tmp.type_intra = min_type;
                // Lower the speed while the next is above half the best
                // found (the 0.49 of ncclTopoCompute, src/graph/search.cc v2.28.9-1).
                if si < ns - 1
                    && (graph.n_channels == 0 || f64::from(speeds[si + 1] / graph.bw_inter) > 0.49)
                {
                    si += 1;
                    tmp.bw_intra = speeds[si];
                    tmp.bw_inter = speeds[si];
                    continue;
                }
                si = 0;
                while speeds[si] > max_bw && si < ns - 1 {
                    si += 1;
                }
                tmp.bw_intra = speeds[si];
                tmp.bw_inter = speeds[si];
            }
        }
        // done:
        if pass == 1 {
            time = -1;
            dup_channels(&mut graph, cc_min, n);
            tmp = graph.clone();
            si = 0;
            while speeds[si] > graph.bw_inter && si < ns - 1 {
                si += 1;
            }
            tmp.bw_intra = speeds[si];
            tmp.bw_inter = speeds[si];
            tmp.min_channels = graph.n_channels;
            pass = 2;
        }
        if time != 0 && si > 0 {
            if graph.pattern == Pattern::Ring {
                si -= 1;
                tmp.bw_intra = speeds[si];
                tmp.bw_inter = speeds[si];
                continue;
            } else if tmp.bw_intra == graph.bw_intra && tmp.bw_intra < tmp.bw_inter * 2.0 {
                si -= 1;
                tmp.bw_intra = speeds[si];
                continue;
            }
        }
        break;
    }
    if graph.n_channels == 0 {
        // "Could not find a path for pattern %d, falling back to simple order"
        for g in 0..n {
            graph.intra[g] = sys.rank_of_gpu(g);
        }
        graph.bw_intra = 0.1;
        graph.type_intra = PathType::Sys;
        if version >= NcclVersion::V2_29 {
            // No NIC: inter side disconnected (v2.29.7-1).
            graph.bw_inter = 0.0;
            graph.type_inter = PathType::Dis;
        } else {
            graph.bw_inter = 0.1;
            graph.type_inter = PathType::Sys;
        }
        graph.n_channels = 1;
        graph.fallback = true;
    }
    graph.speeds = speeds.to_vec();
    graph.finish(n);
    (graph, searcher.steps())
}
