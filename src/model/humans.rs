//! Humans who take escalated tickets: after a pickup delay they either check the Stripe
//! dashboard first, or issue a manual refund straight away (without an idempotency key).

use std::rc::Rc;

use super::dist;
use super::executor::call_tool;
use super::refunds_service::get_status;
use super::stripe::{Origin, RefundParams, StripeRequest};
use super::stripe_api::{serve, serve_recorded_outside, Caller};
use super::stripe_trace::{classify, record_request, record_response};
use super::ticket::Ticket;
use super::world::{Ids, World};
use crate::history::{EventKind, HumanAction, Outcome, TicketStatus};
use crate::scenario::{Cancellation, ManualRefundVia, OutsideRefund, RequestKey};
use crate::sim::SimTime;

/// Hands `t` to a human: records the escalation and, when humans are enabled, starts their work
/// as a task of its own. In a replay whose recording holds what the humans did for `t`
/// ([`recorded_human`]), that is replayed instead.
pub(crate) async fn escalate(w: &Rc<World>, t: &Ticket, ids: Ids, reason: String) {
    w.record(ids, EventKind::Escalation { reason });
    if let Some(refunds) = recorded_human(w, t.id) {
        let (ww, tt) = (w.clone(), t.clone());
        w.spawn_detached_for_with(t.id, move || replay_human(ww, tt, refunds));
    } else if w.cfg.humans.enabled {
        let (ww, tt) = (w.clone(), t.clone());
        w.spawn_detached_for_with(t.id, move || human(ww, tt));
    }
}

/// What the recording says the humans did for `ticket`, when it holds that
/// (`replay.outside_refunds_recorded`) and shows the ticket escalated as the run now does:
/// the refunds made outside the agent (none when the human found the refund, or was refused).
/// `None` otherwise: no replay, a ticket not recorded, or one the recording did not escalate
/// (its human is simulated).
fn recorded_human(w: &World, ticket: u64) -> Option<Vec<OutsideRefund>> {
    let replay = w
        .cfg
        .replay
        .as_ref()
        .filter(|r| r.outside_refunds_recorded)?;
    let recorded = replay.tickets.get(&ticket).filter(|t| t.gave_up())?;
    Some(recorded.outside_refunds.clone())
}

/// The recorded humans of an escalated ticket: each refund the recording shows made outside
/// the agent, at its recorded instant (not before the escalation), from the dashboard (no
/// key), created at once under Stripe's rules.
async fn replay_human(w: Rc<World>, t: Ticket, refunds: Vec<OutsideRefund>) {
    let ids = Ids::ticket(t.id);
    for (k, r) in refunds.iter().enumerate() {
        let at = SimTime::from_duration(r.at);
        if at > w.now() {
            w.sim.sleep_until(at).await;
        }
        w.record(
            ids,
            EventKind::Human {
                action: HumanAction::ManualRefund,
            },
        );
        let attempt = u32::try_from(k).unwrap_or(u32::MAX);
        manual_refund(&w, &t, ids, attempt, r.amount_cents, true).await;
    }
}

/// A human tries a manual refund at most this many times (a 429, 5xx or dropped connection makes
/// them wait [`HUMAN_RETRY_PAUSE`] and try again).
pub(crate) const HUMAN_MAX_ATTEMPTS: u32 = 20;
/// Pause between a human's attempts: 1 minute.
pub(crate) const HUMAN_RETRY_PAUSE: SimTime = SimTime::from_secs(60);

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
            manual_refund(&w, &t, ids, attempt, t.amount_cents, false).await
        };
        // 200: done; 400: Stripe refused for good (e.g. charge already refunded).
        if status == 200 || status == 400 {
            return;
        }
    }
}

/// Model attempt numbers of a human's tool re-runs start here (so stories can tell them apart).
pub(crate) const HUMAN_ATTEMPT_BASE: u32 = 1000;

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

/// One manual refund of `amount_cents` from the dashboard (no idempotency key); returns the
/// HTTP status seen (0 when the connection dropped). `recorded`: a refund the recording shows
/// made outside the agent, created at once ([`serve_recorded_outside`]).
async fn manual_refund(
    w: &Rc<World>,
    t: &Ticket,
    ids: Ids,
    attempt: u32,
    amount_cents: u64,
    recorded: bool,
) -> u16 {
    let req = StripeRequest {
        idempotency_key: None,
        params: RefundParams {
            charge: World::charge_id(t.id),
            amount_cents,
            reason: "requested_by_customer",
            ticket: t.id,
        },
        business_id: None,
        origin: Origin {
            ticket: t.id,
            request: None,
        },
    };
    record_request(w, ids, &req, attempt, &Vec::new());
    let rng = w.ticket_stream("stripe_human", t.id, &[u64::from(attempt)]);
    let start = w.now();
    let key = RequestKey::human(t.id, attempt);
    let delivered = if recorded {
        serve_recorded_outside(w.clone(), req, ids, rng, key).await
    } else {
        serve(w.clone(), req, ids, Caller::Human, rng, key).await
    };
    record_response(w, ids, &delivered, start, &Vec::new());
    classify(&delivered).0
}
