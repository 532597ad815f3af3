//! Every design citation in the crates' sources resolves in `docs/DESIGN.md`.
//!
//! A citation is `DESIGN` followed by item numbers or by one name in
//! parentheses: `DESIGN 9`, `DESIGN 6, 7, 8`, `DESIGN 6–7` (a range, en dash
//! or hyphen), `DESIGN (time)`. `DESIGN.md` (the file's name) is no
//! citation; any other `DESIGN` followed by something else is a malformed
//! citation and fails the test.
//!
//! The anchors, inside the `## The model` section of `docs/DESIGN.md` only:
//! item `n` is a line that starts `n. **` (a numbered list item with a bold
//! title), the named item `(name)` a line that starts `(name) **`. Each
//! anchor is written once.
//!
//! The sources are `crates/*/src/**/*.rs` (tests and examples may quote
//! citations that do not exist, as this file does).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One citation as written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Cite {
    /// `DESIGN n`: model item n.
    Item(u32),
    /// `DESIGN (name)`: the named model item.
    Named(String),
    /// `DESIGN` followed by neither (the text after it).
    Malformed(String),
}

/// The citations in `line`, in order.
fn citations(line: &str) -> Vec<Cite> {
    let mut out = vec![];
    let mut rest = line;
    while let Some(at) = rest.find("DESIGN") {
        rest = &rest[at + "DESIGN".len()..];
        if rest.starts_with(".md") {
            continue;
        }
        if let Some(after) = rest.strip_prefix(" (") {
            match after.split_once(')') {
                Some((name, _)) if is_name(name) => out.push(Cite::Named(name.to_string())),
                _ => out.push(Cite::Malformed(snippet(rest))),
            }
            continue;
        }
        let list: String = match rest.strip_prefix(' ') {
            Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => after
                .chars()
                .take_while(|c| c.is_ascii_digit() || matches!(c, ',' | ' ' | '–' | '-'))
                .collect(),
            _ => {
                out.push(Cite::Malformed(snippet(rest)));
                continue;
            }
        };
        for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bounds: Vec<&str> = part.split(['–', '-']).map(str::trim).collect();
            let nums: Option<Vec<u32>> = bounds.iter().map(|b| b.parse().ok()).collect();
            match nums.as_deref() {
                Some([a]) => out.push(Cite::Item(*a)),
                Some([a, b]) if a < b => out.extend((*a..=*b).map(Cite::Item)),
                _ => out.push(Cite::Malformed(part.to_string())),
            }
        }
    }
    out
}

/// A named item's name: lower-case words, digits and hyphens.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, ' ' | '-'))
}

fn snippet(s: &str) -> String {
    s.chars().take(20).collect()
}

/// The anchors of `page`'s `## The model` section, as the citations that
/// resolve to them; an anchor written twice is an error.
fn anchors(page: &str) -> Result<BTreeSet<Cite>, String> {
    let mut lines = page.lines().skip_while(|l| l.trim_end() != "## The model");
    if lines.next().is_none() {
        return Err("no \"## The model\" section".into());
    }
    let mut out = BTreeSet::new();
    for l in lines.take_while(|l| !l.starts_with("## ")) {
        let anchor = if let Some((n, rest)) = l.split_once(". ") {
            match (n.parse(), rest.starts_with("**")) {
                (Ok(n), true) => Some(Cite::Item(n)),
                _ => None,
            }
        } else {
            None
        };
        let anchor = anchor.or_else(|| {
            let (name, rest) = l.strip_prefix('(')?.split_once(") ")?;
            (is_name(name) && rest.starts_with("**")).then(|| Cite::Named(name.to_string()))
        });
        if let Some(a) = anchor
            && !out.insert(a.clone())
        {
            return Err(format!("{a:?} is written twice"));
        }
    }
    Ok(out)
}

/// The citations of `text` (file `name`) that do not resolve in `known`,
/// each located.
fn unresolved(name: &str, text: &str, known: &BTreeSet<Cite>) -> Vec<String> {
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        for c in citations(line) {
            if !known.contains(&c) {
                out.push(format!("{name}:{}: {c:?}", i + 1));
            }
        }
    }
    out
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

const PAGE: &str = "# t\n\n(time) **not here**\n\n## The model\n\n\
(time) **Time.** Integer picoseconds.\n\n1. **Links** x\n2. **Reads** y\n\
3. not an item\n(Time) **not a name**\n\n## After\n\n4. **outside** z\n";

#[test]
fn the_extractor_reads_every_form_and_rejects_the_rest() {
    use Cite::*;
    assert_eq!(citations("//! DESIGN 9 — two fidelities"), [Item(9)]);
    assert_eq!(
        citations("//! DESIGN 1, 4, 5, 10 — the fabric"),
        [Item(1), Item(4), Item(5), Item(10)]
    );
    assert_eq!(citations("//! DESIGN 6–7 — when"), [Item(6), Item(7)]);
    assert_eq!(citations("//! DESIGN 6-8."), [Item(6), Item(7), Item(8)]);
    assert_eq!(
        citations("//! DESIGN (time) — the event loop"),
        [Named("time".into())]
    );
    assert_eq!(citations("//! | DESIGN.md model item | file |"), []);
    assert_eq!(citations("// no citation"), []);
    assert_eq!(
        citations("//! DESIGN #9, DESIGN (Time), DESIGN 7–6"),
        [
            Malformed(" #9, DESIGN (Time), ".into()),
            Malformed(" (Time), DESIGN 7–6".into()),
            Malformed("7–6".into())
        ]
    );
}

#[test]
fn the_resolver_takes_only_the_model_sections_anchors() {
    use Cite::*;
    let known = anchors(PAGE).unwrap();
    assert_eq!(
        known,
        BTreeSet::from([Named("time".into()), Item(1), Item(2)])
    );
    assert!(unresolved("a.rs", "//! DESIGN 1, 2 and DESIGN (time)", &known).is_empty());
    // made-up citations: an item the page lacks, one outside the section,
    // an unknown name, a malformed one
    assert_eq!(
        unresolved(
            "a.rs",
            "//! DESIGN 3\n//! DESIGN 4, DESIGN (space), DESIGN nine",
            &known
        ),
        [
            "a.rs:1: Item(3)",
            "a.rs:2: Item(4)",
            "a.rs:2: Named(\"space\")",
            "a.rs:2: Malformed(\" nine\")"
        ]
    );
    assert!(anchors("# t\n## The model\n1. **a**\n1. **b**\n").is_err());
    assert!(anchors("# t\n## Not the model\n1. **a**\n").is_err());
}

#[test]
fn every_design_citation_in_the_crates_resolves_in_docs_design() {
    let page = std::fs::read_to_string(root().join("docs/DESIGN.md")).expect("docs/DESIGN.md");
    let known = anchors(&page).unwrap_or_else(|e| panic!("docs/DESIGN.md: {e}"));
    let mut files = vec![];
    for krate in std::fs::read_dir(root().join("crates")).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    let (mut cited, mut bad) = (0, vec![]);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        cited += usize::from(text.lines().any(|l| !citations(l).is_empty()));
        let name = f.strip_prefix(root()).unwrap_or(f).display().to_string();
        bad.extend(unresolved(&name, &text, &known));
    }
    assert!(
        bad.is_empty(),
        "citations docs/DESIGN.md does not resolve (anchors {known:?}):\n{}",
        bad.join("\n")
    );
    // the walk found the sources (28 files cite the design today)
    assert!(cited >= 20, "only {cited} of {} files cite", files.len());
}
