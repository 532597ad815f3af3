//! Time per allreduce over message size, as an SVG chart: the picture of
//! `contend sweep --plot` and `contend advise --plot`.
//!
//! A chart is panels stacked top to bottom (a sweep: one per placement and
//! fidelity that ran; the advice: one per world size), each a log-log plot
//! — size on a log2 axis labelled `4 KiB`, `1 MiB`, time in µs on a log
//! axis — with a line and points per algorithm (the advice: per family,
//! its best algorithm at each size), NCCL's replica (`nccl`) in black and
//! twice as thick as the others, a legend naming each line, and a dashed
//! vertical line at every crossover labelled `64 KiB: one-shot-pull → nccl`.
//!
//! Where a crossover is: the first size at which the new winner wins, not
//! interpolated between sizes — for a sweep the rule its table marks
//! (`<- crossover`, [`compare::crossovers`] over [`compare::winners_by_size`]),
//! for the advice where one of its ranges begins after another
//! ([`crate::advise::Range`], ties included: a tie's name is its families
//! joined by ` = `).
//!
//! ```
//! use contend_advise::latency_chart::{Chart, crossover_label};
//! let chart = Chart::of_sweep("s", "t", &[]);
//! assert!(chart.panels.is_empty());
//! let c = contend_workload::compare::Crossover {
//!     size: contend_topo::Bytes(64 << 10),
//!     from: "one-shot-pull".to_string(),
//!     to: "nccl".to_string(),
//! };
//! assert_eq!(crossover_label(&c), "64 KiB: one-shot-pull → nccl");
//! ```

use crate::advise::{Family, Range, WorldAdvice, families, family};
use contend_import::CalibError;
use contend_sim::Run;
use contend_topo::Bytes;
use contend_workload::compare::{self, Crossover};
use contend_workload::{Algorithm, Fidelity, Measured, Placement, ResultRecord};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// The name NCCL's replica has in the output (`nccl`).
pub const NCCL: &str = "nccl";

/// One line of a panel: a contender's time per allreduce at each size.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// The algorithm (the advice: the family) as the output names it.
    pub name: String,
    /// The legend's text: the name, then what it stands for in brackets
    /// (`nccl (NCCL replica)`, `one-shot (best of one-shot-pull, one-shot-push)`).
    pub legend: String,
    /// (size, ns per allreduce), ascending size.
    pub points: Vec<(Bytes, f64)>,
    /// NCCL's replica: drawn thicker and in black.
    pub nccl: bool,
    /// Its colour in the palette: one algorithm (family) has one colour in
    /// every panel.
    colour: usize,
}

/// One plot of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    pub title: String,
    /// Drawn in this order, NCCL's last (on top).
    pub curves: Vec<Curve>,
    /// Where the fastest changes, named as the curves are.
    pub crossovers: Vec<Crossover<String>>,
}

/// Panels stacked under one title.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Its lines are drawn one under the other.
    pub title: String,
    pub panels: Vec<Panel>,
}

/// A crossover's label on the chart: `64 KiB: one-shot-pull → nccl`.
pub fn crossover_label(c: &Crossover<String>) -> String {
    format!("{}: {} → {}", c.size, c.from, c.to)
}

const WIDTH: u32 = 1340;
const PANEL_HEIGHT: u32 = 560;
/// Pixels of a line of the chart's title.
const TITLE_LINE: u32 = 28;
/// Pixels right of each plot for its legend.
const LEGEND_WIDTH: u32 = 400;
/// Pixels of a legend entry's line.
const LEGEND_LINE: i32 = 20;

/// A curve's legend: NCCL's replica named as such, a family with the
/// algorithms that were its best.
fn legend(name: &str, nccl: bool, algorithms: &[String]) -> String {
    if nccl {
        format!("{NCCL} (NCCL replica)")
    } else if algorithms.is_empty() || algorithms == [name] {
        name.to_string()
    } else {
        format!("{name} (best of {})", algorithms.join(", "))
    }
}

/// NCCL's curves go last: drawn over the others, last in the legend.
fn nccl_last(mut curves: Vec<Curve>) -> Vec<Curve> {
    curves.sort_by_key(|c| c.nccl);
    curves
}

impl Chart {
    /// A sweep's runs: a panel per placement and fidelity of the runs (in
    /// the order they first appear; NCCL, which places its own buffers,
    /// runs with the first placement and is drawn there, as the sweep table
    /// shows it), a curve per algorithm (its median time per allreduce,
    /// [`compare::ranking_ns`]), the crossovers the table marks.
    /// `scenario` and `topology` are the ones that ran (the title says them).
    pub fn of_sweep(scenario: &str, topology: &str, runs: &[Run]) -> Chart {
        let mut groups: Vec<((Placement, Fidelity), Vec<&ResultRecord>)> = vec![];
        for r in runs {
            let k = (r.spec.placement, r.spec.fidelity);
            let rec = r.record();
            match groups.iter_mut().find(|g| g.0 == k) {
                Some(g) => g.1.push(rec),
                None => groups.push((k, vec![rec])),
            }
        }
        let panels = groups
            .into_iter()
            .map(|((placement, fidelity), recs)| {
                let mut algs: Vec<Measured> = vec![];
                for r in &recs {
                    if !algs.contains(&r.algorithm) {
                        algs.push(r.algorithm);
                    }
                }
                let curves = algs
                    .iter()
                    .map(|&a| {
                        let mut points: Vec<(Bytes, f64)> = recs
                            .iter()
                            .filter(|r| r.algorithm == a)
                            .map(|r| (Bytes(r.size_bytes), compare::ranking_ns(r)))
                            .collect();
                        points.sort_by_key(|p| p.0);
                        Curve {
                            name: a.name().to_string(),
                            legend: legend(a.name(), a == Measured::NCCL, &[]),
                            points,
                            nccl: a == Measured::NCCL,
                            colour: a
                                .algorithm()
                                .and_then(|x| Algorithm::ALL.iter().position(|y| *y == x))
                                .unwrap_or(Algorithm::ALL.len()),
                        }
                    })
                    .collect();
                let mut winners = compare::winners_by_size(&recs);
                winners.sort_by_key(|w| w.0);
                let crossovers = compare::crossovers(&winners)
                    .into_iter()
                    .map(|c| Crossover {
                        size: c.size,
                        from: c.from.name().to_string(),
                        to: c.to.name().to_string(),
                    })
                    .collect();
                Panel {
                    title: format!(
                        "{} ranks, {placement} placement, {fidelity} fidelity",
                        recs[0].ranks.len()
                    ),
                    curves: nccl_last(curves),
                    crossovers,
                }
            })
            .collect();
        Chart {
            title: format!("sweep of {scenario}: median time per allreduce\non {topology}"),
            panels,
        }
    }

    /// The advice: a panel per world size, a curve per family (its fastest
    /// algorithm's time at each size, the legend naming which algorithms
    /// those were), a crossover where one of the advice's ranges follows
    /// another.
    pub fn of_advice(topology: &str, advice: &[WorldAdvice]) -> Chart {
        let mut all: Vec<Family> = vec![];
        for &a in Algorithm::ALL {
            if !all.contains(&family(a)) {
                all.push(family(a));
            }
        }
        let panels = advice
            .iter()
            .map(|w| {
                let curves = all
                    .iter()
                    .enumerate()
                    .filter_map(|(colour, &fam)| {
                        let mut points = vec![];
                        let mut algorithms: Vec<String> = vec![];
                        // the names of the family's fastest algorithms, in order
                        for c in &w.choices {
                            if let Some(f) = c.families.iter().find(|f| f.family == fam) {
                                points.push((Bytes(c.size_bytes), f.ns));
                                let name = f.algorithm.name().to_string();
                                if !algorithms.contains(&name) {
                                    algorithms.push(name);
                                }
                            }
                        }
                        points.sort_by_key(|p: &(Bytes, f64)| p.0);
                        (!points.is_empty()).then(|| Curve {
                            name: fam.to_string(),
                            legend: legend(fam.name(), fam == Family::Nccl, &algorithms),
                            points,
                            nccl: fam == Family::Nccl,
                            colour,
                        })
                    })
                    .collect();
                let name = |r: &Range| match r.family {
                    Some(f) => f.to_string(),
                    None => families(&r.tied),
                };
                let crossovers = w
                    .ranges
                    .windows(2)
                    .map(|p| Crossover {
                        size: Bytes(p[1].from_bytes),
                        from: name(&p[0]),
                        to: name(&p[1]),
                    })
                    .collect();
                Panel {
                    title: format!(
                        "world size {} ({}), {} placement",
                        w.world,
                        w.ranks.join(" "),
                        w.placement
                    ),
                    curves: nccl_last(curves),
                    crossovers,
                }
            })
            .collect();
        Chart {
            title: format!(
                "advise: each family's best time per allreduce, a crossover where the advice changes\non {topology}"
            ),
            panels,
        }
    }

    /// Draws the chart and writes it to `path` as SVG (overwriting it:
    /// whether that is allowed is the caller's to say); an error names
    /// `path`.
    pub fn write(&self, path: &Path) -> Result<(), CalibError> {
        let svg = self.render(path)?;
        std::fs::write(path, svg)
            .map_err(|e| CalibError::io(path, format!("writing the chart: {e}")))
    }

    /// The SVG text (`path`: the file it is for, named in an error).
    pub(crate) fn render(&self, path: &Path) -> Result<String, CalibError> {
        let e = CalibError::chart(path);
        let panels = self.panels.len().max(1) as u32;
        let lines: Vec<&str> = self.title.lines().collect();
        let title_height = TITLE_LINE * lines.len() as u32 + 12;
        let mut svg = String::new();
        {
            let root =
                SVGBackend::with_string(&mut svg, (WIDTH, title_height + panels * PANEL_HEIGHT))
                    .into_drawing_area();
            root.fill(&WHITE).map_err(&e)?;
            let (head, body) = root.split_vertically(title_height);
            for (i, l) in lines.iter().enumerate() {
                let style = ("sans-serif", 22)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top));
                head.draw(&Text::new(
                    *l,
                    ((WIDTH / 2) as i32, 8 + (TITLE_LINE as i32) * i as i32),
                    style,
                ))
                .map_err(&e)?;
            }
            if self.panels.is_empty() {
                body.draw(&Text::new("no results", (20, 20), ("sans-serif", 16)))
                    .map_err(&e)?;
            }
            for (p, area) in self
                .panels
                .iter()
                .zip(body.split_evenly((self.panels.len().max(1), 1)))
            {
                draw_panel(&area, p).map_err(&e)?;
            }
            root.present().map_err(&e)?;
        }
        Ok(svg)
    }
}

/// Powers of two from `lo` to `hi`, every one or every fourth one: the
/// size axis's labels.
fn size_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let first = lo.log2().ceil() as i32;
    let last = hi.log2().floor() as i32;
    let step = if last - first > 12 { 2 } else { 1 };
    (first..=last)
        .step_by(step as usize)
        .map(|k| 2f64.powi(k))
        .collect()
}

fn us_label(y: f64) -> String {
    if y >= 10.0 {
        format!("{y:.0}")
    } else if y >= 1.0 {
        format!("{y:.1}")
    } else {
        format!("{y:.2}")
    }
}

type AreaError = DrawingAreaErrorKind<std::io::Error>;

fn draw_panel(area: &DrawingArea<SVGBackend<'_>, Shift>, p: &Panel) -> Result<(), AreaError> {
    let pts = || p.curves.iter().flat_map(|c| c.points.iter());
    let ys: Vec<f64> = pts().map(|(_, ns)| ns / 1e3).filter(|y| *y > 0.0).collect();
    if ys.is_empty() {
        area.draw(&Text::new(
            format!("{}: no results", p.title),
            (20, 20),
            ("sans-serif", 16),
        ))?;
        return Ok(());
    }
    let xs: Vec<f64> = pts().map(|(b, _)| b.0.max(1) as f64).collect();
    let (xlo, xhi) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min) / 1.3,
        xs.iter().copied().fold(0.0, f64::max) * 1.3,
    );
    let (ylo, yhi) = (
        ys.iter().copied().fold(f64::INFINITY, f64::min) * 0.8,
        ys.iter().copied().fold(0.0, f64::max) * 1.6,
    );
    let (plot, side) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
    let mut chart = ChartBuilder::on(&plot)
        .caption(&p.title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (xlo..xhi)
                .log_scale()
                .base(2.0)
                .with_key_points(size_ticks(xlo, xhi)),
            (ylo..yhi).log_scale(),
        )?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_desc("message size (bytes, log2 axis)")
        .y_desc("time per allreduce (µs, log axis)")
        .x_label_formatter(&|x| Bytes(x.round() as u64).to_string())
        .y_label_formatter(&|y| us_label(*y))
        .draw()?;
    // crossovers under the curves: a dashed line at the size, its label
    // near the top, staggered so that neighbours do not overlap
    let grey = RGBColor(100, 100, 100);
    let (lx, hx, ly, hy) = (xlo.ln(), xhi.ln(), ylo.ln(), yhi.ln());
    for (i, c) in p.crossovers.iter().enumerate() {
        let x = c.size.0.max(1) as f64;
        chart.draw_series(DashedLineSeries::new(
            vec![(x, ylo), (x, yhi)],
            6,
            4,
            grey.stroke_width(1),
        ))?;
        let y = (hy - (hy - ly) * (0.04 + 0.06 * (i % 6) as f64)).exp();
        let right = (x.ln() - lx) / (hx - lx) > 0.55;
        let (anchor, dx) = if right {
            (Pos::new(HPos::Right, VPos::Center), -5)
        } else {
            (Pos::new(HPos::Left, VPos::Center), 5)
        };
        let style = ("sans-serif", 16).into_font().color(&BLACK).pos(anchor);
        chart.draw_series(std::iter::once(
            EmptyElement::at((x, y)) + Text::new(crossover_label(c), (dx, 0), style),
        ))?;
    }
    // the legend right of the plot, clear of the lines: each curve's line
    // and point, then its text
    let style = |c: &Curve| {
        if c.nccl {
            (BLACK.to_rgba(), 4, 5)
        } else {
            (Palette99::pick(c.colour).to_rgba(), 2, 3)
        }
    };
    for (i, c) in p.curves.iter().enumerate() {
        let (colour, width, radius) = style(c);
        let y = 64 + 26 * i as i32;
        side.draw(&PathElement::new(
            vec![(8, y), (8 + LEGEND_LINE, y)],
            colour.stroke_width(width),
        ))?;
        side.draw(&Circle::new(
            (8 + LEGEND_LINE / 2, y),
            radius,
            colour.filled(),
        ))?;
        side.draw(&Text::new(
            c.legend.clone(),
            (8 + LEGEND_LINE + 8, y),
            ("sans-serif", 15)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    for c in &p.curves {
        let (colour, width, radius) = style(c);
        let line: Vec<(f64, f64)> = c
            .points
            .iter()
            .map(|(b, ns)| (b.0.max(1) as f64, ns / 1e3))
            .filter(|p| p.1 > 0.0)
            .collect();
        chart.draw_series(LineSeries::new(line.clone(), colour.stroke_width(width)))?;
        chart.draw_series(
            line.iter()
                .map(|&pt| Circle::new(pt, radius, colour.filled())),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_sim::RunSpec;
    use contend_workload::{LaunchMode, Source, Stats, WorkloadKind};

    fn rec(alg: Algorithm, placement: Placement, size: u64, us: f64) -> ResultRecord {
        ResultRecord {
            source: Source::Sim,
            scenario: "sc".into(),
            topology: "topo".into(),
            workload: WorkloadKind::Allreduce,
            algorithm: Measured::Allreduce(alg),
            placement: Some(placement),
            fidelity: Some(Fidelity::Flow),
            launch: LaunchMode::Eager,
            ranks: vec!["gpu0".into(), "gpu1".into()],
            size_bytes: size,
            total_ns: us * 3e3,
            per_op_ns: vec![us * 1e3; 3],
            stats: Stats::of(&[us * 1e3; 3]),
            bandwidth_gbps: None,
            verified: None,
            events: None,
            wall_ns: None,
            busiest_link: None,
            machine: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn a_sweep_has_a_panel_per_placement_and_a_crossover_per_change_of_winner() {
        use Algorithm::{Nccl, OneShotPull, TwoShotPush};
        let mut v = vec![];
        for (size, a, b, n) in [
            (4096, 5.0, 9.0, 20.0),
            (8192, 6.0, 9.5, 21.0),
            (16384, 12.0, 10.0, 22.0),
            (32768, 30.0, 25.0, 23.0),
        ] {
            v.push(rec(OneShotPull, Placement::Peer, size, a));
            v.push(rec(TwoShotPush, Placement::Peer, size, b));
            let mut nccl = rec(Nccl, Placement::Peer, size, n);
            nccl.placement = None;
            v.push(nccl);
            v.push(rec(OneShotPull, Placement::Host, size, a));
            v.push(rec(TwoShotPush, Placement::Host, size, a * 2.0));
        }
        let runs: Vec<Run> = v
            .into_iter()
            .map(|r| Run {
                spec: RunSpec {
                    algorithm: r.algorithm.algorithm(),
                    // NCCL's record has no placement: its run has the first
                    placement: r.placement.unwrap_or(Placement::Peer),
                    fidelity: Fidelity::Flow,
                    size: Some(Bytes(r.size_bytes)),
                },
                records: vec![r],
                utilisation: vec![],
                timeline: vec![],
                note: None,
            })
            .collect();
        let chart = Chart::of_sweep("sc", "topo", &runs);
        assert_eq!(chart.panels.len(), 2);
        assert_eq!(
            chart.panels[0].title,
            "2 ranks, peer placement, flow fidelity"
        );
        let labels: Vec<String> = chart.panels[0]
            .crossovers
            .iter()
            .map(crossover_label)
            .collect();
        assert_eq!(
            labels,
            [
                "16 KiB: one-shot-pull → two-shot-push",
                "32 KiB: two-shot-push → nccl"
            ]
        );
        assert!(chart.panels[1].crossovers.is_empty());
        // NCCL's curve is the one highlighted, drawn last
        let last = chart.panels[0].curves.last().unwrap();
        assert!(last.nccl && last.legend == "nccl (NCCL replica)");
        assert_eq!(chart.panels[0].curves.iter().filter(|c| c.nccl).count(), 1);
        let svg = chart.render(Path::new("t.svg")).unwrap();
        assert!(svg.contains("16 KiB: one-shot-pull → two-shot-push"));
        assert!(svg.contains("\nnccl (NCCL replica)\n"));
        assert!(svg.contains("stroke-width=\"4\""));
    }

    #[test]
    fn size_ticks_are_powers_of_two() {
        assert_eq!(size_ticks(3000.0, 20000.0), [4096.0, 8192.0, 16384.0]);
        // more than 12 doublings: every other one
        let t = size_ticks(1000.0, 70e6);
        assert_eq!(t[0], 1024.0);
        assert_eq!(t[1], 4096.0);
    }

    #[test]
    fn an_unwritable_path_is_named() {
        let chart = Chart::of_sweep("s", "t", &[]);
        let p = std::env::temp_dir().join("contend-no-such-folder-xyz/plot.svg");
        let e = chart.write(&p).unwrap_err().to_string();
        assert!(
            e.starts_with(&p.display().to_string()) && e.contains("writing the chart"),
            "{e}"
        );
    }
}
