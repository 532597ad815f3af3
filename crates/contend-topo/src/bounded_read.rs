//! The one way contend reads a file a user names (on the command line, in a
//! scenario, or through an environment variable such as the tuner plugin's
//! `CONTEND_TUNER_TABLE`): only a regular file (a FIFO, a device, a socket
//! or a folder is refused before it is opened, so nothing blocks on a pipe
//! nobody writes or reads `/dev/zero` without end), and at most
//! [`MAX_INPUT_BYTES`] of it (a larger file is refused, never half-read).
//! Every crate's loader goes through [`read_text`] or [`read_bytes`], so the
//! rule is written once.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest file contend reads: 64 MiB. The largest input it knows of, an
/// NCCL debug log of an 8-GPU nccl-tests sweep with `NCCL_DEBUG=INFO`, is a
/// few MiB; the committed calibration files are below 1 MiB each.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The operating system's error (missing file, no permission, …).
    Io { path: PathBuf, message: String },
    /// Not a regular file: what it is instead.
    NotAFile { path: PathBuf, what: &'static str },
    /// Longer than the limit.
    TooLarge { path: PathBuf, limit: u64 },
    /// Not UTF-8 text: the line and column (1-based) of the first bad byte.
    NotText {
        path: PathBuf,
        line: usize,
        column: usize,
    },
}

impl ReadError {
    /// The file it is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Io { path, .. }
            | ReadError::NotAFile { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::NotText { path, .. } => path,
        }
    }

    /// The line and column it names (0, 0 where it names none).
    pub fn line_column(&self) -> (usize, usize) {
        match self {
            ReadError::NotText { line, column, .. } => (*line, *column),
            _ => (0, 0),
        }
    }

    /// What is wrong, without the path (for errors that print the path in
    /// their own place).
    pub fn reason(&self) -> String {
        match self {
            ReadError::Io { message, .. } => message.clone(),
            ReadError::NotAFile { what, .. } => format!(
                "is {what}, not a regular file; contend reads only regular files (copy the text into a file first)"
            ),
            ReadError::TooLarge { limit, .. } => format!(
                "is larger than {} MiB, the most contend reads from one file (cut it to the part contend needs)",
                limit >> 20
            ),
            ReadError::NotText { line, column, .. } => {
                format!("is not UTF-8 text: the byte at line {line}, column {column} is not")
            }
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line, column) = self.line_column();
        if line > 0 {
            write!(
                f,
                "{}:{line}:{column}: {}",
                self.path().display(),
                self.reason()
            )
        } else {
            write!(f, "{}: {}", self.path().display(), self.reason())
        }
    }
}

impl std::error::Error for ReadError {}

/// What a non-regular file is, in words.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// The bytes of a regular file of at most `limit` bytes.
pub fn read_bytes_capped(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let io = |e: std::io::Error| ReadError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    // follows links: a link to a FIFO is a FIFO
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile {
            path: path.to_path_buf(),
            what: kind_of(&meta),
        });
    }
    let too_large = || ReadError::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let file = std::fs::File::open(path).map_err(io)?;
    // the length can change between the look and the read (and /proc files
    // say 0): read one byte past the limit to know
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The bytes of a regular file of at most [`MAX_INPUT_BYTES`].
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_bytes_capped(path, MAX_INPUT_BYTES)
}

/// The text of a regular UTF-8 file of at most [`MAX_INPUT_BYTES`].
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let bytes = read_bytes(path)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        // characters, not bytes, up to the bad byte (the prefix is valid UTF-8)
        let column =
            std::str::from_utf8(&before[line_start..]).map_or(0, |s| s.chars().count()) + 1;
        ReadError::NotText {
            path: path.to_path_buf(),
            line,
            column,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("contend-bounded-read-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    #[test]
    fn a_regular_file_is_read_whole() {
        let p = scratch("ok.txt");
        std::fs::write(&p, "a\nb\n").unwrap();
        assert_eq!(read_text(&p).unwrap(), "a\nb\n");
    }

    #[test]
    fn a_file_past_the_limit_is_refused_not_cut() {
        let p = scratch("big.txt");
        std::fs::write(&p, vec![b'x'; 101]).unwrap();
        let e = read_bytes_capped(&p, 100).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { limit: 100, .. }), "{e}");
        assert_eq!(read_bytes_capped(&p, 101).unwrap().len(), 101);
    }

    #[test]
    fn a_folder_is_refused() {
        let d = scratch("dir");
        std::fs::create_dir_all(&d).unwrap();
        let e = read_text(&d).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::NotAFile {
                    what: "a folder",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_refused_before_they_are_read() {
        for dev in ["/dev/zero", "/dev/urandom", "/dev/null"] {
            let e = read_text(Path::new(dev)).unwrap_err();
            assert!(
                matches!(
                    e,
                    ReadError::NotAFile {
                        what: "a character device",
                        ..
                    }
                ),
                "{dev}: {e}"
            );
            assert!(e.to_string().starts_with(dev), "{e}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let p = scratch("fifo");
        let _ = std::fs::remove_file(&p);
        let made = std::process::Command::new("mkfifo").arg(&p).status();
        if !made.map(|s| s.success()).unwrap_or(false) {
            // no mkfifo on this machine: nothing to test
            return;
        }
        // opening a FIFO nobody writes would block forever: the check comes first
        let e = read_text(&p).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::NotAFile {
                    what: "a FIFO (named pipe)",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_are_located() {
        let p = scratch("bad.txt");
        std::fs::write(&p, b"ok\nab\xffc\n").unwrap();
        let e = read_text(&p).unwrap_err();
        assert_eq!(e.line_column(), (2, 3), "{e}");
        assert!(e.to_string().contains("bad.txt:2:3: is not UTF-8"), "{e}");
    }
}
