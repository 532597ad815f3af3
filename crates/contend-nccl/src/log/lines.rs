//! The parsers of single `NCCL INFO` lines, one per format of the
//! `INFO(...)` call that prints it (version, ranks, topology and paths,
//! graphs, connections, rings, trees, channel counts, per-call choices,
//! the model table, the tuner plugin), each with the file and line of its
//! error at hand ([`Cx`]).

use super::parse::{Cx, after, first_token, num};
use super::*;
use crate::error::LogError;
use crate::paths::PathType;
use crate::tuning::{Algorithm, Protocol};

/// A tuner plugin line, into `t`; whether `bt` was one.
pub(super) fn parse_tuner(cx: &Cx, bt: &str, t: &mut LogTuner) -> Result<bool, LogError> {
    if let Some(m) = bt.strip_prefix("contend-tuner: ") {
        if !t.contend.iter().any(|x| x == m) {
            t.contend.push(m.to_string());
        }
        return Ok(true);
    }
    if let Some(p) = bt.strip_prefix("Successfully loaded external tuner plugin ") {
        t.loaded_from = Some(p.trim().to_string());
        return Ok(true);
    }
    if bt.starts_with("External tuner plugin ") && bt.ends_with(" is unsupported") {
        t.failures.push(bt.to_string());
        return Ok(true);
    }
    let Some(rest) = bt.strip_prefix("TUNER/Plugin: ") else {
        return Ok(false);
    };
    if rest.starts_with("Using internal tuner plugin") {
        // NCCL 2.28.3 (`src/plugin/tuner.cc`) when the named plugin did not
        // load: its own tuner, no external one
        t.failures.push(bt.to_string());
    } else if let Some(u) = rest.strip_prefix("Using ") {
        // "NAME (vN)"
        let (name, v) = u
            .rsplit_once(" (v")
            .ok_or_else(|| cx.err("tuner plugin line is not `Using NAME (vN)`"))?;
        t.name = Some(name.to_string());
        t.abi = Some(num(cx, v.trim_end_matches(')'), "tuner ABI version")?);
    } else if !rest.starts_with("Closing tuner") {
        t.failures.push(bt.to_string());
    }
    Ok(true)
}

pub(super) fn parse_version(cx: &Cx, tok: &str) -> Result<LogVersion, LogError> {
    let core = tok.split('+').next().unwrap_or("");
    let p: Vec<&str> = core.split('.').collect();
    if p.len() < 3 {
        return Err(cx.err("NCCL version is not major.minor.patch"));
    }
    Ok(LogVersion {
        major: num(cx, p[0], "major")?,
        minor: num(cx, p[1], "minor")?,
        patch: num(cx, p[2], "patch")?,
        text: tok.to_string(),
    })
}

pub(super) fn parse_topo_line(cx: &Cx, b: &str) -> Result<Option<LogTopoLine>, LogError> {
    let depth = b.len() - b.trim_start().len();
    let t = b.trim_start();
    let (link, rest) = if let Some(r) = t.strip_prefix("+ ") {
        let open = r
            .find('[')
            .ok_or_else(|| cx.err("topology link without `[bw]`"))?;
        // the `]` after the `[` (a `]` before it is no bracket pair)
        let close = r[open..]
            .find(']')
            .map(|c| open + c)
            .ok_or_else(|| cx.err("topology link without `]`"))?;
        let ty = r[..open].to_string();
        let bw: f32 = num(cx, &r[open + 1..close], "link bandwidth")?;
        let after_dash = r[close + 1..]
            .trim_start()
            .strip_prefix('-')
            .ok_or_else(|| cx.err("topology link without ` - `"))?
            .trim_start();
        (Some((ty, bw)), after_dash)
    } else if t.starts_with("CPU/") && !t.contains(" :") && t.ends_with(')') {
        (None, t)
    } else {
        return Ok(None);
    };
    let node = first_token(rest).to_string();
    let detail = rest.find('(').and_then(|o| {
        rest[o + 1..]
            .find(')')
            .map(|c| rest[o + 1..o + 1 + c].to_string())
    });
    Ok(Some(LogTopoLine {
        depth,
        link,
        node,
        detail,
    }))
}

pub(super) fn path_type(cx: &Cx, s: &str) -> Result<PathType, LogError> {
    PathType::from_name(s.trim()).ok_or_else(|| cx.err(format!("`{s}` is not a path type")))
}

pub(super) fn parse_graph(cx: &Cx, rest: &str) -> Result<LogGraph, LogError> {
    // "4, crossNic 0, nChannels 1, bw 5.000000/5.000000, type SYS/PIX, sameChannels 1"
    let mut g = LogGraph {
        pattern: 0,
        cross_nic: 0,
        n_channels: 0,
        bw_intra: 0.0,
        bw_inter: 0.0,
        type_intra: PathType::Loc,
        type_inter: PathType::Loc,
        same_channels: false,
        channels: vec![],
    };
    let mut seen = 0;
    for (k, part) in rest.split(',').enumerate() {
        let part = part.trim();
        if k == 0 {
            g.pattern = num(cx, part, "pattern")?;
            seen += 1;
            continue;
        }
        let (key, val) = part
            .split_once(' ')
            .ok_or_else(|| cx.err(format!("graph field `{part}` has no value")))?;
        match key {
            "crossNic" => g.cross_nic = num(cx, val, "crossNic")?,
            "nChannels" => g.n_channels = num(cx, val, "nChannels")?,
            "bw" | "speed" => {
                let (a, b) = val
                    .split_once('/')
                    .ok_or_else(|| cx.err("graph bandwidth is not intra/inter"))?;
                g.bw_intra = num(cx, a, "bandwidth")?;
                g.bw_inter = num(cx, b, "bandwidth")?;
            }
            "type" => {
                let (a, b) = val
                    .split_once('/')
                    .ok_or_else(|| cx.err("graph type is not intra/inter"))?;
                g.type_intra = path_type(cx, a)?;
                g.type_inter = path_type(cx, b)?;
            }
            "sameChannels" => g.same_channels = num::<u8>(cx, val, "sameChannels")? != 0,
            _ => continue,
        }
        seen += 1;
    }
    if seen < 6 {
        return Err(cx.err("graph line lacks some of pattern, nChannels, bw, type, sameChannels"));
    }
    Ok(g)
}

pub(super) fn parse_connection(cx: &Cx, bt: &str) -> Result<LogConnection, LogError> {
    // "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read"
    // "Channel 01/0 : 0[0] -> 4[0] [send] via NET/Socket/0"
    let rest = bt
        .strip_prefix("Channel ")
        .or_else(|| bt.strip_prefix("Ring "))
        .unwrap_or(bt);
    let (head, tail) = rest
        .split_once(" : ")
        .ok_or_else(|| cx.err("connection line without ` : `"))?;
    let (channel, conn_index) = match head.split_once('/') {
        Some((c, i)) => (
            num(cx, c, "channel")?,
            Some(num(cx, i, "connection index")?),
        ),
        None => (num(cx, head, "channel")?, None),
    };
    let (pair, via) = tail
        .split_once(" via ")
        .ok_or_else(|| cx.err("connection line without `via`"))?;
    let (a, bpart) = pair
        .split_once("->")
        .ok_or_else(|| cx.err("connection line without `->`"))?;
    let endpoint = |s: &str| -> Result<(usize, String), LogError> {
        let s = s.trim();
        let open = s
            .find('[')
            .ok_or_else(|| cx.err("peer without `[device]`"))?;
        let close = s.find(']').ok_or_else(|| cx.err("peer without `]`"))?;
        Ok((num(cx, &s[..open], "rank")?, s[open + 1..close].to_string()))
    };
    let bpart = bpart.trim();
    let (bpeer, direction) = match bpart.find(" [") {
        Some(i) => (
            &bpart[..i],
            Some(bpart[i + 2..].trim_end_matches(']').to_string()),
        ),
        None => (bpart, None),
    };
    let (from, from_dev) = endpoint(a)?;
    let (to, to_dev) = endpoint(bpeer)?;
    let label = via
        .trim()
        .split(" comm ")
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let transport = if let Some(m) = label.strip_prefix("P2P/") {
        let parts: Vec<&str> = m.split('/').collect();
        LogTransport::P2p {
            mechanism: parts[0].to_string(),
            read: parts.contains(&"read"),
            copy_engine: parts.contains(&"CE"),
        }
    } else if let Some(m) = label.strip_prefix("SHM/") {
        LogTransport::Shm {
            mode: m.to_string(),
        }
    } else if label == "SHM" {
        LogTransport::Shm {
            mode: String::new(),
        }
    } else if let Some(m) = label.strip_prefix("NET/") {
        LogTransport::Net {
            name: m.to_string(),
        }
    } else if label.starts_with("COLLNET") || label.starts_with("CollNet") {
        LogTransport::CollNet
    } else {
        LogTransport::Other(label.clone())
    };
    Ok(LogConnection {
        channel,
        conn_index,
        from,
        to,
        from_dev,
        to_dev,
        transport,
        direction,
        label,
    })
}

pub(super) fn parse_ring(cx: &Cx, head: &str, tail: &str) -> Result<LogRing, LogError> {
    let (c, n) = head
        .split_once('/')
        .ok_or_else(|| cx.err("ring line without `channel/count`"))?;
    let mut order = Vec::new();
    let mut truncated = false;
    for t in tail.split_whitespace() {
        if t.ends_with("...") {
            truncated = true;
            let d = t.trim_end_matches("...");
            if !d.is_empty()
                && let Ok(x) = d.parse()
            {
                order.push(x);
            }
            break;
        }
        order.push(num(cx, t, "rank")?);
    }
    Ok(LogRing {
        channel: num(cx, c, "channel")?,
        n_channels: num(cx, n, "channel count")?,
        order,
        truncated,
    })
}

pub(super) fn parse_trees(cx: &Cx, rest: &str) -> Result<Option<LogTrees>, LogError> {
    // " [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1" (old: "... ->0->-1|-1->0->1/-1/-1")
    // NCCL formats a log line into a fixed buffer (`src/debug.cc`,
    // v2.28: 1024 bytes) and cuts what does not fit: 48 or more channels'
    // trees end mid-entry. The last entry, when incomplete, is dropped.
    let mut channels = Vec::new();
    let mut rank = None;
    let parts: Vec<&str> = rest.split('[').skip(1).collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let Some((_, spec)) = part.split_once(']') else {
            if last {
                break;
            }
            return Err(cx.err("tree entry without `]`"));
        };
        let spec = spec.trim().split('|').next().unwrap_or("");
        let fields: Vec<&str> = spec.split("->").collect();
        if last && (fields.len() < 3 || fields.iter().any(|f| f.is_empty())) {
            break;
        }
        if fields.len() != 3 {
            return Err(cx.err("tree entry is not `down/down/down->rank->up`"));
        }
        let r: usize = num(cx, fields[1], "rank")?;
        rank = Some(r);
        let mut downs = Vec::new();
        for d in fields[0].split('/') {
            let v: i64 = num(cx, d, "child")?;
            if v >= 0 {
                downs.push(v as usize);
            }
        }
        let up: i64 = num(cx, fields[2], "parent")?;
        channels.push((downs, (up >= 0).then_some(up as usize)));
    }
    Ok(rank.map(|rank| LogTrees { rank, channels }))
}

pub(super) fn parse_counts(cx: &Cx, bt: &str) -> Result<LogChannelCounts, LogError> {
    let mut coll = None;
    let mut collnet = None;
    let mut nvls = None;
    let mut p2p = None;
    let mut per_peer = None;
    for part in bt.split(',') {
        let part = part.trim();
        let (n, label) = part
            .split_once(' ')
            .ok_or_else(|| cx.err("channel count without a label"))?;
        let v: usize = num(cx, n, "channel count")?;
        match label.trim() {
            "coll channels" => coll = Some(v),
            "collnet channels" => collnet = Some(v),
            "nvls channels" => nvls = Some(v),
            "p2p channels" => p2p = Some(v),
            "p2p channels per peer" => per_peer = Some(v),
            _ => {}
        }
    }
    match (coll, p2p, per_peer) {
        (Some(coll), Some(p2p), Some(p2p_per_peer)) => Ok(LogChannelCounts {
            coll,
            collnet,
            nvls,
            p2p,
            p2p_per_peer,
        }),
        _ => Err(cx.err("channel counts lack coll, p2p or p2p per peer")),
    }
}

pub(super) fn parse_call(cx: &Cx, bt: &str) -> Result<Option<LogCall>, LogError> {
    // "AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}"
    // "AllReduce: 8 Bytes -> Algo 1 proto 0 time 10.200000"
    // "8 Bytes -> Algo 1 proto 0 time 10.2"
    if bt.contains("[Symmetric]") || bt.contains("[Copy Engine]") || bt.contains("-> Kernel") {
        return Ok(None);
    }
    let (left, right) = bt
        .split_once("Bytes -> ")
        .ok_or_else(|| cx.err("call line without `Bytes ->`"))?;
    let (function, bytes) = match left.split_once(':') {
        Some((f, b)) => (Some(f.trim().to_string()), b),
        None => (None, left),
    };
    let bytes: u64 = num(cx, bytes, "bytes")?;
    let t: Vec<&str> = right.split_whitespace().collect();
    let get = |key: &str| {
        t.iter()
            .position(|x| *x == key)
            .and_then(|i| t.get(i + 1))
            .copied()
    };
    let a = get("Algo").ok_or_else(|| cx.err("call line without `Algo`"))?;
    let p = get("proto").ok_or_else(|| cx.err("call line without `proto`"))?;
    let algorithm = match a.parse::<usize>() {
        Ok(i) => Algorithm::from_index(i),
        Err(_) => Algorithm::from_log_name(a),
    }
    .ok_or_else(|| cx.err(format!("unknown algorithm `{a}`")))?;
    let protocol = match p.parse::<usize>() {
        Ok(i) => Protocol::from_index(i),
        Err(_) => Protocol::from_log_name(p),
    }
    .ok_or_else(|| cx.err(format!("unknown protocol `{p}`")))?;
    let time_us = match get("time") {
        Some(s) => Some(num(cx, s, "time")?),
        None => None,
    };
    let channels = match after(right, "channel{Lo..Hi}={") {
        Some(r) => {
            let inner = r.split('}').next().unwrap_or("");
            let (lo, hi) = inner
                .split_once("..")
                .ok_or_else(|| cx.err("channel range is not `lo..hi`"))?;
            Some((num(cx, lo, "channel")?, num(cx, hi, "channel")?))
        }
        None => None,
    };
    Ok(Some(LogCall {
        function,
        bytes,
        algorithm,
        protocol,
        channels,
        time_us,
    }))
}

pub(super) fn parse_init(cx: &Cx, bt: &str) -> Result<Option<LogRank>, LogError> {
    // "[ncclCommInitRank ]comm 0x… rank 0 nranks 8 cudaDev 0 [nvmlDev 0] busId 4e000 … - Init START|COMPLETE"
    if !(bt.contains("Init START") || bt.contains("Init COMPLETE")) || !bt.contains(" nranks ") {
        return Ok(None);
    }
    let t: Vec<&str> = bt.split_whitespace().collect();
    let get = |key: &str| {
        t.iter()
            .position(|x| *x == key)
            .and_then(|i| t.get(i + 1))
            .copied()
    };
    let (Some(rank), Some(nranks)) = (get("rank"), get("nranks")) else {
        return Err(cx.err("init line without rank and nranks"));
    };
    Ok(Some(LogRank {
        rank: num(cx, rank, "rank")?,
        nranks: num(cx, nranks, "nranks")?,
        cuda_dev: get("cudaDev").and_then(|s| s.parse().ok()),
        nvml_dev: get("nvmlDev").and_then(|s| s.parse().ok()),
        bus_id: get("busId").map(String::from),
    }))
}

pub(super) fn parse_paths(cx: &Cx, bt: &str) -> Result<Option<LogPaths>, LogError> {
    let (from, rest) = bt
        .split_once(" :")
        .ok_or_else(|| cx.err("path line without ` :`"))?;
    let mut to = Vec::new();
    let mut r = rest;
    while let Some(open) = r.find('(') {
        let node = r[..open].trim().to_string();
        let close = r[open..]
            .find(')')
            .ok_or_else(|| cx.err("path entry without `)`"))?
            + open;
        let f: Vec<&str> = r[open + 1..close].split('/').collect();
        if f.len() != 3 {
            return Err(cx.err("path entry is not `(hops/bw/type)`"));
        }
        to.push((
            node,
            num(cx, f[0], "hops")?,
            num(cx, f[1], "bandwidth")?,
            path_type(cx, f[2])?,
        ));
        r = &r[close + 1..];
    }
    if to.is_empty() {
        return Ok(None);
    }
    Ok(Some(LogPaths {
        from: from.trim().to_string(),
        to,
    }))
}

pub(super) fn parse_model_row(
    cx: &Cx,
    rest: &str,
    algos: &[Algorithm],
    out: &mut Vec<(Algorithm, Protocol, f32, f32)>,
) -> Result<(), LogError> {
    let cells: Vec<&str> = rest
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    if !cells.iter().any(|c| c.contains('/')) {
        // The "Enabled NCCL Func/Proto/Algo Matrix" (NCCL_ALGO/NCCL_PROTO set)
        // has AllReduce rows of 0/1 flags, not latency/bandwidth pairs.
        return Ok(());
    }
    let order: Vec<(Algorithm, Protocol)> = if algos.is_empty() {
        // Old format: Tree/LL, Tree/LL128, Tree/Simple, Ring/LL, Ring/LL128, Ring/Simple, …
        Algorithm::ALL
            .iter()
            .flat_map(|a| Protocol::ALL.iter().map(move |p| (*a, *p)))
            .collect()
    } else {
        algos
            .iter()
            .flat_map(|a| Protocol::ALL.iter().map(move |p| (*a, *p)))
            .collect()
    };
    for (cell, (a, p)) in cells.iter().zip(order) {
        let (l, b) = cell
            .split_once('/')
            .ok_or_else(|| cx.err("model cell is not `latency/bandwidth`"))?;
        let lat: f32 = num(cx, l, "latency")?;
        let bw: f32 = num(cx, b, "bandwidth")?;
        if !out.iter().any(|(x, y, _, _)| *x == a && *y == p) {
            out.push((a, p, lat, bw));
        }
    }
    Ok(())
}
