//! The sweep's text on stdout: a table of the grid, the safe region and the recommendation.

use std::fmt::Write;

use super::exec::Sweep;
use super::shard::Shard;
use super::table::Explored;
use super::table::{PointRow, DUPLICATES, TOOL_CALL_P50, TOOL_CALL_P99};
use super::vet::{EXPLORE_CASES, EXPLORE_SEED};

/// The summary `refundsim sweep` and `refundsim merge` print: for a shard, what it ran; for a
/// whole sweep, one row per point (P(duplicate), mean duplicate tickets, service response time p50
/// and p99 as means over seeds, safe or not), the safe region's size and, with `--minimize`,
/// the chosen point.
pub fn sweep_text(s: &Sweep) -> String {
    if let Some(shard) = s.shard {
        return shard_text(s, shard);
    }
    let i = &s.inputs;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sweep {}: {} × {} ({}..{}) = {}",
        i.scenario_path,
        counted(i.point_count(), "point"),
        counted(s.inputs.seed_count(), "seed"),
        i.seed_first,
        i.seed_last,
        counted(s.inputs.run_count(), "run"),
    );
    out.push_str(&grid_table(s));
    let safe = s.points.iter().filter(|p| p.safe).count();
    let reqs: Vec<String> = i.require.iter().map(|r| r.to_string()).collect();
    let _ = writeln!(
        out,
        "safe ({}): {safe} of {}",
        reqs.join(" and "),
        counted(s.points.len(), "point")
    );
    let _ = writeln!(out, "{}", lint_line(s));
    if !i.minimize.is_empty() {
        recommendation(&mut out, s, safe);
    }
    out
}

/// What shard `shard` of a sweep ran, and how to combine the shards.
fn shard_text(s: &Sweep, shard: Shard) -> String {
    let i = &s.inputs;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sweep {}: shard {shard}, {} of {} runs ({} × seeds {}..{})",
        i.scenario_path,
        s.runs.len(),
        s.inputs.run_count(),
        counted(i.point_count(), "point"),
        i.seed_first,
        i.seed_last
    );
    let _ = writeln!(
        out,
        "combine the shards with: refundsim merge DIR… --out DIR"
    );
    out
}

/// The columns of the sweep's metrics the text shows: duplicate tickets and the service
/// response time's p50 and p99 (`None` when the sweep has no such metric).
struct Shown {
    dup: Option<usize>,
    p50: Option<usize>,
    p99: Option<usize>,
}

impl Shown {
    fn of(s: &Sweep) -> Shown {
        let col = |n: &str| s.inputs.metrics.iter().position(|m| m == n);
        Shown {
            dup: col(DUPLICATES),
            p50: col(TOOL_CALL_P50),
            p99: col(TOOL_CALL_P99),
        }
    }
}

/// A point's mean over seeds of metric column `c`; NaN without the column.
fn mean(p: &PointRow, c: Option<usize>) -> f64 {
    c.map_or(f64::NAN, |c| p.stats[c].mean)
}

/// The grid as a table, one row per point: the varied values (left-aligned), then P(dup),
/// mean duplicate tickets, service response p50 and p99 in ms (means over seeds), safe, lint
/// and explore (right-aligned); each column as wide as its widest cell.
fn grid_table(s: &Sweep) -> String {
    let shown = Shown::of(s);
    let mut header: Vec<String> = s.inputs.paths();
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
            r.push(format!("{:.2}", mean(p, shown.dup)));
            r.push(format!("{:.0}", mean(p, shown.p50)));
            r.push(format!("{:.0}", mean(p, shown.p99)));
            r.push(if p.safe { "yes" } else { "no" }.into());
            r.push(lint_count(&p.lint));
            r.push(p.explore.as_ref().map_or("", Explored::word).into());
            r
        })
        .collect();
    aligned(&header, &rows, s.inputs.vary.len())
}

/// `header` and `rows` as lines of columns two spaces apart, each column as wide as its widest
/// cell: the first `left` columns left-aligned, the others right-aligned; no trailing spaces.
fn aligned(header: &[String], rows: &[Vec<String>], left: usize) -> String {
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
                if c < left {
                    format!("{v:<w$}")
                } else {
                    format!("{v:>w$}")
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    let mut out = String::new();
    for r in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let _ = writeln!(out, "{}", line(r));
    }
    out
}

/// Grid point `point` as its varied values: `executor.timeout=8s refunds_service.pool_size=3`.
fn point_at(s: &Sweep, point: usize) -> String {
    let i = &s.inputs;
    i.paths()
        .iter()
        .zip(i.values(point))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `--minimize` verdict, given `safe` safe points: the recommended point with its numbers,
/// or why there is none; then the safe points lint or explore passed over.
fn recommendation(out: &mut String, s: &Sweep, safe: usize) {
    let order = format!(
        "smallest {}, then service response p99",
        s.inputs.minimize.join(", then ")
    );
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
            skipped_lines(out, s);
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
            let shown = Shown::of(s);
            let _ = writeln!(
                out,
                "recommended ({order}; {how}): {}\n  P(duplicate) {:.2} over {} seeds, \
                 service response time p50 {:.0} ms, p99 {:.0} ms (means over seeds)",
                point_at(s, p.point),
                p.p_duplicate,
                s.inputs.seed_count(),
                mean(p, shown.p50),
                mean(p, shown.p99)
            );
            skipped_lines(out, s);
        }
    }
}

/// Skipped candidates shown one by one before the rest are summed up.
const SKIPPED_SHOWN: usize = 3;

/// `  skipped A=1 B=2: lint …` for the first skipped candidates, then how many more and why.
fn skipped_lines(out: &mut String, s: &Sweep) {
    let mut linted = false;
    for k in s.skipped.iter().take(SKIPPED_SHOWN) {
        if k.by == "lint" {
            let _ = writeln!(
                out,
                "  skipped {}: lint errors: {}",
                point_at(s, k.point),
                k.why
            );
            if !linted {
                let _ = writeln!(out, "    see: {}", command(s, "lint", k.point));
                linted = true;
            }
        } else {
            let _ = writeln!(
                out,
                "  skipped {}: explore: {}",
                point_at(s, k.point),
                k.why
            );
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
pub(super) fn command(s: &Sweep, command: &str, point: usize) -> String {
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
