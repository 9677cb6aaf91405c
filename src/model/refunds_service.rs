//! The refunds service: ledger row, idempotency key, FIFO pool wait, the Stripe call, the answer.

use std::cell::Cell;
use std::rc::Rc;

use rand::Rng;

use super::layers::Via;
use super::stripe::RefundParams;
use super::stripe_client::{create_refund, CallResult};
use super::world::{Ids, World};
use crate::history::{EventKind, TicketStatus};
use crate::scenario::{KeyMode, OnKeyConflict};
use crate::sim::SimTime;

/// How often a request waiting on another request's pending row (local dedup) re-reads it.
pub const DEDUP_POLL: SimTime = SimTime::from_millis(100);

/// One `POST /refunds` from the tool executor.
#[derive(Clone, Debug)]
pub struct ServiceRequest {
    /// Ticket.
    pub ticket: u64,
    /// Model attempt.
    pub attempt: u32,
    /// Request id.
    pub call: u64,
    /// Executor-level try.
    pub exec_try: u32,
    /// Amount, cents.
    pub amount_cents: u64,
    /// When the caller gives up (used by deadline propagation).
    pub deadline: SimTime,
    /// Tries of the added layers above (part of the Stripe draw key; see [`Via`]).
    pub via: Via,
}

/// The service's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceResult {
    /// `{status: "refunded", refund_id}`.
    Refunded(String),
    /// An error answer: the service's HTTP status and the error text. 503: no pool connection
    /// in time; 504: the caller's deadline passed before Stripe; 502: Stripe answered 5xx or
    /// not at all; 4xx: Stripe's 4xx passed through.
    Error {
        /// HTTP status.
        status: u16,
        /// What the caller is told.
        text: String,
    },
    /// An unknown outcome (a proxy with `on_timeout: unknown` gave up on its last try).
    Unknown(String),
}

impl ServiceResult {
    fn error(status: u16, text: impl Into<String>) -> Self {
        ServiceResult::Error {
            status,
            text: text.into(),
        }
    }
}

/// `get_status(ticket)`: `refunded`, `pending` or `none` from the ledger.
pub fn get_status(w: &World, ticket: u64) -> TicketStatus {
    w.ledger.borrow().status(ticket)
}

fn idempotency_key(w: &World, req: &ServiceRequest) -> Option<String> {
    match w.cfg.refunds_service.idempotency_key {
        KeyMode::None => None,
        KeyMode::PerAttempt => Some(format!("refund_{}_{}", req.ticket, req.call)),
        KeyMode::PerTicket => {
            let mut ledger = w.ledger.borrow_mut();
            let row = ledger.row(req.ticket);
            let generation = row.nonce_generation;
            let nonce = row.nonce.get_or_insert_with(|| {
                let n: u64 = w.ticket_stream("nonce", req.ticket, &[generation]).random();
                format!("{n:016x}")
            });
            Some(format!("refund_{}_{}", req.ticket, nonce))
        }
    }
}

/// Handles one request. `caller_gone` is set by the executor when it stops waiting, so the
/// answer is traced as a late ("zombie") response. Whatever happens, the request's pending row is
/// cleared and any pool connection is returned before this returns.
pub async fn issue(
    w: Rc<World>,
    req: ServiceRequest,
    caller_gone: Rc<Cell<bool>>,
) -> ServiceResult {
    let ids = Ids::call(req.ticket, req.attempt, req.call);
    let start = w.now();
    w.ledger.borrow_mut().row(req.ticket).in_flight += 1;
    let result = handle(&w, &req, ids).await;
    {
        let mut ledger = w.ledger.borrow_mut();
        let row = ledger.row(req.ticket);
        row.in_flight -= 1;
        if row.owner == Some(req.call) {
            row.owner = None;
        }
        match &result {
            ServiceResult::Refunded(id) => {
                row.refund_id.get_or_insert_with(|| id.clone());
            }
            ServiceResult::Error { .. } if w.cfg.refunds_service.new_nonce_after_error => {
                if row.nonce.take().is_some() {
                    row.nonce_generation += 1;
                }
            }
            ServiceResult::Error { .. } | ServiceResult::Unknown(_) => {}
        }
    }
    let (ok, refund_id, error) = match &result {
        ServiceResult::Refunded(id) => (true, Some(id.clone()), None),
        ServiceResult::Error { text, .. } | ServiceResult::Unknown(text) => {
            (false, None, Some(text.clone()))
        }
    };
    w.record(
        ids,
        EventKind::ServiceResponse {
            ok,
            refund_id,
            error,
            late: caller_gone.get(),
            latency_ns: (w.now() - start).as_nanos(),
        },
    );
    result
}

async fn handle(w: &Rc<World>, req: &ServiceRequest, ids: Ids) -> ServiceResult {
    let cfg = &w.cfg.refunds_service;
    w.sim.sleep(SimTime::from_duration(cfg.overhead)).await;
    if cfg.local_dedup {
        if let Some(id) = claim_pending_row(w, req.ticket, req.call).await {
            return ServiceResult::Refunded(id);
        }
    }
    let key = idempotency_key(w, req);
    let Some(permit) = acquire(w, ids).await else {
        return ServiceResult::error(503, "pool acquire timeout (503)");
    };
    if cfg.deadline_propagation && w.now() >= req.deadline {
        drop(permit);
        release(w, ids);
        w.record(ids, EventKind::RequestDropped);
        return ServiceResult::error(504, "deadline exceeded before reaching Stripe");
    }
    let params = RefundParams {
        charge: World::charge_id(req.ticket),
        amount_cents: req.amount_cents,
        reason: "requested_by_customer".into(),
        ticket: req.ticket,
    };
    let result = create_refund(w.clone(), key, params, ids, req.exec_try, &req.via).await;
    drop(permit);
    release(w, ids);
    match result {
        CallResult::Refunded(id) => ServiceResult::Refunded(id),
        CallResult::Failed(status, e) => ServiceResult::error(upstream_status(status), e),
        CallResult::KeyConflict(status, e) => match cfg.on_key_conflict {
            OnKeyConflict::Fail => ServiceResult::error(status, e),
            OnKeyConflict::Lookup => lookup(w, req.ticket)
                .await
                .map_or(ServiceResult::error(status, e), ServiceResult::Refunded),
        },
    }
}

/// The service's status for a Stripe failure: 502 for a 5xx or no answer (0), else Stripe's
/// 4xx passed through.
fn upstream_status(stripe: u16) -> u16 {
    if stripe == 0 || stripe >= 500 {
        502
    } else {
        stripe
    }
}

/// Interval and number of polls of `on_key_conflict: lookup`: every 1 s, 60 times.
pub const LOOKUP_POLL: SimTime = SimTime::from_secs(1);
/// See [`LOOKUP_POLL`].
pub const LOOKUP_POLLS: u32 = 60;

/// `on_key_conflict: lookup`: polls the charge's refunds (as `GET /v1/refunds?charge=…` would)
/// until one that moves money appears; its id, or `None` after [`LOOKUP_POLLS`] polls.
async fn lookup(w: &World, ticket: u64) -> Option<String> {
    let charge = World::charge_id(ticket);
    for _ in 0..LOOKUP_POLLS {
        let found = w
            .stripe
            .borrow()
            .first_money_moving_refund(&charge)
            .map(|r| r.id.clone());
        if found.is_some() {
            return found;
        }
        w.sim.sleep(LOOKUP_POLL).await;
    }
    None
}

/// Local dedup: a pending row per ticket. Returns the ticket's recorded refund if there is one;
/// otherwise waits while an earlier request holds the row, then takes it (first come, first
/// served, so two requests never wait on each other).
async fn claim_pending_row(w: &World, ticket: u64, call: u64) -> Option<String> {
    loop {
        {
            let mut ledger = w.ledger.borrow_mut();
            let row = ledger.row(ticket);
            if row.refund_id.is_some() {
                return row.refund_id.clone();
            }
            if row.owner.is_none_or(|o| o == call) {
                row.owner = Some(call);
                return None;
            }
        }
        w.sim.sleep(DEDUP_POLL).await;
    }
}

/// Waits in FIFO order for a pool connection, up to the acquire timeout.
pub async fn acquire(w: &World, ids: Ids) -> Option<tokio::sync::OwnedSemaphorePermit> {
    let g = &w.pool_gauges;
    g.waiting.set(g.waiting.get() + 1);
    g.max_waiting.set(g.max_waiting.get().max(g.waiting.get()));
    let traced = ids.ticket.is_some();
    if traced {
        w.record(
            ids,
            EventKind::PoolWait {
                queue_depth: g.waiting.get(),
            },
        );
    }
    let start = w.now();
    let fut = w.pool.clone().acquire_owned();
    let permit = match w.cfg.refunds_service.acquire_timeout {
        Some(limit) => w
            .sim
            .timeout(SimTime::from_duration(limit), fut)
            .await
            .ok()
            .and_then(Result::ok),
        None => fut.await.ok(),
    };
    g.waiting.set(g.waiting.get() - 1);
    let waited_ns = (w.now() - start).as_nanos();
    match permit {
        Some(p) => {
            g.acquired.set(g.acquired.get() + 1);
            if traced {
                w.record(ids, EventKind::PoolAcquire { waited_ns });
            }
            Some(p)
        }
        None => {
            if traced {
                w.record(ids, EventKind::PoolTimeout { waited_ns });
            }
            None
        }
    }
}

/// Books a connection's return (the permit itself is dropped by the caller).
pub fn release(w: &World, ids: Ids) {
    let g = &w.pool_gauges;
    g.released.set(g.released.get() + 1);
    if ids.ticket.is_some() {
        w.record(ids, EventKind::PoolRelease);
    }
}
