//! The sweep's text on stdout: a table of the grid, the safe region and the recommendation.

use std::fmt::Write;

use super::exec::Sweep;
use super::table::{PointRow, DUPLICATES, TOOL_CALL_P50, TOOL_CALL_P99};
use super::vet::{Explored, EXPLORE_CASES, EXPLORE_SEED};

/// The summary `refundsim sweep` and `refundsim merge` print: for a shard, what it ran; for a
/// whole sweep, one row per point (P(duplicate), mean duplicate tickets, service response time p50
/// and p99 as means over seeds, safe or not), the safe region's size and, with `--minimize`,
/// the chosen point.
pub fn sweep_text(s: &Sweep) -> String {
    let i = &s.inputs;
    let seeds = i.seed_last - i.seed_first + 1;
    let mut out = String::new();
    let total = i.point_count() * seeds as usize;
    if let Some(shard) = s.shard {
        let _ = writeln!(
            out,
            "sweep {}: shard {shard}, {} of {total} runs ({} × seeds {}..{})",
            i.scenario_path,
            s.runs.len(),
            counted(i.point_count(), "point"),
            i.seed_first,
            i.seed_last
        );
        let _ = writeln!(
            out,
            "combine the shards with: refundsim merge DIR… --out DIR"
        );
        return out;
    }
    let _ = writeln!(
        out,
        "sweep {}: {} × {} ({}..{}) = {}",
        i.scenario_path,
        counted(i.point_count(), "point"),
        counted(seeds as usize, "seed"),
        i.seed_first,
        i.seed_last,
        counted(total, "run"),
    );
    let col = |n: &str| i.metrics.iter().position(|m| m == n);
    let (dup, p50, p99) = (col(DUPLICATES), col(TOOL_CALL_P50), col(TOOL_CALL_P99));
    let mean = |p: &PointRow, c: Option<usize>| c.map_or(f64::NAN, |c| p.stats[c].mean);
    let mut header: Vec<String> = i.paths();
    header.extend(
        [
            "P(dup)",
            "dups mean",
            "resp p50 ms",
            "resp p99 ms",
            "safe",
            "lint",
            "explore",
        ]
        .map(String::from),
    );
    let rows: Vec<Vec<String>> = s
        .points
        .iter()
        .map(|p| {
            let mut r = p.values.clone();
            r.push(format!("{:.2}", p.p_duplicate));
            r.push(format!("{:.2}", mean(p, dup)));
            r.push(format!("{:.0}", mean(p, p50)));
            r.push(format!("{:.0}", mean(p, p99)));
            r.push(if p.safe { "yes" } else { "no" }.into());
            r.push(lint_count(&p.lint));
            r.push(p.explore.as_ref().map_or("", Explored::word).into());
            r
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (v, w))| {
                if c < i.vary.len() {
                    format!("{v:<w$}")
                } else {
                    format!("{v:>w$}")
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&header));
    for r in &rows {
        let _ = writeln!(out, "{}", line(r));
    }
    let safe = s.points.iter().filter(|p| p.safe).count();
    let reqs: Vec<String> = i.require.iter().map(|r| r.to_string()).collect();
    let _ = writeln!(
        out,
        "safe ({}): {safe} of {}",
        reqs.join(" and "),
        counted(s.points.len(), "point")
    );
    let _ = writeln!(out, "{}", lint_line(s));
    if i.minimize.is_empty() {
        return out;
    }
    let order = format!(
        "smallest {}, then service response p99",
        i.minimize.join(", then ")
    );
    let at = |point: usize| -> String {
        i.paths()
            .iter()
            .zip(i.values(point))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match s.best.and_then(|b| s.points.iter().find(|p| p.point == b)) {
        None if safe == 0 => {
            let _ = writeln!(
                out,
                "no safe point ({order}): widen the grid or relax --require"
            );
        }
        None => {
            let _ = writeln!(
                out,
                "no recommendation ({order}; among safe points that lint and explore accept): \
                 {} passed over",
                counted(s.skipped.len(), "safe point")
            );
            skipped_lines(&mut out, s, &at);
            let _ = writeln!(
                out,
                "  sizing alone does not clear these: fix what they name, then sweep again"
            );
        }
        Some(p) => {
            let how = match &p.explore {
                Some(Explored::Clean { cases, seed }) => {
                    format!("lint clean, explore clean in {cases} cases with seed {seed}")
                }
                Some(e) => format!("lint clean, explore {}", e.describe()),
                None => "lint clean".to_string(),
            };
            let _ = writeln!(
                out,
                "recommended ({order}; {how}): {}\n  P(duplicate) {:.2} over {seeds} seeds, \
                 service response time p50 {:.0} ms, p99 {:.0} ms (means over seeds)",
                at(p.point),
                p.p_duplicate,
                mean(p, p50),
                mean(p, p99)
            );
            skipped_lines(&mut out, s, &at);
        }
    }
    out
}

/// Skipped candidates shown one by one before the rest are summed up.
const SKIPPED_SHOWN: usize = 3;

/// `  skipped A=1 B=2: lint …` for the first skipped candidates, then how many more and why.
fn skipped_lines(out: &mut String, s: &Sweep, at: &dyn Fn(usize) -> String) {
    let mut linted = false;
    for k in s.skipped.iter().take(SKIPPED_SHOWN) {
        if k.by == "lint" {
            let _ = writeln!(out, "  skipped {}: lint errors: {}", at(k.point), k.why);
            if !linted {
                let _ = writeln!(out, "    see: {}", command(s, "lint", k.point));
                linted = true;
            }
        } else {
            let _ = writeln!(out, "  skipped {}: explore: {}", at(k.point), k.why);
            let _ = writeln!(
                out,
                "    replay: {} --cases {EXPLORE_CASES} --seed {EXPLORE_SEED}",
                command(s, "explore", k.point)
            );
        }
    }
    let rest = &s.skipped[s.skipped.len().min(SKIPPED_SHOWN)..];
    if !rest.is_empty() {
        let by_lint = rest.iter().filter(|k| k.by == "lint").count();
        let _ = writeln!(
            out,
            "  skipped {} more safe point{} ({by_lint} by lint, {} by explore)",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" },
            rest.len() - by_lint
        );
    }
}

/// `refundsim COMMAND` on grid point `point`: the sweep's scenario, policies and `--set`s, then
/// the point's values as `--set`s. With `explore` and the sweep's cases and seed, it finds (and
/// shrinks) what the sweep's search found there.
pub fn command(s: &Sweep, command: &str, point: usize) -> String {
    let i = &s.inputs;
    let mut parts = vec![
        format!("refundsim {command}"),
        crate::run::quote(&i.scenario_path),
    ];
    for p in &i.policies {
        parts.push(format!("--policy {}", crate::run::quote(p)));
    }
    for set in i.point_sets(point) {
        parts.push(format!("--set {}", crate::run::quote(&set)));
    }
    parts.join(" ")
}

/// A point's lint cell in the table: `ok`, or its number of error rules.
fn lint_count(errors: &[String]) -> String {
    match errors.len() {
        0 => "ok".into(),
        1 => "1 error".into(),
        n => format!("{n} errors"),
    }
}

/// `lint: 0 of 30 points clean; errors: idempotency-key-missing (30), …`: each rule with the
/// number of points it fires at, in the order the rules first appear.
fn lint_line(s: &Sweep) -> String {
    let clean = s.points.iter().filter(|p| p.lint.is_empty()).count();
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for id in s.points.iter().flat_map(|p| &p.lint) {
        match counts.iter_mut().find(|(r, _)| *r == id.as_str()) {
            Some((_, n)) => *n += 1,
            None => counts.push((id, 1)),
        }
    }
    let mut line = format!(
        "lint: {clean} of {} clean (no error finding)",
        counted(s.points.len(), "point")
    );
    if !counts.is_empty() {
        let list: Vec<String> = counts.iter().map(|(r, n)| format!("{r} ({n})")).collect();
        line.push_str(&format!("; errors: {}", list.join(", ")));
    }
    line
}

/// `n` and its noun, singular for 1: `1 point`, `30 points`.
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
