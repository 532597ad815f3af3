use super::*;

const SAMPLE: &str = "\
host:1:1 [0] NCCL INFO NCCL version 2.28.3+cuda12.9
host:1:2 [0] NCCL INFO ncclCommInitAll comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x7 - Init START
host:1:3 [1] NCCL INFO ncclCommInitAll comm 0x56 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 1c000 commId 0x7 - Init START
host:1:2 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS
host:1:2 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 2, bw 20.000000/20.000000, type PHB/PIX, sameChannels 1
host:1:2 [0] NCCL INFO  0 : GPU/0-1b000 GPU/0-1c000
host:1:2 [0] NCCL INFO  1 : GPU/0-1b000 GPU/0-1c000
something unrelated
host:1:2 [0] NCCL INFO Channel 00/04 :    0   1
host:1:2 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1
host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
host:1:3 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct
host:1:2 [0] NCCL INFO 4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels, 2 p2p channels per peer
host:1:2 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}
host:1:2 [0] NCCL INFO 8 Bytes -> Algo 1 proto 0 time 10.500000
";

/// A one-rank communicator's trees line as NCCL 2.28.3 printed it on
/// the lent H200 (64 channels, cut by NCCL's 1024-byte line buffer
/// inside entry 47): the whole entries read, the cut one dropped; a
/// malformed entry before the end is still an error.
#[test]
fn a_trees_line_cut_by_nccls_buffer_keeps_its_whole_entries() {
    let mut line = String::from("vm:480:480 [0] NCCL INFO Trees");
    for c in 0..47 {
        line.push_str(&format!(" [{c}] -1/-1/-1->0->-1"));
    }
    line.push_str(" [47] -1/-1/-1->");
    let log = parse("t.log", &format!("{line}\n")).unwrap();
    let t = &log.trees;
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!((t[0].rank, t[0].channels.len()), (0, 47));
    assert!(
        t[0].channels
            .iter()
            .all(|(d, u)| d.is_empty() && u.is_none())
    );
    let bad = "h:1:1 [0] NCCL INFO Trees [0] -1/-1/-1->0 [1] -1/-1/-1->0->-1\n";
    assert!(parse("t.log", bad).is_err());
}

/// What NCCL 2.28.3 printed on the lent H200 when `NCCL_TUNER_PLUGIN`
/// named a file that is no plugin: no plugin loaded, both lines kept.
#[test]
fn nccls_internal_tuner_is_no_plugin_loaded() {
    let text = "\
vm:744:744 [0] NCCL INFO NCCL_TUNER_PLUGIN set by environment to /x/contend
vm:744:744 [0] NCCL INFO TUNER/Plugin: /x/contend: /x/contend: cannot dynamically load position-independent executable
vm:744:744 [0] NCCL INFO TUNER/Plugin: Using internal tuner plugin.
";
    let t = parse("t.log", text).unwrap().tuner;
    assert!(!t.loaded(), "{t:?}");
    assert_eq!(t.failures.len(), 2, "{t:?}");
    assert!(t.failures[1].contains("internal tuner"), "{t:?}");
}

#[test]
fn reads_the_tuner_plugin_lines() {
    // as NCCL 2.28.3 prints them (src/plugin/tuner.cc, tuner_v5.cc)
    let text = "\
host:1:1 [0] NCCL INFO NCCL_TUNER_PLUGIN set by environment to /x/libcontend_tuner.so
host:1:1 [0] NCCL INFO TUNER/Plugin: Using contend (v5)
host:1:1 [0] NCCL INFO Successfully loaded external tuner plugin /x/libcontend_tuner.so
host:1:1 [0] NCCL INFO contend-tuner: tuner ABI v5, communicator 0x1, 1 ranks on 1 node(s)
host:1:1 [0] NCCL INFO contend-tuner: tuner ABI v5, communicator 0x1, 1 ranks on 1 node(s)
host:1:1 [0] file.cc:12 NCCL WARN contend-tuner: malformed table: t.toml:3:1: bad
host:1:1 [0] NCCL INFO TUNER/Plugin: Closing tuner: 'contend'
";
    let log = parse("t.log", text).unwrap();
    let t = &log.tuner;
    assert!(t.loaded());
    assert_eq!((t.name.as_deref(), t.abi), (Some("contend"), Some(5)));
    assert_eq!(t.loaded_from.as_deref(), Some("/x/libcontend_tuner.so"));
    assert!(t.failures.is_empty(), "{t:?}");
    assert_eq!(t.contend.len(), 2, "each line once: {t:?}");
    assert!(t.contend[1].starts_with("malformed table: t.toml:3:1"));
    assert_eq!(log.env[0].0, "NCCL_TUNER_PLUGIN");
    let none = parse(
        "n.log",
        "h:1:1 [0] NCCL INFO TUNER/Plugin: Could not find: /y/nope.so\n",
    )
    .unwrap();
    assert!(!none.tuner.loaded());
    assert_eq!(none.tuner.failures.len(), 1);
    assert!(parse("b.log", "h:1:1 [0] NCCL INFO TUNER/Plugin: Using x\n").is_err());
    assert!(parse("e.log", SAMPLE).unwrap().tuner.is_empty());
}

#[test]
fn reads_every_kind_of_line() {
    let log = parse("sample.log", SAMPLE).unwrap();
    assert_eq!(log.version.as_ref().unwrap().minor, 28);
    assert_eq!(log.ranks.len(), 2);
    assert_eq!(log.ranks[1].bus_id.as_deref(), Some("1c000"));
    assert_eq!(log.env, vec![("NCCL_P2P_LEVEL".into(), "SYS".into())]);
    let g = log.ring_graph().unwrap();
    assert_eq!(
        (g.n_channels, g.bw_intra, g.type_intra),
        (2, 20.0, PathType::Phb)
    );
    assert_eq!(g.channels.len(), 2);
    assert_eq!(log.rings[0].order, vec![0, 1]);
    assert_eq!(log.rings[0].n_channels, 4);
    assert_eq!(log.trees[0].channels[0], (vec![1], None));
    assert!(matches!(
        &log.connections[0].transport,
        LogTransport::P2p { mechanism, read: true, .. } if mechanism == "CUMEM"
    ));
    assert_eq!(log.connections[1].transport.kind(), "SHM");
    assert_eq!(log.channel_counts.unwrap().coll, 4);
    assert_eq!(log.calls[0].channels, Some((0, 3)));
    assert_eq!(log.calls[1].algorithm, Algorithm::Ring);
    assert_eq!(log.calls[1].protocol, Protocol::Ll);
}

#[test]
fn reads_both_model_table_formats() {
    // 2.19+ (src/graph/tuning.cc v2.28.9-1): blocks of three algorithms.
    let new = "\
h:1:1 [0] NCCL INFO   Algorithm   |                            Tree                              Ring                   CollNetDirect |
h:1:1 [0] NCCL INFO   Protocol    |             LL |          LL128 |         Simple |             LL |          LL128 |         Simple |             LL |          LL128 |         Simple |
h:1:1 [0] NCCL INFO  Max NThreads |            512 |            640 |            512 |            512 |            640 |            256 |            640 |            640 |            640 |
h:1:1 [0] NCCL INFO     Broadcast |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |    10.5/   6.0 |    21.0/   0.0 |    25.6/  12.0 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |
h:1:1 [0] NCCL INFO     AllReduce |    20.8/   1.2 |    40.6/   0.0 |    64.4/   4.6 |    20.6/   2.9 |    49.0/   0.0 |    88.2/   5.7 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |
h:1:1 [0] NCCL INFO Enabled NCCL Func/Proto/Algo Matrix:
h:1:1 [0] NCCL INFO     AllReduce |        1         0         1  |             1              1              0 |
";
    let m = parse("new.log", new).unwrap().model.unwrap();
    assert_eq!(m.entries.len(), 9);
    assert_eq!(m.entries[5], (Algorithm::Ring, Protocol::Simple, 88.2, 5.7));
    // 2.18 and older: one line of Tree/Ring × protocols.
    let old = "\
h:1:1 [0] NCCL INFO Latency/AlgBw | Tree/    LL | Tree/ LL128 | Tree/Simple | Ring/    LL | Ring/ LL128 | Ring/Simple |
h:1:1 [0] NCCL INFO     AllReduce |   14.4/  3.6|   19.4/  8.4|  100.0/ 10.8|    5.4/  3.0|    8.6/ 11.2|   21.6/ 12.0|
";
    let m = parse("old.log", old).unwrap().model.unwrap();
    assert_eq!(m.entries[0], (Algorithm::Tree, Protocol::Ll, 14.4, 3.6));
    assert_eq!(
        m.entries[5],
        (Algorithm::Ring, Protocol::Simple, 21.6, 12.0)
    );
}

#[test]
fn malformed_decision_lines_are_located() {
    let bad = "a\nh:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> x[1] via P2P/IPC\n";
    let e = parse("bad.log", bad).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.to_string().starts_with("bad.log:2: rank `x`"), "{e}");
    let bad = "h:1:1 [0] NCCL INFO Pattern 4, crossNic 0, nChannels two\n";
    assert!(parse("bad.log", bad).is_err());
}

/// A topology link whose `]` comes before its `[` (the fuzzer's
/// `SYS...][10.0]`) is an error at its line, not a panic.
#[test]
fn a_topology_link_with_brackets_out_of_order_is_an_error() {
    let bad = "h:1:1 [0] NCCL INFO === System : maxBw 24.0 totalBw 24.0 ===\nh:1:1 [0] NCCL INFO CPU/0 (1/1/2)\nh:1:1 [0] NCCL INFO + SYS...][10.0] - CPU/0\n";
    let got = std::panic::catch_unwind(|| parse("bad.log", bad));
    assert!(got.is_ok(), "the parser panicked");
}
