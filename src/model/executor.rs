//! The tool executor: runs a tool call against the refunds service with a timeout; on a timeout
//! either reports an error (the incident) or probes the ticket's status first (the fix). An
//! optional retry layer (LangChain ToolRetryMiddleware style) sits under the model.

use std::cell::Cell;
use std::rc::Rc;

use super::dist;
use super::layers::{self, before_service};
use super::layers::{status_class, Via};
use super::refunds_service::{get_status, is_unknown_outcome, ServiceResult};
use super::world::{Ids, World};
use crate::history::{EventKind, Outcome, TicketStatus};
use crate::scenario::{Cancellation, ExecutorRetry, OnTimeout, Position, ProbeAfter, RetryOn};
use crate::sim::SimTime;

// The request the executor sends and the call that sends it live in `service_call`, below the
// proxies that also send it; their old paths stay.
pub(crate) use super::service_call::send;
pub(crate) use super::service_call::Outgoing;

/// Whether the agent's tool is idempotent by its MCP annotations (`readOnlyHint ||
/// idempotentHint`): what `applies_to: idempotent_tools` reads, in the model's retry rule and
/// in the framework layers around the executor.
pub(crate) fn tool_is_idempotent(w: &World) -> bool {
    w.cfg
        .tools
        .iter()
        .find(|t| t.name == w.cfg.agent.tool)
        .is_some_and(|t| t.is_idempotent())
}

/// The tool result shown to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ToolReply {
    /// `ok`, `fail`, or `info` (told "unknown, do not retry").
    pub outcome: Outcome,
    /// What the model reads.
    pub shown: String,
    /// Refund id shown.
    pub refund_id: Option<String>,
    /// Whether the last try ended in an executor timeout.
    pub timed_out: bool,
    /// The failure's `retry_on` class for a framework retry layer above (`timeout`, `5xx`, …);
    /// `None` for a success, an unknown outcome, or a failure no class names.
    pub class: Option<RetryOn>,
}

impl ToolReply {
    /// A replayed step that started in an earlier run and never completed, under
    /// `checkpoint: at_most_once_per_retry`: AWS's `StepInterruptedError`, an unknown outcome
    /// the model is told not to retry.
    pub(crate) fn interrupted() -> Self {
        ToolReply {
            outcome: Outcome::Info,
            shown: "{ error: \"step interrupted: it started in an earlier run and did not complete; outcome unknown, do not retry\" }".into(),
            refund_id: None,
            timed_out: false,
            class: None,
        }
    }

    fn ok(id: String) -> Self {
        ToolReply {
            outcome: Outcome::Ok,
            shown: concat(&["{ status: \"refunded\", refund_id: \"", &id, "\" }"]),
            refund_id: Some(id),
            timed_out: false,
            class: None,
        }
    }
    /// A failure; `status` is the service's HTTP status (0 for the executor's own timeout).
    fn fail(text: String, timed_out: bool, status: u16) -> Self {
        ToolReply {
            outcome: Outcome::Fail,
            shown: concat(&["{ error: \"", &text, "\" }"]),
            refund_id: None,
            timed_out,
            class: if timed_out {
                Some(RetryOn::Timeout)
            } else {
                status_class(status)
            },
        }
    }
    /// A failure with no HTTP answer: the service's connection reset (class `reset`).
    fn reset(text: String) -> Self {
        ToolReply {
            class: Some(RetryOn::Reset),
            ..Self::fail(text, false, 0)
        }
    }
    /// What a framework layer reports when its last try timed out: a failure (class `timeout`)
    /// or, with `unknown`, an unknown outcome.
    pub(crate) fn layer_timeout(after: SimTime, layer: &str, unknown: bool) -> Self {
        let text = format!("timeout after {}ms ({layer})", after.as_nanos() / 1_000_000);
        if unknown {
            Self::unknown(text)
        } else {
            Self::fail(text, true, 0)
        }
    }
    /// What an `mcp_client` reports when a response stream broke and it does not re-issue
    /// (or has no re-issue left): the response is lost, after the tool ran. A failure of class
    /// `reset`, or, with `unknown` (the layer's `on_timeout: unknown`), an unknown outcome.
    pub(crate) fn stream_broken(request_id: u64, layer: &str, unknown: bool) -> Self {
        let text =
            format!("MCP response stream broken ({layer}, request {request_id}); response lost");
        if unknown {
            Self::unknown(text)
        } else {
            Self::reset(text)
        }
    }
    /// The tool server's rejection of a `tools/call` whose idempotency key came with other
    /// arguments (SEP-3182's `idempotency_key_conflict`): a JSON-RPC error, a failure no
    /// `retry_on` class names.
    pub(crate) fn rejected(text: &str) -> Self {
        ToolReply {
            class: None,
            ..Self::fail(text.to_string(), false, 0)
        }
    }
    /// The tool server's `idempotency_key_in_progress` rejection (SEP-3182), as the client
    /// reports it: an unknown outcome, since the request holding the key may still refund.
    pub(crate) fn in_progress() -> Self {
        Self::unknown(
            "idempotency_key_in_progress: a request with this key is still running".to_string(),
        )
    }
    /// What an open circuit breaker answers at once: a failure of class `circuit-open`; nothing
    /// was sent.
    pub(crate) fn circuit_open(text: String) -> Self {
        ToolReply {
            class: Some(RetryOn::CircuitOpen),
            ..Self::fail(text, false, 0)
        }
    }
    /// An unknown outcome reported from below (a layer with `on_timeout: unknown`).
    fn unknown(text: String) -> Self {
        ToolReply {
            outcome: Outcome::Info,
            shown: concat(&[
                "{ status: \"unknown\", note: \"",
                &text,
                "; outcome unknown, do not retry\" }",
            ]),
            refund_id: None,
            timed_out: true,
            class: None,
        }
    }
}

/// The pieces one after the other: what `format!` of literal text around `{}`s gives, for the
/// tool results every call makes (a formatting pass cost about 400 instructions; this is an
/// allocation and a few copies).
fn concat(pieces: &[&str]) -> String {
    let mut s = String::with_capacity(pieces.iter().map(|p| p.len()).sum());
    for p in pieces {
        s.push_str(p);
    }
    s
}

/// Delay before executor retry `n` (1-based): `initial · factor^(n−1)`, capped at `max_delay`,
/// times `U(1 − jitter, 1 + jitter)`. A zero `initial_delay` waits 0 s whatever the factor (so
/// `0 × ∞` never turns into a NaN that the cap would read as `max_delay`); a power that
/// overflows is capped like any other large value.
fn retry_delay(r: &ExecutorRetry, n: u32, u: f64) -> SimTime {
    super::backoff::langchain(
        r.initial_delay.as_secs_f64(),
        r.backoff_factor,
        r.max_delay.as_secs_f64(),
        r.jitter,
        n,
        u,
    )
}

/// Runs the executor for the model's tool call `attempt` for `ticket` (below any framework
/// retry layer) and returns what the model is shown. `via` names the tries of the layers above
/// and `cancel_above` the strongest cancellation among them. The `tool_result` event is
/// recorded by the caller. The executor's own `retry` runs the one retry loop
/// ([`layers::retry_loop`]) with [`ExecutorRetryPolicy`] around one executor try.
pub(crate) async fn call_tool(
    w: Rc<World>,
    ticket: u64,
    attempt: u32,
    amount_cents: u64,
    via: Via,
    cancel_above: Cancellation,
) -> ToolReply {
    let mut policy = ExecutorRetryPolicy {
        retry: w.cfg.executor.retry.clone(),
        jitter: w.ticket_stream("executor_retry", ticket, &[u64::from(attempt)]),
    };
    let mut one = ExecutorTry {
        w: w.clone(),
        ticket,
        attempt,
        amount_cents,
        via,
        cancellation: cancel_above.max(w.cfg.executor.cancellation),
    };
    layers::retry_loop(&w, &mut policy, &mut one).await.reply
}

/// What one executor try ends with: the reply, and whether it is final (a success, an unknown
/// outcome, a probe's answer) or a failure the executor's `retry` may try again.
struct ExecutorAnswer {
    reply: ToolReply,
    retryable: bool,
}

/// One executor try of a tool call: a request to the service (through the proxies before it)
/// under the executor's timeout, then what the executor makes of the answer (probing on a
/// timeout under `probe_status`).
struct ExecutorTry {
    w: Rc<World>,
    ticket: u64,
    attempt: u32,
    amount_cents: u64,
    via: Via,
    cancellation: Cancellation,
}

impl layers::Inner for ExecutorTry {
    type Answer = ExecutorAnswer;

    async fn try_once(&mut self, exec_try: u32, _via: Via) -> layers::TryEnd<ExecutorAnswer> {
        let (w, ticket, attempt) = (&self.w, self.ticket, self.attempt);
        let cfg = &w.cfg.executor;
        let timeout = SimTime::from_duration(cfg.timeout);
        let req = Outgoing {
            ticket,
            attempt,
            exec_try,
            amount_cents: self.amount_cents,
            deadline: w.now() + timeout,
            via: self.via.clone(),
            cancellation: self.cancellation,
        };
        let last_call = Rc::new(Cell::new(0));
        // Without proxy layers the request goes straight to the service (what
        // `before_service` does then too), without boxing a future per request.
        let answer = if w.layers_at(Position::BeforeService).is_empty() {
            let path = send(w.clone(), req, last_call.clone());
            w.sim.timeout(timeout, path).await
        } else {
            let path = before_service::before_service(w.clone(), req, last_call.clone());
            w.sim.timeout(timeout, path).await
        };
        let last = || Ids::call(ticket, attempt, last_call.get());
        let (reply, retryable) = match answer {
            Ok(ServiceResult::Refunded(id)) => (ToolReply::ok(id), false),
            // Under `probe_status` with `probe_after` beyond `timeout`, an error answer (one
            // that leaves the outcome unknown, or any) is probed like a timeout. A probe
            // answering `none` makes it a definite failure, which the executor's retry layer
            // may retry; any other answer goes to the model.
            Ok(
                e @ (ServiceResult::Error { .. }
                | ServiceResult::Reset(_)
                | ServiceResult::Rejected(_)),
            ) if probes_error(cfg, &e) => {
                let reply = probe(w, last()).await;
                let retryable = reply.outcome == Outcome::Fail;
                (reply, retryable)
            }
            Ok(ServiceResult::Error { status, text }) => {
                (ToolReply::fail(text, false, status), true)
            }
            Ok(ServiceResult::Reset(text)) => (ToolReply::reset(text), true),
            Ok(ServiceResult::Rejected(text)) => (ToolReply::circuit_open(text), true),
            Ok(ServiceResult::Unknown(text)) => (ToolReply::unknown(text), false),
            Err(_) => {
                let ids = last();
                w.record(
                    ids,
                    EventKind::ExecutorTimeout {
                        after_ns: timeout.as_nanos(),
                        action: cfg.on_timeout,
                    },
                );
                match cfg.on_timeout {
                    OnTimeout::ReportError => (
                        ToolReply::fail(
                            format!("timeout after {}ms", timeout.as_nanos() / 1_000_000),
                            true,
                            0,
                        ),
                        true,
                    ),
                    OnTimeout::ProbeStatus => (probe(w, ids).await, false),
                }
            }
        };
        layers::TryEnd::Answered {
            value: ExecutorAnswer { reply, retryable },
            class: None,
        }
    }
}

/// The executor's `retry` (LangChain's ToolRetryMiddleware): a failure is tried again up to
/// `max_retries` times after [`retry_delay`], its jitter drawn in order from the attempt's
/// `executor_retry` stream. Without `retry`, one try.
struct ExecutorRetryPolicy {
    retry: Option<ExecutorRetry>,
    jitter: crate::sim::StreamRng,
}

impl layers::Policy<ExecutorTry> for ExecutorRetryPolicy {
    fn retry(
        &mut self,
        n: u32,
        end: &layers::TryEnd<ExecutorAnswer>,
        _inner: &mut ExecutorTry,
    ) -> layers::Next {
        let layers::TryEnd::Answered { value, .. } = end else {
            return layers::Next::Report;
        };
        match &self.retry {
            Some(r) if value.retryable && n < r.max_retries => {
                let u = dist::uniform(&mut self.jitter, 0.0, 1.0);
                layers::Next::After(retry_delay(r, n + 1, u))
            }
            _ => layers::Next::Report,
        }
    }
}

/// Whether the executor probes after the error answer `e` (see `Executor::probe_after`).
fn probes_error(cfg: &crate::scenario::Executor, e: &ServiceResult) -> bool {
    cfg.on_timeout == OnTimeout::ProbeStatus
        && match cfg.probe_after {
            ProbeAfter::Timeout => false,
            ProbeAfter::UnknownOutcome => is_unknown_outcome(e),
            ProbeAfter::AnyFailure => true,
        }
}

/// After a timeout (or an unknown outcome): probes `get_status(ticket)` every `probe_interval`
/// for up to `probe_max_wait`. `refunded` → ok with the refund id; `none` → fail ("no refund
/// was made", a failure as true as the service's `status_source`); `pending` or `unknown` (the
/// service does not know, or the probe failed or timed out) until the end → info ("outcome
/// unknown; do not retry").
async fn probe(w: &World, ids: Ids) -> ToolReply {
    let cfg = &w.cfg.executor;
    let start = w.now();
    let mut n = 0u64;
    loop {
        let (status, error) = probe_once(w, ids, n).await;
        n += 1;
        w.record(
            ids,
            EventKind::Probe {
                status: status.clone(),
                error,
            },
        );
        match status {
            TicketStatus::Refunded { refund_id } => return ToolReply::ok(refund_id),
            TicketStatus::None => {
                return ToolReply::fail(
                    "timed out; status probe shows no refund was made".into(),
                    true,
                    0,
                )
            }
            TicketStatus::Pending | TicketStatus::Unknown => {
                if w.now() - start >= SimTime::from_duration(cfg.probe_max_wait) {
                    let shown = if status == TicketStatus::Pending {
                        "{ status: \"pending\", note: \"outcome unknown; do not retry\" }"
                    } else {
                        "{ status: \"unknown\", note: \"outcome unknown; do not retry\" }"
                    };
                    return ToolReply {
                        outcome: Outcome::Info,
                        shown: shown.into(),
                        refund_id: None,
                        timed_out: true,
                        class: None,
                    };
                }
                w.sim
                    .sleep(SimTime::from_duration(cfg.probe_interval))
                    .await;
            }
        }
    }
}

/// One `get_status` request: its latency, then the service reads its status source; or the
/// probe fails (`error_probability`) or times out (`executor.probe.timeout`), and the answer is
/// `unknown` with the reason. Draws from the stream `("probe", ticket, attempt, call, n)`: a
/// latency (two numbers) and one for the failure, whatever happens.
async fn probe_once(w: &World, ids: Ids, n: u64) -> (TicketStatus, Option<String>) {
    let p = &w.cfg.executor.probe;
    let ticket = ids.ticket.unwrap_or(0);
    let mut rng = w.ticket_stream(
        "probe",
        ticket,
        &[
            u64::from(ids.attempt.unwrap_or(0)),
            ids.call.unwrap_or(0),
            n,
        ],
    );
    let latency = dist::latency(&mut rng, &p.latency);
    let fails = dist::chance(&mut rng, p.error_probability);
    let limit = SimTime::from_duration(p.timeout);
    if latency > limit {
        w.sim.sleep(limit).await;
        let text = format!("timeout after {}ms", limit.as_nanos() / 1_000_000);
        return (TicketStatus::Unknown, Some(text));
    }
    w.sim.sleep(latency).await;
    if fails {
        return (
            TicketStatus::Unknown,
            Some("get_status answered 503".into()),
        );
    }
    (get_status(w, ticket), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn tool_replies_show_what_format_gave() {
        let id = "re_000123".to_string();
        assert_eq!(
            ToolReply::ok(id.clone()).shown,
            format!("{{ status: \"refunded\", refund_id: \"{id}\" }}")
        );
        let text = "timeout after 8000ms".to_string();
        assert_eq!(
            ToolReply::fail(text.clone(), true, 0).shown,
            format!("{{ error: \"{text}\" }}")
        );
        assert_eq!(
            ToolReply::unknown(text.clone()).shown,
            format!("{{ status: \"unknown\", note: \"{text}; outcome unknown, do not retry\" }}")
        );
    }

    #[test]
    fn retry_delay_follows_tool_retry_middleware_defaults() {
        let r: ExecutorRetry = serde_json::from_str("{}").unwrap();
        assert_eq!(r.max_retries, 2);
        assert_eq!(retry_delay(&r, 1, 0.5), SimTime::from_secs(1));
        assert_eq!(retry_delay(&r, 2, 0.5), SimTime::from_secs(2));
        assert_eq!(retry_delay(&r, 2, 0.0), SimTime::from_millis(1500));
        assert_eq!(
            retry_delay(&r, 10, 0.5),
            SimTime::from_duration(Duration::from_secs(60))
        );
    }

    /// `shared/failing/backoff-overflow.json`: a factor of 1e308 with a zero initial delay waits
    /// 0 s on every retry (it used to wait `max_delay`: 0 × ∞ = NaN, and NaN.min(60 s) = 60 s).
    #[test]
    fn zero_initial_delay_waits_zero_whatever_the_factor() {
        let r: ExecutorRetry = serde_json::from_str(
            r#"{"initial_delay": "0s", "backoff_factor": 1e308, "jitter": 0}"#,
        )
        .unwrap();
        for n in 1..=5 {
            assert_eq!(retry_delay(&r, n, 0.5), SimTime::ZERO, "retry {n}");
        }
        let big: ExecutorRetry = serde_json::from_str(
            r#"{"initial_delay": "1s", "backoff_factor": 1e308, "jitter": 0}"#,
        )
        .unwrap();
        assert_eq!(
            retry_delay(&big, 3, 0.5),
            SimTime::from_secs(60),
            "overflow is capped"
        );
    }
}
