//! The model: one file per real component of DESIGN §1, each reading its section of the
//! scenario. [`simulate`] wires them and runs one scenario under one seed.

pub mod agent;
pub mod arrivals;
pub mod background;
pub mod caller;
pub mod dist;
pub mod egress;
pub mod executor;
pub mod framework_retry;
pub mod humans;
pub mod layers;
pub mod ledger;
pub mod proxy;
pub mod reconciliation;
pub mod refunds_service;
pub mod stripe;
pub mod stripe_api;
pub mod stripe_client;
pub mod world;

use std::rc::Rc;

use crate::history::History;
use crate::scenario::Scenario;
use crate::sim::{RunStats, Sim};

/// What the model knows at the end of a run besides the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelGauges {
    /// Most requests (ticket and background) waiting for a pool connection at once.
    pub max_pool_queue_depth: u32,
    /// Pool connections handed out.
    pub pool_acquired: u64,
    /// Pool connections returned.
    pub pool_released: u64,
    /// Stripe executions begun and never committed.
    pub stripe_in_flight: usize,
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

/// [`simulate`] on a given engine, e.g. one in exploration mode ([`Sim::exploring`]).
pub fn simulate_on(sim: Sim, scenario: &Scenario, seed: u64) -> Simulation {
    let w = world::World::new(sim.clone(), Rc::new(scenario.clone()), seed);
    sim.spawn(arrivals::generate(w.clone()));
    sim.spawn(background::generate(w.clone()));
    sim.spawn(reconciliation::run(w.clone()));
    let stats = sim.run();
    let gauges = ModelGauges {
        max_pool_queue_depth: w.pool_gauges.max_waiting.get(),
        pool_acquired: w.pool_gauges.acquired.get(),
        pool_released: w.pool_gauges.released.get(),
        stripe_in_flight: w.stripe.borrow().in_flight(),
    };
    let history = std::mem::take(&mut *w.history.borrow_mut());
    Simulation {
        history,
        gauges,
        stats,
    }
}
