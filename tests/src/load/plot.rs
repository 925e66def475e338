//! The figures, as SVG: text is left to the viewer's fonts, so drawing needs no font files
//! (plotters estimates label sizes without them).

use std::path::Path;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// A named line: `(x, y)` points in order.
pub type Series = (String, Vec<(f64, f64)>);

fn failed(e: impl std::fmt::Display) -> String {
    format!("drawing: {e}")
}

/// Lines and their points, one colour per series, with a legend.
fn draw_lines<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    series: &[Series],
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, (name, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
            .map_err(failed)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        if points.len() <= 64 {
            chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled()))).map_err(failed)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(failed)
}

/// Axes with a few plain labels and only the main grid lines (a log axis otherwise labels and
/// lines every minor step).
fn mesh<'a, DB, X, Y>(chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>, x: &str, y: &str) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let label = |v: &f64| match v.abs() >= 10.0 {
        true => format!("{v:.0}"),
        false => format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_string(),
    };
    chart
        .configure_mesh()
        .x_desc(x)
        .y_desc(y)
        .x_labels(8)
        .y_labels(8)
        .x_label_formatter(&label)
        .y_label_formatter(&label)
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(failed)
}

/// The smallest and largest of `values` (positive ones only when `positive`), widened so a
/// single value still spans a range.
fn bounds(values: impl Iterator<Item = f64>, positive: bool) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && (!positive || *v > 0.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    match (lo.is_finite(), positive) {
        (false, true) => (0.01, 1.0),
        (false, false) => (0.0, 1.0),
        (true, true) => (lo / 1.5, hi * 1.5),
        (true, false) => (lo.min(0.0), if hi > lo { hi * 1.1 } else { lo + 1.0 }),
    }
}

/// Per-stage runs: p99 latency (left) and mean mailbox depth (right) against the offered rate.
pub fn stages(path: &Path, p99: &[Series], depth: &[Series]) -> Result<(), String> {
    let (x0, x1) = bounds(p99.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)), true);
    let root = SVGBackend::new(path, (1400, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(failed)?;
    let (left, right) = root.split_horizontally(700);

    let (y0, y1) = bounds(p99.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y)), true);
    let mut chart = ChartBuilder::on(&left)
        .caption("p99 latency vs offered rate", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1 * 4.0).log_scale())
        .map_err(failed)?;
    mesh(&mut chart, "offered msgs/s", "p99 ms")?;
    draw_lines(&mut chart, p99)?;

    let (d0, d1) = bounds(depth.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y)), false);
    let mut chart = ChartBuilder::on(&right)
        .caption("mean mailbox depth (queued + in progress) vs offered rate", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), d0..d1 * 1.3)
        .map_err(failed)?;
    mesh(&mut chart, "offered msgs/s", "messages")?;
    draw_lines(&mut chart, depth)?;
    root.present().map_err(failed)
}

/// Lines over time (seconds since the start), on a log `y` axis when `log_y`.
pub fn timeline(path: &Path, title: &str, y_desc: &str, series: &[Series], log_y: bool) -> Result<(), String> {
    timeline_marked(path, title, y_desc, series, log_y, &[])
}

/// Dashed vertical lines at the `marks`' times, each labelled.
fn draw_marks<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    marks: &[(f64, String)],
    (y0, y1): (f64, f64),
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64>,
{
    for (x, label) in marks {
        let grey = BLACK.mix(0.5);
        chart.draw_series(DashedLineSeries::new([(*x, y0), (*x, y1)], 6, 4, grey.stroke_width(1))).map_err(failed)?;
        chart.draw_series([Text::new(label.clone(), (*x, y1), ("sans-serif", 13).into_font())]).map_err(failed)?;
    }
    Ok(())
}

/// Lines over time, as [`timeline`], with labelled moments (a fault's start) marked.
pub fn timeline_marked(
    path: &Path,
    title: &str,
    y_desc: &str,
    series: &[Series],
    log_y: bool,
    marks: &[(f64, String)],
) -> Result<(), String> {
    let root = SVGBackend::new(path, (1200, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(failed)?;
    let (t0, t1) = bounds(series.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)), false);
    let (y0, y1) = bounds(series.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y)), log_y);
    let mut builder = ChartBuilder::on(&root);
    builder.caption(title, ("sans-serif", 20)).margin(15).x_label_area_size(45).y_label_area_size(70);
    if log_y {
        let mut chart = builder.build_cartesian_2d(t0..t1, (y0..y1 * 4.0).log_scale()).map_err(failed)?;
        mesh(&mut chart, "seconds", y_desc)?;
        draw_marks(&mut chart, marks, (y0, y1 * 3.0))?;
        draw_lines(&mut chart, series)?;
    } else {
        let mut chart: ChartContext<_, Cartesian2d<RangedCoordf64, RangedCoordf64>> =
            builder.build_cartesian_2d(t0..t1, y0..y1 * 1.3).map_err(failed)?;
        mesh(&mut chart, "seconds", y_desc)?;
        draw_marks(&mut chart, marks, (y0, y1 * 1.25))?;
        draw_lines(&mut chart, series)?;
    }
    root.present().map_err(failed)
}

/// Lines over a linear `x` axis.
pub fn lines(path: &Path, title: &str, x_desc: &str, y_desc: &str, series: &[Series]) -> Result<(), String> {
    let root = SVGBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(failed)?;
    let (x0, x1) = bounds(series.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)), false);
    let (y0, y1) = bounds(series.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y)), false);
    let mut chart: ChartContext<_, Cartesian2d<RangedCoordf64, RangedCoordf64>> = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0.min(0.0)..y1 * 1.3)
        .map_err(failed)?;
    mesh(&mut chart, x_desc, y_desc)?;
    draw_lines(&mut chart, series)?;
    root.present().map_err(failed)
}
