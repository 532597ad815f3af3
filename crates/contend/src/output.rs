//! Output for people (tables) and scripts (JSON, CSV).

use contend_sim::Run;
use contend_topo::Bytes;
use contend_workload::compare::{self, Baseline};
use contend_workload::{
    Algorithm, Fidelity, Measured, Placement, ResultRecord, Scenario, Skew, TransferOp, Workload,
};
use serde::Serialize;
use std::fmt::Write;

/// `{"scenario": .., "topology": .., "results": [ResultRecord, ..]}`.
pub fn json(sc: &Scenario, runs: &[Run], second: &[Run]) -> anyhow::Result<String> {
    #[derive(Serialize)]
    struct Doc<'a> {
        scenario: &'a str,
        topology: &'a str,
        /// Pairs of GPUs without P2P (custom kernels then run in host
        /// placement), and why in words.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        no_p2p: Vec<[&'a str; 2]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        no_p2p_note: Option<String>,
        results: Vec<&'a ResultRecord>,
        /// `nccl` again with `NCCL_P2P_LEVEL=SYS`, where NCCL's default
        /// level stages pairs that have P2P through host memory
        /// (`nccl_p2p_sys.rs`).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        nccl_p2p_level_sys: Vec<&'a ResultRecord>,
    }
    let id = |g| sc.topology().node(g).id.0.as_str();
    let doc = Doc {
        scenario: sc.name(),
        topology: &sc.topology().name,
        no_p2p: sc.no_p2p().iter().map(|p| [id(p.a), id(p.b)]).collect(),
        no_p2p_note: sc.no_p2p_note(),
        results: runs.iter().flat_map(|r| r.records.iter()).collect(),
        nccl_p2p_level_sys: second.iter().flat_map(|r| r.records.iter()).collect(),
    };
    Ok(serde_json::to_string_pretty(&doc)?)
}

fn us(ns: f64) -> String {
    format!("{:.2} us", ns / 1e3)
}

fn dur(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        us(ns)
    }
}

fn describe_skew(s: &Skew) -> String {
    match s {
        Skew::None => "no skew".into(),
        Skew::Normal { sd_us } => format!("skew |N(0, {sd_us} us)|"),
        Skew::Exponential { mean_us } => format!("skew Exp(mean {mean_us} us)"),
        Skew::Uniform { max_us } => format!("skew U(0, {max_us} us)"),
    }
}

fn header(sc: &Scenario) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "scenario  {}{}{}",
        sc.name(),
        sc.description()
            .map(|d| format!(" — {d}"))
            .unwrap_or_default(),
        sc.replaced_topology()
            .map(|t| format!(" [written for {t}; run on the topology below]"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        s,
        "topology  {} ({} ranks: {})",
        sc.topology().name,
        sc.ranks().len(),
        sc.rank_names().join(" ")
    );
    let w = match sc.workload() {
        Workload::VerifyStep(v) => format!(
            "verify step: {} allreduces ({} layers x {}) of {} ({} x {} x {}), compute gap {}, {}",
            v.allreduces(),
            v.layers,
            v.allreduces_per_layer,
            v.size().0,
            v.hidden,
            v.tokens,
            v.dtype,
            dur(v.gap.as_ns_f64()),
            describe_skew(&v.skew)
        ),
        Workload::Allreduce { sizes, repeats, .. } => format!(
            "allreduce: {} sizes, {repeats} back to back each",
            sizes.len()
        ),
        Workload::Transfer { patterns, .. } => {
            let streams = sc.streams();
            let latest = streams.iter().map(|s| s.start).max().unwrap_or_default();
            let when = if latest.0 == 0 {
                "at once".to_string()
            } else {
                format!("starting within {}", us(latest.as_ns_f64()))
            };
            let from = if patterns.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} from {} pattern{})",
                    sc.pattern_streams()
                        .iter()
                        .map(|g| g.streams.len())
                        .sum::<usize>(),
                    patterns.len(),
                    if patterns.len() == 1 { "" } else { "s" }
                )
            };
            format!("transfer: {} streams{from} {when}", streams.len())
        }
    };
    let _ = writeln!(
        s,
        "workload  {w}; launch {}; kernel {} blocks x {} threads",
        sc.launch(),
        sc.kernel().blocks,
        sc.kernel().threads
    );
    if let Some(n) = sc.no_p2p_note() {
        let _ = writeln!(s, "p2p       {n}");
    }
    if sc.algorithms().contains(&Algorithm::Nccl) && sc.workload().gap_and_skew().is_some() {
        let _ = writeln!(
            s,
            "nccl      NCCL {} (rules of {}){}",
            sc.nccl().version,
            sc.nccl().version.source_tag(),
            match sc.nccl().env.assignments() {
                a if a.is_empty() => ", no NCCL_* variables set".to_string(),
                a => format!(", {}", a.join(" ")),
            }
        );
    }
    for &a in sc.algorithms() {
        if sc.algorithm_config(a).is_some() && sc.workload().gap_and_skew().is_some() {
            let k = sc.kernel_of(a);
            let _ = writeln!(
                s,
                "          {a}: launch {}; kernel {} blocks x {} threads",
                sc.launch_of(a),
                k.blocks,
                k.threads
            );
        }
    }
    s
}

fn combos(runs: &[Run]) -> Vec<(Placement, Fidelity)> {
    let mut v = vec![];
    for r in runs {
        let k = (r.spec.placement, r.spec.fidelity);
        if !v.contains(&k) {
            v.push(k);
        }
    }
    v
}

/// The simulate table: per placement and fidelity, one row per algorithm.
/// `second`: the second NCCL's runs (`nccl_p2p_sys.rs`), each printed
/// under the `nccl` row of its placement, fidelity and size.
pub fn table(sc: &Scenario, runs: &[Run], second: &[Run]) -> String {
    let mut s = header(sc);
    if let Workload::Transfer { .. } = sc.workload() {
        for (_, fid) in combos(runs) {
            let _ = writeln!(s, "\nfidelity {fid}");
            let _ = writeln!(
                s,
                "  {:<10} {:<8} {:<8} {:>10} {:>12} {:>11}",
                "op", "from", "to", "bytes", "time", "GB/s"
            );
            for r in runs.iter().filter(|r| r.spec.fidelity == fid) {
                let (aggregates, streams): (Vec<&ResultRecord>, Vec<&ResultRecord>) = r
                    .records
                    .iter()
                    .partition(|rec| rec.algorithm == Measured::Aggregate);
                for rec in streams {
                    let g = |v: &Option<String>| v.as_deref().unwrap_or("?").to_string();
                    let bw = rec
                        .bandwidth_gbps
                        .map(|b| format!("{b:.2}"))
                        .unwrap_or_else(|| "-".into());
                    let what = if rec.algorithm == Measured::Transfer(TransferOp::PingPong) {
                        format!("{} /rt", us(rec.stats.median_ns))
                    } else {
                        dur(rec.total_ns)
                    };
                    let _ = writeln!(
                        s,
                        "  {:<10} {:<8} {:<8} {:>10} {:>12} {:>11}",
                        rec.algorithm,
                        g(&rec.extra.stream.from),
                        g(&rec.extra.stream.to),
                        rec.size_bytes,
                        what,
                        bw
                    );
                }
                if !aggregates.is_empty() {
                    let _ = writeln!(
                        s,
                        "  {:<20} {:>7} {:>10} {:>10} {:>10} {:>9}   per stream min / median / max GB/s",
                        "aggregate", "streams", "bytes", "span", "bytes/span", "sum GB/s"
                    );
                }
                for rec in aggregates {
                    let a = &rec.extra.aggregate;
                    let g = |v: Option<f64>| v.map_or_else(|| "-".into(), |b| format!("{b:.2}"));
                    let _ = writeln!(
                        s,
                        "  {:<20} {:>7} {:>10} {:>10} {:>10} {:>9}   {} / {} / {}",
                        rec.extra.stream.pattern.as_deref().unwrap_or("?"),
                        a.streams.unwrap_or(0),
                        rec.size_bytes,
                        dur(rec.total_ns),
                        g(rec.bandwidth_gbps),
                        g(a.aggregate_gbps),
                        g(a.min_gbps),
                        g(a.median_gbps),
                        g(a.max_gbps)
                    );
                }
                if let Some(b) = &r.record().busiest_link {
                    let _ = writeln!(
                        s,
                        "  busiest link: {} ({:.0}%)",
                        b.link,
                        b.utilisation * 100.0
                    );
                }
            }
        }
        return s;
    }
    let sizes: Vec<u64> = {
        let mut v: Vec<u64> = runs.iter().map(|r| r.record().size_bytes).collect();
        v.dedup();
        v.sort_unstable();
        v.dedup();
        v
    };
    let verify = matches!(sc.workload(), Workload::VerifyStep(_));
    for (pl, fid) in combos(runs) {
        for &size in &sizes {
            let rows: Vec<&Run> = runs
                .iter()
                .filter(|r| {
                    r.spec.placement == pl
                        && r.spec.fidelity == fid
                        && r.record().size_bytes == size
                })
                .collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                "\nplacement {pl}, fidelity {fid}{}",
                if verify {
                    String::new()
                } else {
                    format!(", allreduce of {}", Bytes(size))
                }
            );
            let also = second.iter().find(|r| {
                r.spec.placement == pl && r.spec.fidelity == fid && r.record().size_bytes == size
            });
            // the name column fits the longest name shown (15 at least)
            let nw = rows
                .iter()
                .map(|r| r.record().algorithm.name().len())
                .chain(also.map(|_| SECOND_NCCL.len()))
                .max()
                .unwrap_or(0)
                .max(15);
            let _ = writeln!(
                s,
                "  {:<nw$} {:>12} {:>14} {:>12}   what binds",
                "algorithm",
                if verify { "step time" } else { "total" },
                "allreduce p50",
                "p99"
            );
            for r in &rows {
                row(&mut s, nw, &r.record().algorithm.to_string(), r);
                if r.record().algorithm.algorithm() == Some(Algorithm::Nccl)
                    && let Some(a) = also
                {
                    row(&mut s, nw, SECOND_NCCL, a);
                }
            }
            let key = |r: &&Run| {
                if verify {
                    r.record().total_ns
                } else {
                    r.record().stats.median_ns
                }
            };
            if let (Some(best), Some(base)) = (
                compare::fastest(&rows, key).map(|i| rows[i]),
                compare::baseline(&rows, key, |r| r.record().algorithm.algorithm()),
            ) {
                let _ = writeln!(s, "  {}", winner_line(&rows, key, best, base));
            }
        }
    }
    s
}

/// The second NCCL's name in the table.
const SECOND_NCCL: &str = "nccl P2P_LEVEL=SYS";

/// One algorithm's row: name, step (or total) time, p50, p99, what binds,
/// its note and NCCL's decision line under it.
fn row(s: &mut String, nw: usize, name: &str, r: &Run) {
    let rec = r.record();
    let busy = match (&rec.extra.sim.binding, &rec.busiest_link) {
        (Some(b), _) => b.to_string(),
        (None, Some(b)) => format!("busiest {} ({:.0}%)", b.link, b.utilisation * 100.0),
        (None, None) => String::new(),
    };
    let _ = writeln!(
        s,
        "  {:<nw$} {:>12} {:>14} {:>12}   {busy}",
        name,
        dur(rec.total_ns),
        us(rec.stats.median_ns),
        us(rec.stats.p99_ns)
    );
    if let Some(n) = &r.note {
        let _ = writeln!(s, "    note: {n}");
    }
    if let Some(l) = &rec.extra.nccl.line {
        let _ = writeln!(s, "    {l}");
    }
}

/// The winner and its speed-up against NCCL as NCCL would run there (the
/// slowest where NCCL did not run); where NCCL wins, how far the fastest
/// custom kernel is behind it.
fn winner_line(rows: &[&Run], key: impl Fn(&&Run) -> f64, best: &Run, base: Baseline) -> String {
    let t = |r: &Run| key(&r);
    let name = |r: &Run| r.record().algorithm.to_string();
    let against = rows[base.index()];
    match base {
        Baseline::Nccl(_) if std::ptr::eq(best, against) => {
            let next = compare::fastest(rows, |r| {
                if std::ptr::eq(*r, against) {
                    f64::NAN
                } else {
                    key(r)
                }
            })
            .map(|i| rows[i]);
            match next {
                Some(n) => format!(
                    "winner: nccl — {} (NCCL as it runs here; the fastest other, {}, is {:.2}x slower)",
                    dur(t(best)),
                    name(n),
                    t(n) / t(best).max(1e-9)
                ),
                None => format!("winner: nccl — {}", dur(t(best))),
            }
        }
        Baseline::Nccl(_) => format!(
            "winner: {} — {} ({:.2}x faster than nccl as NCCL would run here, {})",
            name(best),
            dur(t(best)),
            t(against) / t(best).max(1e-9),
            dur(t(against))
        ),
        Baseline::Slowest(_) => format!(
            "winner: {} — {} ({:.2}x faster than {}, the slowest; nccl did not run)",
            name(best),
            dur(t(best)),
            t(against) / t(best).max(1e-9),
            name(against)
        ),
    }
}

/// Sizes down, algorithms across (median allreduce time); the winner per size
/// and a mark where it changes.
pub fn sweep_table(sc: &Scenario, runs: &[Run]) -> String {
    let mut s = header(sc);
    for (pl, fid) in combos(runs) {
        let sel: Vec<&Run> = runs
            .iter()
            .filter(|r| r.spec.placement == pl && r.spec.fidelity == fid)
            .collect();
        let recs: Vec<&ResultRecord> = sel.iter().map(|r| r.record()).collect();
        let mut algs: Vec<Measured> = vec![];
        for r in &recs {
            if !algs.contains(&r.algorithm) {
                algs.push(r.algorithm);
            }
        }
        let _ = writeln!(
            s,
            "\nplacement {pl}, fidelity {fid}: median allreduce time (us)"
        );
        // a column as wide as its algorithm's name (14 at least)
        let width = |a: &Measured| a.name().len().max(14);
        let _ = write!(s, "  {:>10}", "size");
        for a in &algs {
            let _ = write!(s, " {:>w$}", a, w = width(a));
        }
        let _ = writeln!(s, "   winner");
        let winners = compare::winners_by_size(&recs);
        let crossings: Vec<Bytes> = compare::crossovers(&winners)
            .iter()
            .map(|c| c.size)
            .collect();
        for (size, w) in &winners {
            let _ = write!(s, "  {:>10}", size.to_string());
            for a in &algs {
                match recs
                    .iter()
                    .find(|r| r.size_bytes == size.0 && r.algorithm == *a)
                {
                    Some(r) => {
                        let _ = write!(s, " {:>w$.2}", r.stats.median_ns / 1e3, w = width(a));
                    }
                    None => {
                        let _ = write!(s, " {:>w$}", "-", w = width(a));
                    }
                }
            }
            let w = w.map(|w| w.to_string()).unwrap_or_default();
            let mark = if crossings.contains(size) {
                "   <- crossover"
            } else {
                ""
            };
            let _ = writeln!(s, "   {w}{mark}");
        }
        if let Some(line) = nccl_choices(&recs) {
            let _ = writeln!(s, "  {line}");
        }
    }
    s
}

/// What NCCL chose over a sweep's sizes, stretches of one choice merged:
/// `nccl 2.28 (SHM on 8 connections): 1 KiB–2 KiB ring LL on 1 channel;
/// 4 KiB–64 MiB ring Simple on 2 channels`.
fn nccl_choices(recs: &[&ResultRecord]) -> Option<String> {
    let mut facts: Vec<&contend_nccl::CallFacts> = recs
        .iter()
        .filter(|r| r.algorithm == Measured::NCCL)
        .filter_map(|r| r.extra.nccl.decisions.as_ref())
        .collect();
    facts.sort_by_key(|f| f.bytes);
    facts.dedup_by_key(|f| f.bytes);
    let first = facts.first()?;
    let mut parts: Vec<(u64, u64, String)> = vec![];
    for f in &facts {
        let n = f.channels_used();
        let what = format!(
            "{} {} on {n} channel{}",
            f.algorithm,
            f.protocol,
            if n == 1 { "" } else { "s" }
        );
        match parts.last_mut() {
            Some((_, to, w)) if *w == what => *to = f.bytes,
            _ => parts.push((f.bytes, f.bytes, what)),
        }
    }
    let text = parts
        .iter()
        .map(|(a, b, w)| {
            if a == b {
                format!("{} {w}", Bytes(*a))
            } else {
                format!("{}–{} {w}", Bytes(*a), Bytes(*b))
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(format!(
        "nccl {} ({}): {text}",
        first.version,
        first.transports()
    ))
}

pub fn sweep_csv(runs: &[Run]) -> String {
    let mut s = String::from(
        "size_bytes,algorithm,placement,fidelity,median_ns,p10_ns,p90_ns,p99_ns,total_ns\n",
    );
    for r in runs {
        let rec = r.record();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{}",
            rec.size_bytes,
            rec.algorithm,
            r.spec.placement,
            r.spec.fidelity,
            rec.stats.median_ns,
            rec.stats.p10_ns,
            rec.stats.p90_ns,
            rec.stats.p99_ns,
            rec.total_ns
        );
    }
    s
}

#[derive(Serialize, serde::Deserialize, Clone, Debug)]
pub struct BenchRow {
    pub algorithm: String,
    pub placement: Placement,
    pub fidelity: Fidelity,
    pub events: u64,
    /// The fastest wall time of `repeats` runs (`contend bench --repeat`).
    pub wall_ms: f64,
    pub events_per_sec: f64,
    #[serde(default = "one")]
    pub repeats: u32,
}

fn one() -> u32 {
    1
}

pub fn bench_table(sc: &Scenario, rows: &[&BenchRow]) -> String {
    let mut s = header(sc);
    // the algorithm column as wide as its longest name (two-shot-push-fp32acc)
    let w = rows
        .iter()
        .map(|r| r.algorithm.len())
        .max()
        .unwrap_or(0)
        .max("algorithm".len());
    let _ = writeln!(
        s,
        "\n  {:<w$} {:<9} {:<8} {:>12} {:>12} {:>14}",
        "algorithm", "placement", "fidelity", "events", "wall", "events/s"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "  {:<w$} {:<9} {:<8} {:>12} {:>9.1} ms {:>12.2} M",
            r.algorithm,
            r.placement.name(),
            r.fidelity.name(),
            r.events,
            r.wall_ms,
            r.events_per_sec / 1e6
        );
    }
    for fid in [Fidelity::Tlp, Fidelity::Flow] {
        let sel: Vec<&BenchRow> = rows.iter().copied().filter(|r| r.fidelity == fid).collect();
        if sel.is_empty() {
            continue;
        }
        let ev: u64 = sel.iter().map(|r| r.events).sum();
        let ms: f64 = sel.iter().map(|r| r.wall_ms).sum();
        let max = sel.iter().map(|r| r.wall_ms).fold(0.0, f64::max);
        let _ = writeln!(
            s,
            "  {fid}: {:.2} M events/s overall, slowest run {max:.1} ms, all runs {ms:.1} ms",
            ev as f64 / (ms / 1e3) / 1e6
        );
    }
    if let Some(n) = rows.iter().map(|r| r.repeats).max().filter(|&n| n > 1) {
        let _ = writeln!(s, "  wall: the fastest of {n} repeats of each run");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of the bench table puts its columns where the header does,
    /// the longest algorithm name included.
    #[test]
    fn bench_columns_line_up_under_the_longest_algorithm_name() {
        let sc = contend_workload::default_scenario(None).unwrap();
        let row = |algorithm: &str| BenchRow {
            algorithm: algorithm.into(),
            placement: Placement::Peer,
            fidelity: Fidelity::Tlp,
            events: 3_125_160,
            wall_ms: 211.4,
            events_per_sec: 14.78e6,
            repeats: 1,
        };
        let rows = [row("two-shot-push-fp32acc"), row("nccl")];
        let t = bench_table(&sc, &rows.iter().collect::<Vec<_>>());
        let lines: Vec<&str> = t
            .lines()
            .filter(|l| l.contains("events") || l.contains(" tlp "))
            .collect();
        let col = |l: &str, w: &str| l.find(w).unwrap_or_else(|| panic!("{w} in {l}"));
        let head = lines.iter().find(|l| l.contains("placement")).unwrap();
        for l in lines.iter().filter(|l| l.contains(" tlp ")) {
            assert_eq!(col(l, "peer"), col(head, "placement"), "{t}");
            assert_eq!(col(l, "tlp"), col(head, "fidelity"), "{t}");
        }
    }
}
