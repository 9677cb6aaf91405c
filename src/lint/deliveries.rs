//! Rules on how the ticket's triggering event reaches the agent (`deliveries`) and on what the
//! service does when two handlers race on one key: `consumer-without-event-dedup`,
//! `key-conflict-retried-under-new-key`.

use super::finding::{Finding, Severity};
use super::tools::ToolFacts;
use crate::scenario::{ConsumerDedup, KeyMode, OnKeyConflict, Scenario};

/// `consumer-without-event-dedup`: deliveries are at least once
/// (`deliveries.duplicate_probability` > 0) and the consumer does not dedup on the event id.
///
/// Fires whatever the key mode, because a per-ticket key covers a second delivery only in part:
/// a redelivery after Stripe's key retention (24 h; webhook senders retry for days, Stripe's
/// for up to 3) is a new refund, two handlers at once meet a 409 that `on_key_conflict` may
/// mishandle, and the second run repeats every other side effect of the agent's turn. An
/// error without a per-ticket key (the duplicate moves money twice), a warning with one.
pub fn consumer_without_event_dedup(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let d = &s.deliveries;
    if !d.at_least_once() || d.consumer_dedup == ConsumerDedup::EventId {
        return None;
    }
    let keyed = s.refunds_service.idempotency_key == KeyMode::PerTicket;
    let (severity, consequence) = if keyed {
        (
            Severity::Warning,
            "the per-ticket key replays it only within the key's retention and when a concurrent \
             409 is looked up, and the second agent run repeats the turn",
        )
    } else {
        (
            Severity::Error,
            "with no per-ticket key the second agent run's refund is a second refund",
        )
    };
    Some(Finding::new(
        "consumer-without-event-dedup",
        severity,
        "deliveries.consumer_dedup",
        format!(
            "the ticket's event is delivered at least once (duplicate_probability {}) and every \
             delivery starts `{}` again: {consequence}",
            d.duplicate_probability, tool.name
        ),
        "set deliveries.consumer_dedup to \"event_id\" (record event ids, drop a delivery seen before)",
    ))
}

/// `key-conflict-retried-under-new-key`: the service answers a key conflict (409 in progress,
/// 400 `idempotency_error`) by sending the refund again under a new key. Two handlers racing
/// with one key then make two refunds.
pub fn key_conflict_retried_under_new_key(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let r = &s.refunds_service;
    if r.on_key_conflict != OnKeyConflict::RetryNewKey || r.idempotency_key == KeyMode::None {
        return None;
    }
    Some(Finding::new(
        "key-conflict-retried-under-new-key",
        Severity::Error,
        "refunds_service.on_key_conflict",
        format!(
            "a 409 idempotency_key_in_use means a request with the key is still executing, but \
             the service sends `{}`'s refund again under a new key: Stripe makes a second refund",
            tool.name
        ),
        "set refunds_service.on_key_conflict to \"lookup\" (409 means in progress: look it up)",
    ))
}
