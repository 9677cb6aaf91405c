//! One ticket's story, printed like the incident log (`HH:MM:SS.mmm  what happened`).

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::history::{
    clock_time, Caller, Decision, Event, EventKind, History, HumanAction, Outcome, ProviderOutcome,
    TicketStatus,
};
use crate::id_map::{self, IdMap};
use crate::invariants::CappedIds;
#[allow(unused_imports)] // named in docs
use crate::invariants::MAX_LISTED_IDS;
use crate::scenario::OnTimeout;
use crate::sim::SimTime;

fn ordinal(attempt: u32) -> String {
    use crate::model::deliveries::DUPLICATE_ATTEMPT_BASE;
    match attempt {
        n if n >= DUPLICATE_ATTEMPT_BASE => ordinal(n % DUPLICATE_ATTEMPT_BASE),
        0 => "FIRST".into(),
        1 => "SECOND".into(),
        2 => "THIRD".into(),
        n if n >= crate::model::humans::HUMAN_ATTEMPT_BASE => "HUMAN'S".into(),
        n => format!("#{}", n + 1),
    }
}

fn dollars(cents: u64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

/// The label of a request: the model attempt's ordinal, then the try of each layer below the
/// model that retried (`FIRST call, framework_retry try 2`, `SECOND call, executor try 1`).
fn label(attempt: u32, exec_try: u32, via: &BTreeMap<String, u32>) -> String {
    let mut s = format!("{} call", ordinal(attempt));
    for (layer, n) in via {
        s.push_str(&format!(", {layer} try {}", n + 1));
    }
    if exec_try > 0 {
        s.push_str(&format!(", executor try {}", exec_try + 1));
    }
    s
}

/// Who stopped waiting for each refunds-service call that answered late: the executor (its
/// timeout), or the added layer above the service whose per-try timeout dropped the call
/// (`layer_timeout` at the call's model attempt). A call answers late once its caller is gone;
/// the first of them to give up while the call is in flight is the one named.
fn gave_up(history: &History, ticket: u64) -> BTreeMap<u64, String> {
    let mut open: BTreeMap<u64, u32> = BTreeMap::new();
    let mut who: BTreeMap<u64, String> = BTreeMap::new();
    for e in history.ticket(ticket) {
        let (giver, attempt) = match (&e.kind, e.call, e.attempt) {
            (EventKind::ServiceRequest { .. }, Some(call), Some(a)) => {
                open.insert(call, a);
                continue;
            }
            (EventKind::ServiceResponse { .. }, Some(call), _) => {
                open.remove(&call);
                continue;
            }
            (EventKind::ExecutorTimeout { .. }, _, Some(a)) => ("executor", a),
            // A layer below the service (after `sdk`) records with the call's ids: its timeout
            // drops a Stripe request, not the service call.
            (EventKind::LayerTimeout { layer, .. }, None, Some(a))
            | (EventKind::LayerDeadlineExceeded { layer, .. }, None, Some(a)) => {
                (layer.as_str(), a)
            }
            _ => continue,
        };
        for (call, a) in &open {
            if *a == attempt {
                who.entry(*call).or_insert_with(|| giver.to_string());
            }
        }
    }
    who
}

/// Which call made each of the ticket's refunds: refund id → call number, from its
/// `refund_created` events (a human's manual refund has no call and is not listed).
///
/// Call numbers count the refunds service's requests over the whole run and refund ids count
/// Stripe's refunds, so the two drift apart (`call #1910` makes `re_00001911`); a story names
/// the call beside a refund id so that a reader need not match the numbers.
fn makers(history: &History, ticket: u64) -> BTreeMap<String, u64> {
    history
        .ticket(ticket)
        .filter_map(|e| match (&e.kind, e.call) {
            (EventKind::RefundCreated { refund_id, by, .. }, Some(call))
                if *by != Caller::Human =>
            {
                Some((refund_id.clone(), call))
            }
            _ => None,
        })
        .collect()
}

/// ` (made by call #N)` after refund `id` when call N made it and N is not `own` (the call the
/// line is about, which the line names already); else nothing.
fn made_by(makers: &BTreeMap<String, u64>, id: &str, own: Option<u64>) -> String {
    match makers.get(id) {
        Some(call) if Some(*call) != own => format!(" (made by call #{call})"),
        _ => String::new(),
    }
}

/// Event `e` as a line of the log, without its time; `None` for events the log does not show.
/// `ticket_shown` is the ticket's id as the story prints it, `attempts` each service call's
/// label ([`label`]), `sdk_tries` each call's latest SDK try, `gave_up` who gave up on each
/// call that answered late ([`gave_up`]) and `makers` the call that made each refund
/// ([`makers`]).
fn line(
    e: &Event,
    ticket_shown: &str,
    attempts: &BTreeMap<u64, String>,
    sdk_tries: &BTreeMap<u64, u32>,
    gave_up: &BTreeMap<u64, String>,
    makers: &BTreeMap<String, u64>,
) -> Option<String> {
    let call = e.call.unwrap_or(0);
    let which = e
        .call
        .and_then(|c| attempts.get(&c))
        .cloned()
        .unwrap_or_default();
    let kind = &e.kind;
    ticket_line(kind, makers)
        .or_else(|| agent_line(kind, ticket_shown, makers))
        .or_else(|| service_line(kind, call, &which, gave_up))
        .or_else(|| stripe_line(e, &which, sdk_tries, makers))
        .or_else(|| layer_line(kind))
        .or_else(|| mcp_line(kind))
        .or_else(|| human_line(kind))
}

/// The ticket's own lines: opened, each delivery of its `ticket.created` webhook, and the
/// stale-pending sweep (naming the call that made a refund it found, from `makers`).
fn ticket_line(kind: &EventKind, makers: &BTreeMap<String, u64>) -> Option<String> {
    Some(match kind {
        EventKind::TicketOpened {
            amount_cents,
            charge_amount_cents,
            phase,
        } => format!(
            "ticket opened ({phase}): approved refund {} of a {} charge",
            dollars(*amount_cents),
            dollars(*charge_amount_cents)
        ),
        EventKind::Delivered {
            event_id,
            duplicate,
            delivery_id: Some(id),
            receive: Some(n),
            reason,
        } => consumer_delivery_line(event_id, *duplicate, id, *n, reason.as_ref()),
        EventKind::Delivered {
            event_id,
            duplicate: false,
            ..
        } => format!("webhook: ticket.created {event_id} delivered, agent started"),
        EventKind::Delivered {
            event_id,
            duplicate: true,
            reason: Some(crate::history::RedeliveryReason::OtherTrigger),
            ..
        } => format!(
            "trigger: another trigger for the same ticket delivered {event_id} (an event id of \
             its own, not a resend), a second agent handler started"
        ),
        EventKind::Delivered {
            event_id,
            duplicate: true,
            ..
        } => format!(
            "webhook: ticket.created {event_id} delivered AGAIN (at-least-once), \
             a second agent handler started"
        ),
        EventKind::DeliveryDeduped {
            event_id,
            record_deleted: false,
        } => {
            format!("webhook: ticket.created {event_id} delivered again, dropped (event id already seen)")
        }
        EventKind::StalePendingClosed {
            pending_for_ns,
            refund_id,
            key_rotated,
        } => {
            let pending = humantime::format_duration(std::time::Duration::from_secs(
                pending_for_ns / 1_000_000_000,
            ));
            match refund_id {
                Some(id) => format!(
                    "stale-pending sweep: pending for {pending}; asked Stripe, found {id}{} and recorded it",
                    made_by(makers, id, None)
                ),
                None => format!(
                    "stale-pending sweep: pending for {pending}, marked FAILED without asking Stripe{}",
                    if *key_rotated {
                        "; the service writes a new key for the next request"
                    } else {
                        ""
                    }
                ),
            }
        }
        EventKind::DeliveryDeduped {
            event_id,
            record_deleted: true,
        } => format!(
            "{event_id} delivered again, dropped (event id already seen); dedup record DELETED, \
             a further copy will run"
        ),
        EventKind::DeliveryAcked {
            delivery_id,
            receive,
        } => format!("{delivery_id} acked (receive #{receive}): deleted from the queue"),
        EventKind::ConsumerCrashed {
            delivery_id,
            receive,
        } => format!(
            "consumer CRASHED before acking {delivery_id} (receive #{receive}): it will be \
             received again when its visibility timeout expires"
        ),
        EventKind::DeadLettered {
            delivery_id,
            receives,
        } => format!("{delivery_id} moved to the dead-letter queue after {receives} receives"),
        _ => return None,
    })
}

/// A duration for a story: whole hours, minutes or seconds when it is one (`30 s`, `5 min`,
/// `1 h`), else milliseconds.
fn span(ns: u64) -> String {
    const S: u64 = 1_000_000_000;
    match ns {
        n if n >= 3600 * S && n % (3600 * S) == 0 => format!("{} h", n / (3600 * S)),
        n if n >= 60 * S && n % (60 * S) == 0 => format!("{} min", n / (60 * S)),
        n if n % S == 0 => format!("{} s", n / S),
        n => format!("{} ms", n / 1_000_000),
    }
}

/// A delivery as the consumer model of `deliveries.queue`, `rebalance`, `brokers` or
/// `dedup_record` records it: which message, which receive, and why it came again.
fn consumer_delivery_line(
    event_id: &str,
    duplicate: bool,
    id: &str,
    n: u32,
    reason: Option<&crate::history::RedeliveryReason>,
) -> String {
    use crate::history::RedeliveryReason as R;
    let why = match reason {
        None => "delivered".to_string(),
        Some(R::VisibilityTimeout { timeout_ns }) => format!(
            "REDELIVERED (receive #{n}, visibility timeout {} expired)",
            span(*timeout_ns)
        ),
        Some(R::Rebalance { drain_ns }) => format!(
            "REDELIVERED (receive #{n}, consumer-group rebalance: not committed within the {} \
             drain deadline)",
            span(*drain_ns)
        ),
        Some(R::SecondBroker) => "delivered AGAIN (published to a second broker)".to_string(),
        Some(R::SenderResent) => "delivered AGAIN (the sender resent it)".to_string(),
        Some(R::OtherTrigger) => "delivered by ANOTHER TRIGGER (its own event id)".to_string(),
    };
    let handler = if duplicate {
        "another agent handler started"
    } else {
        "agent started"
    };
    format!("{event_id} as {id} {why}, {handler}")
}

/// The agent's lines: the model's tool call, the tool executor's timeout and status probe, the
/// result the model reads, the model's failures and decisions, and the escalation.
/// `ticket_shown` is the ticket's id as the story prints it; a probe that finds a refund names
/// the call that made it (`makers`).
fn agent_line(
    kind: &EventKind,
    ticket_shown: &str,
    makers: &BTreeMap<String, u64>,
) -> Option<String> {
    Some(match kind {
        EventKind::ToolCall { tool, amount_cents } => {
            format!("tool_call {tool}(ticket={ticket_shown}, amount={amount_cents})")
        }
        EventKind::ExecutorTimeout { after_ns, action } => executor_timeout(*after_ns, *action),
        EventKind::Probe { status, error } => match error {
            Some(err) => {
                format!("tool_executor: get_status(ticket={ticket_shown}) → unknown ({err})")
            }
            None => format!(
                "tool_executor: get_status(ticket={ticket_shown}) → {}",
                probe_status(status, makers)
            ),
        },
        EventKind::ToolResult { outcome, shown, .. } => {
            let tag = match outcome {
                Outcome::Ok => "",
                Outcome::Fail => " [fail]",
                Outcome::Info => " [info]",
            };
            format!("tool_result: {shown}{tag}")
        }
        EventKind::LlmError => {
            "model: the LLM call reading the tool result failed (model API error)".into()
        }
        EventKind::ModelDecision { text, decision } => match decision {
            Decision::Retry | Decision::Escalate => format!("model: \"{text}\""),
        },
        EventKind::Escalation { .. } => "escalated to a human".into(),
        _ => return None,
    })
}

/// The refunds service's lines about call `call` (labelled `which`): a long pool wait, giving
/// up on one, a request dropped before Stripe, a crash after Stripe's 200, and a late
/// ("zombie") response. A pool wait under a second, and a response in time, show nothing.
fn service_line(
    kind: &EventKind,
    call: u64,
    which: &str,
    gave_up: &BTreeMap<u64, String>,
) -> Option<String> {
    Some(match kind {
        EventKind::PoolAcquire { waited_ns } if *waited_ns >= 1_000_000_000 => format!(
            "refunds-service: call #{call} got a Stripe connection after waiting {}",
            SimTime::from_nanos(*waited_ns)
        ),
        EventKind::PoolTimeout { waited_ns } => {
            format!(
                "refunds-service: call #{call} gave up waiting for a connection after {}",
                SimTime::from_nanos(*waited_ns)
            )
        }
        EventKind::RequestDropped => {
            format!("refunds-service: call #{call} dropped before reaching Stripe (its caller gave up or its deadline passed)")
        }
        EventKind::ServiceCrash { refund_id } => format!(
            "refunds-service: call #{call} failed after Stripe's 200 ({refund_id}), before its ledger write; the caller's connection drops"
        ),
        EventKind::ServiceResponse {
            late: true,
            ok,
            refund_id,
            error,
            ..
        } => format!(
            "[async, arrives after {} gave up] refunds-service response for the {which}: {}",
            gave_up.get(&call).map_or("its caller", String::as_str),
            late_body(*ok, refund_id.as_deref(), error.as_deref())
        ),
        _ => return None,
    })
}

/// Stripe's lines: its answer to a `POST /v1/refunds`, a refund created (by call number N for
/// call `which`, or by a human) and a pending refund settled. `sdk_tries` is each call's latest
/// SDK try; `makers` the call that made each refund, named beside a refund id that another
/// call made (a replayed answer) and on a settled refund.
fn stripe_line(
    e: &Event,
    which: &str,
    sdk_tries: &BTreeMap<u64, u32>,
    makers: &BTreeMap<String, u64>,
) -> Option<String> {
    Some(match &e.kind {
        EventKind::StripeResponse {
            status,
            outcome,
            refund_id,
            via,
            ..
        } => {
            let line = stripe_response(e, sdk_tries, via, *status, *outcome, refund_id.as_deref());
            match refund_id {
                Some(id) => line + &made_by(makers, id, e.call),
                None => line,
            }
        }
        EventKind::RefundCreated {
            refund_id,
            amount_cents,
            status,
            by,
            ..
        } => {
            let who = if *by == Caller::Human {
                "manual refund by a human".to_string()
            } else {
                format!("for the {which}")
            };
            // The call that made it, by number: refund ids and call numbers count different
            // things and drift apart (`call #1910` makes `re_00001911`).
            let by_call = match e.call {
                Some(call) if *by != Caller::Human => format!(" by call #{call}"),
                _ => String::new(),
            };
            format!(
                "stripe: refund {refund_id} created{by_call}, {} {status} ({who})",
                dollars(*amount_cents)
            )
        }
        EventKind::RefundSettled {
            refund_id,
            status,
            moves_money,
            ..
        } => format!(
            "stripe: refund {refund_id}{} settled {status}{}",
            made_by(makers, refund_id, None),
            if *moves_money {
                ""
            } else {
                " (no money moved: the 200 did not refund anything)"
            }
        ),
        _ => return None,
    })
}

/// An added layer's lines (framework retry middleware, a proxy, a hedge): its retry, its hedged
/// try, its spent retry budget and its per-try timeout.
fn layer_line(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::LayerRetry {
            layer,
            layer_try,
            reason,
            backoff_ns,
        } => format!(
            "{layer}: {reason}, retrying (try {}) after {}",
            layer_try + 1,
            SimTime::from_nanos(*backoff_ns)
        ),
        EventKind::LayerHedge {
            layer,
            layer_try,
            reason,
            after_ns,
            running,
        } => {
            let beside = match running {
                0 => String::new(),
                1 => ", the earlier try still running".to_string(),
                n => format!(", {n} earlier tries still running"),
            };
            if &**reason == "delay" {
                format!(
                    "{layer}: no answer after {}, hedging (try {}){beside}",
                    SimTime::from_nanos(*after_ns),
                    layer_try + 1
                )
            } else {
                format!(
                    "{layer}: {reason}, hedging at once (try {}){beside}",
                    layer_try + 1
                )
            }
        }
        EventKind::LayerBudgetExhausted { layer, .. } => {
            format!("{layer}: retry budget spent, not retrying")
        }
        EventKind::BreakerOpened {
            layer,
            failures,
            calls,
            open_for_ns,
        } => format!(
            "{layer}: circuit OPENED ({failures} failures in {calls} calls); refusing every call for {}",
            SimTime::from_nanos(*open_for_ns)
        ),
        EventKind::BreakerHalfOpen { layer } => {
            format!("{layer}: circuit half-open, this call goes through as a probe")
        }
        EventKind::BreakerClosed { layer, probes } => {
            format!("{layer}: circuit closed after {probes} probe(s)")
        }
        EventKind::BreakerRejected {
            layer,
            open_for_ns: 0,
        } => format!(
            "{layer}: circuit half-open with its probes in flight, call refused at once (circuit-open), nothing sent"
        ),
        EventKind::BreakerRejected { layer, open_for_ns } => format!(
            "{layer}: circuit open, call refused at once (circuit-open), nothing sent; open {} more",
            SimTime::from_nanos(*open_for_ns)
        ),
        EventKind::LayerTimeout {
            layer,
            layer_try,
            after_ns,
        } => format!(
            "{layer}: try {} timed out after {}ms; its work keeps running",
            layer_try + 1,
            after_ns / 1_000_000
        ),
        EventKind::StepReplayed { step, from_attempt } => format!(
            "durable step {}: completed in an earlier run (attempt {from_attempt}); its checkpointed result is replayed, no request",
            step + 1
        ),
        EventKind::StepInterrupted { step, from_attempt } => format!(
            "durable step {}: started in an earlier run (attempt {from_attempt}) and never completed; at-most-once: StepInterruptedError, not run again",
            step + 1
        ),
        EventKind::WorkAfterRefund { refund_id, work_ns } => format!(
            "refunds-service: refund {refund_id} recorded in the ledger; the run goes on {}ms before answering (work after the refund)",
            work_ns / 1_000_000
        ),
        EventKind::LayerDeadlineExceeded {
            layer,
            layer_try,
            deadline_ns,
            in_flight: true,
        } => format!(
            "{layer}: deadline of {}ms over all tries passed during try {}; gave it up (its work keeps running), not retrying",
            deadline_ns / 1_000_000,
            layer_try + 1
        ),
        EventKind::LayerDeadlineExceeded {
            layer,
            layer_try,
            deadline_ns,
            in_flight: false,
        } => format!(
            "{layer}: the next retry would start after the deadline of {}ms over all tries; not retrying after try {}",
            deadline_ns / 1_000_000,
            layer_try + 1
        ),
        _ => return None,
    })
}

/// An `mcp_client` layer's lines (a broken response stream, a re-issue with a new request id,
/// a duplicated `tools/call`, a request timeout) and the tool server's answers from its
/// request idempotency key.
fn mcp_line(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::McpStreamBroken { layer, request_id } => format!(
            "{layer}: response stream of tools/call id {request_id} BROKEN after the tool ran; \
             response lost"
        ),
        EventKind::McpReissued {
            layer,
            request_id,
            previous_id,
            reason,
        } => {
            let why = match reason.as_ref() {
                "timeout" => "after its request timeout".to_string(),
                "stream_broken" => "as the spec requires after a broken stream".to_string(),
                other => format!("after {other}"),
            };
            format!(
                "{layer}: tools/call RE-ISSUED as id {request_id} (was id {previous_id}), {why}"
            )
        }
        EventKind::McpDuplicateSent {
            layer,
            request_id,
            original_id,
            gap_ns,
        } => format!(
            "{layer}: tools/call sent TWICE: id {request_id} {} after id {original_id}, both \
             reach the server",
            span(*gap_ns)
        ),
        EventKind::McpRequestTimeout {
            layer,
            request_id,
            after_ns,
            cancelled,
        } => format!(
            "{layer}: tools/call id {request_id} timed out after {}; {}",
            span(*after_ns),
            if *cancelled {
                "notifications/cancelled sent, the server cancels the tool run"
            } else {
                "no cancellation sent, the tool run keeps going"
            }
        ),
        EventKind::McpKeyAnswered {
            request_id,
            first_id,
            outcome,
        } => match outcome.as_ref() {
            "replayed" => format!(
                "tool server: tools/call id {request_id} carries the idempotency key of id \
                 {first_id}: stored result returned, the tool did not run"
            ),
            "in_progress" => format!(
                "tool server: tools/call id {request_id} rejected, idempotency_key_in_progress \
                 (id {first_id} still running)"
            ),
            _ => format!(
                "tool server: tools/call id {request_id} rejected, idempotency_key_conflict \
                 (id {first_id} had other arguments)"
            ),
        },
        _ => return None,
    })
}

/// What the human who took the escalation did.
fn human_line(kind: &EventKind) -> Option<String> {
    let EventKind::Human { action } = kind else {
        return None;
    };
    Some(
        match action {
            HumanAction::FoundExisting => {
                "human: checked the Stripe dashboard, found a refund, closed the ticket"
            }
            HumanAction::ManualRefund => {
                "human: issued a manual refund from the dashboard (no idempotency key)"
            }
            HumanAction::RerunTool => "human: re-ran the refund tool through the refunds service",
        }
        .into(),
    )
}

/// `stripe: POST /v1/refunds for call #N (sdk try K, egress try J) → STATUS OUTCOME [REFUND]`:
/// the SDK's try and the tries of the proxies after `sdk` (`via`), each when it is a retry. A
/// connection never made says so: `→ could not connect, nothing sent (connect_failed)`.
fn stripe_response(
    e: &Event,
    sdk_tries: &BTreeMap<u64, u32>,
    via: &BTreeMap<String, u32>,
    status: u16,
    outcome: ProviderOutcome,
    refund_id: Option<&str>,
) -> String {
    let call = e.call.unwrap_or(0);
    let mut tries: Vec<String> = Vec::new();
    if let Some(n) = sdk_tries.get(&call).filter(|n| **n > 0) {
        tries.push(format!("sdk try {}", n + 1));
    }
    tries.extend(
        via.iter()
            .map(|(layer, n)| format!("{layer} try {}", n + 1)),
    );
    let whose = match e.call {
        Some(_) if tries.is_empty() => format!("call #{call}"),
        Some(_) => format!("call #{call} ({})", tries.join(", ")),
        None => "the manual refund".into(),
    };
    if outcome == ProviderOutcome::ConnectFailed {
        return format!(
            "stripe: POST /v1/refunds for {whose} → could not connect, nothing sent ({outcome})"
        );
    }
    let status = if status == 0 {
        "no response,".to_string()
    } else {
        status.to_string()
    };
    let refund = refund_id.map(|r| format!(" {r}")).unwrap_or_default();
    format!("stripe: POST /v1/refunds for {whose} → {status} {outcome}{refund}")
}

/// What the executor does when its timeout fires: probe, or inject an error result.
fn executor_timeout(after_ns: u64, action: OnTimeout) -> String {
    match action {
        OnTimeout::ProbeStatus => format!(
            "tool_executor: timeout after {}ms, probing refund status",
            after_ns / 1_000_000
        ),
        OnTimeout::ReportError => format!(
            "tool_executor: timeout after {}ms, injecting error result",
            after_ns / 1_000_000
        ),
    }
}

/// `get_status`'s answer as the log shows it, a refund found with the call that made it.
fn probe_status(status: &TicketStatus, makers: &BTreeMap<String, u64>) -> String {
    match status {
        TicketStatus::None => "none".to_string(),
        TicketStatus::Pending => "pending".to_string(),
        TicketStatus::Refunded { refund_id } => {
            format!("refunded {refund_id}{}", made_by(makers, refund_id, None))
        }
        TicketStatus::Unknown => "unknown".to_string(),
    }
}

/// The body of a late refunds-service response, JSON-like.
fn late_body(ok: bool, refund_id: Option<&str>, error: Option<&str>) -> String {
    match (ok, refund_id, error) {
        (true, Some(id), _) => format!("{{ status: \"refunded\", refund_id: \"{id}\" }}"),
        (_, _, Some(err)) => format!("{{ error: \"{err}\" }}"),
        _ => "{}".into(),
    }
}

/// Story lines as `scenario` has them told: in its tool's words
/// ([`Effect::say`](crate::scenario::Effect::say)), and, when it has no humans, an escalation
/// that says no one takes it (the event is the model's; who acts on it is the scenario's).
pub fn for_scenario(scenario: &crate::scenario::Scenario, lines: Vec<String>) -> Vec<String> {
    let effect = scenario.effect();
    let humans = scenario.humans.enabled;
    lines
        .into_iter()
        .map(|l| {
            let l = if humans {
                l
            } else {
                l.replace(
                    "escalated to a human",
                    "escalated; no one takes escalations (the scenario has no humans)",
                )
            };
            effect.say(&l)
        })
        .collect()
}

/// Lines of `ticket`'s story, each `HH:MM:SS.mmm  text` from `origin`. Empty when the ticket
/// never opened.
pub fn story(history: &History, ticket: u64, origin: Option<SystemTime>) -> Vec<String> {
    story_as(history, ticket, &ticket.to_string(), origin)
}

/// [`story`], the ticket shown as `shown` in its tool calls: the id a recording gave it
/// (`T-100001`, from `replay.ticket_labels`) rather than the number the replay uses.
pub(crate) fn story_as(
    history: &History,
    ticket: u64,
    shown: &str,
    origin: Option<SystemTime>,
) -> Vec<String> {
    let mut attempts: BTreeMap<u64, String> = history
        .ticket(ticket)
        .filter_map(|e| Some((e.call?, label(e.attempt?, 0, &BTreeMap::new()))))
        .collect();
    for e in history.ticket(ticket) {
        if let (Some(call), Some(a), EventKind::ServiceRequest { exec_try, via }) =
            (e.call, e.attempt, &e.kind)
        {
            attempts.insert(call, label(a, *exec_try, via));
        }
    }
    // The SDK try of each call's latest Stripe request, for labelling its response.
    let mut sdk_tries: BTreeMap<u64, u32> = BTreeMap::new();
    let gave_up = gave_up(history, ticket);
    let makers = makers(history, ticket);
    let mut lines = Vec::new();
    for e in history.ticket(ticket) {
        if let (Some(call), EventKind::StripeRequest { sdk_try, .. }) = (e.call, &e.kind) {
            sdk_tries.insert(call, *sdk_try);
        }
        if let Some(l) = line(e, shown, &attempts, &sdk_tries, &gave_up, &makers) {
            // The second handler's lines (a duplicate delivery's agent run) are marked.
            let mark = match e.attempt {
                Some(a) if a >= crate::model::deliveries::DUPLICATE_ATTEMPT_BASE => format!(
                    "[handler {}] ",
                    a / crate::model::deliveries::DUPLICATE_ATTEMPT_BASE + 1
                ),
                _ => String::new(),
            };
            lines.push(format!("{}  {mark}{l}", clock_time(origin, e.t_ns)));
        }
    }
    lines
}

/// Tickets whose story has the incident's shape: the first call took 8–12 s and came back late
/// after an executor timeout, the model retried, the retry answered in under 3 s, and the ticket
/// ended with exactly two refunds. Ascending, at most [`MAX_LISTED_IDS`].
pub fn incident_shaped(history: &History) -> Vec<u64> {
    let mut scan = IncidentShapes::default();
    for e in &history.events {
        scan.record(e);
    }
    scan.finish()
}

/// What [`IncidentShapes`] tracks per open ticket.
#[derive(Default)]
struct Shape {
    first_late_ns: Option<u64>,
    timed_out: bool,
    retried: bool,
    retry_call_at: Option<SimTime>,
    retry_ok_in: Option<SimTime>,
    refunds: u32,
}

impl Shape {
    fn matches(&self) -> bool {
        self.first_late_ns
            .is_some_and(|ns| (8_000_000_000..=12_000_000_000).contains(&ns))
            && self.timed_out
            && self.retried
            && self.retry_ok_in.is_some_and(|d| d < SimTime::from_secs(3))
            && self.refunds == 2
    }
}

/// What one event tells [`IncidentShapes`] about its ticket.
enum Note {
    /// The first attempt's call answered late and ok, after this many ns.
    FirstLate(u64),
    /// The first attempt's call timed out in the executor.
    TimedOut,
    /// The model retried after the first attempt.
    Retried,
    /// The retry's tool call started.
    RetryCall,
    /// The retry's tool call answered ok.
    RetryOk,
    /// A refund that moves money was created.
    Refund,
}

/// [`incident_shaped`] online: feed events in order, close tickets as they close (their state
/// is judged and dropped), then [`IncidentShapes::finish`].
#[derive(Default)]
pub(crate) struct IncidentShapes {
    /// Open tickets' shapes (a hash map: looked up per event; judged in ascending id at the end).
    open: IdMap<Shape>,
    found: CappedIds,
}

impl IncidentShapes {
    /// Notes one event. Only the few kinds a shape reads look the ticket up (a shape made for
    /// any other event would stay at its default, which never matches).
    pub(crate) fn record(&mut self, e: &Event) {
        let Some(t) = e.ticket else { return };
        let note = match (&e.kind, e.attempt) {
            (
                EventKind::ServiceResponse {
                    late: true,
                    ok: true,
                    latency_ns,
                    ..
                },
                Some(0),
            ) => Note::FirstLate(*latency_ns),
            (EventKind::ExecutorTimeout { .. }, Some(0)) => Note::TimedOut,
            (
                EventKind::ModelDecision {
                    decision: Decision::Retry,
                    ..
                },
                Some(0),
            ) => Note::Retried,
            (EventKind::ToolCall { .. }, Some(1)) => Note::RetryCall,
            (
                EventKind::ToolResult {
                    outcome: Outcome::Ok,
                    ..
                },
                Some(1),
            ) => Note::RetryOk,
            (
                EventKind::RefundCreated {
                    moves_money: true, ..
                },
                _,
            ) => Note::Refund,
            _ => return,
        };
        let s = self.open.entry(t).or_default();
        match note {
            Note::FirstLate(ns) => s.first_late_ns = Some(ns),
            Note::TimedOut => s.timed_out = true,
            Note::Retried => s.retried = true,
            Note::RetryCall => s.retry_call_at = Some(e.t_ns),
            Note::RetryOk => s.retry_ok_in = s.retry_call_at.map(|c| e.t_ns - c),
            Note::Refund => s.refunds += 1,
        }
    }

    fn judge(&mut self, id: u64, s: &Shape) {
        if s.matches() {
            self.found.insert(id);
        }
    }

    /// Ticket `id` closed: judge it and drop its state.
    pub(crate) fn ticket_closed(&mut self, id: u64) {
        if let Some(s) = self.open.remove(&id) {
            self.judge(id, &s);
        }
    }

    /// The incident-shaped tickets, ascending, at most [`MAX_LISTED_IDS`].
    pub(crate) fn finish(mut self) -> Vec<u64> {
        for (id, s) in id_map::into_sorted(std::mem::take(&mut self.open)) {
            self.judge(id, &s);
        }
        self.found.into_vec()
    }
}
