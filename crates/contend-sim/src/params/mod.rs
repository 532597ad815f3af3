//! `ModelParams`: every constant of the model in one place, loadable from
//! TOML (`--params`). Defaults come from the PCI Express Base Specification
//! ("spec") or are typical values to be replaced by calibration ("typical");
//! `docs/PCIE-FACTS.md` lists the sources.

use contend_topo::{Bytes, Location, Nanos};
use contend_workload::RingConfig;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A params file that cannot be used.
#[derive(Debug, Error)]
#[error("{location}: {message}")]
pub struct ParamsError {
    pub location: Location,
    pub message: String,
}

/// PCIe protocol constants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PcieParams {
    /// Fraction of each direction's TLP bandwidth lost to DLLPs (ACK/NAK,
    /// UpdateFC) and SKP ordered sets. pcie-bench's model: ~10 % at Gen5 x16
    /// (63.0 -> 56.9 GB/s). Typical.
    pub dllp_overhead: f64,
    /// Wire latency of one PCIe hop (PHY, serdes, retimers), ns. Typical.
    pub link_latency_ns: Nanos,
    /// Delay before a freed receive buffer's credits reach the sender
    /// (UpdateFC DLLP scheduling), ns, on top of the link latency. Typical.
    pub fc_update_ns: Nanos,
    /// Credits a receiver frees before it sends an UpdateFC DLLP (DLLPs
    /// coalesce); a credit-blocked sender resumes once that many are back. Typical.
    pub fc_coalesce: u32,
    /// Receive buffer per port for posted requests: header credits and data bytes. Typical.
    pub posted_hdr_credits: u32,
    pub posted_data_bytes: u32,
    /// Receive buffer per port for non-posted requests (headers only). Typical.
    pub nonposted_hdr_credits: u32,
    /// Receive buffer for completions at switches and root ports (endpoints
    /// advertise infinite completion credits: spec).
    pub completion_hdr_credits: u32,
    pub completion_data_bytes: u32,
    /// Tags a requester may have outstanding: 256 with 8-bit tags, 768 with
    /// 10-bit tags (PCIe 4.0+). Spec.
    pub max_tags: u32,
}

impl Default for PcieParams {
    fn default() -> Self {
        PcieParams {
            dllp_overhead: 0.097,
            link_latency_ns: Nanos::new(40.0),
            fc_update_ns: Nanos::new(60.0),
            fc_coalesce: 4,
            posted_hdr_credits: 128,
            posted_data_bytes: 32 * 1024,
            nonposted_hdr_credits: 128,
            completion_hdr_credits: 128,
            completion_data_bytes: 32 * 1024,
            max_tags: 768,
        }
    }
}

/// PCIe switches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SwitchParams {
    /// Port-to-port forwarding latency (cut-through), ns, unless the topology
    /// gives one. Typical: 100–150 ns.
    pub latency_ns: Nanos,
}

impl Default for SwitchParams {
    fn default() -> Self {
        SwitchParams {
            latency_ns: Nanos::new(120.0),
        }
    }
}

/// Root complexes and the CPU side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RootComplexParams {
    /// Forwarding latency of a root complex, ns, unless the topology gives
    /// one: charged once per path that enters the CPU from a root port (or
    /// reaches host memory). Typical: a few hundred.
    pub latency_ns: Nanos,
    /// Cap on all P2P forwarding through a root complex (both directions
    /// together), GB/s, unless the topology gives one; unset: none, its root
    /// ports and links bound the traffic. Boxes show no such cap below link
    /// rate inside a socket: same-NUMA pairs reach 53–56 GB/s one way and
    /// 103–111 GB/s both ways (local-inference-lab/rtx6kpro
    /// `hardware/pcie-bandwidth.md`).
    pub p2p_bandwidth_gbps: Option<f64>,
    /// Cap on P2P forwarding per root port and direction, GB/s, unless the
    /// topology gives one; unset: none.
    pub port_p2p_gbps: Option<f64>,
    /// Cap on traffic between a root complex's ports and host memory, per
    /// direction, GB/s, unless the topology gives one; unset: none.
    pub memory_bandwidth_gbps: Option<f64>,
    /// Completion payload a root complex returns for host-memory reads: a
    /// power of two from 64 B (split at every 64-byte read completion
    /// boundary) up to the path's max payload size (aligned requests
    /// answered in MPS-sized completions). Typical; when `None`, the RCB of
    /// the requester's link. H2D at 55 GB/s over Gen5 x16 (WRX90 + TR PRO
    /// 7955WX, local-inference-lab/rtx6kpro
    /// `hardware/wrx90-cpayne-8gpu-root-topology-comparison.md`) needs
    /// 256-byte completions: 64-byte ones cap it near 45.
    pub host_completion_bytes: Option<u32>,
    /// Posted-write collapse, where the topology puts a `[node.collapse]`
    /// table (or `posted_write_collapse = true`) without saying otherwise:
    /// when posted writes from `collapse_min_sources` or more distinct
    /// source GPUs, through one switch uplink or root port, go toward
    /// `collapse_min_targets` or more distinct root complexes at once, those
    /// writes get `collapse_gbps` together. Measured rigs: ~52 -> 3–7 GB/s.
    pub collapse_min_sources: u32,
    pub collapse_min_targets: u32,
    pub collapse_gbps: f64,
    /// Window over which the collapse rule counts sources and targets, ns.
    pub collapse_window_ns: Nanos,
    /// What a read request costs a collapsing port, as the payload bytes of
    /// a posted write that would cost the same: a port that collapses per
    /// TLP counts the requests it passes toward other root complexes with
    /// its writes (they make it fire, and take their share of the collapsed
    /// rate). 0: read requests pass untouched. Broadcom PEX890xx (the ASUS
    /// ESC8000A-E13P): p2pmark's dense copy-engine reads score 0.12 at 8
    /// GPUs where rigs without the collapse score 0.41–0.44, and the
    /// collapse test's 2.7 GB/s is ~10.5 M write TLPs per second; fitted
    /// there on that dense figure (`calibration/public/asus-esc8000a-e13p`).
    /// The default: no other published rig shows reads collapse.
    pub collapse_request_bytes: f64,
    /// Internal buffer of the root complex fabric, bytes.
    pub buffer_bytes: u32,
    /// Non-posted header credits a root complex holds, as a multiple of a
    /// port's `pcie.nonposted_hdr_credits` (it serves several ports). Typical.
    pub nonposted_credit_factor: u32,
}

impl Default for RootComplexParams {
    fn default() -> Self {
        RootComplexParams {
            latency_ns: Nanos::new(300.0),
            p2p_bandwidth_gbps: None,
            port_p2p_gbps: None,
            memory_bandwidth_gbps: None,
            host_completion_bytes: None,
            collapse_min_sources: 1,
            collapse_min_targets: 2,
            collapse_gbps: 5.0,
            collapse_window_ns: Nanos::new(2000.0),
            collapse_request_bytes: 0.0,
            buffer_bytes: 64 * 1024,
            nonposted_credit_factor: 4,
        }
    }
}

/// A socket's I/O-die fabric joining its root complexes (quadrants).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IoDieParams {
    /// Latency of crossing the die between two of its root complexes, ns,
    /// unless the topology gives one. Seen: ~10 ns between Threadripper PRO
    /// 7955WX quadrants (one-way GPU ping-pong 1072 ns across quadrants vs
    /// 1062 ns under one, local-inference-lab/rtx6kpro
    /// `hardware/wrx90-cpayne-8gpu-root-topology-comparison.md`).
    pub latency_ns: Nanos,
}

impl Default for IoDieParams {
    fn default() -> Self {
        IoDieParams {
            latency_ns: Nanos::new(10.0),
        }
    }
}

/// GPU P2P between sockets, unless a `cpu` link of the topology says otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrossSocketParams {
    /// Cap on all cross-socket P2P over one CPU link (both directions), GB/s; unset: none.
    pub p2p_bandwidth_gbps: Option<f64>,
    /// Cap on one cross-socket stream (one source GPU to one destination), GB/s; unset: none.
    pub stream_gbps: Option<f64>,
    /// Cap on the P2P that enters the CPU by one root port bound for the
    /// other socket (a write's data at its source's root port, a read's
    /// completions at the completer's), GB/s; unset: none. On the ASUS
    /// ESC8000A-E13P (2x EPYC 9575F) two GPUs behind one root port get
    /// 40.3 GB/s to the other socket together, one GPU to two remote root
    /// ports 36.6, one flow 36-40, while flows from two root ports add up
    /// (76-80) and two remote ports writing into one GPU reach its link
    /// (51.2): a cap per sending root port, not per stream
    /// (local-inference-lab/rtx6kpro
    /// `hardware/asus-esc8000a-e13p-broadcom-switches.md`, § What Does NOT
    /// Trigger Collapse, § Cross-Chip Scaling). Typical; fitted per rig.
    pub port_gbps: Option<f64>,
    /// Concurrent cross-socket streams beyond which throughput degrades.
    pub stream_knee: f64,
    /// Degradation beyond the knee: × (knee / streams)^exponent (0: none).
    pub stream_exponent: f64,
    /// Window over which streams count as concurrent at TLP fidelity, ns.
    pub window_ns: Nanos,
}

impl Default for CrossSocketParams {
    fn default() -> Self {
        CrossSocketParams {
            p2p_bandwidth_gbps: None,
            stream_gbps: None,
            port_gbps: None,
            stream_knee: 8.0,
            stream_exponent: 0.0,
            window_ns: Nanos::new(2000.0),
        }
    }
}

/// Host memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostParams {
    /// DRAM access latency seen by a PCIe read, ns, unless the topology gives one. Typical.
    pub memory_latency_ns: Nanos,
}

impl Default for HostParams {
    fn default() -> Self {
        HostParams {
            memory_latency_ns: Nanos::new(150.0),
        }
    }
}

/// The GPU side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GpuParams {
    /// Bytes each thread loads or stores per access (a 16-byte vector).
    pub bytes_per_thread: u32,
    /// Size of the PCIe/NVLink read requests that coalesced SM loads become
    /// (32–128 B). Typical.
    pub load_request_bytes: u32,
    /// Payload of the write TLPs that coalesced SM stores become. Typical.
    pub store_tlp_bytes: u32,
    /// Loads each thread keeps in flight where the program does not say:
    /// transfer streams (the twins of the `sm_load` probe, whose kernel
    /// unrolls 4) and NCCL's rings. The allreduce kernels' fetches carry
    /// their own, as `kernels/allreduce.cu` unrolls them
    /// (`Op::Fetch::loads_per_thread`: one per peer in `sum_ranks`).
    pub loads_in_flight_per_thread: u32,
    /// Upper bound on outstanding remote load requests per SM. Typical.
    pub max_outstanding_loads_per_sm: u32,
    /// Store TLPs a kernel may have queued at its GPU's egress before the
    /// SMs stall (store buffer). Typical.
    pub store_window: u32,
    /// Rate one block (one SM) issues stores at, GB/s. Seen on H200: one
    /// block storing to a peer over NVLink reached ~50 GB/s. Typical.
    pub store_gbps_per_sm: f64,
    /// Kernel launch overhead, eager, back to back, ns: a property of the
    /// host. 3.2 µs, the mean of `contend hw probe --only launch` on two lent
    /// H100 hosts (3.0 and 3.4 µs, calibration/h100x1/); the lent H200s
    /// showed 3.6–4.0 µs (calibration/h200x2/launch.toml). One host thread
    /// launching N GPUs pays it N times per call (`launcher.rs`).
    pub launch_eager_ns: Nanos,
    /// Per-kernel overhead inside a CUDA graph replay, and the GPU's start
    /// of a kernel already enqueued, ns: 0.8 µs, the same probes' graph of
    /// 100 kernels (0.8 µs on both hosts).
    pub launch_graph_ns: Nanos,
    /// One call of a CUDA graph holding one collective, launched back to
    /// back from the host, ns: what a graph per call costs per collective
    /// (`launch = "graph-each"`). The launch probe `launch-graph-each` (a
    /// one-kernel graph launched 100 times between two events).
    pub launch_graph_each_ns: Nanos,
    /// `__threadfence_system()` before a flag write, ns. 740: the fence
    /// probe on a lent H100 host (calibration/probes/fence-cost.cu, records
    /// calibration/h100x1/h100x1-fence-cost-{1,2}.jsonl): a warp's fence
    /// alone takes 729 and 744 ns per iteration in the two runs, 757 and
    /// 772 after a 512-byte line of stores, the same whether the line went
    /// to the GPU's own memory or to host memory across PCIe (whose read
    /// round trip is 1.2 µs there): the fence does not wait for posted
    /// writes to land, so its cost is one constant, not a round trip of
    /// the path written. The 2 x H200 fit (fenced flag ping-pong over
    /// NVLink) found 586 ns, bootstrap 448–807.
    pub fence_ns: Nanos,
    /// Time to notice a flag in local memory (poll loop), ns. Typical.
    pub local_poll_ns: Nanos,
    /// Latency of a peer GPU's memory serving a read, ns. Typical.
    pub memory_latency_ns: Nanos,
    /// Fraction of the memory bandwidth local reduce/copy kernels reach.
    pub local_efficiency: f64,
    /// Copy engine: read request size (= MRRS cap) and outstanding requests.
    pub copy_request_bytes: u32,
    pub copy_outstanding: u32,
    /// Copy-engine setup per transfer, ns. Typical.
    pub copy_setup_ns: Nanos,
    /// Payload of a flag write, bytes.
    pub flag_bytes: u32,
    /// Store visibility latency, ns: from an SM store (data or flag) being
    /// issued to its TLP entering the GPU's egress link (the SM's memory
    /// pipeline, L2 and the GPU's PCIe/NVLink interface). A pipeline
    /// latency: it delays every SM store and never throttles them (the
    /// store window grows by the stores one latency holds). Typical: the
    /// GPU-resident ping-pong between two RTX PRO 6000 under one PCIe
    /// switch takes 633–727 ns one way (rtx6kpro,
    /// `hardware/wrx90-cpayne-8gpu-root-topology-comparison.md`, kernel
    /// ping-pong, 4-byte volatile flags), while the model's links, switch
    /// and local poll give ~345 ns: 330 ns lands the shipped
    /// `pro6000-8x-2switch` same-switch ping-pong at ~675 ns one way.
    pub store_visibility_ns: Nanos,
}

/// `gpu.launch_graph_each_ns`'s default: `contend hw probe --only launch`
/// three times on a lent H100 host (calibration/h100x1/
/// h100x1-probe-launch-each-{1,2,3}.jsonl): medians 1828, 1746 and 1818 ns
/// per call, their median 1818; the eager launch beside it 2876–2975.
const GRAPH_EACH_NS: Nanos = Nanos::new(1818.0);

impl Default for GpuParams {
    fn default() -> Self {
        GpuParams {
            bytes_per_thread: 16,
            load_request_bytes: 128,
            store_tlp_bytes: 128,
            loads_in_flight_per_thread: 1,
            max_outstanding_loads_per_sm: 64,
            store_window: 256,
            store_gbps_per_sm: 50.0,
            launch_eager_ns: Nanos::new(3200.0),
            launch_graph_ns: Nanos::new(800.0),
            launch_graph_each_ns: GRAPH_EACH_NS,
            fence_ns: Nanos::new(740.0),
            local_poll_ns: Nanos::new(150.0),
            memory_latency_ns: Nanos::new(500.0),
            local_efficiency: 0.8,
            copy_request_bytes: 512,
            copy_outstanding: 256,
            copy_setup_ns: Nanos::new(2000.0),
            flag_bytes: 8,
            store_visibility_ns: Nanos::new(330.0),
        }
    }
}

/// Channels that are not PCIe, and paths without a PCIe link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FabricParams {
    /// Smallest unit an NVLink, CPU or memory channel moves per packet
    /// (one 16-byte flit). Typical.
    pub min_wire_bytes: u32,
    /// Largest payload of a transfer whose path has no PCIe link (NVLink,
    /// local copies): one 4 KiB page. Typical.
    pub no_pcie_mps: u32,
    /// Completion boundary of a path without a PCIe link. Typical.
    pub no_pcie_rcb: u32,
    /// Smallest completion payload a completer returns (one 16-byte unit). Typical.
    pub min_completion_bytes: u32,
}

impl Default for FabricParams {
    fn default() -> Self {
        FabricParams {
            min_wire_bytes: 16,
            no_pcie_mps: 4096,
            no_pcie_rcb: 64,
            min_completion_bytes: 16,
        }
    }
}

/// The NCCL-style rings' protocol slices (`ring-ll`, `ring-simple`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RingParams {
    /// Largest slice of a chunk sent before its flag (Simple protocol), bytes.
    pub simple_slice_bytes: Bytes,
    /// Largest slice of data per flag set with the LL protocol, bytes.
    pub ll_slice_bytes: Bytes,
}

impl Default for RingParams {
    /// `contend_workload::RingConfig`'s defaults (NCCL's documented buffer sizes).
    fn default() -> Self {
        let c = RingConfig::default();
        RingParams {
            simple_slice_bytes: c.simple_slice,
            ll_slice_bytes: c.ll_slice,
        }
    }
}

impl RingParams {
    pub fn config(&self) -> RingConfig {
        RingConfig {
            simple_slice: self.simple_slice_bytes,
            ll_slice: self.ll_slice_bytes,
        }
    }
}

/// The `nccl` algorithm's costs beyond the fabric.
///
/// NCCL's time comes from the simulated mechanics: its transports, each
/// protocol's lines, fences, flags and FIFO credits, its channels, and the
/// launches. NCCL's own tuning tables (`hwLat`, `baseLat`,
/// `src/graph/tuning.cc`) are NCCL's *model* of those same costs: the
/// replica uses them for NCCL's decisions only, never as time (charging
/// them on top of the fabric counted every latency twice).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NcclParams {
    /// A fixed software cost per NCCL step that no modelled resource
    /// explains (the primitives' bookkeeping between a step's arrival and
    /// its send), ns, once per hop on the critical path: after a call's data
    /// has arrived, before its result goes on. 0 by default: no probe has
    /// shown one; calibration fits it only on NCCL's small-message latency
    /// probe (`contend hw probe --only nccl-latency` on two GPUs or more).
    pub step_overhead_ns: Nanos,
    /// The host time torch.distributed's eager `all_reduce` spends per call
    /// before NCCL's kernel launch (Python's dispatch, ProcessGroupNCCL's
    /// stream joins, events and work bookkeeping, NCCL's enqueue), ns;
    /// charged on a scenario whose `[nccl] caller = "torch"`, per eager
    /// call, before the launch. On an idle GPU CUDA events around the call
    /// hold it. Measured, not fitted on a collective: see the default.
    pub torch_call_ns: Nanos,
}

/// `nccl.torch_call_ns`'s default: calibration/torch-call-probe.py on a lent
/// H100 host (torch 2.11, NCCL 2.28.9; calibration/h100x1/
/// h100x1-torch-call-probe.jsonl): one `dist.all_reduce` between two CUDA
/// events after a synchronize and a barrier, world of one, 100 calls:
/// medians 25.9 µs (12 KiB) and 26.1 µs (96 KiB). At one rank NCCL's
/// in-place allreduce launches nothing, so the interval is torch's host
/// path and NCCL's host enqueue; the launch itself the model charges apart.
/// Back to back the same call takes 14.8–15.3 µs: the single call after a
/// synchronize pays a cold path, which is how b12x's probe times it.
const TORCH_CALL_NS: Nanos = Nanos::new(26000.0);

impl Default for NcclParams {
    fn default() -> Self {
        NcclParams {
            step_overhead_ns: Nanos::new(0.0),
            torch_call_ns: TORCH_CALL_NS,
        }
    }
}

/// What one platform does where its topology file says otherwise: the
/// constants a calibration on that platform's own figures found
/// (`contend calibrate --public`), and the what-if of a fixed firmware.
/// A topology states what its sources printed (a collapse of 2.7 GB/s);
/// these replace it everywhere it applies — the simulator's collapse module resolves
/// every collapsing port's rule from them, the one place that reads them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlatformParams {
    /// Posted-write collapse where the topology marks it; `false`: no port
    /// collapses (what if the firmware were fixed; `--no-collapse`).
    pub collapse: bool,
    /// The rate of every collapsing port's collapsed writes, GB/s, in place
    /// of the topology's `[node.collapse] rate_gbps` (and of
    /// `root_complex.collapse_gbps`); unset: the topology's.
    pub collapse_gbps: Option<f64>,
}

impl Default for PlatformParams {
    fn default() -> Self {
        PlatformParams {
            collapse: true,
            collapse_gbps: None,
        }
    }
}

/// Every constant of the model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelParams {
    pub pcie: PcieParams,
    pub switch: SwitchParams,
    pub root_complex: RootComplexParams,
    pub io_die: IoDieParams,
    pub cross_socket: CrossSocketParams,
    pub host: HostParams,
    pub gpu: GpuParams,
    pub fabric: FabricParams,
    pub ring: RingParams,
    pub nccl: NcclParams,
    pub platform: PlatformParams,
}

/// The stated limits of the model constants. [`ModelParams::check`] holds
/// every field to them (every loaded params file passes it), so no
/// arithmetic of the model can overflow and every packet fits the buffers it
/// crosses. Each is far beyond any machine contend models.
impl ModelParams {
    /// Longest any `_ns` constant may be: 1 s (real ones are below 100 µs).
    pub const MAX_NS: Nanos = Nanos::new(1e9);
    /// Longest software cost per NCCL step: 1 ms (a step on PCIe takes a
    /// few µs).
    pub const MAX_NCCL_STEP_OVERHEAD_NS: Nanos = Nanos::new(1e6);
    /// Lowest and highest rate a `_gbps` constant may give, GB/s: those of
    /// a topology's links ([`contend_topo::limits`]), 1 MB/s to 100 TB/s.
    pub const MIN_GBPS: f64 = 0.001;
    pub const MAX_GBPS: f64 = 100_000.0;
    /// Largest TLP payload and read request the PCIe spec allows (4096 B):
    /// the bound of every packet size (flags, stores, load and copy requests).
    pub const MAX_TLP_BYTES: u32 = 4096;
    /// Smallest receive buffer: one max-size TLP with its header (4160 B),
    /// so every packet the bound above allows fits every buffer it crosses.
    pub const MIN_BUFFER_BYTES: u32 = 4096 + 64;
    /// Largest receive buffer: 16 MiB.
    pub const MAX_BUFFER_BYTES: u32 = 16 << 20;
    /// Most header credits of a receive buffer, and the most an UpdateFC may coalesce.
    pub const MAX_CREDITS: u32 = 4096;
    /// Most outstanding tags of a requester (768 with PCIe 4.0's 10-bit tags).
    pub const MAX_TAGS: u32 = 1024;
    /// Most requests or stores a kernel or copy engine keeps in flight.
    pub const MAX_WINDOW: u32 = 65_536;
    /// Most outstanding remote loads per SM.
    pub const MAX_LOADS_PER_SM: u32 = 4096;
    /// Most loads in flight per thread, and bytes per thread per access.
    pub const MAX_LOADS_PER_THREAD: u32 = 64;
    pub const MAX_BYTES_PER_THREAD: u32 = 256;

    /// Parses a params TOML; missing fields keep their defaults. An error
    /// names the file, the line and column of the offending key, and the field.
    pub fn from_toml(file: &str, text: &str) -> Result<ModelParams, ParamsError> {
        let p: ModelParams = toml::from_str(text).map_err(|e| ParamsError {
            location: Location::of_toml_error(file, text, &e),
            message: e.message().trim().to_string(),
        })?;
        p.check().map_err(|(field, message)| ParamsError {
            location: key_location(file, text, field),
            message,
        })?;
        Ok(p)
    }

    pub fn load(path: &std::path::Path) -> Result<ModelParams, ParamsError> {
        let name = path.display().to_string();
        let text = contend_topo::bounded_read::read_text(path).map_err(|e| {
            let (line, column) = e.line_column();
            ParamsError {
                location: Location {
                    file: name.clone(),
                    line,
                    column,
                    field: None,
                },
                message: format!("cannot read params file: {}", e.reason()),
            }
        })?;
        ModelParams::from_toml(&name, &text)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

/// Where `section.key` is written in a params file: the line and column of
/// its value (of its `[section]` when the key is not written there, of the
/// file when neither is).
fn key_location(file: &str, text: &str, field: &str) -> Location {
    use toml::de::{DeTable, DeValue};
    let (section, key) = field.split_once('.').unwrap_or((field, ""));
    let offset = DeTable::parse(text).ok().and_then(|doc| {
        let (_, sec) = doc.get_ref().iter().find(|(k, _)| k.get_ref() == section)?;
        let inner = match sec.get_ref() {
            DeValue::Table(t) => t
                .iter()
                .find(|(k, _)| k.get_ref() == key)
                .map(|(_, v)| v.span().start),
            _ => None,
        };
        Some(inner.unwrap_or(sec.span().start))
    });
    match offset {
        Some(o) => Location::from_offset(file, text, o).with_field(field),
        None => Location {
            file: file.to_string(),
            line: 0,
            column: 0,
            field: Some(field.to_string()),
        },
    }
}

#[cfg(test)]
mod tests;

mod check;
