//! What binds a collective, as `contend simulate` states it: each kind of
//! binding on a machine where its mechanism is the one that sets the time,
//! at both fidelities where both see it.

use contend_sim::{ModelParams, RunSpec, simulate_one};
use contend_topo::Bytes;
use contend_workload::{Algorithm, Binding, Fidelity, Placement, parse_scenario};

fn bound(topology: &str, a: Algorithm, size: u64, f: Fidelity) -> Binding {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let topology = if topology.ends_with(".toml") {
        path.join(topology).display().to_string()
    } else {
        topology.to_string()
    };
    let text = format!(
        "name = \"b\"\ntopology = \"{topology}\"\n[workload]\nkind = \"allreduce\"\nsizes = [{size}]\n"
    );
    let sc = parse_scenario("inline", &text, None, None).unwrap();
    let spec = RunSpec {
        algorithm: Some(a),
        placement: Placement::Peer,
        fidelity: f,
        size: Some(Bytes(size)),
    };
    let run = simulate_one(&sc, &ModelParams::default(), spec).unwrap();
    run.record()
        .extra
        .sim
        .binding
        .clone()
        .expect("a collective states its binding")
}

const BOTH: [Fidelity; 2] = [Fidelity::Tlp, Fidelity::Flow];

#[test]
fn small_allreduces_are_bound_by_launches_and_barriers() {
    for f in BOTH {
        let b = bound("pro6000-4x-1socket", Algorithm::TwoShotPush, 4096, f);
        assert!(
            matches!(b, Binding::Sync { share } if share > 0.5),
            "{f}: {b:?}"
        );
    }
}

#[test]
fn large_pushes_are_bound_by_a_gpu_link() {
    for f in BOTH {
        let b = bound("pro6000-4x-1socket", Algorithm::OneShotPush, 64 << 20, f);
        match &b {
            Binding::Resource { resource, busy } => {
                assert_eq!(resource.class(), "link", "{f}: {b}");
                assert!(*busy > 0.9, "{f}: {b}");
            }
            _ => panic!("{f}: {b:?}"),
        }
    }
}

/// The ASUS ESC8000A-E13P's virtual switches collapse posted writes toward
/// two or more root complexes: pushes are bound there, pulls are not.
#[test]
fn pushes_through_a_collapsing_switch_are_bound_by_the_collapse() {
    let asus = "topologies/public/asus-esc8000a-e13p.toml";
    for f in BOTH {
        let b = bound(asus, Algorithm::TwoShotPush, 1 << 20, f);
        assert!(
            matches!(b, Binding::Collapse { share, .. } if share > 0.9),
            "{f}: {b:?}"
        );
        let b = bound(asus, Algorithm::OneShotPull, 16 << 20, f);
        // its switches fix MRRS at 128 B with 8-bit tags: 256 reads of
        // 128 B in flight per GPU, far below what the links carry
        assert!(
            matches!(b, Binding::ReadWindow { busiest } if busiest < 0.6),
            "{f}: {b:?}"
        );
    }
}

/// Dual-socket: a cross-socket P2P stream is capped below link rate
/// (45 GB/s on the shipped topology), so one-shot pull across sockets waits
/// on the stream caps (TLP sees packets held by their stream's cap).
#[test]
fn cross_socket_pulls_are_held_by_the_stream_cap() {
    let b = bound(
        "pro6000-8x-2socket",
        Algorithm::OneShotPull,
        43008,
        Fidelity::Tlp,
    );
    assert!(matches!(b, Binding::CrossSocketStream { .. }), "{b:?}");
}
