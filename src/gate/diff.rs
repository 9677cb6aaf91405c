//! `refundsim diff`: a baseline policy against a candidate on the same seeds (common random
//! numbers), per metric: both means, the mean paired difference with its 95 % t interval, and a
//! tolerance on the mean difference; and, apart from the comparison, whether the candidate is
//! safe in itself (the safety invariants on each of its seeds).

use std::collections::BTreeMap;
use std::path::PathBuf;

use rayon::prelude::*;
use serde::Serialize;

use super::bounds::invariant_of;
use super::error::GateError;
use super::inputs::scenario_files;
use super::progress::Progress;
use super::seeds::SeedRange;
use super::stats::{mean, paired, welch, Interval};
use super::units::unit_of;
use crate::run::{run, Invocation, RunReport};
use crate::scenario::{self, Scenario, METRICS, SAFETY_METRICS};

/// Tolerances applied when `--tolerance` does not name the metric: no increase (mean paired
/// difference ≤ 0) in duplicated tickets, lost refunds or false failures.
pub const DEFAULT_TOLERANCES: &[(&str, f64)] = &[
    ("duplicate_refund_tickets", 0.0),
    ("lost_refunds", 0.0),
    ("false_failures", 0.0),
];

/// What to compare.
#[derive(Clone, Debug)]
pub struct DiffOptions {
    /// Scenario files or directories.
    pub scenarios: Vec<PathBuf>,
    /// Baseline policy file.
    pub baseline: PathBuf,
    /// Candidate policy file.
    pub candidate: PathBuf,
    /// Seeds (both sides, paired). Default in the CLI: 1..30.
    pub seeds: SeedRange,
    /// Other seeds for the candidate: an unpaired comparison (Welch), to measure what pairing
    /// buys. Default: the same seeds, paired.
    pub candidate_seeds: Option<SeedRange>,
    /// `METRIC=VALUE` tolerances on the mean difference (candidate − baseline), over the
    /// defaults ([`DEFAULT_TOLERANCES`]).
    pub tolerances: Vec<String>,
    /// `PATH=VALUE` overrides applied to both sides after their policy (as `run --set`).
    pub sets: Vec<String>,
    /// Also fail when the candidate breaks a safety invariant on any seed (by default that is
    /// reported, not gated: the comparison alone decides).
    pub require_safe: bool,
}

/// The comparison over every scenario.
#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    /// Baseline policy file.
    pub baseline: String,
    /// Candidate policy file.
    pub candidate: String,
    /// `--set` overrides applied to both sides, as given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<String>,
    /// Baseline seeds.
    pub seeds: String,
    /// Candidate seeds.
    pub candidate_seeds: String,
    /// Whether seeds are paired (the same on both sides).
    pub paired: bool,
    /// One per scenario, in argument order.
    pub scenarios: Vec<ScenarioDiff>,
    /// No tolerance exceeded.
    pub passed: bool,
}

/// One scenario's comparison.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioDiff {
    /// Scenario file as given.
    pub scenario_path: String,
    /// One row per metric, in `METRICS` order.
    pub metrics: Vec<MetricDiff>,
    /// The candidate on its own: each safety invariant and the seeds that break it.
    pub candidate_safety: Vec<SafetyCount>,
    /// The candidate breaks no safety invariant on any seed.
    pub candidate_safe: bool,
    /// No tolerance exceeded (and, with `require_safe`, the candidate safe).
    pub passed: bool,
}

/// One safety invariant over the candidate's seeds.
#[derive(Clone, Debug, Serialize)]
pub struct SafetyCount {
    /// Invariant name (DESIGN §3), e.g. `at_most_one_refund_per_ticket`.
    pub invariant: String,
    /// The metric that counts its violations, e.g. `duplicate_refund_tickets`.
    pub metric: String,
    /// Candidate seeds on which it is broken.
    pub violating_seeds: u64,
    /// Candidate seeds run.
    pub seeds: u64,
    /// The first breaking seed and its replay command.
    pub first: Option<(u64, String)>,
}

/// One metric: means, difference, verdict.
#[derive(Clone, Debug, Serialize)]
pub struct MetricDiff {
    /// Metric name.
    pub metric: String,
    /// Its unit: `count`, `cents` or `ms` (see [`super::unit_of`]).
    pub unit: &'static str,
    /// Mean under the baseline.
    pub baseline_mean: f64,
    /// Mean under the candidate.
    pub candidate_mean: f64,
    /// Mean difference (candidate − baseline) and its 95 % interval (paired t, or Welch).
    pub difference: Interval,
    /// Largest allowed mean difference, if any.
    pub tolerance: Option<f64>,
    /// `difference.mean` ≤ `tolerance` (true without a tolerance).
    pub ok: bool,
    /// When not ok: the candidate seed with the largest value (paired: largest increase), and
    /// its replay command.
    pub worst: Option<(u64, String)>,
}

/// Parses `METRIC=VALUE` (a metric of `METRICS`, a finite number).
pub fn parse_tolerance(arg: &str) -> Result<(String, f64), GateError> {
    let err = |message: String| GateError::Tolerance {
        arg: arg.to_string(),
        message,
    };
    let (m, v) = arg
        .split_once('=')
        .ok_or_else(|| err("expected METRIC=VALUE, e.g. duplicate_refund_tickets=0".into()))?;
    if !METRICS.contains(&m) {
        return Err(err(format!(
            "unknown metric {m:?}; expected one of: {}",
            METRICS.join(", ")
        )));
    }
    let v: f64 = v
        .parse()
        .ok()
        .filter(|x: &f64| x.is_finite())
        .ok_or_else(|| err(format!("expected a finite number after `=`, got {v:?}")))?;
    Ok((m.to_string(), v))
}

fn tolerances(args: &[String]) -> Result<BTreeMap<String, f64>, GateError> {
    let mut t: BTreeMap<String, f64> = DEFAULT_TOLERANCES
        .iter()
        .map(|(m, v)| (m.to_string(), *v))
        .collect();
    for a in args {
        let (m, v) = parse_tolerance(a)?;
        t.insert(m, v);
    }
    Ok(t)
}

struct Side {
    scenario: Scenario,
    how: Invocation,
    seeds: Vec<u64>,
}

/// Loads both sides of every scenario (bad input is an error before anything runs), runs all
/// seeds in parallel (collected in input order: thread count does not matter), compares.
pub fn diff(opts: &DiffOptions) -> Result<DiffReport, GateError> {
    diff_with_progress(opts, &())
}

/// [`diff`], telling `progress` the number of runs and each finished run. The report is
/// exactly [`diff`]'s.
pub fn diff_with_progress(
    opts: &DiffOptions,
    progress: &dyn Progress,
) -> Result<DiffReport, GateError> {
    let tol = tolerances(&opts.tolerances)?;
    let cseeds = opts.candidate_seeds.unwrap_or(opts.seeds);
    // A 95 % interval needs a sample variance: at least two seeds on each side.
    for (flag, r) in [("--seeds", opts.seeds), ("--candidate-seeds", cseeds)] {
        if r.seeds().len() < 2 {
            return Err(GateError::Seeds {
                flag,
                arg: format!("{}..{}", r.seeds()[0], r.seeds()[0]),
                message:
                    "a confidence interval needs at least 2 seeds; expected a range like 1..30"
                        .into(),
            });
        }
    }
    let paired_seeds = cseeds == opts.seeds;
    let mut sides: Vec<Side> = Vec::new();
    let files = scenario_files(&opts.scenarios)?;
    for path in &files {
        for (policy, seeds) in [(&opts.baseline, opts.seeds), (&opts.candidate, cseeds)] {
            sides.push(Side {
                scenario: scenario::load(path, std::slice::from_ref(policy), &opts.sets)?,
                how: Invocation {
                    scenario_path: path.display().to_string(),
                    policies: vec![policy.display().to_string()],
                    sets: opts.sets.clone(),
                },
                seeds: seeds.seeds(),
            });
        }
    }
    let jobs: Vec<(usize, u64)> = sides
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.seeds.iter().map(move |&seed| (i, seed)))
        .collect();
    progress.start(jobs.len() as u64);
    let mut reports: Vec<RunReport> = jobs
        .par_iter()
        .enumerate()
        .map(|(k, &(i, seed))| {
            crate::scenario::budget::set_run_order(k as u64);
            let report = run(&sides[i].scenario, seed, &sides[i].how).report;
            progress.run_done();
            report
        })
        .collect();
    crate::scenario::budget::exit_if_stopped();
    let mut scenarios = Vec::new();
    for (k, path) in files.iter().enumerate() {
        let rest = reports.split_off(sides[2 * k].seeds.len() + sides[2 * k + 1].seeds.len());
        let (b, c) = reports.split_at(sides[2 * k].seeds.len());
        let metrics = METRICS
            .iter()
            .map(|m| {
                metric_diff(
                    m,
                    b,
                    c,
                    paired_seeds,
                    tol.get(*m).copied(),
                    &sides[2 * k + 1].how,
                )
            })
            .collect::<Vec<_>>();
        let candidate_safety = safety(c, &sides[2 * k + 1].how);
        let candidate_safe = candidate_safety.iter().all(|s| s.violating_seeds == 0);
        scenarios.push(ScenarioDiff {
            scenario_path: path.display().to_string(),
            passed: metrics.iter().all(|m| m.ok) && (candidate_safe || !opts.require_safe),
            metrics,
            candidate_safety,
            candidate_safe,
        });
        reports = rest;
    }
    Ok(DiffReport {
        baseline: opts.baseline.display().to_string(),
        candidate: opts.candidate.display().to_string(),
        sets: opts.sets.clone(),
        seeds: opts.seeds.to_string(),
        candidate_seeds: cseeds.to_string(),
        paired: paired_seeds,
        passed: scenarios.iter().all(|s| s.passed),
        scenarios,
    })
}

/// The safety invariants ([`SAFETY_METRICS`], the default `expect`) over the candidate's runs.
fn safety(c: &[RunReport], candidate: &Invocation) -> Vec<SafetyCount> {
    SAFETY_METRICS
        .iter()
        .map(|&metric| {
            let broken: Vec<u64> = c
                .iter()
                .filter(|r| r.metrics.get(metric).unwrap_or(0.0) > 0.0)
                .map(|r| r.seed)
                .collect();
            SafetyCount {
                invariant: invariant_of(metric).unwrap_or(metric).to_string(),
                metric: metric.to_string(),
                violating_seeds: broken.len() as u64,
                seeds: c.len() as u64,
                first: broken.first().map(|&s| (s, candidate.command(s))),
            }
        })
        .collect()
}

fn metric_diff(
    metric: &str,
    b: &[RunReport],
    c: &[RunReport],
    paired_seeds: bool,
    tolerance: Option<f64>,
    candidate: &Invocation,
) -> MetricDiff {
    let val = |r: &RunReport| r.metrics.get(metric).unwrap_or(0.0);
    let bv: Vec<f64> = b.iter().map(val).collect();
    let cv: Vec<f64> = c.iter().map(val).collect();
    let (difference, effect): (Interval, Vec<f64>) = if paired_seeds {
        let d: Vec<f64> = cv.iter().zip(&bv).map(|(c, b)| c - b).collect();
        (paired(&d), d)
    } else {
        (welch(&bv, &cv), cv.clone())
    };
    let ok = tolerance.is_none_or(|t| difference.mean <= t);
    let worst = (!ok).then(|| {
        let i =
            (0..effect.len()).fold(0, |best, i| if effect[i] > effect[best] { i } else { best });
        (c[i].seed, candidate.command(c[i].seed))
    });
    MetricDiff {
        metric: metric.to_string(),
        unit: unit_of(metric),
        baseline_mean: mean(&bv),
        candidate_mean: mean(&cv),
        difference,
        tolerance,
        ok,
        worst,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_override_defaults_and_reject_unknown_metrics() {
        let t = tolerances(&["lost_refunds=2".into(), "executor_timeouts=-1".into()]).unwrap();
        assert_eq!(t.get("lost_refunds"), Some(&2.0));
        assert_eq!(t.get("executor_timeouts"), Some(&-1.0));
        assert_eq!(t.get("duplicate_refund_tickets"), Some(&0.0));
        let msg = parse_tolerance("dups=0").unwrap_err().to_string();
        assert!(
            msg.starts_with("--tolerance dups=0: unknown metric \"dups\""),
            "{msg}"
        );
        let msg = parse_tolerance("lost_refunds=x").unwrap_err().to_string();
        assert_eq!(
            msg,
            "--tolerance lost_refunds=x: expected a finite number after `=`, got \"x\""
        );
    }
}
