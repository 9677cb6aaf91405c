//! How a provider recognises a repeated request, one file per provider kind (`provider.kind`
//! in a scenario): what a request is recognised by and for how long, whether the key is
//! validated, and how a reuse is answered. The account behind every kind — charges, refunds,
//! the rate limit, the object lock, saving and replaying answers — is [`super::stripe`]'s
//! [`FakeStripe`](super::stripe::FakeStripe), which asks [`rules`] at each of these points.
//!
//! Adding a provider kind is one file here holding a unit struct with `impl Recognition`, and
//! one match arm in [`rules`] (after the variant of `scenario::ProviderKind` that names it).

mod business_id;
mod dedup_window;
mod keys_ignored;
mod stripe;

use std::rc::Rc;

use serde::Serialize;

use crate::scenario::ProviderKind;
use crate::sim::SimTime;

pub(crate) use business_id::BusinessId;
pub(crate) use dedup_window::DedupWindow;
pub(crate) use keys_ignored::KeysIgnored;
pub(crate) use stripe::Stripe;

/// Parameters of `POST /v1/refunds` that Stripe compares when a key is reused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct RefundParams {
    /// The charge refunded, `ch_…`. Shared (`Rc<str>`): a request's parameters are cloned
    /// for every try, key entry and refund.
    pub charge: Rc<str>,
    /// Amount in cents.
    pub amount_cents: u64,
    /// `requested_by_customer` etc.
    pub reason: &'static str,
    /// `metadata[ticket]`.
    pub ticket: u64,
}

/// Who sent a request (not seen by Stripe's rules; recorded on the refund it creates).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Origin {
    /// Ticket.
    pub ticket: u64,
    /// Refunds-service request id (one per tool-call attempt reaching the service), or `None`
    /// for a human's manual refund.
    pub request: Option<u64>,
}

/// One HTTP request to `POST /v1/refunds`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StripeRequest {
    /// `Idempotency-Key` header; `None` when absent. At most 255 characters.
    pub idempotency_key: Option<String>,
    /// Form parameters.
    pub params: RefundParams,
    /// A business id in the body (a merchant reference), or `None`: what a
    /// `business_id` provider ([`business_id::BusinessId`]) recognises duplicates by; Stripe ignores it.
    pub business_id: Option<String>,
    /// Who sent it.
    pub origin: Origin,
}

/// How long a provider keeps what it recognises a request by: the account's key retention
/// (`stripe.idempotency_key_retention`) and a duplicate window (`provider.dedup_window`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keep {
    /// Key retention (Stripe keeps keys for 24 h).
    pub retention: SimTime,
    /// A `dedup_window` provider's window.
    pub dedup_window: SimTime,
}

/// One provider kind's rules for a repeated request.
pub(crate) trait Recognition {
    /// The entry `req` is recognised by and how long it is kept, or `None` when nothing of
    /// the request is recognised (every such request executes).
    fn dedup_key(&self, req: &StripeRequest, keep: Keep) -> Option<(String, SimTime)>;

    /// Whether the `Idempotency-Key` header is validated (at most 255 characters, else 400
    /// before anything is saved). Only Stripe reads the header.
    fn checks_key_length(&self) -> bool {
        false
    }

    /// The message of the 400 `idempotency_error` answering a reuse of `key` with other
    /// parameters. Stripe's words by default.
    fn reused_with_other_params(&self, key: &str) -> String {
        format!(
            "Keys for idempotent requests can only be used with the same parameters they were first used \
             with. Try using a key other than '{key}' if you meant to execute a different request."
        )
    }

    /// The error code and message answering a repeat of `key` while the first still executes
    /// (status `provider.in_flight_duplicate_status`, 409 or 422). A gateway's generic words by
    /// default.
    fn still_executing(&self, _key: &str) -> (&'static str, String) {
        (
            "duplicate_in_progress",
            "A duplicate of this request is still being processed.".to_owned(),
        )
    }

    /// The message refusing a repeat of `key` after its first request finished
    /// (`provider.duplicate_rejected_status`; code [`DUPLICATE_REJECTED_CODE`]). A gateway's
    /// generic words by default.
    fn duplicate_rejected(&self, _key: &str) -> String {
        "A transaction with identical details has already been processed.".to_owned()
    }
}

/// The error code of a provider's refusal of a finished duplicate
/// (`provider.duplicate_rejected_status`): PayPal's `DUPLICATE_TRANSACTION`, in Stripe's
/// snake_case.
pub(crate) const DUPLICATE_REJECTED_CODE: &str = "duplicate_transaction";

/// The rules of provider kind `kind`: one arm per kind.
pub(crate) fn rules(kind: ProviderKind) -> &'static dyn Recognition {
    match kind {
        ProviderKind::Stripe => &Stripe,
        ProviderKind::KeysIgnored => &KeysIgnored,
        ProviderKind::DedupWindow => &DedupWindow,
        ProviderKind::BusinessId => &BusinessId,
    }
}
