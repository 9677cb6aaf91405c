//! Rules on what the call path does with a call whose outcome is unknown: aborting it, queueing
//! it past its caller's timeout, reporting it as a failure to a layer that retries, or letting
//! the SDK's timeout turn it into `none` under the executor's status probe.

use std::time::Duration;

use super::finding::{Finding, Severity};
use super::guard::stable_service_key;
use super::guard::ticket_id_recognised;
use super::tools::ToolFacts;
use crate::scenario::{
    Cancellation, KeyMode, LatencyDist, OnTimeout, OnUnknownOutcome, ProviderKind, Scenario,
    UnknownOutcomeRecord,
};

fn s_(d: std::time::Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// `abort-in-flight`: a layer that closes the connection of a call already sent to the provider
/// (`cancellation: abort_in_flight`). Aborting never undoes the provider's commit, but the service
/// records a failure and its status reads `none`, so a status probe or a retry above acts on a
/// refund it cannot see.
pub(super) fn abort_in_flight(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let mut paths = Vec::new();
    if s.executor.cancellation == Cancellation::AbortInFlight {
        paths.push("executor.cancellation".to_string());
    }
    for (name, l) in &s.layers {
        if l.cancellation == Cancellation::AbortInFlight {
            paths.push(format!("layers.{name}.cancellation"));
        }
    }
    let or_else = match s.provider.kind {
        ProviderKind::Stripe => ", or send a per-ticket idempotency key so a retry is replayed",
        ProviderKind::BusinessId => {
            ", or send one business id per ticket (refunds_service.business_id: \"per_ticket\") so the provider recognises a retry"
        }
        ProviderKind::KeysIgnored | ProviderKind::DedupWindow => {
            " (no key helps on this provider: nothing would recognise the next try)"
        }
    };
    paths
        .into_iter()
        .map(|path| {
            Finding::new(
                "abort-in-flight",
                Severity::Error,
                path.clone(),
                format!(
                    "a timed-out `{}` call already sent to the provider has its connection closed: the provider may still commit the refund, while the service records a failure and its status reads `none`",
                    tool.name
                ),
                format!("cancel only work that has not reached the provider (\"queued_only\"){or_else}"),
            )
            .with_fix([format!("{path}=queued_only")])
        })
        .collect()
}

/// `acquire-retries-past-timeout`: the service's pool acquire retries let a request queue longer
/// than its caller waits (`acquire_timeout × (acquire_retries + 1)` plus the pauses, above
/// `executor.timeout`), without deadline propagation: the request reaches the provider after the
/// caller was told it failed.
pub(crate) fn acquire_retries_past_timeout(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let svc = &s.refunds_service;
    let Some(acquire) = svc.acquire_timeout else {
        return Vec::new();
    };
    if svc.acquire_retries == 0 || svc.deadline_propagation {
        return Vec::new();
    }
    let tries = svc.acquire_retries + 1;
    let queued = acquire.saturating_mul(tries)
        + svc
            .acquire_retry_backoff
            .saturating_mul(svc.acquire_retries);
    if queued <= s.executor.timeout {
        return Vec::new();
    }
    vec![Finding::new(
        "acquire-retries-past-timeout",
        Severity::Error,
        "refunds_service.acquire_retries",
        format!(
            "a `{}` request may queue for the pool up to {} ({tries} acquires of {} and their pauses), past the executor's {} timeout, and still reach the provider after the caller was told it failed",
            tool.name,
            s_(queued),
            s_(acquire),
            s_(s.executor.timeout)
        ),
        "set refunds_service.deadline_propagation to true, or make the acquire retries fit inside the caller's timeout",
    )
    .with_fix(["refunds_service.deadline_propagation=true"])]
}

/// `unknown-outcome-as-failure`: with nothing the provider recognises a ticket's retry by, the
/// service answers an unknown outcome from the provider (5xx, dropped connection, SDK timeout)
/// as a failure, and a layer above retries failures (any retry rule, layer or executor retry):
/// the refund that may exist is repeated. What the provider recognises a retry by is
/// [`provider_recognises_retry`]; the hint names the mitigations that work on that provider
/// ([`unknown_outcome_hint`]).
pub(crate) fn unknown_outcome_as_failure(
    s: &Scenario,
    tool: &ToolFacts,
    retried_above: bool,
) -> Vec<Finding> {
    if !retried_above
        || provider_recognises_retry(s)
        || s.refunds_service.on_unknown_outcome == OnUnknownOutcome::Lookup
    {
        return Vec::new();
    }
    vec![Finding::new(
        "unknown-outcome-as-failure",
        Severity::Warning,
        "refunds_service.on_unknown_outcome",
        format!(
            "the service answers a 5xx, a dropped connection or an SDK timeout from the provider as a failure (502) and a layer above retries `{}`: the refund that may already exist is made again",
            tool.name
        ),
        unknown_outcome_hint(s),
    )
    .with_fix(["refunds_service.on_unknown_outcome=lookup"])]
}

/// Whether the provider (`provider.kind`) recognises a retry of a ticket's refund by something
/// the service sends once per ticket ([`ticket_id_recognised`]): Stripe a per-ticket
/// idempotency key, a `business_id` provider a per-ticket business id. A `keys_ignored`
/// provider and a `dedup_window` provider (identical parameters within the window, no keys)
/// recognise nothing the service can send, so no key helps there.
fn provider_recognises_retry(s: &Scenario) -> bool {
    ticket_id_recognised(s)
}

/// The fix of `unknown-outcome-as-failure` for the scenario's provider: always a lookup on an
/// unknown outcome; then, on Stripe, a per-ticket idempotency key; on a `business_id` provider,
/// one business id per ticket; on a provider without keys (`keys_ignored`, `dedup_window`), no
/// key but a check before creating and the service's own dedup.
fn unknown_outcome_hint(s: &Scenario) -> String {
    const LOOKUP: &str = "set refunds_service.on_unknown_outcome to \"lookup\" (look the charge's refunds up before answering)";
    const NO_KEY: &str = "so an idempotency key does not help: also look the charge's refunds up before creating one (refunds_service.lookup_before_create: true) or dedup in the service (refunds_service.local_dedup: true)";
    match s.provider.kind {
        ProviderKind::Stripe => format!("{LOOKUP}, or send a per-ticket idempotency key"),
        ProviderKind::BusinessId => format!(
            "{LOOKUP}, or send one business id per ticket (refunds_service.business_id: \"per_ticket\"): provider.kind \"business_id\" ignores idempotency keys"
        ),
        ProviderKind::KeysIgnored => format!(
            "{LOOKUP}; provider.kind \"keys_ignored\" ignores idempotency keys, {NO_KEY}"
        ),
        ProviderKind::DedupWindow => format!(
            "{LOOKUP}; provider.kind \"dedup_window\" takes no keys and recognises a retry only within provider.dedup_window ({}), {NO_KEY}",
            s_(s.provider.dedup_window)
        ),
    }
}

/// The provider's latency p99 and where it comes from: `stripe.latency_choices` when set (each
/// request takes one of them, so their nearest-rank p99), else `stripe.latency`'s
/// [`LatencyDist::p99`].
fn provider_p99(s: &Scenario) -> (Duration, &'static str) {
    let choices = &s.stripe.latency_choices;
    if choices.is_empty() {
        (s.stripe.latency.p99(), "stripe.latency")
    } else {
        (
            LatencyDist::empirical(choices.clone()).p99(),
            "stripe.latency_choices",
        )
    }
}

/// `sdk-timeout-probe-race`: the executor probes the ticket's status after a timeout
/// (`executor.on_timeout: probe_status`) while the SDK gives up on Stripe sooner than Stripe's
/// p99 (`refunds_service.stripe_client.timeout` below it). When the SDK times out, the service
/// closes the request and records a failure, so its ledger reads `none` while Stripe may still
/// be making the refund; the probe then tells the model "no refund was made", and a retry
/// without the ticket's key refunds twice. An error without a stable per-ticket key (none, per
/// attempt, or rotated after an error), a warning with one (the retry is replayed, but the
/// model, and a human who trusts the status, are still told that a refund which may exist was
/// not made). The SDK's own network retries are not counted: under a reused key they may pick
/// up the refund as a replay, so the rule errs on the side of the finding.
///
/// Mitigations, in the finding's hint: a per-ticket idempotency key, an SDK timeout above the
/// provider's p99, or recording an SDK timeout as an unknown outcome
/// (`refunds_service.sdk_timeout_recorded_as: "unknown"`, so the probe reads `unknown` and the
/// model is told not to retry), which clears the finding.
pub(crate) fn sdk_timeout_probe_race(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    if s.executor.on_timeout != OnTimeout::ProbeStatus
        || s.refunds_service.sdk_timeout_recorded_as == UnknownOutcomeRecord::Unknown
    {
        return Vec::new();
    }
    let sdk = s.refunds_service.stripe_client.timeout;
    let (p99, source) = provider_p99(s);
    if sdk >= p99 {
        return Vec::new();
    }
    let (severity, outcome, key_fix) = race_consequence(s);
    vec![Finding::new(
        "sdk-timeout-probe-race",
        severity,
        "refunds_service.stripe_client.timeout",
        format!(
            "executor.on_timeout is \"probe_status\" but the SDK's timeout refunds_service.stripe_client.timeout {} is below the provider's p99 ({source} p99 {}): when the SDK gives up on Stripe during a call of `{}`, the service closes the request and its ledger reads `none` while Stripe is still working, so the status probe tells the model \"no refund was made\"; {outcome}",
            s_(sdk),
            s_(p99),
            tool.name
        ),
        format!(
            "{key_fix}raise refunds_service.stripe_client.timeout to the provider's p99 ({}) or above, or record an SDK timeout as an unknown outcome (refunds_service.sdk_timeout_recorded_as: \"unknown\") so the probe reads `unknown`",
            s_(p99)
        ),
    )
    .with_fix(["refunds_service.sdk_timeout_recorded_as=unknown"])]
}

/// What a retry after `sdk-timeout-probe-race` does on `s`, as (the finding's severity, its
/// consequence, and the key fix its hint starts with, empty when none helps): a warning when
/// the provider recognises the retry (a stable per-ticket key, or what else it recognises a
/// repeat by), else an error that names what is missing.
fn race_consequence(s: &Scenario) -> (Severity, &'static str, &'static str) {
    let stable = match s.provider.kind {
        ProviderKind::Stripe => stable_service_key(s),
        _ => ticket_id_recognised(s),
    };
    if stable {
        (
            Severity::Warning,
            "the service's per-ticket key replays a retry, but the model, and a human who trusts the status, are told that a refund which may exist was not made",
            "",
        )
    } else if s.provider.kind == ProviderKind::BusinessId {
        (
            Severity::Error,
            "a retry without the ticket's business id refunds twice",
            "send one business id per ticket (refunds_service.business_id \"per_ticket\", so the provider recognises the retry), ",
        )
    } else if matches!(
        s.provider.kind,
        ProviderKind::KeysIgnored | ProviderKind::DedupWindow
    ) {
        (
            Severity::Error,
            "a retry refunds twice, and no key helps on this provider",
            "",
        )
    } else if s.refunds_service.idempotency_key == KeyMode::PerTicket {
        (
            Severity::Error,
            "the service writes the ticket a new key after the error, so a retry goes out under a new key and refunds twice",
            "keep the ticket's key after an unknown outcome (refunds_service.rotate_key \"after_definite_failure\", new_nonce_after_error false), ",
        )
    } else {
        (
            Severity::Error,
            "a retry without the ticket's key refunds twice",
            "send a per-ticket idempotency key (refunds_service.idempotency_key \"per_ticket\", so a retry is replayed), ",
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::lint::scenario_rules;
    use crate::scenario::load_str;

    /// The `unknown-outcome-as-failure` finding's hint on the defaults (whose model retries any
    /// tool) plus `extra`, or `None` when the rule is silent.
    fn hint(extra: &str) -> Option<String> {
        let text = format!(
            r#"{{"name":"t","horizon":"1h","arrivals":{{"schedule":[{{"duration":"1m","rate_per_s":1}}]}}{extra}}}"#
        );
        let s = load_str(&text, "t.json").unwrap();
        scenario_rules(&s)
            .into_iter()
            .find(|f| f.id == "unknown-outcome-as-failure")
            .map(|f| f.hint)
    }

    #[test]
    fn unknown_outcome_hint_on_stripe_suggests_a_key_and_a_key_silences_it() {
        assert_eq!(
            hint("").as_deref(),
            Some("set refunds_service.on_unknown_outcome to \"lookup\" (look the charge's refunds up before answering), or send a per-ticket idempotency key")
        );
        assert_eq!(
            hint(r#","refunds_service":{"idempotency_key":"per_ticket"}"#),
            None
        );
        assert_eq!(
            hint(r#","refunds_service":{"on_unknown_outcome":"lookup"}"#),
            None
        );
    }

    #[test]
    fn unknown_outcome_hint_on_a_keyless_provider_never_suggests_a_key_and_a_key_does_not_silence_it(
    ) {
        let keyed = r#","refunds_service":{"idempotency_key":"per_ticket"}"#;
        for (kind, says) in [
            (
                "keys_ignored",
                "provider.kind \"keys_ignored\" ignores idempotency keys",
            ),
            (
                "dedup_window",
                "recognises a retry only within provider.dedup_window (20s)",
            ),
        ] {
            let provider =
                format!(r#","provider":{{"kind":"{kind}","dedup_window":"20s"}}{keyed}"#);
            let h = hint(&provider).unwrap_or_else(|| panic!("{kind}: silenced by a key"));
            assert!(h.contains(says), "{kind}: {h}");
            assert!(
                h.contains("refunds_service.lookup_before_create: true")
                    && h.contains("refunds_service.local_dedup: true"),
                "{kind}: {h}"
            );
            assert!(
                !h.contains("send a per-ticket idempotency key"),
                "{kind}: {h}"
            );
            let looked_up = format!(
                r#","provider":{{"kind":"{kind}"}},"refunds_service":{{"on_unknown_outcome":"lookup"}}"#
            );
            assert_eq!(hint(&looked_up), None, "{kind}");
        }
    }

    #[test]
    fn unknown_outcome_hint_on_a_business_id_provider_suggests_a_business_id_per_ticket() {
        let h = hint(r#","provider":{"kind":"business_id"},"refunds_service":{"idempotency_key":"per_ticket"}"#)
            .expect("a per-ticket key does not silence it: the provider ignores keys");
        assert!(
            h.contains(
                "send one business id per ticket (refunds_service.business_id: \"per_ticket\")"
            ),
            "{h}"
        );
        assert!(!h.contains("send a per-ticket idempotency key"), "{h}");
        assert_eq!(
            hint(
                r#","provider":{"kind":"business_id"},"refunds_service":{"business_id":"per_ticket"}"#
            ),
            None
        );
    }
}
