//! The help overlay: every key and what it does, the link colours.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

pub(super) fn help_overlay(area: Rect, buf: &mut Buffer) {
    let w = area.width.saturating_sub(4).min(66);
    let h = area.height.saturating_sub(2).min(26);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(r, buf);
    let k = |key: &str, what: &str| {
        Line::from(vec![
            Span::raw(format!(" {key:<12}")).bold().fg(Color::Cyan),
            Span::raw(what.to_string()),
        ])
    };
    let lines = vec![
        k("Tab/S-Tab", "move between Topology, Scenario and Results"),
        k("↑ ↓", "topology: select a row · scenario: change value"),
        k("← →", "topology: node or the link above it"),
        k("", "scenario: choose the control · results: view"),
        k("PgUp/PgDn", "topology: jump 10 rows (Home/End: ends)"),
        k(
            "w / W",
            "workload: verify step, allreduce sizes (v: verify)",
        ),
        k("r / R", "rank set"),
        k("a / A", "algorithm set"),
        k("p", "placement: peer or host buffers"),
        k("t", "fidelity: flow (fast) or TLP (every packet, slow)"),
        k("h k l / H K L", "verify step: hidden size, tokens, layers"),
        k("g", "launch: eager, one graph, a graph per call (all)"),
        k("Enter", "run the scenario again"),
        k("1 2 3 4", "results: times, size sweep, links, timeline"),
        k("[ ]", "algorithm shown in timeline and topology"),
        k("m", "measured points on/off (--measurements)"),
        k("? / Esc", "close this help"),
        k("q", "quit"),
        Line::from(""),
        Line::from(" Link colours: green light, yellow warm (≥15%), red ▲ hot (≥40%).")
            .fg(Color::Gray),
        Line::from(" Simulations run on a worker thread; the screen never waits.").fg(Color::Gray),
    ];
    Paragraph::new(lines)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Help ")
                .border_style(Style::new().fg(Color::Cyan)),
        )
        .render(r, buf);
}
