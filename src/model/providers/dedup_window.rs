//! A duplicate window (`provider.kind: dedup_window`), as card gateways keep one: no keys; a
//! request's parameters (charge, amount, reason, ticket) are its key, kept for
//! `provider.dedup_window` from the first request's arrival.

use super::{Keep, Recognition, StripeRequest};
use crate::sim::SimTime;

/// Identical parameters within the window are a repeat.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DedupWindow;

impl Recognition for DedupWindow {
    fn dedup_key(&self, req: &StripeRequest, keep: Keep) -> Option<(String, SimTime)> {
        let p = &req.params;
        let key = format!(
            "params:{}:{}:{}:{}",
            p.charge, p.amount_cents, p.reason, p.ticket
        );
        Some((key, keep.dedup_window))
    }
}
