//! The text output of `check` and `diff`: a table per scenario × policy (or scenario), then
//! each failure with its replay command.

use std::fmt::Write;

use super::bounds::{fmt_num, BoundCheck, Rule};
use super::check::{CaseReport, CheckReport, Violation};
use super::diff::{DiffReport, MetricDiff, ScenarioDiff};
use super::explore_check::ExploreCheck;
use super::table::{left, right, table};

/// `check`'s report as text.
pub fn check_text(r: &CheckReport) -> String {
    let mut s = String::new();
    for c in &r.cases {
        s.push_str(&in_words(c.effect.as_ref(), |one| case_text(one, c)));
        s.push('\n');
    }
    let failed = r.cases.iter().filter(|c| !c.passed).count();
    let first = r
        .cases
        .iter()
        .find(|c| !c.passed)
        .map(|c| {
            let why = c
                .violations
                .first()
                .map(|v| v.headline())
                .or_else(|| c.explore.as_ref().filter(|e| !e.ok).map(|e| e.headline()))
                .unwrap_or_else(|| "failed".into());
            let why = in_words(c.effect.as_ref(), |w| w.push_str(&why));
            format!("; first: {} × {}: {why}", c.scenario_path, c.variant())
        })
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "check {}: {} scenario × policy cases, {} passed, {failed} failed{first}",
        if r.passed { "ok" } else { "FAILED" },
        r.cases.len(),
        r.cases.len() - failed
    );
    s
}

/// What `write` writes, in the words of a scenario's `effect` when it is not a refund
/// ([`Effect::say`](crate::scenario::Effect::say)).
fn in_words(effect: Option<&crate::scenario::Effect>, write: impl FnOnce(&mut String)) -> String {
    let mut text = String::new();
    write(&mut text);
    match effect {
        Some(e) => e.say(&text),
        None => text,
    }
}

fn seeds_label(seeds: &[u64]) -> String {
    match seeds {
        [one] => format!("seed {one}"),
        [first, .., last] => format!("seeds {first}..{last} ({})", seeds.len()),
        [] => "no seeds".into(),
    }
}

fn case_text(s: &mut String, c: &CaseReport) {
    let _ = writeln!(
        s,
        "{} ({}) × {} — {} — {}",
        c.scenario,
        c.scenario_path,
        c.variant(),
        seeds_label(&c.seeds),
        if c.passed { "ok" } else { "FAILED" }
    );
    let _ = writeln!(s, "  expect: {}", c.expect_source.describe());
    // Columns as wide as their widest cell (a metric name may be long): see `table`.
    let header = ["metric", "rule", "value", "failing seeds", "verdict"].map(String::from);
    let rows: Vec<Vec<String>> = std::iter::once(header.to_vec())
        .chain(c.checks.iter().map(|k| check_row(k, c.seeds.len())))
        .collect();
    // The minimum widths are the table's widths before they followed the content.
    let columns = [
        left(0, 26),
        left(1, 32),
        right(1, 10),
        right(1, 14),
        left(2, 0),
    ];
    for line in table("  ", &columns, &rows) {
        let _ = writeln!(s, "{line}");
    }
    let inv: Vec<String> = c
        .invariants
        .iter()
        .map(|i| format!("{} {}/{}", i.name, i.violating_seeds, c.seeds.len()))
        .collect();
    let _ = writeln!(
        s,
        "  invariants violated (counted; the rules above gate): {}",
        inv.join(", ")
    );
    for v in &c.violations {
        violation_text(s, v);
    }
    if let Some(e) = &c.explore {
        explore_text(s, e);
    } else if c.explore_off {
        let _ = writeln!(
            s,
            "  explore: off (--explore-cases 0 or the scenario's gate.explore_cases 0): safety \
             rests on the seeds alone"
        );
    }
}

/// The gate's exploration: its verdict, and a found violation's story and replay.
fn explore_text(s: &mut String, e: &ExploreCheck) {
    let _ = writeln!(
        s,
        "  {} {}",
        if e.ok { "ok" } else { "FAILED" },
        e.headline()
    );
    if let Some(f) = e.found.as_ref().filter(|_| !e.ok) {
        let _ = writeln!(
            s,
            "    replay: {} (writes the minimal scenario; then refundsim run it)",
            e.replay
        );
        if let Some(t) = f.ticket {
            let _ = writeln!(s, "    offending ticket {t}:");
        }
        for line in &f.story {
            let _ = writeln!(s, "      {line}");
        }
    } else if !e.ok {
        let _ = writeln!(s, "    replay: {}", e.replay);
    }
}

/// One rule's cells: metric, rule, value, failing seeds (`k/n`), verdict.
fn check_row(k: &BoundCheck, n: usize) -> Vec<String> {
    let failing = match k.rule {
        Rule::Min | Rule::Max | Rule::Conservation => format!("{}/{n}", k.failing_seeds.len()),
        _ => "-".into(),
    };
    // In the metric's unit: over_refund_cents reads `$2444.06`, not `244406`.
    let v = shown(super::unit_of(&k.metric), k.value);
    let value = match k.rule {
        Rule::MeanMin | Rule::MeanMax => format!("mean {v}"),
        Rule::P90Max => format!("p90 {v}"),
        _ if n > 1 => format!("worst {v}"),
        _ => v,
    };
    vec![
        k.metric.clone(),
        k.describe(),
        value,
        failing,
        verdict(k).to_string(),
    ]
}

/// `ok`, `FAILED`, or `reproduced` for a lower bound on a metric that counts harm: the case
/// asserts a failure (the incident's `duplicate_refund_tickets ≥ 1`) and it happened.
fn verdict(k: &BoundCheck) -> &'static str {
    let asserts_harm = matches!(k.rule, Rule::Min | Rule::MeanMin)
        && crate::invariants::asserts_harm(&k.metric, k.limit);
    match (k.ok, asserts_harm) {
        (false, _) => "FAILED",
        (true, true) => "reproduced",
        (true, false) => "ok",
    }
}

fn violation_text(s: &mut String, v: &Violation) {
    let _ = writeln!(s, "  FAILED {}", v.headline());
    let _ = writeln!(s, "    replay: {}", v.replay);
    if let Some(t) = v.ticket {
        let _ = writeln!(
            s,
            "    first offending ticket {t} (replay with --ticket {t}):"
        );
        for line in &v.story {
            let _ = writeln!(s, "      {line}");
        }
    }
}

/// `diff`'s report as text.
pub fn diff_text(r: &DiffReport) -> String {
    let mut s = String::new();
    let how = if r.paired {
        format!("paired on seeds {}", r.seeds)
    } else {
        format!(
            "unpaired: baseline seeds {}, candidate seeds {}",
            r.seeds, r.candidate_seeds
        )
    };
    let sets: String = r.sets.iter().map(|a| format!(" --set {a}")).collect();
    let both = if sets.is_empty() {
        String::new()
    } else {
        format!(" (both with{sets})")
    };
    let _ = writeln!(
        s,
        "baseline {} vs candidate {}{both} — {how}",
        r.baseline, r.candidate
    );
    for sc in &r.scenarios {
        s.push_str(&in_words(sc.effect.as_ref(), |one| {
            scenario_diff_text(one, sc)
        }));
    }
    match &r.reason {
        Some(reason) => {
            let _ = writeln!(s, "\ndiff FAILED: {reason}");
        }
        None => {
            let _ = writeln!(s, "\ndiff ok");
        }
    }
    s
}

/// One scenario's comparison: its verdict, the candidate's safety, a row per metric, then
/// each exceeded tolerance with the worst seed's replay command.
fn scenario_diff_text(s: &mut String, sc: &ScenarioDiff) {
    let _ = writeln!(
        s,
        "\n{} — {}",
        sc.scenario_path,
        if sc.passed { "ok" } else { "FAILED" }
    );
    safety_text(s, sc);
    // Every column as wide as its widest cell, in characters (`table`): a long metric name
    // (`pool_wait_over_threshold_fraction`, 33), a wide interval or a tolerance in dollars
    // moves the columns after it, never one row alone. Names are put in the scenario's words
    // before they are measured, so the translation of the whole text leaves them as laid out.
    let header = [
        "metric",
        "unit",
        "baseline",
        "candidate",
        "difference",
        "95% CI",
        "tolerance",
        "verdict",
    ]
    .map(String::from);
    let rows: Vec<Vec<String>> = std::iter::once(header.to_vec())
        .chain(sc.metrics.iter().map(|m| diff_row(m, sc.effect.as_ref())))
        .collect();
    // The minimum widths are the table's widths before they followed the content.
    let columns = [
        left(0, 26),
        right(1, 5),
        right(1, 12),
        right(1, 12),
        right(1, 12),
        right(1, 25),
        right(1, 10),
        left(2, 0),
    ];
    for line in table("  ", &columns, &rows) {
        let _ = writeln!(s, "{line}");
    }
    for m in sc.metrics.iter().filter(|m| !m.ok) {
        if let Some((seed, cmd)) = &m.worst {
            let _ = writeln!(
                s,
                "  FAILED {}: mean difference {} > tolerance {}; worst seed {seed}{}; replay: {cmd}",
                m.metric,
                shown(m.unit, m.difference.mean),
                shown(m.unit, m.tolerance.unwrap_or(0.0)),
                m.worst_text()
            );
        }
    }
}

/// The candidate on its own: safe, or which safety invariants break on how many seeds.
fn safety_text(s: &mut String, sc: &ScenarioDiff) {
    let counts: Vec<String> = sc
        .candidate_safety
        .iter()
        .map(|c| format!("{} {}/{}", c.invariant, c.violating_seeds, c.seeds))
        .collect();
    let _ = writeln!(
        s,
        "  candidate in itself: {} (on its seeds, safety invariants violated: {}){}",
        if sc.candidate_safe { "safe" } else { "UNSAFE" },
        counts.join(", "),
        if sc.candidate_claims_safety {
            ""
        } else {
            "; its expect states what it leaves open, so the comparison alone decides"
        }
    );
    if let Some((seed, cmd)) = sc.candidate_safety.iter().find_map(|c| c.first.as_ref()) {
        let _ = writeln!(s, "    first unsafe seed {seed}: {cmd}");
    }
    if sc.candidate_explore.is_none() && !sc.candidate_claims_safety {
        let _ = writeln!(
            s,
            "    not explored: its expect states what it leaves open (--require-safe explores it)"
        );
    }
    if let Some(e) = &sc.candidate_explore {
        let verdict = if e.found.is_none() && e.aborted.is_none() {
            "ok"
        } else {
            "UNSAFE"
        };
        let _ = writeln!(s, "    {verdict} {}", e.headline());
        if e.found.is_some() {
            let _ = writeln!(s, "      replay: {}", e.replay);
        }
    }
}

/// A value in its unit: cents as dollars (`$12.34`, `$11,331.09`), the others as numbers.
pub(crate) fn shown(unit: &str, v: f64) -> String {
    if unit == "cents" {
        // Dollars as `run` and the HTML page write them: `$11,331.09`.
        let c = v.abs().round() as u64;
        let text = format!("${}.{:02}", crate::text::group_thousands(c / 100), c % 100);
        if v < 0.0 && text != "$0.00" {
            format!("-{text}")
        } else {
            text
        }
    } else if unit == "fraction" {
        // A fraction in [0, 1]: enough digits that 0.003 and 0.005 are not rounded together.
        format!("{v:.5}")
    } else {
        fmt_num(v)
    }
}

/// The unit column: `$` for cents (shown in dollars), `ms`, `frac` (a fraction in [0, 1]), or
/// `count`.
fn unit_label(unit: &str) -> &'static str {
    match unit {
        "cents" => "$",
        "ms" => "ms",
        "fraction" => "frac",
        _ => "count",
    }
}

/// One metric's cells, its name in the words of `effect` when it is not a refund.
fn diff_row(m: &MetricDiff, effect: Option<&crate::scenario::Effect>) -> Vec<String> {
    let u = m.unit;
    let ci = format!(
        "[{}, {}]",
        shown(u, m.difference.low),
        shown(u, m.difference.high)
    );
    vec![
        effect.map_or_else(|| m.metric.clone(), |e| e.say(&m.metric)),
        unit_label(u).to_string(),
        shown(u, m.baseline_mean),
        shown(u, m.candidate_mean),
        shown(u, m.difference.mean),
        ci,
        m.tolerance
            .map(|t| format!("≤ {}", shown(u, t)))
            .unwrap_or_else(|| "-".into()),
        if m.tolerance.is_none() {
            ""
        } else if m.ok {
            "ok"
        } else {
            "FAILED"
        }
        .to_string(),
    ]
}
