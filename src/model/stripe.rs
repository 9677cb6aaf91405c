//! The fake Stripe: `POST /v1/refunds` with Stripe's real idempotency and refund rules
//! (DESIGN §6). A synchronous state machine — the async wrapper in `stripe_api.rs` sleeps the
//! request latency between [`FakeStripe::begin`] and [`FakeStripe::commit`] — so every rule is
//! unit-tested without an executor.
//!
//! STUB: signatures fixed; bodies are being written.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::sim::SimTime;

/// Parameters of `POST /v1/refunds` that Stripe compares when a key is reused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RefundParams {
    /// The charge refunded, `ch_…`.
    pub charge: String,
    /// Amount in cents.
    pub amount_cents: u64,
    /// `requested_by_customer` etc.
    pub reason: String,
    /// `metadata[ticket]`.
    pub ticket: u64,
}

/// Who sent a request (not seen by Stripe's rules; recorded on the refund it creates).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// Ticket.
    pub ticket: u64,
    /// Refunds-service request id (one per tool-call attempt reaching the service), or `None`
    /// for a human's manual refund.
    pub request: Option<u64>,
}

/// One HTTP request to `POST /v1/refunds`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StripeRequest {
    /// `Idempotency-Key` header; `None` when absent. At most 255 characters.
    pub idempotency_key: Option<String>,
    /// Form parameters.
    pub params: RefundParams,
    /// Who sent it.
    pub origin: Origin,
}

/// Refund object status (Stripe API).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundStatus {
    /// Money is on its way.
    Pending,
    /// Customer action needed.
    RequiresAction,
    /// Done.
    Succeeded,
    /// Failed; no money moved.
    Failed,
    /// Canceled; no money moved.
    Canceled,
}

impl RefundStatus {
    /// Whether money moves (or has moved) for a refund in this status.
    pub fn moves_money(self) -> bool {
        matches!(self, RefundStatus::Pending | RefundStatus::RequiresAction | RefundStatus::Succeeded)
    }
}

/// A refund object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refund {
    /// `re_…`, unique and deterministic (a counter).
    pub id: String,
    /// Charge refunded.
    pub charge: String,
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
pub enum ErrorType {
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
pub enum Body {
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
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Body.
    pub body: Body,
    /// `Idempotent-Replayed: true`.
    pub idempotent_replayed: bool,
    /// `Stripe-Should-Retry` header, when present.
    pub should_retry: Option<bool>,
}

/// What [`FakeStripe::begin`] decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Begin {
    /// Answered without executing (429, 409, 400 validation or idempotency error, replay).
    Respond(Response),
    /// The endpoint starts executing; call [`FakeStripe::commit`] with the token after the latency.
    Execute(ExecToken),
}

/// A request that is executing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecToken {
    /// Sequence number of the execution.
    pub exec: u64,
    /// The request.
    pub request: StripeRequest,
}

/// A fault decided by the caller (from its seeded stream) for one commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CommitFault {
    /// Normal response.
    #[default]
    None,
    /// Refund created, the response is a 500 `api_error` (saved under the key).
    Error500,
    /// Refund created, response saved, but the client never gets it (connection reset).
    ResponseLost,
}

/// What the client sees after a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// A response.
    Response(Response),
    /// The connection dropped; the client cannot know the outcome.
    ConnectionLost,
}

/// The fake Stripe account.
#[derive(Debug)]
pub struct FakeStripe {
    #[allow(dead_code)]
    charges: BTreeMap<String, u64>,
}

impl FakeStripe {
    /// An account with key retention `retention` and a rate limit of `rate_limit_per_s`.
    pub fn new(_retention: SimTime, _rate_limit_per_s: u32) -> Self {
        todo!()
    }
    /// Registers a charge of `amount_cents` that refunds may draw on.
    pub fn add_charge(&mut self, _charge: &str, _amount_cents: u64) {
        todo!()
    }
    /// Receives a request at `now`. `lock_timeout` injects a 429 `lock_timeout`.
    pub fn begin(&mut self, _now: SimTime, _req: StripeRequest, _lock_timeout: bool) -> Begin {
        todo!()
    }
    /// Finishes an execution at `now` with the refund created in `status` (if the refund rules allow).
    pub fn commit(&mut self, _now: SimTime, _token: ExecToken, _status: RefundStatus, _fault: CommitFault) -> Delivered {
        todo!()
    }
    /// Every refund created, in creation order.
    pub fn refunds(&self) -> &[Refund] {
        todo!()
    }
    /// Refunds of one charge, in creation order (what a human sees on the dashboard).
    pub fn refunds_for_charge(&self, _charge: &str) -> Vec<&Refund> {
        todo!()
    }
}
