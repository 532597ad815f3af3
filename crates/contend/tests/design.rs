//! The design the code cites is in the repository: every `DESIGN n` in a
//! source file names an item of `docs/DESIGN.md`'s numbered model list, and
//! every repository path that page names exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn design() -> String {
    std::fs::read_to_string(root().join("docs/DESIGN.md")).expect("docs/DESIGN.md")
}

/// The numbers of `docs/DESIGN.md`'s model items: the lines of its "The
/// model" section that start with `n. **`.
fn items(text: &str) -> BTreeSet<u32> {
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("The model"))
        .expect("a \"The model\" section");
    section
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.split_once(". ")?;
            rest.starts_with("**").then(|| n.parse().ok()).flatten()
        })
        .collect()
}

/// The numbers a `DESIGN …` citation names: `DESIGN 6`, `DESIGN 6, 7`,
/// `DESIGN 6–7` (a range), in `line`.
fn cited(line: &str) -> Vec<u32> {
    let mut out = vec![];
    let mut rest = line;
    while let Some(at) = rest.find("DESIGN ") {
        rest = &rest[at + "DESIGN ".len()..];
        let list: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || matches!(c, ',' | ' ' | '–' | '-'))
            .collect();
        for part in list.split(',') {
            let part = part.trim();
            let bounds: Vec<u32> = part
                .split(['–', '-'])
                .filter_map(|x| x.trim().parse().ok())
                .collect();
            match bounds[..] {
                [a] => out.push(a),
                [a, b] => out.extend(a..=b),
                _ => {}
            }
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn citations_are_parsed_as_written() {
    assert_eq!(cited("//! DESIGN 6–7 — when"), vec![6, 7]);
    assert_eq!(
        cited("//! DESIGN 1, 4, 5, 10 — the fabric"),
        vec![1, 4, 5, 10]
    );
    assert_eq!(cited("// no citation here"), Vec::<u32>::new());
    let page =
        "# t\n\n## The model\n\n1. **Links** x\n2. **Reads** y\n\n## In and out\n3. **no**\n";
    assert_eq!(items(page), BTreeSet::from([1, 2]));
}

#[test]
fn every_design_citation_names_an_item_of_docs_design() {
    let known = items(&design());
    assert!(known.len() >= 14, "{known:?}");
    let mut files = vec![];
    sources(&root().join("crates"), &mut files);
    let mut citations = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            for n in cited(line) {
                citations += 1;
                assert!(
                    known.contains(&n),
                    "{}:{}: DESIGN {n} is not an item of docs/DESIGN.md (items {known:?})",
                    f.display(),
                    i + 1
                );
            }
        }
    }
    assert!(citations >= 20, "only {citations} citations found");
}

#[test]
fn every_path_docs_design_names_exists() {
    let text = design();
    let mut named = 0;
    for span in text.split('`').skip(1).step_by(2) {
        let top = [
            "crates/",
            "kernels/",
            "validation/",
            "calibration/",
            "docs/",
        ];
        if top.iter().any(|t| span.starts_with(t)) && !span.contains(' ') {
            named += 1;
            assert!(
                root().join(span).exists(),
                "docs/DESIGN.md names {span}, which does not exist"
            );
        }
    }
    assert!(named >= 20, "only {named} paths named");
}
