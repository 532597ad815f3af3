//! The calibration report's SVG charts (plotters): measured vs predicted
//! latency over size per algorithm, the error of each prediction, and the
//! microbenchmarks' fit; `report.rs` writes the text around them.

use crate::calibrate::PointResult;
use crate::eval::{abs_pct, held_out};
use contend_import::CalibError;
use contend_import::measure::Role;
use contend_topo::Bytes;
use contend_workload::Placement;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Bf16 allreduce series per algorithm: (size, measured, default, fitted).
pub(crate) type Series = BTreeMap<String, Vec<(f64, f64, Option<f64>, Option<f64>)>>;

pub(crate) fn series(points: &[PointResult], placement: Placement) -> Series {
    let mut m: Series = BTreeMap::new();
    for p in held_out(points) {
        let Some((w, a, pl, size, _)) = p.collective() else {
            continue;
        };
        if w == "allreduce" && pl == placement {
            m.entry(a.to_string()).or_default().push((
                size as f64,
                p.measured_ns,
                p.default_ns,
                p.fitted_ns,
            ));
        }
    }
    for v in m.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    m
}

fn size_label(x: f64) -> String {
    Bytes(x.round() as u64).to_string().replace(' ', "")
}

pub(crate) fn latency_chart(path: &Path, title: &str, s: &Series) -> Result<(), CalibError> {
    let e = CalibError::chart(path);
    let all: Vec<f64> = s
        .values()
        .flatten()
        .flat_map(|p| [Some(p.1), p.2, p.3])
        .flatten()
        .map(|ns| ns / 1000.0)
        .collect();
    let xs: Vec<f64> = s.values().flatten().map(|p| p.0).collect();
    if all.is_empty() {
        return Ok(());
    }
    let (ylo, yhi) = (
        all.iter().copied().fold(f64::INFINITY, f64::min) * 0.8,
        all.iter().copied().fold(0.0, f64::max) * 1.25,
    );
    let (xlo, xhi) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min) / 1.3,
        xs.iter().copied().fold(0.0, f64::max) * 1.3,
    );
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d((xlo..xhi).log_scale(), (ylo..yhi).log_scale())
        .map_err(&e)?;
    chart
        .configure_mesh()
        .x_desc("allreduce size")
        .y_desc("time per allreduce (µs)")
        .x_label_formatter(&|x| size_label(*x))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(&e)?;
    for (i, (alg, pts)) in s.iter().enumerate() {
        let c = Palette99::pick(i).to_rgba();
        let fitted: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|p| p.3.map(|f| (p.0, f / 1000.0)))
            .collect();
        let default: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|p| p.2.map(|f| (p.0, f / 1000.0)))
            .collect();
        chart
            .draw_series(LineSeries::new(fitted, c.stroke_width(2)))
            .map_err(&e)?
            .label(format!("{alg}: fitted model (line), measured (dots)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(default, c.mix(0.35).stroke_width(1)))
            .map_err(&e)?;
        chart
            .draw_series(
                pts.iter()
                    .map(|p| Circle::new((p.0, p.1 / 1000.0), 4, c.filled())),
            )
            .map_err(&e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(())
}

pub(crate) fn error_chart(path: &Path, title: &str, s: &Series) -> Result<(), CalibError> {
    let e = CalibError::chart(path);
    let xs: Vec<f64> = s.values().flatten().map(|p| p.0).collect();
    if xs.is_empty() {
        return Ok(());
    }
    let ymax = s
        .values()
        .flatten()
        .flat_map(|p| {
            [p.2, p.3]
                .into_iter()
                .flatten()
                .map(move |v| abs_pct(v, p.1))
        })
        .fold(30.0, f64::max)
        .min(400.0)
        * 1.1;
    let (xlo, xhi) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min) / 1.3,
        xs.iter().copied().fold(0.0, f64::max) * 1.3,
    );
    let root = SVGBackend::new(path, (960, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d((xlo..xhi).log_scale(), 0.0..ymax)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .x_desc("allreduce size")
        .y_desc("absolute error (%)")
        .x_label_formatter(&|x| size_label(*x))
        .draw()
        .map_err(&e)?;
    for y in [10.0, 25.0] {
        chart
            .draw_series(LineSeries::new(
                vec![(xlo, y), (xhi, y)],
                BLACK.mix(0.4).stroke_width(1),
            ))
            .map_err(&e)?;
    }
    for (i, (alg, pts)) in s.iter().enumerate() {
        let c = Palette99::pick(i).to_rgba();
        chart
            .draw_series(pts.iter().filter_map(|p| {
                p.3.map(|f| Circle::new((p.0, abs_pct(f, p.1).min(ymax)), 4, c.filled()))
            }))
            .map_err(&e)?
            .label(format!("{alg}: fitted (filled), default (hollow)"))
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
        chart
            .draw_series(pts.iter().filter_map(|p| {
                p.2.map(|f| Circle::new((p.0, abs_pct(f, p.1).min(ymax)), 4, c.stroke_width(1)))
            }))
            .map_err(&e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(())
}

pub(crate) fn probe_chart(path: &Path, points: &[PointResult]) -> Result<(), CalibError> {
    let e = CalibError::chart(path);
    let pts: Vec<(f64, Option<f64>, Option<f64>)> = points
        .iter()
        .filter(|p| p.role == Role::Fit)
        .map(|p| {
            (
                p.measured_ns / 1000.0,
                p.default_ns.map(|v| v / 1000.0),
                p.fitted_ns.map(|v| v / 1000.0),
            )
        })
        .collect();
    if pts.is_empty() {
        return Ok(());
    }
    let all: Vec<f64> = pts
        .iter()
        .flat_map(|p| [Some(p.0), p.1, p.2])
        .flatten()
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min) / 1.5;
    let hi = all.iter().copied().fold(0.0, f64::max) * 1.5;
    let root = SVGBackend::new(path, (720, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Microbenchmarks (fit set): predicted vs measured",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(&e)?;
    chart
        .configure_mesh()
        .x_desc("measured (µs)")
        .y_desc("predicted (µs)")
        .draw()
        .map_err(&e)?;
    chart
        .draw_series(LineSeries::new(vec![(lo, lo), (hi, hi)], BLACK.mix(0.5)))
        .map_err(&e)?;
    let blue = BLUE.to_rgba();
    let red = RED.to_rgba();
    chart
        .draw_series(
            pts.iter()
                .filter_map(|p| p.1.map(|d| Cross::new((p.0, d), 4, red.stroke_width(1)))),
        )
        .map_err(&e)?
        .label("default constants")
        .legend(move |(x, y)| Cross::new((x + 10, y), 4, red.stroke_width(1)));
    chart
        .draw_series(
            pts.iter()
                .filter_map(|p| p.2.map(|f| Circle::new((p.0, f), 4, blue.filled()))),
        )
        .map_err(&e)?
        .label("fitted constants")
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, blue.filled()));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(&e)?;
    root.present().map_err(&e)?;
    Ok(())
}
