//! Results written as each completes, and read back to resume a run.
//!
//! A stream is JSON Lines: a header naming the command and the run's
//! identity (what decides its results: scenario, params, fidelities,
//! sizes…), then one `{"result": …}` line per finished result in the
//! order they finished, then `{"complete": N}` when the run ended. A
//! stream goes to a file (`--stream FILE`) and, with `--format jsonl`, to
//! standard output; either can be continued with `--resume FILE`: its
//! header must name the same run, each result line must be a job of it
//! with sane values (`simulate` and `sweep`: [`Jobs`]; else an error at
//! the file and line), its results are not computed again, and the new
//! ones are appended to it. On SIGINT or SIGTERM every line
//! written stays (each is written whole and flushed), the final output
//! (table, CSV, JSON) of what is done goes to standard output, and stderr
//! says how much was done.

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The stream format's version (the header's `contend_stream`).
pub const STREAM_VERSION: u64 = 1;

#[derive(Args, Debug, Clone, Default)]
pub struct StreamArgs {
    /// Write every result to FILE as it completes (JSON Lines, the first line
    /// naming the run); an existing FILE is refused: continue it with --resume.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    pub stream: Option<PathBuf>,
    /// Continue the run streamed to FILE (by --stream or --format jsonl): the
    /// results there are kept, not run again, the rest appended; FILE's first
    /// line must name this same run.
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
}

/// 64-bit FNV-1a of `s`, in hex: a fingerprint stable across runs and builds.
pub fn fingerprint(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

struct State<R> {
    file: Option<std::fs::File>,
    results: Vec<R>,
    /// The first write that failed (the run goes on; the command fails at the end).
    failed: Option<String>,
}

/// One run's stream: the results so far (resumed and new), and where new ones go.
pub struct Journal<R> {
    path: Option<PathBuf>,
    stdout: bool,
    resumed: usize,
    total: Option<usize>,
    noun: &'static str,
    state: Mutex<State<R>>,
}

impl<R> std::fmt::Debug for Journal<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .field("resumed", &self.resumed)
            .finish_non_exhaustive()
    }
}

fn header(command: &str, identity: &Value, total: Option<usize>) -> Value {
    serde_json::json!({
        "contend_stream": STREAM_VERSION,
        "command": command,
        "identity": identity,
        "total": total,
    })
}

/// The keys where two identities differ, for the error.
fn differences(a: &Value, b: &Value) -> Vec<String> {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .map(|k| {
                    let show = |v: Option<&Value>| {
                        let s = v.map_or("(none)".into(), |v| v.to_string());
                        if s.chars().count() > 60 {
                            format!("{}…", s.chars().take(60).collect::<String>())
                        } else {
                            s
                        }
                    };
                    format!("{k}: file {} vs now {}", show(a.get(k)), show(b.get(k)))
                })
                .collect()
        }
        _ => vec!["identity".into()],
    }
}

/// What a result read back must pass to be kept: given its line number
/// (1-based) and the result, why it is not one of this run's, if it is not.
pub type Accept<'a, R> = dyn FnMut(usize, &R) -> Result<()> + 'a;

/// Reads a stream to resume: its results, and the length of its whole
/// lines (a torn last line, from a kill mid-write, is cut off). Every
/// result must pass `accept`; the first that does not is an error at its
/// line.
fn read_stream<R: DeserializeOwned>(
    path: &Path,
    command: &str,
    identity: &Value,
    accept: &mut Accept<'_, R>,
) -> Result<(Vec<R>, u64)> {
    let text = contend_topo::bounded_read::read_text(path)
        .with_context(|| format!("--resume {}: cannot read it", path.display()))?;
    let mut results = vec![];
    let mut good = 0u64;
    let mut lines = text.split_inclusive('\n').enumerate().peekable();
    let Some((_, first)) = lines.next() else {
        bail!(
            "--resume {}: the file is empty (no header line): run without --resume",
            path.display()
        );
    };
    let head: Value = serde_json::from_str(first.trim_end()).map_err(|e| {
        anyhow::anyhow!(
            "{}:1: not a contend stream's header ({e}); streams come from --stream FILE or --format jsonl",
            path.display()
        )
    })?;
    if head.get("contend_stream").and_then(Value::as_u64) != Some(STREAM_VERSION) {
        bail!(
            "{}:1: not a contend stream's header (no \"contend_stream\": {STREAM_VERSION})",
            path.display()
        );
    }
    if head.get("command").and_then(Value::as_str) != Some(command) {
        bail!(
            "{}:1: a stream of `contend {}`, not of `contend {command}`",
            path.display(),
            head.get("command").and_then(Value::as_str).unwrap_or("?")
        );
    }
    let theirs = head.get("identity").cloned().unwrap_or(Value::Null);
    if &theirs != identity {
        bail!(
            "{}:1: the stream is of another run ({}); resume with the same inputs and options, or start anew with --stream",
            path.display(),
            differences(&theirs, identity).join("; ")
        );
    }
    good += first.len() as u64;
    while let Some((i, line)) = lines.next() {
        let last = lines.peek().is_none();
        let parsed: Result<Value, _> = serde_json::from_str(line.trim_end());
        let v = match parsed {
            Ok(v) => v,
            Err(_) if last && !line.ends_with('\n') => {
                eprintln!(
                    "{}:{}: a line cut short (the run was killed while writing it): dropped, its result runs again",
                    path.display(),
                    i + 1
                );
                break;
            }
            Err(e) => bail!("{}:{}: not a JSON line ({e})", path.display(), i + 1),
        };
        if let Some(r) = v.get("result") {
            let r: R = serde_json::from_value(r.clone()).map_err(|e| {
                anyhow::anyhow!(
                    "{}:{}: not a result of this run ({e})",
                    path.display(),
                    i + 1
                )
            })?;
            accept(i + 1, &r).map_err(|m| anyhow::anyhow!("{}:{}: {m}", path.display(), i + 1))?;
            results.push(r);
        } else if v.get("complete").is_some() {
            // a finished stream: its end line is written again when this run ends
            if lines.peek().is_some() {
                bail!(
                    "{}:{}: lines after the end of the stream",
                    path.display(),
                    i + 2
                );
            }
            break;
        } else {
            bail!(
                "{}:{}: neither a result nor the end of the stream",
                path.display(),
                i + 1
            );
        }
        good += line.len() as u64;
    }
    Ok((results, good))
}

impl<R: Serialize + DeserializeOwned + Clone + Send + 'static> Journal<R> {
    /// Opens the stream of `command` run with `identity`: reads `--resume`'s
    /// file (checking it names this run), or creates `--stream`'s; `stdout`:
    /// the lines also go to standard output (`--format jsonl`). `total`: how
    /// many results the run has, where known; `noun`: what one is called.
    pub fn open(
        command: &str,
        identity: Value,
        total: Option<usize>,
        noun: &'static str,
        args: &StreamArgs,
        stdout: bool,
    ) -> Result<Arc<Journal<R>>> {
        Self::open_checked(command, identity, total, noun, args, stdout, &mut |_, _| {
            Ok(())
        })
    }

    /// [`Journal::open`], every result read back from `--resume`'s file
    /// held to `accept` (a job of this run, with sane values) before it is
    /// kept, echoed or counted: the first that fails is an error naming the
    /// file and line.
    pub fn open_checked(
        command: &str,
        identity: Value,
        total: Option<usize>,
        noun: &'static str,
        args: &StreamArgs,
        stdout: bool,
        accept: &mut Accept<'_, R>,
    ) -> Result<Arc<Journal<R>>> {
        let head = header(command, &identity, total);
        let (results, file, path) = match (&args.resume, &args.stream) {
            (Some(p), _) => {
                let (results, good) = read_stream::<R>(p, command, &identity, accept)?;
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .with_context(|| format!("--resume {}: cannot write to it", p.display()))?;
                f.set_len(good).with_context(|| {
                    format!("--resume {}: cannot cut its torn line", p.display())
                })?;
                let mut f = f;
                std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0))?;
                (results, Some(f), Some(p.clone()))
            }
            (None, Some(p)) => {
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(p)
                    .map_err(|e| {
                        if e.kind() == std::io::ErrorKind::AlreadyExists {
                            anyhow::anyhow!(
                                "--stream {}: the file exists (continue it with --resume {0}, or remove it)",
                                p.display()
                            )
                        } else {
                            anyhow::anyhow!("--stream {}: {e}", p.display())
                        }
                    })?;
                writeln!(f, "{head}").with_context(|| format!("writing {}", p.display()))?;
                (vec![], Some(f), Some(p.clone()))
            }
            (None, None) => (vec![], None, None),
        };
        if stdout {
            let mut o = std::io::stdout().lock();
            writeln!(o, "{head}")?;
            for r in &results {
                writeln!(o, "{}", serde_json::json!({ "result": r }))?;
            }
            o.flush()?;
        }
        Ok(Arc::new(Journal {
            path,
            stdout,
            resumed: results.len(),
            total,
            noun,
            state: Mutex::new(State {
                file,
                results,
                failed: None,
            }),
        }))
    }

    /// The results read back from `--resume`'s file.
    pub fn resumed(&self) -> Vec<R> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.results[..self.resumed].to_vec()
    }

    /// A finished result: written whole (and flushed) to the file and to
    /// standard output, then kept.
    pub fn record(&self, r: R) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let line = format!("{}\n", serde_json::json!({ "result": &r }));
        if let Some(f) = st.file.as_mut()
            && let Err(e) = f.write_all(line.as_bytes()).and_then(|_| f.flush())
            && st.failed.is_none()
        {
            st.failed = Some(format!(
                "writing {}: {e}",
                self.path.as_deref().unwrap_or(Path::new("?")).display()
            ));
        }
        if self.stdout {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(line.as_bytes()).and_then(|_| o.flush());
        }
        st.results.push(r);
    }

    /// What was done and where it is, for stderr.
    fn tally(&self, n: usize) -> String {
        let of = self.total.map(|t| format!(" of {t}")).unwrap_or_default();
        let kept = match (&self.path, self.stdout) {
            (Some(p), _) => format!("kept in {} (continue with --resume {0})", p.display()),
            (None, true) => {
                "streamed to standard output (save it and continue with --resume FILE)".into()
            }
            (None, false) => "not kept: run with --stream FILE to be able to resume".into(),
        };
        format!(
            "{n}{of} {} done ({} resumed), {kept}",
            self.noun, self.resumed
        )
    }

    /// On SIGINT/SIGTERM: no more lines are written, `render` of what is
    /// done goes to standard output (unless the stream itself goes there),
    /// stderr says how much was done, and the process exits non-zero.
    pub fn on_signal(self: &Arc<Self>, render: impl Fn(&[R]) -> String + Send + Sync + 'static) {
        let j = Arc::clone(self);
        crate::interrupt::on_signal(move || {
            // held to the exit: no line is written after this one
            let st = j.state.lock().unwrap_or_else(|e| e.into_inner());
            if !j.stdout {
                let text = render(&st.results);
                let mut o = std::io::stdout().lock();
                let _ = o.write_all(text.as_bytes()).and_then(|_| o.flush());
            }
            eprintln!("\ninterrupted: {}", j.tally(st.results.len()));
            std::mem::forget(st);
        });
    }

    /// The run ended: the end line, or the first write that failed.
    pub fn finish(&self) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = st.failed.take() {
            bail!("{e}");
        }
        let line = format!("{}\n", serde_json::json!({ "complete": st.results.len() }));
        if let Some(f) = st.file.as_mut() {
            f.write_all(line.as_bytes())
                .and_then(|_| f.flush())
                .with_context(|| {
                    format!(
                        "writing {}",
                        self.path.as_deref().unwrap_or(Path::new("?")).display()
                    )
                })?;
        }
        if self.stdout {
            let mut o = std::io::stdout().lock();
            o.write_all(line.as_bytes())?;
            o.flush()?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------
// `simulate` and `sweep`: a line per simulation

pub use crate::jobs::{Jobs, RunLine, label};

#[cfg(test)]
mod tests {
    use super::*;

    fn args(stream: Option<&Path>, resume: Option<&Path>) -> StreamArgs {
        StreamArgs {
            stream: stream.map(Path::to_path_buf),
            resume: resume.map(Path::to_path_buf),
        }
    }

    #[test]
    fn a_stream_resumes_with_its_results_and_refuses_another_run() {
        let dir = std::env::temp_dir().join(format!("contend-stream-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.jsonl");
        let id = serde_json::json!({"sizes": [1, 2]});
        let j = Journal::<(usize, f64)>::open(
            "sweep",
            id.clone(),
            Some(3),
            "runs",
            &args(Some(&p), None),
            false,
        )
        .unwrap();
        j.record((0, 0.1 + 0.2));
        j.record((2, 1e-300 / 3.0));
        drop(j);
        // an existing file is never overwritten
        let e = Journal::<(usize, f64)>::open(
            "sweep",
            id.clone(),
            Some(3),
            "runs",
            &args(Some(&p), None),
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("exists"), "{e}");
        // a torn last line is dropped, the rest read back bit for bit
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"result\": [1, 0.")
            .unwrap();
        let j = Journal::<(usize, f64)>::open(
            "sweep",
            id.clone(),
            Some(3),
            "runs",
            &args(None, Some(&p)),
            false,
        )
        .unwrap();
        assert_eq!(j.resumed(), vec![(0, 0.1 + 0.2), (2, 1e-300 / 3.0)]);
        j.record((1, 7.0));
        j.finish().unwrap();
        drop(j);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 5, "{text}");
        assert!(text.ends_with("{\"complete\":3}\n"), "{text}");
        // another identity or command is refused, naming what differs
        let other = serde_json::json!({"sizes": [1, 4]});
        let e = Journal::<(usize, f64)>::open(
            "sweep",
            other,
            Some(3),
            "runs",
            &args(None, Some(&p)),
            false,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("sizes: file [1,2] vs now [1,4]"),
            "{e}"
        );
        let e = Journal::<(usize, f64)>::open(
            "advise",
            id,
            Some(3),
            "runs",
            &args(None, Some(&p)),
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("not of `contend advise`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fingerprints_are_stable() {
        assert_eq!(fingerprint(""), "cbf29ce484222325");
        assert_eq!(fingerprint("a"), "af63dc4c8601ec8c");
    }

    /// A result read back must pass the journal's check: the first that
    /// does not is an error at its file and line, and nothing is kept.
    #[test]
    fn a_resume_refuses_the_first_line_its_check_refuses() {
        let dir = std::env::temp_dir().join(format!("contend-stream-chk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.jsonl");
        let id = serde_json::json!({"sizes": [1]});
        let open = |args: &StreamArgs, accept: &mut Accept<'_, (usize, f64)>| {
            Journal::<(usize, f64)>::open_checked(
                "sweep",
                id.clone(),
                Some(3),
                "runs",
                args,
                false,
                accept,
            )
        };
        let j = open(&args(Some(&p), None), &mut |_, _| Ok(())).unwrap();
        j.record((0, 1.5));
        j.record((1, -1e300));
        drop(j);
        let mut seen = vec![];
        let e = open(&args(None, Some(&p)), &mut |line, r| {
            seen.push(line);
            if r.1 > 0.0 {
                Ok(())
            } else {
                Err(anyhow::anyhow!("run {} took {:?}", r.0, r.1))
            }
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}:3: run 1 took -1e300", p.display())
        );
        assert_eq!(seen, [2, 3]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
