//! What one ticket's events say, gathered while the ticket is open: its tool calls (with the
//! executor timeouts inside them), its refunds-service requests (with their pool waits and
//! Stripe calls), a human's dashboard refunds, and point events. `layout` places them on
//! tracks when the ticket closes.

use super::json::{millis, Args};
use crate::history::{Decision, Event, EventKind, HumanAction, Outcome, TicketStatus};

/// A span of virtual time, ns; `end` is `None` while it is open.
#[derive(Clone, Debug)]
pub(super) struct Slice {
    pub name: String,
    pub cat: &'static str,
    pub start: u64,
    pub end: Option<u64>,
    pub args: Args,
}

impl Slice {
    fn open(name: String, cat: &'static str, start: u64, args: Args) -> Slice {
        Slice {
            name,
            cat,
            start,
            end: None,
            args,
        }
    }

    /// Ends the slice at `t` (if still open), adding `suffix` to its name and `args`.
    fn close(&mut self, t: u64, suffix: &str, args: Args) {
        if self.end.is_some() {
            return;
        }
        self.end = Some(t);
        self.name.push_str(suffix);
        self.args.extend(args);
    }
}

/// One model tool call, `tool_call` to `tool_result`.
#[derive(Debug)]
pub(super) struct ToolCall {
    pub attempt: u32,
    pub slice: Slice,
    /// Executor timeouts during the call: each spans `[fired − timeout, fired]`.
    pub timeouts: Vec<Timeout>,
}

/// An executor timeout: the window the executor waited before it gave up on `call`.
#[derive(Debug)]
pub(super) struct Timeout {
    pub call: Option<u64>,
    pub slice: Slice,
}

/// One refunds-service request, `service_request` to `service_response`.
#[derive(Debug)]
pub(super) struct Request {
    pub call: u64,
    pub attempt: Option<u32>,
    pub slice: Slice,
    /// Its pool waits and Stripe calls, in order.
    pub parts: Vec<Slice>,
    /// The executor had given up on it when it answered (a zombie's late response).
    pub late: bool,
}

/// Whose track a point event goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    /// The ticket's first track.
    Ticket,
    /// The track of the tool call with this attempt number.
    Attempt(u32),
    /// The track of this request.
    Call(u64),
    /// The track of this dashboard refund (index in [`TicketEvents::manual`]).
    Manual(usize),
}

/// A point event (an instant).
#[derive(Debug)]
pub(super) struct Mark {
    pub ts: u64,
    pub name: String,
    pub cat: &'static str,
    pub args: Args,
    pub owner: Owner,
}

/// Everything one ticket's events said, in the order they said it.
#[derive(Debug, Default)]
pub(super) struct TicketEvents {
    pub id: u64,
    /// Order in which the exporter first saw the ticket (sorts its tracks).
    pub ordinal: u64,
    /// Time of its latest event, ns (closes anything left open).
    pub last_ns: u64,
    pub tool_calls: Vec<ToolCall>,
    pub requests: Vec<Request>,
    /// A human's dashboard refunds (Stripe calls outside any request).
    pub manual: Vec<Slice>,
    pub marks: Vec<Mark>,
}

impl TicketEvents {
    /// A ticket first seen `ordinal`-th.
    pub(super) fn new(id: u64, ordinal: u64) -> TicketEvents {
        TicketEvents {
            id,
            ordinal,
            ..TicketEvents::default()
        }
    }

    /// Takes in one of the ticket's events; `connection` is the pool connection (1-based) a
    /// `pool_acquire` got.
    pub(super) fn record(&mut self, e: &Event, connection: Option<u32>) {
        let t = e.t_ns.as_nanos();
        self.last_ns = self.last_ns.max(t);
        let owner = match (e.call, e.attempt, &e.kind) {
            // The executor probes; the tool call's track shows what it did meanwhile.
            (_, Some(a), EventKind::Probe { .. }) => Owner::Attempt(a),
            (Some(c), _, _) => Owner::Call(c),
            (None, Some(a), _) => Owner::Attempt(a),
            (None, None, _) => Owner::Ticket,
        };
        match &e.kind {
            EventKind::ToolCall { .. }
            | EventKind::ToolResult { .. }
            | EventKind::ExecutorTimeout { .. } => self.tool_call_span(e, t, owner),
            EventKind::ServiceRequest { .. } | EventKind::ServiceResponse { .. } => {
                self.request_span(e, t);
            }
            EventKind::PoolWait { .. }
            | EventKind::PoolAcquire { .. }
            | EventKind::PoolTimeout { .. }
            | EventKind::PoolRelease => self.pool_wait_span(e, t, connection),
            EventKind::StripeRequest { .. } | EventKind::StripeResponse { .. } => {
                self.stripe_span(e, t);
            }
            other => self.point(t, other, owner),
        }
    }

    /// A tool call's span (`tool_call` opens it, `tool_result` closes it) and the executor
    /// timeouts inside it; a timeout outside any tool call of its attempt becomes a mark on
    /// `owner`'s track. `t` is the event's time, ns; other kinds are not this span's.
    fn tool_call_span(&mut self, e: &Event, t: u64, owner: Owner) {
        match &e.kind {
            EventKind::ToolCall { tool, amount_cents } => {
                let attempt = e.attempt.unwrap_or(0);
                self.tool_calls.push(ToolCall {
                    attempt,
                    slice: Slice::open(
                        format!("{tool} #{attempt}"),
                        "agent",
                        t,
                        Args::default()
                            .u("ticket", self.id)
                            .u("attempt", u64::from(attempt))
                            .s("tool", tool.as_str())
                            .u("amount_cents", *amount_cents),
                    ),
                    timeouts: Vec::new(),
                });
            }
            EventKind::ToolResult {
                outcome,
                shown,
                refund_id,
            } => {
                if let Some(tc) = self.tool_call(e.attempt) {
                    let args = Args::default()
                        .s("outcome", outcome_name(*outcome))
                        .s("shown", shown.as_str())
                        .opt("refund_id", refund_id.as_deref());
                    tc.slice
                        .close(t, &format!(" → {}", outcome_name(*outcome)), args);
                }
            }
            EventKind::ExecutorTimeout { after_ns, action } => {
                let slice = Slice {
                    name: format!("executor timeout {} ms", millis(*after_ns)),
                    cat: "executor",
                    start: t.saturating_sub(*after_ns),
                    end: Some(t),
                    args: Args::default()
                        .u("after_ns", *after_ns)
                        .s("action", action.as_str())
                        .u("call", e.call.unwrap_or(0)),
                };
                let call = e.call;
                match self.tool_call(e.attempt) {
                    Some(tc) => tc.timeouts.push(Timeout { call, slice }),
                    None => self.mark(t, slice.name, "executor", slice.args, owner),
                }
            }
            _ => {}
        }
    }

    /// A refunds-service request's span: `service_request` opens it, `service_response` closes
    /// it (and any of its parts still open, as unfinished), noting a late ("zombie") answer.
    /// `t` is the event's time, ns; other kinds are not this span's.
    fn request_span(&mut self, e: &Event, t: u64) {
        match &e.kind {
            EventKind::ServiceRequest { exec_try, via } => {
                let call = e.call.unwrap_or(0);
                let mut args = Args::default()
                    .u("ticket", self.id)
                    .u("call", call)
                    .u("exec_try", u64::from(*exec_try));
                if let Some(a) = e.attempt {
                    args = args.u("attempt", u64::from(a));
                }
                if !via.is_empty() {
                    let tries: Vec<String> =
                        via.iter().map(|(l, n)| format!("{l} try {n}")).collect();
                    args = args.s("via", tries.join(", "));
                }
                self.requests.push(Request {
                    call,
                    attempt: e.attempt,
                    slice: Slice::open(format!("request {call}"), "service", t, args),
                    parts: Vec::new(),
                    late: false,
                });
            }
            EventKind::ServiceResponse {
                ok,
                refund_id,
                error,
                late,
                latency_ns,
            } => {
                let Some(r) = self.request(e.call) else {
                    return;
                };
                r.late = *late;
                for p in &mut r.parts {
                    p.close(t, "", Args::default().b("unfinished", true));
                }
                let verdict = if *ok { "ok" } else { "error" };
                let suffix = if *late {
                    format!(" → {verdict} (late)")
                } else {
                    format!(" → {verdict}")
                };
                let args = Args::default()
                    .b("ok", *ok)
                    .opt("refund_id", refund_id.as_deref())
                    .opt("error", error.as_deref())
                    .b("late", *late)
                    .u("latency_ns", *latency_ns);
                r.slice.close(t, &suffix, args);
            }
            _ => {}
        }
    }

    /// A request's pool wait: `pool_wait` opens it, `pool_acquire` (on `connection`, 1-based)
    /// or `pool_timeout` closes it; `pool_release` shows nothing. `t` is the event's time, ns;
    /// other kinds are not this span's.
    fn pool_wait_span(&mut self, e: &Event, t: u64, connection: Option<u32>) {
        match &e.kind {
            EventKind::PoolWait { queue_depth } => {
                if let Some(r) = self.request(e.call) {
                    let args = Args::default().u("queue_depth", u64::from(*queue_depth));
                    r.parts
                        .push(Slice::open("pool wait".into(), "pool", t, args));
                }
            }
            EventKind::PoolAcquire { waited_ns } => {
                let suffix = connection.map_or(String::new(), |c| format!(" → connection {c}"));
                let mut args = Args::default().u("waited_ns", *waited_ns);
                if let Some(c) = connection {
                    args = args.u("connection", u64::from(c));
                }
                self.close_part(e.call, "pool wait", t, &suffix, args);
            }
            EventKind::PoolTimeout { waited_ns } => {
                let args = Args::default().u("waited_ns", *waited_ns);
                self.close_part(e.call, "pool wait", t, " → acquire timeout", args);
            }
            _ => {}
        }
    }

    /// A Stripe `POST /v1/refunds`: inside its request, or, with no request (a human's
    /// dashboard refund), on a track of its own. `t` is the event's time, ns; other kinds are
    /// not this span's.
    fn stripe_span(&mut self, e: &Event, t: u64) {
        match &e.kind {
            EventKind::StripeRequest {
                idempotency_key,
                business_id,
                amount_cents,
                sdk_try,
                via,
            } => {
                let args = Args::default()
                    .opt("idempotency_key", idempotency_key.as_deref())
                    .opt("business_id", business_id.as_deref())
                    .u("amount_cents", *amount_cents)
                    .u("sdk_try", u64::from(*sdk_try));
                match self.request(e.call) {
                    Some(r) => r
                        .parts
                        .push(Slice::open(stripe_part(via), "stripe", t, args)),
                    None => self.manual.push(Slice::open(
                        "dashboard refund (human)".into(),
                        "human",
                        t,
                        args.u("ticket", self.id),
                    )),
                }
            }
            EventKind::StripeResponse {
                status,
                outcome,
                refund_id,
                latency_ns,
                via,
            } => {
                let suffix = format!(" → {status} {outcome}");
                let args = Args::default()
                    .u("status", u64::from(*status))
                    .s("outcome", outcome.as_str())
                    .opt("refund_id", refund_id.as_deref())
                    .u("latency_ns", *latency_ns);
                if e.call.is_some() {
                    let name = stripe_part(via);
                    if let Some(r) = self.request(e.call) {
                        // The open part of this very request (`==`, not a prefix: an egress
                        // try's name extends the first request's).
                        if let Some(p) = r
                            .parts
                            .iter_mut()
                            .rev()
                            .find(|p| p.end.is_none() && p.name == name)
                        {
                            p.close(t, &suffix, args);
                        }
                    }
                } else if let Some(m) = self.manual.iter_mut().rev().find(|m| m.end.is_none()) {
                    m.close(t, &suffix, args);
                }
            }
            _ => {}
        }
    }

    /// The point events: everything that is not a span's start or end.
    fn point(&mut self, t: u64, kind: &EventKind, owner: Owner) {
        let Some((name, cat, args)) = ticket_point(kind)
            .or_else(|| call_path_point(kind))
            .or_else(|| provider_point(kind))
            .or_else(|| agent_point(kind))
        else {
            // Spans and the run-wide alert are handled by the caller.
            return;
        };
        // A refund created by a dashboard refund goes on that refund's track.
        let owner = match (kind, owner) {
            (EventKind::RefundCreated { .. }, Owner::Ticket) => self
                .manual
                .iter()
                .rposition(|m| m.end.is_none())
                .map_or(Owner::Ticket, Owner::Manual),
            _ => owner,
        };
        self.mark(t, name, cat, args, owner);
    }

    fn mark(&mut self, ts: u64, name: String, cat: &'static str, args: Args, owner: Owner) {
        self.marks.push(Mark {
            ts,
            name,
            cat,
            args,
            owner,
        });
    }

    /// The latest tool call with this attempt number.
    fn tool_call(&mut self, attempt: Option<u32>) -> Option<&mut ToolCall> {
        let a = attempt?;
        self.tool_calls.iter_mut().rev().find(|tc| tc.attempt == a)
    }

    /// The request with this call id.
    fn request(&mut self, call: Option<u64>) -> Option<&mut Request> {
        let c = call?;
        self.requests.iter_mut().rev().find(|r| r.call == c)
    }

    /// Ends the open part of `call` whose name starts with `prefix` (the latest such).
    fn close_part(&mut self, call: Option<u64>, prefix: &str, t: u64, suffix: &str, args: Args) {
        if let Some(r) = self.request(call) {
            if let Some(p) = r
                .parts
                .iter_mut()
                .rev()
                .find(|p| p.end.is_none() && p.name.starts_with(prefix))
            {
                p.close(t, suffix, args);
            }
        }
    }

    /// Ends whatever is still open at the ticket's last event (a run that stopped with work in
    /// flight), marking it `unfinished`.
    pub(super) fn close_all(&mut self) {
        let t = self.last_ns;
        let unfinished = || Args::default().b("unfinished", true);
        for tc in &mut self.tool_calls {
            tc.slice.close(t, "", unfinished());
        }
        for r in &mut self.requests {
            for p in &mut r.parts {
                p.close(t, "", unfinished());
            }
            r.slice.close(t, "", unfinished());
        }
        for m in &mut self.manual {
            m.close(t, "", unfinished());
        }
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Fail => "fail",
        Outcome::Info => "info",
    }
}

fn probe_status(s: &TicketStatus) -> (&'static str, Option<&str>) {
    match s {
        TicketStatus::None => ("none", None),
        TicketStatus::Pending => ("pending", None),
        TicketStatus::Refunded { refund_id } => ("refunded", Some(refund_id.as_str())),
        TicketStatus::Unknown => ("unknown", None),
    }
}

/// A point event as a mark shows it: its name, its category (`cat`) and its args.
type Point = (String, &'static str, Args);

/// The ticket's own points: opened, and each delivery of its triggering event (delivered,
/// duplicate, or dropped by the consumer's dedup). `None` for other kinds.
fn ticket_point(kind: &EventKind) -> Option<Point> {
    let a = Args::default();
    Some(match kind {
        EventKind::TicketOpened {
            amount_cents,
            charge_amount_cents,
            phase,
        } => (
            "ticket opened".to_string(),
            "ticket",
            a.u("amount_cents", *amount_cents)
                .u("charge_amount_cents", *charge_amount_cents)
                .s("phase", phase.as_str()),
        ),
        EventKind::Delivered {
            event_id,
            duplicate,
            delivery_id,
            receive,
            reason,
        } => (
            match (receive, reason) {
                (Some(n), Some(_)) if *n > 1 => format!("redelivered {event_id} (receive #{n})"),
                _ if *duplicate => format!("duplicate delivery {event_id}"),
                _ => format!("delivered {event_id}"),
            },
            "ticket",
            delivery_args(a.b("duplicate", *duplicate), delivery_id, receive, reason),
        ),
        EventKind::DeliveryDeduped {
            event_id,
            record_deleted,
        } => (
            format!("duplicate delivery {event_id} dropped"),
            "ticket",
            if *record_deleted {
                a.b("record_deleted", true)
            } else {
                a
            },
        ),
        EventKind::DeliveryAcked {
            delivery_id,
            receive,
        } => (
            format!("acked {delivery_id}"),
            "ticket",
            a.u("receive", u64::from(*receive)),
        ),
        EventKind::ConsumerCrashed {
            delivery_id,
            receive,
        } => (
            format!("consumer crashed before ack {delivery_id}"),
            "ticket",
            a.u("receive", u64::from(*receive)),
        ),
        EventKind::DeadLettered {
            delivery_id,
            receives,
        } => (
            format!("dead-lettered {delivery_id}"),
            "ticket",
            a.u("receives", u64::from(*receives)),
        ),
        _ => return None,
    })
}

/// A consumer-model delivery's args: its message id, receive count and why it came again.
fn delivery_args(
    a: Args,
    delivery_id: &Option<String>,
    receive: &Option<u32>,
    reason: &Option<crate::history::RedeliveryReason>,
) -> Args {
    use crate::history::RedeliveryReason as R;
    let (Some(id), Some(n)) = (delivery_id, receive) else {
        return a;
    };
    let a = a.s("delivery_id", id.as_str()).u("receive", u64::from(*n));
    match reason {
        None => a,
        Some(R::VisibilityTimeout { timeout_ns }) => a
            .s("reason", "visibility_timeout")
            .u("visibility_timeout_ns", *timeout_ns),
        Some(R::Rebalance { drain_ns }) => {
            a.s("reason", "rebalance").u("drain_deadline_ns", *drain_ns)
        }
        Some(R::SecondBroker) => a.s("reason", "second_broker"),
        Some(R::SenderResent) => a.s("reason", "sender_resent"),
        Some(R::OtherTrigger) => a.s("reason", "other_trigger"),
    }
}

/// The call path's points: an added layer's retry, spent retry budget and per-try timeout, an
/// MCP client's broken stream, re-issue, duplicated call and request timeout, the tool server's
/// answer from its idempotency key, a
/// The call path's points: an added layer's retry, hedged try, spent retry budget and per-try timeout, a
/// request dropped past its deadline, and a service crash after Stripe's 200. `None` for other
/// kinds.
fn call_path_point(kind: &EventKind) -> Option<Point> {
    let a = Args::default();
    Some(match kind {
        EventKind::LayerRetry {
            layer,
            layer_try,
            reason,
            backoff_ns,
        } => (
            format!("{layer} retry {layer_try} ({reason})"),
            "layer",
            a.u("backoff_ns", *backoff_ns),
        ),
        EventKind::LayerHedge {
            layer,
            layer_try,
            reason,
            after_ns,
            running,
        } => (
            format!("{layer} hedge {layer_try} ({reason})"),
            "layer",
            a.u("layer_try", u64::from(*layer_try))
                .u("after_ns", *after_ns)
                .u("running", u64::from(*running)),
        ),
        EventKind::BreakerOpened {
            layer,
            failures,
            calls,
            open_for_ns,
        } => (
            format!("{layer} circuit opened"),
            "layer",
            a.u("failures", u64::from(*failures))
                .u("calls", u64::from(*calls))
                .u("open_for_ns", *open_for_ns),
        ),
        EventKind::BreakerHalfOpen { layer } => (format!("{layer} circuit half-open"), "layer", a),
        EventKind::BreakerClosed { layer, probes } => (
            format!("{layer} circuit closed"),
            "layer",
            a.u("probes", u64::from(*probes)),
        ),
        EventKind::BreakerRejected { layer, open_for_ns } => (
            format!("{layer} circuit open: refused"),
            "layer",
            a.u("open_for_ns", *open_for_ns),
        ),
        EventKind::LayerBudgetExhausted { layer, layer_try } => (
            format!("{layer} retry budget exhausted"),
            "layer",
            a.u("layer_try", u64::from(*layer_try)),
        ),
        EventKind::LayerTimeout {
            layer,
            layer_try,
            after_ns,
        } => (
            format!("{layer} per-try timeout {} ms", millis(*after_ns)),
            "layer",
            a.u("layer_try", u64::from(*layer_try))
                .u("after_ns", *after_ns),
        ),
        EventKind::StepReplayed { step, from_attempt } => (
            format!("step {} replayed from checkpoint", step + 1),
            "layer",
            a.u("from_attempt", u64::from(*from_attempt)),
        ),
        EventKind::StepInterrupted { step, from_attempt } => (
            format!("step {} interrupted (at-most-once)", step + 1),
            "layer",
            a.u("from_attempt", u64::from(*from_attempt)),
        ),
        EventKind::WorkAfterRefund { refund_id, work_ns } => (
            format!("refund recorded, {} ms of work left", millis(*work_ns)),
            "service",
            a.s("refund_id", refund_id.as_str()).u("work_ns", *work_ns),
        ),
        EventKind::LayerDeadlineExceeded {
            layer,
            layer_try,
            deadline_ns,
            ..
        } => (
            format!("{layer} deadline {} ms passed", millis(*deadline_ns)),
            "layer",
            a.u("layer_try", u64::from(*layer_try))
                .u("deadline_ns", *deadline_ns),
        ),
        EventKind::McpStreamBroken { layer, request_id } => (
            format!("{layer} stream broken (id {request_id})"),
            "mcp",
            a.u("request_id", *request_id),
        ),
        EventKind::McpReissued {
            layer,
            request_id,
            previous_id,
            reason,
        } => (
            format!("{layer} re-issued as id {request_id} ({reason})"),
            "mcp",
            a.u("request_id", *request_id)
                .u("previous_id", *previous_id)
                .s("reason", reason.as_ref()),
        ),
        EventKind::McpDuplicateSent {
            layer,
            request_id,
            original_id,
            gap_ns,
        } => (
            format!("{layer} duplicate tools/call id {request_id}"),
            "mcp",
            a.u("request_id", *request_id)
                .u("original_id", *original_id)
                .u("gap_ns", *gap_ns),
        ),
        EventKind::McpRequestTimeout {
            layer,
            request_id,
            after_ns,
            cancelled,
        } => (
            format!(
                "{layer} request timeout {} ms (id {request_id})",
                millis(*after_ns)
            ),
            "mcp",
            a.u("request_id", *request_id)
                .u("after_ns", *after_ns)
                .b("cancelled", *cancelled),
        ),
        EventKind::McpKeyAnswered {
            request_id,
            first_id,
            outcome,
        } => (
            format!("tool server idempotency key: {outcome} (id {request_id})"),
            "mcp",
            a.u("request_id", *request_id)
                .u("first_id", *first_id)
                .s("outcome", outcome.as_ref()),
        ),
        EventKind::RequestDropped => ("dropped: deadline passed".into(), "service", a),
        EventKind::ServiceCrash { refund_id } => (
            "service crashed after Stripe's 200".into(),
            "service",
            a.s("refund_id", refund_id.as_str()),
        ),
        _ => return None,
    })
}

/// Stripe's points: a refund object created, and a pending one settled. `None` for other
/// kinds.
fn provider_point(kind: &EventKind) -> Option<Point> {
    let a = Args::default();
    Some(match kind {
        EventKind::RefundCreated {
            refund_id,
            amount_cents,
            status,
            moves_money,
            by,
        } => (
            format!("refund created {refund_id}"),
            "stripe",
            a.u("amount_cents", *amount_cents)
                .s("status", status.as_str())
                .b("moves_money", *moves_money)
                .s("by", by.as_str()),
        ),
        EventKind::RefundSettled {
            refund_id, status, ..
        } => (
            format!("refund settled {refund_id} → {status}"),
            "stripe",
            a,
        ),
        _ => return None,
    })
}

/// The agent's and the people's points: the LLM failing to read a result, the executor's
/// status probe, the model's decision, the escalation, and what a human did. `None` for other
/// kinds.
fn agent_point(kind: &EventKind) -> Option<Point> {
    let a = Args::default();
    Some(match kind {
        EventKind::LlmError => ("LLM error reading the result".into(), "agent", a),
        EventKind::Probe { status, error } => {
            let (s, id) = probe_status(status);
            (
                format!("probe → {s}"),
                "executor",
                a.s("status", s)
                    .opt("refund_id", id)
                    .opt("error", error.as_deref()),
            )
        }
        EventKind::ModelDecision { decision, text } => (
            format!(
                "model: {}",
                match decision {
                    Decision::Retry => "retry",
                    Decision::Escalate => "escalate",
                }
            ),
            "agent",
            a.s("text", text.as_ref()),
        ),
        EventKind::Escalation { reason } => {
            ("escalated".into(), "agent", a.s("reason", reason.as_str()))
        }
        EventKind::StalePendingClosed {
            pending_for_ns,
            refund_id,
            key_rotated,
        } => (
            match refund_id {
                Some(_) => "stale-pending sweep: found at Stripe".into(),
                None => "stale-pending sweep: marked failed".into(),
            },
            "service",
            a.u("pending_for_ns", *pending_for_ns)
                .opt("refund_id", refund_id.as_deref())
                .b("key_rotated", *key_rotated),
        ),
        EventKind::Human { action } => (
            format!(
                "human: {}",
                match action {
                    HumanAction::FoundExisting => "found the refund",
                    HumanAction::ManualRefund => "manual refund",
                    HumanAction::RerunTool => "re-ran the tool",
                }
            ),
            "human",
            a,
        ),
        _ => return None,
    })
}
/// The name of a request's part that is one request to Stripe: `Stripe POST /v1/refunds`, and
/// for a try of a proxy after `sdk` its layer and try (`… (egress try 2)`), so that each answer
/// closes the request it answers (its `stripe_response` has the same `via`) when a proxy's
/// `per_try_timeout` keeps several in flight.
fn stripe_part(via: &std::collections::BTreeMap<String, u32>) -> String {
    if via.is_empty() {
        return "Stripe POST /v1/refunds".into();
    }
    let tries: Vec<String> = via.iter().map(|(l, n)| format!("{l} try {n}")).collect();
    format!("Stripe POST /v1/refunds ({})", tries.join(", "))
}
