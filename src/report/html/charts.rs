//! The timelines as SVG charts (plotters' SVG backend, as the sweep's plots): load, the pool's
//! queue, service response time and duplicate-refund tickets over virtual time. The x axis reads
//! in the scenario's clock (`clock_origin`, as stories do). No text of the inputs is drawn: the
//! page's captions carry it, escaped.

use std::time::SystemTime;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::timeline::{BucketSummary, Series};
use crate::history::clock_time;
use crate::sim::SimTime;

/// Size of every chart, pixels.
const SIZE: (u32, u32) = (1000, 280);
const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(230, 126, 34);
const RED: RGBColor = RGBColor(200, 30, 45);
const GREY: RGBColor = RGBColor(120, 120, 120);
const GREEN: RGBColor = RGBColor(44, 160, 44);

/// One chart: a stable id (the page's `id` of its figure), and its SVG (without the `xmlns`
/// attribute, which an SVG inside HTML does not need).
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// `timeline-load`, `timeline-queue`, `timeline-latency`, `timeline-duplicates`.
    pub id: &'static str,
    /// The SVG element.
    pub svg: String,
}

/// What the charts need besides the series.
pub struct ChartContext {
    /// The scenario's clock origin (x labels read `HH:MM` from it; midnight when `None`).
    pub origin: Option<SystemTime>,
    /// The horizon: the x axis covers at least `0..horizon`.
    pub horizon: SimTime,
    /// The executor's timeout, drawn across the latency chart.
    pub executor_timeout: SimTime,
}

/// The four charts, in page order. Errors are plotters' drawing errors, one line.
pub fn charts(s: &Series, cx: &ChartContext) -> Result<Vec<Chart>, String> {
    Ok(vec![
        chart("timeline-load", s, cx, load)?,
        chart("timeline-queue", s, cx, queue)?,
        chart("timeline-latency", s, cx, latency)?,
        chart("timeline-duplicates", s, cx, duplicates)?,
    ])
}

fn err(e: impl std::fmt::Display) -> String {
    format!("cannot draw a chart: {e}")
}

fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Draw = fn(&Area<'_>, &Series, &ChartContext) -> Result<(), String>;

fn chart(id: &'static str, s: &Series, cx: &ChartContext, draw: Draw) -> Result<Chart, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root, s, cx)?;
        root.present().map_err(err)?;
    }
    let svg = svg.replacen(r#" xmlns="http://www.w3.org/2000/svg""#, "", 1);
    Ok(Chart { id, svg })
}

/// The x range, minutes: from 0 to the horizon or the last bucket's end, whichever is later.
fn x_range(s: &Series, cx: &ChartContext) -> std::ops::Range<f64> {
    0.0..minutes(s.end().max(cx.horizon)).max(1.0)
}

fn minutes(t: SimTime) -> f64 {
    t.as_secs_f64() / 60.0
}

/// A bucket's middle, minutes.
fn mid(s: &Series, b: &BucketSummary) -> f64 {
    minutes(b.start) + minutes(s.width) / 2.0
}

/// `HH:MM` (with a `+Nd ` day marker) of `m` minutes on the scenario's clock.
fn clock_label(origin: Option<SystemTime>, m: f64) -> String {
    let t = clock_time(
        origin,
        SimTime::from_nanos((m.max(0.0) * 60e9).round() as u64),
    );
    // `HH:MM:SS.mmm`: drop `:SS.mmm`.
    t[..t.len().saturating_sub(7)].to_string()
}

/// Lines broken where a bucket has no value.
fn segments(s: &Series, f: impl Fn(&BucketSummary) -> Option<f64>) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for b in &s.buckets {
        match f(b) {
            Some(y) => out.last_mut().map_or((), |l| l.push((mid(s, b), y))),
            None if out.last().is_some_and(|l| !l.is_empty()) => out.push(Vec::new()),
            None => {}
        }
    }
    out.retain(|l| !l.is_empty());
    out
}

fn y_max(s: &Series, f: impl Fn(&BucketSummary) -> f64) -> f64 {
    s.buckets.iter().map(f).fold(0.0, f64::max).max(1.0) * 1.15
}

/// A chart's frame: caption, axes with clock labels, the y axis described.
fn frame<'a, 'b>(
    root: &'a Area<'b>,
    s: &Series,
    cx: &ChartContext,
    caption: &str,
    y_desc: &str,
    ymax: f64,
) -> Result<ChartContext2d<'a, 'b>, String> {
    let mut chart = ChartBuilder::on(root)
        .caption(caption, font(18))
        .margin(12)
        .margin_right(70)
        .x_label_area_size(34)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range(s, cx), 0f64..ymax)
        .map_err(err)?;
    let origin = cx.origin;
    chart
        .configure_mesh()
        .x_labels(12)
        .y_labels(6)
        .x_label_formatter(&|m| clock_label(origin, *m))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .y_desc(y_desc)
        .axis_desc_style(font(14))
        .label_style(font(12))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

type ChartContext2d<'a, 'b> = plotters::chart::ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Draws `lines` (each broken where a bucket has no value) in `color`, the first labelled.
fn lines(
    chart: &mut ChartContext2d<'_, '_>,
    lines: Vec<Vec<(f64, f64)>>,
    color: RGBColor,
    width: u32,
    label: &str,
) -> Result<(), String> {
    for (i, l) in lines.into_iter().enumerate() {
        let drawn = chart
            .draw_series(LineSeries::new(l, color.stroke_width(width)))
            .map_err(err)?;
        if i == 0 {
            drawn.label(label).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
            });
        }
    }
    Ok(())
}

fn legend<'a, 'b: 'a>(chart: &mut ChartContext2d<'a, 'b>) -> Result<(), String> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(GREY)
        .label_font(font(12))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)
}

fn load(root: &Area<'_>, s: &Series, cx: &ChartContext) -> Result<(), String> {
    let ymax = y_max(s, |b| b.tickets_opened.max(b.executor_timeouts) as f64);
    let per = humantime::format_duration(s.width.as_duration()).to_string();
    let caption = format!("Tickets opened and executor timeouts per {per}");
    let mut chart = frame(root, s, cx, &caption, "count", ymax)?;
    let count = |f: fn(&BucketSummary) -> u64| segments(s, move |b| Some(f(b) as f64));
    lines(
        &mut chart,
        count(|b| b.tickets_opened),
        BLUE,
        2,
        "tickets opened",
    )?;
    lines(
        &mut chart,
        count(|b| b.executor_timeouts),
        ORANGE,
        2,
        "executor timeouts",
    )?;
    lines(&mut chart, count(|b| b.retries), RED, 1, "model retries")?;
    legend(&mut chart)
}

fn queue(root: &Area<'_>, s: &Series, cx: &ChartContext) -> Result<(), String> {
    let ymax = y_max(s, |b| f64::from(b.queue_depth_max));
    let caption = "Pool queue depth found by ticket requests (max and mean per bucket)";
    let mut chart = frame(root, s, cx, caption, "waiters", ymax)?;
    let max = segments(s, |b| {
        (b.pool_waits > 0).then_some(f64::from(b.queue_depth_max))
    });
    lines(&mut chart, max, BLUE, 2, "max")?;
    lines(
        &mut chart,
        segments(s, |b| b.queue_depth_mean),
        GREEN,
        1,
        "mean",
    )?;
    legend(&mut chart)
}

fn latency(root: &Area<'_>, s: &Series, cx: &ChartContext) -> Result<(), String> {
    let timeout_ms = cx.executor_timeout.as_millis_f64();
    let ymax = y_max(s, |b| b.latency_max_ms.unwrap_or(0.0)).max(timeout_ms * 1.15);
    let caption = "Service response time (refunds-service response time), ms";
    let mut chart = frame(root, s, cx, caption, "ms", ymax)?;
    let x = x_range(s, cx);
    let timeout = vec![(x.start, timeout_ms), (x.end, timeout_ms)];
    let label = format!(
        "executor timeout {}",
        humantime::format_duration(cx.executor_timeout.as_duration())
    );
    lines(&mut chart, vec![timeout], RED, 1, &label)?;
    lines(
        &mut chart,
        segments(s, |b| b.latency_max_ms),
        GREY,
        1,
        "max",
    )?;
    lines(
        &mut chart,
        segments(s, |b| b.latency_p99_ms),
        ORANGE,
        2,
        "p99",
    )?;
    lines(
        &mut chart,
        segments(s, |b| b.latency_p50_ms),
        BLUE,
        2,
        "p50",
    )?;
    legend(&mut chart)
}

fn duplicates(root: &Area<'_>, s: &Series, cx: &ChartContext) -> Result<(), String> {
    let ymax = (s.duplicates() as f64).max(1.0) * 1.15;
    let caption = "Duplicate-refund tickets: new per bucket (bars) and in all (line)";
    let mut chart = frame(root, s, cx, caption, "tickets", ymax)?;
    let w = minutes(s.width);
    let bars = s.buckets.iter().filter(|b| b.duplicates > 0).map(|b| {
        let x0 = minutes(b.start);
        Rectangle::new([(x0, 0.0), (x0 + w, b.duplicates as f64)], RED.filled())
    });
    chart
        .draw_series(bars)
        .map_err(err)?
        .label("new in the bucket")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], RED.filled()));
    // The running total, stepped at each bucket's end.
    let mut total = vec![(0.0, 0.0)];
    for b in &s.buckets {
        let end = minutes(b.start) + w;
        total.push((end, b.duplicates_cumulative as f64));
    }
    lines(&mut chart, vec![total], BLUE, 2, "in all")?;
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_labels_read_hours_and_minutes_on_the_scenario_clock() {
        assert_eq!(clock_label(None, 0.0), "00:00");
        assert_eq!(clock_label(None, 61.0), "01:01");
        let origin = humantime::parse_rfc3339("2024-05-14T15:50:00Z").ok();
        assert_eq!(clock_label(origin, 20.0), "16:10");
        assert_eq!(clock_label(None, 24.0 * 60.0 + 5.0), "+1d 00:05");
    }
}
