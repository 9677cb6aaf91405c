//! `fix`'s text: the scenario as given, the search's path to each answer with the evidence of
//! every step, the answer and its alternatives.

use std::fmt::Write;

use super::{Answer, Evidence, FixReport};

/// One line on a candidate's verdict: `holds: 30 seeds, explore 1024 cases found nothing`, or
/// what failed (`duplicate_refund_tickets on 5/30 seeds (1–17: seeds 3, 4, 5, 9, 10)`) and what
/// the counterexample's events show.
pub(crate) fn summary(ev: &Evidence) -> String {
    if ev.passed {
        return match &ev.explore {
            Some(e) => format!(
                "holds: {}, and explore ({}) finds nothing",
                plural(ev.seeds, "seed"),
                plural(e.cases as usize, "case")
            ),
            None => format!("holds: {}, no exploration", plural(ev.seeds, "seed")),
        };
    }
    let mut out = String::new();
    if let Some(f) = ev.failures.first() {
        let (lo, hi) = f
            .values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        let range = if lo == hi {
            number(lo)
        } else {
            format!("{}–{}", number(lo), number(hi))
        };
        let shown: Vec<String> = f.failing_seeds.iter().take(8).map(u64::to_string).collect();
        let more = if f.failing_seeds.len() > 8 {
            ", …"
        } else {
            ""
        };
        let of = if ev.stopped_early {
            format!(" of the first {}", ev.seeds)
        } else {
            format!("/{}", ev.seeds)
        };
        let _ = write!(
            out,
            "{} on {}{of} seeds ({range} per seed: seed{} {}{more})",
            f.metric,
            f.failing_seeds.len(),
            if f.failing_seeds.len() == 1 { "" } else { "s" },
            shown.join(", ")
        );
        for g in ev.failures.iter().skip(1) {
            let _ = write!(out, ", {} on {}", g.metric, g.failing_seeds.len());
        }
    } else if let Some(e) = &ev.explore {
        match (&e.found, &e.aborted) {
            (_, Some(why)) => {
                let _ = write!(out, "explore ({} cases) stopped early: {why}", e.cases);
            }
            (Some(inv), _) => {
                let seeds = if ev.stopped_early {
                    format!("the first {} seeds", ev.seeds)
                } else {
                    format!("the {} seeds", ev.seeds)
                };
                let _ = write!(
                    out,
                    "{seeds} hold, but explore ({} cases) breaks {inv}",
                    e.cases
                );
            }
            _ => {}
        }
    }
    if let Some(cx) = &ev.counterexample {
        let signs: Vec<String> = cx.signs.iter().map(|s| s.words()).collect();
        let _ = write!(
            out,
            "; {}{}: {}",
            cx.source,
            cx.ticket
                .map(|t| format!(", ticket {t}"))
                .unwrap_or_default(),
            if signs.is_empty() {
                cx.invariant.clone()
            } else {
                signs.join(", ")
            }
        );
    }
    out
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

/// The report as text, in the scenario's words.
pub fn fix_text(r: &FixReport) -> String {
    let out = english(r);
    match &r.effect {
        Some(e) => e.say(&out),
        None => out,
    }
}

fn english(r: &FixReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "fix {} ({}){}: every safety invariant on {} seeds, then explore {} cases",
        r.scenario,
        r.scenario_path,
        r.policies
            .iter()
            .map(|p| format!(" + {p}"))
            .collect::<String>(),
        r.seeds.len(),
        r.explore_cases
    );
    let _ = writeln!(out, "  as given: {}", summary(&r.baseline));
    if r.baseline.passed {
        let _ = writeln!(out, "nothing to fix: the scenario already holds");
        return out;
    }
    if let Some(cx) = &r.baseline.counterexample {
        for line in cx.story.iter().take(12) {
            let _ = writeln!(out, "    {line}");
        }
    }
    let _ = writeln!(
        out,
        "searched: {} verified by simulation",
        plural(r.tried.len() - 1, "candidate")
    );
    match &r.fix {
        None => {
            let _ = writeln!(
                out,
                "no fix found: {}",
                r.gave_up.as_deref().unwrap_or("the search ended")
            );
        }
        Some(a) => {
            let _ = writeln!(
                out,
                "\nhow the search got there (each step answers the last one's counterexample):"
            );
            path(&mut out, r, a);
            let _ = writeln!(
                out,
                "\nfix: {} ({}):",
                plural(a.fields, "field"),
                cost_text(a)
            );
            for m in &a.changes {
                let _ = writeln!(out, "  {} = {}", m.path, m.value.0);
                let _ = writeln!(out, "      {}", m.why);
            }
            let _ = writeln!(out, "  evidence: {}", summary(&a.evidence));
            if !r.alternatives.is_empty() {
                let _ = writeln!(out, "\nalternatives:");
                for (i, alt) in r.alternatives.iter().enumerate() {
                    let sets: Vec<String> = alt
                        .changes
                        .iter()
                        .map(|m| format!("{}={}", m.path, m.value.0))
                        .collect();
                    let _ = writeln!(out, "  {}. {}: {}", i + 2, cost_text(alt), sets.join("  "));
                }
            }
        }
    }
    out
}

fn path(out: &mut String, r: &FixReport, a: &Answer) {
    let mut before: Vec<String> = Vec::new();
    for &id in &a.path {
        let t = &r.tried[id];
        if id == 0 {
            continue;
        }
        let added: Vec<&String> = t.changes.iter().filter(|c| !before.contains(c)).collect();
        let _ = writeln!(
            out,
            "  + {}  →  {}",
            added
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" + "),
            t.summary
        );
        // The opening and the end, where the second refund is made.
        let n = t.story.len();
        for (i, line) in t.story.iter().enumerate() {
            if n <= STORY_LINES || i < 3 || i >= n - (STORY_LINES - 4) {
                let _ = writeln!(out, "      {line}");
            } else if i == 3 {
                let _ = writeln!(
                    out,
                    "      … ({} lines: --json has them all)",
                    n - (STORY_LINES - 1)
                );
            }
        }
        before = t.changes.clone();
    }
}

/// Story lines shown per step of the path.
const STORY_LINES: usize = 16;

fn cost_text(a: &Answer) -> String {
    if a.cost_parts.is_empty() {
        format!("cost {}", number(a.cost))
    } else {
        let parts: Vec<String> = a
            .cost_parts
            .iter()
            .map(|(k, v)| format!("{k} {}", number(*v)))
            .collect();
        format!(
            "cost {} = {} + {}",
            number(a.cost),
            a.fields,
            parts.join(" + ")
        )
    }
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}
