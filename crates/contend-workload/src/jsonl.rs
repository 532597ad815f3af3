//! JSON Lines of [`ResultRecord`]s: the one reader and the one writer every
//! crate uses. A bad line is an error naming `file:line:column` and, where
//! serde can tell, the field; blank lines and `#` comment lines are skipped.

use crate::record::ResultRecord;
use contend_topo::Location;
use std::io::Write;
use std::path::Path;
use thiserror::Error;

/// A JSON Lines file that cannot be read or written.
#[derive(Debug, Error)]
pub enum JsonlError {
    #[error("{location}: {message}")]
    Bad { location: Location, message: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// The field a serde_json message names (`missing field `x``), if any.
fn named_field(msg: &str) -> Option<String> {
    let i = msg.find("field `")?;
    let rest = &msg[i + "field `".len()..];
    rest.find('`').map(|j| rest[..j].to_string())
}

/// One record from one line; an error names the field's path where serde
/// can tell (`extra.grid`, `stats.median_ns`).
pub fn parse_record(file: &str, line_no: usize, line: &str) -> Result<ResultRecord, JsonlError> {
    let de = &mut serde_json::Deserializer::from_str(line);
    serde_path_to_error::deserialize::<_, ResultRecord>(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.to_string();
        // serde_json appends " at line L column C" (of the one-line document)
        let message = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(m, _)| m)
            .to_string();
        let field = if path.is_empty() || path == "." {
            named_field(&message)
        } else if path == "extra" {
            // `extra` is read in one piece: find the key inside it
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("extra").and_then(crate::record::Extra::bad_key))
                .or(Some(path))
        } else {
            Some(path)
        };
        let message = if inner.is_eof() {
            format!("the record is cut short ({message})")
        } else {
            message
        };
        JsonlError::Bad {
            location: Location {
                file: file.to_string(),
                line: line_no,
                column: inner.column().max(1),
                field,
            },
            message,
        }
    })
}

/// Parses JSON Lines text (`file` names it in errors). Every line must be
/// one complete record.
pub fn parse_records(file: &str, text: &str) -> Result<Vec<(usize, ResultRecord)>, JsonlError> {
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        out.push((i + 1, parse_record(file, i + 1, line)?));
    }
    Ok(out)
}

/// Reads a JSON Lines file of records, with the line each came from.
pub fn read_records(path: &Path) -> Result<Vec<(usize, ResultRecord)>, JsonlError> {
    let name = path.display().to_string();
    let text = contend_topo::bounded_read::read_text(path).map_err(|e| JsonlError::Io {
        path: name.clone(),
        message: format!("cannot read: {}", e.reason()),
    })?;
    parse_records(&name, &text)
}

/// Writes records one per line, flushed after each, so an interrupted run
/// keeps everything it finished.
pub struct JsonlWriter {
    out: Box<dyn Write + Send>,
    name: String,
    /// Records written so far.
    pub written: usize,
}

impl std::fmt::Debug for JsonlWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlWriter")
            .field("name", &self.name)
            .field("written", &self.written)
            .finish()
    }
}

impl JsonlWriter {
    /// Creates (truncates) `path`, making its folder; `None` writes to stdout.
    pub fn create(path: Option<&Path>) -> Result<JsonlWriter, JsonlError> {
        let Some(p) = path else {
            return Ok(JsonlWriter {
                out: Box::new(std::io::stdout()),
                name: "stdout".into(),
                written: 0,
            });
        };
        let name = p.display().to_string();
        let io = |e: std::io::Error| JsonlError::Io {
            path: name.clone(),
            message: e.to_string(),
        };
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let f = std::fs::File::create(p).map_err(io)?;
        Ok(JsonlWriter {
            out: Box::new(std::io::BufWriter::new(f)),
            name,
            written: 0,
        })
    }

    /// Writes to any sink (tests, an in-memory buffer).
    pub fn to_writer(out: Box<dyn Write + Send>, name: &str) -> JsonlWriter {
        JsonlWriter {
            out,
            name: name.to_string(),
            written: 0,
        }
    }

    /// Where the records go.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Appends one record and flushes it.
    pub fn write(&mut self, rec: &ResultRecord) -> Result<(), JsonlError> {
        let io = |m: String| JsonlError::Io {
            path: self.name.clone(),
            message: m,
        };
        let line = serde_json::to_string(rec).map_err(|e| io(e.to_string()))?;
        self.out
            .write_all(line.as_bytes())
            .and_then(|_| self.out.write_all(b"\n"))
            .and_then(|_| self.out.flush())
            .map_err(|e| io(e.to_string()))?;
        self.written += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REC: &str = r#"{"source":"hw","scenario":"s","topology":"t","workload":"allreduce","algorithm":"one-shot-pull","placement":"peer","fidelity":null,"launch":"eager","ranks":["gpu0","gpu1"],"size_bytes":1024,"total_ns":10.0,"per_op_ns":[10.0],"stats":{"count":1,"median_ns":10.0,"p10_ns":10.0,"p90_ns":10.0,"p99_ns":10.0,"min_ns":10.0,"max_ns":10.0},"bandwidth_gbps":null,"verified":true,"events":null,"wall_ns":null,"busiest_link":null,"machine":null,"extra":{"grid":2}}"#;

    #[test]
    fn records_round_trip_through_the_writer() {
        let recs = parse_records("a.jsonl", &format!("{REC}\n\n{REC}\n")).unwrap();
        assert_eq!(recs.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 3]);
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = JsonlWriter::to_writer(Box::new(Shared(buf.clone())), "mem");
        w.write(&recs[0].1).unwrap();
        let text = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
        assert_eq!(text.trim_end(), REC);
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        let bad = REC.replace("one-shot-pull", "three-shot");
        let e = parse_records("m.jsonl", &format!("{REC}\n{bad}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.jsonl:2:"), "{e}");
        assert!(
            e.contains("three-shot") && e.contains("field `algorithm`"),
            "{e}"
        );
        let cut = &REC[..REC.len() / 2];
        let e = parse_records("m.jsonl", cut).unwrap_err().to_string();
        assert!(
            e.starts_with("m.jsonl:1:") && e.contains("cut short"),
            "{e}"
        );
        let e = parse_records(
            "m.jsonl",
            &REC.replace(r#""grid":2"#, r#""grid":4294967297"#),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("m.jsonl:1:") && e.contains("field `extra.grid`"),
            "{e}"
        );
        let e = parse_records("m.jsonl", &REC.replace(r#""ranks":["gpu0","gpu1"],"#, ""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `ranks`"), "{e}");
    }
}
