//! What NCCL itself reads.
//!
//! - `nccl-tuner-csv`: the config of NCCL's example tuner plugin
//!   (NVIDIA/nccl `plugins/tuner/example/plugin.c` @5067397, formerly
//!   `ext-tuner/example`; `NCCL_TUNER_CONFIG_FILE`, default
//!   `nccl_tuner.conf`): `colltype,minbytes,maxbytes,algorithm,protocol,
//!   channels,nNodes,nRanks[,numPipeOps[,regBuff]]`, read with `fgets` into
//!   256 bytes, lines starting `#` skipped, fields split at `,` and trimmed;
//!   the first line whose collective, inclusive byte range, node and rank
//!   counts match decides; `-1` keeps NCCL's channels / matches any count.
//! - `nccl-tuner-table`: the table contend's own tuner plugin
//!   (`crates/contend-tuner`) reads, in the format of
//!   [`contend_nccl::tuner_table`]: per rank count, per size range, the
//!   predicted time of every algorithm and protocol NCCL enables and its
//!   channels, and NCCL base latencies for the tuner v5+ constants.
//! - `nccl-env`: `export NCCL_…=…` lines for the variables contend's NCCL
//!   replica models.
//! - `nccl-graph`: an `NCCL_GRAPH_FILE` (`ncclTopoGetGraphFromXmlSub`,
//!   `src/graph/search.cc` @5067397): `<graphs version="1"><graph id="0"
//!   pattern="4" crossnic= nchannels= speedintra= speedinter= latencyinter=
//!   typeintra= typeinter= samechannels=><channel><gpu dev=…/>…`, `dev` read
//!   as hex, comments skipped (`xmlSkipComment`, since 2.6.4), whitespace
//!   only spaces and newlines (`xmlGetNode`).

use super::{Candidate, EmitOptions, Times, Variant, at, predict, runs, span, time};
use crate::candidate::{Forced, NcclVariant, RingOrder, env_label};
use contend_fit::fit::Progress;
use contend_import::CalibError;
use contend_nccl::{Algorithm as NcclAlgorithm, NcclEnv, NcclVersion, Protocol};
use contend_sim::ModelParams;
use contend_topo::{Bytes, Topology};
use contend_workload::{Algorithm, LaunchMode};
use std::fmt::Write as _;

/// NCCL's algorithms and protocols the tuner config names, as the replica
/// runs them forced (`NCCL_ALGO`, `NCCL_PROTO`).
const FORCED: [Forced; 6] = {
    const fn f(algorithm: NcclAlgorithm, protocol: Protocol) -> Forced {
        Forced {
            algorithm,
            protocol,
        }
    }
    [
        f(NcclAlgorithm::Ring, Protocol::Ll),
        f(NcclAlgorithm::Ring, Protocol::Ll128),
        f(NcclAlgorithm::Ring, Protocol::Simple),
        f(NcclAlgorithm::Tree, Protocol::Ll),
        f(NcclAlgorithm::Tree, Protocol::Ll128),
        f(NcclAlgorithm::Tree, Protocol::Simple),
    ]
};

/// NCCL's default choice, as the replica makes it.
const NCCL: Candidate = Candidate::Algorithm(Algorithm::Nccl);

/// The key of NCCL forced to `f`.
fn forced(f: Forced) -> Candidate {
    Candidate::Nccl(NcclVariant::Forced(f))
}

/// Whether NCCL's cost table has `f` enabled (a bandwidth above zero).
fn enables(model: &contend_nccl::CostModel, f: &Forced) -> Option<contend_nccl::ModelEntry> {
    model
        .entries
        .iter()
        .find(|e| e.algorithm == f.algorithm && e.protocol == f.protocol && e.bandwidth_gbps > 0.0)
        .copied()
}

/// The longest line the example plugin reads whole (`MAX_LINE_LENGTH` 256,
/// less the newline and the terminator).
pub const TUNER_MAX_LINE: usize = 254;

fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut i = max - 3;
        while !s.is_char_boundary(i) {
            i -= 1;
        }
        s.truncate(i);
        s.push_str("...");
    }
    s
}

pub fn tuner_csv(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    let n = topo.gpus().len();
    let worlds: Vec<usize> = (2..=n).collect();
    let mut variants = forced_variants();
    variants.push((NCCL, Variant::Algo(Algorithm::Nccl)));
    let t = predict(
        topo,
        params,
        opts.placement,
        LaunchMode::Eager,
        &worlds,
        &opts.sizes,
        &variants,
        progress,
    )?;
    let gpus = topo.gpus();
    let plan_of = |k: usize, env: &[(&str, &str)]| -> Result<contend_nccl::NcclPlan, CalibError> {
        let mut e = NcclEnv::default();
        for (n, v) in env {
            e.set(n, v).map_err(|x| CalibError::Fit(x.to_string()))?;
        }
        contend_nccl::plan(topo, &gpus[..k], &e, NcclVersion::default())
            .map_err(|x| CalibError::Fit(format!("NCCL's plan for {k} ranks: {x}")))
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {}: NCCL example tuner config (plugins/tuner/example/plugin.c)",
        opts.stamp
    );
    let _ = writeln!(s, "# for {}", cut(topo.name.clone(), TUNER_MAX_LINE - 6));
    let _ = writeln!(
        s,
        "# colltype,minbytes,maxbytes,algorithm,protocol,channels,nNodes,nRanks"
    );
    for &k in &worlds {
        // only what NCCL enables by default: the plugin skips a line whose
        // algorithm and protocol NCCL's cost table ignores (-1)
        let default = plan_of(k, &[])?;
        let enabled: Vec<Forced> = FORCED
            .into_iter()
            .filter(|f| enables(&default.model, f).is_some())
            .collect();
        // the channels NCCL gives the choice: the plugin writes 1 unless the
        // line names them (plugin.c sets *nChannels = 1; enqueue.cc keeps a
        // non-zero value)
        let mut channels: std::collections::BTreeMap<(Forced, u64), usize> = Default::default();
        for f in &enabled {
            let plan = plan_of(
                k,
                &[
                    ("NCCL_ALGO", f.algorithm.nccl_name()),
                    ("NCCL_PROTO", f.protocol.nccl_name()),
                ],
            )?;
            for &z in &opts.sizes {
                if let Some(c) = plan.choose_with(Bytes(z), Bytes(2)) {
                    channels.insert((*f, z), c.max_channels);
                }
            }
        }
        // the fastest of `among` at size z
        let fastest = |z: u64, among: &[Forced]| -> Option<Forced> {
            among
                .iter()
                .filter_map(|f| at(&t, k, z, forced(*f)).map(|v| (*f, v)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|x| x.0)
        };
        let rows: Vec<(u64, (Forced, usize))> = opts
            .sizes
            .iter()
            .filter_map(|&z| {
                fastest(z, &enabled).map(|f| (z, (f, channels.get(&(f, z)).copied().unwrap_or(1))))
            })
            .collect();
        let rs = runs(&rows);
        for (i, (a, b, (label, nch))) in rs.iter().enumerate() {
            let min = if i == 0 { 0 } else { rs[i - 1].1 + 1 };
            let max = if i + 1 == rs.len() { u64::MAX } else { *b };
            let csv = label.csv();
            let others: Vec<Forced> = enabled.iter().copied().filter(|l| l != label).collect();
            let label = *label;
            let second = opts
                .sizes
                .iter()
                .filter(|z| **z >= *a && **z <= *b)
                .find_map(|z| fastest(*z, &others));
            // no second: `none`, its times `n/a`
            let second_span = second.map_or("n/a".to_string(), |f| {
                span(&t, k, &opts.sizes, *a, *b, forced(f))
            });
            let second = second.map_or("none".to_string(), |f| f.to_string());
            let comment = format!(
                "# {}: {k} ranks {}..{}{}: {label} x{nch} {}; next {second} {}; NCCL's own {}",
                opts.stamp,
                Bytes(*a),
                Bytes(*b),
                if max == u64::MAX { " and above" } else { "" },
                span(&t, k, &opts.sizes, *a, *b, forced(label)),
                second_span,
                span(&t, k, &opts.sizes, *a, *b, NCCL),
            );
            let _ = writeln!(s, "{}", cut(comment, TUNER_MAX_LINE));
            let _ = writeln!(s, "allreduce,{min},{max},{csv},{nch},1,{k}");
        }
    }
    Ok(s)
}

/// The forced variants of [`FORCED`], keyed as the predictions key them.
fn forced_variants() -> Vec<(Candidate, Variant)> {
    FORCED
        .iter()
        .map(|f| {
            (
                forced(*f),
                Variant::Nccl(vec![
                    ("NCCL_ALGO".into(), f.algorithm.nccl_name().to_string()),
                    ("NCCL_PROTO".into(), f.protocol.nccl_name().to_string()),
                ]),
            )
        })
        .collect()
}

fn table_problem(p: contend_nccl::tuner_table::Problem) -> CalibError {
    CalibError::Fit(format!("tuner table: {p}"))
}

/// `nccl-tuner-table`: for each rank count 2..=GPUs (one node), the ladder's
/// consecutive sizes as ranges (the first from the smallest size, each
/// next one from one byte past the last), every algorithm and protocol
/// NCCL enables by default costed at both ends by contend's prediction of
/// NCCL forced to it (`NCCL_ALGO`, `NCCL_PROTO`; a size between costs the
/// straight line, so the lower end of a later range is the line one byte
/// in), with the channels NCCL's rules give it forced at the range's last
/// size. Base latencies (tuner v5+): each pair's predicted time extended
/// to zero bytes through the two smallest sizes, less what NCCL's own
/// model adds per step for this communicator (its latency less its base),
/// so NCCL's latency formula gives contend's zero-byte time; never below 0.
pub fn tuner_table(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    use contend_nccl::tuner_table::{
        BaseLatency, Collective, CommTable, Cost, SizeRange, TunerTable,
    };
    let n = topo.gpus().len();
    let worlds: Vec<usize> = (2..=n).collect();
    let variants = forced_variants();
    let t = predict(
        topo,
        params,
        opts.placement,
        LaunchMode::Eager,
        &worlds,
        &opts.sizes,
        &variants,
        progress,
    )?;
    let gpus = topo.gpus();
    let version = NcclVersion::default();
    let plan_of = |k: usize, env: &[(&str, &str)]| -> Result<contend_nccl::NcclPlan, CalibError> {
        let mut e = NcclEnv::default();
        for (n, v) in env {
            e.set(n, v).map_err(|x| CalibError::Fit(x.to_string()))?;
        }
        contend_nccl::plan(topo, &gpus[..k], &e, version)
            .map_err(|x| CalibError::Fit(format!("NCCL's plan for {k} ranks: {x}")))
    };
    let sizes = &opts.sizes;
    let mut table = TunerTable::new(&opts.stamp.to_string(), &topo.name, &version.to_string())
        .map_err(table_problem)?;
    for &k in &worlds {
        let default = plan_of(k, &[])?;
        let enabled: Vec<(Forced, contend_nccl::ModelEntry)> = FORCED
            .into_iter()
            .filter_map(|f| enables(&default.model, &f).map(|e| (f, e)))
            .collect();
        let note = format!(
            "{}: {k} ranks of {}, one node; {} buffers, flow fidelity, bf16, eager launches, NCCL {version} rules; {} sizes {}..{}",
            opts.stamp,
            topo.name,
            opts.placement.name(),
            sizes.len(),
            Bytes(sizes[0]),
            Bytes(*sizes.last().expect("sizes")),
        );
        let mut comm = CommTable::new(k, 1, Some(note)).map_err(table_problem)?;
        // the channels NCCL's rules give each forced pair at each size
        let mut channels: std::collections::BTreeMap<(Forced, u64), u32> = Default::default();
        for (l, e) in &enabled {
            let plan = plan_of(
                k,
                &[
                    ("NCCL_ALGO", e.algorithm.nccl_name()),
                    ("NCCL_PROTO", e.protocol.nccl_name()),
                ],
            )?;
            for &z in sizes {
                if let Some(c) = plan.choose_with(Bytes(z), Bytes(2)) {
                    channels.insert((*l, z), c.max_channels as u32);
                }
            }
        }
        let us = |l: &Forced, z: u64| at(&t, k, z, forced(*l)).map(|ns| ns / 1e3);
        if sizes.len() >= 2 {
            let (s0, s1) = (sizes[0], sizes[1]);
            for (l, e) in &enabled {
                if let (Some(p0), Some(p1)) = (us(l, s0), us(l, s1)) {
                    let zero = p0 - (p1 - p0) / (s1 - s0) as f64 * s0 as f64;
                    let steps = f64::from(e.latency_us - e.base_latency_us);
                    let b = BaseLatency::new(e.algorithm, e.protocol, (zero - steps).max(0.0))
                        .map_err(table_problem)?;
                    comm.add_base_latency(b).map_err(table_problem)?;
                }
            }
        }
        // (min, max, lower end's own size, upper size): the first range
        // starts at the smallest size, the next ones one byte past the last
        let mut spans: Vec<(u64, u64, u64, u64)> = Vec::new();
        if sizes.len() == 1 {
            spans.push((sizes[0], sizes[0], sizes[0], sizes[0]));
        }
        for (i, w) in sizes.windows(2).enumerate() {
            let min = if i == 0 { w[0] } else { w[0] + 1 };
            spans.push((min, w[1], w[0], w[1]));
        }
        for (min, max, a, b) in spans {
            let mut r = SizeRange::new(Collective::AllReduce, min, max).map_err(table_problem)?;
            for (l, e) in &enabled {
                let (Some(pa), Some(pb), Some(ch)) = (us(l, a), us(l, b), channels.get(&(*l, b)))
                else {
                    continue;
                };
                // the straight line through (a, pa) and (b, pb), at min
                let lo = if a == b {
                    pa
                } else {
                    pa + (pb - pa) * (min - a) as f64 / (b - a) as f64
                };
                let c = Cost::new(e.algorithm, e.protocol, [lo, pb], *ch).map_err(table_problem)?;
                r.add_cost(c).map_err(table_problem)?;
            }
            if !r.costs().is_empty() {
                comm.add_range(r).map_err(table_problem)?;
            }
        }
        table.add_comm(comm).map_err(table_problem)?;
    }
    Ok(table.to_toml(&[
        format!(
            "{}: NCCL tuner table for contend's tuner plugin (crates/contend-tuner)",
            opts.stamp
        ),
        format!("for {}", topo.name),
        "NCCL_TUNER_PLUGIN=/path/to/libcontend_tuner.so CONTEND_TUNER_TABLE=/path/to/this.toml"
            .to_string(),
        "costs: contend's predicted allreduce time in us at min_bytes and max_bytes of each range"
            .to_string(),
    ]))
}

/// Environments the `nccl-env` emitter weighs against NCCL's defaults.
const ENVS: [&[(&str, &str)]; 8] = [
    &[],
    &[("NCCL_PROTO", "LL")],
    &[("NCCL_PROTO", "LL128")],
    &[("NCCL_PROTO", "Simple")],
    &[("NCCL_ALGO", "Ring")],
    &[("NCCL_ALGO", "Tree")],
    &[("NCCL_P2P_LEVEL", "SYS")],
    &[("NCCL_P2P_DISABLE", "1")],
];

/// The key of NCCL under `e`.
fn env_key(e: &'static [(&'static str, &'static str)]) -> Candidate {
    Candidate::Nccl(NcclVariant::Env(e))
}

fn geomean(t: &Times, k: usize, sizes: &[u64], c: Candidate) -> Option<f64> {
    let v: Vec<f64> = sizes.iter().filter_map(|s| at(t, k, *s, c)).collect();
    (v.len() == sizes.len() && !v.is_empty())
        .then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

pub fn env(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    let k = topo.gpus().len();
    let variants: Vec<(Candidate, Variant)> = ENVS
        .iter()
        .map(|e| {
            (
                env_key(e),
                Variant::Nccl(
                    e.iter()
                        .map(|(a, b)| (a.to_string(), b.to_string()))
                        .collect(),
                ),
            )
        })
        .collect();
    let t = predict(
        topo,
        params,
        opts.placement,
        LaunchMode::Eager,
        &[k],
        &opts.sizes,
        &variants,
        progress,
    )?;
    let scores: Vec<(usize, f64)> = ENVS
        .iter()
        .enumerate()
        .filter_map(|(i, e)| geomean(&t, k, &opts.sizes, env_key(e)).map(|g| (i, g)))
        .collect();
    let default = scores
        .iter()
        .find(|(i, _)| *i == 0)
        .map(|x| x.1)
        .ok_or_else(|| {
            CalibError::Fit("NCCL with its defaults did not run on this topology".into())
        })?;
    let (win, g) = scores
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("defaults ran");
    let (a, b) = (opts.sizes[0], *opts.sizes.last().expect("sizes"));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {}: NCCL {} on {k} ranks of {}; geometric mean of the predicted allreduce times over {}..{} ({} sizes)",
        opts.stamp,
        NcclVersion::default(),
        topo.name,
        Bytes(a),
        Bytes(b),
        opts.sizes.len()
    );
    for (i, sc) in &scores {
        let _ = writeln!(s, "#   {}: {}", env_label(ENVS[*i]), time(*sc));
    }
    if win == 0 || g >= default * 0.99 {
        let _ = writeln!(
            s,
            "# {}: NCCL's defaults are within 1% of the best environment ({} vs {}): nothing to set",
            opts.stamp,
            time(default),
            time(g)
        );
        return Ok(s);
    }
    for (name, value) in ENVS[win] {
        let _ = writeln!(
            s,
            "export {name}={value}  # {}: geomean {} vs {} with NCCL's defaults ({:+.1}%)",
            opts.stamp,
            time(g),
            time(default),
            (g / default - 1.0) * 100.0
        );
    }
    Ok(s)
}

/// A ring graph file for `channels` (device numbers per channel) with the
/// attributes of NCCL's own ring search.
fn graph_xml(
    plan: &contend_nccl::NcclPlan,
    channels: &[Vec<usize>],
    header: &str,
    why: &str,
    per_channel: &[String],
) -> String {
    let r = &plan.ring;
    let mut s = String::new();
    let _ = writeln!(s, "<!-- {header} -->");
    let _ = writeln!(s, "<graphs version=\"1\">");
    let _ = writeln!(
        s,
        "  <graph id=\"0\" pattern=\"{}\" crossnic=\"0\" nchannels=\"{}\" speedintra=\"{}\" speedinter=\"{}\" latencyinter=\"0\" typeintra=\"{}\" typeinter=\"{}\" samechannels=\"{}\"> <!-- {why} -->",
        r.pattern.code(),
        channels.len(),
        r.bw_intra,
        r.bw_inter,
        r.type_intra.name(),
        r.type_inter.name(),
        u8::from(r.same_channels)
    );
    for (c, ch) in channels.iter().enumerate() {
        let gpus: String = ch.iter().map(|d| format!("<gpu dev=\"{d:x}\"/>")).collect();
        let _ = writeln!(
            s,
            "    <channel>{gpus}</channel> <!-- {} -->",
            per_channel.get(c).map(String::as_str).unwrap_or("")
        );
    }
    let _ = writeln!(s, "  </graph>");
    let _ = writeln!(s, "</graphs>");
    s
}

/// Candidate ring orders: NCCL's own search, file order, and the GPUs
/// sorted by socket, root complex and switch (PCIe locality).
fn candidates(
    topo: &Topology,
    plan: &contend_nccl::NcclPlan,
    k: usize,
) -> Vec<(RingOrder, Vec<Vec<usize>>)> {
    let n_ch = plan.ring.channels.len().max(1);
    let mut out: Vec<(RingOrder, Vec<Vec<usize>>)> =
        vec![(RingOrder::NcclSearch, plan.ring.channels.clone())];
    let ident: Vec<usize> = (0..k).collect();
    let gpus = topo.gpus();
    let mut local = ident.clone();
    local.sort_by_key(|&i| {
        let g = gpus[i];
        (
            topo.socket_of(g).unwrap_or(0),
            topo.upstream_root(g).map(|r| r.0).unwrap_or(0),
            topo.parent_switch(g).map(|s| s.0).unwrap_or(u32::MAX),
            i,
        )
    });
    for (name, order) in [(RingOrder::FileOrder, ident), (RingOrder::Locality, local)] {
        let chans = vec![order; n_ch];
        if !out.iter().any(|(_, c)| *c == chans) {
            out.push((name, chans));
        }
    }
    out
}

pub fn graph(
    topo: &Topology,
    params: &ModelParams,
    opts: &EmitOptions,
    progress: Progress<'_>,
) -> Result<String, CalibError> {
    let k = topo.gpus().len();
    let ranks = topo.gpus();
    let plan = contend_nccl::plan(topo, &ranks, &NcclEnv::default(), NcclVersion::default())
        .map_err(|e| CalibError::Fit(format!("NCCL's plan for {}: {e}", topo.name)))?;
    let cands = candidates(topo, &plan, k);
    let dir = std::env::temp_dir();
    let mut files = Vec::new();
    let mut variants = Vec::new();
    for (i, (name, chans)) in cands.iter().enumerate() {
        let path = dir.join(format!("contend-emit-graph-{}-{i}.xml", std::process::id()));
        std::fs::write(
            &path,
            graph_xml(&plan, chans, "candidate", name.name(), &[]),
        )
        .map_err(|e| CalibError::Fit(format!("writing {}: {e}", path.display())))?;
        variants.push((
            Candidate::Nccl(NcclVariant::Graph(*name)),
            Variant::Nccl(vec![
                ("NCCL_ALGO".into(), "Ring".into()),
                ("NCCL_GRAPH_FILE".into(), path.display().to_string()),
            ]),
        ));
        files.push(path);
    }
    let t = predict(
        topo,
        params,
        opts.placement,
        LaunchMode::Eager,
        &[k],
        &opts.sizes,
        &variants,
        progress,
    );
    for f in &files {
        let _ = std::fs::remove_file(f);
    }
    let t = t?;
    let scored: Vec<(usize, f64)> = cands
        .iter()
        .enumerate()
        .filter_map(|(i, (name, _))| {
            geomean(
                &t,
                k,
                &opts.sizes,
                Candidate::Nccl(NcclVariant::Graph(*name)),
            )
            .map(|g| (i, g))
        })
        .collect();
    let (win, g) = scored
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .ok_or_else(|| CalibError::Fit("no ring graph ran".into()))?;
    let own = scored.iter().find(|x| x.0 == 0).map(|x| x.1).unwrap_or(g);
    let (a, b) = (opts.sizes[0], *opts.sizes.last().expect("sizes"));
    let header = format!(
        "{}: NCCL_GRAPH_FILE ring graph for {k} ranks of {}; ring allreduces {}..{}, geomean {} ({}) vs {} with NCCL's own ring search",
        opts.stamp,
        topo.name,
        Bytes(a),
        Bytes(b),
        time(g),
        cands[win].0.name(),
        time(own)
    );
    let why = format!("{}: {}", opts.stamp, cands[win].0.name());
    let per: Vec<String> = cands[win]
        .1
        .iter()
        .enumerate()
        .map(|(c, ch)| {
            format!(
                "{}: channel {c}: ring {} (geomean {})",
                opts.stamp,
                ch.iter()
                    .map(|d| format!("gpu{d}"))
                    .collect::<Vec<_>>()
                    .join(" > "),
                time(g)
            )
        })
        .collect();
    Ok(graph_xml(&plan, &cands[win].1, &header, &why, &per))
}
