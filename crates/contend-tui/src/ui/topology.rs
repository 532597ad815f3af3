//! The topology pane: the machine as a tree, every link's generation, width
//! and rate, coloured by how busy the shown run kept it.

use super::style::{level_style, pane, pct};
use crate::app::{App, Focus};
use crate::heat::{Heat, Level, level};
use crate::tree::{Row, RowKind, link_label, node_label};
use contend_topo::{LinkKind, NodeKind, Topology};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub(super) fn topology_pane(app: &App, area: Rect, buf: &mut Buffer) {
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
    let width = inner.width as usize;
    let shown = visible_rows(&app.tree.rows, app.tree.sel, h);
    let at = shown
        .iter()
        .position(|v| v.row == app.tree.sel)
        .unwrap_or(0);
    let offset = at.saturating_sub(h.saturating_sub(1));
    let lines: Vec<Line> = shown
        .iter()
        .skip(offset)
        .take(h)
        .map(|v| {
            let row = &app.tree.rows[v.row];
            let mut line = tree_line(
                app,
                topo,
                heat.as_ref(),
                v.row,
                &row.prefix,
                &row.kind,
                width,
            );
            if let Some(n) = v.folded {
                line.spans.push(
                    Span::raw(format!(
                        " ▸ {}",
                        folded_summary(topo, &app.tree.rows, v.row, n)
                    ))
                    .fg(Color::DarkGray),
                );
            }
            line
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

/// A row the pane draws; `folded`: the rows of its section hidden under it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Visible {
    pub row: usize,
    pub folded: Option<usize>,
}

/// The rows drawn in `h` lines: all of them when they fit; else every
/// section (a socket, `other nodes`, `links`) but the selection's folded to
/// its first line, so every socket stays on screen.
pub(crate) fn visible_rows(rows: &[Row], sel: usize, h: usize) -> Vec<Visible> {
    let all = || {
        (0..rows.len())
            .map(|row| Visible { row, folded: None })
            .collect()
    };
    if rows.len() <= h {
        return all();
    }
    // sections start at socket rows and headings
    let starts: Vec<usize> = (0..rows.len())
        .filter(|i| matches!(rows[*i].kind, RowKind::Socket(_) | RowKind::Heading(_)))
        .collect();
    if starts.is_empty() {
        return all();
    }
    let mut out: Vec<Visible> = (0..starts[0])
        .map(|row| Visible { row, folded: None })
        .collect();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(rows.len());
        if (start..end).contains(&sel) || end - start == 1 {
            out.extend((start..end).map(|row| Visible { row, folded: None }));
        } else {
            out.push(Visible {
                row: start,
                folded: Some(end - start - 1),
            });
        }
    }
    out
}

/// What a folded section holds: `4 GPUs` (a socket), else its row count.
fn folded_summary(topo: &Topology, rows: &[Row], start: usize, n: usize) -> String {
    let gpus = rows[start + 1..=start + n]
        .iter()
        .filter(|r| {
            matches!(r.kind, RowKind::Node { node, .. } if matches!(topo.node(node).kind, NodeKind::Gpu(_)))
        })
        .count();
    match rows[start].kind {
        RowKind::Socket(_) => format!("{gpus} GPUs"),
        _ => format!("{n} more"),
    }
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
