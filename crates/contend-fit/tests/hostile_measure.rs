//! The hostile-input pass over measurement files: the committed real
//! outputs (`tests/fixtures/real/`) with one cell or row made impossible or
//! unreadable, imported through the public API. An impossible figure (a
//! rate above the fastest link, a time below 0.1 µs) is a located
//! `CalibError::Impossible`; a row inside a table that does not parse is a
//! located `CalibError::Row` naming its column and what was expected; text
//! inside a table that is not a row is listed as skipped with its line.
//! Nothing is dropped without a word, and calibration never runs on it.

use contend_fit::{CalibrateOptions, FitOptions, NCCL_LOG_SUBSET, calibrate, select};
use contend_import::CalibError;
use contend_import::import::{import_file, import_text};
use contend_import::measure::load_measurements;
use contend_import::nccl_tests::import_nccl_tests_json;
use contend_topo::load_topology;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn real(name: &str) -> String {
    std::fs::read_to_string(root().join("tests/fixtures/real").join(name)).unwrap()
}

/// `text` with the first `from` replaced by `to` (which must occur), and
/// the 1-based line and column where it was.
fn edit(text: &str, from: &str, to: &str) -> (String, usize, usize) {
    let at = text
        .find(from)
        .unwrap_or_else(|| panic!("`{from}` not in the fixture"));
    let line = text[..at].matches('\n').count() + 1;
    let start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    let column = text[start..at].chars().count() + 1;
    (text.replacen(from, to, 1), line, column)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("contend-hostile-measure-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn has(e: &str, parts: &[&str]) {
    for p in parts {
        assert!(e.contains(p), "expected `{p}` in: {e}");
    }
}

const ZTAN: &str = "nccl-tests/ztan-2host-16xh100.md";
const ROW_1K: &str = "        1024           256     float     sum      -1    147.1    0.01    0.01      0    123.1    0.01    0.02      0";

// ---- A. impossible figures -------------------------------------------------

#[test]
fn a_p2p_bandwidth_cell_of_1e308_is_impossible_not_a_0_ns_record() {
    let t = real("p2pbandwidthlatencytest/tinygrad-6x4090-bidirectional.txt");
    // row 1, column 2: 50.31 GB/s
    let (bad, line, col) = edit(&t, "50.31", "1e308");
    let e = import_text("p2p.txt", &bad).unwrap_err();
    assert!(matches!(e, CalibError::Impossible { .. }), "{e:?}");
    has(
        &e.to_string(),
        &[
            &format!("p2p.txt:{line}:{col}: impossible measurement"),
            "`1e308` (row 1, column 2 of `Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)`",
            "above 900 GB/s",
            "NVLink 5",
        ],
    );
    // a unidirectional cell just above the fastest link there is
    let t = real("p2pbandwidthlatencytest/nccl-814-6gpu-reads.txt");
    let (bad, line, _) = edit(&t, "10.46", "950.00");
    let e = import_text("reads.txt", &bad).unwrap_err().to_string();
    has(
        &e,
        &[&format!("reads.txt:{line}:"), "950 GB/s from gpu5 to gpu2"],
    );
}

#[test]
fn an_nvbandwidth_cell_of_1e308_is_impossible() {
    let t = real("nvbandwidth/nvbandwidth-50-6xa6000-read-ce.txt");
    let (bad, line, col) = edit(&t, "21.95", "1e308");
    let e = import_text("nvb.txt", &bad).unwrap_err();
    assert!(matches!(e, CalibError::Impossible { .. }), "{e:?}");
    has(
        &e.to_string(),
        &[
            &format!("nvb.txt:{line}:{col}: impossible measurement"),
            "(row 0, column 3 of `memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)`)",
            "1e308 GB/s",
        ],
    );
}

#[test]
fn a_p2pmark_rate_of_1e308_is_impossible() {
    let t = real("p2pmark/rtx6kpro-asus-esc8000a-ring-probe.md");
    let (bad, line, col) = edit(&t, "51.66", "1e308");
    let e = import_text("ring.md", &bad).unwrap_err();
    assert!(matches!(e, CalibError::Impossible { .. }), "{e:?}");
    has(
        &e.to_string(),
        &[
            &format!("ring.md:{line}:{col}: impossible measurement"),
            "the ring stream GPU 1 -> GPU 2",
            "1e308 GB/s",
        ],
    );
    // the probe's mean
    let t = real("p2pmark/rtx6kpro-collapse-report-probe.txt");
    let (bad, line, col) = edit(&t, "38.15", "1e308");
    let e = import_text("probe.txt", &bad).unwrap_err().to_string();
    has(
        &e,
        &[
            &format!("probe.txt:{line}:{col}: impossible measurement"),
            "probe round +2",
        ],
    );
}

#[test]
fn an_nccl_tests_time_of_a_millionth_of_a_microsecond_is_impossible() {
    let t = real(ZTAN);
    let (bad, line, _) = edit(&t, ROW_1K, &ROW_1K.replace("147.1", "0.000001"));
    let e = import_text("ztan.md", &bad).unwrap_err();
    assert!(matches!(e, CalibError::Impossible { .. }), "{e:?}");
    let col = bad.lines().nth(line - 1).unwrap().find("0.000001").unwrap() + 1;
    has(
        &e.to_string(),
        &[
            &format!("ztan.md:{line}:{col}: impossible measurement"),
            "time (column 6) 0.000001 us is below 0.1 us",
        ],
    );
    // the in-place time is a measurement too
    let (bad, line, _) = edit(&t, ROW_1K, &ROW_1K.replace("123.1", "0.0001"));
    let e = import_text("ztan.md", &bad).unwrap_err().to_string();
    has(
        &e,
        &[&format!("ztan.md:{line}:"), "time (column 10) 0.0001 us"],
    );
    // and a printed rate past any hardware
    let (bad, line, _) = edit(&t, ROW_1K, &ROW_1K.replace("0.02", "1e308"));
    let e = import_text("ztan.md", &bad).unwrap_err().to_string();
    has(
        &e,
        &[&format!("ztan.md:{line}:"), "busbw (column 12) 1e308 GB/s"],
    );
}

#[test]
fn an_nccl_tests_json_time_below_the_floor_names_its_field() {
    let doc = r#"{"version":2,"args":["./build/all_reduce_perf"],"env":[],"nccl_version":22703,
"config":{"nthreads":1,"ngpus":2,"graph":0,"devices":[{"rank":0,"group":0,"pid":1,"hostname":"box","device":0,"device_hex":"0000:01:00","device_info":"NVIDIA GeForce RTX 4090"}]},
"results":[{"size":1024,"count":256,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":0.000001,"alg_bw":0.1,"bus_bw":0.1,"nwrong":0.0},"in_place":{"time":10.5,"alg_bw":0.1,"bus_bw":0.1,"nwrong":0.0}}]}"#;
    let e = import_nccl_tests_json("run.json", doc).unwrap_err();
    assert!(matches!(e, CalibError::Impossible { .. }), "{e:?}");
    has(
        &e.to_string(),
        &[
            "run.json:3: impossible measurement",
            "field `results[0].out_of_place.time`",
            "below 0.1 us",
        ],
    );
}

/// Below the fastest link of any GPU but above this box's: refused at load,
/// and calibration never runs on it.
#[test]
fn a_rate_above_the_boxs_links_is_refused_at_load_and_by_calibrate() {
    let t = real("p2pbandwidthlatencytest/tinygrad-6x4090-bidirectional.txt");
    // 2 x 150 GB/s each way over a Gen4 x16 link (31.5 GB/s)
    let (bad, line, _) = edit(&t, "50.31", "300.00");
    assert!(import_text("ok-anywhere.txt", &bad).is_ok());
    let p = scratch("box.txt");
    std::fs::write(&p, &bad).unwrap();
    let topo = load_topology(&root().join("topologies/rtx4090-8x-gen4.toml")).unwrap();
    let e = load_measurements(&[p.as_path()], &topo).unwrap_err();
    assert!(matches!(e, CalibError::Impossible { .. }), "{e:?}");
    has(
        &e.to_string(),
        &[
            &format!("box.txt:{line}: impossible measurement"),
            "field `bandwidth_gbps`: 150 GB/s from gpu1 to gpu2",
            "in topology",
        ],
    );
    let opts = CalibrateOptions {
        fit: FitOptions {
            max_iters: 2,
            bootstrap: 0,
            ..FitOptions::default()
        },
        params: select(&["pcie.dllp_overhead".to_string()]).unwrap(),
        log_params: select(
            &NCCL_LOG_SUBSET
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        )
        .unwrap(),
        tlp_checks: 0,
        requested: true,
        force: false,
    };
    let e = calibrate(
        &[p.as_path()],
        &topo,
        "4090",
        &Default::default(),
        &opts,
        &|_, _, _| {},
    )
    .unwrap_err();
    assert!(matches!(e, CalibError::Impossible { .. }), "{e:?}");
}

// ---- B. rows that do not parse --------------------------------------------

#[test]
fn an_nccl_tests_row_that_does_not_parse_names_its_column() {
    let t = real(ZTAN);
    for (from, to, col, want) in [
        (
            "256",
            "abc",
            2,
            "count `abc` (column 2 of the table) is not an element count",
        ),
        (
            "1024",
            "1024x",
            1,
            "size `1024x` (column 1 of the table) is not a byte count",
        ),
        (
            "float",
            "flaot",
            3,
            "type `flaot` (column 3 of the table) is not one nccl-tests prints",
        ),
    ] {
        let row = ROW_1K.replacen(from, to, 1);
        let (bad, line, _) = edit(&t, ROW_1K, &row);
        let e = import_text("ztan.md", &bad).unwrap_err();
        assert!(matches!(e, CalibError::Row { .. }), "{to}: {e:?}");
        let c = row
            .split_whitespace()
            .nth(col - 1)
            .map(|tok| row.find(tok).unwrap() + 1)
            .unwrap();
        has(&e.to_string(), &[&format!("ztan.md:{line}:{c}: "), want]);
    }
}

#[test]
fn a_nul_byte_is_an_error_where_it_is() {
    // in an nccl-tests row: the size used to vanish
    let t = real(ZTAN);
    let row = ROW_1K.replacen("1024 ", "1024\0", 1);
    let (bad, line, _) = edit(&t, ROW_1K, &row);
    let col = row.find('\0').unwrap() + 1;
    let e = import_text("nul.md", &bad).unwrap_err();
    assert!(matches!(e, CalibError::Row { .. }), "{e:?}");
    has(
        &e.to_string(),
        &[&format!("nul.md:{line}:{col}: a NUL byte")],
    );
    // in a p2pBandwidthLatencyTest row label: 40 of 60 records used to vanish
    let t = real("p2pbandwidthlatencytest/tinygrad-6x4090-bidirectional.txt");
    let (bad, line, col) = edit(&t, "     2  50.23", "     2\0 50.23");
    let e = import_text("nul.txt", &bad).unwrap_err().to_string();
    has(&e, &[&format!("nul.txt:{line}:{}: a NUL byte", col + 6)]);
}

#[test]
fn a_p2p_matrix_row_that_does_not_parse_is_an_error() {
    let t = real("p2pbandwidthlatencytest/tinygrad-6x4090-bidirectional.txt");
    // a cut row label: the rest of the matrix used to vanish
    let (bad, line, col) = edit(&t, "     2  50.23", "    2x  50.23");
    let e = import_text("label.txt", &bad).unwrap_err();
    assert!(matches!(e, CalibError::Row { .. }), "{e:?}");
    has(
        &e.to_string(),
        &[
            &format!("label.txt:{line}:{}: `2x` (column 1", col + 4),
            "not a device number",
        ],
    );
    // a control character in a row
    let (bad, line, _) = edit(&t, "     3  50.33", "     3\u{1}  50.33");
    let e = import_text("ctl.txt", &bad).unwrap_err().to_string();
    has(
        &e,
        &[&format!("ctl.txt:{line}:"), "control character (U+0001)"],
    );
    // a matrix whose column header is gone: its rows used to vanish
    let (bad, line, _) = edit(&t, "   D\\D     0", "   D\\D     x");
    let e = import_text("hdr.txt", &bad).unwrap_err().to_string();
    has(
        &e,
        &[
            &format!("hdr.txt:{}:", line + 1),
            "before its column header",
        ],
    );
}

#[test]
fn an_nvbandwidth_row_or_header_that_does_not_parse_is_an_error() {
    let t = real("nvbandwidth/nvbandwidth-50-6xa6000-read-ce.txt");
    let (bad, line, col) = edit(&t, " 3     21.82", " 3x    21.82");
    let e = import_text("nvb.txt", &bad).unwrap_err();
    assert!(matches!(e, CalibError::Row { .. }), "{e:?}");
    has(
        &e.to_string(),
        &[
            &format!("nvb.txt:{line}:{}: `3x` (column 1", col + 1),
            "not a device number",
        ],
    );
    let (bad, line, _) = edit(
        &t,
        "           0         1         2",
        "           0         1        2!",
    );
    let e = import_text("nvb.txt", &bad).unwrap_err().to_string();
    has(
        &e,
        &[&format!("nvb.txt:{line}:"), "`2!` in the column header"],
    );
}

#[test]
fn a_p2pmark_row_that_does_not_parse_is_an_error() {
    let seq = "=== Sequential P2P bandwidth (GB/s) ===\nEach transfer: 64 MB, 20 iterations\n\n Dst->  GPU0     GPU1    \nGPU 0:     -      26.10  \nGPU x:    26.20     -    \n";
    let e = import_text("seq.txt", seq).unwrap_err();
    assert!(matches!(e, CalibError::Row { .. }), "{e:?}");
    has(&e.to_string(), &["seq.txt:6:5: `GPU x:`"]);
    let one = "=== Topology probe: staggered reads by peer distance (GB/s) ===\n=== Single reader, all 1 peers concurrent (GB/s) ===\n\nGPU 0 reads from all peers: 26.00 GB/s\nGPU 1 reads frm all peers: 26.00 GB/s\n";
    let e = import_text("one.txt", one).unwrap_err().to_string();
    has(
        &e,
        &["one.txt:5: GPU 1's row: expected `GPU 1 reads from all peers"],
    );
}

#[test]
fn text_inside_an_nccl_tests_table_is_listed_and_counted() {
    let t = real(ZTAN);
    let (odd, line, _) = edit(
        &t,
        ROW_1K,
        &format!("{ROW_1K}\nlibibverbs: Warning: couldn't load driver 'libmlx4-rdmav34.so'"),
    );
    let i = import_text("odd.md", &odd).unwrap();
    assert_eq!(i.records.len(), 31);
    let s = i
        .skipped
        .iter()
        .find(|s| s.line == line + 1)
        .unwrap_or_else(|| panic!("{:?}", i.skipped));
    assert!(
        s.what.starts_with("text inside the table under line"),
        "{s:?}"
    );
    assert!(s.why.contains("libibverbs"), "{s:?}");
    assert!(
        i.summary()
            .render()
            .contains(&format!("skipped line {}: text inside the table", line + 1))
    );
}

/// The committed outputs still import with the records they had.
#[test]
fn real_outputs_still_import_whole() {
    for (name, n) in [
        (
            "p2pbandwidthlatencytest/tinygrad-6x4090-bidirectional.txt",
            60,
        ),
        ("p2pbandwidthlatencytest/nccl-814-6gpu-reads.txt", 60),
        ("p2pbandwidthlatencytest/tinygrad-44-2x4090.txt", 4),
        ("machines/stelline-asus-esc8000a-e12.md", 36),
        ("machines/stelline-puget-wrx90.md", 6),
        ("nvbandwidth/nvbandwidth-50-6xa6000-read-ce.txt", 30),
        ("nvbandwidth/nvbandwidth-15-8x4090-host-ce.txt", 16),
        ("p2pmark/rtx6kpro-asus-esc8000a-ring-probe.md", 68),
        ("p2pmark/rtx6kpro-collapse-report-probe.txt", 56),
        (ZTAN, 31),
        ("nccl-tests/tinygrad-6x4090-prompt.log", 1),
        ("nccl-tests/nccl-2441-2host-h100nvl-v2.18.log", 1),
    ] {
        let i = import_file(&root().join("tests/fixtures/real").join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(i.records.len(), n, "{name}");
    }
}
