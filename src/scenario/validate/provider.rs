//! `provider`: the duplicate window, the duplicate statuses, the balance condition and refund
//! settlement.

use crate::scenario::limits::MAX_DURATION;
use crate::scenario::provider::Provider;
use crate::scenario::rules::{at_most, fail, positive, probability, Check};

/// The window, the status, then settlement's delay and probability.
pub(super) fn validate(p: &Provider) -> Check {
    positive("provider.dedup_window", p.dedup_window)?;
    at_most("provider.dedup_window", p.dedup_window, MAX_DURATION)?;
    if !matches!(p.in_flight_duplicate_status, 409 | 422) {
        return fail(
            "provider.in_flight_duplicate_status",
            format!(
                "invalid value: expected 409 or 422, got {}",
                p.in_flight_duplicate_status
            ),
        );
    }
    if let Some(status) = p.duplicate_rejected_status {
        if !matches!(status, 400 | 409 | 422 | 500) {
            return fail(
                "provider.duplicate_rejected_status",
                format!("invalid value: expected 400, 409, 422 or 500, got {status}"),
            );
        }
    }
    match (p.effect_limit, p.balance_cents) {
        (Some(crate::scenario::provider::EffectLimit::Balance), None) => {
            return fail(
                "provider.balance_cents",
                "missing: `effect_limit: balance` needs the account's balance in cents \
                 (e.g. 1000000 for $10,000.00)",
            );
        }
        (Some(crate::scenario::provider::EffectLimit::Balance), Some(b)) => {
            crate::scenario::rules::at_most_cents("provider.balance_cents", b)?;
        }
        (_, Some(_)) => {
            return fail(
                "provider.balance_cents",
                "set without `effect_limit: balance`, where nothing reads it; expected \
                 `\"effect_limit\": \"balance\"` beside it, or no balance_cents",
            );
        }
        _ => {}
    }
    if let Some(until) = p.balance_insufficient_until {
        at_most("provider.balance_insufficient_until", until, MAX_DURATION)?;
    }
    if let Some(r) = p.retry_after {
        at_most(
            "provider.retry_after",
            r,
            std::time::Duration::from_secs(3600),
        )?;
    }
    if let Some(s) = &p.settle {
        positive("provider.settle.after", s.after)?;
        at_most("provider.settle.after", s.after, MAX_DURATION)?;
        probability("provider.settle.fails_probability", s.fails_probability)?;
        probability(
            "provider.settle.requires_action_probability",
            s.requires_action_probability,
        )?;
        probability(
            "provider.settle.canceled_probability",
            s.canceled_probability,
        )?;
        if s.fails_probability + s.canceled_probability > 1.0 {
            return fail(
                "provider.settle.canceled_probability",
                format!(
                    "invalid value: fails_probability + canceled_probability must be at most 1, got {} + {}",
                    s.fails_probability, s.canceled_probability
                ),
            );
        }
    }
    Ok(())
}
