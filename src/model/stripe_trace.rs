//! How a request to Stripe and its answer are traced on the caller's side: `stripe_request`
//! when it leaves, `stripe_response` when the answer comes (with its latency), and the
//! classification of an answer. Shared by the SDK's own tries, the egress proxies' tries
//! (each traced where it leaves for Stripe) and the humans' dashboard refunds.

use super::layers::Via;
use super::stripe::{Body, Delivered, ErrorType, StripeRequest};
use super::world::{Ids, World};
use crate::history::{EventKind, ProviderOutcome};
use crate::sim::SimTime;

/// Traces `req` leaving for Stripe (`stripe_request`) as SDK try `sdk_try`, through the
/// proxies' tries `via` (empty without proxies after `sdk`).
pub(crate) fn record_request(w: &World, ids: Ids, req: &StripeRequest, sdk_try: u32, via: &Via) {
    w.record(
        ids,
        EventKind::StripeRequest {
            idempotency_key: req.idempotency_key.clone(),
            business_id: req.business_id.clone(),
            amount_cents: req.params.amount_cents,
            sdk_try,
            via: via.iter().cloned().collect(),
        },
    );
}

/// Traces Stripe's answer `got` to a request sent at `start` ([`classify`]d, as
/// `stripe_response`), through the proxies' tries `via`.
pub(crate) fn record_response(w: &World, ids: Ids, got: &Delivered, start: SimTime, via: &Via) {
    record_outcome(w, ids, classify(got), start, via);
}

/// Traces an answer already classified as `(status, outcome, refund_id)` (see [`classify`];
/// also the SDK's own timeout or abort) to a request sent at `start`, through `via`.
pub(crate) fn record_outcome(
    w: &World,
    ids: Ids,
    (status, outcome, refund_id): (u16, ProviderOutcome, Option<String>),
    start: SimTime,
    via: &Via,
) {
    w.record(
        ids,
        EventKind::StripeResponse {
            status,
            outcome,
            refund_id,
            latency_ns: (w.now() - start).as_nanos(),
            via: via.iter().cloned().collect(),
        },
    );
}

/// Classifies a delivery for the trace: `(http status, outcome, refund id)`. The outcome follows
/// the error object's `code`, then its `type`, then the status (see [`ProviderOutcome`]).
pub(crate) fn classify(d: &Delivered) -> (u16, ProviderOutcome, Option<String>) {
    match d {
        Delivered::ConnectionLost => (0, ProviderOutcome::ConnectionLost, None),
        Delivered::ConnectFailed => (0, ProviderOutcome::ConnectFailed, None),
        Delivered::Response(r) => {
            let outcome = match &r.body {
                // A saved response replayed under its key (`Idempotent-Replayed: true`),
                // whether a refund or a saved error (a 500 after commit): a replay.
                _ if r.idempotent_replayed => ProviderOutcome::Replayed,
                Body::Refund(_) => ProviderOutcome::Created,
                Body::Error { kind, code, .. } => match (r.status, kind, code.as_deref()) {
                    (_, _, Some("duplicate_in_progress")) => ProviderOutcome::DuplicateInProgress,
                    (_, _, Some("duplicate_transaction")) => ProviderOutcome::DuplicateRejected,
                    (409, _, _) => ProviderOutcome::IdempotencyKeyInUse,
                    (_, ErrorType::IdempotencyError, _) => ProviderOutcome::IdempotencyError,
                    (_, _, Some("charge_already_refunded")) => {
                        ProviderOutcome::ChargeAlreadyRefunded
                    }
                    (_, _, Some("lock_timeout")) => ProviderOutcome::LockTimeout,
                    (_, _, Some("balance_insufficient")) => ProviderOutcome::BalanceInsufficient,
                    (429, _, _) => ProviderOutcome::RateLimited,
                    (s, _, _) if s >= 500 => ProviderOutcome::ApiError,
                    _ => ProviderOutcome::InvalidRequest,
                },
            };
            let id = match &r.body {
                Body::Refund(re) => Some(String::from(&*re.id)),
                Body::Error { .. } => None,
            };
            (r.status, outcome, id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each Stripe answer maps to its outcome by the error object's code, then its type, then
    /// the status; a replayed answer is a replay whatever its body.
    #[test]
    fn classify_follows_the_error_object() {
        use super::super::stripe::{Body, ErrorType, Origin, Refund, RefundStatus, Response};
        let err = |status: u16, kind: ErrorType, code: Option<&str>, replayed: bool| {
            Delivered::Response(Response {
                status,
                body: Body::Error {
                    kind,
                    code: code.map(str::to_string),
                    param: None,
                    message: String::new(),
                },
                idempotent_replayed: replayed,
                should_retry: None,
                retry_after: None,
            })
        };
        use ErrorType::*;
        use ProviderOutcome as O;
        let cases = [
            (
                err(
                    422,
                    InvalidRequestError,
                    Some("duplicate_in_progress"),
                    false,
                ),
                O::DuplicateInProgress,
            ),
            (
                err(409, IdempotencyError, Some("idempotency_key_in_use"), false),
                O::IdempotencyKeyInUse,
            ),
            (
                err(409, InvalidRequestError, None, false),
                O::IdempotencyKeyInUse,
            ),
            (err(400, IdempotencyError, None, false), O::IdempotencyError),
            (
                err(
                    400,
                    InvalidRequestError,
                    Some("charge_already_refunded"),
                    false,
                ),
                O::ChargeAlreadyRefunded,
            ),
            (
                err(429, RateLimitError, Some("lock_timeout"), false),
                O::LockTimeout,
            ),
            (err(429, RateLimitError, None, false), O::RateLimited),
            (err(500, ApiError, None, false), O::ApiError),
            (err(503, ApiError, None, false), O::ApiError),
            (err(500, ApiError, None, true), O::Replayed),
            (
                err(400, InvalidRequestError, Some("amount_too_large"), false),
                O::InvalidRequest,
            ),
            (
                err(499, InvalidRequestError, None, false),
                O::InvalidRequest,
            ),
            (Delivered::ConnectionLost, O::ConnectionLost),
            (Delivered::ConnectFailed, O::ConnectFailed),
        ];
        for (d, want) in cases {
            let (status, got, id) = classify(&d);
            assert_eq!(got, want, "{d:?}");
            assert_eq!(id, None);
            let expected_status = match &d {
                Delivered::Response(r) => r.status,
                Delivered::ConnectionLost | Delivered::ConnectFailed => 0,
            };
            assert_eq!(status, expected_status);
        }
        let refund = |replayed| {
            Delivered::Response(Response {
                status: 200,
                body: Body::Refund(Refund {
                    id: "re_1".into(),
                    charge: "ch_1".into(),
                    amount_cents: 4200,
                    status: RefundStatus::Succeeded,
                    created: SimTime::ZERO,
                    origin: Origin {
                        ticket: 1,
                        request: Some(1),
                    },
                }),
                idempotent_replayed: replayed,
                should_retry: None,
                retry_after: None,
            })
        };
        assert_eq!(
            classify(&refund(false)),
            (200, O::Created, Some("re_1".into()))
        );
        assert_eq!(
            classify(&refund(true)),
            (200, O::Replayed, Some("re_1".into()))
        );
    }
}
