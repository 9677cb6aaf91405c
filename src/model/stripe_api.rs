//! Stripe over the wire: the server side of one `POST /v1/refunds` as a task of its own (Stripe
//! keeps executing when a client gives up), and the fault and latency draws that drive it.

use std::rc::Rc;

use rand::Rng;

use super::dist;
use super::stripe::{Begin, CommitFault, Delivered, RefundStatus, StripeRequest};
use super::world::{Ids, World};
use crate::history::EventKind;
use crate::scenario::RequestKey;
use crate::sim::{SimTime, StreamRng};

/// Round trip of a request Stripe answers without executing (429, 409, 400, replay): 30 ms.
pub const REJECT_LATENCY: SimTime = SimTime::from_millis(30);

/// Who is asking: `service` (the refunds service) or `human` (a manual refund in the dashboard).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The refunds service.
    Service,
    /// A human, from the dashboard.
    Human,
}

impl Caller {
    fn as_str(self) -> &'static str {
        match self {
            Caller::Service => "service",
            Caller::Human => "human",
        }
    }
}

/// The draws for one Stripe request, taken in a fixed order from its own stream so that the
/// same (ticket, attempt, try) sees the same latency and faults under every policy.
struct Draws {
    latency: SimTime,
    lock_timeout: bool,
    fault: CommitFault,
    status: RefundStatus,
}

fn draw(w: &World, rng: &mut StreamRng, key: &RequestKey) -> Draws {
    let f = &w.cfg.stripe.faults;
    let mut base = dist::request_latency(rng, &w.cfg.stripe.latency, key);
    let choices = &w.cfg.stripe.latency_choices;
    if !choices.is_empty() {
        let drawn = rng.random_range(0..choices.len());
        let k = w.sim.pick(choices.len()).unwrap_or(drawn);
        base = SimTime::from_duration(choices[k]);
    }
    let spike = dist::chance(rng, f.latency_spike);
    let lock_timeout = dist::chance(rng, f.lock_timeout);
    let e500 = dist::chance(rng, f.error_500_after_commit);
    let lost = dist::chance(rng, f.response_lost_after_commit);
    let pending = dist::chance(rng, f.refund_pending);
    let failed = dist::chance(rng, f.refund_failed);
    let latency = if spike {
        SimTime::from_nanos((base.as_nanos() as f64 * f.latency_spike_factor) as u64)
    } else {
        base
    };
    let fault = if e500 {
        CommitFault::Error500
    } else if lost {
        CommitFault::ResponseLost
    } else {
        CommitFault::None
    };
    let status = if failed {
        RefundStatus::Failed
    } else if pending {
        RefundStatus::Pending
    } else {
        RefundStatus::Succeeded
    };
    Draws {
        latency,
        lock_timeout,
        fault,
        status,
    }
}

/// Stripe's side of one request: admission (rate limit, validation, idempotency), then the
/// execution latency, then the commit. Records `refund_created` when a refund comes into being.
/// Returns what the client receives. `key` names the request for a `script` latency.
pub async fn serve(
    w: Rc<World>,
    req: StripeRequest,
    ids: Ids,
    caller: Caller,
    mut rng: StreamRng,
    key: RequestKey,
) -> Delivered {
    let d = draw(&w, &mut rng, &key);
    let begun = w.stripe.borrow_mut().begin(w.now(), req, d.lock_timeout);
    match begun {
        Begin::Respond(r) => {
            w.sim.sleep(REJECT_LATENCY).await;
            Delivered::Response(r)
        }
        Begin::Execute(token) => {
            w.sim.sleep(d.latency).await;
            let (delivered, created) = {
                let mut stripe = w.stripe.borrow_mut();
                let delivered = stripe.commit(w.now(), token, d.status, d.fault);
                (delivered, stripe.take_created())
            };
            if let Some(r) = created {
                w.record(
                    ids,
                    EventKind::RefundCreated {
                        refund_id: r.id,
                        amount_cents: r.amount_cents,
                        status: status_name(r.status).into(),
                        moves_money: r.status.moves_money(),
                        by: caller.as_str().into(),
                    },
                );
            }
            delivered
        }
    }
}

/// Stripe's name for a refund status.
pub fn status_name(s: RefundStatus) -> &'static str {
    match s {
        RefundStatus::Pending => "pending",
        RefundStatus::RequiresAction => "requires_action",
        RefundStatus::Succeeded => "succeeded",
        RefundStatus::Failed => "failed",
        RefundStatus::Canceled => "canceled",
    }
}
