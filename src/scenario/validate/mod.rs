//! Validation: the rules the types cannot express, and the limits that keep a run finite.
//!
//! One file per section of the scenario file; [`validate`] calls them in a fixed order, so the
//! first error reported for a bad file does not depend on how the rules are arranged here.

mod agent;
mod arrivals;
mod background;
mod deliveries;
mod executor;
mod expect;
mod exploration;
mod humans;
mod provider;
mod replay;
mod service;
mod stripe;
#[cfg(test)]
mod tests;

use std::time::Duration;

use super::config::Scenario;
use super::error::ValidationError;
use super::rules::{fail, fmt_d, Check};

/// Metric names a scenario's `expect` may bound. This list must match the metric names of the
/// run report (`metrics` / `report`); a name missing here cannot be bounded, a name here that the
/// report lacks would never be checked. The `latency_*_ms` names are the report's
/// `latency.{tool_call,pool_wait,stripe}.{p50_ms,p99_ms,max_ms}`, in ms (one word each, so a
/// `--set expect.NAME.max=…` path can name them).
pub const METRICS: &[&str] = &[
    "tickets",
    "tool_calls",
    "executor_timeouts",
    "retries",
    "escalations",
    "refunds_created",
    "refunds_failed_after_200",
    "duplicate_refund_tickets",
    "extra_refunds",
    "over_refund_cents",
    "lost_refunds",
    "false_failures",
    "stripe_replays",
    "stripe_409",
    "stripe_400",
    "stripe_429",
    "stripe_500",
    "stripe_no_response",
    "manual_refunds",
    "status_probes",
    "untruthful_probes",
    "conservation_violations",
    "max_pool_queue_depth",
    "pool_wait_mean_ms",
    "pool_wait_over_threshold_fraction",
    "pool_utilisation",
    "reconciliation_alerts",
    "duplicate_deliveries",
    "deliveries_deduped",
    "latency_tool_call_p50_ms",
    "latency_tool_call_p99_ms",
    "latency_tool_call_max_ms",
    "latency_pool_wait_p50_ms",
    "latency_pool_wait_p99_ms",
    "latency_pool_wait_max_ms",
    "latency_stripe_p50_ms",
    "latency_stripe_p99_ms",
    "latency_stripe_max_ms",
];

/// Longest allowed horizon: 30 days.
pub const MAX_HORIZON: Duration = Duration::from_secs(30 * 24 * 3600);
/// Longest allowed value of any other duration field: 365 days (virtual time is an integer count
/// of nanoseconds, which holds about 584 years; the cap keeps sums of durations far from overflow).
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// Largest allowed `arrivals.first_ticket_id` (2^53, so ticket ids stay exact in JSON readers).
pub const MAX_FIRST_TICKET_ID: u64 = 1 << 53;
/// Largest amount in cents anywhere in a scenario ($10 billion), so money sums cannot overflow.
pub const MAX_CENTS: u64 = 1_000_000_000_000;
/// Largest retry count (model, executor layer, SDK) and human attempts: 100.
pub(crate) const MAX_RETRIES: u32 = 100;
/// Largest `stripe.faults.latency_spike_factor`: 1000.
pub(crate) const MAX_SPIKE_FACTOR: f64 = 1000.0;
/// Shortest `reconciliation.interval`: 1 s.
pub(crate) const MIN_RECONCILIATION_INTERVAL: Duration = Duration::from_secs(1);

pub(super) fn at_most_retries(path: &str, n: u32) -> Check {
    if n > MAX_RETRIES {
        return fail(
            path,
            format!("invalid value: expected at most {MAX_RETRIES} retries, got {n}"),
        );
    }
    Ok(())
}

pub(super) fn at_most_cents(path: &str, c: u64) -> Check {
    if c > MAX_CENTS {
        return fail(
            path,
            format!("invalid value: expected at most {MAX_CENTS} cents ($10 billion), got {c}"),
        );
    }
    Ok(())
}

const RFC3339_EXAMPLE: &str = r#""2024-05-14T16:00:00Z""#;

/// Checks the rules the types cannot express (each error names the field's path):
///
/// - `horizon` in (0, 30 days]; every other duration at most 365 days; timeouts, intervals and
///   every latency `p50` > 0; every latency `p99` ≥ its `p50`;
/// - `arrivals`: a non-empty `schedule` or non-empty `tickets`; rates finite and ≥ 0; tickets
///   with unique ids,
///   `opened_at` ≤ horizon, `amount_cents` > 0 and `charge_amount_cents` ≥ `amount_cents`;
///   amount p99 ≥ p50 > 0, `max_cents` ≥ `min_cents` > 0; charge factors 1 ≤ min ≤ max;
/// - probabilities in [0, 1]; `stripe.faults.latency_spike_factor` ≥ 1; `executor.retry`
///   `backoff_factor` ≥ 1 and `jitter` in [0, 1); `refunds_service.pool_size` ≥ 1;
/// - `agent.tool` names one of `tools`; `clock_origin` is RFC 3339 UTC; `expect` keys are in
///   [`METRICS`] and each bound is consistent (see `bound_rules`: finite numbers, `min` ≤ `max`,
///   `mean_min` ≤ `mean_max`, `violating_seeds_max` in `[0, 1]` and only beside `min`/`max`).
///
/// A schedule longer than the horizon is allowed: arrivals stop at the horizon. The run budget
/// is not a rule of the scenario: loading admits against it after these rules
/// ([`super::budget::RunBudget::admit`]).
pub fn validate(s: &Scenario) -> Result<(), ValidationError> {
    // The first failing rule is the one reported, so this order is part of the behaviour.
    header(s)?;
    arrivals::validate(s)?;
    background::validate(s)?;
    deliveries::validate(s)?;
    agent::validate(s)?;
    executor::validate(&s.executor)?;
    service::validate(&s.refunds_service)?;
    stripe::validate(&s.stripe)?;
    provider::validate(&s.provider)?;
    humans::validate(s)?;
    exploration::validate(s)?;
    expect::validate(&s.expect)?;
    replay::validate(s)?;
    // The layers' cap multiplies retries that the rules above bound one by one.
    super::layers::validate_layers(s)?;
    Ok(())
}

/// `schema_version`, `horizon` and `clock_origin`.
fn header(s: &Scenario) -> Check {
    if !(1..=super::config::SCHEMA_VERSION).contains(&s.schema_version) {
        return fail(
            "schema_version",
            format!(
                "invalid value: expected 1 or {}, got {} (a newer refundsim wrote this file?)",
                super::config::SCHEMA_VERSION,
                s.schema_version
            ),
        );
    }
    if s.horizon.is_zero() || s.horizon > MAX_HORIZON {
        return fail(
            "horizon",
            format!(
                "invalid value: expected a duration > 0 and at most 30 days (\"30d\"), got {}",
                fmt_d(s.horizon)
            ),
        );
    }
    if let Some(origin) = &s.clock_origin {
        if humantime::parse_rfc3339(origin).is_err() {
            return fail(
                "clock_origin",
                format!("invalid value: expected an RFC 3339 UTC time like {RFC3339_EXAMPLE}, got {origin:?}"),
            );
        }
    }
    Ok(())
}
