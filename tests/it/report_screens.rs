//! `refundsim report` as a person sees it: four pages (the incident, the fixed policy, a
//! replayed recording written from the OpenTelemetry GenAI conventions, and a page embedding a
//! sweep run without the page's policy) rendered by a headless Chromium, and checked for what a
//! reader would notice (issue 32):
//!
//! - every chart that has data (by the page's own bucket table) draws it: coloured pixels inside
//!   its plot area in the screenshot, a lone bucket included; a chart without data says so;
//! - no two tick labels of an axis read the same (the text Chromium laid out in the SVG);
//! - no text (legend, note, label) is drawn inside a plot area that holds data, and no two
//!   texts overlap;
//! - the header's first line names the scenario file, the policy and the seed;
//! - an embedded sweep says whether it was run with the page's configuration.
//!
//! Geometry comes from the page itself: a copy of the page (without its Content-Security-Policy,
//! which would block it) runs a script that writes every chart's plot area and text boxes, in
//! page pixels, into the DOM, which `--dump-dom` prints; the screenshot is of the same copy at the
//! page's full height. Skipped without Chromium unless `REFUNDSIM_REQUIRE_BROWSER=1` (CI).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::html_report::{between, browser, chromium, console_errors, report, Shot};
use super::sweep::SMALL;
use crate::common::{refundsim, INCIDENT};

/// Width of the browser window, CSS pixels (the page is at most 1100 wide).
const WIDTH: u32 = 1280;

/// Writes every chart's plot area (page pixels), its texts' boxes, the bucket table's sums, the
/// header's and the sweep note's texts and the sweep plots' boxes into `<pre id="geometry">`.
const GEOMETRY: &str = r#"<script>
window.addEventListener('load', function () {
  function box(r) { return [r.left + scrollX, r.top + scrollY, r.right + scrollX, r.bottom + scrollY]; }
  var out = { height: Math.ceil(document.documentElement.scrollHeight), charts: [], ids: {}, imgs: [] };
  document.querySelectorAll('figure[id^="timeline-"]').forEach(function (f) {
    var svg = f.querySelector('svg');
    var r = svg.getBoundingClientRect();
    var k = r.width / svg.width.baseVal.value;
    var a = svg.getAttribute('data-plot-area').split(' ').map(Number);
    var x = r.left + scrollX, y = r.top + scrollY;
    var texts = [];
    svg.querySelectorAll('text').forEach(function (t) {
      texts.push({ s: t.textContent, box: box(t.getBoundingClientRect()) });
    });
    out.charts.push({ id: f.id, plot: [x + a[0] * k, y + a[1] * k, x + a[2] * k, y + a[3] * k], texts: texts });
  });
  var sums = [];
  document.querySelectorAll('#timeline-table tr[data-start-ns]').forEach(function (tr) {
    tr.querySelectorAll('td').forEach(function (td, i) {
      var v = parseFloat(td.textContent);
      sums[i] = (sums[i] || 0) + (isNaN(v) ? 0 : v);
    });
  });
  out.sums = { tickets: sums[1], pool_waits: sums[4], responses: sums[7], duplicates: sums[11] };
  ['shows', 'shows-scenario', 'shows-policy', 'seed', 'sweep-differs', 'sweep-same'].forEach(function (id) {
    var e = document.getElementById(id);
    if (e) out.ids[id] = { text: e.textContent, box: box(e.getBoundingClientRect()) };
  });
  document.querySelectorAll('figure.sweep-plot img').forEach(function (i) {
    out.imgs.push({ name: i.alt, box: box(i.getBoundingClientRect()) });
  });
  var pre = document.createElement('pre');
  pre.id = 'geometry';
  pre.style.position = 'absolute';
  pre.style.left = '-99999px';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"#;

impl Shot {
    /// Pixels inside `b` (page pixels, inset by 3 to leave the axes out) for which `f` holds.
    fn count(&self, b: [f64; 4], f: impl Fn([u8; 3]) -> bool) -> usize {
        let (x0, y0) = ((b[0] + 3.0).ceil() as usize, (b[1] + 3.0).ceil() as usize);
        let x1 = ((b[2] - 3.0).floor() as usize).min(self.width);
        let y1 = ((b[3] - 3.0).floor() as usize).min(self.height);
        (y0..y1)
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .filter(|(x, y)| f(self.rgb[y * self.width + x]))
            .count()
    }
}

/// A pixel of a data colour (blue, orange, green, red: saturated), not grey, white or black.
fn coloured(p: [u8; 3]) -> bool {
    let (max, min) = (*p.iter().max().unwrap(), *p.iter().min().unwrap());
    max - min > 50
}

/// The executor timeout's red line (the latency chart's only red), anti-aliased edges
/// included: red well above green and blue, which are about equal (orange's green is far above
/// its blue).
fn red(p: [u8; 3]) -> bool {
    let [r, g, b] = p.map(i32::from);
    r > g + 40 && (g - b).abs() < 40
}

fn boxes(v: &Value) -> [f64; 4] {
    let a: Vec<f64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    [a[0], a[1], a[2], a[3]]
}

/// Whether two boxes overlap by more than `slack` pixels each way.
fn overlap(a: [f64; 4], b: [f64; 4], slack: f64) -> bool {
    a[0] < b[2] - slack && b[0] < a[2] - slack && a[1] < b[3] - slack && b[1] < a[3] - slack
}

/// What Chromium shows of `page`: the geometry the script wrote, and the screenshot.
fn render(bin: &Path, dir: &Path, page: &Path) -> (Value, Shot) {
    let html = std::fs::read_to_string(page).unwrap();
    let start = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let end = start + html[start..].find('>').unwrap() + 1;
    let copy = format!("{}{}", &html[..start], &html[end..]).replacen(
        "</body>",
        &format!("{GEOMETRY}</body>"),
        1,
    );
    let name = page.file_stem().unwrap().to_str().unwrap();
    let probe = dir.join(format!("{name}.probe.html"));
    std::fs::write(&probe, copy).unwrap();
    let profile = dir.join(format!("{name}.profile"));
    let size = format!("--window-size={WIDTH},900");
    let (dom, log) = chromium(
        bin,
        &profile,
        &["--dump-dom", &size, "--virtual-time-budget=5000"],
        &probe,
    );
    assert_eq!(console_errors(&log), Vec::<&str>::new(), "{name}");
    let json = between(&dom, "<pre id=\"geometry\"", "</pre>")
        .and_then(|s| s.split_once('>'))
        .map(|(_, j)| {
            j.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&nbsp;", "\u{a0}")
                .replace("&amp;", "&")
        })
        .unwrap_or_else(|| panic!("{name}: the geometry script wrote nothing"));
    let g: Value = serde_json::from_str(&json).unwrap();
    let height = g["height"].as_u64().unwrap();
    let png = dir.join(format!("{name}.png"));
    let shot = format!("--screenshot={}", png.display());
    let size = format!("--window-size={WIDTH},{height}");
    chromium(
        bin,
        &profile,
        &[&shot, &size, "--virtual-time-budget=5000"],
        &probe,
    );
    (g, Shot::read(&png))
}

/// Checks every timeline chart of one page; returns each chart's data pixels by id.
fn check_charts(name: &str, g: &Value, shot: &Shot) -> Vec<(String, usize)> {
    let sums = &g["sums"];
    let has = |k: &str| sums[k].as_f64().unwrap() > 0.0;
    let charts = g["charts"].as_array().unwrap();
    assert_eq!(charts.len(), 4, "{name}: four timeline charts");
    let mut drawn = Vec::new();
    for c in charts {
        let id = c["id"].as_str().unwrap();
        let plot = boxes(&c["plot"]);
        let with_data = match id {
            "timeline-load" => has("tickets"),
            "timeline-queue" => has("pool_waits"),
            "timeline-latency" => has("responses"),
            "timeline-duplicates" => has("duplicates"),
            other => panic!("{name}: unknown chart {other}"),
        };
        let pixels = if id == "timeline-latency" {
            shot.count(plot, |p| coloured(p) && !red(p))
        } else {
            shot.count(plot, coloured)
        };
        drawn.push((id.to_string(), pixels));
        let texts: Vec<(&str, [f64; 4])> = c["texts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["s"].as_str().unwrap().trim(), boxes(&t["box"])))
            .filter(|(s, _)| !s.trim().is_empty())
            .collect();
        let inside: Vec<&str> = texts
            .iter()
            .filter(|(_, b)| overlap(*b, plot, 1.0))
            .map(|(s, _)| *s)
            .collect();
        if with_data {
            assert!(
                pixels >= 20,
                "{name} #{id}: the bucket table has data but the plot area shows {pixels} \
                 pixels of it"
            );
            assert_eq!(
                inside,
                Vec::<&str>::new(),
                "{name} #{id}: text drawn over the data's plot area"
            );
            let legend: Vec<&str> = texts
                .iter()
                .filter(|(_, b)| b[0] >= plot[2] - 1.0)
                .map(|(s, _)| *s)
                .collect();
            assert!(
                !legend.is_empty(),
                "{name} #{id}: no legend beside the plot"
            );
        } else if id != "timeline-duplicates" {
            // No data: the chart says so (a duplicates chart draws its running total at 0).
            assert_eq!(
                inside.len(),
                1,
                "{name} #{id}: a chart without data says so in its plot area: {inside:?}"
            );
            assert!(inside[0].starts_with("no "), "{name} #{id}: {inside:?}");
        }
        // Tick labels: below the plot (time), left of it (values): no two read the same.
        for (axis, labels) in [
            (
                "x",
                texts
                    .iter()
                    .filter(|(_, b)| b[1] >= plot[3] - 1.0)
                    .map(|(s, _)| *s)
                    .collect::<Vec<_>>(),
            ),
            (
                "y",
                texts
                    .iter()
                    .filter(|(_, b)| b[2] <= plot[0] + 1.0)
                    .map(|(s, _)| *s)
                    .collect(),
            ),
        ] {
            assert!(
                labels.len() >= 2,
                "{name} #{id}: {axis} axis labels {labels:?}"
            );
            let mut unique = labels.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(
                unique.len(),
                labels.len(),
                "{name} #{id}: repeated {axis} tick labels {labels:?}"
            );
        }
        for (i, (a, ab)) in texts.iter().enumerate() {
            for (b, bb) in &texts[i + 1..] {
                assert!(
                    !overlap(*ab, *bb, 1.0),
                    "{name} #{id}: {a:?} and {b:?} overlap"
                );
            }
        }
    }
    drawn
}

/// The header's first line: scenario file, policy and seed, within the first screen.
fn check_header(name: &str, g: &Value, scenario: &str, policy: &str, seed: &str) {
    let ids = &g["ids"];
    assert_eq!(ids["shows-scenario"]["text"], scenario, "{name}");
    assert_eq!(ids["shows-policy"]["text"], policy, "{name}");
    assert_eq!(ids["seed"]["text"], seed, "{name}");
    let top = boxes(&ids["shows"]["box"])[1];
    assert!(
        top < 200.0,
        "{name}: the header's first line is at {top} px"
    );
}

/// `sweep.rs`'s small sweep of the incident (no policy, `--set horizon=22m`), into `dir/sweep`.
fn small_sweep(dir: &Path) -> PathBuf {
    let sweep = dir.join("sweep");
    let o = refundsim()
        .arg("sweep")
        .args(SMALL)
        .arg("--out")
        .arg(&sweep)
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    sweep
}

fn page(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(format!("{name}.html"));
    let (code, _, err) = report(args, &out);
    assert_eq!(code, 0, "{name}: {err}");
    out
}

#[test]
fn the_pages_read_right_in_a_browser() {
    let Some(bin) = browser() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A recording written from the OpenTelemetry GenAI conventions (not by refundsim): one
    // call per ticket minutes apart, so every bucket of its service chart stands alone.
    let recording = d.join("recording.json");
    let o = refundsim()
        .args(["import", "tests/fixtures/import/spec/otlp-genai.json"])
        .args(["--base", INCIDENT, "--out"])
        .arg(&recording)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = recording.to_str().unwrap();
    let sweep = small_sweep(d);
    let sweep = sweep.to_str().unwrap();
    let fixed = ["--policy", "policies/fixed.json"];

    let incident = page(d, "incident", &[INCIDENT]);
    let (g, shot) = render(&bin, d, &incident);
    check_header(
        "incident",
        &g,
        INCIDENT,
        "none (the scenario as written)",
        "157",
    );
    let drawn = check_charts("incident", &g, &shot);
    assert!(drawn.iter().all(|(_, n)| *n >= 20), "{drawn:?}");

    let fixed_page = page(d, "fixed", &[INCIDENT, fixed[0], fixed[1]]);
    let (g, shot) = render(&bin, d, &fixed_page);
    check_header("fixed", &g, INCIDENT, "policies/fixed.json", "157");
    check_charts("fixed", &g, &shot);

    let replay = page(d, "replay", &[rec]);
    let (g, shot) = render(&bin, d, &replay);
    check_header("replay", &g, rec, "none (the scenario as written)", "157");
    let drawn = check_charts("replay", &g, &shot);
    let latency = drawn
        .iter()
        .find(|(id, _)| id == "timeline-latency")
        .unwrap();
    assert!(
        latency.1 >= 20,
        "the replay's lone buckets are drawn: {drawn:?}"
    );

    let with_sweep = page(
        d,
        "with-sweep",
        &[INCIDENT, fixed[0], fixed[1], "--sweep", sweep],
    );
    let (g, shot) = render(&bin, d, &with_sweep);
    check_header("with-sweep", &g, INCIDENT, "policies/fixed.json", "157");
    check_charts("with-sweep", &g, &shot);
    let differs = g["ids"]["sweep-differs"]["text"]
        .as_str()
        .expect("a sweep run without the page's policy says so");
    assert!(
        differs.contains("the page shows scenarios/carrier-outage.json with policies/fixed.json")
            && differs.contains(
                "the sweep ran scenarios/carrier-outage.json with no policy and --set horizon=22m"
            ),
        "{differs}"
    );
    assert!(g["ids"].get("sweep-same").is_none());
    let imgs = g["imgs"].as_array().unwrap();
    assert!(!imgs.is_empty());
    for i in imgs {
        let b = boxes(&i["box"]);
        let ink = shot.count(b, |p| p != [255, 255, 255]);
        assert!(
            ink > 500,
            "the sweep plot {} is drawn: {ink} pixels",
            i["name"]
        );
    }
    // The same sweep under a page of its own configuration says so instead.
    let same = page(
        d,
        "same",
        &[INCIDENT, "--set", "horizon=22m", "--sweep", sweep],
    );
    let html = std::fs::read_to_string(same).unwrap();
    assert!(html.contains("<p id=\"sweep-same\""), "same configuration");
    assert!(!html.contains("id=\"sweep-differs\""));
    // The same file named by its absolute path is the same configuration.
    let absolute = Path::new(env!("CARGO_MANIFEST_DIR")).join(INCIDENT);
    let same = page(
        d,
        "same-absolute",
        &[
            absolute.to_str().unwrap(),
            "--set",
            "horizon=22m",
            "--sweep",
            sweep,
        ],
    );
    let html = std::fs::read_to_string(same).unwrap();
    assert!(
        html.contains("<p id=\"sweep-same\""),
        "the same file, named otherwise"
    );
    // A recording sets no expect bound: the header says so, not a green "every bound holds".
    let html = std::fs::read_to_string(&replay).unwrap();
    assert!(
        html.contains("class=\"muted\" data-value=\"true\">no expect bound</span>"),
        "{}",
        between(&html, "id=\"expectations-met\"", "</span>").unwrap_or("")
    );
}
