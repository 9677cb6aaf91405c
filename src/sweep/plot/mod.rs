//! The sweep's plots, SVG only (plotters' SVG backend, no font library: text is left to the
//! viewer, and its width here is an estimate). Each reads without the docs:
//! - with two varied fields, heatmaps of P(any duplicate) and of mean duplicate tickets
//!   ([`heatmap`]): a light-to-dark colour scale with its colour bar, each cell's value printed
//!   in it, the safe cells outlined and marked "safe", and a key saying what safe requires;
//! - for each varied field, service response time p50 and p99 (means over seeds) against it
//!   ([`latency`]): one panel per value of the other fields, safe points filled, and a key above
//!   the panels.

mod colour;
mod heatmap;
mod latency;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::exec::Sweep;
use super::inputs::Inputs;
use super::table::DUPLICATES;
use heatmap::{heatmap, Heat};
use latency::latency;

/// Size of a heatmap, pixels (a latency plot is as wide and as tall as its panels need).
const SIZE: (u32, u32) = (900, 640);
/// The outline of a safe cell (blue: apart from every colour of the heatmaps' scale).
const SAFE: RGBColor = RGBColor(20, 70, 200);

/// Every plot of a whole sweep as (file name, SVG text), in a fixed order: `p_duplicate.svg`
/// and `duplicates.svg` when exactly two fields vary, then `latency-PATH.svg` per field.
pub fn plots(s: &Sweep) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    if s.inputs.vary.len() == 2 {
        let seeds = s.inputs.seed_count();
        let pd = Heat {
            title: format!("P(any duplicate refund) over {seeds} seeds"),
            scale: "P(any duplicate)",
            values: s.points.iter().map(|p| p.p_duplicate).collect(),
            top: Some(1.0),
        };
        out.push(("p_duplicate.svg".to_string(), heatmap(s, &pd)?));
        if let Some(d) = s.inputs.metrics.iter().position(|n| n == DUPLICATES) {
            let md = Heat {
                title: format!("Mean duplicate refund tickets over {seeds} seeds"),
                scale: "mean duplicate tickets",
                values: s.points.iter().map(|p| p.stats[d].mean).collect(),
                top: None,
            };
            out.push(("duplicates.svg".to_string(), heatmap(s, &md)?));
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

/// What "safe" means in this sweep, for the plots' keys: `safe = REQUIREMENT and …`, with the
/// default requirement said in words.
fn requirement_note(s: &Sweep) -> String {
    let r: Vec<String> = s
        .inputs
        .require
        .iter()
        .map(|r| {
            if r.column == format!("{DUPLICATES}.max") && r.max == 0.0 {
                format!("{r}, no duplicate refund on any seed")
            } else {
                r.to_string()
            }
        })
        .collect();
    format!("safe = {}", r.join(" and "))
}

fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font())
}

/// Estimated width in pixels of `text` in [`font`]`(size)`: plotters writes the SVG font size
/// as `size / 1.24`, and a sans-serif character averages about 0.6 of it.
fn text_width(text: &str, size: u32) -> i32 {
    (text.chars().count() as f64 * size as f64 / 1.24 * 0.6).ceil() as i32
}

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

fn err(e: impl std::fmt::Display) -> String {
    format!("cannot draw a plot: {e}")
}

/// A plot's drawing area: the whole SVG image, in pixels.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A plot's chart, in plot units on both axes (a grid cell, or a varied value's column, is 1
/// wide).
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The varied field's values under the x axis, each centred under its column, in
/// [`font`]`(size)`.
fn draw_x_values(root: &Area, chart: &Chart, values: &[String], size: u32) -> Result<(), String> {
    for (i, v) in values.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let style = font(size).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(v.clone(), (px, py + 6), style))
            .map_err(err)?;
    }
    Ok(())
}

/// A heatmap cell's value: whole numbers bare, else 2 decimals below 10 and 1 above.
fn cell_text(v: f64) -> String {
    if v == v.trunc() {
        format!("{v:.0}")
    } else if v < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// A colour bar tick's label: with as many decimals as the ticks' step needs (0.2 → `0.4`,
/// 2.5 → `7.5`, 10 → `20`).
fn tick_text(t: f64, ticks: &[f64]) -> String {
    let step = ticks.get(1).copied().unwrap_or(1.0);
    let decimals = (0..4)
        .find(|&d| {
            let scaled = step * 10f64.powi(d);
            (scaled - scaled.round()).abs() < 1e-6
        })
        .unwrap_or(4) as usize;
    format!("{t:.decimals$}")
}
