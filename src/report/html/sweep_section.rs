//! The page's `--sweep` section: what the sweep ran, its table (the columns `refundsim sweep`
//! prints, lint's error rules and a short explore's outcome included), the recommendation with
//! the safe points lint or explore rejected, and its plots as `data:` images. A plot is embedded as an image, not inline: a
//! script inside an image's SVG never runs, so a doctored plot file cannot act on the page.

use std::fmt::Write;

use base64::Engine as _;

use super::escape::{esc, num};
use crate::run::Invocation;
use crate::sweep::{Explored, SweepRead, DUPLICATES, TOOL_CALL_P50, TOOL_CALL_P99};

/// `n points`, or `1 point`.
fn points(n: usize) -> String {
    format!("{n} point{}", if n == 1 { "" } else { "s" })
}

/// Appends the section for the sweep read from `dir` (as given on the command line), saying
/// whether it was run with the page's own scenario file, policies and `--set`s (`page`).
pub(super) fn sweep_section(h: &mut String, dir: &str, s: &SweepRead, page: &Invocation) {
    let i = &s.inputs;
    let seeds = i.seed_last.saturating_sub(i.seed_first) + 1;
    let _ = writeln!(
        h,
        "<section id=\"sweep\" data-points=\"{}\" data-safe-points=\"{}\">\n<h2>Sweep</h2>\n\
         <p>From <code id=\"sweep-dir\">{}</code>: <code>{}</code>{}{}, {} × {seeds} \
         seed{} ({}..{}). Safe ({}): <span id=\"sweep-safe-points\" data-value=\"{}\">{}</span> \
         of {}.</p>",
        s.points.len(),
        s.safe_points,
        esc(dir),
        esc(&i.scenario_path),
        if i.policies.is_empty() {
            " with no policy".to_string()
        } else {
            list(" with policies ", &i.policies)
        },
        list(" and --set ", &i.sets),
        points(s.points.len()),
        if seeds == 1 { "" } else { "s" },
        i.seed_first,
        i.seed_last,
        esc(&requirements(s)),
        s.safe_points,
        s.safe_points,
        points(s.points.len())
    );
    same_as_page(h, s, page);
    recommendation(h, s);
    table(h, s);
    h.push_str("<div class=\"plots\">\n");
    for (name, svg) in &s.plots {
        let data = base64::engine::general_purpose::STANDARD.encode(svg);
        let _ = writeln!(
            h,
            "<figure class=\"sweep-plot\" data-plot=\"{n}\"><img alt=\"{n}\" \
             src=\"data:image/svg+xml;base64,{data}\"><figcaption>{n}</figcaption></figure>",
            n = esc(name)
        );
    }
    h.push_str("</div>\n</section>\n");
}

/// `<p id="sweep-same">` when the sweep ran the page's scenario file with its policies and
/// `--set`s (in the same order), else a `<p id="sweep-differs">` warning that names both, so a
/// sweep made without the page's policy is not read as the page's.
fn same_as_page(h: &mut String, s: &SweepRead, page: &Invocation) {
    let i = &s.inputs;
    // The same file however it was named (`scenarios/x.json`, `./scenarios/x.json`, an
    // absolute path): resolved when both exist from here, else compared by components.
    let (a, b) = (
        std::path::Path::new(&i.scenario_path),
        std::path::Path::new(&page.scenario_path),
    );
    let same_file = match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a.components().eq(b.components()),
    };
    if same_file && i.policies == page.policies && i.sets == page.sets {
        h.push_str(
            "<p id=\"sweep-same\" class=\"ok\">Run with this page's scenario file, policies \
             and --set.</p>\n",
        );
        return;
    }
    let how = |path: &str, policies: &[String], sets: &[String]| {
        let policies = if policies.is_empty() {
            " with no policy".to_string()
        } else {
            list(" with ", policies)
        };
        format!(
            "<code>{}</code>{policies}{}",
            esc(path),
            list(" and --set ", sets)
        )
    };
    let _ = writeln!(
        h,
        "<p id=\"sweep-differs\" class=\"bad\">Not this page's configuration: the page shows {}; \
         the sweep ran {}. Its numbers are of the sweep's configuration.</p>",
        how(&page.scenario_path, &page.policies, &page.sets),
        how(&i.scenario_path, &i.policies, &i.sets)
    );
}

fn list(lead: &str, xs: &[String]) -> String {
    if xs.is_empty() {
        return String::new();
    }
    let items: Vec<String> = xs
        .iter()
        .map(|x| format!("<code>{}</code>", esc(x)))
        .collect();
    format!("{lead}{}", items.join(" "))
}

fn requirements(s: &SweepRead) -> String {
    let r: Vec<String> = s.inputs.require.iter().map(|r| r.to_string()).collect();
    r.join(" and ")
}

/// `A=1 B=2` for the point at index `p`.
fn at(s: &SweepRead, p: usize) -> String {
    s.points.get(p).map_or_else(String::new, |pt| {
        s.inputs
            .paths()
            .iter()
            .zip(&pt.values)
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn recommendation(h: &mut String, s: &SweepRead) {
    if s.inputs.minimize.is_empty() {
        return;
    }
    let (text, vetted) = match s
        .recommendation
        .and_then(|p| s.points.get(p).map(|pt| (p, pt)))
    {
        None if s.safe_points == 0 => ("none: no point is safe".to_string(), String::new()),
        None => (
            "none: no safe point passes lint and explore".to_string(),
            String::new(),
        ),
        Some((p, pt)) => {
            let vetted = match &pt.explore {
                Some(Explored::Clean { cases, seed }) => {
                    format!("; lint clean, explore clean in {cases} cases with seed {seed}")
                }
                _ => String::new(),
            };
            (at(s, p), vetted)
        }
    };
    let _ = writeln!(
        h,
        "<p>Recommended (smallest {}, then service response p99{}): <code id=\"sweep-recommendation\">{}</code></p>",
        esc(&s.inputs.minimize.join(", then ")),
        esc(&vetted),
        esc(&text)
    );
    if s.skipped.is_empty() {
        return;
    }
    h.push_str("<p>Safe on the seeds but passed over:</p>\n<ul id=\"sweep-skipped\">\n");
    for k in &s.skipped {
        let what = if k.by == "lint" {
            "lint errors"
        } else {
            "explore"
        };
        let _ = writeln!(
            h,
            "<li data-point=\"{}\" data-by=\"{}\"><code>{}</code>: {what}: {}</li>",
            k.point,
            esc(&k.by),
            esc(&at(s, k.point)),
            esc(&k.why)
        );
    }
    h.push_str("</ul>\n");
}

fn table(h: &mut String, s: &SweepRead) {
    h.push_str("<table id=\"sweep-table\">\n<tr>");
    for p in s.inputs.paths() {
        let _ = write!(h, "<th><code>{}</code></th>", esc(&p));
    }
    h.push_str(
        "<th class=\"n\">P(dup)</th><th class=\"n\">dups mean</th><th class=\"n\">resp p50 ms</th>\
         <th class=\"n\">resp p99 ms</th><th>safe</th><th>lint</th><th>explore</th></tr>\n",
    );
    for (k, p) in s.points.iter().enumerate() {
        let mean = |m: &str| p.means.get(m).copied().unwrap_or(f64::NAN);
        let mut class = Vec::new();
        if p.safe {
            class.push("safe");
        }
        if s.recommendation == Some(k) {
            class.push("recommended");
        }
        if !p.lint.is_empty()
            || p.explore
                .as_ref()
                .is_some_and(|e| !matches!(e, Explored::Clean { .. }))
        {
            class.push("rejected");
        }
        let _ = write!(
            h,
            "<tr data-point=\"{k}\" data-p-duplicate=\"{}\" class=\"{}\">",
            num(p.p_duplicate),
            class.join(" ")
        );
        for v in &p.values {
            let _ = write!(h, "<td>{}</td>", esc(v));
        }
        let _ = writeln!(
            h,
            "<td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.0}</td>\
             <td class=\"n\">{:.0}</td><td class=\"safe\">{}</td><td class=\"lint\">{}</td>\
             <td class=\"explore\" title=\"{}\">{}</td></tr>",
            p.p_duplicate,
            mean(DUPLICATES),
            mean(TOOL_CALL_P50),
            mean(TOOL_CALL_P99),
            if p.safe { "yes" } else { "no" },
            if p.lint.is_empty() {
                "ok".into()
            } else {
                esc(&p.lint.join(", ")).into_owned()
            },
            esc(&p.explore.as_ref().map_or(String::new(), Explored::describe)),
            p.explore.as_ref().map_or("", Explored::word)
        );
    }
    h.push_str("</table>\n");
}
