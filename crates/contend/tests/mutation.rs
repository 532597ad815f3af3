//! Hostile input, systematically: thousands of mutated copies of the shipped
//! topologies, scenarios, model params, measurements (a sample of each
//! `calibration/h200x2/*.jsonl`, the nccl-tests fixture) and the shipped
//! `fit.json`, each loaded through the real loader. Every mutant must load,
//! or fail with an error that names the file and a line (`file:LINE:…`) or
//! a field (``field `x` ``), a TOML file's (topology, scenario, params)
//! both, syntax and type errors included; none may panic or take longer
//! than [`TIME_BOUND`].
//!
//! Mutations are enumerated, not random (the truncation offsets come from a
//! fixed-seed generator): delete a line, duplicate a line, replace a number
//! with each of [`TOML_NUMBERS`] / [`JSON_VALUES`], turn a string into a
//! number, delete a JSON field, cut the file short.
//!
//! Mutants that load are not simulated: the loaders are what is under test
//! here; the simulated-time limit of a run is tested with the engine.

use contend_fit::eval;
use contend_fit::report::{parse_summary, render_markdown};
use contend_import::measure::{classify, parse_jsonl};
use contend_import::{CalibError, parse_nccl_tests};
use contend_sim::ModelParams;
use contend_sim::{RunLimits, SimOptions, simulate_one_with};
use contend_topo::{Topology, parse_topology, render_tree};
use contend_workload::{Fidelity, parse_scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest any one load may take (debug build).
const TIME_BOUND: Duration = Duration::from_secs(1);
/// How long to wait for a load before calling it a hang.
const HANG: Duration = Duration::from_secs(10);

/// What a TOML number is replaced with.
const TOML_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "nan",
    "inf",
    "1e308",
    "18446744073709551615",
    "9223372036854775807",
    "4294967297",
    "\"a string\"",
];
/// What a JSON number (or any JSON value) is replaced with.
const JSON_VALUES: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "18446744073709551615",
    "9223372036854775807",
    "4294967297",
    "\"a string\"",
    "null",
    "NaN",
];
/// What a string is replaced with.
const STRING_NUMBERS: &[&str] = &["0", "-1", "4294967297"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A loader: `Ok` when the input loads, else the error's text.
type Load = fn(&str, &str) -> Result<(), String>;

#[derive(Debug)]
enum Lang {
    Toml,
    Json,
}

/// A file to mutate and how to load it.
struct Target {
    /// Names the file in errors (and so must appear in each one).
    file: String,
    text: String,
    lang: Lang,
    load: Load,
}

/// A span of a literal in the text: a number or a string (quotes included).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    Num(usize, usize),
    Str(usize, usize),
}

/// The numbers and strings of TOML or JSON text, outside comments (`#` to
/// the end of a line, TOML only) and not in `[table]` headers.
fn tokens(text: &str, lang: &Lang) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b'#' if matches!(lang, Lang::Toml) => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'[' if line_start && matches!(lang, Lang::Toml) => {
                // a table header: skip the line
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' => {
                let s = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                // a TOML key written as a string is followed by `=`
                let key = matches!(lang, Lang::Json) && text[i..].trim_start().starts_with(':')
                    || matches!(lang, Lang::Toml) && text[i..].trim_start().starts_with('=');
                if !key {
                    out.push(Tok::Str(s, i));
                }
            }
            b'-' | b'0'..=b'9' => {
                let prev = text[..i].trim_end().chars().last();
                let value_pos = matches!(prev, Some('=' | ':' | ',' | '[' | '{'));
                let s = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'.' | b'_' | b'+' | b'-'))
                {
                    i += 1;
                }
                if value_pos {
                    out.push(Tok::Num(s, i));
                }
            }
            c if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            _ => i += 1,
        }
        line_start = false;
    }
    out
}

/// A deterministic generator (SplitMix64) for truncation offsets.
struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// One mutated copy: what was done (for the failure report) and the text.
struct Mutant {
    kind: &'static str,
    what: String,
    text: String,
}

fn splice(text: &str, s: usize, e: usize, with: &str) -> String {
    format!("{}{with}{}", &text[..s], &text[e..])
}

/// Every mutant of a target, at most `per_kind` of each kind (evenly spread
/// over the file when there are more places than that).
fn mutants(t: &Target, per_kind: usize) -> Vec<Mutant> {
    let mut out: Vec<Mutant> = vec![];
    let spread = |n: usize| -> Vec<usize> {
        if n <= per_kind {
            (0..n).collect()
        } else {
            (0..per_kind).map(|k| k * n / per_kind).collect()
        }
    };
    let lines: Vec<&str> = t.text.lines().collect();
    let join = |v: Vec<&str>| v.join("\n") + "\n";
    for i in spread(lines.len()) {
        let mut v = lines.clone();
        v.remove(i);
        out.push(Mutant {
            kind: "delete line",
            what: format!("line {}", i + 1),
            text: join(v),
        });
        let mut v = lines.clone();
        v.insert(i, lines[i]);
        out.push(Mutant {
            kind: "duplicate line",
            what: format!("line {}", i + 1),
            text: join(v),
        });
    }
    let toks = tokens(&t.text, &t.lang);
    let nums: Vec<(usize, usize)> = toks
        .iter()
        .filter_map(|t| match t {
            Tok::Num(s, e) => Some((*s, *e)),
            _ => None,
        })
        .collect();
    let strs: Vec<(usize, usize)> = toks
        .iter()
        .filter_map(|t| match t {
            Tok::Str(s, e) => Some((*s, *e)),
            _ => None,
        })
        .collect();
    let values = match t.lang {
        Lang::Toml => TOML_NUMBERS,
        Lang::Json => JSON_VALUES,
    };
    for i in spread(nums.len()) {
        let (s, e) = nums[i];
        for v in values {
            out.push(Mutant {
                kind: "replace number",
                what: format!("`{}` at byte {s} -> {v}", &t.text[s..e]),
                text: splice(&t.text, s, e, v),
            });
        }
    }
    for i in spread(strs.len()) {
        let (s, e) = strs[i];
        for v in STRING_NUMBERS {
            out.push(Mutant {
                kind: "string to number",
                what: format!("{} at byte {s} -> {v}", &t.text[s..e]),
                text: splice(&t.text, s, e, v),
            });
        }
    }
    let mut rng = SplitMix(0x5AFE_u64 ^ t.text.len() as u64);
    for _ in 0..per_kind.min(24) {
        let mut at = (rng.next() % t.text.len().max(1) as u64) as usize;
        while !t.text.is_char_boundary(at) {
            at -= 1;
        }
        out.push(Mutant {
            kind: "truncate",
            what: format!("at byte {at}"),
            text: t.text[..at].to_string(),
        });
    }
    if let Lang::Json = t.lang {
        json_field_deletions(t, per_kind, &mut out);
    }
    out.retain(|m| m.text != t.text);
    out
}

/// Each JSON object field (of each line's record, or of the document)
/// deleted in turn, at most `per_kind`.
fn json_field_deletions(t: &Target, per_kind: usize, out: &mut Vec<Mutant>) {
    fn paths(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
        if let serde_json::Value::Object(m) = v {
            for (k, x) in m {
                let p = format!("{at}/{k}");
                out.push(p.clone());
                paths(x, &p, out);
            }
        } else if let serde_json::Value::Array(a) = v {
            // the first element of each array stands for the rest
            if let Some(x) = a.first() {
                paths(x, &format!("{at}/0"), out);
            }
        }
    }
    let lines: Vec<&str> = t.text.lines().collect();
    // JSON Lines: each line a document; else the whole text is one
    let docs: Vec<(usize, &str)> = if t.file.ends_with(".jsonl") {
        lines.iter().copied().enumerate().collect()
    } else {
        vec![(usize::MAX, t.text.as_str())]
    };
    let mut all = vec![];
    for (i, d) in docs {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(d) else {
            continue;
        };
        let mut ps = vec![];
        paths(&v, "", &mut ps);
        all.extend(ps.into_iter().map(|p| (i, p, v.clone())));
    }
    let n = all.len();
    let picks: Vec<usize> = if n <= per_kind {
        (0..n).collect()
    } else {
        (0..per_kind).map(|k| k * n / per_kind).collect()
    };
    for k in picks {
        let (i, p, v) = &all[k];
        let mut v = v.clone();
        let (parent, key) = p.rsplit_once('/').unwrap_or(("", p));
        let removed = match v.pointer_mut(parent) {
            Some(serde_json::Value::Object(m)) => m.remove(key).is_some(),
            _ => false,
        };
        if !removed {
            continue;
        }
        let text = if *i == usize::MAX {
            serde_json::to_string_pretty(&v).unwrap_or_default()
        } else {
            let mut ls: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            ls[*i] = v.to_string();
            ls.join("\n") + "\n"
        };
        out.push(Mutant {
            kind: "delete field",
            what: format!("{p} (line {})", i.wrapping_add(1)),
            text,
        });
    }
}

/// Whether an error names `file:LINE`.
fn names_line(file: &str, msg: &str) -> bool {
    msg.match_indices(&format!("{file}:")).any(|(i, m)| {
        msg[i + m.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// Whether the line an error names (`file:LINE:`) holds no key: nothing
/// but brackets, spaces and a comment.
fn keyless_line(file: &str, msg: &str, text: &str) -> bool {
    let Some(i) = msg.find(&format!("{file}:")) else {
        return false;
    };
    let rest = &msg[i + file.len() + 1..];
    let n: usize = rest
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .unwrap_or(0);
    let line = text.lines().nth(n.wrapping_sub(1)).unwrap_or("");
    !line
        .split('#')
        .next()
        .unwrap_or("")
        .chars()
        .any(|c| c.is_ascii_alphanumeric() || c == '_' || c == '"')
}

/// Whether an error names the file and a line or a field.
fn located(file: &str, msg: &str) -> bool {
    msg.contains(file) && (names_line(file, msg) || msg.contains("field `"))
}

/// Loads one mutant on its own thread; `Err` says what went wrong.
fn run_one(load: Load, file: &str, text: String) -> Result<(), String> {
    let copy = text.clone();
    let (tx, rx) = mpsc::channel();
    let f = file.to_string();
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let r = std::panic::catch_unwind(move || load(&f, &text));
        let _ = tx.send((r, t0.elapsed()));
    });
    match rx.recv_timeout(HANG) {
        Err(_) => Err(format!("no answer after {HANG:?}: a hang")),
        Ok((Err(p), _)) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
        Ok((Ok(_), t)) if t > TIME_BOUND => Err(format!("took {t:?}")),
        Ok((Ok(Ok(())), _)) => Ok(()),
        // a TOML file's error (topology, scenario, params) names both: the
        // line, and the key path there (syntax and type errors included;
        // a line with no key on it, such as a lone `[`, has none to name)
        Ok((Ok(Err(msg)), _))
            if file.ends_with(".toml")
                && !(names_line(file, &msg)
                    && (msg.contains("field `") || keyless_line(file, &msg, &copy))) =>
        {
            Err(format!(
                "a TOML error without both a line and a field: {msg}"
            ))
        }
        Ok((Ok(Err(msg)), _)) if located(file, &msg) => Ok(()),
        Ok((Ok(Err(msg)), _)) => Err(format!("error without file and line or field: {msg}")),
    }
}

// The loaders, as the CLI calls them.

fn load_topology(file: &str, text: &str) -> Result<(), String> {
    let t = parse_topology(file, text).map_err(|e| e.to_string())?;
    let _ = render_tree(&t);
    Ok(())
}

/// A scenario as `contend simulate` reads it; one that loads is also run
/// (its first run at each fidelity) under tight run limits: it must finish
/// or stop at a stated limit, never panic, hang or fail otherwise.
fn load_scenario(file: &str, text: &str) -> Result<(), String> {
    let base = root().join("scenarios");
    let sc = parse_scenario(file, text, Some(&base), None).map_err(|e| e.to_string())?;
    let opts = SimOptions {
        limits: RunLimits {
            max_events: 3_000,
            ..RunLimits::default()
        },
        ..SimOptions::default()
    };
    for fid in [Fidelity::Flow, Fidelity::Tlp] {
        if let Some(spec) = contend_sim::runs_of(&sc, &[fid]).into_iter().next() {
            match simulate_one_with(&sc, &ModelParams::default(), spec, &opts) {
                Ok(_) => {}
                Err(e) if e.to_string().contains("(RunLimits::") => {}
                Err(e) => return Err(format!("{file}: loaded, then failed to run: {e}")),
            }
        }
    }
    Ok(())
}

fn load_params(file: &str, text: &str) -> Result<(), String> {
    ModelParams::from_toml(file, text)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn h200x2() -> Topology {
    contend_topo::shipped::get("h200-2x").unwrap().unwrap()
}

/// Measurements as `contend calibrate` reads them: records, checked and
/// classified against the topology, each paired with its simulated twin
/// (built, not run).
fn measurements(
    file: &str,
    recs: Result<Vec<(usize, contend_workload::ResultRecord)>, CalibError>,
) -> Result<(), String> {
    let topo = h200x2();
    let ms = classify(file, recs.map_err(|e| e.to_string())?, &topo).map_err(|e| e.to_string())?;
    for m in &ms {
        contend_fit::twin::build_twin(m, &topo).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn load_jsonl(file: &str, text: &str) -> Result<(), String> {
    measurements(file, parse_jsonl(file, text))
}

fn load_nccl_log(file: &str, text: &str) -> Result<(), String> {
    measurements(file, parse_nccl_tests(file, text))
}

/// `fit.json` as `contend report` reads it, and the report's text.
fn load_fit(file: &str, text: &str) -> Result<(), String> {
    let s = parse_summary(file, text).map_err(|e| e.to_string())?;
    let placements = eval::held_out(&s.points)
        .filter_map(|p| p.collective().map(|c| c.2))
        .collect();
    let _ = render_markdown(&s, &placements, None);
    Ok(())
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn files_in(dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    v.sort();
    v
}

/// Lines `0, n/k, 2n/k, …` of a JSON Lines file: a sample of its kinds.
fn sample_lines(text: &str, k: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut picked: Vec<usize> = (0..k).map(|i| i * lines.len() / k).collect();
    picked.dedup();
    picked
        .iter()
        .map(|&i| lines[i].to_string() + "\n")
        .collect()
}

fn targets() -> Vec<(Target, usize)> {
    let mut v = vec![];
    for f in files_in("topologies") {
        let text = read(&f);
        v.push((
            Target {
                file: f,
                text,
                lang: Lang::Toml,
                load: load_topology,
            },
            40,
        ));
    }
    for f in files_in("scenarios") {
        let text = read(&f);
        v.push((
            Target {
                file: f,
                text,
                lang: Lang::Toml,
                load: load_scenario,
            },
            24,
        ));
    }
    let f = "calibration/h200x2/params.toml".to_string();
    v.push((
        Target {
            text: read(&f),
            file: f,
            lang: Lang::Toml,
            load: load_params,
        },
        60,
    ));
    for name in [
        "probe.jsonl",
        "hw.jsonl",
        "nccl.jsonl",
        "nccl-p2p-disabled.jsonl",
    ] {
        let f = format!("calibration/h200x2/{name}");
        v.push((
            Target {
                text: sample_lines(&read(&f), 4),
                file: f,
                lang: Lang::Json,
                load: load_jsonl,
            },
            40,
        ));
    }
    let f = "crates/contend-fit/tests/fixtures/nccl-tests-h200x2.log".to_string();
    v.push((
        Target {
            text: read(&f),
            file: f,
            // no comments to skip in the data rows; numbers follow spaces
            lang: Lang::Toml,
            load: load_nccl_log,
        },
        0,
    ));
    let f = "calibration/h200x2/report/fit.json".to_string();
    v.push((
        Target {
            text: read(&f),
            file: f,
            lang: Lang::Json,
            load: load_fit,
        },
        30,
    ));
    v
}

/// The nccl-tests log has no `key = value`: mutate its table cells and
/// header words directly (each whitespace-separated word of each line).
fn nccl_log_mutants(t: &Target) -> Vec<Mutant> {
    let mut out = vec![];
    let mut at = 0;
    for line in t.text.split_inclusive('\n') {
        let mut col = 0;
        for w in line.split_whitespace() {
            let s = at + line[col..].find(w).map_or(0, |p| p + col);
            col = s - at + w.len();
            if !w.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                continue;
            }
            for v in [
                "0",
                "-1",
                "nan",
                "inf",
                "1e308",
                "18446744073709551615",
                "x",
            ] {
                out.push(Mutant {
                    kind: "replace number",
                    what: format!("`{w}` at byte {s} -> {v}"),
                    text: splice(&t.text, s, s + w.len(), v),
                });
            }
        }
        at += line.len();
    }
    let lines: Vec<&str> = t.text.lines().collect();
    for i in 0..lines.len() {
        let mut v = lines.clone();
        v.remove(i);
        out.push(Mutant {
            kind: "delete line",
            what: format!("line {}", i + 1),
            text: v.join("\n") + "\n",
        });
    }
    let mut rng = SplitMix(0x5AFE);
    for _ in 0..12 {
        let at = (rng.next() % t.text.len() as u64) as usize;
        out.push(Mutant {
            kind: "truncate",
            what: format!("at byte {at}"),
            text: t.text[..at].to_string(),
        });
    }
    out
}

#[test]
fn mutated_inputs_load_or_fail_with_a_located_error() {
    let t0 = Instant::now();
    let mut failures: Vec<String> = vec![];
    let mut counts: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    let mut total = 0;
    for (t, per_kind) in targets() {
        // every shipped file loads as it is
        if let Err(e) = (t.load)(&t.file, &t.text) {
            panic!("{}: the unmutated file does not load: {e}", t.file);
        }
        let ms = if per_kind == 0 {
            nccl_log_mutants(&t)
        } else {
            mutants(&t, per_kind)
        };
        let group = match t.file.split_once('/') {
            Some((d @ ("topologies" | "scenarios"), _)) => d.to_string(),
            _ => t.file.rsplit('/').next().unwrap_or("").to_string(),
        };
        for m in ms {
            *counts.entry((group.clone(), m.kind)).or_default() += 1;
            total += 1;
            if let Err(why) = run_one(t.load, &t.file, m.text) {
                failures.push(format!("{} ({}: {}): {why}", t.file, m.kind, m.what));
            }
        }
    }
    eprintln!("{total} mutants in {:?}", t0.elapsed());
    for ((g, k), n) in &counts {
        eprintln!("  {g:12} {k:18} {n}");
    }
    assert!(
        failures.is_empty(),
        "{} of {total} mutants failed:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(total >= 3000, "only {total} mutants");
}
