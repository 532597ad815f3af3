//! Records as nccl-tests text tables (`contend sweep --format nccl-tests`),
//! which [`super::parse_nccl_tests`] reads back to the same records.

use super::{HEADER, TYPES, fmt_time};
use contend_workload::{
    Dtype, LaunchMode, Measured, Placement, ResultRecord, Source, WorkloadKind,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Allreduce records as nccl-tests tables: one table per (source,
/// algorithm, placement), sizes ascending. Sizes are bytes, times µs, algbw
/// = size / time, busbw = algbw x 2(n-1)/n as nccl-tests computes them.
/// Records without in-place figures repeat the out-of-place ones.
pub fn nccl_tests_table(records: &[ResultRecord]) -> String {
    type Key = (
        Source,
        Measured,
        Option<Placement>,
        Vec<String>,
        LaunchMode,
        String,
    );
    let mut order: Vec<Key> = vec![];
    let mut groups: BTreeMap<usize, Vec<&ResultRecord>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.workload == WorkloadKind::Allreduce)
    {
        let k: Key = (
            r.source,
            r.algorithm,
            r.placement,
            r.ranks.clone(),
            r.launch,
            r.scenario.clone(),
        );
        let i = match order.iter().position(|o| *o == k) {
            Some(i) => i,
            None => {
                order.push(k);
                order.len() - 1
            }
        };
        groups.entry(i).or_default().push(r);
    }
    let mut s = String::new();
    for (i, (source, alg, pl, ranks, launch, scenario)) in order.iter().enumerate() {
        let mut rows = groups.remove(&i).unwrap_or_default();
        rows.sort_by_key(|r| r.size_bytes);
        let n = ranks.len().max(1) as f64;
        let src = match source {
            Source::Sim => "sim",
            Source::Hw => "hw",
            Source::Nccl => "nccl",
        };
        let _ = writeln!(
            s,
            "# nThread 1 nGpus {} minBytes {} maxBytes {} step: 2(factor) warmup iters: 0 iters: 1 agg iters: 1 validation: 0 graph: {}",
            ranks.len(),
            rows.first().map_or(0, |r| r.size_bytes),
            rows.last().map_or(0, |r| r.size_bytes),
            u8::from(*launch == LaunchMode::Graph)
        );
        let _ = writeln!(
            s,
            "# contend: source={src} algorithm={alg} placement={} ranks={} scenario={}",
            pl.map_or("-".to_string(), |p| p.to_string()),
            ranks.join(","),
            if scenario.is_empty() { "-" } else { scenario }
        );
        if let Some(m) = rows.iter().find_map(|r| r.machine.as_ref())
            && !m.gpus.is_empty()
        {
            s.push_str("#\n# Using devices\n");
            for (k, g) in m.gpus.iter().enumerate() {
                let pci = m.pci_addresses.get(k).map_or("", |p| p.as_str());
                let host = if m.hostname.is_empty() {
                    "-"
                } else {
                    &m.hostname
                };
                let _ = writeln!(
                    s,
                    "#  Rank {k:2} Group  0 Pid      0 on {host:>10} device {k:2} [{pci}] {g}"
                );
            }
        }
        s.push_str("#\n");
        s.push_str(HEADER);
        for r in rows {
            let ty = r
                .extra
                .import
                .element_type
                .clone()
                .or_else(|| {
                    let d = r.extra.timing.dtype.unwrap_or(Dtype::Bf16).name();
                    TYPES
                        .iter()
                        .find(|t| t.2 == Some(d))
                        .map(|t| t.0.to_string())
                })
                .unwrap_or_else(|| "bfloat16".into());
            let tsize = TYPES.iter().find(|t| t.0 == ty).map_or(2, |t| t.1);
            let us = r.stats.median_ns / 1000.0;
            let alg_bw = |us: f64| r.size_bytes as f64 / (us * 1000.0);
            let bus = |a: f64| a * 2.0 * (n - 1.0) / n;
            let (t, i) = (&r.extra.timing, &r.extra.import);
            let (ab, bb) = (
                t.algbw_gbps.unwrap_or(alg_bw(us)),
                t.busbw_gbps.unwrap_or(bus(alg_bw(us))),
            );
            let ip = i.in_place_us.unwrap_or(us);
            let (iab, ibb) = (
                i.in_place_algbw_gbps.unwrap_or(alg_bw(ip)),
                i.in_place_busbw_gbps.unwrap_or(bus(alg_bw(ip))),
            );
            let wrong = |v: Option<bool>| match v {
                Some(true) => "0".to_string(),
                Some(false) => "1".to_string(),
                None => "N/A".to_string(),
            };
            let w_in = i
                .in_place_wrong
                .map_or_else(|| wrong(r.verified), |w| w.to_string());
            let redop = i.redop.as_deref().unwrap_or("sum");
            let _ = writeln!(
                s,
                "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {}  {:6.2}  {:6.2}  {:>5}  {}  {:6.2}  {:6.2}  {:>5}",
                r.size_bytes,
                r.size_bytes / tsize,
                ty,
                redop,
                -1,
                fmt_time(us),
                ab,
                bb,
                wrong(r.verified),
                fmt_time(ip),
                iab,
                ibb,
                w_in
            );
        }
        s.push_str("#\n");
    }
    s
}
