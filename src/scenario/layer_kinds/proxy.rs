//! `kind: proxy`: a proxy or sidecar with Envoy's route retry policy (`num_retries` 1,
//! `retry_on` `reset,connect-failure,5xx` as commonly configured, `base_interval` 25 ms,
//! `max_interval` 10 × base; POST retried like any method).

use std::time::Duration;

use super::KindDefaults;
use crate::scenario::retry_layer::RetryOn;

/// See the module docs.
pub(super) const DEFAULTS: KindDefaults = KindDefaults {
    name: "proxy",
    above_model: false,
    network_proxy: true,
    tool_client: false,
    tool_filter: false,
    hedges: false,
    circuit_breaker: false,
    max_retries: 1,
    retry_on: &[RetryOn::Reset, RetryOn::ConnectFailure, RetryOn::FiveXx],
    base: Duration::from_millis(25),
    max_delay: |base| base.saturating_mul(10),
};
