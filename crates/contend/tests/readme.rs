//! The README, checked against the binary: every `contend` command shown in
//! a fenced block is run, and what the README says it prints is compared
//! with what it prints now, numbers included.
//!
//! The README says what to check with an HTML comment (invisible when
//! rendered) right before the block, table or paragraph it is about:
//!
//! - `<!-- readme-test: output: ARGS -->`: the next fenced block is, byte
//!   for byte, the standard output of `contend ARGS` run in the repository.
//! - `<!-- readme-test: session -->`: the next fenced block is `$ contend
//!   ARGS` lines, each followed by what it prints (stdout, then stderr).
//! - `<!-- readme-test: scratch -->`: every `contend` line of the next
//!   block runs, in order, in one scratch folder shared by all such blocks
//!   (holding the repository's inputs as links, and the walkthrough's
//!   input file), and must succeed; a `#   ` line after a command is a line
//!   of what it printed (`...` stands for any text), in order. A `contend
//!   hw` command must fail with the no-GPU error alone on a machine without
//!   a CUDA driver: its arguments and scenario were checked before that.
//! - `<!-- readme-test: prose-numbers -->`: every decimal and every `a/b`
//!   in the next paragraph is printed by the scratch block before it.
//! - `<!-- readme-test: sweep-table: ARGS -->`, `transfer-table: ARGS`,
//!   `bench-table: ARGS`: the next table's numbers are the ones `contend
//!   ARGS` prints (`{topology}`, `{scenario}` from the table's rows), as
//!   printed; for the bench table the events columns only (wall times are
//!   not deterministic).
//! - `<!-- readme-test: public-rigs -->`: the public rigs' figures and
//!   errors in the next paragraph are those of the committed
//!   `calibration/public/*/report.json` (which `contend-fit`'s
//!   tests/rigs.rs holds to the committed params and the code; refitting
//!   all seven rigs takes minutes even in a release build).
//!
//! A `contend` command in a fenced block that none of these runs fails
//! `every_command_in_the_readme_is_checked`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// What the binary printed.
struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn contend(args: &[String], cwd: &Path) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    Out {
        ok: o.status.success(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

#[derive(Debug, Clone)]
enum Item {
    Fence {
        line: usize,
        info: String,
        body: Vec<String>,
    },
    Table {
        line: usize,
        rows: Vec<Vec<String>>,
    },
    Para {
        line: usize,
        text: String,
    },
}

impl Item {
    fn line(&self) -> usize {
        match self {
            Item::Fence { line, .. } | Item::Table { line, .. } | Item::Para { line, .. } => *line,
        }
    }
}

#[derive(Debug, Clone)]
struct Marker {
    line: usize,
    kind: String,
    args: String,
}

/// The README as items, each with the marker right before it (if any).
struct Readme {
    items: Vec<(Option<Marker>, Item)>,
}

fn cells(row: &str) -> Vec<String> {
    let t = row.trim().trim_start_matches('|').trim_end_matches('|');
    // `\|` inside a cell is a literal bar
    t.replace("\\|", "\u{0}")
        .split('|')
        .map(|c| c.replace('\u{0}', "|").trim().to_string())
        .collect()
}

fn readme() -> &'static Readme {
    static R: OnceLock<Readme> = OnceLock::new();
    R.get_or_init(|| {
        let text = std::fs::read_to_string(root().join("README.md")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut items = vec![];
        let mut pending: Option<Marker> = None;
        let mut i = 0;
        while i < lines.len() {
            let l = lines[i];
            let n = i + 1;
            if let Some(rest) = l.trim().strip_prefix("<!-- readme-test:") {
                let body = rest
                    .strip_suffix("-->")
                    .unwrap_or_else(|| panic!("README.md:{n}: a readme-test marker ends with -->"))
                    .trim();
                assert!(pending.is_none(), "README.md:{n}: two markers for one item");
                let (kind, args) = body.split_once(':').unwrap_or((body, ""));
                pending = Some(Marker {
                    line: n,
                    kind: kind.trim().to_string(),
                    args: args.trim().to_string(),
                });
                i += 1;
            } else if let Some(info) = l.strip_prefix("```") {
                let mut body = vec![];
                i += 1;
                while i < lines.len() && !lines[i].starts_with("```") {
                    body.push(lines[i].to_string());
                    i += 1;
                }
                i += 1;
                items.push((
                    pending.take(),
                    Item::Fence {
                        line: n,
                        info: info.trim().to_string(),
                        body,
                    },
                ));
            } else if l.starts_with('|') {
                let mut rows = vec![];
                while i < lines.len() && lines[i].starts_with('|') {
                    rows.push(cells(lines[i]));
                    i += 1;
                }
                items.push((pending.take(), Item::Table { line: n, rows }));
            } else if l.trim().is_empty() {
                i += 1;
            } else {
                let mut text = String::new();
                while i < lines.len()
                    && !lines[i].trim().is_empty()
                    && !lines[i].starts_with("```")
                    && !lines[i].starts_with('|')
                    && !lines[i].trim().starts_with("<!--")
                {
                    text += lines[i];
                    text += "\n";
                    i += 1;
                }
                items.push((pending.take(), Item::Para { line: n, text }));
            }
        }
        assert!(
            pending.is_none(),
            "README.md: a marker at the end, before nothing"
        );
        Readme { items }
    })
}

fn marked<'a>(kind: &'a str) -> impl Iterator<Item = (&'static Marker, &'static Item)> + 'a {
    readme()
        .items
        .iter()
        .filter_map(move |(m, it)| m.as_ref().filter(|m| m.kind == kind).map(|m| (m, it)))
}

/// The `contend` commands of a fenced block, as argument lists: `\`
/// continuations joined, `$ ` and trailing `# ...` dropped, `a && b` split;
/// `cargo run --release -- ARGS` is `contend ARGS`.
fn commands(body: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut out = vec![];
    let mut k = 0;
    while k < body.len() {
        let start = k;
        let mut l = body[k].clone();
        while l.trim_end().ends_with('\\') && k + 1 < body.len() {
            l = l.trim_end().trim_end_matches('\\').to_string() + " " + body[k + 1].trim();
            k += 1;
        }
        k += 1;
        let l = l.trim().trim_start_matches("$ ").to_string();
        if l.starts_with('#') {
            continue;
        }
        let l = match l.find(" #") {
            Some(p) => l[..p].to_string(),
            None => l,
        };
        for part in l.split("&&") {
            let w = words(part);
            if w.first().map(String::as_str) == Some("contend") {
                out.push((start, w[1..].to_vec()));
            } else if w.len() > 3 && w[..4] == ["cargo", "run", "--release", "--"] {
                out.push((start, w[4..].to_vec()));
            }
        }
    }
    out
}

fn shell_fence(info: &str) -> bool {
    matches!(info, "" | "sh" | "bash" | "console" | "text")
}

/// Every command of a fenced block is one a marker runs.
#[test]
fn every_command_in_the_readme_is_checked() {
    let r = readme();
    let mut run: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, it) in &r.items {
        let Some(m) = m else { continue };
        match (m.kind.as_str(), it) {
            ("output", Item::Fence { .. }) => {
                run.insert(words(&m.args));
            }
            ("session" | "scratch", Item::Fence { body, .. }) => {
                run.extend(commands(body).into_iter().map(|(_, c)| c));
            }
            ("sweep-table" | "transfer-table" | "bench-table", Item::Table { .. })
            | ("prose-numbers" | "public-rigs", Item::Para { .. }) => {}
            (k, it) => panic!(
                "README.md:{}: marker `{k}` before the item at line {} (unknown, or not what it checks)",
                m.line,
                it.line()
            ),
        }
    }
    let mut unchecked = vec![];
    for (m, it) in &r.items {
        let Item::Fence { line, info, body } = it else {
            continue;
        };
        if !shell_fence(info) || m.as_ref().is_some_and(|m| m.kind == "output") {
            continue;
        }
        for (k, c) in commands(body) {
            if !run.contains(&c) {
                unchecked.push(format!(
                    "README.md:{}: contend {}",
                    line + 1 + k,
                    c.join(" ")
                ));
            }
        }
    }
    assert!(
        unchecked.is_empty(),
        "commands in the README that no marker runs (add one, see tests/readme.rs):\n{}",
        unchecked.join("\n")
    );
    // the kinds that run something are all present: a README edit that
    // drops a marker is seen
    for k in [
        "output",
        "session",
        "scratch",
        "sweep-table",
        "transfer-table",
        "bench-table",
    ] {
        assert!(marked(k).next().is_some(), "README.md has no `{k}` marker");
    }
}

#[test]
fn output_blocks_are_what_the_commands_print() {
    for (m, it) in marked("output") {
        let Item::Fence { line, body, .. } = it else {
            unreachable!()
        };
        let o = contend(&words(&m.args), &root());
        assert!(o.ok, "README.md:{line}: contend {}: {}", m.args, o.stderr);
        let shown = body.join("\n") + "\n";
        assert_eq!(
            shown, o.stdout,
            "README.md:{line}: the block differs from what `contend {}` prints now (left: README)",
            m.args
        );
    }
}

#[test]
fn sessions_are_what_the_commands_print() {
    for (_, it) in marked("session") {
        let Item::Fence { line, body, .. } = it else {
            unreachable!()
        };
        let mut k = 0;
        while k < body.len() {
            let cmd = body[k].strip_prefix("$ contend ").unwrap_or_else(|| {
                panic!(
                    "README.md:{}: a session line starts `$ contend `",
                    line + 1 + k
                )
            });
            let mut shown = String::new();
            k += 1;
            while k < body.len() && !body[k].starts_with("$ ") {
                shown += &body[k];
                shown += "\n";
                k += 1;
            }
            let o = contend(&words(cmd), &root());
            assert_eq!(
                shown,
                o.stdout.clone() + &o.stderr,
                "README.md:{line}: `contend {cmd}` prints otherwise now (left: README)"
            );
        }
    }
}

/// A scratch folder for the README's walkthroughs: the repository's inputs
/// as links, so each path reads as it does from the repository's root.
fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("contend-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let r = root();
    for name in ["calibration", "scenarios", "topologies", "tests"] {
        std::os::unix::fs::symlink(r.join(name), d.join(name)).unwrap();
    }
    // the tuner block's `cargo build --release -p contend-tuner` is not run
    // here: its library is the one built, or an empty stand-in (`contend hw
    // nccl --tuner` checks that the file is there before looking for a GPU)
    let lib = d.join("target/release/libcontend_tuner.so");
    std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
    let built = ["target/release", "target/debug"]
        .iter()
        .map(|t| r.join(t).join("libcontend_tuner.so"))
        .find(|p| p.exists());
    match built {
        Some(b) => std::os::unix::fs::symlink(b, &lib).unwrap(),
        None => std::fs::write(&lib, b"").unwrap(),
    }
    d
}

const NO_GPU: &str = "error: no CUDA driver found (libcuda.so could not be loaded): contend hw needs an NVIDIA GPU machine\n";

/// `shown` (a line with `...` for any text) matches `printed`.
fn line_matches(shown: &str, printed: &str) -> bool {
    let parts: Vec<&str> = shown.split("...").collect();
    let mut rest = printed;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(p) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else {
            let Some(at) = rest.find(p) else { return false };
            rest = &rest[at + p.len()..];
        }
    }
    rest.is_empty()
}

#[test]
fn scratch_blocks_run_and_print_what_they_show() {
    let dir = scratch();
    // a machine with a driver would measure: there the hw lines are only listed
    let driver = !contend(&words("hw topo"), &dir)
        .stderr
        .contains("no CUDA driver found");
    let mut last: Option<String> = None;
    for (m, it) in &readme().items {
        match (m.as_ref().map(|m| m.kind.as_str()), it) {
            (Some("scratch"), Item::Fence { line, body, .. }) => {
                last = Some(run_scratch(&dir, driver, *line, body));
            }
            (Some("prose-numbers"), Item::Para { line, text }) => {
                let printed = last.as_deref().unwrap_or_else(|| {
                    panic!(
                        "README.md:{line}: a prose-numbers paragraph comes after a scratch block"
                    )
                });
                for n in prose_numbers(text) {
                    assert!(
                        printed
                            .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
                            .any(|w| w == n),
                        "README.md:{line}: {n} is not a number the scratch block before prints:\n{printed}"
                    );
                }
            }
            _ => {}
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs a scratch block's commands in `dir`; what they printed.
fn run_scratch(dir: &Path, driver: bool, line: usize, body: &[String]) -> String {
    let mut printed_all = String::new();
    let cmds = commands(body);
    for (j, (k, c)) in cmds.iter().enumerate() {
        let at = line + 1 + k;
        let shown = format!("contend {}", c.join(" "));
        if c[0] == "hw" && driver {
            eprintln!("README.md:{at}: {shown}: not run (this machine has a CUDA driver)");
            continue;
        }
        let o = contend(c, dir);
        let printed = o.stdout.clone() + &o.stderr;
        if c[0] == "hw" {
            assert!(
                !o.ok && o.stderr == NO_GPU && o.stdout.is_empty(),
                "README.md:{at}: {shown}: anything but the no-GPU error is a bad argument or input:\n{printed}"
            );
            continue;
        }
        assert!(o.ok, "README.md:{at}: {shown} failed:\n{printed}");
        // its `#   ` lines, up to the next command
        let end = cmds.get(j + 1).map_or(body.len(), |(k2, _)| *k2);
        let excerpt: Vec<&str> = body[*k..end]
            .iter()
            .filter_map(|l| l.strip_prefix("#   "))
            .collect();
        let mut lines = printed.lines();
        for e in excerpt {
            assert!(
                lines.any(|p| line_matches(e, p)),
                "README.md:{at}: {shown} does not print (in this order) `{e}`; it prints:\n{printed}"
            );
        }
        printed_all += &printed;
    }
    printed_all
}

/// The decimals (`4.3`) and fractions (`28/44`) of a paragraph.
fn prose_numbers(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '/'))
        .map(|w| w.trim_matches(|c| c == '.' || c == '/'))
        .filter(|w| {
            let dec = w.split_once('.').is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && a.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
            });
            let frac = w.split_once('/').is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && a.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
            });
            dec || frac
        })
        .map(str::to_string)
        .collect()
}

fn table_of(kind: &str) -> (&'static Marker, usize, &'static [Vec<String>]) {
    let (m, it) = marked(kind)
        .next()
        .unwrap_or_else(|| panic!("README.md has no `{kind}` marker"));
    let Item::Table { line, rows } = it else {
        panic!(
            "README.md:{}: `{kind}` before something not a table",
            m.line
        )
    };
    assert!(rows.len() > 2, "README.md:{line}: an empty table");
    (m, *line, rows)
}

/// The printed sweep table: algorithms, and per size row the times and the winner.
fn sweep_rows(printed: &str) -> (Vec<String>, Vec<(Vec<String>, String)>) {
    let mut lines = printed
        .lines()
        .skip_while(|l| l.split_whitespace().next() != Some("size"));
    let head = words(lines.next().expect("a sweep table header"));
    let algs = head[1..head.len() - 1].to_vec();
    let mut rows = vec![];
    for l in lines {
        let w = words(l);
        if w.len() < algs.len() + 3 || w[2].parse::<f64>().is_err() {
            break;
        }
        rows.push((w[2..2 + algs.len()].to_vec(), w[2 + algs.len()].clone()));
    }
    (algs, rows)
}

#[test]
fn the_sweep_table_is_what_sweep_prints() {
    let (m, line, rows) = table_of("sweep-table");
    let sizes = rows[0].len() - 1;
    let mut printed = None;
    let mut checked = 0;
    for (r, row) in rows.iter().enumerate().skip(2) {
        let at = line + r;
        assert_eq!(row.len(), sizes + 1, "README.md:{at}: {} cells", row.len());
        if let Some(t) = row[0].strip_prefix('`').and_then(|t| t.strip_suffix('`')) {
            let args = words(&m.args.replace("{topology}", t));
            let o = contend(&args, &root());
            assert!(
                o.ok,
                "README.md:{at}: contend {}: {}",
                args.join(" "),
                o.stderr
            );
            let (algs, got) = sweep_rows(&o.stdout);
            assert_eq!(
                got.len(),
                sizes,
                "README.md:{at}: {} sizes printed:\n{}",
                got.len(),
                o.stdout
            );
            for (c, cell) in row[1..].iter().enumerate() {
                let (alg, t) = cell.rsplit_once(' ').expect("`winner time`");
                let a = algs
                    .iter()
                    .position(|x| x == alg)
                    .unwrap_or_else(|| panic!("README.md:{at}: {alg}"));
                assert_eq!(
                    alg,
                    got[c].1,
                    "README.md:{at}: the winner at column {}",
                    c + 1
                );
                assert_eq!(t, got[c].0[a], "README.md:{at}: {alg} at column {}", c + 1);
                checked += 1;
            }
            printed = Some((algs, got));
        } else {
            let (algs, got) = printed.as_ref().expect("a topology row first");
            let a = algs.iter().position(|x| *x == row[0]).unwrap_or_else(|| {
                panic!(
                    "README.md:{at}: {} is not an algorithm the sweep prints",
                    row[0]
                )
            });
            for (c, cell) in row[1..].iter().enumerate() {
                assert_eq!(
                    *cell,
                    got[c].0[a],
                    "README.md:{at}: {} at column {}",
                    row[0],
                    c + 1
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0);
}

/// The GB/s a transfer run prints under `fidelity F`: every decimal not
/// followed by a time unit (a stream's rate; an aggregate's bytes/span,
/// sum and per-stream min / median / max).
fn rates(printed: &str, fidelity: &str) -> Vec<String> {
    let mut out = vec![];
    let mut on = false;
    for l in printed.lines() {
        if let Some(f) = l.strip_prefix("fidelity ") {
            on = f.trim() == fidelity;
            continue;
        }
        if !on {
            continue;
        }
        let w = words(l);
        for (i, t) in w.iter().enumerate() {
            let unit = w
                .get(i + 1)
                .is_some_and(|u| ["ns", "us", "ms", "s"].contains(&u.as_str()));
            if t.contains('.') && t.parse::<f64>().is_ok() && !unit {
                out.push(t.clone());
            }
        }
    }
    out
}

#[test]
fn the_transfer_table_is_what_simulate_prints() {
    let (m, line, rows) = table_of("transfer-table");
    let head = &rows[0];
    let col = |name: &str| {
        head.iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("README.md:{line}: no `{name}` column"))
    };
    let fids = [("tlp", col("tlp")), ("flow", col("flow"))];
    for (r, row) in rows.iter().enumerate().skip(2) {
        let at = line + r;
        // `a` / `-b` / `-c`: b and c replace a's last part
        let names: Vec<String> = {
            let parts: Vec<&str> = row[0].split(" / ").map(|p| p.trim_matches('`')).collect();
            let first = parts[0].to_string();
            let base = first.rsplit_once('-').map_or("", |(b, _)| b).to_string();
            std::iter::once(first)
                .chain(parts[1..].iter().map(|p| format!("{base}{p}")))
                .collect()
        };
        let printed: Vec<String> = names
            .iter()
            .map(|n| {
                let args = words(&m.args.replace("{scenario}", n));
                let o = contend(&args, &root());
                assert!(
                    o.ok,
                    "README.md:{at}: contend {}: {}",
                    args.join(" "),
                    o.stderr
                );
                o.stdout
            })
            .collect();
        for (f, c) in fids {
            let nums: Vec<&str> = row[c]
                .split(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
                .filter(|w| w.contains('.'))
                .collect();
            for (i, n) in nums.iter().enumerate() {
                // one number per scenario when the row names several
                let from = if names.len() > 1 {
                    &printed[i]
                } else {
                    &printed[0]
                };
                assert!(
                    rates(from, f).iter().any(|x| x == n),
                    "README.md:{at}: {n} GB/s ({f}) is not printed by `contend {}`:\n{from}",
                    m.args
                        .replace("{scenario}", &names[if names.len() > 1 { i } else { 0 }])
                );
            }
        }
    }
}

#[test]
fn the_bench_tables_event_counts_are_what_bench_prints() {
    let (m, line, rows) = table_of("bench-table");
    let o = contend(&words(&m.args), &root());
    assert!(o.ok, "README.md:{line}: contend {}: {}", m.args, o.stderr);
    // algorithm placement fidelity events wall events/s
    let events = |alg: &str, fid: &str| -> String {
        o.stdout
            .lines()
            .map(words)
            .find(|w| w.len() >= 4 && w[0] == alg && w[2] == fid)
            .unwrap_or_else(|| {
                panic!(
                    "README.md:{line}: bench prints no {alg} {fid} row:\n{}",
                    o.stdout
                )
            })[3]
            .clone()
    };
    let head = &rows[0];
    let mut checked = 0;
    for (r, row) in rows.iter().enumerate().skip(2) {
        for (c, h) in head.iter().enumerate() {
            let fid = match h.as_str() {
                "TLP events" => "tlp",
                "flow events" => "flow",
                _ => continue,
            };
            assert_eq!(
                row[c].replace(',', ""),
                events(&row[0], fid),
                "README.md:{}: {} {h}",
                line + r,
                row[0]
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "README.md:{line}: no events column");
    // every algorithm bench runs has its row
    let shown: BTreeSet<&str> = rows[2..].iter().map(|r| r[0].as_str()).collect();
    for w in o.stdout.lines().map(words) {
        if w.len() == 8 && (w[2] == "tlp" || w[2] == "flow") {
            assert!(
                shown.contains(w[0].as_str()),
                "README.md:{line}: no row for {}",
                w[0]
            );
        }
    }
}

#[test]
fn numbers_in_prose_are_decimals_and_fractions() {
    assert_eq!(
        prose_numbers("median / p90 15.7 / 33.5 % → **4.3 / 20.0 %**; 28/44 and 37/44, 3 %."),
        ["15.7", "33.5", "4.3", "20.0", "28/44", "37/44"]
    );
    assert!(line_matches(
        "warning: fill ... (...)",
        "warning: fill x y (z)"
    ));
    assert!(!line_matches(
        "warning: fill ... (...)",
        "warning: fill x y"
    ));
    assert!(line_matches("exact", "exact") && !line_matches("exact", "exactly"));
}

/// Every path of this repository the README names (`crates/...`,
/// `calibration/...`, ...) is a file or folder of it; `<name>` and `*`
/// stand for any.
#[test]
fn paths_the_readme_names_exist() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let tops = [
        "crates/",
        "calibration/",
        "scenarios/",
        "topologies/",
        "tests/",
        "docs/",
        "kernels/",
    ];
    let mut missing = vec![];
    for (n, l) in text.lines().enumerate() {
        for w in l.split(|c: char| c.is_whitespace() || "`()[],;:\"'".contains(c)) {
            let w = w.trim_end_matches(['.', '*']);
            if !tops.iter().any(|t| w.starts_with(t)) || w.contains(['<', '*', '{']) {
                continue;
            }
            if !root().join(w).exists() {
                missing.push(format!("README.md:{}: {w}", n + 1));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths the README names that are not in the repository:\n{}",
        missing.join("\n")
    );
}

/// `--fidelity`'s help says what a sweep runs without it: flow, though the
/// default scenario lists tlp and flow.
#[test]
fn sweep_runs_the_fidelity_its_help_names() {
    let h = contend(&words("sweep --help"), &root()).stdout;
    assert!(
        h.contains("(default: the scenario's; `sweep`: flow)"),
        "{h}"
    );
    let o = contend(&words("sweep --sizes 8KiB --format json"), &root());
    assert!(o.ok, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let fids: BTreeSet<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["fidelity"].as_str().unwrap())
        .collect();
    assert_eq!(fids, BTreeSet::from(["flow"]));
    let o = contend(&words("simulate --help"), &root());
    assert!(
        o.stdout.contains("a TOML file or a shipped name"),
        "{}",
        o.stdout
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[test]
fn the_public_rigs_numbers_are_the_committed_reports() {
    let (m, it) = marked("public-rigs").next().expect("a public-rigs marker");
    let Item::Para { line, text } = it else {
        panic!(
            "README.md:{}: public-rigs before something not a paragraph",
            m.line
        )
    };
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let (mut default, mut fitted, mut skipped) = (vec![], vec![], 0);
    let mut rigs = 0;
    for e in std::fs::read_dir(root().join("calibration/public")).unwrap() {
        let f = e.unwrap().path().join("report.json");
        if !f.exists() {
            continue;
        }
        rigs += 1;
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for r in j["results"].as_array().unwrap() {
            default.push(r["default_error_pct"].as_f64().unwrap().abs());
            fitted.push(r["fitted_error_pct"].as_f64().unwrap().abs());
        }
        skipped += j["skipped"].as_array().unwrap().len();
    }
    let n = default.len();
    let (dmax, fmax) = (
        default.iter().copied().fold(0.0, f64::max),
        fitted.iter().copied().fold(0.0, f64::max),
    );
    let within = fitted.iter().filter(|e| **e <= 15.0).count();
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    for want in [
        format!(
            "Over the {} rigs with topologies, {n} fit figures",
            words[rigs]
        ),
        format!(
            "{:.1} / {dmax:.0} % with the default constants",
            median(default)
        ),
        format!(
            "**{:.1} / {fmax:.1} %** after each rig's fit",
            median(fitted.clone())
        ),
        format!("{skipped} figures the model cannot express"),
    ] {
        assert!(
            text.contains(&want),
            "README.md:{line}: says otherwise than `{want}`:\n{text}"
        );
    }
    assert_eq!(
        within, n,
        "README.md:{line}: says every figure is within 15 %"
    );
}
