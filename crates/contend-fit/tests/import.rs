//! The importers on real public output (`tests/fixtures/real/`, sources in
//! its README): each parses, its figures are the file's, malformed and
//! truncated input is a located error, messy pastes give the clean
//! records, exports read back, and calibration takes what they give.

use contend_fit::{CalibrateOptions, FitOptions, NCCL_LOG_SUBSET, calibrate, select};
use contend_import::import::{Tool, import_file, import_text, to_jsonl};
use contend_import::measure::{load_measurements, parse_jsonl};
use contend_import::{
    CalibError, import_nccl_tests,
    nccl_tests::{import_nccl_tests_json, nccl_tests_json},
    nccl_tests_table, parse_nccl_tests,
};
use contend_topo::{Topology, load_topology};
use contend_workload::{LaunchMode, Measured, ProbeOp, ResultRecord};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
fn real(name: &str) -> PathBuf {
    root().join("tests/fixtures/real").join(name)
}
fn text(name: &str) -> String {
    std::fs::read_to_string(real(name)).unwrap()
}
fn topo(name: &str) -> Topology {
    load_topology(&root().join("topologies").join(name)).unwrap()
}
fn records(name: &str) -> Vec<ResultRecord> {
    import_file(&real(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .records
        .into_iter()
        .map(|r| r.1)
        .collect()
}
fn find<'a>(rs: &'a [ResultRecord], op: ProbeOp, from: &str, to: &str) -> Vec<&'a ResultRecord> {
    rs.iter()
        .filter(|r| r.algorithm == Measured::of_probe(op) && r.ranks == [from, to])
        .collect()
}

#[test]
fn nccl_tests_logs_read_with_their_figures() {
    // tinygrad's README: a prompt, then one 32 MiB row on 6 RTX 4090
    let i = import_file(&real("nccl-tests/tinygrad-6x4090-prompt.log")).unwrap();
    assert_eq!(i.tool, Tool::NcclTests);
    assert_eq!(i.records.len(), 1);
    let r = &i.records[0].1;
    assert_eq!((r.size_bytes, r.stats.median_ns), (33_554_432, 2_275_100.0));
    assert_eq!(r.extra.import.in_place_us, Some(2282.5));
    assert_eq!(r.extra.timing.busbw_gbps, Some(24.58));
    assert_eq!(r.ranks, ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5"]);
    assert_eq!(
        r.machine.as_ref().unwrap().gpus[5],
        "NVIDIA GeForce RTX 4090"
    );
    assert_eq!(
        r.extra.import.hosts.as_deref(),
        Some(&["tiny14".to_string()][..])
    );
    assert_eq!(r.verified, Some(true));
    assert_eq!(i.noise.get("shell prompt and command"), Some(&1));

    // a 16-rank run over two hosts, 8 B to 8 GiB, behind a quoted mpirun command
    let i = import_file(&real("nccl-tests/ztan-2host-16xh100.md")).unwrap();
    assert_eq!(i.records.len(), 31);
    let last = &i.records[30].1;
    assert_eq!(
        (last.size_bytes, last.stats.median_ns),
        (8_589_934_592, 47_535_000.0)
    );
    assert_eq!(last.extra.import.in_place_us, Some(47743.0));
    assert_eq!(last.ranks.len(), 16);
    let hosts = last.extra.import.hosts.clone().unwrap();
    assert_eq!(hosts, ["ztan-mig-235z", "ztan-mig-gq73"]);
    let s = i.summary();
    assert_eq!((s.gpus, s.hosts.len(), s.distinct_sizes), (Some(16), 2, 31));
    assert!(
        s.render()
            .contains("2 hosts (ztan-mig-235z, ztan-mig-gq73): not one box")
    );

    // nccl-tests 2.18.3 names itself, the collective and NCCL (2.30.5)
    let i = import_file(&real("nccl-tests/nccl-2441-2host-h100nvl-v2.18.log")).unwrap();
    assert_eq!(i.version.as_deref(), Some("2.18.3"));
    let r = &i.records[0].1;
    assert_eq!(r.extra.nccl.nccl_version.as_deref(), Some("2.30.5"));
    assert_eq!(r.extra.import.test.as_deref(), Some("all_reduce_perf"));
    assert_eq!((r.size_bytes, r.stats.median_ns), (500_000, 188_690.0));
}

#[test]
fn a_cut_real_log_is_a_located_error() {
    let e = import_file(&real("nccl-tests/nccl-1530-8x4090-truncated.log"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "nccl-1530-8x4090-truncated.log:17: expected 13 columns as the header on line 15"
        ),
        "{e}"
    );
    // and a cut JSON report names where
    let e = import_nccl_tests_json("cut.json", "{\"version\":2,\"results\":[{\"size\"")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cut.json:1:"), "{e}");
}

/// Noise people paste inside the table: mpirun tags and help aggregation,
/// NCCL INFO lines, fences, prompts, Slurm labels, blank lines.
#[test]
fn messy_pastes_give_the_clean_records() {
    for name in [
        "nccl-tests/tinygrad-6x4090-prompt.log",
        "nccl-tests/ztan-2host-16xh100.md",
    ] {
        let clean = text(name);
        let want = parse_nccl_tests("clean", &clean).unwrap();
        let mut messy = String::from("```text\n$ export NCCL_DEBUG=INFO\n");
        for (k, l) in clean.lines().enumerate() {
            match k % 5 {
                0 => messy.push_str(&format!("[1,0]<stdout>:{l}\n")),
                1 => messy.push_str(&format!("3: {l}\n")),
                _ => messy.push_str(&format!("{l}\n")),
            }
            if k % 3 == 0 {
                messy.push_str("gpu01:1234:1250 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n");
                messy.push_str("[gpu01:01234] 7 more processes have sent help message help-mpi-btl-openib.txt / no active ports found\n");
                messy.push_str("[gpu01:01234] Set MCA parameter \"orte_base_help_aggregate\" to 0 to see all help / error messages\n\n");
            }
        }
        messy.push_str("```\n");
        let got = parse_nccl_tests("messy", &messy).unwrap();
        let strip = |v: Vec<(usize, ResultRecord)>| v.into_iter().map(|r| r.1).collect::<Vec<_>>();
        assert_eq!(strip(got), strip(want), "{name}");
    }
}

#[test]
fn the_old_error_column_and_unhashed_pastes_read() {
    // the header as nccl#583 quotes it (GitHub ate the `#`), rows of that
    // layout as nccl#527 quotes them
    let log = "       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
          64            16     float     sum    163.7    0.00    0.00  2e-07    164.0    0.00    0.00  2e-07
         128            32     float     sum    164.3    0.00    0.00  2e-07    164.0    0.00    0.00  2e-07
 nThread 1 nGpus 8 minBytes 64 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
";
    // rows before the run's nThread line: no rank count
    assert!(
        parse_nccl_tests("old.log", log)
            .unwrap_err()
            .to_string()
            .contains("no rank count")
    );
    let log = format!(
        " nThread 1 nGpus 8 minBytes 64 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n{}",
        log.lines().take(3).collect::<Vec<_>>().join("\n")
    );
    let r = parse_nccl_tests("old.log", &log).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].1.stats.median_ns, 163_700.0);
    assert_eq!(r[0].1.extra.import.max_error, Some(2e-7));
    assert_eq!(r[0].1.ranks.len(), 8);
    // a table whose footer counts out-of-bounds values is not used
    let failed = format!("{log}\n# Out of bounds values : 3 FAILED\n");
    let e = import_text("bad.log", &failed).unwrap_err().to_string();
    assert!(
        e.contains("no measurement contend can use") && e.contains("out-of-bounds"),
        "{e}"
    );
}

#[test]
fn wrong_results_collectives_and_graph_runs() {
    let clean = text("nccl-tests/ztan-2host-16xh100.md");
    // a wrong in-place result on the 1 KiB row
    let bad = clean.replace(
        "        1024           256     float     sum      -1    147.1    0.01    0.01      0    123.1    0.01    0.02      0",
        "        1024           256     float     sum      -1    147.1    0.01    0.01      0    123.1    0.01    0.02      3",
    );
    assert_ne!(bad, clean);
    let i = import_nccl_tests("wrong.log", &bad).unwrap();
    assert_eq!(i.records.len(), 30);
    assert!(
        i.skipped.iter().any(|s| s.line == 39
            && s.why
                .contains("0 wrong element(s) out of place, 3 in place")),
        "{:?}",
        i.skipped
    );
    // a second collective in the same session file is listed, not read
    let two = format!(
        "{clean}\n# Collective test starting: all_gather_perf\n# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 1\n#  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n#  Rank  1 Group  0 Pid   6900 on ztan-mig-235z device  1 [0000:05:00] NVIDIA H100 80GB HBM3\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n          16             2     float    none      -1    20.1    0.00    0.00      0    20.2    0.00    0.00      0\n"
    );
    let i = import_nccl_tests("two.log", &two).unwrap();
    assert_eq!(i.records.len(), 31);
    assert!(
        i.skipped
            .iter()
            .any(|s| s.what.contains("all_gather_perf") && s.why.contains("allreduce only")),
        "{:?}",
        i.skipped
    );
    // `graph: 1` (-G) runs are graph launches
    let g = clean.replace("validation: 1 graph: 0", "validation: 1 graph: 1");
    let r = parse_nccl_tests("g.log", &g).unwrap();
    assert!(r.iter().all(|r| r.1.launch == LaunchMode::Graph));
}

#[test]
fn nccl_tests_text_and_json_round_trip() {
    for name in [
        "nccl-tests/tinygrad-6x4090-prompt.log",
        "nccl-tests/ztan-2host-16xh100.md",
    ] {
        let a: Vec<ResultRecord> = records(name);
        let b: Vec<ResultRecord> = parse_nccl_tests("again", &nccl_tests_table(&a))
            .unwrap()
            .into_iter()
            .map(|r| r.1)
            .collect();
        assert_eq!(b.len(), a.len(), "{name}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (x.size_bytes, x.stats.median_ns, &x.ranks),
                (y.size_bytes, y.stats.median_ns, &y.ranks)
            );
        }
        // JSON: export, import, export again: the same text
        let j1 = nccl_tests_json(&a);
        let back: Vec<ResultRecord> = import_nccl_tests_json("a.json", &j1)
            .unwrap()
            .records
            .into_iter()
            .map(|r| r.1)
            .collect();
        assert_eq!(back.len(), a.len());
        for (x, y) in a.iter().zip(&back) {
            assert_eq!(
                (x.size_bytes, x.stats.median_ns, &x.ranks),
                (y.size_bytes, y.stats.median_ns, &y.ranks),
                "{name}"
            );
            assert_eq!(x.extra.import.in_place_us, y.extra.import.in_place_us);
            assert_eq!(
                x.machine.as_ref().map(|m| &m.gpus),
                y.machine.as_ref().map(|m| &m.gpus)
            );
        }
        assert_eq!(nccl_tests_json(&back), j1, "{name}");
    }
}

#[test]
fn nccl_tests_json_reads_per_iteration_times_and_refuses_what_it_does_not_know() {
    let doc = r#"{"version":2,"start_time":"2025-01-01 00:00:00","args":["./build/all_reduce_perf","-b","1K"],"env":["NCCL_P2P_LEVEL=SYS"],"nccl_version":22703,
"config":{"nthreads":1,"ngpus":2,"minimum_bytes":1024,"maximum_bytes":1024,"step_factor":2,"warmup_iters":5,"iterations":3,"aggregated_iterations":1,"validation":1,"graph":0,"blocking_collectives":"false","per_iter_timing":"true","parallel_init":"false",
"devices":[{"rank":0,"group":0,"pid":1,"hostname":"box","device":0,"device_hex":"0000:01:00","device_info":"NVIDIA GeForce RTX 4090"}]},
"results":[{"size":1024,"count":256,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":10.000000,"alg_bw":0.1,"bus_bw":0.1,"nwrong":0.000000},"out_of_place_per_iter":{"min_us":9.0,"max_us":11.0,"avg_us":10.0,"p50_us":10.0,"p95_us":11.0,"p99_us":11.0,"stdev_us":0.8,"cv_pct":8.0,"times_us":[9.0,10.0,11.0]},"in_place":{"time":10.5,"alg_bw":0.1,"bus_bw":0.1,"nwrong":0.000000},"actual_iterations":3,"experiment_name":""}],
"out_of_bounds":{"count":0,"okay":"true"},"average_bus_bandwidth":{"bandwidth":0.1,"okay":"unchecked"},"errors":[],"end_time":"2025-01-01 00:00:01"}"#;
    let i = import_text("run.json", doc).unwrap();
    assert_eq!(i.tool, Tool::NcclTestsJson);
    let r = &i.records[0].1;
    assert_eq!(r.per_op_ns, [9000.0, 10000.0, 11000.0]);
    assert_eq!(r.stats.median_ns, 10000.0);
    // nccl-tests names one device per process: the other rank stands in
    assert_eq!(r.ranks.len(), 2);
    assert_eq!(r.machine.as_ref().unwrap().gpus.len(), 2);
    assert_eq!(r.extra.nccl.nccl_version.as_deref(), Some("2.27.3"));
    assert_eq!(r.extra.nccl.var("NCCL_P2P_LEVEL"), Some("SYS"));
    let e = import_nccl_tests_json("v9.json", &doc.replace("\"version\":2", "\"version\":9"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("v9.json (field `version`)") && e.contains("versions 1 to 3"),
        "{e}"
    );
    let e = import_nccl_tests_json(
        "t.json",
        &doc.replace("\"time\":10.000000", "\"time\":\"x\""),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("(field `results[0].out_of_place.time`)"), "{e}");
}

#[test]
fn p2p_bandwidth_latency_test_outputs_read_with_their_figures() {
    // tinygrad's README: only the bidirectional matrix, six GPUs
    let r = records("p2pbandwidthlatencytest/tinygrad-6x4090-bidirectional.txt");
    assert_eq!(r.len(), 60); // 30 cells, two concurrent streams each
    let s = find(&r, ProbeOp::CopyPeer, "gpu0", "gpu1");
    // cell (0,1) is 50.11 (its two streams at half), cell (1,0) 50.19
    let mut v: Vec<f64> = s.iter().map(|x| x.bandwidth_gbps.unwrap()).collect();
    v.sort_by(f64::total_cmp);
    assert_eq!(v, [50.11 / 2.0, 50.19 / 2.0]);
    assert!(
        s.iter()
            .all(|x| x.extra.stream.concurrent_streams == Some(2))
    );
    assert_eq!(s[0].size_bytes, 160_000_000);
    // tinygrad#44: 2x 4090, writes 6.60 GB/s each way, P2P-disabled matrices skipped
    let i = import_file(&real("p2pbandwidthlatencytest/tinygrad-44-2x4090.txt")).unwrap();
    let r: Vec<ResultRecord> = i.records.iter().map(|x| x.1.clone()).collect();
    let w = find(&r, ProbeOp::CopyPeer, "gpu1", "gpu0");
    assert!(
        w.iter()
            .any(|x| x.bandwidth_gbps == Some(6.60) && x.extra.stream.concurrent_streams.is_none())
    );
    assert_eq!(
        r[0].machine.as_ref().unwrap().gpus,
        ["NVIDIA GeForce RTX 4090"; 2]
    );
    assert!(i.skipped.iter().any(|s| s.why.contains("P2P disabled")));
    // nccl#814: the --p2p_read matrix: GPU 3's copy engine pulls from GPU 2 at 10.45
    let r = records("p2pbandwidthlatencytest/nccl-814-6gpu-reads.txt");
    let rd = find(&r, ProbeOp::CopyPeerRead, "gpu3", "gpu2");
    assert_eq!(rd.len(), 1);
    assert_eq!(rd[0].bandwidth_gbps, Some(10.45));
    assert_eq!(rd[0].extra.import.direction.as_deref(), Some("read"));
    assert_eq!(rd[0].extra.import.engine.as_deref(), Some("copy"));
    // a cut matrix row is a located error
    let t = text("p2pbandwidthlatencytest/nccl-814-6gpu-reads.txt");
    let cut = t.replace(
        "     5   9.95   9.95  10.46   9.95   9.95 921.29",
        "     5   9.95   9.95",
    );
    let e = import_text("cut.txt", &cut).unwrap_err().to_string();
    assert!(
        e.starts_with("cut.txt:25: row 5 of `Unidirectional P2P=Enabled Bandwidth (P2P Reads)"),
        "{e}"
    );
}

#[test]
fn nvbandwidth_outputs_read_with_their_figures() {
    let i = import_file(&real("nvbandwidth/nvbandwidth-50-6xa6000-read-ce.txt")).unwrap();
    assert_eq!(i.version.as_deref(), Some("v0.8"));
    let r: Vec<ResultRecord> = i.records.iter().map(|x| x.1.clone()).collect();
    assert_eq!(r.len(), 30);
    let x = find(&r, ProbeOp::CopyPeerRead, "gpu0", "gpu3");
    assert_eq!(x[0].bandwidth_gbps, Some(21.95));
    assert_eq!(x[0].size_bytes, 512 << 20);
    assert!(
        x[0].extra
            .import
            .value
            .as_deref()
            .unwrap()
            .contains("assumed")
    );
    let i = import_file(&real("nvbandwidth/nvbandwidth-15-8x4090-host-ce.txt")).unwrap();
    let r: Vec<ResultRecord> = i.records.iter().map(|x| x.1.clone()).collect();
    assert_eq!(
        find(&r, ProbeOp::CopyH2d, "gpu0", "host")[0].bandwidth_gbps,
        Some(25.50)
    );
    assert_eq!(
        find(&r, ProbeOp::CopyD2h, "gpu7", "host")[0].bandwidth_gbps,
        Some(26.83)
    );
    assert_eq!(r[0].size_bytes, 64 << 20);
    assert!(
        i.skipped
            .iter()
            .any(|s| s.what == "host_to_device_bidirectional_memcpy_ce"
                || s.why.contains("bidirectional"))
    );
}

#[test]
fn p2pmark_outputs_read_with_their_figures() {
    let r = records("p2pmark/rtx6kpro-collapse-report-probe.txt");
    assert_eq!(r.len(), 56);
    let plus4 = find(&r, ProbeOp::CopyPeer, "gpu1", "gpu5");
    assert_eq!(plus4[0].bandwidth_gbps, Some(12.75));
    assert_eq!(plus4[0].extra.stream.concurrent_streams, Some(8));
    assert_eq!(plus4[0].size_bytes, 160_000_000);
    let r = records("p2pmark/rtx6kpro-asus-esc8000a-ring-probe.md");
    // 4 + 8 ring streams, each its own rate; 7 edited probe rounds of 8
    let ring: Vec<&ResultRecord> = r
        .iter()
        .filter(|x| x.extra.import.test.as_deref() == Some("ring"))
        .collect();
    assert_eq!(ring.len(), 12);
    let x = find(&r, ProbeOp::CopyPeer, "gpu3", "gpu4");
    assert!(
        x.iter().any(
            |x| x.bandwidth_gbps == Some(37.36) && x.extra.stream.concurrent_streams == Some(8)
        )
    );
    let p4 = find(&r, ProbeOp::CopyPeer, "gpu0", "gpu4");
    assert!(p4.iter().any(|x| x.bandwidth_gbps == Some(14.99)));
    assert_eq!(r.len(), 12 + 7 * 8);
}

#[test]
fn every_importer_round_trips_through_jsonl() {
    for name in [
        "p2pbandwidthlatencytest/tinygrad-6x4090-bidirectional.txt",
        "nvbandwidth/nvbandwidth-50-6xa6000-read-ce.txt",
        "p2pmark/rtx6kpro-asus-esc8000a-ring-probe.md",
        "nccl-tests/ztan-2host-16xh100.md",
    ] {
        let i = import_file(&real(name)).unwrap();
        let j = to_jsonl(std::slice::from_ref(&i)).unwrap();
        let back: Vec<ResultRecord> = parse_jsonl("j", &j)
            .unwrap()
            .into_iter()
            .map(|r| r.1)
            .collect();
        let a: Vec<ResultRecord> = i.records.into_iter().map(|r| r.1).collect();
        assert_eq!(a.len(), back.len(), "{name}");
        for (k, (x, y)) in a.iter().zip(&back).enumerate() {
            assert!(x == y, "{name}: record {k} changed through JSON Lines");
        }
    }
}

#[test]
fn calibration_refuses_other_boxes() {
    // two hosts are not one 16-GPU box
    let e = load_measurements(
        &[real("nccl-tests/ztan-2host-16xh100.md").as_path()],
        &topo("public/genoad24qm32-pm50100-16gpu.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("the run spans 2 hosts (ztan-mig-235z, ztan-mig-gq73)"),
        "{e}"
    );
    // a 4090 log against a PRO 6000 topology
    let e = load_measurements(
        &[real("nccl-tests/tinygrad-6x4090-prompt.log").as_path()],
        &topo("pro6000-8x-2socket.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("measured on NVIDIA GeForce RTX 4090") && e.contains("cannot calibrate another"),
        "{e}"
    );
    // ... on an 8-GPU 4090 topology that names no PCI address it cannot
    // be placed (which 6 of the 8 ran?) ...
    let e = load_measurements(
        &[real("nccl-tests/tinygrad-6x4090-prompt.log").as_path()],
        &topo("rtx4090-8x-gen4.toml"),
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            CalibError::RankMismatch {
                ranks: 6,
                gpus: 8,
                ..
            }
        ),
        "{e:?}"
    );
    // ... and on one whose GPUs carry their PCI addresses it is accepted
    let ms = load_measurements(
        &[real("nccl-tests/tinygrad-6x4090-prompt.log").as_path()],
        &rtx4090_8x_with_pci(),
    )
    .unwrap();
    assert_eq!(ms.len(), 1);
}

/// The shipped 8x RTX 4090 topology with each GPU's PCI address in its
/// note, as `contend topo import` writes it: buses 01, 02, 42, 43, 81, 82,
/// c1, c2 (tinygrad's 6-GPU log ran on 01, 42, 81, 82, c1, c2).
fn rtx4090_8x_with_pci() -> Topology {
    let mut text = std::fs::read_to_string(root().join("topologies/rtx4090-8x-gen4.toml")).unwrap();
    for (i, bus) in ["01", "02", "42", "43", "81", "82", "c1", "c2"]
        .iter()
        .enumerate()
    {
        let node = format!("id = \"gpu{i}\"\nkind = \"gpu\"\n");
        assert!(text.contains(&node), "{node}");
        text = text.replace(&node, &format!("{node}note = \"PCI 0000:{bus}:00.0\"\n"));
    }
    contend_topo::parse_topology("rtx4090-8x-pci.toml", &text).unwrap()
}

fn quick(params: &[&str]) -> CalibrateOptions {
    CalibrateOptions {
        fit: FitOptions {
            max_iters: 8,
            bootstrap: 0,
            ..FitOptions::default()
        },
        params: select(&params.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap(),
        log_params: select(
            &NCCL_LOG_SUBSET
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        )
        .unwrap(),
        tlp_checks: 0,
        requested: !params.is_empty(),
        force: false,
    }
}

#[test]
fn calibration_takes_p2pmark_or_an_nccl_tests_log_alone() {
    // p2pmark's ring and probe of the ASUS box: copy-engine fit points
    let t = topo("public/asus-esc8000a-e13p.toml");
    let f = real("p2pmark/rtx6kpro-asus-esc8000a-ring-probe.md");
    let s = calibrate(
        &[f.as_path()],
        &t,
        "asus",
        &Default::default(),
        &quick(&["pcie.dllp_overhead"]),
        &|_, _, _| {},
    )
    .unwrap();
    assert!(
        s.points
            .iter()
            .filter(|p| p.role == contend_import::measure::Role::Fit)
            .count()
            >= 60
    );
    // a user's nccl-tests log alone: every other size fitted, the rest held out
    let mut log = text("nccl-tests/tinygrad-6x4090-prompt.log");
    // a second size of the same run, so one is held out
    log = log.replace(
        "# Out of bounds values : 0 OK",
        "    67108864      16777216     float     sum      -1   4400.2   15.25   25.42      0   4410.5   15.22   25.36      0\n# Out of bounds values : 0 OK",
    );
    let dir = std::env::temp_dir().join(format!("contend-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("mine.log");
    std::fs::write(&p, log).unwrap();
    let run = |o: &CalibrateOptions| {
        calibrate(
            &[p.as_path()],
            &rtx4090_8x_with_pci(),
            "4090",
            &Default::default(),
            o,
            &|_, _, _| {},
        )
    };
    // one fit size pins one constant, the link efficiency; the model is
    // slower than this box even without any, so the fit ends on its bound
    let e = run(&quick(&[])).unwrap_err();
    assert!(
        matches!(&e, CalibError::OnBound { constants } if constants[0].name == "pcie.dllp_overhead"),
        "{e:?}"
    );
    // --force fits the log's constants anyway, every guard a warning
    let mut forced = quick(&[]);
    forced.force = true;
    let s = run(&forced).unwrap();
    use contend_import::measure::Role;
    assert_eq!(s.points.iter().filter(|p| p.role == Role::Fit).count(), 1);
    assert_eq!(
        s.points.iter().filter(|p| p.role == Role::HeldOut).count(),
        1
    );
    assert!(s.constants.iter().any(|c| c.name == "gpu.launch_eager_ns"));
    assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
}

/// Beside contend's own microbenchmarks a user's nccl-tests log is judged,
/// never fitted on: the probes are the fit points, the log's every size a
/// held-out NCCL point.
#[test]
fn an_nccl_tests_log_beside_the_probes_is_held_out() {
    let t = topo("h200-2x.toml");
    let dir = std::env::temp_dir().join(format!("contend-beside-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // the lent machine's host-to-device copy probes
    let probes: String = std::fs::read_to_string(root().join("calibration/h200x2/probe.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"algorithm\":\"copy-h2d\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(probes.lines().count() >= 3, "{probes}");
    let pf = dir.join("probe.jsonl");
    std::fs::write(&pf, probes).unwrap();
    // a two-GPU all_reduce_perf log of the same GPU model, three sizes
    let log = "\
# nThread 1 nGpus 2 minBytes 1024 maxBytes 1048576 step: 32(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4242 on      box device  0 [0x19] NVIDIA H200
#  Rank  1 Group  0 Pid   4242 on      box device  1 [0x3b] NVIDIA H200
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    10.12    0.10    0.10      0    10.05    0.10    0.10      0
       32768          8192     float     sum      -1    12.40    2.64    2.64      0    12.31    2.66    2.66      0
     1048576        262144     float     sum      -1    25.80   40.64   40.64      0    25.71   40.78   40.78      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 14.4613
#
";
    let lf = dir.join("mine.log");
    std::fs::write(&lf, log).unwrap();
    let s = calibrate(
        &[pf.as_path(), lf.as_path()],
        &t,
        "h200-2x",
        &Default::default(),
        &quick(&["gpu.copy_setup_ns"]),
        &|_, _, _| {},
    )
    .unwrap();
    use contend_import::measure::Role;
    let from = |f: &std::path::Path, role: Role| {
        s.points
            .iter()
            .filter(|p| p.role == role && p.file == f.display().to_string())
            .count()
    };
    assert!(from(&pf, Role::Fit) >= 3);
    assert_eq!(from(&lf, Role::Fit), 0);
    assert_eq!(from(&lf, Role::HeldOut), 3);
    assert!(s.constants.iter().any(|c| c.name == "gpu.copy_setup_ns"));
}
