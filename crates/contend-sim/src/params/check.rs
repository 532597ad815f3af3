//! The range check of every model constant: each field's lower and upper
//! bound (the associated constants of [`ModelParams`]), so no arithmetic
//! downstream can overflow or run away.

use super::ModelParams;
use contend_topo::Nanos;

impl ModelParams {
    /// Checks every field against the stated limits (the associated
    /// constants above); returns the offending field and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let (pc, rc, g) = (&self.pcie, &self.root_complex, &self.gpu);
        let real = |f: &'static str, v: f64, lo: f64, hi: f64, why: &str| {
            if v.is_finite() && v >= lo && v <= hi {
                Ok(())
            } else {
                Err((f, format!("{f} = {v} is outside {lo}..={hi}{why}")))
            }
        };
        real("pcie.dllp_overhead", pc.dllp_overhead, 0.0, 0.9, "")?;
        real("gpu.local_efficiency", g.local_efficiency, 0.01, 1.0, "")?;
        real(
            "root_complex.collapse_request_bytes",
            rc.collapse_request_bytes,
            0.0,
            Self::MAX_TLP_BYTES as f64,
            " bytes",
        )?;
        let time =
            |f: &'static str, v: Nanos, hi: Nanos, why: &str| real(f, v.get(), 0.0, hi.get(), why);
        time(
            "nccl.step_overhead_ns",
            self.nccl.step_overhead_ns,
            Self::MAX_NCCL_STEP_OVERHEAD_NS,
            "",
        )?;
        for (f, v) in [
            ("pcie.link_latency_ns", pc.link_latency_ns),
            ("pcie.fc_update_ns", pc.fc_update_ns),
            ("switch.latency_ns", self.switch.latency_ns),
            ("root_complex.latency_ns", rc.latency_ns),
            ("root_complex.collapse_window_ns", rc.collapse_window_ns),
            ("io_die.latency_ns", self.io_die.latency_ns),
            ("cross_socket.window_ns", self.cross_socket.window_ns),
            ("host.memory_latency_ns", self.host.memory_latency_ns),
            ("gpu.launch_eager_ns", g.launch_eager_ns),
            ("gpu.launch_graph_ns", g.launch_graph_ns),
            ("gpu.launch_graph_each_ns", g.launch_graph_each_ns),
            ("gpu.fence_ns", g.fence_ns),
            ("gpu.local_poll_ns", g.local_poll_ns),
            ("gpu.memory_latency_ns", g.memory_latency_ns),
            ("gpu.copy_setup_ns", g.copy_setup_ns),
            ("gpu.store_visibility_ns", g.store_visibility_ns),
            ("nccl.torch_call_ns", self.nccl.torch_call_ns),
        ] {
            time(f, v, Self::MAX_NS, " ns (at most 1 s)")?;
        }
        let xs = &self.cross_socket;
        for (f, v) in [
            ("root_complex.p2p_bandwidth_gbps", rc.p2p_bandwidth_gbps),
            ("root_complex.port_p2p_gbps", rc.port_p2p_gbps),
            (
                "root_complex.memory_bandwidth_gbps",
                rc.memory_bandwidth_gbps,
            ),
            ("cross_socket.p2p_bandwidth_gbps", xs.p2p_bandwidth_gbps),
            ("cross_socket.stream_gbps", xs.stream_gbps),
            ("cross_socket.port_gbps", xs.port_gbps),
            ("platform.collapse_gbps", self.platform.collapse_gbps),
        ] {
            if let Some(v) = v {
                real(f, v, Self::MIN_GBPS, Self::MAX_GBPS, " GB/s")?;
            }
        }
        real(
            "cross_socket.stream_knee",
            xs.stream_knee,
            1.0,
            262_144.0,
            "",
        )?;
        real(
            "cross_socket.stream_exponent",
            xs.stream_exponent,
            0.0,
            16.0,
            "",
        )?;
        for (f, v) in [
            ("root_complex.collapse_gbps", rc.collapse_gbps),
            ("gpu.store_gbps_per_sm", g.store_gbps_per_sm),
        ] {
            real(f, v, Self::MIN_GBPS, Self::MAX_GBPS, " GB/s")?;
        }
        let tlp =
            ": it is one TLP, at most 4096 bytes by the spec (every receive buffer holds one)";
        let buffer = ": a buffer must hold one 4 KiB TLP with its header (4160 bytes)";
        let max_nodes = contend_topo::limits::MAX_NODES as u32;
        for (f, v, lo, hi, why) in [
            ("pcie.fc_coalesce", pc.fc_coalesce, 1, Self::MAX_CREDITS, ""),
            (
                "pcie.posted_hdr_credits",
                pc.posted_hdr_credits,
                1,
                Self::MAX_CREDITS,
                "",
            ),
            (
                "pcie.posted_data_bytes",
                pc.posted_data_bytes,
                Self::MIN_BUFFER_BYTES,
                Self::MAX_BUFFER_BYTES,
                buffer,
            ),
            (
                "pcie.nonposted_hdr_credits",
                pc.nonposted_hdr_credits,
                1,
                Self::MAX_CREDITS,
                "",
            ),
            (
                "pcie.completion_hdr_credits",
                pc.completion_hdr_credits,
                1,
                Self::MAX_CREDITS,
                "",
            ),
            (
                "pcie.completion_data_bytes",
                pc.completion_data_bytes,
                Self::MIN_BUFFER_BYTES,
                Self::MAX_BUFFER_BYTES,
                buffer,
            ),
            ("pcie.max_tags", pc.max_tags, 1, Self::MAX_TAGS, ""),
            (
                "root_complex.collapse_min_sources",
                rc.collapse_min_sources,
                1,
                max_nodes,
                " (GPUs)",
            ),
            (
                "root_complex.collapse_min_targets",
                rc.collapse_min_targets,
                1,
                max_nodes,
                " (root complexes)",
            ),
            (
                "root_complex.buffer_bytes",
                rc.buffer_bytes,
                Self::MIN_BUFFER_BYTES,
                Self::MAX_BUFFER_BYTES,
                buffer,
            ),
            (
                "gpu.bytes_per_thread",
                g.bytes_per_thread,
                1,
                Self::MAX_BYTES_PER_THREAD,
                "",
            ),
            (
                "gpu.load_request_bytes",
                g.load_request_bytes,
                1,
                Self::MAX_TLP_BYTES,
                tlp,
            ),
            (
                "gpu.store_tlp_bytes",
                g.store_tlp_bytes,
                1,
                Self::MAX_TLP_BYTES,
                tlp,
            ),
            (
                "gpu.loads_in_flight_per_thread",
                g.loads_in_flight_per_thread,
                1,
                Self::MAX_LOADS_PER_THREAD,
                "",
            ),
            (
                "gpu.max_outstanding_loads_per_sm",
                g.max_outstanding_loads_per_sm,
                1,
                Self::MAX_LOADS_PER_SM,
                "",
            ),
            ("gpu.store_window", g.store_window, 1, Self::MAX_WINDOW, ""),
            (
                "gpu.copy_request_bytes",
                g.copy_request_bytes,
                1,
                Self::MAX_TLP_BYTES,
                tlp,
            ),
            (
                "gpu.copy_outstanding",
                g.copy_outstanding,
                1,
                Self::MAX_WINDOW,
                "",
            ),
            ("gpu.flag_bytes", g.flag_bytes, 1, Self::MAX_TLP_BYTES, tlp),
            (
                "fabric.min_wire_bytes",
                self.fabric.min_wire_bytes,
                1,
                Self::MAX_TLP_BYTES,
                tlp,
            ),
            (
                "fabric.no_pcie_mps",
                self.fabric.no_pcie_mps,
                1,
                Self::MAX_TLP_BYTES,
                tlp,
            ),
            (
                "fabric.no_pcie_rcb",
                self.fabric.no_pcie_rcb,
                1,
                Self::MAX_TLP_BYTES,
                tlp,
            ),
            (
                "fabric.min_completion_bytes",
                self.fabric.min_completion_bytes,
                1,
                Self::MAX_TLP_BYTES,
                tlp,
            ),
            (
                "root_complex.nonposted_credit_factor",
                rc.nonposted_credit_factor,
                1,
                64,
                "",
            ),
        ] {
            if !(lo..=hi).contains(&v) {
                return Err((f, format!("{f} = {v} is outside {lo}..={hi}{why}")));
            }
        }
        for (f, v) in [
            ("ring.simple_slice_bytes", self.ring.simple_slice_bytes),
            ("ring.ll_slice_bytes", self.ring.ll_slice_bytes),
        ] {
            if !(16..=1 << 30).contains(&v.0) {
                return Err((f, format!("{f} = {} is outside 16..=1073741824", v.0)));
            }
        }
        if let Some(b) = rc.host_completion_bytes
            && !(b.is_power_of_two() && (64..=Self::MAX_TLP_BYTES).contains(&b))
        {
            return Err((
                "root_complex.host_completion_bytes",
                format!(
                    "root_complex.host_completion_bytes = {b}: a completion is a power of two from 64 (the smallest completion boundary) to 4096 bytes"
                ),
            ));
        }
        Ok(())
    }
}
