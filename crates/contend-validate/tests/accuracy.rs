//! The accuracy suite in `cargo test`: the committed cases of `validation/`
//! run, and the model is held to the errors it has reached. Two kinds of
//! bound:
//!
//! - **targets** (issue 38's "Done when"), asserted where the model meets
//!   them: the NCCL median |error| ≤ 15 %, the one-shot median ≤ 20 %,
//!   K3's one-shot/NCCL crossover within 1.5×, K2's 8-GPU one-shot/NCCL
//!   crossover within 2×;
//! - **guards** where it does not yet (the target in the comment): the
//!   current value plus a little, so a change that makes the model worse
//!   fails here, and a change that meets the target tightens the guard into
//!   the target. Measured with `contend validate` on this commit (NCCL
//!   median 13.2 %, p90 45.8 % over 67 rows; K2's 8-GPU crossover 1.32× late; K2's 32 MiB
//!   one-shot 56 % fast, predicted/measured 0.44).
//!
//! Nothing here is fitted: a failing bound means a mechanism changed.

use contend_validate::{Group, ParamsChoice, SuiteResult, validate};
use std::path::PathBuf;
use std::sync::OnceLock;

fn suite() -> &'static SuiteResult {
    static S: OnceLock<SuiteResult> = OnceLock::new();
    S.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../validation");
        validate(&root, &ParamsChoice::CaseOwn).expect("the committed suite runs")
    })
}

fn crossover_ratio(case: &str, small: &str) -> Option<f64> {
    suite()
        .case(case)
        .unwrap()
        .crossovers
        .iter()
        .find(|x| x.small == small)
        .unwrap_or_else(|| panic!("{case}: no crossover from `{small}`"))
        .ratio
}

#[test]
fn every_case_runs_and_every_row_is_predicted() {
    let s = suite();
    let ids: Vec<&str> = s.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["K1", "K2", "K3", "K4", "K5"]);
    assert!(s.rows().count() >= 100, "{}", s.rows().count());
    for r in s.rows() {
        assert!(
            r.predicted_us.is_finite() && r.predicted_us > 0.0,
            "{} {} B: {}",
            r.series,
            r.size_bytes,
            r.predicted_us
        );
    }
}

#[test]
fn nccl_from_its_mechanics() {
    let n = suite().group(Group::Nccl);
    assert_eq!(n.rows, 67);
    // target met: median ≤ 15 %; target p90 ≤ 35 %, guard 48 % (before
    // this suite's fixes: 36.9 % and 174 %, NCCL's step latency charged
    // twice; 15.1 % and 63.0 % before torch's host path was charged)
    assert!(
        n.median_abs_pct <= 15.0,
        "NCCL median {:.1} %",
        n.median_abs_pct
    );
    assert!(n.p90_abs_pct <= 48.0, "NCCL p90 {:.1} %", n.p90_abs_pct);
    // no longer too slow everywhere: the signed median is near zero
    assert!(
        n.median_signed_pct.abs() <= 10.0,
        "NCCL signed median {:+.1} %",
        n.median_signed_pct
    );
    // K1, nccl-tests -g 8: the flat floor of small sizes is one host thread
    // launching eight GPUs, within 10 % from 8 B to 2 KiB
    for r in suite()
        .case("K1")
        .unwrap()
        .rows
        .iter()
        .filter(|r| r.size_bytes <= 2048)
    {
        assert!(
            r.error_pct.abs() <= 10.0,
            "K1 {} B: {:+.1} %",
            r.size_bytes,
            r.error_pct
        );
    }
}

#[test]
fn k4_torch_distributed_pays_its_host_path() {
    // K4 times one dist.all_reduce between CUDA events on an idle GPU:
    // torch's host path before NCCL's launch is in the interval
    // (nccl.torch_call_ns, measured on one GPU). Without it the small
    // sizes were 63-71 % fast; with it within 30 %.
    for r in suite()
        .case("K4")
        .unwrap()
        .rows
        .iter()
        .filter(|r| r.series.starts_with("NCCL") && r.size_bytes <= 96 << 10)
    {
        assert!(
            r.error_pct.abs() <= 30.0,
            "{} {} B: {:+.1} %",
            r.series,
            r.size_bytes,
            r.error_pct
        );
    }
}

#[test]
fn custom_one_shot() {
    let o = suite().group(Group::OneShot);
    // target met: median ≤ 20 %
    assert!(
        o.median_abs_pct <= 20.0,
        "one-shot median {:.1} %",
        o.median_abs_pct
    );
}

#[test]
fn k3_crossover_in_a_cuda_graph() {
    // target met: within 1.5x of the measured 177 KiB
    let r = crossover_ratio("K3", "one-shot push").expect("K3's prediction crosses");
    assert!((1.0 / 1.5..=1.5).contains(&r), "K3 crossover ratio {r:.2}");
}

#[test]
fn k2_the_eight_gpu_one_shot_across_sockets() {
    let k2 = suite().case("K2").unwrap();
    // target met: crossover within 2x of the measured 7.2 KiB (now 1.32x,
    // from the uplink counting read requests)
    let r = crossover_ratio("K2", "one-shot 8 GPUs").expect("K2's 8-GPU prediction crosses");
    assert!((0.5..=2.0).contains(&r), "K2 8-GPU crossover ratio {r:.2}");
    // target: 32 MiB within 2x (predicted / measured ≥ 0.5); guard: now 0.44
    let big = k2
        .rows
        .iter()
        .find(|r| r.series == "one-shot 8 GPUs" && r.size_bytes == 32 << 20)
        .unwrap();
    let ratio = big.predicted_us / big.measured_us;
    assert!(
        ratio >= 0.42,
        "K2 32 MiB one-shot predicted/measured {ratio:.3}"
    );
    // the 4-GPU one-shot of one socket is right: within 10 % from 512 KiB
    for r in k2
        .rows
        .iter()
        .filter(|r| r.series == "one-shot 4 GPUs" && r.size_bytes >= 512 << 10)
    {
        assert!(
            r.error_pct.abs() <= 10.0,
            "{} {} B: {:+.1} %",
            r.series,
            r.size_bytes,
            r.error_pct
        );
    }
    // and the source's 4-GPU claim holds on the prediction
    assert!(
        k2.claims
            .iter()
            .any(|c| c.text.contains("4 GPUs") && c.holds),
        "{:?}",
        k2.claims
    );
}
