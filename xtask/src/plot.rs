//! Line charts as SVG, for the benchmarks' cost curves (plotters' SVG backend:
//! no fonts or system libraries needed beyond its own text output).

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;

/// The colours of the series, in order (dshkit first).
const COLOURS: [RGBColor; 4] = [
    RGBColor(0x1f, 0x6f, 0xeb),
    RGBColor(0xd9, 0x48, 0x1c),
    RGBColor(0x2a, 0x9d, 0x4a),
    RGBColor(0x8a, 0x4f, 0xc7),
];

/// Every x of the series, each once, in order.
fn measured_xs(series: &[Series]) -> Vec<f64> {
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|(x, _)| *x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs
}

/// A count on an axis: `16`, `10k`, `1M`.
fn count(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.0}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// A named line: its (x, y) points.
pub(crate) type Series<'a> = (&'a str, Vec<(f64, f64)>);

/// How the x axis grows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum XScale {
    Linear,
    /// By factors (concurrency and sizes that double or grow tenfold).
    Log,
}

/// How the y axis grows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum YScale {
    Linear,
    /// By factors of ten, for values that span decades (a time from
    /// milliseconds to minutes): each decade takes the same height.
    Log,
}

/// The series as drawn (a log axis draws the decimal logarithm of each value on
/// a linear one, its labels turned back into values) and the y range.
fn y_axis<'a>(series: &[Series<'a>], y_scale: YScale) -> (Vec<Series<'a>>, f64, f64) {
    let series: Vec<Series> = match y_scale {
        YScale::Linear => series.to_vec(),
        YScale::Log => series
            .iter()
            .map(|(name, points)| {
                let logged = points
                    .iter()
                    .filter(|(_, y)| *y > 0.0)
                    .map(|(x, y)| (*x, y.log10()))
                    .collect();
                (*name, logged)
            })
            .collect(),
    };
    let y_max = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|(_, y)| *y))
        .fold(1.0_f64, f64::max);
    let (y_low, y_high) = match y_scale {
        YScale::Linear => (0.0, y_max * 1.1),
        YScale::Log => {
            let y_min = series
                .iter()
                .flat_map(|(_, points)| points.iter().map(|(_, y)| *y))
                .fold(y_max, f64::min);
            (y_min.floor(), y_max.ceil().max(y_min.floor() + 1.0))
        }
    };
    (series, y_low, y_high)
}

/// The corner of the plot whose legend would cover no line: upper left, then
/// upper right, lower right and lower left; upper left when each is crossed.
fn legend_corner(
    series: &[Series],
    x_scale: XScale,
    (x_low, x_high): (f64, f64),
    (y_low, y_high): (f64, f64),
) -> SeriesLabelPosition {
    // The legend's share of the plot: wide enough for the longest name, a row a series.
    const WIDTH: f64 = 0.45;
    let height = 0.05 + 0.045 * f64::from(u32::try_from(series.len()).unwrap_or(u32::MAX));
    let x_share = |x: f64| match x_scale {
        XScale::Linear => (x - x_low) / (x_high - x_low),
        XScale::Log => (x.ln() - x_low.ln()) / (x_high.ln() - x_low.ln()),
    };
    let y_share = |y: f64| (y - y_low) / (y_high - y_low);
    // Every line sampled along its segments, in shares of the plot (0..1 each way).
    let mut samples = Vec::new();
    for (_, points) in series {
        for pair in points.windows(2) {
            let ((x0, y0), (x1, y1)) = (
                (x_share(pair[0].0), y_share(pair[0].1)),
                (x_share(pair[1].0), y_share(pair[1].1)),
            );
            samples.extend((0..=32).map(|step| {
                let t = f64::from(step) / 32.0;
                (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t)
            }));
        }
        samples.extend(points.iter().map(|(x, y)| (x_share(*x), y_share(*y))));
    }
    let free = |left: bool, upper: bool| {
        !samples.iter().any(|(x, y)| {
            let across = if left { *x <= WIDTH } else { *x >= 1.0 - WIDTH };
            let down = if upper { *y >= 1.0 - height } else { *y <= height };
            across && down
        })
    };
    [
        (true, true, SeriesLabelPosition::UpperLeft),
        (false, true, SeriesLabelPosition::UpperRight),
        (false, false, SeriesLabelPosition::LowerRight),
        (true, false, SeriesLabelPosition::LowerLeft),
    ]
    .into_iter()
    .find(|(left, upper, _)| free(*left, *upper))
    .map_or(SeriesLabelPosition::UpperLeft, |(_, _, corner)| corner)
}

/// Writes a chart of `series` (a name and its (x, y) points each) to `path`,
/// atomically.
pub(crate) fn lines(
    path: &Path,
    title: &str,
    (x_label, x_scale): (&str, XScale),
    y_label: &str,
    y_scale: YScale,
    series: &[Series],
) -> anyhow::Result<()> {
    let (series, y_low, y_high) = y_axis(series, y_scale);
    let x_max = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|(x, _)| *x))
        .fold(1.0_f64, f64::max);
    let y_format = move |y: &f64| match y_scale {
        YScale::Linear => format!("{y:.0}"),
        YScale::Log => {
            let value = 10_f64.powf(*y);
            if value >= 1.0 {
                format!("{value:.0}")
            } else {
                format!("{value:.2}")
            }
        }
    };
    let x_min = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|(x, _)| *x))
        .fold(x_max, f64::min)
        .max(f64::MIN_POSITIVE);
    // The x range drawn: from the first measured point on a log axis, from 0 on a linear one.
    let x_range = match x_scale {
        XScale::Log => (x_min, x_max * 1.05),
        XScale::Linear => (0.0, x_max * 1.05),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
        // One drawing for both kinds of x axis (their coordinate types differ).
        macro_rules! draw {
            ($x_range:expr) => {{
                let mut chart = ChartBuilder::on(&root)
                    .caption(title, ("sans-serif", 20))
                    .margin(16)
                    .x_label_area_size(40)
                    .y_label_area_size(64)
                    .build_cartesian_2d($x_range, y_low..y_high)
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                let mut mesh = chart.configure_mesh();
                mesh.x_desc(x_label)
                    .y_desc(y_label)
                    .x_label_formatter(&|x| count(*x))
                    .y_label_formatter(&y_format)
                    .light_line_style(WHITE);
                if y_scale == YScale::Log {
                    // One label a decade: the values between would read as noise.
                    #[expect(
                        clippy::cast_possible_truncation,
                        clippy::cast_sign_loss,
                        reason = "a handful of decades"
                    )]
                    mesh.y_labels((y_high - y_low) as usize + 1);
                }
                mesh.draw().map_err(|e| anyhow::anyhow!("{e}"))?;
                for ((name, points), colour) in series.iter().zip(COLOURS.iter().cycle()) {
                    let colour = *colour;
                    chart
                        .draw_series(LineSeries::new(
                            points.iter().copied(),
                            colour.stroke_width(2),
                        ))
                        .map_err(|e| anyhow::anyhow!("{e}"))?
                        .label(*name)
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                        });
                    chart
                        .draw_series(
                            points
                                .iter()
                                .map(|(x, y)| Circle::new((*x, *y), 3, colour.filled())),
                        )
                        .map_err(|e| anyhow::anyhow!("{e}"))?;
                }
                chart
                    .configure_series_labels()
                    .position(legend_corner(&series, x_scale, x_range, (y_low, y_high)))
                    .background_style(WHITE.mix(0.9))
                    .border_style(BLACK)
                    .draw()
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
            }};
        }
        match x_scale {
            // Labelled at the measured points (1, 2, 4, 8, 16; 10k, 100k, 1M).
            XScale::Log => draw!(
                (x_range.0..x_range.1)
                    .log_scale()
                    .with_key_points(measured_xs(&series))
            ),
            XScale::Linear => draw!(x_range.0..x_range.1),
        }
        root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let partial = path.with_extension("svg.partial");
    std::fs::write(&partial, svg).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The legend goes where no line runs, and stays upper left when that is free.
    #[test]
    fn the_legend_takes_the_first_corner_no_line_crosses() {
        let rising_fast: Series = ("steep", vec![(1.0, 350.0), (16.0, 2800.0)]);
        let rising_slowly: Series = ("flat", vec![(1.0, 230.0), (64.0, 1280.0)]);
        let y = (0.0, 3080.0);
        let linear = (0.0, 67.2);
        assert!(matches!(
            legend_corner(
                &[rising_fast.clone(), rising_slowly.clone()],
                XScale::Linear,
                linear,
                y
            ),
            SeriesLabelPosition::UpperRight
        ));
        assert!(matches!(
            legend_corner(std::slice::from_ref(&rising_slowly), XScale::Linear, linear, y),
            SeriesLabelPosition::UpperLeft
        ));
        // On a log axis the shares are of the logarithms: 1..16 spans the whole width.
        let across: Series = ("across", vec![(1.0, 3000.0), (16.0, 3000.0)]);
        assert!(matches!(
            legend_corner(&[across], XScale::Log, (1.0, 16.8), y),
            SeriesLabelPosition::LowerRight
        ));
        // Every corner crossed: upper left.
        let zigzag: Series = (
            "zigzag",
            vec![(0.0, 0.0), (67.0, 3080.0), (0.0, 3080.0), (67.0, 0.0)],
        );
        assert!(matches!(
            legend_corner(&[zigzag], XScale::Linear, linear, y),
            SeriesLabelPosition::UpperLeft
        ));
    }
}
