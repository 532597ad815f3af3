//! Transfer scenarios as people measure them: stream start offsets and
//! repeats, copy-engine reads, patterns of streams, and the per-algorithm
//! launch mode and kernel shape of collective scenarios — each new field
//! parsed, and each bad value a located error.

use contend_topo::{Bytes, NodeIdx, Picos, Topology};
use contend_workload::limits::{MAX_REPEAT, MAX_STREAMS};
use contend_workload::{
    Algorithm, KernelConfig, LaunchMode, PatternKind, Scenario, ScenarioSpec, Shape, Stream,
    TransferOp, Workload, parse_scenario,
};

const HEAD: &str = r#"name = "t"
topology = "pro6000-8x-2switch"

[workload]
kind = "transfer"
"#;

fn load(body: &str) -> Result<Scenario, String> {
    parse_scenario("t.toml", &format!("{HEAD}{body}"), None, None).map_err(|e| e.to_string())
}

/// The error of a scenario that must not load, with its line: the body
/// starts on line 6.
fn error(body: &str) -> String {
    match load(body) {
        Ok(_) => panic!("accepted:\n{body}"),
        Err(e) => e,
    }
}

fn assert_error(body: &str, line: usize, field: &str, says: &str) {
    let e = error(body);
    assert!(
        e.contains(&format!("t.toml:{line}:")),
        "want line {line}: {e}"
    );
    assert!(
        e.contains(&format!("(field `{field}`)")),
        "want {field}: {e}"
    );
    assert!(e.contains(says), "want `{says}`: {e}");
}

fn names(sc: &Scenario) -> Vec<(String, String)> {
    let t = sc.topology();
    sc.streams()
        .iter()
        .map(|s| (t.node(s.from).id.0.clone(), t.node(s.to).id.0.clone()))
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

#[test]
fn streams_take_a_start_offset_a_repeat_count_and_copy_reads() {
    let sc = load(
        r#"[[workload.stream]]
from = "gpu0"
to = "gpu1"
op = "copy-read"
bytes = "1 MiB"
start_us = 2.5
repeat = 4
[[workload.stream]]
from = "gpu2"
to = "mem0"
op = "copy"
"#,
    )
    .unwrap();
    let s = &sc.streams()[0];
    assert_eq!(s.op, TransferOp::CopyRead);
    assert_eq!(
        (s.start, s.repeat, s.bytes),
        (Picos(2_500_000), 4, Bytes(1 << 20))
    );
    let s = &sc.streams()[1];
    assert_eq!(
        (s.start, s.repeat, s.bytes),
        (Picos::ZERO, 1, Bytes(64 << 20))
    );
    assert!(sc.pattern_streams().is_empty());
}

#[test]
fn bad_stream_offsets_and_repeats_are_located_errors() {
    let stream = |extra: &str| {
        format!("[[workload.stream]]\nfrom = \"gpu0\"\nto = \"gpu1\"\nop = \"store\"\n{extra}\n")
    };
    assert_error(
        &stream("repeat = 0"),
        10,
        "workload.stream[0].repeat",
        "repeat must be 1",
    );
    assert_error(
        &stream(&format!("repeat = {}", MAX_REPEAT + 1)),
        10,
        "workload.stream[0].repeat",
        "repeat must be 1 to 100000",
    );
    assert_error(
        &stream("start_us = -1"),
        10,
        "workload.stream[0].start_us",
        "zero or more",
    );
    assert_error(
        &stream("start_us = nan"),
        10,
        "workload.stream[0].start_us",
        "zero or more",
    );
    assert_error(
        &stream("start_us = 2e6"),
        10,
        "workload.stream[0].start_us",
        "above the limit of 1000000 us",
    );
    // every op is named when one is unknown
    assert_error(
        "[[workload.stream]]\nfrom = \"gpu0\"\nto = \"gpu1\"\nop = \"read\"\n",
        9,
        "workload.stream[0].op",
        "copy, copy-read, load, store, ping-pong",
    );
    // the ops of a workload are bounded in all: repeat x iterations
    let e = error(
        "[[workload.stream]]\nfrom = \"gpu0\"\nto = \"gpu1\"\nop = \"ping-pong\"\niterations = 1000000\nrepeat = 11\n",
    );
    assert!(
        e.contains("workload.stream[0].repeat") && e.contains("at most 10000000"),
        "{e}"
    );
}

#[test]
fn patterns_expand_into_the_streams_they_name() {
    // all-to-all over 4 GPUs: 12 ordered pairs, by source then target
    let sc = load(
        r#"[[workload.pattern]]
kind = "all-to-all"
gpus = ["gpu0", "gpu1", "gpu4", "gpu5"]
op = "copy"
bytes = "4 MiB"
"#,
    )
    .unwrap();
    assert_eq!(sc.streams().len(), 12);
    assert_eq!(
        names(&sc)[..3],
        [
            pair("gpu0", "gpu1"),
            pair("gpu0", "gpu4"),
            pair("gpu0", "gpu5")
        ]
    );
    assert!(
        sc.streams()
            .iter()
            .all(|s| s.bytes == Bytes(4 << 20) && s.op == TransferOp::Copy)
    );
    let g = &sc.pattern_streams()[0];
    assert_eq!(
        (g.kind, g.label.as_str(), g.streams.clone()),
        (PatternKind::AllToAll, "all-to-all", 0..12)
    );

    // all-to-all over every GPU: 56 streams
    let sc = load("[[workload.pattern]]\nkind = \"all-to-all\"\nop = \"store\"\n").unwrap();
    assert_eq!(sc.streams().len(), 56);

    // stagger +3 over 8 GPUs: i -> i+3 mod 8
    let sc = load(
        "[[workload.pattern]]\nkind = \"stagger\"\ndistance = 3\ngpus = \"all\"\nop = \"copy\"\n",
    )
    .unwrap();
    let want: Vec<_> = (0..8)
        .map(|i| pair(&format!("gpu{i}"), &format!("gpu{}", (i + 3) % 8)))
        .collect();
    assert_eq!(names(&sc), want);
    assert_eq!(sc.pattern_streams()[0].label, "stagger +3");

    // one-to-many, many-to-one (into host memory), bidirectional pairs,
    // mixed with an explicit stream: the explicit stream first
    let sc = load(
        r#"[[workload.stream]]
from = "gpu7"
to = "gpu6"
op = "load"
[[workload.pattern]]
kind = "one-to-many"
source = "gpu1"
gpus = ["gpu0", "gpu1", "gpu2"]
op = "copy-read"
start_us = 5
repeat = 3
[[workload.pattern]]
kind = "many-to-one"
sink = "mem0"
gpus = ["gpu2", "gpu3"]
op = "store"
[[workload.pattern]]
kind = "bidirectional-pairs"
pairs = [["gpu0", "gpu4"], ["gpu1", "gpu5"]]
op = "copy"
name = "cross-switch pairs"
"#,
    )
    .unwrap();
    assert_eq!(
        names(&sc),
        [
            pair("gpu7", "gpu6"),
            pair("gpu1", "gpu0"),
            pair("gpu1", "gpu2"),
            pair("gpu2", "mem0"),
            pair("gpu3", "mem0"),
            pair("gpu0", "gpu4"),
            pair("gpu4", "gpu0"),
            pair("gpu1", "gpu5"),
            pair("gpu5", "gpu1"),
        ]
    );
    let labels: Vec<_> = sc
        .pattern_streams()
        .iter()
        .map(|g| g.label.as_str())
        .collect();
    assert_eq!(
        labels,
        ["one-to-many gpu1", "many-to-one mem0", "cross-switch pairs"]
    );
    assert_eq!(sc.pattern_streams()[1].streams, 3..5);
    let s = &sc.streams()[1];
    assert_eq!(
        (s.start, s.repeat, s.op),
        (Picos(5_000_000), 3, TransferOp::CopyRead)
    );

    // two patterns of one label are told apart by their index
    let sc = load(
        "[[workload.pattern]]\nkind = \"all-to-all\"\ngpus = [\"gpu0\", \"gpu1\"]\nop = \"copy\"\n[[workload.pattern]]\nkind = \"all-to-all\"\ngpus = [\"gpu2\", \"gpu3\"]\nop = \"copy\"\n",
    )
    .unwrap();
    let labels: Vec<_> = sc
        .pattern_streams()
        .iter()
        .map(|g| g.label.as_str())
        .collect();
    assert_eq!(labels, ["all-to-all #0", "all-to-all #1"]);
}

#[test]
fn bad_patterns_are_located_errors() {
    let p = |body: &str| format!("[[workload.pattern]]\n{body}\n");
    assert_error(
        &p("kind = \"ring\"\nop = \"copy\""),
        7,
        "workload.pattern[0].kind",
        "unknown patternkind `ring`",
    );
    assert_error(
        &p("kind = \"stagger\"\nop = \"copy\""),
        6,
        "workload.pattern[0].distance",
        "needs `distance`",
    );
    assert_error(
        &p("kind = \"stagger\"\ndistance = 8\nop = \"copy\""),
        8,
        "workload.pattern[0].distance",
        "distance must be 1 to 7",
    );
    assert_error(
        &p("kind = \"stagger\"\ndistance = 0\nop = \"copy\""),
        8,
        "workload.pattern[0].distance",
        "distance must be 1 to 7",
    );
    assert_error(
        &p("kind = \"all-to-all\"\ngpus = [\"gpu0\", \"gpu0\"]\nop = \"copy\""),
        8,
        "workload.pattern[0].gpus",
        "`gpu0` is listed twice",
    );
    assert_error(
        &p("kind = \"all-to-all\"\ngpus = [\"gpu0\", \"sw0\"]\nop = \"copy\""),
        8,
        "workload.pattern[0].gpus",
        "`sw0` is not a GPU",
    );
    assert_error(
        &p("kind = \"all-to-all\"\ngpus = [\"gpu0\", \"gpu9\"]\nop = \"copy\""),
        8,
        "workload.pattern[0].gpus",
        "`gpu9` is not a node",
    );
    assert_error(
        &p("kind = \"all-to-all\"\ngpus = [\"gpu0\"]\nop = \"copy\""),
        8,
        "workload.pattern[0].gpus",
        "at least 2 GPUs",
    );
    assert_error(
        &p("kind = \"all-to-all\"\ndistance = 2\nop = \"copy\""),
        8,
        "workload.pattern[0].distance",
        "`distance` does not apply to a `all-to-all` pattern",
    );
    assert_error(
        &p("kind = \"one-to-many\"\nsource = \"mem0\"\nop = \"copy\""),
        8,
        "workload.pattern[0].source",
        "`mem0` is not a GPU",
    );
    assert_error(
        &p("kind = \"many-to-one\"\nsink = \"sw1\"\nop = \"store\""),
        8,
        "workload.pattern[0].sink",
        "`sw1` is a switch",
    );
    assert_error(
        &p("kind = \"one-to-many\"\nsource = \"gpu0\"\ngpus = [\"gpu0\"]\nop = \"copy\""),
        9,
        "workload.pattern[0].gpus",
        "expands to no streams",
    );
    assert_error(
        &p("kind = \"bidirectional-pairs\"\npairs = [[\"gpu0\"]]\nop = \"copy\""),
        8,
        "workload.pattern[0].pairs",
        "each pair is two GPU ids",
    );
    assert_error(
        &p(
            "kind = \"bidirectional-pairs\"\npairs = [[\"gpu0\", \"gpu1\"], [\"gpu1\", \"gpu0\"]]\nop = \"copy\"",
        ),
        8,
        "workload.pattern[0].pairs",
        "listed twice",
    );
    assert_error(
        &p("kind = \"bidirectional-pairs\"\npairs = [[\"gpu0\", \"mem0\"]]\nop = \"copy\""),
        8,
        "workload.pattern[0].pairs",
        "`mem0` is not a GPU",
    );
    assert_error(
        &p(
            "kind = \"bidirectional-pairs\"\ngpus = \"all\"\npairs = [[\"gpu0\", \"gpu1\"]]\nop = \"copy\"",
        ),
        8,
        "workload.pattern[0].gpus",
        "does not apply",
    );
    assert_error(
        &p("kind = \"all-to-all\"\nop = \"ping-pong\""),
        8,
        "workload.pattern[0].op",
        "a pattern moves bytes",
    );
    // a stream's own check, named at the pattern's field
    assert_error(
        &p("kind = \"all-to-all\"\nop = \"copy\"\nbytes = 0"),
        9,
        "workload.pattern[0].bytes",
        "bytes must be 1",
    );
    assert_error(
        &p("kind = \"all-to-all\"\nop = \"store\"\nrepeat = 0"),
        9,
        "workload.pattern[0].repeat",
        "repeat must be 1",
    );
    assert_error(
        &p("kind = \"all-to-all\"\nop = \"load\"\nthreads = 33"),
        6,
        "workload.pattern[0].blocks",
        "multiple of 32",
    );
    assert_error(
        &p("kind = \"all-to-all\"\nop = \"copy\"\nstart_us = -3"),
        9,
        "workload.pattern[0].start_us",
        "zero or more",
    );
    // a pattern in a collective workload
    let e = parse_scenario(
        "t.toml",
        "name = \"t\"\ntopology = \"pro6000-8x-2switch\"\n[workload]\nkind = \"allreduce\"\nsizes = [1024]\n[[workload.pattern]]\nkind = \"all-to-all\"\nop = \"copy\"\n",
        None,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("`pattern` does not apply to a `allreduce` workload"),
        "{e}"
    );
}

#[test]
fn pattern_streams_are_bounded_before_they_are_built() {
    // 65 x 64 would pass the limit: built by a program, checked all the same
    let topo: Topology = contend_topo::shipped::get("pro6000-8x-2switch")
        .unwrap()
        .unwrap();
    let gpus = topo.gpus();
    let many = Shape::BidirectionalPairs {
        pairs: vec![(gpus[0], gpus[1]); 1],
    };
    let pattern = |shape| contend_workload::Pattern {
        shape,
        name: None,
        op: TransferOp::Copy,
        bytes: Bytes(4096),
        kernel: KernelConfig::default(),
        repeat: 1,
        start: Picos::ZERO,
    };
    let mut patterns = vec![];
    for _ in 0..=MAX_STREAMS / 56 {
        patterns.push(pattern(Shape::AllToAll { gpus: gpus.clone() }));
    }
    patterns.push(pattern(many));
    let spec = ScenarioSpec::new(
        "big",
        topo.clone(),
        Workload::Transfer {
            streams: vec![],
            patterns,
        },
    );
    let e = Scenario::new(spec).unwrap_err().to_string();
    assert!(e.contains("at most 4096"), "{e}");
    // a program's pattern naming a node the topology lacks
    let spec = ScenarioSpec::new(
        "bad",
        topo.clone(),
        Workload::Transfer {
            streams: vec![Stream::new(gpus[0], gpus[1], TransferOp::Copy, Bytes(1))],
            patterns: vec![pattern(Shape::Stagger {
                gpus: vec![gpus[0], NodeIdx(999)],
                distance: 1,
            })],
        },
    );
    let e = Scenario::new(spec).unwrap_err().to_string();
    assert!(e.contains("workload.pattern[0].gpus"), "{e}");
}

#[test]
fn algorithms_take_their_own_launch_mode_and_kernel_shape() {
    let text = r#"name = "a"
topology = "pro6000-8x-2switch"
algorithms = ["ring-ll", "one-shot-push", "one-shot-pull"]
launch = "eager"
kernel = { blocks = 24, threads = 256 }

[algorithm.ring-ll]
launch = "eager"

[algorithm.one-shot-push]
launch = "graph"
blocks = 36
threads = 512

[workload]
kind = "allreduce"
sizes = ["43008"]
"#;
    let sc = parse_scenario("a.toml", text, None, None).unwrap();
    assert_eq!(sc.launch_of(Algorithm::RingLl), LaunchMode::Eager);
    assert_eq!(sc.launch_of(Algorithm::OneShotPush), LaunchMode::Graph);
    assert_eq!(sc.launch_of(Algorithm::OneShotPull), LaunchMode::Eager);
    assert_eq!(
        sc.kernel_of(Algorithm::OneShotPush),
        KernelConfig {
            blocks: 36,
            threads: 512
        }
    );
    assert_eq!(
        sc.kernel_of(Algorithm::OneShotPull),
        KernelConfig {
            blocks: 24,
            threads: 256
        }
    );
    let bad = |from: &str, to: &str| {
        parse_scenario("a.toml", &text.replace(from, to), None, None)
            .unwrap_err()
            .to_string()
    };
    let e = bad("[algorithm.ring-ll]", "[algorithm.three-shot]");
    assert!(
        e.contains("a.toml:7:")
            && e.contains("field `algorithm.three-shot`")
            && e.contains("unknown algorithm `three-shot`"),
        "{e}"
    );
    let e = bad("launch = \"graph\"", "launch = \"lazy\"");
    assert!(
        e.contains("a.toml:11:") && e.contains("field `algorithm.one-shot-push.launch`"),
        "{e}"
    );
    let e = bad("blocks = 36", "blocks = 0");
    assert!(
        e.contains("a.toml:12:") && e.contains("field `algorithm.one-shot-push.blocks`"),
        "{e}"
    );
    let e = bad("threads = 512", "threads = 500");
    assert!(
        e.contains("algorithm.one-shot-push.blocks") && e.contains("500"),
        "{e}"
    );
    let e = bad("threads = 512", "threads = 512\nfence = true");
    assert!(
        e.contains("a.toml:") && e.contains("unknown field `fence`"),
        "{e}"
    );
}

#[test]
fn sweeps_take_any_factor_above_one() {
    let text = |factor: &str| {
        format!(
            "name = \"s\"\ntopology = \"pro6000-8x-2switch\"\n[workload]\nkind = \"allreduce\"\nsweep = {{ from = \"1 KiB\", to = \"16 KiB\", factor = {factor} }}\n"
        )
    };
    let sizes = |factor: &str| match parse_scenario("s.toml", &text(factor), None, None)
        .unwrap()
        .workload()
    {
        Workload::Allreduce { sizes, .. } => sizes.iter().map(|b| b.0).collect::<Vec<_>>(),
        _ => unreachable!(),
    };
    assert_eq!(sizes("2"), [1024, 2048, 4096, 8192, 16384]);
    assert_eq!(sizes("4.0"), [1024, 4096, 16384]);
    assert_eq!(sizes("1.5"), [1024, 1536, 2304, 3456, 5184, 7776, 11664]);
    for bad in ["1", "0.5", "-2", "nan", "inf", "2048"] {
        let e = parse_scenario("s.toml", &text(bad), None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("s.toml:5:") && e.contains("workload.sweep.factor"),
            "{bad}: {e}"
        );
    }
}
