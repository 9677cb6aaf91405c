//! The figures of a sweep: one value per (run, metric), and per grid point their mean, p50, p90
//! and max over seeds.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::analysis::stats::{mean, percentile};
use crate::invariants::{Latencies, Metrics};
use crate::scenario::METRICS;

/// The statistics over seeds that `points.csv` gives for every metric, in column order.
pub(crate) const STATS: &[&str] = &["mean", "p50", "p90", "max"];

/// The metric every P(duplicate) and the default `--require` read.
pub(crate) const DUPLICATES: &str = "duplicate_refund_tickets";

/// The metric `--minimize` breaks its last ties on (its mean over seeds), and the latency plots
/// show with its p50 sibling.
pub(crate) const TOOL_CALL_P99: &str = "latency.tool_call.p99_ms";
/// The median sibling of [`TOOL_CALL_P99`].
pub(crate) const TOOL_CALL_P50: &str = "latency.tool_call.p50_ms";

/// The metrics a sweep records, in column order: every name of the report's `METRICS` (the
/// names `expect` may bound), then every number under the report's `latency` object as a
/// dotted path (`latency.tool_call.p99_ms`, in ms). A metric added to the report and to
/// `METRICS` appears here, and so in `points.csv` and `runs.csv`, by itself.
pub(crate) fn metric_names() -> Vec<String> {
    let mut names: Vec<String> = METRICS.iter().map(|m| m.to_string()).collect();
    let latency = serde_json::to_value(Latencies::default()).unwrap_or(Value::Null);
    flatten("latency", &latency, &mut names);
    names
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{prefix}.{k}"), v, out);
            }
        }
        Value::Number(_) => out.push(prefix.to_string()),
        _ => {}
    }
}

/// One run's value of each of `names` (from [`metric_names`]); NaN for a name the report
/// lacks.
pub(crate) fn figures(m: &Metrics, names: &[String]) -> Vec<f64> {
    let json = serde_json::to_value(m).unwrap_or(Value::Null);
    names
        .iter()
        .map(|n| {
            let pointer = format!("/{}", n.replace('.', "/"));
            json.pointer(&pointer)
                .and_then(Value::as_f64)
                .or_else(|| m.get(n))
                .unwrap_or(f64::NAN)
        })
        .collect()
}

/// One (point, seed) run: its grid point, its seed and its figures (aligned with the sweep's
/// metric names).
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    /// Grid point index (0-based, first `--vary` slowest).
    pub point: usize,
    /// Root seed.
    pub seed: u64,
    /// One value per metric.
    pub values: Vec<f64>,
}

/// Mean, p50, p90 and max (nearest rank) of one metric over a point's seeds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 90th percentile (nearest rank).
    pub p90: f64,
    /// Maximum.
    pub max: f64,
}

impl Stat {
    /// Of `xs` (seed order does not matter).
    pub fn of(xs: &[f64]) -> Stat {
        Stat {
            mean: mean(xs),
            p50: percentile(xs, 0.5),
            p90: percentile(xs, 0.9),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    /// The statistic named by `name` (one of [`STATS`]).
    pub fn get(&self, name: &str) -> Option<f64> {
        match name {
            "mean" => Some(self.mean),
            "p50" => Some(self.p50),
            "p90" => Some(self.p90),
            "max" => Some(self.max),
            _ => None,
        }
    }
}

/// One grid point over its seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct PointRow {
    /// Grid point index.
    pub point: usize,
    /// The varied fields' values, in `--vary` order.
    pub values: Vec<String>,
    /// Seeds run.
    pub seeds: usize,
    /// Fraction of seeds with at least one duplicate refund ticket.
    pub p_duplicate: f64,
    /// Every `--require` holds.
    pub safe: bool,
    /// The rule ids of `lint`'s error findings on the point's scenario (empty: lint clean); see
    /// [`super::vet`].
    pub lint: Vec<String>,
    /// What a short `explore` found, for the candidates of the recommendation it explored.
    pub explore: Option<Explored>,
    /// One per metric.
    pub stats: Vec<Stat>,
}

/// Groups `runs` (sorted by point, then seed) into points; `safe` is decided later.
pub(super) fn points(
    runs: &[RunRow],
    values_of: impl Fn(usize) -> Vec<String>,
    names: &[String],
) -> Vec<PointRow> {
    let dup = names.iter().position(|n| n == DUPLICATES);
    runs.chunk_by(|a, b| a.point == b.point)
        .map(|group| {
            let column = |i: usize| group.iter().map(|r| r.values[i]).collect::<Vec<f64>>();
            let with_dup = dup.map_or(0, |d| group.iter().filter(|r| r.values[d] > 0.0).count());
            PointRow {
                point: group[0].point,
                values: values_of(group[0].point),
                seeds: group.len(),
                p_duplicate: with_dup as f64 / group.len() as f64,
                safe: false,
                lint: Vec::new(),
                explore: None,
                stats: (0..names.len()).map(|i| Stat::of(&column(i))).collect(),
            }
        })
        .collect()
}

/// `points.csv`: `point`, the varied paths, `seeds`, `p_duplicate`, `safe`, `lint` (`ok`, or
/// the rule ids of its error findings separated by spaces), `explore` (empty when not
/// explored, else `clean`, `violation` or `inconclusive`), then `METRIC.mean`, `METRIC.p50`,
/// `METRIC.p90`, `METRIC.max` for every metric.
pub(crate) fn points_csv(paths: &[String], names: &[String], points: &[PointRow]) -> String {
    let mut header: Vec<String> = vec!["point".into()];
    header.extend(paths.iter().cloned());
    header.extend(["seeds", "p_duplicate", "safe", "lint", "explore"].map(String::from));
    for n in names {
        header.extend(STATS.iter().map(|s| format!("{n}.{s}")));
    }
    let rows = points.iter().map(|p| {
        let mut row = vec![p.point.to_string()];
        row.extend(p.values.iter().cloned());
        row.push(p.seeds.to_string());
        row.push(num(p.p_duplicate));
        row.push(p.safe.to_string());
        row.push(lint_cell(&p.lint));
        row.push(p.explore.as_ref().map_or("", Explored::word).to_string());
        for s in &p.stats {
            row.extend([s.mean, s.p50, s.p90, s.max].map(num));
        }
        row
    });
    csv_text(header, rows)
}

/// A point's `lint` cell: `ok`, or its error rule ids separated by spaces.
pub(crate) fn lint_cell(errors: &[String]) -> String {
    if errors.is_empty() {
        "ok".into()
    } else {
        errors.join(" ")
    }
}

/// `runs.csv` header: `point`, the varied paths, `seed`, then every metric.
pub(crate) fn runs_header(paths: &[String], names: &[String]) -> Vec<String> {
    let mut header: Vec<String> = vec!["point".into()];
    header.extend(paths.iter().cloned());
    header.push("seed".into());
    header.extend(names.iter().cloned());
    header
}

/// `runs.csv`: one row per run, with [`runs_header`].
pub(crate) fn runs_csv(
    paths: &[String],
    names: &[String],
    runs: &[RunRow],
    values_of: impl Fn(usize) -> Vec<String>,
) -> String {
    let rows = runs.iter().map(|r| {
        let mut row = vec![r.point.to_string()];
        row.extend(values_of(r.point));
        row.push(r.seed.to_string());
        row.extend(r.values.iter().map(|&v| num(v)));
        row
    });
    csv_text(runs_header(paths, names), rows)
}

/// A number as CSV text: Rust's shortest representation that parses back to the same `f64`
/// (so `merge` reads back exactly what a shard computed).
pub(crate) fn num(x: f64) -> String {
    format!("{x}")
}

/// CSV text of `header` then `rows` (the `csv` crate's quoting, `\n` line ends).
pub(crate) fn csv_text(header: Vec<String>, rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to memory cannot fail; a failure would be a csv bug, and would show as a short file.
    let _ = w.write_record(&header);
    for r in rows {
        let _ = w.write_record(&r);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// What a short `explore` found at a point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Explored {
    /// No violation in `cases` cases.
    Clean {
        /// Cases tried.
        cases: u32,
        /// Search seed.
        seed: u64,
    },
    /// A safety invariant broken in one of the cases.
    Violation {
        /// The invariant (see [`crate::explore::SAFETY`]).
        invariant: String,
        /// Its first offending ticket in the failing case, if per ticket.
        ticket: Option<u64>,
        /// Cases asked for.
        cases: u32,
        /// Search seed.
        seed: u64,
    },
    /// The search stopped before its cases were tried: proves nothing.
    Inconclusive {
        /// Cases tried.
        tried: u32,
        /// Cases asked for.
        cases: u32,
        /// Search seed.
        seed: u64,
        /// Why it stopped.
        reason: String,
    },
}

impl Explored {
    /// A short word for tables and `points.csv`: `clean`, `violation`, `inconclusive`.
    pub fn word(&self) -> &'static str {
        match self {
            Explored::Clean { .. } => "clean",
            Explored::Violation { .. } => "violation",
            Explored::Inconclusive { .. } => "inconclusive",
        }
    }

    /// One line: `256 cases clean (seed 1)`, `at_most_one_refund_per_ticket violated (ticket
    /// 4) within 256 cases (seed 1)`.
    pub fn describe(&self) -> String {
        match self {
            Explored::Clean { cases, seed } => format!("{cases} cases clean (seed {seed})"),
            Explored::Violation {
                invariant,
                ticket,
                cases,
                seed,
            } => format!(
                "{invariant} violated{} within {cases} cases (seed {seed})",
                ticket.map_or(String::new(), |t| format!(" (ticket {t})"))
            ),
            Explored::Inconclusive {
                tried,
                cases,
                seed,
                reason,
            } => format!("stopped after {tried} of {cases} cases (seed {seed}): {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_the_report_names_then_latencies() {
        let names = metric_names();
        assert_eq!(names[0], "tickets");
        assert!(names.contains(&DUPLICATES.to_string()));
        assert!(names.contains(&TOOL_CALL_P99.to_string()));
        assert!(names.contains(&"latency.pool_wait.p50_ms".to_string()));
        assert_eq!(names.len(), METRICS.len() + 12);
    }

    #[test]
    fn stats_are_nearest_rank_over_seeds() {
        let s = Stat::of(&[0.0, 3.0, 1.0, 2.0]);
        assert_eq!((s.mean, s.p50, s.p90, s.max), (1.5, 1.0, 3.0, 3.0));
    }

    #[test]
    fn points_count_seeds_with_a_duplicate() {
        let names = vec![DUPLICATES.to_string()];
        let run = |point, seed, d| RunRow {
            point,
            seed,
            values: vec![d],
        };
        let runs = [
            run(0, 1, 0.0),
            run(0, 2, 2.0),
            run(1, 1, 0.0),
            run(1, 2, 0.0),
        ];
        let pts = points(&runs, |p| vec![p.to_string()], &names);
        assert_eq!(pts.len(), 2);
        assert_eq!((pts[0].p_duplicate, pts[0].stats[0].mean), (0.5, 1.0));
        assert_eq!(pts[1].p_duplicate, 0.0);
        let csv = points_csv(&["a.b".into()], &names, &pts);
        assert_eq!(
            csv.lines().next().unwrap(),
            "point,a.b,seeds,p_duplicate,safe,lint,explore,duplicate_refund_tickets.mean,\
             duplicate_refund_tickets.p50,duplicate_refund_tickets.p90,duplicate_refund_tickets.max"
        );
        assert_eq!(csv.lines().nth(1).unwrap(), "0,0,2,0.5,false,ok,,1,0,2,2");
    }
}
