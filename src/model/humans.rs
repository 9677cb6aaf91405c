//! Humans who take escalated tickets: after a pickup delay they either check the Stripe
//! dashboard first, or issue a manual refund straight away (without an idempotency key).

use std::rc::Rc;

use super::agent::Ticket;
use super::dist;
use super::executor::call_tool;
use super::refunds_service::get_status;
use super::stripe::{Origin, RefundParams, StripeRequest};
use super::stripe_api::{serve, Caller};
use super::stripe_client::classify;
use super::world::{Ids, World};
use crate::history::{EventKind, HumanAction, Outcome, TicketStatus};
use crate::scenario::{Cancellation, ManualRefundVia, RequestKey};
use crate::sim::SimTime;

/// Hands `t` to a human: records the escalation and, when humans are enabled, starts their work
/// as a task of its own.
pub async fn escalate(w: &Rc<World>, t: &Ticket, ids: Ids, reason: String) {
    w.record(ids, EventKind::Escalation { reason });
    if w.cfg.humans.enabled {
        let (ww, tt) = (w.clone(), t.clone());
        w.spawn_detached_for_with(t.id, move || human(ww, tt));
    }
}

/// A human tries a manual refund at most this many times (a 429, 5xx or dropped connection makes
/// them wait [`HUMAN_RETRY_PAUSE`] and try again).
pub const HUMAN_MAX_ATTEMPTS: u32 = 20;
/// Pause between a human's attempts: 1 minute.
pub const HUMAN_RETRY_PAUSE: SimTime = SimTime::from_secs(60);

async fn human(w: Rc<World>, t: Ticket) {
    let cfg = &w.cfg.humans;
    let mut rng = w.ticket_stream("human", t.id, &[]);
    let delay = dist::latency(&mut rng, &cfg.pickup_delay);
    let checks = dist::chance(&mut rng, cfg.check_probability);
    w.sim.sleep(delay).await;
    let ids = Ids::ticket(t.id);
    for attempt in 0..HUMAN_MAX_ATTEMPTS {
        if attempt > 0 {
            w.sim.sleep(HUMAN_RETRY_PAUSE).await;
        }
        if checks && refund_exists(&w, t.id) {
            w.record(
                ids,
                EventKind::Human {
                    action: HumanAction::FoundExisting,
                },
            );
            return;
        }
        if checks && cfg.check_service_status && get_status(&w, t.id) == TicketStatus::Pending {
            continue;
        }
        let (action, via_tool) = match cfg.manual_refund_via {
            ManualRefundVia::Dashboard => (HumanAction::ManualRefund, false),
            ManualRefundVia::Tool => (HumanAction::RerunTool, true),
        };
        w.record(ids, EventKind::Human { action });
        let status = if via_tool {
            rerun_tool(&w, &t, attempt).await
        } else {
            manual_refund(&w, &t, ids, attempt).await
        };
        // 200: done; 400: Stripe refused for good (e.g. charge already refunded).
        if status == 200 || status == 400 {
            return;
        }
    }
}

/// Model attempt numbers of a human's tool re-runs start here (so stories can tell them apart).
pub const HUMAN_ATTEMPT_BASE: u32 = 1000;

/// Re-runs the refund tool for the ticket through the executor (and so the refunds service and
/// its key mode); 200 when the tool reported a refund, 503 otherwise (try again later).
async fn rerun_tool(w: &Rc<World>, t: &Ticket, attempt: u32) -> u16 {
    let a = HUMAN_ATTEMPT_BASE + attempt;
    let ids = Ids::attempt(t.id, a);
    w.record(
        ids,
        EventKind::ToolCall {
            tool: w.cfg.agent.tool.clone(),
            amount_cents: t.amount_cents,
        },
    );
    let reply = call_tool(
        w.clone(),
        t.id,
        a,
        t.amount_cents,
        Vec::new(),
        Cancellation::None,
    )
    .await;
    let ok = reply.outcome == Outcome::Ok;
    w.record(
        ids,
        EventKind::ToolResult {
            outcome: reply.outcome,
            shown: reply.shown,
            refund_id: reply.refund_id,
        },
    );
    if ok {
        200
    } else {
        503
    }
}

fn refund_exists(w: &World, ticket: u64) -> bool {
    w.stripe
        .borrow()
        .first_money_moving_refund(&World::charge_id(ticket))
        .is_some()
}

/// One manual refund from the dashboard (no idempotency key); returns the HTTP status seen
/// (0 when the connection dropped).
async fn manual_refund(w: &Rc<World>, t: &Ticket, ids: Ids, attempt: u32) -> u16 {
    let req = StripeRequest {
        idempotency_key: None,
        params: RefundParams {
            charge: World::charge_id(t.id),
            amount_cents: t.amount_cents,
            reason: "requested_by_customer",
            ticket: t.id,
        },
        business_id: None,
        origin: Origin {
            ticket: t.id,
            request: None,
        },
    };
    w.record(
        ids,
        EventKind::StripeRequest {
            idempotency_key: None,
            business_id: None,
            amount_cents: t.amount_cents,
            sdk_try: attempt,
        },
    );
    let rng = w.ticket_stream("stripe_human", t.id, &[u64::from(attempt)]);
    let start = w.now();
    let key = RequestKey::human(t.id, attempt);
    let delivered = serve(w.clone(), req, ids, Caller::Human, rng, key).await;
    let (status, outcome, refund_id) = classify(&delivered);
    let latency_ns = (w.now() - start).as_nanos();
    w.record(
        ids,
        EventKind::StripeResponse {
            status,
            outcome,
            refund_id,
            latency_ns,
        },
    );
    status
}
