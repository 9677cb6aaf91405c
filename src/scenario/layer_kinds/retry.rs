//! `kind: retry`: a framework's retry middleware around tool execution (LangChain's
//! `ToolRetryMiddleware`: `max_retries` 2, `initial_delay` 1 s, `backoff_factor` 2, `max_delay`
//! 60 s; tenacity-style wrappers alike): 2 retries on any failure or timeout, exponential
//! backoff from 1 s capped at 60 s (or the first delay, if longer).

use std::time::Duration;

use super::KindDefaults;
use crate::scenario::retry_layer::RetryOn;

/// Every `retry_on` class: a `retry` layer's default.
pub(super) const ALL_RETRY_ON: [RetryOn; 10] = [
    RetryOn::Reset,
    RetryOn::ConnectFailure,
    RetryOn::FiveXx,
    RetryOn::GatewayError,
    RetryOn::Retriable4xx,
    RetryOn::TooManyRequests,
    RetryOn::Timeout,
    RetryOn::PoolExhausted,
    RetryOn::LlmError,
    RetryOn::CircuitOpen,
];

/// See the module docs.
pub(super) const DEFAULTS: KindDefaults = KindDefaults {
    name: "retry",
    above_model: false,
    network_proxy: false,
    tool_client: false,
    tool_filter: true,
    hedges: false,
    circuit_breaker: false,
    max_retries: 2,
    retry_on: &ALL_RETRY_ON,
    base: Duration::from_secs(1),
    max_delay: |base| Duration::from_secs(60).max(base),
};
