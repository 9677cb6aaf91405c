//! The timelines as SVG charts (plotters' SVG backend, as the sweep's plots): load, the pool's
//! queue, service response time and duplicate-refund tickets over virtual time. The x axis reads
//! in the scenario's clock (`clock_origin`, as stories do). No text of the inputs is drawn: the
//! page's captions carry it, escaped.
//!
//! Drawn for a reader who pastes a chart into a postmortem:
//! - ticks are chosen here, not by plotters: time ticks on round clock times (`HH:MM`, or
//!   `HH:MM:SS` when they are less than a minute apart), value ticks on round numbers (whole
//!   numbers on the count charts), so no two labels of an axis read the same;
//! - the legend sits in its own column right of the plot area, so it never covers data (the
//!   timeout line, the duplicates' running total);
//! - a bucket with a value but no neighbour (a short replay, sparse traffic) is drawn as a dot,
//!   since a one-point line draws nothing;
//! - a chart with nothing to draw says so in its plot area and has no legend;
//! - the `<svg>` carries `data-plot-area="LEFT TOP RIGHT BOTTOM"` (pixels of the SVG), which the
//!   browser test uses to check where data and legends are drawn.

use std::ops::Range;
use std::time::SystemTime;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::timeline::{BucketSummary, Series};
use crate::history::clock_time;
use crate::sim::SimTime;

/// Size of every chart, pixels.
const SIZE: (u32, u32) = (1000, 280);
/// Width of the legend's column, right of the plot, pixels.
const LEGEND_W: u32 = 180;
const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(230, 126, 34);
const RED: RGBColor = RGBColor(200, 30, 45);
const GREY: RGBColor = RGBColor(120, 120, 120);
const GREEN: RGBColor = RGBColor(44, 160, 44);
/// Most ticks on the time axis.
const MAX_X_TICKS: f64 = 10.0;
/// Most intervals between ticks on the value axis.
const MAX_Y_STEPS: f64 = 5.0;
/// Time tick spacings, seconds: round clock intervals.
const TIME_STEPS_S: &[u64] = &[
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
    172_800, 604_800, 1_209_600, 2_592_000,
];

/// One chart: a stable id (the page's `id` of its figure), and its SVG (without the `xmlns`
/// attribute, which an SVG inside HTML does not need).
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// `timeline-load`, `timeline-queue`, `timeline-latency`, `timeline-duplicates`.
    pub id: &'static str,
    /// The SVG element, with `data-plot-area="LEFT TOP RIGHT BOTTOM"` (pixels).
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
/// Draws a chart's series in the plot area and returns its legend (empty: nothing was drawn).
type Draw = fn(&mut Plot<'_, '_>, &Series, &ChartContext) -> Result<Legend, String>;

fn chart(id: &'static str, s: &Series, cx: &ChartContext, draw: Draw) -> Result<Chart, String> {
    let mut svg = String::new();
    let plot_area;
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (left, right) = root.split_horizontally(SIZE.0 - LEGEND_W);
        let spec = spec(id, s, cx);
        let mut plot = frame(&left, s, cx, &spec)?;
        let legend = draw(&mut plot, s, cx)?;
        let (xs, ys) = plot.plotting_area().get_pixel_range();
        plot_area = (xs.start, ys.start, xs.end, ys.end);
        if legend.0.is_empty() {
            let note = spec.empty;
            // `left` starts at the SVG's origin: its pixels are the SVG's.
            left.draw(&Text::new(
                note,
                ((xs.start + xs.end) / 2, (ys.start + ys.end) / 2),
                font(14)
                    .color(&GREY)
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            ))
            .map_err(err)?;
        } else {
            draw_legend(&right, &legend, ys.start)?;
        }
        root.present().map_err(err)?;
    }
    let (l, t, r, b) = plot_area;
    let svg = svg.replacen(
        r#" xmlns="http://www.w3.org/2000/svg""#,
        &format!(r#" data-plot-area="{l} {t} {r} {b}""#),
        1,
    );
    Ok(Chart { id, svg })
}

/// What a chart's frame needs: caption, y axis and its range, and what to say without data.
struct Spec {
    caption: String,
    y_desc: &'static str,
    y_max: f64,
    /// Whole-number ticks (a count).
    counts: bool,
    /// Drawn in the plot area when no series has a value.
    empty: &'static str,
}

fn spec(id: &str, s: &Series, cx: &ChartContext) -> Spec {
    match id {
        "timeline-load" => Spec {
            caption: format!(
                "Tickets opened, executor timeouts and model retries per {}",
                humantime::format_duration(s.width.as_duration())
            ),
            y_desc: "count",
            y_max: y_max(s, |b| {
                b.tickets_opened.max(b.executor_timeouts).max(b.retries) as f64
            }),
            counts: true,
            empty: "no ticket opened",
        },
        "timeline-queue" => Spec {
            caption: "Pool queue depth found by ticket requests (max and mean per bucket)".into(),
            y_desc: "waiters",
            y_max: y_max(s, |b| f64::from(b.queue_depth_max)),
            counts: true,
            empty: "no ticket request waited for a pool connection",
        },
        "timeline-latency" => Spec {
            caption: "Service response time (refunds-service response time), ms".into(),
            y_desc: "ms",
            y_max: y_max(s, |b| b.latency_max_ms.unwrap_or(0.0))
                .max(cx.executor_timeout.as_millis_f64() * 1.15),
            counts: false,
            empty: "no refunds-service response",
        },
        _ => Spec {
            caption: "Duplicate-refund tickets: new per bucket (bars) and in all (line)".into(),
            y_desc: "tickets",
            y_max: (s.duplicates() as f64).max(1.0) * 1.15,
            counts: true,
            empty: "no duplicate-refund ticket",
        },
    }
}

/// The x range, minutes: from 0 to the horizon or the last bucket's end, whichever is later.
fn x_range(s: &Series, cx: &ChartContext) -> Range<f64> {
    0.0..minutes(s.end().max(cx.horizon)).max(1.0)
}

fn minutes(t: SimTime) -> f64 {
    t.as_secs_f64() / 60.0
}

/// A bucket's middle, minutes.
fn mid(s: &Series, b: &BucketSummary) -> f64 {
    minutes(b.start) + minutes(s.width) / 2.0
}

/// Ticks of the time axis over `x` (minutes from the run's start): at most [`MAX_X_TICKS`], on
/// round times of the scenario's clock (a 5-minute step ticks at :00, :05, …), and whether
/// they need seconds to read apart (a step under a minute).
fn time_ticks(origin: Option<SystemTime>, x: &Range<f64>) -> (Vec<f64>, bool) {
    let span_s = (x.end - x.start) * 60.0;
    let step_s = TIME_STEPS_S
        .iter()
        .copied()
        .find(|s| span_s / *s as f64 <= MAX_X_TICKS)
        .unwrap_or_else(|| (span_s / MAX_X_TICKS / 86_400.0).ceil() as u64 * 86_400);
    let step_ms = u128::from(step_s) * 1000;
    let origin_ms = origin
        .and_then(|o| o.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis());
    let first_ms = (step_ms - origin_ms % step_ms) % step_ms;
    let mut ticks = Vec::new();
    let mut t = first_ms as f64 / 60_000.0;
    while t <= x.end + 1e-9 {
        ticks.push(t);
        t += step_s as f64 / 60.0;
    }
    (ticks, step_s < 60)
}

/// `HH:MM` (or `HH:MM:SS` with `seconds`; a `+Nd ` day marker past midnight) of `m` minutes on
/// the scenario's clock.
fn clock_label(origin: Option<SystemTime>, m: f64, seconds: bool) -> String {
    let t = clock_time(
        origin,
        SimTime::from_nanos((m.max(0.0) * 60e9).round() as u64),
    );
    // `HH:MM:SS.mmm`: drop `.mmm`, and `:SS` unless asked.
    let cut = if seconds { 4 } else { 7 };
    t[..t.len().saturating_sub(cut)].to_string()
}

/// Ticks of a value axis from 0 to `max`: a round step (1, 2 or 5 × 10ⁿ; at least 1 for a
/// count) giving at most [`MAX_Y_STEPS`] intervals, and the decimals that tell them apart.
fn value_ticks(max: f64, counts: bool) -> (Vec<f64>, usize) {
    let raw = (max / MAX_Y_STEPS).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let mut step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag);
    if counts {
        step = step.max(1.0).round();
    }
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    let n = (max / step + 1e-9).floor() as usize;
    ((0..=n).map(|i| i as f64 * step).collect(), decimals)
}

fn y_max(s: &Series, f: impl Fn(&BucketSummary) -> f64) -> f64 {
    s.buckets.iter().map(f).fold(0.0, f64::max).max(1.0) * 1.15
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

/// An `f64` axis with the ticks chosen here ([`time_ticks`], [`value_ticks`]), not by plotters.
struct Ticked {
    range: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(range: Range<f64>, ticks: Vec<f64>) -> Ticked {
        Ticked {
            range: range.into(),
            ticks,
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, _: H) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> Range<f64> {
        self.range.range()
    }
}

type Coord = Cartesian2d<Ticked, Ticked>;
type Plot<'a, 'b> = plotters::chart::ChartContext<'a, SVGBackend<'b>, Coord>;

/// A chart's frame: caption, axes with clock labels, the y axis described.
fn frame<'a, 'b>(
    area: &'a Area<'b>,
    s: &Series,
    cx: &ChartContext,
    spec: &Spec,
) -> Result<Plot<'a, 'b>, String> {
    let x = x_range(s, cx);
    let (x_ticks, seconds) = time_ticks(cx.origin, &x);
    let (y_ticks, decimals) = value_ticks(spec.y_max, spec.counts);
    let mut chart = ChartBuilder::on(area)
        .caption(&spec.caption, font(18))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(34)
        .y_label_area_size(64)
        .build_cartesian_2d(
            Ticked::new(x, x_ticks),
            Ticked::new(0f64..spec.y_max, y_ticks),
        )
        .map_err(err)?;
    let origin = cx.origin;
    chart
        .configure_mesh()
        .x_label_formatter(&|m| clock_label(origin, *m, seconds))
        .y_label_formatter(&|v| format!("{v:.decimals$}"))
        .y_desc(spec.y_desc)
        .axis_desc_style(font(14))
        .label_style(font(12))
        .bold_line_style(RGBColor(225, 225, 225))
        // Plotters asks the axis for its minor ticks too: they are the same ticks here.
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// How a legend entry is drawn.
#[derive(Clone, Copy)]
enum Swatch {
    Line(RGBColor, u32),
    Bar(RGBColor),
}

/// The entries of a chart's legend, in drawing order.
#[derive(Default)]
struct Legend(Vec<(String, Swatch)>);

/// Draws `lines` (each broken where a bucket has no value; a one-point piece as a dot) in
/// `color`, and names them in `legend` when there is any.
fn lines(
    chart: &mut Plot<'_, '_>,
    legend: &mut Legend,
    lines: Vec<Vec<(f64, f64)>>,
    color: RGBColor,
    width: u32,
    label: &str,
) -> Result<(), String> {
    if lines.is_empty() {
        return Ok(());
    }
    for l in lines {
        if let [p] = l[..] {
            chart
                .draw_series(std::iter::once(Circle::new(p, width + 2, color.filled())))
                .map_err(err)?;
        } else {
            chart
                .draw_series(LineSeries::new(l, color.stroke_width(width)))
                .map_err(err)?;
        }
    }
    legend
        .0
        .push((label.to_string(), Swatch::Line(color, width)));
    Ok(())
}

/// The legend in its column right of the plot, from the plot's top.
fn draw_legend(area: &Area<'_>, legend: &Legend, top: i32) -> Result<(), String> {
    for (i, (label, swatch)) in legend.0.iter().enumerate() {
        let y = top + 8 + 20 * i as i32;
        match *swatch {
            Swatch::Line(c, w) => area
                .draw(&PathElement::new(vec![(4, y), (26, y)], c.stroke_width(w)))
                .map_err(err)?,
            Swatch::Bar(c) => area
                .draw(&Rectangle::new([(4, y - 5), (26, y + 5)], c.filled()))
                .map_err(err)?,
        }
        area.draw(&Text::new(
            label.as_str(),
            (32, y),
            font(12).pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

fn load(chart: &mut Plot<'_, '_>, s: &Series, _: &ChartContext) -> Result<Legend, String> {
    let mut legend = Legend::default();
    let count = |f: fn(&BucketSummary) -> u64| segments(s, move |b| Some(f(b) as f64));
    let l = &mut legend;
    lines(
        chart,
        l,
        count(|b| b.tickets_opened),
        BLUE,
        2,
        "tickets opened",
    )?;
    lines(
        chart,
        l,
        count(|b| b.executor_timeouts),
        ORANGE,
        2,
        "executor timeouts",
    )?;
    lines(chart, l, count(|b| b.retries), RED, 1, "model retries")?;
    Ok(legend)
}

fn queue(chart: &mut Plot<'_, '_>, s: &Series, _: &ChartContext) -> Result<Legend, String> {
    let mut legend = Legend::default();
    let max = segments(s, |b| {
        (b.pool_waits > 0).then_some(f64::from(b.queue_depth_max))
    });
    lines(chart, &mut legend, max, BLUE, 2, "max")?;
    let mean = segments(s, |b| b.queue_depth_mean);
    lines(chart, &mut legend, mean, GREEN, 1, "mean")?;
    Ok(legend)
}

fn latency(chart: &mut Plot<'_, '_>, s: &Series, cx: &ChartContext) -> Result<Legend, String> {
    let mut legend = Legend::default();
    let l = &mut legend;
    lines(chart, l, segments(s, |b| b.latency_max_ms), GREY, 1, "max")?;
    lines(
        chart,
        l,
        segments(s, |b| b.latency_p99_ms),
        ORANGE,
        2,
        "p99",
    )?;
    lines(chart, l, segments(s, |b| b.latency_p50_ms), BLUE, 2, "p50")?;
    if legend.0.is_empty() {
        return Ok(legend);
    }
    let timeout_ms = cx.executor_timeout.as_millis_f64();
    let x = x_range(s, cx);
    let label = format!(
        "executor timeout {}",
        humantime::format_duration(cx.executor_timeout.as_duration())
    );
    let timeout = vec![vec![(x.start, timeout_ms), (x.end, timeout_ms)]];
    lines(chart, &mut legend, timeout, RED, 1, &label)?;
    Ok(legend)
}

fn duplicates(chart: &mut Plot<'_, '_>, s: &Series, _: &ChartContext) -> Result<Legend, String> {
    let mut legend = Legend::default();
    let w = minutes(s.width);
    let bars: Vec<_> = s
        .buckets
        .iter()
        .filter(|b| b.duplicates > 0)
        .map(|b| {
            let x0 = minutes(b.start);
            Rectangle::new([(x0, 0.0), (x0 + w, b.duplicates as f64)], RED.filled())
        })
        .collect();
    if !bars.is_empty() {
        chart.draw_series(bars).map_err(err)?;
        legend
            .0
            .push(("new in the bucket".into(), Swatch::Bar(RED)));
    }
    // The running total, stepped at each bucket's end.
    let mut total = vec![(0.0, 0.0)];
    for b in &s.buckets {
        let end = minutes(b.start) + w;
        total.push((end, b.duplicates_cumulative as f64));
    }
    lines(chart, &mut legend, vec![total], BLUE, 2, "in all")?;
    Ok(legend)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_labels_read_hours_and_minutes_on_the_scenario_clock() {
        assert_eq!(clock_label(None, 0.0, false), "00:00");
        assert_eq!(clock_label(None, 61.0, false), "01:01");
        assert_eq!(clock_label(None, 61.25, true), "01:01:15");
        let origin = humantime::parse_rfc3339("2024-05-14T15:50:00Z").ok();
        assert_eq!(clock_label(origin, 20.0, false), "16:10");
        assert_eq!(clock_label(None, 24.0 * 60.0 + 5.0, false), "+1d 00:05");
    }

    #[test]
    fn time_ticks_fall_on_round_clock_times_and_read_apart() {
        // A 72-second replay from 16:41:00.5: ticks every 10 s, on :10, :20, …, with seconds.
        let origin = humantime::parse_rfc3339("2024-05-14T16:41:00.5Z").ok();
        let (ticks, seconds) = time_ticks(origin, &(0.0..1.2));
        assert!(seconds);
        let labels: Vec<String> = ticks
            .iter()
            .map(|m| clock_label(origin, *m, true))
            .collect();
        assert_eq!(
            labels,
            ["16:41:10", "16:41:20", "16:41:30", "16:41:40", "16:41:50", "16:42:00", "16:42:10"]
        );
        // The incident's 2 hours from 15:50: every 15 minutes, without seconds.
        let origin = humantime::parse_rfc3339("2024-05-14T15:50:00Z").ok();
        let (ticks, seconds) = time_ticks(origin, &(0.0..120.0));
        assert!(!seconds);
        let labels: Vec<String> = ticks
            .iter()
            .map(|m| clock_label(origin, *m, false))
            .collect();
        assert_eq!(
            labels,
            ["16:00", "16:15", "16:30", "16:45", "17:00", "17:15", "17:30", "17:45"]
        );
        // 30 days: whole days.
        let (ticks, _) = time_ticks(None, &(0.0..30.0 * 1440.0));
        assert!(ticks.len() <= 10 && ticks.len() >= 5, "{ticks:?}");
        assert!(ticks.iter().all(|m| (m / 1440.0).fract() == 0.0));
    }

    #[test]
    fn value_ticks_are_round_and_distinct() {
        assert_eq!(value_ticks(1.15, true), (vec![0.0, 1.0], 0));
        assert_eq!(value_ticks(49.45, true).0, [0.0, 10.0, 20.0, 30.0, 40.0]);
        assert_eq!(value_ticks(12_351.0, false).0, [0.0, 5000.0, 10_000.0]);
        assert_eq!(value_ticks(1.15, false), (vec![0.0, 0.5, 1.0], 1));
        assert_eq!(value_ticks(0.0115, false).1, 3);
        let (t, d) = value_ticks(0.0115, false);
        let labels: Vec<String> = t.iter().map(|v| format!("{v:.d$}")).collect();
        let mut unique = labels.clone();
        unique.dedup();
        assert_eq!(labels, unique);
    }

    #[test]
    fn a_lone_bucket_is_drawn_and_an_empty_chart_says_so() {
        let b = |start_s: u64, p50: Option<f64>| BucketSummary {
            start: SimTime::from_secs(start_s),
            tickets_opened: 1,
            executor_timeouts: 0,
            retries: 0,
            pool_waits: 0,
            queue_depth_max: 0,
            queue_depth_mean: None,
            responses: u64::from(p50.is_some()),
            latency_p50_ms: p50,
            latency_p99_ms: p50,
            latency_max_ms: p50,
            duplicates: 0,
            duplicates_cumulative: 0,
        };
        let s = Series {
            width: SimTime::from_secs(1),
            buckets: vec![b(0, None), b(1, Some(9120.0)), b(2, None)],
        };
        let cx = ChartContext {
            origin: None,
            horizon: SimTime::from_secs(3),
            executor_timeout: SimTime::from_secs(8),
        };
        let c = charts(&s, &cx).unwrap();
        let latency = &c[2].svg;
        assert!(latency.contains("<circle"), "the lone bucket is a dot");
        assert!(latency.contains("\np99\n") && latency.contains("\nexecutor timeout 8s\n"));
        let queue = &c[1].svg;
        assert!(queue.contains("\nno ticket request waited for a pool connection\n"));
        assert!(!queue.contains("\nmax\n"), "no legend without data");
        assert!(latency.contains(" data-plot-area=\"") && !latency.contains("xmlns"));
    }
}
