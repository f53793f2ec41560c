//! SVG plots of a run (plotters, SVG backend only: no system fonts needed): the joint angle of
//! every controller against time with the target instants and poses marked (the paper's figures
//! 4 and 5), and a latency histogram. Runs off the real-time path.

use std::path::Path;

use plotters::prelude::*;

use super::report::ControllerRun;
use super::scenario::Target;

type PlotResult = Result<(), Box<dyn std::error::Error>>;

const COLOURS: [RGBColor; 3] = [
    RGBColor(0, 90, 200),
    RGBColor(220, 50, 32),
    RGBColor(0, 150, 60),
];

/// `angle.svg`: θ(t) per controller, targets as circles, weight hits as ticks on the time axis.
pub fn angle_plot(
    path: &Path,
    title: &str,
    runs: &[ControllerRun],
    targets: &[Target],
) -> PlotResult {
    let root = SVGBackend::new(path, (1000, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let t_max = runs
        .iter()
        .filter_map(|r| r.samples.last().map(|s| s.t_s))
        .fold(0.0, f64::max)
        .max(1e-3);
    let angles = runs
        .iter()
        .flat_map(|r| r.samples.iter().map(|s| s.angle_rad))
        .chain(targets.iter().map(|t| t.angle_rad))
        .filter(|a| a.is_finite());
    let (lo, hi) = angles.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), a| {
        (lo.min(a), hi.max(a))
    });
    let (lo, hi) = if lo <= hi {
        (lo - 0.1, hi + 0.1)
    } else {
        (-1.0, 1.0)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d(0.0..t_max, lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("simulated time (s)")
        .y_desc("shoulder angle (rad)")
        .draw()?;
    for (run, colour) in runs.iter().zip(COLOURS.iter().cycle()) {
        let colour = *colour;
        chart
            .draw_series(LineSeries::new(
                run.samples.iter().map(|s| (s.t_s, s.angle_rad)),
                colour.stroke_width(2),
            ))?
            .label(run.name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart.draw_series(run.weight_contacts_s.iter().map(|t| {
            PathElement::new(
                vec![(*t, lo), (*t, lo + 0.04 * (hi - lo))],
                colour.stroke_width(2),
            )
        }))?;
    }
    chart
        .draw_series(
            targets
                .iter()
                .map(|t| PathElement::new(vec![(t.time_s, lo), (t.time_s, hi)], BLACK.mix(0.25))),
        )?
        .label("target instant")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.25)));
    chart
        .draw_series(
            targets
                .iter()
                .map(|t| Circle::new((t.time_s, t.angle_rad), 7, BLACK.stroke_width(2))),
        )?
        .label("target pose (ball crossing)")
        .legend(|(x, y)| Circle::new((x + 10, y), 5, BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// `latency.svg`: a histogram of `values_us` (wake-up latency in real time, round trip in
/// lockstep), log-spaced bins, counts on a log axis.
pub fn latency_histogram(path: &Path, title: &str, values_us: &[f64]) -> PlotResult {
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let finite: Vec<f64> = values_us
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = finite
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(0.1);
    let hi = finite.iter().copied().fold(0.0, f64::max).max(lo * 10.0);
    const BINS: usize = 40;
    let (llo, lhi) = (lo.log10(), hi.log10() + 1e-9);
    let mut counts = [0u64; BINS];
    for v in &finite {
        let i = (((v.log10() - llo) / (lhi - llo)) * BINS as f64) as usize;
        counts[i.min(BINS - 1)] += 1;
    }
    let max_count = counts.iter().copied().max().unwrap_or(1).max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d(
            (lo..hi).log_scale(),
            (0.8..(max_count as f64 * 2.0)).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("µs (log)")
        .y_desc("ticks (log)")
        .draw()?;
    chart.draw_series(
        counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| {
                let a = 10f64.powf(llo + (lhi - llo) * i as f64 / BINS as f64);
                let b = 10f64.powf(llo + (lhi - llo) * (i + 1) as f64 / BINS as f64);
                Rectangle::new([(a, 0.8), (b, *c as f64)], COLOURS[0].filled())
            }),
    )?;
    root.present()?;
    Ok(())
}
