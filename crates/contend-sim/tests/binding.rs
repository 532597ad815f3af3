//! What binds a collective, as `contend simulate` states it: each kind of
//! binding on a machine where its mechanism is the one that sets the time,
//! at both fidelities where both see it.

use contend_sim::{ModelParams, RunSpec, simulate_one};
use contend_topo::Bytes;
use contend_workload::{Algorithm, Binding, Fidelity, Placement, parse_scenario};

fn bound(topology: &str, a: Algorithm, size: u64, f: Fidelity) -> Binding {
    bound_on(topology, "", a, size, f)
}

/// The binding with `extra` top-level scenario lines (such as `ranks`).
fn bound_on(topology: &str, extra: &str, a: Algorithm, size: u64, f: Fidelity) -> Binding {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let topology = if topology.ends_with(".toml") {
        path.join(topology).display().to_string()
    } else {
        topology.to_string()
    };
    let text = format!(
        "name = \"b\"\ntopology = \"{topology}\"\n{extra}[workload]\nkind = \"allreduce\"\nsizes = [{size}]\n"
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
/// (45 GB/s on the shipped topology; a Gen5 x16 link carries ~57 GB/s of
/// 256-byte writes), so a pair of GPUs on the two sockets pushing into each
/// other waits on the stream caps at both fidelities. With all eight GPUs,
/// each GPU's link is shared by seven streams and none reaches the cap.
#[test]
fn cross_socket_pushes_are_held_by_the_stream_cap() {
    for f in BOTH {
        let b = bound_on(
            "pro6000-8x-2socket",
            "ranks = [\"gpu0\", \"gpu4\"]\n",
            Algorithm::OneShotPush,
            4 << 20,
            f,
        );
        assert!(matches!(b, Binding::CrossSocketStream { .. }), "{f}: {b:?}");
        let b = bound("pro6000-8x-2socket", Algorithm::OneShotPush, 4 << 20, f);
        assert!(
            matches!(&b, Binding::Resource { resource, .. } if resource.class() == "link"),
            "{f}: {b:?}"
        );
    }
}
