//! The details pane: what the selected socket, node or link is, its model
//! constants and how busy the shown run kept it.

use super::style::{level_style, pane, pct};
use crate::app::App;
use crate::heat::level;
use crate::tree::Selected;
use contend_topo::{BytesPerSec, LinkKind, NodeKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

pub(super) fn details_pane(app: &App, area: Rect, buf: &mut Buffer) {
    let block = pane(" Details ", false);
    let inner = block.inner(area);
    block.render(area, buf);
    let topo = app.topology();
    let heat = app.heat();
    let alg = app
        .shown_algorithm()
        .map(|a| a.name().to_string())
        .unwrap_or_else(|| "no run yet".into());
    let kv = |k: &str, v: String| {
        Line::from(vec![
            Span::raw(format!("{k:<10}")).fg(Color::DarkGray),
            Span::raw(v),
        ])
    };
    let p = &app.params;
    let mut lines: Vec<Line> = vec![];
    match app.selected() {
        Selected::Nothing => lines.push(Line::from("nothing selected")),
        Selected::Socket(s) => {
            let of = |f: &dyn Fn(&NodeKind) -> bool| -> Vec<String> {
                topo.nodes()
                    .iter()
                    .enumerate()
                    .filter(|(i, n)| {
                        f(&n.kind) && topo.socket_of(contend_topo::NodeIdx(*i as u32)) == Some(s)
                    })
                    .map(|(_, n)| n.id.0.clone())
                    .collect()
            };
            lines.push(Line::from(format!("socket {s}")).bold());
            lines.push(kv(
                "root cx",
                of(&|k| matches!(k, NodeKind::RootComplex(_))).join(", "),
            ));
            lines.push(kv(
                "memory",
                of(&|k| matches!(k, NodeKind::HostMemory { .. })).join(", "),
            ));
            let g = of(&|k| matches!(k, NodeKind::Gpu(_)));
            lines.push(kv("GPUs", format!("{} ({})", g.len(), g.join(" "))));
        }
        Selected::Node(n) => {
            let node = topo.node(n);
            let ranks = app
                .results
                .sim
                .as_ref()
                .map(|s| s.rank_names.clone())
                .unwrap_or_default();
            match &node.kind {
                NodeKind::Gpu(g) => {
                    lines.push(Line::from(format!("{} · GPU {}", node.id, g.model)).bold());
                    lines.push(kv(
                        "compute",
                        format!("{} SMs, memory {}", g.sms, g.memory_bandwidth),
                    ));
                    let up = topo
                        .upstream_root(n)
                        .map(|r| topo.node(r).id.0.clone())
                        .unwrap_or_else(|| "—".into());
                    let sw = topo
                        .parent_switch(n)
                        .map(|r| format!(" via {}", topo.node(r).id))
                        .unwrap_or_default();
                    lines.push(kv(
                        "attached",
                        format!(
                            "{up}{sw}, socket {}",
                            topo.socket_of(n).map_or("—".into(), |s| s.to_string())
                        ),
                    ));
                    let rank = ranks.iter().position(|r| *r == node.id.0);
                    lines.push(kv(
                        "rank",
                        rank.map_or("not a rank".into(), |r| format!("{r} of {}", ranks.len())),
                    ));
                }
                NodeKind::Switch(sw) => {
                    lines.push(Line::from(format!("{} · PCIe switch", node.id)).bold());
                    let lat = sw.latency.map_or(
                        format!("{} ns (model default)", p.switch.latency_ns.get()),
                        |l| format!("{l} (topology)"),
                    );
                    lines.push(kv("latency", lat));
                    let down = topo.links().iter().filter(|l| l.b == n).count();
                    lines.push(kv("ports", format!("{down} downstream, 1 upstream")));
                    if let Some(c) = &sw.chip {
                        lines.push(kv("chip", format!("partition of {c}")));
                    }
                    if let Some(c) = &sw.collapse {
                        lines.push(kv("collapse", collapse_text(c)));
                    }
                    lines.push(
                        Line::from("P2P between its ports never reaches the root complex")
                            .fg(Color::DarkGray),
                    );
                }
                NodeKind::RootComplex(rc) => {
                    lines.push(
                        Line::from(format!("{} · root complex, socket {}", node.id, rc.socket))
                            .bold(),
                    );
                    let bw = match (rc.p2p_bandwidth, p.root_complex.p2p_bandwidth_gbps) {
                        (Some(b), _) => format!("{b} (topology)"),
                        (None, Some(g)) => {
                            format!("{} (model default)", BytesPerSec::from_gbps(g))
                        }
                        (None, None) => "no cap beyond its ports".to_string(),
                    };
                    lines.push(kv("p2p fwd", bw));
                    let lat = rc.latency.map_or(
                        format!("{} ns (model default)", p.root_complex.latency_ns.get()),
                        |l| format!("{l} (topology)"),
                    );
                    lines.push(kv("latency", lat));
                    lines.push(kv(
                        "collapse",
                        rc.collapse.as_ref().map_or("no".into(), collapse_text),
                    ));
                    if let Some(u) = heat.as_ref().and_then(|h| h.fabric.get(&n).copied()) {
                        lines.push(Line::from(vec![
                            Span::raw(format!("{:<10}", "p2p busy")).fg(Color::DarkGray),
                            Span::styled(
                                format!("{} ({alg})", pct(u).trim()),
                                level_style(level(u)),
                            ),
                        ]));
                    }
                }
                NodeKind::HostMemory { socket, latency } => {
                    lines.push(
                        Line::from(format!("{} · host memory, socket {socket}", node.id)).bold(),
                    );
                    let lat = latency.map_or(
                        format!("{} ns (model default)", p.host.memory_latency_ns.get()),
                        |l| format!("{l} (topology)"),
                    );
                    lines.push(kv("latency", lat));
                }
                NodeKind::CpuInterconnect { socket, .. } => {
                    lines.push(
                        Line::from(format!("{} · CPU interconnect, socket {socket}", node.id))
                            .bold(),
                    );
                }
            }
            if let Some(l) = topo.links().iter().find(|l| {
                (l.a == n || l.b == n)
                    && matches!(l.kind, LinkKind::Pcie(_) | LinkKind::Memory { .. })
            }) && !matches!(
                node.kind,
                NodeKind::RootComplex(_) | NodeKind::Switch { .. }
            ) {
                lines.push(kv("link", l.kind.describe()));
            }
            lines.push(Line::from("→ selects the link above it").fg(Color::DarkGray));
        }
        Selected::Link(l) => {
            let link = topo.link(l);
            let (a, b) = (&topo.node(link.a).id, &topo.node(link.b).id);
            lines.push(Line::from(format!("{a} ↔ {b} · {} link", link.kind.name())).bold());
            lines.push(Line::from(link.kind.describe()));
            match &link.kind {
                LinkKind::Pcie(s) => {
                    let eff = s.raw_rate().scale(1.0 - p.pcie.dllp_overhead);
                    lines.push(kv(
                        "per dir",
                        format!("{} raw, {eff} after DLLP", s.raw_rate()),
                    ));
                    lines.push(kv(
                        "latency",
                        format!("{} ns per hop", p.pcie.link_latency_ns.get()),
                    ));
                }
                LinkKind::Nvlink { bandwidth, latency }
                | LinkKind::Cpu {
                    bandwidth, latency, ..
                } => {
                    lines.push(kv("per dir", format!("{bandwidth}, latency {latency}")));
                }
                LinkKind::Memory { bandwidth } => {
                    lines.push(kv("bandwidth", bandwidth.to_string()))
                }
                LinkKind::SwitchFabric { bandwidth, latency } => {
                    let rate = bandwidth.map_or("no cap".to_string(), |b| b.to_string());
                    lines.push(kv("per dir", format!("{rate}, latency {latency}")));
                }
                LinkKind::Die => {}
            }
            if let Some(d) = heat.as_ref().and_then(|h| h.links.get(&l).copied()) {
                lines.push(Line::from(vec![
                    Span::raw(format!("{:<10}", "busy")).fg(Color::DarkGray),
                    Span::styled(
                        format!("{a}→{b} {}", pct(d[0]).trim()),
                        level_style(level(d[0])),
                    ),
                    Span::raw("  "),
                    Span::styled(
                        format!("{b}→{a} {}", pct(d[1]).trim()),
                        level_style(level(d[1])),
                    ),
                    Span::raw(format!("  ({alg})")).fg(Color::DarkGray),
                ]));
            }
        }
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(inner, buf);
}

/// A collapse rule for people.
fn collapse_text(c: &contend_topo::CollapseSpec) -> String {
    let n = |v: Option<u32>| v.map_or("default".into(), |v| v.to_string());
    format!(
        "posted writes from {} sources to {} root complexes collapse{}",
        n(c.min_sources),
        n(c.min_targets),
        c.rate.map(|r| format!(" to {r}")).unwrap_or_default()
    )
}
