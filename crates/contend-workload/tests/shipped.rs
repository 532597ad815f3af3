//! Shipped scenarios resolve by name from any directory, as the README
//! promises (`contend simulate transfer-gen5-write`), and are the files.

use contend_workload::{load_scenario, shipped_scenario_names};
use std::path::Path;

#[test]
fn every_shipped_scenario_loads_by_name_as_from_its_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "toml").then(|| p.file_stem().unwrap().to_str().unwrap().to_string())
        })
        .collect();
    files.sort();
    assert_eq!(shipped_scenario_names(), files);
    for stem in &files {
        let by_file = load_scenario(&dir.join(format!("{stem}.toml")), None).unwrap();
        for name in [stem.clone(), format!("{stem}.toml")] {
            let by_name = load_scenario(Path::new(&name), None).unwrap();
            assert_eq!(
                format!("{:?}", by_name.spec()),
                format!("{:?}", by_file.spec()),
                "{name}"
            );
        }
    }
}

#[test]
fn a_name_that_is_neither_a_file_nor_shipped_is_a_located_error() {
    let e = load_scenario(Path::new("no-such-scenario"), None)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("no-such-scenario"), "{e}");
    assert!(e.contains("no shipped scenario of that name"), "{e}");
    assert!(
        e.contains("transfer-gen5-write"),
        "lists what is shipped: {e}"
    );
    // a path with a folder is a file, never a shipped name
    let e = load_scenario(Path::new("elsewhere/transfer-gen5-write.toml"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no such scenario file"), "{e}");
}
