//! The refunds service: ledger row, idempotency key, FIFO pool wait, the Stripe call, the answer.

use std::rc::Rc;

use rand::Rng;

use super::caller::CallerState;
use super::dist;
use super::ids;
use super::layers::{self, via_ids, Via};
use super::pool::Permit;
use super::stripe::RefundParams;
use super::stripe_client::{create_refund, CallResult};
use super::world::{Ids, World};
use crate::history::{EventKind, TicketStatus};
use crate::scenario::{
    KeyMode, KeyRotation, OnKeyConflict, OnPendingRow, OnUnknownOutcome, RefundsService,
    RequestKey, StatusSource, UnknownOutcomeRecord,
};
use crate::sim::SimTime;

/// How often a request waiting on another request's pending row (local dedup) re-reads it.
pub(crate) const DEDUP_POLL: SimTime = SimTime::from_millis(100);

/// One `POST /refunds` from the tool executor.
#[derive(Clone, Debug)]
pub(crate) struct ServiceRequest {
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
pub(crate) enum ServiceResult {
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
    /// The connection dropped with no HTTP answer at all (the service failed after Stripe's 200,
    /// before its ledger write: `refunds_service.crash_after_provider_ok`). A layer's
    /// `retry_on` reads it as `reset`, as Envoy reads a reset stream; the refund's outcome is
    /// unknown to the caller. The text is what the caller is told.
    Reset(String),
    /// A layer between the executor and the service refused the call at once without sending it
    /// (an open `circuit_breaker`: Polly's `BrokenCircuitException`, resilience4j's
    /// `CallNotPermittedException`): nothing was sent, a definite failure of this try of class
    /// `circuit-open`. The text is what the caller is told.
    Rejected(String),
}

impl ServiceResult {
    pub(crate) fn error(status: u16, text: impl Into<String>) -> Self {
        ServiceResult::Error {
            status,
            text: text.into(),
        }
    }
}

/// `get_status(ticket)` as the service answers it now, from its `status_source`: the ledger
/// (`refunded`, `pending`, `unknown`, `none`; only `refunded` or `none` with `completed_only`),
/// after a lookup of the charge's committed refunds at Stripe with `provider`.
pub(crate) fn get_status(w: &World, ticket: u64) -> TicketStatus {
    let source = w.cfg.refunds_service.status_source;
    if source == StatusSource::Provider {
        let stripe = w.stripe.borrow();
        if let Some(r) = stripe.first_money_moving_refund(&World::charge_id(ticket)) {
            return TicketStatus::Refunded {
                refund_id: String::from(&*r.id),
            };
        }
    }
    w.ledger
        .borrow()
        .status(ticket, source == StatusSource::CompletedOnly)
}

fn idempotency_key(w: &World, req: &ServiceRequest) -> Option<String> {
    match w.cfg.refunds_service.idempotency_key {
        KeyMode::None => None,
        KeyMode::PerAttempt => Some(ids::service_key(req.ticket, req.call)),
        KeyMode::PerTicket => {
            let mut ledger = w.ledger.borrow_mut();
            let row = ledger.row(req.ticket);
            let generation = row.nonce_generation;
            let nonce = row.nonce.get_or_insert_with(|| {
                let n: u64 = w.ticket_stream("nonce", req.ticket, &[generation]).random();
                ids::nonce(n)
            });
            Some(ids::service_ticket_key(req.ticket, nonce))
        }
    }
}

/// Handles one request. `caller` says when the layer waiting for it gave up, so the answer is
/// traced as a late ("zombie") response, and what it cancelled. Whatever happens, the request's
/// pending row is cleared and any pool connection is returned before this returns.
pub(crate) async fn issue(
    w: Rc<World>,
    req: ServiceRequest,
    caller: Rc<CallerState>,
) -> ServiceResult {
    let ids = Ids::call(req.ticket, req.attempt, req.call);
    let start = w.now();
    {
        let mut ledger = w.ledger.borrow_mut();
        let row = ledger.row(req.ticket);
        row.in_flight += 1;
        // A new request for a row the sweep marked failed starts it over.
        row.marked_failed = false;
        if row.refund_id.is_none() && row.pending_since.is_none() {
            row.pending_since = Some(w.now());
        }
    }
    let result = handle(&w, &req, ids, &caller).await;
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
                row.pending_since = None;
            }
            failed => {
                if rotates_key(&w.cfg.refunds_service, failed) {
                    row.rotate_nonce();
                }
                if w.cfg.refunds_service.sdk_timeout_recorded_as == UnknownOutcomeRecord::Unknown
                    && is_unknown_outcome(failed)
                {
                    row.unknown_outcome = true;
                }
                // Pending no more once nothing is in flight and nothing is unknown.
                if row.in_flight == 0 && !row.unknown_outcome {
                    row.pending_since = None;
                }
            }
        }
    }
    let (ok, refund_id, error) = match &result {
        ServiceResult::Refunded(id) => (true, Some(id.clone()), None),
        ServiceResult::Error { text, .. }
        | ServiceResult::Unknown(text)
        | ServiceResult::Reset(text)
        | ServiceResult::Rejected(text) => (false, None, Some(text.clone())),
    };
    w.record(
        ids,
        EventKind::ServiceResponse {
            ok,
            refund_id,
            error,
            late: caller.gone(),
            latency_ns: (w.now() - start).as_nanos(),
        },
    );
    result
}

/// Whether the service's answer leaves the refund's outcome unknown: a 502 (Stripe failed, went
/// silent, the SDK timed out or the call was aborted, after the SDK's own retries), a 409 (a
/// request with the key is still executing) or a reset connection (the service failed after
/// Stripe's 200). Every other error says nothing was done.
pub(crate) fn is_unknown_outcome(answer: &ServiceResult) -> bool {
    matches!(
        answer,
        ServiceResult::Error {
            status: 502 | 409,
            ..
        } | ServiceResult::Reset(_)
    )
}

/// Whether a failed answer makes the service write a new nonce for the ticket
/// (`rotate_key`, or the older `new_nonce_after_error`, which means `after_error`). A 502
/// (Stripe failed or went silent: the refund may exist) and a 409 (a request with the key is
/// still executing) are unknown outcomes; every other error is a definite failure.
pub(crate) fn rotates_key(cfg: &RefundsService, answer: &ServiceResult) -> bool {
    let rotation = if cfg.new_nonce_after_error {
        KeyRotation::AfterError
    } else {
        cfg.rotate_key
    };
    match (rotation, answer) {
        (_, ServiceResult::Refunded(_)) | (KeyRotation::Never, _) => false,
        (KeyRotation::AfterError, _) => true,
        (KeyRotation::AfterDefiniteFailure, e @ ServiceResult::Error { .. }) => {
            !is_unknown_outcome(e)
        }
        (KeyRotation::AfterDefiniteFailure, ServiceResult::Rejected(_)) => true,
        (
            KeyRotation::AfterDefiniteFailure,
            ServiceResult::Unknown(_) | ServiceResult::Reset(_),
        ) => false,
    }
}

/// Whether the request should be dropped before Stripe: its caller cancelled queued work, or
/// (deadline propagation) its caller's deadline passed.
fn dropped_before_stripe(w: &World, req: &ServiceRequest, caller: &CallerState) -> bool {
    caller.drops_queued() || (w.cfg.refunds_service.deadline_propagation && w.now() >= req.deadline)
}

/// Waits for a pool connection; after an acquire timeout, retries up to `acquire_retries` times
/// after `acquire_retry_backoff` (at the back of the queue), unless the request is to be dropped.
/// The one retry loop ([`layers::retry_loop`]): [`Acquire`] under [`AcquireRetryPolicy`].
async fn acquire_with_retries(
    w: &Rc<World>,
    req: &ServiceRequest,
    ids: Ids,
    caller: &CallerState,
) -> Option<Permit> {
    let mut policy = AcquireRetryPolicy { req, caller };
    layers::retry_loop(w, &mut policy, &mut Acquire { w, ids }).await
}

/// One wait for a pool connection, under `acquire_timeout` ([`acquire`]).
struct Acquire<'a> {
    w: &'a World,
    ids: Ids,
}

impl layers::Inner for Acquire<'_> {
    type Answer = Option<Permit>;
    async fn try_once(&mut self, _n: u32, _via: Via) -> layers::TryEnd<Option<Permit>> {
        layers::TryEnd::Answered {
            value: acquire(self.w, self.ids).await,
            class: None,
        }
    }
}

/// The service's acquire retries: after an acquire timeout, up to `acquire_retries` more waits
/// after a constant `acquire_retry_backoff`, unless the request is to be dropped
/// ([`dropped_before_stripe`]).
struct AcquireRetryPolicy<'a> {
    req: &'a ServiceRequest,
    caller: &'a CallerState,
}

impl<'a> layers::Policy<Acquire<'a>> for AcquireRetryPolicy<'_> {
    fn retry(
        &mut self,
        n: u32,
        end: &layers::TryEnd<Option<Permit>>,
        inner: &mut Acquire<'a>,
    ) -> layers::Next {
        let w = inner.w;
        let cfg = &w.cfg.refunds_service;
        let timed_out = matches!(end, layers::TryEnd::Answered { value: None, .. });
        if timed_out && n < cfg.acquire_retries && !dropped_before_stripe(w, self.req, self.caller)
        {
            layers::Next::After(SimTime::from_duration(cfg.acquire_retry_backoff))
        } else {
            layers::Next::Report
        }
    }
}

/// Handles one request: answered from the service's own state when it can be (local dedup,
/// `lookup_before_create`), else a pool connection, one logical Stripe call, and the answer
/// made of its result.
async fn handle(
    w: &Rc<World>,
    req: &ServiceRequest,
    ids: Ids,
    caller: &CallerState,
) -> ServiceResult {
    let overhead = SimTime::from_duration(w.cfg.refunds_service.overhead);
    let received = w.now();
    let reach = replayed_reach(w, req);
    w.sim
        .sleep(reach.map_or(overhead, |r| r.min(overhead)))
        .await;
    if let Some(answer) = answered_locally(w, req, received).await {
        return answer;
    }
    let key = match replayed_key(w, req) {
        Some(recorded) => recorded,
        None => idempotency_key(w, req),
    };
    let permit = match reach {
        Some(r) => {
            w.sim.sleep(r.saturating_sub(overhead)).await;
            None
        }
        None => match acquire_with_retries(w, req, ids, caller).await {
            Some(p) => Some(p),
            None => return ServiceResult::error(503, "pool acquire timeout (503)"),
        },
    };
    if dropped_before_stripe(w, req, caller) {
        if permit.is_some() {
            drop(permit);
            release(w, ids);
        }
        w.record(ids, EventKind::RequestDropped);
        let text = if caller.drops_queued() {
            "cancelled by the caller before reaching Stripe"
        } else {
            "deadline exceeded before reaching Stripe"
        };
        return ServiceResult::error(504, text);
    }
    let result = call_stripe(w, req, ids, caller, key, permit).await;
    answer(w, req, ids, caller, result).await
}

/// The answer the service gives from its own state, without Stripe: a pending row's refund or
/// 409 (`local_dedup`), or the charge's refund at Stripe (`lookup_before_create`).
async fn answered_locally(
    w: &Rc<World>,
    req: &ServiceRequest,
    received: SimTime,
) -> Option<ServiceResult> {
    let cfg = &w.cfg.refunds_service;
    if cfg.local_dedup {
        match claim_pending_row(w, req.ticket, req.call, cfg.on_pending_row).await {
            Claim::Refunded(id) => {
                answer_as_recorded(w, req, received).await;
                return Some(ServiceResult::Refunded(id));
            }
            Claim::Conflict => {
                answer_as_recorded(w, req, received).await;
                return Some(ServiceResult::error(
                    409,
                    "a refund for this ticket is already in progress (unique constraint, 409)",
                ));
            }
            Claim::Claimed => {}
        }
    }
    if cfg.lookup_before_create {
        let found = w
            .stripe
            .borrow()
            .first_money_moving_refund(&w.charge_of(req.ticket))
            .map(|r| String::from(&*r.id));
        if let Some(id) = found {
            answer_as_recorded(w, req, received).await;
            return Some(ServiceResult::Refunded(id));
        }
    }
    None
}

/// The logical Stripe call under `key` on the held connection (`permit`, returned after it):
/// its result; an uncertain one marks the ledger row unknown
/// (`sdk_timeout_recorded_as: unknown`).
async fn call_stripe(
    w: &Rc<World>,
    req: &ServiceRequest,
    ids: Ids,
    caller: &CallerState,
    key: Option<String>,
    permit: Option<Permit>,
) -> CallResult {
    let params = RefundParams {
        charge: w.charge_of(req.ticket),
        amount_cents: req.amount_cents,
        reason: "requested_by_customer",
        ticket: req.ticket,
    };
    let (result, uncertain) = create_refund(
        w.clone(),
        key,
        params,
        ids,
        req.exec_try,
        &req.via,
        Some(caller),
    )
    .await;
    if let Some(call) = w
        .cfg
        .replay
        .as_ref()
        .and_then(|r| r.call(req.ticket, req.attempt))
    {
        if !call.respond_after.is_zero() {
            w.sim
                .sleep(SimTime::from_duration(call.respond_after))
                .await;
        }
    }
    if permit.is_some() {
        drop(permit);
        release(w, ids);
    }
    if uncertain
        && w.cfg.refunds_service.sdk_timeout_recorded_as == UnknownOutcomeRecord::Unknown
        && !matches!(result, CallResult::Refunded(_))
    {
        // A try ended without a definite answer: whatever the last try said, a refund may
        // exist. Recorded now; a refund recorded later clears nothing it needs.
        w.ledger.borrow_mut().row(req.ticket).unknown_outcome = true;
    }
    result
}

/// What the service answers after its Stripe call ended with `result`: a crash before the
/// ledger write, a lookup on an unknown outcome (`on_unknown_outcome: lookup`), or what
/// `on_key_conflict` says for a key conflict.
async fn answer(
    w: &Rc<World>,
    req: &ServiceRequest,
    ids: Ids,
    caller: &CallerState,
    result: CallResult,
) -> ServiceResult {
    let cfg = &w.cfg.refunds_service;
    match result {
        CallResult::Refunded(id) if crashes_before_ledger_write(w, req) => {
            w.record(ids, EventKind::ServiceCrash { refund_id: id });
            ServiceResult::Reset(
                "connection reset: the refunds service failed after Stripe's 200, before its ledger write".into(),
            )
        }
        CallResult::Refunded(id) if !cfg.work_after_refund.is_zero() => {
            // The refund is recorded as soon as it commits; the run goes on before answering.
            {
                let mut ledger = w.ledger.borrow_mut();
                let row = ledger.row(req.ticket);
                row.refund_id.get_or_insert_with(|| id.clone());
                row.pending_since = None;
            }
            w.record(
                ids,
                EventKind::WorkAfterRefund {
                    refund_id: id.clone(),
                    work_ns: cfg.work_after_refund.as_nanos() as u64,
                },
            );
            w.sim
                .sleep(SimTime::from_duration(cfg.work_after_refund))
                .await;
            ServiceResult::Refunded(id)
        }
        CallResult::Refunded(id) => ServiceResult::Refunded(id),
        CallResult::Failed(status, e)
            if upstream_status(status) == 502
                && cfg.on_unknown_outcome == OnUnknownOutcome::Lookup
                && !caller.aborted() =>
        {
            lookup(w, req.ticket)
                .await
                .map_or(ServiceResult::error(502, e), ServiceResult::Refunded)
        }
        CallResult::Failed(status, e) => ServiceResult::error(upstream_status(status), e),
        CallResult::KeyConflict(status, e) => match cfg.on_key_conflict {
            OnKeyConflict::Fail => ServiceResult::error(status, e),
            OnKeyConflict::Lookup => lookup(w, req.ticket)
                .await
                .map_or(ServiceResult::error(status, e), ServiceResult::Refunded),
            OnKeyConflict::RetryNewKey => retry_under_new_key(w, req, ids, caller).await,
        },
    }
}

/// In a replay, the service answering `req` from its own state (a pending row's 409, the
/// ledger's or a lookup's refund) without a provider request: when the recording shows this
/// call answered by the service with no provider request (no `replay.requests` entry for it,
/// and its answer recorded), the answer comes the recorded time after the service `received`
/// the call, as every recorded instant does. Nothing otherwise (no replay, a call the
/// recording shows going to the provider, one never recorded).
async fn answer_as_recorded(w: &World, req: &ServiceRequest, received: SimTime) {
    let Some(replay) = w.cfg.replay.as_ref() else {
        return;
    };
    if replay
        .requests
        .contains_key(&RequestKey::service(req.ticket, req.attempt, 0))
    {
        return;
    }
    let Some(call) = replay.call(req.ticket, req.attempt) else {
        return;
    };
    let Some(answered) = call.response_at else {
        return;
    };
    let at = received.saturating_add(SimTime::from_duration(answered.saturating_sub(call.at)));
    if at > w.now() {
        w.sim.sleep_until(at).await;
    }
}

/// While the pool is replayed ([`World::replays_pool`]): the time from the service receiving
/// `req` to its request reaching the provider — recorded (`replay.requests`, keyed by ticket,
/// attempt and SDK try 0), else drawn from `replay.reach_provider` on the request's own stream.
/// `None` while the pool is simulated.
fn replayed_reach(w: &World, req: &ServiceRequest) -> Option<SimTime> {
    if !w.replays_pool {
        return None;
    }
    let replay = w.cfg.replay.as_ref()?;
    let key = RequestKey::service(req.ticket, req.attempt, 0);
    let reach = match replay.requests.get(&key) {
        Some(r) => SimTime::from_duration(r.reach_provider),
        None => {
            let mut rng = w.ticket_stream("replay_reach", req.ticket, &[req.call]);
            w.latencies.reach_provider.draw(&mut rng)
        }
    };
    // A pool counterfactual: the wait beyond the baseline scaled (`World::reach_scale`).
    Some(match w.reach_scale {
        Some((baseline, factor)) if reach > baseline => {
            let wait = (reach.as_nanos() - baseline.as_nanos()) as f64 * factor;
            SimTime::from_nanos(
                baseline.as_nanos() + wait.round().min(u64::MAX as f64 / 2.0) as u64,
            )
        }
        _ => reach,
    })
}

/// The `Idempotency-Key` a recorded request carried (`replay.requests[…].idempotency_key`), when
/// the recording says and the scenario keeps the key mode it was imported with
/// (`replay.key_mode`): it replaces the scenario's key mode for that request.
fn replayed_key(w: &World, req: &ServiceRequest) -> Option<Option<String>> {
    let key = RequestKey::service(req.ticket, req.attempt, 0);
    let replay = w.cfg.replay.as_ref()?;
    // A policy that changed the key mode replaces the recorded keys (`replay.key_mode`).
    if replay
        .key_mode
        .is_some_and(|m| m != w.cfg.refunds_service.idempotency_key)
    {
        return None;
    }
    replay.requests.get(&key)?.idempotency_key.clone()
}

/// Whether the service fails between Stripe's 200 and its ledger write
/// (`refunds_service.crash_after_provider_ok`), drawn from the request's own stream, keyed like
/// its Stripe draws, so no other draw moves; no draw at all at probability 0.
fn crashes_before_ledger_write(w: &World, req: &ServiceRequest) -> bool {
    let p = w.cfg.refunds_service.crash_after_provider_ok;
    if p <= 0.0 {
        return false;
    }
    let mut entity = vec![u64::from(req.attempt), u64::from(req.exec_try)];
    entity.extend(via_ids(&req.via));
    let mut rng = w.ticket_stream("service_crash", req.ticket, &entity);
    dist::chance(&mut rng, p)
}

/// `on_key_conflict: retry_new_key` (the bug): the service takes the conflict to mean its key
/// is bad, writes a new nonce for the ticket through the same rotation as `rotate_key`
/// ([`TicketRow::rotate_nonce`](super::ledger::TicketRow::rotate_nonce): a new `per_ticket` key;
/// a `per_attempt` key, which has no nonce, gets a `_retry` suffix), waits for a connection again and sends the request once more. Stripe
/// sees a key it has never seen and makes a new refund, while the request holding the old key
/// makes its own. Traced as a `layer_retry` of layer `refunds_service` (reason `retriable-4xx`,
/// try 1, no backoff). The retry's Stripe draws are keyed by a `("key_conflict_retry", 1)` entry
/// appended to the request's [`Via`].
async fn retry_under_new_key(
    w: &Rc<World>,
    req: &ServiceRequest,
    ids: Ids,
    caller: &CallerState,
) -> ServiceResult {
    w.ledger.borrow_mut().row(req.ticket).rotate_nonce();
    let key = idempotency_key(w, req).map(|k| match w.cfg.refunds_service.idempotency_key {
        KeyMode::PerTicket => k,
        _ => format!("{k}_retry"),
    });
    w.record(
        ids,
        EventKind::LayerRetry {
            layer: "refunds_service".into(),
            layer_try: 1,
            reason: "retriable-4xx".into(),
            backoff_ns: 0,
        },
    );
    let Some(permit) = acquire(w, ids).await else {
        return ServiceResult::error(503, "pool acquire timeout (503)");
    };
    let params = RefundParams {
        charge: w.charge_of(req.ticket),
        amount_cents: req.amount_cents,
        reason: "requested_by_customer",
        ticket: req.ticket,
    };
    let mut via = req.via.clone();
    via.push(("key_conflict_retry".into(), 1));
    let (result, _) = create_refund(
        w.clone(),
        key,
        params,
        ids,
        req.exec_try,
        &via,
        Some(caller),
    )
    .await;
    drop(permit);
    release(w, ids);
    match result {
        CallResult::Refunded(id) => ServiceResult::Refunded(id),
        CallResult::Failed(status, e) | CallResult::KeyConflict(status, e) => {
            ServiceResult::error(upstream_status(status), e)
        }
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
pub(crate) const LOOKUP_POLL: SimTime = SimTime::from_secs(1);
/// See [`LOOKUP_POLL`].
pub(crate) const LOOKUP_POLLS: u32 = 60;

/// `on_key_conflict: lookup`: polls the charge's refunds (as `GET /v1/refunds?charge=…` would)
/// until one that moves money appears; its id, or `None` after [`LOOKUP_POLLS`] polls.
async fn lookup(w: &World, ticket: u64) -> Option<String> {
    let charge = w.charge_of(ticket);
    for _ in 0..LOOKUP_POLLS {
        let found = w
            .stripe
            .borrow()
            .first_money_moving_refund(&charge)
            .map(|r| String::from(&*r.id));
        if found.is_some() {
            return found;
        }
        w.sim.sleep(LOOKUP_POLL).await;
    }
    None
}

/// What a request finds at the ticket's ledger row under local dedup.
enum Claim {
    /// The ticket's refund is recorded: answer with it.
    Refunded(String),
    /// The row is this request's now: go on to Stripe.
    Claimed,
    /// Another request holds the row and `on_pending_row` is `conflict`: answer 409.
    Conflict,
}

/// Local dedup: a pending row per ticket. Returns the ticket's recorded refund if there is one;
/// otherwise, while an earlier request holds the row, waits for it (`on_pending_row: wait`: then
/// takes it, first come, first served, so two requests never wait on each other) or answers a
/// conflict at once (`conflict`, a unique constraint on the row).
async fn claim_pending_row(w: &World, ticket: u64, call: u64, on_pending: OnPendingRow) -> Claim {
    loop {
        {
            let mut ledger = w.ledger.borrow_mut();
            let row = ledger.row(ticket);
            if let Some(id) = &row.refund_id {
                return Claim::Refunded(id.clone());
            }
            if row.owner.is_none_or(|o| o == call) {
                row.owner = Some(call);
                return Claim::Claimed;
            }
            if on_pending == OnPendingRow::Conflict {
                return Claim::Conflict;
            }
        }
        w.sim.sleep(DEDUP_POLL).await;
    }
}

/// Waits in FIFO order for a pool connection, up to the acquire timeout.
pub(crate) async fn acquire(w: &World, ids: Ids) -> Option<Permit> {
    let g = &w.pool_gauges;
    g.wait_begins();
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
    let fut = w.pool.acquire();
    let permit = match w.cfg.refunds_service.acquire_timeout {
        Some(limit) => w.sim.timeout(SimTime::from_duration(limit), fut).await.ok(),
        None => Some(fut.await),
    };
    let waited = w.now() - start;
    g.wait_ends(permit.is_some(), waited, w.now());
    let waited_ns = waited.as_nanos();
    match permit {
        Some(p) => {
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
pub(crate) fn release(w: &World, ids: Ids) {
    w.pool_gauges.returned(w.now());
    if ids.ticket.is_some() {
        w.record(ids, EventKind::PoolRelease);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `rotate_key: after_definite_failure`, `sdk_timeout_recorded_as: unknown` and
    /// `probe_after: unknown_outcome` read as "the refund may exist": a 502 (Stripe failed or
    /// went silent) and a 409 (a request with the key is still executing). The service's own
    /// 503/504 and Stripe's 4xx say nothing was done.
    #[test]
    fn only_502_and_409_leave_the_outcome_unknown() {
        for status in [502, 409] {
            assert!(
                is_unknown_outcome(&ServiceResult::error(status, "x")),
                "{status}"
            );
        }
        for status in [400, 402, 404, 429, 503, 504] {
            assert!(
                !is_unknown_outcome(&ServiceResult::error(status, "x")),
                "{status}"
            );
        }
        assert!(!is_unknown_outcome(&ServiceResult::Refunded("re_1".into())));
        assert!(!is_unknown_outcome(&ServiceResult::Unknown("x".into())));
        assert!(is_unknown_outcome(&ServiceResult::Reset("x".into())));
    }
}
