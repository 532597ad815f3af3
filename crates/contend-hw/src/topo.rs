//! `contend hw topo`: the live machine as a topology TOML (that
//! `contend_topo::parse_topology` reads) and the [`Machine`] fingerprint
//! stamped on every measurement.
//!
//! Sources: the CUDA driver (names, PCI addresses, SMs, memory clock × bus
//! width, peer access), NVML where the driver's NVML answers (PCIe link
//! generation and width, NVLink state, PCIe distance between GPUs, driver
//! version) and /sys (NUMA node of each GPU). What no source answered is
//! written with a comment saying it was assumed.

use crate::devices::Devices;
use contend_topo::{
    Bytes, BytesPerSec, GpuSpec, LinkKind, LinkSpec, Node, NodeId, NodeKind, PcieGen, PcieSpec,
    Picos, RootComplexSpec, TopoError, Topology, TopologySpec,
};
use contend_workload::{Machine, PcieLinkState};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TopologyLevel};
use serde::Serialize;
use std::fmt::Write as _;

/// One GPU as found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LiveGpu {
    pub name: String,
    pub pci_bus_id: String,
    pub cc: (i32, i32),
    pub sms: u32,
    pub memory_bandwidth_gbps: Option<f64>,
    /// Current PCIe generation and width (NVML).
    pub pcie: Option<(u32, u32)>,
    /// Maximum PCIe generation and width (NVML).
    pub pcie_max: Option<(u32, u32)>,
    pub numa_node: Option<u32>,
}

/// The machine as found: plain data, so rendering is testable without a GPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LiveMachine {
    pub hostname: String,
    pub driver: String,
    pub cuda: String,
    pub gpus: Vec<LiveGpu>,
    /// `X`, `NV18`, `PIX`, `PXB`, `PHB`, `NODE`, `SYS`, or `P2P`/`-` when
    /// only the CUDA driver answered.
    pub link_matrix: Vec<Vec<String>>,
    /// NVLink links between GPU i and j (0: none).
    pub nvlinks: Vec<Vec<u32>>,
    /// Bandwidth of one NVLink link per direction, GB/s.
    pub nvlink_link_gbps: f64,
    /// Things a reader should know (NVML missing, values assumed).
    pub notes: Vec<String>,
}

impl LiveMachine {
    /// The fingerprint stamped on every record.
    pub fn machine(&self) -> Machine {
        let pcie: Vec<Option<PcieLinkState>> = self
            .gpus
            .iter()
            .map(|g| {
                g.pcie
                    .map(|(generation, width)| PcieLinkState { generation, width })
            })
            .collect();
        Machine {
            hostname: self.hostname.clone(),
            gpus: self.gpus.iter().map(|g| g.name.clone()).collect(),
            pci_addresses: self.gpus.iter().map(|g| g.pci_bus_id.clone()).collect(),
            driver: self.driver.clone(),
            cuda: self.cuda.clone(),
            link_matrix: self.link_matrix.clone(),
            pcie_links: pcie
                .iter()
                .map(|l| l.map_or_else(|| "unknown".into(), |l| l.to_string()))
                .collect(),
            pcie,
            nvlinks: self.nvlinks.clone(),
        }
    }

    /// This machine as a topology. Node ids: `gpu0..`, `rc<numa>`,
    /// `mem<numa>`; what no source measured carries a note saying so.
    pub fn topology(&self) -> Result<Topology, TopoError> {
        let names: Vec<&str> = self.gpus.iter().map(|g| g.name.as_str()).collect();
        let model = names.first().copied().unwrap_or("GPU");
        let mut spec = TopologySpec {
            file: Some("live topology".into()),
            name: format!("live: {}x {} on {}", self.gpus.len(), model, self.hostname),
            source: Some(format!(
                "contend hw topo: CUDA driver {} (PCI addresses, SMs, memory clock x bus width, peer access), NVML (PCIe links, NVLink), /sys (NUMA); driver {}",
                self.cuda, self.driver
            )),
            ..TopologySpec::default()
        };
        let node = |id: String, kind: NodeKind, note: Option<String>| {
            (
                Node {
                    id: NodeId(id),
                    kind,
                    note,
                },
                None,
            )
        };
        let link = |a: String, b: String, kind: LinkKind, note: Option<String>| LinkSpec {
            a: NodeId(a),
            b: NodeId(b),
            kind,
            note,
            location: None,
        };
        let mut sockets: Vec<u32> = self.gpus.iter().map(|g| g.numa_node.unwrap_or(0)).collect();
        sockets.sort_unstable();
        sockets.dedup();
        if sockets.is_empty() {
            sockets.push(0);
        }
        for &k in &sockets {
            spec.nodes.push(node(
                format!("rc{k}"),
                NodeKind::RootComplex(RootComplexSpec {
                    socket: k,
                    p2p_bandwidth: None,
                    latency: None,
                    port_p2p_bandwidth: None,
                    memory_bandwidth: None,
                    collapse: None,
                }),
                None,
            ));
            spec.nodes.push(node(
                format!("mem{k}"),
                NodeKind::HostMemory {
                    socket: k,
                    latency: None,
                },
                None,
            ));
        }
        for (i, g) in self.gpus.iter().enumerate() {
            let bw = g
                .memory_bandwidth_gbps
                .filter(|b| b.is_finite() && *b > 0.0);
            let note = bw.is_none().then(|| {
                "memory bandwidth unknown: the driver gave no memory clock or bus width (1000 GB/s assumed)".to_string()
            });
            spec.nodes.push(node(
                format!("gpu{i}"),
                NodeKind::Gpu(GpuSpec {
                    model: format!("{} (PCI {}, sm_{}{})", g.name, g.pci_bus_id, g.cc.0, g.cc.1),
                    sms: g.sms.max(1),
                    memory_bandwidth: BytesPerSec::from_gbps(bw.unwrap_or(1000.0)),
                    tags_10bit: true,
                }),
                note,
            ));
        }
        for (i, g) in self.gpus.iter().enumerate() {
            let rc = g.numa_node.unwrap_or(0);
            let (pg, width, note) = match (g.pcie, g.pcie_max) {
                (Some((pg, w)), Some((mg, mw))) => (
                    pg,
                    w,
                    format!("NVML: current Gen{pg} x{w}, max Gen{mg} x{mw}"),
                ),
                (Some((pg, w)), None) => (pg, w, format!("NVML: current Gen{pg} x{w}")),
                _ => (
                    5,
                    16,
                    "assumed Gen5 x16: NVML did not answer for the PCIe link".to_string(),
                ),
            };
            // An idle GPU may train its link down; the model wants the link's capability.
            let (pg, width) = match g.pcie_max {
                Some((mg, mw)) if mg >= pg && mw >= width => (mg.clamp(1, 6), mw),
                _ => (pg.clamp(1, 6), width),
            };
            let width = u8::try_from(width)
                .ok()
                .filter(|w| [1, 2, 4, 8, 12, 16].contains(w))
                .unwrap_or(16);
            spec.links.push(link(
                format!("gpu{i}"),
                format!("rc{rc}"),
                LinkKind::Pcie(PcieSpec {
                    generation: PcieGen(pg as u8),
                    width,
                    mps: Bytes(256),
                    mrrs: Bytes(512),
                    rcb: Bytes(64),
                }),
                Some(note),
            ));
        }
        for w in sockets.windows(2) {
            spec.links.push(link(
                format!("rc{}", w[0]),
                format!("rc{}", w[1]),
                LinkKind::Cpu {
                    protocol: "UPI".into(),
                    bandwidth: BytesPerSec::from_gbps(100.0),
                    latency: Picos::ZERO,
                    p2p: Default::default(),
                },
                Some("not measured: a placeholder for the CPU link between sockets".into()),
            ));
        }
        for &k in &sockets {
            spec.links.push(link(
                format!("mem{k}"),
                format!("rc{k}"),
                LinkKind::Memory {
                    bandwidth: BytesPerSec::from_gbps(300.0),
                },
                Some("not measured: host memory bandwidth placeholder".into()),
            ));
        }
        for i in 0..self.gpus.len() {
            for j in i + 1..self.gpus.len() {
                let n = self
                    .nvlinks
                    .get(i)
                    .and_then(|r| r.get(j))
                    .copied()
                    .unwrap_or(0);
                if n > 0 {
                    spec.links.push(link(
                        format!("gpu{i}"),
                        format!("gpu{j}"),
                        LinkKind::Nvlink {
                            bandwidth: BytesPerSec::from_gbps(f64::from(n) * self.nvlink_link_gbps),
                            latency: Picos::ZERO,
                        },
                        Some(format!(
                            "NV{n}: {n} NVLink links x {} GB/s per direction",
                            self.nvlink_link_gbps
                        )),
                    ));
                }
            }
        }
        Topology::new(spec)
    }

    /// Topology TOML of this machine (serde's), after header comments that
    /// carry the fingerprint as JSON and the notes.
    pub fn to_toml(&self) -> Result<String, TopoError> {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Written by `contend hw topo` from the live machine ({}).",
            self.hostname
        );
        let _ = writeln!(
            s,
            "# machine = {}",
            serde_json::to_string(&self.machine()).unwrap_or_default()
        );
        for n in &self.notes {
            let _ = writeln!(s, "# note: {n}");
        }
        s.push_str(&self.topology()?.to_toml());
        Ok(s)
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

fn numa_node(bus_id: &str) -> Option<u32> {
    let t = std::fs::read_to_string(format!(
        "/sys/bus/pci/devices/{}/numa_node",
        bus_id.to_lowercase()
    ))
    .ok()?;
    t.trim()
        .parse::<i64>()
        .ok()
        .filter(|v| *v >= 0)
        .map(|v| v as u32)
}

/// Finds out what the machine is. Needs an open [`Devices`] (kernels not required).
pub fn discover(devices: &Devices) -> LiveMachine {
    use cudarc::driver::sys::CUdevice_attribute::*;
    let n = devices.len();
    let mut lm = LiveMachine {
        hostname: hostname(),
        cuda: devices.cuda_version.clone(),
        driver: "unknown".into(),
        link_matrix: vec![vec!["-".to_string(); n]; n],
        nvlinks: vec![vec![0; n]; n],
        nvlink_link_gbps: 25.0,
        ..Default::default()
    };
    for g in &devices.gpus {
        let clock_khz = g
            .attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
            .unwrap_or(0);
        let bus_bits = g
            .attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
            .unwrap_or(0);
        let bw = (clock_khz > 0 && bus_bits > 0)
            .then(|| 2.0 * f64::from(clock_khz) * 1e3 * f64::from(bus_bits) / 8.0 / 1e9);
        lm.gpus.push(LiveGpu {
            name: g.name.clone(),
            pci_bus_id: g.pci_bus_id.clone(),
            cc: g.cc,
            sms: g.sms,
            memory_bandwidth_gbps: bw,
            numa_node: numa_node(&g.pci_bus_id),
            ..Default::default()
        });
    }
    for i in 0..n {
        lm.link_matrix[i][i] = "X".into();
        for j in 0..n {
            if i != j {
                lm.link_matrix[i][j] = if devices.p2p[i][j].access {
                    "P2P".into()
                } else {
                    "-".into()
                };
            }
        }
    }
    match Nvml::init() {
        Ok(nvml) => fill_from_nvml(&nvml, &mut lm),
        Err(e) => lm.notes.push(format!(
            "NVML did not answer ({e}): PCIe links assumed, NVLink unknown"
        )),
    }
    lm
}

fn fill_from_nvml(nvml: &Nvml, lm: &mut LiveMachine) {
    if let Ok(v) = nvml.sys_driver_version() {
        lm.driver = v;
    }
    let devs: Vec<_> = lm
        .gpus
        .iter()
        .map(|g| nvml.device_by_pci_bus_id(g.pci_bus_id.as_str()).ok())
        .collect();
    let nvml_bus: Vec<Option<String>> = devs
        .iter()
        .map(|d| {
            d.as_ref()
                .and_then(|d| d.pci_info().ok())
                .map(|p| p.bus_id.to_lowercase())
        })
        .collect();
    let mut active_links = vec![0u32; lm.gpus.len()];
    for (i, d) in devs.iter().enumerate() {
        let Some(d) = d else {
            lm.notes.push(format!(
                "NVML does not know GPU {} ({})",
                i, lm.gpus[i].pci_bus_id
            ));
            continue;
        };
        let g = &mut lm.gpus[i];
        if let (Ok(pg), Ok(w)) = (d.current_pcie_link_gen(), d.current_pcie_link_width()) {
            g.pcie = Some((pg, w));
        }
        if let (Ok(pg), Ok(w)) = (d.max_pcie_link_gen(), d.max_pcie_link_width()) {
            g.pcie_max = Some((pg, w));
        }
        if g.memory_bandwidth_gbps.is_none()
            && let (Ok(mhz), Ok(bits)) = (d.max_clock_info(Clock::Memory), d.memory_bus_width())
        {
            g.memory_bandwidth_gbps =
                Some(2.0 * f64::from(mhz) * 1e6 * f64::from(bits) / 8.0 / 1e9);
        }
        // NVLink: count active links; note where each leads.
        for l in 0..18u32 {
            let link = d.link_wrapper_for(l);
            if link.is_active().unwrap_or(false) {
                active_links[i] += 1;
                // NVML numbers NVLink versions 1.0, 2.0, 2.2, 3.0, 3.1,
                // 4.0, 5.0 as 1..7: 25 GB/s per link and direction up to
                // NVLink 4 (Hopper: 18 links = 450 GB/s), 50 from NVLink 5.
                if let Ok(v) = link.version()
                    && v >= 7
                {
                    lm.nvlink_link_gbps = 50.0;
                }
                if let Ok(p) = link.remote_pci_info() {
                    let rb = p.bus_id.to_lowercase();
                    if let Some(j) = nvml_bus
                        .iter()
                        .position(|b| b.as_deref() == Some(rb.as_str()))
                        && j != i
                    {
                        lm.nvlinks[i][j] += 1;
                    }
                }
            }
        }
    }
    let n = lm.gpus.len();
    for i in 0..n {
        for j in 0..n {
            if i == j {
                continue;
            }
            let (Some(a), Some(b)) = (&devs[i], &devs[j]) else {
                continue;
            };
            let nv = a.p2p_status(
                b,
                nvml_wrapper::enum_wrappers::device::P2pCapabilitiesIndex::NvLink,
            );
            let nv_ok = matches!(nv, Ok(nvml_wrapper::enum_wrappers::device::P2pStatus::Ok));
            if nv_ok && lm.nvlinks[i][j] == 0 {
                // Links lead to NVSwitches: every active link carries traffic to j.
                lm.nvlinks[i][j] = active_links[i];
            }
            if nv_ok && lm.nvlinks[i][j] > 0 {
                lm.link_matrix[i][j] = format!("NV{}", lm.nvlinks[i][j]);
                continue;
            }
            lm.nvlinks[i][j] = 0;
            let b2 = nvml.device_by_pci_bus_id(lm.gpus[j].pci_bus_id.as_str());
            if let Ok(b2) = b2
                && let Ok(level) = a.topology_common_ancestor(b2)
            {
                lm.link_matrix[i][j] = match level {
                    TopologyLevel::Internal => "PIX",
                    TopologyLevel::Single => "PIX",
                    TopologyLevel::Multiple => "PXB",
                    TopologyLevel::HostBridge => "PHB",
                    TopologyLevel::Node => "NODE",
                    TopologyLevel::System => "SYS",
                }
                .into();
            }
        }
    }
    // Symmetric link counts (take the smaller if the two ends disagree).
    for i in 0..n {
        for j in i + 1..n {
            let m = lm.nvlinks[i][j].min(lm.nvlinks[j][i]);
            lm.nvlinks[i][j] = m;
            lm.nvlinks[j][i] = m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_h200() -> LiveMachine {
        let g = |bus: &str| LiveGpu {
            name: "NVIDIA H200".into(),
            pci_bus_id: bus.into(),
            cc: (9, 0),
            sms: 132,
            memory_bandwidth_gbps: Some(4915.2),
            pcie: Some((5, 16)),
            pcie_max: Some((5, 16)),
            numa_node: None,
        };
        LiveMachine {
            hostname: "h200x2".into(),
            driver: "580.159.04".into(),
            cuda: "13.0".into(),
            gpus: vec![g("0000:00:06.0"), g("0000:00:07.0")],
            link_matrix: vec![
                vec!["X".into(), "NV18".into()],
                vec!["NV18".into(), "X".into()],
            ],
            nvlinks: vec![vec![0, 18], vec![18, 0]],
            nvlink_link_gbps: 25.0,
            notes: vec![],
        }
    }

    #[test]
    fn live_toml_parses_as_a_topology() {
        let lm = two_h200();
        let text = lm.to_toml().unwrap();
        let topo = contend_topo::parse_topology("live.toml", &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(topo.gpus().len(), 2);
        let (g0, g1) = (topo.lookup("gpu0").unwrap(), topo.lookup("gpu1").unwrap());
        // NVLink is a direct hop.
        assert_eq!(topo.route(g0, g1).unwrap().hops.len(), 1);
        assert!(text.contains("0000:00:07.0"));
        assert!(text.contains("bandwidth_gbps = 450.0"));
        let m = lm.machine();
        assert_eq!(m.pcie_links, vec!["Gen5 x16", "Gen5 x16"]);
        assert_eq!(m.link_matrix[0][1], "NV18");
        // the typed facts beside the sentences say the same
        let gen5 = PcieLinkState {
            generation: 5,
            width: 16,
        };
        assert_eq!(m.pcie, vec![Some(gen5); 2]);
        assert_eq!((m.pcie_link(1), m.nvlinked(0, 1)), (Some(gen5), Some(true)));
    }

    #[test]
    fn live_toml_without_nvml_or_nvlink_still_parses() {
        let mut lm = two_h200();
        for g in &mut lm.gpus {
            g.pcie = None;
            g.pcie_max = None;
            g.memory_bandwidth_gbps = None;
            g.numa_node = Some(1);
        }
        lm.gpus[0].numa_node = Some(0);
        lm.nvlinks = vec![vec![0, 0], vec![0, 0]];
        lm.notes.push("NVML did not answer".into());
        let text = lm.to_toml().unwrap();
        let topo = contend_topo::parse_topology("live.toml", &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(topo.gpus().len(), 2);
        assert!(text.contains("assumed"));
    }
}
