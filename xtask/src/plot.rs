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

/// Writes a chart of `series` (a name and its (x, y) points each) to `path`,
/// atomically; the x axis is logarithmic (concurrency and sizes grow by factors).
pub(crate) fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(&str, Vec<(f64, f64)>)],
) -> anyhow::Result<()> {
    let points = series.iter().flat_map(|(_, points)| points.iter());
    let (x_max, y_max) = points.fold((1.0_f64, 1.0_f64), |(x, y), (px, py)| (x.max(*px), y.max(*py)));
    let x_min = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|(x, _)| *x))
        .fold(x_max, f64::min)
        .max(f64::MIN_POSITIVE);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d((x_min..x_max * 1.05).log_scale(), 0.0..y_max * 1.1)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .light_line_style(WHITE)
            .draw()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        for ((name, points), colour) in series.iter().zip(COLOURS.iter().cycle()) {
            let colour = *colour;
            chart
                .draw_series(LineSeries::new(points.iter().copied(), colour.stroke_width(2)))
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
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
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let partial = path.with_extension("svg.partial");
    std::fs::write(&partial, svg).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
