//! The one rule for files a command writes: an existing file is not
//! overwritten unless the command line asks with `--force`.

use anyhow::{Result, bail};
use std::path::Path;

/// An error when `path` exists and `force` is not set, naming the file
/// and how to ask (`flag` is the option that named it, e.g. `--out`).
pub fn check(path: &Path, flag: &str, force: bool) -> Result<()> {
    if !force && path.exists() {
        bail!(
            "{} exists: {flag} a path that does not, or add --force to overwrite it",
            path.display()
        );
    }
    Ok(())
}

/// [`check`], and that the folder `path` goes in exists, so that a long
/// run does not end unable to write its file (a chart written at the end).
pub fn check_writable(path: &Path, flag: &str, force: bool) -> Result<()> {
    check(path, flag, force)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "{flag} {}: the folder {} does not exist",
            path.display(),
            dir.display()
        );
    }
    Ok(())
}

/// The same for the files `names` a command writes into the folder `dir`
/// (a calibration's params.toml, fit.json, ...): the first that exists is
/// named; `hint` says where else to write (`--out a new folder`).
pub fn check_in(dir: &Path, names: &[&str], hint: &str, force: bool) -> Result<()> {
    if force {
        return Ok(());
    }
    for n in names {
        let p = dir.join(n);
        if p.exists() {
            bail!(
                "{} exists (a calibration's file in {}): {hint}, or add --force to overwrite it",
                p.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_file_is_refused_unless_forced() {
        let d = std::env::temp_dir().join(format!("contend-overwrite-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("fit.json");
        assert!(check(&f, "--out", false).is_ok());
        assert!(
            check_in(
                &d,
                &["params.toml", "fit.json"],
                "--out a new folder",
                false
            )
            .is_ok()
        );
        std::fs::write(&f, "{}").unwrap();
        let e = check(&f, "--out", false).unwrap_err().to_string();
        assert!(
            e.contains("fit.json exists") && e.contains("--force"),
            "{e}"
        );
        let e = check_in(
            &d,
            &["params.toml", "fit.json"],
            "--out a new folder",
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("fit.json exists (a calibration's file in"),
            "{e}"
        );
        assert!(check(&f, "--out", true).is_ok());
        // a chart: the same rule, and its folder must be there
        assert!(check_writable(&f, "--plot", false).is_err());
        assert!(check_writable(&f, "--plot", true).is_ok());
        assert!(check_writable(&d.join("new.svg"), "--plot", false).is_ok());
        let e = check_writable(&d.join("none/new.svg"), "--plot", true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--plot") && e.contains("none/new.svg") && e.contains("does not exist"),
            "{e}"
        );
        assert!(check_writable(Path::new("new-here.svg"), "--plot", false).is_ok());
        assert!(check_in(&d, &["fit.json"], "--out a new folder", true).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
