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
    /// An MCP client between the model and the tool server (the executor): it sends each tool
    /// call as a JSON-RPC `tools/call` with a request id and waits up to `request_timeout`
    /// (60 s, the MCP TypeScript SDK's `DEFAULT_REQUEST_TIMEOUT_MSEC`). When the response stream
    /// breaks it re-issues the call with a new request id, as the 2026-07-28 specification
    /// requires ("A broken response stream loses the in-flight request; clients MUST re-issue it
    /// as a new request with a new request ID"), while the first call's work has already run on
    /// the server. It may also send a call twice with fresh ids a few milliseconds apart
    /// (`duplicate_send_probability`). At most `max_retries` (default 1) re-issues per call;
    /// `retry_on: ["timeout"]` also re-sends a timed-out call. Only between `model_retry` and
    /// `executor`.
    McpClient,
    /// A hedge (Polly v8's hedging strategy, gRPC's `hedgingPolicy`, Envoy's
    /// `hedge_on_per_try_timeout`): when no answer has come `hedging_delay` after a try
    /// started, the next try is sent while the first keeps running; the first answer that is a
    /// success, or a failure `retry_on` does not name, is reported and the other tries are
    /// dropped client-side (their work, once at the provider, still lands). A failure
    /// `retry_on` names (gRPC's `nonFatalStatusCodes`) sends the next try at once. Polly's
    /// defaults: 1 hedged try (`MaxHedgedAttempts`), `Delay` 2 s, every failure non-fatal
    /// (`ShouldHandle`: all exceptions); when every try fails, the first try's failure is
    /// reported.
    Hedge,
    /// A circuit breaker around tool execution, before the service or after the SDK (Polly
    /// v8's `CircuitBreakerStrategy`, resilience4j's `CircuitBreaker`): closed, it passes calls
    /// and counts their failures (`breaker.failure_on`) in a sampling window; when the window
    /// holds at least
    /// `minimum_throughput` calls and the failure ratio reaches `failure_ratio` it opens, and
    /// answers every call at once with its own error (`circuit-open`: Polly's
    /// `BrokenCircuitException`, resilience4j's `CallNotPermittedException`) for
    /// `break_duration`; the first call after that is let through half-open (with up to
    /// `half_open_calls` probes), whose outcomes close it or open it again. It never retries
    /// (`max_retries` 0). Sits between `model_retry` and `executor`, between `executor` and
    /// `refunds_service`, or after `sdk`. Defaults: Polly v8's.
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
    /// An answer whose HTTP status is one of the layer's `retriable_status_codes` (Envoy
    /// `retriable-status-codes` with `retriable_status_codes`): retry by exact status, e.g.
    /// 503 only. Seen only where the layer reads an HTTP status: a layer between `executor` and
    /// `refunds_service` (the service's status), or after `sdk` (Stripe's or the proxy's).
    RetriableStatusCodes,
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

/// gRPC's retry throttling (gRFC A6 "gRPC Retry Design", `retryThrottling`): the layer keeps a
/// token count starting at `max_tokens`; a request that fails with a class in the layer's
/// `retry_on` takes 1 token away (not below 0), one that succeeds gives `token_ratio` back (not
/// above `max_tokens`); while the count is at or below `max_tokens / 2`, the layer neither
/// retries nor sends another hedged try. A6: "`maxTokens` … must be in the range (0, 1000]",
/// "`tokenRatio` … must be greater than 0" (up to three decimal places).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RetryThrottling {
    /// The token count's ceiling and start, 1 to 1000. Required.
    pub max_tokens: u32,
    /// Tokens a success gives back, in (0, 1000]. Required.
    pub token_ratio: f64,
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

/// What a run-level retry (`run_retry`) remembers of the tool calls of the turns it replays:
/// the step semantics of a durable-execution SDK (AWS Lambda durable functions'
/// `StepSemantics`), where each tool call of a turn is a checkpointed step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Checkpoint {
    /// Nothing: every replayed turn runs its tool calls again (a job runner's retry).
    #[default]
    None,
    /// A step whose result came back is replayed from its checkpoint (no request); one that
    /// started and never completed (the turn was dropped mid-call) runs again. AWS's default,
    /// `AT_LEAST_ONCE_PER_RETRY`.
    AtLeastOncePerRetry,
    /// As `at_least_once_per_retry`, but a step that started and never completed is not run
    /// again: the replay answers `StepInterruptedError` (an unknown outcome, not retried).
    /// AWS's `AT_MOST_ONCE_PER_RETRY`.
    AtMostOncePerRetry,
}

/// One added layer of `layers`: a framework retry middleware or a proxy. Every field but `kind`
/// is optional; each default depends on the kind and is written beside the field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RetryLayer {
    /// `retry` (framework middleware), `proxy` (sidecar), `run_retry` (above the model) or
    /// `hedge` (a second try before the first has answered).
    pub kind: LayerKind,
    /// Retries after the first try, at most 100. Default: 2 (`retry`), 1 (`proxy`, Envoy's
    /// `num_retries`, accepted as an alias). On a `hedge` layer, the hedged tries sent beside
    /// the first, at most 4 (gRPC caps `maxAttempts`, which counts the first, at 5); default 1
    /// (Polly v8's `MaxHedgedAttempts`).
    #[serde(
        default,
        alias = "num_retries",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_retries: Option<u32>,
    /// Retries after a timed-out try that do not count against `max_retries`: a runtime that
    /// re-runs a step whose invocation timed out, outside the step's own retry budget and
    /// whatever its `retry_on` says (AWS Lambda durable functions' backend retries of a
    /// timed-out invocation beside the step's retry strategy). At most 100. Default: none (a
    /// timed-out try counts as any other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_retries: Option<u32>,
    /// Time limit of one try; the try's work keeps running when the layer gives up on it.
    /// Default: none (the layer waits as long as the layer below does).
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub per_try_timeout: Option<Duration>,
    /// Time limit over all the layer's tries, counted from the start of its first try
    /// (Temporal's `ScheduleToCloseTimeout` beside `StartToCloseTimeout`, the per-try limit; an
    /// outer timeout around a Polly v8 retry; a durable step's overall timeout). A try still
    /// running when it passes is given up as at its `per_try_timeout` (its work keeps running),
    /// and no retry starts whose backoff would end after it (Temporal's rule). Default: none.
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub deadline: Option<Duration>,
    /// Outcomes that are retried. Default: every failure and timeout (`retry`: `reset`,
    /// `connect-failure`, `5xx`, `retriable-4xx`, `429`, `timeout`, `pool-exhausted`);
    /// `reset`, `connect-failure`, `5xx` (`proxy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on: Option<Vec<RetryOn>>,
    /// The exact HTTP statuses retried when `retry_on` lists `retriable-status-codes` (Envoy's
    /// `retriable_status_codes`, e.g. `[503]`), whatever class they belong to. Each in
    /// 100–599. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retriable_status_codes: Option<Vec<u16>>,
    /// Delay between tries.
    #[serde(default)]
    pub backoff: Backoff,
    /// An optional retry budget. Default: none (every allowed retry is made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<RetryBudget>,
    /// gRPC's retry throttling (gRFC A6, `retryThrottling` in the service config): a token
    /// count shared by every request through the layer in the run. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_throttling: Option<RetryThrottling>,
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
    /// Only for `run_retry`: what a replayed turn does with the tool calls of earlier turns
    /// (`none`, `at_least_once_per_retry`, `at_most_once_per_retry`; see [`Checkpoint`]).
    /// Default: `none`.
    #[serde(default, skip_serializing_if = "is_no_checkpoint")]
    pub checkpoint: Checkpoint,
    /// `mcp_client` only: the probability, in [0, 1], that the response stream of one
    /// `tools/call` breaks as its response is on its way, after the server ran the tool (the
    /// response is lost; closing the stream is a cancellation the server sees after the work:
    /// "Processing may have completed before cancellation arrives"). Drawn per request from
    /// the stream `mcp_stream_break`, only when set above 0. Default: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_break_probability: Option<f64>,
    /// `mcp_client` only: the requests of every tool call whose response stream breaks, as a
    /// script (1 = the first `tools/call`, 2 = its first re-issue, …), besides
    /// `stream_break_probability`. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_break_requests: Option<Vec<u32>>,
    /// `mcp_client` only: whether a broken response stream is re-issued as a new request with
    /// a new request id (the 2026-07-28 specification's MUST, SEP-2575), up to `max_retries`
    /// times; `false` reports the lost response as the layer's `on_timeout` says: a failure
    /// (class `reset`) or an unknown outcome. Default: true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reissue_on_stream_break: Option<bool>,
    /// `mcp_client` only: how long the client waits for a `tools/call` response before it
    /// gives up on the request. Default: 60 s (the MCP TypeScript SDK's
    /// `DEFAULT_REQUEST_TIMEOUT_MSEC = 60000`).
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub request_timeout: Option<Duration>,
    /// `mcp_client` only: whether the client sends `notifications/cancelled` when its
    /// `request_timeout` passes (the TypeScript SDK and rmcp do, rmcp with the reason "request
    /// timeout"): the server then cancels the tool run (the executor's work is dropped, and
    /// the request it sent is given up on with the layer's `cancellation`); `false` leaves the
    /// tool run going on the server to its end. Default: true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_cancelled: Option<bool>,
    /// `mcp_client` only: the probability, in [0, 1], that the client sends a tool call twice,
    /// the second copy with a fresh request id `duplicate_send_gap` after the first (a
    /// duplicated `tools/call`: no failure at all); the client takes the first copy's answer
    /// and the second runs on the server too. Drawn once per tool call from the stream
    /// `mcp_duplicate_send`, only when set above 0. Default: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_send_probability: Option<f64>,
    /// `mcp_client` only: the time between a tool call and its duplicated copy. Default: 5 ms.
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub duplicate_send_gap: Option<Duration>,
    /// A `hedge` layer's wait, after a try started, before it sends the next try while that one
    /// keeps running (Polly v8's `Delay`, gRPC's `hedgingDelay`; Envoy's per-try timeout under
    /// `hedge_on_per_try_timeout`). `0s` sends every try at once (Polly's parallel mode, gRPC's
    /// `hedgingDelay` left out). Default: 2 s (Polly v8). Only on a `hedge` layer.
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub hedging_delay: Option<Duration>,
    /// Envoy's `hedge_policy.additional_request_chance`: the probability, in [0, 1], that a
    /// second try is sent at once beside the first (`initial_requests` 1; a larger
    /// `initial_requests` is `hedging_delay: 0s`). Drawn per request from its own stream, so
    /// other draws do not move. Default: 0 (Envoy). Only on a `hedge` layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_request_chance: Option<f64>,
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

fn is_no_checkpoint(c: &Checkpoint) -> bool {
    *c == Checkpoint::None
}

/// An `mcp_client` layer's default `request_timeout`: the MCP TypeScript SDK's
/// `DEFAULT_REQUEST_TIMEOUT_MSEC = 60000`.
pub const MCP_DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// An `mcp_client` layer's default `duplicate_send_gap`: 5 ms ("a few milliseconds apart").
pub const MCP_DEFAULT_DUPLICATE_GAP: Duration = Duration::from_millis(5);

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
            timeout_retries: None,
            per_try_timeout: None,
            deadline: None,
            retry_on: None,
            retriable_status_codes: None,
            backoff: Backoff::default(),
            budget: None,
            retry_throttling: None,
            on_timeout: ReportTimeout::Error,
            cancellation: Cancellation::None,
            applies_to: AppliesTo::AnyTool,
            checkpoint: Checkpoint::None,
            stream_break_probability: None,
            stream_break_requests: None,
            reissue_on_stream_break: None,
            request_timeout: None,
            send_cancelled: None,
            duplicate_send_probability: None,
            duplicate_send_gap: None,
            hedging_delay: None,
            additional_request_chance: None,
            breaker: None,
        }
    }

    /// `mcp_client`: the client's request timeout, with its default (60 s).
    pub fn mcp_request_timeout(&self) -> Duration {
        self.request_timeout.unwrap_or(MCP_DEFAULT_REQUEST_TIMEOUT)
    }

    /// `mcp_client`: whether a broken stream is re-issued (default: true, the spec's MUST).
    pub fn mcp_reissues(&self) -> bool {
        self.reissue_on_stream_break.unwrap_or(true)
    }

    /// `mcp_client`: whether a timed-out request is cancelled on the server (default: true).
    pub fn mcp_sends_cancelled(&self) -> bool {
        self.send_cancelled.unwrap_or(true)
    }

    /// `mcp_client`: the gap before a duplicated copy, with its default (5 ms).
    pub fn mcp_duplicate_gap(&self) -> Duration {
        self.duplicate_send_gap.unwrap_or(MCP_DEFAULT_DUPLICATE_GAP)
    }

    /// `mcp_client`: whether any response stream may break (a probability above 0 or a
    /// script).
    pub fn mcp_streams_break(&self) -> bool {
        self.stream_break_probability.is_some_and(|p| p > 0.0)
            || self
                .stream_break_requests
                .as_ref()
                .is_some_and(|r| !r.is_empty())
    }

    /// `mcp_client`: whether a tool call may be sent twice.
    pub fn mcp_duplicates(&self) -> bool {
        self.duplicate_send_probability.is_some_and(|p| p > 0.0)
    }

    /// The most requests one try of this layer can send: 2 for an `mcp_client` that may
    /// duplicate a call, 1 otherwise.
    pub fn copies_per_try(&self) -> u32 {
        if self.mcp_duplicates() {
            2
        } else {
            1
        }
    }
}

/// The named layers of a scenario, for `Scenario::layers`.
pub type Layers = BTreeMap<String, RetryLayer>;
