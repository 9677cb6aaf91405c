//! What each layer kind does by default, one file per kind: its retries, the outcomes it
//! retries, and its backoff's first delay and cap, each from the system it stands for.
//! [`RetryLayer`]'s accessors (`retries`, `retries_on`, `base`, `max_delay`) read a field when
//! the scenario sets it and the kind's [`KindDefaults`] when not.
//!
//! Adding a layer kind: a variant of [`LayerKind`] (`retry_layer.rs`), one file here with its
//! `KindDefaults` and their sources, and one arm in [`defaults`]. A kind that decides
//! differently in the model (a breaker, a hedge) also gets its policy in `model/layers/`
//! (see `docs/architecture.md`, "How to add a layer kind").

mod circuit_breaker;
mod hedge;
mod mcp_client;
mod proxy;
mod retry;
mod run_retry;

use std::time::Duration;

pub use circuit_breaker::{BreakerConfig, BreakerWindow, POLLY, RESILIENCE4J};
pub(crate) use hedge::MAX_HEDGED_TRIES;

use super::retry_layer::{LayerKind, RetryLayer, RetryOn};

/// A layer kind's defaults, used where the layer leaves a setting out, and where the kind may
/// sit and what it may carry (validation and lint ask these, never the kind's name).
#[derive(Clone, Copy, Debug)]
pub struct KindDefaults {
    /// The kind as a scenario writes it (`"proxy"`), for messages.
    pub name: &'static str,
    /// Sits above `model_retry` and only there: a retry of the whole agent turn.
    pub above_model: bool,
    /// A network proxy: the one kind that may also sit after `sdk` (an egress proxy), and one
    /// that `lint` expects to carry a retry budget, as Envoy's retry policy does.
    pub network_proxy: bool,
    /// An MCP client (`mcp_client`): sits only between `model_retry` and `executor`, and the
    /// only kind that takes the client's settings (`stream_break_probability`,
    /// `request_timeout`, `duplicate_send_probability`, …).
    pub tool_client: bool,
    /// Takes `applies_to` (the tool filter of a framework's retry middleware).
    pub tool_filter: bool,
    /// Sends its next try while the previous one is still running, `hedging_delay` after it
    /// (a hedge), rather than after a failure and a backoff; takes `hedging_delay`, never a
    /// `backoff` or `per_try_timeout`.
    pub hedges: bool,
    /// A circuit breaker: sits only between `model_retry` and `executor`, never retries, takes
    /// `breaker` and none of a retry's settings (`retry_on`, `per_try_timeout`, `budget`,
    /// `backoff`).
    pub circuit_breaker: bool,
    /// Retries after the first try (`max_retries`).
    pub max_retries: u32,
    /// The outcomes retried (`retry_on`).
    pub retry_on: &'static [RetryOn],
    /// The backoff's first delay (`backoff.base`).
    pub base: Duration,
    /// The backoff's cap (`backoff.max`) given the first delay in use.
    pub max_delay: fn(Duration) -> Duration,
}

/// The defaults of layer kind `kind`: one arm per kind.
pub fn defaults(kind: LayerKind) -> &'static KindDefaults {
    match kind {
        LayerKind::Retry => &retry::DEFAULTS,
        LayerKind::Proxy => &proxy::DEFAULTS,
        LayerKind::RunRetry => &run_retry::DEFAULTS,
        LayerKind::McpClient => &mcp_client::DEFAULTS,
        LayerKind::Hedge => &hedge::DEFAULTS,
        LayerKind::CircuitBreaker => &circuit_breaker::DEFAULTS,
    }
}

impl RetryLayer {
    /// Retries after the first try, with the kind's default.
    pub fn retries(&self) -> u32 {
        self.max_retries.unwrap_or(defaults(self.kind).max_retries)
    }

    /// The class a layer retries an answer with HTTP `status` by: `retriable-status-codes` when
    /// `retry_on` lists it and the status is one of `retriable_status_codes` (Envoy's rule),
    /// else `class`, the status's own class.
    pub fn status_class(&self, status: Option<u16>, class: Option<RetryOn>) -> Option<RetryOn> {
        let listed = self
            .retry_on
            .as_deref()
            .unwrap_or(defaults(self.kind).retry_on);
        match (status, &self.retriable_status_codes) {
            (Some(s), Some(codes))
                if codes.contains(&s) && listed.contains(&RetryOn::RetriableStatusCodes) =>
            {
                Some(RetryOn::RetriableStatusCodes)
            }
            _ => class,
        }
    }

    /// Every retry the layer can make: `max_retries` plus the uncounted `timeout_retries`.
    pub fn all_retries(&self) -> u32 {
        self.retries()
            .saturating_add(self.timeout_retries.unwrap_or(0))
    }

    /// Whether this layer retries `outcome`, with the kind's default `retry_on`. As in Envoy,
    /// `5xx` covers `gateway-error` (502–504), and both cover `pool-exhausted` (a 503).
    pub fn retries_on(&self, outcome: RetryOn) -> bool {
        let list = self
            .retry_on
            .as_deref()
            .unwrap_or(defaults(self.kind).retry_on);
        covered_by(outcome).iter().any(|c| list.contains(c))
    }

    /// A hedge's wait before its next try (`hedging_delay`), with Polly v8's 2 s by default.
    pub fn hedging_delay(&self) -> Duration {
        self.hedging_delay.unwrap_or(hedge::HEDGING_DELAY)
    }

    /// First backoff delay, with the kind's default.
    pub fn base(&self) -> Duration {
        self.backoff.base.unwrap_or(defaults(self.kind).base)
    }

    /// Cap on one backoff delay, with the kind's default.
    pub fn max_delay(&self) -> Duration {
        self.backoff
            .max
            .unwrap_or_else(|| (defaults(self.kind).max_delay)(self.base()))
    }
}

/// The `retry_on` entries that retry an outcome of class `c`: itself, and for 502–504 and the
/// pool's 503 the broader classes that include them.
pub(crate) fn covered_by(c: RetryOn) -> &'static [RetryOn] {
    use RetryOn::*;
    match c {
        GatewayError => &[GatewayError, FiveXx],
        PoolExhausted => &[PoolExhausted, GatewayError, FiveXx],
        Reset => &[Reset],
        ConnectFailure => &[ConnectFailure],
        FiveXx => &[FiveXx],
        Retriable4xx => &[Retriable4xx],
        TooManyRequests => &[TooManyRequests],
        Timeout => &[Timeout],
        LlmError => &[LlmError],
        RetriableStatusCodes => &[RetriableStatusCodes],
        CircuitOpen => &[CircuitOpen],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind's defaults as its source has them, and a set field wins over them.
    #[test]
    fn each_kind_has_its_sources_defaults() {
        let retry = RetryLayer::new(LayerKind::Retry);
        assert_eq!(retry.retries(), 2);
        assert!(retry.retries_on(RetryOn::Timeout) && retry.retries_on(RetryOn::LlmError));
        assert_eq!(
            (retry.base(), retry.max_delay()),
            (Duration::from_secs(1), Duration::from_secs(60))
        );

        let proxy = RetryLayer::new(LayerKind::Proxy);
        assert_eq!(proxy.retries(), 1);
        assert!(proxy.retries_on(RetryOn::Reset) && proxy.retries_on(RetryOn::GatewayError));
        assert!(!proxy.retries_on(RetryOn::Timeout) && !proxy.retries_on(RetryOn::TooManyRequests));
        assert_eq!(
            (proxy.base(), proxy.max_delay()),
            (Duration::from_millis(25), Duration::from_millis(250))
        );

        let run = RetryLayer::new(LayerKind::RunRetry);
        assert_eq!(run.retries(), 1);
        assert!(run.retries_on(RetryOn::Timeout));
        assert!(
            run.retries_on(RetryOn::CircuitOpen) && retry.retries_on(RetryOn::CircuitOpen),
            "Polly's and resilience4j's retries handle every exception, an open circuit's too"
        );
        assert!(
            !proxy.retries_on(RetryOn::CircuitOpen),
            "no Envoy class names it"
        );

        let breaker = RetryLayer::new(LayerKind::CircuitBreaker);
        assert_eq!(
            breaker.retries(),
            0,
            "a breaker does not manage retries (Polly)"
        );
        assert!(breaker.breaker_counts(RetryOn::Timeout));
        assert_eq!(breaker.breaker_config(), POLLY);
        assert_eq!(
            (
                POLLY.failure_ratio,
                POLLY.minimum_throughput,
                POLLY.break_duration
            ),
            (0.1, 100, Duration::from_secs(5))
        );
        assert_eq!(POLLY.window, BreakerWindow::Time(Duration::from_secs(30)));
        let r4j: RetryLayer = serde_json::from_str(
            r#"{"kind": "circuit_breaker", "breaker": {"defaults": "resilience4j", "minimum_throughput": 4, "failure_on": ["5xx"]}}"#,
        )
        .unwrap();
        let c = r4j.breaker_config();
        assert_eq!(
            (
                c.failure_ratio,
                c.minimum_throughput,
                c.window,
                c.half_open_calls
            ),
            (0.5, 4, BreakerWindow::Calls(100), 10)
        );
        assert_eq!(c.break_duration, Duration::from_secs(60));
        assert!(
            r4j.breaker_counts(RetryOn::PoolExhausted) && !r4j.breaker_counts(RetryOn::Timeout)
        );

        let mcp = RetryLayer::new(LayerKind::McpClient);
        assert_eq!(mcp.retries(), 1, "one re-issue of a broken stream");
        assert!(
            !mcp.retries_on(RetryOn::Timeout),
            "a timeout is reported, not re-sent"
        );
        assert_eq!(mcp.mcp_request_timeout(), Duration::from_secs(60));
        assert!(mcp.mcp_reissues() && mcp.mcp_sends_cancelled());
        assert_eq!(mcp.mcp_duplicate_gap(), Duration::from_millis(5));
        assert!(!mcp.mcp_streams_break() && !mcp.mcp_duplicates());
        let hedge = RetryLayer::new(LayerKind::Hedge);
        assert_eq!(hedge.retries(), 1, "Polly v8's MaxHedgedAttempts");
        assert_eq!(
            hedge.hedging_delay(),
            Duration::from_secs(2),
            "Polly v8's Delay"
        );
        assert!(hedge.retries_on(RetryOn::Timeout) && hedge.retries_on(RetryOn::Retriable4xx));
        assert!(defaults(LayerKind::Hedge).hedges && !defaults(LayerKind::Proxy).hedges);

        let mut set = RetryLayer::new(LayerKind::Retry);
        set.max_retries = Some(5);
        set.backoff.base = Some(Duration::from_secs(90));
        assert_eq!(set.retries(), 5);
        assert_eq!(
            set.max_delay(),
            Duration::from_secs(90),
            "the cap is at least the base"
        );
    }
}
