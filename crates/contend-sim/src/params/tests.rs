//! Tests of the params file: loading, located errors, bounds.

use super::*;

const SHIPPED: &str = include_str!("../../../../calibration/h200x2/params.toml");

/// The shipped params with `key = …` (first occurrence) set to `value`.
fn with(key: &str, value: &str) -> (String, usize) {
    let mut line_no = 0;
    let text = SHIPPED
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if line_no == 0 && l.starts_with(&format!("{key} =")) {
                line_no = i + 1;
                format!("{key} = {value}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(line_no > 0, "no `{key}` in the shipped params");
    (text, line_no)
}

fn err(key: &str, value: &str) -> (String, usize) {
    let (text, line) = with(key, value);
    let e = ModelParams::from_toml("params.toml", &text)
        .expect_err(&format!("{key} = {value} was accepted"))
        .to_string();
    (e, line)
}

#[test]
fn defaults_and_the_shipped_params_pass_their_own_checks() {
    ModelParams::default().check().unwrap();
    let p = ModelParams::from_toml("params.toml", SHIPPED).unwrap();
    assert_eq!(ModelParams::from_toml("again", &p.to_toml()).unwrap(), p);
}

#[test]
fn a_flag_that_no_buffer_holds_is_an_error_at_its_line() {
    // 32769 B: more than one TLP and more than the 32 KiB posted buffer
    // (it used to run forever with host flags and deadlock with peer ones)
    let (e, line) = err("flag_bytes", "32769");
    assert!(
        e.starts_with(&format!("params.toml:{line}:14 (field `gpu.flag_bytes`): ")),
        "{e}"
    );
    assert!(e.contains("4096") && e.contains("one TLP"), "{e}");
    assert!(err("flag_bytes", "4097").0.contains("gpu.flag_bytes"));
    assert!(err("flag_bytes", "0").0.contains("gpu.flag_bytes"));
}

#[test]
fn every_number_has_an_upper_bound_and_a_located_error() {
    for (key, field, bad) in [
        ("link_latency_ns", "pcie.link_latency_ns", "1e10"),
        ("fc_update_ns", "pcie.fc_update_ns", "nan"),
        ("launch_eager_ns", "gpu.launch_eager_ns", "inf"),
        ("copy_setup_ns", "gpu.copy_setup_ns", "-1.0"),
        (
            "memory_latency_ns",
            "host.memory_latency_ns",
            "9223372036854775807",
        ),
        ("max_tags", "pcie.max_tags", "1025"),
        ("fc_coalesce", "pcie.fc_coalesce", "0"),
        ("posted_hdr_credits", "pcie.posted_hdr_credits", "4097"),
        (
            "nonposted_hdr_credits",
            "pcie.nonposted_hdr_credits",
            "2000000000",
        ),
        ("posted_data_bytes", "pcie.posted_data_bytes", "4159"),
        (
            "completion_data_bytes",
            "pcie.completion_data_bytes",
            "4294967295",
        ),
        ("buffer_bytes", "root_complex.buffer_bytes", "16777217"),
        (
            "collapse_min_targets",
            "root_complex.collapse_min_targets",
            "513",
        ),
        (
            "p2p_bandwidth_gbps",
            "root_complex.p2p_bandwidth_gbps",
            "1e308",
        ),
        ("store_gbps_per_sm", "gpu.store_gbps_per_sm", "0"),
        ("bytes_per_thread", "gpu.bytes_per_thread", "257"),
        ("load_request_bytes", "gpu.load_request_bytes", "8192"),
        ("store_tlp_bytes", "gpu.store_tlp_bytes", "4097"),
        ("copy_request_bytes", "gpu.copy_request_bytes", "65536"),
        (
            "loads_in_flight_per_thread",
            "gpu.loads_in_flight_per_thread",
            "65",
        ),
        (
            "max_outstanding_loads_per_sm",
            "gpu.max_outstanding_loads_per_sm",
            "4294967295",
        ),
        ("store_window", "gpu.store_window", "65537"),
        ("copy_outstanding", "gpu.copy_outstanding", "0"),
        ("local_efficiency", "gpu.local_efficiency", "1.5"),
        ("dllp_overhead", "pcie.dllp_overhead", "0.95"),
    ] {
        let (e, line) = err(key, bad);
        assert!(
            e.starts_with(&format!("params.toml:{line}:"))
                && e.contains(&format!("(field `{field}`)")),
            "{key} = {bad}: {e}"
        );
    }
}

#[test]
fn type_errors_and_overflowing_integers_name_line_and_field() {
    for (key, bad, field) in [
        ("max_tags", "4294967297", "pcie.max_tags"),
        ("flag_bytes", "-1", "gpu.flag_bytes"),
        ("fence_ns", "\"fast\"", "gpu.fence_ns"),
        ("store_window", "1.5", "gpu.store_window"),
    ] {
        let (e, line) = err(key, bad);
        assert!(
            e.starts_with(&format!("params.toml:{line}:"))
                && e.contains(&format!("(field `{field}`)")),
            "{key} = {bad}: {e}"
        );
    }
    for bad in ["192", "32", "8192"] {
        let e = ModelParams::from_toml(
            "p.toml",
            &format!("[root_complex]\nhost_completion_bytes = {bad}\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("p.toml:2:25 (field `root_complex.host_completion_bytes`)"),
            "{e}"
        );
    }
    ModelParams::from_toml("p.toml", "[root_complex]\nhost_completion_bytes = 256\n").unwrap();
    let e = ModelParams::from_toml("p.toml", "[gpu]\nwarp_size = 32\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("p.toml:2:1") && e.contains("warp_size"),
        "{e}"
    );
}

#[test]
fn times_are_written_as_bare_nanoseconds() {
    let p = ModelParams::default();
    let toml = p.to_toml();
    assert!(toml.contains("\nlatency_ns = 120.0\n"), "{toml}");
    assert!(toml.contains("\nlaunch_graph_each_ns = 1818.0\n"), "{toml}");
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["gpu"]["fence_ns"], serde_json::json!(740.0));
    let back: ModelParams = serde_json::from_value(json).unwrap();
    assert_eq!(back, p);
    let q = ModelParams::from_toml("t", "[gpu]\nfence_ns = 586\n").unwrap();
    assert_eq!(q.gpu.fence_ns, Nanos::new(586.0));
    assert_eq!(q.gpu.fence_ns.to_picos(), contend_topo::Picos(586_000));
}
