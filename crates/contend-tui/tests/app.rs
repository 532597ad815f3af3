//! Drives the app with key events and snapshots the rendered screen
//! (ratatui `TestBackend` + insta), with simulations run inline.

use contend_sim::ModelParams;
use contend_topo::{Bytes, shipped};
use contend_tui::{
    App, AppOptions, Focus, InlineWorker, JobError, JobKind, Selected, Tab, ThreadWorker, Worker,
    WorkerMsg, ui,
};
use contend_workload::{
    Algorithm, LaunchMode, ResultRecord, Scenario, Source, Stats, Workload, default_scenario,
};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::{Terminal, backend::TestBackend};
use std::time::{Duration, Instant};

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    let m = if c.is_ascii_uppercase() {
        KeyModifiers::SHIFT
    } else {
        KeyModifiers::NONE
    };
    KeyEvent::new(KeyCode::Char(c), m)
}

fn render(app: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::draw(app, f)).unwrap();
    t.backend().to_string()
}

fn scenario(stem: &str) -> Scenario {
    default_scenario(Some(shipped::get(stem).unwrap().unwrap())).unwrap()
}

/// A shorter sweep than the app's default keeps the tests quick.
fn opts() -> AppOptions {
    AppOptions {
        sweep_sizes: [1u64 << 10, 8 << 10, 64 << 10, 512 << 10, 4 << 20]
            .map(Bytes)
            .to_vec(),
        fidelity: None,
    }
}

fn paused(stem: &str) -> App {
    App::with_options(
        scenario(stem),
        ModelParams::default(),
        vec![],
        Box::new(InlineWorker::paused()),
        opts(),
    )
}

fn ran(stem: &str, measurements: Vec<ResultRecord>) -> App {
    let mut app = App::with_options(
        scenario(stem),
        ModelParams::default(),
        measurements,
        Box::new(InlineWorker::new()),
        opts(),
    );
    app.poll_worker();
    app
}

#[test]
fn startup_on_every_shipped_topology() {
    for (stem, _) in shipped::SHIPPED {
        let app = paused(stem);
        assert!(
            app.is_busy(),
            "{stem}: the default scenario starts running at once"
        );
        insta::assert_snapshot!(format!("startup_{stem}"), render(&app, 120, 40));
    }
}

#[test]
fn startup_at_80x24() {
    let s = render(&paused("pro6000-8x-2socket"), 80, 24);
    // the tree does not fit: the socket without the selection is folded
    // to one line, so both sockets are on screen
    assert!(
        s.contains("│socket 0 ") && s.contains("│socket 1 ▸ 4 GPUs"),
        "{s}"
    );
    insta::assert_snapshot!(s);
}

#[test]
fn at_80x24_the_selected_socket_opens_and_the_other_folds() {
    let mut app = paused("pro6000-8x-2socket");
    // socket 0, rc0, gpu0-3, mem0: the seventh step down is socket 1
    for _ in 0..7 {
        app.handle_key(key(KeyCode::Down));
    }
    assert_eq!(app.selected(), Selected::Socket(1));
    let s = render(&app, 80, 24);
    assert!(s.contains("│socket 0 ▸ 4 GPUs"), "{s}");
    assert!(s.contains("gpu4") && s.contains("gpu7"), "{s}");
    assert!(!s.contains("│ ├─ gpu0"), "{s}");
}

#[test]
fn the_timeline_window_is_the_allreduce_it_names() {
    let mut app = ran("pro6000-8x-2socket", vec![]);
    app.handle_key(ch('4'));
    let s = render(&app, 120, 40);
    // the right pane's rows of ranks: `│gpu0    LLLBB◂◂...·· │`
    let rows: Vec<&str> = s
        .lines()
        .filter_map(|l| l.split("││").nth(1))
        .filter(|r| r.starts_with("gpu"))
        .collect();
    assert_eq!(rows.len(), 8, "{s}");
    let cols = |r: &str| r.trim_end_matches(['│', '"']).chars().count() - 5;
    let last_work = |r: &str| {
        r.trim_end_matches(['│', '"'])
            .chars()
            .skip(5)
            .collect::<Vec<_>>()
            .iter()
            .rposition(|c| *c != ' ' && *c != '·')
            .unwrap_or(0)
    };
    // the last rank done ends in the last column: the header's span is the
    // drawn one, not one stretched by the compute gap after it
    let end = rows.iter().map(|r| last_work(r)).max().unwrap();
    assert!(
        end + 2 >= cols(rows[0]),
        "bars end at column {end} of {}: {s}",
        cols(rows[0])
    );
}

#[test]
fn eager_and_graph_records_are_two_points_and_ncclp2p_paths_never_mix() {
    use contend_tui::{NcclPath, Shape};
    use contend_workload::LaunchMode;
    let gapless = |mut r: ResultRecord, launch: LaunchMode| {
        r.launch = launch;
        r.extra.timing.gap_and_skew = Some(false);
        r
    };
    let mut off = gapless(
        measured("nccl", Source::Nccl, "verify-step", 43008, 14_000.0),
        LaunchMode::Eager,
    );
    off.extra
        .nccl
        .env
        .insert("NCCL_P2P_DISABLE".into(), "1".into());
    let m = vec![
        gapless(
            measured("one-shot-pull", Source::Hw, "verify-step", 43008, 7_500.0),
            LaunchMode::Eager,
        ),
        gapless(
            measured("one-shot-pull", Source::Hw, "verify-step", 43008, 5_500.0),
            LaunchMode::Graph,
        ),
        gapless(
            measured("nccl", Source::Nccl, "verify-step", 43008, 10_000.0),
            LaunchMode::Eager,
        ),
        off,
    ];
    let app = ran("pro6000-8x-2socket", m);
    let sim = app.results().sim.as_ref().unwrap();
    let osp = sim.row(Algorithm::OneShotPull).unwrap();
    // two points, each its own record's figure (not their mean), each over
    // a simulation of its own launch mode without the scenario's 20 us gap
    assert_eq!(osp.measured.len(), 2, "{:?}", osp.measured);
    let by = |l: LaunchMode| osp.measured.iter().find(|f| f.variant.launch == l).unwrap();
    let (e, g) = (by(LaunchMode::Eager), by(LaunchMode::Graph));
    assert_eq!((e.ns, g.ns), (7_500.0 * 122.0, 5_500.0 * 122.0));
    assert!(e.rerun && g.rerun && e.variant.shape == Shape::Gapless);
    let (es, gs) = (e.sim_ns.unwrap(), g.sim_ns.unwrap());
    assert!(
        gs < es && es < osp.time_ns,
        "graph {gs} eager {es} gapped {}",
        osp.time_ns
    );
    // NCCL over P2P and NCCL with P2P disabled: two points, two simulations
    let nccl = sim.row(Algorithm::Nccl).unwrap();
    assert_eq!(nccl.measured.len(), 2, "{:?}", nccl.measured);
    let path = |p: NcclPath| {
        nccl.measured
            .iter()
            .find(|f| f.variant.nccl == Some(p))
            .unwrap()
    };
    let (p2p, staged) = (path(NcclPath::P2p), path(NcclPath::P2pDisabled));
    assert_eq!((p2p.ns, staged.ns), (10_000.0 * 122.0, 14_000.0 * 122.0));
    // each over its own re-run (on this machine NCCL's replica takes SHM
    // between the sockets either way, so the two simulations may agree)
    assert!(p2p.rerun && staged.rerun && p2p.sim_ns.is_some() && staged.sim_ns.is_some());
    let s = render(&app, 120, 40);
    for label in ["hw eager ", "hw graph ", "hw eager p2p-off", "no gap"] {
        assert!(s.contains(label), "{label}: {s}");
    }
}

#[test]
fn a_record_of_the_scenarios_own_shape_needs_no_rerun() {
    // the scenario's gap and skew, eager: laid over the row itself
    let mut r = measured("one-shot-pull", Source::Hw, "verify-step", 43008, 60_000.0);
    r.extra.timing.gap_and_skew = Some(true);
    let app = ran("pro6000-8x-2socket", vec![r]);
    let sim = app.results().sim.as_ref().unwrap();
    let row = sim.row(Algorithm::OneShotPull).unwrap();
    assert_eq!(row.measured.len(), 1);
    assert!(!row.measured[0].rerun);
    assert_eq!(row.measured[0].sim_ns, Some(row.time_ns));
}

#[test]
fn selecting_a_link_shows_its_parameters() {
    let mut app = paused("pro6000-8x-2socket");
    // socket 0 -> rc0 -> gpu0, then the link above gpu0.
    for k in [KeyCode::Down, KeyCode::Down, KeyCode::Right] {
        app.handle_key(key(k));
    }
    let topo = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
    assert_eq!(app.selected(), Selected::Link(topo.links()[0].idx));
    let screen = render(&app, 120, 40);
    assert!(screen.contains("gpu0 ↔ rc0 · pcie link"), "{screen}");
    insta::assert_snapshot!(screen);
    // Left goes back to the node.
    app.handle_key(key(KeyCode::Left));
    assert_eq!(app.selected(), Selected::Node(topo.lookup("gpu0").unwrap()));
}

#[test]
fn the_cpu_link_is_selectable_at_the_end_of_the_tree() {
    let mut app = paused("pro6000-8x-2socket");
    app.handle_key(key(KeyCode::End));
    let topo = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
    let xgmi = topo
        .links()
        .iter()
        .find(|l| l.kind.name() == "cpu")
        .unwrap()
        .idx;
    assert_eq!(app.selected(), Selected::Link(xgmi));
    assert!(render(&app, 120, 40).contains("rc0 ↔ rc1 · cpu link"));
}

#[test]
fn results_after_a_run() {
    let mut app = ran("pro6000-8x-2socket", vec![]);
    assert!(!app.is_busy());
    let screen = render(&app, 120, 40);
    assert!(screen.contains("★ winner: "), "{screen}");
    insta::assert_snapshot!("results_times_120x40", screen);
    insta::assert_snapshot!("results_times_80x24", render(&app, 80, 24));
    app.handle_key(ch('2'));
    insta::assert_snapshot!("results_sweep_120x40", render(&app, 120, 40));
    app.handle_key(ch('3'));
    insta::assert_snapshot!("results_links_120x40", render(&app, 120, 40));
    app.handle_key(ch('4'));
    insta::assert_snapshot!("results_timeline_winner_120x40", render(&app, 120, 40));
}

#[test]
fn changing_the_algorithm() {
    let mut app = ran("pro6000-8x-2socket", vec![]);
    // The algorithm set: all 12 -> custom kernels 9 (the rings and nccl drop out), re-run.
    app.handle_key(ch('a'));
    assert!(app.is_busy());
    let running = render(&app, 120, 40);
    assert!(running.contains("custom kernels 9"), "{running}");
    app.poll_worker();
    assert!(!app.is_busy());
    let sim = app_sim_algs(&app);
    assert!(
        !sim.contains(&Algorithm::RingLl) && sim.len() == 9,
        "{sim:?}"
    );
    insta::assert_snapshot!("algorithm_set_custom_kernels", render(&app, 120, 40));
    // The algorithm shown in the timeline and on the tree: step to the next one.
    app.handle_key(ch('4'));
    app.handle_key(ch(']'));
    let shown = app.shown_algorithm();
    assert!(shown.is_some());
    insta::assert_snapshot!("timeline_next_algorithm", render(&app, 120, 40));
}

fn app_sim_algs(app: &App) -> Vec<Algorithm> {
    // Drawn bars list the algorithms of the latest result.
    let screen = render(app, 120, 40);
    Algorithm::ALL
        .iter()
        .copied()
        .filter(|a| screen.contains(&format!("{:<13}", a.name())))
        .collect()
}

#[test]
fn scenario_pane_changes_values_with_arrows() {
    let mut app = paused("pro6000-8x-2socket");
    app.handle_key(key(KeyCode::Tab));
    assert!(render(&app, 120, 40).contains("◂verify step 122×42 KiB▸"));
    app.handle_key(key(KeyCode::Up));
    let s = render(&app, 120, 40);
    assert!(s.contains("◂allreduce 1 KiB▸"), "{s}");
    app.handle_key(key(KeyCode::Right));
    app.handle_key(key(KeyCode::Up));
    assert!(render(&app, 120, 40).contains("◂socket 0 (4)▸"));
    insta::assert_snapshot!(render(&app, 120, 40));
}

#[test]
fn tlp_runs_on_a_key_press() {
    let mut app = paused("pro6000-4x-1socket");
    assert!(render(&app, 120, 40).contains("fidelity flow"));
    app.handle_key(ch('t'));
    assert!(render(&app, 120, 40).contains("TLP (slow)"));
}

#[test]
fn help_overlay_opens_and_closes() {
    let mut app = paused("pro6000-8x-2socket");
    app.handle_key(ch('?'));
    let s = render(&app, 80, 24);
    assert!(s.contains(" Help "));
    insta::assert_snapshot!(s);
    app.handle_key(key(KeyCode::Esc));
    assert!(!render(&app, 80, 24).contains(" Help "));
    app.handle_key(ch('q'));
    assert!(app.should_quit());
}

fn every_key() -> Vec<KeyEvent> {
    let mut v: Vec<KeyEvent> = (0x20u8..0x7f).map(|b| ch(b as char)).collect();
    for k in [
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::Tab,
        KeyCode::BackTab,
        KeyCode::Enter,
        KeyCode::Esc,
        KeyCode::Backspace,
        KeyCode::Delete,
        KeyCode::Insert,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::F(1),
        KeyCode::F(5),
        KeyCode::Null,
    ] {
        v.push(key(k));
    }
    v
}

#[test]
fn no_panic_on_any_key_at_80x24_and_20x5() {
    for stem in ["pro6000-8x-2socket", "h200-1x", "pro6000-8x-2switch"] {
        // One real result first, so every view has something to draw; then
        // the worker pauses so the keys that re-run stay cheap.
        let worker = InlineWorker::new();
        let pause = worker.pause_handle();
        let mut app = App::with_options(
            scenario(stem),
            ModelParams::default(),
            vec![],
            Box::new(worker),
            opts(),
        );
        app.poll_worker();
        pause.set(true);
        for focus_round in 0..3 {
            for k in every_key() {
                if k.code == KeyCode::Char('q') || k.code == KeyCode::Char('?') {
                    continue;
                }
                app.handle_key(k);
                for (w, h) in [(80, 24), (20, 5), (120, 40), (61, 16)] {
                    render(&app, w, h);
                }
            }
            let _ = focus_round;
            app.handle_key(key(KeyCode::Tab));
        }
        // Help and quit last.
        app.handle_key(ch('?'));
        render(&app, 20, 5);
        render(&app, 80, 24);
        app.handle_key(ch('q'));
        assert!(app.should_quit());
    }
}

#[test]
fn resize_keeps_drawing() {
    let app = ran("pro6000-8x-2socket", vec![]);
    for (w, h) in [
        (80, 24),
        (200, 60),
        (60, 16),
        (59, 15),
        (1, 1),
        (0, 0),
        (300, 10),
        (10, 300),
    ] {
        // (TestBackend cannot print a 0×0 buffer, so draw without printing.)
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| ui::draw(&app, f)).unwrap();
    }
    insta::assert_snapshot!("too_small_20x5", render(&app, 20, 5));
}

fn measured(alg: &str, source: Source, workload: &str, size: u64, ns: f64) -> ResultRecord {
    ResultRecord {
        source,
        scenario: "hw".into(),
        topology: "pro6000-8x-2socket".into(),
        workload: workload.parse().unwrap(),
        algorithm: alg.parse().unwrap(),
        placement: None,
        fidelity: None,
        launch: contend_workload::LaunchMode::Eager,
        ranks: (0..8).map(|i| format!("gpu{i}")).collect(),
        size_bytes: size,
        total_ns: ns * 122.0,
        per_op_ns: vec![ns],
        stats: Stats {
            count: 1,
            median_ns: ns,
            p10_ns: ns,
            p90_ns: ns,
            p99_ns: ns,
            min_ns: ns,
            max_ns: ns,
        },
        bandwidth_gbps: None,
        verified: Some(true),
        events: None,
        wall_ns: None,
        busiest_link: None,
        machine: None,
        extra: Default::default(),
    }
}

#[test]
fn measurements_sit_on_the_same_charts() {
    let m = [
        measured("one-shot-pull", Source::Hw, "verify-step", 43008, 60_000.0),
        measured("nccl", Source::Nccl, "verify-step", 43008, 30_000.0),
        measured("two-shot-push", Source::Hw, "allreduce", 64 << 10, 25_000.0),
        measured("nccl", Source::Nccl, "allreduce", 4 << 20, 900_000.0),
    ];
    // Through the JSON Lines reader, as from --measurements.
    let text: String = m
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    let m = contend_tui::parse_measurements("m.jsonl", &text).unwrap();
    let mut app = ran("pro6000-8x-2socket", m);
    let s = render(&app, 120, 40);
    // NCCL's measured verify step sits under the simulated `nccl` row, its variant run
    let lines: Vec<&str> = s.lines().collect();
    let row = lines
        .iter()
        .position(|l| l.contains(" nccl ") && l.contains('█'))
        .unwrap_or_else(|| panic!("no nccl row in {s}"));
    assert!(lines[row + 1].contains("hw eager"), "{s}");
    assert!(!s.contains("nccl (hw)"), "{s}");
    insta::assert_snapshot!("measured_times", s);
    app.handle_key(ch('2'));
    insta::assert_snapshot!("measured_sweep", render(&app, 120, 40));
    app.handle_key(ch('m'));
    assert!(!render(&app, 120, 40).contains("█ measured"));
}

#[test]
fn stale_results_are_dropped() {
    let mut app = paused("pro6000-8x-2socket");
    app.apply(WorkerMsg::Done {
        kind: JobKind::Scenario,
        id: 999,
        result: Err(JobError::Panicked("old".into())),
    });
    assert!(app.is_busy());
    assert!(!render(&app, 120, 40).contains("old"));
}

#[test]
fn focus_cycles_and_tabs_switch() {
    let mut app = paused("pro6000-8x-2socket");
    app.handle_key(key(KeyCode::BackTab));
    app.handle_key(key(KeyCode::Right));
    let s = render(&app, 120, 40);
    assert!(s.contains("[2 Size sweep]"), "{s}");
    let _ = (Focus::Results, Tab::Sweep);
}

#[test]
fn the_thread_worker_runs_jobs_off_the_caller_and_reports_progress() {
    let mut w = ThreadWorker::start().unwrap();
    let sc = std::sync::Arc::new(scenario("pro6000-4x-1socket"));
    let job = |id| contend_tui::Job {
        id,
        kind: JobKind::Scenario,
        scenario: sc.clone(),
        params: std::sync::Arc::new(ModelParams::default()),
        fidelity: contend_workload::Fidelity::Flow,
        variant_runs: vec![],
    };
    // A superseded job never reports done; the newest does.
    w.submit(job(1));
    w.submit(job(2));
    let t = Instant::now();
    let mut done = vec![];
    let mut progress = 0;
    while done.iter().all(|id| *id != 2) && t.elapsed() < Duration::from_secs(120) {
        for m in w.poll() {
            match m {
                WorkerMsg::Done { id, result, .. } => {
                    assert!(result.is_ok());
                    done.push(id);
                }
                WorkerMsg::Progress { .. } => progress += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(done.last(), Some(&2));
    assert!(progress > 0);
}

/// The committed H200 pair's records, as `--params
/// calibration/h200x2/params.toml` loads them: one-shot-pull's eager and
/// graph verify steps are two points (923.8 us and 679.6 us, not their
/// 801.7 us mean), NCCL's P2P and P2P-disabled records are apart.
#[test]
fn the_h200_pairs_records_are_laid_over_like_with_like() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../calibration/h200x2");
    let mut m = vec![];
    for f in ["hw.jsonl", "nccl.jsonl", "nccl-p2p-disabled.jsonl"] {
        m.extend(contend_tui::load_measurements(&dir.join(f)).unwrap());
    }
    let app = ran("h200-2x", m);
    let sim = app.results().sim.as_ref().unwrap();
    let row = sim.row(Algorithm::OneShotPull).unwrap();
    let mut ns: Vec<f64> = row
        .measured
        .iter()
        .map(|f| (f.ns / 100.0).round() / 10.0)
        .collect();
    ns.sort_by(f64::total_cmp);
    assert_eq!(ns, [679.6, 923.8], "{:?}", row.measured);
    let nccl = sim.row(Algorithm::Nccl).unwrap();
    // eager and graph, each with P2P and without
    assert_eq!(nccl.measured.len(), 4, "{:?}", nccl.measured);
    let s = render(&app, 120, 40);
    assert!(
        !s.contains("801.") && s.contains("923.78 us") && s.contains("679.55 us"),
        "{s}"
    );
}
/// The verify step's own fields change the scenario that runs: hidden
/// size, tokens and layers step the allreduce's size and count, and the
/// launch control turns every algorithm to a CUDA graph.
#[test]
fn the_verify_steps_fields_change_the_scenario_that_runs() {
    let mut app = paused("pro6000-8x-2socket");
    let verify = |app: &App| match app.current_scenario().unwrap().workload() {
        Workload::VerifyStep(v) => *v,
        w => panic!("not a verify step: {w:?}"),
    };
    let before = verify(&app);
    assert_eq!((before.hidden, before.tokens, before.layers), (7168, 3, 61));
    assert_eq!(app.current_scenario().unwrap().launch(), LaunchMode::Eager);
    app.handle_key(ch('h'));
    app.handle_key(ch('k'));
    app.handle_key(ch('L'));
    app.handle_key(ch('g'));
    let after = verify(&app);
    assert_eq!((after.hidden, after.tokens, after.layers), (8192, 4, 48));
    assert_eq!(after.size(), Bytes(8192 * 4 * 2));
    assert_eq!(after.allreduces(), 48 * 2);
    let sc = app.current_scenario().unwrap();
    assert!(
        Algorithm::ALL
            .iter()
            .all(|&a| sc.launch_of(a) == LaunchMode::Graph)
    );
    // the ends hold: tokens never reach zero
    for _ in 0..10 {
        app.handle_key(ch('K'));
    }
    assert_eq!(verify(&app).tokens, 1);
    let s = render(&app, 120, 40);
    for shown in ["hidden 8192", "tokens 1", "layers 48", "launch graph"] {
        assert!(s.contains(shown), "{shown} not on screen:\n{s}");
    }
    insta::assert_snapshot!(s);
}
