//! The study's figures (plotters, SVG backend: no system fonts needed): a heat map per
//! controller (distance walked per control rate and damping scale, with the sampled-loop lines)
//! and the gains per rate of the CMA-ES search next to the analytic and SIMBICON's gains.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::bound::{lightest_inertia_kgm2, s_beta_half, s_max_stable};
use super::cell::Controller;
use super::sweep::Grid;

/// What drawing a figure returns.
pub type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// Viridis, sampled at 0, 0.25, 0.5, 0.75 and 1 and interpolated linearly: dark (0) to yellow
/// (1), readable in grey.
pub fn viridis(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * 4.0;
    let k = (x.floor() as usize).min(3);
    let f = x - k as f64;
    let (a, b) = match (STOPS.get(k), STOPS.get(k + 1)) {
        (Some(&a), Some(&b)) => (a, b),
        _ => (STOPS[4], STOPS[4]),
    };
    let mix = |p: f64, q: f64| (p + (q - p) * f).round().clamp(0.0, 255.0) as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Plot units per category (the axes are integer, so that custom tick positions get plotters'
/// default label formatting).
const UNIT: f64 = 1000.0;

/// `v` categories in plot units.
fn u(v: f64) -> i32 {
    (v * UNIT).round() as i32
}

/// The positions of the centres of `n` categories, in plot units.
fn centres(n: usize) -> Vec<i32> {
    (0..n).map(|i| u(i as f64 + 0.5)).collect()
}

/// The category of a position in plot units.
fn category(x: i32) -> usize {
    (f64::from(x) / UNIT).floor().max(0.0) as usize
}

/// The position of damping scale `s` on a categorical axis of ascending `scales` whose
/// category j spans [j, j + 1]: linear in log(s) between the centres, extended past the ends
/// with the nearest segment's slope (one category per factor 2 when there is one scale).
pub fn scale_position(scales: &[f64], s: f64) -> f64 {
    let logs: Vec<f64> = scales.iter().map(|x| x.ln()).collect();
    let ls = s.ln();
    match logs.as_slice() {
        [] => 0.0,
        [only] => 0.5 + (ls - only) / std::f64::consts::LN_2,
        _ => {
            let n = logs.len();
            // The segment [k, k + 1] that holds ls, or the end one.
            let k = (0..n - 1).find(|&k| ls <= logs[k + 1]).unwrap_or(n - 2);
            let (a, b) = (logs[k], logs[k + 1]);
            k as f64 + 0.5 + (ls - a) / (b - a)
        }
    }
}

/// The heat map of `controller` in `g`: one square per (rate, scale), coloured by the mean
/// distance walked on a scale shared by both controllers' maps, × where the walker fell, with
/// the stable bound of the fixed pair and the β = 0.5 line.
pub fn heatmap(path: &Path, controller: Controller, g: &Grid) -> PlotResult {
    let root = SVGBackend::new(path, (1000, 680)).into_drawing_area();
    root.fill(&WHITE)?;
    let (main, legend) = root.split_vertically(620);
    let (left, right) = main.split_horizontally(880);
    let title = format!(
        "{}: distance walked, m (× fell: distance until the fall)",
        controller.name()
    );
    let (nx, ny) = (g.rates.len(), g.scales.len());
    if nx == 0 || ny == 0 || !g.squares.keys().any(|k| k.0 == controller) {
        left.draw(&Text::new(title, (20, 20), ("sans-serif", 20).into_font()))?;
        left.draw(&Text::new(
            format!("no cells of {} in this study", controller.name()),
            (20, 300),
            ("sans-serif", 18).into_font(),
        ))?;
        root.present()?;
        return Ok(());
    }
    let vmax = g
        .squares
        .values()
        .filter(|s| s.runs > 0)
        .map(|s| s.mean_distance_m)
        .fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(&left)
        .caption(&title, ("sans-serif", 19))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (0..u(nx as f64)).with_key_points(centres(nx)),
            (0..u(ny as f64)).with_key_points(centres(ny)),
        )?;
    let rate_label = |x: &i32| {
        g.rates
            .get(category(*x))
            .map_or(String::new(), |r| format!("{r}"))
    };
    let scale_label = |y: &i32| {
        g.scales
            .get(category(*y))
            .map_or(String::new(), |s| format!("{s}"))
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("control rate = physics rate, Hz")
        .y_desc("damping scale S (kp 300, kd 30·S)")
        .x_label_formatter(&rate_label)
        .y_label_formatter(&scale_label)
        .label_style(("sans-serif", 14))
        .draw()?;
    let mut squares = Vec::new();
    let mut labels = Vec::new();
    for i in 0..nx {
        for j in 0..ny {
            let (x, y) = (i as f64, j as f64);
            let (fill, text, dark) = match g.at(controller, i, j) {
                None => (RGBColor(235, 235, 235), "–".to_string(), false),
                Some(s) if s.runs == 0 => (RGBColor(160, 160, 160), "failed".to_string(), false),
                Some(s) => {
                    let t = s.mean_distance_m / vmax;
                    let fell = match (s.fell, s.runs) {
                        (0, _) => String::new(),
                        (f, n) if f == n => " ×".into(),
                        (f, n) => format!(" {f}/{n}×"),
                    };
                    (
                        viridis(t),
                        format!("{:.1}{fell}", s.mean_distance_m),
                        t < 0.6,
                    )
                }
            };
            squares.push(Rectangle::new(
                [(u(x + 0.02), u(y + 0.02)), (u(x + 0.98), u(y + 0.98))],
                fill.filled(),
            ));
            let colour = if dark { WHITE } else { BLACK };
            let style = ("sans-serif", 14)
                .into_font()
                .color(&colour)
                .pos(Pos::new(HPos::Center, VPos::Center));
            labels.push(Text::new(text, (u(x + 0.5), u(y + 0.5)), style));
        }
    }
    chart.draw_series(squares)?;
    chart.draw_series(labels)?;
    let clip = |y: f64| y.clamp(0.0, ny as f64);
    let step = |f: &dyn Fn(f64) -> f64| -> Vec<(i32, i32)> {
        g.rates
            .iter()
            .enumerate()
            .flat_map(|(i, &r)| {
                let y = u(clip(scale_position(&g.scales, f(r))));
                [(u(i as f64), y), (u(i as f64 + 1.0), y)]
            })
            .collect()
    };
    let m = lightest_inertia_kgm2();
    let red = RGBColor(230, 30, 30);
    let orange = RGBColor(255, 140, 0);
    chart.draw_series(LineSeries::new(step(&s_max_stable), red.stroke_width(4)))?;
    chart.draw_series(DashedLineSeries::new(
        step(&s_beta_half),
        8,
        5,
        orange.stroke_width(3),
    ))?;
    // The legend, below the chart (inside it would hide squares).
    let entries = [
        (
            format!(
                "stable edge of the fixed pair (300, 30·S) on the lightest role inertia \
                 m = {m} kg·m²: α + 2β = 4 with α = h²·300/m, β = h·30·S/m (stable below)"
            ),
            red.stroke_width(4),
        ),
        (
            "β = h·30·S/m = 0.5 (Carensac et al.'s hand-tuned working line)".to_string(),
            orange.stroke_width(3),
        ),
    ];
    for (k, (text, style)) in entries.into_iter().enumerate() {
        let y = 18 + 24 * k as i32;
        legend.draw(&PathElement::new(vec![(90, y), (124, y)], style))?;
        legend.draw(&Text::new(
            text,
            (134, y),
            ("sans-serif", 13)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }

    // The colour bar.
    let mut bar = ChartBuilder::on(&right)
        .margin_top(48)
        .margin_bottom(58)
        .margin_right(8)
        .y_label_area_size(44)
        .build_cartesian_2d(0.0..1.0, 0.0..vmax)?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc("distance, m")
        .label_style(("sans-serif", 13))
        .draw()?;
    let n = 120;
    bar.draw_series((0..n).map(|k| {
        let (a, b) = (k as f64 / n as f64, (k + 1) as f64 / n as f64);
        Rectangle::new(
            [(0.0, a * vmax), (1.0, b * vmax)],
            viridis((a + b) / 2.0).filled(),
        )
    }))?;
    root.present()?;
    Ok(())
}

/// One rate of the gains figure: Σ(kp + 10·kd) of each gain set and whether its walk at this
/// rate fell (`None`: not known).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GainsBar {
    /// Control rate, Hz.
    pub rate_hz: f64,
    /// The CMA-ES result (`None`: no result at this rate).
    pub cmaes: Option<(f64, Option<bool>)>,
    /// The analytic gains at this rate.
    pub analytic: (f64, Option<bool>),
    /// SIMBICON's fixed 300/30.
    pub simbicon: (f64, Option<bool>),
}

/// gains_by_rate.svg: per rate, Σ over the roles of kp + 10·kd for the CMA-ES result, the
/// analytic gains and SIMBICON's fixed gains, as grouped bars; a set whose walk fell at that
/// rate is drawn pale and labelled "fell".
pub fn gains_by_rate(path: &Path, bars: &[GainsBar]) -> PlotResult {
    let root = SVGBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let title =
        "Σ over roles of kp + 10·kd per control rate (cf. Carensac et al. 2017, Fig. 2 right)";
    if bars.is_empty() {
        root.draw(&Text::new(title, (20, 20), ("sans-serif", 20).into_font()))?;
        root.draw(&Text::new(
            "no rates",
            (20, 280),
            ("sans-serif", 18).into_font(),
        ))?;
        root.present()?;
        return Ok(());
    }
    let top = bars
        .iter()
        .flat_map(|b| [b.cmaes.map_or(0.0, |c| c.0), b.analytic.0, b.simbicon.0])
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max)
        * 1.3;
    let n = bars.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 19))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d((0..u(n as f64)).with_key_points(centres(n)), 0.0..top)?;
    let rate_label = |x: &i32| {
        bars.get(category(*x))
            .map_or(String::new(), |b| format!("{}", b.rate_hz))
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .x_desc("control rate = physics rate, Hz")
        .y_desc("Σ (kp + 10·kd)")
        .x_label_formatter(&rate_label)
        .label_style(("sans-serif", 14))
        .draw()?;
    let series: [(&str, RGBColor); 3] = [
        ("CMA-ES (this rate's search)", RGBColor(0, 150, 60)),
        ("analytic (Gains::analytic(1/R))", RGBColor(0, 90, 200)),
        ("SIMBICON fixed 300/30", RGBColor(220, 50, 32)),
    ];
    let width = 0.26;
    for (k, (name, colour)) in series.into_iter().enumerate() {
        let mut rects = Vec::new();
        let mut texts = Vec::new();
        for (i, b) in bars.iter().enumerate() {
            let (value, fell) = match k {
                0 => match b.cmaes {
                    Some(c) => c,
                    None => continue,
                },
                1 => b.analytic,
                _ => b.simbicon,
            };
            let x0 = i as f64 + 0.11 + k as f64 * width;
            let fell = fell == Some(true);
            let fill = if fell {
                colour.mix(0.3)
            } else {
                colour.mix(1.0)
            };
            rects.push(Rectangle::new(
                [(u(x0), 0.0), (u(x0 + width - 0.02), value)],
                fill.filled(),
            ));
            let label = if fell {
                format!("{value:.0} fell")
            } else {
                format!("{value:.0}")
            };
            texts.push(Text::new(
                label,
                (u(x0 + (width - 0.02) / 2.0), value + top * 0.01),
                ("sans-serif", 12)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            ));
        }
        chart
            .draw_series(rects)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], colour.filled()));
        chart.draw_series(texts)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.draw(&Text::new(
        "pale: that gain set fell at that rate (walk of the study's duration)",
        (90, 545),
        ("sans-serif", 12)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Bottom)),
    ))?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_positions_are_log_between_centres() {
        let scales = [0.25, 0.5, 1.0, 4.0];
        assert!((scale_position(&scales, 0.25) - 0.5).abs() < 1e-12);
        assert!((scale_position(&scales, 1.0) - 2.5).abs() < 1e-12);
        assert!((scale_position(&scales, 2.0) - 3.0).abs() < 1e-12);
        assert!((scale_position(&scales, 0.125) - -0.5).abs() < 1e-12);
        assert!((scale_position(&scales, 16.0) - 4.5).abs() < 1e-12);
        assert!((scale_position(&[1.0], 2.0) - 1.5).abs() < 1e-12);
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
    }
}
