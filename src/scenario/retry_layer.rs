//! One added layer's settings ([`RetryLayer`]): its kind, what it retries on, its backoff and
//! budget, what it reports and cancels when it gives up, and where it may sit ([`Position`]).
//! The configuration holds them under `layers`; `layers.rs` places them in the stack.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::modes::{AppliesTo, Cancellation};

/// Where an added layer sits, which decides what it wraps and which outcomes it sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Position {
    /// Above `model_retry`: around the whole agent turn (a run-level retry that re-runs the
    /// turn, tool calls included).
    AboveModel,
    /// Between `model_retry` and `executor`: around tool execution (a framework's retry
    /// middleware). Each try is a whole executor call, with its own executor timeout.
    AroundTool,
    /// After `sdk`: on the HTTP hop from the SDK to the provider (an egress proxy). Each try is
    /// a new request to Stripe with the SDK's headers, key included.
    BeforeProvider,
    /// Between `executor` and `refunds_service`: on the HTTP hop to the service (a sidecar or
    /// API gateway). Each try is a new request to the service; a try it gives up on keeps running.
    BeforeService,
}

/// What kind of layer an entry of `layers` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LayerKind {
    /// A framework's retry middleware around tool execution (LangChain's ToolRetryMiddleware,
    /// the common agent frameworks' defaults): 2 retries on any failure, exponential backoff
    /// from 1 s, capped at 60 s, full jitter.
    Retry,
    /// A proxy or sidecar (Envoy's route retry policy): 1 retry on `reset`,
    /// `connect-failure` and `5xx` (POST included), backoff from 25 ms capped at 250 ms, full
    /// jitter.
    Proxy,
    /// A run-level retry above the model (an agent framework's or job runner's retry of the
    /// whole run: Celery/Temporal-style task retries, an agent's `max_retry_limit`): a tool
    /// failure its `retry_on` names is raised out of the turn, and the whole turn runs again,
    /// the model's thinking and tool calls included. 1 retry on every failure and timeout,
    /// exponential backoff from 1 s capped at 60 s, full jitter.
    RunRetry,
    /// A circuit breaker around tool execution (Polly v8's `CircuitBreakerStrategy`,
    /// resilience4j's `CircuitBreaker`): closed, it passes calls and counts their failures
    /// (`breaker.failure_on`) in a sampling window; when the window holds at least
    /// `minimum_throughput` calls and the failure ratio reaches `failure_ratio` it opens, and
    /// answers every call at once with its own error (`circuit-open`: Polly's
    /// `BrokenCircuitException`, resilience4j's `CallNotPermittedException`) for
    /// `break_duration`; the first call after that is let through half-open (with up to
    /// `half_open_calls` probes), whose outcomes close it or open it again. It never retries
    /// (`max_retries` 0). Sits between `model_retry` and `executor`. Defaults: Polly v8's.
    CircuitBreaker,
}

/// An outcome a layer may retry, in Envoy's `retry_on` terms where Envoy has one.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum RetryOn {
    /// The connection was reset or the response never came (Envoy `reset`).
    Reset,
    /// The connection could not be made (Envoy `connect-failure`).
    ConnectFailure,
    /// Any 5xx answer (Envoy `5xx`).
    #[serde(rename = "5xx")]
    FiveXx,
    /// 502, 503 or 504 (Envoy `gateway-error`).
    GatewayError,
    /// 409 Conflict (Envoy `retriable-4xx`).
    #[serde(rename = "retriable-4xx")]
    Retriable4xx,
    /// 429 Too Many Requests.
    #[serde(rename = "429")]
    TooManyRequests,
    /// This layer's per-try timeout, or a timeout reported by the layer below (the executor's).
    Timeout,
    /// The refunds service gave up waiting for a pool connection (its 503).
    PoolExhausted,
    /// The model's LLM call failed after a tool call succeeded (`agent.llm_error_after_tool`,
    /// e.g. a 529 overloaded): only a `run_retry` layer sees it, and its retry replays the
    /// turn, tool calls included.
    LlmError,
    /// A circuit breaker below was open and refused the call at once, without running it
    /// (Polly's `BrokenCircuitException`, resilience4j's `CallNotPermittedException`): nothing
    /// was sent. Retried by default by `retry` and `run_retry` layers (Polly's and
    /// resilience4j's retries handle every exception by default); in no Envoy class.
    CircuitOpen,
}

/// How the delay before retry `n` grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackoffKind {
    /// `base` before every retry.
    Constant,
    /// `base · 2^(n−1)`, capped at `max`.
    Exponential,
}

/// Jitter applied to a backoff delay `d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Jitter {
    /// Exactly `d`.
    None,
    /// `U(0, d)` (AWS "full jitter"; Envoy and most frameworks).
    Full,
    /// `d/2 + U(0, d/2)` (AWS "equal jitter").
    Equal,
    /// `d · U(1 − f, 1 + f)` with `f` = `backoff.jitter_factor`: ±N % around the delay, as
    /// Polly v8's `UseJitter` for constant and linear backoff (±25 %), resilience4j's
    /// `randomizationFactor` (0.5 by default) and gRPC's connection backoff (`JITTER` 0.2) do.
    Proportional,
}

/// A retry layer's backoff. Defaults depend on the layer's kind (see [`LayerKind`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Backoff {
    /// `constant` or `exponential`. Default: `exponential`.
    #[serde(default = "exponential")]
    pub kind: BackoffKind,
    /// First delay. Default: 1 s (`retry`), 25 ms (`proxy`, Envoy's `base_interval`).
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub base: Option<Duration>,
    /// Cap on one delay. Default: 60 s or `base` if larger (`retry`, `run_retry`), 10 × base
    /// (`proxy`, Envoy's `max_interval`). At least `base`.
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub max: Option<Duration>,
    /// Jitter. Default: `full`.
    #[serde(default = "full")]
    pub jitter: Jitter,
    /// With `jitter: proportional`, the factor `f` of `d · U(1 − f, 1 + f)`, in `[0, 1]`.
    /// Default: 0.5 (resilience4j's `randomizationFactor`); Polly v8 uses 0.25, gRPC 0.2.
    /// Only with `proportional`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_factor: Option<f64>,
}

/// resilience4j's default `randomizationFactor` (`IntervalFunction.DEFAULT_RANDOMIZATION_FACTOR`).
pub const DEFAULT_JITTER_FACTOR: f64 = 0.5;

fn exponential() -> BackoffKind {
    BackoffKind::Exponential
}
fn full() -> Jitter {
    Jitter::Full
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            kind: BackoffKind::Exponential,
            base: None,
            max: None,
            jitter: Jitter::Full,
            jitter_factor: None,
        }
    }
}

/// An Envoy-style retry budget: a retry may start only while the layer's retries in flight are
/// fewer than `max(min_retry_concurrency, budget_percent % of its requests in flight)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RetryBudget {
    /// Percent of the requests in flight that may be retries, in [0, 100]. Default: 20 (Envoy).
    #[serde(default = "twenty")]
    pub budget_percent: f64,
    /// Retries always allowed in flight whatever the percentage. Default: 3 (Envoy).
    #[serde(default = "three")]
    pub min_retry_concurrency: u32,
}

fn twenty() -> f64 {
    20.0
}
fn three() -> u32 {
    3
}

/// What a retry layer reports upward when its last try timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportTimeout {
    /// A failure (what the incident's executor did: an `info` outcome shown as `fail`).
    Error,
    /// An unknown outcome (`info`), which callers must not treat as "nothing happened".
    Unknown,
}

/// One added layer of `layers`: a framework retry middleware or a proxy. Every field but `kind`
/// is optional; each default depends on the kind and is written beside the field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RetryLayer {
    /// `retry` (framework middleware) or `proxy` (sidecar).
    pub kind: LayerKind,
    /// Retries after the first try, at most 100. Default: 2 (`retry`), 1 (`proxy`, Envoy's
    /// `num_retries`, accepted as an alias).
    #[serde(
        default,
        alias = "num_retries",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_retries: Option<u32>,
    /// Time limit of one try; the try's work keeps running when the layer gives up on it.
    /// Default: none (the layer waits as long as the layer below does).
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub per_try_timeout: Option<Duration>,
    /// Outcomes that are retried. Default: every failure and timeout (`retry`: `reset`,
    /// `connect-failure`, `5xx`, `retriable-4xx`, `429`, `timeout`, `pool-exhausted`);
    /// `reset`, `connect-failure`, `5xx` (`proxy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on: Option<Vec<RetryOn>>,
    /// Delay between tries.
    #[serde(default)]
    pub backoff: Backoff,
    /// An optional retry budget. Default: none (every allowed retry is made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<RetryBudget>,
    /// What the layer reports upward when its last try timed out: `error` or `unknown`.
    /// Default: `error`.
    #[serde(default = "report_error")]
    pub on_timeout: ReportTimeout,
    /// What happens to a try's work when this layer's `per_try_timeout` gives up on it: `none`,
    /// `queued_only` or `abort_in_flight` (see [`Cancellation`]). Default: `none`.
    #[serde(default = "cancel_none")]
    pub cancellation: Cancellation,
    /// Which tools a `retry` layer retries: `any_tool` (the frameworks' default: every tool
    /// unless filtered) or `idempotent_tools` (MCP `readOnlyHint || idempotentHint`). A proxy
    /// does not know tools. Default: `any_tool`.
    #[serde(default = "any_tool")]
    pub applies_to: AppliesTo,
    /// A `circuit_breaker` layer's settings (only on that kind). Default: Polly v8's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerSettings>,
}

/// Whose defaults a circuit breaker starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakerDefaults {
    /// Polly v8 (`CircuitBreakerStrategyOptions`): `FailureRatio` 0.1, `MinimumThroughput` 100,
    /// `SamplingDuration` 30 s, `BreakDuration` 5 s, one probe call half-open; `ShouldHandle`
    /// every exception but `OperationCanceledException` (here: every failure class).
    #[default]
    Polly,
    /// resilience4j (`CircuitBreakerConfig`): `failureRateThreshold` 50 %,
    /// `minimumNumberOfCalls` 100, a count-based window of the last 100 calls
    /// (`slidingWindowSize`), `waitDurationInOpenState` 60 s,
    /// `permittedNumberOfCallsInHalfOpenState` 10; every exception recorded as a failure.
    Resilience4j,
}

/// A circuit breaker's settings (`layers.NAME.breaker`). Every field is optional; a field left
/// out takes the value of `defaults` (Polly v8's unless `"defaults": "resilience4j"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BreakerSettings {
    /// Whose defaults the fields left out take: `polly` or `resilience4j`. Default: `polly`.
    #[serde(default)]
    pub defaults: BreakerDefaults,
    /// The failure ratio in the window at which the breaker opens (≥), in (0, 1]. Default: 0.1
    /// (Polly `FailureRatio`); 0.5 (resilience4j `failureRateThreshold` 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_ratio: Option<f64>,
    /// Calls the window must hold before the ratio can open the breaker, ≥ 1. Default: 100
    /// (Polly `MinimumThroughput`, resilience4j `minimumNumberOfCalls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_throughput: Option<u32>,
    /// A time-based window: the calls that ended in the last this long. Default: 30 s (Polly
    /// `SamplingDuration`); resilience4j counts calls instead (`window_calls`). Not with
    /// `window_calls`.
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub sampling_duration: Option<Duration>,
    /// A count-based window: the last this many calls (resilience4j `slidingWindowSize` with
    /// `COUNT_BASED`, 100). Default: none with `polly` (a time window), 100 with
    /// `resilience4j`. Not with `sampling_duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_calls: Option<u32>,
    /// How long the breaker stays open before it lets a call through half-open. Default: 5 s
    /// (Polly `BreakDuration`); 60 s (resilience4j `waitDurationInOpenState`).
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub break_duration: Option<Duration>,
    /// Probe calls let through half-open; when they have all ended, a failure ratio at or above
    /// `failure_ratio` opens the breaker again and a lower one closes it. Default: 1 (Polly: the
    /// one probe's outcome decides); 10 (resilience4j `permittedNumberOfCallsInHalfOpenState`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_open_calls: Option<u32>,
    /// The outcomes counted as failures (`retry_on` classes, with their coverage: `5xx` counts
    /// 502–504 and the pool's 503). Default: every class (Polly's `ShouldHandle` handles every
    /// exception but a cancellation; resilience4j records every exception). A success, an
    /// unknown outcome or an outcome left out counts as a success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_on: Option<Vec<RetryOn>>,
}

fn cancel_none() -> Cancellation {
    Cancellation::None
}
fn report_error() -> ReportTimeout {
    ReportTimeout::Error
}
fn any_tool() -> AppliesTo {
    AppliesTo::AnyTool
}

impl RetryLayer {
    /// A layer of `kind` with every default.
    pub fn new(kind: LayerKind) -> Self {
        RetryLayer {
            kind,
            max_retries: None,
            per_try_timeout: None,
            retry_on: None,
            backoff: Backoff::default(),
            budget: None,
            on_timeout: ReportTimeout::Error,
            cancellation: Cancellation::None,
            applies_to: AppliesTo::AnyTool,
            breaker: None,
        }
    }
}

/// The named layers of a scenario, for `Scenario::layers`.
pub type Layers = BTreeMap<String, RetryLayer>;
