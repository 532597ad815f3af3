//! Embeds every scenario shipped in the repository's `scenarios/` folder, so
//! `contend simulate NAME` finds it by name from any directory.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut stems: Vec<(String, String)> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .filter_map(|p| {
                    let stem = p.file_stem()?.to_str()?.to_string();
                    let abs = p.canonicalize().ok()?.to_str()?.to_string();
                    Some((stem, abs))
                })
                .collect()
        })
        .unwrap_or_default();
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
