//! `angle.svg` of a `ball_blocking` run: the joint angle of every controller against time with
//! the target instants and poses marked (the paper's figures 4 and 5). Runs off the real-time
//! path.

use std::path::Path;

use plotters::prelude::*;

use super::report::ArmRun;
use super::scenario::Target;
use crate::run::plot::{COLOURS, PlotResult, no_samples};
use crate::run::recorder::Run;

/// `angle.svg`: θ(t) per controller, targets as circles, weight contacts as short ticks at the
/// bottom of the plot in the controller's colour.
pub fn angle_plot(
    path: &Path,
    title: &str,
    runs: &[&Run<ArmRun>],
    targets: &[Target],
) -> PlotResult {
    if runs.iter().all(|r| r.kind.trajectory.is_empty()) {
        return no_samples(path, (1000, 520), title, "the plant sent no state");
    }
    let root = SVGBackend::new(path, (1000, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let t_max = runs
        .iter()
        .filter_map(|r| r.kind.trajectory.last().map(|p| p.0))
        .filter(|t| t.is_finite())
        .fold(0.0, f64::max)
        .max(1e-3);
    let angles = runs
        .iter()
        .flat_map(|r| r.kind.trajectory.iter().map(|p| p.1))
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
    let mut any_contacts = false;
    for (run, colour) in runs.iter().zip(COLOURS.iter().cycle()) {
        let colour = *colour;
        any_contacts |= !run.kind.weight_contacts_s.is_empty();
        chart
            .draw_series(LineSeries::new(
                run.kind
                    .trajectory
                    .iter()
                    .copied()
                    .filter(|p| p.1.is_finite()),
                colour.stroke_width(2),
            ))?
            .label(run.kind.name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart.draw_series(run.kind.weight_contacts_s.iter().map(|t| {
            PathElement::new(
                vec![(*t, lo), (*t, lo + 0.04 * (hi - lo))],
                colour.stroke_width(2),
            )
        }))?;
    }
    if any_contacts {
        // A legend entry for the ticks (drawn off the plot area: the series is empty).
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
            .label("weight hits the arm (tick at the bottom, controller's colour)")
            .legend(|(x, y)| {
                PathElement::new(
                    vec![(x + 10, y + 5), (x + 10, y - 5)],
                    BLACK.stroke_width(2),
                )
            });
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
    crate::run::plot::legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}
