//! Drawing: reads the [`App`], never changes it.

use crate::app::{App, Focus, TABS, Tab};
use crate::controls::{FIELDS, Field};
use crate::heat::{Heat, Level, level};
use crate::results::SimResults;
use crate::tree::{RowKind, Selected, link_label, node_label};
use contend_sim::SpanKind;
use contend_topo::{Bytes, BytesPerSec, LinkKind, NodeKind, Picos, Topology};
use contend_workload::{Algorithm, Measured, Workload};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Borders, Chart, Clear, Dataset, GraphType, Paragraph, Widget, Wrap,
};

/// Smallest screen the full layout needs; below it a short note is shown.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

/// Draws the whole screen.
pub fn draw(app: &App, f: &mut Frame) {
    f.render_widget(app, f.area());
}

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            let msg = format!(
                "contend tui needs {MIN_WIDTH}×{MIN_HEIGHT} (this is {}×{}) · q quits",
                area.width, area.height
            );
            Paragraph::new(msg)
                .wrap(Wrap { trim: true })
                .render(area, buf);
            return;
        }
        let scen_h = if area.width >= 110 { 3 } else { 4 };
        let [title, scen, main, status] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(scen_h),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(area);
        let left_w = (area.width * 42 / 100).clamp(36, 56);
        let [left, right] =
            Layout::horizontal([Constraint::Length(left_w), Constraint::Fill(1)]).areas(main);
        let det_h = if main.height >= 28 { 11 } else { 8 };
        let [topo_a, det_a] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(det_h)]).areas(left);
        title_bar(self, title, buf);
        scenario_bar(self, scen, buf);
        topology_pane(self, topo_a, buf);
        details_pane(self, det_a, buf);
        results_pane(self, right, buf);
        status_bar(self, status, buf);
        if self.view.help {
            help_overlay(area, buf);
        }
    }
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// A colour per algorithm, the same on every chart.
pub fn alg_color(a: Algorithm) -> Color {
    const C: [Color; 7] = [
        Color::LightRed,
        Color::LightYellow,
        Color::LightGreen,
        Color::LightCyan,
        Color::LightBlue,
        Color::LightMagenta,
        Color::White,
    ];
    C[Algorithm::ALL.iter().position(|x| *x == a).unwrap_or(0) % C.len()]
}

fn level_style(l: Level) -> Style {
    match l {
        Level::Hot => Style::new()
            .fg(Color::LightRed)
            .add_modifier(Modifier::BOLD),
        Level::Warm => Style::new().fg(Color::Yellow),
        Level::Low => Style::new().fg(Color::Green),
        Level::Idle => Style::new().fg(Color::DarkGray),
    }
}

/// `4.413 ms`, `49.40 us`, `812 ns`.
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "—".into();
    }
    Picos::from_ns_f64(ns.max(0.0)).to_string()
}

fn pct(u: f64) -> String {
    format!("{:>3.0}%", (u * 100.0).clamp(0.0, 100.0))
}

fn pane<'a>(title: &'a str, focused: bool) -> Block<'a> {
    let b = Block::default().borders(Borders::ALL);
    if focused {
        b.title(Line::from(vec![Span::raw("▶ "), Span::raw(title).bold()]))
            .border_style(Style::new().fg(Color::Cyan))
    } else {
        b.title(Line::from(title))
            .border_style(Style::new().fg(Color::DarkGray))
    }
}

fn waiting(app: &App, area: Rect, buf: &mut Buffer, what: &str, done: usize, total: usize) {
    let w = (area.width as usize).saturating_sub(20).clamp(4, 40);
    let filled = (w * done).checked_div(total).unwrap_or(0).min(w);
    let bar = format!(
        "[{}{}] {done}/{total}",
        "█".repeat(filled),
        "░".repeat(w - filled)
    );
    Paragraph::new(vec![
        Line::from(format!("{} {what}…", SPINNER[(app.frame % 10) as usize])).fg(Color::Yellow),
        Line::from(bar),
        Line::from("the screen stays live: keys work while the worker runs").fg(Color::DarkGray),
    ])
    .render(area, buf);
}

fn title_bar(app: &App, area: Rect, buf: &mut Buffer) {
    let mut spans = vec![
        Span::raw(" contend ").bold().reversed(),
        Span::raw(" "),
        Span::raw(app.topology().name.clone()).bold(),
    ];
    if app.measured_count() > 0 {
        let state = if app.overlay.show { "on" } else { "off" };
        spans.push(
            Span::raw(format!(
                "  · {} measured records ({state}, m)",
                app.measured_count()
            ))
            .fg(Color::LightMagenta),
        );
    }
    Paragraph::new(Line::from(spans)).render(area, buf);
}

fn scenario_bar(app: &App, area: Rect, buf: &mut Buffer) {
    let focused = app.view.focus == Focus::Scenario;
    let block = pane(" Scenario  (w r a p t, Enter re-runs) ", focused);
    let inner = block.inner(area);
    block.render(area, buf);
    let labels = |f: Field| match f {
        Field::Workload => "workload",
        Field::Ranks => "ranks",
        Field::Algorithms => "algorithms",
        Field::Placement => "placement",
        Field::Fidelity => "fidelity",
    };
    let field_spans = |f: Field| -> Vec<Span<'static>> {
        let on = focused && app.controls.field == f;
        let v = app.controls.value(f);
        let value = if on {
            Span::raw(format!("◂{v}▸")).reversed().bold()
        } else {
            Span::raw(format!(" {v} ")).bold()
        };
        vec![
            Span::raw(format!(" {}", labels(f))).fg(Color::DarkGray),
            value,
        ]
    };
    if inner.height >= 2 {
        let l1: Vec<Span> = [0, 1]
            .iter()
            .flat_map(|&i| field_spans(FIELDS[i]))
            .collect();
        let l2: Vec<Span> = [2, 3, 4]
            .iter()
            .flat_map(|&i| field_spans(FIELDS[i]))
            .collect();
        Paragraph::new(vec![Line::from(l1), Line::from(l2)]).render(inner, buf);
    } else {
        let l: Vec<Span> = FIELDS.iter().flat_map(|&f| field_spans(f)).collect();
        Paragraph::new(Line::from(l)).render(inner, buf);
    }
}

fn topology_pane(app: &App, area: Rect, buf: &mut Buffer) {
    let topo = app.topology();
    let heat = app.heat();
    let title = match app.shown_algorithm() {
        Some(a) => format!(" Topology · use: {a} "),
        None => " Topology ".to_string(),
    };
    let block = pane(&title, app.view.focus == Focus::Topology);
    let inner = block.inner(area);
    block.render(area, buf);
    let h = inner.height as usize;
    if h == 0 {
        return;
    }
    let offset = app.tree.sel.saturating_sub(h.saturating_sub(1));
    let width = inner.width as usize;
    let lines: Vec<Line> = app
        .tree
        .rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(h)
        .map(|(i, row)| tree_line(app, topo, heat.as_ref(), i, &row.prefix, &row.kind, width))
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

fn tree_line<'a>(
    app: &App,
    topo: &Topology,
    heat: Option<&Heat>,
    i: usize,
    prefix: &str,
    kind: &RowKind,
    width: usize,
) -> Line<'a> {
    let sel = i == app.tree.sel;
    let focus = app.view.focus == Focus::Topology;
    let hi = |s: Span<'a>, on: bool| {
        if on {
            if focus { s.reversed() } else { s.underlined() }
        } else {
            s
        }
    };
    let mut spans: Vec<Span<'a>> = vec![Span::raw(prefix.to_string()).fg(Color::DarkGray)];
    let mut util: Option<(String, f64)> = None;
    match kind {
        RowKind::Heading(t) => spans.push(Span::raw((*t).to_string()).fg(Color::DarkGray).italic()),
        RowKind::Socket(s) => spans.push(hi(Span::raw(format!("socket {s}")).bold(), sel)),
        RowKind::Node { node, uplink } => {
            let n = topo.node(*node);
            let style = match n.kind {
                NodeKind::Gpu(_) => Style::new().fg(Color::LightGreen),
                NodeKind::RootComplex(_) | NodeKind::CpuInterconnect { .. } => {
                    Style::new().fg(Color::LightCyan)
                }
                NodeKind::Switch { .. } => Style::new().fg(Color::LightBlue),
                NodeKind::HostMemory { .. } => Style::new().fg(Color::Gray),
            };
            spans.push(Span::raw(" "));
            spans.push(hi(
                Span::styled(node_label(topo, *node), style),
                sel && !(app.tree.on_link && uplink.is_some()),
            ));
            if let Some(l) = uplink {
                let u = heat.and_then(|h| h.link(*l));
                let st = u.map_or(Style::new().fg(Color::Gray), |u| level_style(level(u)));
                spans.push(Span::raw(" ─ ").fg(Color::DarkGray));
                let label = if width < 44 {
                    short_link_label(&topo.link(*l).kind)
                } else {
                    link_label(&topo.link(*l).kind)
                };
                spans.push(hi(Span::styled(label, st), sel && app.tree.on_link));
                if let Some(u) = u {
                    util = Some((pct(u), u));
                }
            }
            if let Some(u) = heat.and_then(|h| h.fabric.get(node).copied()) {
                util = Some((format!("p2p{}", pct(u)), u));
            }
        }
        RowKind::Link(l) => {
            let link = topo.link(*l);
            let u = heat.and_then(|h| h.link(*l));
            let st = u.map_or(Style::new().fg(Color::Gray), |u| level_style(level(u)));
            spans.push(hi(
                Span::raw(format!(
                    " {} ═ {} ",
                    topo.node(link.a).id,
                    topo.node(link.b).id
                )),
                sel,
            ));
            spans.push(Span::styled(
                if width < 44 {
                    short_link_label(&link.kind)
                } else {
                    link_label(&link.kind)
                },
                st,
            ));
            if let Some(u) = u {
                util = Some((pct(u), u));
            }
        }
    }
    if let Some((text, u)) = util {
        let used: usize = spans.iter().map(Span::width).sum();
        let marker = if level(u) == Level::Hot { "▲" } else { " " };
        let pad = width.saturating_sub(used + text.len() + 1).max(1);
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(
            format!("{marker}{text}"),
            level_style(level(u)),
        ));
    }
    Line::from(spans)
}

/// The link label for a narrow tree: the rate is in the details pane.
fn short_link_label(k: &LinkKind) -> String {
    match k {
        LinkKind::Pcie(p) => format!("Gen{} x{}", p.generation.0, p.width),
        _ => link_label(k).replace(" GB/s", "G"),
    }
}

fn details_pane(app: &App, area: Rect, buf: &mut Buffer) {
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
                NodeKind::Switch { latency } => {
                    lines.push(Line::from(format!("{} · PCIe switch", node.id)).bold());
                    let lat = latency
                        .map_or(format!("{} ns (model default)", p.switch.latency_ns), |l| {
                            format!("{l} (topology)")
                        });
                    lines.push(kv("latency", lat));
                    let down = topo.links().iter().filter(|l| l.b == n).count();
                    lines.push(kv("ports", format!("{down} downstream, 1 upstream")));
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
                    let bw = rc.p2p_bandwidth.map_or(
                        format!(
                            "{} (model default)",
                            BytesPerSec::from_gbps(p.root_complex.p2p_bandwidth_gbps)
                        ),
                        |b| format!("{b} (topology)"),
                    );
                    lines.push(kv("p2p fwd", bw));
                    let lat = rc.latency.map_or(
                        format!("{} ns (model default)", p.root_complex.latency_ns),
                        |l| format!("{l} (topology)"),
                    );
                    lines.push(kv("latency", lat));
                    lines.push(kv(
                        "collapse",
                        if rc.posted_write_collapse {
                            "posted writes to several RCs collapse".into()
                        } else {
                            "no".into()
                        },
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
                        format!("{} ns (model default)", p.host.memory_latency_ns),
                        |l| format!("{l} (topology)"),
                    );
                    lines.push(kv("latency", lat));
                }
                NodeKind::CpuInterconnect { socket } => {
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
                        format!("{} ns per hop", p.pcie.link_latency_ns),
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

fn results_pane(app: &App, area: Rect, buf: &mut Buffer) {
    let mut tabs: Vec<Span> = vec![Span::raw(" ")];
    for t in TABS {
        if t == app.view.tab {
            tabs.push(Span::raw(format!("[{}]", t.title())).bold().fg(Color::Cyan));
        } else {
            tabs.push(Span::raw(format!(" {} ", t.title())).fg(Color::Gray));
        }
    }
    tabs.push(Span::raw(" "));
    let focused = app.view.focus == Focus::Results;
    let mut block = Block::default()
        .borders(Borders::ALL)
        .title(Line::from(tabs));
    block = block.border_style(Style::new().fg(if focused {
        Color::Cyan
    } else {
        Color::DarkGray
    }));
    if focused {
        block = block.title(Line::from("▶ Results ").bold().right_aligned());
    }
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 2 || inner.width < 10 {
        return;
    }

    // The first line always names the winner.
    let winner = app
        .results
        .sim
        .as_ref()
        .and_then(|sim| sim.winner().map(|w| (sim, w)));
    let head_line = match winner {
        Some((sim, w)) => {
            let slowest = sim.slowest();
            let mut s = vec![
                Span::raw("★ winner: ").bold(),
                Span::raw(w.algorithm.name())
                    .bold()
                    .fg(alg_color(w.algorithm)),
                Span::raw(format!(" · {}", fmt_ns(w.time_ns))),
            ];
            if let Some(sl) = slowest
                && sl.algorithm != w.algorithm
                && w.time_ns > 0.0
            {
                s.push(
                    Span::raw(format!(
                        " ({:.2}× faster than {})",
                        sl.time_ns / w.time_ns,
                        sl.algorithm
                    ))
                    .fg(Color::Gray),
                );
            }
            if app.jobs.sim.running {
                s.push(Span::raw("  (updating…)").fg(Color::Yellow));
            }
            Line::from(s)
        }
        _ if app.jobs.sim.running => Line::from(format!(
            "{} simulating {}/{} runs…",
            SPINNER[(app.frame % 10) as usize],
            app.jobs.sim.done,
            app.jobs.sim.total
        ))
        .fg(Color::Yellow),
        _ => Line::from("no result yet (Enter runs the scenario)"),
    };
    let head_h = if head_line.width() > inner.width as usize {
        2
    } else {
        1
    };
    let [head, body] =
        Layout::vertical([Constraint::Length(head_h), Constraint::Fill(1)]).areas(inner);
    Paragraph::new(head_line)
        .wrap(Wrap { trim: true })
        .render(head, buf);
    if let Some(e) = &app.jobs.sim.error
        && app.view.tab != Tab::Sweep
    {
        Paragraph::new(vec![
            Line::from("simulation failed:").fg(Color::LightRed).bold(),
            Line::from(e.clone()),
        ])
        .wrap(Wrap { trim: false })
        .render(body, buf);
        return;
    }
    match app.view.tab {
        Tab::Times => {
            // Tall enough: the size sweep goes under the bars.
            let need = app.results.sim.as_ref().map_or(4, |s| {
                s.rows.len()
                    + 3
                    + if app.overlay.show {
                        s.measured_extra.len()
                            + s.rows.iter().filter(|r| r.measured_ns.is_some()).count()
                    } else {
                        0
                    }
            }) as u16
                + u16::from(app.notice.is_some());
            if body.height >= need + 14 {
                let [t, sw] =
                    Layout::vertical([Constraint::Length(need), Constraint::Fill(1)]).areas(body);
                times_view(app, t, buf);
                sweep_view(app, sw, buf);
            } else {
                times_view(app, body, buf);
            }
        }
        Tab::Sweep => sweep_view(app, body, buf),
        Tab::Links => links_view(app, body, buf),
        Tab::Timeline => timeline_view(app, body, buf),
    }
}

fn times_view(app: &App, area: Rect, buf: &mut Buffer) {
    let Some(sim) = &app.results.sim else {
        waiting(
            app,
            area,
            buf,
            "simulating",
            app.jobs.sim.done,
            app.jobs.sim.total,
        );
        return;
    };
    let wide = area.width >= 66;
    let mut lines: Vec<Line> = vec![
        Line::from(format!(
            "{} · {} ranks · {} · {} — {}",
            workload_label(&sim.workload),
            sim.rank_names.len(),
            sim.placement,
            sim.fidelity,
            metric_label(&sim.workload)
        ))
        .fg(Color::Gray),
    ];
    let measured = app.overlay.show;
    let max = sim
        .rows
        .iter()
        .map(|r| r.time_ns)
        .chain(
            sim.rows
                .iter()
                .filter_map(|r| r.measured_ns.filter(|_| measured)),
        )
        .chain(sim.measured_extra.iter().map(|m| m.ns).filter(|_| measured))
        .fold(0.0, f64::max);
    let name_w = 15;
    let tail_w = if wide { 32 } else { 11 };
    let bar_w = (area.width as usize)
        .saturating_sub(name_w + tail_w + 1)
        .max(1);
    let bar = |v: f64, ch: &str| {
        let n = if max > 0.0 {
            ((v / max) * bar_w as f64).round() as usize
        } else {
            0
        };
        format!("{:<bar_w$}", ch.repeat(n.clamp(1, bar_w)))
    };
    let shown = app.shown_algorithm();
    let w = sim.winner().map_or(0.0, |r| r.time_ns);
    for (i, r) in sim.rows.iter().enumerate() {
        let sel = Some(r.algorithm) == shown;
        let name = Span::raw(format!(
            "{}{:<14}",
            if sel { "▸" } else { " " },
            r.algorithm.name()
        ));
        let name = if sel { name.bold() } else { name };
        let mut s = vec![
            name,
            Span::raw(bar(r.time_ns, "█")).fg(alg_color(r.algorithm)),
            Span::raw(format!(" {:>9}", fmt_ns(r.time_ns))),
        ];
        if Some(i) == sim.winner {
            s.push(Span::raw(" ★    ").bold().fg(Color::Yellow));
        } else if wide && w > 0.0 {
            s.push(Span::raw(format!(" {:>4.2}×", r.time_ns / w)).fg(Color::Gray));
        }
        if wide && sim.is_verify_step() {
            s.push(Span::raw(format!("  p50 {:>9}", fmt_ns(r.p50_ns))).fg(Color::DarkGray));
        }
        lines.push(Line::from(s));
        if measured && let Some(m) = r.measured_ns {
            lines.push(Line::from(vec![
                Span::raw(format!(" {:<14}", "  measured")).fg(Color::LightMagenta),
                Span::raw(bar(m, "▒")).fg(Color::LightMagenta),
                Span::raw(format!(" {:>9} ◆", fmt_ns(m))).fg(Color::LightMagenta),
            ]));
        }
    }
    if measured {
        for m in &sim.measured_extra {
            lines.push(Line::from(vec![
                Span::raw(format!(" {:<14}", format!("{} (hw)", m.series))).fg(Color::LightMagenta),
                Span::raw(bar(m.ns, "▒")).fg(Color::LightMagenta),
                Span::raw(format!(" {:>9} ◆", fmt_ns(m.ns))).fg(Color::LightMagenta),
            ]));
        }
    }
    if let Some(n) = &app.notice {
        lines.push(Line::from(n.clone()).fg(Color::Yellow));
    }
    lines.push(
        Line::from("[ ] choose the algorithm shown in timeline and topology").fg(Color::DarkGray),
    );
    Paragraph::new(lines).render(area, buf);
}

/// `verify step: 122 × 42 KiB`, `allreduce 64 KiB`.
fn workload_label(w: &Workload) -> String {
    match w {
        Workload::VerifyStep(v) => format!("verify step: {} × {}", v.allreduces(), v.size()),
        Workload::Allreduce { sizes, .. } => {
            format!("allreduce {}", sizes.first().copied().unwrap_or_default())
        }
        Workload::Transfer { .. } => "transfer".to_string(),
    }
}

/// What the bars measure: `step time` or `allreduce p50`.
fn metric_label(w: &Workload) -> &'static str {
    match w {
        Workload::VerifyStep(_) => "step time",
        Workload::Allreduce { .. } => "allreduce p50",
        Workload::Transfer { .. } => "time",
    }
}

fn log2(b: Bytes) -> f64 {
    (b.0.max(1) as f64).log2()
}

fn short_size(b: Bytes) -> String {
    b.to_string()
        .replace(" KiB", "K")
        .replace(" MiB", "M")
        .replace(" B", "B")
}

fn sweep_view(app: &App, area: Rect, buf: &mut Buffer) {
    if let Some(e) = &app.jobs.sweep.error {
        Paragraph::new(vec![
            Line::from("sweep failed:").fg(Color::LightRed),
            Line::from(e.clone()),
        ])
        .wrap(Wrap { trim: false })
        .render(area, buf);
        return;
    }
    let Some(sw) = &app.results.sweep else {
        waiting(
            app,
            area,
            buf,
            "sweeping sizes at flow fidelity",
            app.jobs.sweep.done,
            app.jobs.sweep.total,
        );
        return;
    };
    if sw.sizes.is_empty() {
        return;
    }
    // Text under the chart: who wins where, and the crossovers.
    let mut spans: Vec<Span> = vec![Span::raw("wins: ").fg(Color::Gray)];
    for (i, band) in sw.bands.iter().enumerate() {
        let range = if band.from == band.to {
            short_size(band.from)
        } else {
            format!("{}–{}", short_size(band.from), short_size(band.to))
        };
        if i > 0 {
            spans.push(Span::raw(" │ ").fg(Color::DarkGray));
        }
        spans.push(Span::raw(format!("{range} ")));
        match band.winner {
            Some(a) => spans.push(Span::raw(a.name()).fg(alg_color(a)).bold()),
            None => spans.push(Span::raw("—")),
        }
    }
    let cross = if sw.crossovers.is_empty() {
        "no crossover: one algorithm wins at every size".to_string()
    } else {
        format!(
            "crossovers (dotted): {}",
            sw.crossovers
                .iter()
                .map(|c| format!("{} {}→{}", short_size(c.size), c.from, c.to))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut legend: Vec<Span> = vec![];
    for s in &sw.series {
        legend.push(Span::raw("━").fg(alg_color(s.name)));
        legend.push(Span::raw(format!("{} ", s.name)));
    }
    if app.overlay.show && !sw.measured.is_empty() {
        legend.push(Span::raw("█ measured").fg(Color::LightMagenta));
    }
    let text = vec![
        Line::from(spans),
        Line::from(cross).fg(Color::Yellow),
        Line::from(legend),
    ];
    let aw = (area.width as usize).max(1);
    let text_h = text
        .iter()
        .map(|l| l.width().div_ceil(aw).max(1))
        .sum::<usize>()
        .min(area.height as usize / 2) as u16;
    let [chart_a, text_a] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(text_h)]).areas(area);
    Paragraph::new(text)
        .wrap(Wrap { trim: true })
        .render(text_a, buf);

    let to_y = |ns: f64| (ns / 1000.0).max(1e-3).log10();
    let pts: Vec<(Algorithm, Vec<(f64, f64)>)> = sw
        .series
        .iter()
        .map(|s| {
            (
                s.name,
                sw.sizes
                    .iter()
                    .zip(&s.ns)
                    .filter(|(_, t)| t.is_finite())
                    .map(|(s, t)| (log2(*s), to_y(*t)))
                    .collect(),
            )
        })
        .collect();
    let measured: Vec<(Measured, Vec<(f64, f64)>)> = if app.overlay.show {
        sw.measured
            .iter()
            .map(|m| {
                (
                    m.series,
                    m.points.iter().map(|(s, t)| (log2(*s), to_y(*t))).collect(),
                )
            })
            .collect()
    } else {
        vec![]
    };
    let ys = pts
        .iter()
        .flat_map(|p| p.1.iter().map(|q| q.1))
        .chain(measured.iter().flat_map(|m| m.1.iter().map(|q| q.1)));
    let (ymin, ymax) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    if !ymin.is_finite() {
        return;
    }
    let (ylo, yhi) = (ymin.floor(), ymax.ceil().max(ymin.floor() + 1.0));
    let (xlo, xhi) = (
        log2(sw.sizes[0]),
        log2(sw.sizes[sw.sizes.len() - 1]).max(log2(sw.sizes[0]) + 1.0),
    );
    let cross: Vec<Vec<(f64, f64)>> = sw
        .crossovers
        .iter()
        .map(|c| vec![(log2(c.size), ylo), (log2(c.size), yhi)])
        .collect();
    let mut ds: Vec<Dataset> = vec![];
    for c in &cross {
        ds.push(
            Dataset::default()
                .data(c)
                .graph_type(GraphType::Line)
                .marker(Marker::Dot)
                .style(Style::new().fg(Color::DarkGray)),
        );
    }
    for (a, p) in &pts {
        ds.push(
            Dataset::default()
                .data(p)
                .graph_type(GraphType::Line)
                .marker(Marker::Braille)
                .style(Style::new().fg(alg_color(*a))),
        );
    }
    for (n, p) in &measured {
        let c = n.algorithm().map_or(Color::LightMagenta, alg_color);
        ds.push(
            Dataset::default()
                .data(p)
                .graph_type(GraphType::Scatter)
                .marker(Marker::Block)
                .style(Style::new().fg(c)),
        );
    }
    let ylabel = |e: f64| {
        let us = 10f64.powf(e);
        if us >= 1000.0 {
            format!("{:.0}ms", us / 1000.0)
        } else {
            format!("{us:.0}us")
        }
    };
    let ylabels: Vec<Line> = (ylo as i32..=yhi as i32)
        .map(|e| Line::from(ylabel(e as f64)))
        .collect();
    let mid = sw.sizes[sw.sizes.len() / 2];
    let xlabels = vec![
        Line::from(short_size(sw.sizes[0])),
        Line::from(short_size(mid)).alignment(Alignment::Center),
        Line::from(short_size(sw.sizes[sw.sizes.len() - 1])).alignment(Alignment::Right),
    ];
    Chart::new(ds)
        .x_axis(
            Axis::default()
                .bounds([xlo, xhi])
                .labels(xlabels)
                .style(Style::new().fg(Color::Gray)),
        )
        .y_axis(
            Axis::default()
                .bounds([ylo, yhi])
                .labels(ylabels)
                .style(Style::new().fg(Color::Gray)),
        )
        .legend_position(None)
        .render(chart_a, buf);
}

fn links_view(app: &App, area: Rect, buf: &mut Buffer) {
    let Some(r) = app.shown_run() else {
        waiting(
            app,
            area,
            buf,
            "simulating",
            app.jobs.sim.done,
            app.jobs.sim.total,
        );
        return;
    };
    let mut u: Vec<(String, f64)> = r
        .run
        .utilisation
        .iter()
        .map(|(n, x)| (n.to_string(), *x))
        .collect();
    u.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let busy = u.iter().filter(|x| x.1 > 0.0).count();
    let mut lines = vec![
        Line::from(format!(
            "busiest channels of {} ({busy} of {} carried traffic); ▲ hot on the tree",
            r.algorithm,
            u.len()
        ))
        .fg(Color::Gray),
    ];
    let bar_w = (area.width as usize).saturating_sub(14 + 7).max(1);
    for (name, x) in u.iter().take((area.height as usize).saturating_sub(1)) {
        let n = ((x * bar_w as f64).round() as usize).min(bar_w);
        lines.push(Line::from(vec![
            Span::raw(format!("{name:<13} ")),
            Span::styled("█".repeat(n), level_style(level(*x))),
            Span::raw("░".repeat(bar_w - n)).fg(Color::DarkGray),
            Span::styled(format!(" {}", pct(*x)), level_style(level(*x))),
        ]));
    }
    Paragraph::new(lines).render(area, buf);
}

fn kind_glyph(k: SpanKind) -> (&'static str, Color) {
    match k {
        SpanKind::Launch => ("L", Color::LightBlue),
        SpanKind::Barrier => ("B", Color::LightRed),
        SpanKind::Load => ("◂", Color::LightGreen),
        SpanKind::Store => ("▸", Color::LightCyan),
        SpanKind::Reduce => ("Σ", Color::LightYellow),
        SpanKind::Idle => ("·", Color::DarkGray),
    }
}

const KINDS: [SpanKind; 6] = [
    SpanKind::Launch,
    SpanKind::Barrier,
    SpanKind::Load,
    SpanKind::Store,
    SpanKind::Reduce,
    SpanKind::Idle,
];

fn kind_name(k: SpanKind) -> &'static str {
    match k {
        SpanKind::Launch => "launch",
        SpanKind::Barrier => "barrier",
        SpanKind::Load => "load",
        SpanKind::Store => "store",
        SpanKind::Reduce => "reduce",
        SpanKind::Idle => "idle",
    }
}

/// Mean time per rank in each kind of span.
fn breakdown(sim: &SimResults, a: Algorithm) -> Option<[f64; 6]> {
    let r = sim.row(a)?;
    let n = sim.rank_names.len().max(1) as f64;
    let mut t = [0.0; 6];
    for s in &r.run.timeline {
        if let Some(i) = KINDS.iter().position(|k| *k == s.kind) {
            t[i] += (s.end_ns - s.start_ns).max(0.0) / n;
        }
    }
    Some(t)
}

fn timeline_view(app: &App, area: Rect, buf: &mut Buffer) {
    let (Some(sim), Some(r)) = (&app.results.sim, app.shown_run()) else {
        waiting(
            app,
            area,
            buf,
            "simulating",
            app.jobs.sim.done,
            app.jobs.sim.total,
        );
        return;
    };
    let tl = &r.run.timeline;
    if tl.is_empty() {
        Paragraph::new("this run recorded no timeline").render(area, buf);
        return;
    }
    let t0 = tl.iter().map(|s| s.start_ns).fold(f64::INFINITY, f64::min);
    let t1 = tl
        .iter()
        .map(|s| s.end_ns)
        .fold(f64::NEG_INFINITY, f64::max);
    let label_w = sim.rank_names.iter().map(String::len).max().unwrap_or(4) + 1;
    let cols = (area.width as usize).saturating_sub(label_w).max(1);
    let dt = ((t1 - t0) / cols as f64).max(1e-9);
    let mut lines = vec![Line::from(vec![
        Span::raw(r.algorithm.name())
            .bold()
            .fg(alg_color(r.algorithm)),
        Span::raw(format!(
            ": one allreduce, {} from first launch to last rank done; a column is {}",
            fmt_ns(t1 - t0),
            fmt_ns(dt)
        )),
    ])];
    let rows_avail = (area.height as usize).saturating_sub(5);
    for (rank, name) in sim.rank_names.iter().enumerate().take(rows_avail) {
        let mut spans = vec![Span::raw(format!("{name:<label_w$}")).fg(Color::Gray)];
        let mine: Vec<_> = tl.iter().filter(|s| s.actor as usize == rank).collect();
        for c in 0..cols {
            let (a, b) = (t0 + dt * c as f64, t0 + dt * (c + 1) as f64);
            let mut best: Option<(SpanKind, f64)> = None;
            for s in &mine {
                let o = s.end_ns.min(b) - s.start_ns.max(a);
                if o > 0.0 && best.is_none_or(|(_, x)| o > x) {
                    best = Some((s.kind, o));
                }
            }
            match best {
                Some((k, _)) => {
                    let (g, col) = kind_glyph(k);
                    spans.push(Span::raw(g).fg(col));
                }
                None => spans.push(Span::raw(" ")),
            }
        }
        lines.push(Line::from(spans));
    }
    if sim.rank_names.len() > rows_avail {
        lines.push(
            Line::from(format!(
                "… {} more ranks (enlarge the terminal)",
                sim.rank_names.len() - rows_avail
            ))
            .fg(Color::DarkGray),
        );
    }
    let mut legend: Vec<Span> = vec![];
    for k in KINDS {
        let (g, c) = kind_glyph(k);
        legend.push(Span::raw(g).fg(c));
        legend.push(Span::raw(format!(" {}  ", kind_name(k))));
    }
    lines.push(Line::from(legend));
    if let Some(b) = breakdown(sim, r.algorithm) {
        let parts: Vec<String> = KINDS
            .iter()
            .zip(b)
            .filter(|(_, t)| *t > 0.0)
            .map(|(k, t)| format!("{} {}", kind_name(*k), fmt_ns(t)))
            .collect();
        lines.push(Line::from(format!("per rank: {}", parts.join(" · "))));
        let w = sim.winner().map(|w| w.algorithm);
        if let Some(w) = w
            && w != r.algorithm
            && let Some(wb) = breakdown(sim, w)
        {
            let mut d: Vec<(SpanKind, f64)> = KINDS
                .iter()
                .zip(b.iter().zip(wb))
                .map(|(k, (x, y))| (*k, x - y))
                .filter(|(k, _)| *k != SpanKind::Idle)
                .collect();
            d.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()));
            let parts: Vec<String> = d
                .iter()
                .take(3)
                .map(|(k, x)| {
                    format!(
                        "{} {}{}",
                        kind_name(*k),
                        if *x >= 0.0 { "+" } else { "-" },
                        fmt_ns(x.abs())
                    )
                })
                .collect();
            lines
                .push(Line::from(format!("vs winner {w}: {}", parts.join(", "))).fg(Color::Yellow));
        } else if w == Some(r.algorithm) {
            lines.push(
                Line::from("this is the winner; [ ] shows another algorithm").fg(Color::DarkGray),
            );
        }
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(area, buf);
}

fn status_bar(app: &App, area: Rect, buf: &mut Buffer) {
    let mut spans: Vec<Span> = vec![];
    let spin = SPINNER[(app.frame % 10) as usize];
    if app.jobs.sim.running {
        spans.push(
            Span::raw(format!(
                " {spin} simulating {}/{}",
                app.jobs.sim.done, app.jobs.sim.total
            ))
            .fg(Color::Yellow),
        );
    }
    if app.jobs.sweep.running {
        spans.push(
            Span::raw(format!(
                " {spin} sweep {}/{}",
                app.jobs.sweep.done, app.jobs.sweep.total
            ))
            .fg(Color::Yellow),
        );
    }
    if app.jobs.sim.error.is_some() {
        spans.push(Span::raw(" ✗ simulation failed").fg(Color::LightRed));
    }
    if spans.is_empty() {
        spans.push(Span::raw(" ✓ ready").fg(Color::Green));
    }
    if let Some(w) = app.results.sim.as_ref().and_then(|s| s.winner()) {
        spans.push(Span::raw(" │ winner ").fg(Color::DarkGray));
        spans.push(
            Span::raw(w.algorithm.name())
                .bold()
                .fg(alg_color(w.algorithm)),
        );
    }
    let hint = " Tab pane · arrows · ? help · q quit ";
    let used: usize = spans.iter().map(Span::width).sum();
    let pad = (area.width as usize).saturating_sub(used + hint.len());
    spans.push(Span::raw(" ".repeat(pad)));
    spans.push(Span::raw(hint).fg(Color::DarkGray));
    Paragraph::new(Line::from(spans)).render(area, buf);
}

fn help_overlay(area: Rect, buf: &mut Buffer) {
    let w = area.width.saturating_sub(4).min(66);
    let h = area.height.saturating_sub(2).min(24);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(r, buf);
    let k = |key: &str, what: &str| {
        Line::from(vec![
            Span::raw(format!(" {key:<12}")).bold().fg(Color::Cyan),
            Span::raw(what.to_string()),
        ])
    };
    let lines = vec![
        k("Tab/S-Tab", "move between Topology, Scenario and Results"),
        k("↑ ↓", "topology: select a row · scenario: change value"),
        k("← →", "topology: node or the link above it"),
        k("", "scenario: choose the control · results: view"),
        k("PgUp/PgDn", "topology: jump 10 rows (Home/End: ends)"),
        k(
            "w / W",
            "workload: verify step, allreduce sizes (v: verify)",
        ),
        k("r / R", "rank set"),
        k("a / A", "algorithm set"),
        k("p", "placement: peer or host buffers"),
        k("t", "fidelity: flow (fast) or TLP (every packet, slow)"),
        k("Enter", "run the scenario again"),
        k("1 2 3 4", "results: times, size sweep, links, timeline"),
        k("[ ]", "algorithm shown in timeline and topology"),
        k("m", "measured points on/off (--measurements)"),
        k("? / Esc", "close this help"),
        k("q", "quit"),
        Line::from(""),
        Line::from(" Link colours: green light, yellow warm (≥15%), red ▲ hot (≥40%).")
            .fg(Color::Gray),
        Line::from(" Simulations run on a worker thread; the screen never waits.").fg(Color::Gray),
    ];
    Paragraph::new(lines)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Help ")
                .border_style(Style::new().fg(Color::Cyan)),
        )
        .render(r, buf);
}
