//! The committed `--emulate-ranks` runs of the lent 1-GPU H200
//! (`calibration/h200x1/emulate-{2,4,8}.jsonl`, from
//! `calibration/run-emulate.sh`): every custom kernel of
//! `scenarios/hw-emulate.toml`, in both placements, at every size of its
//! sweep, ran with N ranks on one GPU and every rank's result was verified.
//! And the refusal run (`emulate-refused.jsonl`): grids that could not all
//! be resident were refused, so none of its 4 MiB one-shot kernels has a
//! record, while its small sizes were verified.

use contend_workload::jsonl::parse_records;
use contend_workload::{Algorithm, Measured, Placement, ResultRecord, Workload, load_scenario};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn records(name: &str) -> Vec<ResultRecord> {
    let p = root().join("calibration/h200x1").join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    parse_records(&p.display().to_string(), &text)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

#[test]
fn every_kernel_verified_with_2_4_and_8_ranks_on_one_gpu() {
    let sc = load_scenario(&root().join("scenarios/hw-emulate.toml"), None).unwrap();
    let Workload::Allreduce { sizes, .. } = sc.workload() else {
        panic!("hw-emulate is an allreduce sweep")
    };
    let sizes: Vec<u64> = sizes.iter().map(|b| b.0).collect();
    assert_eq!(sizes.first(), Some(&1024));
    assert_eq!(sizes.last(), Some(&(4 << 20)));
    for n in [2usize, 4, 8] {
        let rs = records(&format!("emulate-{n}.jsonl"));
        let mut seen = BTreeSet::new();
        for r in &rs {
            assert_eq!(r.verified, Some(true), "N={n}: {r:?}");
            assert_eq!(r.extra.kernel.emulated, Some(true), "N={n}");
            assert_eq!(r.ranks.len(), n, "N={n}");
            // every emulated rank on the one GPU
            assert!(
                r.ranks.iter().all(|x| x.starts_with("gpu0/")),
                "{:?}",
                r.ranks
            );
            let Measured::Allreduce(a) = r.algorithm else {
                panic!("N={n}: {:?}", r.algorithm)
            };
            seen.insert((a, r.placement.unwrap(), r.size_bytes));
        }
        for a in sc.algorithms() {
            for p in [Placement::Peer, Placement::Host] {
                for &s in &sizes {
                    assert!(seen.contains(&(*a, p, s)), "N={n}: {a} {p} {s} B missing");
                }
            }
        }
        assert_eq!(
            seen.len(),
            rs.len(),
            "N={n}: one record per kernel, placement, size"
        );
    }
}

#[test]
fn grids_that_cannot_be_resident_were_refused() {
    let rs = records("emulate-refused.jsonl");
    assert!(!rs.is_empty());
    assert!(rs.iter().all(|r| r.verified == Some(true)));
    // 8 ranks x 132 blocks at 4 MiB: more than one H200 keeps resident
    for a in [Algorithm::OneShotPull, Algorithm::OneShotPush] {
        assert!(
            !rs.iter().any(|r| r.algorithm == Measured::Allreduce(a)
                && r.size_bytes == 4 << 20
                && r.placement == Some(Placement::Peer)),
            "{a} at 4 MiB should have been refused"
        );
        assert!(
            rs.iter().any(|r| r.algorithm == Measured::Allreduce(a)),
            "{a} at small sizes should have run"
        );
    }
}
