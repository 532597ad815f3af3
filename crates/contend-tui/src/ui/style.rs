//! Shared look: colours per algorithm and per heat level, number formats,
//! the pane frame and the "waiting for the worker" widget.

use crate::app::App;
use crate::heat::Level;
use contend_topo::Picos;
use contend_workload::Algorithm;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

pub(super) const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

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

pub(super) fn level_style(l: Level) -> Style {
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

pub(super) fn pct(u: f64) -> String {
    format!("{:>3.0}%", (u * 100.0).clamp(0.0, 100.0))
}

pub(super) fn pane<'a>(title: &'a str, focused: bool) -> Block<'a> {
    let b = Block::default().borders(Borders::ALL);
    if focused {
        b.title(Line::from(vec![Span::raw("▶ "), Span::raw(title).bold()]))
            .border_style(Style::new().fg(Color::Cyan))
    } else {
        b.title(Line::from(title))
            .border_style(Style::new().fg(Color::DarkGray))
    }
}

pub(super) fn waiting(
    app: &App,
    area: Rect,
    buf: &mut Buffer,
    what: &str,
    done: usize,
    total: usize,
) {
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
