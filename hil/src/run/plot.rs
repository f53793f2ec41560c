//! What every kind's plots share (plotters, SVG backend only: no system fonts needed): the
//! controllers' colours, a latency histogram per controller, and the page of a plot with nothing
//! to show, which says "no samples" instead of drawing an axis from infinity to infinity. Runs off
//! the real-time path.

use std::path::Path;

use plotters::prelude::*;

use super::recorder::{LatencyHistogram, LatencyUs};

/// What drawing a plot returns.
pub type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// One colour per controller, in report order.
pub const COLOURS: [RGBColor; 4] = [
    RGBColor(0, 90, 200),
    RGBColor(220, 50, 32),
    RGBColor(0, 150, 60),
    RGBColor(150, 60, 170),
];

/// Every plot's legend: the series' labels in a box at `position`, on a translucent white
/// ground with a black border.
pub fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// A plot that has nothing to draw: its title and "no samples".
pub fn no_samples(path: &Path, size: (u32, u32), title: &str, why: &str) -> PlotResult {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    root.draw(&Text::new(
        title.to_owned(),
        (20, 20),
        ("sans-serif", 20).into_font(),
    ))?;
    root.draw(&Text::new(
        format!("no samples: {why}"),
        (20, i32::try_from(size.1 / 2).unwrap_or(200)),
        ("sans-serif", 18).into_font(),
    ))?;
    root.present()?;
    Ok(())
}

/// `latency.svg`: one histogram line per controller (wake-up latency in real time, round trip
/// in lockstep), linear bins up to the largest p99.9 × 1.5, counts on a log axis; values beyond
/// are counted in the last bin and said so in the legend.
pub fn latency_histogram(
    path: &Path,
    title: &str,
    runs: &[(&str, &LatencyHistogram)],
) -> PlotResult {
    let top = runs
        .iter()
        .filter_map(|r| r.1.percentiles_us())
        .map(|p| p.p999 * 1.5)
        .fold(0.0, f64::max);
    if !(top.is_finite() && top > 0.0) {
        return no_samples(path, (900, 420), title, "no tick was timed");
    }
    const BINS: usize = 60;
    /// One controller's histogram: name, (bucket edge µs, count), whether values lie beyond.
    struct Series<'a> {
        name: &'a str,
        buckets: Vec<(f64, u64)>,
        beyond: bool,
    }
    let series: Vec<Series<'_>> = runs
        .iter()
        .map(|&(name, latency)| Series {
            name,
            buckets: latency.buckets_us(top, BINS),
            beyond: latency.percentiles_us().is_some_and(|p| p.max > top),
        })
        .collect();
    let max_count = series
        .iter()
        .flat_map(|s| s.buckets.iter().map(|(_, c)| *c))
        .max()
        .unwrap_or(1)
        .max(1);
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..top, (0.8..(max_count as f64 * 2.0)).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("µs")
        .y_desc("ticks (log)")
        .x_labels(8)
        .y_labels(6)
        .draw()?;
    let width = top / BINS as f64;
    for (
        Series {
            name,
            buckets,
            beyond,
        },
        colour,
    ) in series.iter().zip(COLOURS.iter().cycle())
    {
        let colour = *colour;
        // A step line over the non-empty bins.
        let points = buckets.iter().flat_map(|(x, c)| {
            let y = (*c as f64).max(0.8);
            [(*x, y), (*x + width, y)]
        });
        let label = if *beyond {
            format!("{name} (largest value beyond the axis, counted in the last bin)")
        } else {
            (*name).to_owned()
        };
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}
