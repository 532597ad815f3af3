//! The CPU side: dies joining a socket's host bridges to its iod, the
//! link between sockets (xGMI or UPI by the CPU's vendor), and each
//! socket's memory; their rates are in no input (placeholders, warned).

use super::{Ctx, Root, Warnings};
use crate::import::DevKind;
use crate::write::{LinkEntry, TopologyFile};

pub(super) fn write(cx: &Ctx<'_>, file: &mut TopologyFile, w: &mut Warnings) {
    let facts = cx.facts;
    let by_socket = &cx.roots.by_socket;
    let rc_id = |r: Root| cx.roots.rc_id(r);
    let hub = |s: u32| cx.roots.hub(s);
    let vendor = facts
        .cpus
        .values()
        .find_map(|c| c.vendor.clone())
        .or_else(|| {
            facts.devices.values().find_map(|d| {
                let n = d.name.as_deref()?;
                if n.contains("Advanced Micro Devices") {
                    Some("AuthenticAMD".into())
                } else if n.starts_with("Intel Corporation") && d.kind != Some(DevKind::Gpu) {
                    Some("GenuineIntel".into())
                } else {
                    None
                }
            })
        });
    for (s, rs) in by_socket {
        if rs.len() > 1 {
            for r in rs {
                file.link.push(LinkEntry {
                    a: rc_id(*r),
                    b: format!("iod{s}"),
                    kind: "die".into(),
                    ..LinkEntry::default()
                });
            }
        }
    }
    let sockets: Vec<u32> = by_socket.keys().copied().collect();
    for pair in sockets.windows(2) {
        let (proto, example) = match vendor.as_deref() {
            Some("AuthenticAMD") => (
                "xGMI",
                "EPYC 9004/9005: 3–4 xGMI x16 links of 32 Gb/s, 192–256 GB/s per direction",
            ),
            Some("GenuineIntel") => (
                "UPI",
                "Xeon 4th/5th gen: 3–4 UPI links of 16–20 GT/s, ~ 96–160 GB/s per direction",
            ),
            _ => (
                "UPI",
                "the CPU vendor is in no input either: set `protocol`",
            ),
        };
        let (a, b) = (hub(pair[0]), hub(pair[1]));
        w.add(
            format!("link {a}–{b}"),
            "bandwidth_gbps",
            format!(
                "the CPU link's rate is in no input: written as 128 GB/s, a placeholder ({example})"
            ),
        );
        file.link.push(LinkEntry {
            a,
            b,
            kind: "cpu".into(),
            protocol: Some(proto.into()),
            bandwidth_gbps: Some(128.0),
            note: Some("placeholder rate".into()),
            ..LinkEntry::default()
        });
    }
    for s in &sockets {
        let h = hub(*s);
        w.add(
            format!("link mem{s}–{h}"),
            "bandwidth_gbps",
            "host memory bandwidth is in no input: written as 300 GB/s, a placeholder (channels × MT/s × 8 B, e.g. 12 × DDR5-4800 = 460.8 GB/s)",
        );
        file.link.push(LinkEntry {
            a: format!("mem{s}"),
            b: h,
            kind: "memory".into(),
            bandwidth_gbps: Some(300.0),
            note: Some("placeholder rate".into()),
            ..LinkEntry::default()
        });
    }
}
