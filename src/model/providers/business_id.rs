//! A provider that recognises a business id (`provider.kind: business_id`), as payment APIs
//! with a merchant reference do: no keys; the body's business id is the key, kept for the key
//! retention, and a reuse with other parameters names the business id.

use super::{Keep, Recognition, StripeRequest};
use crate::sim::SimTime;

/// The body's business id is a repeat's mark.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BusinessId;

impl Recognition for BusinessId {
    fn dedup_key(&self, req: &StripeRequest, keep: Keep) -> Option<(String, SimTime)> {
        req.business_id.clone().map(|k| (k, keep.retention))
    }

    fn reused_with_other_params(&self, key: &str) -> String {
        format!("Business id '{key}' was already used with other parameters.")
    }

    fn duplicate_rejected(&self, key: &str) -> String {
        format!("Business id '{key}' was already used.")
    }
}
