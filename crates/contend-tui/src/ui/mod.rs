//! Drawing: reads the [`App`], never changes it. One file per part of the
//! screen; this one lays the parts out.

mod details;
mod help;
mod links;
mod results;
mod scenario;
mod status;
mod style;
mod sweep;
mod timeline;
mod times;
mod title;
mod topology;

use crate::app::App;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::{Paragraph, Widget, Wrap};

pub use style::{alg_color, fmt_ns};

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
        let scen_h = scenario::bar_height(self, area.width);
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
        title::title_bar(self, title, buf);
        scenario::scenario_bar(self, scen, buf);
        topology::topology_pane(self, topo_a, buf);
        details::details_pane(self, det_a, buf);
        results::results_pane(self, right, buf);
        status::status_bar(self, status, buf);
        if self.view.help {
            help::help_overlay(area, buf);
        }
    }
}
