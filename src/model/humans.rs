//! Humans who take escalated tickets: after a pickup delay they either check the Stripe
//! dashboard first, or issue a manual refund straight away (without an idempotency key).

use std::rc::Rc;

use super::agent::Ticket;
use super::dist;
use super::stripe::{Origin, RefundParams, StripeRequest};
use super::stripe_api::{serve, Caller};
use super::stripe_client::classify;
use super::world::{Ids, World};
use crate::history::{EventKind, HumanAction};

/// Hands `t` to a human: records the escalation and, when humans are enabled, starts their work
/// as a task of its own.
pub async fn escalate(w: &Rc<World>, t: &Ticket, ids: Ids, reason: String) {
    w.record(ids, EventKind::Escalation { reason });
    if w.cfg.humans.enabled {
        w.sim.spawn(human(w.clone(), t.clone()));
    }
}

async fn human(w: Rc<World>, t: Ticket) {
    let cfg = &w.cfg.humans;
    let mut rng = w.stream("human", &[t.id]);
    let delay = dist::latency(&mut rng, &cfg.pickup_delay);
    let checks = dist::chance(&mut rng, cfg.check_probability);
    w.sim.sleep(delay).await;
    let charge = World::charge_id(t.id);
    let ids = Ids::ticket(t.id);
    if checks {
        let found = w
            .stripe
            .borrow()
            .refunds_for_charge(&charge)
            .iter()
            .any(|r| r.status.moves_money());
        if found {
            w.record(
                ids,
                EventKind::Human {
                    action: HumanAction::FoundExisting,
                },
            );
            return;
        }
    }
    w.record(
        ids,
        EventKind::Human {
            action: HumanAction::ManualRefund,
        },
    );
    let req = StripeRequest {
        idempotency_key: None,
        params: RefundParams {
            charge,
            amount_cents: t.amount_cents,
            reason: "requested_by_customer".into(),
            ticket: t.id,
        },
        origin: Origin {
            ticket: t.id,
            request: None,
        },
    };
    w.record(
        ids,
        EventKind::StripeRequest {
            idempotency_key: None,
            amount_cents: t.amount_cents,
            sdk_try: 0,
        },
    );
    let rng = w.stream("stripe_human", &[t.id]);
    let start = w.now();
    let delivered = serve(w.clone(), req, ids, Caller::Human, rng).await;
    let (status, outcome, refund_id) = classify(&delivered);
    let latency_ns = (w.now() - start).as_nanos();
    w.record(
        ids,
        EventKind::StripeResponse {
            status,
            outcome: outcome.into(),
            refund_id,
            latency_ns,
        },
    );
}
