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
mod layers;
mod provider;
mod replay;
mod service;
mod stripe;
#[cfg(test)]
mod tests;

use super::config::Scenario;
use super::error::ValidationError;
use super::limits::MAX_HORIZON;
use super::rules::{fail, fmt_d, Check};

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
///   [`METRICS`](super::limits::METRICS) and each bound is consistent (see `bound_rules`: finite
///   numbers, `min` ≤ `max`, `mean_min` ≤ `mean_max`, `violating_seeds_max` in `[0, 1]` and only
///   beside `min`/`max`).
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
    layers::validate(s)?;
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
