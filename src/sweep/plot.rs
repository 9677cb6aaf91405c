//! The sweep's plots, SVG only (plotters' SVG backend, no font library: text is left to the
//! viewer): with two varied fields, heatmaps of P(any duplicate) and of mean duplicate tickets
//! with the safe region outlined; for each varied field, service response time p50 and p99 (means
//! over seeds) against it, one line per value of the other fields, safe points filled.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::exec::Sweep;
use super::inputs::Inputs;
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
        let title = format!(
            "P(any duplicate refund) over {} seeds",
            s.inputs.seed_count()
        );
        out.push(("p_duplicate.svg".to_string(), heatmap(s, &title, &pd, 1.0)?));
        if let Some(d) = dup {
            let md: Vec<f64> = s.points.iter().map(|p| p.stats[d].mean).collect();
            let max = md.iter().copied().fold(0.0, f64::max).max(1.0);
            let title = format!(
                "Mean duplicate refund tickets over {} seeds",
                s.inputs.seed_count()
            );
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
pub(crate) fn plot_names(inputs: &Inputs) -> Vec<String> {
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

/// A plot's drawing area: the whole SVG image, in pixels.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A plot's chart, in plot units on both axes (a grid cell, or a varied value's column, is 1
/// wide).
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A heatmap over the two varied fields (first along x), each cell's value printed in it, the
/// safe cells' boundary drawn thick.
fn heatmap(s: &Sweep, title: &str, values: &[f64], max: f64) -> Result<String, String> {
    let (xa, ya) = (&s.inputs.vary[0], &s.inputs.vary[1]);
    let (nx, ny) = (xa.values.len(), ya.values.len());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = chart_on(&root, (title, 22), 90, (nx as f64, ny as f64))?;
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
        draw_cells(&mut chart, values, (nx, ny), max)?;
        chart
            .draw_series(
                safe_edges(s, nx, ny)
                    .into_iter()
                    .map(|e| PathElement::new(e.to_vec(), SAFE.stroke_width(4))),
            )
            .map_err(err)?;
        draw_x_values(&root, &chart, &xa.values)?;
        for (j, v) in ya.values.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(0.0, j as f64 + 0.5));
            let style = font(14).pos(Pos::new(HPos::Right, VPos::Center));
            root.draw(&Text::new(v.clone(), (px - 8, py), style))
                .map_err(err)?;
        }
        let note = format!("outlined in red: {}", requirement_note(s));
        draw_note(&root, note, font(15).color(&SAFE))?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Every plot's frame on `root`: its title (text, font size in pixels), its margins, room for
/// the x labels and `y_label_area` pixels for the y labels, and axes from 0 to `x_max` and to
/// `y_max`, in plot units.
fn chart_on<'a, 'b>(
    root: &'a Area<'b>,
    (title, title_size): (&str, u32),
    y_label_area: u32,
    (x_max, y_max): (f64, f64),
) -> Result<Chart<'a, 'b>, String> {
    ChartBuilder::on(root)
        .caption(title, font(title_size))
        .margin(20)
        .margin_bottom(50)
        .x_label_area_size(50)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(err)
}

/// The heatmap's `nx` × `ny` cells, filled on the viridis scale from 0 to `max` and their value
/// printed inside (dark ink on light cells). `values` is by point: x index × `ny` + y index.
fn draw_cells(
    chart: &mut Chart,
    values: &[f64],
    (nx, ny): (usize, usize),
    max: f64,
) -> Result<(), String> {
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
        .draw_series(cells.map(|(i, j)| {
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
    Ok(())
}

/// The boundary of the safe region on the `nx` × `ny` grid, in plot units: every side of a
/// safe cell that borders an unsafe cell or the grid's edge, cell by cell (x, then y).
fn safe_edges(s: &Sweep, nx: usize, ny: usize) -> Vec<[(f64, f64); 2]> {
    let safe = |i: usize, j: usize| s.points[i * ny + j].safe;
    let cells = (0..nx).flat_map(|i| (0..ny).map(move |j| (i, j)));
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
    edges
}

/// The varied field's values under the x axis, each centred under its column.
fn draw_x_values(root: &Area, chart: &Chart, values: &[String]) -> Result<(), String> {
    for (i, v) in values.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let style = font(14).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(v.clone(), (px, py + 8), style))
            .map_err(err)?;
    }
    Ok(())
}

/// A note at the plot's bottom left, in `style`.
fn draw_note(root: &Area, note: String, style: TextStyle) -> Result<(), String> {
    root.draw(&Text::new(note, (20, SIZE.1 as i32 - 30), style))
        .map_err(err)
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

/// One line of a latency plot: the points that share every other varied field's value
/// (`label`, `f=v, g=w`; empty when only one field varies), ordered along the plot's field.
struct LatencyLine {
    label: String,
    points: Vec<usize>,
}

/// The lines of the latency plot against axis `a`, in the order their first point comes.
fn latency_lines(s: &Sweep, a: usize) -> Vec<LatencyLine> {
    let inputs = &s.inputs;
    let mut lines: Vec<LatencyLine> = Vec::new();
    for p in &s.points {
        let idx = inputs.indices(p.point);
        let label: Vec<String> = (0..inputs.vary.len())
            .filter(|&b| b != a)
            .map(|b| format!("{}={}", inputs.vary[b].path, inputs.vary[b].values[idx[b]]))
            .collect();
        let label = label.join(", ");
        match lines.iter_mut().find(|l| l.label == label) {
            Some(l) => l.points.push(p.point),
            None => lines.push(LatencyLine {
                label,
                points: vec![p.point],
            }),
        }
    }
    for l in &mut lines {
        l.points.sort_by_key(|&p| inputs.indices(p)[a]);
    }
    lines
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
    let lines = latency_lines(s, a);
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
            s.inputs.seed_count()
        );
        let mut chart = chart_on(&root, (&title, 20), 80, (n as f64, ymax))?;
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
        for (k, line) in lines.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            draw_latency_line(&mut chart, s, a, line, color, (p50, p99))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(font(12))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
        draw_x_values(&root, &chart, &axis.values)?;
        let note = format!(
            "thick: p99, thin: p50 of the refunds-service response time; filled dots: {}",
            requirement_note(s)
        );
        draw_note(&root, note, font(14))?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One line of the latency plot against axis `a`, in `color`: its p99 (thick) then its p50
/// (thin) as lines with a legend entry each, and a dot per point, filled when safe. `(p50,
/// p99)` are the metric columns of the service response time's percentiles.
fn draw_latency_line(
    chart: &mut Chart,
    s: &Sweep,
    a: usize,
    line: &LatencyLine,
    color: RGBAColor,
    (p50, p99): (usize, usize),
) -> Result<(), String> {
    let x = |p: usize| s.inputs.indices(p)[a] as f64 + 0.5;
    for (stat, width) in [(p99, 3), (p50, 1)] {
        let name = if stat == p99 { "p99" } else { "p50" };
        let series = line
            .points
            .iter()
            .map(|&p| (x(p), s.points[p].stats[stat].mean));
        let drawn = chart
            .draw_series(LineSeries::new(series, color.stroke_width(width)))
            .map_err(err)?;
        let legend = if line.label.is_empty() {
            name.to_string()
        } else {
            format!("{name}, {}", line.label)
        };
        drawn.label(legend).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
        });
        chart
            .draw_series(line.points.iter().map(|&p| {
                let style = if s.points[p].safe {
                    color.filled()
                } else {
                    color.stroke_width(1)
                };
                Circle::new((x(p), s.points[p].stats[stat].mean), 4, style)
            }))
            .map_err(err)?;
    }
    Ok(())
}
