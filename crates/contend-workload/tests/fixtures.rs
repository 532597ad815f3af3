//! Every malformed topology and scenario under `tests/fixtures/` gets an
//! error that names the file and a line and column (or a field), and says
//! what is wrong (the `# expect:` line of the fixture) — never a panic.

use contend_topo::load_topology;
use contend_workload::load_scenario;
use std::path::{Path, PathBuf};

fn fixtures(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(kind);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "fixtures missing in {}", dir.display());
    v
}

fn expectation(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    text.lines()
        .next()
        .and_then(|l| l.strip_prefix("# expect: "))
        .unwrap_or_else(|| panic!("{} has no `# expect:` line", p.display()))
        .to_string()
}

fn check(p: &Path, msg: &str) {
    let file = p.file_name().unwrap().to_str().unwrap();
    assert!(
        msg.contains(file),
        "{}: error does not name the file: {msg}",
        p.display()
    );
    let has_line_col = msg.split(':').collect::<Vec<_>>().windows(2).any(|w| {
        w[0].chars().last().is_some_and(|c| c.is_ascii_digit())
            && w[1].chars().next().is_some_and(|c| c.is_ascii_digit())
    });
    assert!(
        has_line_col || msg.contains("field `"),
        "{}: no line:column or field in: {msg}",
        p.display()
    );
    let want = expectation(p);
    assert!(
        msg.contains(&want),
        "{}: expected `{want}` in: {msg}",
        p.display()
    );
}

#[test]
fn malformed_topologies_get_located_errors() {
    for p in fixtures("topology") {
        let err = load_topology(&p)
            .err()
            .unwrap_or_else(|| panic!("{} was accepted", p.display()));
        check(&p, &err.to_string());
    }
}

#[test]
fn malformed_scenarios_get_located_errors() {
    for p in fixtures("scenario") {
        let err = load_scenario(&p, None)
            .err()
            .unwrap_or_else(|| panic!("{} was accepted", p.display()));
        check(&p, &err.to_string());
    }
}

#[test]
fn shipped_scenarios_and_topologies_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for dir in ["scenarios", "topologies"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let r = if dir == "scenarios" {
                load_scenario(&p, None)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            } else {
                load_topology(&p).map(|_| ()).map_err(|e| e.to_string())
            };
            r.unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
}
