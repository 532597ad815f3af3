//! nccl-tests' `-J FILE` JSON report, read and written as
//! `src/util.cu` writes it (NVIDIA/nccl-tests, read at 0fdb00a, where
//! `JSON_FILE_VERSION` is 2; versions 1 to 3 are read): one object with
//! `version`, `args` (the command line: `args[0]` names the collective),
//! `env`, `nccl_version` (NCCL's version code, `22703`), `config`
//! (`nthreads`, `ngpus`, ..., `graph`, `devices`: `rank`, `hostname`,
//! `device`, `device_hex`, `device_info`) and `results`, one per size:
//! `size`, `count`, `type`, `redop`, `root` (a string), `out_of_place` and
//! `in_place` (`time` or `cpu_time` µs, `alg_bw`, `bus_bw`, `nwrong`, null
//! when not checked), and with per-iteration timing
//! `out_of_place_per_iter` / `in_place_per_iter` (`times_us`: every
//! iteration, which become the record's per-op times).
//!
//! The rows go through the same rules as the text tables
//! ([`super::import_nccl_tests`]): allreduce only, wrong results skipped.

use super::{Columns, Context, Device, Perf, Row, Run, Session, TYPES, finish, nccl_code};
use crate::error::CalibError;
use crate::import::imported::{Imported, Tool};
use crate::measure::physics;
use contend_topo::Location;
use contend_workload::{LaunchMode, Measured, ResultRecord, WorkloadKind};
use serde_json::{Value, json};

/// Reads an nccl-tests `-J` report.
pub fn import_nccl_tests_json(file: &str, text: &str) -> Result<Imported, CalibError> {
    let v: Value = serde_json::from_str(text).map_err(|e| CalibError::At {
        location: Location {
            file: file.to_string(),
            line: e.line(),
            column: e.column(),
            field: None,
        },
        message: format!("not an nccl-tests JSON report: {e}"),
    })?;
    let at = |field: String, message: String| CalibError::At {
        location: Location {
            file: file.to_string(),
            line: 0,
            column: 0,
            field: Some(field),
        },
        message,
    };
    let version = v
        .get("version")
        .and_then(Value::as_u64)
        .ok_or_else(|| at("version".into(), "missing or not a number".into()))?;
    if !(1..=3).contains(&version) {
        return Err(at(
            "version".into(),
            format!("report version {version}: versions 1 to 3 are known"),
        ));
    }
    let mut out = Imported::new(file, Tool::NcclTestsJson);
    out.version = Some(format!("report v{version}"));
    let mut s = Session {
        nccl_version: v.get("nccl_version").and_then(Value::as_u64).map(nccl_code),
        ..Session::default()
    };
    for e in v.get("env").and_then(Value::as_array).into_iter().flatten() {
        if let Some((k, val)) = e.as_str().and_then(|e| e.split_once('='))
            && k.starts_with("NCCL_")
        {
            s.env.insert(k.to_string(), val.to_string());
        }
    }
    let collective = v
        .get("args")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_string());
    let config = v
        .get("config")
        .ok_or_else(|| at("config".into(), "missing".into()))?;
    let int = |o: &Value, k: &str| o.get(k).and_then(Value::as_u64);
    let mut devices = vec![];
    for (i, d) in config
        .get("devices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let f = |k: &str| format!("config.devices[{i}].{k}");
        let str_of = |k: &str| {
            d.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| at(f(k), "missing or not a string".into()))
        };
        devices.push(Device {
            host: str_of("hostname")?,
            device: int(d, "device").map(|x| x as usize),
            pci: str_of("device_hex")?,
            name: str_of("device_info")?,
        });
    }
    let max = contend_topo::limits::MAX_NODES as u64;
    let per_process = match (int(config, "nthreads"), int(config, "ngpus")) {
        (Some(t), Some(g)) => match t.checked_mul(g) {
            Some(k) if (1..=max).contains(&k) => Some(k as usize),
            _ => {
                return Err(at(
                    "config.ngpus".into(),
                    format!("nthreads x ngpus is not a rank count from 1 to {max}"),
                ));
            }
        },
        _ => None,
    };
    let run = Run {
        per_process,
        graph: int(config, "graph").is_some_and(|g| g > 0),
        devices,
        collective,
        processes: None,
    };
    let results = v
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| at("results".into(), "missing or not a list".into()))?;
    // the line of each result: the k-th `"size"` key after `"results"`
    let start = text.find("\"results\"").unwrap_or(0);
    let mut offsets = text[start..]
        .match_indices("\"size\"")
        .map(|(o, _)| start + o);
    let mut rows = vec![];
    let mut cputime = false;
    let mut times: Vec<Option<Vec<f64>>> = vec![];
    for (i, r) in results.iter().enumerate() {
        let f = |k: &str| format!("results[{i}].{k}");
        let line = offsets
            .next()
            .map_or(1, |o| Location::from_offset(file, text, o).line);
        let num = |o: &Value, path: String| -> Result<f64, CalibError> {
            match o {
                Value::Number(n) => n
                    .as_f64()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| at(path, "not a non-negative number".into())),
                _ => Err(at(path, "missing or not a number".into())),
            }
        };
        let size = int(r, "size").ok_or_else(|| at(f("size"), "missing".into()))?;
        let count = int(r, "count").ok_or_else(|| at(f("count"), "missing".into()))?;
        let ty = r.get("type").and_then(Value::as_str).unwrap_or("");
        let &(ty, tsize, dtype) = TYPES
            .iter()
            .find(|t| t.0 == ty)
            .ok_or_else(|| at(f("type"), format!("unknown nccl-tests type `{ty}`")))?;
        let redop = r
            .get("redop")
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_string();
        let root = match r.get("root") {
            Some(Value::String(x)) => Some(
                x.trim()
                    .parse::<i64>()
                    .map_err(|_| at(f("root"), format!("`{x}` is not a rank")))?,
            ),
            Some(Value::Number(n)) => n.as_i64(),
            _ => None,
        };
        let perf = |key: &str| -> Result<Option<Perf>, CalibError> {
            let Some(p) = r.get(key).filter(|p| !p.is_null()) else {
                return Ok(None);
            };
            let tkey = if p.get("cpu_time").is_some() {
                "cpu_time"
            } else {
                "time"
            };
            let wrong = match p.get("nwrong") {
                None | Some(Value::Null) => None,
                Some(w) => {
                    let w = num(w, f(&format!("{key}.nwrong")))?;
                    if w.fract() != 0.0 {
                        return Err(at(f(&format!("{key}.nwrong")), "not a count".into()));
                    }
                    Some(w as u64)
                }
            };
            let per_iter = match r.get(format!("{key}_per_iter")) {
                Some(pi) if !pi.is_null() => {
                    let g = |k: &str| {
                        num(
                            pi.get(k).unwrap_or(&Value::Null),
                            f(&format!("{key}_per_iter.{k}")),
                        )
                    };
                    Some((g("min_us")?, g("max_us")?, g("p99_us")?))
                }
                _ => None,
            };
            // the physics check, naming the field
            let impossible = |path: String, m: String| {
                crate::import::imported::impossible(
                    file,
                    line,
                    None,
                    format!("field `{path}`: {m}"),
                )
            };
            let time_us = num(
                p.get(tkey).unwrap_or(&Value::Null),
                f(&format!("{key}.{tkey}")),
            )?;
            if size > 0 {
                physics::time_us("time", time_us)
                    .map_err(|m| impossible(f(&format!("{key}.{tkey}")), m.0))?;
            }
            let rate = |k: &str| -> Result<f64, CalibError> {
                let path = f(&format!("{key}.{k}"));
                let v = num(p.get(k).unwrap_or(&Value::Null), path.clone())?;
                physics::derived_rate(k, v).map_err(|m| impossible(path, m.0))?;
                Ok(v)
            };
            Ok(Some(Perf {
                time_us,
                algbw: rate("alg_bw")?,
                busbw: rate("bus_bw")?,
                wrong,
                error: None,
                per_iter,
            }))
        };
        let out_p = perf("out_of_place")?.ok_or_else(|| {
            at(
                f("out_of_place"),
                "missing (an in-place-only result)".into(),
            )
        })?;
        cputime |= r
            .get("out_of_place")
            .is_some_and(|p| p.get("cpu_time").is_some());
        let in_p = perf("in_place")?;
        let it = r
            .get("out_of_place_per_iter")
            .and_then(|p| p.get("times_us"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .enumerate()
                    .map(|(k, x)| num(x, f(&format!("out_of_place_per_iter.times_us[{k}]"))))
                    .collect::<Result<Vec<f64>, _>>()
            })
            .transpose()?;
        times.push(it);
        rows.push((
            line,
            Row {
                size,
                count,
                ty,
                tsize,
                dtype,
                redop,
                root,
                out: out_p,
                inplace: in_p,
            },
        ));
    }
    let cols = Columns {
        line: rows.first().map_or(1, |r| r.0),
        redop: None,
        root: None,
        groups: vec![],
        tokens: 0,
        cputime,
    };
    let sizes: Vec<u64> = rows.iter().map(|r| r.1.size).collect();
    finish(
        file,
        &mut out,
        &Context::default(),
        &s,
        Some(&run),
        Some((cols, rows)),
    )?;
    // every iteration's time as the record's per-op times
    for (_, rec) in &mut out.records {
        rec.extra.import.format = Some(Tool::NcclTestsJson.name().into());
        let k = sizes.iter().position(|z| *z == rec.size_bytes);
        if let Some(Some(t)) = k.and_then(|k| times.get(k))
            && !t.is_empty()
        {
            let ns: Vec<f64> = t.iter().map(|x| x * 1000.0).collect();
            rec.per_op_ns = ns.clone();
            rec.stats = contend_workload::Stats::of(&ns);
        }
    }
    Ok(out)
}

/// Allreduce records as an nccl-tests `-J` report (version 2), which
/// [`import_nccl_tests_json`] reads back to the same records: one report
/// per run of the records' ranks (the first rank set found), devices from
/// the records' machine.
pub fn nccl_tests_json(records: &[ResultRecord]) -> String {
    let rows: Vec<&ResultRecord> = records
        .iter()
        .filter(|r| r.workload == WorkloadKind::Allreduce && r.algorithm == Measured::NCCL)
        .collect();
    let first = rows.first();
    let machine = first.and_then(|r| r.machine.as_ref());
    let ranks = first.map_or(0, |r| r.ranks.len());
    let devices: Vec<Value> = match machine {
        Some(m) => m
            .gpus
            .iter()
            .enumerate()
            .map(|(k, g)| {
                let device = first
                    .and_then(|r| r.ranks.get(k))
                    .and_then(|id| id.strip_prefix("gpu"))
                    .and_then(|d| d.parse::<u64>().ok())
                    .unwrap_or(k as u64);
                let host = first
                    .and_then(|r| r.extra.import.hosts.as_ref())
                    .and_then(|h| h.first().cloned())
                    .unwrap_or_else(|| m.hostname.clone());
                json!({
                    "rank": k, "group": 0, "pid": 0, "hostname": host, "device": device,
                    "device_hex": m.pci_addresses.get(k).cloned().unwrap_or_default(),
                    "device_info": g,
                })
            })
            .collect(),
        None => vec![],
    };
    let code = first
        .and_then(|r| r.extra.nccl.nccl_version.as_deref())
        .and_then(|v| {
            let p: Vec<u64> = v.split('.').filter_map(|x| x.parse().ok()).collect();
            (p.len() == 3).then(|| p[0] * 10000 + p[1] * 100 + p[2])
        });
    let results: Vec<Value> = rows
        .iter()
        .map(|r| {
            let im = &r.extra.import;
            let tsize = TYPES
                .iter()
                .find(|t| Some(t.0) == im.element_type.as_deref())
                .map_or(2, |t| t.1);
            let us = r.stats.median_ns / 1000.0;
            let ab = r
                .extra
                .timing
                .algbw_gbps
                .unwrap_or(r.size_bytes as f64 / (us * 1000.0));
            let bb = r.extra.timing.busbw_gbps.unwrap_or(ab);
            let nwrong = match r.verified {
                Some(true) => json!(0.0),
                Some(false) => json!(1.0),
                None => Value::Null,
            };
            let mut o = json!({
                "size": r.size_bytes,
                "count": im.count.unwrap_or(r.size_bytes / tsize),
                "type": im.element_type.clone().unwrap_or_else(|| "bfloat16".into()),
                "redop": im.redop.clone().unwrap_or_else(|| "sum".into()),
                "root": "    -1",
                "out_of_place": {"time": us, "alg_bw": ab, "bus_bw": bb, "nwrong": nwrong},
                "actual_iterations": r.extra.timing.repeats.unwrap_or(1),
                "experiment_name": "",
            });
            if let Some(ip) = im.in_place_us {
                o["in_place"] = json!({
                    "time": ip,
                    "alg_bw": im.in_place_algbw_gbps.unwrap_or(ab),
                    "bus_bw": im.in_place_busbw_gbps.unwrap_or(bb),
                    "nwrong": im.in_place_wrong.map_or(Value::Null, |w| json!(w as f64)),
                });
            }
            if r.per_op_ns.len() > 1 {
                let t: Vec<f64> = r.per_op_ns.iter().map(|x| x / 1000.0).collect();
                o["out_of_place_per_iter"] = json!({
                    "min_us": r.stats.min_ns / 1000.0, "max_us": r.stats.max_ns / 1000.0,
                    "p50_us": r.stats.median_ns / 1000.0, "p99_us": r.stats.p99_ns / 1000.0,
                    "times_us": t,
                });
            }
            o
        })
        .collect();
    let graph = first.is_some_and(|r| r.launch == LaunchMode::Graph);
    let doc = json!({
        "version": 2,
        "args": [first.and_then(|r| r.extra.import.test.clone()).unwrap_or_else(|| "all_reduce_perf".into())],
        "env": first.map(|r| r.extra.nccl.env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>()).unwrap_or_default(),
        "nccl_version": code,
        "config": {
            "nthreads": 1, "ngpus": ranks.max(1),
            "iterations": first.and_then(|r| r.extra.timing.repeats).unwrap_or(1),
            "graph": u8::from(graph),
            "devices": devices,
        },
        "results": results,
    });
    serde_json::to_string(&doc).unwrap_or_default() + "\n"
}
