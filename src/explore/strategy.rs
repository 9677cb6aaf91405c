//! proptest strategies for small adversarial worlds (swarm style: each case also switches
//! components and faults on or off), reusable in users' own property tests.
//!
//! ```
//! use proptest::prelude::*;
//! use refundsim::explore::{strategy::world, policy};
//!
//! proptest!(ProptestConfig::with_cases(8), |(mut case in world())| {
//!     policy::full_fix(&mut case.scenario);
//!     prop_assert!(refundsim::explore::check_case(&case).is_ok());
//! });
//! ```

use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;

use crate::scenario::{load_str, Scenario, TieBreakConfig};

/// One generated case: a scenario (recorded tickets, explicit knobs) run under a seeded tie-break.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The world. Its `tie_break` section carries the tie-break seed and epsilon.
    pub scenario: Scenario,
}

/// Bounds of the generated worlds (the issue's "small adversarial worlds").
pub mod bounds {
    /// Tickets per world.
    pub const TICKETS: std::ops::RangeInclusive<usize> = 1..=30;
    /// Pool sizes.
    pub const POOL: std::ops::RangeInclusive<u32> = 1..=8;
    /// Executor timeout, ms.
    pub const TIMEOUT_MS: std::ops::RangeInclusive<u64> = 500..=30_000;
    /// Stripe latencies, ms (besides the timeout itself and ±1 ms around it).
    pub const LATENCY_MS: std::ops::RangeInclusive<u64> = 10..=40_000;
    /// Ticket arrival times, ms after start.
    pub const ARRIVAL_MS: std::ops::RangeInclusive<u64> = 0..=60_000;
}

fn ms(v: u64) -> String {
    format!("{v}ms")
}

/// `(opened_at ms, amount cents, charge factor ×10)`: arrivals often collide (same instant).
fn ticket() -> impl Strategy<Value = (u64, u64, u64)> {
    let at = prop_oneof![
        Just(0u64),
        (0u64..4).prop_map(|k| k * 1000),
        bounds::ARRIVAL_MS
    ];
    (at, 100u64..=50_000, prop_oneof![Just(10u64), 10u64..=40])
}

/// Stripe latencies in ms, centred on the timeout: exactly it, 1 ms either side, or anything.
fn latencies(timeout_ms: u64) -> impl Strategy<Value = Vec<u64>> {
    let one = prop_oneof![
        Just(timeout_ms),
        Just(timeout_ms.saturating_sub(1).max(1)),
        Just(timeout_ms + 1),
        bounds::LATENCY_MS,
    ];
    prop::collection::vec(one, 1..=4)
}

/// Knobs switched on or off per case.
#[derive(Clone, Debug)]
struct Swarm {
    pool: u32,
    background_per_s: Option<f64>,
    think_ms: u64,
    sdk_retries: bool,
    sdk_timeout_ms: Option<u64>,
    e500: Option<f64>,
    lost: Option<f64>,
    lock: Option<f64>,
    key: &'static str,
    probe: bool,
    idempotent_only: bool,
    exec_retry: bool,
    deadline_propagation: bool,
    human_check: f64,
    pickup_min: u64,
    tie_seed: u64,
    epsilon_ms: u64,
}

fn swarm() -> impl Strategy<Value = Swarm> {
    let p = || prop::option::of(prop_oneof![Just(1.0), 0.0f64..0.5]);
    (
        (
            bounds::POOL,
            prop::option::of(0.1f64..5.0),
            1u64..200,
            any::<bool>(),
            prop::option::of(500u64..10_000),
        ),
        (p(), p(), prop::option::of(0.0f64..0.3)),
        (
            prop_oneof![Just("none"), Just("per_attempt"), Just("per_ticket")],
            any::<bool>(),
            any::<bool>(),
        ),
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(0.0), Just(0.5), Just(1.0)],
            10u64..=120,
        ),
        (any::<u64>(), prop_oneof![Just(0u64), Just(1), 0u64..50]),
    )
        .prop_map(|(a, b, c, d, e)| Swarm {
            pool: a.0,
            background_per_s: a.1,
            think_ms: a.2,
            sdk_retries: a.3,
            sdk_timeout_ms: a.4,
            e500: b.0,
            lost: b.1,
            lock: b.2,
            key: c.0,
            probe: c.1,
            idempotent_only: c.2,
            exec_retry: d.0,
            deadline_propagation: d.1,
            human_check: d.2,
            pickup_min: d.3,
            tie_seed: e.0,
            epsilon_ms: e.1,
        })
}

/// Builds the scenario file text of a case, so every generated world is a valid, loadable file.
fn build(tickets: &[(u64, u64, u64)], timeout_ms: u64, lat: &[u64], s: &Swarm) -> Scenario {
    let tickets: Vec<_> = tickets
        .iter()
        .enumerate()
        .map(|(i, &(at, amount, f))| {
            json!({"id": i + 1, "opened_at": ms(at), "amount_cents": amount,
                   "charge_amount_cents": amount * f / 10})
        })
        .collect();
    let mut v = json!({
        "name": "generated",
        "horizon": "2m",
        "arrivals": {"tickets": tickets},
        "agent": {"think_time": {"p50": ms(s.think_ms), "p99": ms(s.think_ms * 3)},
                  "retry": {"applies_to": if s.idempotent_only {"idempotent_tools"} else {"any_tool"}}},
        "executor": {"timeout": ms(timeout_ms),
                     "on_timeout": if s.probe {"probe_status"} else {"report_error"},
                     "probe_interval": "500ms", "probe_max_wait": "60s"},
        "refunds_service": {"pool_size": s.pool, "idempotency_key": s.key,
                            "deadline_propagation": s.deadline_propagation,
                            "stripe_client": {"max_network_retries": if s.sdk_retries {2} else {0},
                                              "timeout": ms(s.sdk_timeout_ms.unwrap_or(80_000))}},
        "stripe": {"latency_choices": lat.iter().map(|&l| ms(l)).collect::<Vec<_>>(),
                   "faults": {"error_500_after_commit": s.e500.unwrap_or(0.0),
                              "response_lost_after_commit": s.lost.unwrap_or(0.0),
                              "lock_timeout": s.lock.unwrap_or(0.0)}},
        "humans": {"pickup_delay": {"p50": format!("{}m", s.pickup_min), "p99": format!("{}m", s.pickup_min * 2)},
                   "check_probability": s.human_check},
        "tie_break": {"seed": s.tie_seed, "epsilon": ms(s.epsilon_ms)},
        "expect": {}
    });
    if let Some(frac) = s.background_per_s {
        // A fraction of what the pool can carry (hold p50 300 ms): the queue stays finite.
        let rate = frac / 5.0 * 0.9 * f64::from(s.pool) / 0.3;
        v["background_load"] =
            json!({"rate_per_s": rate, "hold": {"p50": "300ms", "p99": "1500ms"}});
    }
    if s.exec_retry {
        v["executor"]["retry"] = json!({});
    }
    load_str(&v.to_string(), "generated").expect("generated worlds are valid scenarios")
}

/// Small adversarial worlds: 1–30 recorded tickets with colliding arrival times, amounts and
/// charges (sometimes a full refund); pool 1–8; executor timeout 0.5–30 s; per-request Stripe
/// latencies from 1–4 choices including exactly the timeout and 1 ms either side; think times;
/// optional background load (below what the pool carries); SDK retries and a short SDK timeout on or off; faults (500 after
/// commit, response lost after commit, 429 `lock_timeout`; 409s arise from overlapping requests);
/// every key mode; probe on or off; an executor retry layer; deadline propagation; humans who
/// check first with probability 0, ½ or 1; and a tie-break seed with ε of 0–50 ms.
pub fn world() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(ticket(), bounds::TICKETS),
        bounds::TIMEOUT_MS,
        swarm(),
    )
        .prop_flat_map(|(tickets, timeout, s)| {
            latencies(timeout).prop_map(move |lat| Case {
                scenario: build(&tickets, timeout, &lat, &s),
            })
        })
}

/// The tie-break section of a case, for reports.
pub fn tie_break(case: &Case) -> Option<&TieBreakConfig> {
    case.scenario.tie_break.as_ref()
}

/// A duration in ms, for callers building worlds by hand.
pub fn millis(v: u64) -> Duration {
    Duration::from_millis(v)
}
