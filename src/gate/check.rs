//! `refundsim check`: every scenario × policy × seed, in parallel, against each case's
//! `expect` bounds and the conservation invariant, plus a bounded `explore` of each case that
//! claims safety (or asserts a hole). Which `expect` a case has is [`scenario::load`]'s rule:
//! the scenario's own as written, the safety invariants (with the policy's bounds) once a policy
//! or `--set` changes the scenario.

use std::path::PathBuf;

use rayon::prelude::*;
use serde::Serialize;

use super::bounds::{check_bounds, invariant_of, BoundCheck, Rule};
use super::error::GateError;
use super::explore_check::{explore_check, explores, ExploreCheck};
use super::inputs::scenario_files;
use super::runs::run_cases;
use crate::check::INVARIANTS;
use crate::progress::Progress;
use crate::run::{run, Invocation, RunReport};
use crate::scenario::{self, ExpectSource, Scenario};
use crate::seeds::SeedRange;

/// What to check.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// Scenario files or directories (see [`scenario_files`]).
    pub scenarios: Vec<PathBuf>,
    /// Policies; each scenario runs bare and then under each policy, separately.
    pub policies: Vec<PathBuf>,
    /// `PATH=VALUE` overrides applied to every case after its policy (as `run --set`).
    pub sets: Vec<String>,
    /// Seeds; `None` runs each case on seeds `1..=gate.seeds` of its scenario (default 30).
    pub seeds: Option<SeedRange>,
    /// Cases of the bounded exploration of each case that claims safety or asserts a hole;
    /// `None` takes the scenario's `gate.explore_cases` (default 256), 0 turns it off.
    pub explore_cases: Option<u32>,
    /// The run budget each case is admitted against and each run is watched under.
    pub budget: scenario::RunBudget,
}

/// The verdict over every scenario × policy.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// One per scenario × policy, scenario-major, in argument order.
    pub cases: Vec<CaseReport>,
    /// Every case passed.
    pub passed: bool,
}

/// One scenario under one policy over its seeds.
#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    /// Scenario file as given.
    pub scenario_path: String,
    /// Scenario `name`.
    pub scenario: String,
    /// Policy file, or `None` for the scenario without a policy.
    pub policy: Option<String>,
    /// `--set` overrides applied after the policy, as given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<String>,
    /// Where the checked `expect` came from: the scenario's own, or (once the policy or a
    /// `--set` changes the scenario) the safety invariants and the policy's bounds.
    pub expect_source: ExpectSource,
    /// Seeds run, ascending.
    pub seeds: Vec<u64>,
    /// Each rule of each `expect` bound, plus the conservation invariant.
    pub checks: Vec<BoundCheck>,
    /// Each invariant of DESIGN §3 with the number of seeds that violate it (reported, not
    /// gated, except `conservation`).
    pub invariants: Vec<InvariantCount>,
    /// One per failing check: how to see and replay it.
    pub violations: Vec<Violation>,
    /// The bounded exploration, when the case claims safety or asserts a hole and it is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explore: Option<ExploreCheck>,
    /// The case would be explored but the exploration is off (`--explore-cases 0` or the
    /// scenario's `gate.explore_cases` 0): its safety rests on the seeds alone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub explore_off: bool,
    /// Every check holds (and the exploration's verdict, when there is one).
    pub passed: bool,
    /// The scenario's effect when it is not a refund: the text output speaks of it
    /// ([`Effect::say`](crate::scenario::Effect::say)). Not in the JSON, whose names are the
    /// documented ones.
    #[serde(skip)]
    pub effect: Option<crate::scenario::Effect>,
}

impl CaseReport {
    /// The policy and `--set`s as reports show them: `policies/fixed.json`, `no policy`,
    /// `no policy --set executor.timeout=15s`.
    pub fn variant(&self) -> String {
        let mut v = self.policy.as_deref().unwrap_or("no policy").to_string();
        for set in &self.sets {
            v.push_str(" --set ");
            v.push_str(set);
        }
        v
    }
}

/// An invariant and how many seeds violate it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InvariantCount {
    /// Invariant name.
    pub name: String,
    /// Seeds on which it was violated.
    pub violating_seeds: u64,
}

/// A failing check, with the story of its first offending ticket and the replay command.
#[derive(Clone, Debug, Serialize)]
pub struct Violation {
    /// Metric.
    pub metric: String,
    /// The rule, as text (`≤ 0 per seed`, `mean ≤ 2`).
    pub rule: String,
    /// The seed shown: the worst failing seed (the first on ties), or the worst one for an
    /// aggregate.
    pub seed: u64,
    /// Per-seed rules: how many seeds break it; aggregates: 0.
    pub failing_seeds: usize,
    /// Seeds run.
    pub seeds: usize,
    /// The metric on that seed.
    pub value: f64,
    /// Aggregate rules (`mean ≥ 20`, `p90 ≤ 9000`): the mean or p90 over the seeds that the
    /// rule was checked on; absent for per-seed rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<f64>,
    /// The offending ticket, when the metric counts tickets that break an invariant.
    pub ticket: Option<u64>,
    /// That ticket's story (empty without a ticket).
    pub story: Vec<String>,
    /// `refundsim run …` that replays the seed.
    pub replay: String,
}

impl Violation {
    /// One line for a CI page, the same in `check`'s text, its JUnit `message` and `diff`'s
    /// reason: the rule, on how many of the seeds run it failed, and the worst seed with its
    /// value: `duplicate_refund_tickets ≤ 0 per seed failed on 4 of 30 seeds; worst seed 28:
    /// 3`; for an aggregate rule its value over the seeds instead of a count, `… mean ≥ 20
    /// failed: mean 12.5 over 30 seeds; worst seed 4: 0`.
    pub fn headline(&self) -> String {
        // Values in the metric's unit (cents as dollars).
        let fmt = |v: f64| super::text::shown(super::unit_of(&self.metric), v);
        let seeds = crate::text::plural(self.seeds, "seed", "seeds");
        let worst = format!("worst seed {}: {}", self.seed, fmt(self.value));
        match self.aggregate {
            Some(a) => {
                let what = self.rule.split(' ').next().unwrap_or("value");
                format!(
                    "{} {} failed: {what} {} over {seeds}; {worst}",
                    self.metric,
                    self.rule,
                    fmt(a)
                )
            }
            None => format!(
                "{} {} failed on {} of {seeds}; {worst}",
                self.metric, self.rule, self.failing_seeds
            ),
        }
    }
}

struct Case {
    path: PathBuf,
    policy: Option<PathBuf>,
    sets: Vec<String>,
    scenario: Scenario,
    expect_source: ExpectSource,
    seeds: Vec<u64>,
    explore_cases: u32,
}

impl Case {
    fn invocation(&self) -> Invocation {
        Invocation::new(&self.path, &self.policy, &self.sets)
    }
}

/// Loads every case (any bad input is an error before anything runs), runs every seed in
/// parallel, and checks. The result does not depend on the number of threads: runs are
/// collected in input order.
pub fn check(opts: &CheckOptions) -> Result<CheckReport, GateError> {
    check_with_progress(opts, &())
}

/// [`check`], telling `progress` the number of runs and each finished run. The report is
/// exactly [`check`]'s.
pub fn check_with_progress(
    opts: &CheckOptions,
    progress: &dyn Progress,
) -> Result<CheckReport, GateError> {
    let cases = load_cases(opts)?;
    let hows: Vec<Invocation> = cases.iter().map(Case::invocation).collect();
    let runs: Vec<_> = cases
        .iter()
        .zip(&hows)
        .map(|(c, how)| (&c.scenario, how, c.seeds.as_slice()))
        .collect();
    let reports = run_cases(&runs, opts.budget, progress)?;
    let explored: Vec<Option<ExploreCheck>> = cases
        .par_iter()
        .map(|c| {
            (c.explore_cases > 0 && explores(&c.scenario))
                .then(|| explore_check(&c.scenario, &c.invocation(), c.explore_cases))
        })
        .collect();
    let mut next = 0;
    let cases: Vec<CaseReport> = cases
        .iter()
        .zip(explored)
        .map(|(c, explore)| {
            let runs: Vec<&RunReport> = reports[next..next + c.seeds.len()].iter().collect();
            next += c.seeds.len();
            case_report(c, &runs, explore)
        })
        .collect();
    Ok(CheckReport {
        passed: cases.iter().all(|c| c.passed),
        cases,
    })
}

fn load_cases(opts: &CheckOptions) -> Result<Vec<Case>, GateError> {
    let mut cases = Vec::new();
    for path in scenario_files(&opts.scenarios)? {
        let policies = std::iter::once(None).chain(opts.policies.iter().cloned().map(Some));
        for policy in policies {
            let (scenario, expect_source) = scenario::load_with_expect_source(
                &path,
                policy.as_slice(),
                &opts.sets,
                &opts.budget,
            )?;
            let seeds = match opts.seeds {
                Some(r) => r.seeds(),
                None => (1..=scenario.gate.seeds).collect(),
            };
            let explore_cases = opts.explore_cases.unwrap_or(scenario.gate.explore_cases);
            cases.push(Case {
                path: path.clone(),
                policy,
                sets: opts.sets.clone(),
                scenario,
                expect_source,
                seeds,
                explore_cases,
            });
        }
    }
    Ok(cases)
}

fn case_report(c: &Case, runs: &[&RunReport], explore: Option<ExploreCheck>) -> CaseReport {
    let checks = check_bounds(&c.scenario.expect, runs);
    let violations = checks
        .iter()
        .filter(|k| !k.ok)
        .map(|k| violation(c, k))
        .collect();
    let invariants = INVARIANTS
        .iter()
        .map(|&name| InvariantCount {
            name: name.to_string(),
            violating_seeds: runs
                .iter()
                .filter(|r| {
                    r.metrics
                        .invariants
                        .iter()
                        .any(|i| i.name == name && !i.holds)
                })
                .count() as u64,
        })
        .collect();
    CaseReport {
        scenario_path: c.path.display().to_string(),
        scenario: c.scenario.name.clone(),
        policy: c.policy.as_ref().map(|p| p.display().to_string()),
        sets: c.sets.clone(),
        expect_source: c.expect_source,
        seeds: c.seeds.clone(),
        passed: checks.iter().all(|k| k.ok) && explore.as_ref().is_none_or(|e| e.ok),
        checks,
        invariants,
        violations,
        explore_off: explore.is_none() && explores(&c.scenario),
        explore,
        effect: Some(c.scenario.effect()).filter(|e| !e.is_refund()),
    }
}

/// Replays the check's seed to find its first offending ticket and tell its story.
fn violation(c: &Case, k: &BoundCheck) -> Violation {
    let how = c.invocation();
    let out = run(&c.scenario, k.seed, &how);
    let too_high = !matches!(k.rule, Rule::Min | Rule::MeanMin);
    let ticket = invariant_of(&k.metric)
        .filter(|_| too_high)
        .and_then(|inv| {
            out.report
                .metrics
                .invariants
                .iter()
                .find(|i| i.name == inv)
                .and_then(|i| i.first_ticket)
        });
    let origin = c
        .scenario
        .clock_origin
        .as_deref()
        .and_then(|s| humantime::parse_rfc3339(s).ok());
    Violation {
        metric: k.metric.clone(),
        rule: k.describe(),
        seed: k.seed,
        value: out.report.metrics.get(&k.metric).unwrap_or(f64::NAN),
        aggregate: matches!(k.rule, Rule::MeanMin | Rule::MeanMax | Rule::P90Max)
            .then_some(k.value),
        story: ticket
            .map(|t| {
                crate::analysis::story::for_scenario(
                    &c.scenario,
                    crate::run::story_of(&c.scenario, k.seed, t, origin),
                )
            })
            .unwrap_or_default(),
        ticket,
        replay: how.command(k.seed),
        failing_seeds: k.failing_seeds.len(),
        seeds: c.seeds.len(),
    }
}
