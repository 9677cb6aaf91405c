//! The model: one file per real component of DESIGN §1, each reading its section of the
//! scenario. [`simulate`] wires them and runs one scenario under one seed.

pub(crate) mod agent;
pub(crate) mod arrivals;
pub(crate) mod background;
pub(crate) mod backoff;
pub(crate) mod caller;
pub(crate) mod deliveries;
pub(crate) mod dist;
pub(crate) mod executor;
pub(crate) mod humans;
pub(crate) mod ids;
pub(crate) mod layers;
pub(crate) mod ledger;
pub(crate) mod pool;
pub(crate) mod providers;
pub(crate) mod reconciliation;
pub(crate) mod redelivery;
pub(crate) mod refunds_service;
pub(crate) mod service_call;
pub(crate) mod stripe;
pub(crate) mod stripe_api;
pub(crate) mod stripe_client;
pub(crate) mod stripe_trace;
pub(crate) mod ticket;
pub(crate) mod world;

use std::cell::RefCell;
use std::rc::Rc;

use crate::history::{History, Observer};
use crate::scenario::{OverBudget, RunWatch, Scenario};
use crate::sim::{RunStats, Sim, SimTime};

/// What the model knows at the end of a run besides the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelGauges {
    /// Most requests (ticket and background) waiting for a pool connection at once.
    pub max_pool_queue_depth: u32,
    /// Pool connections handed out.
    pub pool_acquired: u64,
    /// Pool connections returned.
    pub pool_released: u64,
    /// Pool waits ended (every request that asked for a connection, ticket or background,
    /// served or timed out).
    pub pool_waits: u64,
    /// Σ of those waits, ns.
    pub pool_wait_ns: u128,
    /// Those waits longer than `pool_wait_threshold`.
    pub pool_waits_over_threshold: u64,
    /// `Scenario::pool_wait_threshold`.
    pub pool_wait_threshold: SimTime,
    /// Busy connection-time inside `[0, horizon]`, ns.
    pub pool_busy_ns: u128,
    /// `pool_size` × horizon, ns: the connection-time available inside the horizon.
    pub pool_capacity_ns: u128,
    /// Stripe executions begun and never committed.
    pub stripe_in_flight: usize,
    /// Evictions refused because a closed ticket still had work in flight (a model bug: some
    /// task worked on a ticket without holding a lease on it).
    pub premature_evictions: u64,
}

/// The raw result of one run.
#[derive(Clone, Debug)]
pub struct Simulation {
    /// The event record.
    pub history: History,
    /// Model-side gauges.
    pub gauges: ModelGauges,
    /// Engine statistics.
    pub stats: RunStats,
}

/// Runs `scenario` under root seed `seed` until every task has finished (arrivals, background
/// load and reconciliation stop at the horizon; in-flight work drains). A pure function of its
/// inputs.
pub fn simulate(scenario: &Scenario, seed: u64) -> Simulation {
    simulate_on(Sim::new(), scenario, seed)
}

/// [`simulate`] on a given engine, e.g. one in exploration mode ([`Sim::exploring`]). Keeps
/// the whole history; [`simulate_observed`] keeps none.
pub(crate) fn simulate_on(sim: Sim, scenario: &Scenario, seed: u64) -> Simulation {
    let history = Rc::new(RefCell::new(History::default()));
    let (gauges, stats) = simulate_observed(sim, scenario, seed, history.clone());
    let history = std::mem::take(&mut *history.borrow_mut());
    Simulation {
        history,
        gauges,
        stats,
    }
}

/// Runs `scenario` under root seed `seed` on `sim`, handing every event to `observer` as it
/// happens and telling it when each ticket closes (see [`world::World`]'s eviction rules).
/// Memory is flat in the horizon unless the observer keeps events. Never stopped: see
/// [`simulate_watched`] for a run under a budget.
pub fn simulate_observed(
    sim: Sim,
    scenario: &Scenario,
    seed: u64,
    observer: Rc<RefCell<dyn Observer>>,
) -> (ModelGauges, RunStats) {
    simulate_limited(sim, scenario, seed, observer, None)
}

/// [`simulate_observed`], watched by `watch` as the run at `order` in its command's order,
/// reproduced alone by `label` (a `refundsim run …` command, or empty).
///
/// # Errors
/// [`OverBudget`] when the run went past the watch's budget while running (or was abandoned
/// because a run earlier in the order did): its results are not to be used.
pub(crate) fn simulate_watched(
    sim: Sim,
    scenario: &Scenario,
    seed: u64,
    observer: Rc<RefCell<dyn Observer>>,
    watched: Watched<'_>,
) -> Result<(ModelGauges, RunStats), OverBudget> {
    let limits = |held| watched.watch.limits(watched.order, held);
    let (gauges, stats) = simulate_limited(sim, scenario, seed, observer, Some(&limits));
    match &stats.stopped {
        Some(e) => Err(watched
            .watch
            .stopped(scenario, seed, watched.order, watched.label, e)),
        None => Ok((gauges, stats)),
    }
}

/// Where a watched run sits: its command's [`RunWatch`], its place in the command's order
/// (its index in `check`, `diff` or `sweep`; 0 for a lone run) and the command that
/// reproduces it alone (for the stop message; empty for none).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Watched<'a> {
    /// The command's watch.
    pub watch: &'a RunWatch,
    /// The run's place in its command's order.
    pub order: u64,
    /// The command that reproduces the run alone.
    pub label: &'a str,
}

/// The engine's limits for a run, given what counts the model's own bytes.
type MakeLimits<'a> = &'a dyn Fn(Box<dyn Fn() -> u64>) -> crate::sim::Limits;

fn simulate_limited(
    sim: Sim,
    scenario: &Scenario,
    seed: u64,
    observer: Rc<RefCell<dyn Observer>>,
    limits: Option<MakeLimits<'_>>,
) -> (ModelGauges, RunStats) {
    let w = world::World::new(sim.clone(), Rc::new(scenario.clone()), seed, observer);
    sim.spawn(arrivals::generate(w.clone()));
    // A replayed pool (`replay` section) stands in for the load that filled it.
    if !w.replays_pool {
        background::start(&w);
    }
    sim.spawn(reconciliation::run(w.clone()));
    // Spawned only when set, so scenarios without it schedule exactly what they did.
    if w.cfg.reconciliation.stale_pending.is_some() {
        sim.spawn(reconciliation::sweep_stale_pending(w.clone()));
    }
    if let Some(limits) = limits {
        let held = Rc::downgrade(&w);
        sim.set_limits(limits(Box::new(move || {
            held.upgrade().map_or(0, |w| w.held_bytes())
        })));
    }
    let stats = sim.run();
    w.finish();
    let g = &w.pool_gauges;
    let gauges = ModelGauges {
        max_pool_queue_depth: w.pool_gauges.max_waiting.get(),
        pool_acquired: w.pool_gauges.acquired.get(),
        pool_released: w.pool_gauges.released.get(),
        pool_waits: g.waits.get(),
        pool_wait_ns: g.wait_ns.get(),
        pool_waits_over_threshold: g.waits_over_threshold.get(),
        pool_wait_threshold: g.threshold,
        pool_busy_ns: u128::try_from(g.busy_ns.get()).unwrap_or(0),
        pool_capacity_ns: u128::from(scenario.refunds_service.pool_size)
            * u128::from(g.horizon.as_nanos()),
        stripe_in_flight: w.stripe.borrow().in_flight(),
        premature_evictions: w.premature_evictions(),
    };
    (gauges, stats)
}
