//! `refundsim report`: the HTML file as a user gets it — the numbers `run --json` reports, the
//! stories `run --ticket` prints, escaping, determinism, no network reference, atomic writes,
//! a sweep embedded — and, when a headless Chromium is at hand, the page as a browser shows it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{refundsim, run_json, INCIDENT};

/// Runs `refundsim report ARGS --out OUT`; returns the exit code, stdout and stderr.
pub(crate) fn report(args: &[&str], out: &Path) -> (i32, String, String) {
    let o = refundsim()
        .arg("report")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The incident's report, written to `dir/report.html`.
fn incident_report(dir: &Path) -> (PathBuf, String) {
    let out = dir.join("report.html");
    let (code, stdout, stderr) = report(&[INCIDENT], &out);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("wrote "), "{stdout}");
    assert!(
        stdout.contains("43 duplicate-refund tickets, 10 stories shown"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&out).unwrap();
    (out, html)
}

/// The text between `after` and the next `until`, once `after` is found.
pub(crate) fn between<'a>(s: &'a str, after: &str, until: &str) -> Option<&'a str> {
    let start = s.find(after)? + after.len();
    let len = s[start..].find(until)?;
    Some(&s[start..start + len])
}

/// `data-value` of the element with `id`.
fn data_value<'a>(html: &'a str, id: &str) -> &'a str {
    between(html, &format!("id=\"{id}\" data-value=\""), "\"")
        .unwrap_or_else(|| panic!("no #{id} with a data-value"))
}

/// Every scalar of the JSON report as (dotted path, text); strings bare, arrays left out.
fn scalars(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                scalars(&p, v, out);
            }
        }
        serde_json::Value::Array(_) => {}
        serde_json::Value::String(s) => out.push((prefix.into(), s.clone())),
        other => out.push((prefix.into(), other.to_string())),
    }
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

#[test]
fn the_report_holds_run_json_numbers_and_run_ticket_stories() {
    let dir = tempfile::tempdir().unwrap();
    let (_, html) = incident_report(dir.path());
    let json = run_json(&[INCIDENT]);
    // The key numbers, by id.
    assert_eq!(data_value(&html, "duplicate-tickets"), "43");
    for (id, metric) in [
        ("duplicate-tickets", "duplicate_refund_tickets"),
        ("over-refund", "over_refund_cents"),
        ("tickets", "tickets"),
        ("tool-calls", "tool_calls"),
        ("executor-timeouts", "executor_timeouts"),
        ("false-failures", "false_failures"),
        ("lost-refunds", "lost_refunds"),
        ("max-pool-queue-depth", "max_pool_queue_depth"),
    ] {
        assert_eq!(data_value(&html, id), json[metric].to_string(), "#{id}");
    }
    assert_eq!(
        data_value(&html, "latency-p99"),
        json["latency"]["tool_call"]["p99_ms"].to_string()
    );
    assert!(html.contains(">$5,917.11<"), "over-refund in dollars");
    // Every scalar of `run --json`, in its order, as the metrics table's rows.
    let mut expected = Vec::new();
    scalars("", &json, &mut expected);
    let rows: Vec<(String, String)> = html
        .split("<tr data-metric=\"")
        .skip(1)
        .map(|r| {
            let k = r.split('"').next().unwrap();
            let v = between(r, "<td class=\"n\">", "</td>").unwrap();
            (unescape(k), unescape(v))
        })
        .collect();
    // The same numbers (the test's JSON parser may round a last digit differently).
    let same = |a: &str, b: &str| {
        a == b
            || matches!((a.parse::<f64>(), b.parse::<f64>()),
                (Ok(x), Ok(y)) if (x - y).abs() <= 1e-12 * x.abs().max(y.abs()))
    };
    assert_eq!(
        rows.iter().map(|r| &r.0).collect::<Vec<_>>(),
        expected.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    for ((k, v), (_, w)) in rows.iter().zip(&expected) {
        assert!(same(v, w), "{k}: {v} in the page, {w} in run --json");
    }
    assert!(rows.len() > 40, "{} metrics", rows.len());
    // The duplicates over time end where the report's count does.
    assert_eq!(data_value(&html, "timeline-duplicates-total"), "43");
    for id in [
        "timeline-load",
        "timeline-queue",
        "timeline-latency",
        "timeline-duplicates",
    ] {
        let fig = between(&html, &format!("<figure id=\"{id}\">"), "</figure>").unwrap();
        assert!(fig.contains("<svg role=\"img\""), "{id} is an inline SVG");
        assert!(
            fig.contains("<polyline") || fig.contains("<path"),
            "{id} draws lines"
        );
    }
    // 120 one-minute buckets over the horizon, and the first ones after it (draining).
    let buckets: usize = between(&html, "data-buckets=\"", "\"")
        .unwrap()
        .parse()
        .unwrap();
    assert!((120..=130).contains(&buckets), "{buckets}");
    // The stories: the first 10 duplicated tickets, each exactly as `run --ticket` prints it.
    let ids = json["duplicated_ticket_ids"].as_array().unwrap();
    let section = between(&html, "<section id=\"stories\"", "</section>").unwrap();
    assert!(section.starts_with(" data-shown=\"10\" data-total=\"43\""));
    let shown: Vec<String> = section
        .split("data-ticket=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_string())
        .collect();
    let first: Vec<String> = ids.iter().take(10).map(|i| i.to_string()).collect();
    assert_eq!(shown, first);
    for t in [&first[0], &first[9]] {
        let story = run_json(&[INCIDENT, "--ticket", t])["story"].clone();
        let lines: Vec<&str> = story
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        let pre = between(section, &format!("id=\"story-{t}\""), "</pre>").unwrap();
        let pre = unescape(pre.split_once("<pre>").unwrap().1);
        assert_eq!(pre.lines().collect::<Vec<_>>(), lines, "ticket {t}");
    }
    let rest = between(&html, "id=\"stories-rest\" data-count=\"", "\"").unwrap();
    assert_eq!(rest, "33");
    assert!(
        html.contains(&format!("tickets {} ", ids[10])),
        "the rest listed"
    );
}

#[test]
fn the_file_is_deterministic_self_contained_and_escapes_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    // The incident with markup in every text a scenario carries.
    let mut sc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(INCIDENT).unwrap()).unwrap();
    sc["name"] = "<script>alert('name')</script>".into();
    sc["description"] = "a & b <img src=x onerror=alert(1)> \"quoted\"".into();
    sc["agent"]["tool"] = "issue_refund<b>".into();
    sc["tools"] = serde_json::json!([{
        "name": "issue_refund<b>",
        "description": "<script>alert('tool')</script>"
    }]);
    for phase in sc["arrivals"]["schedule"].as_array_mut().unwrap() {
        phase["label"] = "<i>burst</i>".into();
    }
    let path = dir.path().join("<odd> scenario.json");
    std::fs::write(&path, serde_json::to_string(&sc).unwrap()).unwrap();
    let scenario = path.to_str().unwrap();
    let (a, b) = (dir.path().join("a.html"), dir.path().join("b.html"));
    for out in [&a, &b] {
        let (code, _, stderr) = report(&[scenario, "--set", "executor.timeout=7s"], out);
        // A --set makes the safety invariants the bounds, as in `run`: its duplicates fail
        // them (exit 1), and the report is written all the same.
        assert_eq!(code, 1, "{stderr}");
    }
    let html = std::fs::read(&a).unwrap();
    assert_eq!(html, std::fs::read(&b).unwrap(), "byte-identical");
    let html = String::from_utf8(html).unwrap();
    // One script element: the page's own.
    assert_eq!(html.matches("<script").count(), 1, "only the page's script");
    for raw in [
        "<script>alert",
        "<img src=x",
        "<b>",
        "<i>burst",
        "<odd>",
        "\"quoted\"",
    ] {
        assert!(!html.contains(raw), "{raw} left unescaped");
    }
    assert!(html.contains(
        "<span id=\"scenario-name\">&lt;script&gt;alert(&#x27;name&#x27;)&lt;/script&gt;</span>"
    ));
    assert!(html.contains("a &amp; b &lt;img src=x onerror=alert(1)&gt; &quot;quoted&quot;"));
    assert!(
        html.contains("issue_refund&lt;b&gt;(ticket="),
        "the tool in a story"
    );
    assert!(html.contains("data-metric=\"duplicates_by_phase.&lt;i&gt;burst&lt;/i&gt;\""));
    assert!(html.contains("&lt;odd&gt; scenario.json"));
    // Nothing to fetch: no URL, no external resource.
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(!html.contains("<link") && !html.contains("@import") && !html.contains("url("));
    assert!(
        !html.contains(" src=\""),
        "no src attribute without a sweep"
    );
    assert!(html.contains("Content-Security-Policy\" content=\"default-src &#x27;none&#x27;"));
    assert!(html.contains("id=\"expectations-met\" class=\"bad\" data-value=\"false\""));
    // The replay command names the --set.
    assert!(html.contains("--set executor.timeout=7s"));
}

#[test]
fn bad_input_exits_2_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let (code, _, err) = report(&[INCIDENT], &dir.path().join("missing/r.html"));
    assert_eq!(code, 2);
    assert!(
        err.contains("--out") && err.contains("does not exist"),
        "{err}"
    );
    let (code, _, err) = report(&["scenarios/none.json"], &out);
    assert_eq!(code, 2);
    assert!(err.contains("scenarios/none.json"), "{err}");
    let (code, _, err) = report(&[INCIDENT, "--set", "executor.timeout=soon"], &out);
    assert_eq!(code, 2);
    assert!(err.contains("executor.timeout"), "{err}");
    let (code, _, err) = report(&[INCIDENT, "--sweep", dir.path().to_str().unwrap()], &out);
    assert_eq!(code, 2);
    assert!(
        err.contains("--sweep") && err.contains("sweep.json"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left"
    );
    // An old report stays whole when a new one fails.
    std::fs::write(&out, "old").unwrap();
    let (code, _, _) = report(&[INCIDENT, "--set", "nope=1"], &out);
    assert_eq!(code, 2);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temp file"
    );
    // The output may not be an input.
    let copy = dir.path().join("s.json");
    std::fs::copy(INCIDENT, &copy).unwrap();
    let (code, _, err) = report(&[copy.to_str().unwrap()], &copy);
    assert_eq!(code, 2);
    assert!(err.contains("would overwrite the input"), "{err}");
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(INCIDENT).unwrap()
    );
}

#[test]
fn a_sweep_directory_is_embedded_with_its_table_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("sweep");
    let o = refundsim()
        .args([
            "sweep",
            "scenarios/recipes/pool-acquire-retry.json",
            "--vary",
            "executor.timeout=1s,30s",
            "--vary",
            "refunds_service.pool_size=2,3",
            "--seeds",
            "1..2",
            "--minimize",
            "executor.timeout",
            "--out",
        ])
        .arg(&sweep)
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = dir.path().join("r.html");
    let (code, _, err) = report(
        &[
            "scenarios/recipes/pool-acquire-retry.json",
            "--sweep",
            sweep.to_str().unwrap(),
        ],
        &out,
    );
    assert!(code <= 1, "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    let section = between(&html, "<section id=\"sweep\"", "</section>").unwrap();
    assert!(section.starts_with(" data-points=\"4\""), "{section:.80}");
    assert_eq!(section.matches("<tr data-point=").count(), 4);
    assert!(section.contains("<code>executor.timeout</code>"));
    // Every point of the recipe lints with errors (no key): nothing recommended, and the two
    // safe points listed with lint's rules, as `sweep` prints them.
    assert!(
        section.contains(
            "<code id=\"sweep-recommendation\">none: no safe point passes lint and explore</code>"
        ),
        "{section}"
    );
    assert_eq!(section.matches("<li data-point=").count(), 2, "{section}");
    assert!(
        section.contains(
            "<li data-point=\"3\" data-by=\"lint\"><code>executor.timeout=30s \
             refunds_service.pool_size=3</code>: lint errors: retry-non-idempotent, \
             idempotency-key-missing, timeout-reports-error</li>"
        ),
        "{section}"
    );
    assert!(
        section.contains(
            "<td class=\"lint\">retry-non-idempotent, idempotency-key-missing, \
             timeout-reports-error</td>"
        ),
        "{section}"
    );
    assert_eq!(section.matches("class=\"safe rejected\"").count(), 2);
    let plots: Vec<&str> = section
        .split("data-plot=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    assert_eq!(
        plots,
        [
            "p_duplicate.svg",
            "duplicates.svg",
            "latency-executor.timeout.svg",
            "latency-refunds_service.pool_size.svg"
        ]
    );
    // Each plot is the file itself, as a data: image.
    use base64::Engine as _;
    let b64 = between(section, "src=\"data:image/svg+xml;base64,", "\"").unwrap();
    let svg = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(svg, std::fs::read(sweep.join("p_duplicate.svg")).unwrap());
    assert!(
        !html.contains("http://"),
        "the plots' namespace is inside base64"
    );
}

// ---- The page in a headless Chromium ----

/// A headless Chromium: `REFUNDSIM_CHROMIUM`, else the first of `chromium`, `chromium-browser`,
/// `google-chrome` on `PATH`.
fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("REFUNDSIM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// The headless Chromium for a browser test, or `None` (the test then skips, saying so) when
/// there is none; with `REFUNDSIM_REQUIRE_BROWSER=1` (CI) a missing browser fails the test.
pub(crate) fn browser() -> Option<PathBuf> {
    let bin = find_chromium();
    if bin.is_none() {
        assert!(
            std::env::var("REFUNDSIM_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "REFUNDSIM_REQUIRE_BROWSER=1 but no chromium, chromium-browser or google-chrome on \
             PATH (or REFUNDSIM_CHROMIUM)"
        );
        println!("skipping: chromium not found");
    }
    bin
}

/// A screenshot's pixels, RGB, row by row.
pub(crate) struct Shot {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) rgb: Vec<[u8; 3]>,
}

impl Shot {
    /// Decodes the PNG Chromium wrote at `path` (RGB or RGBA).
    pub(crate) fn read(path: &Path) -> Shot {
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let px = info.color_type.samples();
        let rgb = buf[..info.buffer_size()]
            .chunks(px)
            .map(|p| [p[0], p[1], p[2]])
            .collect();
        Shot {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }
}

/// Runs Chromium headless on `page` with `args`, at most 90 s; returns (stdout, stderr). Its
/// output goes to files, not pipes: a helper process that outlives it (crashpad) cannot hold
/// the test up.
pub(crate) fn chromium(bin: &Path, profile: &Path, args: &[&str], page: &Path) -> (String, String) {
    let url = format!("file://{}", page.display());
    let (out, err) = (profile.with_extension("out"), profile.with_extension("err"));
    let file = |p: &Path| std::fs::File::create(p).unwrap();
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(file(&out))
        .stderr(file(&err))
        .spawn()
        .expect("chromium starts");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium took over 90 s on {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let (out, err) = (read(&out), read(&err));
    assert!(status.success(), "chromium failed ({status}): {err}");
    (out, err)
}

/// Console messages and uncaught errors in Chromium's log (the page logs nothing itself).
pub(crate) fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

#[test]
fn the_page_in_a_headless_browser_shows_the_numbers_without_errors() {
    let Some(bin) = browser() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (page, _) = incident_report(dir.path());
    let json = run_json(&[INCIDENT]);
    let profile = dir.path().join("profile");
    // The DOM after the page's script ran.
    let (dom, log) = chromium(&bin, &profile, &["--dump-dom"], &page);
    assert!(
        dom.contains("<html lang=\"en\" data-js=\"ran\">"),
        "the script ran"
    );
    if let Some(errors) = between(&dom, "id=\"js-errors\">", "</pre>") {
        panic!("script errors in the page: {errors}");
    }
    assert_eq!(console_errors(&log), Vec::<&str>::new());
    assert_eq!(data_value(&dom, "duplicate-tickets"), "43");
    for (id, metric) in [
        ("over-refund", "over_refund_cents"),
        ("tickets", "tickets"),
        ("executor-timeouts", "executor_timeouts"),
    ] {
        assert_eq!(data_value(&dom, id), json[metric].to_string(), "#{id}");
    }
    assert!(dom.contains(">$5,917.11<"));
    let buttons = between(&dom, "data-stories=\"open\"", ">").unwrap();
    assert!(
        !buttons.contains("disabled"),
        "the script enabled the buttons"
    );
    // A screenshot: the size asked for, and not blank.
    let png = dir.path().join("shot.png");
    let shot = format!("--screenshot={}", png.display());
    let (_, log) = chromium(&bin, &profile, &[&shot, "--window-size=1200,2000"], &page);
    assert_eq!(console_errors(&log), Vec::<&str>::new());
    let shot = Shot::read(&png);
    assert_eq!((shot.width, shot.height), (1200, 2000));
    let pixels = &shot.rgb;
    let white = pixels.iter().filter(|p| **p == [255, 255, 255]).count();
    let inked = pixels.len() - white;
    assert!(
        inked * 50 > pixels.len(),
        "only {inked} of {} pixels are not white",
        pixels.len()
    );
    // The key numbers are drawn in red (the invariants' colour), the charts in blue.
    let reddish = pixels
        .iter()
        .filter(|p| p[0] > 150 && p[1] < 80 && p[2] < 80)
        .count();
    let bluish = pixels
        .iter()
        .filter(|p| p[2] > 140 && p[0] < 90 && p[1] < 150)
        .count();
    assert!(
        reddish > 500 && bluish > 500,
        "red {reddish}, blue {bluish}"
    );
}

#[test]
fn out_dash_is_refused_rather_than_written_as_a_file_named_dash() {
    let dir = tempfile::tempdir().unwrap();
    let o = refundsim()
        .current_dir(dir.path())
        .args(["report"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(INCIDENT))
        .args(["--out", "-"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--out -: report writes a self-contained HTML file"),
        "{err}"
    );
    assert!(!dir.path().join("-").exists());
}
