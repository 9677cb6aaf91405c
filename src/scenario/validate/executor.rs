//! `executor`: the tool executor's timeout, probe and retry.

use super::MAX_DURATION;
use crate::scenario::config::Executor;
use crate::scenario::rules::{at_most, fail, latency, positive, probability, Check};

/// Timeout and probe durations, then the retry's delays, backoff factor and jitter.
pub(super) fn validate(ex: &Executor) -> Check {
    positive("executor.timeout", ex.timeout)?;
    positive("executor.probe_interval", ex.probe_interval)?;
    at_most("executor.probe_max_wait", ex.probe_max_wait, MAX_DURATION)?;
    latency("executor.probe.latency", &ex.probe.latency)?;
    positive("executor.probe.timeout", ex.probe.timeout)?;
    at_most("executor.probe.timeout", ex.probe.timeout, MAX_DURATION)?;
    probability(
        "executor.probe.error_probability",
        ex.probe.error_probability,
    )?;
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
