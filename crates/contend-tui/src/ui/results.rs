//! The results pane: its tabs, the line naming the winner, and the view of
//! the chosen tab (the times with the size sweep under them when tall).

use super::style::{SPINNER, alg_color, fmt_ns};
use super::{links, sweep, timeline, times};
use crate::app::{App, Focus, TABS, Tab};
use contend_workload::compare::Baseline;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

pub(super) fn results_pane(app: &App, area: Rect, buf: &mut Buffer) {
    let mut tabs: Vec<Span> = vec![Span::raw(" ")];
    for t in TABS {
        if t == app.view.tab {
            tabs.push(Span::raw(format!("[{}]", t.title())).bold().fg(Color::Cyan));
        } else {
            tabs.push(Span::raw(format!(" {} ", t.title())).fg(Color::Gray));
        }
    }
    tabs.push(Span::raw(" "));
    let focused = app.view.focus == Focus::Results;
    let mut block = Block::default()
        .borders(Borders::ALL)
        .title(Line::from(tabs));
    block = block.border_style(Style::new().fg(if focused {
        Color::Cyan
    } else {
        Color::DarkGray
    }));
    if focused {
        block = block.title(Line::from("▶ Results ").bold().right_aligned());
    }
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 2 || inner.width < 10 {
        return;
    }

    // The first line always names the winner.
    let winner = app
        .results
        .sim
        .as_ref()
        .and_then(|sim| sim.winner().map(|w| (sim, w)));
    let head_line = match winner {
        Some((sim, w)) => {
            let baseline = sim.baseline();
            let mut s = vec![
                Span::raw("★ winner: ").bold(),
                Span::raw(w.algorithm.name())
                    .bold()
                    .fg(alg_color(w.algorithm)),
                Span::raw(format!(" · {}", fmt_ns(w.time_ns))),
            ];
            if let Some((b, base)) = baseline
                && base.algorithm != w.algorithm
                && w.time_ns > 0.0
            {
                let against = match b {
                    Baseline::Nccl(_) => "nccl".to_string(),
                    Baseline::Slowest(_) => format!("{}, the slowest", base.algorithm),
                };
                s.push(
                    Span::raw(format!(
                        " ({:.2}× faster than {against})",
                        base.time_ns / w.time_ns
                    ))
                    .fg(Color::Gray),
                );
            }
            if app.jobs.sim.running {
                s.push(Span::raw("  (updating…)").fg(Color::Yellow));
            }
            Line::from(s)
        }
        _ if app.jobs.sim.running => Line::from(format!(
            "{} simulating {}/{} runs…",
            SPINNER[(app.frame % 10) as usize],
            app.jobs.sim.done,
            app.jobs.sim.total
        ))
        .fg(Color::Yellow),
        _ => Line::from("no result yet (Enter runs the scenario)"),
    };
    let head_h = if head_line.width() > inner.width as usize {
        2
    } else {
        1
    };
    let [head, body] =
        Layout::vertical([Constraint::Length(head_h), Constraint::Fill(1)]).areas(inner);
    Paragraph::new(head_line)
        .wrap(Wrap { trim: true })
        .render(head, buf);
    if let Some(e) = &app.jobs.sim.error
        && app.view.tab != Tab::Sweep
    {
        Paragraph::new(vec![
            Line::from("simulation failed:").fg(Color::LightRed).bold(),
            Line::from(e.clone()),
        ])
        .wrap(Wrap { trim: false })
        .render(body, buf);
        return;
    }
    match app.view.tab {
        Tab::Times => {
            // Tall enough: the size sweep goes under the bars.
            let need = app.results.sim.as_ref().map_or(4, |s| {
                s.rows.len()
                    + 3
                    + if app.overlay.show {
                        s.measured_extra.len()
                            + s.rows.iter().map(|r| r.measured.len()).sum::<usize>()
                    } else {
                        0
                    }
            }) as u16
                + u16::from(app.notice.is_some());
            if body.height >= need + 14 {
                let [t, sw] =
                    Layout::vertical([Constraint::Length(need), Constraint::Fill(1)]).areas(body);
                times::times_view(app, t, buf);
                sweep::sweep_view(app, sw, buf);
            } else {
                times::times_view(app, body, buf);
            }
        }
        Tab::Sweep => sweep::sweep_view(app, body, buf),
        Tab::Links => links::links_view(app, body, buf),
        Tab::Timeline => timeline::timeline_view(app, body, buf),
    }
}
