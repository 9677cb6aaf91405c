//! Service response time against one varied field: p50 and p99 (means over seeds), as small
//! multiples — one panel per combination of the other varied fields' values, on shared axes —
//! with one key above the panels (never over data), and safe points filled, the others hollow.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{draw_x_values, err, font, requirement_note, text_width, Area, Chart};
use crate::sweep::exec::Sweep;
use crate::sweep::table::{TOOL_CALL_P50, TOOL_CALL_P99};

/// Width of a latency plot, pixels.
const WIDTH: u32 = 900;
/// Most panels drawn; past it the plot says how many it leaves out.
pub(super) const MAX_PANELS: usize = 24;
/// The p99 line's colour.
const P99: RGBColor = RGBColor(200, 55, 30);
/// The p50 line's colour.
const P50: RGBColor = RGBColor(40, 90, 170);

/// One panel: the points that share every other varied field's value (`label`, `f=v, g=w`;
/// empty when only one field varies), ordered along the plot's field.
struct Panel {
    label: String,
    points: Vec<usize>,
}

/// The panels of the plot against axis `a`, in the order their first point comes.
fn panels(s: &Sweep, a: usize) -> Vec<Panel> {
    let inputs = &s.inputs;
    let mut panels: Vec<Panel> = Vec::new();
    for p in &s.points {
        let idx = inputs.indices(p.point);
        let label: Vec<String> = (0..inputs.vary.len())
            .filter(|&b| b != a)
            .map(|b| format!("{}={}", inputs.vary[b].path, inputs.vary[b].values[idx[b]]))
            .collect();
        let label = label.join(", ");
        match panels.iter_mut().find(|l| l.label == label) {
            Some(l) => l.points.push(p.point),
            None => panels.push(Panel {
                label,
                points: vec![p.point],
            }),
        }
    }
    for l in &mut panels {
        l.points.sort_by_key(|&p| inputs.indices(p)[a]);
    }
    panels
}

/// One entry of the key: how it is drawn, and its text.
enum Mark {
    Line(RGBColor, u32),
    Dot(bool),
}

/// The key's entries laid out left to right from x = 20, starting a new row (22 pixels lower)
/// when the next would pass the right edge: (mark, text, x, row).
fn key_layout(entries: Vec<(Mark, String)>) -> Vec<(Mark, String, i32, i32)> {
    let (mut x, mut row) = (20, 0);
    let mut out = Vec::new();
    for (mark, text) in entries {
        let w = 30 + text_width(&text, 14);
        if x > 20 && x + w > WIDTH as i32 - 20 {
            (x, row) = (20, row + 1);
        }
        out.push((mark, text, x, row));
        x += w + 28;
    }
    out
}

/// The latency plot against axis `a` (see the module docs).
pub(super) fn latency(s: &Sweep, a: usize) -> Result<String, String> {
    let inputs = &s.inputs;
    let axis = &inputs.vary[a];
    let col = |name: &str| inputs.metrics.iter().position(|m| m == name);
    let (Some(p50), Some(p99)) = (col(TOOL_CALL_P50), col(TOOL_CALL_P99)) else {
        return Err("the report has no service response time".into());
    };
    let all = panels(s, a);
    let shown = &all[..all.len().min(MAX_PANELS)];
    let n = shown.len().max(1);
    let cols = match n {
        1 => 1,
        2..=4 => 2,
        _ => 3,
    };
    let rows = n.div_ceil(cols);
    let panel_h: u32 = if n == 1 { 470 } else { 230 };
    let key = key_layout(vec![
        (Mark::Line(P99, 3), "p99".to_string()),
        (Mark::Line(P50, 2), "p50".to_string()),
        (Mark::Dot(true), format!("filled: {}", requirement_note(s))),
        (Mark::Dot(false), "hollow: not safe".to_string()),
    ]);
    let key_rows = key.iter().map(|k| k.3).max().unwrap_or(0) + 1;
    let header = 74 + 22 * key_rows as u32;
    let footer = 60;
    let height = header + rows as u32 * panel_h + footer;
    let ymax = s
        .points
        .iter()
        .map(|p| p.stats[p99].mean)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let centre = |size| font(size).pos(Pos::new(HPos::Center, VPos::Top));
        let mid = WIDTH as i32 / 2;
        let title = format!("Service response time against {}", axis.path);
        root.draw(&Text::new(title, (mid, 12), centre(22)))
            .map_err(err)?;
        let mut sub = format!(
            "refunds service, ms, means over {} seeds",
            inputs.seed_count()
        );
        if inputs.vary.len() > 1 {
            let others: Vec<&str> = (0..inputs.vary.len())
                .filter(|&b| b != a)
                .map(|b| inputs.vary[b].path.as_str())
                .collect();
            sub.push_str(&format!("; one panel per {}", others.join(" × ")));
        }
        root.draw(&Text::new(sub, (mid, 42), centre(15)))
            .map_err(err)?;
        for (mark, text, x, row) in key {
            draw_key_entry(&root, &mark, text, (x, 80 + 22 * row))?;
        }
        let (_, rest) = root.split_vertically(header);
        let (grid, _) = rest.split_vertically(rows as u32 * panel_h);
        for (panel, area) in shown.iter().zip(grid.split_evenly((rows, cols))) {
            draw_panel(&root, &area, s, a, panel, (p50, p99), ymax)?;
        }
        let bottom = height as i32 - footer as i32;
        root.draw(&Text::new(
            axis.path.clone(),
            (mid, bottom + 10),
            centre(16),
        ))
        .map_err(err)?;
        if all.len() > shown.len() {
            let note = format!(
                "{} of {} panels shown; every point is in summary.csv",
                shown.len(),
                all.len()
            );
            root.draw(&Text::new(note, (mid, bottom + 34), centre(14)))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One key entry at `(x, y)` (the row's vertical centre): its mark in a 24-pixel-wide slot,
/// then its text.
fn draw_key_entry(
    root: &Area,
    mark: &Mark,
    text: String,
    (x, y): (i32, i32),
) -> Result<(), String> {
    match *mark {
        Mark::Line(c, w) => root
            .draw(&PathElement::new(
                vec![(x, y), (x + 24, y)],
                c.stroke_width(w),
            ))
            .map_err(err)?,
        Mark::Dot(filled) => draw_dot(root, (x + 12, y), &BLACK, filled)?,
    }
    let style = font(14).pos(Pos::new(HPos::Left, VPos::Center));
    root.draw(&Text::new(text, (x + 30, y), style)).map_err(err)
}

/// A point's dot: filled in `c` when safe, else white with a ring in `c`.
fn draw_dot(root: &Area, at: (i32, i32), c: &RGBColor, filled: bool) -> Result<(), String> {
    if filled {
        root.draw(&Circle::new(at, 5, c.filled())).map_err(err)
    } else {
        root.draw(&Circle::new(at, 5, WHITE.filled()))
            .map_err(err)?;
        root.draw(&Circle::new(at, 5, c.stroke_width(2)))
            .map_err(err)
    }
}

/// One panel on `area`: its label above, y from 0 to `ymax` ms, the plot's field's values
/// under it, the p99 (thick) and p50 (thin) lines with a dot per point.
fn draw_panel(
    root: &Area,
    area: &Area,
    s: &Sweep,
    a: usize,
    panel: &Panel,
    (p50, p99): (usize, usize),
    ymax: f64,
) -> Result<(), String> {
    let n = s.inputs.vary[a].values.len();
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(10)
        .margin_right(18)
        .x_label_area_size(26)
        .y_label_area_size(56);
    if !panel.label.is_empty() {
        builder.caption(caption(&panel.label, area), font(15));
    }
    let mut chart: Chart = builder
        .build_cartesian_2d(0f64..n as f64, 0f64..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels(0)
        .disable_x_mesh()
        .max_light_lines(0)
        .y_labels(if panel.label.is_empty() { 10 } else { 5 })
        .label_style(font(13))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(err)?;
    draw_x_values(root, &chart, &s.inputs.vary[a].values, 13)?;
    let x = |p: usize| s.inputs.indices(p)[a] as f64 + 0.5;
    for (stat, c, width) in [(p99, P99, 3), (p50, P50, 2)] {
        let line = panel
            .points
            .iter()
            .map(|&p| (x(p), s.points[p].stats[stat].mean));
        chart
            .draw_series(LineSeries::new(line, c.stroke_width(width)))
            .map_err(err)?;
        for &p in &panel.points {
            let at = chart.backend_coord(&(x(p), s.points[p].stats[stat].mean));
            draw_dot(root, at, &c, s.points[p].safe)?;
        }
    }
    Ok(())
}

/// A panel's caption: its label (`f=v, g=w`), or only its values (`v, w`: the subtitle names
/// the fields, in order) when the label would be wider than the panel.
fn caption(label: &str, area: &Area) -> String {
    let (xr, _) = area.get_pixel_range();
    if text_width(label, 15) + 16 <= xr.end - xr.start {
        return label.to_string();
    }
    let values: Vec<&str> = label
        .split(", ")
        .map(|kv| kv.split_once('=').map_or(kv, |(_, v)| v))
        .collect();
    values.join(", ")
}
