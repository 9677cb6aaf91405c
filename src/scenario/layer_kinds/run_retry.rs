//! `kind: run_retry`: a run-level retry above the model (a job runner's or agent framework's
//! retry of the whole run: Celery/Temporal-style task retries, an agent's `max_retry_limit`):
//! 1 retry on every failure and timeout, exponential backoff from 1 s capped at 60 s (or the
//! first delay, if longer), as a framework `retry` layer.

use std::time::Duration;

use super::retry::ALL_RETRY_ON;
use super::KindDefaults;

/// See the module docs.
pub(super) const DEFAULTS: KindDefaults = KindDefaults {
    name: "run_retry",
    above_model: true,
    network_proxy: false,
    tool_client: false,
    tool_filter: false,
    hedges: false,
    circuit_breaker: false,
    max_retries: 1,
    retry_on: &ALL_RETRY_ON,
    base: Duration::from_secs(1),
    max_delay: |base| Duration::from_secs(60).max(base),
};
