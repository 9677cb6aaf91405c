//! `refundsim fix` (issue 31 item 3): the smallest policy change that makes a scenario safe,
//! verified by simulation.
//!
//! The search is counterexample-guided, not a grid. It starts from the scenario as given and
//! verifies it the way the gate does (every seed of the set holds every safety invariant, then
//! a bounded `explore` finds nothing). A candidate that fails yields a counterexample: the first
//! violating ticket of the worst seed, or of the minimal world `explore` shrank. Its events show
//! the mechanisms at work ([`diagnose::Sign`]: a retry without a key, a human's dashboard
//! refund, a probe that said `none`, a call queued past the timeout…), and only the changes of
//! [`moves`] that act on one of them extend the candidate. Candidates are verified cheapest
//! first (A*: the number of fields changed, plus the user's `--cost` weights), so the first that
//! passes changes the fewest fields; the search goes on until the next alternatives are found or
//! none cheaper can remain. A change that moves no number (same counts on every seed, same
//! exploration) is not extended further. A candidate that passes a short exploration is
//! confirmed with the full one; if that finds something, its counterexample is expanded too.
//!
//! Limits: the changes are those [`moves`] knows (the stack's keys, probe, retries, timeouts,
//! pool, cancellation, humans, deliveries); a fix that needs another field (a different
//! provider, a new layer) is not found. The verdict is the gate's: the seed set and a bounded
//! exploration, not a proof.

pub mod diagnose;
pub mod moves;
mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::error::CliError;
use crate::gate::{check_bounds, explore_check, invariant_of, run_cases, Rule, SeedRange};
use crate::history::Keep;
use crate::run::{run_keeping, Invocation, RunReport};
use crate::scenario::{self, default_expect, ExpectSource, RunBudget, Scenario};

pub use diagnose::Sign;
pub use moves::Move;
pub use text::fix_text;

/// Most explore cases a candidate gets while the search runs; the answers are confirmed with
/// the full count (`--explore-cases`, default the scenario's `gate.explore_cases`).
pub const SEARCH_EXPLORE_CASES: u32 = 256;

/// Most candidates verified for alternatives once the first answer is found.
pub const ALTERNATIVES_BUDGET: usize = 30;

/// Exploration cases a candidate gets after its first seeds hold, before the other seeds.
pub const QUICK_EXPLORE_CASES: u32 = 64;

/// Seeds run at a time while the search verifies a candidate (see [`Evidence::stopped_early`]).
pub const SEED_CHUNK: usize = 8;

/// What `fix` searches and how far.
#[derive(Clone, Debug)]
pub struct FixOptions {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Policies applied first, in order (merge patches): the fix is searched on top of them.
    pub policies: Vec<PathBuf>,
    /// `PATH=VALUE` overrides applied after the policies.
    pub sets: Vec<String>,
    /// Seeds every candidate must hold on (default: `1..=gate.seeds`, as `check`).
    pub seeds: Option<SeedRange>,
    /// Exploration cases that confirm an answer (default: `gate.explore_cases`, as `check`).
    pub explore_cases: Option<u32>,
    /// `FIELD=WEIGHT` cost weights: a metric name (weight × its mean increase over the
    /// scenario as given, e.g. `latency_tool_call_p99_ms=0.001`) or a field path (weight × the
    /// change of a number, ms for a duration, e.g. `refunds_service.pool_size=0.5`; weight
    /// per change otherwise). Each changed field costs 1 besides.
    pub costs: Vec<String>,
    /// Alternatives to list after the cheapest answer (answers at most one field dearer).
    pub alternatives: usize,
    /// Most candidates to verify by simulation.
    pub max_candidates: usize,
    /// Run budget of each run.
    pub budget: RunBudget,
}

impl FixOptions {
    /// Options for `scenario` with the defaults: 3 alternatives, at most 80 candidates.
    pub fn new(scenario: PathBuf) -> FixOptions {
        FixOptions {
            scenario,
            policies: Vec::new(),
            sets: Vec::new(),
            seeds: None,
            explore_cases: None,
            costs: Vec::new(),
            alternatives: 3,
            max_candidates: 80,
            budget: RunBudget::default(),
        }
    }
}

/// One seed-set bound that failed.
#[derive(Clone, Debug, Serialize)]
pub struct MetricFailure {
    /// Metric name.
    pub metric: String,
    /// Seeds on which it failed, ascending.
    pub failing_seeds: Vec<u64>,
    /// Its value on each failing seed, in the same order.
    pub values: Vec<f64>,
}

/// What the exploration found.
#[derive(Clone, Debug, Serialize)]
pub struct ExploreSummary {
    /// Cases tried.
    pub cases: u32,
    /// The broken invariant, if any.
    pub found: Option<String>,
    /// Tickets in the minimal world found.
    pub tickets: Option<usize>,
    /// Why the search stopped early, if it did (inconclusive).
    pub aborted: Option<String>,
}

/// A counterexample: one violating ticket and the mechanisms its events show.
#[derive(Clone, Debug, Serialize)]
pub struct Counterexample {
    /// Where it comes from: `seed 3`, or `explore` (a minimal world).
    pub source: String,
    /// The broken invariant.
    pub invariant: String,
    /// The ticket.
    pub ticket: Option<u64>,
    /// What its events show.
    pub signs: Vec<Sign>,
    /// Its story, in the scenario's words.
    pub story: Vec<String>,
}

/// The verdict on one candidate, by simulation.
#[derive(Clone, Debug, Serialize)]
pub struct Evidence {
    /// Every seed holds every bound and the exploration found nothing.
    pub passed: bool,
    /// Seeds run.
    pub seeds: usize,
    /// The search stopped running seeds at the first chunk that failed a per-seed bound
    /// (`seeds` is then fewer than the seed set).
    pub stopped_early: bool,
    /// Bounds that failed on some seed (safety invariants, and any `expect` a policy states).
    pub failures: Vec<MetricFailure>,
    /// The exploration, when the seeds passed.
    pub explore: Option<ExploreSummary>,
    /// The counterexample the search extends from, when it failed.
    pub counterexample: Option<Counterexample>,
    /// Mean over the seeds of each metric a `--cost` weight names.
    pub means: BTreeMap<String, f64>,
}

/// A candidate the search verified: the changes, and what it found.
#[derive(Clone, Debug, Serialize)]
pub struct Tried {
    /// Its number, in the order verified (0: the scenario as given).
    pub id: usize,
    /// The candidate it extends, if any.
    pub parent: Option<usize>,
    /// Its changes, as `--set` arguments.
    pub changes: Vec<String>,
    /// Its cost (fields changed + weights).
    pub cost: f64,
    /// One line: passes, or what fails and the counterexample's signs.
    pub summary: String,
    /// The counterexample's story, for the steps on an answer's path (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub story: Vec<String>,
}

/// A verified answer.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    /// The changes, each with why.
    pub changes: Vec<Move>,
    /// Fields changed.
    pub fields: usize,
    /// Cost: fields changed, plus the `--cost` weights' parts.
    pub cost: f64,
    /// The parts of the cost beyond the field count, by weight name.
    pub cost_parts: BTreeMap<String, f64>,
    /// The merge patch (RFC 7396) that applies the changes.
    pub patch: Value,
    /// The full verification (all seeds, the full exploration).
    pub evidence: Evidence,
    /// How the search got here: the [`Tried`] ids from the scenario as given to this answer.
    pub path: Vec<usize>,
}

/// What `fix` found.
#[derive(Clone, Debug, Serialize)]
pub struct FixReport {
    /// Scenario name.
    pub scenario: String,
    /// Scenario file as given.
    pub scenario_path: String,
    /// Policies applied first.
    pub policies: Vec<String>,
    /// Overrides applied first.
    pub sets: Vec<String>,
    /// The seed set.
    pub seeds: Vec<u64>,
    /// Exploration cases that confirm an answer.
    pub explore_cases: u32,
    /// The seed set and the exploration are the gate's own (`gate.seeds`, `gate.explore_cases`):
    /// an answer is one `check SCENARIO --policy PATCH` accepts. False after `--seeds` or
    /// `--explore-cases`: the answer holds on what was asked only.
    pub gate_budget: bool,
    /// The scenario as given, verified.
    pub baseline: Evidence,
    /// The cheapest answer (`None` when the scenario is already safe, or none was found).
    pub fix: Option<Answer>,
    /// The next cheapest answers.
    pub alternatives: Vec<Answer>,
    /// Every candidate verified, in order.
    pub tried: Vec<Tried>,
    /// Why the search stopped without an answer, if it did.
    pub gave_up: Option<String>,
    /// The scenario's effect when it is not a refund: the text speaks of it. Not in the JSON,
    /// whose names are the documented ones.
    #[serde(skip)]
    pub effect: Option<crate::scenario::Effect>,
}

impl FixReport {
    /// The scenario holds as given, or an answer was found.
    pub fn ok(&self) -> bool {
        self.baseline.passed || self.fix.is_some()
    }
}

enum Weight {
    Metric(String, f64),
    Field(String, f64),
}

struct Search<'a> {
    opts: &'a FixOptions,
    seeds: Vec<u64>,
    full_cases: u32,
    weights: Vec<Weight>,
    baseline_means: BTreeMap<String, f64>,
    base_doc: Value,
}

/// Searches the policy changes that make `opts.scenario` safe (see the module docs).
///
/// # Errors
/// [`CliError`]: the scenario, a policy, a `--set` or a `--cost` is bad input (exit 2), or a
/// run goes past the budget.
pub fn fix(opts: &FixOptions) -> Result<FixReport, CliError> {
    let (sc, _) = scenario::load_with_expect_source(
        &opts.scenario,
        &opts.policies,
        &opts.sets,
        &opts.budget,
    )?;
    let seeds = match opts.seeds {
        Some(r) => r.seeds(),
        None => (1..=sc.gate.seeds).collect(),
    };
    let full_cases = opts.explore_cases.unwrap_or(sc.gate.explore_cases);
    let base_doc = serde_json::to_value(&sc).expect("a scenario serializes");
    let weights = parse_weights(&opts.costs, &base_doc)?;
    let mut search = Search {
        opts,
        seeds: seeds.clone(),
        full_cases,
        weights,
        baseline_means: BTreeMap::new(),
        base_doc,
    };
    let search_cases = full_cases.min(SEARCH_EXPLORE_CASES);
    let baseline = search.evaluate(&[], full_cases, true)?;
    search.baseline_means = baseline.means.clone();
    let mut report = FixReport {
        scenario: sc.name.clone(),
        scenario_path: opts.scenario.display().to_string(),
        policies: opts
            .policies
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        sets: opts.sets.clone(),
        seeds,
        explore_cases: full_cases,
        gate_budget: report_gate_budget(&sc, &search.seeds, full_cases),
        tried: vec![Tried {
            id: 0,
            parent: None,
            changes: Vec::new(),
            cost: 0.0,
            summary: text::summary(&baseline),
            story: Vec::new(),
        }],
        baseline: baseline.clone(),
        fix: None,
        alternatives: Vec::new(),
        gave_up: None,
        effect: Some(sc.effect()).filter(|e| !e.is_refund()),
    };
    if baseline.passed {
        return Ok(report);
    }

    // A*: candidates by cost known before simulation; among equal costs, the children of the
    // parent closest to holding first (seeds held, then fewest failing seeds), then the order
    // found.
    let mut frontier: Frontier = BTreeMap::new();
    let mut prints: BTreeSet<Fingerprint> = BTreeSet::new();
    let mut seen: BTreeSet<Vec<(String, String)>> = BTreeSet::new();
    let mut order = 0usize;
    let mut answers: Vec<Answer> = Vec::new();
    let mut candidates: BTreeMap<usize, Vec<Move>> = BTreeMap::new();
    let mut first_answer_at: Option<usize> = None;
    let root_print = fingerprint(&baseline);
    let mut expand = |parent: &[Move],
                      parent_id: usize,
                      ev: &Evidence,
                      print: Fingerprint,
                      frontier: &mut Frontier,
                      search: &Search<'_>|
     -> Result<(), CliError> {
        let Some(cx) = &ev.counterexample else {
            return Ok(());
        };
        let doc = search.doc_of(parent)?;
        let signs: BTreeSet<Sign> = cx.signs.iter().cloned().collect();
        for m in moves::moves(&doc, &signs) {
            if parent.iter().any(|p| p.path == m.path) {
                continue;
            }
            let mut child = parent.to_vec();
            child.push(m);
            child.sort();
            let key: Vec<(String, String)> = child
                .iter()
                .map(|m| (m.path.clone(), m.value.0.clone()))
                .collect();
            if !seen.insert(key) {
                continue;
            }
            let cost = search.static_cost(&child);
            frontier.insert(
                (scaled(cost), badness(ev), order),
                (child, parent_id, print.clone()),
            );
            order += 1;
        }
        Ok(())
    };
    expand(&[], 0, &baseline, root_print, &mut frontier, &search)?;

    while let Some(((lower, _, _), (cand, parent_id, parent_print))) = frontier.pop_first() {
        // Alternatives are answers at most one field dearer than the cheapest.
        let enough = answers.len() > opts.alternatives
            || first_answer_at.is_some_and(|at| report.tried.len() > at + ALTERNATIVES_BUDGET);
        if enough
            || answers
                .first()
                .is_some_and(|a| lower > scaled(a.cost + 1.0))
        {
            break;
        }
        if answers.iter().any(|a| is_subset(&a.changes, &cand)) {
            continue;
        }
        if report.tried.len() > opts.max_candidates {
            report.gave_up = Some(format!(
                "verified {} candidates (--max-candidates)",
                opts.max_candidates
            ));
            break;
        }
        let id = report.tried.len();
        candidates.insert(id, cand.clone());
        let mut ev = match search.evaluate(&cand, search_cases, false) {
            Ok(ev) => ev,
            // A combination the scenario format refuses (a field that needs another's value):
            // not a candidate.
            Err(CliError::Scenario(e)) => {
                report.tried.push(Tried {
                    id,
                    parent: Some(parent_id),
                    changes: cand.iter().map(Move::set_arg).collect(),
                    cost: search.static_cost(&cand),
                    summary: format!("not a valid scenario: {e}"),
                    story: Vec::new(),
                });
                continue;
            }
            Err(e) => return Err(e),
        };
        if ev.passed && search_cases < full_cases {
            ev = search.evaluate(&cand, full_cases, true)?;
        }
        let cost = search.cost(&cand, &ev);
        report.tried.push(Tried {
            id,
            parent: Some(parent_id),
            changes: cand.iter().map(Move::set_arg).collect(),
            cost,
            summary: text::summary(&ev),
            story: Vec::new(),
        });
        if ev.passed {
            let mut path = vec![id];
            let mut at = parent_id;
            while at != 0 {
                path.push(at);
                at = report.tried[at].parent.unwrap_or(0);
            }
            path.push(0);
            path.reverse();
            first_answer_at.get_or_insert(id);
            answers.push(search.answer(cand, ev, cost, path));
            answers.sort_by(|a, b| a.cost.total_cmp(&b.cost).then(a.fields.cmp(&b.fields)));
            continue;
        }
        let print = fingerprint(&ev);
        if print == parent_print || !prints.insert(print.clone()) {
            // The last change moved nothing (whatever fixes this candidate fixes its parent),
            // or a candidate no dearer already came to the very same runs and counterexample.
            continue;
        }
        expand(&cand, id, &ev, print, &mut frontier, &search)?;
    }
    if answers.is_empty() && report.gave_up.is_none() {
        report.gave_up = Some(
            "no change fix knows makes every seed and the exploration hold (docs/fix.md, Limits)"
                .into(),
        );
    }
    answers.truncate(opts.alternatives + 1);
    // The evidence of every step on an answer's path, over the whole seed set (the search
    // stopped at the first failing chunk).
    let steps: BTreeSet<usize> = answers
        .iter()
        .flat_map(|a| a.path.iter().copied())
        .filter(|&id| id != 0)
        .collect();
    for id in steps {
        let changes = candidates[&id].clone();
        let ev = search.evaluate(&changes, search_cases, true)?;
        if !ev.passed {
            report.tried[id].summary = text::summary(&ev);
            report.tried[id].story = ev.counterexample.map(|c| c.story).unwrap_or_default();
        }
    }
    let mut answers = answers.into_iter();
    report.fix = answers.next();
    report.alternatives = answers.collect();
    Ok(report)
}

/// Whether `seeds` and `cases` are what `check` uses for `sc`.
fn report_gate_budget(sc: &Scenario, seeds: &[u64], cases: u32) -> bool {
    let gate: Vec<u64> = (1..=sc.gate.seeds).collect();
    seeds == gate.as_slice() && cases == sc.gate.explore_cases
}

fn is_subset(small: &[Move], big: &[Move]) -> bool {
    small
        .iter()
        .all(|m| big.iter().any(|b| b.path == m.path && b.value == m.value))
}

/// Cost in millionths, for ordering.
fn scaled(cost: f64) -> u64 {
    (cost * 1e6).round().max(0.0) as u64
}

/// Candidates to verify, by (cost known before simulation ×10⁶, parent's badness, order found):
/// the changes, the parent's id and the parent's fingerprint.
type Frontier = BTreeMap<(u64, u64, usize), (Vec<Move>, usize, Fingerprint)>;

/// What a candidate's runs came to: per-seed counts of each failing bound, what the
/// exploration found, and the counterexample's story.
type Fingerprint = (
    Vec<(String, Vec<u64>, Vec<u64>)>,
    Option<ExploreKey>,
    Vec<String>,
);
type ExploreKey = (Option<String>, Option<usize>);

/// How far a failing candidate is from holding, lower is closer: the seeds held and only the
/// exploration broke something, else the share of the seeds run that failed.
///
/// A candidate whose seeds hold but whose exploration breaks counts as failing half its seeds:
/// a small world that breaks it is a hole of its own, not nearly closed.
fn badness(ev: &Evidence) -> u64 {
    match ev.failures.first() {
        None => 500,
        Some(f) => 1 + (f.failing_seeds.len() as u64 * 1000) / ev.seeds.max(1) as u64,
    }
}

fn fingerprint(ev: &Evidence) -> Fingerprint {
    (
        ev.failures
            .iter()
            .map(|f| {
                (
                    f.metric.clone(),
                    f.failing_seeds.clone(),
                    f.values.iter().map(|v| v.to_bits()).collect(),
                )
            })
            .collect(),
        ev.explore.as_ref().map(|e| (e.found.clone(), e.tickets)),
        ev.counterexample
            .as_ref()
            .map(|c| c.story.clone())
            .unwrap_or_default(),
    )
}

fn parse_weights(costs: &[String], doc: &Value) -> Result<Vec<Weight>, CliError> {
    let probe = crate::invariants::Metrics::default();
    costs
        .iter()
        .map(|c| {
            let bad = |why: &str| CliError::Input(format!("--cost {c}: {why}"));
            let (name, w) = c
                .split_once('=')
                .ok_or_else(|| bad("expected FIELD=WEIGHT, e.g. refunds_service.pool_size=0.5"))?;
            let w: f64 = w
                .trim()
                .parse()
                .ok()
                .filter(|w: &f64| w.is_finite() && *w >= 0.0)
                .ok_or_else(|| bad("the weight must be a number ≥ 0"))?;
            let name = name.trim();
            let canonical = crate::scenario::effect::canonical_metric(name).to_string();
            if probe.get(&canonical).is_some() {
                return Ok(Weight::Metric(canonical, w));
            }
            let path = crate::scenario::aliases::canonical_set_path(name);
            // A field `show` spells out, or one of a section it has (a layer's fields at their
            // defaults are left out).
            let parent = path.rsplit_once('.').map(|(p, _)| p);
            if moves::get(doc, &path).is_some()
                || parent.is_some_and(|p| moves::get(doc, p).is_some_and(Value::is_object))
            {
                return Ok(Weight::Field(path, w));
            }
            Err(bad(
                "not a metric (docs/report.md) nor a field of the scenario (a dotted path such as refunds_service.pool_size)",
            ))
        })
        .collect()
}

fn number_of(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| {
        v.as_str()
            .and_then(|s| humantime::parse_duration(s).ok())
            .map(|d| d.as_secs_f64() * 1000.0)
    })
}

impl Search<'_> {
    fn sets_of(&self, changes: &[Move]) -> Vec<String> {
        let mut sets = self.opts.sets.clone();
        sets.extend(changes.iter().map(Move::set_arg));
        sets
    }

    fn load(&self, changes: &[Move]) -> Result<Scenario, CliError> {
        let sets = self.sets_of(changes);
        let (mut sc, source) = scenario::load_with_expect_source(
            &self.opts.scenario,
            &self.opts.policies,
            &sets,
            &self.opts.budget,
        )?;
        // The gate's contract for a changed world: every safety invariant, plus any bound a
        // policy states; the scenario as given is held to the same (its own `expect` may
        // assert the incident's duplicates). A fix closes holes, so none is asserted.
        if source == ExpectSource::Scenario {
            let own = std::mem::take(&mut sc.expect);
            sc.expect = default_expect();
            for (k, b) in own {
                if !crate::scenario::SAFETY_METRICS.contains(&k.as_str()) && b.max.is_some() {
                    sc.expect.entry(k).or_insert(b);
                }
            }
        }
        sc.exploration.finds = None;
        Ok(sc)
    }

    /// The candidate's scenario as JSON, every field spelled out.
    fn doc_of(&self, changes: &[Move]) -> Result<Value, CliError> {
        if changes.is_empty() {
            return Ok(self.base_doc.clone());
        }
        Ok(serde_json::to_value(self.load(changes)?).expect("a scenario serializes"))
    }

    fn invocation(&self, changes: &[Move]) -> Invocation {
        Invocation::new(
            &self.opts.scenario,
            &self.opts.policies,
            &self.sets_of(changes),
        )
    }

    fn evaluate(
        &self,
        changes: &[Move],
        cases: u32,
        all_seeds: bool,
    ) -> Result<Evidence, CliError> {
        let sc = self.load(changes)?;
        let how = self.invocation(changes);
        // Seeds in chunks: a failing candidate needs one counterexample, not every seed, so
        // the search stops at the first chunk where a per-seed bound already fails (a bound
        // that fails on some seeds fails on all of them). `all_seeds` runs every one.
        let mut reports: Vec<RunReport> = Vec::new();
        let mut run_seeds: Vec<u64> = Vec::new();
        let mut checks = Vec::new();
        for chunk in self.seeds.chunks(SEED_CHUNK) {
            reports.extend(run_cases(&[(&sc, &how, chunk)], self.opts.budget, &())?);
            run_seeds.extend_from_slice(chunk);
            let refs: Vec<&RunReport> = reports.iter().collect();
            checks = check_bounds(&sc.expect, &refs);
            let surely_fails = checks.iter().any(|k| {
                !k.ok
                    && matches!(k.rule, Rule::Max | Rule::Conservation)
                    && k.allowed_fraction == 0.0
            });
            if surely_fails && !all_seeds {
                break;
            }
            // After the first chunk holds, a short exploration: its small worlds are cheaper
            // than the other seeds, and many candidates fail there.
            if !all_seeds && run_seeds.len() == chunk.len() && cases > 0 && !surely_fails {
                let ex = explore_check(&sc, &how, QUICK_EXPLORE_CASES.min(cases));
                if !ex.ok {
                    return Ok(self.explore_evidence(
                        ex,
                        run_seeds.len(),
                        true,
                        Vec::new(),
                        BTreeMap::new(),
                    ));
                }
            }
        }
        let stopped_early = run_seeds.len() < self.seeds.len();
        let mut means = BTreeMap::new();
        for w in &self.weights {
            if let Weight::Metric(name, _) = w {
                let total: f64 = reports
                    .iter()
                    .map(|r| r.metrics.get(name).unwrap_or(0.0))
                    .sum();
                means.insert(name.clone(), total / reports.len().max(1) as f64);
            }
        }
        let failures: Vec<MetricFailure> = checks
            .iter()
            .filter(|k| !k.ok)
            .map(|k| MetricFailure {
                metric: k.metric.clone(),
                failing_seeds: k.failing_seeds.clone(),
                values: k
                    .failing_seeds
                    .iter()
                    .map(|s| {
                        let i = run_seeds.iter().position(|x| x == s).unwrap_or(0);
                        reports[i].metrics.get(&k.metric).unwrap_or(f64::NAN)
                    })
                    .collect(),
            })
            .collect();
        if let Some(k) = checks.iter().find(|k| !k.ok) {
            // The counterexample: the failing seed's first ticket breaking the bound's
            // invariant (or the first broken safety invariant).
            let seed = k.seed;
            let i = run_seeds.iter().position(|x| *x == seed).unwrap_or(0);
            let m = &reports[i].metrics;
            let inv = invariant_of(&k.metric);
            let broken = m
                .invariants
                .iter()
                .find(|v| !v.holds && Some(v.name.as_str()) == inv)
                .or_else(|| {
                    m.invariants
                        .iter()
                        .find(|v| !v.holds && v.first_ticket.is_some())
                });
            let counterexample = broken.map(|v| {
                let (signs, story) = match v.first_ticket {
                    Some(t) => self.ticket_signs(&sc, seed, t),
                    None => (Vec::new(), Vec::new()),
                };
                Counterexample {
                    source: format!("seed {seed}"),
                    invariant: v.name.clone(),
                    ticket: v.first_ticket,
                    signs,
                    story,
                }
            });
            return Ok(Evidence {
                passed: false,
                seeds: run_seeds.len(),
                stopped_early,
                failures,
                explore: None,
                counterexample,
                means,
            });
        }
        if cases == 0 {
            return Ok(Evidence {
                passed: true,
                seeds: run_seeds.len(),
                stopped_early,
                failures,
                explore: None,
                counterexample: None,
                means,
            });
        }
        let ex = explore_check(&sc, &how, cases);
        Ok(self.explore_evidence(ex, run_seeds.len(), stopped_early, failures, means))
    }

    /// The evidence of a candidate whose seeds held, from its exploration.
    fn explore_evidence(
        &self,
        ex: crate::gate::ExploreCheck,
        seeds: usize,
        stopped_early: bool,
        failures: Vec<MetricFailure>,
        means: BTreeMap<String, f64>,
    ) -> Evidence {
        let counterexample = ex.found.as_ref().map(|f| {
            let (signs, story) = match f.ticket {
                Some(t) => self.ticket_signs(&f.minimal, f.minimal.seed, t),
                None => (Vec::new(), f.story.clone()),
            };
            Counterexample {
                source: format!(
                    "explore (a minimal world of {} ticket{})",
                    f.tickets,
                    if f.tickets == 1 { "" } else { "s" }
                ),
                invariant: f.invariant.clone(),
                ticket: f.ticket,
                signs,
                story,
            }
        });
        Evidence {
            passed: ex.ok,
            seeds,
            stopped_early,
            failures,
            explore: Some(ExploreSummary {
                cases: ex.cases,
                found: ex.found.as_ref().map(|f| f.invariant.clone()),
                tickets: ex.found.as_ref().map(|f| f.tickets),
                aborted: ex.aborted.clone(),
            }),
            counterexample,
            means,
        }
    }

    /// The signs and story of `ticket` in `sc` under `seed`.
    fn ticket_signs(&self, sc: &Scenario, seed: u64, ticket: u64) -> (Vec<Sign>, Vec<String>) {
        let out = run_keeping(sc, seed, &Invocation::default(), Keep::Ticket(ticket));
        let events: Vec<_> = out.history.ticket(ticket).collect();
        let signs = diagnose::signs(&events).into_iter().collect();
        let origin = sc
            .clock_origin
            .as_deref()
            .and_then(|s| humantime::parse_rfc3339(s).ok());
        let story = crate::analysis::story::for_scenario(
            sc,
            crate::analysis::story::story(&out.history, ticket, origin),
        );
        (signs, story)
    }

    /// The cost known before simulating: fields, and the field weights.
    fn static_cost(&self, changes: &[Move]) -> f64 {
        let mut cost = changes.len() as f64;
        for (_, part) in self.field_parts(changes) {
            cost += part;
        }
        cost
    }

    fn field_parts(&self, changes: &[Move]) -> Vec<(String, f64)> {
        let mut parts = Vec::new();
        for w in &self.weights {
            let Weight::Field(path, weight) = w else {
                continue;
            };
            for m in changes.iter().filter(|m| &m.path == path) {
                let old = moves::get(&self.base_doc, path).and_then(number_of);
                let new = number_of(&m.value.json());
                let part = match (old, new) {
                    (Some(o), Some(n)) => weight * (n - o).abs(),
                    _ => *weight,
                };
                parts.push((path.clone(), part));
            }
        }
        parts
    }

    fn metric_parts(&self, ev: &Evidence) -> Vec<(String, f64)> {
        self.weights
            .iter()
            .filter_map(|w| match w {
                Weight::Metric(name, weight) => {
                    let base = self.baseline_means.get(name).copied().unwrap_or(0.0);
                    let now = ev.means.get(name).copied().unwrap_or(base);
                    Some((name.clone(), weight * (now - base).max(0.0)))
                }
                Weight::Field(..) => None,
            })
            .collect()
    }

    fn cost(&self, changes: &[Move], ev: &Evidence) -> f64 {
        self.static_cost(changes) + self.metric_parts(ev).iter().map(|(_, p)| p).sum::<f64>()
    }

    fn answer(
        &self,
        changes: Vec<Move>,
        evidence: Evidence,
        cost: f64,
        path: Vec<usize>,
    ) -> Answer {
        let mut cost_parts = BTreeMap::new();
        for (k, v) in self
            .field_parts(&changes)
            .into_iter()
            .chain(self.metric_parts(&evidence))
        {
            *cost_parts.entry(k).or_insert(0.0) += v;
        }
        Answer {
            fields: changes.len(),
            cost,
            cost_parts,
            patch: patch_of(&changes, &self.seeds, self.full_cases),
            changes,
            evidence,
            path,
        }
    }
}

/// The merge patch that sets each change's field, with a `$comment` saying how it was verified.
pub fn patch_of(changes: &[Move], seeds: &[u64], cases: u32) -> Value {
    let explored = if cases == 0 {
        "no exploration (--explore-cases 0)".to_string()
    } else {
        format!("a {cases}-case exploration found nothing")
    };
    let mut doc = serde_json::json!({
        "$comment": format!(
            "refundsim fix: {} field{} changed; every safety invariant held on seeds {} and {explored}.",
            changes.len(),
            if changes.len() == 1 { "" } else { "s" },
            seed_text(seeds),
        )
    });
    for m in changes {
        let mut at = &mut doc;
        let segs: Vec<&str> = m.path.split('.').collect();
        for seg in &segs[..segs.len() - 1] {
            let obj = at.as_object_mut().expect("patch sections are objects");
            at = obj
                .entry(seg.to_string())
                .or_insert_with(|| Value::Object(Default::default()));
        }
        at.as_object_mut()
            .expect("patch sections are objects")
            .insert(segs[segs.len() - 1].to_string(), m.value.json());
    }
    doc
}

fn seed_text(seeds: &[u64]) -> String {
    match (seeds.first(), seeds.last()) {
        (Some(a), Some(b)) if seeds.len() as u64 == b - a + 1 => format!("{a}..{b}"),
        _ => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}
