//! The timeline view: one allreduce of the shown algorithm per rank, a
//! glyph per kind of work, the time per kind and how it differs from the
//! winner's.

use super::style::{alg_color, fmt_ns, waiting};
use crate::app::App;
use crate::results::SimResults;
use contend_sim::{Span as TimeSpan, SpanKind};
use contend_workload::Algorithm;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

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

/// The allreduce's window: from the first launch to the last rank done.
/// Idle spans do not extend it: the compute gap after a collective is
/// idle, and is not the collective's.
pub(crate) fn window(tl: &[TimeSpan]) -> Option<(f64, f64)> {
    let work = tl.iter().filter(|s| s.kind != SpanKind::Idle);
    let t0 = work
        .clone()
        .map(|s| s.start_ns)
        .fold(f64::INFINITY, f64::min);
    let t1 = work.map(|s| s.end_ns).fold(f64::NEG_INFINITY, f64::max);
    (t0.is_finite() && t1 > t0).then_some((t0, t1))
}

/// Mean time per rank in each kind of span, within the allreduce's window.
fn breakdown(sim: &SimResults, a: Algorithm) -> Option<[f64; 6]> {
    let r = sim.row(a)?;
    let (t0, t1) = window(&r.run.timeline)?;
    let n = sim.rank_names.len().max(1) as f64;
    let mut t = [0.0; 6];
    for s in &r.run.timeline {
        if let Some(i) = KINDS.iter().position(|k| *k == s.kind) {
            t[i] += (s.end_ns.min(t1) - s.start_ns.max(t0)).max(0.0) / n;
        }
    }
    Some(t)
}

pub(super) fn timeline_view(app: &App, area: Rect, buf: &mut Buffer) {
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
    let Some((t0, t1)) = window(tl) else {
        Paragraph::new("this run recorded no timeline").render(area, buf);
        return;
    };
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
