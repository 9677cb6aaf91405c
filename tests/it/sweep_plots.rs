//! The sweep's plots and `summary.csv` as a newcomer reads them (issue 32): asserted on the SVG
//! text. Heatmaps have a colour bar with increasing tick labels and a title, light cells for
//! low values and dark ones for high, and only the safe cells outlined, with a key; the latency
//! plot of a 6 × 4 grid has one panel per value of the other field and no two texts on top of
//! each other; `summary.csv` is `points.csv`'s columns a person asks for first.

use std::path::Path;

use crate::common;
use common::*;

/// The incident's first two spikes on a 6 × 4 grid: six timeouts, so the latency plot against
/// the pool size has six series (the plot that used to stack twelve legend entries).
const GRID: &[&str] = &[
    INCIDENT,
    "--set",
    "horizon=22m",
    "--vary",
    "executor.timeout=5s,8s,10s,15s,20s,30s",
    "--vary",
    "refunds_service.pool_size=2..5",
    "--seeds",
    "1..4",
];

/// The safe cells' outline colour.
const SAFE_STROKE: &str = "#1446C8";

fn sweep_into(dir: &Path, extra: &[&str]) {
    refundsim()
        .arg("sweep")
        .args(GRID)
        .args(extra)
        .arg("--out")
        .arg(dir)
        .assert()
        .code(predicates::function::function(|c: &i32| *c <= 1));
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One `<text>` of a plot: where it is anchored, its font size (px), anchors, rotation, fill
/// and content.
#[derive(Debug, Clone)]
struct Text {
    x: f64,
    y: f64,
    size: f64,
    anchor: String,
    dy: String,
    rotated: bool,
    content: String,
}

impl Text {
    /// Its estimated box (left, top, right, bottom): a sans-serif character is at most about
    /// 0.6 of the font size wide, a line as tall as the font size.
    fn bbox(&self) -> (f64, f64, f64, f64) {
        let w = self.content.chars().count() as f64 * self.size * 0.6;
        let left = match self.anchor.as_str() {
            "middle" => self.x - w / 2.0,
            "end" => self.x - w,
            _ => self.x,
        };
        let top = match self.dy.as_str() {
            "0.76em" => self.y,
            "0.5ex" => self.y - self.size / 2.0,
            _ => self.y - self.size,
        };
        (left, top, left + w, top + self.size)
    }
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let len = tag[start..].find('"')?;
    Some(tag[start..start + len].to_string())
}

fn num(tag: &str, name: &str) -> f64 {
    attr(tag, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number {name} in {tag}"))
}

fn texts(svg: &str) -> Vec<Text> {
    svg.split("<text ")
        .skip(1)
        .map(|rest| {
            let (tag, after) = rest.split_once('>').unwrap();
            let content = after.split("</text>").next().unwrap().trim();
            let content = content
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&#39;", "'")
                .replace("&amp;", "&");
            let tag = format!(" {tag}");
            Text {
                x: num(&tag, "x"),
                y: num(&tag, "y"),
                size: num(&tag, "font-size"),
                anchor: attr(&tag, "text-anchor").unwrap_or_default(),
                dy: attr(&tag, "dy").unwrap_or_default(),
                rotated: tag.contains("transform="),
                content,
            }
        })
        .collect()
}

/// The elements named `element` (`rect`, `polyline`, `circle`), as their tags' attribute text.
fn tags<'a>(svg: &'a str, element: &str) -> Vec<&'a str> {
    svg.split(&format!("<{element} "))
        .skip(1)
        .map(|rest| rest.split("/>").next().unwrap())
        .collect()
}

/// A filled rectangle: (left, top, right, bottom, fill).
fn rects(svg: &str) -> Vec<(f64, f64, f64, f64, String)> {
    tags(svg, "rect")
        .into_iter()
        .map(|t| format!(" {t}"))
        .filter(|t| attr(t, "fill").is_some_and(|f| f.starts_with('#')))
        .map(|t| {
            let (x, y) = (num(&t, "x"), num(&t, "y"));
            let (w, h) = (num(&t, "width"), num(&t, "height"));
            (x, y, x + w, y + h, attr(&t, "fill").unwrap())
        })
        .collect()
}

/// WCAG relative luminance of `#RRGGBB`.
fn luminance(hex: &str) -> f64 {
    let c = |i: usize| {
        let s = u8::from_str_radix(&hex[i..i + 2], 16).unwrap() as f64 / 255.0;
        if s <= 0.04045 {
            s / 12.92
        } else {
            ((s + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * c(1) + 0.7152 * c(3) + 0.0722 * c(5)
}

/// The fill of the smallest filled rectangle under the point `(x, y)` (a heatmap cell under its
/// printed value), and that rectangle.
fn cell_under(svg: &str, (x, y): (f64, f64)) -> (f64, f64, f64, f64, String) {
    rects(svg)
        .into_iter()
        .filter(|r| r.0 <= x && x <= r.2 && r.1 <= y && y <= r.3)
        .min_by(|a, b| ((a.2 - a.0) * (a.3 - a.1)).total_cmp(&((b.2 - b.0) * (b.3 - b.1))))
        .unwrap_or_else(|| panic!("no cell under {x},{y}"))
}

/// The colour bar's tick labels, bottom to top: the numbers written right of every other text.
fn colour_bar_ticks(svg: &str) -> Vec<(f64, f64)> {
    let all = texts(svg);
    let right = all
        .iter()
        .filter(|t| t.content.parse::<f64>().is_ok())
        .map(|t| t.x)
        .fold(0.0, f64::max);
    let mut ticks: Vec<(f64, f64)> = all
        .iter()
        .filter(|t| t.x == right && t.anchor == "start")
        .map(|t| (t.y, t.content.parse().unwrap()))
        .collect();
    ticks.sort_by(|a, b| b.0.total_cmp(&a.0));
    ticks
}

fn csv_rows(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

#[test]
fn heatmaps_have_a_colour_bar_light_low_values_and_only_safe_cells_outlined() {
    let dir = tempfile::tempdir().unwrap();
    sweep_into(dir.path(), &[]);
    let (header, rows) = csv_rows(&read(dir.path(), "summary.csv"));
    let safe_col = header.iter().position(|h| h == "safe").unwrap();
    let safe = rows.iter().filter(|r| r[safe_col] == "yes").count();
    assert!(
        safe > 0 && safe < rows.len(),
        "a grid with both kinds: {safe}"
    );
    for (file, scale, top) in [
        ("p_duplicate.svg", "P(any duplicate)", Some(1.0)),
        ("duplicates.svg", "mean duplicate tickets", None),
    ] {
        let svg = read(dir.path(), file);
        let all = texts(&svg);
        // The colour bar: its title, and ticks from 0 upwards, bottom to top.
        let words: Vec<&str> = all.iter().map(|t| t.content.as_str()).collect();
        assert!(words.join(" ").contains(scale), "{file}: no {scale:?}");
        let ticks = colour_bar_ticks(&svg);
        assert!(ticks.len() >= 3, "{file}: {ticks:?}");
        assert_eq!(ticks[0].1, 0.0, "{file}: {ticks:?}");
        assert!(
            ticks.windows(2).all(|w| w[1].1 > w[0].1),
            "{file}: {ticks:?}"
        );
        if let Some(top) = top {
            assert_eq!(ticks.last().unwrap().1, top, "{file}");
        }
        // The bar's bottom band light, its top band dark.
        let bar_x = ticks_x(&all) - 20.0;
        let (lo, hi) = (cell_under(&svg, (bar_x, ticks[0].0 - 2.0)), {
            cell_under(&svg, (bar_x, ticks.last().unwrap().0 + 2.0))
        });
        assert!(luminance(&lo.4) > 0.8, "{file}: bar bottom {}", lo.4);
        assert!(luminance(&hi.4) < 0.1, "{file}: bar top {}", hi.4);
        // A cell printing 0 is light, its ink black; the highest cell is dark, its ink white.
        let values: Vec<&Text> = all
            .iter()
            .filter(|t| t.anchor == "middle" && t.x < bar_x - 40.0)
            .filter(|t| t.content.parse::<f64>().is_ok())
            .collect();
        let zero = values.iter().find(|t| t.content == "0").unwrap();
        assert!(
            luminance(&cell_under(&svg, (zero.x, zero.y)).4) > 0.8,
            "{file}"
        );
        let highest = values
            .iter()
            .max_by(|a, b| {
                let v = |t: &Text| t.content.parse::<f64>().unwrap();
                v(a).total_cmp(&v(b))
            })
            .unwrap();
        assert!(
            luminance(&cell_under(&svg, (highest.x, highest.y)).4) < 0.15,
            "{file}: {highest:?}"
        );
        // Every safe cell (and only those) marked "safe" and outlined inside its own sides; with
        // the default requirement a safe cell prints 0.
        assert_eq!(
            words.iter().filter(|w| **w == "safe").count(),
            safe,
            "{file}"
        );
        let outlines: Vec<&str> = tags(&svg, "polyline")
            .into_iter()
            .filter(|t| t.contains(&format!("stroke=\"{SAFE_STROKE}\"")))
            .collect();
        assert_eq!(
            outlines.len(),
            safe + 1,
            "{file}: one per safe cell and the key's"
        );
        for o in &outlines[..safe] {
            let pts: Vec<(f64, f64)> = attr(&format!(" {o}"), "points")
                .unwrap()
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect();
            let (l, t) = pts[0];
            let (r, b) = pts[2];
            let cell = cell_under(&svg, ((l + r) / 2.0, (t + b) / 2.0));
            assert!(
                cell.0 < l && r < cell.2 && cell.1 < t && b < cell.3,
                "{file}: outline {o} is not inside its cell {cell:?}"
            );
            let printed = values
                .iter()
                .find(|v| cell.0 < v.x && v.x < cell.2 && cell.1 < v.y && v.y < cell.3)
                .unwrap();
            assert_eq!(printed.content, "0", "{file}: outlined cell {cell:?}");
        }
        // The key says what the outline means.
        let key = all
            .iter()
            .find(|t| t.content.starts_with("outlined"))
            .unwrap_or_else(|| panic!("{file}: no key"));
        assert!(
            key.content
                .contains("\"safe\": safe = duplicate_refund_tickets.max<=0"),
            "{file}: {key:?}"
        );
    }
}

/// The colour bar's tick labels' x (the right-most numbers).
fn ticks_x(all: &[Text]) -> f64 {
    all.iter()
        .filter(|t| t.content.parse::<f64>().is_ok() && t.anchor == "start")
        .map(|t| t.x)
        .fold(0.0, f64::max)
}

#[test]
fn six_series_latency_plot_has_six_panels_and_no_overlapping_text() {
    let dir = tempfile::tempdir().unwrap();
    sweep_into(dir.path(), &[]);
    let svg = read(dir.path(), "latency-refunds_service.pool_size.svg");
    let all = texts(&svg);
    let panels: Vec<&Text> = all
        .iter()
        .filter(|t| t.content.starts_with("executor.timeout="))
        .collect();
    let labels: Vec<&str> = panels.iter().map(|t| t.content.as_str()).collect();
    assert_eq!(
        labels,
        [5, 8, 10, 15, 20, 30].map(|s| format!("executor.timeout={s}s")),
        "one panel per timeout"
    );
    // The key: both lines and both kinds of dot, above every panel.
    let key: Vec<&Text> = all
        .iter()
        .filter(|t| {
            ["p99", "p50"].contains(&t.content.as_str())
                || t.content
                    .starts_with("filled: safe = duplicate_refund_tickets.max<=0")
                || t.content == "hollow: not safe"
        })
        .collect();
    assert_eq!(key.len(), 4, "{key:?}");
    let first_panel = panels.iter().map(|t| t.y).fold(f64::MAX, f64::min);
    assert!(key.iter().all(|k| k.bbox().3 < first_panel), "{key:?}");
    // No two texts overlap (rotated ones aside: there are none).
    assert!(all.iter().all(|t| !t.rotated));
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            let (p, q) = (a.bbox(), b.bbox());
            let apart = p.2 <= q.0 || q.2 <= p.0 || p.3 <= q.1 || q.3 <= p.1;
            assert!(apart, "{a:?} overlaps {b:?}");
        }
    }
    // Safe points filled, the others hollow (a white disc under a ring), in both lines; the
    // key has one of each.
    let (header, rows) = csv_rows(&read(dir.path(), "summary.csv"));
    let safe_col = header.iter().position(|h| h == "safe").unwrap();
    let unsafe_points = rows.iter().filter(|r| r[safe_col] == "no").count();
    let circles = tags(&svg, "circle");
    let rings = circles
        .iter()
        .filter(|c| c.contains("fill=\"none\""))
        .count();
    let discs = circles
        .iter()
        .filter(|c| !c.contains("fill=\"none\""))
        .count();
    assert_eq!(rings, 2 * unsafe_points + 1);
    assert_eq!(
        discs,
        2 * rows.len() + 2,
        "filled dots and the hollow ones' white discs"
    );
}

#[test]
fn summary_csv_is_the_first_columns_of_points_csv() {
    let dir = tempfile::tempdir().unwrap();
    sweep_into(dir.path(), &["--minimize", "executor.timeout"]);
    let summary = read(dir.path(), "summary.csv");
    let (header, rows) = csv_rows(&summary);
    assert_eq!(
        header,
        [
            "point",
            "executor.timeout",
            "refunds_service.pool_size",
            "seeds",
            "p_duplicate",
            "duplicate_refund_tickets.mean",
            "duplicate_refund_tickets.max",
            "latency.tool_call.p50_ms.mean",
            "latency.tool_call.p99_ms.mean",
            "safe",
            "recommended",
        ]
    );
    let (pheader, prows) = csv_rows(&read(dir.path(), "points.csv"));
    assert_eq!(rows.len(), prows.len());
    assert!(rows.len() == 24);
    let at = |h: &[String], name: &str| h.iter().position(|x| x == name).unwrap();
    for (row, prow) in rows.iter().zip(&prows) {
        // The same values, rounded for reading: within half the last decimal shown.
        for name in &header[..header.len() - 2] {
            let (ours, theirs) = (&row[at(&header, name)], &prow[at(&pheader, name)]);
            match (ours.parse::<f64>(), theirs.parse::<f64>()) {
                (Ok(a), Ok(b)) => {
                    let decimals = ours.split_once('.').map_or(0, |(_, d)| d.len());
                    let half = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9;
                    assert!((a - b).abs() <= half, "{name}: {ours} vs {theirs}");
                }
                _ => assert_eq!(ours, theirs, "{name}"),
            }
        }
        let safe = &prow[at(&pheader, "safe")];
        let expected = if safe == "true" { "yes" } else { "no" };
        assert_eq!(row[at(&header, "safe")], expected);
    }
    // A real row: 5 s with 2 connections duplicates on every seed.
    assert_eq!(rows[0][..5], ["0", "5s", "2", "4", "1.000"]);
    assert!(rows[0][5].parse::<f64>().unwrap() > 100.0, "{:?}", rows[0]);
    assert_eq!(rows[0][9], "no");
    // lint rejects every point of the incident, so nothing is recommended.
    let json: serde_json::Value = serde_json::from_str(&read(dir.path(), "sweep.json")).unwrap();
    let best = json["results"]["recommendation"]["point"].as_u64();
    for (i, r) in rows.iter().enumerate() {
        let yes = best == Some(i as u64);
        assert_eq!(r[10], if yes { "yes" } else { "no" });
    }
    // Without --minimize there is no recommended column; the same sweep gives the same bytes.
    let again = tempfile::tempdir().unwrap();
    sweep_into(again.path(), &["--minimize", "executor.timeout"]);
    assert_eq!(read(again.path(), "summary.csv"), summary);
    sweep_into(again.path(), &[]);
    let (h, _) = csv_rows(&read(again.path(), "summary.csv"));
    assert_eq!(h.last().unwrap(), "safe");
}
