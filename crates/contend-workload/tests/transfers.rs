//! Scenario fields beyond the scenario-wide choices — the per-algorithm
//! launch mode and kernel shape of collective scenarios — each parsed, and
//! each bad value a located error.

use contend_workload::{Algorithm, KernelConfig, LaunchMode, parse_scenario};

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
