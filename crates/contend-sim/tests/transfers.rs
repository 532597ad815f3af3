//! Scenario choices on the model: the per-algorithm launch mode and kernel
//! shape of collective scenarios.

use contend_sim::{ModelParams, RunSpec, simulate_one};
use contend_workload::{Algorithm, Fidelity, LaunchMode, Placement, Scenario, parse_scenario};

/// `[algorithm.NAME] launch = "graph"` makes that algorithm's launches
/// graph launches (cheaper than eager) and says so in its record; the
/// others keep the scenario's.
#[test]
fn per_algorithm_launch_mode_takes_effect() {
    let text = |extra: &str| {
        format!(
            "name = \"l\"\ntopology = \"pro6000-8x-2switch\"\nalgorithms = [\"one-shot-push\", \"ring-ll\"]\n{extra}\n[workload]\nkind = \"allreduce\"\nsizes = [43008]\nrepeats = 4\n"
        )
    };
    let p = ModelParams::default();
    let time = |sc: &Scenario, a: Algorithm| {
        let spec = RunSpec {
            algorithm: Some(a),
            placement: Placement::Peer,
            fidelity: Fidelity::Flow,
            size: Some(contend_topo::Bytes(43008)),
        };
        let r = simulate_one(sc, &p, spec).unwrap();
        (r.record().stats.median_ns, r.record().launch)
    };
    let eager = parse_scenario("l.toml", &text(""), None, None).unwrap();
    let mixed = parse_scenario(
        "l.toml",
        &text("[algorithm.one-shot-push]\nlaunch = \"graph\"\n"),
        None,
        None,
    )
    .unwrap();
    let (e, le) = time(&eager, Algorithm::OneShotPush);
    let (g, lg) = time(&mixed, Algorithm::OneShotPush);
    assert_eq!((le, lg), (LaunchMode::Eager, LaunchMode::Graph));
    let saved = p.gpu.launch_eager_ns - p.gpu.launch_graph_ns;
    assert!(
        (e - g - saved).abs() < 0.05 * saved,
        "eager {e} ns, graph {g} ns"
    );
    // ring-ll keeps the scenario's eager launches
    assert_eq!(
        time(&eager, Algorithm::RingLl),
        time(&mixed, Algorithm::RingLl)
    );
    // a kernel shape of its own: one block loads far slower than 36
    let one_block = parse_scenario(
        "l.toml",
        &text("algorithms = [\"one-shot-pull\"]\n[algorithm.one-shot-pull]\nblocks = 1\n")
            .replacen("algorithms = [\"one-shot-push\", \"ring-ll\"]\n", "", 1),
        None,
        None,
    )
    .unwrap();
    let wide = parse_scenario(
        "l.toml",
        &text("algorithms = [\"one-shot-pull\"]\n").replacen(
            "algorithms = [\"one-shot-push\", \"ring-ll\"]\n",
            "",
            1,
        ),
        None,
        None,
    )
    .unwrap();
    let (narrow, _) = time(&one_block, Algorithm::OneShotPull);
    let (full, _) = time(&wide, Algorithm::OneShotPull);
    assert!(narrow > full, "1 block {narrow} ns, 36 blocks {full} ns");
}
