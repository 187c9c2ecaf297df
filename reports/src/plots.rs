//! SVG charts (plotters, SVG backend only, no font files): the four views expected vs
//! observed, and a run's shape coverage. Each bar carries its value as a label, so a chart
//! reads without hovering and a test can find the numbers.

use model::objects::{FourViews, ResourceView};
use plotters::prelude::*;

use crate::counterexample::ViewPair;
use crate::coverage::Coverage;

/// Fill of the expected side's bars (`#1F77B4`).
pub const EXPECTED_COLOUR: RGBColor = RGBColor(31, 119, 180);
/// Fill of the observed side's bars (`#D62728`).
pub const OBSERVED_COLOUR: RGBColor = RGBColor(214, 39, 40);
/// Fill of coverage bars (`#2CA02C`).
pub const COVERAGE_COLOUR: RGBColor = RGBColor(44, 160, 44);

/// The four views in printer-column order.
pub const VIEW_NAMES: [&str; 4] = ["EX", "SH", "SL", "PT"];
/// The figures of a view, in bar order.
pub const METRICS: [&str; 3] = ["capacity", "remaining", "onceMax"];

fn view(v: &FourViews, i: usize) -> ResourceView {
    match i {
        0 => v.exclusive,
        1 => v.shared,
        2 => v.sliced,
        _ => v.partitioned.view,
    }
}

fn metric(v: &ResourceView, i: usize) -> i64 {
    match i {
        0 => v.capacity,
        1 => v.remaining,
        _ => v.once_max_request,
    }
}

type DrawResult<T> = Result<T, DrawError>;

/// plotters could not draw an SVG.
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart: {0:?}")]
pub struct DrawError(#[source] DrawingAreaErrorKind<std::io::Error>);

type Panel<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// A titled SVG of `(rows, columns)` equal panels, `row_height` pixels each, drawn by `draw`.
fn svg_panels(
    title: &str,
    (rows, columns): (usize, usize),
    row_height: u32,
    draw: impl FnOnce(&[Panel<'_>]) -> DrawResult<()>,
) -> DrawResult<String> {
    let mut svg = String::new();
    {
        let height = 40 + row_height * rows as u32;
        let root = SVGBackend::with_string(&mut svg, (960, height)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(drawing)?;
        draw(&root.split_evenly((rows, columns)))?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

fn drawing(e: DrawingAreaErrorKind<std::io::Error>) -> DrawError {
    DrawError(e)
}

/// One row of four panels (EX, SH, SL, PT) per InstanceType; in each panel, per figure, an
/// expected and an observed bar. `Err` only if plotters itself fails.
pub fn four_views_svg(pairs: &[ViewPair]) -> DrawResult<String> {
    let title = "Four views: expected (blue) vs observed (red)";
    svg_panels(title, (pairs.len().max(1), 4), 240, |panels| {
        for (i, area) in panels.iter().enumerate() {
            let Some(pair) = pairs.get(i / 4) else {
                continue;
            };
            let v = i % 4;
            let (e, o) = (view(&pair.expected, v), view(&pair.observed, v));
            // Three groups of [expected, observed, gap] slots.
            let bars: Vec<(f64, i64, RGBColor)> = (0..3)
                .flat_map(|m| {
                    let x = m as f64 * 3.0;
                    [
                        (x, metric(&e, m), EXPECTED_COLOUR),
                        (x + 1.0, metric(&o, m), OBSERVED_COLOUR),
                    ]
                })
                .collect();
            let top = bars.iter().map(|b| b.1).max().unwrap_or(0).max(1);
            let bottom = bars.iter().map(|b| b.1).min().unwrap_or(0).min(0);
            let headroom = (top - bottom) / 5 + 1;
            let mut chart = ChartBuilder::on(area)
                .caption(
                    format!("{} {}", VIEW_NAMES[v], pair.instance_type),
                    ("sans-serif", 12),
                )
                .margin(6)
                .x_label_area_size(18)
                .y_label_area_size(40)
                .build_cartesian_2d(0f64..8.0, bottom..top + headroom)
                .map_err(drawing)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .draw()
                .map_err(drawing)?;
            chart
                .draw_series(bars.iter().map(|&(x, value, colour)| {
                    Rectangle::new([(x, 0), (x + 0.9, value)], colour.filled())
                }))
                .map_err(drawing)?;
            // The figure names, above their pair of bars (slots e, o, gap per figure).
            chart
                .draw_series(METRICS.iter().enumerate().map(|(m, name)| {
                    Text::new(
                        *name,
                        (m as f64 * 3.0, top + headroom / 2),
                        ("sans-serif", 11),
                    )
                }))
                .map_err(drawing)?;
            chart
                .draw_series(bars.iter().map(|&(x, value, _)| {
                    Text::new(value.to_string(), (x + 0.1, value), ("sans-serif", 10))
                }))
                .map_err(drawing)?;
        }
        Ok(())
    })
}

/// One panel per coverage class: a bar per value, its height the scenarios that showed it.
pub fn coverage_svg(coverage: &Coverage) -> DrawResult<String> {
    let title = format!("Shape coverage over {} scenarios", coverage.scenarios);
    let classes = &coverage.classes;
    svg_panels(&title, (classes.len().max(1), 1), 200, |panels| {
        for (area, (class, values)) in panels.iter().zip(classes) {
            let top = values.values().copied().max().unwrap_or(0).max(1);
            let mut chart = ChartBuilder::on(area)
                .caption(class.as_str(), ("sans-serif", 13))
                .margin(6)
                .x_label_area_size(20)
                .y_label_area_size(50)
                .build_cartesian_2d(0f64..values.len() as f64, 0u64..top + top / 5 + 1)
                .map_err(drawing)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(0)
                .draw()
                .map_err(drawing)?;
            chart
                .draw_series(values.values().enumerate().map(|(i, &n)| {
                    let x = i as f64;
                    Rectangle::new([(x + 0.15, 0), (x + 0.85, n)], COVERAGE_COLOUR.filled())
                }))
                .map_err(drawing)?;
            chart
                .draw_series(values.iter().enumerate().map(|(i, (name, &n))| {
                    Text::new(
                        format!("{name}: {n}"),
                        (i as f64 + 0.2, n),
                        ("sans-serif", 10),
                    )
                }))
                .map_err(drawing)?;
        }
        Ok(())
    })
}

/// Fill of a time series' line (`#9467BD`).
pub const SERIES_COLOUR: RGBColor = RGBColor(148, 103, 189);

/// A time series as a line over elapsed seconds (soak runs: events applied, quiescence
/// latency, API calls, objects alive, own memory). Each point is also marked, so a test can
/// count them. `Err` only if plotters itself fails.
pub fn series_svg(title: &str, y_label: &str, points: &[(f64, f64)]) -> DrawResult<String> {
    svg_panels(title, (1, 1), 360, |panels| {
        let x_max = points.iter().map(|p| p.0).fold(0.0_f64, f64::max).max(1e-9);
        let y_max = points.iter().map(|p| p.1).fold(0.0_f64, f64::max).max(1.0) * 1.1;
        let mut chart = ChartBuilder::on(&panels[0])
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("elapsed (s)")
            .y_desc(y_label)
            .draw()
            .map_err(drawing)?;
        chart
            .draw_series(LineSeries::new(points.iter().copied(), &SERIES_COLOUR))
            .map_err(drawing)?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&p| Circle::new(p, 2, SERIES_COLOUR.filled())),
            )
            .map_err(drawing)?;
        Ok(())
    })
}
