//! The status line: what the worker is doing, the winner, the key hints.

use super::style::{SPINNER, alg_color};
use crate::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub(super) fn status_bar(app: &App, area: Rect, buf: &mut Buffer) {
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
