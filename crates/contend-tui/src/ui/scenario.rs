//! The scenario bar: the controls and their values, the focused one
//! marked.

use super::style::pane;
use crate::app::{App, Focus};
use crate::controls::{FIELDS, Field};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

/// Most lines the bar's controls may take.
const MAX_LINES: usize = 3;

/// The bar's height (borders included) at `width`: its controls wrapped.
pub(super) fn bar_height(app: &App, width: u16) -> u16 {
    bar_lines(app, width.saturating_sub(2)).len() as u16 + 2
}

pub(super) fn scenario_bar(app: &App, area: Rect, buf: &mut Buffer) {
    let focused = app.view.focus == Focus::Scenario;
    let block = pane(" Scenario  (w r h k l a p t g, Enter re-runs) ", focused);
    let inner = block.inner(area);
    block.render(area, buf);
    Paragraph::new(bar_lines(app, inner.width)).render(inner, buf);
}

/// The controls, each label with its value, wrapped into lines of `width`
/// (a control never split; at most [`MAX_LINES`], the last taking the rest).
fn bar_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let focused = app.view.focus == Focus::Scenario;
    let labels = |f: Field| match f {
        Field::Workload => "workload",
        Field::Ranks => "ranks",
        Field::Algorithms => "algorithms",
        Field::Placement => "placement",
        Field::Fidelity => "fidelity",
        Field::Hidden => "hidden",
        Field::Tokens => "tokens",
        Field::Layers => "layers",
        Field::Launch => "launch",
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
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0usize;
    for &f in FIELDS.iter() {
        let spans = field_spans(f);
        let w: usize = spans.iter().map(Span::width).sum();
        let last = lines.len() == MAX_LINES;
        if used > 0 && used + w > usize::from(width) && !last {
            lines.push(Vec::new());
            used = 0;
        }
        used += w;
        lines.last_mut().expect("one line at least").extend(spans);
    }
    lines.into_iter().map(Line::from).collect()
}
