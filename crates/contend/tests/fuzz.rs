//! A fuzz harness per reader: topology, scenario and model params files,
//! each tool log `calibrate` imports (nccl-tests, p2pBandwidthLatencyTest,
//! nvbandwidth, p2pmark, contend's own JSON Lines), NCCL's debug log, each
//! topology paste `topo import` reads (`nvidia-smi topo -m`, `lspci -tv`,
//! NCCL's topology XML) and the tuner plugin's table.
//!
//! Stable Rust has no coverage-guided fuzzer, so this is a seeded mutation
//! fuzzer: it starts from the shipped files and public fixtures of each
//! reader, stacks one to four mutations (flip a byte, insert a token of the
//! format, delete or duplicate a range, repeat a line up to a thousand
//! times, swap lines, put an extreme number where a number was, splice two
//! inputs), and keeps a mutant that loads as a seed for the next (so
//! mutations reach past the first error). Every input must load or fail
//! with an error, never panic or take longer than [`SLOW`]; a TOML reader's
//! error must name the file.
//!
//! In CI each reader runs for `CONTEND_FUZZ_SECS` seconds (default 6: the
//! twelve readers about a minute and a quarter); by hand, longer:
//! `CONTEND_FUZZ_SECS=3600 CONTEND_FUZZ_SEED=7 cargo test --release -p
//! contend --test fuzz -- --test-threads 16`. A failing input is written to
//! `target/tmp/fuzz-failures/` and the test names it.

use rand::{RngExt as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest one input may take (debug build) before it counts as a hang.
const SLOW: Duration = Duration::from_secs(5);
/// Largest input the fuzzer builds (the readers' own cap is 64 MiB).
const MAX_INPUT: usize = 1 << 20;
/// Mutants that loaded, kept as seeds.
const MAX_CORPUS: usize = 256;

/// The repository (`CONTEND_FUZZ_ROOT` where the test binary runs on
/// another machine).
fn root() -> PathBuf {
    std::env::var_os("CONTEND_FUZZ_ROOT").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
        PathBuf::from,
    )
}

fn fuzz_secs() -> u64 {
    std::env::var("CONTEND_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
}

fn fuzz_seed() -> u64 {
    std::env::var("CONTEND_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// What a reader did with one input.
enum Loaded {
    Ok,
    /// The error as the user sees it.
    Err(String),
}

fn of<T, E: std::fmt::Display>(r: Result<T, E>) -> Loaded {
    match r {
        Ok(_) => Loaded::Ok,
        Err(e) => Loaded::Err(e.to_string()),
    }
}

/// The file name a reader is given (and a TOML reader's error must name).
const FILE: &str = "fuzzed-input";

struct Reader {
    name: &'static str,
    /// Files (relative to the repository) whose text seeds the corpus.
    seeds: Vec<PathBuf>,
    /// Tokens of the format, inserted by one mutation.
    tokens: &'static [&'static str],
    /// Whether an error must name [`FILE`].
    located: bool,
    load: fn(&str) -> Loaded,
}

fn files(dir: &str, ext: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| ext.contains(&x))
        })
        .collect();
    v.sort();
    v
}

const TOML_TOKENS: &[&str] = &[
    "[[node]]\n",
    "[[link]]\n",
    "[workload]\n",
    "[nccl]\n",
    "[[comm]]\n",
    "= ",
    "\"",
    "'''",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\n",
    "#",
    "kind = \"gpu\"\n",
    "kind = \"switch\"\n",
    "kind = \"pcie\"\n",
    "kind = \"nvlink\"\n",
    "id = \"gpu0\"\n",
    "a = \"gpu0\"\nb = \"gpu0\"\n",
    "ranks = \"all\"\n",
    "sizes = [\"1 B\", \"64 GiB\"]\n",
    "repeats = 4294967295\n",
    "layers = 1000000\n",
    "\u{0}",
    "\u{feff}",
    "é",
];

const TEXT_TOKENS: &[&str] = &[
    "\n",
    " ",
    "\t",
    "#",
    "GPU0",
    "GPU7",
    "GPU 0",
    "X",
    "SYS",
    "NODE",
    "PIX",
    "PHB",
    "NV12",
    "0.00",
    "1e308",
    "-1",
    "nan",
    "inf",
    "|",
    "+-",
    "\\-",
    "[0000:00]",
    "00:01.0",
    "Bandwidth (GB/s)",
    "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)",
    "#  Avg bus bandwidth    : ",
    "# Using devices\n",
    "       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n",
    "     1048576        262144     float     sum      -1    12.34   84.97  148.70      0    12.30   85.24  149.17      0\n",
    "NCCL INFO ",
    "NCCL INFO Channel 00/02 : 0 1 2 3\n",
    "NCCL INFO Ring 00 : 0 1 2 3\n",
    "<system version=\"1\">",
    "<cpu numaid=\"0\" arch=\"x86_64\">",
    "<pci busid=\"0000:01:00.0\" class=\"0x030000\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">",
    "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/>",
    "</pci>",
    "</cpu>",
    "<!--",
    "&amp;",
    "{\"source\":\"hw\"}",
    "\u{0}",
    "\u{feff}",
];

fn readers() -> Vec<Reader> {
    let fx = |d: &str| {
        files(
            &format!("tests/fixtures/real/{d}"),
            &["txt", "log", "md", "xml"],
        )
    };
    vec![
        Reader {
            name: "topology",
            seeds: files("topologies", &["toml"]),
            tokens: TOML_TOKENS,
            located: true,
            load: |t| of(contend_topo::parse_topology(FILE, t)),
        },
        Reader {
            name: "scenario",
            seeds: files("scenarios", &["toml"])
                .into_iter()
                .chain(files("tests/fixtures/scenario", &["toml"]))
                .collect(),
            tokens: TOML_TOKENS,
            located: true,
            load: |t| {
                of(contend_workload::parse_scenario(
                    FILE,
                    t,
                    Some(&root().join("scenarios")),
                    None,
                ))
            },
        },
        Reader {
            name: "params",
            seeds: vec![root().join("calibration/h200x2/params.toml")]
                .into_iter()
                .filter(|p| p.is_file())
                .chain(
                    std::fs::read_dir(root().join("calibration"))
                        .into_iter()
                        .flatten()
                        .filter_map(|e| e.ok().map(|e| e.path().join("params.toml")))
                        .filter(|p| p.is_file()),
                )
                .collect(),
            tokens: TOML_TOKENS,
            located: true,
            load: |t| of(contend_sim::ModelParams::from_toml(FILE, t)),
        },
        Reader {
            name: "nccl-tests",
            seeds: fx("nccl-tests"),
            tokens: TEXT_TOKENS,
            located: false,
            load: |t| of(contend_import::import::import_text(FILE, t)),
        },
        Reader {
            name: "p2pBandwidthLatencyTest",
            seeds: fx("p2pbandwidthlatencytest"),
            tokens: TEXT_TOKENS,
            located: false,
            load: |t| of(contend_import::import::import_text(FILE, t)),
        },
        Reader {
            name: "nvbandwidth",
            seeds: fx("nvbandwidth"),
            tokens: TEXT_TOKENS,
            located: false,
            load: |t| of(contend_import::import::import_text(FILE, t)),
        },
        Reader {
            name: "p2pmark",
            seeds: fx("p2pmark"),
            tokens: TEXT_TOKENS,
            located: false,
            load: |t| of(contend_import::import::import_text(FILE, t)),
        },
        Reader {
            name: "jsonl",
            seeds: files("calibration/h200x2", &["jsonl"])
                .into_iter()
                .chain(files("calibration/h200x1", &["jsonl"]))
                .collect(),
            tokens: TEXT_TOKENS,
            located: false,
            load: |t| of(contend_import::measure::parse_jsonl(FILE, t)),
        },
        Reader {
            name: "nccl-log",
            seeds: files("tests/fixtures/nccl-logs", &["log"]),
            tokens: TEXT_TOKENS,
            located: false,
            load: |t| of(contend_nccl::log::parse(FILE, t)),
        },
        Reader {
            name: "topo-import (nvidia-smi, lspci, NCCL XML)",
            seeds: fx("nvidia-smi")
                .into_iter()
                .chain(fx("lspci"))
                .chain(fx("nccl-topo"))
                .collect(),
            tokens: TEXT_TOKENS,
            located: false,
            load: |t| {
                of(contend_topo::import::import_topology(
                    &[(FILE.to_string(), t.to_string())],
                    None,
                ))
            },
        },
        Reader {
            name: "tuner table",
            seeds: vec![root().join("calibration/h200x1/tuner/h200x1-tuner-table.toml")],
            tokens: TOML_TOKENS,
            located: true,
            load: |t| of(contend_nccl::tuner_table::parse(FILE, t)),
        },
    ]
}

/// Byte offset `i` moved back to a character boundary of `s`.
fn floor(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A random range of `s`, on character boundaries.
fn range(rng: &mut ChaCha8Rng, s: &str, max: usize) -> (usize, usize) {
    if s.is_empty() {
        return (0, 0);
    }
    let a = floor(s, rng.random_range(0..s.len()));
    let b = floor(s, a + rng.random_range(0..=max.min(s.len() - a)));
    (a, b)
}

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1e308",
    "-1e308",
    "1e-308",
    "nan",
    "inf",
    "4294967297",
    "18446744073709551615",
    "99999999999999999999999999999",
    "0.000001",
    "0x10",
];

/// One mutation of `s`; `other` is another input to splice from.
fn mutate(rng: &mut ChaCha8Rng, s: &str, other: &str, tokens: &[&str]) -> String {
    let mut out = s.to_string();
    match rng.random_range(0..9) {
        0 => {
            // a random byte (kept to text)
            let at = floor(&out, rng.random_range(0..=out.len()));
            let c = char::from(rng.random_range(0u8..128));
            out.insert(at, c);
        }
        1 => {
            let at = floor(&out, rng.random_range(0..=out.len()));
            out.insert_str(at, tokens[rng.random_range(0..tokens.len())]);
        }
        2 => {
            let (a, b) = range(rng, &out, 64);
            out.replace_range(a..b, "");
        }
        3 => {
            let (a, b) = range(rng, &out, 256);
            let piece = out[a..b].to_string();
            let at = floor(&out, rng.random_range(0..=out.len()));
            out.insert_str(at, &piece);
        }
        4 => {
            // a line repeated up to a thousand times
            let lines: Vec<&str> = out.lines().collect();
            if !lines.is_empty() {
                let k = rng.random_range(0..lines.len());
                let n = rng.random_range(2..1000);
                let mut v: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                let l = v[k].clone();
                for _ in 0..n {
                    v.insert(k, l.clone());
                }
                out = v.join("\n");
            }
        }
        5 => {
            let mut v: Vec<&str> = out.lines().collect();
            if v.len() > 1 {
                let a = rng.random_range(0..v.len());
                let b = rng.random_range(0..v.len());
                v.swap(a, b);
                out = v.join("\n");
            }
        }
        6 | 7 => {
            // an extreme number where a number was
            let starts: Vec<usize> = out
                .char_indices()
                .filter(|(i, c)| {
                    c.is_ascii_digit()
                        && (*i == 0 || !out.as_bytes()[i - 1].is_ascii_alphanumeric())
                })
                .map(|(i, _)| i)
                .collect();
            if !starts.is_empty() {
                let a = starts[rng.random_range(0..starts.len())];
                let len = out[a..]
                    .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e'))
                    .unwrap_or(out.len() - a);
                out.replace_range(a..a + len, NUMBERS[rng.random_range(0..NUMBERS.len())]);
            }
        }
        _ => {
            // the head of this input, the tail of another
            let a = floor(&out, rng.random_range(0..=out.len()));
            let b = floor(other, rng.random_range(0..=other.len()));
            out.truncate(a);
            out.push_str(&other[b..]);
        }
    }
    out.truncate(floor(&out, MAX_INPUT));
    out
}

/// Where a failing input is kept (`CONTEND_FUZZ_OUT`, else the target's
/// scratch folder).
fn keep(reader: &str, input: &str) -> PathBuf {
    let d = std::env::var_os("CONTEND_FUZZ_OUT").map_or_else(
        || Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&d).unwrap();
    let name: String = reader
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let p = d.join(format!("{name}-{:016x}.txt", fxhash(input)));
    std::fs::write(&p, input).unwrap();
    p
}

fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Fuzzes one reader for `secs` seconds; the inputs it ran, or the first
/// failure (with the file that keeps its input).
fn fuzz(r: &Reader, secs: u64, seed: u64) -> Result<u64, String> {
    let mut corpus: Vec<String> = r
        .seeds
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    assert!(!corpus.is_empty(), "{}: no seed files", r.name);
    let shipped = corpus.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ fxhash(r.name));
    let end = Instant::now() + Duration::from_secs(secs);
    let mut n = 0u64;
    // the seeds themselves first, then mutants until the time is up
    let mut queue: Vec<String> = corpus.clone();
    while !queue.is_empty() || Instant::now() < end {
        let input = queue.pop().unwrap_or_else(|| {
            let base = corpus[rng.random_range(0..corpus.len())].clone();
            let other = corpus[rng.random_range(0..corpus.len())].clone();
            let mut m = base;
            for _ in 0..rng.random_range(1..=4) {
                m = mutate(&mut rng, &m, &other, r.tokens);
            }
            m
        });
        let t0 = Instant::now();
        let got = catch_unwind(AssertUnwindSafe(|| (r.load)(&input)));
        let took = t0.elapsed();
        n += 1;
        match got {
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                return Err(format!(
                    "{}: panicked ({msg}) on {}",
                    r.name,
                    keep(r.name, &input).display()
                ));
            }
            Ok(_) if took > SLOW => {
                return Err(format!(
                    "{}: took {took:?} on {}",
                    r.name,
                    keep(r.name, &input).display()
                ));
            }
            Ok(Loaded::Err(e)) => {
                if r.located && !e.contains(FILE) {
                    return Err(format!(
                        "{}: an error that does not name the file ({e}) on {}",
                        r.name,
                        keep(r.name, &input).display()
                    ));
                }
            }
            Ok(Loaded::Ok) => {
                if corpus.len() < shipped + MAX_CORPUS {
                    corpus.push(input);
                } else {
                    let k = rng.random_range(shipped..corpus.len());
                    corpus[k] = input;
                }
            }
        }
    }
    Ok(n)
}

#[test]
fn every_reader_survives_mutated_input() {
    let secs = fuzz_secs();
    let seed = fuzz_seed();
    let readers = readers();
    // readers in parallel, as many as the machine has cores
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = Arc::new(Mutex::new(0usize));
    let results = Arc::new(Mutex::new(Vec::new()));
    let readers = Arc::new(readers);
    let hook = std::panic::take_hook();
    // a caught panic is reported with its input, not printed per input
    std::panic::set_hook(Box::new(|_| {}));
    std::thread::scope(|s| {
        for _ in 0..cores.min(readers.len()) {
            let (next, results, readers) = (next.clone(), results.clone(), readers.clone());
            s.spawn(move || {
                loop {
                    let i = {
                        let mut k = next.lock().unwrap();
                        *k += 1;
                        *k - 1
                    };
                    let Some(r) = readers.get(i) else { break };
                    let got = fuzz(r, secs, seed);
                    results.lock().unwrap().push((r.name, got));
                }
            });
        }
    });
    std::panic::set_hook(hook);
    let results = results.lock().unwrap();
    let mut failures = Vec::new();
    for (name, got) in results.iter() {
        match got {
            Ok(n) => eprintln!("fuzz {name}: {n} inputs, none failed ({secs} s, seed {seed})"),
            Err(e) => failures.push(e.clone()),
        }
    }
    assert_eq!(results.len(), readers.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The mutations change what they are given, and the same seed gives the
/// same mutants (a failure can be replayed).
#[test]
fn mutations_are_real_and_replayable() {
    let s = "[[node]]\nid = \"gpu0\"\nsms = 188\n";
    let run = |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..200)
            .map(|_| mutate(&mut rng, s, "other text 42\n", TOML_TOKENS))
            .collect::<Vec<_>>()
    };
    let a = run(3);
    assert_eq!(a, run(3));
    assert!(a.iter().filter(|m| m.as_str() != s).count() > 150);
    assert!(
        a.iter()
            .any(|m| NUMBERS.iter().any(|n| m.contains(&format!("sms = {n}"))))
    );
}

/// The harness finds what it is there to find: a reader that panics on one
/// shape of input (a number turned negative) and one that hangs on another
/// (a line repeated) are both reported, with their inputs kept.
#[test]
fn the_harness_reports_a_planted_panic_and_a_slow_input() {
    let seed = root().join("topologies/h200-1x.toml");
    let planted = Reader {
        name: "planted panic",
        seeds: vec![seed.clone()],
        tokens: TOML_TOKENS,
        located: false,
        load: |t| {
            assert!(!t.contains("= -1\n"), "planted");
            Loaded::Ok
        },
    };
    let e = fuzz(&planted, 20, 1).unwrap_err();
    assert!(e.contains("panicked (planted)"), "{e}");
    let kept = e.rsplit(" on ").next().unwrap();
    assert!(std::fs::read_to_string(kept).unwrap().contains("= -1\n"));
    let slow = Reader {
        name: "planted hang",
        seeds: vec![seed],
        tokens: TOML_TOKENS,
        located: false,
        load: |t| {
            if t.lines().count() > 200 {
                std::thread::sleep(SLOW + Duration::from_millis(100));
            }
            Loaded::Ok
        },
    };
    let e = fuzz(&slow, 20, 1).unwrap_err();
    assert!(e.contains("planted hang: took"), "{e}");
}
