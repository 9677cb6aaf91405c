//! `kind: circuit_breaker`: a circuit breaker (around tool execution, before the service or
//! after the SDK), with Polly v8's defaults (`CircuitBreakerStrategyOptions`: `FailureRatio` 0.1, `MinimumThroughput` 100,
//! `SamplingDuration` 30 s, `BreakDuration` 5 s; docs/strategies/circuit-breaker.md) or
//! resilience4j's (`CircuitBreakerConfig`: `failureRateThreshold` 50 %, `minimumNumberOfCalls`
//! 100, a count-based window of 100 calls, `waitDurationInOpenState` 60 s,
//! `permittedNumberOfCallsInHalfOpenState` 10). A breaker "does not manage retries" (Polly):
//! `max_retries` 0, and it counts every failure class by default. Its state machine is in
//! `model/layers/circuit_breaker.rs`.

use std::time::Duration;

use super::{covered_by, KindDefaults};
use crate::scenario::retry_layer::{BreakerDefaults, RetryLayer, RetryOn};

/// See the module docs.
pub(super) const DEFAULTS: KindDefaults = KindDefaults {
    name: "circuit_breaker",
    above_model: false,
    network_proxy: false,
    tool_filter: false,
    hedges: false,
    tool_client: false,
    circuit_breaker: true,
    max_retries: 0,
    retry_on: &[],
    base: Duration::ZERO,
    max_delay: |base| base,
};

/// The window a breaker computes its failure ratio over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerWindow {
    /// The calls that ended in the last this long (Polly's `SamplingDuration`).
    Time(Duration),
    /// The last this many calls (resilience4j's `COUNT_BASED` `slidingWindowSize`).
    Calls(u32),
}

/// A breaker's settings with every default filled in (see
/// [`BreakerSettings`](crate::scenario::BreakerSettings) for each field's meaning and source).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BreakerConfig {
    /// Failure ratio at or above which the breaker opens, in (0, 1].
    pub failure_ratio: f64,
    /// Calls the window must hold before it can open.
    pub minimum_throughput: u32,
    /// The window.
    pub window: BreakerWindow,
    /// Time open before a half-open probe.
    pub break_duration: Duration,
    /// Probe calls let through half-open.
    pub half_open_calls: u32,
}

/// Polly v8's defaults.
pub const POLLY: BreakerConfig = BreakerConfig {
    failure_ratio: 0.1,
    minimum_throughput: 100,
    window: BreakerWindow::Time(Duration::from_secs(30)),
    break_duration: Duration::from_secs(5),
    half_open_calls: 1,
};

/// resilience4j's defaults.
pub const RESILIENCE4J: BreakerConfig = BreakerConfig {
    failure_ratio: 0.5,
    minimum_throughput: 100,
    window: BreakerWindow::Calls(100),
    break_duration: Duration::from_secs(60),
    half_open_calls: 10,
};

impl RetryLayer {
    /// This layer's breaker settings with the chosen defaults filled in (Polly's when the layer
    /// has no `breaker`).
    pub fn breaker_config(&self) -> BreakerConfig {
        let Some(b) = &self.breaker else { return POLLY };
        let base = match b.defaults {
            BreakerDefaults::Polly => POLLY,
            BreakerDefaults::Resilience4j => RESILIENCE4J,
        };
        BreakerConfig {
            failure_ratio: b.failure_ratio.unwrap_or(base.failure_ratio),
            minimum_throughput: b.minimum_throughput.unwrap_or(base.minimum_throughput),
            window: match (b.sampling_duration, b.window_calls) {
                (Some(d), _) => BreakerWindow::Time(d),
                (None, Some(n)) => BreakerWindow::Calls(n),
                (None, None) => base.window,
            },
            break_duration: b.break_duration.unwrap_or(base.break_duration),
            half_open_calls: b.half_open_calls.unwrap_or(base.half_open_calls),
        }
    }

    /// Whether this breaker counts an outcome of class `c` as a failure (`breaker.failure_on`,
    /// by default every class; a listed `5xx` also counts 502–504 and the pool's 503, as in
    /// `retry_on`).
    pub fn breaker_counts(&self, c: RetryOn) -> bool {
        match self.breaker.as_ref().and_then(|b| b.failure_on.as_deref()) {
            None => true,
            Some(list) => covered_by(c).iter().any(|x| list.contains(x)),
        }
    }
}
