//! The size-sweep chart: latency against size per algorithm on log axes,
//! the crossovers dotted, the measured points over them, and who wins where.

use super::style::{alg_color, waiting};
use crate::app::App;
use crate::measure::Shape;
use contend_topo::Bytes;
use contend_workload::compare::Series;
use contend_workload::{Algorithm, Measured};
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Widget, Wrap};

fn log2(b: Bytes) -> f64 {
    (b.0.max(1) as f64).log2()
}

fn short_size(b: Bytes) -> String {
    b.to_string()
        .replace(" KiB", "K")
        .replace(" MiB", "M")
        .replace(" B", "B")
}

pub(super) fn sweep_view(app: &App, area: Rect, buf: &mut Buffer) {
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
    // What to use where: ties within the tolerance merged, listed as such.
    let mut advice: Vec<Span> = vec![
        Span::raw(format!(
            "use (ties within {:.0} %): ",
            contend_workload::compare::DEFAULT_TIE_TOLERANCE * 100.0
        ))
        .fg(Color::Gray),
    ];
    for (i, band) in sw.advice.iter().enumerate() {
        let range = if band.from == band.to {
            short_size(band.from)
        } else {
            format!("{}–{}", short_size(band.from), short_size(band.to))
        };
        if i > 0 {
            advice.push(Span::raw(" │ ").fg(Color::DarkGray));
        }
        advice.push(Span::raw(format!("{range} ")));
        if band.choices.len() > 1 {
            advice.push(Span::raw("tie ").fg(Color::Gray));
        }
        for (j, a) in band.choices.iter().enumerate() {
            if j > 0 {
                advice.push(Span::raw(" = "));
            }
            advice.push(Span::raw(a.name()).fg(alg_color(*a)).bold());
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
        let mut modes: Vec<String> = sw.measured.iter().map(|m| m.variant.label()).collect();
        modes.sort();
        modes.dedup();
        legend
            .push(Span::raw(format!("█ measured ({})", modes.join(", "))).fg(Color::LightMagenta));
        if !sw.variant_sweeps.is_empty() {
            let gapless = sw
                .variant_sweeps
                .iter()
                .any(|t| t.variant.shape == Shape::Gapless);
            legend.push(
                Span::raw(format!(
                    " • sim as measured{}",
                    if gapless { " (no gap)" } else { "" }
                ))
                .fg(Color::Gray),
            );
        }
    }
    let text = vec![
        Line::from(spans),
        Line::from(advice),
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
    // a series' finite times as chart points
    let points = |s: &Series<Algorithm>| -> (Algorithm, Vec<(f64, f64)>) {
        (
            s.name,
            sw.sizes
                .iter()
                .zip(&s.ns)
                .filter(|(_, t)| t.is_finite())
                .map(|(s, t)| (log2(*s), to_y(*t)))
                .collect(),
        )
    };
    let pts: Vec<(Algorithm, Vec<(f64, f64)>)> = sw.series.iter().map(points).collect();
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
    // The sweep re-run in the measured variants, under the measured points.
    let variant_pts: Vec<(Algorithm, Vec<(f64, f64)>)> = if app.overlay.show {
        sw.variant_sweeps
            .iter()
            .flat_map(|t| &t.series)
            .map(points)
            .collect()
    } else {
        vec![]
    };
    let ys = pts
        .iter()
        .chain(&variant_pts)
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
    for (a, p) in &variant_pts {
        ds.push(
            Dataset::default()
                .data(p)
                .graph_type(GraphType::Scatter)
                .marker(Marker::Dot)
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
