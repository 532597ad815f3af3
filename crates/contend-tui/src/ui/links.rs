//! The links view: every channel of the shown run by how busy it was.

use super::style::{level_style, pct, waiting};
use crate::app::App;
use crate::heat::level;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub(super) fn links_view(app: &App, area: Rect, buf: &mut Buffer) {
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
