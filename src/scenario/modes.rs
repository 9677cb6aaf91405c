//! The modes that more than one part of a scenario names: which tools a retry applies to
//! ([`AppliesTo`]: the model's rule and a `retry` layer), what a layer that gives up cancels
//! ([`Cancellation`]: the executor and added layers) and how the `Idempotency-Key` is derived
//! ([`KeyMode`]: the refunds service and a recording's `replay`). A leaf below the
//! configuration, the layers and the replay types, which all hold them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which tools the retry rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AppliesTo {
    /// "If a tool call fails, you may retry it once" — any tool (the incident).
    AnyTool,
    /// Only tools whose annotations say `readOnlyHint` or `idempotentHint` (the fix).
    IdempotentTools,
}

/// How the refunds service derives Stripe's `Idempotency-Key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyMode {
    /// No key (the incident).
    None,
    /// A fresh key per request: protects only the SDK's own network retries.
    PerAttempt,
    /// `refund_{ticket}_{nonce}`, the nonce written once per ticket (the fix).
    PerTicket,
}

/// What happens to the work below a layer that gives up on it (a timeout). DESIGN §1b.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Cancellation {
    /// Nothing: the work runs to its end (a zombie), as in the incident.
    #[default]
    None,
    /// Work that has not reached Stripe yet is dropped when it gets a pool connection
    /// (deadline propagation).
    QueuedOnly,
    /// As `queued_only`, and a request already sent to Stripe has its connection closed: the
    /// service stops waiting and records an error, but Stripe may still commit the refund
    /// (aborting never undoes a provider commit).
    AbortInFlight,
}
