//! `contend advise --emit`: each kind read back by the rules its consumer
//! reads it with (restated here from the consumer's source, cited in
//! `contend_advise::emit`), and every setting carries contend's version,
//! the constants and predicted times.

use contend_advise::emit::{EmitKind, EmitOptions, Stamp, emit};
use contend_nccl::{NcclEnv, NcclVersion};
use contend_sim::ModelParams;
use contend_topo::{Topology, shipped};
use contend_workload::Placement;

fn topo() -> Topology {
    shipped::get("pro6000-4x-1socket").unwrap().unwrap()
}

fn run(kind: EmitKind) -> String {
    let params = ModelParams::default();
    let sizes: Vec<u64> = (12..=20).map(|p| 1u64 << p).collect(); // 4 KiB .. 1 MiB
    let opts = EmitOptions {
        kind,
        placement: Placement::Peer,
        sizes,
        stamp: Stamp::new(&params, "defaults"),
    };
    emit(&topo(), &params, &opts, &|_, _, _| {}).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

const STAMP: &str = "contend 0.1.0, params defaults #";

#[test]
fn kinds_parse_by_name() {
    for k in EmitKind::ALL {
        assert_eq!(EmitKind::parse(k.name()), Ok(k));
    }
    let e = EmitKind::parse("nccl-tuner").unwrap_err();
    assert!(e.contains("nccl-tuner-csv") && e.contains("vidur"), "{e}");
}

#[test]
fn nccl_tuner_csv_reads_as_the_example_plugin_reads_it() {
    let text = run(EmitKind::NcclTunerCsv);
    let mut by_ranks: std::collections::BTreeMap<i32, Vec<(u64, u64)>> = Default::default();
    let mut last_comment = false;
    for line in text.lines() {
        // fgets into 256 bytes: a longer line would be read in pieces
        assert!(line.len() + 1 < 256, "{} bytes: {line}", line.len());
        if line.starts_with('#') || line.is_empty() {
            last_comment = line.contains(STAMP)
                || line.starts_with("# colltype")
                || line.starts_with("# for ");
            continue;
        }
        assert!(
            last_comment,
            "a config line without its comment line: {line}"
        );
        // strtok(",") and trim spaces/tabs; 8 to 10 fields
        let f: Vec<&str> = line
            .split(',')
            .map(|x| x.trim_matches([' ', '\t']))
            .collect();
        assert!((8..=10).contains(&f.len()), "{line}");
        assert_eq!(f[0], "allreduce");
        let min: u64 = f[1].parse().unwrap();
        let max: u64 = f[2].parse().unwrap();
        assert!(
            [
                "tree",
                "ring",
                "collnet_direct",
                "collnet_chain",
                "nvls",
                "nvls_tree",
                "pat"
            ]
            .contains(&f[3]),
            "{line}"
        );
        assert!(["ll", "ll128", "simple"].contains(&f[4]), "{line}");
        let channels: i32 = f[5].parse().unwrap();
        assert!(
            channels >= 1,
            "channels are written: the plugin's -1 leaves *nChannels = 1"
        );
        assert_eq!(f[6], "1");
        let ranks: i32 = f[7].parse().unwrap();
        by_ranks.entry(ranks).or_default().push((min, max));
        last_comment = false;
    }
    assert_eq!(by_ranks.keys().copied().collect::<Vec<_>>(), vec![2, 3, 4]);
    for (r, ranges) in by_ranks {
        // the first matching line decides: ranges cover every size once
        assert_eq!(ranges[0].0, 0, "{r}");
        assert_eq!(ranges.last().unwrap().1, u64::MAX, "{r}");
        for w in ranges.windows(2) {
            assert_eq!(w[1].0, w[0].1 + 1, "{r}: {ranges:?}");
        }
    }
    // PCIe only: NCCL leaves LL128 off, so no line names it (the plugin would skip it)
    assert!(
        !text
            .lines()
            .any(|l| !l.starts_with('#') && l.contains("ll128")),
        "{text}"
    );
}

#[test]
fn nccl_tuner_table_reads_back_as_the_plugin_reads_it() {
    use contend_nccl::tuner_table::{Collective, parse};
    let text = run(EmitKind::NcclTunerTable);
    assert!(text.lines().next().unwrap().contains(STAMP), "{text}");
    let t = parse("emitted.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(t.stamp().starts_with(STAMP));
    let sizes: Vec<u64> = (12..=20).map(|p| 1u64 << p).collect();
    let csv = run(EmitKind::NcclTunerCsv);
    for k in 2..=4usize {
        let c = t
            .comm(k, 1)
            .unwrap_or_else(|| panic!("no entry for {k} ranks"));
        assert!(c.note().unwrap().contains(STAMP));
        assert!(t.comm(k, 2).is_none());
        // the ranges cover the ladder, one after the other
        let r = c.ranges();
        assert_eq!(r.len(), sizes.len() - 1, "{k}");
        assert_eq!(r[0].min_bytes(), sizes[0]);
        assert_eq!(r.last().unwrap().max_bytes(), *sizes.last().unwrap());
        for w in r.windows(2) {
            assert_eq!(w[1].min_bytes(), w[0].max_bytes() + 1);
        }
        assert!(c.range(Collective::AllReduce, sizes[0] - 1).is_none());
        assert!(
            c.range(Collective::AllReduce, sizes.last().unwrap() + 1)
                .is_none()
        );
        // PCIe only: NCCL leaves LL128 off, so no cost names it
        assert!(
            r.iter()
                .flat_map(|x| x.costs())
                .all(|x| x.protocol() != contend_nccl::tuning::Protocol::Ll128)
        );
        // a base latency for each pair it costs, from the smallest sizes
        assert_eq!(c.base_latencies().len(), r[0].costs().len(), "{k}");
        // the cheapest pair at each ladder size is the one the tuner-csv
        // emitter (same predictions, other reader) writes for that size
        for &z in &sizes[1..] {
            let range = c.range(Collective::AllReduce, z).unwrap();
            let best = range
                .costs()
                .iter()
                .min_by(|a, b| range.time_at(a, z).total_cmp(&range.time_at(b, z)))
                .unwrap();
            let want = format!(
                "{},{}",
                contend_nccl::tuner_table::algorithm_name(best.algorithm()),
                contend_nccl::tuner_table::protocol_name(best.protocol())
            );
            let line = csv
                .lines()
                .filter(|l| !l.starts_with('#'))
                .find(|l| {
                    let f: Vec<&str> = l.split(',').collect();
                    f[7] == k.to_string()
                        && f[1].parse::<u64>().unwrap() <= z
                        && z <= f[2].parse::<u64>().unwrap()
                })
                .unwrap();
            assert!(
                line.contains(&format!(",{want},{},", best.channels())),
                "{k} ranks, {z} B: table's best {want} x{}, csv `{line}`",
                best.channels()
            );
        }
    }
}

#[test]
fn nccl_env_is_variables_ncclenv_accepts() {
    let text = run(EmitKind::NcclEnv);
    assert!(text.lines().next().unwrap().contains(STAMP));
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let (assign, comment) = l.split_once("  # ").unwrap_or_else(|| panic!("{l}"));
        assert!(
            comment.contains(STAMP) && comment.contains("geomean"),
            "{l}"
        );
        let (name, value) = assign
            .strip_prefix("export ")
            .unwrap()
            .split_once('=')
            .unwrap();
        NcclEnv::default()
            .set(name, value)
            .unwrap_or_else(|e| panic!("{l}: {e}"));
    }
    assert!(text.contains("NCCL's defaults:"), "{text}");
}

#[test]
fn nccl_graph_is_read_by_nccls_graph_reader() {
    let text = run(EmitKind::NcclGraph);
    // NCCL's xmlGetNode skips only spaces and newlines, and no <?xml?> prolog
    assert!(!text.contains('\t') && !text.contains("<?"), "{text}");
    for l in text
        .lines()
        .filter(|l| l.contains("<graph ") || l.contains("<channel>"))
    {
        assert!(l.contains("<!-- ") && l.contains(STAMP), "{l}");
    }
    for c in text.split("<!--").skip(1) {
        let body = c.split("-->").next().unwrap();
        assert!(!body.contains("--"), "`--` inside a comment: {body}");
    }
    let g = text.lines().find(|l| l.contains("<graph ")).unwrap();
    for attr in [
        "id=",
        "pattern=",
        "crossnic=",
        "nchannels=",
        "speedintra=",
        "speedinter=",
        "latencyinter=",
        "typeintra=",
        "typeinter=",
        "samechannels=",
    ] {
        assert!(g.contains(attr), "{attr}: {g}");
    }
    let path = std::env::temp_dir().join(format!("contend-emit-test-{}.xml", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let mut env = NcclEnv::default();
    env.set("NCCL_GRAPH_FILE", &path.display().to_string())
        .unwrap();
    let t = topo();
    let plan = contend_nccl::plan(&t, &t.gpus(), &env, NcclVersion::default()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(plan.graph_from_file, "{:?}", plan.notes);
    let emitted: Vec<Vec<usize>> = text
        .lines()
        .filter(|l| l.contains("<channel>"))
        .map(|l| {
            l.split("dev=\"")
                .skip(1)
                .map(|x| usize::from_str_radix(x.split('"').next().unwrap(), 16).unwrap())
                .collect()
        })
        .collect();
    assert_eq!(plan.ring.channels, emitted);
}

/// `# comment` stripped (no `#` inside strings here).
fn python(text: &str) -> String {
    text.lines()
        .map(|l| {
            let a = l.split(" #").next().unwrap_or("");
            a.split_once('#').map_or(a, |x| x.0)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn flashinfer_configs_pass_its_launch_rules() {
    let text = run(EmitKind::Flashinfer);
    let code = python(&text);
    let body = code.split("CONTEND_PCIE_IPC_CONFIGS = {").nth(1).unwrap();
    let mut world = 0usize;
    let mut bounds: Vec<Option<u64>> = vec![];
    let mut worlds = vec![];
    for line in body.lines().map(str::trim) {
        if let Some(w) = line.strip_suffix(": [") {
            world = w.parse().unwrap();
            worlds.push(world);
            bounds.clear();
            continue;
        }
        if line == "]," {
            assert_eq!(
                bounds.last(),
                Some(&None),
                "world {world}: the last entry takes any size"
            );
            continue;
        }
        let Some(rest) = line.strip_prefix('(') else {
            continue;
        };
        let (bound, cfg) = rest.split_once(", ").unwrap();
        let bound = (bound != "None").then(|| bound.parse::<u64>().unwrap());
        if let (Some(Some(prev)), Some(b)) = (bounds.last(), bound) {
            assert!(b > *prev, "ascending: {line}");
        }
        bounds.push(bound);
        if let Some(args) = cfg.strip_prefix("IpcLaunchConfig(") {
            let a: Vec<&str> = args.split(')').next().unwrap().split(", ").collect();
            let (blocks, threads): (u64, u64) = (a[0].parse().unwrap(), a[1].parse().unwrap());
            let variant = a[2].strip_prefix("IpcVariant.").unwrap();
            // pcie_ipc_policy._is_launchable
            assert!([2, 4, 8].contains(&world));
            match variant {
                "COPY_ENGINE_RING" => assert!(
                    world != 2 && (1..=4).contains(&blocks) && threads == 256,
                    "{line}"
                ),
                "COPY_ENGINE_ISLAND" => assert!(world == 8, "{line}"),
                _ => {
                    assert!(
                        (1..=128).contains(&blocks) && (world as u64..=1024).contains(&threads),
                        "{line}"
                    );
                    if world == 2 {
                        assert!(["UNSTAGED", "STAGED"].contains(&variant), "{line}");
                    }
                    if variant == "FLAT_STAGED" {
                        assert_eq!(world, 8);
                    }
                    if world == 8 && variant == "STAGED" {
                        assert_eq!(blocks % 4, 0);
                    }
                }
            }
        } else {
            assert!(cfg.starts_with("None"), "{line}");
        }
    }
    assert_eq!(worlds, vec![2, 4]);
    for l in text.lines().filter(|l| l.trim_start().starts_with('(')) {
        assert!(l.contains(STAMP), "{l}");
    }
}

/// The keys an engine reads, from the committed list taken from its
/// source (`tests/engine_keys/<engine>.txt`, each key cited there): key →
/// the values it takes where the list names them.
fn engine_keys(engine: &str) -> Vec<(String, Vec<String>)> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/engine_keys/{engine}.txt"));
    std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut w = l.split_whitespace();
            let k = w.next().unwrap().to_string();
            let values = w
                .find_map(|t| t.strip_prefix("values="))
                .map(|v| v.split('|').map(str::to_string).collect())
                .unwrap_or_default();
            (k, values)
        })
        .collect()
}

/// Every setting line of an engine's emitted file (not a comment): its key
/// and value (`export K=V`, `--flag`, `key: value`).
fn emitted(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            if let Some(kv) = l.strip_prefix("export ") {
                let (k, v) = kv.split_once('=').expect("export K=V");
                (k.to_string(), v.to_string())
            } else if l.starts_with("--") {
                (l.to_string(), String::new())
            } else {
                let (k, v) = l
                    .split_once(": ")
                    .unwrap_or_else(|| panic!("a setting: {l}"));
                (k.to_string(), v.to_string())
            }
        })
        .collect()
}

fn emit_on(kind: EmitKind, t: &Topology) -> String {
    let params = ModelParams::default();
    let opts = EmitOptions {
        kind,
        placement: Placement::Peer,
        sizes: (12..=20).map(|p| 1u64 << p).collect(),
        stamp: Stamp::new(&params, "defaults"),
    };
    emit(t, &params, &opts, &|_, _, _| {}).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

/// The new user's 8x RTX 5090 box, with the stock driver (no P2P) or a
/// patched one.
fn rtx5090_box(p2p: bool) -> Topology {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/box/rtx5090-8x-2socket.txt");
    let text = std::fs::read_to_string(p).unwrap();
    let t = contend_topo::import::import_topology(&[("box.txt".into(), text)], None).unwrap();
    let toml = t.to_toml();
    let toml = if p2p {
        toml.replace("access = \"none\"", "access = \"all\"")
    } else {
        toml
    };
    contend_topo::parse_topology("box.toml", &toml).unwrap()
}

/// vLLM, SGLang and TensorRT-LLM: every key emitted is one the engine reads
/// (the committed list), and every file says first, per tensor-parallel
/// size, whether each backend runs on the box.
#[test]
fn engine_settings_hold_only_keys_the_engine_reads() {
    let boxes = [
        ("pro6000-4x", topo()),
        ("h200-2x", shipped::get("h200-2x").unwrap().unwrap()),
        ("5090 stock", rtx5090_box(false)),
        ("5090 patched", rtx5090_box(true)),
    ];
    for (kind, list) in [
        (EmitKind::Vllm, "vllm"),
        (EmitKind::Sglang, "sglang"),
        (EmitKind::Trtllm, "trtllm"),
    ] {
        let keys = engine_keys(list);
        for (name, t) in &boxes {
            let text = emit_on(kind, t);
            for (k, v) in emitted(&text) {
                let known = keys.iter().find(|(key, _)| *key == k).unwrap_or_else(|| {
                    panic!("{kind} on {name}: `{k}` is no key {list} reads:\n{text}")
                });
                assert!(
                    known.1.is_empty() || v.is_empty() || known.1.contains(&v),
                    "{kind} on {name}: {k} = {v} is none of {:?}",
                    known.1
                );
            }
            // up front, per tensor-parallel size: does each backend run here
            let sections = text.split("## tensor parallel ").skip(1).count();
            assert_eq!(sections, t.gpus().len() - 1, "{kind} on {name}");
            for sec in text.split("## tensor parallel ").skip(1) {
                assert!(
                    sec.contains(": runs here.") || sec.contains(": does not run here:"),
                    "{kind} on {name}: {sec}"
                );
            }
        }
        // without P2P nothing but NCCL runs, and the file says what acts
        let text = emit_on(kind, &rtx5090_box(false));
        assert!(!text.contains(": runs here."), "{kind}: {text}");
        assert!(text.contains("Only NCCL runs here"), "{kind}");
    }
    // with P2P, vLLM's best at 8 is its opt-in FlashInfer PCIe allreduce
    let text = emit_on(EmitKind::Vllm, &rtx5090_box(true));
    let tp8 = text.split("## tensor parallel 8").nth(1).unwrap();
    assert!(
        tp8.contains("export VLLM_ALLREDUCE_USE_FLASHINFER_PCIE_IPC=1"),
        "{tp8}"
    );
    // and TensorRT-LLM on a PCIe box falls back to NCCL: it says so
    let text = emit_on(EmitKind::Trtllm, &rtx5090_box(true));
    assert!(text.contains("allreduce_strategy: NCCL"), "{text}");
}

#[test]
fn vidur_csv_has_its_columns() {
    let text = run(EmitKind::Vidur);
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        ",time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,time_stats.all_reduce.median,time_stats.all_reduce.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node,contend"
    );
    let mut n = 0;
    for (i, l) in lines.enumerate() {
        let (plain, quoted) = l.split_once(",\"").unwrap();
        assert!(quoted.ends_with('"') && quoted.contains(STAMP), "{l}");
        let f: Vec<&str> = plain.split(',').collect();
        assert_eq!(f.len(), 12, "{l}");
        assert_eq!(f[0].parse::<usize>().unwrap(), i);
        let median: f64 = f[4].parse().unwrap();
        assert!(median > 0.0 && median < 10.0, "milliseconds: {l}");
        assert_eq!(f[9], "all_reduce");
        assert_eq!(f[7], f[10], "num_workers == devices_per_node (one node)");
        assert_eq!(f[11], "4");
        n += 1;
    }
    assert_eq!(n, 3 * 9, "world sizes 2..4 x nine sizes");
}
