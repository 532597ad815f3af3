//! NCCL's decisions in sentences, each with its reason.

use crate::plan::{NcclPlan, SizeRange};
use crate::tuning::SizeChoice;
use contend_topo::Bytes;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A size for people: `64 KiB`, `1.5 MiB`, `3000 B`.
pub fn human(b: Bytes) -> String {
    let x = b.0;
    const K: u64 = 1 << 10;
    const M: u64 = 1 << 20;
    const G: u64 = 1 << 30;
    if x >= G && x.is_multiple_of(G) {
        format!("{} GiB", x / G)
    } else if x >= M && x.is_multiple_of(M) {
        format!("{} MiB", x / M)
    } else if x >= M {
        format!("{:.2} MiB", x as f64 / M as f64)
    } else if x >= K && x.is_multiple_of(K) {
        format!("{} KiB", x / K)
    } else if x >= K {
        format!("{:.1} KiB", x as f64 / K as f64)
    } else {
        format!("{x} B")
    }
}

fn choice_name(a: crate::Algorithm, p: crate::Protocol, prev: Option<crate::Algorithm>) -> String {
    if prev == Some(a) {
        format!("{p}")
    } else {
        format!("{a} {p}")
    }
}

/// The ranges where NCCL's choice holds, with exact switch sizes (the
/// largest size with the old choice, found by bisection between powers of
/// two), from 1 B to 1 GiB.
pub fn switch_points(plan: &NcclPlan) -> Vec<SizeRange> {
    let mut ranges = plan.ranges(Bytes(1), Bytes(1 << 30));
    for i in 0..ranges.len().saturating_sub(1) {
        let (mut lo, mut hi) = (ranges[i].to.0, ranges[i + 1].from.0);
        let same = |b: u64| {
            plan.choose(Bytes(b)).is_some_and(|c| {
                c.algorithm == ranges[i].algorithm && c.protocol == ranges[i].protocol
            })
        };
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if same(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        ranges[i].to = Bytes(lo);
        ranges[i + 1].from = Bytes(hi);
    }
    ranges
}

/// `ring LL to 64 KiB, then Simple`.
pub fn ranges_sentence(ranges: &[SizeRange]) -> String {
    let mut s = String::new();
    let mut prev = None;
    for (i, r) in ranges.iter().enumerate() {
        let name = choice_name(r.algorithm, r.protocol, prev);
        if i + 1 == ranges.len() {
            if i == 0 {
                let _ = write!(s, "{name} at every size");
            } else {
                let _ = write!(s, "then {name}");
            }
        } else {
            let _ = write!(s, "{name} to {}, ", human(r.to));
        }
        prev = Some(r.algorithm);
    }
    s
}

fn rank_name(plan: &NcclPlan, r: usize) -> &str {
    &plan.ranks[r].node.0
}

/// The one-line summary the issue asks for:
/// `gpu0→gpu4: SHM, path SYS above P2P level PXB; 2 channels; ring LL to 64 KiB, then Simple`.
pub fn summary(plan: &NcclPlan) -> String {
    let mut parts = Vec::new();
    if let Some(far) = plan
        .pairs
        .iter()
        .max_by_key(|p| (p.path, std::cmp::Reverse((p.from, p.to))))
    {
        parts.push(format!(
            "{}→{}: {}",
            rank_name(plan, far.from),
            rank_name(plan, far.to),
            far.reason
        ));
    }
    parts.push(format!(
        "{} channel{}",
        plan.channels.n_channels,
        if plan.channels.n_channels == 1 {
            ""
        } else {
            "s"
        }
    ));
    let r = switch_points(plan);
    if !r.is_empty() {
        parts.push(ranges_sentence(&r));
    }
    parts.join("; ")
}

/// NCCL's choices for one call in a line, as `contend simulate` prints
/// them: `nccl 2.28: SHM on 8 connections; ring Simple on 2 of 2 channels
/// (ring LL to 3.8 KiB, then Simple); gpu0→gpu4: SHM, path SYS above P2P
/// level PXB (NCCL's default)`.
pub fn call_line(plan: &NcclPlan, s: &crate::schedule::CallSchedule) -> String {
    let f = crate::facts::CallFacts::from_plan(plan, s);
    let mut line = format!(
        "nccl {}: {}; {} {} on {} of {} channel{}",
        plan.version,
        f.transports(),
        f.algorithm,
        f.protocol,
        f.channels_used(),
        plan.channels.n_channels,
        if plan.channels.n_channels == 1 {
            ""
        } else {
            "s"
        },
    );
    let r = switch_points(plan);
    if r.len() > 1 {
        let _ = write!(line, " ({})", ranges_sentence(&r));
    }
    if let Some(far) = plan
        .pairs
        .iter()
        .max_by_key(|p| (p.path, std::cmp::Reverse((p.from, p.to))))
    {
        let _ = write!(
            line,
            "; {}→{}: {}",
            rank_name(plan, far.from),
            rank_name(plan, far.to),
            far.reason
        );
    }
    line
}

/// Renders the plan's decisions with their reasons, and NCCL's choice for
/// each size asked.
pub fn explain(plan: &NcclPlan, sizes: &[Bytes]) -> String {
    let mut o = String::new();
    let n = plan.ranks.len();
    let _ = writeln!(
        o,
        "NCCL {} (rules of {}) on {}: {n} rank{}",
        plan.version,
        plan.version.source_tag(),
        plan.topology,
        if n == 1 { "" } else { "s" }
    );
    let _ = writeln!(o, "{}", summary(plan));
    if !plan.env.is_empty() {
        let _ = writeln!(o, "environment: {}", plan.env.join(" "));
    }
    let s = &plan.system;
    let _ = writeln!(
        o,
        "\nSystem as NCCL sees it: {} CPU node{} ({}), best GPU path {:.1} GB/s, GPU link {:.1} GB/s{}",
        s.cpus,
        if s.cpus == 1 { "" } else { "s" },
        s.cpu,
        s.max_bw.as_gbps(),
        s.total_bw.as_gbps(),
        s.inter_cpu_bw
            .map(|b| format!(", inter-CPU {:.1} GB/s", b.as_gbps()))
            .unwrap_or_default()
    );
    for line in &s.tree {
        let _ = writeln!(o, "  {line}");
    }

    let _ = writeln!(o, "\nPeers ({}):", crate::plan::source_text(&plan.p2p));
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in &plan.pairs {
        if p.from > p.to
            && plan
                .pair(p.to, p.from)
                .is_some_and(|q| q.reason == p.reason)
        {
            continue;
        }
        let sym = plan
            .pair(p.to, p.from)
            .is_some_and(|q| q.reason == p.reason);
        let arrow = if sym { "↔" } else { "→" };
        groups.entry(p.reason.clone()).or_default().push(format!(
            "{}{arrow}{}",
            rank_name(plan, p.from),
            rank_name(plan, p.to)
        ));
    }
    for (reason, list) in &groups {
        let _ = writeln!(o, "  {reason}: {}", list.join(", "));
    }

    let ch = &plan.channels;
    let _ = writeln!(
        o,
        "\nSearch{}: ring {} × {:.1} GB/s (type {}), tree {} × {:.1} GB/s (type {}, pattern {})",
        if plan.graph_from_file {
            " (NCCL_GRAPH_FILE)"
        } else {
            ""
        },
        plan.ring.n_channels,
        plan.ring.bw_intra,
        plan.ring.type_intra,
        plan.tree.n_channels,
        plan.tree.bw_intra,
        plan.tree.type_intra,
        plan.tree.pattern.code()
    );
    for g in [&plan.ring, &plan.tree] {
        if g.fallback {
            let worst = plan.pairs.iter().map(|p| p.search_path).max();
            let narrow = plan
                .pairs
                .iter()
                .filter(|p| Some(p.search_path) == worst)
                .map(|p| p.search_bw)
                .min();
            let lowest = g.speeds.last().copied().unwrap_or_default();
            let _ = writeln!(
                o,
                "  pattern {}: no speed worked (\"Could not find a path for pattern {}, falling back to simple order\"): \
                 the lowest of NCCL's per-channel speeds for compute capability {} is {lowest:.1} GB/s{}",
                g.pattern.code(),
                g.pattern.code(),
                plan.ranks[0].compute_capability,
                narrow
                    .map(|b| format!(
                        ", above the {:.1} GB/s of the farthest ({}) paths",
                        b.as_gbps(),
                        worst.map(|w| w.name()).unwrap_or("?")
                    ))
                    .unwrap_or_default()
            );
        }
    }
    let _ = writeln!(
        o,
        "Channels: {} ({}); p2p {} channels, {} per peer",
        ch.n_channels,
        ch.steps.join("; "),
        ch.p2p_channels,
        ch.p2p_channels_per_peer
    );
    let mut shown = Vec::new();
    for (c, ring) in ch.rings.iter().enumerate() {
        if shown.contains(ring) {
            continue;
        }
        shown.push(ring.clone());
        let same: Vec<String> = ch
            .rings
            .iter()
            .enumerate()
            .filter(|(_, r)| *r == ring)
            .map(|(i, _)| i.to_string())
            .collect();
        let _ = writeln!(
            o,
            "  ring (channel{} {}): {}",
            if same.len() == 1 { "" } else { "s" },
            same.join(","),
            ring.iter()
                .map(|r| rank_name(plan, *r).to_string())
                .collect::<Vec<_>>()
                .join(" → ")
        );
        let _ = c;
    }
    if let Some(t) = plan.tree.channels.first() {
        let _ = writeln!(
            o,
            "  tree (chain, channel 0): {}",
            t.iter()
                .map(|r| rank_name(plan, *r).to_string())
                .collect::<Vec<_>>()
                .join(" → ")
        );
    }

    let _ = writeln!(
        o,
        "\nNCCL's own tuning model (AllReduce, latency µs / bandwidth GB/s): what NCCL uses to choose, not contend's prediction of the time (`contend simulate` gives that)"
    );
    for e in &plan.model.entries {
        let _ = writeln!(
            o,
            "  {:<5} {:<6} {:>7.1} / {:>6.1}  {} threads{}",
            e.algorithm.to_string(),
            e.protocol.to_string(),
            e.latency_us,
            e.bandwidth_gbps,
            e.max_threads,
            e.disabled
                .map(|d| format!("  (off: {d})"))
                .unwrap_or_default()
        );
    }
    let r = switch_points(plan);
    if !r.is_empty() {
        let _ = writeln!(o, "Per size: {}", ranges_sentence(&r));
    }
    if !sizes.is_empty() {
        let _ = writeln!(
            o,
            "\n{:>10}  {:<11} {:>11}  {:>8}  {:>7}  alternatives",
            "size", "choice", "NCCL's own", "channels", "threads"
        );
        let _ = writeln!(
            o,
            "{:>10}  (NCCL's own predicted time; channels: the most a call may use, and lo..hi those a lone call of 4-byte elements spreads over)",
            ""
        );
        for &b in sizes {
            match plan.choose(b) {
                Some(c) => {
                    let _ = writeln!(o, "{}", size_row(&c));
                }
                None => {
                    let _ = writeln!(o, "{:>10}  (no algorithm: one rank)", human(b));
                }
            }
        }
    }
    let _ = writeln!(
        o,
        "\nBuffers: LL {}, LL128 {}, Simple {} (steps of {}), P2P chunk {}",
        human(plan.buffers.ll),
        human(plan.buffers.ll128),
        human(plan.buffers.simple),
        human(plan.buffers.simple_step),
        human(plan.buffers.p2p_chunk)
    );
    for note in &plan.notes {
        let _ = writeln!(o, "note: {note}");
    }
    o
}

fn size_row(c: &SizeChoice) -> String {
    let mut alts: Vec<&(crate::Algorithm, crate::Protocol, f32)> = c
        .candidates
        .iter()
        .filter(|(a, p, _)| !(*a == c.algorithm && *p == c.protocol))
        .collect();
    alts.sort_by(|a, b| a.2.total_cmp(&b.2));
    format!(
        "{:>10}  {:<11} {:>8.1} us  {:>3} ({}..{})  {:>7}  {}",
        human(c.bytes),
        format!("{} {}", c.algorithm, c.protocol),
        c.time_us,
        c.max_channels,
        c.channel_lo,
        c.channel_hi,
        c.threads,
        alts.iter()
            .take(3)
            .map(|(a, p, t)| format!("{a} {p} {t:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}
