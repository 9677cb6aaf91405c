//! Stripe (`provider.kind: stripe`): a request is recognised by its `Idempotency-Key`, kept for
//! the key retention (24 h at Stripe). The key is validated (at most 255 characters), a reuse
//! with other parameters is a 400 `idempotency_error`, and a repeat while the first still
//! executes is 409 `idempotency_key_in_use` (Stripe's API reference, "Idempotent requests").

use super::{Keep, Recognition, StripeRequest};
use crate::sim::SimTime;

/// Stripe's idempotency rules.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stripe;

impl Recognition for Stripe {
    fn dedup_key(&self, req: &StripeRequest, keep: Keep) -> Option<(String, SimTime)> {
        req.idempotency_key.clone().map(|k| (k, keep.retention))
    }

    fn checks_key_length(&self) -> bool {
        true
    }

    fn still_executing(&self, key: &str) -> (&'static str, String) {
        (
            "idempotency_key_in_use",
            format!(
                "There is currently another in-progress request using this Idempotency-Key (that probably \
                 means you submitted twice, and the other request is still going through): {key}. Please \
                 try again later."
            ),
        )
    }
}
