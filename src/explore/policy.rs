//! Policies as functions over a scenario: the incident's settings, the full fix, and each single
//! fix alone (the same settings as `policies/*.json`).

use std::time::Duration;

use crate::scenario::{AppliesTo, KeyMode, LatencyDist, OnTimeout, Scenario};

/// The incident: no key, timeout reported as an error, retry once on any tool, compliant model,
/// no drift. Leaves the world's timeout, pool and faults as generated.
pub fn incident(s: &mut Scenario) {
    s.refunds_service.idempotency_key = KeyMode::None;
    s.executor.on_timeout = OnTimeout::ReportError;
    s.agent.retry.applies_to = AppliesTo::AnyTool;
    s.agent.retry.max_retries = 1;
    s.agent.retry.compliance = 1.0;
    s.agent.retry.amount_drift_probability = 0.0;
}

/// Per-ticket key only.
pub fn key_only(s: &mut Scenario) {
    incident(s);
    s.refunds_service.idempotency_key = KeyMode::PerTicket;
}

/// Status probe after a timeout only.
pub fn probe_only(s: &mut Scenario) {
    incident(s);
    s.executor.on_timeout = OnTimeout::ProbeStatus;
}

/// Retries only for idempotent tools, with the Stripe SDK's network retries on.
pub fn idempotent_retries_only(s: &mut Scenario) {
    incident(s);
    s.agent.retry.applies_to = AppliesTo::IdempotentTools;
    s.refunds_service.stripe_client.max_network_retries = 2;
}

/// 15 s executor timeout only.
pub fn timeout_15s_only(s: &mut Scenario) {
    incident(s);
    s.executor.timeout = Duration::from_secs(15);
}

/// Pool of 8 connections only.
pub fn pool_resize_only(s: &mut Scenario) {
    incident(s);
    s.refunds_service.pool_size = 8;
}

/// The full fix as the property's premise: per-ticket key, probe on timeout, retries only for
/// idempotent tools (a compliant model, no drift), and humans who check the dashboard and the
/// service's status before a manual refund and pick up no sooner than 10 minutes.
pub fn full_fix(s: &mut Scenario) {
    incident(s);
    s.refunds_service.idempotency_key = KeyMode::PerTicket;
    s.executor.on_timeout = OnTimeout::ProbeStatus;
    s.agent.retry.applies_to = AppliesTo::IdempotentTools;
    s.humans.enabled = true;
    s.humans.check_probability = 1.0;
    s.humans.check_service_status = true;
    median_at_least(&mut s.humans.pickup_delay, Duration::from_secs(600));
}

/// Raises `d` so that its median is at least `floor`: a lognormal's `p50` (and `p99` with it), an
/// exponential's mean (to `floor / ln 2`), and every value of the other forms.
fn median_at_least(d: &mut LatencyDist, floor: Duration) {
    match d {
        LatencyDist::Lognormal { p50, p99 } => {
            *p50 = (*p50).max(floor);
            *p99 = (*p99).max(*p50);
        }
        LatencyDist::Constant { value } => *value = (*value).max(floor),
        LatencyDist::Exponential { mean } => {
            *mean = (*mean).max(floor.div_f64(std::f64::consts::LN_2));
        }
        LatencyDist::Empirical { samples } => {
            for x in samples {
                *x = (*x).max(floor);
            }
        }
        LatencyDist::Script(s) => {
            for x in s.by_request.values_mut() {
                *x = (*x).max(floor);
            }
            median_at_least(&mut s.otherwise, floor);
        }
    }
}

/// A policy applied in place.
pub type Policy = fn(&mut Scenario);

/// The single fixes by name, in the order of `docs/findings.md`.
pub const SINGLE_FIXES: &[(&str, Policy)] = &[
    ("key-only", key_only),
    ("probe-only", probe_only),
    ("idempotent-retries-only", idempotent_retries_only),
    ("timeout-15s-only", timeout_15s_only),
    ("pool-resize-only", pool_resize_only),
];
