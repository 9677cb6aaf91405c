//! `refunds_service`: its connection pool, overhead and Stripe client timeout.

use crate::scenario::config::RefundsService;
use crate::scenario::limits::MAX_DURATION;
use crate::scenario::rules::{
    at_least_one, at_most, at_most_retries, positive, probability, Check,
};

/// The largest connection pool a scenario may ask for.
pub(crate) const MAX_POOL_SIZE: u32 = 100_000;

/// Pool size, acquire retries, backoff and timeout, overhead, then the Stripe client's timeout.
pub(super) fn validate(svc: &RefundsService) -> Check {
    at_least_one("refunds_service.pool_size", u64::from(svc.pool_size))?;
    // Each connection is simulated (a run's cost and memory grow with the pool, 10^8 took 3 s
    // before the first ticket); real pools to a provider are tens to hundreds.
    if svc.pool_size > MAX_POOL_SIZE {
        return crate::scenario::rules::fail(
            "refunds_service.pool_size",
            format!(
                "invalid value: expected at most 100,000 connections, got {}",
                svc.pool_size
            ),
        );
    }
    at_most_retries("refunds_service.acquire_retries", svc.acquire_retries)?;
    at_most(
        "refunds_service.acquire_retry_backoff",
        svc.acquire_retry_backoff,
        MAX_DURATION,
    )?;
    if let Some(t) = svc.acquire_timeout {
        positive("refunds_service.acquire_timeout", t)?;
    }
    if let Some(t) = svc.pool_wait_threshold {
        positive("refunds_service.pool_wait_threshold", t)?;
        at_most("refunds_service.pool_wait_threshold", t, MAX_DURATION)?;
    }
    at_most("refunds_service.overhead", svc.overhead, MAX_DURATION)?;
    at_most(
        "refunds_service.work_after_refund",
        svc.work_after_refund,
        MAX_DURATION,
    )?;
    probability(
        "refunds_service.crash_after_provider_ok",
        svc.crash_after_provider_ok,
    )?;
    positive(
        "refunds_service.stripe_client.timeout",
        svc.stripe_client.timeout,
    )
}
