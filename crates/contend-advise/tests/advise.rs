//! Advice end to end on a small topology: every size asked for is covered
//! by a range, and the table names each world size. (Moved from
//! contend-fit's `tests/calib.rs` when contend-calib was split by job.)

use contend_sim::ModelParams;
use contend_topo::{Topology, load_topology};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
fn h200x2() -> Topology {
    load_topology(&root().join("topologies/h200-2x.toml")).unwrap()
}

#[test]
fn advise_covers_every_size() {
    let adv = contend_advise::advise(
        &h200x2(),
        &ModelParams::default(),
        contend_workload::Placement::Peer,
        &[1024, 1 << 20],
        &|_, _, _| {},
    )
    .unwrap();
    assert_eq!(adv.len(), 1);
    assert_eq!(adv[0].world, 2);
    let r = &adv[0].ranges;
    assert_eq!(r.first().unwrap().from_bytes, 1024);
    assert_eq!(r.last().unwrap().to_bytes, 1 << 20);
    let t = contend_advise::advice_table("h200", "3 %", &adv);
    assert!(t.contains("world size 2"), "{t}");
}
