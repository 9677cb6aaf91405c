//! `provider`: which payment provider answers `POST /v1/refunds`, and how it treats a request it
//! has seen before. Stripe (the default) keeps every rule of `model::stripe`; the other kinds
//! follow what card gateways do instead of Stripe's idempotency keys.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The provider behind the refunds service's SDK. Default: Stripe with every one of its rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Provider {
    /// How the provider recognises a request it has seen before. Default: `stripe`.
    #[serde(default)]
    pub kind: ProviderKind,
    /// `dedup_window` only: how long after a request an identical one (same charge, amount,
    /// reason and metadata) is a duplicate, from the first request's arrival; > 0 and at most
    /// 365 days. Default: 2 min (Authorize.Net's `duplicateWindow` default of 120 s).
    #[serde(default = "default_dedup_window", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub dedup_window: Duration,
    /// The HTTP status of the answer to a duplicate that arrives while the first request is
    /// still executing: `409` (Stripe's `idempotency_key_in_use`, the default) or `422` (as some
    /// gateways answer). SDKs retry a 409 and not a 422, and a client that reads a 422 as a
    /// validation failure takes it for a definite "nothing was done".
    #[serde(default = "default_in_flight_status")]
    pub in_flight_duplicate_status: u16,
    /// The HTTP status with which the provider refuses a repeat of a request that already
    /// finished (same key, business id or parameters, inside the retention or window), instead
    /// of replaying the saved answer as Stripe does: `400`, `409`, `422` or `500`. The answer is
    /// an error with code `duplicate_transaction`, nothing is created and nothing saved; the
    /// first request's effect stands. Gateways do this: PayPal's Payments API answers
    /// `DUPLICATE_TRANSACTION` (422 Unprocessable Entity) and tells the client to "check
    /// transaction status"; Braintree's duplicate checking makes the repeat "Gateway Rejected"
    /// (30 s window by default); Helcim declines "Suspected duplicate transaction in the last 5
    /// minutes". With `kind: business_id` this is a provider that rejects a reused business id
    /// outright. A client that reads the refusal as "nothing was done" (a 4xx) may write a new
    /// key and send the refund again. Default: not set (the saved answer is replayed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_rejected_status: Option<u16>,
    /// A condition of the account that fails every refund executing before this instant (from
    /// the run's start) and passes after it: Stripe's 400 `balance_insufficient` while the
    /// available balance is too low to cover a refund (it passes once payments settle or the
    /// balance is topped up). The failure is an answer of an endpoint that began executing, so
    /// Stripe saves it under the idempotency key and replays it: a retry with the same key after
    /// the condition cleared gets the stored failure, not a refund. At most 365 days. Default:
    /// not set (no such condition).
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub balance_insufficient_until: Option<Duration>,
    /// The `Retry-After` header (whole seconds) on the answers that say "try again later": 429s
    /// (`rate_limit`, `lock_timeout`) and the answer to a duplicate still in progress. SDKs that
    /// honour it (`refunds_service.stripe_client.honour_retry_headers`) wait at least that long,
    /// up to 60 s, before their retry. At most 1 hour. Default: not sent (Stripe does not
    /// document one).
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub retry_after: Option<Duration>,
    /// Stripe's object lock: a request that would execute on a charge while another request on
    /// the same charge is executing gets 429 `lock_timeout` with `Stripe-Should-Retry: true`,
    /// nothing saved (a request with the same key is answered by the idempotency layer first).
    /// Default: false, so the incident's numbers stay as calibrated; `stripe.faults.lock_timeout`
    /// injects the same answer at random.
    #[serde(default)]
    pub lock_concurrent_requests: bool,
    /// Refund status transitions after the 200: a refund created `pending` settles later, to
    /// `succeeded` or (with `pending_fails_probability`) to `failed`, when no money moves after
    /// all. Default: no transitions (a refund keeps the status it was created with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<Settle>,
    /// The provider's rule for a second effect on the same object: `charge` (Stripe's refund
    /// rule: the refunds of a charge may not exceed it, 400 `charge_already_refunded` once it is
    /// spent), `none` (every effect that passes the duplicate rules is made, as a second card
    /// charge or order is), or `balance` (effects draw on one account balance of
    /// `balance_cents`, as Stripe payouts do: 400 `balance_insufficient` when it cannot cover
    /// one). Default: `charge` for a tool whose `effect` is `refund`, `none` for any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_limit: Option<EffectLimit>,
    /// `effect_limit: balance` only: the account's available balance at the start, cents.
    /// Required with `balance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance_cents: Option<u64>,
}

/// What limits a second effect on the same object (see [`Provider::effect_limit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EffectLimit {
    /// The effects on a charge sum to at most its amount (Stripe's refunds).
    Charge,
    /// No limit beyond the duplicate rules (a second charge, order or message is made).
    None,
    /// One account balance for every effect (Stripe's payouts, transfers).
    Balance,
}

/// How a `pending` refund settles (see [`Provider::settle`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Settle {
    /// Time from creation to the final status; > 0 and at most 365 days. Default: 5 min.
    #[serde(default = "default_settle_after", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub after: Duration,
    /// Chance a pending refund ends `failed` (no money moves; Stripe sends `refund.failed`)
    /// instead of `succeeded`, in `[0, 1]`. Default: 0.
    #[serde(default)]
    pub fails_probability: f64,
    /// Chance a pending refund ends `canceled` (no money moves) instead, in `[0, 1]`; drawn
    /// after `fails_probability`, and the two add up to at most 1. Default: 0.
    #[serde(default)]
    pub canceled_probability: f64,
    /// Chance a pending refund is created `requires_action` instead (Stripe: the payment method
    /// needs the customer to act, e.g. confirm bank details, before the refund proceeds), in
    /// `[0, 1]`; it then settles after `after` exactly as a pending one does (counted as moving
    /// money until then). Drawn only when > 0, so scenarios without it draw as before.
    /// Default: 0.
    #[serde(default)]
    pub requires_action_probability: f64,
}

fn default_settle_after() -> Duration {
    Duration::from_secs(300)
}

impl Default for Settle {
    fn default() -> Self {
        Settle {
            after: default_settle_after(),
            fails_probability: 0.0,
            canceled_probability: 0.0,
            requires_action_probability: 0.0,
        }
    }
}

/// How a provider recognises a repeated request (see [`Provider::kind`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Stripe: the `Idempotency-Key` header, kept `stripe.idempotency_key_retention`; same key
    /// with other parameters is a 400 `idempotency_error`, still executing a 409, finished a
    /// replay of the saved response.
    #[default]
    Stripe,
    /// A provider that accepts and ignores the `Idempotency-Key` header: every request executes.
    KeysIgnored,
    /// No keys: a request identical to one received less than `dedup_window` ago is a duplicate
    /// (still executing: `in_flight_duplicate_status`; finished: the first one's response
    /// again, no new refund), as card gateways' duplicate-transaction windows do.
    DedupWindow,
    /// No keys: duplicates are recognised by a business id field in the request body (a merchant
    /// reference, sent by the service per `refunds_service.business_id`), kept
    /// `stripe.idempotency_key_retention`; the same id with other parameters is a 400.
    BusinessId,
}

fn default_dedup_window() -> Duration {
    Duration::from_secs(120)
}
fn default_in_flight_status() -> u16 {
    409
}

impl Default for Provider {
    fn default() -> Self {
        Provider {
            kind: ProviderKind::Stripe,
            dedup_window: default_dedup_window(),
            in_flight_duplicate_status: default_in_flight_status(),
            duplicate_rejected_status: None,
            balance_insufficient_until: None,
            retry_after: None,
            lock_concurrent_requests: false,
            settle: None,
            effect_limit: None,
            balance_cents: None,
        }
    }
}

impl Provider {
    /// Whether this is the default provider (Stripe, every default): such a section is not
    /// printed by `refundsim show`, so scenarios written before providers print as they did.
    pub fn is_default(&self) -> bool {
        *self == Provider::default()
    }
}
