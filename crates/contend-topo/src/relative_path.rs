//! A path written in an input file (a rig's figures, a validation case),
//! found where its writer meant it: relative to the file's folder or to any
//! folder above it (the repository root), so a file can name
//! `topologies/public/x.toml` from anywhere in the tree.

use std::path::{Path, PathBuf};

/// `written` as an existing file: absolute as is, else under `dir` or the
/// nearest folder above it that holds it; `None` where no such file is.
pub fn find_upwards(dir: &Path, written: &str) -> Option<PathBuf> {
    let p = Path::new(written);
    if p.is_absolute() {
        return p.is_file().then(|| p.to_path_buf());
    }
    dir.ancestors().map(|a| a.join(p)).find(|c| c.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_file_in_the_folder_or_above_it_and_nothing_else() {
        let root =
            std::env::temp_dir().join(format!("contend-find-upwards-{}", std::process::id()));
        let deep = root.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(root.join("top.toml"), "").unwrap();
        std::fs::write(deep.join("here.toml"), "").unwrap();
        assert_eq!(
            find_upwards(&deep, "here.toml"),
            Some(deep.join("here.toml"))
        );
        assert_eq!(find_upwards(&deep, "top.toml"), Some(root.join("top.toml")));
        assert_eq!(find_upwards(&deep, "missing.toml"), None);
        // a folder is not a file
        assert_eq!(find_upwards(&root, "a"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
