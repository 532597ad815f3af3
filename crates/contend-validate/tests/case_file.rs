//! A case file that is wrong is refused at its line, with the field: a
//! claim its own table contradicts, a crossover its rows do not show, a
//! series that does not exist, a row that cannot be a measurement.

use contend_validate::{ValidateError, load_case};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A case folder under target/ whose case.toml is K3's with `edit` applied,
/// its scenario and topology copied.
fn k3_with(name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let src = repo().join("validation/k3-v100-4x-plx");
    let dir = repo().join("target/tmp/validate-case").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["scenario.toml", "topology.toml"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let text = std::fs::read_to_string(src.join("case.toml")).unwrap();
    std::fs::write(dir.join("case.toml"), edit(text)).unwrap();
    dir
}

fn refused(dir: PathBuf) -> (usize, String, String) {
    match load_case(&dir) {
        Err(ValidateError::At { location, message }) => {
            (location.line, location.field.unwrap_or_default(), message)
        }
        other => panic!("expected a located error, got {other:?}"),
    }
}

fn line_of(dir: &Path, needle: &str) -> usize {
    let text = std::fs::read_to_string(dir.join("case.toml")).unwrap();
    1 + text.lines().position(|l| l.contains(needle)).unwrap()
}

#[test]
fn the_committed_k3_loads() {
    let c = load_case(&repo().join("validation/k3-v100-4x-plx")).unwrap();
    assert_eq!(c.id, "K3");
    assert_eq!(c.series.len(), 2);
    assert_eq!(c.series[0].rows.len(), 6);
}

#[test]
fn a_claim_the_table_contradicts_is_refused() {
    // the push does not beat NCCL at 384 KiB in the measured table
    let dir = k3_with("claim", |t| t.replace("to = 131072", "to = 393216"));
    let (line, field, msg) = refused(dir.clone());
    assert_eq!(field, "claim");
    assert!(
        msg.contains("contradict") && msg.contains("393216"),
        "{msg}"
    );
    assert!(line >= line_of(&dir, "[[claim]]"), "line {line}");
}

#[test]
fn a_crossover_of_series_that_do_not_cross_is_refused() {
    // NCCL is slower than the push at the smallest size: "NCCL faster
    // below" is not what the rows show
    let dir = k3_with("crossover", |t| {
        t.replace(
            "small = \"one-shot push\"\nlarge = \"NCCL\"",
            "small = \"NCCL\"\nlarge = \"one-shot push\"",
        )
    });
    let (line, field, msg) = refused(dir.clone());
    assert_eq!(field, "crossover.small");
    assert!(msg.contains("do not cross"), "{msg}");
    assert_eq!(line, line_of(&dir, "small = \"NCCL\""));
}

#[test]
fn an_unknown_series_and_a_bad_row_are_located() {
    let dir = k3_with("unknown", |t| {
        t.replace("faster = \"one-shot push\"", "faster = \"push\"")
    });
    let (line, field, msg) = refused(dir.clone());
    assert_eq!(field, "claim.faster");
    assert!(msg.contains("no series named `push`"), "{msg}");
    assert_eq!(line, line_of(&dir, "faster = \"push\""));

    let dir = k3_with("row", |t| t.replace("[8192, 20.3]", "[8192, -20.3]"));
    let (line, field, msg) = refused(dir.clone());
    assert_eq!(field, "series.rows");
    assert!(msg.contains("-20.3"), "{msg}");
    assert_eq!(line, line_of(&dir, "-20.3"));

    let dir = k3_with("alg", |t| {
        t.replace("algorithm = \"nccl\"", "algorithm = \"nccl-ring\"")
    });
    let (_, field, msg) = refused(dir);
    assert_eq!(field, "series.algorithm");
    assert!(msg.contains("nccl-ring"), "{msg}");
}
