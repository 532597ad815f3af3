//! Reading an `NCCL_DEBUG=INFO` log into an [`NcclLog`]: each line found
//! by its `NCCL INFO` text and parsed by the format of the `INFO(...)` call
//! that printed it; a line that starts like a decision but does not parse
//! is an error naming file and line.

use super::lines::*;
use super::*;
use crate::error::LogError;
use crate::tuning::{Algorithm, Protocol};

pub(super) struct Cx<'a> {
    file: &'a str,
    line: usize,
    text: &'a str,
}

impl Cx<'_> {
    pub(super) fn err(&self, message: impl Into<String>) -> LogError {
        LogError {
            file: self.file.to_string(),
            line: self.line,
            message: message.into(),
            text: self.text.trim_end().to_string(),
        }
    }
}

pub(super) fn num<T: std::str::FromStr>(cx: &Cx, s: &str, what: &str) -> Result<T, LogError> {
    s.trim()
        .parse()
        .map_err(|_| cx.err(format!("{what} `{s}` is not a number")))
}

pub(super) fn after<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    s.find(key).map(|i| &s[i + key.len()..])
}

pub(super) fn first_token(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or("")
}

/// Parses a log's text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<NcclLog, LogError> {
    let mut log = NcclLog::default();
    // The graph whose channel lines follow, per printing thread (the text
    // before `NCCL INFO`): threads interleave in multi-GPU logs.
    let mut pending_graph: Vec<(String, usize)> = Vec::new();
    let mut model_algos: Vec<Algorithm> = Vec::new();
    let mut model: Vec<(Algorithm, Protocol, f32, f32)> = Vec::new();
    let mut matrix: Option<TopoMatrix> = None;
    for (i, raw) in text.lines().enumerate() {
        let cx = Cx {
            file,
            line: i + 1,
            text: raw,
        };
        // nvidia-smi topo -m, pasted beside the log.
        let trimmed = raw.trim();
        if trimmed.starts_with("GPU0") && trimmed.split_whitespace().nth(1) == Some("GPU1") {
            let labels: Vec<String> = trimmed
                .split_whitespace()
                .take_while(|t| !t.starts_with("CPU"))
                .map(String::from)
                .collect();
            matrix = Some(TopoMatrix {
                labels,
                rows: vec![],
            });
            continue;
        }
        if let Some(m) = matrix.as_mut() {
            let mut toks = trimmed.split_whitespace();
            if let Some(label) = toks.next()
                && m.labels.iter().any(|l| l == label)
                && !trimmed.contains("NCCL")
            {
                let cells: Vec<String> = toks.take(m.labels.len()).map(String::from).collect();
                if cells.len() == m.labels.len() {
                    m.rows.push((label.to_string(), cells));
                    continue;
                }
            }
        }
        if let Some(w) = after(raw, "NCCL WARN ") {
            log.warnings.push(w.trim().to_string());
            parse_tuner(&cx, w.trim(), &mut log.tuner)?;
            if let Some(p) = after(w, "Could not find a path for pattern ") {
                log.search_fallbacks.push(num(
                    &cx,
                    first_token(p).trim_end_matches(','),
                    "pattern",
                )?);
            }
            continue;
        }
        let body = match after(raw, "NCCL INFO ") {
            Some(b) => b,
            None => {
                if let Some(v) = after(raw, "NCCL version ")
                    && log.version.is_none()
                {
                    log.version = Some(parse_version(&cx, first_token(v))?);
                }
                continue;
            }
        };
        let who = raw[..raw.len() - body.len() - "NCCL INFO ".len()].to_string();
        let b = body.trim_end();
        let bt = b.trim_start();
        if let Some(v) = after(bt, "NCCL version ") {
            if log.version.is_none() {
                log.version = Some(parse_version(&cx, first_token(v))?);
            }
            continue;
        }
        if parse_tuner(&cx, bt, &mut log.tuner)? {
            continue;
        }
        // Topology dump: "=== System : maxBw 24.0 totalBw 24.0 ===" then tree lines.
        if let Some(rest) = after(bt, "=== System : maxBw ") {
            let mut t = rest.split_whitespace();
            let max: f32 = num(&cx, t.next().unwrap_or(""), "maxBw")?;
            let _ = t.next();
            let total: f32 = num(&cx, t.next().unwrap_or(""), "totalBw")?;
            if log.system_bw.is_none() {
                log.system_bw = Some((max, total));
            }
            continue;
        }
        if bt.starts_with("==========") {
            continue;
        }
        // Topology dump lines (several ranks may print theirs, interleaved).
        if let Some(line) = parse_topo_line(&cx, b)? {
            if !log.topology.contains(&line) {
                log.topology.push(line);
            }
            continue;
        }
        if let Some(rest) = bt.strip_prefix("Pattern ") {
            let g = parse_graph(&cx, rest)?;
            let ix = match log.graphs.iter().position(|x| {
                x.pattern == g.pattern
                    && x.n_channels == g.n_channels
                    && x.bw_intra == g.bw_intra
                    && x.type_intra == g.type_intra
            }) {
                // Every rank prints the same graph: keep one.
                Some(ix) => ix,
                None => {
                    log.graphs.push(g);
                    log.graphs.len() - 1
                }
            };
            pending_graph.retain(|(w, _)| *w != who);
            pending_graph.push((who.clone(), ix));
            continue;
        }
        if let Some(&(_, g)) = pending_graph.iter().find(|(w, _)| *w == who) {
            // " 0 : GPU/0 GPU/1 …" lines follow their Pattern line.
            if let Some((c, rest)) = bt.split_once(" : ")
                && let Ok(ch) = c.trim().parse::<usize>()
                && (rest.contains("GPU/") || rest.contains("NET/"))
            {
                let gpus: Vec<String> = rest
                    .split_whitespace()
                    .filter(|t| t.starts_with("GPU/"))
                    .map(String::from)
                    .collect();
                if log.graphs[g].channels.len() == ch {
                    log.graphs[g].channels.push(gpus);
                }
                continue;
            }
            pending_graph.retain(|(w, _)| *w != who);
        }
        if let Some(p) = after(bt, "Could not find a path for pattern ") {
            log.search_fallbacks
                .push(num(&cx, first_token(p).trim_end_matches(','), "pattern")?);
            continue;
        }
        if let Some(rest) = after(bt, " set by environment to ") {
            let name = bt[..bt.find(" set by environment to ").unwrap_or(0)].trim();
            if name.starts_with("NCCL_") {
                log.env.push((
                    name.to_string(),
                    rest.trim().trim_end_matches('.').to_string(),
                ));
            }
            continue;
        }
        if bt.contains(" via ") && (bt.starts_with("Channel ") || bt.starts_with("Ring ")) {
            log.connections.push(parse_connection(&cx, bt)?);
            continue;
        }
        if let Some(rest) = bt.strip_prefix("Channel ")
            && let Some((head, tail)) = rest.split_once(" :")
            && head.contains('/')
        {
            log.rings.push(parse_ring(&cx, head, tail)?);
            continue;
        }
        if let Some(rest) = bt.strip_prefix("Ring ")
            && rest.contains("->")
        {
            let (c, r) = rest
                .split_once(':')
                .ok_or_else(|| cx.err("ring neighbour line without `:`"))?;
            let parts: Vec<&str> = r.split("->").map(str::trim).collect();
            if parts.len() != 3 {
                return Err(cx.err("ring neighbour line is not `prev -> rank -> next`"));
            }
            log.ring_neighbours.push((
                num(&cx, c, "channel")?,
                num(&cx, parts[0], "prev")?,
                num(&cx, parts[1], "rank")?,
                num(&cx, parts[2], "next")?,
            ));
            continue;
        }
        if let Some(rest) = bt.strip_prefix("Trees") {
            if let Some(t) = parse_trees(&cx, rest)?
                && !log.trees.iter().any(|x| x.rank == t.rank)
            {
                log.trees.push(t);
            }
            continue;
        }
        if let Some(rest) = bt.strip_prefix("threadThresholds ") {
            let groups: Vec<&str> = rest.split('|').map(str::trim).collect();
            let three = |g: &str| -> Result<[u64; 3], LogError> {
                let v: Vec<&str> = g.split('/').collect();
                if v.len() != 3 {
                    return Err(cx.err("thread thresholds are not `ll/ll128/simple`"));
                }
                Ok([
                    num(&cx, v[0], "threshold")?,
                    num(&cx, v[1], "threshold")?,
                    num(&cx, v[2], "threshold")?,
                ])
            };
            if groups.len() < 2 {
                return Err(cx.err("thread thresholds lack the ring group"));
            }
            log.thread_thresholds = Some((three(groups[0])?, three(groups[1])?));
            continue;
        }
        if bt.contains(" coll channels,") {
            log.channel_counts = Some(parse_counts(&cx, bt)?);
            continue;
        }
        if bt.contains("Bytes -> ") {
            if let Some(c) = parse_call(&cx, bt)? {
                log.calls.push(c);
            }
            continue;
        }
        if let Some(rest) = bt.strip_prefix("P2P is disabled between connected GPUs ") {
            let t: Vec<&str> = rest.split_whitespace().collect();
            if t.len() >= 3 {
                log.p2p_disabled.push((
                    num(&cx, t[0], "GPU")?,
                    num(&cx, t[2].trim_end_matches('.'), "GPU")?,
                ));
            }
            continue;
        }
        if let Some(r) = parse_init(&cx, bt)? {
            if !log.ranks.iter().any(|x| x.rank == r.rank) {
                log.ranks.push(r);
            }
            continue;
        }
        if bt.contains(" :")
            && (bt.starts_with("GPU/") || bt.starts_with("NET/"))
            && bt.contains('(')
        {
            if let Some(p) = parse_paths(&cx, bt)?
                && !log.paths.iter().any(|x| x.from == p.from)
            {
                log.paths.push(p);
            }
            continue;
        }
        // Model table, new format (2.19+): "  Algorithm   |   Tree ..." blocks.
        if bt.starts_with("Algorithm") && bt.contains('|') {
            model_algos = bt
                .split('|')
                .skip(1)
                .flat_map(|c| c.split_whitespace())
                .filter_map(Algorithm::from_log_name)
                .collect();
            continue;
        }
        if bt.starts_with("Latency/AlgBw") {
            // Old format: "Latency/AlgBw | Tree/    LL | Tree/ LL128 | …".
            model_algos.clear();
            continue;
        }
        if let Some(rest) = bt.strip_prefix("AllReduce |") {
            parse_model_row(&cx, rest, &model_algos, &mut model)?;
            continue;
        }
    }
    if let Some(m) = matrix
        && !m.rows.is_empty()
    {
        log.topo_matrix = Some(m);
    }
    if !model.is_empty() {
        log.model = Some(LogModel { entries: model });
    }
    log.ranks.sort_by_key(|r| r.rank);
    log.trees.sort_by_key(|t| t.rank);
    log.connections.dedup();
    Ok(log)
}
