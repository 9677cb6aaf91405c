//! A provider that ignores keys (`provider.kind: keys_ignored`): the `Idempotency-Key` header
//! is accepted and ignored (no length check, nothing saved), so every request that passes
//! validation executes.

use super::{Keep, Recognition, StripeRequest};
use crate::sim::SimTime;

/// Nothing is recognised.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeysIgnored;

impl Recognition for KeysIgnored {
    fn dedup_key(&self, _req: &StripeRequest, _keep: Keep) -> Option<(String, SimTime)> {
        None
    }
}
