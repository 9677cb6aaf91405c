//! A heatmap over the two varied fields: one cell per grid point, coloured by a value on a
//! light-to-dark scale with its colour bar, the value printed in the cell, and the safe cells
//! each outlined and marked "safe" (only the safe ones: an outline never runs along an unsafe
//! cell's side).

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::colour::{colour, ink, ticks};
use super::{
    cell_text, draw_x_values, err, font, requirement_note, text_width, tick_text, wrap, Chart,
    SAFE, SIZE,
};
use crate::sweep::exec::Sweep;

/// Left edge of the colour bar, pixels.
const BAR_X: i32 = 742;
/// Width of the colour bar, pixels.
const BAR_W: i32 = 22;
/// Bands the colour bar is drawn in (a stepped gradient: plotters' SVG has no gradients).
const BANDS: usize = 48;
/// How far inside a safe cell its outline is drawn, pixels.
const INSET: i32 = 5;

/// What one heatmap shows: its title, what the colour is (the colour bar's title), the value
/// per point (point order: x index × y count + y index) and the top of the scale (`None`: a
/// round number at or above the largest value).
pub(super) struct Heat<'a> {
    pub title: String,
    pub scale: &'a str,
    pub values: Vec<f64>,
    pub top: Option<f64>,
}

/// The heatmap's SVG text (first varied field along x, second along y).
pub(super) fn heatmap(s: &Sweep, h: &Heat) -> Result<String, String> {
    let (xa, ya) = (&s.inputs.vary[0], &s.inputs.vary[1]);
    let (nx, ny) = (xa.values.len(), ya.values.len());
    let max = h
        .values
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let ticks = ticks(h.top.unwrap_or(max));
    let top = ticks.last().copied().unwrap_or(1.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let body = root.titled(&h.title, font(22)).map_err(err)?;
        let (left, _) = body.split_horizontally(BAR_X - 30);
        let mut chart = ChartBuilder::on(&left)
            .margin(20)
            .margin_top(40)
            .margin_bottom(60)
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
        draw_cells(&root, &mut chart, s, h, (nx, ny), top)?;
        draw_x_values(&root, &chart, &xa.values, 14)?;
        for (j, v) in ya.values.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(0.0, j as f64 + 0.5));
            let style = font(14).pos(Pos::new(HPos::Right, VPos::Center));
            root.draw(&Text::new(v.clone(), (px - 8, py), style))
                .map_err(err)?;
        }
        draw_colour_bar(&root, &chart, h.scale, &ticks)?;
        draw_safe_key(&root, s)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The cells, filled on the colour scale from 0 to `top`; in each, its value (and "safe" under
/// it in a safe cell) when it fits, in the ink that reads on the fill; each safe cell outlined
/// just inside its sides.
fn draw_cells(
    root: &super::Area,
    chart: &mut Chart,
    s: &Sweep,
    h: &Heat,
    (nx, ny): (usize, usize),
    top: f64,
) -> Result<(), String> {
    let cells: Vec<(usize, usize)> = (0..nx).flat_map(|i| (0..ny).map(move |j| (i, j))).collect();
    chart
        .draw_series(cells.iter().map(|&(i, j)| {
            let c = colour(h.values[i * ny + j], top);
            Rectangle::new(
                [(i as f64, j as f64), (i as f64 + 1.0, j as f64 + 1.0)],
                c.filled(),
            )
        }))
        .map_err(err)?;
    for &(i, j) in &cells {
        let v = h.values[i * ny + j];
        let safe = s.points[i * ny + j].safe;
        let (x0, y1) = chart.backend_coord(&(i as f64, j as f64));
        let (x1, y0) = chart.backend_coord(&(i as f64 + 1.0, j as f64 + 1.0));
        let (w, ht) = (x1 - x0, y1 - y0);
        let (cx, cy) = ((x0 + x1) / 2, (y0 + y1) / 2);
        let ink = ink(colour(v, top));
        let text = cell_text(v);
        let two_lines = safe && ht >= 44 && text_width("safe", 15) + 2 * INSET + 6 <= w;
        if text_width(&text, 18) + 2 * INSET + 6 <= w && ht >= 26 {
            let y = if two_lines { cy - 10 } else { cy };
            let style = font(18)
                .color(&ink)
                .pos(Pos::new(HPos::Center, VPos::Center));
            root.draw(&Text::new(text, (cx, y), style)).map_err(err)?;
        }
        if two_lines {
            let style = font(15)
                .color(&ink)
                .pos(Pos::new(HPos::Center, VPos::Center));
            root.draw(&Text::new("safe", (cx, cy + 12), style))
                .map_err(err)?;
        }
        if safe {
            let inset = INSET.min(w / 4).min(ht / 4);
            let (l, r, t, b) = (x0 + inset, x1 - inset, y0 + inset, y1 - inset);
            outline(root, (l, t), (r, b))?;
        }
    }
    Ok(())
}

/// The colour bar right of the plot, as tall as it: the scale from 0 (bottom) to the last of
/// `ticks` (top), a labelled mark at each tick, and `scale` (what the colour is) above it.
fn draw_colour_bar(
    root: &super::Area,
    chart: &Chart,
    scale: &str,
    ticks: &[f64],
) -> Result<(), String> {
    let (_, yr) = chart.plotting_area().get_pixel_range();
    let (y_top, y_bottom) = (yr.start, yr.end);
    let top = ticks.last().copied().unwrap_or(1.0);
    let height = (y_bottom - y_top) as f64;
    let y_of = |f: f64| y_bottom - (f * height).round() as i32;
    for k in 0..BANDS {
        let c = colour(k as f64 / (BANDS - 1) as f64 * top, top);
        let (lo, hi) = (
            y_of(k as f64 / BANDS as f64),
            y_of((k + 1) as f64 / BANDS as f64),
        );
        root.draw(&Rectangle::new(
            [(BAR_X, hi), (BAR_X + BAR_W, lo)],
            c.filled(),
        ))
        .map_err(err)?;
    }
    root.draw(&Rectangle::new(
        [(BAR_X, y_top), (BAR_X + BAR_W, y_bottom)],
        BLACK.stroke_width(1),
    ))
    .map_err(err)?;
    for &t in ticks {
        let y = y_of(t / top);
        let x = BAR_X + BAR_W;
        root.draw(&PathElement::new(vec![(x, y), (x + 5, y)], BLACK))
            .map_err(err)?;
        let style = font(15).pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(tick_text(t, ticks), (x + 8, y), style))
            .map_err(err)?;
    }
    let lines = wrap(scale, 20);
    for (k, line) in lines.iter().enumerate() {
        let y = y_top - 10 - 18 * (lines.len() - 1 - k) as i32;
        let style = font(16).pos(Pos::new(HPos::Left, VPos::Bottom));
        root.draw(&Text::new(line.clone(), (BAR_X - 12, y), style))
            .map_err(err)?;
    }
    Ok(())
}

/// The key under the plot: a cell outline like the safe cells' and what it means (in two
/// lines when one would not fit).
fn draw_safe_key(root: &super::Area, s: &Sweep) -> Result<(), String> {
    let safe = s.points.iter().filter(|p| p.safe).count();
    let note = format!(
        "outlined, marked \"safe\": {} ({safe} of {} points)",
        requirement_note(s),
        s.points.len()
    );
    let lines = wrap(&note, 118);
    let y = SIZE.1 as i32 - 24 - 18 * (lines.len() as i32 - 1).min(1);
    root.draw(&Rectangle::new([(20, y - 9), (46, y + 9)], WHITE.filled()))
        .map_err(err)?;
    outline(root, (20, y - 9), (46, y + 9))?;
    for (k, line) in lines.into_iter().enumerate() {
        let style = font(16).pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(line, (56, y + 18 * k as i32), style))
            .map_err(err)?;
    }
    Ok(())
}

/// A safe cell's outline: a closed path, [`SAFE`] and 4 pixels wide, around the rectangle from
/// `(l, t)` to `(r, b)` (a path, as plotters' SVG rectangle has no stroke width).
fn outline(root: &super::Area, (l, t): (i32, i32), (r, b): (i32, i32)) -> Result<(), String> {
    let corners = vec![(l, t), (r, t), (r, b), (l, b), (l, t)];
    root.draw(&PathElement::new(corners, SAFE.stroke_width(4)))
        .map_err(err)
}
