//! The sweep's text on stdout: a table of the grid, the safe region and the recommendation.

use std::fmt::Write;

use super::exec::Sweep;
use super::table::{PointRow, DUPLICATES, TOOL_CALL_P50, TOOL_CALL_P99};

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
    header.extend(["P(dup)", "dups mean", "resp p50 ms", "resp p99 ms", "safe"].map(String::from));
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
    if i.minimize.is_empty() {
        return out;
    }
    let order = format!(
        "smallest {}, then service response p99",
        i.minimize.join(", then ")
    );
    match s.best.and_then(|b| s.points.iter().find(|p| p.point == b)) {
        None => {
            let _ = writeln!(
                out,
                "no safe point ({order}): widen the grid or relax --require"
            );
        }
        Some(p) => {
            let sets: Vec<String> = i
                .paths()
                .iter()
                .zip(&p.values)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = writeln!(
                out,
                "recommended ({order}): {}\n  P(duplicate) {:.2} over {seeds} seeds, service \
                 response time p50 {:.0} ms, p99 {:.0} ms (means over seeds)",
                sets.join(" "),
                p.p_duplicate,
                mean(p, p50),
                mean(p, p99)
            );
        }
    }
    out
}

/// `n` and its noun, singular for 1: `1 point`, `30 points`.
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
