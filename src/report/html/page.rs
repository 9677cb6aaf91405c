//! The HTML page: one self-contained file (inline CSS, inline SVG, one small inline script, a
//! Content-Security-Policy that lets the page load nothing). Every text that comes from an
//! input — scenario name and description, tool names, phase labels, paths, story lines — goes
//! through [`esc`] (the `html-escape` crate). Key numbers carry stable `id`s and `data-value`
//! attributes (raw numbers as `run --json` prints them) for scripts and browser tests.

use std::fmt::Write;

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::charts::Chart;
use super::sweep_section::sweep_section;
use super::timeline::Series;
use crate::history::clock_time;
use crate::replay::Comparison;
use crate::report::summary::dollars;
use crate::run::{quote, Invocation, RunReport};
use crate::scenario::Scenario;
use crate::sweep::SweepRead;

use super::escape::{esc, num};

/// Most recorded tickets the report lists one by one.
const RECORDED_ROWS: usize = 200;

/// Everything the page shows.
pub(super) struct Page<'a> {
    /// The scenario as run (after policies and `--set`).
    pub sc: &'a Scenario,
    /// How it was loaded: path, policies, sets.
    pub how: &'a Invocation,
    /// The run's report.
    pub report: &'a RunReport,
    /// What `run --json` prints for the run.
    pub json: &'a Value,
    /// What `run` prints for the run.
    pub text_summary: &'a str,
    /// The scenario's clock origin.
    pub origin: Option<std::time::SystemTime>,
    /// The timelines' buckets.
    pub series: &'a Series,
    /// The timelines' charts.
    pub charts: &'a [Chart],
    /// Duplicated tickets' stories, (ticket, lines), ascending ids.
    pub stories: &'a [(u64, Vec<String>)],
    /// `--sweep`: the directory as given and what it holds.
    pub sweep: Option<(&'a str, &'a SweepRead)>,
    /// The scenario as `refundsim show` prints it.
    pub compiled: &'a str,
}

const STYLE: &str = r#"
:root { --bad: #b3261e; --ok: #1b6e3a; --muted: #5f6368; --line: #dadce0; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #202124;
  margin: 0 auto; max-width: 1100px; padding: 1.5rem; background: #fff; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; }
h2 { font-size: 1.3rem; border-bottom: 2px solid var(--line); padding-bottom: .2rem; margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
nav a { margin-right: 1rem; }
code, pre { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f8f9fa; border: 1px solid var(--line); padding: .6rem; overflow-x: auto; }
.muted, .description { color: var(--muted); }
.kpis { display: grid; grid-template-columns: repeat(auto-fill, minmax(165px, 1fr)); gap: .6rem; }
.kpi { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .7rem; }
.kpi .label { font-size: .8rem; color: var(--muted); }
.kpi .value { font-size: 1.5rem; font-weight: 600; }
.kpi.bad { border-color: var(--bad); } .kpi.bad .value { color: var(--bad); }
.bad { color: var(--bad); font-weight: 600; } .ok { color: var(--ok); }
table { border-collapse: collapse; margin: .4rem 0; font-size: .9rem; }
th, td { border-bottom: 1px solid var(--line); padding: .2rem .6rem; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.recommended { background: #fff4d6; } tr.safe td.safe { color: var(--ok); }
tr.rejected td.lint, tr.rejected td.explore { color: var(--bad); }
figure { margin: 1rem 0; } figcaption { color: var(--muted); font-size: .85rem; }
svg, img { max-width: 100%; height: auto; display: block; }
details { margin: .4rem 0; } summary { cursor: pointer; }
details.story { border: 1px solid var(--line); border-radius: 6px; padding: .3rem .6rem; }
details.story pre { margin: .4rem 0; }
.tag { font-size: .75rem; border: 1px solid var(--bad); color: var(--bad); border-radius: 4px; padding: 0 .3rem; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; }
"#;

/// The page's one script: records script errors in the page (`#js-errors`), enables the stories'
/// expand/collapse buttons, and marks `<html data-js="ran">` once the page is ready.
const SCRIPT: &str = r#"
(function () {
  var root = document.documentElement;
  function report(msg) {
    var box = document.getElementById('js-errors');
    if (!box) {
      box = document.createElement('pre');
      box.id = 'js-errors';
      (document.body || root).appendChild(box);
    }
    box.textContent += msg + '\n';
  }
  window.addEventListener('error', function (e) { report('error: ' + e.message); });
  document.addEventListener('DOMContentLoaded', function () {
    var stories = document.querySelectorAll('details.story');
    document.querySelectorAll('button[data-stories]').forEach(function (b) {
      b.disabled = false;
      b.addEventListener('click', function () {
        var open = b.getAttribute('data-stories') === 'open';
        stories.forEach(function (d) { d.open = open; });
      });
    });
    root.setAttribute('data-js', 'ran');
  });
})();
"#;

/// The Content-Security-Policy: nothing loads from anywhere (images only as `data:`), the one
/// script runs by its hash, styles are inline.
fn csp() -> String {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT));
    format!(
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; \
         script-src 'sha256-{hash}'; base-uri 'none'; form-action 'none'"
    )
}

impl Page<'_> {
    /// The whole document.
    pub(super) fn render(&self) -> String {
        let mut h = String::with_capacity(256 * 1024);
        let r = self.report;
        let title = format!(
            "refundsim report: {} · {} · seed {}",
            r.scenario,
            self.applied().unwrap_or_else(|| "as written".into()),
            r.seed
        );
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\" data-js=\"off\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"generator\" content=\"refundsim {}\">\n<title>{}</title>\n\
             <style>{STYLE}</style>\n<script>{SCRIPT}</script>\n</head>\n<body>\n",
            esc(&csp()),
            env!("CARGO_PKG_VERSION"),
            esc(&title)
        );
        self.header(&mut h);
        h.push_str("<main>\n");
        self.summary(&mut h);
        self.recording(&mut h);
        self.timelines(&mut h);
        self.stories(&mut h);
        if let Some((dir, s)) = self.sweep {
            sweep_section(&mut h, dir, s, self.how);
        }
        self.scenario(&mut h);
        h.push_str("</main>\n");
        let _ = write!(
            h,
            "<footer>Made by refundsim {} from {} with seed {}. The same inputs give the same \
             file, byte for byte: it holds no wall-clock time.</footer>\n</body>\n</html>\n",
            env!("CARGO_PKG_VERSION"),
            esc(&self.how.scenario_path),
            r.seed
        );
        h
    }

    fn header(&self, h: &mut String) {
        let r = self.report;
        let violated = r.metrics.invariants.iter().filter(|i| !i.holds).count();
        let reproduced: Vec<String> = r
            .expectations
            .iter()
            .filter(|e| e.verdict == "reproduced")
            .map(|e| e.metric.clone())
            .collect();
        let verdict_text;
        let (class, verdict) = if !r.expectations_met {
            let failed: Vec<&str> = r
                .expectations
                .iter()
                .filter(|e| !e.ok)
                .map(|e| e.metric.as_str())
                .collect();
            verdict_text = format!("expect FAILED ({})", failed.join(", "));
            ("bad", verdict_text.as_str())
        } else if !reproduced.is_empty() {
            // The scenario demonstrates a failure and it happened: not a green "ok".
            verdict_text = format!("incident reproduced ({})", reproduced.join(", "));
            ("bad", verdict_text.as_str())
        } else if r.expectations.is_empty() {
            // Nothing asserted: not a green verdict (the invariants beside it say what broke).
            ("muted", "no expect bound")
        } else {
            ("ok", "every expect bound holds")
        };
        let _ = write!(
            h,
            "<header>\n<h1>refundsim report: <span id=\"scenario-name\">{}</span></h1>\n\
             {}<p class=\"description\" id=\"scenario-description\">{}</p>\n\
             <p>horizon {} · \
             <span id=\"expectations-met\" class=\"{class}\" data-value=\"{}\">{verdict}</span> · \
             <span id=\"invariants-violated\" class=\"{}\" data-value=\"{violated}\">{violated} \
             invariant{} violated</span></p>\n\
             {}{}<p>replay: <code id=\"replay\">{}</code></p>\n\
             <nav><a href=\"#summary\">Summary</a><a href=\"#timelines\">Over time</a>\
             <a href=\"#stories\">Stories</a>{}<a href=\"#scenario\">Scenario</a></nav>\n</header>\n",
            esc(&r.scenario),
            self.shows_line(),
            esc(&self.sc.description),
            humantime::format_duration(self.sc.horizon),
            r.expectations_met,
            if violated > 0 { "bad" } else { "ok" },
            if violated == 1 { "" } else { "s" },
            self.policy_line(),
            causes_list(&r.causes),
            esc(&r.replay),
            if self.sweep.is_some() {
                "<a href=\"#sweep\">Sweep</a>"
            } else {
                ""
            },
        );
    }

    /// The policies and `--set`s applied, as the command line gave them (`policies/fixed.json
    /// --set executor.timeout=15s`); `None` for the scenario as written.
    fn applied(&self) -> Option<String> {
        let mut applied: Vec<String> = self.how.policies.clone();
        applied.extend(self.how.sets.iter().map(|s| format!("--set {s}")));
        (!applied.is_empty()).then(|| applied.join(" "))
    }

    /// The header's first line: which scenario file, policy and seed the page shows, read
    /// before anything else (`<p id="shows">`, with `#shows-scenario`, `#shows-policy` and
    /// `#seed`).
    fn shows_line(&self) -> String {
        let policy = match self.applied() {
            Some(a) => format!("<code id=\"shows-policy\">{}</code>", esc(&a)),
            None => "<span id=\"shows-policy\">none (the scenario as written)</span>".into(),
        };
        format!(
            "<p id=\"shows\"><strong>Scenario</strong> <code id=\"shows-scenario\">{}</code> · \
             <strong>policy</strong> {policy} · <strong>seed</strong> \
             <span id=\"seed\" data-value=\"{seed}\">{seed}</span></p>\n",
            esc(&self.how.scenario_path),
            seed = self.report.seed
        )
    }

    /// The policy and `--set`s applied, with the policy's own `$comment` (what it changes and
    /// leaves open); empty for the scenario as written.
    fn policy_line(&self) -> String {
        // Without one, the header's first line already says "none (the scenario as written)".
        let Some(applied) = self.applied() else {
            return String::new();
        };
        let comment = self
            .sc
            .comment
            .as_deref()
            .filter(|_| !self.how.policies.is_empty())
            .map(|c| format!(" — {}", esc(c)))
            .unwrap_or_default();
        format!(
            "<p id=\"policy\">policy: <code>{}</code>{comment}</p>\n",
            esc(&applied)
        )
    }

    fn summary(&self, h: &mut String) {
        h.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"kpis\">\n");
        for k in kpis(self.report, self.json) {
            let _ = writeln!(
                h,
                "<div class=\"kpi{}\"><div class=\"label\">{}</div>\
                 <div class=\"value\" id=\"{}\" data-value=\"{}\">{}</div></div>",
                if k.bad { " bad" } else { "" },
                esc(k.label),
                k.id,
                esc(&k.value),
                esc(&k.text)
            );
        }
        h.push_str("</div>\n");
        self.invariants(h);
        self.expectations(h);
        h.push_str(
            "<details><summary>Every metric, as <code>refundsim run --json</code> reports \
             it</summary>\n<table id=\"metrics\">\n<tr><th>metric</th><th class=\"n\">value</th></tr>\n",
        );
        let mut rows = Vec::new();
        flatten("", self.json, &mut rows);
        for (k, v) in rows {
            let _ = writeln!(
                h,
                "<tr data-metric=\"{k}\"><td><code>{k}</code></td><td class=\"n\">{v}</td></tr>",
                k = esc(&k),
                v = esc(&v)
            );
        }
        let _ = write!(
            h,
            "</table>\n</details>\n<details><summary>The summary, as <code>refundsim run</code> \
             prints it</summary>\n<pre id=\"text-summary\">{}</pre>\n</details>\n</section>\n",
            esc(self.text_summary)
        );
    }

    fn invariants(&self, h: &mut String) {
        h.push_str(
            "<h3>Invariants</h3>\n<table id=\"invariants\">\n<tr><th>invariant</th><th>verdict</th>\
             <th class=\"n\">violations</th><th class=\"n\">first ticket</th></tr>\n",
        );
        for i in &self.report.metrics.invariants {
            let _ = writeln!(
                h,
                "<tr data-invariant=\"{n}\" data-holds=\"{}\"><td><code>{n}</code></td>\
                 <td class=\"{}\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                i.holds,
                if i.holds { "ok" } else { "bad" },
                if i.holds { "holds" } else { "VIOLATED" },
                i.violations,
                i.first_ticket.map(|t| t.to_string()).unwrap_or_default(),
                n = esc(&i.name),
            );
        }
        h.push_str("</table>\n");
    }

    /// An imported scenario (`replay` section): per recorded ticket, recorded vs replayed (the
    /// scenario as written) or vs counterfactual (with a policy or `--set`) refunds and tool
    /// calls; at most [`RECORDED_ROWS`] rows, then a count of the rest.
    fn recording(&self, h: &mut String) {
        let Some(c) = &self.report.recording else {
            return;
        };
        let exact = self.how.policies.is_empty() && self.how.sets.is_empty();
        let (title, other) = if exact {
            ("Recorded vs replayed", "replayed")
        } else {
            (
                "Recorded vs counterfactual (this policy on the recorded traffic)",
                "counterfactual",
            )
        };
        let verdict = if !exact {
            String::new()
        } else if c.matches {
            "<p class=\"ok\">The replay matches the recording.</p>\n".to_string()
        } else {
            format!(
                "<p class=\"bad\">The replay differs from the recording: {} tickets with other \
                 refunds, {} recorded facts differ.</p>\n",
                c.tickets_with_other_refunds, c.rows_differing
            )
        };
        let findings = recording_findings(c);
        let _ = write!(
            h,
            "<section id=\"recording\" data-mode=\"{}\" data-matches=\"{}\" \
             data-recorded-refunds=\"{}\" data-replayed-refunds=\"{}\">\n<h2>{title}</h2>\n\
             <p class=\"muted\">From {}.</p>\n{verdict}{findings}<table>\n<tr><th class=\"n\">ticket</th>\
             <th class=\"n\">recorded refunds</th><th class=\"n\">{other} refunds</th>\
             <th class=\"n\">recorded tool calls</th><th class=\"n\">{other} tool calls</th>\
             <th class=\"n\">facts that differ</th></tr>\n",
            if exact { "exact" } else { "counterfactual" },
            c.matches,
            c.recorded_refunds,
            c.replayed_refunds,
            esc(&c.sources.join(", ")),
        );
        recorded_rows(h, c);
        h.push_str("</section>\n");
    }

    fn expectations(&self, h: &mut String) {
        let ex = &self.report.expectations;
        if ex.is_empty() {
            h.push_str("<p class=\"muted\">The scenario sets no <code>expect</code> bound.</p>\n");
            return;
        }
        h.push_str(
            "<h3>Expectations</h3>\n<table id=\"expectations\">\n<tr><th>metric</th>\
             <th class=\"n\">value</th><th>bound</th><th>verdict</th><th>checked only by \
             <code>refundsim check</code></th></tr>\n",
        );
        for e in ex {
            let bound = match (e.min, e.max) {
                (Some(lo), Some(hi)) => format!("{lo} ≤ x ≤ {hi}"),
                (Some(lo), None) => format!("≥ {lo}"),
                (None, Some(hi)) => format!("≤ {hi}"),
                (None, None) => "unbounded".into(),
            };
            let _ = writeln!(
                h,
                "<tr data-expect=\"{m}\" data-ok=\"{}\"><td><code>{m}</code></td><td class=\"n\">{}</td>\
                 <td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
                e.ok,
                num(e.value),
                esc(&bound),
                if e.verdict == "ok" { "ok" } else { "bad" },
                match e.verdict {
                    "failed" => "FAILED",
                    v => v,
                },
                esc(&e.over_seeds.join(", ")),
                m = esc(&e.metric),
            );
        }
        h.push_str("</table>\n");
    }

    fn timelines(&self, h: &mut String) {
        let s = self.series;
        let _ = writeln!(
            h,
            "<section id=\"timelines\" data-bucket-ns=\"{}\" data-buckets=\"{}\">\n\
             <h2>Over virtual time</h2>\n<p class=\"muted\">Computed online from the run's event \
             stream in buckets of {} (times on the scenario's clock). The duplicates' line ends \
             at <span id=\"timeline-duplicates-total\" data-value=\"{}\">{}</span>.</p>",
            s.width.as_nanos(),
            s.buckets.len(),
            humantime::format_duration(s.width.as_duration()),
            s.duplicates(),
            s.duplicates()
        );
        for c in self.charts {
            let _ = writeln!(
                h,
                "<figure id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>",
                c.id,
                c.svg.replacen("<svg ", "<svg role=\"img\" ", 1),
                chart_caption(c.id)
            );
        }
        self.timeline_table(h);
        h.push_str("</section>\n");
    }

    fn timeline_table(&self, h: &mut String) {
        h.push_str(
            "<details><summary>The buckets as a table</summary>\n<table id=\"timeline-table\">\n\
             <tr><th>from</th><th class=\"n\">tickets</th><th class=\"n\">executor timeouts</th>\
             <th class=\"n\">retries</th><th class=\"n\">pool waits</th><th class=\"n\">queue max</th>\
             <th class=\"n\">queue mean</th><th class=\"n\">responses</th><th class=\"n\">p50 ms</th>\
             <th class=\"n\">p99 ms</th><th class=\"n\">max ms</th><th class=\"n\">new duplicates</th>\
             <th class=\"n\">duplicates</th></tr>\n",
        );
        let opt = |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or_default();
        for b in &self.series.buckets {
            let _ = writeln!(
                h,
                "<tr data-start-ns=\"{}\"><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td></tr>",
                b.start.as_nanos(),
                clock_time(self.origin, b.start),
                b.tickets_opened,
                b.executor_timeouts,
                b.retries,
                b.pool_waits,
                b.queue_depth_max,
                opt(b.queue_depth_mean, 1),
                b.responses,
                opt(b.latency_p50_ms, 0),
                opt(b.latency_p99_ms, 0),
                opt(b.latency_max_ms, 0),
                b.duplicates,
                b.duplicates_cumulative
            );
        }
        h.push_str("</table>\n</details>\n");
    }

    fn stories(&self, h: &mut String) {
        let r = self.report;
        let m = &r.metrics;
        let total = m.duplicate_refund_tickets;
        let shown = self.stories.len() as u64;
        let _ = writeln!(
            h,
            "<section id=\"stories\" data-shown=\"{shown}\" data-total=\"{total}\">\n\
             <h2>Duplicated tickets' stories</h2>"
        );
        if total == 0 {
            h.push_str("<p>No ticket was refunded twice.</p>\n</section>\n");
            return;
        }
        let _ = writeln!(
            h,
            "<p>{total} ticket{} refunded more than once. The stories of the {shown} with the \
             smallest ids, as <code>refundsim run --ticket ID</code> prints them. \
             <button type=\"button\" data-stories=\"open\" disabled>expand all</button> \
             <button type=\"button\" data-stories=\"close\" disabled>collapse all</button></p>",
            if total == 1 { " was" } else { "s were" }
        );
        for (i, (t, lines)) in self.stories.iter().enumerate() {
            let shaped = r.incident_shaped_tickets.contains(t);
            let _ = write!(
                h,
                "<details class=\"story\" id=\"story-{t}\" data-ticket=\"{t}\"{}>\
                 <summary>ticket {t}{} <span class=\"muted\">({} lines)</span></summary>\n<pre>",
                if i == 0 { " open" } else { "" },
                if shaped {
                    " <span class=\"tag\">the incident's shape</span>"
                } else {
                    ""
                },
                lines.len()
            );
            for l in lines {
                let _ = writeln!(h, "{}", esc(l));
            }
            let _ = writeln!(
                h,
                "</pre><p>replay: <code>{}</code></p></details>",
                esc(&format!("{} --ticket {t}", r.replay))
            );
        }
        self.rest_of_stories(h, total, shown);
        h.push_str("</section>\n");
    }

    /// The duplicated tickets whose stories are not shown: their count and the ids the report
    /// lists.
    fn rest_of_stories(&self, h: &mut String, total: u64, shown: u64) {
        let rest = total.saturating_sub(shown);
        if rest == 0 {
            return;
        }
        let listed: Vec<String> = self
            .report
            .metrics
            .duplicated_ticket_ids
            .iter()
            .filter(|t| !self.stories.iter().any(|(s, _)| s == *t))
            .map(u64::to_string)
            .collect();
        let unlisted = rest.saturating_sub(listed.len() as u64);
        let _ = writeln!(
            h,
            "<p id=\"stories-rest\" data-count=\"{rest}\">{rest} more not shown: tickets {}{}. \
             Print one with <code>{} --ticket ID</code>.</p>",
            listed.join(" "),
            if unlisted > 0 {
                format!(" and {unlisted} with larger ids")
            } else {
                String::new()
            },
            esc(&self.report.replay)
        );
    }

    fn scenario(&self, h: &mut String) {
        let how = self.how;
        let list = |xs: &[String]| {
            if xs.is_empty() {
                "none".to_string()
            } else {
                xs.iter().map(|x| quote(x)).collect::<Vec<_>>().join(" ")
            }
        };
        let _ = write!(
            h,
            "<section id=\"scenario\">\n<h2>Scenario</h2>\n<table>\n\
             <tr><th>file</th><td><code id=\"scenario-path\">{}</code></td></tr>\n\
             <tr><th>policies</th><td><code>{}</code></td></tr>\n\
             <tr><th>--set</th><td><code>{}</code></td></tr>\n\
             <tr><th>clock origin</th><td>{}</td></tr>\n\
             <tr><th>executor timeout</th><td>{}</td></tr>\n\
             <tr><th>pool size</th><td>{}</td></tr>\n</table>\n",
            esc(&how.scenario_path),
            esc(&list(&how.policies)),
            esc(&list(&how.sets)),
            esc(self
                .sc
                .clock_origin
                .as_deref()
                .unwrap_or("midnight (none set)")),
            humantime::format_duration(self.sc.executor.timeout),
            self.sc.refunds_service.pool_size
        );
        self.tools(h);
        let _ = write!(
            h,
            "<details><summary>The scenario as run, as <code>refundsim show</code> prints \
             it</summary>\n<pre id=\"scenario-json\">{}</pre>\n</details>\n</section>\n",
            esc(self.compiled)
        );
    }

    fn tools(&self, h: &mut String) {
        h.push_str(
            "<h3>Tools</h3>\n<table id=\"tools\">\n<tr><th>name</th><th>description</th>\
             <th>retry-eligible (readOnlyHint or idempotentHint)</th></tr>\n",
        );
        for t in &self.sc.tools {
            let _ = writeln!(
                h,
                "<tr data-tool=\"{n}\"><td><code>{n}</code></td><td>{}</td><td>{}</td></tr>",
                esc(&t.description),
                if t.is_idempotent() { "yes" } else { "no" },
                n = esc(&t.name)
            );
        }
        h.push_str("</table>\n");
    }
}

fn chart_caption(id: &str) -> &'static str {
    match id {
        "timeline-load" => {
            "The load: tickets opened, executor timeouts and model retries in each bucket."
        }
        "timeline-queue" => {
            "The pool's line as each ticket request found it on arrival (waiters, itself \
             included, ticket and background requests alike): deepest and mean per bucket."
        }
        "timeline-latency" => {
            "Refunds-service response time per request, by when it answered (late answers \
             included): p50, p99 and max per bucket, 1 % precision; the red line is the \
             executor's timeout."
        }
        "timeline-duplicates" => {
            "Tickets that became duplicates (their second money-moving refund was created) in \
             each bucket, and the running total."
        }
        _ => "",
    }
}

/// The findings about a recording (requests Stripe's rules would have answered otherwise),
/// as a list; empty when there are none.
fn recording_findings(c: &Comparison) -> String {
    let mut findings = String::new();
    if c.recording_findings.is_empty() {
        return findings;
    }
    let _ = write!(
        findings,
        "<div id=\"recording-findings\"><p>Findings about the recording: Stripe's rules \
         would have answered {} otherwise; the replay follows the recording.</p>\n<ul>\n",
        crate::text::plural(c.recording_findings.len(), "request", "requests")
    );
    for f in &c.recording_findings {
        let _ = writeln!(
            findings,
            "<li>request {}: recorded {}; Stripe's rules: {}</li>",
            esc(&f.request),
            esc(&f.recorded),
            esc(&f.provider_rules)
        );
    }
    findings.push_str("</ul></div>\n");
    findings
}

/// The recorded tickets' rows of the recording's table (at most [`RECORDED_ROWS`]), the
/// table's end, and a count of the tickets left out.
fn recorded_rows(h: &mut String, c: &Comparison) {
    for t in c.tickets.iter().take(RECORDED_ROWS) {
        let differ = t.rows.iter().filter(|r| !r.ok).count();
        let _ = writeln!(
            h,
            "<tr data-ticket=\"{}\"><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td></tr>",
            t.ticket,
            t.ticket,
            t.recorded_refunds,
            t.replayed_refunds,
            t.recorded_tool_calls,
            t.replayed_tool_calls,
            differ
        );
    }
    h.push_str("</table>\n");
    if c.tickets.len() > RECORDED_ROWS {
        let _ = writeln!(
            h,
            "<p class=\"muted\">…and {} more tickets (<code>refundsim replay --json</code> \
             lists every one).</p>",
            c.tickets.len() - RECORDED_ROWS
        );
    }
}

/// One key number.
struct Kpi {
    id: &'static str,
    label: &'static str,
    /// The raw value (`data-value`).
    value: String,
    /// What is shown.
    text: String,
    bad: bool,
}

impl Kpi {
    /// A count, `bad` or not.
    fn count(id: &'static str, label: &'static str, n: u64, bad: bool) -> Kpi {
        Kpi {
            id,
            label,
            value: n.to_string(),
            text: n.to_string(),
            bad,
        }
    }

    /// A count of harm: bad when above 0.
    fn harm(id: &'static str, label: &'static str, n: u64) -> Kpi {
        Kpi::count(id, label, n, n > 0)
    }

    /// A service response time percentile `v` in ms, shown rounded; its raw value as `run
    /// --json` prints `latency.tool_call.KEY` in `json` (the same f64, the same text).
    fn ms(id: &'static str, label: &'static str, json: &Value, key: &str, v: f64) -> Kpi {
        Kpi {
            id,
            label,
            value: json_number(json, &["latency", "tool_call", key]).unwrap_or_else(|| num(v)),
            text: format!("{v:.0} ms"),
            bad: false,
        }
    }
}

/// The page's key numbers, in order: the harm the run did (bad when above 0), then its
/// volume and latency. `json` is the report as `run --json` prints it (the raw latencies).
fn kpis(r: &RunReport, json: &Value) -> Vec<Kpi> {
    let m = &r.metrics;
    let p = &m.latency.tool_call;
    vec![
        Kpi::harm(
            "duplicate-tickets",
            "duplicate-refund tickets",
            m.duplicate_refund_tickets,
        ),
        Kpi {
            id: "over-refund",
            label: "over-refund",
            value: m.over_refund_cents.to_string(),
            text: dollars(m.over_refund_cents),
            bad: m.over_refund_cents > 0,
        },
        Kpi::harm("extra-refunds", "extra refunds", m.extra_refunds),
        Kpi::count("tickets", "tickets", m.tickets, false),
        Kpi::count("tool-calls", "tool calls", m.tool_calls, false),
        Kpi::count(
            "executor-timeouts",
            "executor timeouts",
            m.executor_timeouts,
            false,
        ),
        Kpi::count("retries", "model retries", m.retries, false),
        Kpi::harm("false-failures", "false failures", m.false_failures),
        Kpi::harm("lost-refunds", "lost refunds", m.lost_refunds),
        Kpi::ms(
            "latency-p50",
            "service response time p50",
            json,
            "p50_ms",
            p.p50_ms,
        ),
        Kpi::ms(
            "latency-p99",
            "service response time p99",
            json,
            "p99_ms",
            p.p99_ms,
        ),
        Kpi::count(
            "max-pool-queue-depth",
            "max pool queue depth",
            m.max_pool_queue_depth,
            false,
        ),
    ]
}

fn json_number(v: &Value, path: &[&str]) -> Option<String> {
    let mut v = v;
    for k in path {
        v = v.get(k)?;
    }
    v.is_number().then(|| v.to_string())
}

/// Every scalar of `v` as (dotted path, text as `run --json` prints it; strings bare). Arrays
/// are left out: the page shows them in their own sections (invariants, expectations,
/// duplicated tickets, the queueing oracle in the text summary).
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&path, v, out);
            }
        }
        Value::Array(_) => {}
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// Why each violated invariant broke (see [`crate::cause`]), as a list under the header.
fn causes_list(causes: &[crate::cause::Cause]) -> String {
    if causes.is_empty() {
        return String::new();
    }
    let mut h = String::from("<ul id=\"causes\">\n");
    for c in causes {
        let _ = writeln!(
            h,
            "<li data-invariant=\"{}\"><strong>{}</strong>: {}</li>",
            esc(&c.invariant),
            esc(&c.invariant),
            esc(&c.text)
        );
    }
    h.push_str("</ul>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_scalars_by_dotted_path_and_leaves_arrays_out() {
        let v = serde_json::json!({"a": 1, "b": {"c": 2.5, "d": "x<"}, "e": [1, 2], "f": null});
        let mut out = Vec::new();
        flatten("", &v, &mut out);
        let out: Vec<(&str, &str)> = out.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            out,
            [("a", "1"), ("b.c", "2.5"), ("b.d", "x<"), ("f", "null")]
        );
    }

    #[test]
    fn the_policy_loads_nothing_and_runs_only_the_hashed_script() {
        let p = csp();
        let directives: Vec<&str> = p.split("; ").collect();
        assert_eq!(directives[0], "default-src 'none'");
        assert!(directives.contains(&"img-src data:"));
        let script = directives
            .iter()
            .find(|d| d.starts_with("script-src"))
            .unwrap();
        assert_eq!(script.matches("'sha256-").count(), 1);
        assert!(!script.contains("unsafe"), "{script}");
    }
}
