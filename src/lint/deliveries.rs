//! Rules on how the ticket's triggering event reaches the agent (`deliveries`) and on what the
//! service does when two handlers race on one key: `consumer-without-event-dedup`,
//! `key-conflict-retried-under-new-key`.

use super::finding::{Finding, Severity};
use super::guard::ticket_id_recognised;
use super::tools::ToolFacts;
use crate::scenario::{AckAt, ConsumerDedup, KeyMode, OnKeyConflict, ProviderKind, Scenario};

/// `consumer-without-event-dedup`: deliveries are at least once
/// (`deliveries.duplicate_probability` > 0, two brokers, a rebalance, a queue acked after the
/// handler) and the consumer does not dedup on the event id.
///
/// Fires whatever the key mode, because a per-ticket key covers a second delivery only in part:
/// a redelivery after Stripe's key retention (24 h; webhook senders retry for days, Stripe's
/// for up to 3) is a new refund, two handlers at once meet a 409 that `on_key_conflict` may
/// mishandle, and the second run repeats every other side effect of the agent's turn. An
/// error unless the provider recognises the duplicate (a per-ticket key on Stripe, a per-ticket
/// business id on a `business_id` provider; never on `keys_ignored` or `dedup_window`), a
/// warning when it does.
pub(crate) fn consumer_without_event_dedup(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let d = &s.deliveries;
    let again = d.brokers > 1
        || d.rebalance.is_some()
        || d.queue
            .as_ref()
            .is_some_and(|q| q.ack == AckAt::AfterHandler);
    if !(d.at_least_once() || again) || d.consumer_dedup == ConsumerDedup::EventId {
        return None;
    }
    let how = if d.at_least_once() {
        format!("duplicate_probability {}", d.duplicate_probability)
    } else if d.brokers > 1 {
        "published to two brokers".to_string()
    } else if d.rebalance.is_some() {
        "a rebalance redelivers un-committed messages".to_string()
    } else {
        "the queue redelivers a message not acked within its visibility timeout".to_string()
    };
    // Whether the provider recognises the second run's refund as the first one's: a per-ticket
    // key on Stripe, a per-ticket business id on a business-id provider. A key sent to a
    // provider that ignores keys (or dedups only within a window) covers nothing.
    let keyed = ticket_id_recognised(s);
    let unkeyed = match s.provider.kind {
        ProviderKind::KeysIgnored => {
            "the provider ignores idempotency keys, so the second agent run's refund is a second \
             refund"
        }
        ProviderKind::DedupWindow => {
            "the provider dedups only identical requests within its dedup_window, so a second \
             run's refund after the window (or with other parameters) is a second refund"
        }
        _ => "with no per-ticket key the second agent run's refund is a second refund",
    };
    let (severity, consequence) = if keyed {
        (
            Severity::Warning,
            "the per-ticket key replays it only within the key's retention and when a concurrent \
             409 is looked up, and the second agent run repeats the turn",
        )
    } else {
        (Severity::Error, unkeyed)
    };
    Some(Finding::new(
        "consumer-without-event-dedup",
        severity,
        "deliveries.consumer_dedup",
        format!(
            "the ticket's event is delivered at least once ({how}) and every \
             delivery starts `{}` again: {consequence}",
            tool.name
        ),
        "set deliveries.consumer_dedup to \"event_id\" (record event ids, drop a delivery seen before)",
    )
    .with_fix(["deliveries.consumer_dedup=event_id"]))
}

/// `event-dedup-misses-other-trigger`: the second delivery comes from another trigger with its
/// own event id (`deliveries.duplicate_from: other_trigger`), so the consumer's event-id dedup
/// does not recognise it and a second handler runs. An error, unless the provider recognises
/// the second run's refund (a per-ticket key, a per-ticket business id).
pub(crate) fn event_dedup_misses_other_trigger(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let d = &s.deliveries;
    if d.duplicate_from != crate::scenario::DuplicateFrom::OtherTrigger
        || d.consumer_dedup != ConsumerDedup::EventId
        || !d.at_least_once()
    {
        return None;
    }
    if ticket_id_recognised(s) {
        return None;
    }
    Some(
        Finding::new(
            "event-dedup-misses-other-trigger",
            Severity::Error,
            "deliveries.duplicate_from",
            format!(
                "a second trigger starts `{}` for the same ticket with an event id of its own, so \
                 the consumer's event-id dedup does not drop it and a second agent run refunds \
                 again unless the provider recognises the ticket",
                tool.name
            ),
            "dedup on what the refund is for, not on the event: a per-ticket idempotency key \
             (refunds_service.idempotency_key: per_ticket) that every trigger's run sends",
        )
        .with_fix(["refunds_service.idempotency_key=per_ticket"]),
    )
}

/// `key-conflict-retried-under-new-key`: the service answers a key conflict (409 in progress,
/// 400 `idempotency_error`) by sending the refund again under a new key. Two handlers racing
/// with one key then make two refunds. Stripe only: a `business_id` provider ignores the new
/// key and recognises the resend by its unchanged business id, and the keyless providers never
/// answer a key conflict.
pub(crate) fn key_conflict_retried_under_new_key(
    s: &Scenario,
    tool: &ToolFacts,
) -> Option<Finding> {
    let r = &s.refunds_service;
    if s.provider.kind != ProviderKind::Stripe
        || r.on_key_conflict != OnKeyConflict::RetryNewKey
        || r.idempotency_key == KeyMode::None
    {
        return None;
    }
    Some(
        Finding::new(
            "key-conflict-retried-under-new-key",
            Severity::Error,
            "refunds_service.on_key_conflict",
            format!(
            "a 409 idempotency_key_in_use means a request with the key is still executing, but \
             the service sends `{}`'s refund again under a new key: Stripe makes a second refund",
            tool.name
        ),
            "set refunds_service.on_key_conflict to \"lookup\" (409 means in progress: look it up)",
        )
        .with_fix(["refunds_service.on_key_conflict=lookup"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::scenario_rules;
    use crate::scenario::load_str;

    fn findings(extra: &str) -> Vec<(String, Severity, String)> {
        let text = format!(
            r#"{{"name":"t","horizon":"1h","arrivals":{{"schedule":[{{"duration":"1m","rate_per_s":1}}]}}{extra}}}"#
        );
        let s = load_str(&text, "t.json").unwrap();
        scenario_rules(&s)
            .into_iter()
            .filter(|f| f.id.contains("dedup") || f.id.contains("key-conflict"))
            .map(|f| (f.id.to_string(), f.severity, f.path))
            .collect()
    }

    #[test]
    fn dedup_rule_is_an_error_without_a_key_a_warning_with_one_and_silent_when_deduped() {
        let dup = r#","deliveries":{"duplicate_probability":0.1}"#;
        assert_eq!(
            findings(dup),
            [(
                "consumer-without-event-dedup".into(),
                Severity::Error,
                "deliveries.consumer_dedup".into()
            )]
        );
        let keyed = format!(r#"{dup},"refunds_service":{{"idempotency_key":"per_ticket"}}"#);
        assert_eq!(findings(&keyed)[0].1, Severity::Warning);
        // A per-ticket key the provider ignores (or cannot use) covers nothing: an error.
        for kind in ["keys_ignored", "dedup_window"] {
            let ignored = format!(r#"{keyed},"provider":{{"kind":"{kind}"}}"#);
            let f = findings(&ignored);
            assert_eq!(f[0].1, Severity::Error, "{kind}: {f:?}");
        }
        // A business-id provider with a per-ticket business id recognises the duplicate.
        let by_id = format!(
            r#"{dup},"provider":{{"kind":"business_id"}},"refunds_service":{{"business_id":"per_ticket"}}"#
        );
        assert_eq!(findings(&by_id)[0].1, Severity::Warning);
        let by_attempt = format!(
            r#"{dup},"provider":{{"kind":"business_id"}},"refunds_service":{{"business_id":"per_attempt"}}"#
        );
        assert_eq!(findings(&by_attempt)[0].1, Severity::Error);
        let deduped = r#","deliveries":{"duplicate_probability":0.1,"consumer_dedup":"event_id"}"#;
        assert!(findings(deduped).is_empty());
        assert!(
            findings("").is_empty(),
            "exactly-once deliveries: nothing to flag"
        );
    }

    #[test]
    fn key_conflict_rule_needs_a_key_and_retry_new_key() {
        let racing = r#","refunds_service":{"idempotency_key":"per_ticket","on_key_conflict":"retry_new_key"}"#;
        assert_eq!(
            findings(racing),
            [(
                "key-conflict-retried-under-new-key".into(),
                Severity::Error,
                "refunds_service.on_key_conflict".into()
            )]
        );
        let lookup =
            r#","refunds_service":{"idempotency_key":"per_ticket","on_key_conflict":"lookup"}"#;
        assert!(findings(lookup).is_empty());
        let keyless = r#","refunds_service":{"on_key_conflict":"retry_new_key"}"#;
        assert!(findings(keyless).is_empty(), "no key, no conflict");
    }
}
