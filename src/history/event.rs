//! The typed event record every run produces (DESIGN §4, "Trace").

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::scenario::OnTimeout;
use crate::sim::SimTime;

/// An event's text field: a fixed text (`&'static str`, no allocation per event) or one built
/// for the event. Serialized as a plain JSON string either way.
pub(crate) type Text = Cow<'static, str>;

/// One thing that happened, at one virtual instant.
///
/// `ticket`, `attempt` (the model's tool-call number for the ticket, 0 = first call) and `call`
/// (the refunds-service request id, unique per run) are set where they apply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Virtual time, ns since scenario start.
    pub t_ns: SimTime,
    /// Ticket id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<u64>,
    /// Model attempt number for the ticket (0 = first tool call, 1 = first retry, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Refunds-service request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<u64>,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// A tool call's outcome in Jepsen's history vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Known to have succeeded.
    Ok,
    /// Known to have failed (or shown to the model as failed).
    Fail,
    /// Indeterminate: the outcome is unknown.
    Info,
}

/// How one Stripe request ended, as the client saw it (`StripeResponse.outcome`).
///
/// Serialized as its snake_case name, which for an error is the `code` (or `type`) of Stripe's
/// error object: `idempotency_key_in_use` is the 409 of a key still in flight, `idempotency_error`
/// the 400 of a key reused with other parameters, `charge_already_refunded` the 400 of a charge
/// with nothing left to refund, `lock_timeout` the 429 of a contended object ("Idempotent
/// requests", "Errors" and "Rate limits" in Stripe's API reference). The checker and the
/// metrics match on these variants, never on their text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderOutcome {
    /// HTTP 200 with a new refund object.
    Created,
    /// A saved response replayed under its idempotency key (`Idempotent-Replayed: true`): a
    /// refund or a saved error such as a 500 after commit.
    Replayed,
    /// A duplicate of a request still in flight, refused with the status that
    /// `provider.in_flight_duplicate_status` names (422 `duplicate_in_progress`).
    DuplicateInProgress,
    /// A repeat of a request that already finished, refused with the status that
    /// `provider.duplicate_rejected_status` names (code `duplicate_transaction`) instead of the
    /// saved answer replayed: the first request's effect stands, the repeat is told nothing of it.
    DuplicateRejected,
    /// 409: the key's first request is still being processed.
    IdempotencyKeyInUse,
    /// 400: the key was used with different parameters.
    IdempotencyError,
    /// 400: the charge has no amount left to refund.
    ChargeAlreadyRefunded,
    /// 429 `lock_timeout`: the charge object was locked by another request.
    LockTimeout,
    /// 429: rate limited.
    RateLimited,
    /// 5xx: Stripe's `api_error`.
    ApiError,
    /// Any other 4xx (`invalid_request_error`).
    InvalidRequest,
    /// No response: the connection dropped (status 0).
    ConnectionLost,
    /// No response: the SDK's own timeout fired (status 0).
    SdkTimeout,
    /// No response: the caller aborted the call in flight (`abort_in_flight`, status 0).
    AbortedByCaller,
    /// No response: the connection to the provider could not be made, so the request never
    /// reached it (`stripe.faults.connect_failure`, status 0; Envoy's `connect-failure`).
    ConnectFailed,
    /// 400 `balance_insufficient`: the account's balance cannot cover the effect
    /// (`provider.effect_limit: balance`, or before `provider.balance_insufficient_until`).
    BalanceInsufficient,
}

impl ProviderOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [ProviderOutcome; 16] = [
        ProviderOutcome::Created,
        ProviderOutcome::Replayed,
        ProviderOutcome::DuplicateInProgress,
        ProviderOutcome::DuplicateRejected,
        ProviderOutcome::IdempotencyKeyInUse,
        ProviderOutcome::IdempotencyError,
        ProviderOutcome::ChargeAlreadyRefunded,
        ProviderOutcome::LockTimeout,
        ProviderOutcome::RateLimited,
        ProviderOutcome::ApiError,
        ProviderOutcome::InvalidRequest,
        ProviderOutcome::ConnectionLost,
        ProviderOutcome::SdkTimeout,
        ProviderOutcome::AbortedByCaller,
        ProviderOutcome::ConnectFailed,
        ProviderOutcome::BalanceInsufficient,
    ];

    /// The snake_case name the trace and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderOutcome::Created => "created",
            ProviderOutcome::Replayed => "replayed",
            ProviderOutcome::DuplicateInProgress => "duplicate_in_progress",
            ProviderOutcome::DuplicateRejected => "duplicate_rejected",
            ProviderOutcome::IdempotencyKeyInUse => "idempotency_key_in_use",
            ProviderOutcome::IdempotencyError => "idempotency_error",
            ProviderOutcome::ChargeAlreadyRefunded => "charge_already_refunded",
            ProviderOutcome::LockTimeout => "lock_timeout",
            ProviderOutcome::RateLimited => "rate_limited",
            ProviderOutcome::ApiError => "api_error",
            ProviderOutcome::InvalidRequest => "invalid_request",
            ProviderOutcome::ConnectionLost => "connection_lost",
            ProviderOutcome::SdkTimeout => "sdk_timeout",
            ProviderOutcome::AbortedByCaller => "aborted_by_caller",
            ProviderOutcome::ConnectFailed => "connect_failed",
            ProviderOutcome::BalanceInsufficient => "balance_insufficient",
        }
    }

    /// A conflict over the idempotency key (409 in use, 400 mismatch, in-flight duplicate, a
    /// finished duplicate rejected): the request was refused because of its key, so its effect
    /// is whatever the key's first request did.
    pub fn is_key_conflict(self) -> bool {
        matches!(
            self,
            ProviderOutcome::IdempotencyKeyInUse
                | ProviderOutcome::IdempotencyError
                | ProviderOutcome::DuplicateInProgress
                | ProviderOutcome::DuplicateRejected
        )
    }
}

impl std::fmt::Display for ProviderOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refund object's `status` (Stripe API, "The Refund object").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundStatus {
    /// Money is on its way.
    Pending,
    /// Customer action needed.
    RequiresAction,
    /// Done.
    Succeeded,
    /// Failed; no money moved.
    Failed,
    /// Canceled; no money moved.
    Canceled,
}

impl RefundStatus {
    /// Whether money moves (or has moved) for a refund in this status.
    pub fn moves_money(self) -> bool {
        matches!(
            self,
            RefundStatus::Pending | RefundStatus::RequiresAction | RefundStatus::Succeeded
        )
    }

    /// Stripe's name for the status.
    pub fn as_str(self) -> &'static str {
        match self {
            RefundStatus::Pending => "pending",
            RefundStatus::RequiresAction => "requires_action",
            RefundStatus::Succeeded => "succeeded",
            RefundStatus::Failed => "failed",
            RefundStatus::Canceled => "canceled",
        }
    }
}

impl std::fmt::Display for RefundStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who sent a request to Stripe: the refunds service or a human in the dashboard
/// (`RefundCreated.by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Caller {
    /// The refunds service.
    Service,
    /// A human, from the dashboard.
    Human,
}

impl Caller {
    /// `service` or `human`.
    pub fn as_str(self) -> &'static str {
        match self {
            Caller::Service => "service",
            Caller::Human => "human",
        }
    }
}

impl std::fmt::Display for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The refunds service's view of a ticket, as returned by `get_status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum TicketStatus {
    /// No refund and nothing in flight.
    None,
    /// A request is in flight.
    Pending,
    /// A refund exists.
    Refunded {
        /// Its id.
        refund_id: String,
    },
    /// The outcome is not known: a call ended without a definite answer and the service
    /// recorded it so (`sdk_timeout_recorded_as: unknown`), or the probe itself failed or timed
    /// out.
    Unknown,
}

/// What the model decided after reading a tool result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Call the tool again.
    Retry,
    /// Hand the ticket to a human.
    Escalate,
}

/// What a human did with an escalated ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HumanAction {
    /// Checked the dashboard, found a refund, closed the ticket.
    FoundExisting,
    /// Issued a manual refund (no idempotency key).
    ManualRefund,
    /// Re-ran the refund tool through the executor and the refunds service.
    RerunTool,
}

/// Why a message reaches the consumer again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RedeliveryReason {
    /// Its visibility timeout expired before an ack (`deliveries.queue`).
    VisibilityTimeout {
        /// The visibility timeout, ns.
        timeout_ns: u64,
    },
    /// A consumer-group rebalance gave its partition to the next owner, which consumed it
    /// again from the last committed offset (`deliveries.rebalance`).
    Rebalance {
        /// The drain deadline the revoked consumer had, ns.
        drain_ns: u64,
    },
    /// The producer published it to a second broker (`deliveries.brokers: 2`).
    SecondBroker,
    /// The sender delivered the event again (`deliveries.duplicate_probability`).
    SenderResent,
    /// Another trigger for the same ticket, with an event id of its own
    /// (`deliveries.duplicate_from: other_trigger`).
    OtherTrigger,
}

/// Event kinds and their details.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A refund ticket opened; `amount_cents` is what support approved.
    TicketOpened {
        /// Approved refund, cents.
        amount_cents: u64,
        /// The charge being refunded, cents.
        charge_amount_cents: u64,
        /// Arrival-schedule phase label.
        phase: String,
    },
    /// The ticket's triggering event (e.g. a helpdesk's `ticket.created` webhook) reached the
    /// consumer, which started the agent on the ticket. Recorded only when the scenario's
    /// `deliveries.duplicate_probability` is above 0, so runs without duplicates keep their
    /// traces.
    Delivered {
        /// The event's id, the same on every delivery of it (`evt_{ticket}`).
        event_id: String,
        /// Whether this is the sender's second delivery of the event (at-least-once delivery):
        /// a second, concurrent agent run on the ticket.
        duplicate: bool,
        /// The message's own id (`msg_{ticket}_{copy}`): each broker's copy, and the sender's
        /// resend, has its own; every receive of one message shares it. Only with the
        /// consumer model of `deliveries.queue`, `rebalance`, `brokers` or `dedup_record`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delivery_id: Option<String>,
        /// The message's receive count, from 1 (SQS `ApproximateReceiveCount`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        receive: Option<u32>,
        /// Why the message arrives again, when it does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<RedeliveryReason>,
    },
    /// The consumer dropped a second delivery of an event it had seen
    /// (`deliveries.consumer_dedup: event_id`).
    DeliveryDeduped {
        /// The event's id.
        event_id: String,
        /// Whether the consumer deleted its dedup record on seeing this copy
        /// (`deliveries.dedup_record.delete_on_duplicate`): a further copy runs again.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        record_deleted: bool,
    },
    /// The consumer acked a message (SQS `DeleteMessage`, a committed offset): it is not
    /// received again.
    DeliveryAcked {
        /// The message's id.
        delivery_id: String,
        /// The receive whose handler acked it.
        receive: u32,
    },
    /// The consumer crashed after the handler of a receive ended and before its ack
    /// (`deliveries.queue.crash_before_ack_probability`): the message is received again
    /// when its visibility timeout expires.
    ConsumerCrashed {
        /// The message's id.
        delivery_id: String,
        /// The receive whose ack was lost.
        receive: u32,
    },
    /// A message received `receives` times without an ack went to the dead-letter queue
    /// (`deliveries.queue.max_receives`, SQS `maxReceiveCount`).
    DeadLettered {
        /// The message's id.
        delivery_id: String,
        /// Receives it had.
        receives: u32,
    },
    /// The model called the tool.
    ToolCall {
        /// Tool name.
        tool: String,
        /// `amount` argument, cents.
        amount_cents: u64,
    },
    /// The executor sent a request to the refunds service.
    ServiceRequest {
        /// Executor-level try within the tool call (0 unless an executor retry layer is on).
        exec_try: u32,
        /// The tries (≥ 1) of the added layers this request went through, by layer name
        /// (e.g. `{"sidecar": 1}` for the sidecar's first retry); absent on a first try.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        via: BTreeMap<String, u32>,
    },
    /// An added layer (framework retry, proxy) retries: try `layer_try` (1 = first retry) starts
    /// after `backoff_ns`.
    LayerRetry {
        /// The layer's name in `stack`.
        layer: String,
        /// The try about to start (1 = first retry).
        layer_try: u32,
        /// The `retry_on` class that caused it (`timeout`, `5xx`, `reset`, …).
        reason: Text,
        /// Backoff before the try, ns.
        backoff_ns: u64,
    },
    /// A `hedge` layer sent try `layer_try` (1 = the first hedged try) while `running` earlier
    /// tries were still running, `after_ns` after the latest of them started: its
    /// `hedging_delay` passed without an answer (`reason` `delay`), or a try failed with a class
    /// its `retry_on` names (`reason` that class), which sends the next try at once.
    LayerHedge {
        /// The layer's name in `stack`.
        layer: String,
        /// The try about to start (1 = the first hedged try).
        layer_try: u32,
        /// `delay`, or the `retry_on` class of the failure that sent it at once.
        reason: Text,
        /// Since the latest earlier try started, ns.
        after_ns: u64,
        /// Earlier tries still running (their answers still awaited), which keep running.
        running: u32,
    },
    /// A circuit breaker (`kind: circuit_breaker`) opened: its window (or its half-open probes)
    /// held `failures` failures in `calls` calls, at or above its `failure_ratio`; it refuses
    /// calls for `open_for_ns`. Recorded at the call whose outcome opened it.
    BreakerOpened {
        /// The layer's name in `stack`.
        layer: String,
        /// Failures counted.
        failures: u32,
        /// Calls counted.
        calls: u32,
        /// How long it stays open, ns (`break_duration`).
        open_for_ns: u64,
    },
    /// A circuit breaker's `break_duration` passed and this call arrived: it is half-open and
    /// lets this call through as a probe.
    BreakerHalfOpen {
        /// The layer's name in `stack`.
        layer: String,
    },
    /// A half-open circuit breaker's probes ended with a failure ratio below its
    /// `failure_ratio`: it closed.
    BreakerClosed {
        /// The layer's name in `stack`.
        layer: String,
        /// Probes that ended.
        probes: u32,
    },
    /// An open circuit breaker refused this call at once with its own error (class
    /// `circuit-open`); nothing was sent below it.
    BreakerRejected {
        /// The layer's name in `stack`.
        layer: String,
        /// How long it stays open after this call, ns (0: half-open, every probe slot taken).
        open_for_ns: u64,
    },
    /// An added layer would have retried but its retry budget was spent.
    LayerBudgetExhausted {
        /// The layer's name in `stack`.
        layer: String,
        /// The try that would have started (1 = first retry).
        layer_try: u32,
    },
    /// An added layer's per-try timeout fired; the try's work keeps running.
    LayerTimeout {
        /// The layer's name in `stack`.
        layer: String,
        /// The try that timed out (0 = first try).
        layer_try: u32,
        /// The per-try timeout, ns.
        after_ns: u64,
    },
    /// An added layer's `deadline` over all its tries passed: the try in flight was given up
    /// (its work keeps running), or the next retry would have started after it; the layer
    /// reports its last answer upward (Temporal's `ScheduleToCloseTimeout`).
    LayerDeadlineExceeded {
        /// The layer's name in `stack`.
        layer: String,
        /// The last try the layer made (0 = first try).
        layer_try: u32,
        /// The deadline, ns from the start of the layer's first try.
        deadline_ns: u64,
        /// Whether it passed while try `layer_try` was in flight (the try was given up); else
        /// the next retry's backoff would have ended after it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        in_flight: bool,
    },
    /// The service recorded a committed refund in its ledger and goes on working before it
    /// answers (`refunds_service.work_after_refund`): the effect is done, the run is not.
    WorkAfterRefund {
        /// The refund just recorded.
        refund_id: String,
        /// How long the run goes on before answering, ns.
        work_ns: u64,
    },
    /// A replayed turn's tool call answered from the checkpoint of an earlier turn's call
    /// (a run-level retry's `checkpoint`): no request was made.
    StepReplayed {
        /// The step: the call's index within its turn (0 = the turn's first call).
        step: u32,
        /// The model attempt whose result was checkpointed.
        from_attempt: u32,
    },
    /// A replayed turn's tool call whose earlier run started and never completed, answered
    /// `StepInterruptedError` (`checkpoint: at_most_once_per_retry`): not run again.
    StepInterrupted {
        /// The step: the call's index within its turn.
        step: u32,
        /// The model attempt that started it.
        from_attempt: u32,
    },
    /// An `mcp_client` layer's `tools/call` response stream broke after the server ran the
    /// tool: the response is lost (MCP 2026-07-28: "A broken response stream loses the
    /// in-flight request").
    McpStreamBroken {
        /// The layer's name in `stack`.
        layer: String,
        /// The JSON-RPC id of the request whose response was lost.
        request_id: u64,
    },
    /// An `mcp_client` layer sent a tool call again as a new request with a new request id:
    /// after a broken stream (the specification's MUST) or a request timeout (`retry_on:
    /// ["timeout"]`).
    McpReissued {
        /// The layer's name in `stack`.
        layer: String,
        /// The new request's JSON-RPC id.
        request_id: u64,
        /// The id of the request it replaces.
        previous_id: u64,
        /// `stream_broken` or `timeout`.
        reason: Text,
    },
    /// An `mcp_client` layer sent a copy of a tool call with a fresh request id, `gap_ns`
    /// after the original (`duplicate_send_probability`): both reach the server, which may
    /// refuse the second.
    McpDuplicateSent {
        /// The layer's name in `stack`.
        layer: String,
        /// The copy's JSON-RPC id.
        request_id: u64,
        /// The original's id.
        original_id: u64,
        /// Time since the original was sent, ns.
        gap_ns: u64,
    },
    /// An `mcp_client` layer's `request_timeout` passed before a response.
    McpRequestTimeout {
        /// The layer's name in `stack`.
        layer: String,
        /// The request's JSON-RPC id.
        request_id: u64,
        /// The request timeout, ns.
        after_ns: u64,
        /// Whether the client sent `notifications/cancelled` and the server cancelled the tool
        /// run (`send_cancelled`); otherwise the run keeps going on the server.
        cancelled: bool,
    },
    /// The tool server answered a `tools/call` from its request idempotency key
    /// (`executor.request_idempotency`, MCP SEP-3182) without running the tool.
    McpKeyAnswered {
        /// The request's JSON-RPC id.
        request_id: u64,
        /// The id of the request that first carried the key.
        first_id: u64,
        /// `replayed` (the stored result returned), `in_progress` (rejected:
        /// `idempotency_key_in_progress`) or `conflict` (rejected: other arguments,
        /// `idempotency_key_conflict`).
        outcome: Text,
    },
    /// A refunds-service request started waiting for a pool connection.
    PoolWait {
        /// Waiters in the pool queue including this one (ticket and background requests).
        queue_depth: u32,
    },
    /// A request got a pool connection.
    PoolAcquire {
        /// Time spent waiting, ns.
        waited_ns: u64,
    },
    /// A request gave up waiting for a pool connection (acquire timeout).
    PoolTimeout {
        /// Time spent waiting, ns.
        waited_ns: u64,
    },
    /// A connection went back to the pool.
    PoolRelease,
    /// Work dropped before reaching Stripe because the caller's deadline had passed.
    RequestDropped,
    /// An HTTP request to Stripe's `POST /v1/refunds`.
    StripeRequest {
        /// `Idempotency-Key`, when sent.
        idempotency_key: Option<String>,
        /// The body's business id (`refunds_service.business_id`), when sent; absent from the
        /// trace when not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        business_id: Option<String>,
        /// Amount, cents.
        amount_cents: u64,
        /// SDK network try (0 = first).
        sdk_try: u32,
        /// The tries (≥ 1) of the proxies after `sdk` this request went through, by layer name
        /// (e.g. `{"egress": 1}` for the egress proxy's first retry); absent on a first try and
        /// without such proxies. With them, each of their tries is a request of its own, traced
        /// where it leaves for Stripe.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        via: BTreeMap<String, u32>,
    },
    /// The model's LLM call reading a successful tool result failed
    /// (`agent.llm_error_after_tool`).
    LlmError,
    /// The refunds service failed after Stripe's 200 and before its ledger write
    /// (`refunds_service.crash_after_provider_ok`): the refund exists, the ledger does not know.
    ServiceCrash {
        /// The refund Stripe returned.
        refund_id: String,
    },
    /// Stripe's answer (or its absence) as the client saw it.
    StripeResponse {
        /// HTTP status; 0 when the connection was lost or the SDK timed out.
        status: u16,
        /// How it ended (serialized as `created`, `replayed`, `idempotency_key_in_use`, …).
        outcome: ProviderOutcome,
        /// Refund id in the body, if any.
        refund_id: Option<String>,
        /// Time from request to answer, ns.
        latency_ns: u64,
        /// The proxies' tries of the request this answers (as its `stripe_request`'s `via`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        via: BTreeMap<String, u32>,
    },
    /// A refund object came into existence at Stripe.
    RefundCreated {
        /// `re_…`.
        refund_id: String,
        /// Cents.
        amount_cents: u64,
        /// Refund status (`succeeded`, `pending`, `failed`, …).
        status: RefundStatus,
        /// Whether money moves (status not `failed`/`canceled`).
        moves_money: bool,
        /// `service` or `human`.
        by: Caller,
    },
    /// A `pending` refund reached its final status (`provider.settle`).
    RefundSettled {
        /// `re_…`.
        refund_id: String,
        /// Cents.
        amount_cents: u64,
        /// When it was created (virtual ns).
        created_ns: u64,
        /// The final status: `succeeded`, `failed` or `canceled`.
        status: RefundStatus,
        /// Whether money moves now (`succeeded`).
        moves_money: bool,
    },
    /// The refunds service answered a request.
    ServiceResponse {
        /// Whether a refund is reported.
        ok: bool,
        /// The refund reported.
        refund_id: Option<String>,
        /// Error text when not ok.
        error: Option<String>,
        /// The executor had already given up on this request (a late, "zombie" response).
        late: bool,
        /// Time from request to response, ns.
        latency_ns: u64,
    },
    /// The executor's timeout fired.
    ExecutorTimeout {
        /// The timeout, ns.
        after_ns: u64,
        /// What the executor does next: `report_error` or `probe_status` (its `on_timeout`).
        action: OnTimeout,
    },
    /// The executor's status probe (`get_status(ticket)`) answered, failed or timed out.
    Probe {
        /// The answer (`unknown` when the probe failed or timed out).
        status: TicketStatus,
        /// Why the probe itself gave no answer (`timeout after 2000ms`, `get_status answered
        /// 503`); absent when the service answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The tool result shown to the model.
    ToolResult {
        /// `ok`, `fail` or `info` (indeterminate).
        outcome: Outcome,
        /// The text the model read.
        shown: String,
        /// The refund id shown, if any.
        refund_id: Option<String>,
    },
    /// The model's decision after a non-ok result.
    ModelDecision {
        /// Retry or escalate.
        decision: Decision,
        /// What the model said.
        text: Text,
    },
    /// The ticket went to a human.
    Escalation {
        /// Why.
        reason: String,
    },
    /// A human acted on an escalated ticket.
    Human {
        /// What they did.
        action: HumanAction,
    },
    /// In an exact replay ([`crate::model::world::World::recording_wins`]), Stripe's rules would have
    /// answered a recorded provider request otherwise than the recording says; the run
    /// followed the recording. A finding about the recording (a provider that does not keep
    /// Stripe's idempotency rules, or a recording that misreads a replay), reported by
    /// `refundsim replay`.
    RecordingDisagrees {
        /// The request, `TICKET/ATTEMPT/TRY` (see [`crate::scenario::RequestKey`]).
        request: String,
        /// What the recording says happened, e.g. `200 with a new refund`.
        recorded: String,
        /// What Stripe's rules would have answered, e.g. `200 as an idempotent replay`.
        rules: String,
    },
    /// The stale-pending sweep (`reconciliation.stale_pending`) closed the ticket's pending
    /// ledger row: recorded the provider's refund it found (`refund_id`), or marked the row
    /// failed (`refund_id` absent), writing a new key when the service's `rotate_key` rule
    /// rotates after a definite failure.
    StalePendingClosed {
        /// How long the row had been pending, ns.
        pending_for_ns: u64,
        /// The provider's refund recorded as the ticket's (`check_provider`); absent when the
        /// row was marked failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refund_id: Option<String>,
        /// Whether the service wrote a new idempotency key for the ticket.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        key_rotated: bool,
    },
    /// The reconciliation job found tickets with more than one refund.
    ReconciliationAlert {
        /// Newly found tickets.
        tickets: Vec<u64>,
        /// For each, when its second refund was created (ns), in the same order.
        duplicate_at_ns: Vec<u64>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names reports print (`as_str`) are the names the trace writes and reads (serde), for
    /// every variant; a trace naming an outcome that does not exist is refused, not kept as text.
    #[test]
    fn typed_names_agree_with_the_trace() {
        for o in ProviderOutcome::ALL {
            let json = serde_json::to_string(&o).unwrap();
            assert_eq!(json, format!("\"{}\"", o.as_str()));
            assert_eq!(serde_json::from_str::<ProviderOutcome>(&json).unwrap(), o);
        }
        let key_conflicts: Vec<_> = ProviderOutcome::ALL
            .into_iter()
            .filter(|o| o.is_key_conflict())
            .map(ProviderOutcome::as_str)
            .collect();
        assert_eq!(
            key_conflicts,
            [
                "duplicate_in_progress",
                "duplicate_rejected",
                "idempotency_key_in_use",
                "idempotency_error"
            ]
        );
        for s in [
            RefundStatus::Pending,
            RefundStatus::RequiresAction,
            RefundStatus::Succeeded,
            RefundStatus::Failed,
            RefundStatus::Canceled,
        ] {
            assert_eq!(
                serde_json::to_string(&s).unwrap(),
                format!("\"{}\"", s.as_str())
            );
        }
        for c in [Caller::Service, Caller::Human] {
            assert_eq!(
                serde_json::to_string(&c).unwrap(),
                format!("\"{}\"", c.as_str())
            );
        }
        assert!(serde_json::from_str::<ProviderOutcome>("\"creatd\"").is_err());
        assert!(serde_json::from_str::<RefundStatus>("\"done\"").is_err());
    }
}
