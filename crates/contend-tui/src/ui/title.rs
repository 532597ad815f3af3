//! The title line: the machine's name and the measured records, if any.

use crate::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub(super) fn title_bar(app: &App, area: Rect, buf: &mut Buffer) {
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
