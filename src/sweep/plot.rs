//! The sweep's plots, SVG only (plotters' SVG backend, no font library: text is left to the
//! viewer): with two varied fields, heatmaps of P(any duplicate) and of mean duplicate tickets
//! with the safe region outlined; for each varied field, service response time p50 and p99 (means
//! over seeds) against it, one line per value of the other fields, safe points filled.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::exec::{Inputs, Sweep};
use super::table::{DUPLICATES, TOOL_CALL_P50, TOOL_CALL_P99};

/// Size of every plot, pixels.
const SIZE: (u32, u32) = (900, 640);
/// The outline of the safe region.
const SAFE: RGBColor = RGBColor(220, 20, 60);

/// Every plot of a whole sweep as (file name, SVG text), in a fixed order: `p_duplicate.svg`
/// and `duplicates.svg` when exactly two fields vary, then `latency-PATH.svg` per field.
pub fn plots(s: &Sweep) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    if s.inputs.vary.len() == 2 {
        let dup = s.inputs.metrics.iter().position(|n| n == DUPLICATES);
        let pd: Vec<f64> = s.points.iter().map(|p| p.p_duplicate).collect();
        let title = format!("P(any duplicate refund) over {} seeds", seeds(s));
        out.push(("p_duplicate.svg".to_string(), heatmap(s, &title, &pd, 1.0)?));
        if let Some(d) = dup {
            let md: Vec<f64> = s.points.iter().map(|p| p.stats[d].mean).collect();
            let max = md.iter().copied().fold(0.0, f64::max).max(1.0);
            let title = format!("Mean duplicate refund tickets over {} seeds", seeds(s));
            out.push(("duplicates.svg".to_string(), heatmap(s, &title, &md, max)?));
        }
    }
    for a in 0..s.inputs.vary.len() {
        let name = format!("latency-{}.svg", s.inputs.vary[a].path);
        out.push((name, latency(s, a)?));
    }
    Ok(out)
}

/// The file names [`plots`] gives for a sweep of `inputs`, in the same order (what `refundsim
/// report --sweep` reads back from a sweep's directory).
pub fn plot_names(inputs: &Inputs) -> Vec<String> {
    let mut names = Vec::new();
    if inputs.vary.len() == 2 {
        names.push("p_duplicate.svg".to_string());
        if inputs.metrics.iter().any(|n| n == DUPLICATES) {
            names.push("duplicates.svg".to_string());
        }
    }
    for a in &inputs.vary {
        names.push(format!("latency-{}.svg", a.path));
    }
    names
}

fn seeds(s: &Sweep) -> u64 {
    s.inputs.seed_last - s.inputs.seed_first + 1
}

fn requirement_note(s: &Sweep) -> String {
    let r: Vec<String> = s.inputs.require.iter().map(|r| r.to_string()).collect();
    format!("safe: {}", r.join(" and "))
}

fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font())
}

fn err(e: impl std::fmt::Display) -> String {
    format!("cannot draw a plot: {e}")
}

/// A heatmap over the two varied fields (first along x), each cell's value printed in it, the
/// safe cells' boundary drawn thick.
fn heatmap(s: &Sweep, title: &str, values: &[f64], max: f64) -> Result<String, String> {
    let (xa, ya) = (&s.inputs.vary[0], &s.inputs.vary[1]);
    let (nx, ny) = (xa.values.len(), ya.values.len());
    let safe = |i: usize, j: usize| s.points[i * ny + j].safe;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, font(22))
            .margin(20)
            .margin_bottom(50)
            .x_label_area_size(50)
            .y_label_area_size(90)
            .build_cartesian_2d(0f64..nx as f64, 0f64..ny as f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .x_desc(&xa.path)
            .y_desc(&ya.path)
            .axis_desc_style(font(16))
            .draw()
            .map_err(err)?;
        let cells = (0..nx).flat_map(|i| (0..ny).map(move |j| (i, j)));
        chart
            .draw_series(cells.clone().map(|(i, j)| {
                let v = values[i * ny + j];
                let c = ViridisRGB::get_color_normalized(v, 0.0, max);
                Rectangle::new(
                    [(i as f64, j as f64), (i as f64 + 1.0, j as f64 + 1.0)],
                    c.filled(),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(cells.clone().map(|(i, j)| {
                let v = values[i * ny + j];
                let ink: &'static RGBColor = if v / max > 0.6 { &BLACK } else { &WHITE };
                Text::new(
                    cell_text(v),
                    (i as f64 + 0.5, j as f64 + 0.5),
                    font(14)
                        .color(ink)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                )
            }))
            .map_err(err)?;
        let mut edges = Vec::new();
        for (i, j) in cells.filter(|&(i, j)| safe(i, j)) {
            let (x, y) = (i as f64, j as f64);
            if i == 0 || !safe(i - 1, j) {
                edges.push([(x, y), (x, y + 1.0)]);
            }
            if i + 1 == nx || !safe(i + 1, j) {
                edges.push([(x + 1.0, y), (x + 1.0, y + 1.0)]);
            }
            if j == 0 || !safe(i, j - 1) {
                edges.push([(x, y), (x + 1.0, y)]);
            }
            if j + 1 == ny || !safe(i, j + 1) {
                edges.push([(x, y + 1.0), (x + 1.0, y + 1.0)]);
            }
        }
        chart
            .draw_series(
                edges
                    .into_iter()
                    .map(|e| PathElement::new(e.to_vec(), SAFE.stroke_width(4))),
            )
            .map_err(err)?;
        for (i, v) in xa.values.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            let style = font(14).pos(Pos::new(HPos::Center, VPos::Top));
            root.draw(&Text::new(v.clone(), (px, py + 8), style))
                .map_err(err)?;
        }
        for (j, v) in ya.values.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(0.0, j as f64 + 0.5));
            let style = font(14).pos(Pos::new(HPos::Right, VPos::Center));
            root.draw(&Text::new(v.clone(), (px - 8, py), style))
                .map_err(err)?;
        }
        let note = format!("outlined in red: {}", requirement_note(s));
        root.draw(&Text::new(
            note,
            (20, SIZE.1 as i32 - 30),
            font(15).color(&SAFE),
        ))
        .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn cell_text(v: f64) -> String {
    if v == v.trunc() {
        format!("{v:.0}")
    } else if v < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// Service response time p50 (thin) and p99 (thick), means over seeds, against axis `a`: one line
/// per combination of the other fields' values; safe points filled, the others hollow.
fn latency(s: &Sweep, a: usize) -> Result<String, String> {
    let inputs = &s.inputs;
    let axis = &inputs.vary[a];
    let n = axis.values.len();
    let col = |name: &str| inputs.metrics.iter().position(|m| m == name);
    let (Some(p50), Some(p99)) = (col(TOOL_CALL_P50), col(TOOL_CALL_P99)) else {
        return Err("the report has no service response time".into());
    };
    // Lines: the points sharing every other axis's value, ordered along axis `a`.
    let mut lines: Vec<(String, Vec<usize>)> = Vec::new();
    for p in &s.points {
        let idx = inputs.indices(p.point);
        let label: Vec<String> = (0..inputs.vary.len())
            .filter(|&b| b != a)
            .map(|b| format!("{}={}", inputs.vary[b].path, inputs.vary[b].values[idx[b]]))
            .collect();
        let label = label.join(", ");
        match lines.iter_mut().find(|(l, _)| *l == label) {
            Some((_, pts)) => pts.push(p.point),
            None => lines.push((label, vec![p.point])),
        }
    }
    for (_, pts) in &mut lines {
        pts.sort_by_key(|&p| inputs.indices(p)[a]);
    }
    let ymax = s
        .points
        .iter()
        .map(|p| p.stats[p99].mean)
        .fold(0.0, f64::max)
        .max(1.0)
        // Headroom above the highest line for the legend.
        * (1.2 + 0.04 * lines.len() as f64);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let title = format!(
            "Service response time against {} (mean over {} seeds)",
            axis.path,
            seeds(s)
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(title, font(20))
            .margin(20)
            .margin_bottom(50)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..n as f64, 0f64..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(0)
            .disable_x_mesh()
            .x_desc(&axis.path)
            .y_desc("service response time, ms")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .axis_desc_style(font(16))
            .draw()
            .map_err(err)?;
        let x = |p: usize| inputs.indices(p)[a] as f64 + 0.5;
        for (k, (label, pts)) in lines.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            for (stat, width) in [(p99, 3), (p50, 1)] {
                let name = if stat == p99 { "p99" } else { "p50" };
                let series = pts.iter().map(|&p| (x(p), s.points[p].stats[stat].mean));
                let drawn = chart
                    .draw_series(LineSeries::new(series, color.stroke_width(width)))
                    .map_err(err)?;
                let legend = if label.is_empty() {
                    name.to_string()
                } else {
                    format!("{name}, {label}")
                };
                drawn.label(legend).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
                });
                chart
                    .draw_series(pts.iter().map(|&p| {
                        let style = if s.points[p].safe {
                            color.filled()
                        } else {
                            color.stroke_width(1)
                        };
                        Circle::new((x(p), s.points[p].stats[stat].mean), 4, style)
                    }))
                    .map_err(err)?;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(font(12))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
        for (i, v) in axis.values.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            let style = font(14).pos(Pos::new(HPos::Center, VPos::Top));
            root.draw(&Text::new(v.clone(), (px, py + 8), style))
                .map_err(err)?;
        }
        let note = format!(
            "thick: p99, thin: p50 of the refunds-service response time; filled dots: {}",
            requirement_note(s)
        );
        root.draw(&Text::new(note, (20, SIZE.1 as i32 - 30), font(14)))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}
