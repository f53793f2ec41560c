//! The chain run's plots (plotters, SVG only): `angles.svg` (every joint's angle against time,
//! one panel per joint, beat lines at the keyframe instants and the keyframe poses marked),
//! `arrival.svg` (the arrival error of every joint at every keyframe, one bar per controller, log
//! scale), `inertia.svg` (the model's composite inertia against Rapier's M_ii along the replayed
//! motion) and `latency.svg`. A plot with nothing to show says "no samples". Off the real-time
//! path.

use std::path::Path;

use plotters::prelude::*;

use super::super::plot::{COLOURS, PlotResult, latency_histogram, no_samples};
use super::recorder::ChainRun;
use super::scenario::{ChainScenario, ChainTask};
use super::{ChainReport, InertiaCheck};
use crate::run::recorder::Run;
use sim_host::Mode;

/// Write every plot of a chain run into `dir`.
pub fn write_all(
    dir: &Path,
    scenario: &ChainScenario,
    report: &ChainReport,
    runs: &[Run<ChainRun>],
) -> PlotResult {
    let heading = format!(
        "{} ({} mode, {} Hz)",
        scenario.name, report.header.mode, scenario.control_rate_hz
    );
    angles(&dir.join("angles.svg"), &heading, scenario, report, runs)
        .map_err(|e| format!("cannot plot angles.svg: {e}"))?;
    if report.header.kind == ChainTask::KenwrightReach.name() {
        hand(&dir.join("hand.svg"), &heading, report, runs)
            .map_err(|e| format!("cannot plot hand.svg: {e}"))?;
    } else {
        arrival(&dir.join("arrival.svg"), &heading, report)
            .map_err(|e| format!("cannot plot arrival.svg: {e}"))?;
    }
    inertia(
        &dir.join("inertia.svg"),
        &heading,
        report.inertia_check.as_ref(),
        &report.joints,
    )
    .map_err(|e| format!("cannot plot inertia.svg: {e}"))?;
    let what = if report.header.mode == Mode::Realtime.name() {
        "control-thread wake-up latency"
    } else {
        "round trip (lockstep: no wall-clock schedule)"
    };
    let latency: Vec<_> = runs.iter().map(|r| (r.kind.name, &r.latency)).collect();
    latency_histogram(
        &dir.join("latency.svg"),
        &format!("{heading}: {what}"),
        &latency,
    )
    .map_err(|e| format!("cannot plot latency.svg: {e}"))?;
    Ok(())
}

fn range(values: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo <= hi {
        (lo - pad, hi + pad)
    } else {
        (-1.0, 1.0)
    }
}

fn angles(
    path: &Path,
    heading: &str,
    scenario: &ChainScenario,
    report: &ChainReport,
    runs: &[Run<ChainRun>],
) -> PlotResult {
    let title = if scenario.keyframes.is_empty() {
        format!("{heading}: joint angles")
    } else {
        format!("{heading}: joint angles, beat lines at the keyframes")
    };
    let joints = report.joints.len();
    if joints == 0 || runs.iter().all(|r| r.kind.trajectory.is_empty()) {
        return no_samples(path, (1000, 300), &title, "the plant sent no state");
    }
    let height = 60 + 260 * u32::try_from(joints).unwrap_or(1);
    let root = SVGBackend::new(path, (1000, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(&title, ("sans-serif", 20))?;
    let panels = root.split_evenly((joints, 1));
    let t_max = scenario.end_s;
    for (j, panel) in panels.iter().enumerate() {
        let (lo, hi) = range(
            runs.iter()
                .flat_map(|r| {
                    r.kind
                        .trajectory
                        .iter()
                        .filter_map(move |p| p.1.get(j).copied())
                })
                .chain(
                    scenario
                        .keyframes
                        .iter()
                        .filter_map(|k| k.positions_rad.get(j).copied()),
                ),
            0.1,
        );
        let name = report.joints.get(j).map_or("?", String::as_str);
        let mut chart = ChartBuilder::on(panel)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(52)
            .build_cartesian_2d(0.0..t_max, lo..hi)?;
        chart
            .configure_mesh()
            .x_desc("simulated time (s)")
            .y_desc(format!("{name} (rad)"))
            .draw()?;
        chart
            .draw_series(
                scenario.keyframes.iter().map(|k| {
                    PathElement::new(vec![(k.time_s, lo), (k.time_s, hi)], BLACK.mix(0.25))
                }),
            )?
            .label("beat (keyframe instant)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.25)));
        for p in &scenario.pushes {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(p.start_s, lo), (p.start_s + p.duration_s, hi)],
                RGBColor(250, 170, 0).mix(0.3).filled(),
            )))?;
        }
        for (run, colour) in runs.iter().zip(COLOURS.iter().cycle()) {
            let colour = *colour;
            chart
                .draw_series(LineSeries::new(
                    run.kind
                        .trajectory
                        .iter()
                        .filter_map(|(t, q)| q.get(j).map(|v| (*t, *v)))
                        .filter(|p| p.1.is_finite()),
                    colour.stroke_width(2),
                ))?
                .label(run.kind.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
        }
        chart
            .draw_series(scenario.keyframes.iter().filter_map(|k| {
                k.positions_rad
                    .get(j)
                    .map(|p| Circle::new((k.time_s, *p), 6, BLACK.stroke_width(2)))
            }))?
            .label("keyframe pose")
            .legend(|(x, y)| Circle::new((x + 10, y), 5, BLACK.stroke_width(2)));
        if j == 0 {
            if !scenario.pushes.is_empty() {
                chart
                    .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
                    .label("push (shaded)")
                    .legend(|(x, y)| {
                        Rectangle::new(
                            [(x, y - 5), (x + 20, y + 5)],
                            RGBColor(250, 170, 0).mix(0.3).filled(),
                        )
                    });
            }
            crate::run::plot::legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        }
    }
    root.present()?;
    Ok(())
}

fn arrival(path: &Path, heading: &str, report: &ChainReport) -> PlotResult {
    let title = format!("{heading}: arrival error |θ(t̂) − θ̂| per keyframe and joint");
    let joints = report.joints.len();
    let keyframes = report.keyframes.len();
    let values: Vec<f64> = report
        .controllers
        .iter()
        .flat_map(|c| c.arrival_error_rad.iter().flatten().flatten().copied())
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() || joints == 0 {
        return no_samples(path, (1000, 420), &title, "no keyframe was reached");
    }
    let floor = 1e-5;
    let top = values.iter().copied().fold(floor, f64::max) * 3.0;
    let groups = keyframes * joints;
    let root = SVGBackend::new(path, (1100, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..groups as f64, (floor..top).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.min(40))
        .x_label_formatter(&|x| {
            let g = x.floor() as usize;
            format!("k{} j{}", g / joints.max(1), g % joints.max(1))
        })
        .x_desc("keyframe k, joint j")
        .y_desc("arrival error (rad, log)")
        .draw()?;
    let n = report.controllers.len().max(1) as f64;
    let width = 0.8 / n;
    for (ci, (c, colour)) in report
        .controllers
        .iter()
        .zip(COLOURS.iter().cycle())
        .enumerate()
    {
        let colour = *colour;
        let bars = c.arrival_error_rad.iter().enumerate().flat_map(|(k, e)| {
            e.iter().flatten().enumerate().map(move |(j, v)| {
                let x = (k * joints + j) as f64 + 0.1 + ci as f64 * width;
                Rectangle::new([(x, floor), (x + width, v.max(floor))], colour.filled())
            })
        });
        chart
            .draw_series(bars)?
            .label(c.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], colour.filled()));
    }
    crate::run::plot::legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

fn inertia(
    path: &Path,
    heading: &str,
    check: Option<&InertiaCheck>,
    joints: &[String],
) -> PlotResult {
    let Some(check) = check else {
        return no_samples(
            path,
            (1000, 420),
            &format!("{heading}: composite inertia vs Rapier's M_ii"),
            "no recorded configuration",
        );
    };
    let title = format!(
        "{heading}: composite inertia m_i (lines) vs Rapier's M_ii (dots) along the {} run; max rel. diff {:.1e}",
        check.controller, check.max_rel_diff
    );
    let t_max = check.series.last().map_or(1.0, |s| s.0).max(1e-3);
    let top = check
        .series
        .iter()
        .flat_map(|s| s.1.iter().chain(&s.2).copied())
        .filter(|v| v.is_finite())
        .fold(1e-6, f64::max)
        * 1.1;
    let bottom = check
        .series
        .iter()
        .flat_map(|s| s.1.iter().chain(&s.2).copied())
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(top, f64::min)
        / 1.5;
    let root = SVGBackend::new(path, (1100, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max, (bottom..top).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("simulated time (s)")
        .y_desc("inertia about the joint axis (kg·m², log)")
        .draw()?;
    for (j, colour) in (0..joints.len()).zip(COLOURS.iter().cycle()) {
        let colour = *colour;
        let name = joints.get(j).map_or("?", String::as_str);
        chart
            .draw_series(LineSeries::new(
                check
                    .series
                    .iter()
                    .filter_map(|s| s.1.get(j).map(|v| (s.0, *v))),
                colour.stroke_width(2),
            ))?
            .label(format!("{name}: m_i (model)"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart
            .draw_series(
                check
                    .series
                    .iter()
                    .step_by(4)
                    .filter_map(|s| s.2.get(j).map(|v| Circle::new((s.0, *v), 3, colour))),
            )?
            .label(format!("{name}: M_ii (Rapier)"))
            .legend(move |(x, y)| Circle::new((x + 10, y), 3, colour));
    }
    crate::run::plot::legend(&mut chart, SeriesLabelPosition::MiddleRight)?;
    root.present()?;
    Ok(())
}

/// Named series of (t, value) points, one per controller.
type Lines<'a> = Vec<(&'a str, Vec<(f64, f64)>)>;

/// `hand.svg`: hand error (log, with the 1 cm line), posture error and the walls' force on the
/// hand against time, one line per controller, target instants as vertical lines.
fn hand(path: &Path, heading: &str, report: &ChainReport, runs: &[Run<ChainRun>]) -> PlotResult {
    let title = format!("{heading}: hand error, posture error, wall force on the hand");
    if runs.iter().all(|r| r.kind.reach_series.is_empty()) {
        return no_samples(path, (1000, 300), &title, "no reach tick was recorded");
    }
    let root = SVGBackend::new(path, (1100, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(&title, ("sans-serif", 20))?;
    let panels = root.split_evenly((3, 1));
    let t_max = runs
        .iter()
        .filter_map(|r| r.kind.reach_series.last().map(|p| p.0))
        .fold(1e-3, f64::max);
    let targets: Vec<f64> = report.hand_targets.iter().map(|t| t.0).collect();
    let series = |pick: &dyn Fn(&ChainRun) -> Vec<(f64, f64)>| -> Lines<'_> {
        runs.iter()
            .map(|r| {
                (
                    r.kind.name,
                    pick(&r.kind)
                        .into_iter()
                        .filter(|p| p.1.is_finite())
                        .collect(),
                )
            })
            .collect()
    };

    // Hand error, log scale.
    let floor = 1e-5;
    let hand = series(&|r| {
        r.reach_series
            .iter()
            .map(|(t, v)| (*t, v[0].max(floor)))
            .collect()
    });
    let top = hand
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(0.02, f64::max)
        * 1.5;
    if let Some(panel) = panels.first() {
        let mut chart = ChartBuilder::on(panel)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..t_max, (floor..top).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("simulated time (s)")
            .y_desc("hand error (m, log)")
            .draw()?;
        chart
            .draw_series(
                targets
                    .iter()
                    .map(|t| PathElement::new(vec![(*t, floor), (*t, top)], BLACK.mix(0.25))),
            )?
            .label("new hand target (last: pressed on the wall)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.25)));
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, 0.01), (t_max, 0.01)],
                BLACK.stroke_width(1),
            )))?
            .label("1 cm")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));
        for ((name, points), colour) in hand.into_iter().zip(COLOURS.iter().cycle()) {
            let colour = *colour;
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
        }
        crate::run::plot::legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    }

    // Posture error and wall force, linear.
    let linear: [(&str, Lines<'_>); 2] = [
        (
            "posture error, max over joints (rad)",
            series(&|r| r.reach_series.iter().map(|(t, v)| (*t, v[1])).collect()),
        ),
        (
            "wall force on the hand, as the chain feels it (N)",
            series(&|r| r.wall_series.clone()),
        ),
    ];
    for (panel, (label, lines)) in panels.iter().skip(1).zip(linear) {
        let top = lines
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.1))
            .fold(1e-6, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(panel)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..t_max, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("simulated time (s)")
            .y_desc(label)
            .draw()?;
        chart.draw_series(
            targets
                .iter()
                .map(|t| PathElement::new(vec![(*t, 0.0), (*t, top)], BLACK.mix(0.25))),
        )?;
        for ((_, points), colour) in lines.into_iter().zip(COLOURS.iter().cycle()) {
            chart.draw_series(LineSeries::new(points, colour.stroke_width(2)))?;
        }
    }
    root.present()?;
    Ok(())
}
