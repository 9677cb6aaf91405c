//! Rules on the provider's duplicate handling and the service's answers around it: a provider
//! that ignores keys, a duplicate window a retry can outlive, a business id that changes per
//! request, and a unique constraint that answers a retry with a conflict.

use super::finding::{Finding, Severity};
use super::tools::ToolFacts;
use crate::scenario::{KeyMode, OnPendingRow, OnTimeout, ProviderKind, Scenario};

/// Every provider rule, in a fixed order. `retried_above` says whether anything above the
/// service retries the tool (the model, the executor, an added layer).
pub fn provider_rules(s: &Scenario, tool: &ToolFacts, retried_above: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let svc = &s.refunds_service;
    let guarded = svc.local_dedup || s.executor.on_timeout == OnTimeout::ProbeStatus;
    match s.provider.kind {
        ProviderKind::Stripe => {}
        ProviderKind::KeysIgnored => {
            let sdk = svc.stripe_client.max_network_retries > 0;
            if (retried_above && !guarded) || sdk {
                out.push(Finding::new(
                    "provider-ignores-keys",
                    Severity::Error,
                    "provider.kind",
                    format!(
                        "the provider ignores Idempotency-Key, so no key protects a retried `{}` call{}: a retry of a call that went through is a second refund",
                        tool.name,
                        if sdk { " (the SDK's network retries included)" } else { "" }
                    ),
                    "dedup in the service (refunds_service.local_dedup: true) or probe the status before a retry (executor.on_timeout: \"probe_status\"), and turn the SDK's network retries off",
                ));
            }
        }
        ProviderKind::DedupWindow => {
            if retried_above && !svc.local_dedup {
                out.push(Finding::new(
                    "retry-outside-dedup-window",
                    Severity::Error,
                    "provider.dedup_window",
                    format!(
                        "the provider recognises a duplicate only within {} of the first request, and `{}` is retried from above: pool waits, timeouts and backoff can carry a retry past the window, where it is a new refund",
                        humantime::format_duration(s.provider.dedup_window),
                        tool.name
                    ),
                    "dedup in the service (refunds_service.local_dedup: true): a retry waits for the first request's result",
                ));
            }
        }
        ProviderKind::BusinessId => {
            if svc.business_id != KeyMode::PerTicket {
                let what = match svc.business_id {
                    KeyMode::None => "sends no business id",
                    _ => "derives the business id per request",
                };
                out.push(Finding::new(
                    "business-id-not-stable",
                    Severity::Error,
                    "refunds_service.business_id",
                    format!(
                        "the provider recognises duplicates by the business id, but the service {what}: a retried `{}` call is a new refund",
                        tool.name
                    ),
                    "set refunds_service.business_id to \"per_ticket\" (one id per logical refund), and refunds_service.on_key_conflict to \"lookup\"",
                ));
            }
        }
    }
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
        ));
    }
    out
}
