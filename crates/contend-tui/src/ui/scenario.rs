//! The scenario bar: the five controls and their values, the focused one
//! marked.

use super::style::pane;
use crate::app::{App, Focus};
use crate::controls::{FIELDS, Field};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub(super) fn scenario_bar(app: &App, area: Rect, buf: &mut Buffer) {
    let focused = app.view.focus == Focus::Scenario;
    let block = pane(" Scenario  (w r a p t, Enter re-runs) ", focused);
    let inner = block.inner(area);
    block.render(area, buf);
    let labels = |f: Field| match f {
        Field::Workload => "workload",
        Field::Ranks => "ranks",
        Field::Algorithms => "algorithms",
        Field::Placement => "placement",
        Field::Fidelity => "fidelity",
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
    if inner.height >= 2 {
        let l1: Vec<Span> = [0, 1]
            .iter()
            .flat_map(|&i| field_spans(FIELDS[i]))
            .collect();
        let l2: Vec<Span> = [2, 3, 4]
            .iter()
            .flat_map(|&i| field_spans(FIELDS[i]))
            .collect();
        Paragraph::new(vec![Line::from(l1), Line::from(l2)]).render(inner, buf);
    } else {
        let l: Vec<Span> = FIELDS.iter().flat_map(|&f| field_spans(f)).collect();
        Paragraph::new(Line::from(l)).render(inner, buf);
    }
}
