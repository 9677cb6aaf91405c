//! `refundsim diff`: a baseline policy against a candidate on the same seeds (common random
//! numbers), per metric: both means, the mean paired difference with its 95 % t interval, and a
//! tolerance on the mean difference; and whether the candidate is safe in itself (the safety
//! invariants on each of its seeds, and a bounded `explore` of its world), which fails the diff
//! unless `--allow-unsafe`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rayon::prelude::*;
use serde::Serialize;

use super::bounds::invariant_of;
use super::error::GateError;
use super::explore_check::{explore_check, ExploreCheck};
use super::inputs::scenario_files;
use super::runs::run_cases;
use super::units::unit_of;
use crate::analysis::stats::{mean, paired, welch, Interval};
use crate::progress::Progress;
use crate::run::{Invocation, RunReport};
use crate::scenario::{self, Scenario, METRICS, SAFETY_METRICS};
use crate::seeds::SeedRange;

/// Tolerances applied when `--tolerance` does not name the metric: no increase (mean paired
/// difference ≤ 0) in duplicated tickets, lost refunds or false failures.
pub(crate) const DEFAULT_TOLERANCES: &[(&str, f64)] = &[
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
    /// Seeds (both sides, paired); `None`: `1..=gate.seeds` of the first scenario as the
    /// baseline loads it (30 unless set).
    pub seeds: Option<SeedRange>,
    /// Other seeds for the candidate: an unpaired comparison (Welch), to measure what pairing
    /// buys. Default: the same seeds, paired.
    pub candidate_seeds: Option<SeedRange>,
    /// `METRIC=VALUE` tolerances on the mean difference (candidate − baseline), over the
    /// defaults ([`DEFAULT_TOLERANCES`]).
    pub tolerances: Vec<String>,
    /// `PATH=VALUE` overrides applied to both sides after their policy (as `run --set`).
    pub sets: Vec<String>,
    /// Do not fail when the candidate is unsafe in itself (a safety invariant broken on a seed
    /// or by the exploration): report it only, and let the comparison alone decide. Default:
    /// a candidate that claims safety (see [`ScenarioDiff::candidate_claims_safety`]) and is
    /// unsafe fails the diff.
    pub allow_unsafe: bool,
    /// Fail when the candidate is unsafe in itself even if its `expect` states what it leaves
    /// open (the behaviour of `--require-safe` before it became the default for candidates
    /// that claim safety).
    pub require_safe: bool,
    /// Cases of the bounded exploration of the candidate; `None` takes the scenario's
    /// `gate.explore_cases` (default 256), 0 turns it off.
    pub explore_cases: Option<u32>,
    /// The run budget each side is admitted against and each run is watched under.
    pub budget: scenario::RunBudget,
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
    /// No tolerance exceeded, and (without `allow_unsafe`) every candidate safe.
    pub passed: bool,
    /// Why the diff failed, one line (`candidate unsafe: …`, `duplicate_refund_tickets: mean
    /// difference 2.1 > tolerance 0; worst seed 28`); `None` when it passed.
    pub reason: Option<String>,
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
    /// The gate's bounded exploration of the candidate, when on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_explore: Option<ExploreCheck>,
    /// The candidate breaks no safety invariant on any seed, nor in the exploration.
    pub candidate_safe: bool,
    /// The candidate's own `expect` (as `check` would apply it) bounds every safety metric at
    /// 0 and asserts no hole (`exploration.finds`): its unsafety then fails the diff. A
    /// candidate that states what it leaves open (`policies/key-only.json`) is judged by the
    /// comparison alone, its unsafety reported.
    pub candidate_claims_safety: bool,
    /// No tolerance exceeded, and the candidate safe when it claims to be (unless
    /// `allow_unsafe`).
    pub passed: bool,
    /// The scenario's effect when it is not a refund: the text output speaks of it. Not in
    /// the JSON.
    #[serde(skip)]
    pub effect: Option<crate::scenario::Effect>,
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
    /// The seed with the largest value of the metric, and that value (when any seed breaks).
    pub worst: Option<(u64, f64)>,
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
    /// When not ok: that seed's value, in the metric's unit: paired, its increase over the
    /// baseline on the same seed; unpaired, the candidate's value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst_value: Option<f64>,
    /// Whether the seeds were paired (the same seeds on both sides): how to read `worst_value`.
    #[serde(skip)]
    pub paired: bool,
}

/// Parses `METRIC=VALUE` (a metric of `METRICS`, a finite number).
pub(crate) fn parse_tolerance(arg: &str) -> Result<(String, f64), GateError> {
    let err = |message: String| GateError::Tolerance {
        arg: arg.to_string(),
        message,
    };
    let (m, v) = arg
        .split_once('=')
        .ok_or_else(|| err("expected METRIC=VALUE, e.g. duplicate_refund_tickets=0".into()))?;
    // An effect-neutral alias (`duplicate_effect_tickets`) names the same metric.
    let m = crate::scenario::effect::canonical_metric(m);
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

/// One side of one scenario's comparison: the scenario under the baseline or the candidate
/// policy, and the seeds it runs.
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
    let files = scenario_files(&opts.scenarios)?;
    let mut loaded: Vec<(Scenario, Scenario)> = Vec::new();
    for path in &files {
        let side = |policy: &PathBuf| {
            scenario::load_within(path, std::slice::from_ref(policy), &opts.sets, &opts.budget)
        };
        loaded.push((side(&opts.baseline)?, side(&opts.candidate)?));
    }
    let (seeds, cseeds) = seed_ranges(opts, &loaded)?;
    let paired_seeds = cseeds == seeds;
    // Baseline then candidate, scenario by scenario: side 2k is scenario k's baseline.
    let mut sides: Vec<Side> = Vec::new();
    for (path, (b, c)) in files.iter().zip(loaded) {
        for (policy, seeds, scenario) in [(&opts.baseline, seeds, b), (&opts.candidate, cseeds, c)]
        {
            sides.push(Side {
                scenario,
                how: Invocation {
                    scenario_path: path.display().to_string(),
                    policies: vec![policy.display().to_string()],
                    sets: opts.sets.clone(),
                },
                seeds: seeds.seeds(),
            });
        }
    }
    let runs: Vec<_> = sides
        .iter()
        .map(|s| (&s.scenario, &s.how, s.seeds.as_slice()))
        .collect();
    let mut reports = run_cases(&runs, opts.budget, progress)?;
    let explored = explore_candidates(opts, &sides);
    let mut scenarios = Vec::new();
    for (k, path) in files.iter().enumerate() {
        let (baseline, candidate) = (&sides[2 * k], &sides[2 * k + 1]);
        let rest = reports.split_off(baseline.seeds.len() + candidate.seeds.len());
        let (b, c) = reports.split_at(baseline.seeds.len());
        let metrics = METRICS
            .iter()
            .map(|m| metric_diff(m, b, c, paired_seeds, tol.get(*m).copied(), &candidate.how))
            .collect::<Vec<_>>();
        let explore = explored[k].clone();
        scenarios.push(scenario_diff(opts, path, metrics, c, candidate, explore));
        reports = rest;
    }
    let reason = scenarios
        .iter()
        .find(|s| !s.passed)
        .map(|s| failure_reason(s, opts.allow_unsafe, opts.require_safe));
    Ok(DiffReport {
        baseline: opts.baseline.display().to_string(),
        candidate: opts.candidate.display().to_string(),
        sets: opts.sets.clone(),
        seeds: seeds.to_string(),
        candidate_seeds: cseeds.to_string(),
        paired: paired_seeds,
        passed: scenarios.iter().all(|s| s.passed),
        reason,
        scenarios,
    })
}

/// The baseline's seeds and the candidate's: `--seeds` (without it, `1..=gate.seeds` of the
/// first scenario as the baseline loads it) and `--candidate-seeds` (without it, the same).
/// Each needs at least two seeds, for a sample variance.
fn seed_ranges(
    opts: &DiffOptions,
    loaded: &[(Scenario, Scenario)],
) -> Result<(SeedRange, SeedRange), GateError> {
    let seeds = opts.seeds.unwrap_or_else(|| SeedRange {
        first: 1,
        last: loaded.first().map_or(30, |(b, _)| b.gate.seeds),
    });
    let cseeds = opts.candidate_seeds.unwrap_or(seeds);
    // A 95 % interval needs a sample variance: at least two seeds on each side.
    for (flag, r) in [("--seeds", seeds), ("--candidate-seeds", cseeds)] {
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
    Ok((seeds, cseeds))
}

/// The gate's bounded exploration of each scenario's candidate (side 2k + 1 of `sides`), one
/// search per scenario in parallel, collected in order: `None` when it is off (0 cases) or
/// the candidate neither claims safety nor is required to be safe. The candidate is explored
/// in itself: for the safety property, whatever hole it asserts.
fn explore_candidates(opts: &DiffOptions, sides: &[Side]) -> Vec<Option<ExploreCheck>> {
    (0..sides.len() / 2)
        .into_par_iter()
        .map(|k| {
            let side = &sides[2 * k + 1];
            let cases = opts
                .explore_cases
                .unwrap_or(side.scenario.gate.explore_cases);
            (cases > 0 && (claims(&side.scenario) || opts.require_safe)).then(|| {
                let mut sc = side.scenario.clone();
                sc.exploration.finds = None;
                explore_check(&sc, &side.how, cases)
            })
        })
        .collect()
}

/// Scenario `path`'s comparison from its `metrics` and the candidate's side (`candidate`,
/// its runs `c` and its exploration): whether the candidate is safe in itself, and whether
/// the scenario passes (no tolerance exceeded, and the candidate safe when it claims to be or
/// `--require-safe` asks, unless `--allow-unsafe`).
fn scenario_diff(
    opts: &DiffOptions,
    path: &std::path::Path,
    metrics: Vec<MetricDiff>,
    c: &[RunReport],
    candidate: &Side,
    candidate_explore: Option<ExploreCheck>,
) -> ScenarioDiff {
    let candidate_safety = safety(c, &candidate.how);
    let candidate_safe = candidate_safety.iter().all(|s| s.violating_seeds == 0)
        && candidate_explore.as_ref().is_none_or(|e| e.ok);
    let candidate_claims_safety = claims(&candidate.scenario);
    let gated = (candidate_claims_safety || opts.require_safe) && !opts.allow_unsafe;
    ScenarioDiff {
        scenario_path: path.display().to_string(),
        passed: metrics.iter().all(|m| m.ok) && (candidate_safe || !gated),
        metrics,
        candidate_safety,
        candidate_explore,
        candidate_safe,
        candidate_claims_safety,
        effect: Some(candidate.scenario.effect()).filter(|e| !e.is_refund()),
    }
}

/// Whether the candidate claims safety: its `expect` bounds every safety metric at 0 and it
/// asserts no hole.
fn claims(sc: &Scenario) -> bool {
    sc.exploration.finds.is_none() && super::explore_check::claims_safety(&sc.expect)
}

/// Why `s` failed, one line: the candidate's safety first (when gated), then the first
/// tolerance exceeded.
fn failure_reason(s: &ScenarioDiff, allow_unsafe: bool, require_safe: bool) -> String {
    if !s.candidate_safe && !allow_unsafe && (s.candidate_claims_safety || require_safe) {
        let seeds = s
            .candidate_safety
            .iter()
            .filter(|c| c.violating_seeds > 0)
            .map(|c| {
                let worst = c
                    .worst
                    .map(|(seed, v)| format!("; worst seed {seed}: {}", super::fmt_num(v)))
                    .unwrap_or_default();
                // Worded as `check`'s headline ([`super::Violation::headline`]): the rule,
                // on how many of the seeds run it failed, the worst seed and its value.
                format!(
                    "{} ≤ 0 failed on {} of {}{worst}",
                    c.metric,
                    c.violating_seeds,
                    crate::text::plural(c.seeds as usize, "seed", "seeds")
                )
            })
            .next();
        let explored = s
            .candidate_explore
            .as_ref()
            .filter(|e| !e.ok)
            .map(|e| e.headline());
        let what: Vec<String> = seeds.into_iter().chain(explored).collect();
        return format!(
            "{}: candidate unsafe: {} (--allow-unsafe to compare anyway)",
            s.scenario_path,
            what.join("; ")
        );
    }
    match s.metrics.iter().find(|m| !m.ok) {
        Some(m) => format!(
            "{}: {} mean difference {} > tolerance {}{}",
            s.scenario_path,
            m.metric,
            super::fmt_num(m.difference.mean),
            super::fmt_num(m.tolerance.unwrap_or(0.0)),
            m.worst
                .as_ref()
                .map(|(seed, _)| format!("; worst seed {seed}{}", m.worst_text()))
                .unwrap_or_default()
        ),
        None => format!("{}: failed", s.scenario_path),
    }
}

/// The safety invariants ([`SAFETY_METRICS`], the default `expect`) over the candidate's runs.
fn safety(c: &[RunReport], candidate: &Invocation) -> Vec<SafetyCount> {
    SAFETY_METRICS
        .iter()
        .map(|&metric| {
            let val = |r: &RunReport| r.metrics.get(metric).unwrap_or(0.0);
            let broken: Vec<u64> = c.iter().filter(|r| val(r) > 0.0).map(|r| r.seed).collect();
            let worst =
                c.iter()
                    .filter(|r| val(r) > 0.0)
                    .fold(None, |best: Option<(u64, f64)>, r| match best {
                        Some((_, b)) if b >= val(r) => best,
                        _ => Some((r.seed, val(r))),
                    });
            SafetyCount {
                invariant: invariant_of(metric).unwrap_or(metric).to_string(),
                metric: metric.to_string(),
                violating_seeds: broken.len() as u64,
                seeds: c.len() as u64,
                first: broken.first().map(|&s| (s, candidate.command(s))),
                worst,
            }
        })
        .collect()
}

impl MetricDiff {
    /// The worst seed's value as text read after `worst seed N`: `: +17 over the baseline`
    /// (paired), `: 17` (unpaired), in the metric's unit; empty without one.
    pub fn worst_text(&self) -> String {
        match self.worst_value {
            Some(v) if self.paired => {
                let sign = if v >= 0.0 { "+" } else { "" };
                format!(
                    ": {sign}{} over the baseline",
                    super::text::shown(self.unit, v)
                )
            }
            Some(v) => format!(": {}", super::text::shown(self.unit, v)),
            None => String::new(),
        }
    }
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
    let worst_index = (!ok).then(|| {
        (0..effect.len()).fold(0, |best, i| if effect[i] > effect[best] { i } else { best })
    });
    let worst = worst_index.map(|i| (c[i].seed, candidate.command(c[i].seed)));
    let worst_value = worst_index.and_then(|i| effect.get(i).copied());
    MetricDiff {
        metric: metric.to_string(),
        unit: unit_of(metric),
        baseline_mean: mean(&bv),
        candidate_mean: mean(&cv),
        difference,
        tolerance,
        ok,
        worst,
        worst_value,
        paired: paired_seeds,
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
