//! `contend advise --emit`: each kind read back by the rules its consumer
//! reads it with (restated here from the consumer's source, cited in
//! `contend_calib::emit`), and every setting carries contend's version,
//! the constants and predicted times.

use contend_calib::emit::{EmitKind, EmitOptions, Stamp, emit};
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

/// Lines holding a setting (not blank, not only a comment, not only braces).
fn settings<'a>(text: &'a str, comment: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| {
            let t = l.trim();
            !t.is_empty()
                && !t.starts_with(comment)
                && t.chars().any(|c| c.is_ascii_digit())
                && !t.starts_with("KB, MB")
        })
        .collect()
}

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
fn vllm_reads_a_capability_then_world_sizes() {
    let text = run(EmitKind::Vllm);
    for l in settings(&text, "#") {
        if l.trim_start().starts_with(|c: char| c.is_ascii_digit()) {
            assert!(l.contains(STAMP), "{l}");
        }
    }
    let code = python(&text);
    let body = code
        .split("CUSTOM_ALL_REDUCE_MAX_SIZES = {")
        .nth(1)
        .unwrap();
    // RTX PRO 6000 Blackwell: capability 12.0
    let inner = body
        .split("\"12.0\": {")
        .nth(1)
        .expect("capability key")
        .split('}')
        .next()
        .unwrap();
    let mut worlds = vec![];
    for entry in inner.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let (k, v) = entry.split_once(':').unwrap();
        let k: usize = k.trim().parse().unwrap();
        let v: u64 = v.trim().parse().unwrap();
        assert!([2, 4, 6, 8].contains(&k) && v.is_multiple_of(16), "{entry}");
        worlds.push(k);
    }
    assert_eq!(worlds, vec![2, 4]);
    assert!(text.contains("more than two PCIe-only GPUs"));
}

#[test]
fn sglang_reads_three_thresholds_per_world() {
    let text = run(EmitKind::Sglang);
    let code = python(&text);
    for map in ["graph_map = {", "eager_map = {"] {
        let body = code.split(map).nth(1).unwrap().split('}').next().unwrap();
        let mut worlds = vec![];
        for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (k, v) = line.split_once(": (").unwrap();
            let th: Vec<u64> = v
                .trim_end_matches("),")
                .trim_end_matches(')')
                .split(',')
                .map(|x| x.trim().parse().unwrap())
                .collect();
            assert_eq!(th.len(), 3, "{line}");
            assert!(th[0] <= th[1] && th[1] <= th[2], "tried in order: {line}");
            worlds.push(k.parse::<usize>().unwrap());
        }
        assert_eq!(worlds, vec![2, 3, 4], "{map}");
    }
    for l in text
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
    {
        assert!(l.contains(STAMP) && l.contains(" us"), "{l}");
    }
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

#[test]
fn trtllm_table_has_its_shape_and_strategies() {
    let text = run(EmitKind::Trtllm);
    assert!(
        text.contains("AllReduceBestStrategyTableSM100 = {"),
        "sm_120 maps to the SM100 table"
    );
    // nested braces: [tp][fusion][hidden][tokens]
    let body = text.split("= {").nth(1).unwrap();
    let code: String = body
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut depth = 0;
    let mut shape = [0usize; 4];
    let mut row = String::new();
    let mut rows = 0;
    for c in code.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth <= 3 {
                    shape[depth - 1] += 1;
                }
                row.clear();
            }
            '}' => {
                if depth == 3 {
                    let cells: Vec<u8> =
                        row.split(',').map(|x| x.trim().parse().unwrap()).collect();
                    assert_eq!(cells.len(), 15);
                    assert!(cells.iter().all(|c| [0, 4, 5].contains(c)), "{row}");
                    rows += 1;
                }
                depth = depth.saturating_sub(1);
            }
            _ if depth == 3 => row.push(c),
            _ => {}
        }
    }
    // the outer `{` was split off: shape counts TP blocks, fusion blocks, rows
    assert_eq!(shape[0], 2, "TP 2 and 4");
    assert_eq!(shape[1], 2 * 4, "four fusion ops per TP");
    assert_eq!(rows, 2 * 4 * 7, "seven hidden sizes per fusion op");
    for l in text.lines().filter(|l| {
        l.trim_start().starts_with("{4")
            || l.trim_start().starts_with("{0")
            || l.trim_start().starts_with("{5")
    }) {
        assert!(l.contains("// ") && l.contains(STAMP), "{l}");
    }
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
