//! The fake Stripe: `POST /v1/refunds` with Stripe's real idempotency and refund rules
//! (DESIGN §6). A synchronous state machine — the async wrapper in `stripe_api.rs` sleeps the
//! request latency between [`FakeStripe::begin`] and [`FakeStripe::commit`] — so every rule is
//! unit-tested without an executor.
//!
//! # Order of checks in [`FakeStripe::begin`]
//!
//! 1. **Rate limiter** (runs before everything else, so its 429s are never saved under a key).
//! 2. **Object lock** (`lock_timeout` injected by the caller): 429 with `Stripe-Should-Retry: true`.
//! 3. **Parameter validation**: key length, amount, charge. Failures are not saved.
//! 4. **Idempotency layer** (only with a key): mismatch → 400 `idempotency_error`, still executing
//!    → 409 `idempotency_key_in_use`, finished → replay the saved response.
//! 5. **Execution**: the key (if any) is recorded as executing and an [`ExecToken`] is handed out;
//!    [`FakeStripe::commit`] applies the refund rules and saves the result under the key.

use std::collections::VecDeque;
use std::rc::Rc;

use serde::Serialize;
use smallvec::SmallVec;

use super::providers::{rules, Keep};
use crate::id_map::{IdSet, StrMap};
use crate::scenario::{EffectLimit, Provider, ProviderKind};
use crate::sim::SimTime;

pub(crate) use super::providers::{Origin, RefundParams, StripeRequest};

pub(crate) use crate::history::RefundStatus;

/// A refund object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Refund {
    /// `re_…`, unique and deterministic (a counter). Shared, not copied, by the clones a refund
    /// makes (the charge's list, the saved response, the answer).
    pub id: Rc<str>,
    /// Charge refunded (shared like `id`).
    pub charge: Rc<str>,
    /// Amount in cents.
    pub amount_cents: u64,
    /// Status.
    pub status: RefundStatus,
    /// Virtual time of creation.
    pub created: SimTime,
    /// Who caused it.
    pub origin: Origin,
}

/// Stripe error `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
// The variants are Stripe's `type` values (`invalid_request_error`, …), which all end so.
#[allow(clippy::enum_variant_names)]
pub(crate) enum ErrorType {
    /// `invalid_request_error`.
    InvalidRequestError,
    /// `idempotency_error`.
    IdempotencyError,
    /// `api_error`.
    ApiError,
    /// `rate_limit_error` (Stripe returns 429 with this type).
    RateLimitError,
}

/// A response body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "object", rename_all = "snake_case")]
pub(crate) enum Body {
    /// A refund object.
    Refund(Refund),
    /// An error object.
    Error {
        /// `type`.
        #[serde(rename = "type")]
        kind: ErrorType,
        /// `code`, e.g. `idempotency_key_in_use`, `charge_already_refunded`, `lock_timeout`.
        code: Option<String>,
        /// `param`, e.g. `amount`.
        param: Option<String>,
        /// Human-readable message.
        message: String,
    },
}

/// An HTTP response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Response {
    /// HTTP status.
    pub status: u16,
    /// Body.
    pub body: Body,
    /// `Idempotent-Replayed: true`.
    pub idempotent_replayed: bool,
    /// `Stripe-Should-Retry` header, when present.
    pub should_retry: Option<bool>,
    /// `Retry-After` header, when present (`provider.retry_after`).
    pub retry_after: Option<SimTime>,
}

/// What [`FakeStripe::begin`] decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Begin {
    /// Answered without executing (429, 409, 400 validation or idempotency error, replay).
    Respond(Response),
    /// The endpoint starts executing; call [`FakeStripe::commit`] with the token after the latency.
    Execute(ExecToken),
}

/// A request that is executing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExecToken {
    /// Sequence number of the execution.
    pub exec: u64,
    /// The entry the execution saves its response under: the idempotency key (Stripe), the
    /// business id or the parameters (other providers), or `None`.
    pub dedup_key: Option<String>,
    /// The request.
    pub request: StripeRequest,
}

/// A fault decided by the caller (from its seeded stream) for one commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum CommitFault {
    /// Normal response.
    #[default]
    None,
    /// Refund created, the response is a 500 `api_error` (saved under the key).
    Error500,
    /// Refund created, response saved, but the client never gets it (connection reset).
    ResponseLost,
    /// Nothing created: the request fails with this HTTP status (`api_error` for a 5xx,
    /// `invalid_request_error` otherwise), saved under the key as Stripe saves the result of an
    /// execution that began. Only a replay uses it: a recorded error for which the refund
    /// export lists no refund.
    FailsWith(u16),
    /// Nothing created and no answer: the connection drops. Only a replay uses it: a recorded
    /// request without an answer for which the refund export lists no refund.
    LostBeforeCommit,
    /// Nothing created: the answer is 200 with the charge's latest refund, marked as an
    /// idempotent replay (or, when the charge has none, Stripe's `resource_missing`). Only an
    /// exact replay uses it: a recorded 2xx that returned a refund an earlier request made
    /// (the same refund id), where Stripe's rules would have executed it.
    AnswersExisting,
}

/// What the client sees after a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Delivered {
    /// A response.
    Response(Response),
    /// The connection dropped; the client cannot know the outcome.
    ConnectionLost,
    /// The connection could not be made (`stripe.faults.connect_failure`): the request never
    /// reached Stripe, and the client knows nothing was done.
    ConnectFailed,
}

impl Response {
    /// The refund in the body, if the body is a refund object.
    #[cfg(test)]
    pub(crate) fn refund(&self) -> Option<&Refund> {
        match &self.body {
            Body::Refund(r) => Some(r),
            Body::Error { .. } => None,
        }
    }

    /// The error `code`, if the body is an error object that has one.
    pub(crate) fn error_code(&self) -> Option<&str> {
        match &self.body {
            Body::Error { code, .. } => code.as_deref(),
            Body::Refund(_) => None,
        }
    }

    /// The error `type`, if the body is an error object.
    #[cfg(test)]
    pub(crate) fn error_type(&self) -> Option<ErrorType> {
        match &self.body {
            Body::Error { kind, .. } => Some(*kind),
            Body::Refund(_) => None,
        }
    }

    /// An error response that is not a replay.
    fn error(
        status: u16,
        kind: ErrorType,
        code: Option<&str>,
        param: Option<&str>,
        message: String,
    ) -> Self {
        Response {
            status,
            body: Body::Error {
                kind,
                code: code.map(str::to_owned),
                param: param.map(str::to_owned),
                message,
            },
            idempotent_replayed: false,
            should_retry: None,
            retry_after: None,
        }
    }
}

/// Stripe's limit on the length of an `Idempotency-Key`.
pub(crate) const MAX_IDEMPOTENCY_KEY_CHARS: usize = 255;

/// The rate limiter's sliding window: one second.
const RATE_WINDOW: SimTime = SimTime::from_secs(1);

/// What the idempotency layer remembers about one key.
#[derive(Debug)]
struct KeyEntry {
    /// The execution that owns the entry (a later, fresh execution after expiry replaces it).
    exec: u64,
    /// The parameters first used with the key (compared on reuse).
    params: RefundParams,
    /// When the key was first used; the entry expires `retention` later.
    created: SimTime,
    /// `None` while the endpoint is executing; then the saved response (never marked replayed).
    saved: Option<Response>,
}

/// One charge: its amount, its refunds and the idempotency keys first used on it.
#[derive(Debug, Default)]
struct ChargeState {
    /// Charged amount, cents.
    amount_cents: u64,
    /// Its refunds, in creation order (what the dashboard lists). Almost every charge gets
    /// at most one (a duplicate is the exception the simulator hunts for), which is kept in
    /// the charge itself: a separate allocation for it was about 1 % of an incident run.
    refunds: SmallVec<[Refund; 1]>,
    /// Keys whose entries name this charge (dropped with it by [`FakeStripe::evict_charge`]).
    keys: Vec<String>,
    /// Executions on this charge handed out by `begin` and not yet committed (what
    /// [`FakeStripe::evict_charge`] and the object lock ask, without scanning every execution).
    executing: u32,
}

/// The fake Stripe account.
///
/// One instance is one Stripe account: idempotency keys, charges and refunds are scoped to it.
/// Memory stays flat over long runs: the model evicts a charge (with its refunds and the key
/// entries that name it) once nothing can touch it ([`FakeStripe::evict_charge`]).
#[derive(Debug)]
pub(crate) struct FakeStripe {
    /// Charge id → its state. A hash map: iterated only by [`FakeStripe::refunds`], which
    /// sorts what it collects.
    charges: StrMap<ChargeState>,
    /// How long a key is kept; a request whose key entry is at least this old runs fresh.
    retention: SimTime,
    /// Requests per second before 429 `rate_limit`; 0 means unlimited.
    rate_limit_per_s: u32,
    /// Arrival times of the requests in the current rate-limit window (non-decreasing, so the
    /// expired ones are at the front and leave in amortised O(1): a storm of 429s at one
    /// instant must not cost a scan per request).
    window: VecDeque<SimTime>,
    /// Idempotency key → entry (never iterated).
    keys: StrMap<KeyEntry>,
    /// Executions handed out by `begin` and not yet committed (never iterated).
    in_flight: IdSet,
    /// Executions started so far (the next [`ExecToken::exec`] is this plus one).
    execs: u64,
    /// Refunds created so far; the number in a refund's id is its ordinal (1, 2, …).
    refunds_created: u64,
    /// The refund the last [`FakeStripe::commit`] created, until taken.
    last_created: Option<Refund>,
    /// `Some` while a reader (the reconciliation job) follows new refunds: (ticket, charge) of
    /// each refund created since it last took them.
    recent: Option<Vec<(u64, String)>>,
    /// How repeated requests are recognised (see [`FakeStripe::with_provider`]).
    kind: ProviderKind,
    /// [`ProviderKind::DedupWindow`]: how long identical parameters make a duplicate.
    dedup_window: SimTime,
    /// Status of the answer to a duplicate of a request still executing: 409 or 422.
    in_flight_status: u16,
    /// `Retry-After` on 429s and in-progress answers, if any.
    retry_after: Option<SimTime>,
    /// Stripe's object lock on concurrent executions on one charge.
    lock_concurrent: bool,
    /// `provider.duplicate_rejected_status`: refuse a finished duplicate with this status
    /// instead of replaying its saved answer.
    duplicate_rejected_status: Option<u16>,
    /// `provider.balance_insufficient_until`: refunds executing before this instant fail.
    balance_insufficient_until: Option<SimTime>,
    /// `provider.effect_limit` as resolved for the scenario's effect.
    effect_limit: EffectLimit,
    /// `effect_limit: balance`: the balance left, cents.
    balance_left_cents: u64,
}

impl FakeStripe {
    /// An account with key retention `retention` and a rate limit of `rate_limit_per_s`
    /// requests per sliding one-second window (`0` = unlimited). Stripe keeps keys for 24 h and
    /// limits live mode to 100 and sandbox to 25 requests per second.
    pub(crate) fn new(retention: SimTime, rate_limit_per_s: u32) -> Self {
        FakeStripe {
            charges: StrMap::default(),
            retention,
            rate_limit_per_s,
            window: VecDeque::new(),
            keys: StrMap::default(),
            in_flight: IdSet::default(),
            execs: 0,
            refunds_created: 0,
            last_created: None,
            recent: None,
            kind: ProviderKind::Stripe,
            dedup_window: SimTime::ZERO,
            in_flight_status: 409,
            retry_after: None,
            lock_concurrent: false,
            duplicate_rejected_status: None,
            balance_insufficient_until: None,
            effect_limit: EffectLimit::Charge,
            balance_left_cents: 0,
        }
    }

    /// The same account behind another provider's duplicate rules (`provider` in a scenario):
    /// - [`ProviderKind::Stripe`]: the rules of [`FakeStripe::begin`], unchanged;
    /// - [`ProviderKind::KeysIgnored`]: the `Idempotency-Key` header is accepted and ignored
    ///   (no length check, nothing saved): every request that passes validation executes;
    /// - [`ProviderKind::DedupWindow`]: no keys; the request's parameters are its key, kept for
    ///   `dedup_window` from the first request's arrival (a card gateway's duplicate window);
    /// - [`ProviderKind::BusinessId`]: no keys; the body's business id is the key, kept for the
    ///   key retention.
    ///
    /// With any of them, a duplicate of a request still executing is answered
    /// `in_flight_duplicate_status` (409, or 422 as some gateways answer), and one of a request
    /// that finished is refused with `duplicate_rejected_status` when it is set (see
    /// [`FakeStripe::begin`]); `balance_insufficient_until` fails refunds until then (see
    /// [`FakeStripe::commit`]).
    pub(crate) fn with_provider(mut self, p: &Provider) -> Self {
        self.kind = p.kind;
        self.dedup_window = SimTime::from_duration(p.dedup_window);
        self.in_flight_status = p.in_flight_duplicate_status;
        self.retry_after = p.retry_after.map(SimTime::from_duration);
        self.lock_concurrent = p.lock_concurrent_requests;
        self.duplicate_rejected_status = p.duplicate_rejected_status;
        self.balance_insufficient_until = p.balance_insufficient_until.map(SimTime::from_duration);
        self.effect_limit = p.effect_limit.unwrap_or(EffectLimit::Charge);
        self.balance_left_cents = p.balance_cents.unwrap_or(0);
        self
    }

    /// The limit on a second effect on one object, as `provider.effect_limit` resolves for the
    /// scenario's `effect`: its own value, else `charge` for a refund and `none` for any other.
    pub(crate) fn with_effect(mut self, p: &Provider, effect: &crate::scenario::Effect) -> Self {
        self.effect_limit = p.effect_limit.unwrap_or(if effect.is_refund() {
            EffectLimit::Charge
        } else {
            EffectLimit::None
        });
        self
    }

    /// Adds the account's `Retry-After` to a "try again later" answer.
    fn later(&self, mut resp: Response) -> Response {
        resp.retry_after = self.retry_after;
        resp
    }

    /// 429 `lock_timeout` with `Stripe-Should-Retry: true`.
    fn lock_timeout(&self) -> Response {
        let mut resp = Response::error(
            429,
            ErrorType::RateLimitError,
            Some("lock_timeout"),
            None,
            "This object cannot be accessed right now because another API request or Stripe process is \
             currently accessing it. If you see this error intermittently, retry the request."
                .to_owned(),
        );
        resp.should_retry = Some(true);
        self.later(resp)
    }

    /// The entry a request is recognised by, and how long that entry is kept: the provider
    /// kind's rule ([`super::providers::rules`]).
    fn dedup_key(&self, req: &StripeRequest) -> Option<(String, SimTime)> {
        let keep = Keep {
            retention: self.retention,
            dedup_window: self.dedup_window,
        };
        rules(self.kind).dedup_key(req, keep)
    }

    /// Registers a charge of `amount_cents` that refunds may draw on. Registering an existing
    /// charge again replaces its amount (its refunds stay).
    pub(crate) fn add_charge(&mut self, charge: &str, amount_cents: u64) {
        self.charges
            .entry(charge.to_owned())
            .or_default()
            .amount_cents = amount_cents;
    }

    /// Forgets `charge`, its refunds and the key entries first used on it. The model calls it
    /// once nothing can send a request for the charge or read its refunds any more (see
    /// [`crate::model::world::World`]); it is not a Stripe operation.
    ///
    /// Refuses (returns `false`, keeps everything) while an execution on the charge is in flight:
    /// that would be a broken eviction rule, and dropping the charge would silently turn the
    /// commit into a `resource_missing` error.
    pub(crate) fn evict_charge(&mut self, charge: &str) -> bool {
        match self.charges.get(charge) {
            None => return true,
            Some(state) if state.executing > 0 => return false,
            Some(_) => {}
        }
        let Some(state) = self.charges.remove(charge) else {
            return true;
        };
        for key in state.keys {
            if self
                .keys
                .get(&key)
                .is_some_and(|e| &*e.params.charge == charge)
            {
                self.keys.remove(&key);
            }
        }
        true
    }

    /// Charges held now (for tests of eviction).
    pub(crate) fn charges_held(&self) -> usize {
        self.charges.len()
    }

    /// Idempotency-key entries held now (each with the request's parameters and, once the
    /// execution ended, the saved response).
    pub(crate) fn keys_held(&self) -> usize {
        self.keys.len()
    }

    /// Starts recording (ticket, charge) of every refund created, for [`FakeStripe::take_recent`].
    pub(crate) fn follow_new_refunds(&mut self) {
        self.recent.get_or_insert_with(Vec::new);
    }

    /// The (ticket, charge) of each refund created since the last call, in creation order
    /// (`GET /v1/refunds?created[gt]=…` as a job that lists new refunds reads it).
    pub(crate) fn take_recent(&mut self) -> Vec<(u64, String)> {
        self.recent.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The refund the last [`FakeStripe::commit`] created, if it created one (taken once).
    pub(crate) fn take_created(&mut self) -> Option<Refund> {
        self.last_created.take()
    }

    /// Refunds created so far (evicted ones included).
    #[cfg(test)]
    pub(crate) fn refunds_created(&self) -> u64 {
        self.refunds_created
    }

    /// Receives a request at `now`. `lock_timeout` injects a 429 `lock_timeout`.
    ///
    /// Checks run in Stripe's order, and only the last step saves anything under the key:
    /// - **Rate limit**: every request reaching the API is counted at the edge (rejected ones
    ///   too); when more than `rate_limit_per_s` arrived in the window `(now − 1 s, now]`, the
    ///   answer is 429 `rate_limit_error`, code `rate_limit`, no `Stripe-Should-Retry` header.
    ///   Rate limiters run before the idempotency layer: nothing is saved.
    /// - **Object lock**: with `lock_timeout`, 429 `rate_limit_error`, code `lock_timeout`,
    ///   `Stripe-Should-Retry: true`; nothing is saved.
    /// - **Parameter validation** (not saved under the key, so a corrected retry with the same
    ///   key executes): a key over 255 characters, `amount` of 0 (`param: amount`), or an
    ///   unknown charge (code `resource_missing`, `param: charge`) → 400
    ///   `invalid_request_error`.
    /// - **Idempotency layer**, only with a key whose entry is younger than the retention: other
    ///   parameters → 400 `idempotency_error` (nothing created or saved); the first request still
    ///   executing → 409 `idempotency_error`, code `idempotency_key_in_use` (nothing saved, the
    ///   client may retry); finished → the saved status and body replayed with
    ///   `Idempotent-Replayed: true` and no new refund, or, where the provider refuses finished
    ///   duplicates (`provider.duplicate_rejected_status`, not Stripe's rule), that status with
    ///   code `duplicate_transaction` (`api_error` for a 500, else `invalid_request_error`),
    ///   nothing created or saved. An expired entry is replaced.
    /// - **Execute**: the key (if any) is recorded as executing with these parameters and
    ///   `created = now`, and an [`ExecToken`] is returned for [`FakeStripe::commit`].
    pub(crate) fn begin(&mut self, now: SimTime, req: StripeRequest, lock_timeout: bool) -> Begin {
        if self.rate_limited(now) {
            return Begin::Respond(self.later(Response::error(
                429,
                ErrorType::RateLimitError,
                Some("rate_limit"),
                None,
                "Too many requests hit the API too quickly. We recommend an exponential backoff of your requests."
                    .to_owned(),
            )));
        }
        if lock_timeout {
            return Begin::Respond(self.lock_timeout());
        }
        if let Some(resp) = self.validate(&req) {
            return Begin::Respond(resp);
        }
        let dedup = self.dedup_key(&req);
        if let Some((key, retention)) = &dedup {
            if let Some(resp) = self.idempotency_check(now, key, *retention, &req.params) {
                return Begin::Respond(resp);
            }
        }
        if self.lock_concurrent
            && self
                .charges
                .get(&*req.params.charge)
                .is_some_and(|c| c.executing > 0)
        {
            return Begin::Respond(self.lock_timeout());
        }
        self.start(now, req, dedup.map(|(k, _)| k))
    }

    /// Starts executing `req` at `now` whatever the admission checks of
    /// [`FakeStripe::begin`] answered (already counted at the edge by that call): the key (if
    /// any) is recorded as executing with these parameters, replacing an entry it had. Only
    /// an exact replay uses it, where the recording shows that the request created a refund
    /// while Stripe's rules would have answered it without executing (a provider that did not
    /// keep the rules; [`crate::model::world::World::recording_wins`]).
    pub(crate) fn begin_as_recorded(&mut self, now: SimTime, req: StripeRequest) -> ExecToken {
        let key = self.dedup_key(&req).map(|(k, _)| k);
        match self.start(now, req, key) {
            Begin::Execute(token) => token,
            Begin::Respond(_) => unreachable!("start always executes"),
        }
    }

    fn start(&mut self, now: SimTime, req: StripeRequest, dedup_key: Option<String>) -> Begin {
        self.execs += 1;
        let exec = self.execs;
        if let Some(key) = &dedup_key {
            let entry = KeyEntry {
                exec,
                params: req.params.clone(),
                created: now,
                saved: None,
            };
            self.keys.insert(key.clone(), entry);
        }
        if let Some(c) = self.charges.get_mut(&*req.params.charge) {
            if let Some(key) = &dedup_key {
                c.keys.push(key.clone());
            }
            c.executing += 1;
        }
        self.in_flight.insert(exec);
        Begin::Execute(ExecToken {
            exec,
            dedup_key,
            request: req,
        })
    }

    /// Finishes an execution at `now` with the refund created in `status` (if the refund rules allow).
    ///
    /// Refund rules, against the money already moving on the charge (refunds whose status
    /// [moves money](RefundStatus::moves_money); `failed`/`canceled` ones do not count), under
    /// `provider.effect_limit: charge` (a refund's default; with `none` the two charge rules
    /// below do not apply, and with `balance` an effect larger than the balance left is a 400
    /// `balance_insufficient`, and one made takes its amount from the balance for good):
    /// - nothing left (fully refunded) → 400 `invalid_request_error`, code
    ///   `charge_already_refunded`;
    /// - `amount` more than what is left → 400 `invalid_request_error`, `param: amount`;
    /// - before `provider.balance_insufficient_until` → 400 `invalid_request_error`, code
    ///   `balance_insufficient` (the account's balance cannot cover the refund yet);
    /// - otherwise a refund `re_…` is created in `status` (partial refunds may repeat until the
    ///   charge is exhausted) and the answer is 200 with the refund object.
    ///
    /// The endpoint has started executing, so its result — 4xx included — is saved under the key
    /// (if any) and replayed to later requests with the same key. Faults:
    /// - [`CommitFault::Error500`]: whatever the endpoint did stands (a refund may exist), but the
    ///   response is 500 `api_error`; that 500 is what is saved and replayed.
    /// - [`CommitFault::ResponseLost`]: the real response is saved, but the client gets
    ///   [`Delivered::ConnectionLost`].
    ///
    /// # Panics
    /// If `token` was not handed out by [`FakeStripe::begin`] of this account or was already
    /// committed (a bug in the caller).
    pub(crate) fn commit(
        &mut self,
        now: SimTime,
        token: ExecToken,
        status: RefundStatus,
        fault: CommitFault,
    ) -> Delivered {
        assert!(
            self.in_flight.remove(&token.exec),
            "FakeStripe::commit: execution {} is not in flight (never begun or already committed)",
            token.exec
        );
        if let Some(c) = self.charges.get_mut(&*token.request.params.charge) {
            c.executing = c.executing.saturating_sub(1);
        }
        let req = token.request;
        let mut resp = match fault {
            CommitFault::FailsWith(code) => Response::error(
                code,
                if code >= 500 {
                    ErrorType::ApiError
                } else {
                    ErrorType::InvalidRequestError
                },
                None,
                None,
                format!("The recorded request failed with HTTP {code}."),
            ),
            CommitFault::AnswersExisting => {
                let latest = self
                    .charges
                    .get(&*req.params.charge)
                    .and_then(|c| c.refunds.last().cloned());
                match latest {
                    Some(refund) => Response {
                        status: 200,
                        body: Body::Refund(refund),
                        idempotent_replayed: true,
                        should_retry: None,
                        retry_after: None,
                    },
                    None => Self::no_such_charge(&req.params.charge),
                }
            }
            CommitFault::LostBeforeCommit => {
                // Nothing executed, so nothing is saved under the key (Stripe saves a result
                // only once the endpoint starts executing): a retry with the same key runs as a
                // fresh request instead of meeting a request forever "in progress".
                if let Some(key) = &token.dedup_key {
                    if self.keys.get(key).is_some_and(|e| e.exec == token.exec) {
                        self.keys.remove(key);
                    }
                }
                return Delivered::ConnectionLost;
            }
            _ => self.execute(now, &req, status),
        };
        if fault == CommitFault::Error500 {
            resp = Response::error(
                500,
                ErrorType::ApiError,
                None,
                None,
                "An unknown error occurred while processing your request.".to_owned(),
            );
        }
        if let Some(key) = &token.dedup_key {
            // Only the execution that owns the entry saves; if the key expired meanwhile and a
            // fresh request took it over, that newer execution owns it.
            if let Some(entry) = self.keys.get_mut(key) {
                if entry.exec == token.exec {
                    entry.saved = Some(resp.clone());
                }
            }
        }
        match fault {
            CommitFault::ResponseLost | CommitFault::LostBeforeCommit => Delivered::ConnectionLost,
            CommitFault::None
            | CommitFault::Error500
            | CommitFault::FailsWith(_)
            | CommitFault::AnswersExisting => Delivered::Response(resp),
        }
    }

    /// Moves refund `id` of `charge` to `status` (a `pending` or `requires_action` refund
    /// settling, `provider.settle`, or a pending one becoming `requires_action`) and returns it;
    /// `None` if the refund is not held or is no longer `pending` / `requires_action`. A refund that ends `failed` or `canceled` gives its amount back to the charge
    /// (Stripe's refund rules count only refunds that move money).
    pub(crate) fn settle(
        &mut self,
        charge: &str,
        id: &str,
        status: RefundStatus,
    ) -> Option<Refund> {
        let refund = self.charges.get_mut(charge)?.refunds.iter_mut().find(|r| {
            &*r.id == id
                && matches!(
                    r.status,
                    RefundStatus::Pending | RefundStatus::RequiresAction
                )
        })?;
        refund.status = status;
        Some(refund.clone())
    }

    /// Every refund held (not evicted), in creation order.
    #[cfg(test)]
    pub(crate) fn refunds(&self) -> Vec<&Refund> {
        let mut all: Vec<&Refund> = self.charges.values().flat_map(|c| &c.refunds).collect();
        all.sort_by_key(|r| (r.created, r.id.len(), r.id.clone()));
        all
    }

    /// Refunds of one charge, in creation order (what a human sees on the dashboard).
    pub(crate) fn refunds_for_charge(&self, charge: &str) -> Vec<&Refund> {
        self.charges
            .get(charge)
            .map_or_else(Vec::new, |c| c.refunds.iter().collect())
    }

    /// The first refund of `charge` that moves money (`GET /v1/refunds?charge=…` as a human or a
    /// lookup reads it), or `None`.
    pub(crate) fn first_money_moving_refund(&self, charge: &str) -> Option<&Refund> {
        self.refunds_for_charge(charge)
            .into_iter()
            .find(|r| r.status.moves_money())
    }

    /// The amount of `charge` not yet refunded (refunds in a status that moves money count;
    /// `failed`/`canceled` ones do not), or `None` for an unknown charge.
    pub(crate) fn remaining_cents(&self, charge: &str) -> Option<u64> {
        let amount = self.charges.get(charge)?.amount_cents;
        Some(amount.saturating_sub(self.refunded_cents(charge)))
    }

    /// Executions begun and not yet committed (each must end in exactly one commit).
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Counts the request at the edge and says whether it exceeds the rate limit.
    fn rate_limited(&mut self, now: SimTime) -> bool {
        if self.rate_limit_per_s == 0 {
            return false;
        }
        // Keep arrivals in (now − 1 s, now]; written as `t + 1 s > now` so it holds before 1 s.
        // `now` never decreases, so the expired arrivals are a prefix.
        while self
            .window
            .front()
            .is_some_and(|&t| t.saturating_add(RATE_WINDOW) <= now)
        {
            self.window.pop_front();
        }
        self.window.push_back(now);
        self.window.len() > self.rate_limit_per_s as usize
    }

    /// Parameter validation, before the idempotency layer (failures are not saved).
    fn validate(&self, req: &StripeRequest) -> Option<Response> {
        let checks_key = rules(self.kind).checks_key_length();
        if let Some(key) = req.idempotency_key.as_ref().filter(|_| checks_key) {
            let len = key.chars().count();
            if len > MAX_IDEMPOTENCY_KEY_CHARS {
                return Some(Response::error(
                    400,
                    ErrorType::InvalidRequestError,
                    None,
                    None,
                    format!(
                        "Idempotency key is too long: {len} characters; the maximum is \
                         {MAX_IDEMPOTENCY_KEY_CHARS}."
                    ),
                ));
            }
        }
        let p = &req.params;
        if p.amount_cents == 0 {
            return Some(Response::error(
                400,
                ErrorType::InvalidRequestError,
                None,
                Some("amount"),
                "Invalid positive integer: amount must be at least 1.".to_owned(),
            ));
        }
        if !self.charges.contains_key(&*p.charge) {
            return Some(Self::no_such_charge(&p.charge));
        }
        None
    }

    /// The idempotency layer for a request carrying `key`: `Some` answers without executing.
    fn idempotency_check(
        &self,
        now: SimTime,
        key: &str,
        retention: SimTime,
        params: &RefundParams,
    ) -> Option<Response> {
        let entry = self.keys.get(key)?;
        if now.saturating_sub(entry.created) >= retention {
            return None; // expired: runs as a fresh request and replaces the entry
        }
        if entry.params != *params {
            let message = rules(self.kind).reused_with_other_params(key);
            return Some(Response::error(
                400,
                ErrorType::IdempotencyError,
                None,
                None,
                message,
            ));
        }
        match &entry.saved {
            None => {
                let (code, message) = rules(self.kind).still_executing(key);
                Some(self.later(Response::error(
                    self.in_flight_status,
                    ErrorType::IdempotencyError,
                    Some(code),
                    None,
                    message,
                )))
            }
            Some(_) if self.duplicate_rejected_status.is_some() => {
                let status = self.duplicate_rejected_status.unwrap_or(400);
                let kind = if status >= 500 {
                    ErrorType::ApiError
                } else {
                    ErrorType::InvalidRequestError
                };
                Some(Response::error(
                    status,
                    kind,
                    Some(super::providers::DUPLICATE_REJECTED_CODE),
                    None,
                    rules(self.kind).duplicate_rejected(key),
                ))
            }
            Some(saved) => {
                let mut replay = saved.clone();
                replay.idempotent_replayed = true;
                Some(replay)
            }
        }
    }

    /// The refund rules of the endpoint; creates the refund when they allow it.
    fn execute(&mut self, now: SimTime, req: &StripeRequest, status: RefundStatus) -> Response {
        let p = &req.params;
        let Some(on_charge) = self.remaining_cents(&p.charge) else {
            return Self::no_such_charge(&p.charge);
        };
        // What a second effect on the object may still take (`provider.effect_limit`).
        let remaining = match self.effect_limit {
            EffectLimit::Charge => on_charge,
            EffectLimit::None | EffectLimit::Balance => u64::MAX,
        };
        if self.effect_limit == EffectLimit::Balance && p.amount_cents > self.balance_left_cents {
            return Response::error(
                400,
                ErrorType::InvalidRequestError,
                Some("balance_insufficient"),
                None,
                format!(
                    "You have insufficient funds in your Stripe account for this transfer. \
                     Your available balance is {}.",
                    cents(self.balance_left_cents)
                ),
            );
        }
        if remaining == 0 {
            return Response::error(
                400,
                ErrorType::InvalidRequestError,
                Some("charge_already_refunded"),
                None,
                format!("Charge {} has already been refunded.", p.charge),
            );
        }
        if p.amount_cents > remaining {
            return Response::error(
                400,
                ErrorType::InvalidRequestError,
                None,
                Some("amount"),
                format!(
                    "Refund amount ({}) is greater than unrefunded amount on charge ({}).",
                    cents(p.amount_cents),
                    cents(remaining)
                ),
            );
        }
        if self
            .balance_insufficient_until
            .is_some_and(|until| now < until)
        {
            return Response::error(
                400,
                ErrorType::InvalidRequestError,
                Some("balance_insufficient"),
                None,
                "The refund could not be completed because the account does not have a \
                 sufficient balance available."
                    .to_owned(),
            );
        }
        if self.effect_limit == EffectLimit::Balance {
            self.balance_left_cents -= p.amount_cents;
        }
        self.refunds_created += 1;
        let refund = Refund {
            id: super::ids::refund(self.refunds_created),
            charge: p.charge.clone(),
            amount_cents: p.amount_cents,
            status,
            created: now,
            origin: req.origin,
        };
        if let Some(recent) = &mut self.recent {
            recent.push((refund.origin.ticket, String::from(&*refund.charge)));
        }
        self.last_created = Some(refund.clone());
        if let Some(c) = self.charges.get_mut(&*refund.charge) {
            c.refunds.push(refund.clone());
        }
        Response {
            status: 200,
            body: Body::Refund(refund),
            idempotent_replayed: false,
            should_retry: None,
            retry_after: None,
        }
    }

    /// Sum of the refunds of `charge` that move money.
    fn refunded_cents(&self, charge: &str) -> u64 {
        self.charges.get(charge).map_or(0, |c| {
            c.refunds
                .iter()
                .filter(|r| r.status.moves_money())
                .map(|r| r.amount_cents)
                .fold(0u64, u64::saturating_add)
        })
    }

    /// 400 `resource_missing` for an unknown charge.
    fn no_such_charge(charge: &str) -> Response {
        Response::error(
            400,
            ErrorType::InvalidRequestError,
            Some("resource_missing"),
            Some("charge"),
            format!("No such charge: '{charge}'"),
        )
    }
}

/// `$12.34` for 1234 cents.
fn cents(c: u64) -> String {
    format!("${}.{:02}", c / 100, c % 100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ProviderOutcome;

    const DAY: SimTime = SimTime::from_secs(24 * 3600);

    fn account() -> FakeStripe {
        let mut s = FakeStripe::new(DAY, 100);
        s.add_charge("ch_1", 10_000);
        s
    }

    fn req(key: Option<&str>, amount_cents: u64, request: u64) -> StripeRequest {
        StripeRequest {
            idempotency_key: key.map(str::to_owned),
            params: RefundParams {
                charge: "ch_1".into(),
                amount_cents,
                reason: "requested_by_customer",
                ticket: 7,
            },
            business_id: None,
            origin: Origin {
                ticket: 7,
                request: Some(request),
            },
        }
    }

    fn provider(kind: ProviderKind, window_s: u64, in_flight: u16) -> FakeStripe {
        let p = Provider {
            kind,
            dedup_window: std::time::Duration::from_secs(window_s),
            in_flight_duplicate_status: in_flight,
            ..Provider::default()
        };
        let mut s = FakeStripe::new(DAY, 100).with_provider(&p);
        s.add_charge("ch_1", 10_000);
        s
    }

    fn with_business_id(mut r: StripeRequest, id: &str) -> StripeRequest {
        r.business_id = Some(id.to_owned());
        r
    }

    #[test]
    fn keys_ignored_provider_executes_every_request_with_the_same_key() {
        let mut s = provider(ProviderKind::KeysIgnored, 120, 409);
        let t1 = must_execute(&mut s, ms(0), req(Some("k1"), 2_500, 1));
        // Still executing: Stripe would answer 409; this provider executes it again.
        let t2 = must_execute(&mut s, ms(10), req(Some("k1"), 2_500, 2));
        let a = delivered(s.commit(ms(400), t1, RefundStatus::Succeeded, CommitFault::None));
        let b = delivered(s.commit(ms(410), t2, RefundStatus::Succeeded, CommitFault::None));
        assert_ne!(a.refund().unwrap().id, b.refund().unwrap().id);
        assert_eq!(s.refunds_created(), 2);
        // Finished: Stripe would replay; this provider creates a third refund.
        call(&mut s, ms(1_000), req(Some("k1"), 2_500, 3));
        assert_eq!(s.refunds_created(), 3);
        // Nor does it check the key's length.
        let long = "k".repeat(MAX_IDEMPOTENCY_KEY_CHARS + 1);
        must_execute(&mut s, ms(2_000), req(Some(&long), 100, 4));
        // Nothing is saved under any key (a provider that ignores keys holds none).
        assert_eq!(s.keys_held(), 0);
    }

    #[test]
    fn dedup_window_recognises_identical_parameters_within_the_window_only() {
        let mut s = provider(ProviderKind::DedupWindow, 20, 422);
        let t1 = must_execute(&mut s, ms(0), req(None, 2_500, 1));
        // In flight: the configured status, code duplicate_in_progress; nothing saved.
        let busy = must_respond(&mut s, ms(5_000), req(None, 2_500, 2));
        assert_eq!(busy.status, 422);
        assert_eq!(busy.error_code(), Some("duplicate_in_progress"));
        let first = delivered(s.commit(ms(10_000), t1, RefundStatus::Succeeded, CommitFault::None));
        // Finished, within 20 s of the first request: the first response again, no new refund.
        let again = must_respond(&mut s, ms(19_999), req(None, 2_500, 3));
        assert_eq!(again.refund().unwrap().id, first.refund().unwrap().id);
        assert!(again.idempotent_replayed);
        // Other parameters are another request.
        call(&mut s, ms(15_000), req(None, 2_400, 4));
        assert_eq!(s.refunds_created(), 2);
        // 20 s after the first request the window has passed: a new refund.
        let late = call(&mut s, ms(20_000), req(None, 2_500, 5));
        assert_ne!(late.refund().unwrap().id, first.refund().unwrap().id);
        assert_eq!(s.refunds_created(), 3);
    }

    #[test]
    fn business_id_provider_dedups_on_the_id_and_ignores_keys() {
        let mut s = provider(ProviderKind::BusinessId, 120, 409);
        let t1 = must_execute(
            &mut s,
            ms(0),
            with_business_id(req(None, 2_500, 1), "ref_7"),
        );
        let busy = must_respond(
            &mut s,
            ms(100),
            with_business_id(req(None, 2_500, 2), "ref_7"),
        );
        assert_eq!(busy.status, 409);
        assert_eq!(busy.error_code(), Some("duplicate_in_progress"));
        let first = delivered(s.commit(ms(400), t1, RefundStatus::Succeeded, CommitFault::None));
        let again = must_respond(
            &mut s,
            ms(500),
            with_business_id(req(None, 2_500, 3), "ref_7"),
        );
        assert_eq!(again.refund(), first.refund());
        // Same id, other parameters: 400, nothing created.
        let other = must_respond(
            &mut s,
            ms(600),
            with_business_id(req(None, 900, 4), "ref_7"),
        );
        assert_eq!(other.status, 400);
        assert_eq!(error_fields(&other).0, ErrorType::IdempotencyError);
        // Another id, or none: executes; a key alone is ignored.
        call(
            &mut s,
            ms(700),
            with_business_id(req(None, 100, 5), "ref_7_5"),
        );
        call(&mut s, ms(800), req(Some("k1"), 100, 6));
        call(&mut s, ms(900), req(Some("k1"), 100, 7));
        assert_eq!(s.refunds_created(), 4);
    }

    #[test]
    fn object_lock_answers_a_concurrent_execution_on_the_charge_with_429_lock_timeout() {
        let p = Provider {
            lock_concurrent_requests: true,
            retry_after: Some(std::time::Duration::from_secs(2)),
            ..Provider::default()
        };
        let mut s = FakeStripe::new(DAY, 100).with_provider(&p);
        s.add_charge("ch_1", 10_000);
        let t1 = must_execute(&mut s, ms(0), req(None, 2_500, 1));
        let locked = must_respond(&mut s, ms(10), req(None, 2_500, 2));
        assert_eq!(locked.status, 429);
        assert_eq!(locked.error_code(), Some("lock_timeout"));
        assert_eq!(locked.should_retry, Some(true));
        assert_eq!(locked.retry_after, Some(SimTime::from_secs(2)));
        // The same key still executing: the idempotency layer answers first (409).
        delivered(s.commit(ms(400), t1, RefundStatus::Succeeded, CommitFault::None));
        let _t3 = must_execute(&mut s, ms(450), req(Some("k"), 100, 3));
        let busy = must_respond(&mut s, ms(500), req(Some("k"), 100, 4));
        assert_eq!(busy.status, 409);
        assert_eq!(busy.retry_after, Some(SimTime::from_secs(2)));
        // Once nothing executes on the charge, the next request runs.
        let mut fresh = FakeStripe::new(DAY, 100).with_provider(&p);
        fresh.add_charge("ch_1", 10_000);
        call(&mut fresh, ms(0), req(None, 100, 5));
        call(&mut fresh, ms(1_000), req(None, 100, 6));
        assert_eq!(fresh.refunds_created(), 2);
    }

    #[test]
    fn stripe_provider_may_answer_its_in_flight_conflict_with_422() {
        let mut s = provider(ProviderKind::Stripe, 120, 422);
        let _t = must_execute(&mut s, ms(0), req(Some("k1"), 2_500, 1));
        let busy = must_respond(&mut s, ms(10), req(Some("k1"), 2_500, 2));
        assert_eq!(busy.status, 422);
        assert_eq!(busy.error_code(), Some("idempotency_key_in_use"));
    }

    fn ms(n: u64) -> SimTime {
        SimTime::from_millis(n)
    }

    /// `begin` must execute; returns the token.
    fn must_execute(s: &mut FakeStripe, now: SimTime, r: StripeRequest) -> ExecToken {
        match s.begin(now, r, false) {
            Begin::Execute(t) => t,
            Begin::Respond(resp) => panic!("expected execution, got {resp:?}"),
        }
    }

    /// `begin` must answer without executing; returns the response.
    fn must_respond(s: &mut FakeStripe, now: SimTime, r: StripeRequest) -> Response {
        match s.begin(now, r, false) {
            Begin::Respond(resp) => resp,
            Begin::Execute(t) => panic!("expected an answer, got execution {}", t.exec),
        }
    }

    fn delivered(d: Delivered) -> Response {
        match d {
            Delivered::Response(r) => r,
            Delivered::ConnectionLost => panic!("expected a response, connection lost"),
            Delivered::ConnectFailed => panic!("expected a response, could not connect"),
        }
    }

    /// Begin at `now`, commit 400 ms later as `succeeded` without faults.
    fn call(s: &mut FakeStripe, now: SimTime, r: StripeRequest) -> Response {
        let t = must_execute(s, now, r);
        delivered(s.commit(now + ms(400), t, RefundStatus::Succeeded, CommitFault::None))
    }

    fn error_fields(r: &Response) -> (ErrorType, Option<&str>, Option<&str>) {
        match &r.body {
            Body::Error {
                kind, code, param, ..
            } => (*kind, code.as_deref(), param.as_deref()),
            Body::Refund(rf) => panic!("expected an error, got refund {}", rf.id),
        }
    }

    /// `provider.duplicate_rejected_status`: a repeat of a finished request is refused with
    /// that status and code `duplicate_transaction`, nothing created or saved, the first refund
    /// standing; a repeat still in flight keeps its in-flight answer, and other parameters
    /// their 400; a 500 refusal is an `api_error`. Under a business-id provider the reused id
    /// is named.
    #[test]
    fn a_provider_may_refuse_a_finished_duplicate_instead_of_replaying_it() {
        for status in [400u16, 409, 422, 500] {
            let p = Provider {
                duplicate_rejected_status: Some(status),
                ..Provider::default()
            };
            let mut s = FakeStripe::new(DAY, 100).with_provider(&p);
            s.add_charge("ch_1", 10_000);
            let t = must_execute(&mut s, ms(0), req(Some("k"), 500, 1));
            let busy = must_respond(&mut s, ms(100), req(Some("k"), 500, 2));
            assert_eq!(busy.status, 409, "still executing: the in-flight answer");
            s.commit(ms(400), t, RefundStatus::Succeeded, CommitFault::None);
            let again = must_respond(&mut s, ms(500), req(Some("k"), 500, 3));
            assert_eq!(again.status, status);
            assert!(!again.idempotent_replayed);
            let kind = if status == 500 {
                ErrorType::ApiError
            } else {
                ErrorType::InvalidRequestError
            };
            assert_eq!(
                error_fields(&again),
                (kind, Some("duplicate_transaction"), None)
            );
            assert_eq!(
                super::super::stripe_trace::classify(&Delivered::Response(again.clone())).1,
                ProviderOutcome::DuplicateRejected
            );
            let other = must_respond(&mut s, ms(600), req(Some("k"), 700, 4));
            assert_eq!(
                other.status, 400,
                "other parameters: still the idempotency error"
            );
            assert_eq!(error_fields(&other).0, ErrorType::IdempotencyError);
            // Nothing saved by the refusal: a later repeat is refused again, one refund stands.
            assert_eq!(must_respond(&mut s, ms(700), req(Some("k"), 500, 5)), again);
            assert_eq!(s.refunds().len(), 1);
        }
        let p = Provider {
            kind: ProviderKind::BusinessId,
            duplicate_rejected_status: Some(422),
            ..Provider::default()
        };
        let mut s = FakeStripe::new(DAY, 100).with_provider(&p);
        s.add_charge("ch_1", 10_000);
        call(
            &mut s,
            ms(0),
            with_business_id(req(None, 500, 1), "order-7"),
        );
        let again = must_respond(
            &mut s,
            ms(900),
            with_business_id(req(None, 500, 2), "order-7"),
        );
        assert_eq!(again.status, 422);
        match &again.body {
            Body::Error { message, .. } => assert!(message.contains("'order-7'"), "{message}"),
            Body::Refund(_) => panic!("a refund"),
        }
    }

    /// `provider.effect_limit`: `charge` caps the effects on a charge at its amount (a refund's
    /// default); `none` lets a second effect through (a charge's default); `balance` takes each
    /// from one balance and refuses one it cannot cover with 400 `balance_insufficient`.
    #[test]
    fn effect_limits_cap_by_charge_by_balance_or_not_at_all() {
        let charge = crate::scenario::Effect::new("charge_card", Some("charge"), None);
        let refund = crate::scenario::Effect::refund();
        let p = Provider::default();
        let mut capped = FakeStripe::new(DAY, 100).with_effect(&p, &refund);
        capped.add_charge("ch_1", 500);
        assert_eq!(call(&mut capped, ms(0), req(None, 500, 1)).status, 200);
        let second = call(&mut capped, ms(10), req(None, 500, 2));
        assert_eq!(second.error_code(), Some("charge_already_refunded"));
        let mut open = FakeStripe::new(DAY, 100).with_effect(&p, &charge);
        open.add_charge("ch_1", 500);
        assert_eq!(call(&mut open, ms(0), req(None, 500, 1)).status, 200);
        assert_eq!(call(&mut open, ms(10), req(None, 500, 2)).status, 200);
        assert_eq!(open.refunds().len(), 2);
        // A balance of exactly two effects: both are made, the third is refused.
        let b = Provider {
            effect_limit: Some(EffectLimit::Balance),
            balance_cents: Some(1000),
            ..Provider::default()
        };
        let mut balance = FakeStripe::new(DAY, 100)
            .with_provider(&b)
            .with_effect(&b, &charge);
        balance.add_charge("ch_1", 500);
        assert_eq!(call(&mut balance, ms(0), req(None, 500, 1)).status, 200);
        assert_eq!(call(&mut balance, ms(5), req(None, 500, 2)).status, 200);
        let short = call(&mut balance, ms(10), req(None, 500, 3));
        assert_eq!(
            (short.status, short.error_code()),
            (400, Some("balance_insufficient"))
        );
        assert_eq!(balance.refunds().len(), 2);
    }

    /// `provider.balance_insufficient_until`: a refund executing before that instant fails
    /// with 400 `balance_insufficient`, and, having begun executing, the failure is saved under
    /// the key: the same key after the condition cleared replays the failure, a new key
    /// executes and refunds.
    #[test]
    fn a_stored_failure_blocks_the_same_key_after_the_condition_clears() {
        let p = Provider {
            balance_insufficient_until: Some(std::time::Duration::from_secs(60)),
            ..Provider::default()
        };
        let mut s = FakeStripe::new(DAY, 100).with_provider(&p);
        s.add_charge("ch_1", 10_000);
        let first = call(&mut s, ms(0), req(Some("k"), 500, 1));
        assert_eq!(first.status, 400);
        assert_eq!(
            error_fields(&first),
            (
                ErrorType::InvalidRequestError,
                Some("balance_insufficient"),
                None
            )
        );
        let later = must_respond(&mut s, ms(120_000), req(Some("k"), 500, 2));
        assert_eq!((later.status, later.idempotent_replayed), (400, true));
        assert!(s.refunds().is_empty());
        let fresh = call(&mut s, ms(120_000), req(Some("k2"), 500, 3));
        assert_eq!(fresh.status, 200);
        assert_eq!(s.refunds().len(), 1);
        // Just before the instant it still fails; at it, it passes.
        let mut s = FakeStripe::new(DAY, 100).with_provider(&p);
        s.add_charge("ch_1", 10_000);
        let t = must_execute(&mut s, ms(59_000), req(None, 500, 1));
        let before = delivered(s.commit(ms(59_999), t, RefundStatus::Succeeded, CommitFault::None));
        assert_eq!(before.status, 400);
        let t = must_execute(&mut s, ms(59_000), req(None, 500, 2));
        let at = delivered(s.commit(ms(60_000), t, RefundStatus::Succeeded, CommitFault::None));
        assert_eq!(at.status, 200);
    }

    #[test]
    fn same_key_same_params_replays_without_new_refund() {
        let mut s = account();
        let first = call(&mut s, ms(0), req(Some("k1"), 2_500, 1));
        assert_eq!(first.status, 200);
        assert!(!first.idempotent_replayed);
        assert_eq!(&*first.refund().unwrap().id, "re_00000001");

        let again = must_respond(&mut s, ms(9_000), req(Some("k1"), 2_500, 2));
        assert_eq!(again.status, 200);
        assert!(again.idempotent_replayed);
        assert_eq!(&*again.refund().unwrap().id, "re_00000001");
        assert_eq!(
            again.refund().unwrap().origin.request,
            Some(1),
            "the saved body is the first one"
        );
        assert_eq!(s.refunds().len(), 1);
        assert_eq!(s.remaining_cents("ch_1"), Some(7_500));
    }

    #[test]
    fn same_key_different_params_is_idempotency_error() {
        let mut s = account();
        call(&mut s, ms(0), req(Some("k1"), 2_500, 1));
        let resp = must_respond(&mut s, ms(1_000), req(Some("k1"), 2_600, 2));
        assert_eq!(resp.status, 400);
        assert_eq!(
            error_fields(&resp),
            (ErrorType::IdempotencyError, None, None)
        );
        assert!(!resp.idempotent_replayed);
        assert_eq!(s.refunds().len(), 1);
        // Nothing was saved: the original parameters still replay the original refund.
        let replay = must_respond(&mut s, ms(2_000), req(Some("k1"), 2_500, 3));
        assert_eq!((replay.status, replay.idempotent_replayed), (200, true));
        assert_eq!(&*replay.refund().unwrap().id, "re_00000001");
    }

    #[test]
    fn same_key_while_executing_is_409_then_replayed_after_commit() {
        let mut s = account();
        let t = must_execute(&mut s, ms(0), req(Some("k1"), 2_500, 1));
        assert_eq!(s.in_flight(), 1);
        let conflict = must_respond(&mut s, ms(100), req(Some("k1"), 2_500, 2));
        assert_eq!(conflict.status, 409);
        assert_eq!(
            error_fields(&conflict),
            (
                ErrorType::IdempotencyError,
                Some("idempotency_key_in_use"),
                None
            )
        );
        assert!(s.refunds().is_empty());

        let first = delivered(s.commit(ms(9_700), t, RefundStatus::Succeeded, CommitFault::None));
        assert_eq!(first.status, 200);
        assert_eq!(s.in_flight(), 0);
        // The 409 was not saved: the retry now gets the first request's result.
        let retry = must_respond(&mut s, ms(10_000), req(Some("k1"), 2_500, 3));
        assert_eq!((retry.status, retry.idempotent_replayed), (200, true));
        assert_eq!(&*retry.refund().unwrap().id, "re_00000001");
        assert_eq!(s.refunds().len(), 1);
    }

    #[test]
    fn expired_key_runs_as_fresh_request() {
        let mut s = FakeStripe::new(SimTime::from_secs(60), 0);
        s.add_charge("ch_1", 10_000);
        call(&mut s, ms(0), req(Some("k1"), 2_500, 1));
        // Just inside retention: replayed.
        let inside = must_respond(&mut s, ms(59_999), req(Some("k1"), 2_500, 2));
        assert!(inside.idempotent_replayed);
        // At the retention boundary the key is gone: a second refund.
        let fresh = call(&mut s, ms(60_000), req(Some("k1"), 2_500, 3));
        assert_eq!(fresh.status, 200);
        assert!(!fresh.idempotent_replayed);
        assert_eq!(&*fresh.refund().unwrap().id, "re_00000002");
        assert_eq!(s.refunds().len(), 2);
        assert_eq!(s.remaining_cents("ch_1"), Some(5_000));
        // The entry was replaced: a replay now returns the second refund.
        let replay = must_respond(&mut s, ms(61_000), req(Some("k1"), 2_500, 4));
        assert_eq!(&*replay.refund().unwrap().id, "re_00000002");
    }

    #[test]
    fn expired_key_taken_over_while_first_still_executing() {
        let mut s = FakeStripe::new(SimTime::from_secs(1), 0);
        s.add_charge("ch_1", 10_000);
        let old = must_execute(&mut s, ms(0), req(Some("k1"), 1_000, 1));
        let new = must_execute(&mut s, ms(1_500), req(Some("k1"), 1_000, 2));
        // The old execution finishing does not overwrite the new owner's entry.
        s.commit(ms(1_600), old, RefundStatus::Succeeded, CommitFault::None);
        let conflict = must_respond(&mut s, ms(1_700), req(Some("k1"), 1_000, 3));
        assert_eq!(conflict.status, 409);
        s.commit(ms(1_800), new, RefundStatus::Succeeded, CommitFault::None);
        let replay = must_respond(&mut s, ms(1_900), req(Some("k1"), 1_000, 4));
        assert_eq!(&*replay.refund().unwrap().id, "re_00000002");
    }

    #[test]
    fn rate_limit_429_is_not_saved() {
        let mut s = FakeStripe::new(DAY, 2);
        s.add_charge("ch_1", 10_000);
        call(&mut s, ms(0), req(Some("a"), 100, 1));
        call(&mut s, ms(500), req(Some("b"), 100, 2));
        let limited = must_respond(&mut s, ms(999), req(Some("k1"), 100, 3));
        assert_eq!(limited.status, 429);
        assert_eq!(
            error_fields(&limited),
            (ErrorType::RateLimitError, Some("rate_limit"), None)
        );
        assert_eq!(limited.should_retry, None);
        assert!(!limited.idempotent_replayed);
        assert_eq!(s.refunds().len(), 2);
        // At 1.5 s the window (0.5 s, 1.5 s] holds the 999 ms request and this one: 2 ≤ 2.
        let later = call(&mut s, ms(1_500), req(Some("k1"), 100, 4));
        assert_eq!(later.status, 200);
        assert!(!later.idempotent_replayed, "the 429 was not saved under k1");
        assert_eq!(&*later.refund().unwrap().id, "re_00000003");
    }

    /// A storm at one instant (a pool releasing thousands of connections at once) counts every
    /// request, and the whole window expires one second later.
    #[test]
    fn rate_limit_counts_a_storm_at_one_instant_and_forgets_it_a_second_later() {
        let mut s = FakeStripe::new(DAY, 3);
        s.add_charge("ch_1", 1_000_000);
        let status =
            |s: &mut FakeStripe, at: u64, i: u64| match s.begin(ms(at), req(None, 1, i), false) {
                Begin::Execute(t) => {
                    delivered(s.commit(ms(at), t, RefundStatus::Succeeded, CommitFault::None))
                        .status
                }
                Begin::Respond(r) => r.status,
            };
        let statuses: Vec<u16> = (0..6).map(|i| status(&mut s, 2_000, i)).collect();
        assert_eq!(statuses, [200, 200, 200, 429, 429, 429]);
        // 999 ms later all six are still in (1.999 s, 2.999 s]: a seventh is limited.
        assert_eq!(status(&mut s, 2_999, 7), 429);
        // At 3 s the six have left; the 2.999 s request and this one make 2 ≤ 3.
        assert_eq!(status(&mut s, 3_000, 8), 200);
        assert_eq!(s.refunds().len(), 4);
    }

    /// A charge with an execution in flight is never evicted (its commit would find no charge);
    /// once that execution commits, and only on that charge, it is.
    #[test]
    fn a_charge_is_evicted_only_when_nothing_executes_on_it() {
        let mut s = account();
        s.add_charge("ch_2", 10_000);
        let t1 = must_execute(&mut s, ms(0), req(Some("k1"), 2_500, 1));
        let mut other = req(Some("k2"), 100, 2);
        other.params.charge = "ch_2".into();
        let t2 = must_execute(&mut s, ms(1), other);
        assert!(!s.evict_charge("ch_1"), "ch_1 has an execution in flight");
        assert!(!s.evict_charge("ch_2"), "ch_2 has an execution in flight");
        delivered(s.commit(ms(100), t2, RefundStatus::Succeeded, CommitFault::None));
        assert!(!s.evict_charge("ch_1"), "ch_1 still executes");
        assert!(s.evict_charge("ch_2"));
        assert_eq!(s.charges_held(), 1);
        delivered(s.commit(ms(200), t1, RefundStatus::Succeeded, CommitFault::None));
        assert!(s.evict_charge("ch_1"));
        assert_eq!(s.charges_held(), 0);
        // Its key went with it: the same key now names an unknown charge.
        let gone = must_respond(&mut s, ms(300), req(Some("k1"), 2_500, 3));
        assert_eq!(gone.status, 400);
    }

    #[test]
    fn rate_limit_zero_is_unlimited() {
        let mut s = FakeStripe::new(DAY, 0);
        s.add_charge("ch_1", 1_000_000);
        for i in 0..500 {
            assert_eq!(call(&mut s, ms(0), req(None, 1, i)).status, 200);
        }
        assert_eq!(s.refunds().len(), 500);
    }

    #[test]
    fn lock_timeout_429_should_retry_and_not_saved() {
        let mut s = account();
        let resp = match s.begin(ms(0), req(Some("k1"), 2_500, 1), true) {
            Begin::Respond(r) => r,
            Begin::Execute(_) => panic!("lock_timeout must not execute"),
        };
        assert_eq!(resp.status, 429);
        assert_eq!(
            error_fields(&resp),
            (ErrorType::RateLimitError, Some("lock_timeout"), None)
        );
        assert_eq!(resp.should_retry, Some(true));
        assert!(s.refunds().is_empty());
        let retry = call(&mut s, ms(600), req(Some("k1"), 2_500, 2));
        assert_eq!((retry.status, retry.idempotent_replayed), (200, false));
    }

    #[test]
    fn key_longer_than_255_chars_is_400() {
        let mut s = account();
        let ok_key = "k".repeat(255);
        assert_eq!(call(&mut s, ms(0), req(Some(&ok_key), 100, 1)).status, 200);
        let long = "k".repeat(256);
        let resp = must_respond(&mut s, ms(10), req(Some(&long), 100, 2));
        assert_eq!(resp.status, 400);
        assert_eq!(
            error_fields(&resp),
            (ErrorType::InvalidRequestError, None, None)
        );
        assert!(matches!(&resp.body, Body::Error { message, .. } if message.contains("too long")));
        assert_eq!(s.refunds().len(), 1);
    }

    #[test]
    fn validation_failure_is_not_saved() {
        let mut s = account();
        let bad = must_respond(&mut s, ms(0), req(Some("k1"), 0, 1));
        assert_eq!(bad.status, 400);
        assert_eq!(
            error_fields(&bad),
            (ErrorType::InvalidRequestError, None, Some("amount"))
        );
        // Different parameters with the same key: no idempotency error, because nothing was saved.
        let good = call(&mut s, ms(100), req(Some("k1"), 2_500, 2));
        assert_eq!((good.status, good.idempotent_replayed), (200, false));
        assert_eq!(s.refunds().len(), 1);
    }

    #[test]
    fn unknown_charge_is_resource_missing() {
        let mut s = account();
        let mut r = req(Some("k1"), 100, 1);
        r.params.charge = "ch_nope".into();
        let resp = must_respond(&mut s, ms(0), r);
        assert_eq!(resp.status, 400);
        assert_eq!(
            error_fields(&resp),
            (
                ErrorType::InvalidRequestError,
                Some("resource_missing"),
                Some("charge")
            )
        );
        assert_eq!(s.remaining_cents("ch_nope"), None);
        // Not saved: the key is still free.
        assert_eq!(call(&mut s, ms(10), req(Some("k1"), 100, 2)).status, 200);
    }

    #[test]
    fn partial_refunds_repeat_until_exhausted() {
        let mut s = account();
        for i in 0..4u64 {
            let resp = call(&mut s, ms(i * 1_000), req(Some(&format!("k{i}")), 2_500, i));
            assert_eq!(resp.status, 200);
            assert_eq!(resp.refund().unwrap().amount_cents, 2_500);
        }
        assert_eq!(s.remaining_cents("ch_1"), Some(0));
        let ids: Vec<&str> = s
            .refunds_for_charge("ch_1")
            .iter()
            .map(|r| &*r.id)
            .collect();
        assert_eq!(
            ids,
            ["re_00000001", "re_00000002", "re_00000003", "re_00000004"]
        );
    }

    #[test]
    fn fully_refunded_charge_is_charge_already_refunded() {
        let mut s = account();
        call(&mut s, ms(0), req(None, 10_000, 1));
        let resp = call(&mut s, ms(1_000), req(None, 1, 2));
        assert_eq!(resp.status, 400);
        assert_eq!(
            error_fields(&resp),
            (
                ErrorType::InvalidRequestError,
                Some("charge_already_refunded"),
                None
            )
        );
        assert_eq!(s.refunds().len(), 1);
    }

    #[test]
    fn more_than_remaining_is_invalid_amount() {
        let mut s = account();
        call(&mut s, ms(0), req(None, 6_000, 1));
        let resp = call(&mut s, ms(1_000), req(None, 4_001, 2));
        assert_eq!(resp.status, 400);
        assert_eq!(
            error_fields(&resp),
            (ErrorType::InvalidRequestError, None, Some("amount"))
        );
        assert!(matches!(&resp.body, Body::Error { message, .. } if message.contains("($40.00)")));
        assert_eq!(s.remaining_cents("ch_1"), Some(4_000));
        assert_eq!(call(&mut s, ms(2_000), req(None, 4_000, 3)).status, 200);
        assert_eq!(s.remaining_cents("ch_1"), Some(0));
    }

    #[test]
    fn endpoint_4xx_is_saved_and_replayed() {
        let mut s = account();
        call(&mut s, ms(0), req(None, 10_000, 1));
        let first = call(&mut s, ms(1_000), req(Some("k1"), 500, 2));
        assert_eq!(first.error_code(), Some("charge_already_refunded"));
        assert!(!first.idempotent_replayed);
        let replay = must_respond(&mut s, ms(2_000), req(Some("k1"), 500, 3));
        assert_eq!(replay.status, 400);
        assert_eq!(replay.error_code(), Some("charge_already_refunded"));
        assert!(replay.idempotent_replayed);
        assert_eq!(replay.body, first.body);
    }

    #[test]
    fn error_500_after_commit_creates_refund_and_replays_500() {
        let mut s = account();
        let t = must_execute(&mut s, ms(0), req(Some("k1"), 2_500, 1));
        let resp = delivered(s.commit(ms(400), t, RefundStatus::Succeeded, CommitFault::Error500));
        assert_eq!(resp.status, 500);
        assert_eq!(resp.error_type(), Some(ErrorType::ApiError));
        assert_eq!(s.refunds().len(), 1, "the refund exists despite the 500");
        assert_eq!(
            s.refunds()[0].origin,
            Origin {
                ticket: 7,
                request: Some(1)
            }
        );
        let replay = must_respond(&mut s, ms(1_000), req(Some("k1"), 2_500, 2));
        assert_eq!((replay.status, replay.idempotent_replayed), (500, true));
        assert_eq!(replay.error_type(), Some(ErrorType::ApiError));
        assert_eq!(s.refunds().len(), 1);
        // Traced (and counted) as a replay, not as a new 500.
        let (status, outcome, _) =
            super::super::stripe_trace::classify(&Delivered::Response(replay));
        assert_eq!((status, outcome), (500, ProviderOutcome::Replayed));
        let (_, first, _) = super::super::stripe_trace::classify(&Delivered::Response(resp));
        assert_eq!(first, ProviderOutcome::ApiError);
    }

    #[test]
    fn response_lost_after_commit_then_retry_replays_200() {
        let mut s = account();
        let t = must_execute(&mut s, ms(0), req(Some("k1"), 2_500, 1));
        let d = s.commit(
            ms(9_700),
            t,
            RefundStatus::Succeeded,
            CommitFault::ResponseLost,
        );
        assert_eq!(d, Delivered::ConnectionLost);
        assert_eq!(s.refunds().len(), 1);
        assert_eq!(s.refunds()[0].created, ms(9_700));
        let retry = must_respond(&mut s, ms(10_000), req(Some("k1"), 2_500, 2));
        assert_eq!((retry.status, retry.idempotent_replayed), (200, true));
        assert_eq!(retry.refund().unwrap().id, s.refunds()[0].id);
        assert_eq!(s.refunds().len(), 1);
    }

    #[test]
    fn no_key_every_request_creates_a_refund() {
        // The incident: the retry carried no key, so Stripe refunded twice.
        let mut s = account();
        let a = call(&mut s, ms(0), req(None, 2_500, 1));
        let b = call(&mut s, ms(8_030), req(None, 2_500, 2));
        assert_eq!((a.status, b.status), (200, 200));
        assert!(!b.idempotent_replayed);
        assert_ne!(a.refund().unwrap().id, b.refund().unwrap().id);
        assert_eq!(s.refunds_for_charge("ch_1").len(), 2);
        assert_eq!(s.remaining_cents("ch_1"), Some(5_000));
    }

    #[test]
    fn failed_refund_does_not_consume_the_charge() {
        let mut s = account();
        let t = must_execute(&mut s, ms(0), req(None, 10_000, 1));
        let resp = delivered(s.commit(ms(400), t, RefundStatus::Failed, CommitFault::None));
        assert_eq!(resp.status, 200);
        assert_eq!(resp.refund().unwrap().status, RefundStatus::Failed);
        assert_eq!(s.remaining_cents("ch_1"), Some(10_000));
        let t = must_execute(&mut s, ms(1_000), req(None, 10_000, 2));
        let resp = delivered(s.commit(ms(1_400), t, RefundStatus::Canceled, CommitFault::None));
        assert_eq!(resp.refund().unwrap().status, RefundStatus::Canceled);
        let t = must_execute(&mut s, ms(2_000), req(None, 10_000, 3));
        let resp = delivered(s.commit(ms(2_400), t, RefundStatus::Pending, CommitFault::None));
        assert_eq!(&*resp.refund().unwrap().id, "re_00000003");
        assert_eq!(s.remaining_cents("ch_1"), Some(0), "pending moves money");
        assert_eq!(s.refunds_for_charge("ch_1").len(), 3);
    }

    /// `settle` moves exactly the named refund, only while it is `pending`: two pending refunds
    /// on one charge, the second settled by id (not the first pending one), a settled refund not
    /// settled again, an unknown charge or id left alone; a failed settlement gives the money back.
    #[test]
    fn settle_moves_only_the_named_pending_refund_once() {
        let mut s = account();
        for (i, at) in [(1, 0), (2, 1_000)] {
            let t = must_execute(&mut s, ms(at), req(None, 3_000, i));
            delivered(s.commit(ms(at + 400), t, RefundStatus::Pending, CommitFault::None));
        }
        assert_eq!(s.remaining_cents("ch_1"), Some(4_000));
        let settled = s
            .settle("ch_1", "re_00000002", RefundStatus::Failed)
            .expect("pending");
        assert_eq!(
            (&*settled.id, settled.status),
            ("re_00000002", RefundStatus::Failed)
        );
        let statuses: Vec<_> = s
            .refunds_for_charge("ch_1")
            .iter()
            .map(|r| r.status)
            .collect();
        assert_eq!(statuses, [RefundStatus::Pending, RefundStatus::Failed]);
        assert_eq!(
            s.remaining_cents("ch_1"),
            Some(7_000),
            "a failed refund gives it back"
        );
        assert_eq!(
            s.settle("ch_1", "re_00000002", RefundStatus::Succeeded),
            None
        );
        assert_eq!(
            s.settle("ch_2", "re_00000001", RefundStatus::Succeeded),
            None
        );
        assert_eq!(
            s.settle("ch_1", "re_00000009", RefundStatus::Succeeded),
            None
        );
        let first = s
            .settle("ch_1", "re_00000001", RefundStatus::Succeeded)
            .unwrap();
        assert_eq!(
            (&*first.id, first.status),
            ("re_00000001", RefundStatus::Succeeded)
        );
    }

    #[test]
    #[should_panic(expected = "not in flight")]
    fn double_commit_panics() {
        let mut s = account();
        let t = must_execute(&mut s, ms(0), req(None, 100, 1));
        s.commit(ms(1), t.clone(), RefundStatus::Succeeded, CommitFault::None);
        s.commit(ms(2), t, RefundStatus::Succeeded, CommitFault::None);
    }

    #[test]
    fn error_body_serializes_like_stripe() {
        let resp = Response::error(
            409,
            ErrorType::IdempotencyError,
            Some("idempotency_key_in_use"),
            None,
            "m".into(),
        );
        let json = serde_json::to_value(&resp.body).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "object": "error", "type": "idempotency_error", "code": "idempotency_key_in_use",
                "param": null, "message": "m"
            })
        );
    }
}
