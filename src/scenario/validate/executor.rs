//! `executor`: the tool executor's timeout, probe and retry.

use std::time::Duration;

use crate::scenario::config::Executor;
use crate::scenario::limits::MAX_DURATION;
use crate::scenario::rules::{at_least, at_most, fail, latency, positive, probability, Check};

/// Timeout and probe durations, then the retry's delays, backoff factor and jitter.
pub(super) fn validate(ex: &Executor) -> Check {
    positive("executor.timeout", ex.timeout)?;
    at_least(
        "executor.probe_interval",
        ex.probe_interval,
        Duration::from_millis(1),
        "a status probe is a request: at most one per millisecond",
    )?;
    at_most("executor.probe_max_wait", ex.probe_max_wait, MAX_DURATION)?;
    latency("executor.probe.latency", &ex.probe.latency)?;
    at_least(
        "executor.probe.timeout",
        ex.probe.timeout,
        Duration::from_millis(1),
        "a request cannot be given up on sooner than a millisecond",
    )?;
    probability(
        "executor.probe.error_probability",
        ex.probe.error_probability,
    )?;
    if let Some(k) = &ex.request_idempotency {
        positive("executor.request_idempotency.retention", k.retention)?;
        at_most(
            "executor.request_idempotency.retention",
            k.retention,
            MAX_DURATION,
        )?;
    }
    let Some(r) = &ex.retry else {
        return Ok(());
    };
    at_most(
        "executor.retry.initial_delay",
        r.initial_delay,
        MAX_DURATION,
    )?;
    at_most("executor.retry.max_delay", r.max_delay, MAX_DURATION)?;
    if !(r.backoff_factor.is_finite() && r.backoff_factor >= 1.0) {
        return fail(
            "executor.retry.backoff_factor",
            format!(
                "invalid value: expected a finite number ≥ 1, got {}",
                r.backoff_factor
            ),
        );
    }
    if !(0.0..1.0).contains(&r.jitter) {
        return fail(
            "executor.retry.jitter",
            format!(
                "invalid value: expected a number in [0, 1), got {}",
                r.jitter
            ),
        );
    }
    Ok(())
}
