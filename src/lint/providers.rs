//! Rules on the provider's duplicate handling and the service's answers around it: a provider
//! that ignores keys, a duplicate window a retry can outlive, a business id that changes per
//! request, and a unique constraint that answers a retry with a conflict.

use super::finding::{Finding, Severity};
use super::guard::up_to_seconds;
use super::spans::upper_retry_span;
use super::tools::ToolFacts;
use crate::scenario::{
    KeyMode, KeyRotation, OnKeyConflict, OnPendingRow, OnTimeout, ProviderKind, Scenario,
};

/// Every provider rule, in a fixed order. `retried_above` says whether anything above the
/// service retries the tool (the model, the executor, an added layer); `retriers` whether the
/// model's rule and the executor's `retry` do (the added layers have
/// `layer-retry-without-stable-key`, which asks the provider too).
pub(super) fn provider_rules(
    s: &Scenario,
    tool: &ToolFacts,
    retried_above: bool,
    retriers: Retriers,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let svc = &s.refunds_service;
    let guarded = svc.local_dedup || s.executor.on_timeout == OnTimeout::ProbeStatus;
    match s.provider.kind {
        ProviderKind::Stripe => {}
        ProviderKind::KeysIgnored => out.extend(keys_ignored(s, tool, retried_above && !guarded)),
        ProviderKind::DedupWindow => out.extend(retry_outside_dedup_window(s, tool, retriers)),
        ProviderKind::BusinessId => out.extend(business_id_not_stable(s, tool)),
    }
    out.extend(duplicate_refused_read_as_failure(s, tool, retried_above));
    out.extend(stored_failure_replayed(s, tool));
    if svc.local_dedup && svc.on_pending_row == OnPendingRow::Conflict && retried_above {
        out.push(Finding::new(
            "pending-row-conflict",
            Severity::Warning,
            "refunds_service.on_pending_row",
            format!(
                "a retried `{}` call that arrives while the first is still in flight is answered 409 by the ticket's unique row: the caller reads a failure while the first call may still refund, and escalates or retries",
                tool.name
            ),
            "set refunds_service.on_pending_row to \"wait\" (answer with the first request's result)",
        ).with_fix(["refunds_service.on_pending_row=wait"]));
    }
    out
}

/// `provider-ignores-keys`: the provider ignores `Idempotency-Key` while a retry from above
/// the service reaches it with nothing that dedups (`unguarded_above`), or the SDK retries.
fn keys_ignored(s: &Scenario, tool: &ToolFacts, unguarded_above: bool) -> Option<Finding> {
    let svc = &s.refunds_service;
    let sdk = svc.stripe_client.max_network_retries > 0;
    if unguarded_above || sdk {
        return Some(Finding::new(
            "provider-ignores-keys",
            Severity::Error,
            "provider.kind",
            format!(
                "the provider ignores Idempotency-Key, so no key protects a retried `{}` call{}: a retry of a call that went through is a second refund",
                tool.name,
                if sdk { " (the SDK's network retries included)" } else { "" }
            ),
            "dedup in the service (refunds_service.local_dedup: true) or probe the status before a retry (executor.on_timeout: \"probe_status\"), and turn the SDK's network retries off",
        ).with_fix(ignored_keys_fix(unguarded_above, sdk)));
    }
    None
}

/// `business-id-not-stable`: the provider recognises a repeat by the business id, and the
/// service does not send one per ticket.
fn business_id_not_stable(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let svc = &s.refunds_service;
    if svc.business_id != KeyMode::PerTicket {
        let what = match svc.business_id {
            KeyMode::None => "sends no business id",
            _ => "derives the business id per request",
        };
        return Some(Finding::new(
            "business-id-not-stable",
            Severity::Error,
            "refunds_service.business_id",
            format!(
                "the provider recognises duplicates by the business id, but the service {what}: a retried `{}` call is a new refund",
                tool.name
            ),
            "set refunds_service.business_id to \"per_ticket\" (one id per logical refund), and refunds_service.on_key_conflict to \"lookup\"",
        ).with_fix([
            "refunds_service.business_id=per_ticket",
            "refunds_service.on_key_conflict=lookup",
        ]));
    }
    None
}

/// `duplicate-refused-read-as-failure`: the provider refuses a repeat of a finished request
/// with an error (`provider.duplicate_rejected_status`) instead of replaying its answer, a
/// repeat can reach it (the SDK's network retries, or a retry from above), and the service
/// passes the refusal on as a failure (`on_key_conflict` other than `lookup`). An error when the
/// service then writes a new key (`rotate_key` other than `never`: the next retry is a new
/// refund), a warning otherwise (the refund stands but the caller is told it failed, and
/// escalates).
fn duplicate_refused_read_as_failure(
    s: &Scenario,
    tool: &ToolFacts,
    retried_above: bool,
) -> Option<Finding> {
    let status = s.provider.duplicate_rejected_status?;
    let svc = &s.refunds_service;
    let sdk = svc.stripe_client.max_network_retries > 0;
    if svc.on_key_conflict == OnKeyConflict::Lookup || !(sdk || retried_above) {
        return None;
    }
    let rotates = svc.new_nonce_after_error || svc.rotate_key != KeyRotation::Never;
    let (severity, then) = if rotates {
        (
            Severity::Error,
            "the service then writes a new key (refunds_service.rotate_key), and the next retry is a second refund",
        )
    } else {
        (
            Severity::Warning,
            "the refund stands, but the caller is told it failed and escalates or retries",
        )
    };
    Some(
        Finding::new(
            "duplicate-refused-read-as-failure",
            severity,
            "provider.duplicate_rejected_status",
            format!(
                "the provider answers a repeat of a finished `{}` call with {status} duplicate_transaction instead of the first answer, and the service passes it on as a failure: {then}",
                tool.name
            ),
            "read the refusal as \"already done\": set refunds_service.on_key_conflict to \"lookup\" (the service looks the refund up and answers with it)",
        )
        .with_fix(["refunds_service.on_key_conflict=lookup"]),
    )
}

/// `stored-failure-replayed`: a provider condition fails refunds for a while
/// (`provider.balance_insufficient_until`), the failure is saved under the per-ticket key, and
/// the key is never rotated: every retry for the ticket replays the stored failure after the
/// condition cleared, and the refund is never made.
fn stored_failure_replayed(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let until = s.provider.balance_insufficient_until?;
    let svc = &s.refunds_service;
    if svc.idempotency_key != KeyMode::PerTicket
        || svc.new_nonce_after_error
        || svc.rotate_key != KeyRotation::Never
    {
        return None;
    }
    Some(
        Finding::new(
            "stored-failure-replayed",
            Severity::Warning,
            "refunds_service.rotate_key",
            format!(
                "refunds fail until {} (provider.balance_insufficient_until), the provider saves that failure under the ticket's key, and the key is never rotated: a `{}` retry after the condition cleared replays the failure instead of refunding",
                humantime::format_duration(until),
                tool.name
            ),
            "write a new key after a definite failure (refunds_service.rotate_key: \"after_definite_failure\"), which keeps the key after an unknown outcome",
        )
        .with_fix(["refunds_service.rotate_key=after_definite_failure"]),
    )
}

/// Which of the older sections retry the tool: the model's rule (`agent.retry`, on this tool)
/// and the executor's `retry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Retriers {
    /// The model retries the tool.
    pub model: bool,
    /// The executor's `retry` is on.
    pub executor: bool,
}

/// `provider-ignores-keys`'s fix: the service's dedup when retries from above are unguarded,
/// and the SDK's network retries off when it resends.
fn ignored_keys_fix(unguarded: bool, sdk: bool) -> Vec<&'static str> {
    let mut fix = Vec::new();
    if unguarded {
        fix.push("refunds_service.local_dedup=true");
    }
    if sdk {
        fix.push("refunds_service.stripe_client.max_network_retries=0");
    }
    fix
}

/// `retry-outside-dedup-window`: a `dedup_window` provider, the model's rule or the executor's
/// `retry` retries the tool, the service does not dedup, and a retry can reach the provider
/// after the window ([`upper_retry_span`]: timeouts, backoff, think time and the burst's p99
/// pool wait), or the model changes the amount on a retry (`amount_drift_probability`), which
/// no window recognises. A retry that always lands inside the window is recognised.
fn retry_outside_dedup_window(s: &Scenario, tool: &ToolFacts, r: Retriers) -> Option<Finding> {
    if s.refunds_service.local_dedup {
        return None;
    }
    let (span, what) = upper_retry_span(s, r.model, r.executor)?;
    let window = s.provider.dedup_window;
    let drift = r.model && s.agent.retry.amount_drift_probability > 0.0;
    if span <= window && !drift {
        return None;
    }
    let why = if span > window {
        format!(
            "{what} can reach it up to {} after the first request (timeouts, backoff and a p99 pool wait), where a retry is a new refund",
            humantime::format_duration(up_to_seconds(span))
        )
    } else {
        format!(
            "the model changes the amount on {} % of its retries (agent.retry.amount_drift_probability), and a changed request is never a duplicate",
            s.agent.retry.amount_drift_probability * 100.0
        )
    };
    Some(
        Finding::new(
            "retry-outside-dedup-window",
            Severity::Error,
            "provider.dedup_window",
            format!(
                "the provider recognises a duplicate only within {} of the first request, and `{}` is retried from above: {why}",
                humantime::format_duration(window),
                tool.name
            ),
            "dedup in the service (refunds_service.local_dedup: true): a retry waits for the first request's result",
        )
        .with_fix(["refunds_service.local_dedup=true"]),
    )
}

#[cfg(test)]
mod tests {
    use crate::lint::scenario_rules;
    use crate::scenario::load_str;

    /// The `retry-outside-dedup-window` finding's message on a `dedup_window` provider (window
    /// `window`) whose model retries any tool once, plus `extra`; `None` when silent.
    fn outside(window: &str, extra: &str) -> Option<String> {
        let text = format!(
            r#"{{"name":"t","horizon":"1h","arrivals":{{"schedule":[{{"duration":"1m","rate_per_s":0.1}}]}},"provider":{{"kind":"dedup_window","dedup_window":"{window}"}}{extra}}}"#
        );
        let s = load_str(&text, "t.json").unwrap();
        scenario_rules(&s)
            .into_iter()
            .find(|f| f.id == "retry-outside-dedup-window")
            .map(|f| f.message)
    }

    #[test]
    fn a_retry_that_always_lands_inside_the_window_is_recognised() {
        // The model's retry: 8 s timeout + think p99 + call overhead, no pool wait at this load.
        assert_eq!(outside("2m", ""), None);
        let m = outside("5s", "").expect("past a 5 s window");
        assert!(
            m.contains("the model's retries can reach it up to 9s after the first request"),
            "{m}"
        );
        assert_eq!(
            outside("5s", r#","refunds_service":{"local_dedup":true}"#),
            None
        );
        // A model that does not retry this tool leaves nothing to recognise.
        assert_eq!(
            outside(
                "5s",
                r#","agent":{"retry":{"applies_to":"idempotent_tools"}}"#
            ),
            None
        );
    }

    #[test]
    fn a_drifted_amount_is_never_a_duplicate_whatever_the_window() {
        let m = outside(
            "2m",
            r#","agent":{"retry":{"amount_drift_probability":0.2}}"#,
        )
        .expect("a changed request is not identical");
        assert!(
            m.contains("the model changes the amount on 20 % of its retries"),
            "{m}"
        );
    }
}
