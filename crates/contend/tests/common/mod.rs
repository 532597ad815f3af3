//! What the binary's integration tests share: the repository root and a run
//! of the built `contend` from it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root (shipped inputs are named from there).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the built `contend` with `args` from the repository root: whether it
/// succeeded, its standard output and its standard error.
pub fn contend(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
