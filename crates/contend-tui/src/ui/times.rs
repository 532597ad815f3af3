//! The times view: a bar per algorithm (the winner starred), the measured
//! figures beside them.

use super::style::{alg_color, fmt_ns, waiting};
use crate::app::App;
use crate::measure::Shape;
use crate::results::MeasuredFigure;
use contend_workload::Workload;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub(super) fn times_view(app: &App, area: Rect, buf: &mut Buffer) {
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
    let figures = || {
        sim.rows
            .iter()
            .flat_map(|r| &r.measured)
            .chain(&sim.measured_extra)
            .filter(|_| measured)
    };
    let max = sim
        .rows
        .iter()
        .map(|r| r.time_ns)
        .chain(figures().map(|m| m.ns))
        .chain(figures().filter_map(|m| m.sim_ns))
        .fold(0.0, f64::max);
    // the name column: the longest name shown and a space (14 at least)
    let lw = sim
        .rows
        .iter()
        .map(|r| r.algorithm.name().len() + 1)
        .max()
        .unwrap_or(0)
        .max(14);
    let name_w = lw + 1;
    // wide: a measured line ends ` 923.8 us ◆ sim 1.234 ms no gap`
    let tail_w = match (wide, measured) {
        (true, true) => 34,
        (true, false) => 32,
        (false, _) => 11,
    };
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
            "{}{:<lw$}",
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
        if measured {
            for m in &r.measured {
                lines.push(measured_line(
                    m,
                    format!("  hw {}", m.variant.label()),
                    lw,
                    wide,
                    &bar,
                ));
            }
        }
    }
    if measured {
        for m in &sim.measured_extra {
            let label = format!("{} hw {}", m.series, m.variant.label());
            lines.push(measured_line(m, label, lw, wide, &bar));
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

/// One measured figure: its bar, and (wide) the simulation of the same
/// variant, `no gap` when that is a re-run without the scenario's gap.
fn measured_line<'a>(
    m: &MeasuredFigure,
    label: String,
    lw: usize,
    wide: bool,
    bar: &dyn Fn(f64, &str) -> String,
) -> Line<'a> {
    let c = Color::LightMagenta;
    let mut s = vec![
        Span::raw(format!(" {label:<lw$}")).fg(c),
        Span::raw(bar(m.ns, "▒")).fg(c),
        Span::raw(format!(" {:>9} ◆", fmt_ns(m.ns))).fg(c),
    ];
    if wide && let Some(t) = m.sim_ns {
        let shape = if m.rerun && m.variant.shape == Shape::Gapless {
            " no gap"
        } else {
            ""
        };
        s.push(Span::raw(format!(" sim {:>9}{shape}", fmt_ns(t))).fg(Color::Gray));
    }
    Line::from(s)
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
