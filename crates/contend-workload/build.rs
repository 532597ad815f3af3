//! Embeds every scenario shipped in the repository's `scenarios/` folder, so
//! `contend simulate NAME` finds it by name from any directory.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    // The folder is part of the repository: a checkout without it (or one
    // this build cannot read) is broken, and an empty list would only show
    // later as "no such scenario" for every shipped name.
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "contend-workload's build script embeds the shipped scenarios, \
             but cannot read their folder {}: {e}",
            dir.display()
        )
    });
    let mut stems: Vec<(String, String)> = vec![];
    for entry in entries {
        let p = entry
            .unwrap_or_else(|e| panic!("reading the folder {}: {e}", dir.display()))
            .path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let stem = p.file_stem().and_then(|s| s.to_str());
        let abs = p.canonicalize().ok();
        let abs = abs.as_deref().and_then(|a| a.to_str());
        let (Some(stem), Some(abs)) = (stem, abs) else {
            panic!(
                "the shipped scenario {} has no UTF-8 name and absolute path",
                p.display()
            )
        };
        stems.push((stem.to_string(), abs.to_string()));
    }
    stems.sort();
    let mut out = String::from("/// (stem, TOML text) of every shipped scenario.\n");
    out.push_str("pub const SHIPPED_SCENARIOS: &[(&str, &str)] = &[\n");
    for (stem, abs) in &stems {
        println!("cargo:rerun-if-changed={abs}");
        let _ = writeln!(out, "    ({stem:?}, include_str!({abs:?})),");
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("shipped_scenarios.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
