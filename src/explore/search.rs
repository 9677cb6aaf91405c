//! `refundsim explore`: perturb a scenario within stated bounds with proptest's `TestRunner`,
//! shrink a failure, and produce a minimal scenario that `refundsim run` replays.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use super::strategy::{layer_draw, layer_json, layer_names, Case, LayerDraw};
use super::{check_case, first_violation, Violation};
use crate::run::{run_watched, Invocation};
use crate::scenario::MAX_TRIES_PER_TOOL_CALL;
use crate::scenario::{default_expect, stack_of, RetryLayer, Scenario, TicketSpec, TieBreakConfig};
use crate::scenario::{OverBudget, RunWatch};

/// Options of one exploration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExploreOptions {
    /// Cases to try before concluding nothing was found.
    pub cases: u32,
    /// Seed of the search (proptest's generator); same seed ⇒ same cases, same minimal scenario.
    pub seed: u64,
    /// Near-tie window for the tie-break.
    pub epsilon: Duration,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            cases: 256,
            seed: 1,
            epsilon: Duration::ZERO,
        }
    }
}

/// What an exploration found.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// A violation; `minimal` is the shrunk scenario, `violation` what it breaks when run.
    Found {
        /// The shrunk scenario (tickets, tie-break seed and latencies fixed), ready to save.
        minimal: Box<Scenario>,
        /// What `minimal` violates.
        violation: Violation,
    },
    /// No violation in `cases` cases.
    NotFound {
        /// Cases tried.
        cases: u32,
    },
    /// The search stopped before trying `cases` cases (proptest aborted it, e.g. too many
    /// generated worlds rejected): inconclusive, whatever it saw.
    Aborted {
        /// Cases tried before it stopped.
        tried: u32,
        /// Cases asked for.
        cases: u32,
        /// Why it stopped (proptest's reason).
        reason: String,
    },
}

/// The bounds `explore` perturbs a scenario within, as its `exploration` section states them
/// (the defaults in brackets): 1 to `max_tickets` [30] recorded tickets arriving within
/// `arrival_window` [the first 60 s] (often at the same instant) with amounts of $1–$500 and charges 1–4× the amount; Stripe latencies from 1–4
/// choices among its p50, its p99, the executor timeout, ±1 ms around it, or 10 ms–40 s; a pool
/// of 1 up to the scenario's size; background load from 0 up to the scenario's rate; each fault
/// at the scenario's probability, off, or up to `fault_probability_max` [0.5]; a tie-break
/// seed; and, with `add_layers` [true], each with probability 0.35 (shrinking toward none), an
/// added framework `retry` layer under `model_retry` and a
/// `proxy` layer above `refunds_service` (knobs as in [`super::strategy::world`], except that
/// an added layer cancels as the scenario's executor does: cancellation is the deployment's
/// choice, part of the policy under test). A layer whose name the scenario already uses, or
/// that would take the stack past [`MAX_TRIES_PER_TOOL_CALL`], is not added. Everything else —
/// the policy under test — is kept.
pub fn perturbed(base: &Scenario, epsilon: Duration) -> impl Strategy<Value = Case> {
    let base = base.clone();
    let bounds = &base.exploration;
    let (fmax, add_layers) = (bounds.fault_probability_max, bounds.add_layers);
    let f = &base.stripe.faults;
    (
        prop::collection::vec(ticket_draw(&base), 1..=bounds.max_tickets as usize),
        prop::collection::vec(stripe_latency_ms(&base), 1..=4),
        1u32..=base.refunds_service.pool_size.max(1),
        0.0f64..=1.0,
        (
            fault_probability(f.error_500_after_commit, fmax),
            fault_probability(f.response_lost_after_commit, fmax),
            fault_probability(f.lock_timeout, fmax),
        ),
        any::<u64>(),
        (added_layer(add_layers), added_layer(add_layers)),
    )
        .prop_map(move |(tickets, lat, pool, bg, faults, tie, added)| {
            let drawn = Drawn {
                tickets,
                lat,
                pool,
                bg,
                faults,
                tie,
                added,
            };
            Case {
                scenario: drawn.world(&base, epsilon),
            }
        })
}

/// One Stripe latency choice, ms: the scenario's p50 or p99, its executor timeout, 1 ms
/// either side of it, or anything from 10 ms to 40 s.
fn stripe_latency_ms(base: &Scenario) -> impl Strategy<Value = u64> {
    let timeout = base.executor.timeout.as_millis() as u64;
    let p50 = base.stripe.latency.median().as_millis() as u64;
    let p99 = base.stripe.latency.p99().as_millis() as u64;
    prop_oneof![
        Just(p50.max(1)),
        Just(p99.max(1)),
        Just(timeout),
        Just(timeout.saturating_sub(1).max(1)),
        Just(timeout + 1),
        10u64..=40_000
    ]
}

/// One recorded ticket: (opened at, ms: at 0, on a whole second up to 3 s, or anywhere in the
/// arrival window; amount, cents: $1–$500; the charge as tenths of the amount: 10 to 40).
fn ticket_draw(base: &Scenario) -> impl Strategy<Value = (u64, u64, u64)> {
    let window = (base.exploration.arrival_window.as_millis() as u64).max(1);
    let at = prop_oneof![
        Just(0u64),
        (0u64..4).prop_map(move |k| (k * 1000).min(window)),
        0u64..=window
    ];
    (at, 100u64..=50_000, prop_oneof![Just(10u64), 10u64..=40])
}

/// A fault's probability: the scenario's `p`, off, or (when `fmax` is above 0) up to `fmax`.
fn fault_probability(p: f64, fmax: f64) -> BoxedStrategy<f64> {
    if fmax > 0.0 {
        prop_oneof![Just(p), Just(0.0), 0.0f64..fmax].boxed()
    } else {
        prop_oneof![Just(p), Just(0.0)].boxed()
    }
}

/// An added layer with probability 0.35 (shrinking toward none) when `add_layers`, else none.
fn added_layer(add_layers: bool) -> BoxedStrategy<Option<LayerDraw>> {
    if add_layers {
        prop::option::weighted(0.35, layer_draw()).boxed()
    } else {
        Just(None).boxed()
    }
}

/// What [`perturbed`] drew for one case.
struct Drawn {
    /// Per ticket: (opened at, ms; amount, cents; charge, tenths of the amount).
    tickets: Vec<(u64, u64, u64)>,
    /// Stripe's latency choices, ms.
    lat: Vec<u64>,
    /// Pool size.
    pool: u32,
    /// The share of the scenario's background load kept, 0 to 1.
    bg: f64,
    /// Probabilities of a 500 after commit, a response lost after commit, a lock timeout.
    faults: (f64, f64, f64),
    /// The tie-break seed.
    tie: u64,
    /// An added framework `retry` layer and an added `proxy` layer.
    added: (Option<LayerDraw>, Option<LayerDraw>),
}

impl Drawn {
    /// `base` with what was drawn: its recorded tickets over a 120 s horizon, Stripe's latency
    /// choices and faults, the pool, the background load (kept under 90 % of the pool), the
    /// tie-break (near ties within `epsilon`), the added layers; no reconciliation, and the
    /// safety invariants as its `expect`.
    fn world(&self, base: &Scenario, epsilon: Duration) -> Scenario {
        let mut s = base.clone();
        s.name = format!("{}-explored", base.name);
        s.horizon = Duration::from_secs(120);
        s.arrivals.tickets = self
            .tickets
            .iter()
            .enumerate()
            .map(|(i, &(at, amount, f))| {
                let mut t: TicketSpec = serde_json::from_value(serde_json::json!({
                    "id": i as u64 + 1, "opened_at": format!("{at}ms"),
                    "amount_cents": amount, "charge_amount_cents": amount * f / 10}))
                .expect("valid ticket");
                t.id = i as u64 + 1;
                t
            })
            .collect();
        s.stripe.latency_choices = self
            .lat
            .iter()
            .map(|&ms| Duration::from_millis(ms))
            .collect();
        s.refunds_service.pool_size = self.pool;
        let hold = s.background_load.hold.median().as_secs_f64().max(1e-9);
        let fits = 0.9 * f64::from(self.pool) / hold;
        s.background_load.rate_per_s = (s.background_load.rate_per_s * self.bg).min(fits);
        s.stripe.faults.error_500_after_commit = self.faults.0;
        s.stripe.faults.response_lost_after_commit = self.faults.1;
        s.stripe.faults.lock_timeout = self.faults.2;
        s.reconciliation.enabled = false;
        s.tie_break = Some(TieBreakConfig::new(self.tie, epsilon));
        s.expect = default_expect();
        if let Some(d) = &self.added.0 {
            add_layer(&mut s, layer_names::FRAMEWORK, "retry", d, &self.lat);
        }
        if let Some(d) = &self.added.1 {
            add_layer(&mut s, layer_names::PROXY, "proxy", d, &self.lat);
        }
        s
    }
}

/// Adds a layer `name` of `kind` to `s`: a `retry` layer right under `model_retry`, a `proxy`
/// right above `refunds_service`. Skipped when `s` already has a layer of that name or the
/// stack's retries would multiply past [`MAX_TRIES_PER_TOOL_CALL`].
fn add_layer(s: &mut Scenario, name: &str, kind: &str, d: &LayerDraw, lat_ms: &[u64]) {
    if s.layers.contains_key(name) {
        return;
    }
    let mut layer: RetryLayer =
        serde_json::from_value(layer_json(kind, d, lat_ms)).expect("a drawn layer is valid");
    layer.cancellation = s.executor.cancellation;
    let mut stack = stack_of(s);
    let at = if kind == "retry" {
        stack
            .iter()
            .position(|n| n == "model_retry")
            .map_or(0, |i| i + 1)
    } else {
        stack
            .iter()
            .position(|n| n == "refunds_service")
            .unwrap_or(stack.len())
    };
    let before = (s.layers.clone(), s.stack.clone(), s.schema_version);
    s.layers.insert(name.to_string(), layer);
    stack.insert(at, name.to_string());
    s.stack = Some(stack);
    s.schema_version = s.schema_version.max(2);
    if crate::scenario::Stack::of(s).fan_out() > MAX_TRIES_PER_TOOL_CALL {
        (s.layers, s.stack, s.schema_version) = before;
    }
}

/// Searches `base` (with any policy already applied) for a safety violation. `on_case` is called
/// after every case run, shrinking steps included (for a progress bar). Deterministic in
/// `opts.seed`.
pub fn explore(base: &Scenario, opts: &ExploreOptions, on_case: impl Fn()) -> Outcome {
    let unwatched = search(base, opts, MAX_SHRINK_ITERS, on_case, None);
    // Never stopped: no run is watched.
    unwatched.unwrap_or_else(|stop| Outcome::Aborted {
        tried: 0,
        cases: opts.cases,
        reason: stop.to_string(),
    })
}

/// [`explore`], every case's run watched by `watch` (`refundsim explore` under the CLI's run
/// budget).
///
/// # Errors
/// [`OverBudget`]: a case's run went past the budget while running; the search stops there.
pub(crate) fn explore_watched(
    base: &Scenario,
    opts: &ExploreOptions,
    on_case: impl Fn(),
    watch: &RunWatch,
) -> Result<Outcome, OverBudget> {
    search(base, opts, MAX_SHRINK_ITERS, on_case, Some(watch))
}

/// [`explore`] without shrinking: the first failing case as generated, in at most
/// `opts.cases` runs and no more (what `sweep` asks of a recommended point). `explore` with
/// the same options finds the same case first and shrinks it.
pub(crate) fn explore_unshrunk(base: &Scenario, opts: &ExploreOptions) -> Outcome {
    let unwatched = search(base, opts, 0, || (), None);
    unwatched.unwrap_or_else(|stop| Outcome::Aborted {
        tried: 0,
        cases: opts.cases,
        reason: stop.to_string(),
    })
}

/// One case run and checked, watched by `watch` when there is one: `Ok(None)` once a run has
/// stopped over the budget (recorded in `stopped`; later cases are not run).
struct Checker<'a> {
    watch: Option<&'a RunWatch>,
    stopped: std::cell::RefCell<Option<OverBudget>>,
}

impl Checker<'_> {
    /// Whether `case` breaks the safety property; a case run after a stop passes unrun.
    fn check(&self, case: &Case) -> Result<(), Violation> {
        let Some(watch) = self.watch else {
            return check_case(case);
        };
        if self.stopped.borrow().is_some() {
            return Ok(());
        }
        let sc = &case.scenario;
        match run_watched(sc, sc.seed, &Invocation::default(), watch, 0) {
            Ok(out) => first_violation(sc, &out).map_or(Ok(()), Err),
            Err(stop) => {
                *self.stopped.borrow_mut() = Some(stop);
                Ok(())
            }
        }
    }

    fn stopped(&self) -> Result<(), OverBudget> {
        self.stopped.borrow().clone().map_or(Ok(()), Err)
    }
}

/// proptest 1.x's default bound on shrinking steps.
const MAX_SHRINK_ITERS: u32 = 2048;

fn search(
    base: &Scenario,
    opts: &ExploreOptions,
    shrink_iters: u32,
    on_case: impl Fn(),
    watch: Option<&RunWatch>,
) -> Result<Outcome, OverBudget> {
    let checker = Checker {
        watch,
        stopped: std::cell::RefCell::new(None),
    };
    // Every field proptest would read from a `PROPTEST_*` environment variable is set here, so
    // the search is what the flags say and nothing else (`PROPTEST_CASES=5` in a CI job's
    // environment must not shrink an `explore` search); the values are proptest 1.x's defaults.
    let config = Config {
        cases: opts.cases,
        max_local_rejects: 65_536,
        max_global_rejects: 1024,
        max_flat_map_regens: 1_000_000,
        failure_persistence: None,
        fork: false,
        timeout: 0,
        max_shrink_time: 0,
        max_shrink_iters: shrink_iters,
        max_default_size_range: 100,
        verbose: 0,
        rng_algorithm: RngAlgorithm::ChaCha,
        ..Config::default()
    };
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&opts.seed.to_le_bytes());
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
    let tried = std::cell::Cell::new(0u32);
    let result = runner.run(&perturbed(base, opts.epsilon), |case| {
        tried.set(tried.get().saturating_add(1));
        on_case();
        checker
            .check(&case)
            .map_err(|v| TestCaseError::fail(v.to_string()))
    });
    checker.stopped()?;
    Ok(match result {
        Ok(()) => Outcome::NotFound { cases: opts.cases },
        Err(TestError::Fail(_, case)) => {
            let case = drop_unneeded_tickets(case, &on_case, &checker);
            checker.stopped()?;
            let checked = checker.check(&case);
            checker.stopped()?;
            let violation = match checked {
                Err(v) => v,
                Ok(()) => unreachable!("a shrunk failing case fails again: runs are deterministic"),
            };
            let mut minimal = case.scenario;
            minimal.name = format!("{}-minimal", base.name);
            minimal.description = format!(
                "Found by refundsim explore (seed {}): {}. Replay with refundsim run.",
                opts.seed, violation
            );
            Outcome::Found {
                minimal: Box::new(minimal),
                violation,
            }
        }
        Err(TestError::Abort(reason)) => Outcome::Aborted {
            tried: tried.get(),
            cases: opts.cases,
            reason: reason.to_string(),
        },
    })
}

/// Removes, one at a time and until none can go, every ticket whose removal keeps a safety
/// violation: proptest's shrinking of the ticket list stops at a local minimum (removing one
/// element may need another element's value to shrink first), and a ticket that plays no part
/// must not be left in the counterexample (issue 27). Ticket ids are kept as they are (every
/// draw is keyed by ticket id, so the others' draws do not move). Afterwards every remaining
/// ticket is necessary: removing any one makes the violation disappear.
fn drop_unneeded_tickets(mut case: Case, on_case: &impl Fn(), checker: &Checker<'_>) -> Case {
    loop {
        let mut removed = false;
        // Backwards, so removing ticket `i` leaves the indices still to try where they were.
        for i in (0..case.scenario.arrivals.tickets.len()).rev() {
            if case.scenario.arrivals.tickets.len() <= 1 {
                break;
            }
            let mut fewer = case.clone();
            fewer.scenario.arrivals.tickets.remove(i);
            on_case();
            if checker.check(&fewer).is_err() {
                case = fewer;
                removed = true;
            }
        }
        if !removed {
            return case;
        }
    }
}
