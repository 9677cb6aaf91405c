//! The text output of `check` and `diff`: a table per scenario × policy (or scenario), then
//! each failure with its replay command.

use std::fmt::Write;

use super::bounds::{fmt_num, BoundCheck, Rule};
use super::check::{CaseReport, CheckReport, Violation};
use super::diff::{DiffReport, MetricDiff};

/// `check`'s report as text.
pub fn check_text(r: &CheckReport) -> String {
    let mut s = String::new();
    for c in &r.cases {
        case_text(&mut s, c);
        s.push('\n');
    }
    let failed = r.cases.iter().filter(|c| !c.passed).count();
    let _ = writeln!(
        s,
        "check {}: {} scenario × policy cases, {} passed, {failed} failed",
        if r.passed { "ok" } else { "FAILED" },
        r.cases.len(),
        r.cases.len() - failed
    );
    s
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
        c.policy.as_deref().unwrap_or("no policy"),
        seeds_label(&c.seeds),
        if c.passed { "ok" } else { "FAILED" }
    );
    let _ = writeln!(
        s,
        "  {:<26} {:<32} {:>10} {:>14}  verdict",
        "metric", "rule", "value", "failing seeds"
    );
    for k in &c.checks {
        check_row(s, k, c.seeds.len());
    }
    let inv: Vec<String> = c
        .invariants
        .iter()
        .map(|i| format!("{} {}/{}", i.name, i.violating_seeds, c.seeds.len()))
        .collect();
    let _ = writeln!(
        s,
        "  invariants violated (shown; only conservation gates): {}",
        inv.join(", ")
    );
    for v in &c.violations {
        violation_text(s, v);
    }
}

fn check_row(s: &mut String, k: &BoundCheck, n: usize) {
    let failing = match k.rule {
        Rule::Min | Rule::Max | Rule::Conservation => format!("{}/{n}", k.failing_seeds.len()),
        _ => "-".into(),
    };
    let value = match k.rule {
        Rule::MeanMin | Rule::MeanMax => format!("mean {}", fmt_num(k.value)),
        Rule::P90Max => format!("p90 {}", fmt_num(k.value)),
        _ if n > 1 => format!("worst {}", fmt_num(k.value)),
        _ => fmt_num(k.value),
    };
    let _ = writeln!(
        s,
        "  {:<26} {:<32} {:>10} {:>14}  {}",
        k.metric,
        k.describe(),
        value,
        failing,
        if k.ok { "ok" } else { "FAILED" }
    );
}

fn violation_text(s: &mut String, v: &Violation) {
    let _ = writeln!(
        s,
        "  FAILED {} {}: seed {} has {}",
        v.metric,
        v.rule,
        v.seed,
        fmt_num(v.value)
    );
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
    let _ = writeln!(
        s,
        "baseline {} vs candidate {} — {how}",
        r.baseline, r.candidate
    );
    for sc in &r.scenarios {
        let _ = writeln!(
            s,
            "\n{} — {}",
            sc.scenario_path,
            if sc.passed { "ok" } else { "FAILED" }
        );
        let _ = writeln!(
            s,
            "  {:<26} {:>12} {:>12} {:>12} {:>25} {:>10}  verdict",
            "metric", "baseline", "candidate", "difference", "95% CI", "tolerance"
        );
        for m in &sc.metrics {
            diff_row(&mut s, m);
        }
        for m in sc.metrics.iter().filter(|m| !m.ok) {
            if let Some((seed, cmd)) = &m.worst {
                let _ = writeln!(
                    s,
                    "  FAILED {}: mean difference {} > tolerance {}; worst seed {seed}: {cmd}",
                    m.metric,
                    fmt_num(m.difference.mean),
                    fmt_num(m.tolerance.unwrap_or(0.0))
                );
            }
        }
    }
    let _ = writeln!(s, "\ndiff {}", if r.passed { "ok" } else { "FAILED" });
    s
}

fn diff_row(s: &mut String, m: &MetricDiff) {
    let ci = format!(
        "[{}, {}]",
        fmt_num(m.difference.low),
        fmt_num(m.difference.high)
    );
    let line = format!(
        "  {:<26} {:>12} {:>12} {:>12} {:>25} {:>10}  {}",
        m.metric,
        fmt_num(m.baseline_mean),
        fmt_num(m.candidate_mean),
        fmt_num(m.difference.mean),
        ci,
        m.tolerance
            .map(|t| format!("≤ {}", fmt_num(t)))
            .unwrap_or_else(|| "-".into()),
        if m.tolerance.is_none() {
            ""
        } else if m.ok {
            "ok"
        } else {
            "FAILED"
        }
    );
    let _ = writeln!(s, "{}", line.trim_end());
}
